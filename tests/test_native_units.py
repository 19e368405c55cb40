"""The Rust engine's own unit tests (script semantics, random streams, the protocol scanner),
run through cargo so that CI runs them with the rest of the suite.

The session's controller starts them in the background when the suite starts
(``pytest_configure`` in ``conftest.py``): compiling them on a fresh checkout takes minutes,
which no test worker then spends waiting. Without that (cargo missing then, a single test
run with the variable cleared) this test runs them itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from conftest import CARGO_TESTS, cargo_test_command
from wannabet.testing.ci import unavailable

#: a fresh compile (dev profile) at the lowest priority on a busy 2-core machine: 2-5 minutes
TIMEOUT_S = 1200


def _started_by_the_controller(where: Path) -> tuple[int, str]:
    rc = where / "rc"
    deadline = time.monotonic() + TIMEOUT_S
    while not rc.exists():
        assert time.monotonic() < deadline, "cargo test did not finish in time"
        time.sleep(1)
    return int(rc.read_text().strip()), (where / "out.txt").read_text(errors="replace")


def test_the_engines_rust_unit_tests_pass() -> None:
    if shutil.which("cargo") is None:
        unavailable("cargo (CI builds the engine with it)", "not on PATH")
    started = os.environ.get(CARGO_TESTS)
    if started:
        code, out = _started_by_the_controller(Path(started))
    else:
        proc = subprocess.run(
            cargo_test_command(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            env={**os.environ, "PYO3_PYTHON": sys.executable},
            check=False,
        )
        code, out = proc.returncode, proc.stdout + proc.stderr
    assert code == 0, out[-4000:]
    assert "test result: ok" in out, out[-2000:]
