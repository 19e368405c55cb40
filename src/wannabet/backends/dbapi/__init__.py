"""Any installed DB-API 2.0 module: ``dbapi://<module>?<connect keyword>=<value>&...``.

``dbapi://sqlite3?database=bench.db`` calls ``sqlite3.connect(database="bench.db")``;
``dbapi://psycopg?conninfo=host%3Dlocalhost%20dbname%3Dbench`` calls ``psycopg.connect(...)``.
A value of digits is passed as an int, anything else as text. Every session gets its own
connection, switched to autocommit (``autocommit = True``, or ``isolation_level = None`` where
that is the module's way), so scripts say BEGIN and COMMIT themselves.

The module's paramstyle comes from the module; its errors are classed by PEP 249's exception
classes only (integrity errors as constraint violations), so nothing is retried. There is no
server sampler: the client's figures are all a run records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wannabet.backends import Backend
from wannabet.backends.dbapi.url import KIND, database_file, parse, password

if TYPE_CHECKING:
    from wannabet.analysis.unit_of_work import WorkSource
    from wannabet.engine.base import Engine
    from wannabet.engine.dbapi import Driver
    from wannabet.samplers.base import Sampler, StatsWarning
    from wannabet.samplers.options import StatsOptions
    from wannabet.targets import Target


def _samplers(
    target: Target, engine: Engine, options: StatsOptions
) -> tuple[list[Sampler], list[StatsWarning]]:
    return [], []


def _work() -> WorkSource:
    from wannabet.backends.dbapi.driver import WORK

    return WORK


def _driver(target: Target) -> Driver:
    from wannabet.backends.dbapi.driver import driver

    return driver(target)


def _probe(engine: Engine, target: Target) -> dict[str, object]:
    from wannabet.backends.dbapi.driver import probe

    return probe(engine, target)


BACKEND = Backend(
    kind=KIND,
    schemes=("dbapi",),
    example="dbapi://module?connect_keyword=value",
    engine="python",
    placeholder_style="dollar",
    parse=parse,
    password=password,
    probe=_probe,
    samplers=_samplers,
    work=_work,
    # PEP 249's arraysize and fetchmany: the DB-API engine reads results in batches.
    features=frozenset({"fetch_size"}),
    driver=_driver,
    database_file=database_file,
)
