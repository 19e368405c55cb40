"""Load generators on Ray (issue #18): one experiment on two generators, one results file.

A real two-node Ray cluster on 127.0.0.1 (``ray start --head`` and ``ray start --address``, a
generator slot each) drives the suite's PostgreSQL. The pure parts (splitting, clock offsets,
merging summaries) are checked against direct computations.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import psutil  # type: ignore[import-untyped]
import psycopg
import pytest

from conftest import throwaway_postgres
from wannabet.engine.base import SampleRequest
from wannabet.engine.distributed import _apportioned, _parts, clock_offset, split
from wannabet.engine.program import compile_program
from wannabet.errors import StoreError
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.store.summaries import from_columns, merge
from wannabet.testing.ci import unavailable
from wannabet.testing.cli import one_line_error, wannabet
from wannabet.testing.ray_cluster import LocalRayCluster, RayUnavailable

INSERTS = """
name = "two-generators"
[setup]
# No autovacuum on the table: an autoanalyze of it during a sample commits in the database too,
# and the test is of the generators' commit counting (the commits check does not yet tell
# autovacuum's commits apart: seen once in CI as 2 more server commits than the engine's).
sql = '''
DROP TABLE IF EXISTS gen_rows;
CREATE TABLE gen_rows (id bigserial PRIMARY KEY, s int) WITH (autovacuum_enabled = false)
'''
[workload]
sessions = 4
[[workload.transactions]]
name = "insert"
script = "INSERT INTO gen_rows (s) VALUES (:client_id)"
[[factors]]
name = "commit"
[factors.levels.sync]
session_sql = ["SET synchronous_commit = on"]
[factors.levels.async]
session_sql = ["SET synchronous_commit = off"]
[sampling]
samples = {samples}
duration = "{duration}"
warmup = "0.2s"
[distributed]
generators = 2
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalRayCluster]:
    try:
        with LocalRayCluster(nodes=2) as c:
            yield c
    except RayUnavailable as exc:
        unavailable("a local Ray cluster", exc)


