"""Client-side figures for every target: the engine's own CPU, and the OS view of this process.

The engine measures each session thread's CPU time (``CLOCK_THREAD_CPUTIME_ID``) while it runs
transactions, so the driver's own cost is visible next to the database's. The OS figures
(psutil) cover the whole client process around the sample: for SQLite, which runs inside this
process, they are the database's CPU and I/O.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import psutil  # type: ignore[import-untyped]

from wannabet.engine.base import SampleResult
from wannabet.samplers.base import Interrupted, Section, StatsWarning, delta, never

#: the engine's counters of connections per negotiated TLS start with this
_TLS = "tls "


def allowed_cores() -> int | None:
    """Cores this process may run on: its CPU affinity where the OS has one, else all."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count: int | None = psutil.cpu_count(logical=True)
        return count


def engine_section(result: SampleResult, transaction_names: Sequence[str] = ()) -> Section:
    """What the engine itself reports about a sample (no snapshot needed).

    With the program's ``transaction_names`` (in order), ``committed_by_type`` counts the
    commits of each type, so that a type can be the unit of work.
    """
    cols = result.columns
    start = np.asarray(cols["start_ns"], dtype=np.int64)
    end = np.asarray(cols["end_ns"], dtype=np.int64)
    # Counts come from the summaries, which cover every transaction; the rows may be a sample
    # of them ([sampling] record). Results built without summaries count their rows.
    statuses = result.summaries.statuses
    if len(statuses["count"]):
        txn, status, n = statuses["txn_type"], statuses["status"], statuses["count"]
    else:
        txn, status = cols["txn_type"], cols["status"]
        n = np.ones(len(start), dtype=np.int64)
    ok = status == 0
    transactions = int(n.sum())
    # Time the sessions spent inside transactions (from start, not from intended start: an open
    # loop's schedule lag is not work the database did). Kept rows are a seeded uniform sample,
    # so their busy time scaled to every transaction estimates the whole; none kept: unknown.
    busy_ns = float(np.sum(end - start)) if len(start) else 0.0
    busy_s: float | None = busy_ns / 1e9 * (transactions / len(start)) if len(start) else None
    values: dict[str, Any] = {
        # The whole sample, warm-up included, as the server-side snapshots see it.
        "elapsed_s": max(result.end_ns - result.t0_ns, 0) / 1e9,
        "committed": int(n[ok].sum()),
        "transactions": transactions,
        "busy_s": busy_s if transactions else 0.0,
        "cpu_s": (sum(result.session_cpu_ns) / 1e9) if result.session_cpu_ns else None,
        "session_cpu_s": [ns / 1e9 for ns in result.session_cpu_ns],
    }
    for key, value in result.counters.items():
        if key.startswith(_TLS):
            # Connections per negotiated TLS version and suite ("TLSv1.3 TLS_AES_128_GCM_SHA256")
            values.setdefault("tls", {})[key.removeprefix(_TLS)] = int(value)
        else:
            values[key] = int(value)
    if transaction_names:
        counts = np.bincount(
            np.asarray(txn[ok], dtype=np.int64),
            weights=n[ok],
            minlength=len(transaction_names),
        )
        values["committed_by_type"] = {
            name: int(c) for name, c in zip(transaction_names, counts, strict=False)
        }
    return Section("engine", values)


def _reset_peak_rss() -> bool:
    """Reset this process's peak-RSS mark (Linux: ``5`` into /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def _peak_rss() -> int | None:
    """This process's peak resident memory since the last reset (VmHWM), in bytes."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


class ProcessSampler:
    """CPU times and I/O bytes of this (the client) process, from psutil."""

    name = "client_process"

    def __init__(self) -> None:
        self._process = psutil.Process()
        self._before: dict[str, float | int] = {}
        self._peak_reset = False

    def _snapshot(self) -> dict[str, float | int]:
        cpu = self._process.cpu_times()
        snap: dict[str, float | int] = {"cpu_user_s": cpu.user, "cpu_system_s": cpu.system}
        io_counters = getattr(self._process, "io_counters", None)
        if io_counters is not None:
            try:
                io = io_counters()
            except (psutil.AccessDenied, OSError):
                pass
            else:
                snap |= {
                    "read_bytes": io.read_bytes,
                    "write_bytes": io.write_bytes,
                    "read_calls": io.read_count,
                    "write_calls": io.write_count,
                }
        return snap

    def start(self, interrupted: Interrupted = never) -> None:
        self._peak_reset = _reset_peak_rss()
        self._before = self._snapshot()

    def stop(self, result: SampleResult, interrupted: Interrupted = never) -> Section:
        deltas, negative = delta(self._before, self._snapshot())
        warnings: tuple[StatsWarning, ...] = ()
        values: dict[str, Any] = dict(deltas)
        if not negative:
            values["cpu_s"] = values.get("cpu_user_s", 0.0) + values.get("cpu_system_s", 0.0)
            if "read_bytes" not in values:
                values |= {"read_bytes": None, "write_bytes": None}
                warnings = (
                    StatsWarning(self.name, "the OS does not report this process's I/O bytes"),
                )
        # fsync calls are not counted by any OS interface we can read without tracing the
        # process; unknown is the honest value (docs/statistics.md).
        values["fsync_calls"] = None
        values["cores"] = allowed_cores()
        # The process's peak resident memory during the sample (the engine runs in it): the
        # kernel's high-water mark, reset when the sample started. Unknown where it cannot be.
        values["peak_rss_bytes"] = _peak_rss() if self._peak_reset else None
        return Section(
            self.name,
            values,
            invalid=tuple(f"{k} went backwards" for k in negative),
            warnings=warnings,
        )

    def close(self) -> None:
        pass


class EngineSampler:
    """Wraps :func:`engine_section` in the sampler protocol."""

    name = "engine"

    def __init__(self, transaction_names: Sequence[str] = ()) -> None:
        self._names = tuple(transaction_names)

    def start(self, interrupted: Interrupted = never) -> None:
        pass

    def stop(self, result: SampleResult, interrupted: Interrupted = never) -> Section:
        return engine_section(result, self._names)

    def close(self) -> None:
        pass
