"""wannabet's version, without importing anything heavy (the entry point reads it first)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version


def tool_version() -> str:
    try:
        return package_version("wannabet")
    except PackageNotFoundError:  # running from a source tree
        return "0+unknown"
