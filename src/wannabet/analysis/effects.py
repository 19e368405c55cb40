"""Effect sizes with intervals: how much faster or slower, and how sure are we?

* relative change of the mean and of the median in %, with bootstrap intervals: BCa for the
  mean, percentile for the median; at the transaction level the bootstrap resamples whole
  samples (clusters), never single transactions;
* the Hodges-Lehmann shift with its distribution-free interval;
* Cliff's delta, the probability of "larger" minus the probability of "smaller".

All changes are "condition versus baseline": ``b`` relative to ``a``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .clt import Interval
from .dependence import cluster_mean
from .descriptive import quantiles_sorted
from .distributions import norm_cdf, norm_ppf, t_ppf
from .tests import MWU_EXACT_MAX_N, u_null_distribution

__all__ = [
    "HL_MAX_PAIRS",
    "Clustered",
    "RelativeChange",
    "bootstrap_relative_change",
    "cliffs_delta",
    "cluster_bootstrap_relative_change",
    "hodges_lehmann",
    "relative_change_pct",
]

#: Largest number of pairwise differences the Hodges-Lehmann estimator materializes
#: (about 200 MB of float64). The analysis only calls it on sample means.
HL_MAX_PAIRS = 25_000_000

#: Number of histogram bins used to bootstrap the median of pooled transactions.
_MEDIAN_BINS = 4096


@dataclass(frozen=True, slots=True)
class RelativeChange:
    """Relative change of the mean and of the median of b versus a, in percent.

    Either interval is None when the change is undefined (the baseline statistic is 0 or the
    groups are too small to resample).
    """

    mean: Interval | None
    median: Interval | None


def relative_change_pct(base: float, other: float) -> float | None:
    """``(other / base - 1) * 100``, or None when ``base`` is 0 or not finite."""
    if base == 0 or not math.isfinite(base) or not math.isfinite(other):
        return None
    return (other / base - 1.0) * 100.0


def hodges_lehmann(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> Interval:
    """Hodges-Lehmann shift of b versus a with its distribution-free confidence interval.

    The estimate is the median of all ``m * n`` differences ``b_j - a_i``. The interval is
    ``[D_(k), D_(mn+1-k)]`` of the sorted differences, where ``k`` is the lower ``alpha/2``
    quantile of the Mann-Whitney U null distribution (exact for small samples, normal
    approximation otherwise): it covers the true shift with at least the stated probability
    whenever the two distributions differ by a shift.

    Parameters
    ----------
    a, b : numpy.ndarray
        Independent observations (baseline, condition).
    level : float
        Nominal coverage.

    Returns
    -------
    Interval
        ``method`` states exact or normal; when too few values make the nominal level
        unreachable the widest interval ``[min, max]`` of the differences is returned and
        ``level`` holds the coverage actually achieved.

    References
    ----------
    Hodges, J. L. & Lehmann, E. L. (1963). Estimates of location based on rank tests. Annals
    of Mathematical Statistics 34(2), 598-611.
    Bauer, D. F. (1972). Constructing confidence sets using rank statistics. JASA 67(339),
    687-690.
    Hollander, M., Wolfe, D. A. & Chicken, E. (2014). Nonparametric Statistical Methods, 3rd
    ed., Wiley, section 4.3.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    m, n = a.size, b.size
    if m == 0 or n == 0:
        raise ValueError("hodges_lehmann() needs values in both groups")
    if m * n > HL_MAX_PAIRS:
        raise ValueError(
            f"hodges_lehmann() would build {m * n} pairwise differences; pass per-sample means "
            f"(at most {HL_MAX_PAIRS} pairs)"
        )
    d = np.sort(np.subtract.outer(b, a).ravel())
    big_n = d.size
    est = float(np.median(d))
    alpha = 1.0 - level
    if max(m, n) <= MWU_EXACT_MAX_N:
        cdf = np.cumsum(u_null_distribution(m, n))
        # R's wilcox.test convention: k is the alpha/2 quantile of U; with too few values
        # (k = 0) the full range [min, max] is the best available interval.
        k = max(int(np.searchsorted(cdf, alpha / 2 - 1e-12, side="left")), 1)
        achieved = 1.0 - 2.0 * float(cdf[k - 1])
        method = "mann-whitney exact"
    else:
        z = float(norm_ppf(1 - alpha / 2))
        k = max(math.floor(big_n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12.0)), 1)
        achieved = level
        method = "mann-whitney normal approximation"
    lo, hi = float(d[k - 1]), float(d[big_n - k])
    return Interval(est, min(lo, est), max(hi, est), min(level, achieved), method)


