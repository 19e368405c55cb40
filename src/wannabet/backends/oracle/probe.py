"""What a run records about Oracle: its version and the parameters that change performance."""

from __future__ import annotations

from typing import Any

from wannabet.engine.base import Engine
from wannabet.errors import QueryError
from wannabet.targets import Target

#: ``v$parameter`` names recorded with every run
PARAMETERS = (
    "commit_logging",
    "commit_wait",
    "cpu_count",
    "db_block_size",
    "db_writer_processes",
    "disk_asynch_io",
    "filesystemio_options",
    "pga_aggregate_target",
    "sga_target",
    "tde_configuration",
    "undo_retention",
)


def probe(engine: Engine, target: Target) -> dict[str, Any]:
    """The server's version (``v$instance``, else ``product_component_version``) and
    :data:`PARAMETERS` where the user may read ``v$parameter``."""
    try:
        version = engine.query(target, "SELECT version_full FROM v$instance")[0][0]
    except QueryError:
        version = engine.query(target, "SELECT version FROM product_component_version")[0][0]
    names = ", ".join(f"'{p}'" for p in PARAMETERS)
    try:
        rows = engine.query(
            target, f"SELECT name, value FROM v$parameter WHERE name IN ({names}) ORDER BY name"
        )
        settings: dict[str, Any] = {name: value for name, value in rows if name is not None}
    except QueryError as exc:
        settings = {"unreadable": f"v$parameter: {exc}"}
    return {"server": "Oracle", "server_version": version, "server_settings": settings}
