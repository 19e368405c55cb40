"""Shared fixtures. The suite starts its own throwaway PostgreSQL and MariaDB on 127.0.0.1 and
stops them.

Without server binaries the suite installs Debian's postgresql and mariadb-server packages when it
runs as root. With CI=true a server that still cannot start is a failure, never a skip
(``unavailable``).
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from wannabet.testing import PostgresUnavailable, ThrowawayPostgres
from wannabet.testing.ci import unavailable
from wannabet.testing.mariadb import MariaDBUnavailable, ThrowawayMariaDB, find_mariadb
from wannabet.testing.packages import install_in_background
from wannabet.testing.postgres import find_postgres_bindir

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
# No password file of the machine's user leaks into the tests (tests that need one set it).
os.environ["PGPASSFILE"] = os.devnull
os.environ["MYSQL_OPTION_FILE"] = os.devnull
os.environ.pop("MYSQL_PWD", None)
for _var in ("PGSSLMODE", "PGSSLROOTCERT", "PGSSLCERT", "PGSSLKEY", "PGSSLCRL", "PGSSLCRLDIR"):
    os.environ.pop(_var, None)

# wannabet's cache (the report's Vega runtime, the Bayesian models' compiled programs) goes to
# a directory of this test session, not the machine user's ~/.cache. The controller makes it
# and removes it at the end; its workers and the CLI children inherit it, so a program one
# worker compiled serves the other.
if "WANNABET_TEST_CACHE" not in os.environ:
    os.environ["WANNABET_TEST_CACHE"] = tempfile.mkdtemp(prefix="wannabet-test-cache-")
    atexit.register(shutil.rmtree, os.environ["WANNABET_TEST_CACHE"], ignore_errors=True)
os.environ["XDG_CACHE_HOME"] = os.environ["WANNABET_TEST_CACHE"]
os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)  # a user's own would take the programs

#: where the Rust unit tests started by the controller leave their output and exit code
CARGO_TESTS = "WANNABET_CARGO_TESTS"
_cargo: subprocess.Popen[bytes] | None = None
#: the background apt-get run, if one was needed (kept, never killed: dpkg must finish)
_apt: subprocess.Popen[bytes] | None = None


def cargo_test_command() -> list[str]:
    """The engine's Rust unit tests: one compile job at the lowest priority, so on a fresh
    checkout (minutes of compiling) it takes only the CPU the test workers leave.

    The dev profile, as the README's ``cargo test``: the release profile's thin LTO does not
    apply to a test harness, so cargo rebuilds every dependency for it (about four times the
    CPU of the dev build) instead of reusing the installed engine's; the dev build also checks
    integer overflow."""
    nice = [shutil.which("nice") or "nice", "-n", "19"]
    manifest = ["--manifest-path", str(ROOT / "native" / "Cargo.toml")]
    return [*nice, "cargo", "test", "--lib", "--quiet", "-j", "1", *manifest]


def pytest_configure(config: pytest.Config) -> None:
    """The controller starts two slow things in the background at once: on a fresh machine,
    installing the suite's Debian packages (the fixtures that need one wait for it), and the
    Rust unit tests (compiling them from scratch takes minutes; ``tests/test_native_units.py``
    then only waits for their result, instead of holding a worker for the whole compile)."""
    global _cargo, _apt
    if hasattr(config, "workerinput"):
        return
    if _runs_the_whole_suite(config):
        # One apt-get run for every package the suite installs on a fresh machine, under the
        # lock the fixtures take: they wait for it instead of each updating and installing.
        log = Path(tempfile.mkdtemp(prefix="wannabet-apt-")) / "apt.log"
        atexit.register(shutil.rmtree, log.parent, ignore_errors=True)
        _apt = install_in_background(_packages_the_fixtures_would_install(), log)
    if CARGO_TESTS in os.environ or not shutil.which("cargo"):
        return
    where = Path(tempfile.mkdtemp(prefix="wannabet-cargo-test-"))
    atexit.register(shutil.rmtree, where, ignore_errors=True)
    os.environ[CARGO_TESTS] = str(where)  # the workers, started after this, inherit it
    script = " ".join(shlex.quote(a) for a in cargo_test_command())
    _cargo = subprocess.Popen(
        ["sh", "-c", f"{script} > out.txt 2>&1; echo $? > rc.tmp && mv rc.tmp rc"],
        cwd=where,
        # pyo3's build script asks this interpreter for its configuration.
        env={**os.environ, "PYO3_PYTHON": sys.executable},
        start_new_session=True,
    )


def _packages_the_fixtures_would_install() -> list[str]:
    """The Debian packages whose programs the fixtures look for and do not find: the same
    checks as theirs, so that a server or tool found elsewhere (another PostgreSQL version, a
    perf of its own) is not installed again."""
    found = {
        "postgresql": find_postgres_bindir() is not None,
        "mariadb-server": find_mariadb() is not None,
        "openssl": shutil.which("openssl") is not None,  # the TLS tests' certificates
        "fio": shutil.which("fio") is not None,
        "sysbench": shutil.which("sysbench") is not None,
        "linux-perf": shutil.which("perf") is not None,
        "chromium": shutil.which("chromium") is not None,
        "chromium-driver": shutil.which("chromedriver") is not None,
    }
    return [package for package, there in found.items() if not there]


def _runs_the_whole_suite(config: pytest.Config) -> bool:
    """Whether this session was started on the whole suite (the README's ``pytest``), not on
    chosen files, which may need none of the packages."""
    if config.args_source == pytest.Config.ArgsSource.TESTPATHS:
        return True
    return all(Path(arg).resolve() == ROOT / "tests" for arg in config.args)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _cargo is not None and _cargo.poll() is None:  # the session ended first (-x, Ctrl-C)
        os.killpg(_cargo.pid, signal.SIGTERM)
        _cargo.wait()  # reaped, so the interpreter does not warn of it at exit


# Property tests check what is computed, not how fast: on a shared machine one slow example
# must not fail the run (Hypothesis's default deadline is 200 ms per example).
settings.register_profile("wannabet", deadline=None)
settings.load_profile("wannabet")


@contextmanager
def throwaway_postgres(**options: Any) -> Iterator[ThrowawayPostgres]:
    try:
        server = ThrowawayPostgres(install=True, **options).start()
    except PostgresUnavailable as exc:
        unavailable("a TLS PostgreSQL server" if options.get("tls") else "a PostgreSQL server", exc)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres() -> Iterator[ThrowawayPostgres]:
    with throwaway_postgres() as server:
        yield server


@pytest.fixture(scope="session")
def tls_postgres() -> Iterator[ThrowawayPostgres]:
    """A server that accepts TCP clients over TLS only (certificate for localhost and
    127.0.0.1 from the throwaway CA in ``ca_file``)."""
    with throwaway_postgres(tls=True) as server:
        yield server


@pytest.fixture
def fresh_tls_postgres() -> Iterator[ThrowawayPostgres]:
    """A TLS server of the test's own, for a test that changes its certificate."""
    with throwaway_postgres(tls=True) as server:
        yield server


@pytest.fixture
def fresh_postgres() -> Iterator[ThrowawayPostgres]:
    """A server of the test's own, for a test that freezes it (SIGSTOP)."""
    with throwaway_postgres() as server:
        yield server


@pytest.fixture(scope="session")
def mariadb() -> Iterator[ThrowawayMariaDB]:
    try:
        server = ThrowawayMariaDB(install=True).start()
    except MariaDBUnavailable as exc:
        unavailable("a MariaDB server", exc)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return tmp_path / "results.duckdb"
