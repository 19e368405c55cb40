"""``compare --stat cpu|wait|response``: the unit-of-work figures judged over samples, on a real
PostgreSQL run where one condition spends far more server CPU per commit than the other."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres
from wannabet.testing.cli import wannabet
from wannabet.work import unit_of_work_for_run

pytestmark = pytest.mark.postgres

EXPERIMENT = """\
name = "cpu-per-commit"
[[workload.transactions]]
name = "q"
script = "SELECT 1;"
[[factors]]
name = "query"
[factors.levels.light]
transactions = [{ name = "q", script = "SELECT 1;" }]
[factors.levels.heavy]
transactions = [{ name = "q", script = "SELECT sum(i) FROM generate_series(1, 300000) i;" }]
[sampling]
samples = 4
duration = "0.6s"
warmup = "0.1s"
seed = 8
"""


@pytest.fixture(scope="module")
def results(postgres: ThrowawayPostgres, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("cpu")
    (directory / "e.toml").write_text(EXPERIMENT)
    out = directory / "r.duckdb"
    done = wannabet("run", str(directory / "e.toml"), "-t", postgres.url, "-r", str(out))
    assert done.returncode == 0, done.stderr
    return out


def test_server_cpu_per_commit_is_judged_over_the_samples(results: Path) -> None:
    done = wannabet("compare", "-r", str(results), "--stat", "cpu", "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["stat"] == "cpu" and doc["metric"] == "cost" and doc["unit"] == "ms/commit"
    [pair] = doc["comparisons"]
    assert (pair["baseline"], pair["condition"]) == ("query=light", "query=heavy")
    # A 300,000-row sum costs milliseconds of CPU per commit, SELECT 1 microseconds.
    assert pair["verdict"] == "higher", pair
    low, _ = pair["ci_pct"]
    assert low > 100, pair
    # The figures judged are summary's: the mean of the samples' CPU per commit.
    store = Store(results, read_only=True)
    units = {u.condition: u for u in unit_of_work_for_run(store, store.run().run_id)}
    for c in doc["conditions"]:
        estimate = units[c["condition"]].cpu_ms_per_unit
        assert estimate is not None and c["stat_value"] == pytest.approx(estimate.mean)
        assert c["n_samples"] == 4
        # The bet (or why there is none) is about the samples' CPU per commit, not means.
        assert "samples' server CPU per commit" in c["clt"]["bet"], c["clt"]["bet"]


def test_response_and_wait_are_judged_too(results: Path) -> None:
    for stat in ("wait", "response"):
        done = wannabet("compare", "-r", str(results), "--stat", stat, "--format", "json")
        assert done.returncode == 0, done.stderr
        assert stat in done.stdout


def test_a_cost_figure_has_no_transaction_level(results: Path) -> None:
    done = wannabet("compare", "-r", str(results), "--stat", "cpu", "--level", "transaction")
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "--level" in done.stderr and "Traceback" not in done.stderr


def test_a_run_without_statistics_says_what_cpu_needs(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    (tmp_path / "e.toml").write_text(EXPERIMENT.replace("samples = 4", "samples = 2"))
    out = tmp_path / "r.duckdb"
    done = wannabet(
        "run", str(tmp_path / "e.toml"), "-t", postgres.url, "-r", str(out), "--no-stats"
    )
    assert done.returncode == 0, done.stderr
    done = wannabet("compare", "-r", str(out), "--stat", "cpu")
    assert done.returncode != 0 and "--no-stats" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


WRITES = """\
name = "wal-per-commit"
[setup]
sql = "DROP TABLE IF EXISTS w; CREATE TABLE w (i int, pad text)"
[[workload.transactions]]
name = "q"
script = '''
\\set n random({rows}, {rows} + 4)
INSERT INTO w SELECT i, 'x' FROM generate_series(1, :n) i;
'''
[[factors]]
name = "rows"
levels = ["1", "48"]
[sampling]
samples = 4
duration = "0.5s"
warmup = "0.1s"
seed = 3
"""


def test_an_io_counter_per_commit_is_judged_over_the_samples(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    (tmp_path / "e.toml").write_text(WRITES)
    out = tmp_path / "r.duckdb"
    done = wannabet("run", str(tmp_path / "e.toml"), "-t", postgres.url, "-r", str(out))
    assert done.returncode == 0, done.stderr
    done = wannabet("compare", "-r", str(out), "--stat", "io:wal_bytes", "--format", "json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["metric"] == "cost" and doc["unit"] == "wal_bytes/commit"
    [pair] = doc["comparisons"]
    assert (pair["baseline"], pair["condition"]) == ("rows=1", "rows=48")
    # About fifty rows a commit write far more WAL than about one.
    assert pair["verdict"] == "higher" and pair["ci_pct"][0] > 100, pair
    # The figures judged are summary's: the mean over the samples of WAL bytes per commit.
    store = Store(out, read_only=True)
    units = {u.condition: u for u in unit_of_work_for_run(store, store.run().run_id)}
    for c in doc["conditions"]:
        estimate = units[c["condition"]].io_per_unit["wal_bytes"]
        assert c["stat_value"] == pytest.approx(estimate.mean)
        assert "samples' wal_bytes per commit" in c["clt"]["bet"], c["clt"]["bet"]
    # A counter the run does not have is named with the ones it has.
    done = wannabet("compare", "-r", str(out), "--stat", "io:blks_written")
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "no I/O counter 'blks_written'" in done.stderr and "io:wal_bytes" in done.stderr
    done = wannabet("compare", "-r", str(out), "--stat", "bogus")
    assert done.returncode == 2 and "io:COUNTER" in done.stderr, done.stderr
