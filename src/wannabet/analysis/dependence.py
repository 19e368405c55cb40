"""Dependence between observations: autocorrelation, effective sample size, batch means.

Transactions inside one sample are not independent (queues, checkpoints, caches), and samples
differ from each other by more than their transactions' scatter suggests. A million transactions
therefore carry far less information about a mean than a million independent values would.
This module measures that and provides the honest standard error: treat each sample as one
*cluster* (a batch, in the language of batch means) and compute the variance of the overall mean
from the per-cluster sums and counts only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "ClusterMean",
    "Groups",
    "autocorrelation",
    "batch_means",
    "cluster_mean",
    "effective_sample_size",
    "group_codes",
    "lag1_autocorrelation",
]


@dataclass(frozen=True, slots=True, eq=False)
class Groups:
    """Integer codes ``0..k-1`` for group labels, in ascending label order.

    ``labels[codes[i]]`` is the label of value ``i``; ``counts[j]`` the size of group ``j``.
    """

    labels: np.ndarray
    codes: np.ndarray
    counts: np.ndarray

    @property
    def k(self) -> int:
        """Number of groups."""
        return int(self.labels.size)

    def sums(self, values: np.ndarray) -> np.ndarray:
        """Per-group sums of ``values``."""
        return np.bincount(self.codes, weights=values, minlength=self.k)

    def means(self, values: np.ndarray) -> np.ndarray:
        """Per-group means of ``values``."""
        out: np.ndarray = self.sums(values) / self.counts
        return out


def group_codes(labels: np.ndarray) -> Groups:
    """Map integer labels (e.g. sample indices) to dense codes, without sorting when possible.

    Measurements are usually stored sample after sample, so a non-decreasing label array is
    handled in linear time; anything else falls back to :func:`numpy.unique`.
    """
    labels = np.asarray(labels)
    if labels.size and np.all(labels[1:] >= labels[:-1]):
        start = np.empty(labels.size, dtype=bool)
        start[0] = True
        np.not_equal(labels[1:], labels[:-1], out=start[1:])
        codes = np.cumsum(start) - 1
        uniq = labels[start]
        counts = np.diff(np.append(np.flatnonzero(start), labels.size))
        return Groups(uniq, codes.astype(np.int64), counts.astype(np.int64))
    uniq, codes, counts = np.unique(labels, return_inverse=True, return_counts=True)
    return Groups(uniq, codes.astype(np.int64).ravel(), counts.astype(np.int64))


def autocorrelation(x: np.ndarray, max_lag: int | None = None) -> np.ndarray:
    """Sample autocorrelation function, computed with the FFT.

    Parameters
    ----------
    x : numpy.ndarray
        A series in time order.
    max_lag : int, optional
        Largest lag returned (default ``n - 1``).

    Returns
    -------
    numpy.ndarray
        ``acf[0] == 1``; the usual biased estimator (divides by n at every lag), which is
        positive semi-definite. All zeros after lag 0 for a constant series.

    References
    ----------
    Box, G. E. P., Jenkins, G. M. & Reinsel, G. C. (2008). Time Series Analysis, 4th ed.,
    Wiley, section 2.1.4.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    max_lag = n - 1 if max_lag is None else min(int(max_lag), n - 1)
    d = x - x.mean()
    size = 1 << int(2 * n - 1).bit_length()
    f = np.fft.rfft(d, size)
    acov = np.fft.irfft(f * np.conj(f), size)[: max_lag + 1]
    if acov[0] <= 0:
        out = np.zeros(max_lag + 1)
        out[0] = 1.0
        return out
    acf: np.ndarray = acov / acov[0]
    return acf


def lag1_autocorrelation(x: np.ndarray, codes: np.ndarray | None = None) -> float | None:
    """Lag-1 autocorrelation, pooled within groups (e.g. transactions within samples).

    Each value is centred on its own group's mean and only consecutive pairs from the same
    group count, so a difference *between* samples does not masquerade as autocorrelation.

    Parameters
    ----------
    x : numpy.ndarray
        Values in run order.
    codes : numpy.ndarray, optional
        Group code per value (see :func:`group_codes`); one group when omitted.

    Returns
    -------
    float or None
        None when there are no pairs or no within-group variance.

    References
    ----------
    Box, G. E. P., Jenkins, G. M. & Reinsel, G. C. (2008). Time Series Analysis, 4th ed.,
    Wiley, section 2.1.4 (sample autocorrelation, here pooled over independent series).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size < 3:
        return None
    if codes is None:
        d = x - x.mean()
        same = np.ones(x.size - 1, dtype=bool)
    else:
        counts = np.bincount(codes)
        means = np.bincount(codes, weights=x) / np.maximum(counts, 1)
        d = x - means[codes]
        same = codes[1:] == codes[:-1]
    denom = float(np.dot(d, d))
    if denom <= 0 or not same.any():
        return None
    num = float(np.sum(d[1:] * d[:-1], where=same))
    return max(-1.0, min(1.0, num / denom))


def effective_sample_size(x: np.ndarray) -> float | None:
    """Effective sample size of a series for estimating its mean.

    ``n / tau`` with the integrated autocorrelation time ``tau`` estimated by Geyer's initial
    monotone sequence: autocorrelations are summed in adjacent pairs until a pair sum turns
    negative, and the pair sums are forced to be non-increasing.

    Parameters
    ----------
    x : numpy.ndarray
        A series in time order (e.g. sample means in run order).

    Returns
    -------
    float or None
        Between ``1/log10(n)`` and ``n*log10(n)`` (the bound Stan uses against antithetic
        noise); None for fewer than 4 values or a constant series.

    References
    ----------
    Geyer, C. J. (1992). Practical Markov chain Monte Carlo. Statistical Science 7(4),
    473-483, section 3.3.
    Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. & Buerkner, P.-C. (2021).
    Rank-normalization, folding, and localization: an improved R-hat. Bayesian Analysis 16(2),
    667-718 (section 3.2, the truncation rule used here).
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    if n < 4 or float(np.ptp(x)) == 0.0:
        return None
    rho = autocorrelation(x)
    m = (n - 1) // 2
    pairs = rho[0 : 2 * m : 2] + rho[1 : 2 * m + 1 : 2]
    neg = np.flatnonzero(pairs < 0)
    k = int(neg[0]) if neg.size else pairs.size
    if k == 0:
        tau = 1.0
    else:
        p = np.minimum.accumulate(pairs[:k])
        tau = -1.0 + 2.0 * float(p.sum())
    tau = max(tau, 1.0 / math.log10(n))
    return float(min(n / tau, n * math.log10(n)))


