"""Unit-of-work figures from a MySQL or MariaDB sample's statistics (``stats["mysql"]``).

CPU is the server process's (``/proc``), wait the ``performance_schema`` wait timers of all the
server's threads (background threads included: their log writes and flushes are part of what a
commit waits for), without the handler events (see ``sampler.HANDLER_EVENTS``); both are
unknown when the server runs elsewhere or ``performance_schema`` is off, never taken from the
client. The wait is computed here from the stored events, so results files written before the
handler events were left out read the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wannabet.analysis.unit_of_work import SampleWork, WorkSource
from wannabet.backends.mysql.sampler import is_handler_event

#: I/O per unit: ``SHOW GLOBAL STATUS`` counters
#: (MySQL counts redo log fsyncs apart in Innodb_os_log_fsyncs; MariaDB in Innodb_data_fsyncs)
_IO = (
    "Innodb_data_fsyncs",
    "Innodb_os_log_fsyncs",
    "Innodb_os_log_written",
    "Innodb_data_written",
    "Innodb_buffer_pool_reads",
    "Innodb_buffer_pool_read_requests",
    "Innodb_data_read",
)


#: the redo log's file instrument (MySQL, MariaDB before 10.8)
_REDO_EVENT = "io/file/innodb/innodb_log_file"
#: said when the server wrote its redo log and timed none of it
REDO_UNSEEN = (
    "the server wrote its redo log but performance_schema timed none of its writes or flushes"
    " (MariaDB 10.8 and later do not instrument them): a commit's wait for the log flush is not"
    " in the wait per unit; read the latency and the log syncs per unit instead"
)


def extract(stats: Mapping[str, Any]) -> SampleWork:
    my = stats.get("mysql") or {}
    status = my.get("status") or {}
    waits = my.get("waits")
    timed = [ev for ev in (waits or {}).get("events", []) if not is_handler_event(ev["event"])]
    redo_unseen = (
        waits is not None
        and (status.get("Innodb_os_log_written") or 0) > 0
        and not any(ev["event"].startswith(_REDO_EVENT) for ev in waits.get("events", []))
    )
    reliable = (
        my.get("commits_check_reliable")
        and my.get("server_commits") is not None
        and my.get("engine_commits") is not None
    )
    return SampleWork(
        cpu_s=my.get("cpu_s"),
        wait_s=sum(ev["wait_s"] for ev in timed) if waits is not None else None,
        cores=my.get("cores"),
        io={key: status[key] for key in _IO if status.get(key) is not None},
        events=[(ev["type"], ev["event"], ev["wait_s"]) for ev in timed],
        commits=(int(my["engine_commits"]), int(my["server_commits"])) if reliable else None,
        notes=(REDO_UNSEEN,) if redo_unseen else (),
    )


WORK = WorkSource(
    cpu_source="server process (/proc)",
    wait_source="performance_schema wait timers",
    extract=extract,
    cpu_unknown_note="server CPU is unknown: no CPU per unit (see the statistics warnings)",
    waits_exceed_cpu_note=(
        "waits exceed CPU per unit: the bottleneck is not the CPU (often the redo log flush on"
        " commit), and the CPU curve does not model that limit; read it as the CPU's share only"
    ),
)
