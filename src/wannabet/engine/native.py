"""The Rust engine (``wannabet._engine``) behind the :class:`~wannabet.engine.base.Engine` contract.

Every call into the extension goes through ``wannabet.engine``, and every error it raises
becomes one of :mod:`wannabet.errors` in :func:`translated`, the one mapping: ``ConnectError``
→ :class:`~wannabet.errors.ConnectError`, any other ``EngineError`` →
:class:`~wannabet.errors.QueryError` (with the statement and transaction of a refused prepare as
attributes), a refused workload (``ValueError``) → :class:`~wannabet.errors.WannabetError`. Any
password is scrubbed from the messages.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

from numpy.typing import NDArray

from wannabet.engine.base import (
    COLUMNS,
    DryCondition,
    DryRunResult,
    HeldConnection,
    Progress,
    SampleRequest,
    SampleResult,
)
from wannabet.errors import ConnectError, QueryError, WannabetError
from wannabet.store.summaries import SampleSummaries
from wannabet.targets import Target, redact

try:
    from wannabet import _engine
except ImportError as exc:  # pragma: no cover - only on a broken install
    _MISSING: ImportError | None = exc
else:
    _MISSING = None


def _check_built() -> None:
    if _MISSING is not None:  # pragma: no cover - only on a broken install
        raise WannabetError(
            "the native engine is not built; reinstall with `pip install .` (needs Rust)"
        ) from _MISSING


class _Held:
    """A held connection whose errors come out as this package's, passwords removed."""

    def __init__(self, session: _engine.HeldSession, target: Target) -> None:
        self._session = session
        self._target = target

    def execute(self, sql: str) -> None:
        with translated(self._target):
            self._session.execute(sql)

    def close(self) -> None:
        self._session.close()


@dataclass(frozen=True, slots=True)
class _NativeRequest:
    """The attributes ``_engine.run_sample`` reads (``_engine.SampleCall``)."""

    target: str
    sessions: int
    transactions: Sequence[tuple[str, int, Sequence[tuple[Any, ...]], int]]
    session_sql: tuple[str, ...]
    slots: tuple[int | float | None, ...]
    slot_names: tuple[str, ...]
    captured_slots: tuple[int, ...]
    protocol: str
    fetch_size: int
    client_id_slot: int
    first_session: int
    default_seed_slot: int
    role: str
    duration_ns: int
    max_transactions: int
    seed: int
    on_error: str
    max_tries: int
    rate: float
    warmup_ns: int
    record: float
    max_rows: int
    deadline_ns: int
    grace_ns: int
    reconnect_ns: int
    #: not None: a DB-API driver's connector (:mod:`wannabet.engine.dbapi`) makes the sessions
    connector: object | None = None

    @classmethod
    def of(
        cls, target: Target, request: SampleRequest, connector: object | None = None
    ) -> _NativeRequest:
        program = request.program
        return cls(
            connector=connector,
            target=target.url,
            sessions=request.sessions,
            transactions=program.transactions,
            session_sql=request.session_sql,
            slots=program.slots,
            slot_names=program.slot_names,
            captured_slots=program.captured_slots,
            protocol=request.protocol,
            fetch_size=request.fetch_size,
            client_id_slot=program.client_id_slot,
            first_session=request.first_session,
            default_seed_slot=program.default_seed_slot,
            role=request.role,
            duration_ns=request.duration_ns,
            max_transactions=request.max_transactions,
            seed=request.seed,
            on_error=request.on_error,
            max_tries=request.max_tries,
            rate=request.rate,
            warmup_ns=request.warmup_ns,
            record=request.record,
            max_rows=request.max_rows,
            deadline_ns=request.deadline_ns,
            grace_ns=request.grace_ns,
            reconnect_ns=request.reconnect_ns,
        )


@contextmanager
def translated(target: Target | None = None, *, what: str = "workload") -> Iterator[None]:
    """Turn the engine's exceptions raised inside the block into :mod:`wannabet.errors`.

    With a ``target`` its password is scrubbed from every message and a connection failure
    names the target; without one (the wait poller, whose caller scrubs and words its own
    messages) the engine's text is passed on as it is. ``what`` names what the engine refuses
    when it rejects its arguments.
    """
    password = None if target is None else target.password
    try:
        yield
    except _engine.ConnectError as exc:
        message = redact(str(exc), password)
        if target is not None:
            message = f"cannot connect to {target.display}: {message}"
        raise ConnectError(message, code=exc.code) from None
    except _engine.QueryError as exc:
        raise QueryError(
            redact(str(exc), password),
            code=exc.code,
            index=exc.index,
            statement=exc.statement,
            transaction=exc.transaction,
            reason=None if exc.reason is None else redact(exc.reason, password),
        ) from None
    except _engine.EngineError as exc:
        raise QueryError(redact(str(exc), password), code=exc.code) from None
    except (ValueError, OverflowError) as exc:
        # The spec validates what it can; anything the engine still refuses is reported,
        # not dumped as a traceback.
        raise WannabetError(f"the engine refused the {what}: {exc}") from None
    except TypeError as exc:
        # A request attribute out of its Rust type's range ("failed to extract field ...").
        if not isinstance(exc.__cause__, ValueError | OverflowError):
            raise
        raise WannabetError(f"the engine refused the {what}: {exc}: {exc.__cause__}") from None


