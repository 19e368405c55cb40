"""Run the ``wannabet`` command as a user would: in a child process, or in this one.

A child process proves what only a process can (its exit status after a signal, the interpreter's
own output, a clean environment, a working directory); each one also re-imports NumPy, SciPy and
DuckDB, about a second here. So a command runs in this process by default, through the same
entry point (:func:`wannabet_in_process`) and with the output a child would print; a test asks
for a child when the process itself is what it checks.
"""

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
    child: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``wannabet ARGS`` with output captured; never raises on a non-zero exit.

    In this process (:func:`wannabet_in_process`) unless ``child`` is set or a working
    directory or an environment is given: then ``python -m wannabet ARGS`` in a child process,
    killed after ``timeout`` seconds. Warnings are errors in the child, as they are in the test
    process (pytest's ``filterwarnings``): a library's deprecation must fail a test, not scroll
    past in stderr.
    """
    if not (child or cwd is not None or env is not None):
        return wannabet_in_process(*args)
    environment = dict(env or plain_env())
    environment.setdefault("PYTHONWARNINGS", "error")
    return subprocess.run(
        [sys.executable, "-m", "wannabet", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment,
        timeout=timeout,
        check=False,
    )


def wannabet_in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """``wannabet ARGS`` run in this process: the console entry point with ``sys.argv`` set and
    standard streams captured (click's test isolation), its exit code taken from ``SystemExit``.

    The output is what a child with :func:`plain_env` prints: no terminal, so no colour, and
    tables 160 columns wide (the command fixes its width when first imported, from the
    environment of the process that imported it; here it is set for the call).
    """
    from click.testing import CliRunner
    from rich.console import Console

    from wannabet import cli, entry

    consoles = cli.console, cli.err_console
    argv = sys.argv
    with CliRunner().isolation(env={"COLUMNS": None, "LINES": None}) as (out, err, _):
        cli.console, cli.err_console = (
            Console(width=160, emoji=False),
            Console(stderr=True, width=80, emoji=False),
        )
        sys.argv = ["wannabet", *args]
        try:
            entry.main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        finally:
            sys.stdout.flush()  # the isolation's text streams buffer what print() wrote
            sys.stderr.flush()
            sys.argv = argv
            cli.console, cli.err_console = consoles
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return subprocess.CompletedProcess(["wannabet", *args], code, stdout, stderr)


def wannabet_ok(*args: str, **kwargs: Any) -> str:
    """:func:`wannabet` that must succeed; its standard output."""
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
