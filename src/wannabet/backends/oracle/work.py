"""Unit-of-work figures from an Oracle sample's statistics (``stats["oracle"]``), as the
reference article on commit write computes them: CPU is DB CPU plus background CPU
(``v$sys_time_model``), wait is the instance's non-idle wait time (``v$system_event``), both
per unit; I/O per unit is redo, logical and physical reads and writes (``v$sysstat``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wannabet.analysis.unit_of_work import SampleWork, WorkSource

_IO = (
    "redo size",
    "redo writes",
    "redo synch writes",
    "session logical reads",
    "physical reads",
    "physical writes",
    "physical write total bytes",
    "user commits",
)


def extract(stats: Mapping[str, Any]) -> SampleWork:
    ora = stats.get("oracle") or {}
    sysstat = ora.get("sysstat") or {}
    waits = ora.get("waits")
    return SampleWork(
        cpu_s=ora.get("cpu_s"),
        wait_s=waits.get("wait_s") if waits else None,
        cores=ora.get("cores"),
        io={key: sysstat[key] for key in _IO if sysstat.get(key) is not None},
        events=[(ev["type"], ev["event"], ev["wait_s"]) for ev in (waits or {}).get("events", [])],
    )


WORK = WorkSource(
    cpu_source="DB CPU + background cpu time (v$sys_time_model)",
    wait_source="non-idle waits (v$system_event)",
    extract=extract,
    cpu_unknown_note="Oracle CPU is unknown: no CPU per unit (see the statistics warnings)",
)
