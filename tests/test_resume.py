"""Resumable runs (issue #19, point 3): ``kill -9`` of wannabet in the middle of a run, then
``wannabet run FILE --resume RUN``, completes the run with the same schedule and seed, and no
sample is duplicated or lost; a changed file, option or target is refused in one line."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from wannabet.store import Store
from wannabet.testing.cli import one_line_error, wannabet

SAMPLES = 3  # per condition: 6 samples in 3 blocks

EXPERIMENT = """\
name = "resumable"
[setup]
sql = '''
DROP TABLE IF EXISTS t;
CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER);
'''
[workload]
sessions = 1
[[workload.transactions]]
name = "insert"
script = "\\\\set v random(1, 1000)\\nINSERT INTO t (v) VALUES (:v);"
[[factors]]
name = "synchronous"
levels = ["FULL", "OFF"]
session_sql = "PRAGMA synchronous = {level}"
[sampling]
samples = 3
duration = "0.2s"
warmup = "0s"
[[hooks]]
when = "after-sample"
# The run's own process dies, as under kill -9, once its third sample is written.
shell = '[ "$WANNABET_SAMPLE" = "2" ] && [ -n "$KILL_WANNABET" ] && kill -9 $PPID; true'
"""


def _samples(results: Path, run_id: int) -> list[tuple[int, int, int, int, str]]:
    """(sample id, position, block, condition, status) of every sample, in id order."""
    return sorted(
        (
            int(s["sample_id"]),
            int(s["position"]),
            int(s["block"]),
            int(s["condition_id"]),
            str(s["status"]),
        )
        for s in Store(results, read_only=True).samples(run_id)
    )


@pytest.fixture
def killed(tmp_path: Path) -> tuple[Path, Path, str]:
    """A run killed with SIGKILL after its third sample: (file, results, target)."""
    import os

    file, results = tmp_path / "e.toml", tmp_path / "r.duckdb"
    file.write_text(EXPERIMENT, encoding="utf-8")
    target = f"sqlite:///{tmp_path}/t.db"
    env = {**os.environ, "KILL_WANNABET": "1"}
    env.pop("COLUMNS", None)
    proc = wannabet("run", str(file), "-r", str(results), "-t", target, "--no-stats", env=env)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    return file, results, target


def test_kill_9_then_resume_completes_the_run_with_the_same_schedule_and_seed(
    killed: tuple[Path, Path, str], tmp_path: Path
) -> None:
    file, results, target = killed
    store = Store(results, read_only=True)
    before = store.run()
    assert before.status == "interrupted"
    assert [s[1] for s in _samples(results, before.run_id)] == [0, 1, 2]
    rows_before = _count_rows(results)

    proc = wannabet(
        "run", str(file), "-r", str(results), "-t", target, "--no-stats", "--resume",
        str(before.run_id), "-f", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    after = Store(results, read_only=True).run(before.run_id)
    assert after.status == "complete" and after.seed == before.seed
    assert after.settings is not None and before.settings is not None
    assert after.settings["schedule"] == before.settings["schedule"]
    samples = _samples(results, before.run_id)
    # Every position once, numbered in the order they ran, in the stored schedule's order.
    assert [(s[0], s[1]) for s in samples] == [(i, i) for i in range(2 * SAMPLES)]
    assert [[s[2], s[3]] for s in samples] == before.settings["schedule"]
    assert {s[4] for s in samples} == {"complete"}
    # The first three samples are untouched; the resumed ones were added, not re-run.
    assert _count_rows(results)[:3] == rows_before
    # One run in the file: the resumed run is the same run.
    assert [r.run_id for r in Store(results, read_only=True).runs()] == [before.run_id]
    assert json.loads(proc.stdout)["run"]["run_id"] == before.run_id

    # The same seed gives the same random choices: a fresh, uninterrupted run of the file
    # with that seed has the same schedule.
    fresh = tmp_path / "fresh.duckdb"
    proc = wannabet(
        "run", str(file), "-r", str(fresh), "-t", f"sqlite:///{tmp_path}/u.db", "--no-stats",
        "--seed", str(before.seed),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    whole = Store(fresh, read_only=True).run()
    assert whole.settings is not None and whole.settings["schedule"] == after.settings["schedule"]


def _count_rows(results: Path) -> list[int]:
    with Store(results, read_only=True).read() as con:
        rows = con.execute(
            "SELECT sample_id, count(*) FROM transactions GROUP BY sample_id ORDER BY sample_id"
        ).fetchall()
    return [int(n) for _, n in rows]


def test_resume_refuses_a_changed_file_option_or_a_finished_run(
    killed: tuple[Path, Path, str], tmp_path: Path
) -> None:
    file, results, target = killed
    run_id = str(Store(results, read_only=True).run().run_id)
    base = ["-r", str(results), "-t", target, "--no-stats", "--resume", run_id]

    changed = tmp_path / "changed.toml"
    changed.write_text(EXPERIMENT.replace('duration = "0.2s"', 'duration = "0.3s"'), "utf-8")
    line = one_line_error(wannabet("run", str(changed), *base), 2)
    assert f"run {run_id} cannot be resumed" in line and "experiment file" in line

    line = one_line_error(wannabet("run", str(file), *base, "--samples", "4"), 2)
    assert "samples 3 → 4" in line

    line = one_line_error(wannabet("run", str(file), *base, "--seed", "1"), 2)
    assert "seed" in line

    other = f"sqlite:///{tmp_path}/other.db"
    proc = wannabet("run", str(file), "-r", str(results), "-t", other, "--resume", run_id)
    assert "ran on" in one_line_error(proc, 2)
    # Nothing of that touched the run.
    assert Store(results, read_only=True).run(int(run_id)).status == "interrupted"

    assert wannabet("run", str(file), *base).returncode == 0
    line = one_line_error(wannabet("run", str(file), *base), 2)
    assert "complete; nothing is left to run" in line


def test_resume_on_the_default_target_keeps_the_database_the_run_left(tmp_path: Path) -> None:
    """The default SQLite target is made afresh for a new run, never for a resumed one: the
    samples to come run on the rows the first ones wrote, and ``[setup]`` does not run again."""
    import os

    file, results = tmp_path / "e.toml", tmp_path / "r.duckdb"
    file.write_text(EXPERIMENT, encoding="utf-8")
    env = {**os.environ, "KILL_WANNABET": "1"}
    proc = wannabet("run", str(file), "-r", str(results), "--no-stats", env=env)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    database = tmp_path / "resumable.sqlite"
    inserted = _table_rows(database)
    assert inserted > 0
    run_id = Store(results, read_only=True).run().run_id

    proc = wannabet("run", str(file), "-r", str(results), "--no-stats", "--resume", str(run_id))
    assert proc.returncode == 0, proc.stderr
    assert Store(results, read_only=True).run(run_id).status == "complete"
    # Every insert of the whole run is in the table: the first samples' rows were kept.
    with Store(results, read_only=True).read() as con:
        ok = con.execute(
            "SELECT count(*) FROM transactions WHERE run_id = ? AND status = 'ok'", [run_id]
        ).fetchone()
    assert ok is not None and _table_rows(database) == ok[0] > inserted


def _table_rows(database: Path) -> int:
    import sqlite3

    with sqlite3.connect(database) as con:
        return int(con.execute("SELECT count(*) FROM t").fetchone()[0])


def test_resuming_a_run_the_file_does_not_hold_names_the_option(
    killed: tuple[Path, Path, str],
) -> None:
    file, results, target = killed
    proc = wannabet("run", str(file), "-r", str(results), "-t", target, "--resume", "99")
    line = one_line_error(proc, 2)
    assert line.startswith("error: --resume 99: no such run") and "wannabet runs" in line
