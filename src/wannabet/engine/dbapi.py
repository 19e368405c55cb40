"""The DB-API engine: targets whose drivers are Python libraries (DuckDB, python-oracledb, any
DB-API 2.0 module), behind the same :class:`~wannabet.engine.base.Engine` contract.

A sample runs in the native engine's runner: the same threads (one per session, each with its
own DB-API connection), scripts, retries, rate limit, timing, rows and summaries as every other
target, so nothing about a transaction's meaning is implemented twice. Only the statements go
through Python: each is one call from the session's thread into its :class:`DbapiSession`,
holding the GIL for the call. A driver that releases the GIL while the database works (DuckDB,
python-oracledb, sqlite3 all do) lets sessions overlap; the per-statement cost of the Python
call is measured in ``bench/dbapi_overhead`` and documented in ``docs/benchmarks.md``.

The rest of the contract (set-up, queries, held sessions, the dry run) runs here in Python.

What differs between drivers is a :class:`Driver`, made by the target's backend
(``Backend.driver``): how to connect in autocommit mode, the module's paramstyle, and which of
its errors are serialization failures, deadlocks or lock timeouts.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from wannabet.engine.base import (
    DryCondition,
    DryItem,
    DryRunResult,
    Progress,
    SampleRequest,
    SampleResult,
)
from wannabet.errors import ConnectError, QueryError, WannabetError
from wannabet.model import STATUS_NAMES
from wannabet.script import split_sql
from wannabet.targets import Target, redact
from wannabet.threads import Abandoned, call_abandonable

#: (status name, the driver's error code or None) of a driver exception
Classify = Callable[[BaseException], tuple[str, str | None]]

_BEGIN = re.compile(r"^\s*(begin|start)(\s+(work|transaction))?\s*;?\s*$", re.IGNORECASE)
_END = re.compile(r"^\s*(commit|rollback|end)(\s+(work|transaction))?\s*;?\s*$", re.IGNORECASE)

#: statements whose result columns can be described before they run (reads)
_READS = re.compile(
    r"^\s*(?:--[^\n]*\n\s*|/\*.*?\*/\s*)*(select|with|values|from|table|show)\b",
    re.IGNORECASE | re.DOTALL,
)


def default_classify(exc: BaseException) -> tuple[str, str | None]:
    """PEP 249's classes: integrity errors are constraint violations, lost connections are
    connection errors; the rest plain errors. Drivers with codes refine this."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if "IntegrityError" in names:
        return "constraint", None
    if "InterfaceError" in names:
        return "connection", None
    return "error", None


@dataclass(frozen=True, slots=True)
class Driver:
    """How to drive one target through its DB-API module."""

    #: the module's name, for messages (``duckdb``, ``oracledb``)
    module: str
    #: a new connection in autocommit mode (scripts say BEGIN and COMMIT themselves)
    connect: Callable[[], Any]
    #: PEP 249 paramstyle: ``qmark``, ``numeric``, ``named``, ``format`` or ``pyformat``
    paramstyle: str
    classify: Classify = default_classify
    #: ``(connection, cursor) -> None``: stops the session's running statement from another
    #: thread, if the driver can (DuckDB's cursor is a connection of its own: its interrupt is
    #: the cursor's; Oracle cancels on the connection)
    cancel: Callable[[Any, Any], None] | None = None
    #: BEGIN, COMMIT and ROLLBACK are SQL the database takes; False (Oracle: no BEGIN): BEGIN
    #: turns the connection's autocommit off, COMMIT and ROLLBACK are the driver's methods
    transaction_sql: bool = True
    #: SAVEPOINT and ROLLBACK TO are SQL the database takes; False (DuckDB has none): the dry
    #: run gives each condition a transaction of its own, the set-up run again in it
    savepoints: bool = True


class SessionError(Exception):
    """A driver's failure as the native runner reads it: ``status`` indexes
    :data:`STATUS_NAMES`, ``code`` is the driver's error code."""

    def __init__(self, message: str, status: str, code: str | None) -> None:
        super().__init__(message)
        self.status = STATUS_NAMES.index(status)
        self.code = code


def placeholder(paramstyle: str, n: int) -> str:
    """The ``n``-th (from 1) bind parameter in a PEP 249 paramstyle."""
    match paramstyle:
        case "qmark":
            return "?"
        case "numeric":
            return f":{n}"
        case "named":
            return f":p{n}"
        case "format":
            return "%s"
        case "pyformat":
            return f"%(p{n})s"
    raise WannabetError(f"unknown DB-API paramstyle {paramstyle!r}")


