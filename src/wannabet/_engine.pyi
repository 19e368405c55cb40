"""Types of ``wannabet._engine``, the Rust extension built from ``native/src/lib.rs``.

Only ``wannabet.engine`` imports the extension. Classes deriving from ``TypedDict`` or
``Protocol`` here describe shapes the extension reads or returns; they do not exist at run time
(``tests/test_engine_boundary.py`` checks that every other name here does, and the reverse).
"""

from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, TypedDict

import numpy as np
from numpy.typing import NDArray

#: index → name of the ``status`` column; 0 is success
STATUS_NAMES: Final[tuple[str, ...]]
#: the ``application_name`` of PostgreSQL sessions whose URL names none
APPLICATION_NAME: Final[str]
#: script function name → (minimum, maximum) number of arguments (None: no maximum)
SCRIPT_FUNCTIONS: Final[dict[str, tuple[int, int | None]]]
#: smallest parameter ``random_gaussian()`` accepts
GAUSSIAN_MIN_PARAMETER: Final[float]
#: closed range of the parameter ``random_zipfian()`` accepts
ZIPFIAN_PARAMETER_RANGE: Final[tuple[float, float]]
#: the values of a request's ``on_error``
ON_ERROR: Final[tuple[str, ...]]

class EngineError(Exception):
    """Base class of engine errors."""

    #: the SQLSTATE or SQLite code, when the driver gave one
    code: str | None

class ConnectError(EngineError):
    """Cannot connect or authenticate."""

class QueryError(EngineError):
    """A statement failed."""

    #: ``execute_many``: the failing statement, from 0
    index: int | None
    #: a refused prepare: the statement's number within its transaction, from 1
    statement: int | None
    #: a refused prepare: the transaction's name
    transaction: str | None
    #: a refused prepare: the transaction's index in the request
    transaction_index: int | None
    #: a refused prepare: the driver's message
    reason: str | None

#: a compiled script command: ("set", slot, expr), ("sleep", expr, unit_ns),
#: ("sql", text, slots, parts, capture), ("jump_unless", expr, index), ("jump", index)
Command = tuple[Any, ...]

