"""An engine that talks to no database, for testing the runner's logic.

It makes up transactions with seeded log-normal latencies, runs instantly, and can be told to
fail or to be "interrupted" at a chosen sample, so the runner's bookkeeping can be checked
without a server. It proves nothing about any database.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from wannabet.engine.base import DryCondition, DryRunResult, Progress, SampleRequest, SampleResult
from wannabet.errors import ConnectError
from wannabet.store.summaries import from_columns
from wannabet.targets import Target


@dataclass
class _FakeHeld:
    executed: list[str]

    def execute(self, sql: str) -> None:
        self.executed.append(f"held: {sql}")

    def close(self) -> None:
        self.executed.append("held: closed")


@dataclass
class FakeEngine:
    transactions_per_sample: int = 200
    median_latency_ms: float = 1.0
    #: latency multiplier per session_sql text, to fake a factor that matters
    slowdown: dict[str, float] = field(default_factory=dict)
    interrupt_at_sample: int | None = None
    unreachable: bool = False
    executed: list[str] = field(default_factory=list)
    samples_run: int = 0

    @property
    def sessions_here(self) -> bool:
        return True

    def execute(self, target: Target, sql: str) -> None:
        if self.unreachable:
            raise ConnectError(f"cannot connect to {target.display}: connection refused")
        self.executed.append(sql)

    def execute_many(self, target: Target, statements: list[str]) -> None:
        for sql in statements:
            self.execute(target, sql)

    def query(
        self, target: Target, sql: str, *, timeout_s: float | None = None
    ) -> list[tuple[str | None, ...]]:
        if self.unreachable:
            raise ConnectError(f"cannot connect to {target.display}: connection refused")
        return [("fake 1.0",)]

    def dry_run(
        self, target: Target, setup: list[str], conditions: list[DryCondition]
    ) -> DryRunResult:
        """Everything is accepted, with no result columns."""
        return (
            [(None, []) for _ in setup],
            [([(None, []) for _ in sql], [(None, []) for _ in st]) for sql, st in conditions],
        )

    def hold(self, target: Target) -> _FakeHeld:
        """A held connection that records its SQL in ``executed``, prefixed with ``held:``."""
        if self.unreachable:
            raise ConnectError(f"cannot connect to {target.display}: connection refused")
        return _FakeHeld(self.executed)

    def run_sample(
        self, target: Target, request: SampleRequest, progress: Progress | None = None
    ) -> SampleResult:
        if self.unreachable:
            raise ConnectError(f"cannot connect to {target.display}: connection refused")
        if self.interrupt_at_sample is not None and self.samples_run == self.interrupt_at_sample:
            raise KeyboardInterrupt
        self.samples_run += 1
        rng = np.random.default_rng(request.seed)
        n = request.max_transactions or self.transactions_per_sample
        factor = 1.0
        for sql in request.session_sql:
            factor *= self.slowdown.get(sql, 1.0)
        latency = rng.lognormal(np.log(self.median_latency_ms * 1e6 * factor), 0.3, n).astype(
            np.int64
        )
        session = (np.arange(n) % request.sessions).astype(np.int32)
        t0 = time.time_ns()
        start = np.empty(n, dtype=np.int64)
        for s in range(request.sessions):
            mask = session == s
            lat = latency[mask]
            start[mask] = t0 + np.concatenate(([0], np.cumsum(lat)[:-1]))
        end = start + latency
        weights = np.array([w for _, w, _, _ in request.program.transactions], dtype=float)
        txn_type = rng.choice(len(weights), size=n, p=weights / weights.sum()).astype(np.int16)
        if progress is not None:
            progress(n, 0, (int(end.max()) - t0) / 1e9, float(np.percentile(latency, 99)) / 1e6)
        columns: dict[str, NDArray[Any]] = {
            "session": session,
            "txn_type": txn_type,
            "intended_start_ns": start.copy(),
            "start_ns": start,
            "end_ns": end,
            "status": np.zeros(n, dtype=np.int8),
            "error_code": np.full(n, -1, dtype=np.int32),
            "retries": np.zeros(n, dtype=np.int32),
        }
        # Like the engine: the summaries count every transaction, the rows are a seeded
        # Bernoulli selection (a stream of its own, so the latencies do not depend on it).
        summaries = from_columns(columns, t0 + request.warmup_ns)
        if request.record < 1.0:
            keep = np.random.default_rng([request.seed, 3]).random(n) < request.record
            columns = {name: values[keep] for name, values in columns.items()}
        kept = len(columns["start_ns"])
        if 0 < request.max_rows < kept:
            # A uniform subset of the rows, in start order, as the engine's reservoir keeps.
            rng = np.random.default_rng([request.seed, 4])
            pick = np.sort(rng.choice(kept, request.max_rows, replace=False))
            columns = {name: values[pick] for name, values in columns.items()}
        return SampleResult(t0_ns=t0, end_ns=int(end.max()), columns=columns, summaries=summaries)
