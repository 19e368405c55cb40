"""Hypothesis tests: is the difference between conditions larger than chance?

The tests take independent observations. At the sample level those are the sample means; at
the transaction level the samples are clusters and the tests work from per-cluster sums and
counts (see :mod:`wannabet.analysis.dependence`), never from transactions treated as
independent.

Degenerate inputs (a single value, zero variance everywhere) return ``p = 1.0`` or ``None``
rather than NaN, so that a verdict can always be formed and explained.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .dependence import ClusterMean
from .distributions import chi2_sf, f_sf, norm_sf, t_sf

__all__ = [
    "MWU_EXACT_MAX_N",
    "TestResult",
    "average_ranks",
    "cluster_welch_anova",
    "cluster_welch_t",
    "holm",
    "kendall_trend",
    "kruskal_wallis",
    "mann_whitney",
    "mann_whitney_u",
    "min_mann_whitney_p",
    "one_way_anova",
    "p_rounded",
    "p_text",
    "two_sample_test",
    "u_null_distribution",
    "welch_anova",
    "welch_t",
    "welch_t_from_moments",
]

#: The exact Mann-Whitney null distribution is used when there are no ties and neither group
#: is larger than this; above it the normal approximation is accurate to well below 0.001
#: in p and the exact computation gets slow.
MWU_EXACT_MAX_N = 50


@dataclass(frozen=True, slots=True)
class TestResult:
    """Outcome of a hypothesis test.

    ``test`` names the test and its variant (``"mann-whitney-u (exact)"``). ``p_value`` is
    two-sided; None when the test could not be computed (explained in ``note``). ``df`` holds
    the degrees of freedom where the reference distribution has them (F tests: numerator,
    denominator).
    """

    __test__ = False  # keep pytest from collecting this class

    test: str
    statistic: float | None
    p_value: float | None
    df: tuple[float, ...] | None = None
    note: str | None = None


def _all_identical(*groups: np.ndarray) -> bool:
    first = groups[0][0]
    return all(bool(np.all(g == first)) for g in groups)


def welch_t_from_moments(
    mean_a: float, var_mean_a: float, df_a: float, mean_b: float, var_mean_b: float, df_b: float
) -> TestResult:
    """Welch's t test from two means, the variances of those means and their df.

    ``t = (mean_b - mean_a) / sqrt(v_a + v_b)`` with Welch-Satterthwaite degrees of freedom
    ``(v_a + v_b)**2 / (v_a**2/df_a + v_b**2/df_b)``. Used directly for sample means
    (``v = s**2 / n``, ``df = n - 1``) and for cluster-robust means (``v = se**2``,
    ``df = clusters - 1``).

    References
    ----------
    Welch, B. L. (1947). The generalization of "Student's" problem when several different
    population variances are involved. Biometrika 34(1/2), 28-35.
    Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance
    components. Biometrics Bulletin 2(6), 110-114.
    """
    v = var_mean_a + var_mean_b
    diff = mean_b - mean_a
    if not (v > 0) or df_a <= 0 or df_b <= 0:
        if diff == 0:
            return TestResult("welch-t", 0.0, 1.0, None, "no variance and no difference")
        return TestResult("welch-t", None, None, None, "no variance within the groups")
    t = diff / math.sqrt(v)
    df = v * v / (var_mean_a**2 / df_a + var_mean_b**2 / df_b)
    p = float(2 * t_sf(abs(t), df))
    return TestResult("welch-t", float(t), min(1.0, p), (float(df),))


def welch_t(a: np.ndarray, b: np.ndarray) -> TestResult:
    """Welch's unequal-variance t test of ``mean(b) == mean(a)``.

    Parameters
    ----------
    a, b : numpy.ndarray
        Independent observations (baseline, condition), at least 2 each.

    Returns
    -------
    TestResult
        ``statistic`` is t for ``b - a``; agrees with ``scipy.stats.ttest_ind(b, a,
        equal_var=False)``.

    References
    ----------
    Welch, B. L. (1947). The generalization of "Student's" problem when several different
    population variances are involved. Biometrika 34(1/2), 28-35.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.size < 2 or b.size < 2:
        return TestResult("welch-t", None, None, None, "needs at least 2 values per group")
    return welch_t_from_moments(
        float(a.mean()),
        float(a.var(ddof=1)) / a.size,
        a.size - 1,
        float(b.mean()),
        float(b.var(ddof=1)) / b.size,
        b.size - 1,
    )


