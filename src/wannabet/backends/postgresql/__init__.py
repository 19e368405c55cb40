"""PostgreSQL: a server reached over TCP or a Unix socket, TLS as libpq configures it.

The engine drives it through ``native/src/backend/postgres/`` (tokio-postgres); the server's
statistics come from :mod:`.sampler` (psycopg, psutil and the engine's wait poller).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wannabet.backends import Backend
from wannabet.backends.postgresql.probe import probe
from wannabet.backends.postgresql.url import KIND, parse
from wannabet.targets import url_password

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
    # Imported when a run starts: psutil, and psycopg inside, are not needed to parse a URL.
    from wannabet.backends.postgresql.sampler import samplers_for

    return samplers_for(target, engine, options)


def _profiled(target: Target, engine: Engine) -> ProfiledProcesses:
    from wannabet.backends.postgresql.sampler import profiled_processes

    return profiled_processes(target, engine)


def _work() -> WorkSource:
    from wannabet.backends.postgresql.work import WORK

    return WORK


def _refused_in_transaction(message: str, code: object) -> bool:
    # SQLSTATE 25001, active_sql_transaction: VACUUM, ALTER SYSTEM, CREATE DATABASE, ...
    return code == "25001"


BACKEND = Backend(
    kind=KIND,
    schemes=("postgresql", "postgres"),
    example="postgresql://user@host/dbname",
    engine="postgres",
    placeholder_style="dollar",
    parse=parse,
    password=url_password,
    probe=probe,
    samplers=_samplers,
    work=_work,
    profiled=_profiled,
    password_variables=("PGPASSWORD",),
    features=frozenset({"fetch_size", "pipelines", "compound", "transactional_ddl"}),
    refused_in_transaction=_refused_in_transaction,
)
