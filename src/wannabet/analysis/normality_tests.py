"""Tests of normality: Shapiro-Wilk (up to 5,000 values) and D'Agostino-Pearson (above).

The same statistics and p-values as ``scipy.stats.shapiro`` and ``scipy.stats.normaltest``
(the suite checks them against SciPy on seeded samples of every size class), written out here
because those two functions are the only reason ``compare`` would import ``scipy.stats``,
about a second of start-up (docs/architecture.md "What compare imports"). The normal and
chi-square tails come from ``scipy.special`` through :mod:`.distributions`.
"""

from __future__ import annotations

import math

import numpy as np

from .distributions import chi2_sf, norm_ppf, norm_sf

__all__ = ["dagostino_pearson", "shapiro_wilk"]

# Royston (1995), algorithm AS R94: polynomial approximations of the coefficients (C1, C2)
# and of the distribution of log(1 - W) (G, C3-C6), lowest power first.
_C1 = (0.0, 0.221157, -0.147981, -2.071190, 4.434685, -2.706056)
_C2 = (0.0, 0.042981, -0.293762, -1.752461, 5.682633, -3.582633)
_C3 = (0.5440, -0.39978, 0.025054, -6.714e-4)
_C4 = (1.3822, -0.77857, 0.062767, -0.0020322)
_C5 = (-1.5861, -0.31082, -0.083751, 0.0038915)
_C6 = (-0.4803, -0.082676, 0.0030302)
_G = (-2.273, 0.459)


def _poly(c: tuple[float, ...], x: float) -> float:
    return sum(ci * x**i for i, ci in enumerate(c))


def shapiro_wilk(x: np.ndarray) -> tuple[float, float]:
    """Shapiro-Wilk W and its p-value, as ``scipy.stats.shapiro``.

    Parameters
    ----------
    x : numpy.ndarray
        3 to 5,000 values, not all equal (Royston's approximation is valid up to 5,000).

    Returns
    -------
    (float, float)
        W and the p-value of the hypothesis that ``x`` comes from a normal distribution.

    References
    ----------
    Shapiro, S. S. & Wilk, M. B. (1965). Biometrika 52(3/4), 591-611.
    Royston, P. (1992). Approximating the Shapiro-Wilk W-test for non-normality. Statistics and
    Computing 2, 117-119.
    Royston, P. (1995). Remark AS R94: A remark on algorithm AS 181: the W-test for normality.
    Applied Statistics 44(4), 547-551.
    """
    xs = np.sort(np.asarray(x, dtype=np.float64).ravel())
    n = xs.size
    if n < 3:
        raise ValueError(f"shapiro_wilk() needs at least 3 values, got {n}")
    half = n // 2
    if n == 3:
        a = np.array([math.sqrt(0.5)])
    else:
        # Expected normal order statistics of the lower half (Blom's approximation), < 0.
        m = np.asarray(norm_ppf((np.arange(1, half + 1) - 0.375) / (n + 0.25)))
        summ2 = 2.0 * float(np.sum(m * m))
        ssumm2 = math.sqrt(summ2)
        rsn = 1.0 / math.sqrt(n)
        a1 = _poly(_C1, rsn) - m[0] / ssumm2
        if n > 5:
            a2 = -m[1] / ssumm2 + _poly(_C2, rsn)
            fac = math.sqrt((summ2 - 2 * m[0] ** 2 - 2 * m[1] ** 2) / (1 - 2 * a1**2 - 2 * a2**2))
            a = -m / fac
            a[0], a[1] = a1, a2
        else:
            fac = math.sqrt((summ2 - 2 * m[0] ** 2) / (1 - 2 * a1**2))
            a = -m / fac
            a[0] = a1
    coef = np.zeros(n)
    coef[:half] = -a
    coef[n - half :] = a[::-1]
    # W as the squared correlation of the data with the coefficients; 1 - W is formed
    # directly so that W near 1 (large samples) keeps its precision, as AS R94 does.
    rng = xs[-1] - xs[0]
    xc = xs / rng - float(np.mean(xs / rng))
    ac = coef - float(coef.mean())
    ssa, ssx, sax = float(ac @ ac), float(xc @ xc), float(ac @ xc)
    ssassx = math.sqrt(ssa * ssx)
    w1 = (ssassx - sax) * (ssassx + sax) / (ssa * ssx)
    w = 1.0 - w1
    if n == 3:
        p = 6.0 / math.pi * (math.asin(math.sqrt(max(w, 0.0))) - math.asin(math.sqrt(0.75)))
        return w, max(p, 0.0)
    y = math.log(w1) if w1 > 0 else -math.inf
    if n <= 11:
        gamma = _poly(_G, n)
        if y >= gamma:
            return w, 1e-99  # AS R94's "obvious" value
        y = -math.log(gamma - y)
        mu, sigma = _poly(_C3, n), math.exp(_poly(_C4, n))
    else:
        ln = math.log(n)
        mu, sigma = _poly(_C5, ln), math.exp(_poly(_C6, ln))
    return w, float(norm_sf((y - mu) / sigma))


