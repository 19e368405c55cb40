"""Reading and writing the results file.

Each write is one DuckDB transaction that opens and closes the file, so another ``wannabet``
command can read the results between two samples, and a crash or Ctrl-C loses at most the sample
in flight. A run is written as ``running`` first and closed at the end; a ``running`` run whose
process is gone is marked ``interrupted`` the next time the file is opened for writing.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from wannabet.analysis import histogram
from wannabet.errors import ImportError_, SpecError, StoreError, UnknownRun
from wannabet.model import STATUS_NAMES
from wannabet.store import queries
from wannabet.store.schema import INCLUDE_DEGRADED, MIGRATIONS, SCHEMA_VERSION, summary_inserts
from wannabet.store.summaries import SampleSummaries, from_columns

DEFAULT_RESULTS = "wannabet.duckdb"
_LOCK_WAIT_S = 10.0
#: Every connection to a results file: a file (or a query over it) never makes DuckDB download
#: or load an extension behind the user's back.
_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}


#: the key of the run order in a run's settings (:attr:`RunInfo.schedule`)
SCHEDULE_KEY = "schedule"


@dataclass(frozen=True, slots=True)
class RunInfo:
    run_id: int
    name: str
    kind: str
    status: str
    started_at: datetime
    ended_at: datetime | None
    target: str | None
    source: str | None
    seed: int | None
    message: str | None
    conditions: int
    samples: int
    transactions: int
    description: str = ""
    settings: Mapping[str, Any] | None = None
    environment: Mapping[str, Any] | None = None
    #: the backend's kind of a run's target (``"sqlite"``, ``"postgresql"``); None for imports
    target_kind: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "name": self.name,
            "description": self.description,
            "kind": self.kind,
            "status": self.status,
            "started_at": self.started_at.isoformat(),
            "ended_at": self.ended_at.isoformat() if self.ended_at else None,
            "target": self.target,
            "source": self.source,
            "seed": self.seed,
            "message": self.message,
            "conditions": self.conditions,
            "samples": self.samples,
            "transactions": self.transactions,
            "settings": dict(self.settings or {}),
            "environment": dict(self.environment or {}),
        }

    # The settings JSON is written by the runner and the importers; these properties are the one
    # place that knows its keys and their defaults.

    @property
    def log(self) -> str | None:
        """What a pgbench import was read from: ``"transactions"`` (per-transaction log) or
        ``"aggregate"`` (``--aggregate-interval`` log); None for other runs."""
        value = (self.settings or {}).get("log")
        return None if value is None else str(value)

    @property
    def aggregates_only(self) -> bool:
        """Whether the run holds only aggregates, not one latency per transaction (Swingbench,
        sysbench, pgbench's aggregate log)."""
        return bool((self.settings or {}).get("aggregates_only") or self.log == "aggregate")

    @property
    def until_decided(self) -> Mapping[str, Any] | None:
        """For a run that stopped when decided: its rule (``max_samples``, ``alpha``,
        ``rope_pct``) and, once it ended, ``stopped`` (``"decided"``, ``"max_samples"``) and
        ``blocks``; None for a run of a fixed number of samples."""
        value = (self.settings or {}).get("until_decided")
        return value if isinstance(value, Mapping) else None

    @property
    def timed(self) -> bool:
        """Whether the run's transactions carry real start times.

        Imports without a time column (hyperfine, CSV without ``--time``) store ``timed =
        false`` and a start time of 0 for every transaction; runs and other imports are timed.
        """
        return bool((self.settings or {}).get("timed", True))

    @property
    def rates(self) -> Mapping[str, float]:
        """The open-loop rate (transactions per second) each condition asked for, by label;
        closed-loop conditions are not in it."""
        value = (self.settings or {}).get("rates")
        return value if isinstance(value, Mapping) else {}

    def sessions_of(self, label: str) -> int | None:
        """The sessions condition ``label`` ran with (a level's own count in a concurrency
        sweep, else the workload's); None when the run did not record it (imports)."""
        settings = self.settings or {}
        by_condition = settings.get("sessions_by_condition")
        n = by_condition.get(label) if isinstance(by_condition, Mapping) else None
        n = settings.get("sessions") if n is None else n
        return n if isinstance(n, int) else None

    @property
    def schedule(self) -> list[tuple[int, int]]:
        """The run order as ``(block, condition_id)`` pairs, sample by sample; empty for imports."""
        value = (self.settings or {}).get(SCHEDULE_KEY) or []
        return [
            (int(e[0]), int(e[1])) for e in value if isinstance(e, list | tuple) and len(e) == 2
        ]

    @property
    def format(self) -> str | None:
        """The foreign format an import was read from (``pgbench``, ``csv``...); None for runs."""
        value = (self.settings or {}).get("format")
        return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class ConditionRow:
    condition_id: int
    label: str
    levels: Mapping[str, str]
    session_sql: tuple[str, ...] = ()
    system_sql: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SampleRow:
    sample_id: int
    condition_id: int
    block: int
    position: int
    t0_ns: int
    measure_start_ns: int
    end_ns: int
    warmup_s: float
    status: str = "complete"
    sessions_lost: int = 0
    error_messages: Mapping[str, str] | None = None
    stats: Mapping[str, Any] | None = None
    #: why a ``degraded`` sample is: it overran its deadline, lost or gave up on sessions
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ConditionSummary:
    """Per-condition totals of the measured (non-warm-up) transactions of a run."""

    condition: str
    samples: int
    transactions: int
    errors: int
    tps: float | None
    latency_ms: Mapping[str, float | None]
    errors_by_status: Mapping[str, int]
    sessions_lost: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "condition": self.condition,
            "samples": self.samples,
            "sessions_lost": self.sessions_lost,
            "transactions": self.transactions,
            "errors": self.errors,
            "errors_by_status": dict(self.errors_by_status),
            "tps": self.tps,
            "latency_ms": dict(self.latency_ms),
        }


@dataclass(frozen=True, slots=True)
class ImportedSample:
    """One sample of an import; ``sample_id`` and ``condition`` index the batch's own lists.

    ``totals`` (transactions, committed, errors, tps) is for tools that keep counts rather than
    transactions; without it the totals are counted from the sample's transactions.

    ``statuses`` and ``moments`` are for those tools too: what their aggregates determine
    *exactly* about the sample's measured transactions, written to ``sample_statuses`` and
    ``sample_moments`` (a sample with transactions is summarised from them instead).
    ``statuses`` maps (type, status name as ``transactions.status`` has it) to a count;
    ``moments`` maps a type to (successful count, Σ ms, Σ ms², min ns, max ns); types index
    the batch's :attr:`ImportBatch.transaction_types` (0 when it has none). Such tools keep no
    sum of log latencies: the log sums are stored NULL (not known). None: nothing is exact.
    ``bins`` maps a type to the tool's own latency histogram of the sample's successful
    transactions, ``[lo_ns, hi_ns, count]`` per disjoint bin (fio's buckets), written to
    ``sample_bins``: the per-sample histograms every percentile and the heatmap are read from,
    as an engine run's are.
    """

    sample_id: int
    condition: int
    t0_ns: int
    end_ns: int
    totals: tuple[int, int, int, float | None] | None = None
    error_messages: Mapping[str, str] | None = None
    stats: Mapping[str, Any] | None = None
    statuses: Mapping[tuple[int, str], int] | None = None
    moments: Mapping[int, tuple[int, float, float, int, int]] | None = None
    bins: Mapping[int, Sequence[Sequence[int]]] | None = None