@dataclass(frozen=True, slots=True)
class ClusterMean:
    """Mean of all values with a standard error that respects clusters.

    Attributes
    ----------
    mean : float
        Overall mean, ``sum(sums) / sum(counts)`` (every value weighs the same).
    se : float
        Cluster-robust standard error of ``mean``.
    df : int
        Degrees of freedom for a t reference: clusters minus one.
    n_clusters, n : int
        Number of clusters and of values.
    ess : float or None
        Effective sample size: ``var(values) / se**2`` - how many independent values would give
        the same precision. None without variance.
    design_effect : float or None
        ``n / ess``, the variance inflation caused by the dependence.
    """

    mean: float
    se: float
    df: int
    n_clusters: int
    n: int
    ess: float | None
    design_effect: float | None


def cluster_mean(
    sums: np.ndarray,
    counts: np.ndarray,
    *,
    var_values: float | None = None,
) -> ClusterMean:
    """Overall mean of clustered values and its cluster-robust standard error.

    The mean of all values is a ratio ``S / C`` of cluster sums to cluster sizes. Its variance
    is estimated from the clusters' linearized residuals ``e_i = s_i - mean * c_i`` as
    ``G / (G - 1) * sum(e_i**2) / C**2``. With equal cluster sizes this is exactly the squared
    standard error of the mean of the cluster means, the batch-means estimator; clusters are
    assumed independent of each other, values inside a cluster may depend on each other in any
    way.

    Parameters
    ----------
    sums, counts : numpy.ndarray
        Per-cluster sum and number of values.
    var_values : float, optional
        Variance (``ddof=1``) of the individual values, only needed to report the effective
        sample size.

    Returns
    -------
    ClusterMean

    References
    ----------
    Cochran, W. G. (1977). Sampling Techniques, 3rd ed., Wiley, sections 6.9 and 9A.2 (ratio
    estimator of a mean over clusters of unequal size).
    Cameron, A. C. & Miller, D. L. (2015). A practitioner's guide to cluster-robust inference.
    Journal of Human Resources 50(2), 317-372 (G/(G-1) correction, t with G-1 df).
    Kish, L. (1965). Survey Sampling. Wiley, section 8.2 (design effect, effective size).
    """
    sums = np.asarray(sums, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    g = int(sums.size)
    total = float(counts.sum())
    n = round(total)
    mean = float(sums.sum() / total)
    if g < 2:
        return ClusterMean(mean, math.nan, 0, g, n, None, None)
    e = sums - mean * counts
    var = g / (g - 1) * float(np.dot(e, e)) / total**2
    se = math.sqrt(max(var, 0.0))
    ess = None
    deff = None
    if var_values is not None and var_values > 0 and var > 0:
        ess = var_values / var
        deff = n / ess
    return ClusterMean(mean, se, g - 1, g, n, ess, deff)


def batch_means(x: np.ndarray, n_batches: int | None = None) -> ClusterMean:
    """Mean of one long, autocorrelated series with a non-overlapping batch-means error.

    The series is cut into ``n_batches`` consecutive batches; if the batches are long compared
    to the correlation time, their means are nearly independent and their scatter measures the
    uncertainty of the overall mean.

    Parameters
    ----------
    x : numpy.ndarray
        The series in time order.
    n_batches : int, optional
        Default ``min(30, floor(sqrt(n)))``: few, long batches, which errs on the side of
        too-wide intervals when the correlation time is long.

    Returns
    -------
    ClusterMean

    References
    ----------
    Schmeiser, B. (1982). Batch size effects in the analysis of simulation output. Operations
    Research 30(3), 556-568 (10 to 30 batches suffice).
    Flegal, J. M. & Jones, G. L. (2010). Batch means and spectral variance estimators in
    Markov chain Monte Carlo. Annals of Statistics 38(2), 1034-1070.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    if n_batches is None:
        n_batches = min(30, math.isqrt(n))
    n_batches = max(1, min(int(n_batches), n))
    codes = (np.arange(n) * n_batches) // n
    sums = np.bincount(codes, weights=x, minlength=n_batches)
    counts = np.bincount(codes, minlength=n_batches)
    return cluster_mean(sums, counts, var_values=float(x.var(ddof=1)) if n > 1 else None)
