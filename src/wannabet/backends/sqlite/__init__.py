"""SQLite: a database file opened by every session, inside the engine's own threads.

The engine drives it through ``native/src/backend/sqlite.rs`` (rusqlite). It has no server, so
it adds no sampler of its own: the engine's and the client process's figures are its figures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wannabet.backends import Backend
from wannabet.backends.sqlite.probe import probe
from wannabet.backends.sqlite.url import KIND, parse, password

if TYPE_CHECKING:
    from wannabet.analysis.unit_of_work import WorkSource
    from wannabet.engine.base import Engine
    from wannabet.samplers.base import Sampler, StatsWarning
    from wannabet.samplers.options import StatsOptions
    from wannabet.samplers.perf import ProfiledProcesses
    from wannabet.targets import Target


def _samplers(
    target: Target, engine: Engine, options: StatsOptions
) -> tuple[list[Sampler], list[StatsWarning]]:
    return [], []


def _profiled(target: Target, engine: Engine) -> ProfiledProcesses:
    from wannabet.samplers.perf import this_process

    return this_process("SQLite", engine)


def _work() -> WorkSource:
    from wannabet.backends.sqlite.work import WORK

    return WORK


def _refused_in_transaction(message: str, code: object) -> bool:
    # SQLite gives these refusals no code of their own (SQLITE_ERROR), only their text:
    # "cannot VACUUM from within a transaction", "cannot change into wal mode from within a
    # transaction", "Safety level may not be changed inside a transaction".
    return "within a transaction" in message or "inside a transaction" in message


BACKEND = Backend(
    kind=KIND,
    schemes=("sqlite",),
    example="sqlite:///file.db",
    engine="sqlite",
    placeholder_style="qmark",
    parse=parse,
    password=password,
    probe=probe,
    samplers=_samplers,
    work=_work,
    profiled=_profiled,
    features=frozenset({"transactional_ddl"}),
    refused_in_transaction=_refused_in_transaction,
)
