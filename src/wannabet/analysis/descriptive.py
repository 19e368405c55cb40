"""Descriptive statistics and the normality check.

Everything here works on a 1-D float array of observations (sample means or transactions) and
returns a frozen result. Functions accept an already sorted copy where they need order
statistics, because sorting a million latencies is the most expensive step of a summary and the
caller usually needs the sorted array again (consistency, Cliff's delta).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .normality_tests import dagostino_pearson, shapiro_wilk

__all__ = [
    "MAD_TO_SD",
    "SHAPIRO_MAX_N",
    "Descriptive",
    "Normality",
    "describe",
    "normality",
    "quantiles_sorted",
    "skewness",
]

#: Scale factor that turns the median absolute deviation into a consistent estimate of the
#: standard deviation under normality (1 / Phi^-1(3/4)).
MAD_TO_SD = 1.482602218505602

#: Largest sample Shapiro-Wilk is used for: SciPy's p-value approximation (Royston 1995) is
#: only validated up to 5000 observations.
SHAPIRO_MAX_N = 5000

_PERCENTILES = (5.0, 25.0, 50.0, 75.0, 95.0, 99.0)


@dataclass(frozen=True, slots=True)
class Descriptive:
    """Location, spread and shape of a set of observations.

    ``mad`` is the raw median absolute deviation (not scaled); ``robust_cv`` is
    ``mad * 1.4826 / median``. ``cv`` and ``robust_cv`` are None when their denominator is 0.
    """

    n: int
    mean: float
    sd: float
    median: float
    mad: float
    p5: float
    p25: float
    p50: float
    p75: float
    p95: float
    p99: float
    min: float
    max: float
    cv: float | None
    robust_cv: float | None
    skewness: float | None


@dataclass(frozen=True, slots=True)
class Normality:
    """Result of a normality test.

    ``test`` is ``"shapiro-wilk"``, ``"dagostino-pearson"`` or ``"none"`` (not applicable: too
    few values or zero variance, explained in ``reason``). ``p`` is None when no test ran.
    """

    test: str
    statistic: float | None
    p: float | None
    n: int
    reason: str | None = None

    def is_normal(self, alpha: float) -> bool:
        """True when a test ran and did not reject normality at ``alpha``."""
        return self.p is not None and self.p > alpha


def quantiles_sorted(sorted_x: np.ndarray, q: np.ndarray | list[float]) -> np.ndarray:
    """Quantiles of an ascending array, linear interpolation (NumPy's default method).

    Parameters
    ----------
    sorted_x : numpy.ndarray
        Ascending, non-empty.
    q : array_like
        Probabilities in [0, 1].

    Returns
    -------
    numpy.ndarray
        Same values as ``numpy.quantile(x, q)`` without sorting again.

    References
    ----------
    Hyndman, R. J. & Fan, Y. (1996). Sample quantiles in statistical packages. The American
    Statistician 50(4), 361-365 (definition 7).
    """
    n = sorted_x.size
    h = np.asarray(q, dtype=np.float64) * (n - 1)
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    frac = h - lo
    out: np.ndarray = sorted_x[lo] + frac * (sorted_x[hi] - sorted_x[lo])
    return out


def skewness(x: np.ndarray) -> float | None:
    """Sample skewness g1 = m3 / m2**1.5 (the biased moment estimator, SciPy's default).

    Returns None instead of NaN when the variance is zero, or too small relative to the mean
    for the third moment to carry information (SciPy warns about catastrophic cancellation in
    that case; a skewness of rounding noise is worse than none).

    References
    ----------
    Joanes, D. N. & Gill, C. A. (1998). Comparing measures of sample skewness and kurtosis.
    Journal of the Royal Statistical Society D 47(1), 183-189 (g1).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size < 3:
        return None
    mean = float(x.mean())
    d = x - mean
    m2 = float(np.dot(d, d)) / x.size
    scale = max(abs(mean), float(np.max(np.abs(x))))
    if m2 <= (np.finfo(np.float64).eps * 10 * scale) ** 2:
        return None
    m3 = float(np.mean(d * d * d))
    return m3 / float(m2**1.5)


def describe(x: np.ndarray, *, sorted_x: np.ndarray | None = None) -> Descriptive:
    """Summarize observations: mean, SD, median, MAD, percentiles, CVs and skewness.

    Parameters
    ----------
    x : numpy.ndarray
        Observations, 1-D, non-empty, finite.
    sorted_x : numpy.ndarray, optional
        ``numpy.sort(x)`` if the caller already has it.

    Returns
    -------
    Descriptive
        SD uses ``ddof=1`` (0 for a single value). Percentiles use linear interpolation.

    References
    ----------
    Hyndman, R. J. & Fan, Y. (1996). Sample quantiles in statistical packages. The American
    Statistician 50(4), 361-365.
    Hampel, F. R. (1974). The influence curve and its role in robust estimation. JASA 69(346),
    383-393 (the median absolute deviation and its 1.4826 scale).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError("describe() needs a non-empty 1-D array")
    s = np.sort(x) if sorted_x is None else sorted_x
    n = int(x.size)
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if n > 1 else 0.0
    pct = quantiles_sorted(s, np.array(_PERCENTILES) / 100.0)
    median = float(pct[2])
    mad = float(np.median(np.abs(x - median)))
    cv = sd / mean if mean != 0 else None
    robust_cv = mad * MAD_TO_SD / median if median != 0 else None
    return Descriptive(
        n=n,
        mean=mean,
        sd=sd,
        median=median,
        mad=mad,
        p5=float(pct[0]),
        p25=float(pct[1]),
        p50=median,
        p75=float(pct[3]),
        p95=float(pct[4]),
        p99=float(pct[5]),
        min=float(s[0]),
        max=float(s[-1]),
        cv=cv,
        robust_cv=robust_cv,
        skewness=skewness(x),
    )


def normality(x: np.ndarray) -> Normality:
    """Test whether observations could come from a normal distribution.

    Shapiro-Wilk for 3 to 5000 values; D'Agostino-Pearson K² above that (where Shapiro-Wilk's
    p-value approximation is not validated and K² is accurate). No test for fewer than 3 values
    or zero variance.

    Parameters
    ----------
    x : numpy.ndarray
        Observations, 1-D.

    Returns
    -------
    Normality

    Notes
    -----
    With a million transactions any test rejects normality for deviations nobody cares about;
    the verdict only uses this test on sample-level data, where it decides between Welch's t
    and the Mann-Whitney U test.

    References
    ----------
    Shapiro, S. S. & Wilk, M. B. (1965). An analysis of variance test for normality (complete
    samples). Biometrika 52(3/4), 591-611.
    Royston, P. (1995). Remark AS R94: A remark on algorithm AS 181. Applied Statistics 44(4),
    547-551 (the approximation SciPy uses, valid to n = 5000).
    D'Agostino, R. B. (1971). An omnibus test of normality for moderate and large sample size.
    Biometrika 58(2), 341-348; D'Agostino, R. B. & Pearson, E. S. (1973). Tests for departure
    from normality. Biometrika 60(3), 613-622.
    """
    x = np.asarray(x, dtype=np.float64)
    n = int(x.size)
    if n < 3:
        return Normality("none", None, None, n, reason=f"needs at least 3 values, has {n}")
    lo, hi = float(x.min()), float(x.max())
    # Values identical up to rounding make both tests divide by ~0; SciPy would warn and
    # return a meaningless p.
    if hi - lo <= np.finfo(np.float64).eps * 16 * max(abs(lo), abs(hi)):
        return Normality("none", None, None, n, reason="zero variance")
    if n <= SHAPIRO_MAX_N:
        w, p = shapiro_wilk(x)
        return Normality("shapiro-wilk", w, p, n)
    k2, p = dagostino_pearson(x)
    return Normality("dagostino-pearson", k2, p, n)
