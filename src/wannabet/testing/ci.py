"""What the test suite does when a component it needs is missing."""

from __future__ import annotations

import os
from typing import Any, NoReturn

#: set by CI (``.ci/run`` exports CI=true)
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable(what: str, why: object) -> NoReturn:
    """A component a test needs is missing: a failure in CI, where nothing an issue asks for may
    be skipped; a skip on a developer's machine that lacks it."""
    import pytest

    if IN_CI:
        pytest.fail(f"CI needs {what}: {why}")
    pytest.skip(f"no {what} here: {why}")


def require_module(name: str, extra: str) -> Any:
    """The module ``name`` (of wannabet's optional part ``extra``), or :func:`unavailable`: a
    failure in CI, which installs every part, rather than ``pytest.importorskip``'s skip."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:
        unavailable(f"the module {name} (pip install 'wannabet[{extra}]')", exc)