@dataclass(frozen=True, slots=True)
class ImportedFile:
    path: str
    sha256: str
    format: str
    condition: str | None
    metadata: Mapping[str, Any]


AGGREGATE_COLUMNS: tuple[str, ...] = (
    "sample_id",
    "condition_id",
    "txn_type",
    "count",
    "failed",
    "skipped",
    "retried",
    "retries",
    "lat_sum_ms",
    "lat_sum2_ms2",
    "lat_min_ms",
    "lat_max_ms",
    "lat_mean_ms",
    "lag_sum_ms",
    "lag_max_ms",
    "percentiles",
    "histogram",
    "extra",
)


#: The tables ``export`` writes as they are, one file each: every table of the results file.
EXPORTED_TABLES: tuple[str, ...] = (
    "schema_version",
    "runs",
    "conditions",
    "transaction_types",
    "samples",
    "transactions",
    "sample_moments",
    "sample_statuses",
    "sample_bins",
    "sample_results",
    "imports",
    "aggregates",
)
#: Every file ``export`` writes, in order: the tables, then the two made for analysis (the
#: ``transaction_latency`` view and one row per sample with ``summary``'s figures). Each file has
#: the name of the table or view it holds, so a query over the results file runs unchanged over
#: the exported files.
EXPORTS: tuple[str, ...] = (*EXPORTED_TABLES, "transaction_latency", "sample_summary")
#: the order of an exported table's rows; ``transactions`` keeps the order it is stored in (run,
#: sample, start time: a sort would cost more than the export), and ``transaction_latency``
#: (a join) has none
_EXPORT_ORDER: dict[str, str] = {
    "schema_version": "version",
    "runs": "run_id",
    "conditions": "run_id, condition_id",
    "transaction_types": "run_id, txn_type",
    "samples": "run_id, sample_id",
    "sample_moments": "run_id, sample_id, txn_type, warmup",
    "sample_statuses": "run_id, sample_id, txn_type, warmup, status",
    "sample_bins": "run_id, sample_id, txn_type, warmup, lo_ns",
    "sample_results": "run_id, sample_id, txn_type, warmup",
    "imports": "run_id, imported_at, path",
    "aggregates": "run_id, condition_id, sample_id NULLS FIRST, txn_type NULLS FIRST",
    "sample_summary": "run_id, sample_id",
}


@dataclass(frozen=True, slots=True)
class ImportBatch:
    """Everything one ``wannabet import`` writes, with ids local to the batch.

    ``transactions`` has the columns of the ``transactions`` table except ``run_id``, with
    ``sample_id`` and ``txn_type`` indexing :attr:`samples` and :attr:`transaction_types`.
    ``aggregates`` rows are dicts keyed by :data:`AGGREGATE_COLUMNS` (``condition_id`` and
    ``sample_id`` local too).
    """

    name: str
    description: str
    source: str
    settings: Mapping[str, Any]
    conditions: Sequence[str]
    transaction_types: Sequence[str]
    samples: Sequence[ImportedSample]
    files: Sequence[ImportedFile]
    transactions: pa.Table | None = None
    aggregates: Sequence[Mapping[str, Any]] = ()
    environment: Mapping[str, Any] | None = None
    tool_version: str | None = None