@pytest.fixture(scope="module")
def two_generators(
    cluster: LocalRayCluster, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, int, set[int]]:
    folder = tmp_path_factory.mktemp("distributed")
    experiment = folder / "e.toml"
    experiment.write_text(INSERTS.format(samples=2, duration="1s"))
    results = folder / "r.duckdb"
    # A server of its own without autovacuum: a worker's visit to the database commits even
    # when it processes nothing, and leaves no counter to tell it apart (seen in CI as 2 more
    # server commits than the engine's in one sample; docs/statistics.md, "Commits
    # cross-check"). The check is exact only on a server where nothing else commits.
    with throwaway_postgres(settings={"autovacuum": "off"}) as server:
        # In a child process, as a user runs it: Ray keeps per-process state (its
        # connection, the authentication token it loaded) that an earlier in-process run in
        # the same pytest worker can leave behind; in CI that failed the connection to this
        # cluster.
        done = wannabet(
            "run",
            str(experiment),
            "-t",
            server.url,
            "-r",
            str(results),
            "--ray-address",
            cluster.address,
            child=True,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        with psycopg.connect(server.url) as con:
            rows = con.execute("SELECT count(*) FROM gen_rows").fetchone()
            clients = {s for (s,) in con.execute("SELECT DISTINCT s FROM gen_rows").fetchall()}
    assert rows is not None
    return results, int(rows[0]), clients


@pytest.mark.postgres
def test_two_generators_commit_exactly_what_the_server_counts(
    two_generators: tuple[Path, int, set[int]],
) -> None:
    results, rows, _ = two_generators
    with duckdb.connect(str(results), read_only=True) as con:
        stats = [json.loads(s) for (s,) in con.execute("SELECT stats FROM samples").fetchall()]
        statuses = {s for (s,) in con.execute("SELECT status FROM samples").fetchall()}
    assert len(stats) == 4 and statuses == {"complete"}
    # Every committed transaction of every generator, warm-up included, is one row.
    assert sum(s["engine"]["committed"] for s in stats) == rows
    for s in stats:
        gens = s["generators"]["generators"]
        assert [g["generator"] for g in gens] == [0, 1]
        assert [g["sessions"] for g in gens] == [[0, 1], [2, 3]]
        assert sum(g["committed"] for g in gens) > 0
        # The central PostgreSQL statistics see every generator's sessions (one session name):
        # the server's commits are the engine's, exactly.
        pg = s["postgres"]
        assert pg["commits_check_reliable"] and pg["engine_commits"] == pg["server_commits"]


@pytest.mark.postgres
def test_client_id_is_the_session_number_across_generators(
    two_generators: tuple[Path, int, set[int]],
) -> None:
    # 4 sessions on 2 generators insert :client_id: 0-1 on generator 0, 2-3 on generator 1
    # (each generator used to number its own from 0), as transactions.session does.
    results, _, clients = two_generators
    assert clients == {0, 1, 2, 3}
    with duckdb.connect(str(results), read_only=True) as con:
        rows = con.execute("SELECT DISTINCT session FROM transactions").fetchall()
    sessions = {s for (s,) in rows}
    assert sessions == clients


@pytest.mark.postgres
def test_generators_start_together_on_two_nodes_and_their_clocks_are_stored(
    two_generators: tuple[Path, int, set[int]],
) -> None:
    results, _, _ = two_generators
    with duckdb.connect(str(results), read_only=True) as con:
        stats = [json.loads(s) for (s,) in con.execute("SELECT stats FROM samples").fetchall()]
        (env,) = con.execute("SELECT environment FROM runs").fetchone() or ("{}",)
    for s in stats:
        g = s["generators"]
        assert 0 <= g["start_skew_ns"] <= g["start_tolerance_ns"] == 50_000_000
        for gen in g["generators"]:
            assert abs(gen["start_lag_ns"]) <= g["start_tolerance_ns"]
            assert gen["uncertainty_ns"] > 0 and "offset_ns" in gen
    generators = json.loads(env)["generators"]
    assert len(generators) == 2
    assert len({g["node"] for g in generators}) == 2  # one generator per node
    for g in generators:
        # Same machine: the clocks agree within the measurement's own uncertainty, plus a
        # millisecond of scheduling slack on a loaded 2-core machine.
        assert abs(g["offset_ns"]) <= g["uncertainty_ns"] + 1_000_000, g


@pytest.mark.postgres
def test_compare_summary_and_report_work_unchanged(
    two_generators: tuple[Path, int, set[int]], tmp_path: Path
) -> None:
    results, _, _ = two_generators
    compare = wannabet("compare", "-r", str(results), "--format", "json")
    assert compare.returncode == 0, compare.stderr
    doc = json.loads(compare.stdout)
    assert {c["condition"] for c in doc["conditions"]} == {"commit=sync", "commit=async"}
    summary = wannabet("summary", "-r", str(results), "--format", "json")
    assert summary.returncode == 0, summary.stderr
    by_generator = json.loads(summary.stdout)["generators"]
    assert {(g["condition"], g["generator"]) for g in by_generator} == {
        (c, g) for c in ("commit=sync", "commit=async") for g in (0, 1)
    }
    with duckdb.connect(str(results), read_only=True) as con:
        stored = [
            json.loads(s)["generators"]
            for (s,) in con.execute("SELECT stats FROM samples").fetchall()
        ]
    for g in by_generator:
        assert g["samples"] == 2 and g["committed"] > 0 and g["p99_ms"] > 0
        # The clocks as stored: the largest uncertainty and |start lag| of the generator, the
        # largest skew of the samples (of either condition here: the same bound holds).
        mine = [e for s in stored for e in s["generators"] if e["generator"] == g["generator"]]
        assert 0 < g["uncertainty_ms"] <= max(e["uncertainty_ns"] for e in mine) / 1e6
        assert g["start_lag_ms"] <= max(abs(e["start_lag_ns"]) for e in mine) / 1e6
        assert g["offset_ms"] is not None
        assert 0 <= g["start_skew_ms"] <= max(s["start_skew_ns"] for s in stored) / 1e6
    table = wannabet("summary", "-r", str(results))
    assert "clock offset ms" in table.stdout and "start skew ms" in table.stdout
    out = tmp_path / "r.html"
    report = wannabet("report", "-r", str(results), "-o", str(out))
    assert report.returncode == 0, report.stderr
    html = out.read_text()
    assert "Load generators" in html and "<th>clock offset ms</th><th>± ms</th>" in html


def _generator_workers(cluster: LocalRayCluster) -> list[psutil.Process]:
    """This cluster's generator actors (another cluster on the machine may have its own)."""
    found = []
    for pid in cluster.processes():
        try:
            p = psutil.Process(pid)
            if "ray::_Generator" in " ".join(p.cmdline()):
                found.append(p)
        except psutil.Error:
            continue
    return found


def _run_and_kill_a_generator(
    cluster: LocalRayCluster, postgres: Any, experiment: Path, results: Path
) -> tuple[int, str]:
    """Run ``experiment`` in a child process, SIGKILL one generator's worker process once a
    sample runs, and return the exit code and stderr (within a deadline: no hang)."""
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": cluster.token}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wannabet",
            "run",
            str(experiment),
            "-t",
            postgres.url,
            "-r",
            str(results),
            "--ray-address",
            cluster.address,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        # Wait until a sample runs (a generator's process titles itself with its method).
        deadline = time.monotonic() + 120
        victim = None
        while time.monotonic() < deadline and victim is None:
            running = [
                p for p in _generator_workers(cluster) if "run_sample" in " ".join(p.cmdline())
            ]
            victim = running[0] if running else None
            time.sleep(0.2)
        assert victim is not None, "no generator ever ran a sample"
        time.sleep(0.5)
        os.kill(victim.pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=180)  # no hang: the run ends well within this
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, err


@pytest.mark.postgres
def test_a_generator_killed_mid_run_degrades_its_sample_and_the_run_goes_on(
    cluster: LocalRayCluster, postgres: Any, tmp_path: Path
) -> None:
    experiment = tmp_path / "e.toml"
    experiment.write_text(INSERTS.format(samples=2, duration="2s"))
    results = tmp_path / "r.duckdb"
    code, err = _run_and_kill_a_generator(cluster, postgres, experiment, results)
    assert code == 0, err[-3000:]
    assert "was lost" in err and "generator" in err
    with duckdb.connect(str(results), read_only=True) as con:
        rows = con.execute("SELECT status, reason FROM samples ORDER BY sample_id").fetchall()
    degraded = [r for s, r in rows if s == "degraded"]
    assert len(degraded) == 1 and "generator" in degraded[0] and "was lost" in degraded[0]
    # The degraded sample was run again (on_degraded = retry): every condition has its 2.
    assert sum(1 for s, _ in rows if s == "complete") == 4
    # The lost generator is counted although its (degraded) sample is not analysed.
    summary = wannabet("summary", "-r", str(results), "--format", "json")
    generators = json.loads(summary.stdout)["generators"]
    assert sum(g["lost"] for g in generators) == 1
    assert {g["samples"] for g in generators} == {2}


@pytest.mark.postgres
def test_with_on_error_abort_a_killed_generator_fails_the_run_in_one_line(
    cluster: LocalRayCluster, postgres: Any, tmp_path: Path
) -> None:
    experiment = tmp_path / "e.toml"
    text = INSERTS.format(samples=1, duration="2s")
    experiment.write_text(text.replace("sessions = 4\n", 'sessions = 4\non_error = "abort"\n'))
    results = tmp_path / "r.duckdb"
    code, err = _run_and_kill_a_generator(cluster, postgres, experiment, results)
    assert code == 3 and "Traceback" not in err, err[-3000:]
    (line,) = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert "generator" in line and "was lost" in line, line
    with duckdb.connect(str(results), read_only=True) as con:
        assert con.execute("SELECT status FROM runs").fetchone() == ("failed",)


@pytest.mark.postgres
def test_a_transaction_count_below_the_generators_runs_exactly_that_many(
    cluster: LocalRayCluster, postgres: Any, tmp_path: Path
) -> None:
    # 3 sessions on 2 generators and 1 transaction: the second generator's share is none
    # (not "no limit": it used to run for the whole second, or, without a duration, fail).
    experiment = tmp_path / "e.toml"
    experiment.write_text(
        'name = "count"\n[setup]\nsql = """\nDROP TABLE IF EXISTS count_rows;\n'
        'CREATE TABLE count_rows (s int)\n"""\n[workload]\nsessions = 3\n'
        '[[workload.transactions]]\nname = "ins"\n'
        'script = "INSERT INTO count_rows VALUES (:client_id)"\n'
        '[sampling]\nsamples = 1\ntransactions = 1\nduration = "1s"\nwarmup = "0s"\n'
        "[distributed]\ngenerators = 2\n"
    )
    results = tmp_path / "r.duckdb"
    done = wannabet(
        "run",
        str(experiment),
        "-t",
        postgres.url,
        "-r",
        str(results),
        "--ray-address",
        cluster.address,
        child=True,  # a fresh Ray driver, as above
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # ray.init runs on a thread of its own (a deadline on an address that never answers), where
    # Ray warns that it leaves SIGTERM alone: the runner handles SIGTERM, so no such noise.
    assert "SIGTERM" not in done.stderr, done.stderr
    with duckdb.connect(str(results), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM transactions").fetchone() == (1,)
    with psycopg.connect(postgres.url) as db:
        assert db.execute("SELECT count(*) FROM count_rows").fetchone() == (1,)


def test_a_profile_of_an_in_process_database_on_generators_is_refused(
    cluster: LocalRayCluster, tmp_path: Path
) -> None:
    # SQLite runs inside the generators' processes: a profile of this process would show the
    # coordinator waiting, so the run is refused before it exists, in one line.
    experiment = tmp_path / "e.toml"
    experiment.write_text(
        'name = "x"\n[[workload.transactions]]\nname = "q"\nscript = "SELECT 1"\n'
        '[sampling]\nsamples = 1\nduration = "0.2s"\nwarmup = "0s"\n'
        "[distributed]\ngenerators = 2\n[profile]\nperf = true\n"
    )
    results = tmp_path / "r.duckdb"
    done = wannabet(
        "run",
        str(experiment),
        "-t",
        f"sqlite:///{tmp_path / 'db.sqlite'}",
        "-r",
        str(results),
        "--ray-address",
        cluster.address,
        child=True,  # a fresh Ray driver, as above
    )
    line = one_line_error(done, 8)
    assert "SQLite" in line and "load generators" in line and "--generators" in line, line
    if results.exists():
        with duckdb.connect(str(results), read_only=True) as con:
            assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


@pytest.mark.postgres
def test_ctrl_c_stops_every_generator_within_seconds(
    cluster: LocalRayCluster, postgres: Any, tmp_path: Path
) -> None:
    # Samples of 8 s: Ctrl-C in the second one used to wait for its end (the runner stops a
    # sample from the engine's progress call, made only once every generator had answered).
    experiment = tmp_path / "e.toml"
    experiment.write_text(INSERTS.format(samples=2, duration="8s"))
    results = tmp_path / "r.duckdb"
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": cluster.token}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            # As from a terminal (a suite started in the background runs with SIGINT ignored).
            "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler);"
            " sys.argv[0] = 'wannabet'; runpy.run_module('wannabet', run_name='__main__')",
            "run",
            str(experiment),
            "-t",
            postgres.url,
            "-r",
            str(results),
            "--ray-address",
            cluster.address,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        # Once the first sample is stored, the second runs for 8 s.
        store = Store(results)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            with contextlib.suppress(StoreError):  # the writer may hold the file for a moment
                if results.exists() and store.run().samples >= 1:
                    break
        time.sleep(1.5)
        assert proc.poll() is None, "the run ended before it was interrupted"
        proc.send_signal(signal.SIGINT)
        stopped = time.monotonic()
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - stopped
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err[-3000:]
    assert took < 4, f"{took:.1f} s from SIGINT to the end of the run"
    with duckdb.connect(str(results), read_only=True) as con:
        assert con.execute("SELECT status FROM runs").fetchone() == ("interrupted",)
        kept = con.execute("SELECT count(*) FROM samples").fetchone()
    assert kept is not None and kept[0] >= 1


@pytest.mark.postgres
def test_a_background_load_runs_beside_each_distributed_sample(
    cluster: LocalRayCluster, postgres: Any, tmp_path: Path
) -> None:
    # The background's start is known from its first progress call, which a distributed
    # sample used to make only at its end: the background ran before the sample, not beside.
    experiment = tmp_path / "e.toml"
    experiment.write_text(
        'name = "bg"\n[setup]\nsql = """\nDROP TABLE IF EXISTS bg_times;\n'
        'CREATE TABLE bg_times (who text, at timestamptz DEFAULT clock_timestamp())\n"""\n'
        '[workload]\nsessions = 2\n[[workload.transactions]]\nname = "m"\n'
        "script = \"INSERT INTO bg_times (who) VALUES ('measured')\"\n"
        "[background]\nsessions = 2\ntransactions = [\n"
        '  { name = "b", script = "INSERT INTO bg_times (who) VALUES (\'background\')" },\n]\n'
        '[sampling]\nsamples = 1\nduration = "2s"\nwarmup = "0s"\n[distributed]\ngenerators = 2\n'
    )
    results = tmp_path / "r.duckdb"
    done = wannabet(
        "run",
        str(experiment),
        "-t",
        postgres.url,
        "-r",
        str(results),
        "--ray-address",
        cluster.address,
        child=True,  # a fresh Ray driver, as above
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with duckdb.connect(str(results), read_only=True) as con:
        (stats,) = con.execute("SELECT stats FROM samples").fetchone() or ("{}",)
    background = json.loads(stats)["background"]
    assert background["committed"] > 0 and background["errors"] == 0
    # Stopped when the measured sample ended, not run to its own limit (the sample's + 5 s).
    assert 1.5 <= background["seconds"] < 4, background
    with psycopg.connect(postgres.url) as db:
        row = db.execute("SELECT min(at), max(at) FROM bg_times WHERE who = 'measured'").fetchone()
        assert row is not None
        beside = db.execute(
            "SELECT count(*) FROM bg_times WHERE who = 'background' AND at BETWEEN %s AND %s",
            row,
        ).fetchone()
    assert beside is not None and beside[0] > 0


# -- the pure parts ---------------------------------------------------------------------------


def test_split_and_apportion_add_up() -> None:
    assert split(5, 2) == [3, 2] and split(4, 2) == [2, 2] and split(1, 3) == [1, 0, 0]
    assert _apportioned(10, [3, 2]) == [6, 4]
    assert _apportioned(7, [1, 1, 1]) == [3, 2, 2]
    assert _apportioned(0, [2, 2]) == [0, 0]
    rng = np.random.default_rng(3)
    for _ in range(200):
        weights = list(rng.integers(0, 9, size=int(rng.integers(1, 6))))
        total = int(rng.integers(0, 10_000))
        got = _apportioned(total, weights)
        assert sum(got) == (total if sum(weights) else 0)
        for g, w in zip(got, weights, strict=True):
            assert abs(g - total * w / max(sum(weights), 1)) < 1


def _request(**fields: Any) -> SampleRequest:
    experiment = parse_experiment(
        'name = "x"\n[[workload.transactions]]\nname = "q"\nscript = "SELECT 1"\n'
    )
    program = compile_program(experiment.workload, "dollar")
    return SampleRequest(program=program, session_sql=(), seed=7, **{"duration_ns": 0, **fields})


def test_every_generator_has_a_share_of_a_transaction_count_and_of_max_rows() -> None:
    # 0 means "no limit" to an engine: a generator given 0 transactions would run for ever
    # (or for the whole duration), and one given 0 rows would keep every row.
    for sessions, generators, count, rows, duration in (
        (2, 2, 1, 0, 0),
        (5, 3, 2, 0, 10**9),
        (4, 2, 3, 1, 0),
        (6, 3, 0, 2, 10**9),
        (7, 4, 5, 3, 10**9),
    ):
        request = _request(
            sessions=sessions, max_transactions=count, max_rows=rows, duration_ns=duration
        )
        parts = _parts(request, generators)
        assert sum(p.request.max_transactions for p in parts) == count
        assert sum(p.request.max_rows for p in parts) == rows
        for p in parts:
            assert p.request.sessions > 0
            assert count == 0 or p.request.max_transactions > 0
            assert rows == 0 or p.request.max_rows > 0 or p.request.record == 0.0
        # The sessions that run are numbered one after another; the rate is theirs to share.
        firsts = [p.first for p in parts]
        assert firsts == [sum(p.request.sessions for p in parts[:j]) for j in range(len(parts))]
        assert [p.request.first_session for p in parts] == firsts
    (only,) = _parts(_request(sessions=2, max_transactions=1, rate=10.0), 2)
    assert (only.generator, only.request.sessions, only.request.rate) == (0, 1, 10.0)


def test_clock_offset_takes_the_shortest_round_trip() -> None:
    # The generator is 1 ms ahead; the quickest trip (40 µs) sets the estimate, the others
    # are slowed on one leg and would bias it.
    true = 1_000_000
    trips = [
        (0, 5_000 + true, 200_000),
        (1_000_000, 1_020_000 + true, 1_040_000),
        (2_000_000, 2_190_000 + true, 2_200_000),
    ]
    got = clock_offset(trips)
    assert got.uncertainty_ns == 20_000 and got.offset_ns == true
    with pytest.raises(ValueError):
        clock_offset([])


def test_merged_summaries_equal_the_summary_of_all_transactions() -> None:
    rng = np.random.default_rng(11)
    n = 20_000
    start = np.sort(rng.integers(0, 10**9, n))
    latency = rng.lognormal(13, 1.2, n).astype(np.int64)
    columns = {
        "txn_type": rng.integers(0, 3, n).astype(np.int16),
        "intended_start_ns": start,
        "start_ns": start,
        "end_ns": start + latency,
        "status": (rng.random(n) < 0.03).astype(np.int8),
    }
    whole = merge([from_columns(columns, 2 * 10**8)])
    who = rng.integers(0, 3, n)
    parts = [
        from_columns({k: v[who == g] for k, v in columns.items()}, 2 * 10**8) for g in range(3)
    ]
    merged = merge(parts)
    for table in ("moments", "statuses", "bins"):
        a, b = getattr(whole, table), getattr(merged, table)
        for col in a:
            if a[col].dtype.kind == "f":
                np.testing.assert_allclose(a[col], b[col], rtol=1e-12)
            else:
                np.testing.assert_array_equal(a[col], b[col])


def test_the_distributed_table_and_options() -> None:
    text = 'name = "x"\n[[workload.transactions]]\nname = "q"\nscript = "SELECT 1"\n'
    assert parse_experiment(text).distributed.generators == 0
    plan = parse_experiment(
        text + '[distributed]\ngenerators = 3\naddress = "auto"\nstart_tolerance = "20ms"\n'
    ).distributed
    assert (plan.generators, plan.address, plan.start_tolerance_s) == (3, "auto", 0.02)
    for bad, message in (
        ("generators = -1", "distributed.generators: must be at least 0"),
        ('start_tolerance = "0s"', "distributed.start_tolerance: must be between"),
        ("hosts = 2", "distributed.hosts: unknown key"),
    ):
        with pytest.raises(Exception, match=message):
            parse_experiment(text + f"[distributed]\n{bad}\n")


def test_a_ray_address_without_generators_is_refused(tmp_path: Path) -> None:
    experiment = tmp_path / "e.toml"
    experiment.write_text(
        'name = "x"\n[[workload.transactions]]\nname = "q"\nscript = "SELECT 1"\n'
    )
    done = wannabet(
        "run", str(experiment), "-r", str(tmp_path / "r.duckdb"), "--ray-address", "127.0.0.1:1"
    )
    assert "--ray-address" in one_line_error(done, 2)


def test_a_ray_address_in_the_file_without_generators_is_refused(tmp_path: Path) -> None:
    experiment = tmp_path / "e.toml"
    experiment.write_text(
        'name = "x"\n[[workload.transactions]]\nname = "q"\nscript = "SELECT 1"\n'
        '[sampling]\nsamples = 1\nduration = "0.2s"\nwarmup = "0s"\n'
        '[distributed]\naddress = "127.0.0.1:1"\n'
    )
    done = wannabet("run", str(experiment), "-r", str(tmp_path / "r.duckdb"))
    line = one_line_error(done, 2)
    assert "e.toml: distributed.address" in line and "generators" in line, line
    # --generators 0 runs here alone, whatever the file says: no refusal of the address.
    alone = wannabet("run", str(experiment), "-r", str(tmp_path / "r.duckdb"), "--generators", "0")
    assert "distributed.address" not in alone.stderr


def test_a_ray_cluster_that_cannot_be_reached_fails_at_once_naming_the_address(
    tmp_path: Path,
) -> None:
    # Ray retries such an address for about 14 minutes, and names it as it rewrote it.
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        unavailable("Ray", exc)
    experiment = tmp_path / "e.toml"
    experiment.write_text(
        'name = "x"\n[[workload.transactions]]\nname = "q"\nscript = "SELECT 1"\n'
        '[sampling]\nsamples = 1\nduration = "0.2s"\nwarmup = "0s"\n'
    )
    began = time.monotonic()
    done = wannabet(
        "run",
        str(experiment),
        "-t",
        f"sqlite:///{tmp_path / 'db.sqlite'}",
        "-r",
        str(tmp_path / "r.duckdb"),
        "--generators",
        "2",
        "--ray-address",
        "127.0.0.1:1",
        child=True,
    )
    assert time.monotonic() - began < 60
    line = one_line_error(done, 3)
    assert "Ray cluster at 127.0.0.1:1" in line and "--ray-address" in line, line


@pytest.mark.postgres
def test_a_statement_the_server_refuses_on_a_generator_names_its_line(
    cluster: LocalRayCluster, postgres: Any, tmp_path: Path
) -> None:
    experiment = tmp_path / "e.toml"
    experiment.write_text(
        'name = "bad"\n[workload]\nsessions = 2\n[[workload.transactions]]\nname = "q"\n'
        'script = "SELECT * FROM no_such_table_here"\n'
        '[sampling]\nsamples = 1\nduration = "0.5s"\nwarmup = "0s"\n[distributed]\ngenerators = 2\n'
    )
    done = wannabet(
        "run",
        str(experiment),
        "-t",
        postgres.url,
        "-r",
        str(tmp_path / "r.duckdb"),
        "--ray-address",
        cluster.address,
        child=True,  # a fresh Ray driver, as above
    )
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert "no_such_table_here" in line and "e.toml:6" in line, line