def cluster_welch_t(a: ClusterMean, b: ClusterMean) -> TestResult:
    """Welch's t on two cluster-robust means (samples as clusters).

    Parameters
    ----------
    a, b : ClusterMean
        From :func:`wannabet.analysis.dependence.cluster_mean`.

    Returns
    -------
    TestResult
        With equal cluster sizes this equals Welch's t on the cluster (sample) means.

    References
    ----------
    Welch, B. L. (1947). Biometrika 34(1/2), 28-35.
    Cameron, A. C. & Miller, D. L. (2015). A practitioner's guide to cluster-robust inference.
    Journal of Human Resources 50(2), 317-372, section VI (few clusters: t with G-1 df).
    """
    if a.n_clusters < 2 or b.n_clusters < 2:
        return TestResult(
            "cluster welch-t", None, None, None, "needs at least 2 samples per condition"
        )
    r = welch_t_from_moments(a.mean, a.se**2, a.df, b.mean, b.se**2, b.df)
    return TestResult("cluster welch-t", r.statistic, r.p_value, r.df, r.note)


def u_null_distribution(m: int, n: int) -> np.ndarray:
    """Exact null distribution of the Mann-Whitney U statistic without ties.

    The number of arrangements with ``U = u`` is the coefficient of ``q**u`` in the Gaussian
    binomial coefficient ``[m+n choose m]_q = prod_{i=1..m} (1 - q**(n+i)) / (1 - q**i)``; each
    factor is applied as a polynomial multiplication and a (cumulative-sum) division.

    Parameters
    ----------
    m, n : int
        Group sizes.

    Returns
    -------
    numpy.ndarray
        Probabilities of ``U = 0 .. m*n`` (length ``m*n + 1``).

    References
    ----------
    Mann, H. B. & Whitney, D. R. (1947). On a test of whether one of two random variables is
    stochastically larger than the other. Annals of Mathematical Statistics 18(1), 50-60.
    Andrews, G. E. (1976). The Theory of Partitions. Addison-Wesley, chapter 3 (Gaussian
    polynomials).
    """
    m, n = (int(m), int(n)) if m <= n else (int(n), int(m))
    size = m * n + 1
    c = np.zeros(size)
    c[0] = 1.0
    for i in range(1, m + 1):
        shift = n + i
        if shift < size:
            c[shift:] -= c[:-shift].copy()
        # Dividing by (1 - q**i) is c[k] += c[k - i], i.e. a cumulative sum along each residue
        # class modulo i; padding to a multiple of i turns that into one cumsum over axis 0.
        pad = (-size) % i
        block = np.concatenate([c, np.zeros(pad)]).reshape(-1, i)
        c = np.cumsum(block, axis=0).ravel()[:size]
        c /= c.sum()  # keep magnitudes near 1; only ratios matter
    c = np.maximum(c, 0.0)
    pmf: np.ndarray = c / c.sum()
    return pmf


def min_mann_whitney_p(m: int, n: int) -> float:
    """Smallest two-sided exact Mann-Whitney p-value attainable with group sizes m and n.

    ``2 / C(m+n, m)``: 0.1 for 3 vs 3, 0.029 for 4 vs 4, so fewer than 4 per group can never be
    significant at 0.05.
    """
    if m < 1 or n < 1:
        return 1.0
    return min(1.0, 2.0 / math.comb(int(m) + int(n), int(m)))


