"""Unit-of-work figures from a PostgreSQL sample's statistics (``stats["postgres"]``).

CPU is the server's process tree (``/proc``), wait the sampled non-idle wait events; both are
unknown when the server runs elsewhere or its sampler failed, never taken from the client.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wannabet.analysis.unit_of_work import SampleWork, WorkSource

#: I/O per unit: (section of the PostgreSQL statistics, figure)
_IO = (
    ("wal", "wal_bytes"),
    ("wal", "wal_sync"),
    ("database", "blks_read"),
    ("database", "blks_hit"),
)


#: said when autovacuum or autoanalyze ran in the database (any table, catalogs included) during a
#: sample
AUTOVACUUM_RAN = (
    "autovacuum or autoanalyze ran in the database during a sample: background work inside the"
    " measured window, and its commits count in the server's commit check; if it should not be"
    " part of the result, turn it off for the workload's tables (autovacuum_enabled = false)"
    " and give the experiment a database of its own"
)


def extract(stats: Mapping[str, Any]) -> SampleWork:
    pg = stats.get("postgres") or {}
    # The database-wide count where the sample has it; results files from before it have only
    # the workload's own tables.
    jobs = (pg.get("autovacuum") or {}).get("jobs")
    if jobs is None:
        jobs = sum(
            int(t.get("autovacuum_count") or 0) + int(t.get("autoanalyze_count") or 0)
            for t in pg.get("tables") or []
        )
    waits = pg.get("waits") or {}
    io = {}
    for section, key in _IO:
        value = (pg.get(section) or {}).get(key)
        if value is not None:
            io[key] = value
    reliable = (
        pg.get("commits_check_reliable")
        and pg.get("server_commits") is not None
        and pg.get("engine_commits") is not None
    )
    return SampleWork(
        cpu_s=pg.get("cpu_s"),
        wait_s=waits.get("wait_s") if waits.get("polls") else None,
        cores=pg.get("cores"),
        active_ms=(pg.get("database") or {}).get("active_time"),
        io=io,
        events=[(ev["type"], ev["event"], ev["wait_s"]) for ev in waits.get("events", [])],
        commits=(int(pg["engine_commits"]), int(pg["server_commits"])) if reliable else None,
        notes=(AUTOVACUUM_RAN,) if jobs else (),
    )


WORK = WorkSource(
    cpu_source="server processes (/proc)",
    wait_source="sampled wait events",
    extract=extract,
    cpu_unknown_note="server CPU is unknown: no CPU per unit (see the statistics warnings)",
    waits_exceed_cpu_note=(
        "waits exceed CPU per unit: the bottleneck is not the CPU (often the WAL flush on"
        " commit), and the CPU curve does not model that limit; read it as the CPU's share"
        " only"
    ),
)
