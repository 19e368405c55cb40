"""CPU profiles on every target that can have them (issue #17), and a clear refusal elsewhere.

PostgreSQL's end-to-end case (md5, flame graphs in Chromium) is in
``tests/report/test_profiles_report.py``. Here: MariaDB's server process, SQLite's and DuckDB's
engine threads in this process, the refusals (a DB-API target, a process that is gone), and the
``[profile]`` table. Real ``perf`` (installed when root and missing) and real servers.
"""

from __future__ import annotations

import json
import os
import pwd
from pathlib import Path
from typing import Any
from urllib.parse import quote

import duckdb
import psutil  # type: ignore[import-untyped]
import pytest

from conftest import throwaway_postgres
from wannabet.backends import parse_target, profiled_processes
from wannabet.engine import NativeEngine
from wannabet.errors import ProfileError
from wannabet.samplers.perf import ProfiledProcesses, _perf_reason, check_profiling
from wannabet.spec import parse_experiment
from wannabet.testing.ci import unavailable
from wannabet.testing.cli import one_line_error, wannabet
from wannabet.testing.packages import PackageUnavailable, ensure_command

BASE = """
name = "profiled"
[[workload.transactions]]
name = "q"
script = "{sql}"
[sampling]
samples = 2
duration = "0.5s"
warmup = "0s"
[profile]
perf = true
"""


@pytest.fixture(scope="module")
def perf() -> str:
    try:
        return ensure_command("perf", package="linux-perf")
    except PackageUnavailable as exc:
        unavailable("perf", exc)


def _profiled_run(tmp_path: Path, target: str, sql: str) -> tuple[list[dict[str, Any]], set[str]]:
    experiment = tmp_path / "e.toml"
    experiment.write_text(BASE.format(sql=sql))
    results = tmp_path / "r.duckdb"
    done = wannabet("run", str(experiment), "--target", target, "-r", str(results))
    assert done.returncode == 0, done.stderr[-2000:]
    with duckdb.connect(str(results), read_only=True) as con:
        sections = [
            json.loads(s)["profile"] for (s,) in con.execute("SELECT stats FROM samples").fetchall()
        ]
        stacks = {s for (s,) in con.execute("SELECT stack FROM profiles").fetchall()}
    assert len(sections) == 2
    for section in sections:
        assert section["stack_samples"] > 0 and section["stacks"] > 0, section
    return sections, stacks


def test_a_mariadb_run_profiles_the_server_process(perf: str, mariadb: Any, tmp_path: Path) -> None:
    sql = "SELECT count(*) FROM (SELECT md5(seq) FROM seq_1_to_20000) t"
    sections, stacks = _profiled_run(tmp_path, mariadb.url, sql)
    assert all(s["processes"] == 1 for s in sections)
    # Every stack is one of the server's threads, and the server's own code is in them.
    assert stacks and not any(s.startswith("wannabet") for s in stacks)
    assert {s.split(";", 1)[0] for s in stacks} <= {"mariadbd", "mysqld"}, stacks
    assert any("dispatch_command" in s for s in stacks), sorted(stacks)[:20]


def test_a_sqlite_run_profiles_the_engine_threads(perf: str, tmp_path: Path) -> None:
    sql = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)"
        " SELECT count(*) FROM n"
    )
    _, stacks = _profiled_run(tmp_path, f"sqlite:///{tmp_path / 't.db'}", sql)
    roots = {s.split(";", 1)[0] for s in stacks}
    # The session threads are named, and SQLite's virtual machine runs in them.
    assert "wannabet-sessio" in roots, roots
    assert any(s.startswith("wannabet-sessio") and "sqlite3VdbeExec" in s for s in stacks)


def test_a_duckdb_run_profiles_this_process(perf: str, tmp_path: Path) -> None:
    sql = "SELECT count(*) FROM range(2000000) t(i) WHERE i % 7 = 0"
    _, stacks = _profiled_run(tmp_path, f"duckdb:///{tmp_path / 't.duckdb'}", sql)
    assert any("duckdb" in s.lower() for s in stacks), sorted(stacks)[:20]


