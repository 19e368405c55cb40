"""Unit-of-work figures from a DuckDB sample's statistics.

DuckDB runs in this process, on the sessions' threads and its own worker threads, so its CPU is
the client process's (``stats["client_process"]``), its wait is the sessions' busy time inside
transactions minus that CPU (none when its workers keep more cores busy than there are
sessions), and its I/O is the process's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wannabet.analysis.unit_of_work import SampleWork, WorkSource

_IO = ("read_bytes", "write_bytes", "write_calls")


def extract(stats: Mapping[str, Any]) -> SampleWork:
    eng = stats.get("engine") or {}
    proc = stats.get("client_process") or {}
    cpu_s = proc.get("cpu_s")
    busy = eng.get("busy_s")
    return SampleWork(
        cpu_s=cpu_s,
        wait_s=max(busy - cpu_s, 0.0) if busy is not None and cpu_s is not None else None,
        cores=proc.get("cores"),
        io={key: proc[key] for key in _IO if proc.get(key) is not None},
    )


WORK = WorkSource(cpu_source="client process", wait_source="busy time − CPU", extract=extract)