class Store:
    """The results file. Cheap to create; each method opens the file only as long as it needs.

    ``read_only`` opens it read-only, for commands that only read (compare, report, summary,
    runs, export): several of them can then read the file at once, a file the user cannot write
    can be read, and no reader can change it. Writing methods refuse then. A file whose schema is
    older than this wannabet is still migrated first, in a short read-write open, as any reader
    did before. One process should not hold a read-only and a read-write connection to the same
    file at the same time (DuckDB refuses the second); nothing in wannabet does.
    """

    def __init__(
        self,
        path: str | Path = DEFAULT_RESULTS,
        *,
        read_only: bool = False,
        include_degraded: bool = False,
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        #: whether the analyses read through this store use degraded samples too
        #: (:data:`wannabet.store.queries.ANALYSED`)
        self.include_degraded = include_degraded
        self._held: duckdb.DuckDBPyConnection | None = None

    # -- connections -------------------------------------------------------------------------------

    def check_writable(self) -> None:
        """Refuse, in one line, a results file that could not be created or written: its
        directory missing (a typo is not silently made into directories), not a directory, or
        not writable (DuckDB writes its log beside the file), or the file itself read-only."""
        parent = self.path.absolute().parent
        if not parent.exists():
            raise StoreError(
                f"--results {self.path}: the directory {parent} does not exist; create it or"
                " name a results file in an existing directory"
            )
        if not parent.is_dir():
            raise StoreError(f"--results {self.path}: {parent} is not a directory")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise StoreError(
                f"--results {self.path}: cannot write in {parent}; name a results file in a"
                " directory you can write to"
            )
        if self.path.exists() and not os.access(self.path, os.W_OK):
            raise StoreError(
                f"--results {self.path}: the file is read-only; make it writable or name another"
                " results file"
            )

    @contextmanager
    def held(self) -> Iterator[None]:
        """Keep one read-only connection open for a burst of reads, such as one command's
        analysis: every method inside reads through a cursor of it instead of opening the file
        again (an open costs about 20 ms, and ``compare`` makes a dozen).

        A read-write store ignores it: a writer must not keep the file locked between its
        writes. Nested calls share the outer connection.
        """
        if not self.read_only or self._held is not None:
            yield
            return
        with self._connect() as con:
            self._held = con
            try:
                yield
            finally:
                self._held = None

    @contextmanager
    def _connect(
        self, *, create: bool = False, write: bool = False
    ) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for one method: read-only when the store is and the method only reads.

        ``write`` marks the methods that write: they refuse on a read-only store.
        """
        if (create or write) and self.read_only:
            raise StoreError(f"{self.path} was opened read-only; this command cannot write to it")
        if self._held is not None:
            # A cursor has its own results and settings, so methods that nest cannot disturb
            # each other's pending rows; the setting below is per cursor.
            with self._session(self._held.cursor()) as cursor:
                yield cursor
            return
        if not create and not self.path.exists():
            raise StoreError(
                f"no results file at {self.path}; run `wannabet run FILE` first or pass --results"
            )
        if create and not self.path.exists():
            self.check_writable()
        if not self.read_only:
            with self._open(read_only=False) as con:
                self._migrate(con)
                self._reap_stale_runs(con)
                yield con
            return
        if self.path.with_name(self.path.name + ".wal").exists():
            # A writer that was killed left its log. A read-write open replays and checkpoints
            # it as the next writer would; replaying it read-only is where DuckDB has had bugs.
            # Storage nobody may write to keeps the log, and the read-only open below reads it.
            with contextlib.suppress(StoreError), self._open(read_only=False):
                pass
        with self._open(read_only=True) as con:
            current = self._version(con)
            if current is None:
                raise StoreError(
                    f"{self.path} is not a wannabet results file (it has no schema_version"
                    " table); pass the file `wannabet run` wrote with --results"
                )
            if current >= SCHEMA_VERSION:
                self._check_version(current)
                yield con
                return
        # An older file: a reader migrated it before, and still does, in a short read-write
        # open; the read itself then opens read-only.
        with self._open(read_only=False) as con:
            self._migrate(con)
        with self._open(read_only=True) as con:
            yield con

    @staticmethod
    def _version(con: duckdb.DuckDBPyConnection) -> int | None:
        """The file's schema version; None when it has no ``schema_version`` table."""
        found = con.execute(
            "SELECT count(*) FROM information_schema.tables"
            " WHERE table_schema = 'main' AND table_name = 'schema_version'"
        ).fetchone()
        if not found or not found[0]:
            return None
        # fetchall, not fetchone: the connection is handed on with no result left unfinished
        rows = con.execute("SELECT max(version) FROM schema_version").fetchall()
        return int(rows[0][0]) if rows and rows[0][0] is not None else 0

    def _check_kind(self) -> None:
        """Refuse a file that is not a DuckDB database before DuckDB opens it: DuckDB would
        take a SQLite file for one to attach with an extension (and say so in its words)."""
        try:
            with self.path.open("rb") as f:
                head = f.read(16)
        except OSError:
            return  # missing or unreadable: DuckDB's open says why
        if len(head) < 12 or head[8:12] == b"DUCK":
            return
        kind = " (it is a SQLite database)" if head.startswith(b"SQLite format 3\0") else ""
        raise StoreError(
            f"{self.path} is not a wannabet results file{kind}; pass the file `wannabet run`"
            " wrote with --results"
        )

    @contextmanager
    def _open(self, *, read_only: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        self._check_kind()
        deadline = time.monotonic() + _LOCK_WAIT_S
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=read_only, config=_CONFIG)
                break
            except duckdb.IOException as exc:
                if "lock" in str(exc).lower() and time.monotonic() < deadline:
                    time.sleep(0.1)
                    continue
                raise StoreError(f"cannot open {self.path}: {_first_line(exc)}") from None
            except duckdb.Error as exc:
                raise StoreError(
                    f"{self.path} is not a wannabet results file: {_first_line(exc)}"
                ) from None
        with self._session(con):
            yield con

    @contextmanager
    def _session(self, con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
        """``con`` (a connection or a cursor) with this store's settings, its DuckDB errors as
        StoreError, closed at the end."""
        try:
            con.execute(f"SET VARIABLE {INCLUDE_DEGRADED} = {bool(self.include_degraded)}")
            yield con
        except duckdb.Error as exc:
            raise StoreError(f"{self.path}: {_first_line(exc)}") from exc
        finally:
            con.close()

    def _migrate(self, con: duckdb.DuckDBPyConnection) -> None:
        if self._version(con) is None:
            # A DuckDB file of someone else's: no wannabet table goes into it (read commands
            # refuse it too). An empty one is a results file yet to be written.
            found = con.execute(
                "SELECT count(*) FROM information_schema.tables WHERE table_catalog ="
                " current_database()"
            ).fetchone()
            if found and found[0]:
                raise StoreError(
                    f"{self.path} is not a wannabet results file (it holds other tables and no"
                    " schema_version); name a new file with --results"
                )
        con.execute(
            "CREATE TABLE IF NOT EXISTS schema_version"
            " (version INTEGER NOT NULL, applied_at TIMESTAMPTZ NOT NULL, note VARCHAR)"
        )
        row = con.execute("SELECT max(version) FROM schema_version").fetchone()
        current = row[0] if row and row[0] is not None else 0
        self._check_version(current)
        for version, note, statements in MIGRATIONS:
            if version <= current:
                continue
            con.execute("BEGIN")
            for sql in statements:
                con.execute(sql)
            con.execute("INSERT INTO schema_version VALUES (?, now(), ?)", [version, note])
            con.execute("COMMIT")

    def _check_version(self, current: int) -> None:
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {current}, newer than this wannabet"
                f" ({SCHEMA_VERSION}); upgrade wannabet"
            )

    def schema_version(self) -> int:
        with self._connect() as con:
            row = con.execute("SELECT max(version) FROM schema_version").fetchone()
            return int(row[0]) if row else 0

    # -- writing -----------------------------------------------------------------------------------

    def create_run(self, **run: Any) -> int:
        """Insert a run as ``running`` with its conditions; return its id.

        Takes the keyword arguments of :meth:`_insert_run`.
        """
        with self._connect(create=True) as con:  # which reaps runs whose process is gone
            con.execute("BEGIN")
            run_id = self._insert_run(con, status="running", **run)
            con.execute("COMMIT")
            return run_id

    def import_batch(
        self, batch: ImportBatch, *, run_id: int | None = None, force: bool = False
    ) -> int:
        """Write an import in one transaction, as a new run or appended to ``run_id``.

        A file whose content (sha256) is already in the results file is refused unless
        ``force``: importing the same measurements twice would double their weight.
        """
        with self._connect(create=True) as con:
            con.execute("BEGIN")
            for f in batch.files:
                # A tool's summary output is metadata, not measurements: only data files count.
                if force or f.format.endswith("-summary"):
                    continue
                seen = con.execute(
                    "SELECT run_id, path FROM imports WHERE sha256 = ? ORDER BY run_id LIMIT 1",
                    [f.sha256],
                ).fetchone()
                if seen:
                    raise ImportError_(
                        f"{f.path}: already imported as run {seen[0]} (from {seen[1]}, same"
                        " sha256); pass --force to import it again"
                    )
            if run_id is None:
                run_id = self._insert_run(
                    con,
                    status="complete",
                    name=batch.name,
                    kind="import",
                    description=batch.description,
                    source=batch.source,
                    tool_version=batch.tool_version,
                    settings={**batch.settings, "imports": [batch.settings]},
                    environment=batch.environment,
                )
                existing: dict[str, int] = {}
                types: dict[str, int] = {}
                sample_offset = 0
                blocks: dict[int, int] = {}
            else:
                row = con.execute(
                    "SELECT kind, settings FROM runs WHERE run_id = ?", [run_id]
                ).fetchone()
                if not row:
                    raise ImportError_(f"--run {run_id}: no such run in {self.path}")
                if row[0] != "import":
                    raise ImportError_(
                        f"--run {run_id}: run {run_id} is a wannabet run, not an import;"
                        " append only to imported runs"
                    )
                settings = json.loads(row[1] or "{}")
                if settings.get("format") != batch.settings.get("format"):
                    raise ImportError_(
                        f"--run {run_id}: run {run_id} holds {settings.get('format')} results;"
                        f" {batch.settings.get('format')} results cannot be compared with them"
                    )
                settings["imports"] = [*settings.get("imports", []), dict(batch.settings)]
                settings["timed"] = bool(settings.get("timed", True)) and bool(
                    batch.settings.get("timed", True)
                )
                con.execute(
                    "UPDATE runs SET settings = ? WHERE run_id = ?", [json.dumps(settings), run_id]
                )
                existing = dict(
                    con.execute(
                        "SELECT label, condition_id FROM conditions WHERE run_id = ?", [run_id]
                    ).fetchall()
                )
                types = dict(
                    con.execute(
                        "SELECT name, txn_type FROM transaction_types WHERE run_id = ?", [run_id]
                    ).fetchall()
                )
                got = con.execute(
                    "SELECT coalesce(max(sample_id) + 1, 0) FROM samples WHERE run_id = ?",
                    [run_id],
                ).fetchone()
                sample_offset = int(got[0]) if got else 0
                blocks = dict(
                    con.execute(
                        "SELECT condition_id, count(*) FROM samples WHERE run_id = ?"
                        " GROUP BY condition_id",
                        [run_id],
                    ).fetchall()
                )
            condition_ids: list[int] = []
            for label in batch.conditions:
                if label not in existing:
                    existing[label] = len(existing)
                    con.execute(
                        "INSERT INTO conditions VALUES (?, ?, ?, ?, '[]', '[]')",
                        [run_id, existing[label], label, json.dumps({"condition": label})],
                    )
                condition_ids.append(existing[label])
            type_ids: list[int] = []
            for tname in batch.transaction_types:
                if tname not in types:
                    types[tname] = len(types)
                    con.execute(
                        "INSERT INTO transaction_types VALUES (?, ?, ?, 1, '')",
                        [run_id, types[tname], tname],
                    )
                type_ids.append(types[tname])
            for s in batch.samples:
                cid = condition_ids[s.condition]
                block = blocks.get(cid, 0)
                blocks[cid] = block + 1
                sample_id = sample_offset + s.sample_id
                row_ = SampleRow(
                    sample_id=sample_id,
                    condition_id=cid,
                    block=block,
                    position=sample_id,
                    t0_ns=s.t0_ns,
                    measure_start_ns=s.t0_ns,
                    end_ns=s.end_ns,
                    warmup_s=0.0,
                    error_messages=s.error_messages,
                    stats=s.stats,
                )
                n, ok = (s.totals[0], s.totals[1]) if s.totals else (0, 0)
                self._insert_sample(con, run_id, row_, measured=n, committed=ok)
                if s.totals is not None:
                    con.execute(
                        "UPDATE samples SET errors = ?, tps = ? WHERE run_id = ? AND sample_id = ?",
                        [s.totals[2], s.totals[3], run_id, sample_id],
                    )
                _insert_aggregate_summaries(con, run_id, sample_id, s, type_ids)
            if batch.transactions is not None and batch.transactions.num_rows:
                table = batch.transactions
                local_types = np.asarray(type_ids or [0], dtype=np.int16)
                table = table.set_column(
                    table.schema.get_field_index("sample_id"),
                    "sample_id",
                    pa.array(table.column("sample_id").to_numpy().astype(np.int32) + sample_offset),
                ).set_column(
                    table.schema.get_field_index("txn_type"),
                    "txn_type",
                    pa.array(local_types[table.column("txn_type").to_numpy().astype(np.int64)]),
                )
                con.register("incoming_transactions", table)
                con.execute(
                    "INSERT INTO transactions SELECT ?, sample_id, session, txn_type,"
                    " intended_start_ns, start_ns, end_ns, status, error_code, retries, warmup"
                    " FROM incoming_transactions",
                    [run_id],
                )
                con.unregister("incoming_transactions")
                _fill_summaries(con, run_id, sample_offset)
                counted = [s.sample_id + sample_offset for s in batch.samples if s.totals is None]
                if counted:
                    con.execute(
                        """
                        UPDATE samples SET
                            transactions = agg.n, committed = agg.ok, errors = agg.n - agg.ok,
                            tps = CASE WHEN samples.duration_s > 0
                                       THEN agg.ok / samples.duration_s END
                        FROM (SELECT sample_id, count(*) AS n,
                                     count(*) FILTER (WHERE status = 'ok') AS ok
                              FROM transactions WHERE run_id = ? AND sample_id >= ?
                              GROUP BY sample_id) agg
                        WHERE samples.run_id = ? AND samples.sample_id = agg.sample_id
                              AND samples.sample_id IN (SELECT unnest(?::INTEGER[]))
                        """,
                        [run_id, sample_offset, run_id, counted],
                    )
            for agg in batch.aggregates:
                values = []
                for column in AGGREGATE_COLUMNS:
                    v = agg.get(column)
                    if column == "sample_id" and v is not None:
                        v = int(v) + sample_offset
                    elif column == "condition_id":
                        v = condition_ids[int(agg["condition_id"])]
                    elif column == "txn_type" and v is not None:
                        v = type_ids[int(v)]
                    elif column in ("percentiles", "histogram", "extra") and v is not None:
                        v = json.dumps(v)
                    elif column in ("failed", "skipped") and v is None:
                        v = 0
                    values.append(v)
                con.execute(
                    f"INSERT INTO aggregates (run_id, {', '.join(AGGREGATE_COLUMNS)})"
                    f" VALUES (?{', ?' * len(AGGREGATE_COLUMNS)})",
                    [run_id, *values],
                )
            for f in batch.files:
                con.execute(
                    "INSERT INTO imports VALUES (?, ?, ?, ?, ?, now(), ?)",
                    [run_id, f.path, f.sha256, f.format, f.condition, json.dumps(f.metadata)],
                )
            con.execute("UPDATE runs SET ended_at = now() WHERE run_id = ?", [run_id])
            con.execute("COMMIT")
            return run_id

    def aggregates(self, run_id: int) -> list[dict[str, Any]]:
        """The ``aggregates`` rows of a run, with the condition label and type name."""
        with self._connect() as con:
            cur = con.execute(
                "SELECT a.*, c.label AS condition, tt.name AS txn_name FROM aggregates a"
                " JOIN conditions c USING (run_id, condition_id)"
                " LEFT JOIN transaction_types tt ON tt.run_id = a.run_id"
                " AND tt.txn_type = a.txn_type"
                " WHERE a.run_id = ? ORDER BY a.condition_id, a.sample_id, a.txn_type",
                [run_id],
            )
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        for r in rows:
            for key in ("percentiles", "histogram", "extra"):
                r[key] = json.loads(r[key]) if r[key] else None
        return rows

    def _insert_run(
        self,
        con: duckdb.DuckDBPyConnection,
        *,
        status: str,
        name: str,
        kind: str,
        description: str = "",
        source: str | None = None,
        spec_text: str | None = None,
        target: str | None = None,
        target_kind: str | None = None,
        seed: int | None = None,
        tool_version: str | None = None,
        settings: Mapping[str, Any] | None = None,
        environment: Mapping[str, Any] | None = None,
        conditions: Sequence[ConditionRow] = (),
        transaction_types: Sequence[tuple[str, int, str]] = (),
    ) -> int:
        row = con.execute("SELECT coalesce(max(run_id), 0) + 1 FROM runs").fetchone()
        run_id = int(row[0]) if row else 1
        con.execute(
            "INSERT INTO runs (run_id, name, description, kind, source, spec_text, target,"
            " target_kind, seed, status, started_at, host, pid, tool_version, settings,"
            " environment) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now(), ?, ?, ?, ?, ?)",
            [
                run_id,
                name,
                description,
                kind,
                source,
                spec_text,
                target,
                target_kind,
                seed,
                status,
                socket.gethostname(),
                os.getpid(),
                tool_version,
                json.dumps(settings or {}),
                json.dumps(environment or {}),
            ],
        )
        for c in conditions:
            con.execute(
                "INSERT INTO conditions VALUES (?, ?, ?, ?, ?, ?)",
                [
                    run_id,
                    c.condition_id,
                    c.label,
                    json.dumps(dict(c.levels)),
                    json.dumps(list(c.session_sql)),
                    json.dumps(list(c.system_sql)),
                ],
            )
        for index, (tname, weight, script) in enumerate(transaction_types):
            con.execute(
                "INSERT INTO transaction_types VALUES (?, ?, ?, ?, ?)",
                [run_id, index, tname, weight, script],
            )
        return run_id

    def add_sample(
        self,
        run_id: int,
        sample: SampleRow,
        columns: Mapping[str, np.ndarray],
        error_codes: Sequence[str] = (),
        summaries: SampleSummaries | None = None,
        recorded: float = 1.0,
        stacks: Sequence[tuple[str, int]] = (),
    ) -> None:
        """Write one sample, its summaries, its stored transactions and its CPU profile (folded
        ``stacks`` with their weights, when it was profiled) atomically (via Arrow).

        ``summaries`` are the sample's per-type moments, statuses and histogram bins as the
        engine built them over *every* transaction; None computes them from ``columns`` with
        :func:`~wannabet.store.summaries.from_columns` (engines without native summaries). The
        sample's ``transactions``, ``committed``, ``errors`` and ``tps`` come from the
        summaries' measured (non-warm-up) statuses, not from the rows: with ``recorded < 1``
        only that fraction of the transactions is in ``columns``.

        Rows are written in start order (the engine hands them back session by session), so a
        plain scan of ``transactions`` yields every sample's transactions in time order.
        """
        if not 0.0 <= recorded <= 1.0:
            raise StoreError(
                f"sample {sample.sample_id}: recorded = {recorded!r}; expected the fraction of"
                " transactions stored as rows, from 0 to 1"
            )
        order = np.argsort(columns["start_ns"], kind="stable")
        columns = {name: np.asarray(values)[order] for name, values in columns.items()}
        if summaries is None:
            summaries = from_columns(columns, sample.measure_start_ns)
        start = columns["start_ns"]
        status_idx = columns["status"].astype(np.int8, copy=False)
        warmup = start < sample.measure_start_ns
        code_idx = columns["error_code"].astype(np.int32, copy=False)
        codes = pa.array(list(error_codes) or [""], type=pa.string())
        table = pa.table(
            {
                "session": columns["session"].astype(np.int32, copy=False),
                "txn_type": columns["txn_type"].astype(np.int16, copy=False),
                "intended_start_ns": columns["intended_start_ns"].astype(np.int64, copy=False),
                "start_ns": start.astype(np.int64, copy=False),
                "end_ns": columns["end_ns"].astype(np.int64, copy=False),
                "status": pa.DictionaryArray.from_arrays(
                    pa.array(status_idx), pa.array(STATUS_NAMES, type=pa.string())
                ),
                "error_code": pa.DictionaryArray.from_arrays(
                    pa.array(np.maximum(code_idx, 0), mask=code_idx < 0), codes
                ),
                "retries": columns["retries"].astype(np.int32, copy=False),
                "warmup": warmup,
            }
        )
        st = summaries.statuses
        measured = ~st["warmup"]
        with self._connect(write=True) as con:
            con.execute("BEGIN")
            self._insert_sample(
                con,
                run_id,
                sample,
                measured=int(st["count"][measured].sum()),
                committed=int(st["count"][measured & (st["status"] == 0)].sum()),
                recorded=recorded,
            )
            _insert_summaries(con, run_id, sample.sample_id, summaries)
            con.register("incoming_transactions", table)
            con.execute(
                "INSERT INTO transactions SELECT ?, ?, session, txn_type, intended_start_ns,"
                " start_ns, end_ns, status, error_code, retries, warmup"
                " FROM incoming_transactions",
                [run_id, sample.sample_id],
            )
            con.unregister("incoming_transactions")
            if stacks:
                profile = pa.table(
                    {
                        "stack": pa.array([stack for stack, _ in stacks], type=pa.string()),
                        "weight": pa.array([w for _, w in stacks], type=pa.int64()),
                    }
                )
                con.register("incoming_profile", profile)
                # perf's folding gives each stack once; a repeat would be summed, not refused.
                con.execute(
                    "INSERT INTO profiles SELECT ?, ?, stack, sum(weight)::BIGINT"
                    " FROM incoming_profile GROUP BY stack",
                    [run_id, sample.sample_id],
                )
                con.unregister("incoming_profile")
            con.execute("COMMIT")

    @staticmethod
    def _insert_sample(
        con: duckdb.DuckDBPyConnection,
        run_id: int,
        sample: SampleRow,
        *,
        measured: int,
        committed: int,
        recorded: float = 1.0,
    ) -> None:
        duration_s = max(sample.end_ns - sample.measure_start_ns, 0) / 1e9
        con.execute(
            "INSERT INTO samples (run_id, sample_id, condition_id, block, position, status, t0_ns,"
            " measure_start_ns, end_ns, duration_s, warmup_s, transactions, committed, errors,"
            " tps, sessions_lost, error_messages, stats, recorded, reason)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                run_id,
                sample.sample_id,
                sample.condition_id,
                sample.block,
                sample.position,
                sample.status,
                sample.t0_ns,
                sample.measure_start_ns,
                sample.end_ns,
                duration_s,
                sample.warmup_s,
                measured,
                committed,
                measured - committed,
                committed / duration_s if duration_s > 0 else None,
                sample.sessions_lost,
                json.dumps(dict(sample.error_messages or {})),
                json.dumps(dict(sample.stats or {})),
                recorded,
                sample.reason,
            ],
        )

    def add_settings(self, run_id: int, **values: Any) -> None:
        """Merge ``values`` into the run's settings: what a run learns as it goes (how a run
        that stops when decided stopped)."""
        with self._connect(write=True) as con:
            row = con.execute("SELECT settings FROM runs WHERE run_id = ?", [run_id]).fetchone()
            settings = json.loads(row[0]) if row is not None and row[0] else {}
            settings.update(values)
            con.execute(
                "UPDATE runs SET settings = ? WHERE run_id = ?", [json.dumps(settings), run_id]
            )

    def update_environment(self, run_id: int, **values: Any) -> None:
        """Merge ``values`` into the run's environment (the server's settings once the run's
        set-up has run: what its samples ran on)."""
        with self._connect(write=True) as con:
            row = con.execute("SELECT environment FROM runs WHERE run_id = ?", [run_id]).fetchone()
            environment = json.loads(row[0]) if row is not None and row[0] else {}
            environment.update(values)
            con.execute(
                "UPDATE runs SET environment = ? WHERE run_id = ?",
                [json.dumps(environment), run_id],
            )

    def resume_run(self, run_id: int) -> None:
        """Mark an interrupted or failed run ``running`` again, by this process (``--resume``)."""
        with self._connect(write=True) as con:
            con.execute(
                "UPDATE runs SET status = 'running', ended_at = NULL, message = NULL, host = ?,"
                " pid = ? WHERE run_id = ?",
                [socket.gethostname(), os.getpid(), run_id],
            )

    def finish_run(self, run_id: int, status: str, message: str | None = None) -> None:
        with self._connect(write=True) as con:
            con.execute(
                "UPDATE runs SET status = ?, ended_at = now(), message = ? WHERE run_id = ?",
                [status, message, run_id],
            )

    def _reap_stale_runs(self, con: duckdb.DuckDBPyConnection) -> None:
        """Mark runs left ``running`` by a process that no longer exists as interrupted."""
        rows = con.execute(
            "SELECT run_id, pid FROM runs WHERE status = 'running' AND host = ?",
            [socket.gethostname()],
        ).fetchall()
        for run_id, pid in rows:
            if _gone(socket.gethostname(), pid):
                con.execute(
                    "UPDATE runs SET status = 'interrupted', ended_at = now(), message = ?"
                    " WHERE run_id = ?",
                    [_GONE, run_id],
                )

    def delete_runs(self, run_ids: Sequence[int]) -> list[int]:
        """Remove runs and everything stored with them; refuses a run still running (its
        process alive). Returns the ids removed."""
        with self._connect(write=True) as con:
            known = {
                int(r[0]): r for r in con.execute("SELECT run_id, status FROM runs").fetchall()
            }
            missing = [r for r in run_ids if r not in known]
            if missing:
                raise UnknownRun(
                    f"--delete {missing[0]}: no such run in {self.path}; see `wannabet runs`"
                )
            running = [r for r in run_ids if known[r][1] == "running"]
            if running:
                raise StoreError(
                    f"run {running[0]} is running; stop it first (Ctrl-C), then delete it"
                )
            tables = [
                str(t[0])
                for t in con.execute(
                    "SELECT DISTINCT c.table_name FROM information_schema.columns c JOIN"
                    " information_schema.tables t USING (table_schema, table_name)"
                    " WHERE c.column_name = 'run_id' AND t.table_type = 'BASE TABLE'"
                    " AND c.table_schema = 'main'"
                ).fetchall()
            ]
            ids = sorted(set(run_ids))
            con.execute("BEGIN")
            for table in sorted(tables, key=lambda t: t == "runs"):  # the runs row last
                con.execute(
                    f'DELETE FROM "{table}" WHERE run_id IN ({", ".join("?" * len(ids))})', ids
                )
            con.execute("COMMIT")
            con.execute("CHECKPOINT")
            return ids

    # -- reading -----------------------------------------------------------------------------------

    def runs(self) -> list[RunInfo]:
        with self._connect() as con:
            return [
                self._run_info(r) for r in con.execute(_RUN_QUERY + " ORDER BY r.run_id").fetchall()
            ]

    def run(self, run_id: int | None = None) -> RunInfo:
        """One run; when ``run_id`` is None the latest with a sample (else the latest)."""
        with self._connect() as con:
            if run_id is None:
                # The latest run with a sample: a run that failed before its first sample (or
                # one just started) is not what "the latest results" means.
                row = con.execute(
                    "SELECT coalesce(max(run_id) FILTER (WHERE EXISTS (SELECT 1 FROM samples s"
                    " WHERE s.run_id = runs.run_id)), max(run_id)) FROM runs"
                ).fetchone()
                if not row or row[0] is None:
                    raise StoreError(
                        f"{self.path} holds no runs yet; start one with `wannabet run FILE`"
                    )
                run_id = int(row[0])
            found = con.execute(_RUN_QUERY + " WHERE r.run_id = ?", [run_id]).fetchone()
            if not found:
                raise UnknownRun(f"--run {run_id}: no such run in {self.path}; see `wannabet runs`")
            return self._run_info(found)

    @staticmethod
    def _run_info(row: tuple[Any, ...]) -> RunInfo:
        status, message = row[4], row[10]
        if status == "running" and _gone(row[17], row[18]):
            # Any reader reports it as it is, whether or not it may write the file.
            status, message = "interrupted", _GONE
        return RunInfo(
            run_id=row[0],
            name=row[1],
            description=row[2] or "",
            kind=row[3],
            status=status,
            started_at=_utc(row[5]),
            ended_at=_utc(row[6]) if row[6] is not None else None,
            target=row[7],
            source=row[8],
            seed=row[9],
            message=message,
            settings=json.loads(row[11]) if row[11] else {},
            environment=json.loads(row[12]) if row[12] else {},
            conditions=int(row[13]),
            samples=int(row[14]),
            transactions=int(row[15]),
            target_kind=row[16],
        )

    def conditions(self, run_id: int) -> list[ConditionRow]:
        with self._connect() as con:
            rows = con.execute(
                "SELECT condition_id, label, levels, session_sql, system_sql FROM conditions"
                " WHERE run_id = ? ORDER BY condition_id",
                [run_id],
            ).fetchall()
        return [
            ConditionRow(
                r[0],
                r[1],
                json.loads(r[2] or "{}"),
                tuple(json.loads(r[3] or "[]")),
                tuple(json.loads(r[4] or "[]")),
            )
            for r in rows
        ]

    def degraded_samples(self, run_id: int) -> list[queries.DegradedSample]:
        """The run's degraded samples (the analyses leave them out unless ``include_degraded``)."""
        with self._connect() as con:
            return queries.degraded_samples(con, run_id)

    def generator_summaries(self, run_id: int) -> list[queries.GeneratorSummary]:
        """Per condition and load generator of a distributed run, its share of the work; empty
        for a run on one host."""
        with self._connect() as con:
            return queries.generator_summaries(con, run_id)

    def sample_profiles(self, run_id: int) -> dict[int, list[dict[str, float]]]:
        """The run's CPU profiles: per condition id, one ``stack -> weight`` mapping per
        analysed sample that has one, in the order the samples ran (empty: none profiled)."""
        with self._connect() as con:
            return queries.sample_profiles(con, run_id)

    def samples(self, run_id: int) -> list[dict[str, Any]]:
        with self._connect() as con:
            cur = con.execute(
                "SELECT s.*, c.label AS condition FROM samples s JOIN conditions c"
                " USING (run_id, condition_id) WHERE run_id = ? ORDER BY position",
                [run_id],
            )
            names = [d[0] for d in cur.description]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def condition_summaries(
        self, run_id: int, *, include_warmup: bool = False
    ) -> list[ConditionSummary]:
        """Totals and latency percentiles per condition, from the per-sample summaries.

        Counts, errors by status, the mean and the maximum are exact; the percentiles come from
        the merged latency histograms (the bin holding the order statistic, reported at its
        midpoint: within 1/256 of the exact value, see :mod:`wannabet.analysis.histogram`).
        The cost grows with samples and bins, not with transactions.
        """
        warm = "" if include_warmup else "AND NOT x.warmup"
        # An import that kept only aggregates is summarised from its aggregates alone.
        aggregates_only = self.run(run_id).aggregates_only
        with self._connect() as con:
            rows = con.execute(
                f"""
                WITH by_status AS (
                    SELECT s.condition_id, x.status, sum(x.count) AS n
                    FROM sample_statuses x JOIN samples s USING (run_id, sample_id)
                    WHERE x.run_id = ? AND {queries.ANALYSED} {warm} GROUP BY ALL
                ),
                counts AS (
                    SELECT condition_id, sum(n) AS n,
                           coalesce(sum(n) FILTER (WHERE status <> 'ok'), 0) AS errors,
                           map_from_entries(list((status, n::BIGINT)) FILTER (WHERE status <> 'ok'))
                               AS by_status
                    FROM by_status GROUP BY condition_id
                ),
                moments AS (
                    SELECT s.condition_id, sum(x.sum_ms) / nullif(sum(x.count), 0) AS mean,
                           max(x.max_ns) / 1e6 AS mx
                    FROM sample_moments x JOIN samples s USING (run_id, sample_id)
                    WHERE x.run_id = ? AND {queries.ANALYSED} {warm} GROUP BY s.condition_id
                ),
                agg AS (
                    SELECT condition_id, n, errors, m.mean, NULL AS q, m.mx, by_status
                    FROM counts LEFT JOIN moments m USING (condition_id)
                ),
                per_sample AS (
                    SELECT condition_id, count(*) AS samples,
                           sum(committed) / nullif(sum(duration_s), 0) AS tps,
                           sum(sessions_lost) AS lost,
                           sum(transactions) AS n, sum(errors) AS errors
                    FROM samples s WHERE run_id = ? AND {queries.ANALYSED} GROUP BY condition_id
                )
                -- A sample without per-status counts (an import of a tool's totals alone)
                -- counts by its own totals.
                SELECT c.label, coalesce(p.samples, 0), coalesce(a.n, p.n, 0),
                       coalesce(a.errors, p.errors, 0),
                       p.tps, a.mean, a.q, a.mx, a.by_status, coalesce(p.lost, 0)
                FROM conditions c
                LEFT JOIN agg a USING (condition_id)
                LEFT JOIN per_sample p USING (condition_id)
                WHERE c.run_id = ? ORDER BY c.condition_id
                """,
                [run_id, run_id, run_id, run_id],
            ).fetchall()
            aggregated = _aggregate_summaries(con, run_id)
            bins = queries.condition_bins(con, run_id, include_warmup=include_warmup)
            labels = dict(
                con.execute(
                    "SELECT condition_id, label FROM conditions WHERE run_id = ?", [run_id]
                ).fetchall()
            )
        percentiles = _percentiles_ms(bins, labels, (0.5, 0.95, 0.99))
        binned = {
            labels[int(cid)]: int(bins.count[bins.condition_id == cid].sum())
            for cid in np.unique(bins.condition_id).tolist()
        }
        out = []
        for label, samples, n, errors, tps, mean, _, mx, by_status, lost in rows:
            q = percentiles.get(label, [None, None, None])
            if mx is not None:
                # A bin's midpoint may lie past the largest value in it: no percentile is
                # shown above the maximum beside it (the exact value is at most the maximum).
                q = [None if v is None else min(v, float(mx)) for v in q]
            out.append(
                ConditionSummary(
                    condition=label,
                    samples=int(samples),
                    transactions=int(n),
                    errors=int(errors),
                    tps=_num(tps),
                    latency_ms={
                        "mean": _num(mean),
                        "p50": _num(q[0]),
                        "p95": _num(q[1]),
                        "p99": _num(q[2]),
                        "max": _num(mx),
                    },
                    errors_by_status={str(k): int(v) for k, v in (by_status or {}).items()},
                    sessions_lost=int(lost),
                )
            )
            if aggregates_only and label in aggregated:
                # An import that kept only aggregates: its counts, and only the latency
                # figures the aggregates determine exactly (no percentiles are invented).
                a_n, a_errors, a_mean, a_q, a_max, a_by_status = aggregated[label]
                if binned.get(label, 0) != a_n - a_errors:
                    # Histograms of only some of its samples or types: theirs are not the
                    # condition's percentiles.
                    q = [None, None, None]
                out[-1] = ConditionSummary(
                    condition=label,
                    samples=int(samples),
                    transactions=a_n,
                    errors=a_errors,
                    tps=_num(tps),
                    # The tool's own percentiles when one row covers the condition; else
                    # those of the per-sample histograms it kept (fio's, YCSB's), merged.
                    latency_ms={
                        "mean": a_mean,
                        "p50": a_q.get("p50", _num(q[0])),
                        "p95": a_q.get("p95", _num(q[1])),
                        "p99": a_q.get("p99", _num(q[2])),
                        "max": a_max,
                    },
                    errors_by_status=a_by_status,
                    sessions_lost=int(lost),
                )
        return out

    # -- Arrow tables, for the Python API (``wannabet.api``) --------------------------------------

    def samples_table(self, run_id: int) -> pa.Table:
        """Every sample of a run, degraded ones too, with its condition's label: the
        ``samples`` table as an Arrow table, in ``sample_id`` order."""
        with self._connect() as con:
            return queries.samples_table(con, run_id)

    def sample_summaries_table(self, run_id: int) -> pa.Table:
        """One row per sample the analyses use: its condition, counts, TPS and ``summary``'s
        latency figures (:func:`wannabet.store.queries.sample_summary`), as an Arrow table."""
        with self._connect() as con:
            return queries.sample_summary(con, run_id)

    def transactions_table(self, run_id: int, *, include_warmup: bool = False) -> pa.Table:
        """The stored transactions of the samples the analyses use, as ``transaction_latency``
        has them (condition, type name, latency in ms), as an Arrow table in sample and start
        order; without the warm-up unless ``include_warmup``."""
        with self._connect() as con:
            return queries.transactions_table(con, run_id, include_warmup=include_warmup)

    def export(
        self,
        run_id: int | None,
        directory: str | Path,
        fmt: str = "parquet",
        *,
        written: Callable[[Path, int], None] | None = None,
    ) -> list[Path]:
        """Write one run (every run with ``run_id=None``) as one file per table, plus two files
        ready for analysis; return their paths in :data:`EXPORTS` order.

        Every table is written as it is (:data:`EXPORTED_TABLES`), then ``transaction_latency``
        (the view: each stored transaction with its condition, type name and latency in ms)
        and ``sample_summary`` (:func:`~wannabet.store.queries.sample_summary`, every sample,
        degraded ones included: their ``status`` says so). DuckDB writes each file with one
        ``COPY``, so a run of any size streams to disk. ``written`` is called with each file's
        path and row count as it is done. See ``docs/results-schema.md``, "Export".
        """
        if fmt not in ("parquet", "csv"):
            raise StoreError(f"unknown export format {fmt!r}; use parquet or csv")
        out = Path(directory)
        # A bad --output is the command line's mistake (exit 2, as report's -o), not the
        # results file's.
        if out.exists() and not out.is_dir():
            raise SpecError(
                f"{out} is a file, not a directory; name a directory",
                key="--output",
                file="command line",
            )
        options = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER true"
        paths = []
        with self._connect() as con:
            every = [
                int(r[0]) for r in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()
            ]
            if run_id is not None and run_id not in every:
                raise UnknownRun(f"--run {run_id}: no such run in {self.path}; see `wannabet runs`")
            runs = every if run_id is None else [run_id]
            try:
                out.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise SpecError(
                    f"cannot create the directory {out} ({exc.strerror}); name one you can"
                    " write to",
                    key="--output",
                    file="command line",
                ) from None
            if not os.access(out, os.W_OK | os.X_OK):
                raise SpecError(
                    f"cannot write in {out}; name a directory you can write to",
                    key="--output",
                    file="command line",
                )
            # Every sample, whether or not the analyses would take it: the file says which.
            con.execute(f"SET VARIABLE {INCLUDE_DEGRADED} = true")
            # CSV writes TIMESTAMPTZ in the session's time zone: UTC, whatever the machine's
            # (a DuckDB without ICU has no such setting, and writes UTC anyway).
            with contextlib.suppress(duckdb.Error):
                con.execute("SET TimeZone = 'UTC'")
            # (no run: run 0, which never exists, gives the columns without rows)
            parts = [queries.sample_summary(con, r) for r in runs or [0]]
            summary = pa.concat_tables(parts)
            con.register("exported_sample_summary", summary)
            where = "" if run_id is None else f"WHERE run_id = {int(run_id)}"
            for name in EXPORTS:
                source = "exported_sample_summary" if name == "sample_summary" else name
                order = _EXPORT_ORDER.get(name)
                query = (
                    f"SELECT * FROM {source}"
                    + ("" if name == "schema_version" else f" {where}")
                    + (f" ORDER BY {order}" if order else "")
                )
                path = out / f"{name}.{fmt}"
                target = str(path).replace("'", "''")
                row = con.execute(f"COPY ({query}) TO '{target}' ({options})").fetchone()
                paths.append(path)
                if written is not None:
                    written(path, int(row[0]) if row else 0)
            con.unregister("exported_sample_summary")
        return paths

    def run_spec(self, run_id: int) -> queries.RunSpec | None:
        """The experiment file ``run_id`` was started from (text and path); None if no run."""
        with self._connect() as con:
            return queries.run_spec(con, run_id)

    @contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for the functions of :mod:`wannabet.store.queries` (and for tests).

        Code outside ``store/`` passes it to those functions and writes no SQL of its own.
        """
        with self._connect() as con:
            yield con


_RUN_QUERY = """
SELECT r.run_id, r.name, r.description, r.kind, r.status, epoch_ms(r.started_at),
       epoch_ms(r.ended_at), r.target,
       r.source, r.seed, r.message, r.settings, r.environment,
       (SELECT count(*) FROM conditions c WHERE c.run_id = r.run_id),
       (SELECT count(*) FROM samples s WHERE s.run_id = r.run_id),
       (SELECT coalesce(sum(s.transactions), 0) FROM samples s WHERE s.run_id = r.run_id),
       r.target_kind, r.host, r.pid
