"""Run the ``wannabet`` command in a child process, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any


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


def wannabet_ok(*args: str, **kwargs: Any) -> str:
    """``python -m wannabet ARGS`` that must succeed; its standard output."""
    proc = wannabet(*args, **kwargs)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def one_line_error(proc: subprocess.CompletedProcess[str], code: int | None = None) -> str:
    """The one ``error: …`` line a failed command printed, with no traceback anywhere.

    ``code``, when given, is the exit code the failure must have.
    """
    if code is not None:
        assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]
