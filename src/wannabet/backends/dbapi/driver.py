"""Connecting through an arbitrary DB-API 2.0 module."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from wannabet.analysis.unit_of_work import SampleWork, WorkSource
from wannabet.backends.dbapi.url import keywords, module_of
from wannabet.engine.base import Engine
from wannabet.engine.dbapi import Driver
from wannabet.errors import TargetError
from wannabet.targets import Target


def load(target: Target) -> ModuleType:
    name = module_of(target)
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise TargetError(
            f"the DB-API module {name!r} is not installed ({exc}); pip install it or fix the URL"
        ) from None
    if not callable(getattr(module, "connect", None)) or not hasattr(module, "paramstyle"):
        raise TargetError(f"{name!r} is not a DB-API 2.0 module (no connect() or paramstyle)")
    return module


def autocommit(conn: Any) -> Any:
    """The connection in autocommit mode, by whichever attribute the module has."""
    try:
        conn.autocommit = True
    except (AttributeError, TypeError):
        if hasattr(conn, "isolation_level"):
            conn.isolation_level = None  # sqlite3 before Python 3.12
    return conn


def driver(target: Target) -> Driver:
    module = load(target)
    kwargs = keywords(target)
    return Driver(
        module=module.__name__,
        connect=lambda: autocommit(module.connect(**kwargs)),
        paramstyle=module.paramstyle,
    )


def probe(engine: Engine, target: Target) -> dict[str, Any]:
    """The module and its version; connecting once is the connectivity check."""
    module = load(target)
    engine.execute_many(target, [])
    version = getattr(module, "__version__", None) or getattr(module, "version", None)
    return {
        "server": f"DB-API {module.__name__}",
        "server_version": str(version) if version is not None else None,
        "server_settings": {"paramstyle": module.paramstyle},
    }


def _extract(stats: Mapping[str, Any]) -> SampleWork:
    # The database may be anywhere: the client's CPU is not its CPU.
    return SampleWork(cpu_s=None, wait_s=None, cores=None, io={})


WORK = WorkSource(cpu_source="not measured", wait_source="not measured", extract=_extract)
