"""Reference values: every statistic agrees with SciPy, a brute-force computation, or a hand
calculation on seeded data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from wannabet.analysis import (
    Clustered,
    autocorrelation,
    batch_means,
    cliffs_delta,
    cluster_mean,
    cluster_welch_t,
    describe,
    effective_sample_size,
    hodges_lehmann,
    holm,
    kruskal_wallis,
    lag1_autocorrelation,
    mann_whitney,
    mean_interval,
    min_mann_whitney_p,
    modified_z_scores,
    normality,
    one_way_anova,
    prediction_interval,
    skewness,
    u_null_distribution,
    welch_anova,
    welch_t,
)
from wannabet.analysis.effects import _median_edges, _resampled_medians

RNG_SEED = 20240601


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(RNG_SEED)


# --- descriptive ------------------------------------------------------------------------------


def test_describe_matches_numpy_and_scipy(rng):
    x = rng.lognormal(2.0, 0.4, size=1001)
    d = describe(x)
    assert d.n == 1001
    assert d.mean == pytest.approx(np.mean(x), rel=1e-12)
    assert d.sd == pytest.approx(np.std(x, ddof=1), rel=1e-12)
    assert d.median == pytest.approx(np.median(x), rel=1e-12)
    assert d.mad == pytest.approx(stats.median_abs_deviation(x), rel=1e-12)
    assert d.robust_cv == pytest.approx(
        stats.median_abs_deviation(x, scale="normal") / np.median(x), rel=1e-6
    )
    assert d.cv == pytest.approx(np.std(x, ddof=1) / np.mean(x), rel=1e-12)
    for q, got in [(5, d.p5), (25, d.p25), (50, d.p50), (75, d.p75), (95, d.p95), (99, d.p99)]:
        assert got == pytest.approx(np.percentile(x, q), rel=1e-12)
    assert (d.min, d.max) == (x.min(), x.max())
    assert d.skewness == pytest.approx(stats.skew(x), rel=1e-9)


def test_skewness_matches_scipy_and_is_none_without_variance(rng):
    x = rng.gamma(2.0, size=77)
    assert skewness(x) == pytest.approx(stats.skew(x), rel=1e-10)
    assert skewness(np.full(10, 3.25)) is None
    assert skewness(np.array([1.0, 2.0])) is None


def test_normality_uses_shapiro_up_to_5000_then_dagostino(rng):
    small = rng.normal(size=200)
    r = normality(small)
    ref = stats.shapiro(small)
    assert r.test == "shapiro-wilk"
    # SciPy's AS R94 uses a 7-digit normal quantile (ppnd7); ours the exact one
    # (tests/analysis/test_distributions.py covers every size).
    assert r.p == pytest.approx(ref.pvalue, abs=2e-6)
    assert r.statistic == pytest.approx(ref.statistic, abs=1e-8)
    big = rng.exponential(size=6000)
    r = normality(big)
    assert r.test == "dagostino-pearson"
    assert r.p == pytest.approx(stats.normaltest(big).pvalue, rel=1e-9)
    assert not r.is_normal(0.05)


def test_normality_not_applicable_cases():
    assert normality(np.array([1.0, 2.0])).test == "none"
    z = normality(np.full(30, 7.0))
    assert z.test == "none" and z.p is None and z.reason == "zero variance"
    assert not z.is_normal(0.05)


# --- CLT intervals ----------------------------------------------------------------------------


def test_mean_interval_is_t_below_30_and_z_from_30(rng):
    x = rng.normal(10, 2, size=12)
    iv = mean_interval(x)
    lo, hi = stats.t.interval(0.95, 11, loc=x.mean(), scale=stats.sem(x))
    assert iv.method == "t (11 df)"
    assert (iv.low, iv.high) == pytest.approx((lo, hi), rel=1e-12)
    y = rng.normal(10, 2, size=30)
    iv = mean_interval(y)
    lo, hi = stats.norm.interval(0.95, loc=y.mean(), scale=stats.sem(y))
    assert iv.method == "z"
    assert (iv.low, iv.high) == pytest.approx((lo, hi), rel=1e-12)


def test_prediction_interval_formula(rng):
    x = rng.normal(5, 1, size=9)
    iv = prediction_interval(x, 0.90)
    half = stats.t.ppf(0.95, 8) * x.std(ddof=1) * math.sqrt(1 + 1 / 9)
    assert (iv.low, iv.high) == pytest.approx((x.mean() - half, x.mean() + half), rel=1e-12)


def test_prediction_interval_covers_next_value_at_nominal_rate():
    # Normal data, n = 5: the 90% prediction interval must hold the next value 90% of the time
    # (the plain +/-1.645 sd range would hold it only about 80% of the time).
    rng = np.random.default_rng(7)
    x = rng.normal(size=(8000, 6))
    hits_pi = hits_sd = 0
    for row in x:
        iv = prediction_interval(row[:5], 0.90)
        hits_pi += iv.low <= row[5] <= iv.high
        m, s = row[:5].mean(), row[:5].std(ddof=1)
        hits_sd += m - 1.645 * s <= row[5] <= m + 1.645 * s
    assert hits_pi / len(x) == pytest.approx(0.90, abs=0.01)
    assert hits_sd / len(x) < 0.83


# --- tests ------------------------------------------------------------------------------------


def test_welch_matches_scipy(rng):
    a = rng.normal(10, 1, size=25)
    b = rng.normal(10.6, 2, size=31)
    r = welch_t(a, b)
    ref = stats.ttest_ind(b, a, equal_var=False)
    assert r.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    assert r.df[0] == pytest.approx(ref.df, rel=1e-12)


@pytest.mark.parametrize("n_a,n_b", [(5, 7), (12, 12), (30, 28), (50, 50)])
def test_mann_whitney_exact_matches_scipy(rng, n_a, n_b):
    a = rng.normal(0, 1, size=n_a)
    b = rng.normal(0.5, 1, size=n_b)
    r = mann_whitney(a, b)
    ref = stats.mannwhitneyu(b, a, method="exact")
    assert r.test == "mann-whitney-u (exact)"
    assert r.statistic == ref.statistic
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-10)


def test_mann_whitney_asymptotic_with_ties_or_large_n(rng):
    a = np.round(rng.normal(100, 5, size=40))
    b = np.round(rng.normal(103, 5, size=45))
    r = mann_whitney(a, b)
    ref = stats.mannwhitneyu(b, a, method="asymptotic", use_continuity=True)
    assert r.test == "mann-whitney-u (asymptotic)"
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    c = rng.normal(size=80)
    d = rng.normal(0.3, size=90)
    assert mann_whitney(c, d).test == "mann-whitney-u (asymptotic)"
    assert mann_whitney(c, d).p_value == pytest.approx(
        stats.mannwhitneyu(d, c, method="asymptotic").pvalue, rel=1e-10
    )


def test_mann_whitney_identical_values_gives_p_one():
    r = mann_whitney(np.ones(10), np.ones(12))
    assert r.p_value == 1.0


@pytest.mark.parametrize("m,n", [(1, 1), (3, 3), (4, 4), (3, 7), (9, 6), (20, 25)])
def test_u_null_distribution_matches_scipy_exact_p(m, n):
    pmf = u_null_distribution(m, n)
    assert pmf.size == m * n + 1
    assert pmf.sum() == pytest.approx(1.0)
    assert np.allclose(pmf, pmf[::-1])  # symmetric about mn/2
    cdf = np.cumsum(pmf)
    rng = np.random.default_rng(m * 100 + n)
    for _ in range(5):
        x = rng.normal(size=m)
        y = rng.normal(0.7, size=n)
        u = int(stats.mannwhitneyu(y, x).statistic)
        # two-sided exact p from our distribution: 2 * min(P(U <= u), P(U >= u))
        p = min(1.0, 2 * min(cdf[u], 1 - (cdf[u - 1] if u > 0 else 0.0)))
        assert p == pytest.approx(stats.mannwhitneyu(y, x, method="exact").pvalue, rel=1e-9)


def test_u_null_distribution_by_enumeration():
    # C(7, 3) = 35 arrangements of 3 x-ranks among 7: count U by brute force.
    from itertools import combinations

    counts = np.zeros(3 * 4 + 1)
    for xs in combinations(range(7), 3):
        ys = [r for r in range(7) if r not in xs]
        counts[sum(y > x for x in xs for y in ys)] += 1
    assert np.allclose(u_null_distribution(3, 4), counts / counts.sum())


def test_min_mann_whitney_p_needs_four_per_group():
    assert min_mann_whitney_p(3, 3) == pytest.approx(0.1)
    assert min_mann_whitney_p(4, 4) == pytest.approx(2 / 70)
    assert min_mann_whitney_p(3, 3) > 0.05 > min_mann_whitney_p(4, 4)


def test_kruskal_and_anova_match_scipy(rng):
    groups = [rng.normal(mu, 1, size=n) for mu, n in [(0, 10), (0.4, 14), (1.0, 9)]]
    kw = kruskal_wallis(groups)
    ref = stats.kruskal(*groups)
    assert kw.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert kw.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    an = one_way_anova(groups)
    ref = stats.f_oneway(*groups)
    assert an.statistic == pytest.approx(ref.statistic, rel=1e-10)
    assert an.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    assert kruskal_wallis([np.ones(3), np.ones(4)]).p_value == 1.0


def test_welch_anova_matches_scipy_and_welch_t(rng):
    groups = [rng.normal(mu, sd, size=n) for mu, sd, n in [(0, 1, 10), (0.5, 2, 14), (1, 1, 9)]]
    r = welch_anova(
        [g.mean() for g in groups],
        [g.var(ddof=1) / g.size for g in groups],
        [g.size - 1 for g in groups],
    )
    ref = stats.f_oneway(*groups, equal_var=False)
    assert r.statistic == pytest.approx(ref.statistic, rel=1e-10)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    a, b = groups[0], groups[1]
    two = welch_anova(
        [a.mean(), b.mean()],
        [a.var(ddof=1) / a.size, b.var(ddof=1) / b.size],
        [a.size - 1, b.size - 1],
    )
    t = welch_t(a, b)
    assert two.statistic == pytest.approx(t.statistic**2, rel=1e-10)
    assert two.p_value == pytest.approx(t.p_value, rel=1e-9)


def test_holm_hand_computed_example():
    # By hand, p sorted 0.01, 0.02, 0.03, 0.04 with m = 4: 4*0.01 = 0.04; 3*0.02 = 0.06;
    # 2*0.03 = 0.06; 1*0.04 = 0.04, raised to the running maximum 0.06.
    p = [0.03, 0.01, 0.04, 0.02]
    assert holm(p) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    # capping at 1 and None entries
    assert holm([0.5, None, 0.6]) == [1.0, None, 1.0]
    assert holm([0.2]) == [0.2]


def test_holm_is_order_invariant(rng):
    p = list(rng.uniform(size=7))
    p[3] = p[5]  # a tie
    adj = holm(p)
    perm = rng.permutation(7)
    adj_perm = holm([p[i] for i in perm])
    assert [adj_perm[list(perm).index(i)] for i in range(7)] == pytest.approx(adj)


# --- effects ----------------------------------------------------------------------------------


def test_hodges_lehmann_matches_brute_force(rng):
    a = rng.normal(10, 1, size=17)
    b = rng.normal(11, 1.5, size=23)
    diffs = np.array([bj - ai for ai in a for bj in b])
    hl = hodges_lehmann(a, b)
    assert hl.estimate == pytest.approx(np.median(diffs), rel=1e-12)
    assert hl.method == "mann-whitney exact"
    # the interval's ends are order statistics of the differences at the U quantile
    cdf = np.cumsum(u_null_distribution(17, 23))
    k = int(np.argmax(cdf >= 0.025))
    s = np.sort(diffs)
    assert (hl.low, hl.high) == (s[k - 1], s[diffs.size - k])


def test_hodges_lehmann_interval_coverage():
    # The distribution-free interval covers the true shift at least at its nominal rate.
    rng = np.random.default_rng(11)
    hits = 0
    trials = 1500
    for _ in range(trials):
        a = rng.exponential(size=12)
        b = rng.exponential(size=15) + 0.7
        iv = hodges_lehmann(a, b)
        hits += iv.low <= 0.7 <= iv.high
    assert hits / trials >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / trials)


def test_hodges_lehmann_tiny_samples_give_full_range():
    hl = hodges_lehmann(np.array([1.0, 2.0]), np.array([3.0, 5.0]))
    assert (hl.low, hl.high) == (1.0, 4.0)
    assert hl.level < 0.95  # the nominal level is unreachable with 2 + 2 values


def test_cliffs_delta_matches_brute_force(rng):
    a = np.round(rng.normal(10, 2, size=60))  # ties on purpose
    b = np.round(rng.normal(11, 2, size=45))
    brute = np.mean(np.sign(np.subtract.outer(b, a)))
    assert cliffs_delta(a, b) == pytest.approx(brute, abs=1e-12)
    assert cliffs_delta(a, a) == pytest.approx(0.0)
    assert cliffs_delta(np.zeros(3), np.ones(4)) == 1.0
    # relation to the U statistic
    u = stats.mannwhitneyu(b, a).statistic
    assert cliffs_delta(a, b) == pytest.approx(2 * u / (a.size * b.size) - 1)


def test_histogram_median_close_to_exact(rng):
    values = rng.lognormal(1, 0.6, size=50_000)
    codes = rng.integers(0, 25, size=values.size)
    c = Clustered.from_codes(values, codes)
    edges = _median_edges(c, c)
    w = np.ones((3, 25))
    w[1, :5] = 0
    w[2] = np.bincount(rng.integers(0, 25, 25), minlength=25)
    got = _resampled_medians(w, c.histogram(edges), edges)
    for row, g in zip(w, got, strict=True):
        expanded = np.repeat(
            values[np.argsort(codes, kind="stable")], np.repeat(row, np.bincount(codes)).astype(int)
        )
        assert g == pytest.approx(np.median(expanded), rel=2e-4)


# --- dependence -------------------------------------------------------------------------------


def test_autocorrelation_matches_direct_formula(rng):
    x = rng.normal(size=300)
    acf = autocorrelation(x, 5)
    d = x - x.mean()
    ref = [np.sum(d[k:] * d[: d.size - k]) / np.sum(d * d) for k in range(6)]
    assert acf == pytest.approx(ref, abs=1e-12)


def test_lag1_pooled_within_groups_ignores_group_offsets(rng):
    phi = 0.6
    rows = []
    for _ in range(40):
        z = np.empty(500)
        z[0] = rng.normal()
        for t in range(1, 500):
            z[t] = phi * z[t - 1] + rng.normal() * math.sqrt(1 - phi**2)
        rows.append(z + rng.normal(0, 5))  # large offsets between groups
    x = np.concatenate(rows)
    codes = np.repeat(np.arange(40), 500)
    assert lag1_autocorrelation(x, codes) == pytest.approx(phi, abs=0.03)
    assert lag1_autocorrelation(x) > 0.9  # ignoring the groups confuses offsets with memory


def test_effective_sample_size_of_ar1_series():
    # For AR(1) the integrated autocorrelation time is (1 + phi) / (1 - phi).
    rng = np.random.default_rng(3)
    phi, n = 0.5, 20000
    e = rng.normal(size=n)
    x = np.empty(n)
    x[0] = e[0]
    for t in range(1, n):
        x[t] = phi * x[t - 1] + e[t]
    assert effective_sample_size(x) == pytest.approx(n * (1 - phi) / (1 + phi), rel=0.15)
    iid = rng.normal(size=n)
    assert effective_sample_size(iid) == pytest.approx(n, rel=0.1)
    assert effective_sample_size(np.ones(10)) is None


def test_cluster_mean_equals_mean_of_means_for_equal_sizes(rng):
    x = rng.normal(size=(12, 50))
    cm = cluster_mean(x.sum(axis=1), np.full(12, 50.0), var_values=x.var(ddof=1))
    means = x.mean(axis=1)
    assert cm.mean == pytest.approx(means.mean())
    assert cm.se == pytest.approx(stats.sem(means), rel=1e-12)
    assert cm.df == 11
    assert cm.ess == pytest.approx(x.var(ddof=1) / stats.sem(means) ** 2)


def test_cluster_welch_equals_welch_on_sample_means_for_equal_sizes(rng):
    a = rng.normal(10, 1, size=(15, 40))
    b = rng.normal(10.3, 1, size=(18, 40))
    ca = cluster_mean(a.sum(axis=1), np.full(15, 40.0))
    cb = cluster_mean(b.sum(axis=1), np.full(18, 40.0))
    r = cluster_welch_t(ca, cb)
    ref = stats.ttest_ind(b.mean(axis=1), a.mean(axis=1), equal_var=False)
    assert r.statistic == pytest.approx(ref.statistic, rel=1e-10)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def test_batch_means_se_accounts_for_autocorrelation():
    rng = np.random.default_rng(5)
    phi, n = 0.9, 90_000
    e = rng.normal(size=n) * math.sqrt(1 - phi**2)
    from scipy.signal import lfilter

    x = lfilter([1.0], [1.0, -phi], e)
    bm = batch_means(x)
    true_se = math.sqrt((1 + phi) / (1 - phi) / n)  # long-run variance / n
    naive_se = x.std(ddof=1) / math.sqrt(n)
    assert bm.n_clusters == 30
    assert bm.se == pytest.approx(true_se, rel=0.4)
    assert bm.se > 3 * naive_se


def test_modified_z_scores_formula():
    x = np.array([1.0, 2.0, 3.0, 4.0, 100.0])
    med, mad = 3.0, 1.0
    assert modified_z_scores(x) == pytest.approx(0.6745 * (x - med) / mad)
    # MAD = 0: mean absolute deviation takes over
    y = np.array([5.0, 5.0, 5.0, 5.0, 9.0])
    assert modified_z_scores(y)[-1] == pytest.approx(4 / (1.253314 * 0.8))