def render(parts: Sequence[str], paramstyle: str) -> str:
    """A statement from the text around its parameters, with the module's placeholders.

    With ``format`` and ``pyformat`` a literal ``%`` is written ``%%``, as those drivers read it
    when they are given parameters (and only then: a statement without any is sent as it is).
    """
    escape = paramstyle in ("format", "pyformat") and len(parts) > 1
    pieces = []
    for i, part in enumerate(parts):
        if i:
            pieces.append(placeholder(paramstyle, i))
        pieces.append(part.replace("%", "%%") if escape else part)
    return "".join(pieces)


def bind(paramstyle: str, values: Sequence[Any]) -> Sequence[Any] | dict[str, Any]:
    """Parameter values as the paramstyle takes them (a mapping for named styles)."""
    if paramstyle in ("named", "pyformat"):
        return {f"p{i}": v for i, v in enumerate(values, start=1)}
    return tuple(values)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class DbapiSession:
    """One session's DB-API connection, as the native runner calls it (``backend/python.rs``).

    Every method turns a driver exception into a :class:`SessionError`.
    """

    def __init__(self, driver: Driver) -> None:
        self._driver = driver
        try:
            self._conn = driver.connect()
        except WannabetError:
            # Ours already (an extra that is not installed): its own message and exit code,
            # not a connection failure.
            raise
        except Exception as exc:
            raise self._error(exc, status="connection") from None
        self._cursor = self._conn.cursor()
        self._sql: list[str] = []
        self._in_transaction = False
        # Rows per fetch; 0 reads a result whole (fetchall), as most applications do.
        self._fetch_size = 0

    def _error(self, exc: BaseException, status: str | None = None) -> SessionError:
        classified, code = self._driver.classify(exc)
        return SessionError(str(exc).strip() or type(exc).__name__, status or classified, code)

    @contextmanager
    def _driver_errors(self) -> Iterator[None]:
        try:
            yield
        except SessionError:
            raise
        except Exception as exc:
            raise self._error(exc) from None

    def _run(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = None) -> bool:
        """Runs a statement; False when it was transaction control done by the driver's
        methods (no result on the cursor)."""
        # Scripts write BEGIN and COMMIT themselves; the runner rolls back after a failure
        # only when one is open.
        begin, end = _BEGIN.match(sql), _END.match(sql)
        if not self._driver.transaction_sql and (begin or end):
            if begin:
                self._conn.autocommit = False
            elif end and end[1].lower() == "rollback":
                self._conn.rollback()
            else:
                self._conn.commit()
            if end:
                self._conn.autocommit = True
            self._in_transaction = bool(begin)
            return False
        if params:
            self._cursor.execute(sql, params)
        else:
            self._cursor.execute(sql)
        if begin:
            self._in_transaction = True
        elif end:
            self._in_transaction = False
        return True

    def batch(self, sql: str) -> None:
        with self._driver_errors():
            for statement in split_sql(sql):
                if self._run(statement):
                    self._drain()

    def _drain(self) -> int:
        if self._cursor.description is None:
            return max(int(self._cursor.rowcount or 0), 0)
        return len(self._cursor.fetchall())

    def prepare(self, parts: list[str], n_params: int) -> list[str]:
        """Keeps the statement; returns the columns of a read (described by running it inside
        ``SELECT * FROM (…) WHERE 1=0`` with NULL parameters, which costs a parse and a plan),
        and nothing for other statements, which DB-API cannot describe without running."""
        sql = render(parts, self._driver.paramstyle)
        self._sql.append(sql)
        if not _READS.match(sql):
            return []
        probe = f"SELECT * FROM ({sql}) wannabet_describe WHERE 1=0"
        nulls = bind(self._driver.paramstyle, [None] * n_params)
        # Inside a transaction a failed probe aborts it (PostgreSQL, DuckDB): a savepoint, where
        # the database has them, lets the statement itself run after it.
        guarded = self._in_transaction and self._driver.savepoints
        with self._driver_errors():
            if guarded:
                self._cursor.execute("SAVEPOINT wannabet_describe")
            try:
                self._cursor.execute(probe, nulls) if n_params else self._cursor.execute(probe)
            except Exception as refused:
                # Not every read can be a subquery (SHOW, duplicate column names): run it once.
                if guarded:
                    self._cursor.execute("ROLLBACK TO SAVEPOINT wannabet_describe")
                try:
                    self._cursor.execute(sql, nulls) if n_params else self._cursor.execute(sql)
                except Exception:
                    if guarded:
                        raise
                    # Without a savepoint this run may only have met the aborted transaction:
                    # the probe's refusal is the one that names the statement's fault.
                    raise refused from None
            names = [d[0] for d in self._cursor.description or ()]
            self._drain()
        return names

    def set_fetch_size(self, rows: int) -> None:
        """Rows per fetch (``fetch_size``; 0: each result whole). PEP 249's ``arraysize``, which
        python-oracledb sends as the rows per round trip (JDBC's fetch size)."""
        self._fetch_size = rows
        if rows:
            # DuckDB's cursor has no arraysize; fetchmany is given the size in any case.
            with contextlib.suppress(AttributeError):
                self._cursor.arraysize = rows

    def execute(self, stmt: int, params: tuple[Any, ...], capture: bool) -> tuple[int, Any]:
        """Runs a prepared statement and reads every row; returns the row count and, when
        ``capture``, the last row.

        Without a fetch size the rows are read at once (``fetchall``) and all held together, as
        an application listing a result holds them; with one, ``fetch_size`` rows at a time
        (``fetchmany``), only one batch alive, so the client's memory follows the fetch size.
        """
        with self._driver_errors():
            ran = self._run(self._sql[stmt], bind(self._driver.paramstyle, params))
            if not ran or self._cursor.description is None:
                return max(int(self._cursor.rowcount or 0), 0), None
            if not self._fetch_size:
                rows = self._cursor.fetchall()
                return len(rows), (rows[-1] if capture and rows else None)
            n, last = 0, None
            while batch := self._cursor.fetchmany(self._fetch_size):
                n += len(batch)
                last = batch[-1]
            return n, (last if capture else None)

    def rollback(self) -> None:
        if not self._in_transaction:
            return
        self._in_transaction = False
        with self._driver_errors():
            self._run("ROLLBACK")

    def query_text(self, sql: str) -> list[list[str | None]]:
        with self._driver_errors():
            ran = self._run(sql)
            rows = self._cursor.fetchall() if ran and self._cursor.description is not None else []
        return [[_text(v) for v in row] for row in rows]

    @property
    def savepoints(self) -> bool:
        """Whether the database takes SAVEPOINT (see :attr:`Driver.savepoints`)."""
        return self._driver.savepoints

    def cancel(self) -> None:
        if self._driver.cancel is not None:
            self._driver.cancel(self._conn, self._cursor)

    def close(self) -> None:
        try:
            self._cursor.close()
            self._conn.close()
        except Exception:
            pass