def dagostino_pearson(x: np.ndarray) -> tuple[float, float]:
    """D'Agostino and Pearson's omnibus K² test of normality, as ``scipy.stats.normaltest``.

    Parameters
    ----------
    x : numpy.ndarray
        At least 20 values for the approximations to hold (SciPy requires 8).

    Returns
    -------
    (float, float)
        K² (the sum of the squared skewness and kurtosis z-scores) and its chi-square p-value
        with 2 degrees of freedom.

    References
    ----------
    D'Agostino, R. B. (1971). Biometrika 58(2), 341-348.
    D'Agostino, R. B. & Pearson, E. S. (1973). Biometrika 60(3), 613-622.
    Anscombe, F. J. & Glynn, W. J. (1983). Distribution of the kurtosis statistic b2 for normal
    samples. Biometrika 70(1), 227-234.
    """
    v = np.asarray(x, dtype=np.float64).ravel()
    n = float(v.size)
    if n < 8:
        raise ValueError(f"dagostino_pearson() needs at least 8 values, got {v.size}")
    d = v - v.mean()
    m2 = float(np.mean(d * d))
    m3 = float(np.mean(d**3))
    m4 = float(np.mean(d**4))
    # Skewness (D'Agostino 1971): Johnson's S_U transformation of sqrt(b1).
    b1 = m3 / m2**1.5
    y = b1 * math.sqrt((n + 1) * (n + 3) / (6.0 * (n - 2)))
    beta2 = (
        3.0 * (n * n + 27 * n - 70) * (n + 1) * (n + 3) / ((n - 2) * (n + 5) * (n + 7) * (n + 9))
    )
    w2 = -1 + math.sqrt(2 * (beta2 - 1))
    delta = 1 / math.sqrt(0.5 * math.log(w2))
    alpha = math.sqrt(2.0 / (w2 - 1))
    y = y if y != 0 else 1.0
    z_skew = delta * math.log(y / alpha + math.sqrt((y / alpha) ** 2 + 1))
    # Kurtosis (Anscombe & Glynn 1983).
    b2 = m4 / (m2 * m2)
    mean_b2 = 3.0 * (n - 1) / (n + 1)
    var_b2 = 24.0 * n * (n - 2) * (n - 3) / ((n + 1) ** 2 * (n + 3) * (n + 5))
    xk = (b2 - mean_b2) / math.sqrt(var_b2)
    sqrtbeta1 = (
        6.0
        * (n * n - 5 * n + 2)
        / ((n + 7) * (n + 9))
        * math.sqrt(6.0 * (n + 3) * (n + 5) / (n * (n - 2) * (n - 3)))
    )
    big_a = 6.0 + 8.0 / sqrtbeta1 * (2.0 / sqrtbeta1 + math.sqrt(1 + 4.0 / sqrtbeta1**2))
    term1 = 1 - 2 / (9.0 * big_a)
    denom = 1 + xk * math.sqrt(2 / (big_a - 4.0))
    if denom == 0:
        return math.nan, math.nan
    term2 = math.copysign(((1 - 2.0 / big_a) / abs(denom)) ** (1 / 3), denom)
    z_kurt = (term1 - term2) / math.sqrt(2 / (9.0 * big_a))
    k2 = z_skew * z_skew + z_kurt * z_kurt
    return k2, float(chi2_sf(k2, 2))
