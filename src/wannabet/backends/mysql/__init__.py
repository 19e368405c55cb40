"""MySQL and MariaDB: a server reached over TCP, TLS as the mysql client's ``ssl-mode``.

The engine drives it through ``native/src/backend/mysql.rs`` (the ``mysql`` crate, rustls); the
server's statistics come from :mod:`.sampler` (``SHOW GLOBAL STATUS``, ``performance_schema``
and ``/proc``), read through the engine's own connections, so no Python MySQL driver is needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wannabet.backends import Backend
from wannabet.backends.mysql.probe import probe
from wannabet.backends.mysql.url import KIND, parse
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
    from wannabet.backends.mysql.sampler import samplers_for

    return samplers_for(target, engine, options)


def _profiled(target: Target, engine: Engine) -> ProfiledProcesses:
    from wannabet.backends.mysql.sampler import profiled_processes

    return profiled_processes(target, engine)


def _work() -> WorkSource:
    from wannabet.backends.mysql.work import WORK

    return WORK


BACKEND = Backend(
    kind=KIND,
    schemes=("mysql", "mariadb"),
    example="mysql://user@host:3306/dbname",
    engine="mysql",
    placeholder_style="positional",
    parse=parse,
    password=url_password,
    probe=probe,
    samplers=_samplers,
    work=_work,
    profiled=_profiled,
    password_variables=("MYSQL_PWD",),
    features=frozenset({"compound"}),
    sql_dialect="mysql",
)
