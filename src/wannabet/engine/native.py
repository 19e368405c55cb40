"""The Rust engine (``wannabet._engine``) behind the :class:`~wannabet.engine.base.Engine` contract.

Driver errors become :class:`~wannabet.errors.ConnectError` / :class:`~wannabet.errors.QueryError`
here, with any password scrubbed from the message.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from wannabet.engine.base import COLUMNS, Progress, SampleRequest, SampleResult
from wannabet.errors import ConnectError, QueryError, WannabetError
from wannabet.targets import Target, redact


def _native() -> Any:
    try:
        from wannabet import _engine  # type: ignore[attr-defined]
    except ImportError as exc:  # pragma: no cover - only on a broken install
        raise WannabetError(
            "the native engine is not built; reinstall with `pip install .` (needs Rust)"
        ) from exc
    return _engine


class NativeEngine:
    """Thread-per-session load engine written in Rust."""

    def __init__(self) -> None:
        self._lib = _native()

    @property
    def version(self) -> str:
        return str(self._lib.version())

    @property
    def application_name(self) -> str:
        """The ``application_name`` of PostgreSQL sessions whose URL names none."""
        return str(self._lib.APPLICATION_NAME)

    def execute(self, target: Target, sql: str) -> None:
        with self._translated(target):
            self._lib.execute(target.url, sql)

    def execute_many(self, target: Target, statements: list[str]) -> None:
        with self._translated(target):
            self._lib.execute_many(target.url, statements)

    def query(self, target: Target, sql: str) -> list[tuple[str | None, ...]]:
        with self._translated(target):
            return [tuple(row) for row in self._lib.query(target.url, sql)]

    def run_sample(
        self, target: Target, request: SampleRequest, progress: Progress | None = None
    ) -> SampleResult:
        program = request.program
        with self._translated(target):
            raw = self._lib.run_sample(
                target.url,
                request.sessions,
                list(program.transactions),
                list(request.session_sql),
                list(program.slots),
                program.client_id_slot,
                request.duration_ns,
                request.max_transactions,
                request.seed,
                request.on_error,
                request.max_tries,
                request.rate,
                progress,
            )
        columns = {name: raw["columns"][name].astype(dtype, copy=False) for name, dtype in COLUMNS}
        return SampleResult(
            t0_ns=int(raw["t0_ns"]),
            end_ns=int(raw["end_ns"]),
            columns=columns,
            error_codes=tuple(raw["error_codes"]),
            error_messages={
                k: redact(v, target.password) for k, v in raw["error_messages"].items()
            },
            sessions_lost=int(raw["sessions_lost"]),
            session_cpu_ns=tuple(int(ns) for ns in raw["session_cpu_ns"]),
            counters={str(k): int(v) for k, v in raw["counters"].items()},
        )

    @contextmanager
    def _translated(self, target: Target) -> Iterator[None]:
        try:
            yield
        except self._lib.ConnectError as exc:
            message = redact(str(exc), target.password)
            raise ConnectError(
                f"cannot connect to {target.display}: {message}", code=getattr(exc, "code", None)
            ) from None
        except self._lib.EngineError as exc:
            message = redact(str(exc), target.password)
            error = QueryError(message, code=getattr(exc, "code", None))
            error.index = getattr(exc, "index", None)
            raise error from None
        except (ValueError, OverflowError) as exc:
            # The spec validates what it can; anything the engine still refuses is reported,
            # not dumped as a traceback.
            raise WannabetError(f"the engine refused the workload: {exc}") from None