FROM runs r
"""

#: what a run left ``running`` by a process that is gone says about itself
_GONE = "the process ended without closing the run; finished samples are kept"


def _insert_summaries(
    con: duckdb.DuckDBPyConnection, run_id: int, sample_id: int, summaries: SampleSummaries
) -> None:
    """Write one sample's summaries as they are, status codes as ``transactions.status`` names."""
    codes = summaries.statuses["status"]
    bad = codes[(codes < 0) | (codes >= len(STATUS_NAMES))]
    if bad.size:
        raise StoreError(
            f"sample {sample_id}: status code {int(bad[0])} in its summaries; expected 0 to"
            f" {len(STATUS_NAMES) - 1} (wannabet.model.STATUS_NAMES)"
        )
    names = np.asarray(STATUS_NAMES, dtype=object)
    for name, columns in (
        ("sample_moments", summaries.moments),
        ("sample_statuses", summaries.statuses),
        ("sample_bins", summaries.bins),
        ("sample_results", summaries.results),
    ):
        n = len(columns["count"])
        if not n:
            continue
        table: dict[str, Any] = {
            "run_id": np.full(n, run_id, dtype=np.int32),
            "sample_id": np.full(n, sample_id, dtype=np.int32),
            **columns,
        }
        if name == "sample_statuses":
            table["status"] = pa.array(names[codes.astype(np.int64)], type=pa.string())
        con.register("incoming_summary", pa.table(table))
        con.execute(f"INSERT INTO {name} BY NAME SELECT * FROM incoming_summary")
        con.unregister("incoming_summary")


