"""The analysis's own distribution functions, rank tests and normality tests against SciPy.

`compare` does not import scipy.stats or scipy.special (about a second and a quarter of one of
start-up): the distribution functions come from the engine (statrs, libm), the rank and
normality tests are written out in wannabet.analysis. Every one of them is checked here against
the SciPy function it replaces, over seeded grids that cover small and large samples, ties,
heavy tails and the limits (infinite degrees of freedom, p at 0 and 1).
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from wannabet.analysis import distributions as dist
from wannabet.analysis.bayes import hdi
from wannabet.analysis.normality_tests import dagostino_pearson, shapiro_wilk
from wannabet.analysis.tests import (
    average_ranks,
    kendall_trend,
    kruskal_wallis,
    mann_whitney_u,
)
from wannabet.testing.ci import require_module


def _rel(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    return np.abs(got - ref) / np.maximum(np.abs(ref), 1e-300)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261127)


def test_t_f_chi2_and_normal_tails_match_scipy(rng: np.random.Generator) -> None:
    n = 20_000
    df = np.exp(rng.uniform(np.log(0.5), np.log(1e5), n))
    df2 = np.exp(rng.uniform(np.log(0.5), np.log(1e5), n))
    x = rng.normal(size=n) * rng.choice([0.1, 1, 3, 10, 40], n)
    # Relative error: statrs's incomplete beta is good to ~1e-10 in the bulk, a little less in
    # the far tails (below 1e-250 both are at the edge of underflow); p-values are shown to 3
    # digits and compared with alpha.
    tail = stats.t.sf(x, df)
    keep = tail > 1e-250
    assert np.quantile(_rel(dist.t_sf(x, df), tail)[keep], 0.999) < 1e-8
    assert _rel(dist.t_sf(x, df), tail)[keep].max() < 1e-6
    xf = np.exp(rng.normal(0, 2, n))
    ref = stats.f.sf(xf, df, df2)
    keep = ref > 1e-250
    assert _rel(dist.f_sf(xf, df, df2), ref)[keep].max() < 1e-7
    xc = np.exp(rng.normal(1, 1.5, n)) * np.sqrt(df)
    ref = stats.chi2.sf(xc, df)
    keep = ref > 1e-250
    assert _rel(dist.chi2_sf(xc, df), ref)[keep].max() < 1e-9
    xn = rng.normal(size=n) * 10
    assert _rel(dist.norm_sf(xn), stats.norm.sf(xn)).max() < 1e-12
    assert _rel(dist.norm_cdf(xn), stats.norm.cdf(xn)).max() < 1e-12


def test_quantiles_match_scipy_into_the_tails(rng: np.random.Generator) -> None:
    n = 20_000
    df = np.exp(rng.uniform(np.log(1.0), np.log(1e5), n))
    p = np.concatenate([rng.uniform(size=n // 2), rng.uniform(size=n // 2) ** 8])
    q = np.where(rng.uniform(size=n) < 0.5, p, 1 - p)
    q = q[(q > 1e-12) & (q < 1 - 1e-12)]
    df = df[: q.size]
    ref = stats.t.ppf(q, df)
    far = np.abs(ref) > 0.01  # near 0 the relative error is that of sf, divided by the density
    assert _rel(dist.t_ppf(q, df), ref)[far].max() < 1e-8
    assert np.abs(dist.t_ppf(q, df) - ref).max() < 1e-9 * np.abs(ref).max()
    assert _rel(dist.norm_ppf(q), stats.norm.ppf(q))[np.abs(q - 0.5) > 1e-6].max() < 1e-12
    # Heavy tails of small df, where a plain Newton step diverges.
    qs = np.array([1e-15, 1e-9, 0.001, 0.025, 0.975, 0.999999])
    for d in (0.6, 1.0, 1.5, 3.0):
        assert _rel(dist.t_ppf(qs, d), stats.t.ppf(qs, d)).max() < 1e-8, d


def test_limits_and_invalid_parameters() -> None:
    inf, nan = math.inf, math.nan
    assert dist.t_sf(1.3, inf) == pytest.approx(stats.norm.sf(1.3), rel=1e-14)
    assert dist.t_ppf(0.975, inf) == pytest.approx(stats.norm.ppf(0.975), rel=1e-14)
    # F with infinite denominator df: chi2(dfn)/dfn, where SciPy gives NaN.
    assert dist.f_sf(2.5, 3, inf) == pytest.approx(stats.chi2.sf(7.5, 3), rel=1e-12)
    # Past 1e7 df the limits stand in (statrs's incomplete beta degrades, then stalls): their
    # error falls as 1 / df.
    for d in (9e6, 2e7, 1e9, 1e12):
        for x in (0.5, 2.5, 6.0):
            assert dist.f_sf(x, 3, d) == pytest.approx(stats.f.sf(x, 3, d), rel=1e-5)
            assert dist.t_sf(x, d) == pytest.approx(stats.t.sf(x, d), rel=1e-4)
        assert dist.t_ppf(0.975, d) == pytest.approx(stats.t.ppf(0.975, d), rel=1e-6)
    assert dist.t_ppf(0.0, 4) == -inf and dist.t_ppf(1.0, 4) == inf and dist.t_ppf(0.5, 4) == 0
    assert dist.t_sf(inf, 4) == 0 and dist.t_sf(-inf, 4) == 1
    assert dist.f_sf(0.0, 2, 5) == 1 and dist.chi2_sf(-1.0, 2) == 1
    for value in (dist.t_sf(1.0, 0), dist.t_ppf(1.5, 3), dist.f_sf(1, -1, 3), dist.t_sf(nan, 3)):
        assert math.isnan(value)
    # Shapes follow NumPy broadcasting; scalars give floats.
    out = dist.t_sf(np.zeros((2, 3)), np.array([1.0, 2.0, 3.0]))
    assert out.shape == (2, 3) and np.all(out == 0.5)
    assert isinstance(dist.norm_ppf(0.5), float)


def test_average_ranks_match_rankdata(rng: np.random.Generator) -> None:
    for size in (1, 2, 10, 1000):
        x = np.round(rng.normal(size=size), 1)
        ranks, ties = average_ranks(x)
        assert np.array_equal(ranks, stats.rankdata(x))
        assert ties.sum() == size and np.array_equal(
            np.sort(ties), np.sort(np.unique(x, return_counts=True)[1])
        )


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_mann_whitney_matches_scipy(rng: np.random.Generator, alternative: str) -> None:
    for n1 in (1, 3, 8, 12, 40):
        for n2 in (2, 5, 9, 35, 70):
            for tied in (False, True):
                x = rng.normal(size=n1)
                y = rng.normal(0.4, size=n2)
                if tied:
                    x, y = np.round(x), np.round(y)
                methods = ("asymptotic",) if tied else ("exact", "asymptotic")
                for method in methods:
                    u, p = mann_whitney_u(x, y, alternative=alternative, method=method)
                    ref = stats.mannwhitneyu(x, y, alternative=alternative, method=method)
                    assert u == ref.statistic
                    assert p == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-15), (n1, n2, method)
    # Every value tied: U at its only value, p = 1 (SciPy: 1 for these).
    u, p = mann_whitney_u(np.ones(3), np.ones(4), method="asymptotic")
    assert (u, p) == (6.0, 1.0)


def test_kendall_trend_matches_scipy(rng: np.random.Generator) -> None:
    for n in (2, 3, 5, 12, 33, 34, 60, 400):
        for tied in (False, True):
            for slope in (0.0, 0.05, 2.0):
                y = rng.normal(size=n) + slope * np.arange(n) / max(n, 1) * 3
                if tied:
                    y = np.round(y)
                tau, p = kendall_trend(y)
                ref = stats.kendalltau(np.arange(n), y)
                if math.isnan(ref.statistic):
                    assert math.isnan(tau) and math.isnan(p)
                    continue
                assert tau == pytest.approx(ref.statistic, abs=1e-12)
                assert p == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300), (n, tied, slope)
    # Large n with at most one pair out of order: exact, as SciPy, where the normal is poor.
    for n in (40, 200):
        y = np.arange(float(n))
        y[3], y[4] = y[4], y[3]
        assert kendall_trend(y)[1] == pytest.approx(stats.kendalltau(np.arange(n), y).pvalue)


def test_kruskal_wallis_matches_scipy(rng: np.random.Generator) -> None:
    for k in (2, 3, 6):
        for tied in (False, True):
            groups = [rng.normal(0.3 * i, size=int(rng.integers(1, 30))) for i in range(k)]
            if tied:
                groups = [np.round(g) for g in groups]
            r = kruskal_wallis(groups)
            ref = stats.kruskal(*groups)
            assert r.statistic == pytest.approx(ref.statistic, rel=1e-12)
            assert r.p_value == pytest.approx(ref.pvalue, rel=1e-9)


def _sample(rng: np.random.Generator, kind: str, n: int) -> np.ndarray:
    if kind == "normal":
        return rng.normal(size=n)
    if kind == "exponential":
        return rng.exponential(size=n)
    if kind == "rounded":
        return np.round(rng.normal(size=n) * 3)
    return rng.uniform(size=n) * 1e6 + 1e9  # a large offset: precision of W near 1


def test_shapiro_wilk_matches_scipy(rng: np.random.Generator) -> None:
    sizes = [*range(3, 40), 50, 100, 500, 2000, 5000]
    for n in sizes:
        for kind in ("normal", "exponential", "rounded", "offset"):
            x = _sample(rng, kind, n)
            if np.ptp(x) == 0:
                continue
            w, p = shapiro_wilk(x)
            ref = stats.shapiro(x)
            assert w == pytest.approx(ref.statistic, abs=1e-8), (n, kind)
            # SciPy's AS R94 takes its normal quantiles from a 7-digit approximation (ppnd7);
            # these come from the exact quantile, so p agrees to about 1e-6.
            assert p == pytest.approx(ref.pvalue, abs=2e-6), (n, kind)
    # n = 3 has an exact distribution; a straight line there has W = 1 and p = 1.
    assert shapiro_wilk(np.array([1.0, 2.0, 3.0])) == pytest.approx((1.0, 1.0))


def test_dagostino_pearson_matches_scipy(rng: np.random.Generator) -> None:
    for n in (8, 20, 100, 5001, 50_000):
        for x in (rng.normal(size=n), rng.exponential(size=n), rng.standard_t(3, size=n)):
            k2, p = dagostino_pearson(x)
            ref = stats.normaltest(x)
            assert k2 == pytest.approx(ref.statistic, rel=1e-10)
            assert p == pytest.approx(ref.pvalue, rel=1e-8, abs=1e-300)


def test_hdi_is_the_arviz_interval(rng: np.random.Generator) -> None:
    arviz = require_module("arviz_stats.base", "bayes").array_stats
    for draws in (rng.normal(size=20_000), rng.lognormal(0, 1, 4001), rng.exponential(size=17)):
        for prob in (0.5, 0.89, 0.95):
            assert hdi(draws, prob) == tuple(np.asarray(arviz.hdi(draws, prob)).tolist())


def test_compare_path_imports_no_scipy() -> None:
    # The import cost this module exists to avoid: the analysis modules `compare` loads.
    code = (
        "import sys\n"
        "import wannabet.verdicts, wannabet.render.compare\n"
        "sys.stdout.write(','.join(m for m in sys.modules if m.startswith('scipy')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout == ""