def cliffs_delta(
    a: np.ndarray,
    b: np.ndarray,
    *,
    sorted_a: np.ndarray | None = None,
    sorted_b: np.ndarray | None = None,
) -> float:
    """Cliff's delta of b versus a: P(b > a) - P(b < a) over all pairs.

    +1 means every value of b exceeds every value of a; 0 complete overlap. Computed with
    binary searches of the sorted b values in the sorted a values, ``O(n log m)``, so it works
    on millions of transactions.

    Parameters
    ----------
    a, b : numpy.ndarray
        Baseline and condition values.
    sorted_a, sorted_b : numpy.ndarray, optional
        ``numpy.sort(a)``, ``numpy.sort(b)`` if already available.

    References
    ----------
    Cliff, N. (1993). Dominance statistics: ordinal analyses to answer ordinal questions.
    Psychological Bulletin 114(3), 494-509.
    """
    sa = np.sort(np.asarray(a, dtype=np.float64)) if sorted_a is None else sorted_a
    sb = np.sort(np.asarray(b, dtype=np.float64)) if sorted_b is None else sorted_b
    m, n = sa.size, sb.size
    if m == 0 or n == 0:
        raise ValueError("cliffs_delta() needs values in both groups")
    # Sorted queries walk the searched array in order, which is several times faster than
    # random queries on large arrays.
    below = np.searchsorted(sa, sb, side="left")  # a values smaller than each b
    not_above = np.searchsorted(sa, sb, side="right")
    greater = float(below.sum(dtype=np.float64))
    less = float(m * n - not_above.sum(dtype=np.float64))
    return (greater - less) / (m * n)


