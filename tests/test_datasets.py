"""A stored run as analysis input: grouping and ordering must match the store exactly."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Literal

import numpy as np
import pytest

from wannabet import datasets
from wannabet.backends import parse_target
from wannabet.datasets import load_observations
from wannabet.engine import FakeEngine
from wannabet.runner import run_experiment, with_overrides
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.verdicts import ComparisonOptions, analyze_runs

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
            # Each value's sample by its number in the condition: 1, 2, ... in run order.
            number = np.unique(expected["sample_id"], return_inverse=True)[1] + 1
            np.testing.assert_array_equal(g.sample, number)
            np.testing.assert_array_equal(g.session, expected["session"])
            assert g.time_s is not None and (np.diff(g.time_s)[np.diff(g.sample) == 0] >= 0).all()
    throughput = load_observations(store, run, metric="throughput")
    assert [len(g.values) for g in throughput] == [5, 5, 5]
    assert throughput[1].values.mean() < throughput[0].values.mean()


def _run(tmp_path: Path, name: str, record: str, per_sample: int = 2000) -> tuple[Store, int]:
    store = Store(tmp_path / f"{name}.duckdb")
    engine = FakeEngine(transactions_per_sample=per_sample, slowdown={"SET f = b": 1.1})
    outcome = run_experiment(
        with_overrides(parse_experiment(SPEC, file="ds.toml"), record=record),
        target=parse_target(f"sqlite:///{tmp_path}/{name}.db"),
        store=store,
        engine=engine,
    )
    return store, outcome.run_id


def test_a_large_condition_gives_consecutive_rows_and_the_exact_moments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(datasets, "SHAPE_SUBSET", 1000)
    store, run_id = _run(tmp_path, "big", "all")
    groups = load_observations(store, store.run(run_id), seed=5)
    with store.read() as con:
        for g in groups:
            rows = con.execute(
                "SELECT latency_ms, sample_id FROM transaction_latency WHERE condition = ?"
                " AND status = 'ok' AND NOT warmup ORDER BY sample_id, start_ns",
                [g.condition],
            ).fetchnumpy()
            m = g.moments
            assert m is not None and m.consecutive
            # 5 samples of 2,000: 200 from each, a run of consecutive rows.
            assert g.values.size == 1000
            sample_ids = np.unique(rows["sample_id"])  # sample #k is the k-th, in run order
            for k, sample in enumerate(m.sample):
                mine = rows["latency_ms"][rows["sample_id"] == sample_ids[sample - 1]]
                assert m.count[k] == mine.size
                assert m.total[k] == pytest.approx(mine.sum(), rel=1e-9)
                got = g.values[g.sample == sample]
                assert got.size == 200
                at = np.flatnonzero(np.isclose(mine, got[0], rtol=0, atol=1e-12))
                assert any(np.allclose(mine[i : i + 200], got) for i in at)
            assert (
                m.histogram is not None and int(m.histogram.count.sum()) == rows["latency_ms"].size
            )
    # Another seed, other offsets; the same seed, the same subset.
    again = load_observations(store, store.run(run_id), seed=5)
    other = load_observations(store, store.run(run_id), seed=6)
    assert all(np.array_equal(a.values, b.values) for a, b in zip(groups, again, strict=True))
    assert not all(
        a.values.size == b.values.size and np.array_equal(a.values, b.values)
        for a, b in zip(groups, other, strict=True)
    )


@pytest.mark.parametrize("level", ["sample", "transaction"])
def test_a_subset_gives_the_same_means_tests_and_verdicts_as_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, level: Literal["sample", "transaction"]
) -> None:
    store, run_id = _run(tmp_path, "r", "all")
    full, _ = analyze_runs(store, [run_id], ComparisonOptions(level=level))
    monkeypatch.setattr(datasets, "SHAPE_SUBSET", 1000)
    part, _ = analyze_runs(store, [run_id], ComparisonOptions(level=level))
    for a, b in zip(full.conditions, part.conditions, strict=True):
        assert b.n_transactions == a.n_transactions == 10_000
        assert b.mean == pytest.approx(a.mean, rel=1e-9)
        assert b.sd == pytest.approx(a.sd, rel=1e-6)
        assert b.clt.mean_ci95.low == pytest.approx(a.clt.mean_ci95.low, rel=1e-9)
        assert b.descriptive.max == pytest.approx(a.descriptive.max, rel=1e-9)
        if level == "transaction":
            # Quantiles from the histograms: within half a bin of the exact ones.
            for q in ("p5", "median", "p95", "p99"):
                got, exact = getattr(b.descriptive, q), getattr(a.descriptive, q)
                assert got == pytest.approx(exact, rel=0.01), q
            assert b.autocorrelation_lag1 is not None  # consecutive rows
        assert b.consistency.transactions is not None
        assert b.consistency.transactions.n == 10_000
    for a, b in zip(full.comparisons, part.comparisons, strict=True):
        assert b.verdict == a.verdict
        assert b.p_adjusted == pytest.approx(a.p_adjusted, rel=1e-9)
        assert b.delta is not None and a.delta is not None
        assert b.delta.estimate == pytest.approx(a.delta.estimate, rel=1e-9)
        assert (b.delta.low, b.delta.high) == pytest.approx((a.delta.low, a.delta.high), rel=1e-9)


def test_a_run_without_rows_compares_from_its_summaries(tmp_path: Path) -> None:
    with_rows, rid_rows = _run(tmp_path, "rows", "all")
    without, rid_none = _run(tmp_path, "none", "none")
    for level in ("sample", "transaction"):
        a, _ = analyze_runs(with_rows, [rid_rows], ComparisonOptions(level=level))  # type: ignore[arg-type]
        b, _ = analyze_runs(without, [rid_none], ComparisonOptions(level=level))  # type: ignore[arg-type]
        for x, y in zip(a.comparisons, b.comparisons, strict=True):
            assert (x.verdict, x.p_adjusted) == (y.verdict, pytest.approx(y.p_adjusted))
        for x, y in zip(a.conditions, b.conditions, strict=True):
            assert y.n_transactions == x.n_transactions and y.mean == pytest.approx(x.mean)
            # Drawn from histograms: no session, no order inside a sample.
            assert y.consistency.by_session is None
            if level == "transaction":
                assert y.autocorrelation_lag1 is None
    # The drawn values lie within a bin of latencies that were measured.
    obs = load_observations(without, without.run(rid_none))
    for g in obs:
        assert g.moments is not None and g.moments.histogram is not None
        assert g.values.min() >= g.moments.minimum * (1 - 1 / 128)
        assert g.values.max() <= g.moments.maximum * (1 + 1 / 128)
