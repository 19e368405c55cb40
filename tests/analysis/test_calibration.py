"""Calibration by simulation: A-vs-A data must not be called faster or slower more often than
alpha, at either level, although transactions are autocorrelated and samples differ; the naive
test that treats transactions as independent fails on the same data; real changes are found."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from wannabet.analysis import compare

from .simulate import SHAPES, simulate

ALPHA = 0.05
N_DATASETS = 300


def upper(rate: float, n: int) -> float:
    # one-sided binomial tolerance: 3 standard errors (about 1 in 700 by chance)
    return rate + 3 * math.sqrt(rate * (1 - rate) / n)


@pytest.fixture(scope="module")
def a_vs_a():
    rng = np.random.default_rng(20240917)
    rows = []
    for i in range(N_DATASETS):
        kw = dict(shape=SHAPES[i % 3], ragged=(i // 3) % 2 == 1)
        a = simulate(rng, "A", **kw)
        b = simulate(rng, "B", **kw)
        row = {"naive": stats.ttest_ind(b.values, a.values, equal_var=False).pvalue < ALPHA}
        for level in ("sample", "transaction"):
            c = compare([a, b], level=level, rope_pct=0.0, n_boot=400, seed=i).comparisons[0]
            row[level] = (
                c.test.p_value < ALPHA,
                c.verdict in ("faster", "slower"),
                c.delta.low <= 0.0 <= c.delta.high,
            )
        rows.append(row)
    return rows


@pytest.mark.parametrize("level", ["sample", "transaction"])
def test_false_positive_rate_stays_at_alpha(a_vs_a, level):
    n = len(a_vs_a)
    p_rate = sum(r[level][0] for r in a_vs_a) / n
    verdict_rate = sum(r[level][1] for r in a_vs_a) / n
    print(f"{level}: p<alpha {p_rate:.3f}, faster/slower {verdict_rate:.3f}")
    assert p_rate <= upper(ALPHA, n)
    # with rope_pct = 0 a verdict needs p < alpha and an interval excluding 0
    assert verdict_rate <= upper(ALPHA, n)
    # ... and the test is not trivially conservative
    assert p_rate >= ALPHA - 3 * math.sqrt(ALPHA * (1 - ALPHA) / n)


@pytest.mark.parametrize("level", ["sample", "transaction"])
def test_interval_of_the_change_covers_zero_at_nominal_rate(a_vs_a, level):
    n = len(a_vs_a)
    coverage = sum(r[level][2] for r in a_vs_a) / n
    print(f"{level}: coverage {coverage:.3f}")
    assert coverage >= 1 - upper(ALPHA, n)


def test_naive_transaction_test_fails_on_the_same_data(a_vs_a):
    rate = sum(r["naive"] for r in a_vs_a) / len(a_vs_a)
    print(f"naive iid Welch on transactions: {rate:.3f}")
    assert rate > 4 * ALPHA


def test_holm_keeps_the_family_wise_rate_with_three_conditions():
    rng = np.random.default_rng(77)
    n = 150
    hits = 0
    for i in range(n):
        shape = SHAPES[i % 3]
        groups = [simulate(rng, lbl, shape=shape, per_sample=100) for lbl in "ABC"]
        res = compare(groups, rope_pct=0.0, n_boot=200, seed=i)
        hits += any(c.verdict in ("faster", "slower") for c in res.comparisons)
    print(f"three conditions: family-wise faster/slower rate {hits / n:.3f}")
    assert hits / n <= upper(ALPHA, n)


@pytest.mark.parametrize("level", ["sample", "transaction"])
def test_a_true_ten_percent_change_is_found(level):
    rng = np.random.default_rng(31337)
    n = 45
    found = 0
    for i in range(n):
        kw = dict(shape=SHAPES[i % 3], n_samples=30, per_sample=400, ragged=i % 2 == 1)
        a = simulate(rng, "A", **kw)
        b = simulate(rng, "B", shift=1.10, **kw)
        c = compare([a, b], level=level, n_boot=400, seed=i).comparisons[0]
        found += c.verdict == "slower"
        assert c.verdict != "faster"
    print(f"{level}: power for +10% = {found / n:.3f}")
    assert found / n >= 0.9
