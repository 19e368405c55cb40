"""wannabet: database performance experiments you can bet on.

The Python API (``docs/python.md``) is :mod:`wannabet.api`; its entry points are re-exported
here and imported on first use, so ``import wannabet`` stays cheap::

    import wannabet
    results = wannabet.open_results("wannabet.duckdb")
    results.run().compare()
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from wannabet.version import tool_version

if TYPE_CHECKING:
    from wannabet.api import (
        CheckResult,
        Comparison,
        Outcome,
        Plan,
        Prepared,
        Report,
        Results,
        Run,
        Summary,
        Table,
        check_experiment,
        open_results,
        prepare_experiment,
        run_experiment,
    )

__version__ = tool_version()

__all__ = [
    "CheckResult",
    "Comparison",
    "Outcome",
    "Plan",
    "Prepared",
    "Report",
    "Results",
    "Run",
    "Summary",
    "Table",
    "__version__",
    "check_experiment",
    "open_results",
    "prepare_experiment",
    "run_experiment",
]


def __getattr__(name: str) -> Any:
    if name in __all__ and name != "__version__":
        # Loaded by name on first use (PEP 562): the package itself imports nothing of the
        # API, so the engine's `from wannabet import _engine` does not pull the services in.
        return getattr(importlib.import_module("wannabet.api"), name)
    raise AttributeError(f"module 'wannabet' has no attribute {name!r}")