class NativeEngine:
    """Thread-per-session load engine written in Rust.

    A target whose backend names a DB-API driver (``Backend.driver``: DuckDB, Oracle, any
    DB-API module) is handed to :class:`~wannabet.engine.dbapi.DbapiEngine`, whose samples run
    in this runner with the driver's connections as sessions.
    """

    sessions_here = True

    def __init__(self) -> None:
        _check_built()
        from wannabet.engine.dbapi import DbapiEngine

        self._dbapi = DbapiEngine()

    @property
    def version(self) -> str:
        return _engine.version()

    @property
    def application_name(self) -> str:
        """The ``application_name`` of PostgreSQL sessions whose URL names none."""
        return _engine.APPLICATION_NAME

    def execute(self, target: Target, sql: str) -> None:
        if target.backend.driver is not None:
            return self._dbapi.execute(target, sql)
        with translated(target):
            _engine.execute(target.url, sql)

    def execute_many(self, target: Target, statements: list[str]) -> None:
        if target.backend.driver is not None:
            return self._dbapi.execute_many(target, statements)
        with translated(target):
            _engine.execute_many(target.url, statements)

    def query(
        self, target: Target, sql: str, *, timeout_s: float | None = None
    ) -> list[tuple[str | None, ...]]:
        if target.backend.driver is not None:
            return self._dbapi.query(target, sql, timeout_s=timeout_s)
        with translated(target):
            return [tuple(row) for row in _engine.query(target.url, sql, timeout_s)]

    def dry_run(
        self, target: Target, setup: list[str], conditions: list[DryCondition]
    ) -> DryRunResult:
        if target.backend.driver is not None:
            return self._dbapi.dry_run(target, setup, conditions)
        with translated(target):
            return _engine.dry_run(target.url, setup, conditions)

    def hold(self, target: Target) -> HeldConnection:
        if target.backend.driver is not None:
            return self._dbapi.hold(target)
        with translated(target):
            return _Held(_engine.HeldSession(target.url), target)

    def run_sample(
        self, target: Target, request: SampleRequest, progress: Progress | None = None
    ) -> SampleResult:
        if target.backend.driver is not None:
            return self._dbapi.run_sample(target, request, progress)
        return run_native_sample(target, request, progress)


def run_native_sample(
    target: Target,
    request: SampleRequest,
    progress: Progress | None = None,
    *,
    connector: object | None = None,
) -> SampleResult:
    """One sample in the native runner; with a ``connector`` its sessions are a DB-API
    driver's (:class:`wannabet.engine.dbapi.DbapiEngine`)."""
    _check_built()
    with translated(target):
        raw = _engine.run_sample(_NativeRequest.of(target, request, connector), progress)
    arrays = cast("Mapping[str, NDArray[Any]]", raw["columns"])
    columns: dict[str, NDArray[Any]] = {
        name: arrays[name].astype(dtype, copy=False) for name, dtype in COLUMNS
    }
    summaries = raw["summaries"]
    return SampleResult(
        t0_ns=raw["t0_ns"],
        end_ns=raw["end_ns"],
        columns=columns,
        summaries=SampleSummaries(
            moments=cast("Mapping[str, NDArray[Any]]", summaries["moments"]),
            statuses=cast("Mapping[str, NDArray[Any]]", summaries["statuses"]),
            bins=cast("Mapping[str, NDArray[Any]]", summaries["bins"]),
            results=cast("Mapping[str, NDArray[Any]]", summaries["results"]),
        ),
        error_codes=tuple(raw["error_codes"]),
        error_messages={k: redact(v, target.password) for k, v in raw["error_messages"].items()},
        sessions_lost=raw["sessions_lost"],
        sessions_stuck=raw["sessions_stuck"],
        reconnects=raw["reconnects"],
        overran=raw["overran"],
        session_cpu_ns=tuple(raw["session_cpu_ns"]),
        counters=dict(raw["counters"]),
    )
