"""The domain: experiments, workloads, scripts, factors and conditions as frozen values.

Everything here is validated before it is built (see :mod:`wannabet.spec`), so the rest of the
program can trust it. Only the standard library is imported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

# --- the script dialect: expressions -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IntLit:
    value: int


@dataclass(frozen=True, slots=True)
class FloatLit:
    value: float


@dataclass(frozen=True, slots=True)
class VarRef:
    name: str


@dataclass(frozen=True, slots=True)
class Neg:
    operand: Expr


@dataclass(frozen=True, slots=True)
class BoolLit:
    value: bool


@dataclass(frozen=True, slots=True)
class NullLit:
    pass


BinaryOperator = Literal[
    "+", "-", "*", "/", "%", "=", "<>", "<", "<=", ">", ">=", "&", "|", "#", "<<", ">>"
]


@dataclass(frozen=True, slots=True)
class BinOp:
    op: BinaryOperator
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Logic:
    """``AND`` / ``OR`` as pgbench has them: booleans only, a ``NULL`` on the left gives
    ``NULL`` (not SQL's three-valued logic), and the right side is evaluated only when the left
    does not decide."""

    op: Literal["and", "or"]
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Not:
    operand: Expr


@dataclass(frozen=True, slots=True)
class BitNot:
    operand: Expr


@dataclass(frozen=True, slots=True)
class Is:
    """``x IS NULL`` (``value`` None), ``x IS TRUE`` / ``IS FALSE``; ``IS NOT`` wraps it in Not."""

    operand: Expr
    value: bool | None


@dataclass(frozen=True, slots=True)
class Case:
    """``CASE WHEN c THEN v ... [ELSE e] END``; without ELSE the value is NULL."""

    arms: tuple[tuple[Expr, Expr], ...]
    otherwise: Expr | None


@dataclass(frozen=True, slots=True)
class Call:
    function: str
    args: tuple[Expr, ...]


Expr = (
    IntLit | FloatLit | BoolLit | NullLit | VarRef | Neg | BinOp | Logic | Not | BitNot | Is | Case
) | Call

# --- the script dialect: commands ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SetCommand:
    """``\\set name expression``: evaluated by the engine before the statements that follow."""

    variable: str
    expr: Expr
    line: int


@dataclass(frozen=True, slots=True)
class SleepCommand:
    """``\\sleep n [us|ms|s]``: think time, counted inside the transaction like pgbench does."""

    expr: Expr
    unit: Literal["us", "ms", "s"]
    line: int

    @property
    def unit_ns(self) -> int:
        return {"us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}[self.unit]


#: how a backend's driver writes the n-th bind parameter: ``$1`` (PostgreSQL), ``?1`` (SQLite's
#: numbered form), ``?`` (MySQL: bare, in order)
PlaceholderStyle = Literal["dollar", "qmark", "positional"]
PLACEHOLDERS: dict[str, str] = {"dollar": "${n}", "qmark": "?{n}", "positional": "?"}
#: how a backend's SQL is lexed where a script is split into statements and its ``:name``
#: placeholders are found: ``standard`` (PostgreSQL's rules, which SQLite and DuckDB share for
#: this purpose: ``''`` doubling, ``E'...'``, dollar quotes, ``--`` and nested ``/* */``) or
#: ``mysql`` (backslash escapes in '...' and "...", backticks, ``#`` and ``-- `` comments)
SqlDialect = Literal["standard", "mysql"]


@dataclass(frozen=True, slots=True)
class SqlCommand:
    """One SQL statement. ``:name`` placeholders are bound as parameters, never interpolated.

    ``parts`` holds the literal SQL between placeholders and ``params`` the variable of each
    placeholder, so ``parts[0] + P(params[0]) + parts[1] + ...`` rebuilds the statement for any
    placeholder style ``P``.
    """

    text: str
    parts: tuple[str, ...]
    params: tuple[str, ...]
    line: int
    #: ``\\gset [prefix]`` (exactly one row) or ``\\aset [prefix]`` (the last of any rows): the
    #: result's columns become the variables prefix + column name
    capture: tuple[Literal["gset", "aset"], str] | None = None
    #: joined with ``\\;`` to the next statements: several statements sent as one query
    compound: bool = False
    #: a compound's statements, as the lexer split them (empty when not compound)
    statements: tuple[str, ...] = ()

    def render(self, style: PlaceholderStyle) -> tuple[str, tuple[str, ...]]:
        """The statement with native placeholders, and the variables in placeholder order.

        Every occurrence gets its own placeholder, as in pgbench: PostgreSQL may infer a
        different type for each use of the same variable.
        """
        pieces = [self.parts[0]]
        for n, literal in enumerate(self.parts[1:], start=1):
            pieces.append(PLACEHOLDERS[style].format(n=n))
            pieces.append(literal)
        return "".join(pieces), self.params


@dataclass(frozen=True, slots=True)
class CopyCommand:
    """``\\copy table [(columns)] FROM 'file' [(options)]``: a bulk load, COPY ... FROM STDIN
    on PostgreSQL; or ``FROM generate_series(a, b)``: rows a..b, each column the row's number."""

    table: str
    columns: tuple[str, ...]
    #: the file (absolute once the experiment file is read), or None for a series
    path: str | None
    series: tuple[Expr, Expr] | None
    #: COPY's options, keys in lower case (``format``, ``header``, ``delimiter``, ...)
    options: tuple[tuple[str, str], ...]
    #: the options as written, passed to PostgreSQL's COPY unchanged
    options_sql: str
    line: int


@dataclass(frozen=True, slots=True)
class BranchCommand:
    """``\\if expr``, ``\\elif expr``, ``\\else``, ``\\endif``; the parser checks the nesting."""

    kind: Literal["if", "elif", "else", "endif"]
    expr: Expr | None
    line: int


@dataclass(frozen=True, slots=True)
class PipelineCommand:
    """``\\startpipeline``, ``\\syncpipeline``, ``\\endpipeline`` (PostgreSQL): the statements
    between them are sent without waiting for each other's results."""

    kind: Literal["start", "sync", "end"]
    line: int


Command = SetCommand | SleepCommand | SqlCommand | CopyCommand | BranchCommand | PipelineCommand


@dataclass(frozen=True, slots=True)
class Script:
    text: str
    commands: tuple[Command, ...]
    #: variables read but set by no ``\\set``: a ``\\gset``/``\\aset`` result column must
    #: provide each (the engine checks when it knows the columns)
    captured_variables: tuple[str, ...] = ()
    #: the text parses only with its ``{factor}`` placeholders filled in: the commands are a
    #: stand-in, and every condition parses its own copy (``design.with_placeholders``)
    needs_levels: bool = False
    #: the SQL lexing it was read with; a target that lexes otherwise reads it again
    #: (``design.lexed_as``)
    dialect: SqlDialect = "standard"

    @property
    def pipelined(self) -> bool:
        """Whether it uses ``\\startpipeline``."""
        return any(isinstance(c, PipelineCommand) for c in self.commands)

    @property
    def statements(self) -> tuple[SqlCommand, ...]:
        return tuple(c for c in self.commands if isinstance(c, SqlCommand))


# --- the experiment ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Transaction:
    name: str
    weight: int
    script: Script
    #: the experiment file's line of the script's first line (None when not read from a file)
    script_line: int | None = None
    #: record the first column of its last statement as its result (``result = true``)
    result: bool = False

    def file_line(self, line: int) -> int | None:
        """The experiment file's line of the script's line ``line`` (from 1), if known."""
        return None if self.script_line is None else self.script_line + line - 1


OnError = Literal["continue", "abort"]
#: how statements are sent, as pgbench's ``-M``: ``simple`` writes the values into the text and
#: the server parses and plans every execution; ``extended`` binds them but still parses and
#: plans every time; ``prepared`` parses once per connection
QueryProtocol = Literal["simple", "extended", "prepared"]
QUERY_PROTOCOLS: tuple[QueryProtocol, ...] = ("simple", "extended", "prepared")


@dataclass(frozen=True, slots=True)
class Workload:
    sessions: int
    transactions: tuple[Transaction, ...]
    variables: tuple[tuple[str, int | float], ...] = ()
    session_sql: tuple[str, ...] = ()
    rate: float | None = None
    on_error: OnError = "continue"
    max_tries: int = 1
    protocol: QueryProtocol = "prepared"
    #: rows per round trip of a statement's result (PostgreSQL portals); None: all at once
    fetch_size: int | None = None
    #: a session whose connection drops connects again (waiting 0.1 s, doubling to 2 s) for up
    #: to this long per outage and goes on, the sample stored as degraded; None: it is lost
    reconnect_s: float | None = None


#: how long a session tries to get its connection back with ``reconnect = true``
DEFAULT_RECONNECT_S = 30.0


@dataclass(frozen=True, slots=True)
class Background:
    """An unmeasured load on sessions of its own, running while each sample runs: its counts
    are recorded with the sample, and no analysis uses them."""

    transactions: tuple[Transaction, ...]
    sessions: int = 1
    rate: float | None = None
    session_sql: tuple[str, ...] = ()


HeldEnd = Literal["rollback", "commit"]


@dataclass(frozen=True, slots=True)
class HeldSession:
    """SQL run on a connection of its own that stays open while the run is in the condition
    (typically ``BEGIN; UPDATE ...``: a transaction left open, its locks and row versions held),
    ended with ROLLBACK or COMMIT when the run leaves the condition."""

    sql: str
    end: HeldEnd = "rollback"


@dataclass(frozen=True, slots=True)
class LevelSettings:
    """What one level of a factor sets (``[factors.levels.NAME]``, or the factor's keys with
    ``{level}`` put in): SQL on the sessions and once per switch, and what of the workload it
    replaces."""

    session_sql: tuple[str, ...] = ()
    system_sql: tuple[str, ...] = ()
    #: concurrent sessions of this level's samples (None: the workload's)
    sessions: int | None = None
    #: open-loop rate of this level's samples (None: the workload's)
    rate: float | None = None
    #: the transactions of this level's samples, replacing the workload's (None: the workload's)
    transactions: tuple[Transaction, ...] | None = None
    #: how this level's statements are sent (None: the workload's)
    protocol: QueryProtocol | None = None
    #: connections held open while the run is in this level's conditions
    held: tuple[HeldSession, ...] = ()
    #: the background load of this level's samples, replacing the experiment's (None: its)
    background: Background | None = None
    #: rows per round trip of this level's statements' results (None: the workload's)
    fetch_size: int | None = None
    #: the target URL of this level's samples (None: the run's)
    target: str | None = None
    #: parameters put into the target URL's query for this level (``sslmode``, ...)
    target_params: tuple[tuple[str, str], ...] = ()
    #: shell commands run on this machine whenever the run switches to this level (after its
    #: ``system_sql``), with the rules of hooks
    system_shell: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Factor:
    name: str
    levels: tuple[str, ...]
    session_sql: str | None = None
    system_sql: str | None = None
    #: per level (in the order of ``levels``): what it sets; empty when only the templates
    #: ``session_sql``/``system_sql`` with ``{level}`` say it
    settings: tuple[LevelSettings, ...] = ()

    def level_settings(self, level: str) -> LevelSettings:
        """The settings of ``level``: its own, with the factor's templates filled in."""
        own = self.settings[self.levels.index(level)] if self.settings else LevelSettings()
        session = (self.session_sql.replace("{level}", level),) if self.session_sql else ()
        system = (self.system_sql.replace("{level}", level),) if self.system_sql else ()
        return LevelSettings(
            session_sql=session + own.session_sql,
            system_sql=system + own.system_sql,
            sessions=own.sessions,
            rate=own.rate,
            transactions=own.transactions,
            protocol=own.protocol,
            held=own.held,
            background=own.background,
            fetch_size=own.fetch_size,
            target=own.target,
            target_params=own.target_params,
            system_shell=own.system_shell,
        )


@dataclass(frozen=True, slots=True)
class Condition:
    """One combination of factor levels; the unit every sample is run under."""

    levels: tuple[tuple[str, str], ...]
    session_sql: tuple[str, ...] = ()
    system_sql: tuple[str, ...] = ()
    #: the workload's sessions, rate and transactions as the levels set them (None: unchanged)
    sessions: int | None = None
    rate: float | None = None
    transactions: tuple[Transaction, ...] | None = None
    protocol: QueryProtocol | None = None
    held: tuple[HeldSession, ...] = ()
    background: Background | None = None
    fetch_size: int | None = None
    #: where this condition's samples run: a target URL, and parameters for its query
    #: (None and (): the run's target)
    target: str | None = None
    target_params: tuple[tuple[str, str], ...] = ()
    system_shell: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        if not self.levels:
            return "baseline"
        return ",".join(f"{factor}={level}" for factor, level in self.levels)


Order = Literal["randomized-blocks", "blocks", "sequential"]
OnDegraded = Literal["retry", "skip", "stop"]


def default_grace_s(deadline_s: float) -> float:
    """How long a sample may run past its deadline unless the file says: a tenth of the
    deadline, at least 1 s (a cancel request and a slow commit need that much) and at most
    60 s (a stuck server should be known within a minute)."""
    return min(max(1.0, 0.1 * deadline_s), 60.0)


#: ``record = "auto"``: rows kept per sample at most. About 0.35 s to write on a 2-core machine
#: (docs/benchmarks.md), so writing a sample takes less time than a 1 s sample.
AUTO_MAX_ROWS = 1_000_000

#: the significance level of every verdict (compare, report, the profiles, a run that stops
#: when decided, plan) when neither the command nor the experiment file gives one
DEFAULT_ALPHA = 0.05
#: the region of practical equivalence, +/- this many %, when neither gives one
DEFAULT_ROPE_PCT = 2.0
#: ``wannabet plan``'s defaults: the change to resolve (%), the chance of a verdict on it, and
#: the fewest samples per condition it plans
PLAN_CHANGE_PCT = 5.0
PLAN_POWER = 0.8
PLAN_MIN_SAMPLES = 10


@dataclass(frozen=True, slots=True)
class SamplingPlan:
    samples: int = 10
    duration_s: float | None = 5.0
    transactions: int | None = None
    warmup_s: float = 1.0
    cooldown_s: float = 0.0
    order: Order = "randomized-blocks"
    seed: int = 42
    #: the fraction of transactions stored as rows: 1.0 every one (``record = "all"``), 0.0
    #: none (``"none"``); the per-sample summaries always count every transaction
    record: float = 1.0
    #: at most this many rows per sample, beyond which a uniform random subset of that size is
    #: kept (``record = "auto"``, the default); 0: no limit
    max_rows: int = AUTO_MAX_ROWS
    #: stop as soon as every comparison with the baseline is decided by its anytime-valid
    #: confidence sequence (``wannabet.analysis.sequential``); ``samples`` is then the most
    #: samples per condition (``max_samples`` in the file)
    until_decided: bool = False
    #: the sequential rule's error rate: the chance that any comparison's sequence ever misses
    alpha: float = DEFAULT_ALPHA
    #: the sequential rule's region of practical equivalence, +/- this many %
    rope_pct: float = DEFAULT_ROPE_PCT
    #: how long past its deadline a sample may run (None: :func:`default_grace_s`); past half
    #: of it running statements are cancelled (``timeout``), at its end sessions that have
    #: not returned are given up on, and the sample is stored as ``degraded``
    grace_s: float | None = None
    #: the deadline of a sample of a transaction count (a timed sample's is its duration)
    timeout_s: float | None = None
    #: what the run does after a degraded sample: run it again once (then stop if it is
    #: degraded again), go on, or stop
    on_degraded: OnDegraded = "retry"

    def __post_init__(self) -> None:
        if not 0.0 <= self.record <= 1.0:
            raise ValueError(
                f"record must be 'all', 'none' or a fraction between 0 and 1, got {self.record!r}"
            )
        if self.max_rows < 0:
            raise ValueError(f"max_rows must be >= 0, got {self.max_rows!r}")
        if not 0.0 < self.alpha < 1.0:
            raise ValueError(f"alpha must be between 0 and 1, got {self.alpha!r}")
        if not (math.isfinite(self.rope_pct) and self.rope_pct >= 0.0):
            raise ValueError(f"rope must be a percentage >= 0, got {self.rope_pct!r}")

    @property
    def deadline_s(self) -> float | None:
        """A sample's deadline from its start: warm-up plus duration, or ``timeout``."""
        if self.duration_s is not None:
            return self.duration_s + self.warmup_s
        return self.timeout_s

    @property
    def effective_grace_s(self) -> float:
        """``grace``, or :func:`default_grace_s` of the deadline."""
        if self.grace_s is not None:
            return self.grace_s
        return default_grace_s(self.deadline_s or 0.0)

    @property
    def record_setting(self) -> str | float:
        """``record`` as the experiment file writes it: "auto", "all", "none" or the fraction."""
        if self.record <= 0.0:
            return "none"
        if self.record >= 1.0:
            return "auto" if self.max_rows > 0 else "all"
        return self.record


#: index → name of a transaction's ``status``; 0 is success. The engine's own copy is
#: ``_engine.STATUS_NAMES``, and ``tests/test_engine_boundary.py`` holds this one to it.
STATUS_NAMES: tuple[str, ...] = (
    "ok",
    "error",
    "serialization",
    "deadlock",
    "lock",
    "constraint",
    "connection",
    "script",
    "timeout",
)

#: variables every script may use without defining them, as in pgbench; None: the engine sets
#: it (``client_id`` per session, ``default_seed`` per sample: the seed of ``hash()`` and
#: ``permute()`` when none is given)
PREDEFINED_VARIABLES: dict[str, int | None] = {"client_id": None, "scale": 1, "default_seed": None}

#: PostgreSQL wait-event sampling: the default poll interval and the range allowed (s)
WAIT_INTERVAL_S = 0.050
WAIT_INTERVAL_RANGE_S = (0.010, 0.050)


@dataclass(frozen=True, slots=True)
class StatisticsPlan:
    """Which per-sample statistics a run collects (the ``[statistics]`` table)."""

    enabled: bool = True
    wait_interval_s: float = WAIT_INTERVAL_S
    #: cores of the database server, when /proc cannot tell (another host, a cgroup)
    server_cores: int | None = None


#: the default sampling frequency of ``[profile]``: 99 Hz, not 100, so that the profiler does
#: not tick in step with work that runs every 10 ms (Gregg's habit)
PROFILE_FREQUENCY_HZ = 99
#: the frequencies ``[profile] frequency`` accepts (the kernel's default cap is 100 kHz; above
#: a few kHz the profiler costs more than it tells)
PROFILE_FREQUENCY_RANGE_HZ = (1, 10_000)


@dataclass(frozen=True, slots=True)
class ProfilePlan:
    """Whether a run records CPU profiles of the server per sample (the ``[profile]`` table)."""

    perf: bool = False
    #: stack samples per second and CPU (``perf record -F``)
    frequency_hz: int = PROFILE_FREQUENCY_HZ


#: how far apart a distributed sample's load generators may start before it is degraded
START_TOLERANCE_S = 0.05


@dataclass(frozen=True, slots=True)
class DistributedPlan:
    """Where a run's load comes from (the ``[distributed]`` table): ``generators`` Ray actors
    (0: this process alone), on the Ray cluster at ``address`` (None: a local one)."""

    generators: int = 0
    address: str | None = None
    start_tolerance_s: float = START_TOLERANCE_S


@dataclass(frozen=True, slots=True)
class Setup:
    sql: str | None = None
    #: the experiment file's line where the SQL's first line is, if known
    sql_line: int | None = None


#: when a hook runs (``[[hooks]] when``)
HOOK_POINTS = (
    "before-run",
    "after-run",
    "before-condition",
    "after-condition",
    "before-sample",
    "after-sample",
)


@dataclass(frozen=True, slots=True)
class Hook:
    """SQL on the target, or a shell command on this machine, run at one point of the run."""

    when: str
    sql: str | None = None
    shell: str | None = None
    timeout_s: float = 60.0
    #: how errors name it: ``hooks[0]``, with its file line when known
    where: str = "hooks[0]"


@dataclass(frozen=True, slots=True)
class Experiment:
    name: str
    workload: Workload
    sampling: SamplingPlan
    description: str = ""
    target: str | None = None
    setup: Setup = field(default_factory=Setup)
    factors: tuple[Factor, ...] = ()
    statistics: StatisticsPlan = field(default_factory=StatisticsPlan)
    profile: ProfilePlan = field(default_factory=ProfilePlan)
    distributed: DistributedPlan = field(default_factory=DistributedPlan)
    hooks: tuple[Hook, ...] = ()
    #: an unmeasured load running during every sample (a level's own replaces it)
    background: Background | None = None
    source_path: str | None = None
    source_text: str = ""


@dataclass(frozen=True, slots=True)
class ScheduledSample:
    """One entry of the run order: which condition, in which block, at which position."""

    position: int
    block: int
    condition_index: int