@dataclass(frozen=True, slots=True)
class Connector:
    """What the native runner calls ``connect()`` on, once per session."""

    driver: Driver

    def connect(self) -> DbapiSession:
        return DbapiSession(self.driver)


def driver_of(target: Target) -> Driver:
    make = target.backend.driver
    if make is None:
        raise WannabetError(f"{target.kind} targets are driven by the native engine")
    return make(target)


class _Held:
    def __init__(self, session: DbapiSession, target: Target) -> None:
        self._session = session
        self._target = target

    def execute(self, sql: str) -> None:
        with _translated(self._target):
            self._session.batch(sql)

    def close(self) -> None:
        self._session.close()


@contextmanager
def _translated(target: Target) -> Iterator[None]:
    """Session errors as :mod:`wannabet.errors`, passwords scrubbed."""
    try:
        yield
    except SessionError as exc:
        message = redact(str(exc), target.password)
        if STATUS_NAMES[exc.status] == "connection":
            raise ConnectError(f"cannot connect to {target.display}: {message}") from None
        raise QueryError(message, code=exc.code) from None


class DbapiEngine:
    """The engine of targets whose backend names a DB-API driver (``Backend.driver``)."""

    sessions_here = True

    def _session(self, target: Target) -> DbapiSession:
        with _translated(target):
            return DbapiSession(driver_of(target))

    def execute(self, target: Target, sql: str) -> None:
        self.execute_many(target, split_sql(sql))

    def execute_many(self, target: Target, statements: list[str]) -> None:
        session = self._session(target)
        try:
            for i, statement in enumerate(statements):
                try:
                    with _translated(target):
                        session.batch(statement)
                except QueryError as exc:
                    exc.index = i
                    raise
        finally:
            session.close()

    def query(
        self, target: Target, sql: str, *, timeout_s: float | None = None
    ) -> list[tuple[str | None, ...]]:
        session = self._session(target)
        try:
            with _translated(target):
                if timeout_s is None:
                    return [tuple(row) for row in session.query_text(sql)]
                return [tuple(row) for row in _within(session, sql, timeout_s)]
        finally:
            session.close()

    def hold(self, target: Target) -> _Held:
        return _Held(self._session(target), target)

    def dry_run(
        self, target: Target, setup: list[str], conditions: list[DryCondition]
    ) -> DryRunResult:
        """Set-up and condition SQL run in a transaction rolled back at the end (each condition
        in a savepoint), every read described; as the native engine's dry run."""
        session = self._session(target)

        def attempt(action: Callable[[], list[str]]) -> DryItem:
            try:
                return None, action()
            except SessionError as exc:
                return redact(str(exc), target.password), exc.code

        def ran(sql: str) -> Callable[[], list[str]]:
            def go() -> list[str]:
                session.batch(sql)
                return []

            return go

        def prepared(sql: str, n: int) -> Callable[[], list[str]]:
            # The runner renders the dry run's statements with the backend's ``$n``.
            parts = re.split(r"\$\d+", sql)
            return lambda: session.prepare(parts, max(n, len(parts) - 1))

        # A failed statement can leave the transaction unusable (DuckDB: "Current transaction
        # is aborted"; PostgreSQL through psycopg alike), and every later item would then be
        # reported as refused for that reason alone. After a failure the dry run therefore starts
        # over from what had succeeded: the set-up's statements that ran, and the condition's.
        setup_ran: list[str] = []
        in_condition = False

        def start_over(condition_ran: list[str]) -> None:
            if in_condition and session.savepoints:
                attempt(ran("ROLLBACK TO SAVEPOINT wannabet_condition"))
            else:
                attempt(ran("ROLLBACK"))
                attempt(ran("BEGIN"))
                for sql in setup_ran:
                    attempt(ran(sql))
            for sql in condition_ran:
                attempt(ran(sql))

        try:
            with _translated(target):
                session.batch("BEGIN")
            done: list[DryItem] = []
            for sql in setup:
                done.append(attempt(ran(sql)))
                if done[-1][0] is None:
                    setup_ran.append(sql)
                else:
                    start_over([])
            out = []
            for index, (sql_list, statements) in enumerate(conditions):
                if index and not session.savepoints:
                    start_over([])  # no savepoints: each condition on the set-up alone
                in_condition = True
                if session.savepoints:
                    attempt(ran("SAVEPOINT wannabet_condition"))
                condition_ran: list[str] = []
                sql_items: list[DryItem] = []
                for sql in sql_list:
                    sql_items.append(attempt(ran(sql)))
                    if sql_items[-1][0] is None:
                        condition_ran.append(sql)
                    else:
                        start_over(condition_ran)
                prepared_items: list[DryItem] = []
                for st, n in statements:
                    prepared_items.append(attempt(prepared(st, n)))
                    if prepared_items[-1][0] is not None:
                        start_over(condition_ran)
                out.append((sql_items, prepared_items))
                if session.savepoints:
                    attempt(ran("ROLLBACK TO SAVEPOINT wannabet_condition"))
                in_condition = False
            attempt(ran("ROLLBACK"))
            return done, out
        finally:
            session.close()

    def run_sample(
        self, target: Target, request: SampleRequest, progress: Progress | None = None
    ) -> SampleResult:
        from wannabet.engine.native import run_native_sample

        connector = Connector(driver_of(target))
        return run_native_sample(target, request, progress, connector=connector)


def _within(session: DbapiSession, sql: str, timeout_s: float) -> list[list[str | None]]:
    """``session.query_text(sql)`` on a thread of its own; past ``timeout_s`` the driver's
    cancel is asked for and QueryError (code ``timeout``) raised (a driver without a cancel
    leaves its thread to end on its own)."""
    try:
        return call_abandonable(
            lambda: session.query_text(sql), name="wannabet-query", deadline_s=timeout_s
        )
    except Abandoned:
        with contextlib.suppress(Exception):
            session.cancel()
        raise QueryError(
            f"no answer within {timeout_s:g} s; the statement was cancelled", code="timeout"
        ) from None
