"""Oracle: a server reached with python-oracledb in thin mode (no client libraries).

The DB-API engine (:mod:`wannabet.engine.dbapi`) runs its sessions; :mod:`.sampler` reads
``v$sysstat``, ``v$sys_time_model``, ``v$system_event`` and ``v$event_histogram`` per sample,
and :mod:`.work` turns them into CPU and wait per unit of work, as the reference articles do.

**Test status:** no Oracle server can run in the test suite. The URL, the driver's error classes
and its connection failures are tested with python-oracledb itself; the sampler's SQL and delta
logic against view contents in Oracle's layout; nothing here has run against a live Oracle
server (see ``docs/architecture.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wannabet.backends import Backend
from wannabet.backends.oracle.probe import probe
from wannabet.backends.oracle.url import KIND, parse, password

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
    from wannabet.backends.oracle.sampler import samplers_for

    samplers, warnings = samplers_for(target, options.server_cores)
    return list(samplers), warnings


def _work() -> WorkSource:
    from wannabet.backends.oracle.work import WORK

    return WORK


def _driver(target: Target) -> Driver:
    from wannabet.backends.oracle.driver import driver

    return driver(target)


BACKEND = Backend(
    kind=KIND,
    schemes=("oracle",),
    example="oracle://user@host:1521/service",
    engine="python",
    placeholder_style="dollar",
    parse=parse,
    password=password,
    probe=probe,
    samplers=_samplers,
    work=_work,
    # PEP 249's arraysize and fetchmany: the DB-API engine reads results in batches.
    features=frozenset({"fetch_size"}),
    driver=_driver,
)