def test_a_target_whose_processes_are_not_visible_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    target = parse_target(f"dbapi://sqlite3?database={quote(str(db))}")
    with pytest.raises(ProfileError, match="not available for dbapi targets"):
        profiled_processes(target, NativeEngine(), 99)
    experiment = tmp_path / "e.toml"
    experiment.write_text(BASE.format(sql="SELECT 1"))
    results = tmp_path / "r.duckdb"
    done = wannabet("run", str(experiment), "--target", target.url, "-r", str(results))
    line = one_line_error(done, 8)
    assert "profiles are not available" in line and "--profile" in line
    # Refused before the run: nothing was recorded.
    if results.exists():
        with duckdb.connect(str(results), read_only=True) as con:
            assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_a_process_that_is_gone_is_refused_in_one_line(perf: str) -> None:
    gone = ProfiledProcesses((2**22 + 12345,), "the test's server")
    with pytest.raises(ProfileError, match="the test's server is gone"):
        check_profiling(gone, 99)


def test_the_profile_table_and_its_errors() -> None:
    text = 'name = "x"\n[[workload.transactions]]\nname = "q"\nscript = "SELECT 1"\n'
    assert parse_experiment(text).profile.perf is False
    plan = parse_experiment(text + "[profile]\nperf = true\nfrequency = 499\n").profile
    assert (plan.perf, plan.frequency_hz) == (True, 499)
    assert parse_experiment(text + "[profile]\nperf = true\n").profile.frequency_hz == 99
    for bad, message in (
        ("perf = 1", "profile.perf: must be true or false"),
        ("frequency = 0", "profile.frequency: must be at least 1"),
        ("frequency = 20000", "profile.frequency: must be at most 10,000"),
        ("freq = 9", "did you mean 'frequency'"),
    ):
        with pytest.raises(Exception, match=message):
            parse_experiment(text + f"[profile]\n{bad}\n")


#: what perf 6.1 prints, as a user the kernel's perf_event_paranoid keeps out
_PARANOID = """\
Error:
Access to performance monitoring and observability operations is limited.
Consider adjusting /proc/sys/kernel/perf_event_paranoid setting to open
access to performance monitoring and observability operations for processes
without CAP_PERFMON, CAP_SYS_PTRACE or CAP_SYS_ADMIN Linux capability.
perf_event_paranoid setting is 2:
  -1: Allow use of (almost) all events by all users
"""


@pytest.mark.parametrize(
    ("stderr", "reason"),
    [
        (_PARANOID, "Access to performance monitoring and observability operations is limited"),
        ("Error:\nNo permission to enable cpu-clock event.\n", "No permission to enable"),
        ("", "perf failed without a message"),
    ],
)
def test_the_refusal_gives_perfs_reason_not_its_heading(stderr: str, reason: str) -> None:
    assert _perf_reason(stderr).startswith(reason)


@pytest.mark.postgres
def test_a_server_restarted_before_each_sample_is_profiled_again(perf: str, tmp_path: Path) -> None:
    """A hook (or a level's system_shell) that restarts the server gives it a new postmaster;
    the profile follows it rather than losing every sample after the first restart."""
    with throwaway_postgres() as pg:
        pg_ctl = f"{pg.bindir / 'pg_ctl'} -D {pg.data} -w -m fast restart -l {pg.log}"
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            pg_ctl = f"runuser -u {pwd.getpwuid(pg.data.stat().st_uid).pw_name} -- {pg_ctl}"
        text = BASE.format(sql="SELECT count(*) FROM generate_series(1, 20000)")
        text = text.replace("samples = 2", "samples = 3")
        text += f'[[hooks]]\nwhen = "before-sample"\nshell = "{pg_ctl}"\n'
        text += "[workload]\nreconnect = true\n"
        experiment = tmp_path / "e.toml"
        experiment.write_text(text)
        results = tmp_path / "r.duckdb"
        before = psutil.Process(int((pg.data / "postmaster.pid").read_text().split()[0]))
        done = wannabet("run", str(experiment), "--target", pg.url, "-r", str(results))
        assert done.returncode == 0, done.stderr[-2000:]
        assert "is gone" not in done.stderr, done.stderr
        assert not before.is_running()  # the hook did restart it
    with duckdb.connect(str(results), read_only=True) as con:
        stats = [json.loads(s) for (s,) in con.execute("SELECT stats FROM samples").fetchall()]
        profiled = con.execute("SELECT count(DISTINCT sample_id) FROM profiles").fetchone()
    assert len(stats) == 3
    for doc in stats:
        assert doc.get("profile", {}).get("stack_samples", 0) > 0, doc.get("warnings")
    assert profiled == (3,)
