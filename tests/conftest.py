"""Shared fixtures. The suite starts its own throwaway PostgreSQL on 127.0.0.1 and stops it.

Without server binaries the suite installs Debian's postgresql package when it runs as root. With
CI=true a server that still cannot start is a failure, never a skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from wannabet.testing import PostgresUnavailable, ThrowawayPostgres

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
# No password file of the machine's user leaks into the tests (tests that need one set it).
os.environ["PGPASSFILE"] = os.devnull
for _var in ("PGSSLMODE", "PGSSLROOTCERT"):
    os.environ.pop(_var, None)

# Property tests check what is computed, not how fast: on a shared machine one slow example
# must not fail the run (Hypothesis's default deadline is 200 ms per example).
settings.register_profile("wannabet", deadline=None)
settings.load_profile("wannabet")


@pytest.fixture(scope="session")
def postgres() -> Iterator[ThrowawayPostgres]:
    try:
        server = ThrowawayPostgres(install=True).start()
    except PostgresUnavailable as exc:
        if IN_CI:
            pytest.fail(f"CI needs a PostgreSQL server: {exc}")
        pytest.skip(f"no PostgreSQL server here: {exc}")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "results.duckdb"
