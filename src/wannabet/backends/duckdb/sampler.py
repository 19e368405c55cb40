"""DuckDB's figures per sample: the memory its buffer manager holds and what it spilled to
temporary files, read from ``duckdb_memory()`` and ``duckdb_temporary_files()``.

Both are levels, not counters, so the sampler records them at the end of the sample and, by
polling every :data:`POLL_S` on a connection of its own while the sample runs, their peaks. The
process's CPU (DuckDB's worker threads are this process's) is the client-process sampler's.
"""

from __future__ import annotations

import threading
from typing import Any

from wannabet.backends.duckdb.driver import connect
from wannabet.engine.base import SampleResult
from wannabet.samplers.base import Interrupted, Section, never
from wannabet.targets import Target

POLL_S = 0.1

_LEVELS = (
    "SELECT (SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory()),"
    " (SELECT coalesce(sum(temporary_storage_bytes), 0) FROM duckdb_memory()),"
    " (SELECT count(*) FROM duckdb_temporary_files()),"
    " (SELECT coalesce(sum(size), 0) FROM duckdb_temporary_files())"
)
_NAMES = ("memory_bytes", "temporary_bytes", "temporary_files", "temporary_file_bytes")


class DuckDBSampler:
    """Memory and spill of the DuckDB database a run drives."""

    name = "duckdb"

    def __init__(self, target: Target) -> None:
        self._target = target
        self._conn: Any = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._peak: dict[str, int] = {}
        self._error: BaseException | None = None

    def _levels(self) -> dict[str, int]:
        if self._conn is None:
            self._conn = connect(self._target)
        row = self._conn.execute(_LEVELS).fetchone()
        return {name: int(v) for name, v in zip(_NAMES, row, strict=True)}

    def _poll(self) -> None:
        while not self._stop.wait(POLL_S):
            try:
                self._note(self._levels())
            except Exception as exc:  # reported by stop()
                self._error = exc
                return

    def _note(self, levels: dict[str, int]) -> None:
        for name, value in levels.items():
            self._peak[name] = max(self._peak.get(name, 0), value)

    def start(self, interrupted: Interrupted = never) -> None:
        self._error = None
        self._peak = {}
        self._note(self._levels())
        self._stop.clear()
        # The connection is used by this thread only until stop() joins it.
        self._thread = threading.Thread(target=self._poll, name="wannabet-duckdb", daemon=True)
        self._thread.start()

    def _join(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def stop(self, result: SampleResult, interrupted: Interrupted = never) -> Section:
        self._join()
        if self._error is not None:
            raise self._error
        end = self._levels()
        self._note(end)
        values: dict[str, Any] = dict(end)
        values |= {f"peak_{name}": self._peak[name] for name in _NAMES}
        return Section(self.name, values)

    def abandon(self) -> None:
        self._join()

    def close(self) -> None:
        self._join()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
