"""Calibration of the verdicts on a quantile (``compare --stat p99 | median``), by simulation.

Each dataset has conditions of 30 samples. A sample's latencies are log-normal with a heavy
tail: 97% from a body (median 1 ms, log-sd 0.5) and 3% slow ones (4 times slower, log-sd 0.6),
every latency of a sample scaled by the sample's own random effect (log-sd 0.05: run-to-run
variation), 1,000 to 3,000 transactions per sample. Each sample becomes a histogram through
``histogram.from_values``, as the engine records it.

* A vs A: two conditions of the same distribution must be called faster or slower at most at
  the nominal alpha (ROPE 0, so the verdict is the test and the interval alone), at both
  levels, for the p99 and the median.
* A true +15% change of the p99, made by slowing the slow transactions only (the median does
  not move), must be found ("slower", default ROPE) in at least 80% of datasets at both levels,
  and the median must not be called slower more often than alpha.
* A +15% change of every latency must be found by the median too.

docs/statistics.md quotes the figures this prints (run with ``-s``).
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest
from scipy import optimize, stats

from wannabet.analysis import histogram
from wannabet.analysis.statistic import ConditionSamples, SampleHistograms, compare_statistic

pytestmark = pytest.mark.slow

ALPHA = 0.05
N_DATASETS = 200
N_SAMPLES = 30
N_BOOT = 400
SLOW_SHARE, SLOW_FACTOR = 0.03, 4.0
BODY_SD, SLOW_SD, SAMPLE_SD = 0.5, 0.6, 0.05


def upper(rate: float, n: int) -> float:
    """One-sided binomial tolerance of an observed rate: 3 standard errors above ``rate``."""
    return rate + 3 * math.sqrt(rate * (1 - rate) / n)


def mixture_quantile(q: float, tail: float = 1.0) -> float:
    """The q quantile (ms) of the latency mixture without sample effects; ``tail`` scales the
    slow transactions."""

    def cdf(x: float) -> float:
        body = stats.norm.cdf(math.log(x) / BODY_SD)
        slow = stats.norm.cdf((math.log(x) - math.log(SLOW_FACTOR * tail)) / SLOW_SD)
        return float((1 - SLOW_SHARE) * body + SLOW_SHARE * slow)

    return float(optimize.brentq(lambda x: cdf(x) - q, 1e-3, 1e3, xtol=1e-12))


@cache
def tail_factor_for_p99(change: float = 1.15) -> float:
    """How much slower the slow transactions must be for the p99 to change by ``change``."""
    target = change * mixture_quantile(0.99)
    return float(optimize.brentq(lambda t: mixture_quantile(0.99, t) - target, 1.0, 3.0))


def condition(
    rng: np.random.Generator, label: str, *, scale: float = 1.0, tail: float = 1.0
) -> ConditionSamples:
    counts = rng.integers(1000, 3001, size=N_SAMPLES)
    width = int(counts.max())
    effect = rng.normal(0.0, SAMPLE_SD, (N_SAMPLES, 1))
    slow = rng.random((N_SAMPLES, width)) < SLOW_SHARE
    log_ms = np.where(
        slow,
        math.log(SLOW_FACTOR * tail) + SLOW_SD * rng.standard_normal((N_SAMPLES, width)),
        BODY_SD * rng.standard_normal((N_SAMPLES, width)),
    )
    ms = scale * np.exp(effect + log_ms)
    hists = []
    sums, sumsq = np.empty(N_SAMPLES), np.empty(N_SAMPLES)
    for i, n in enumerate(counts):
        row = ms[i, :n]
        hists.append(histogram.from_values(np.round(row * 1e6).astype(np.int64)))
        sums[i], sumsq[i] = row.sum(), (row * row).sum()
    return ConditionSamples(
        label,
        np.arange(N_SAMPLES),
        counts,
        sums,
        sumsq,
        SampleHistograms.from_histograms(hists),
        np.full(N_SAMPLES, 10.0),
    )


def judge(a, b, stat, level, *, rope_pct, seed):
    c = compare_statistic(
        [a, b], stat=stat, level=level, rope_pct=rope_pct, n_boot=N_BOOT, seed=seed
    ).comparisons[0]
    return c.test.p_value is not None and c.test.p_value < ALPHA, c.verdict


LEVELS = ("sample", "transaction")


def simulate_outcomes():
    rng = np.random.default_rng(20261123)
    tail = tail_factor_for_p99()
    rows = []
    for i in range(N_DATASETS):
        a = condition(rng, "A")
        a2 = condition(rng, "A2")
        b_tail = condition(rng, "tail", tail=tail)
        b_all = condition(rng, "all", scale=1.15)
        row = {}
        for level in LEVELS:
            for stat in ("median", "p99"):
                row["aa", stat, level] = judge(a, a2, stat, level, rope_pct=0.0, seed=i)
            row["tail", "p99", level] = judge(a, b_tail, "p99", level, rope_pct=2.0, seed=i)
            row["tail", "median", level] = judge(a, b_tail, "median", level, rope_pct=2.0, seed=i)
            row["all", "median", level] = judge(a, b_all, "median", level, rope_pct=2.0, seed=i)
        rows.append(row)
    return rows


def rate(rows, key, what) -> float:
    return sum(what(r[key]) for r in rows) / len(rows)


def test_the_tail_change_moves_the_p99_by_15_percent_and_not_the_median():
    tail = tail_factor_for_p99()
    assert mixture_quantile(0.99, tail) / mixture_quantile(0.99) == pytest.approx(1.15, rel=1e-9)
    assert mixture_quantile(0.5, tail) / mixture_quantile(0.5) == pytest.approx(1.0, abs=0.002)


def test_quantile_verdicts_are_calibrated_and_find_a_15_percent_p99_change():
    # One test, so the two workers of the suite do not both simulate the same datasets.
    rows = simulate_outcomes()
    n = len(rows)
    different = ("faster", "slower")
    failures = []
    for level in LEVELS:
        for stat in ("median", "p99"):
            p_rate = rate(rows, ("aa", stat, level), lambda o: o[0])
            called = rate(rows, ("aa", stat, level), lambda o: o[1] in different)
            print(f"A-vs-A {stat} {level}: p<alpha {p_rate:.3f}, faster/slower {called:.3f}")
            if called > upper(ALPHA, n) or p_rate > upper(ALPHA, n):
                failures.append(f"A-vs-A {stat} {level}: {p_rate:.3f} / {called:.3f}")
        found = rate(rows, ("tail", "p99", level), lambda o: o[1] == "slower")
        wrong = rate(rows, ("tail", "p99", level), lambda o: o[1] == "faster")
        print(f"+15% p99 (tail only), p99 {level}: slower {found:.3f}, faster {wrong:.3f}")
        if found < 0.80 or wrong > 0:
            failures.append(f"+15% p99, p99 {level}: slower {found:.3f}, faster {wrong:.3f}")
        called = rate(rows, ("tail", "median", level), lambda o: o[1] in different)
        print(f"+15% p99 (tail only), median {level}: faster/slower {called:.3f}")
        if called > upper(ALPHA, n):
            failures.append(f"+15% p99, median {level}: called different {called:.3f}")
        found = rate(rows, ("all", "median", level), lambda o: o[1] == "slower")
        print(f"+15% everything, median {level}: slower {found:.3f}")
        if found < 0.80:
            failures.append(f"+15% everything, median {level}: slower {found:.3f}")
    assert not failures, f"tolerance {upper(ALPHA, n):.3f} for n={n}: " + "; ".join(failures)
