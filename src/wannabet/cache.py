"""wannabet's cache directory, for what is costly to build and safe to rebuild.

The report's Vega runtime and the Bayesian models' compiled programs are kept here. Both are
executed later (a report inlines the script; JAX loads the compiled code), so a directory that
another user could write into is never used.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir", "is_private", "private_cache_dir"]


def cache_dir() -> Path:
    """wannabet's cache directory: ``$XDG_CACHE_HOME/wannabet``, else ``~/.cache/wannabet``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wannabet"


def is_private(directory: Path) -> bool:
    """Whether only this user can write into ``directory``."""
    info = directory.stat()
    return info.st_uid == os.geteuid() and not info.st_mode & 0o022


def private_cache_dir(name: str | None = None) -> Path | None:
    """:func:`cache_dir` (or its subdirectory ``name``), made if missing so that only this user
    may write into it; None when it cannot be made or others can write into it: the caller then
    works without a cache."""
    try:
        directory = cache_dir()
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not is_private(directory):
            return None
        if name is None:
            return directory
        sub = directory / name
        sub.mkdir(mode=0o700, exist_ok=True)
        return sub if is_private(sub) else None
    except (OSError, RuntimeError):  # RuntimeError: no home directory
        return None