def _insert_aggregate_summaries(
    con: duckdb.DuckDBPyConnection,
    run_id: int,
    sample_id: int,
    sample: ImportedSample,
    type_ids: Sequence[int],
) -> None:
    """Write what an aggregate-only import determines exactly about one sample (measured only)."""
    types = list(type_ids) or [0]
    for (txn_type, status), count in (sample.statuses or {}).items():
        if count:
            con.execute(
                "INSERT INTO sample_statuses VALUES (?, ?, ?, false, ?, ?)",
                [run_id, sample_id, types[txn_type], status, int(count)],
            )
    for txn_type, (count, sum_ms, sumsq_ms, min_ns, max_ns) in (sample.moments or {}).items():
        if count:
            con.execute(
                "INSERT INTO sample_moments VALUES (?, ?, ?, false, ?, ?, ?, NULL, NULL, ?, ?)",
                [
                    run_id,
                    sample_id,
                    types[txn_type],
                    int(count),
                    float(sum_ms),
                    float(sumsq_ms),
                    int(min_ns),
                    int(max_ns),
                ],
            )
    rows = [
        [run_id, sample_id, types[txn_type], int(lo), int(hi), int(count)]
        for txn_type, bins in (sample.bins or {}).items()
        for lo, hi, count in bins
        if count
    ]
    if rows:
        con.executemany("INSERT INTO sample_bins VALUES (?, ?, ?, false, ?, ?, ?)", rows)


