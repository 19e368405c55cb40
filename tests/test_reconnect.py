"""Reconnects (issue #19, point 2), against a throwaway PostgreSQL of each test's own that is
crashed (``pg_ctl stop -m immediate``) in the middle of a run: with ``reconnect = true`` the
sessions get their connections back and go on, the sample is stored as degraded and the run
completes; without it the run fails with one line, its finished samples intact."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import throwaway_postgres
from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres

EXPERIMENT = """\
name = "restart"
[setup]
sql = "DROP TABLE IF EXISTS t; CREATE TABLE t (id serial PRIMARY KEY, v int)"
[workload]
sessions = 2
RECONNECT
[[workload.transactions]]
name = "insert"
script = "INSERT INTO t (v) VALUES (1)"
[sampling]
samples = 3
duration = "4s"
warmup = "0s"
seed = 7
"""


@pytest.fixture
def server() -> Iterator[ThrowawayPostgres]:
    with throwaway_postgres() as pg:
        yield pg


def _cli(*args: str) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from wannabet.cli import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _crash_in_sample(
    server: ThrowawayPostgres, app: str, sample: int, down_s: float | None
) -> tuple[threading.Thread, list[float]]:
    """Crash the server 0.5 s into the ``sample``-th sample (counted by its sessions' new
    backends), and start it again ``down_s`` later (None: the test does). The wall-clock time
    it was up again is appended to the list."""
    up_at: list[float] = []

    def crash() -> None:
        query = f"SELECT pid FROM pg_stat_activity WHERE application_name = '{app}'"
        seen: set[frozenset[int]] = set()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            pids = frozenset(int(p) for p in server.psql(query).split())
            if len(pids) == 2 and pids not in seen:
                seen.add(pids)
                if len(seen) == sample:
                    break
            time.sleep(0.02)
        time.sleep(0.5)
        server.crash()
        if down_s is not None:
            time.sleep(down_s)
            server.start_again()
            up_at.append(time.time())

    thread = threading.Thread(target=crash, daemon=True)
    thread.start()
    return thread, up_at


def _run(server: ThrowawayPostgres, tmp_path: Path, reconnect: str) -> tuple[int, str, Path]:
    file, results = tmp_path / "e.toml", tmp_path / "r.duckdb"
    file.write_text(EXPERIMENT.replace("RECONNECT", reconnect), encoding="utf-8")
    app = f"restart-{os.getpid()}"
    code, _, err = _cli(
        "run", str(file), "-r", str(results), "-t", f"{server.url}?application_name={app}",
        "--no-stats",
    )  # fmt: skip
    return code, err, results


def test_a_server_restarted_mid_run_with_reconnect_completes_the_run(
    server: ThrowawayPostgres, tmp_path: Path
) -> None:
    app = f"restart-{os.getpid()}"
    crasher, up_at = _crash_in_sample(server, app, sample=2, down_s=0.5)
    code, err, results = _run(server, tmp_path, 'reconnect = true\nreconnect_timeout = "30s"')
    crasher.join()
    assert code == 0, err
    store = Store(results, read_only=True)
    run = store.run()
    assert run.status == "complete"
    samples = sorted(store.samples(run.run_id), key=lambda s: int(s["sample_id"]))
    degraded = [s for s in samples if s["status"] == "degraded"]
    assert len(degraded) == 1, samples
    [hit] = degraded
    assert hit["position"] == 1 and "(reconnect)" in str(hit["reason"])
    # The run has every position (the degraded one was run again, as on_degraded says).
    complete = sorted(int(s["position"]) for s in samples if s["status"] == "complete")
    assert complete == [0, 1, 2]
    # In the hit sample the sessions failed with the crash, then went on once it was back.
    with store.read() as con:
        rows = con.execute(
            "SELECT status, count(*), max(start_ns) FROM transactions WHERE sample_id = ?"
            " GROUP BY status",
            [int(hit["sample_id"])],
        ).fetchall()
    by_status = {s: (int(n), int(last)) for s, n, last in rows}
    assert by_status["connection"][0] >= 2  # one per session, at least
    assert by_status["ok"][1] / 1e9 > up_at[0]  # committed after the restart


def test_a_server_that_stays_down_without_reconnect_fails_the_run_keeping_its_samples(
    server: ThrowawayPostgres, tmp_path: Path
) -> None:
    app = f"restart-{os.getpid()}"
    crasher, _ = _crash_in_sample(server, app, sample=2, down_s=None)
    try:
        code, err, results = _run(server, tmp_path, "")
        crasher.join()
    finally:
        server.start_again()  # for the fixture's stop
    assert code == 3, err
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "cannot connect" in lines[0]
    store = Store(results, read_only=True)
    run = store.run()
    assert run.status == "failed"
    samples = sorted(store.samples(run.run_id), key=lambda s: int(s["sample_id"]))
    # The first sample finished before the crash, intact; the hit one is kept as degraded.
    assert [(s["position"], s["status"]) for s in samples] == [(0, "complete"), (1, "degraded")]
    assert "2 session(s) lost their connection" in str(samples[1]["reason"])
    assert int(samples[0]["committed"]) > 0
