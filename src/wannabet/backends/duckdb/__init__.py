"""DuckDB: a database file, driven in this process through DuckDB's Python package.

The DB-API engine (:mod:`wannabet.engine.dbapi`) runs its sessions, one DuckDB connection each;
:mod:`.sampler` records the memory DuckDB holds and what it spills to temporary files, and the
client-process sampler its CPU (DuckDB's worker threads are this process's). DuckDB's
``threads`` setting is an ordinary factor: ``session_sql = "SET threads = {threads}"``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wannabet.backends import Backend
from wannabet.backends.duckdb.probe import probe
from wannabet.backends.duckdb.url import KIND, parse, password

if TYPE_CHECKING:
    from wannabet.analysis.unit_of_work import WorkSource
    from wannabet.engine.base import Engine
    from wannabet.engine.dbapi import Driver
    from wannabet.samplers.base import Sampler, StatsWarning
    from wannabet.samplers.options import StatsOptions
    from wannabet.samplers.perf import ProfiledProcesses
    from wannabet.targets import Target


def _samplers(
    target: Target, engine: Engine, options: StatsOptions
) -> tuple[list[Sampler], list[StatsWarning]]:
    from wannabet.backends.duckdb.sampler import DuckDBSampler

    return [DuckDBSampler(target)], []


def _profiled(target: Target, engine: Engine) -> ProfiledProcesses:
    from wannabet.samplers.perf import this_process

    return this_process("DuckDB", engine)


def _work() -> WorkSource:
    from wannabet.backends.duckdb.work import WORK

    return WORK


def _driver(target: Target) -> Driver:
    from wannabet.backends.duckdb.driver import driver

    return driver(target)


def _refused_in_transaction(message: str, code: object) -> bool:
    # "Cannot CHECKPOINT: the current transaction has transaction local changes": the dry run's
    # set-up changed something in its transaction before the CHECKPOINT.
    return "Cannot CHECKPOINT" in message and "transaction local changes" in message


BACKEND = Backend(
    kind=KIND,
    schemes=("duckdb",),
    example="duckdb:///file.duckdb",
    engine="python",
    placeholder_style="dollar",
    parse=parse,
    password=password,
    probe=probe,
    samplers=_samplers,
    work=_work,
    profiled=_profiled,
    features=frozenset({"transactional_ddl", "fetch_size"}),
    driver=_driver,
    refused_in_transaction=_refused_in_transaction,
)
