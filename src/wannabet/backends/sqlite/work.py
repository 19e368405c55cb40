"""Unit-of-work figures from a SQLite sample's statistics.

SQLite runs inside the engine's session threads, so its CPU is theirs (``stats["engine"]``),
its wait is their busy time inside transactions minus that CPU, and its I/O is the client
process's (``stats["client_process"]``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wannabet.analysis.unit_of_work import SampleWork, WorkSource

#: I/O per unit: figures of the client process
_IO = ("read_bytes", "write_bytes", "write_calls")


def extract(stats: Mapping[str, Any]) -> SampleWork:
    eng = stats.get("engine") or {}
    proc = stats.get("client_process") or {}
    cpu_s = eng.get("cpu_s")
    busy = eng.get("busy_s")
    return SampleWork(
        cpu_s=cpu_s,
        wait_s=max(busy - cpu_s, 0.0) if busy is not None and cpu_s is not None else None,
        # The cores the engine's threads may use. SQLite takes one write lock per database:
        # units that write are served one at a time whatever the cores; the CPU model
        # captures only the part outside it.
        cores=proc.get("cores"),
        io={key: proc[key] for key in _IO if proc.get(key) is not None},
    )


WORK = WorkSource(cpu_source="engine threads", wait_source="busy time − CPU", extract=extract)