def mann_whitney(a: np.ndarray, b: np.ndarray, *, method: str = "auto") -> TestResult:
    """Mann-Whitney U (Wilcoxon rank-sum) test of whether b tends to be larger or smaller.

    Parameters
    ----------
    a, b : numpy.ndarray
        Independent observations (baseline, condition).
    method : {"auto", "exact", "asymptotic"}
        ``"auto"`` uses the exact null distribution when there are no ties and both groups
        have at most :data:`MWU_EXACT_MAX_N` values, the tie-corrected normal approximation
        with continuity correction otherwise.

    Returns
    -------
    TestResult
        ``statistic`` is U for ``b`` (pairs with b > a, ties counted half); ``test`` says
        ``"mann-whitney-u (exact)"`` or ``"mann-whitney-u (asymptotic)"``. Agrees with
        ``scipy.stats.mannwhitneyu(b, a, method=...)``.

    References
    ----------
    Mann, H. B. & Whitney, D. R. (1947). On a test of whether one of two random variables is
    stochastically larger than the other. Annals of Mathematical Statistics 18(1), 50-60.
    Hollander, M., Wolfe, D. A. & Chicken, E. (2014). Nonparametric Statistical Methods, 3rd
    ed., Wiley, section 4.1 (ties and the large-sample approximation).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.size < 1 or b.size < 1:
        return TestResult("mann-whitney-u", None, None, None, "needs values in both groups")
    pooled = np.concatenate([a, b])
    if _all_identical(pooled):
        u = a.size * b.size / 2
        return TestResult("mann-whitney-u", u, 1.0, None, "all values identical")
    ties = np.unique(pooled).size < pooled.size
    if method == "auto":
        small = max(a.size, b.size) <= MWU_EXACT_MAX_N
        method = "exact" if (small and not ties) else "asymptotic"
    if method not in ("exact", "asymptotic"):
        raise ValueError(f"method must be 'auto', 'exact' or 'asymptotic'; got {method!r}")
    u, p = mann_whitney_u(b, a, alternative="two-sided", method=method)
    return TestResult(f"mann-whitney-u ({method})", u, p)


def average_ranks(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ranks 1..n with ties given their average rank, and the size of every group of ties.

    The same ranks as ``scipy.stats.rankdata(x, method="average")``.

    Returns
    -------
    ranks : numpy.ndarray
        float64, in the order of ``x``.
    ties : numpy.ndarray
        int64, the number of values in each distinct value's group (1 for an untied value).
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    ends = np.r_[starts[1:], xs.size]  # exclusive
    group = np.repeat(np.arange(starts.size), ends - starts)
    ranks = np.empty(x.size, dtype=np.float64)
    ranks[order] = 0.5 * (starts + 1 + ends)[group]
    return ranks, (ends - starts).astype(np.int64)


def mann_whitney_u(
    x: np.ndarray, y: np.ndarray, *, alternative: str = "two-sided", method: str = "asymptotic"
) -> tuple[float, float]:
    """U of ``x`` against ``y`` and its p-value, as ``scipy.stats.mannwhitneyu(x, y, ...)``.

    Parameters
    ----------
    x, y : numpy.ndarray
        Non-empty groups.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: x tends to be larger than y.
    method : {"exact", "asymptotic"}
        The exact null distribution (valid without ties) or the tie-corrected normal
        approximation with continuity correction.

    Returns
    -------
    (float, float)
        U for ``x`` (pairs with x > y, ties counted half) and the p-value.

    References
    ----------
    Mann, H. B. & Whitney, D. R. (1947). Annals of Mathematical Statistics 18(1), 50-60.
    Hollander, M., Wolfe, D. A. & Chicken, E. (2014). Nonparametric Statistical Methods, 3rd
    ed., Wiley, section 4.1 (ties and the large-sample approximation).
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    n1, n2 = x.size, y.size
    ranks, ties = average_ranks(np.concatenate([x, y]))
    u1 = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    if alternative == "greater":
        u, factor = u1, 1.0
    elif alternative == "less":
        u, factor = u2, 1.0  # by symmetry, the upper tail of U2 instead of the lower of U1
    elif alternative == "two-sided":
        u, factor = max(u1, u2), 2.0
    else:
        raise ValueError(
            f"alternative must be 'two-sided', 'greater' or 'less'; got {alternative!r}"
        )
    if method == "exact":
        pmf = u_null_distribution(n1, n2)
        p = float(pmf[round(u) :].sum())
    elif method == "asymptotic":
        n = n1 + n2
        t = ties.astype(np.float64)
        tie_term = float(np.sum(t**3 - t))
        s = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
        # The continuity correction always subtracts: the upper tail is what is computed.
        num = u - n1 * n2 / 2 - 0.5
        # With every value tied (s = 0) U sits at its only possible value: p = 1.
        p = float(norm_sf(num / s)) if s > 0 else (1.0 if num <= 0 else 0.0)
    else:
        raise ValueError(f"method must be 'exact' or 'asymptotic'; got {method!r}")
    return u1, min(1.0, max(0.0, p * factor))


