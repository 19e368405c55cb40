"""Oracle (issue #15), as far as it can be tested without an Oracle server: URLs and passwords,
python-oracledb's error classes and its real connection failure, the transaction control Oracle
needs, and the sampler's SQL and delta logic against view contents in Oracle's layout held in
SQLite (whose identifiers may contain ``$``, so the sampler's statements run unchanged).

Nothing here has run against a live Oracle server; docs/architecture.md says so too."""

from __future__ import annotations

import dataclasses
import socket
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from wannabet.backends import parse_target
from wannabet.backends.oracle import sampler as ora
from wannabet.backends.oracle.driver import classify
from wannabet.backends.oracle.url import connect_args
from wannabet.backends.oracle.work import extract
from wannabet.engine import NativeEngine, SampleRequest, compile_program
from wannabet.engine.dbapi import Driver
from wannabet.errors import ConnectError, MissingExtra, SpecError
from wannabet.spec import parse_experiment

ENGINE = NativeEngine()


# -- URLs and passwords ------------------------------------------------------------------------


def test_urls_and_where_the_password_comes_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ORACLE_PASSWORD", raising=False)
    t = parse_target("oracle://scott:tiger@db.example:1522/ORCLPDB1")
    assert t.kind == "oracle" and "tiger" not in t.display
    assert connect_args(t) == {
        "user": "scott",
        "password": "tiger",
        "dsn": "db.example:1522/ORCLPDB1",
    }
    bare = parse_target("oracle://scott@db.example/ORCLPDB1")
    assert connect_args(bare) == {"user": "scott", "dsn": "db.example:1521/ORCLPDB1"}
    monkeypatch.setenv("ORACLE_PASSWORD", "from-env")
    assert connect_args(bare)["password"] == "from-env" and bare.password == "from-env"
    for bad in ("oracle://db.example/ORCL", "oracle://u@db.example", "oracle://u@h/s?x=1"):
        with pytest.raises(SpecError, match="Oracle URL"):
            parse_target(bad)


