"""Run the ``wannabet`` command in a child process, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def plain_env() -> dict[str, str]:
    """This environment without COLUMNS and LINES.

    pytest exports COLUMNS=80 to children, and wannabet then (rightly) fits its tables to 80
    columns; tests that read tables want the width a terminal-less run gets.
    """
    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


def wannabet(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """``python -m wannabet ARGS`` with output captured; never raises on a non-zero exit.

    Warnings are errors in the child, as they are in the test process (pytest's
    ``filterwarnings``): a library's deprecation must fail a test, not scroll past in stderr.
    """
    child = dict(env or plain_env())
    child.setdefault("PYTHONWARNINGS", "error")
    return subprocess.run(
        [sys.executable, "-m", "wannabet", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=child,
        timeout=timeout,
        check=False,
    )