def kendall_trend(y: np.ndarray) -> tuple[float, float]:
    """Kendall's tau-b between the order of the values and the values (Mann's trend test).

    The same tau and two-sided p-value as ``scipy.stats.kendalltau(numpy.arange(n), y)``:
    the exact null distribution (permutations by number of inversions) without ties when
    ``n <= 33`` or at most one pair is out of order, otherwise the normal approximation with
    the variance corrected for ties in ``y``.

    Returns
    -------
    (float, float)
        tau-b and p; both NaN when every value is the same.

    References
    ----------
    Mann, H. B. (1945). Nonparametric tests against trend. Econometrica 13(3), 245-259.
    Kendall, M. G. (1975). Rank Correlation Methods, 4th ed. Griffin, chapters 4-5.
    """
    y = np.asarray(y, dtype=np.float64).ravel()
    n = y.size
    tot = n * (n - 1) // 2
    _, ties = average_ranks(y)
    t = ties.astype(np.float64)
    ytie = int(np.sum(ties * (ties - 1) // 2))
    if n < 2 or ytie == tot:
        return math.nan, math.nan
    # Pairs i < j: concordant when y[j] > y[i], discordant when y[j] < y[i]. Row blocks keep
    # the pairwise comparison within a few MB for long runs.
    con = dis = 0
    for lo in range(0, n, 1024):
        hi = min(n, lo + 1024)
        d = y[None, :] - y[lo:hi, None]
        upper = np.arange(n)[None, :] > np.arange(lo, hi)[:, None]
        con += int(np.count_nonzero((d > 0) & upper))
        dis += int(np.count_nonzero((d < 0) & upper))
    s = con - dis
    tau = max(-1.0, min(1.0, s / math.sqrt(tot) / math.sqrt(tot - ytie)))
    if ytie == 0 and (n <= 33 or min(dis, tot - dis) <= 1):
        p = min(1.0, 2.0 * _inversions_cdf(n, min(dis, tot - dis)))
    else:
        m = n * (n - 1.0)
        y1 = float(np.sum(t * (t - 1) * (2 * t + 5)))
        var = (m * (2 * n + 5) - y1) / 18
        p = min(1.0, 2.0 * float(norm_sf(abs(s) / math.sqrt(var))))
    return tau, p


def _inversions_cdf(n: int, c: int) -> float:
    # P(a random permutation of n has at most c inversions). The counts are the coefficients
    # of prod_{j=1..n} (1 + q + ... + q**(j-1)) (Mahonian numbers), truncated at q**c.
    if c == 0:
        return math.exp(-math.lgamma(n + 1))
    if c == 1:
        return math.exp(math.log(n) - math.lgamma(n + 1))
    counts = np.zeros(c + 1)
    counts[0] = 1.0
    log_scale = 0.0
    for j in range(2, n + 1):
        # Multiplying by (1 - q**j) / (1 - q): a cumulative sum, minus itself shifted by j.
        cs = np.cumsum(counts)
        counts = cs.copy()
        if j <= c:
            counts[j:] -= cs[: c + 1 - j]
        top = float(counts.max())
        log_scale += math.log(top)
        counts /= top  # keep magnitudes near 1; the scale is carried in log_scale
    return min(1.0, math.exp(math.log(float(counts.sum())) + log_scale - math.lgamma(n + 1)))


def two_sample_test(a: np.ndarray, b: np.ndarray, *, a_normal: bool, b_normal: bool) -> TestResult:
    """Pick and run the two-sample test on independent observations.

    Welch's t when both groups passed the normality test, otherwise the Mann-Whitney U test,
    which needs no distributional assumption (exact for small samples without ties).

    References
    ----------
    Welch, B. L. (1947). Biometrika 34(1/2), 28-35.
    Mann, H. B. & Whitney, D. R. (1947). Annals of Mathematical Statistics 18(1), 50-60.
    """
    if a_normal and b_normal:
        return welch_t(a, b)
    return mann_whitney(a, b)


def kruskal_wallis(groups: Sequence[np.ndarray]) -> TestResult:
    """Kruskal-Wallis H test: do k independent groups come from the same distribution?

    Parameters
    ----------
    groups : sequence of numpy.ndarray
        At least two groups with at least one value each.

    Returns
    -------
    TestResult
        Agrees with ``scipy.stats.kruskal``; ``p = 1`` when all values are identical (SciPy
        would divide by zero).

    References
    ----------
    Kruskal, W. H. & Wallis, W. A. (1952). Use of ranks in one-criterion variance analysis.
    Journal of the American Statistical Association 47(260), 583-621.
    """
    gs = [np.asarray(g, dtype=np.float64) for g in groups]
    if len(gs) < 2 or any(g.size == 0 for g in gs):
        return TestResult("kruskal-wallis", None, None, None, "needs 2+ non-empty groups")
    if _all_identical(*gs):
        return TestResult("kruskal-wallis", 0.0, 1.0, (len(gs) - 1.0,), "all values identical")
    ranks, ties = average_ranks(np.concatenate(gs))
    total = ranks.size
    bounds = np.cumsum([0] + [g.size for g in gs])
    h = 12.0 / (total * (total + 1)) * sum(
        float(ranks[lo:hi].sum()) ** 2 / (hi - lo) for lo, hi in itertools.pairwise(bounds)
    ) - 3 * (total + 1)
    t = ties.astype(np.float64)
    h /= 1.0 - float(np.sum(t**3 - t)) / (total**3 - total)
    df = len(gs) - 1.0
    return TestResult("kruskal-wallis", h, float(chi2_sf(h, df)), (df,))


def one_way_anova(groups: Sequence[np.ndarray]) -> TestResult:
    """Classical one-way analysis of variance F test of equal means.

    Returns
    -------
    TestResult
        Agrees with ``scipy.stats.f_oneway``. Without variance inside the groups the F ratio
        is undefined; the result then has ``p = None`` (or 1 when all means are equal too).

    References
    ----------
    Fisher, R. A. (1925). Statistical Methods for Research Workers. Oliver & Boyd, chapter 7.
    Montgomery, D. C. (2017). Design and Analysis of Experiments, 9th ed., Wiley, section 3.3.
    """
    gs = [np.asarray(g, dtype=np.float64) for g in groups]
    k = len(gs)
    n = sum(g.size for g in gs)
    if k < 2 or any(g.size == 0 for g in gs) or n - k < 1:
        return TestResult("one-way anova", None, None, None, "needs 2+ groups and n > k")
    grand = float(np.concatenate(gs).mean())
    ssb = sum(g.size * (float(g.mean()) - grand) ** 2 for g in gs)
    ssw = sum(float(np.sum((g - g.mean()) ** 2)) for g in gs)
    df1, df2 = k - 1, n - k
    if ssw <= 0:
        if ssb <= 0:
            return TestResult("one-way anova", 0.0, 1.0, (df1, df2), "all values identical")
        return TestResult("one-way anova", None, None, (df1, df2), "no variance within groups")
    f = (ssb / df1) / (ssw / df2)
    return TestResult("one-way anova", f, float(f_sf(f, df1, df2)), (df1, df2))


def welch_anova(
    means: Sequence[float], var_means: Sequence[float], dfs: Sequence[float]
) -> TestResult:
    """Welch's heteroscedastic one-way ANOVA from group means and their variances.

    Parameters
    ----------
    means : sequence of float
        Group means.
    var_means : sequence of float
        Variance of each mean (``s**2 / n`` for plain means, the squared cluster-robust
        standard error for clustered data).
    dfs : sequence of float
        Degrees of freedom of each variance (``n - 1`` or ``clusters - 1``).

    Returns
    -------
    TestResult
        F with ``(k - 1, df2)`` degrees of freedom; with ``v = s**2/n`` and ``df = n - 1`` it
        agrees with ``scipy.stats.f_oneway(..., equal_var=False)``. For two groups F = t**2 of
        Welch's t.

    References
    ----------
    Welch, B. L. (1951). On the comparison of several mean values: an alternative approach.
    Biometrika 38(3/4), 330-336.
    """
    m = np.asarray(means, dtype=np.float64)
    v = np.asarray(var_means, dtype=np.float64)
    d = np.asarray(dfs, dtype=np.float64)
    k = m.size
    if k < 2 or np.any(d <= 0):
        return TestResult("welch anova", None, None, None, "needs 2+ groups with 2+ units each")
    if np.any(v <= 0):
        if np.all(m == m[0]):
            return TestResult("welch anova", 0.0, 1.0, None, "no variance and no difference")
        return TestResult("welch anova", None, None, None, "a group has no variance")
    w = 1.0 / v
    sw = float(w.sum())
    mw = float(np.dot(w, m)) / sw
    a = float(np.dot(w, (m - mw) ** 2)) / (k - 1)
    lam = float(np.sum((1 - w / sw) ** 2 / d))
    b = 1 + 2 * (k - 2) / (k * k - 1) * lam
    f = a / b
    df2 = (k * k - 1) / (3 * lam) if lam > 0 else math.inf
    p = float(f_sf(f, k - 1, df2))
    return TestResult("welch anova", f, p, (k - 1.0, df2))


def cluster_welch_anova(groups: Sequence[ClusterMean]) -> TestResult:
    """Welch's ANOVA on cluster-robust means (samples as clusters).

    References
    ----------
    Welch, B. L. (1951). Biometrika 38(3/4), 330-336.
    Cameron, A. C. & Miller, D. L. (2015). Journal of Human Resources 50(2), 317-372.
    """
    if any(g.n_clusters < 2 for g in groups):
        return TestResult(
            "cluster welch anova", None, None, None, "needs at least 2 samples per condition"
        )
    r = welch_anova([g.mean for g in groups], [g.se**2 for g in groups], [g.df for g in groups])
    return TestResult("cluster welch anova", r.statistic, r.p_value, r.df, r.note)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment for multiple comparisons.

    Sort the m p-values ascending, multiply the i-th smallest (1-based) by ``m - i + 1``, carry
    the running maximum forward and cap at 1. Rejecting every adjusted p below alpha keeps the
    family-wise error rate at alpha under any dependence between the tests.

    Parameters
    ----------
    p_values : sequence of float or None
        Raw p-values; None entries (tests that could not run) stay None and do not count.

    Returns
    -------
    list of float or None
        Adjusted p-values in the input order. Independent of the input order.

    References
    ----------
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian
    Journal of Statistics 6(2), 65-70.
    """
    idx = [i for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = [None] * len(p_values)
    m = len(idx)
    ordered = sorted(idx, key=lambda i: float(p_values[i]))  # type: ignore[arg-type]
    running = 0.0
    for rank, i in enumerate(ordered):
        adj = min(1.0, (m - rank) * float(p_values[i]))  # type: ignore[arg-type]
        running = max(running, adj)
        out[i] = running
    return out


def p_rounded(p: float) -> str:
    """A p-value as every output shows it: three decimals, ``<0.001`` below that (never
    ``0.000``, which would claim an impossible certainty). The one rule for the analysis'
    sentences (:func:`p_text`) and the tables (``wannabet.render.format.p_value``)."""
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def p_text(p: float | None) -> str:
    """A p-value in a sentence, rounded by :func:`p_rounded`: ``p=0.032``, ``p<0.001``."""
    if p is None:
        return "p=n/a"
    shown = p_rounded(p)
    return f"p{shown}" if shown.startswith("<") else f"p={shown}"
