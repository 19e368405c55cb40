"""Verdicts on one statistic of the samples: reference values for every step.

Per-sample quantiles and the quantile of a resample are held to ``histogram.quantile`` of the
explicitly merged histograms; the sample level to ``compare`` on the per-sample values; the
transaction-level mean to ``compare(level="transaction")`` on the raw values, number for number.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from wannabet.analysis import Observations, compare, histogram
from wannabet.analysis.statistic import (
    ConditionSamples,
    SampleHistograms,
    cluster_bootstrap_quantile_change,
    compare_statistic,
    pooled_value,
    resampled_quantiles,
    sample_values,
    stat_quantile,
)
from wannabet.errors import AnalysisError


def latencies(rng: np.random.Generator, k: int, scale: float = 1.0) -> list[np.ndarray]:
    """k samples of log-normal latencies in ns, each with its own size and random effect."""
    out = []
    for _ in range(k):
        n = int(rng.integers(200, 600))
        ms = scale * np.exp(rng.normal(0, 0.05) + 0.6 * rng.standard_normal(n))
        out.append(np.round(ms * 1e6).astype(np.int64))
    return out


def condition(label: str, samples: list[np.ndarray], positions=None) -> ConditionSamples:
    k = len(samples)
    ms = [s / 1e6 for s in samples]
    return ConditionSamples(
        label,
        np.arange(k) if positions is None else positions,
        np.array([s.size for s in samples]),
        np.array([m.sum() for m in ms]),
        np.array([(m * m).sum() for m in ms]),
        SampleHistograms.from_histograms([histogram.from_values(s) for s in samples]),
        np.full(k, 2.0),
    )


@pytest.fixture
def two(request):
    rng = np.random.default_rng(7)
    a = latencies(rng, 12)
    b = latencies(rng, 10, scale=1.3)
    return a, b


def test_per_sample_and_pooled_quantiles_are_those_of_the_histograms(two):
    a, _ = two
    c = condition("a", a)
    for q in (0.5, 0.9, 0.99, 0.999):
        expected = [histogram.quantile(histogram.from_values(s), q) / 1e6 for s in a]
        np.testing.assert_array_equal(c.histograms.quantiles_ms(q), expected)
        merged = histogram.from_values(np.concatenate(a))
        assert c.histograms.pooled_quantile_ms(q) == histogram.quantile(merged, q) / 1e6


def test_a_resample_quantile_is_the_quantile_of_the_merged_histograms(two):
    a, _ = two
    sh = condition("a", a).histograms
    rng = np.random.default_rng(3)
    draws = rng.integers(0, len(a), size=(25, len(a)))
    weights = np.stack([np.bincount(d, minlength=len(a)) for d in draws]).astype(float)
    for q in (0.5, 0.95, 0.99):
        got = resampled_quantiles(sh, weights, q)
        for row, d in zip(got, draws, strict=True):
            merged = histogram.from_values(np.concatenate([a[i] for i in d]))
            assert row == histogram.quantile(merged, q) / 1e6


def test_sample_values_per_statistic(two):
    a, _ = two
    c = condition("a", a)
    _, v = sample_values(c, "mean")
    np.testing.assert_allclose(v, [s.mean() / 1e6 for s in a], rtol=1e-12)
    _, v = sample_values(c, "p99")
    np.testing.assert_array_equal(v, c.histograms.quantiles_ms(0.99))
    _, v = sample_values(c, "tps")
    np.testing.assert_array_equal(v, [s.size / 2.0 for s in a])
    assert pooled_value(c, "tps") == sum(s.size for s in a) / (2.0 * len(a))
    assert stat_quantile("p99.9") == 0.999 and stat_quantile("mean") is None
    with pytest.raises(AnalysisError, match="use one of mean, median"):
        stat_quantile("p42")


def test_a_sample_without_transactions_of_the_type_is_left_out_but_counts_for_tps(two):
    a, _ = two
    c = condition("a", [*a, np.zeros(0, dtype=np.int64)])
    assert sample_values(c, "p99")[1].size == len(a)
    assert sample_values(c, "mean")[1].size == len(a)
    _, tps = sample_values(c, "tps")
    assert tps.size == len(a) + 1 and tps[-1] == 0.0


_NAMES = {
    "mean": "sample means",
    "median": "sample medians",
    "p99": "sample p99s",
    "tps": "sample throughputs",
}


@pytest.mark.parametrize("stat", ["mean", "median", "p99", "tps"])
def test_the_sample_level_is_compare_on_the_per_sample_values(two, stat):
    a, b = two
    ca, cb = condition("a", a, np.arange(0, 24, 2)), condition("b", b, np.arange(1, 21, 2))
    got = compare_statistic([ca, cb], stat=stat, seed=5)
    metric = "throughput" if stat == "tps" else "latency"
    groups = [Observations(c.condition, sample_values(c, stat)[1], c.position) for c in (ca, cb)]
    unit = "tps" if stat == "tps" else "ms"
    ref = compare(groups, seed=5, metric=metric, unit=unit, values_name=_NAMES[stat])
    assert got.stat == stat and got.level == "sample"
    # The bet names what is predicted: the next samples' p99s, not their means.
    for c in got.conditions:
        assert c.clt.bet.startswith(f"9 of the next 10 {_NAMES[stat]} should fall between")
    assert got.comparisons[0].to_dict() == ref.comparisons[0].to_dict()
    assert [c.to_dict() for c in got.conditions] == [c.to_dict() for c in ref.conditions]
    assert got.stat_values == {"a": pooled_value(ca, stat), "b": pooled_value(cb, stat)}


def test_the_transaction_level_mean_is_todays_transaction_level_comparison(two):
    a, b = two
    ca, cb = condition("a", a), condition("b", b)
    got = compare_statistic([ca, cb], stat="mean", level="transaction", seed=9).comparisons[0]
    raw = [
        Observations(
            name, np.concatenate(s) / 1e6, np.repeat(np.arange(len(s)), [x.size for x in s])
        )
        for name, s in (("a", a), ("b", b))
    ]
    ref = compare(raw, level="transaction", seed=9).comparisons[0]
    assert got.test.test == ref.test.test
    assert got.test.p_value == pytest.approx(ref.test.p_value, rel=1e-9)
    assert got.delta.estimate == pytest.approx(ref.delta.estimate, rel=1e-9)
    assert (got.delta.low, got.delta.high) == pytest.approx(
        (ref.delta.low, ref.delta.high), rel=1e-9
    )
    assert got.delta.method == ref.delta.method
    assert got.verdict == ref.verdict


def test_doubling_every_latency_doubles_every_quantile_exactly(two):
    # The HDR layout maps [lo, hi] to [2 lo, 2 hi + 1]: the ratio of the bins' midpoints is
    # not exactly 2, but the rank of every order statistic is kept.
    a, _ = two
    ca = condition("a", a)
    cb = condition("b", [2 * s for s in a])
    for q in (0.5, 0.99):
        iv, test = cluster_bootstrap_quantile_change(
            ca.histograms, cb.histograms, q, rng=np.random.default_rng(1), n_boot=500
        )
        expected = cb.histograms.pooled_quantile_ms(q) / ca.histograms.pooled_quantile_ms(q) - 1
        assert iv.estimate == pytest.approx(100 * expected, rel=1e-12)
        assert iv.estimate == pytest.approx(100.0, abs=0.5)
        # Paired resamples would give exactly 2; independent ones scatter around it.
        assert iv.low < iv.estimate < iv.high
        assert test.p_value < 1e-6


def test_the_transaction_level_quantile_verdict_and_its_reproducibility(two):
    a, b = two
    ca, cb = condition("a", a), condition("b", b)
    r1 = compare_statistic([ca, cb], stat="p99", level="transaction", seed=4)
    r2 = compare_statistic([cb, ca], stat="p99", level="transaction", seed=4, baseline="a")
    p1, p2 = r1.comparisons[0], r2.comparisons[0]
    assert p1.to_dict() == p2.to_dict()  # condition order changes nothing
    assert r1.level == "transaction" and r1.omnibus is None
    assert p1.verdict == "slower" and p1.delta.low > 2.0
    assert p1.test.test.startswith("cluster bootstrap of the 0.99 quantile")
    ratio = cb.histograms.pooled_quantile_ms(0.99) / ca.histograms.pooled_quantile_ms(0.99)
    assert p1.delta.estimate == pytest.approx(100 * (ratio - 1), rel=1e-12)
    doc = r1.to_dict()
    assert doc["stat"] == "p99" and doc["txn"] is None
    assert doc["conditions"][1]["stat_value"] == pytest.approx(
        cb.histograms.pooled_quantile_ms(0.99)
    )


def test_the_document_without_a_statistic_has_no_new_keys(two):
    a, b = two
    raw = [Observations(n, s[0] / 1e6, np.zeros(s[0].size)) for n, s in (("a", a), ("b", b))]
    doc = compare(raw).to_dict()
    assert "stat" not in doc and "txn" not in doc
    assert all("stat_value" not in c for c in doc["conditions"])


def test_too_few_samples_is_inconclusive_at_the_transaction_level():
    rng = np.random.default_rng(2)
    ca, cb = condition("a", latencies(rng, 2)), condition("b", latencies(rng, 2, scale=3))
    pair = compare_statistic([ca, cb], stat="p99", level="transaction").comparisons[0]
    assert pair.verdict == "inconclusive" and "too few samples" in pair.note
    assert math.isfinite(pair.delta.estimate)


def test_a_condition_without_any_transaction_of_the_type_has_no_quantile():
    empty = np.zeros(0, dtype=np.int64)
    c = condition("a", [empty, empty])
    assert np.isnan(c.histograms.quantiles_ms(0.99)).all()
    assert sample_values(c, "p99")[1].size == 0
    assert pooled_value(c, "p99") is None and pooled_value(c, "mean") is None
    with pytest.raises(AnalysisError, match="no sample with a p99"):
        compare_statistic([c, c], stat="p99")


def test_one_value_per_sample_judges_as_the_raw_sample_level_does(two):
    # The per-sample values enter compare as one observation per sample; the raw transactions
    # enter with their sample index and compare takes each sample's mean itself. The pairwise
    # judgement must be the same.
    a, b = two
    got = compare_statistic([condition("a", a), condition("b", b)], stat="mean", seed=2)
    raw = [
        Observations(
            name, np.concatenate(s) / 1e6, np.repeat(np.arange(len(s)), [x.size for x in s])
        )
        for name, s in (("a", a), ("b", b))
    ]
    ref = compare(raw, seed=2)
    g, r = got.comparisons[0], ref.comparisons[0]
    assert (g.test.test, g.verdict) == (r.test.test, r.verdict)
    assert g.test.p_value == pytest.approx(r.test.p_value, rel=1e-9)
    for gi, ri in (
        (g.delta, r.delta),
        (g.median_delta, r.median_delta),
        (g.hodges_lehmann, r.hodges_lehmann),
    ):
        assert (gi.estimate, gi.low, gi.high) == pytest.approx(
            (ri.estimate, ri.low, ri.high), rel=1e-9
        )
    assert g.cliffs_delta == r.cliffs_delta
    assert got.conditions[0].mean == pytest.approx(ref.conditions[0].mean, rel=1e-12)
    assert got.conditions[0].clt.mean_ci95.low == pytest.approx(ref.conditions[0].clt.mean_ci95.low)
