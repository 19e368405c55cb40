"""A stored run as analysis input: grouping and ordering must match the store exactly."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from wannabet.backends import parse_target
from wannabet.datasets import load_observations
from wannabet.engine import FakeEngine
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import Store

SPEC = textwrap.dedent(
    """\
    name = "ds"
    [workload]
    sessions = 3
    [[workload.transactions]]
    script = "SELECT 1;"
    [[factors]]
    name = "f"
    levels = ["a", "b", "c"]
    session_sql = "SET f = {level}"
    [sampling]
    samples = 5
    warmup = "0s"
    seed = 3
    """
)


def test_observations_are_grouped_in_run_and_time_order(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    engine = FakeEngine(transactions_per_sample=90, slowdown={"SET f = b": 2.0})
    outcome = run_experiment(
        parse_experiment(SPEC, file="ds.toml"),
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=store,
        engine=engine,
    )
    run = store.run(outcome.run_id)
    groups = load_observations(store, run)
    assert [g.condition for g in groups] == ["f=a", "f=b", "f=c"]
    with store.read() as con:
        for g in groups:
            expected = con.execute(
                "SELECT latency_ms, sample_id, session FROM transaction_latency"
                " WHERE condition = ? ORDER BY sample_id, start_ns",
                [g.condition],
            ).fetchnumpy()
            np.testing.assert_allclose(g.values, expected["latency_ms"])
            np.testing.assert_array_equal(g.sample, expected["sample_id"])
            np.testing.assert_array_equal(g.session, expected["session"])
            assert g.time_s is not None and (np.diff(g.time_s)[np.diff(g.sample) == 0] >= 0).all()
    throughput = load_observations(store, run, metric="throughput")
    assert [len(g.values) for g in throughput] == [5, 5, 5]
    assert throughput[1].values.mean() < throughput[0].values.mean()
