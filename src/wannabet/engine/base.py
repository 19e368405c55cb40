"""Types shared by every engine."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from wannabet.engine.program import Program
from wannabet.model import OnError, QueryProtocol
from wannabet.store.summaries import SampleSummaries
from wannabet.targets import Target

#: (committed so far, errors so far, seconds since the sample started, p99 latency in ms so far)
Progress = Callable[[int, int, float, float], None]

COLUMNS: tuple[tuple[str, type], ...] = (
    ("session", np.int32),
    ("txn_type", np.int16),
    ("intended_start_ns", np.int64),
    ("start_ns", np.int64),
    ("end_ns", np.int64),
    ("status", np.int8),
    ("error_code", np.int32),
    ("retries", np.int32),
)


@dataclass(frozen=True, slots=True)
class SampleRequest:
    program: Program
    sessions: int
    session_sql: tuple[str, ...]
    duration_ns: int  # 0: no time limit
    max_transactions: int  # 0: no count limit
    seed: int
    on_error: OnError = "continue"
    max_tries: int = 1
    rate: float = 0.0  # 0: closed loop
    #: a transaction that starts in the first ``warmup_ns`` (part of ``duration_ns``) is
    #: summarised as warm-up
    warmup_ns: int = 0
    #: probability that a transaction's row is returned (1: every row, 0: none); the
    #: summaries always count every transaction
    record: float = 1.0
    #: at most this many rows returned (0: no limit); beyond it each session keeps a uniform
    #: random subset of its share (reservoir sampling), in start order
    max_rows: int = 0
    #: how statements are sent, as pgbench's ``-M``
    protocol: QueryProtocol = "prepared"
    #: rows per round trip of a result (PostgreSQL portals); 0: all at once
    fetch_size: int = 0
    #: not empty: the sessions are not the run's measured ones, and on PostgreSQL name
    #: themselves ``<application_name>-<role>`` so the statistics do not count them
    role: str = ""
    #: the sample's deadline from its start (0: none). Past ``deadline_ns + grace_ns / 2``
    #: the statements still running are cancelled and recorded as ``timeout``; at
    #: ``deadline_ns + grace_ns`` sessions that have not returned are given up on
    deadline_ns: int = 0
    grace_ns: int = 0
    #: a session whose connection drops connects again for up to this long per outage and
    #: goes on (0: it is lost for the rest of the sample)
    reconnect_ns: int = 0
    #: ``:client_id`` of the first session (session ``i`` has ``first_session + i``): a load
    #: generator's sessions are numbered after the earlier generators' ones
    first_session: int = 0

    def __post_init__(self) -> None:
        if self.duration_ns <= 0 and self.max_transactions <= 0:
            raise ValueError("a sample needs a duration or a transaction count")
        if self.sessions < 1:
            raise ValueError("a sample needs at least one session")
        if self.warmup_ns < 0:
            raise ValueError(f"warmup_ns must be >= 0, got {self.warmup_ns}")
        if not 0.0 <= self.record <= 1.0:
            raise ValueError(f"record must be a fraction from 0 to 1, got {self.record}")
        if self.max_rows < 0:
            raise ValueError(f"max_rows must be >= 0, got {self.max_rows}")
        if self.deadline_ns < 0 or self.grace_ns < 0:
            raise ValueError("deadline_ns and grace_ns must be >= 0")
        if self.first_session < 0:
            raise ValueError(f"first_session must be >= 0, got {self.first_session}")


@dataclass(frozen=True, slots=True)
class SampleResult:
    t0_ns: int
    end_ns: int
    #: the rows kept (every transaction unless the request's ``record`` is below 1)
    columns: Mapping[str, np.ndarray]
    #: every transaction's moments, status counts and latency histogram, per type and phase
    summaries: SampleSummaries = field(default_factory=SampleSummaries.empty)
    error_codes: tuple[str, ...] = ()
    error_messages: Mapping[str, str] = field(default_factory=dict)
    sessions_lost: int = 0
    #: sessions given up on at the deadline + grace (their transactions are not in the result)
    sessions_stuck: int = 0
    #: times sessions got their dropped connection back (``reconnect_ns``)
    reconnects: int = 0
    #: the sample ran past its deadline + grace / 2, and what was still running was cancelled
    overran: bool = False
    #: per session: CPU time of its thread while it ran transactions (empty: not measured)
    session_cpu_ns: tuple[int, ...] = ()
    #: the client's counters of the database's work, summed over sessions: PostgreSQL
    #: ``server_commits`` (committed server transactions, setup included); SQLite
    #: ``cache_hit``, ``cache_miss``, ``cache_write``, ``cache_spill`` (transaction loop only)
    counters: Mapping[str, int] = field(default_factory=dict)
    #: a sample run by several load generators (:mod:`wannabet.engine.distributed`): per
    #: generator where it ran, its sessions, its clock offset and when it started; empty for a
    #: sample run here
    generators: tuple[Mapping[str, Any], ...] = ()
    #: how far apart the generators started (coordinator's clock), and the tolerance beyond
    #: which the sample is degraded (0: not distributed)
    start_skew_ns: int = 0
    start_tolerance_ns: int = 0

    def __post_init__(self) -> None:
        lengths = {len(self.columns[name]) for name, _ in COLUMNS}
        if len(lengths) != 1:
            raise ValueError(f"engine returned columns of different lengths: {sorted(lengths)}")

    @property
    def count(self) -> int:
        return len(self.columns["start_ns"])


#: a condition for ``Engine.dry_run``: SQL to run first, then (statement, parameter count)
DryCondition = tuple[list[str], list[tuple[str, int]]]
#: what one item of a dry run gave: (None, column names) or (message, code)
DryItem = tuple[str | None, Any]
DryRunResult = tuple[list[DryItem], list[tuple[list[DryItem], list[DryItem]]]]


class Engine(Protocol):
    """What the runner needs from a load engine."""

    @property
    def sessions_here(self) -> bool:
        """Whether a sample's sessions run in this process (False: on load generators); the
        work of a database that runs inside its client (SQLite, DuckDB) is then this process's."""
        ...

    def execute(self, target: Target, sql: str) -> None:
        """Run a batch of statements on one autocommit connection."""
        ...

    def execute_many(self, target: Target, statements: list[str]) -> None:
        """Run statements in order on one autocommit connection; QueryError.index names the
        one that failed."""
        ...

    def query(
        self, target: Target, sql: str, *, timeout_s: float | None = None
    ) -> list[tuple[str | None, ...]]:
        """Run one statement and return its rows as text. With ``timeout_s``, a statement
        without an answer by then is cancelled and QueryError (code ``timeout``) raised."""
        ...

    def run_sample(
        self, target: Target, request: SampleRequest, progress: Progress | None = None
    ) -> SampleResult:
        """Run one sample; raise KeyboardInterrupt (data discarded) when the user presses Ctrl-C."""
        ...

    def hold(self, target: Target) -> HeldConnection:
        """Open a connection that stays open until closed (held sessions)."""
        ...

    def dry_run(
        self, target: Target, setup: list[str], conditions: list[DryCondition]
    ) -> DryRunResult:
        """In one transaction rolled back at the end: the set-up statements, then per condition
        (each in a savepoint) its SQL and a prepare of each statement. Per item: (None, result
        column names) or (the database's message, its code)."""
        ...


class HeldConnection(Protocol):
    """A connection kept open across samples (``Engine.hold``)."""

    def execute(self, sql: str) -> None:
        """Run statements on it in one message; an open transaction stays open."""
        ...

    def close(self) -> None:
        """Close it; the server rolls back what is still open."""
        ...
