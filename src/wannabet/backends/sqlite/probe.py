"""What a run records about SQLite: its version and the pragmas that change performance."""

from __future__ import annotations

from typing import Any

from wannabet.engine.base import Engine
from wannabet.targets import Target

SQLITE_PRAGMAS = ("journal_mode", "page_size", "auto_vacuum", "locking_mode")


def probe(engine: Engine, target: Target) -> dict[str, Any]:
    """The library's version and :data:`SQLITE_PRAGMAS`; also the check that the file opens."""
    version = engine.query(target, "SELECT sqlite_version()")[0][0]
    settings = {}
    for pragma in SQLITE_PRAGMAS:
        rows = engine.query(target, f"PRAGMA {pragma}")
        settings[pragma] = rows[0][0] if rows else None
    return {"server": "SQLite", "server_version": version, "server_settings": settings}