def _fill_summaries(con: duckdb.DuckDBPyConnection, run_id: int, first_sample_id: int) -> None:
    """Summarise the stored transactions of the samples ``first_sample_id`` on of a run.

    The statements of migration 3's backfill (:func:`~wannabet.store.schema.summary_inserts`):
    an imported file's transactions are summarised exactly as an older file's were.
    """
    where = f"t.run_id = {int(run_id)} AND t.sample_id >= {int(first_sample_id)}"
    for sql in summary_inserts(where):
        con.execute(sql)


def _percentiles_ms(
    bins: queries.ConditionBins, labels: Mapping[int, str], qs: Sequence[float]
) -> dict[str, list[float | None]]:
    """Per condition label (``labels``: condition id → label), the quantiles ``qs`` of its
    merged latency histogram in ms; conditions without a successful transaction are left out."""
    out: dict[str, list[float | None]] = {}
    for cid, label in labels.items():
        if not (bins.condition_id == cid).any():
            continue
        try:
            h = queries.condition_histogram(bins, cid)
        except ValueError:
            # Imported histograms of two layouts that overlap (fio logs of another
            # coarseness appended to the condition): no merged percentile, not a traceback.
            continue
        out[label] = [float(v) / 1e6 for v in histogram.quantiles(h, qs)]
    return out