def _finite_share(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = x[np.isfinite(x)]
    return out


def _quantile_points(level: float, df: float | None) -> np.ndarray:
    # Normal quantiles, or Student t quantiles "used as z" for the small-sample expansion.
    alpha = 1 - level
    if df is None or not math.isfinite(df) or df <= 0:
        return np.asarray(norm_ppf([alpha / 2, 1 - alpha / 2]), dtype=np.float64)
    return np.asarray(t_ppf([alpha / 2, 1 - alpha / 2], df), dtype=np.float64)


def _percentile_interval(
    est: float,
    boot: np.ndarray,
    level: float,
    method: str = "percentile bootstrap",
    df: float | None = None,
) -> Interval:
    probs = norm_cdf(_quantile_points(level, df))
    lo, hi = np.quantile(boot, probs)
    return _contain(est, float(lo), float(hi), level, method)


def _contain(est: float, lo: float, hi: float, level: float, method: str) -> Interval:
    # With very few or very skewed observations a bootstrap interval can miss its own
    # estimate; widening it to include the estimate only ever makes the verdict more careful.
    if est < lo or est > hi:
        method += " (widened to include the estimate)"
    return Interval(est, min(lo, est), max(hi, est), level, method)


def _acceleration(jackknives: list[np.ndarray]) -> float:
    # Efron & Tibshirani (1993) eq. 14.15, extended to several independent samples the way
    # scipy.stats.bootstrap does: each sample's jackknife influence values are scaled by its
    # size before they are pooled.
    num = 0.0
    den = 0.0
    for th in jackknives:
        if not np.isfinite(th).all():
            # A leave-one-out estimate is undefined (a baseline whose other values are all 0,
            # as a wait per commit can be): no acceleration, the bias-corrected percentile.
            return 0.0
        nj = th.size
        if nj < 2:
            continue
        u = (nj - 1) * (th.mean() - th)
        num += float(np.sum(u**3)) / nj**3
        den += float(np.sum(u**2)) / nj**2
    if den <= 0:
        return 0.0
    return num / (6.0 * float(den**1.5))


def _bca_interval(
    est: float,
    boot: np.ndarray,
    jackknives: list[np.ndarray],
    level: float,
    df: float | None = None,
) -> Interval:
    b = boot.size
    if float(np.ptp(boot)) == 0.0:
        return _contain(est, float(boot[0]), float(boot[0]), level, "bca bootstrap")
    below = np.count_nonzero(boot < est) + 0.5 * np.count_nonzero(boot == est)
    prop = min(max(float(below) / b, 0.5 / b), 1 - 0.5 / b)
    z0 = float(norm_ppf(prop))
    acc = _acceleration(jackknives)
    zs = _quantile_points(level, df)
    adj = norm_cdf(z0 + (z0 + zs) / (1 - acc * (z0 + zs)))
    lo, hi = np.quantile(boot, np.clip(adj, 0.0, 1.0))
    return _contain(est, float(lo), float(hi), level, "bca bootstrap")


def _expand(boot: np.ndarray, est: float, k: int) -> np.ndarray:
    # The bootstrap distribution of a mean of k independent units has variance
    # (k - 1) / k * s**2 / k: too narrow for small k. Stretching every resampled statistic
    # away from the estimate by sqrt(k / (k - 1)) removes that bias (Hesterberg 2015, the
    # "expanded" bootstrap); for clusters it is the same G / (G - 1) factor as in the
    # cluster-robust variance.
    return est + math.sqrt(k / (k - 1)) * (boot - est)


def _expand_in_ratio(boot: np.ndarray, est: float, k: int) -> np.ndarray:
    """:func:`_expand` for a statistic that is one side of a ratio (a % change): on the log
    scale when it and every resample are positive (latencies, rates, CPU per commit), so the
    stretch cannot carry a resampled baseline through zero and a change past -100 %, which a
    slow outlier among few samples did (-484 % for a -99 % change); linearly otherwise (a
    wait per commit can be 0). The log-scale stretch inflates the log ratio's variance by
    the same k / (k - 1)."""
    if est > 0 and bool(np.all(boot > 0)):
        ratio: np.ndarray = est * (boot / est) ** math.sqrt(k / (k - 1))
        return ratio
    return _expand(boot, est, k)


def _welch_df(rel_var_a: float, df_a: float, rel_var_b: float, df_b: float) -> float | None:
    # Welch-Satterthwaite degrees of freedom of a log ratio of two means (delta method).
    num = (rel_var_a + rel_var_b) ** 2
    den = rel_var_a**2 / df_a + rel_var_b**2 / df_b
    if not (num > 0 and den > 0):
        return None
    return num / den


def bootstrap_relative_change(
    a: np.ndarray,
    b: np.ndarray,
    *,
    rng: np.random.Generator,
    n_boot: int = 2000,
    level: float = 0.95,
) -> RelativeChange:
    """Bootstrap intervals for the % change of the mean and the median of b versus a.

    Each group is resampled with replacement on its own (they are independent). The mean's
    interval is BCa (bias-corrected and accelerated, jackknife acceleration); the median's is
    the percentile interval, because the jackknife behind BCa's acceleration is inconsistent
    for the median.

    Parameters
    ----------
    a, b : numpy.ndarray
        Independent observations (baseline, condition), e.g. sample means.
    rng : numpy.random.Generator
        Source of the resamples.
    n_boot : int
        Number of resamples.
    level : float
        Nominal coverage.

    Returns
    -------
    RelativeChange

    References
    ----------
    Efron, B. & Tibshirani, R. J. (1993). An Introduction to the Bootstrap. Chapman & Hall,
    chapters 13 (percentile interval), 14 (BCa, eq. 14.14-14.15) and 11.6 (jackknife fails
    for the median).
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    m, n = a.size, b.size
    if m < 2 or n < 2:
        return RelativeChange(None, None)
    ia = rng.integers(0, m, size=(n_boot, m))
    ib = rng.integers(0, n, size=(n_boot, n))
    ra, rb = a[ia], b[ib]
    ma, mb = float(a.mean()), float(b.mean())
    with np.errstate(divide="ignore", invalid="ignore"):
        df = None
        if ma != 0 and mb != 0:
            df = _welch_df(a.var(ddof=1) / (m * ma**2), m - 1, b.var(ddof=1) / (n * mb**2), n - 1)
        mean_est = relative_change_pct(ma, mb)
        mean_iv = None
        if mean_est is not None:
            boot_a = _expand_in_ratio(ra.mean(axis=1), ma, m)
            boot_b = _expand_in_ratio(rb.mean(axis=1), mb, n)
            boot = _finite_share((boot_b / boot_a - 1) * 100)
            if boot.size >= 0.9 * n_boot:
                jack_a = (mb / ((a.sum() - a) / (m - 1)) - 1) * 100
                jack_b = (((b.sum() - b) / (n - 1)) / ma - 1) * 100
                mean_iv = _bca_interval(mean_est, boot, [jack_a, jack_b], level, df)
        med_a, med_b = float(np.median(a)), float(np.median(b))
        med_est = relative_change_pct(med_a, med_b)
        med_iv = None
        if med_est is not None:
            boot_a = _expand_in_ratio(np.median(ra, axis=1), med_a, m)
            boot_b = _expand_in_ratio(np.median(rb, axis=1), med_b, n)
            boot = _finite_share((boot_b / boot_a - 1) * 100)
            if boot.size >= 0.9 * n_boot:
                med_iv = _percentile_interval(med_est, boot, level, df=df)
    return RelativeChange(mean_iv, med_iv)


@dataclass(frozen=True, slots=True, eq=False)
class Clustered:
    """Values grouped into independent clusters (samples), as the cluster bootstrap needs.

    Attributes
    ----------
    sums, counts : numpy.ndarray
        Per-cluster sum and size.
    sorted_values : numpy.ndarray
        All values in ascending order.
    sorted_codes : numpy.ndarray
        Cluster code ``0..k-1`` of each entry of ``sorted_values``.
    """

    sums: np.ndarray
    counts: np.ndarray
    sorted_values: np.ndarray
    sorted_codes: np.ndarray

    @classmethod
    def from_codes(
        cls, values: np.ndarray, codes: np.ndarray, order: np.ndarray | None = None
    ) -> Clustered:
        """Build from values, their cluster codes and optionally ``numpy.argsort(values)``."""
        values = np.asarray(values, dtype=np.float64)
        codes = np.asarray(codes, dtype=np.int64)
        counts = np.bincount(codes).astype(np.float64)
        sums = np.bincount(codes, weights=values, minlength=counts.size)
        order = np.argsort(values) if order is None else order
        return cls(sums, counts, values[order], codes[order])

    @property
    def k(self) -> int:
        """Number of clusters."""
        return int(self.counts.size)

    @property
    def mean(self) -> float:
        """Mean of all values."""
        return float(self.sums.sum() / self.counts.sum())

    @property
    def median(self) -> float:
        """Median of all values."""
        s = self.sorted_values
        return float((s[(s.size - 1) // 2] + s[s.size // 2]) / 2)

    def histogram(self, edges: np.ndarray) -> np.ndarray:
        """Per-cluster counts in the bins ``[edges[j], edges[j+1])`` (the last bin closed).

        Returns an array of shape ``(k, len(edges) - 1)``.
        """
        nb = edges.size - 1
        s = self.sorted_values
        # Bin boundaries are positions in the sorted values, so every value's bin follows
        # from run lengths without a search per value.
        starts = np.searchsorted(s, edges[1:-1], side="left")
        per_bin = np.diff(np.concatenate([[0], starts, [s.size]]))
        bins = np.repeat(np.arange(nb), per_bin)
        flat = np.bincount(self.sorted_codes * nb + bins, minlength=self.k * nb)
        return flat.reshape(self.k, nb).astype(np.float64)


def _cluster_weights(rng: np.random.Generator, k: int, n_boot: int) -> np.ndarray:
    # How often each cluster is drawn in each resample: a multinomial(k, 1/k) row per resample.
    idx = rng.integers(0, k, size=(n_boot, k))
    flat = idx + (np.arange(n_boot) * k)[:, None]
    return np.bincount(flat.ravel(), minlength=n_boot * k).reshape(n_boot, k).astype(np.float64)


_FINE = 64  # bins per block in the two-stage median search


def _resampled_medians(w: np.ndarray, hist: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Median of each resample (row of cluster weights ``w``) from per-cluster histograms.

    Two stages keep the work small: find the block of 64 bins holding the middle from block
    totals, then the bin inside that block; interpolate linearly inside the bin. With
    quantile-spaced bins the interpolation error is a small fraction of one bin's width.
    """
    k, nb = hist.shape
    nblk = -(-nb // _FINE)
    pad = nblk * _FINE - nb
    if pad:
        hist = np.concatenate([hist, np.zeros((k, pad))], axis=1)
        edges = np.concatenate([edges, np.full(pad, edges[-1])])
    h3 = hist.reshape(k, nblk, _FINE)
    block_cum = np.cumsum(w @ h3.sum(axis=2), axis=1)
    target = block_cum[:, -1] / 2
    jb = np.argmax(block_cum >= target[:, None], axis=1)
    rows = np.arange(w.shape[0])
    before = np.where(jb > 0, block_cum[rows, np.maximum(jb - 1, 0)], 0.0)
    fine = np.einsum("bk,kbf->bf", w, h3[:, jb, :])
    fine_cum = before[:, None] + np.cumsum(fine, axis=1)
    jf = np.argmax(fine_cum >= target[:, None], axis=1)
    j = jb * _FINE + jf
    inbin = fine[rows, jf]
    below = fine_cum[rows, jf] - inbin
    frac = np.divide(target - below, inbin, out=np.zeros_like(target), where=inbin > 0)
    out: np.ndarray = edges[j] + frac * (edges[j + 1] - edges[j])
    return out


def _median_edges(a: Clustered, b: Clustered) -> np.ndarray:
    q = np.linspace(0, 1, _MEDIAN_BINS // 2 + 1)
    edges = np.unique(
        np.concatenate([quantiles_sorted(a.sorted_values, q), quantiles_sorted(b.sorted_values, q)])
    )
    if edges.size < 2:
        edges = np.array([edges[0], edges[0] + 1.0])
    return edges


def cluster_bootstrap_relative_change(
    a: Clustered,
    b: Clustered,
    *,
    rng: np.random.Generator,
    n_boot: int = 2000,
    level: float = 0.95,
) -> RelativeChange:
    """Cluster bootstrap of the % change of the mean and median of all transactions.

    Whole samples are resampled with replacement, so whatever dependence exists inside a
    sample (autocorrelation, a slow checkpoint) travels with it. Only per-sample sufficient
    statistics are touched: sums and counts for the mean, per-sample histograms on a common
    set of quantile-spaced bins for the median; the work is independent of the number of
    transactions.

    Parameters
    ----------
    a, b : Clustered
        Baseline and condition, clusters = samples.
    rng : numpy.random.Generator
        Source of the resamples.
    n_boot : int
        Number of resamples.
    level : float
        Nominal coverage.

    Returns
    -------
    RelativeChange
        Mean: BCa with delete-one-cluster jackknife acceleration. Median: percentile.

    References
    ----------
    Davison, A. C. & Hinkley, D. V. (1997). Bootstrap Methods and their Application.
    Cambridge University Press, section 3.8 (resampling the top level of hierarchical data).
    Field, C. A. & Welsh, A. H. (2007). Bootstrapping clustered data. JRSS B 69(3), 369-390.
    Efron, B. & Tibshirani, R. J. (1993). An Introduction to the Bootstrap, chapter 14.
    """
    if a.k < 2 or b.k < 2:
        return RelativeChange(None, None)
    wa = _cluster_weights(rng, a.k, n_boot)
    wb = _cluster_weights(rng, b.k, n_boot)
    ca = cluster_mean(a.sums, a.counts)
    cb = cluster_mean(b.sums, b.counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = None
        if ca.mean != 0 and cb.mean != 0:
            df = _welch_df((ca.se / ca.mean) ** 2, ca.df, (cb.se / cb.mean) ** 2, cb.df)
        mean_iv = None
        mean_est = relative_change_pct(ca.mean, cb.mean)
        if mean_est is not None:
            ma = _expand_in_ratio((wa @ a.sums) / (wa @ a.counts), ca.mean, a.k)
            mb = _expand_in_ratio((wb @ b.sums) / (wb @ b.counts), cb.mean, b.k)
            boot = _finite_share((mb / ma - 1) * 100)
            if boot.size >= 0.9 * n_boot:
                sa, na, sb, nb = a.sums.sum(), a.counts.sum(), b.sums.sum(), b.counts.sum()
                jack_a = (cb.mean / ((sa - a.sums) / (na - a.counts)) - 1) * 100
                jack_b = (((sb - b.sums) / (nb - b.counts)) / ca.mean - 1) * 100
                mean_iv = _bca_interval(mean_est, boot, [jack_a, jack_b], level, df)
        med_iv = None
        med_est = relative_change_pct(a.median, b.median)
        if med_est is not None:
            edges = _median_edges(a, b)
            resampled_a = _resampled_medians(wa, a.histogram(edges), edges)
            resampled_b = _resampled_medians(wb, b.histogram(edges), edges)
            med_a = _expand_in_ratio(resampled_a, a.median, a.k)
            med_b = _expand_in_ratio(resampled_b, b.median, b.k)
            boot = _finite_share((med_b / med_a - 1) * 100)
            if boot.size >= 0.9 * n_boot:
                med_iv = _percentile_interval(
                    med_est, boot, level, "percentile cluster bootstrap", df=df
                )
    if mean_iv is not None:
        mean_iv = Interval(
            mean_iv.estimate,
            mean_iv.low,
            mean_iv.high,
            level,
            mean_iv.method.replace("bca bootstrap", "bca cluster bootstrap"),
        )
    return RelativeChange(mean_iv, med_iv)