class SampleCall(Protocol):
    """What ``run_sample`` reads, by attribute (``wannabet.engine.native._NativeRequest``)."""

    @property
    def target(self) -> str: ...
    @property
    def sessions(self) -> int: ...
    @property
    def transactions(self) -> Sequence[tuple[str, int, Sequence[Command], int]]: ...
    @property
    def session_sql(self) -> Sequence[str]: ...
    @property
    def slots(self) -> Sequence[int | float | None]: ...
    @property
    def slot_names(self) -> Sequence[str]: ...
    @property
    def captured_slots(self) -> Sequence[int]: ...
    @property
    def protocol(self) -> str: ...
    @property
    def fetch_size(self) -> int: ...
    @property
    def client_id_slot(self) -> int: ...
    @property
    def first_session(self) -> int: ...
    @property
    def default_seed_slot(self) -> int: ...
    @property
    def role(self) -> str: ...
    @property
    def duration_ns(self) -> int: ...
    @property
    def max_transactions(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def on_error(self) -> str: ...
    @property
    def max_tries(self) -> int: ...
    @property
    def rate(self) -> float: ...
    @property
    def warmup_ns(self) -> int: ...
    @property
    def record(self) -> float: ...
    @property
    def max_rows(self) -> int: ...
    @property
    def deadline_ns(self) -> int: ...
    @property
    def grace_ns(self) -> int: ...
    @property
    def reconnect_ns(self) -> int: ...
    @property
    def connector(self) -> object | None:
        """Not None: ``connect()`` makes each session's ``DbapiSession`` (DB-API targets)."""
        ...

class Columns(TypedDict):
    """One entry per transaction."""

    session: NDArray[np.int32]
    txn_type: NDArray[np.int16]
    intended_start_ns: NDArray[np.int64]
    start_ns: NDArray[np.int64]
    end_ns: NDArray[np.int64]
    status: NDArray[np.int8]
    error_code: NDArray[np.int32]
    retries: NDArray[np.int32]

class Moments(TypedDict):
    """Per (txn_type, warmup) with a successful transaction: their latency moments
    (``wannabet.store.summaries.MOMENT_COLUMNS``)."""

    txn_type: NDArray[np.int16]
    warmup: NDArray[np.bool_]
    count: NDArray[np.int64]
    sum_ms: NDArray[np.float64]
    sumsq_ms: NDArray[np.float64]
    sumlog_ms: NDArray[np.float64]
    sumlog2_ms: NDArray[np.float64]
    min_ns: NDArray[np.int64]
    max_ns: NDArray[np.int64]

class Statuses(TypedDict):
    """Per (txn_type, warmup, status) that occurred: its count (``STATUS_COLUMNS``)."""

    txn_type: NDArray[np.int16]
    warmup: NDArray[np.bool_]
    status: NDArray[np.int8]
    count: NDArray[np.int64]

class Bins(TypedDict):
    """The non-empty latency histogram bins per (txn_type, warmup) (``BIN_COLUMNS``)."""

    txn_type: NDArray[np.int16]
    warmup: NDArray[np.bool_]
    lo_ns: NDArray[np.int64]
    hi_ns: NDArray[np.int64]
    count: NDArray[np.int64]

class Results(TypedDict):
    """Per (txn_type, warmup) with a successful transaction whose result was a number: the
    results' count, sums and extremes (``RESULT_COLUMNS``)."""

    txn_type: NDArray[np.int16]
    warmup: NDArray[np.bool_]
    count: NDArray[np.int64]
    sum: NDArray[np.float64]
    sumsq: NDArray[np.float64]
    min: NDArray[np.float64]
    max: NDArray[np.float64]

class Summaries(TypedDict):
    """Every transaction of the sample, whether its row was kept or not."""

    moments: Moments
    statuses: Statuses
    bins: Bins
    results: Results

class SampleOutput(TypedDict):
    t0_ns: int
    end_ns: int
    #: the rows kept (the request's ``record`` fraction of them)
    columns: Columns
    summaries: Summaries
    #: ``error_code`` column value → SQLSTATE / SQLite code
    error_codes: list[str]
    #: code → first message seen with it
    error_messages: dict[str, str]
    sessions_lost: int
    sessions_stuck: int
    reconnects: int
    overran: bool
    session_cpu_ns: list[int]
    counters: dict[str, int]

class WaitCounts(TypedDict):
    """What the polls of one sample saw."""

    polls: int
    elapsed_s: float
    #: (wait event type, wait event, count), most frequent first
    events: list[tuple[str, str, int]]
    active: int
    on_cpu: int
    sessions: int
    max_sessions: int
    pids: list[int]
    cpu_s: float
    error: str | None

class HistogramBins(TypedDict):
    """The non-empty bins of a latency histogram: ``count`` values lie in ``[lo_ns, hi_ns]``."""

    lo_ns: NDArray[np.uint64]
    hi_ns: NDArray[np.uint64]
    count: NDArray[np.uint64]

def version() -> str: ...
def histogram_of(values_ns: NDArray[np.uint64]) -> HistogramBins: ...
def fold_perf(text: bytes) -> list[tuple[str, int]]: ...
def distribution(
    name: str,
    x: NDArray[np.float64],
    a: NDArray[np.float64],
    b: NDArray[np.float64],
) -> NDArray[np.float64]: ...
def flame_graph(
    stacks: Sequence[tuple[str, int]],
    title: str,
    subtitle: str | None = None,
    colors: dict[str, str] | None = None,
    titles: dict[str, str] | None = None,
) -> str: ...
def execute(target: str, sql: str) -> None: ...
def execute_many(target: str, statements: Sequence[str]) -> None: ...
def query(
    target: str, sql: str, timeout_s: float | None = None
) -> list[tuple[str | None, ...]]: ...
def run_sample(
    request: SampleCall,
    progress: Callable[[int, int, float, float], object] | None = None,
) -> SampleOutput: ...

class WaitPoller:
    """Wait-event sampling of the run's sessions, on a thread and a connection of its own."""

    def __init__(
        self, target: str, application_name: str, interval_s: float, timeout_s: float
    ) -> None: ...
    @property
    def backend_pid(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    def query(self, sql: str) -> list[list[str | None]]: ...
    def start(self, foreign: Sequence[int] = ...) -> None: ...
    def stop(self) -> WaitCounts: ...
    def close(self) -> None: ...

class HeldSession:
    """A connection kept open until ``close`` (held sessions)."""

    def __init__(self, target: str) -> None: ...
    def execute(self, sql: str) -> None: ...
    def close(self) -> None: ...

def dry_run(
    target: str, setup: list[str], conditions: list[tuple[list[str], list[tuple[str, int]]]]
) -> tuple[
    list[tuple[str | None, Any]],
    list[tuple[list[tuple[str | None, Any]], list[tuple[str | None, Any]]]],
]: ...