def _aggregate_summaries(
    con: duckdb.DuckDBPyConnection, run_id: int
) -> dict[str, tuple[int, int, float | None, dict[str, float], float | None, dict[str, int]]]:
    """Per condition, what its ``aggregates`` rows determine exactly.

    The mean is the count-weighted mean of the rows' means (or sum of latencies over count);
    the maximum is the maximum of maxima. Percentiles cannot be combined across rows, so they
    are shown only when one row (one type, one interval) covers the whole condition.
    """
    rows = con.execute(
        """
        SELECT c.label, sum(a.count), sum(a.failed), sum(a.skipped),
               sum(coalesce(a.lat_sum_ms, a.lat_mean_ms * a.count))
                   / nullif(sum(a.count) FILTER (
                       WHERE a.lat_sum_ms IS NOT NULL OR a.lat_mean_ms IS NOT NULL), 0),
               bool_and(a.lat_sum_ms IS NOT NULL OR a.lat_mean_ms IS NOT NULL),
               max(a.lat_max_ms), count(*), any_value(a.percentiles), any_value(a.histogram)
        FROM aggregates a JOIN conditions c USING (run_id, condition_id)
        WHERE a.run_id = ? GROUP BY c.label
        """,
        [run_id],
    ).fetchall()
    out = {}
    for label, n, failed, skipped, mean, all_mean, mx, rows_n, pct, hist in rows:
        percentiles = json.loads(pct) if pct and rows_n == 1 else {}
        bins = (json.loads(hist) or {}).get("bins_ns") if hist and rows_n == 1 else None
        if bins:
            # A tool's own histogram (sysbench): the percentiles it did not print, from its
            # buckets (the order statistic's bucket at its midpoint).
            lo, hi, count = (np.asarray(col, dtype=np.uint64) for col in zip(*bins, strict=True))
            h = histogram.Histogram(lo, hi, count)
            for key, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
                percentiles.setdefault(key, float(histogram.quantile(h, q)) / 1e6)
        by_status = {k: int(v) for k, v in (("failed", failed), ("skipped", skipped)) if v}
        out[str(label)] = (
            int(n) + int(failed) + int(skipped),
            int(failed) + int(skipped),
            _num(mean) if all_mean else None,
            {k: float(v) for k, v in percentiles.items() if k in ("p50", "p95", "p99")},
            _num(mx),
            by_status,
        )
    return out


def _num(value: Any) -> float | None:
    if value is None:
        return None
    f = float(value)
    return f if np.isfinite(f) else None


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().split("\n", 1)[0]


def _gone(host: str | None, pid: int | None) -> bool:
    """Whether the process that wrote a run ``running`` no longer exists (known only for a
    process of this host, and never this process)."""
    return (
        host == socket.gethostname()
        and pid is not None
        and pid != os.getpid()
        and not _alive(int(pid))
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _utc(epoch_ms: int) -> datetime:
    # Timestamps leave DuckDB as epoch milliseconds: fetching TIMESTAMPTZ would need pytz.
    return datetime.fromtimestamp(epoch_ms / 1000, UTC)