def test_a_refused_connection_is_a_connect_error_without_the_password() -> None:
    """python-oracledb's thin driver, for real, against a closed port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    target = parse_target(f"oracle://scott:s3cret-pw@127.0.0.1:{port}/ORCL")
    with pytest.raises(ConnectError) as info:
        ENGINE.execute(target, "SELECT 1 FROM dual")
    assert "DPY-6005" in str(info.value) and "s3cret-pw" not in str(info.value)


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ORA-00060", "deadlock"),
        ("ORA-08177", "serialization"),
        ("ORA-00054", "lock"),
        ("ORA-00001", "constraint"),
        ("ORA-02291", "constraint"),
        ("ORA-03113", "connection"),
        ("DPY-6005", "connection"),
        ("DPY-4011", "connection"),
        ("ORA-00942", "error"),
    ],
)
def test_oracle_errors_are_classed_by_code(code: str, status: str) -> None:
    import oracledb

    exc = oracledb.DatabaseError(SimpleNamespace(full_code=code, message=f"{code}: x"))
    assert classify(exc) == (status, code)


# -- transaction control without BEGIN (a real sqlite3 connection) -----------------------------


def test_begin_commit_and_rollback_become_the_drivers_calls(tmp_path: Path) -> None:
    """Oracle has no BEGIN: with ``transaction_sql=False`` a script's BEGIN turns autocommit
    off and COMMIT/ROLLBACK are the connection's methods. Tried on sqlite3 (Python 3.11's
    ``isolation_level`` is its autocommit switch), failures included."""
    db = tmp_path / "t.db"

    class Conn:
        """sqlite3 with the ``autocommit`` attribute python-oracledb has."""

        def __init__(self) -> None:
            self.raw = sqlite3.connect(db, isolation_level=None, check_same_thread=False)

        @property
        def autocommit(self) -> bool:
            return self.raw.isolation_level is None

        @autocommit.setter
        def autocommit(self, on: bool) -> None:
            self.raw.isolation_level = None if on else "DEFERRED"

        def __getattr__(self, name: str) -> Any:
            return getattr(self.raw, name)

    driver = Driver(module="sqlite3", connect=Conn, paramstyle="named", transaction_sql=False)
    generic = parse_target(f"dbapi://sqlite3?database={db}")
    target = dataclasses.replace(
        generic, backend=dataclasses.replace(generic.backend, driver=lambda t: driver)
    )
    ENGINE.execute(target, "CREATE TABLE a (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
    ENGINE.execute(target, "INSERT INTO a VALUES (1, 0), (2, 0)")
    script = (
        "\\set v random(0, 1)\nBEGIN;\nUPDATE a SET n = n + 1 WHERE id = 1;\n"
        "UPDATE a SET n = CASE WHEN :v = 1 THEN NULL ELSE n + 1 END WHERE id = 2;\nCOMMIT;"
    )
    spec = f"name = 'e'\n[[workload.transactions]]\nscript = '''\n{script}\n'''\n"
    request = SampleRequest(
        program=compile_program(parse_experiment(spec, file="e").workload, "dollar"),
        sessions=1,
        session_sql=(),
        duration_ns=0,
        max_transactions=60,
        seed=5,
    )
    result = ENGINE.run_sample(target, request)
    ok = int((result.columns["status"] == 0).sum())
    assert 0 < ok < 60  # NOT NULL failed some (constraint), which were rolled back whole
    assert ENGINE.query(target, "SELECT n FROM a ORDER BY id") == [(str(ok),), (str(ok),)]


# -- the sampler, against the views' contents --------------------------------------------------

#: two snapshots of the views, 10 s of a commit-per-insert workload apart; columns as Oracle
#: documents them, figures of the order an AWR report of such a load shows
BEFORE: dict[str, list[tuple[Any, ...]]] = {
    "v$sysstat": [
        ("user commits", 1_000_000),
        ("user rollbacks", 10),
        ("redo size", 900_000_000),
        ("redo synch writes", 990_000),
        ("consistent gets", 50_000_000),
        ("physical reads", 200_000),
        ("execute count", 3_000_000),
        ("some other statistic", 5),
    ],
    "v$sys_time_model": [
        ("DB time", 4_000_000_000),
        ("DB CPU", 2_500_000_000),
        ("background cpu time", 300_000_000),
        ("background elapsed time", 600_000_000),
    ],
    "v$system_event": [
        ("log file sync", "Commit", 990_000, 1_200_000_000),
        ("db file sequential read", "User I/O", 200_000, 400_000_000),
        ("SQL*Net message from client", "Idle", 5_000_000, 9_000_000_000),
    ],
    "v$event_histogram": [
        ("log file sync", 1, 900_000),
        ("log file sync", 2, 80_000),
        ("log file sync", 4, 10_000),
    ],
    "v$instance": [("2026-11-20 08:00:00",)],
    "v$osstat": [("NUM_CPUS", 8)],
}
AFTER: dict[str, list[tuple[Any, ...]]] = {
    **BEFORE,
    "v$sysstat": [
        ("user commits", 1_020_000),
        ("user rollbacks", 10),
        ("redo size", 910_000_000),
        ("redo synch writes", 1_010_000),
        ("consistent gets", 50_400_000),
        ("physical reads", 200_100),
        ("execute count", 3_040_000),
        ("some other statistic", 1),
    ],
    "v$sys_time_model": [
        ("DB time", 4_016_000_000),
        ("DB CPU", 2_508_000_000),
        ("background cpu time", 301_000_000),
        ("background elapsed time", 602_000_000),
    ],
    "v$system_event": [
        ("log file sync", "Commit", 1_010_000, 1_206_000_000),
        ("db file sequential read", "User I/O", 200_100, 400_200_000),
        ("log file switch completion", "Configuration", 3, 150_000),
        ("SQL*Net message from client", "Idle", 5_100_000, 9_500_000_000),
    ],
    "v$event_histogram": [
        ("log file sync", 1, 918_000),
        ("log file sync", 2, 81_500),
        ("log file sync", 4, 10_500),
    ],
}
COLUMNS = {
    "v$sysstat": "name, value",
    "v$sys_time_model": "stat_name, value",
    "v$system_event": "event, wait_class, total_waits, time_waited_micro",
    "v$event_histogram": "event, wait_time_milli, wait_count",
    "v$instance": "startup_time",
    "v$osstat": "stat_name, value",
}


def load(con: sqlite3.Connection, views: dict[str, list[tuple[Any, ...]]]) -> None:
    for view, rows in views.items():
        con.execute(f"DROP TABLE IF EXISTS {view}")
        con.execute(f"CREATE TABLE {view} ({COLUMNS[view]})")
        marks = ", ".join("?" * len(rows[0]))
        con.executemany(f"INSERT INTO {view} VALUES ({marks})", rows)


@pytest.fixture
def views() -> Iterator[sqlite3.Connection]:
    con = sqlite3.connect(":memory:")
    load(con, BEFORE)
    yield con
    con.close()


def query_of(con: sqlite3.Connection) -> ora.Query:
    return lambda statement: con.execute(statement).fetchall()


def test_the_sampler_reads_the_views_and_gives_the_samples_deltas(
    views: sqlite3.Connection,
) -> None:
    query = query_of(views)
    assert ora.check(query) == []
    sampler = ora.OracleSampler(query, cores=ora.cores(query))
    sampler.start()
    load(views, AFTER)
    section = sampler.stop(None)  # type: ignore[arg-type]
    assert section.invalid == ()
    v = section.values
    assert v["sysstat"]["user commits"] == 20_000 and v["server_commits"] == 20_000
    assert v["sysstat"]["redo size"] == 10_000_000
    assert "some other statistic" not in v["sysstat"]  # only the statistics asked for
    assert v["time_model"] == {
        "DB time": 16_000_000,
        "DB CPU": 8_000_000,
        "background cpu time": 1_000_000,
        "background elapsed time": 2_000_000,
    }
    assert v["cpu_s"] == pytest.approx(9.0)  # DB CPU + background CPU
    # Non-idle waits only; an event first seen during the sample counts from zero.
    assert v["waits"]["events"] == [
        {"type": "Commit", "event": "log file sync", "waits": 20_000, "wait_s": 6.0},
        {"type": "User I/O", "event": "db file sequential read", "waits": 100, "wait_s": 0.2},
        {"type": "Configuration", "event": "log file switch completion", "waits": 3,
         "wait_s": 0.15},
    ]  # fmt: skip
    assert v["waits"]["wait_s"] == pytest.approx(6.35)
    assert v["histograms"] == {"log file sync": [[1, 18_000], [2, 1_500], [4, 500]]}
    assert v["cores"] == 8
    # The reference article's table: CPU and non-idle wait per commit.
    work = extract({"oracle": v})
    assert work.cpu_s / 20_000 * 1e3 == pytest.approx(0.45)  # ms CPU per commit
    assert work.wait_s / 20_000 * 1e3 == pytest.approx(0.3175)  # ms wait per commit
    assert work.io["redo size"] == 10_000_000 and work.cores == 8


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"v$instance": [("2026-11-24 09:00:00",)]}, "the instance restarted"),
        ({"v$sysstat": [("user commits", 5)]}, "user commits went backwards"),
        (
            {"v$system_event": [("log file sync", "Commit", 1, 1)]},
            "log file sync, db file sequential read went backwards",
        ),
    ],
)
def test_a_restart_or_a_reset_leaves_the_sample_without_figures(
    views: sqlite3.Connection, change: dict[str, list[tuple[Any, ...]]], reason: str
) -> None:
    sampler = ora.OracleSampler(query_of(views))
    sampler.start()
    load(views, {**AFTER, **change})
    section = sampler.stop(None)  # type: ignore[arg-type]
    assert section.values == {} and reason in section.invalid[0]


def test_a_view_the_user_may_not_read_is_named_with_the_grant(views: sqlite3.Connection) -> None:
    views.execute("DROP TABLE v$system_event")
    warnings = ora.check(query_of(views))
    assert len(warnings) == 1
    text = str(warnings[0])
    assert "cannot read v$system_event" in text and "SELECT_CATALOG_ROLE" in text
    assert "No Oracle statistics are recorded" in text
    # Without NUM_CPUS the cores are unknown, not guessed.
    views.execute("DROP TABLE v$osstat")
    assert ora.cores(query_of(views)) is None


# -- without the driver (the 'oracle' extra not installed) -------------------------------------


def test_a_missing_driver_is_the_missing_extra_exit_code_through_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without python-oracledb the run and the dry run end with the missing extra's one line and
    exit code 7 (docs/cli.md), not as a failure to connect (3)."""
    from typer.testing import CliRunner

    from wannabet.cli import app

    # A None entry in sys.modules makes ``import oracledb`` raise ImportError.
    monkeypatch.setitem(sys.modules, "oracledb", None)
    spec = tmp_path / "e.toml"
    url = "oracle://scott:s3cret-pw@127.0.0.1:1/ORCL"
    spec.write_text(
        f"name = 'e'\ntarget = '{url}'\n"
        "[sampling]\nsamples = 1\nduration = '1s'\nwarmup = '0s'\n"
        "[[workload.transactions]]\nscript = 'SELECT 1 FROM dual'\n"
    )
    results = str(tmp_path / "r.duckdb")
    for command in (["run", str(spec), "-r", results], ["check", str(spec), "-t", url]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 7, (command, result.stderr)
        assert result.stderr.strip() == (
            "error: an Oracle target needs wannabet's optional 'oracle' part (missing:"
            " python-oracledb); install it with pip install 'wannabet[oracle]', or from a clone"
            " of wannabet's source with pip install '.[oracle]'"
        )


def test_a_session_lets_the_missing_extra_through(tmp_path: Path) -> None:
    """Any driver whose connect finds an extra missing: the engine raises MissingExtra itself,
    not a ConnectError wrapping its message."""

    def connect() -> Any:
        raise MissingExtra("a test target", "oracle", "python-oracledb")

    driver = Driver(module="none", connect=connect, paramstyle="named")
    generic = parse_target(f"dbapi://sqlite3?database={tmp_path / 't.db'}")
    target = dataclasses.replace(
        generic, backend=dataclasses.replace(generic.backend, driver=lambda t: driver)
    )
    with pytest.raises(MissingExtra) as info:
        ENGINE.query(target, "SELECT 1")
    assert info.value.extra == "oracle"


def test_the_sampler_does_not_turn_a_missing_driver_into_a_statistics_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "oracledb", None)
    with pytest.raises(MissingExtra, match=r"pip install 'wannabet\[oracle\]'"):
        ora.samplers_for(parse_target("oracle://scott:pw@127.0.0.1:1/ORCL"))
