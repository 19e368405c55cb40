"""Unit-of-work figures from a MySQL or MariaDB sample's statistics (``stats["mysql"]``).

CPU is the server process's (``/proc``), wait the ``performance_schema`` wait timers of all the
server's threads (background threads included: their log writes and flushes are part of what a
commit waits for); both are unknown when the server runs elsewhere or ``performance_schema`` is
off, never taken from the client.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wannabet.analysis.unit_of_work import SampleWork, WorkSource

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


def extract(stats: Mapping[str, Any]) -> SampleWork:
    my = stats.get("mysql") or {}
    status = my.get("status") or {}
    waits = my.get("waits")
    reliable = (
        my.get("commits_check_reliable")
        and my.get("server_commits") is not None
        and my.get("engine_commits") is not None
    )
    return SampleWork(
        cpu_s=my.get("cpu_s"),
        wait_s=waits.get("wait_s") if waits else None,
        cores=my.get("cores"),
        io={key: status[key] for key in _IO if status.get(key) is not None},
        events=[(ev["type"], ev["event"], ev["wait_s"]) for ev in (waits or {}).get("events", [])],
        commits=(int(my["engine_commits"]), int(my["server_commits"])) if reliable else None,
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
