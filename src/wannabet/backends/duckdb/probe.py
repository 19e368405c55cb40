"""What a run records about DuckDB: its version and the settings that change performance."""

from __future__ import annotations

from typing import Any

from wannabet.engine.base import Engine
from wannabet.targets import Target

#: settings recorded with every run (``duckdb_settings()`` names)
DUCKDB_SETTINGS = (
    "threads",
    "memory_limit",
    "max_temp_directory_size",
    "temp_directory",
    "preserve_insertion_order",
    "checkpoint_threshold",
    "access_mode",
)


def probe(engine: Engine, target: Target) -> dict[str, Any]:
    """The library's version and :data:`DUCKDB_SETTINGS`; also the check that the file opens."""
    version = engine.query(target, "SELECT version()")[0][0]
    names = ", ".join(f"'{name}'" for name in DUCKDB_SETTINGS)
    rows = engine.query(
        target, f"SELECT name, value FROM duckdb_settings() WHERE name IN ({names}) ORDER BY name"
    )
    return {
        "server": "DuckDB",
        "server_version": version,
        "server_settings": {name: value for name, value in rows if name is not None},
    }
