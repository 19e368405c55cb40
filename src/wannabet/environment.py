"""What the run ran on: client machine, tool versions, and the target server's version and settings.

Recorded with every run so that ``compare`` and reports can show when two runs differ in
environment, which is often the real explanation of a difference.
"""

from __future__ import annotations

import os
import platform
import socket
from typing import Any

from wannabet.engine.base import Engine
from wannabet.targets import Target
from wannabet.version import tool_version

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

SQLITE_PRAGMAS = ("journal_mode", "page_size", "auto_vacuum", "locking_mode")


def client_environment() -> dict[str, Any]:
    return {
        "host": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "memory_gb": _memory_gb(),
        "python": platform.python_version(),
        "wannabet": tool_version(),
    }


def server_environment(engine: Engine, target: Target) -> dict[str, Any]:
    """Ask the target for its version and settings; this is also the connectivity check."""
    if target.kind == "sqlite":
        version = engine.query(target, "SELECT sqlite_version()")[0][0]
        settings = {}
        for pragma in SQLITE_PRAGMAS:
            rows = engine.query(target, f"PRAGMA {pragma}")
            settings[pragma] = rows[0][0] if rows else None
        return {"server": "SQLite", "server_version": version, "server_settings": settings}
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


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gb() -> float | None:
    try:
        pages = os.sysconf("SC_PHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return round(pages * size / 2**30, 1)
