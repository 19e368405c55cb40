"""The runner's bookkeeping, with the fake engine (no database behaviour is claimed here)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from wannabet.backends import parse_target
from wannabet.design import schedule
from wannabet.engine import FakeEngine
from wannabet.errors import ConnectError, Interrupted
from wannabet.runner import run_experiment, with_overrides
from wannabet.spec import parse_experiment
from wannabet.store import Store

SPEC = textwrap.dedent(
    """\
    name = "fake"
    [setup]
    sql = "CREATE TABLE t (x int)"
    [workload]
    sessions = 3
    session_sql = "PRAGMA cache_size = 1000"
    [[workload.transactions]]
    script = "SELECT 1;"
    [[factors]]
    name = "mode"
    levels = ["a", "b"]
    session_sql = "SET mode = {level}"
    system_sql = "ALTER SYSTEM SET mode = {level}"
    [sampling]
    samples = 4
    duration = "1s"
    warmup = "0s"
    seed = 11
    """
)


def run(tmp_path: Path, engine: FakeEngine) -> tuple[Store, int]:
    store = Store(tmp_path / "r.duckdb")
    exp = parse_experiment(SPEC, file="fake.toml")
    outcome = run_experiment(
        exp, target=parse_target(f"sqlite:///{tmp_path}/t.db"), store=store, engine=engine
    )
    return store, outcome.run_id


def test_every_sample_is_stored_in_schedule_order(tmp_path: Path) -> None:
    store, run_id = run(tmp_path, FakeEngine(transactions_per_sample=50))
    info = store.run(run_id)
    assert info.status == "complete"
    assert info.samples == 8 and info.transactions == 400
    samples = store.samples(run_id)
    expected = schedule(2, 4, "randomized-blocks", 11)
    assert [(s["block"], s["condition_id"]) for s in samples] == [
        (e.block, e.condition_index) for e in expected
    ]
    assert info.settings["schedule"] == [[e.block, e.condition_index] for e in expected]


def test_setup_and_system_sql_run_when_the_condition_changes(tmp_path: Path) -> None:
    engine = FakeEngine(transactions_per_sample=10)
    run(tmp_path, engine)
    assert engine.executed[0] == "CREATE TABLE t (x int)"
    system = engine.executed[1:]
    order = [e.condition_index for e in schedule(2, 4, "randomized-blocks", 11)]
    changes = [c for i, c in enumerate(order) if i == 0 or order[i - 1] != c]
    assert system == [f"ALTER SYSTEM SET mode = {'ab'[c]}" for c in changes]


def test_session_sql_reaches_the_engine(tmp_path: Path) -> None:
    engine = FakeEngine(transactions_per_sample=400, slowdown={"SET mode = b": 3.0})
    store, run_id = run(tmp_path, engine)
    a, b = store.condition_summaries(run_id)
    assert b.latency_ms["p50"] / a.latency_ms["p50"] == pytest.approx(3.0, rel=0.1)


def test_interrupt_keeps_finished_samples(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    exp = parse_experiment(SPEC, file="fake.toml")
    with pytest.raises(Interrupted, match="kept 3 finished samples"):
        run_experiment(
            exp,
            target=parse_target(f"sqlite:///{tmp_path}/t.db"),
            store=store,
            engine=FakeEngine(transactions_per_sample=20, interrupt_at_sample=3),
        )
    info = store.run()
    assert info.status == "interrupted"
    assert info.samples == 3 and info.transactions == 60


def test_unreachable_target_writes_no_run(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    exp = parse_experiment(SPEC, file="fake.toml")
    with pytest.raises(ConnectError):
        run_experiment(
            exp,
            target=parse_target(f"sqlite:///{tmp_path}/t.db"),
            store=store,
            engine=FakeEngine(unreachable=True),
        )
    assert not store.path.exists() or store.runs() == []


def test_overrides() -> None:
    exp = with_overrides(
        parse_experiment(SPEC, file="f"),
        samples=2,
        duration_s=0.5,
        sessions=1,
        seed=3,
        warmup_s=0.1,
    )
    assert (exp.sampling.samples, exp.sampling.duration_s, exp.sampling.seed) == (2, 0.5, 3)
    assert exp.sampling.warmup_s == 0.1 and exp.workload.sessions == 1
