"""The Rust engine's own unit tests (script semantics, random streams, the protocol scanner),
run through cargo so that CI runs them with the rest of the suite."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from wannabet.testing.ci import unavailable

NATIVE = Path(__file__).resolve().parent.parent / "native"


def test_the_engines_rust_unit_tests_pass() -> None:
    cargo = shutil.which("cargo")
    if cargo is None:
        unavailable("cargo (CI builds the engine with it)", "not on PATH")
    # A fresh checkout compiles the crate here, for minutes, while the other test worker runs
    # timing-sensitive tests (server CPU against latency): one job at the lowest priority takes
    # only the CPU they leave.
    nice = [shutil.which("nice") or "nice", "-n", "19"]
    manifest = ["--manifest-path", str(NATIVE / "Cargo.toml")]
    proc = subprocess.run(
        [*nice, cargo, "test", "--release", "--quiet", "-j", "1", *manifest],
        capture_output=True,
        text=True,
        timeout=900,
        # pyo3's build script asks this interpreter for its configuration.
        env={**os.environ, "PYO3_PYTHON": sys.executable},
        check=False,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "test result: ok" in proc.stdout, proc.stdout[-2000:]
