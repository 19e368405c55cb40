"""Results files (issue #19, point 6): any reader reports a run whose process was killed as
interrupted, "latest" is the latest run with a sample, and runs can be removed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from wannabet.backends import parse_target
from wannabet.engine import NativeEngine
from wannabet.errors import StoreError, UnknownRun
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.testing.cli import plain_env

EXPERIMENT = textwrap.dedent(
    """\
    name = "small"
    [workload]
    sessions = 1
    [[workload.transactions]]
    name = "read"
    script = "SELECT length('{copy}');"
    [[factors]]
    name = "copy"
    levels = ["a", "b"]
    [sampling]
    samples = 2
    duration = "0.1s"
    warmup = "0s"
    seed = 1
    """
)


def _run(tmp_path: Path, store: Store, text: str = EXPERIMENT) -> int:
    return run_experiment(
        parse_experiment(text, file="e.toml"),
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=store,
        engine=NativeEngine(),
    ).run_id


def _samples_so_far(path: Path) -> int:
    try:
        return Store(path, read_only=True).runs()[-1].samples
    except (StoreError, IndexError):
        return 0  # not created yet, or the writer holds the file this instant


def test_a_killed_run_reads_as_interrupted_everywhere_and_keeps_its_samples(
    tmp_path: Path,
) -> None:
    file = tmp_path / "e.toml"
    file.write_text(EXPERIMENT.replace("samples = 2", "samples = 200"), encoding="utf-8")
    results = tmp_path / "r.duckdb"
    proc = subprocess.Popen(
        [sys.executable, "-m", "wannabet", "run", str(file), "-r", str(results), "--no-stats",
         "-t", f"sqlite:///{tmp_path}/t.db"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=plain_env(),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while _samples_so_far(results) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    # A reader that may not write sees it as it is.
    reader = Store(results, read_only=True)
    info = reader.runs()[-1]
    assert info.status == "interrupted" and "process ended" in (info.message or "")
    done = info.samples
    assert done >= 3
    assert sum(c.samples for c in reader.condition_summaries(info.run_id)) == done
    # The next write (an import, a run, a deletion) records it in the file.
    writer = Store(results)
    other = _run(tmp_path, writer)
    with writer.read() as con:
        row = con.execute("SELECT status FROM runs WHERE run_id = ?", [info.run_id]).fetchone()
    assert row == ("interrupted",)
    assert writer.run(other).status == "complete"


def test_latest_is_the_latest_run_with_a_sample(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    first = _run(tmp_path, store)
    empty = store.create_run(name="failed early", kind="run")
    store.finish_run(empty, "failed", "connection refused")
    assert store.run().run_id == first
    assert store.run(empty).status == "failed"  # still there when asked for by id


def test_runs_can_be_deleted_and_a_running_one_cannot(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    ids = [_run(tmp_path, store) for _ in range(3)]
    assert store.delete_runs([ids[0]]) == [ids[0]]
    with store.read() as con:
        tables = [
            t[0]
            for t in con.execute(
                "SELECT DISTINCT table_name FROM information_schema.columns"
                " WHERE column_name = 'run_id'"
            ).fetchall()
        ]
        for table in tables:
            left = con.execute(f'SELECT count(*) FROM "{table}" WHERE run_id = ?', [ids[0]])
            assert left.fetchone() == (0,), table
        kept = con.execute("SELECT count(*) FROM transactions WHERE run_id = ?", [ids[1]])
        assert kept.fetchone()[0] > 0  # type: ignore[index]
    with pytest.raises(UnknownRun, match="--delete 99"):
        store.delete_runs([99])
    live = store.create_run(name="live", kind="run")  # this process: alive, so running
    with pytest.raises(StoreError, match=f"run {live} is running"):
        store.delete_runs([live])
    store.finish_run(live, "complete")
    # --keep-last through the command line.
    from typer.testing import CliRunner

    from wannabet.cli import app

    result = CliRunner().invoke(
        app, ["runs", "-r", str(store.path), "--keep-last", "1", "-f", "json"]
    )
    assert result.exit_code == 0, result.stderr
    assert "removed 2 runs" in result.stderr
    assert [r.run_id for r in store.runs()] == [live]


READ_ONLY_RUN = """\
name = "read-only"
[setup]
sql = "DROP TABLE IF EXISTS t; CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)"
[workload]
sessions = 1
[[workload.transactions]]
name = "insert"
script = "INSERT INTO t (v) VALUES (1)"
[[factors]]
name = "synchronous"
levels = ["FULL", "OFF"]
session_sql = "PRAGMA synchronous = {level}"
[sampling]
samples = 3
duration = "0.2s"
warmup = "0s"
seed = 4
"""


def test_a_results_file_on_read_only_storage_can_be_analysed(tmp_path: Path) -> None:
    """The file sits on a read-only mount (a bind mount remounted ``ro``: root ignores file
    permissions, not a read-only file system); every reading command works there."""
    from wannabet.testing.ci import unavailable
    from wannabet.testing.cli import wannabet

    made = tmp_path / "made"
    made.mkdir()
    file = tmp_path / "e.toml"
    file.write_text(READ_ONLY_RUN, encoding="utf-8")
    target = f"sqlite:///{tmp_path}/t.db"
    proc = wannabet("run", str(file), "-r", str(made / "r.duckdb"), "-t", target, "--no-stats")
    assert proc.returncode == 0, proc.stderr
    mounted = tmp_path / "ro"
    mounted.mkdir()
    bind = subprocess.run(["mount", "--bind", str(made), str(mounted)], capture_output=True)
    if bind.returncode != 0:
        unavailable("a read-only bind mount", bind.stderr.decode().strip())
    try:
        ro = subprocess.run(
            ["mount", "-o", "remount,bind,ro", str(mounted)], capture_output=True, check=False
        )
        if ro.returncode != 0:
            unavailable("a read-only bind mount", ro.stderr.decode().strip())
        results = str(mounted / "r.duckdb")
        assert not os.access(mounted, os.W_OK) or _write_fails(mounted)
        for command in (
            ["runs"],
            ["summary"],
            ["summary", "-f", "json"],
            ["compare"],
            ["compare", "-f", "csv"],
            ["report", "-f", "markdown"],
            ["plan"],
            ["export", "-o", str(tmp_path / "export")],
        ):
            proc = wannabet(*command, "-r", results)
            assert proc.returncode == 0, (command, proc.stderr)
        assert sorted(p.name for p in (tmp_path / "export").iterdir())
        # Writing there is refused in one line (exit 4) before anything is made beside it,
        # not with the default target's OS error.
        from wannabet.testing.cli import one_line_error

        again = wannabet("run", str(file), "-r", results)
        line = one_line_error(again, 4)
        assert f"--results {results}: cannot write in" in line, line
        # An output there is the command line's mistake, the same exit code for both (2).
        for command in (
            ["export", "-o", str(mounted / "export")],
            ["export", "-o", str(mounted)],
            ["report", "-f", "markdown", "-o", str(mounted / "r.md")],
        ):
            line = one_line_error(wannabet(*command, "-r", results), 2)
            assert "command line: --output:" in line, (command, line)
    finally:
        subprocess.run(["umount", str(mounted)], check=False)


def _write_fails(directory: Path) -> bool:
    try:
        (directory / "probe").write_text("x")
    except OSError:
        return True
    return False


def test_a_duckdb_file_of_someone_elses_is_not_written_into(tmp_path: Path) -> None:
    """``run -r`` on a DuckDB file that holds other tables: refused in one line (exit 4), and
    the file is left as it was; an empty DuckDB file is still taken."""
    import duckdb

    from wannabet.testing.cli import one_line_error, wannabet

    file = tmp_path / "e.toml"
    file.write_text(READ_ONLY_RUN, encoding="utf-8")
    theirs = tmp_path / "theirs.duckdb"
    with duckdb.connect(str(theirs)) as con:
        con.execute("CREATE TABLE runs (x int)")  # a name wannabet would use
        con.execute("CREATE TABLE foo (x int)")
    target = f"sqlite:///{tmp_path}/t.db"
    proc = wannabet("run", str(file), "-r", str(theirs), "-t", target, "--no-stats")
    line = one_line_error(proc, 4)
    assert "not a wannabet results file" in line and "--results" in line, line
    with duckdb.connect(str(theirs), read_only=True) as con:
        tables = {
            r[0] for r in con.sql("SELECT table_name FROM information_schema.tables").fetchall()
        }
    assert tables == {"runs", "foo"}
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    proc = wannabet("run", str(file), "-r", str(empty), "-t", target, "--no-stats")
    assert proc.returncode == 0, proc.stderr
