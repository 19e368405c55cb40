"""What a run records about a PostgreSQL server: its version and the settings that change how
a workload performs."""

from __future__ import annotations

from typing import Any

from wannabet.engine.base import Engine
from wannabet.targets import Target

#: PostgreSQL settings that change how a workload performs; recorded with every run
POSTGRES_SETTINGS = (
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "wal_level",
    "wal_sync_method",
    "wal_buffers",
    "wal_compression",
    "commit_delay",
    "shared_buffers",
    "effective_cache_size",
    "work_mem",
    "max_connections",
    "max_wal_size",
    "checkpoint_timeout",
    "checkpoint_completion_target",
    "random_page_cost",
    "effective_io_concurrency",
    "jit",
    "huge_pages",
    "track_io_timing",
    "data_checksums",
)


def probe(engine: Engine, target: Target) -> dict[str, Any]:
    """The server's version and :data:`POSTGRES_SETTINGS`; also the connectivity check."""
    version = engine.query(target, "SHOW server_version")[0][0]
    names = ", ".join(f"'{name}'" for name in POSTGRES_SETTINGS)
    rows = engine.query(
        target,
        "SELECT name, setting || coalesce(' ' || unit, '') FROM pg_settings"
        f" WHERE name IN ({names}) ORDER BY name",
    )
    return {
        "server": "PostgreSQL",
        "server_version": version,
        "server_settings": {name: value for name, value in rows},
    }
