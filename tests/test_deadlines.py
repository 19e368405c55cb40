"""Deadlines (issue #19, point 1), against the throwaway PostgreSQL: a statement longer than
the sample is cancelled and recorded as ``timeout``; a frozen server (SIGSTOP of the run's
backends) cannot stretch a sample past its deadline and grace, the sample is stored as
``degraded`` with its reason, and the run retries it, goes on or stops as ``on_degraded``
says; the analyses leave degraded samples out, say so, and take them in on request."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import psycopg
import pytest

from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres

#: the samples' deadline and grace in these files, in seconds
DURATION, GRACE = 1.0, 1.0
#: what a sample may take beyond its deadline and grace: joining the threads, the clock's
#: start before the first transaction
SLACK = 0.5

SLEEPY = """\
name = "sleepy"
[workload]
sessions = 1
[[workload.transactions]]
name = "sleep"
script = "SELECT pg_sleep(8)"
[sampling]
samples = 2
duration = "1s"
warmup = "0s"
grace = "1s"
on_degraded = "skip"
seed = 3
"""

FROZEN = """\
name = "frozen"
[workload]
sessions = 2
[[workload.transactions]]
name = "one"
script = "SELECT 1"
[sampling]
samples = 4
duration = "1s"
warmup = "0s"
grace = "1s"
on_degraded = "POLICY"
seed = 3
"""


def _cli(*args: str) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from wannabet.cli import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _samples(results: Path) -> list[dict[str, object]]:
    store = Store(results, read_only=True)
    return sorted(store.samples(store.run().run_id), key=lambda s: int(str(s["sample_id"])))


def _statuses(results: Path) -> dict[str, int]:
    with Store(results, read_only=True).read() as con:
        rows = con.execute("SELECT status, count(*) FROM transactions GROUP BY status").fetchall()
    return {str(s): int(n) for s, n in rows}


def _within_deadline(sample: dict[str, object]) -> None:
    seconds = (int(str(sample["end_ns"])) - int(str(sample["t0_ns"]))) / 1e9
    assert seconds <= DURATION + GRACE + SLACK, sample


def test_a_statement_longer_than_the_sample_is_cancelled_and_recorded_as_timeout(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    file, results = tmp_path / "e.toml", tmp_path / "r.duckdb"
    file.write_text(SLEEPY, encoding="utf-8")
    code, _, err = _cli("run", str(file), "-r", str(results), "-t", postgres.url, "--no-stats")
    assert code == 0, err
    # Each sample: its one pg_sleep(8) cancelled half-way through the grace, as a timeout.
    assert _statuses(results) == {"timeout": 2}
    samples = _samples(results)
    assert [s["status"] for s in samples] == ["degraded", "degraded"]
    for s in samples:
        _within_deadline(s)
        assert "cancelled (status timeout)" in str(s["reason"])
    err = " ".join(err.split())
    assert "sample baseline #1 (block 1) is degraded" in err and "on_degraded = 'skip'" in err
    # The cancel reached the server: nothing of the run is still sleeping there.
    busy = "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(8)'"
    assert postgres.psql(busy).strip() == "0"
    # The server's own word for it is kept as the error code.
    with Store(results, read_only=True).read() as con:
        codes = con.execute("SELECT DISTINCT error_code FROM transactions").fetchall()
    assert codes == [("57014",)]


def _freeze_first_sample(server: ThrowawayPostgres, app: str, hold_s: float) -> threading.Thread:
    """SIGSTOP the run's session backends once they appear (its first sample), SIGCONT them
    ``hold_s`` later: a frozen server as the sessions see it."""

    query = f"SELECT pid FROM pg_stat_activity WHERE application_name = '{app}'"
    # One connection polled every 20 ms, not a psql process per poll: on a loaded machine
    # starting psql took long enough that the first 1-s sample could pass unseen.
    watcher = psycopg.connect(server.url, autocommit=True)

    def freeze() -> None:
        deadline = time.monotonic() + 60
        pids: list[int] = []
        try:
            while time.monotonic() < deadline:
                pids = [int(r[0]) for r in watcher.execute(query).fetchall()]
                if len(pids) == 2:
                    break
                time.sleep(0.02)
        finally:
            watcher.close()
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(hold_s)
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)

    thread = threading.Thread(target=freeze, daemon=True)
    thread.start()
    return thread


def _run_frozen(
    server: ThrowawayPostgres, tmp_path: Path, policy: str
) -> tuple[int, str, Path, float]:
    file, results = tmp_path / "e.toml", tmp_path / "r.duckdb"
    file.write_text(FROZEN.replace("POLICY", policy), encoding="utf-8")
    app = f"frozen-{policy}-{os.getpid()}"
    target = f"{server.url}?application_name={app}"
    freezer = _freeze_first_sample(server, app, hold_s=4.0)
    started = time.monotonic()
    code, _, err = _cli("run", str(file), "-r", str(results), "-t", target, "--no-stats")
    elapsed = time.monotonic() - started
    freezer.join()
    return code, err, results, elapsed


@pytest.mark.parametrize("policy", ["skip", "retry"])
def test_a_frozen_server_ends_the_sample_at_its_deadline_and_the_run_goes_on(
    postgres: ThrowawayPostgres, tmp_path: Path, policy: str
) -> None:
    code, err, results, _ = _run_frozen(postgres, tmp_path, policy)
    assert code == 0, err
    samples = _samples(results)
    degraded = [s for s in samples if s["status"] == "degraded"]
    assert len(degraded) == 1, samples
    [frozen] = degraded
    _within_deadline(frozen)
    assert frozen["position"] == 0
    # Both sessions were stuck in a statement the frozen backends never answered.
    assert "2 session(s) did not return" in str(frozen["reason"])
    complete = [s for s in samples if s["status"] == "complete"]
    if policy == "retry":
        # The retry ran at once, at the same position; the degraded attempt is kept.
        assert sorted(int(str(s["position"])) for s in complete) == [0, 1, 2, 3]
        assert (frozen["sample_id"], samples[1]["position"]) == (0, 0)
        assert "it is run again once" in " ".join(err.split())
        # The progress names the retry as it is stored: #2, of the five samples kept.
        assert "[1/4] baseline #2/5 (block 1):" in err, err
        assert "[4/4] baseline #5/5 (block 4):" in err, err
    else:
        assert sorted(int(str(s["position"])) for s in complete) == [1, 2, 3]
    run = Store(results, read_only=True).run()
    assert run.status == "complete"
    # The analyses leave it out and say so; --include-degraded takes it in.
    code, out, err = _cli("summary", "-r", str(results), "-f", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["conditions"][0]["samples"] == len(complete)
    # Named as every output names a sample: the condition's sample #1, in block 1.
    assert doc["degraded"][0]["sample"] == 1 and doc["degraded"][0]["included"] is False
    assert doc["degraded"][0]["block"] == 1
    code, out, _ = _cli("summary", "-r", str(results), "-f", "json", "--include-degraded")
    assert json.loads(out)["conditions"][0]["samples"] == len(samples)
    code, out, _ = _cli("summary", "-r", str(results))
    assert "1 degraded sample left out (baseline #1 (block 1):" in " ".join(out.split())


def test_a_frozen_server_stops_the_run_when_the_policy_says_so(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    code, err, results, _ = _run_frozen(postgres, tmp_path, "stop")
    assert code == 3, err
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err
    assert "sample baseline #1 (block 1) was degraded" in lines[0] and "--resume" in lines[0]
    run = Store(results, read_only=True).run()
    assert run.status == "failed"
    [frozen] = _samples(results)
    assert frozen["status"] == "degraded"
    _within_deadline(frozen)


def test_a_query_with_a_time_limit_is_cancelled_at_it(postgres: ThrowawayPostgres) -> None:
    from wannabet.backends import parse_target
    from wannabet.engine import NativeEngine
    from wannabet.errors import QueryError

    started = time.monotonic()
    with pytest.raises(QueryError) as info:
        NativeEngine().query(parse_target(postgres.url), "SELECT pg_sleep(30)", timeout_s=0.5)
    # Well before the statement's own 30 s: the limit ended it, not the statement.
    assert time.monotonic() - started < 15
    assert info.value.code == "timeout" and "no answer within" in str(info.value)
    busy = "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)'"
    assert postgres.psql(busy).strip() == "0"


def test_a_statistics_query_to_a_frozen_backend_gives_up(
    postgres: ThrowawayPostgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from wannabet.backends import parse_target
    from wannabet.backends.postgresql import sampler as module

    # A frozen backend's statement_timeout never fires; the client's watchdog must.
    monkeypatch.setattr(module, "STATEMENT_TIMEOUT_MS", 300)
    monkeypatch.setattr(module, "CLIENT_GRACE_S", 0.3)
    sampler = module.PostgresSampler(parse_target(postgres.url), application_name="frozen-stats")
    try:
        pid = sampler._own_pid
        os.kill(pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(psycopg.Error):
                sampler._rows("SELECT 1")
            waited = time.monotonic() - started
        finally:
            os.kill(pid, signal.SIGCONT)
        assert waited < 15  # without the watchdog it never returns
    finally:
        sampler.close()


LARGE_WAL = """\
name = "large-wal"
[setup]
sql = '''
PRAGMA journal_mode = WAL;
CREATE TABLE t (id INTEGER PRIMARY KEY, pad BLOB);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
INSERT INTO t SELECT i, zeroblob(4000) FROM n;
'''
[workload]
sessions = 1
# No checkpoint while the sample runs: the WAL grows, and closing the connection after the
# last transaction checkpoints all of it.
session_sql = ["PRAGMA wal_autocheckpoint = 0", "PRAGMA synchronous = FULL"]
[[workload.transactions]]
name = "rewrite"
script = '''
\\set id random(1, 2000)
UPDATE t SET pad = randomblob(4000) WHERE id >= :id AND id < :id + 20;
'''
[sampling]
samples = 1
duration = "1s"
warmup = "0s"
grace = "0.05s"
on_degraded = "skip"
seed = 5
"""


def test_closing_a_connection_is_not_held_to_the_deadline(tmp_path: Path) -> None:
    """A SQLite close that checkpoints a large WAL after the last transaction is teardown:
    the sample measured its full window and is sound, however long the close takes
    (the quickstart's samples were once marked degraded for it)."""
    from wannabet.engine import NativeEngine
    from wannabet.runner import prepare_run, run_experiment
    from wannabet.spec import load_experiment

    (tmp_path / "e.toml").write_text(LARGE_WAL)
    store = Store(tmp_path / "r.duckdb")
    experiment = load_experiment(tmp_path / "e.toml")
    setup = prepare_run(experiment, store, target=f"sqlite:///{tmp_path / 'db.sqlite'}")
    began = time.monotonic()
    outcome = run_experiment(experiment, target=setup.target, store=store, engine=NativeEngine())
    took = time.monotonic() - began
    wal = tmp_path / "db.sqlite-wal"
    assert not wal.exists() or wal.stat().st_size == 0  # the close checkpointed the WAL
    (sample,) = store.samples(outcome.run_id)
    assert sample["status"] == "complete", sample["reason"]
    assert sample["transactions"] > 0 and took > 1.0


SLOW = """\
name = "slow"
[workload]
sessions = 1
[[workload.transactions]]
name = "sleep"
script = "SELECT pg_sleep(1.2)"
[sampling]
samples = 2
duration = "1.5s"
warmup = "0s"
seed = 3
"""


def test_the_default_grace_grows_to_the_transactions_the_run_has_seen(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    # The default grace of a 1.5 s sample is 1 s, and its cancel comes half-way through: the
    # second 1.2 s transaction (1.2 s to 2.4 s) is cancelled at 2.0 s, so the first sample is
    # degraded. Its completed transaction (1.2 s) makes the retry's grace 2.4 s: the retry and
    # the next sample finish their transaction in flight and are sound, and the run goes on.
    file, results = tmp_path / "e.toml", tmp_path / "r.duckdb"
    file.write_text(SLOW, encoding="utf-8")
    code, _, err = _cli("run", str(file), "-r", str(results), "-t", postgres.url, "--no-stats")
    assert code == 0, err
    samples = _samples(results)
    assert [s["status"] for s in samples] == ["degraded", "complete", "complete"], samples
    assert "cancelled (status timeout)" in str(samples[0]["reason"])
    for s in samples[1:]:
        seconds = (int(str(s["end_ns"])) - int(str(s["t0_ns"]))) / 1e9
        assert 2.4 <= seconds <= 1.5 + 2.4 + SLACK, s
    assert _statuses(results) == {"ok": 1 + 2 + 2, "timeout": 1}


def test_a_degraded_sample_is_said_before_its_statistics_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a frozen server the statistics query waits for its own deadline: the warning about
    the stuck sample must not wait behind it. (The runner's order, with a fake engine and
    collector; the frozen server itself is the tests above.)"""
    import dataclasses
    from typing import Any

    from wannabet import runner
    from wannabet.backends import parse_target
    from wannabet.engine import FakeEngine
    from wannabet.spec import parse_experiment

    said: list[str] = []
    read_after: list[int] = []

    class Overrun(FakeEngine):
        def run_sample(self, *args: Any, **kwargs: Any) -> Any:
            return dataclasses.replace(super().run_sample(*args, **kwargs), overran=True)

    class Collector:
        def start(self, *args: Any) -> None:
            pass

        def stop(self, *args: Any) -> None:
            read_after.append(len(said))

        def abandon(self) -> None:
            pass

        def close(self) -> None:
            pass

    monkeypatch.setattr(runner, "collector_for", lambda *a, **k: Collector())
    text = (
        'name = "frozen"\n[[workload.transactions]]\nscript = "SELECT 1;"\n'
        '[sampling]\nsamples = 1\nduration = "0.1s"\nwarmup = "0s"\non_degraded = "skip"\n'
    )
    runner.run_experiment(
        parse_experiment(text, file="e.toml"),
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=Store(tmp_path / "r.duckdb"),
        engine=Overrun(),
        warn=lambda w: said.append(str(w)),
    )
    assert any("is degraded" in s for s in said)
    assert read_after == [1]
