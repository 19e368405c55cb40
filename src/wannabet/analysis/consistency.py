"""Performance consistency: how far do runs stray from the typical run, and when?

A mean says nothing about whether every run is close to it. Following the cloud-consistency
analyses of the reference material, each observation is expressed as its deviation from the
median in percent, and we count how many stray beyond +/-2.5%, 5% and 10%, overall, per session
(thread) and per period of the run (hour, or day for runs longer than 48 hours). On top of that:
outliers by the modified z-score (reported, never removed), a warm-up check (are the first
samples slower?) and a multimodality test (one mean describes a two-humped distribution badly).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .dependence import group_codes
from .descriptive import quantiles_sorted
from .tests import kendall_trend, mann_whitney_u

__all__ = [
    "DIAGNOSTIC_ALPHA",
    "MODIFIED_Z_THRESHOLD",
    "THRESHOLDS_PCT",
    "Consistency",
    "GroupConsistency",
    "LevelConsistency",
    "Multimodality",
    "Outliers",
    "WarmUp",
    "breakdown",
    "consistency",
    "detect_warmup",
    "deviation_from_median",
    "modified_z_scores",
    "multimodality",
    "share_beyond",
]

#: Deviation thresholds (percent of the median) whose exceedance shares are reported.
THRESHOLDS_PCT = (2.5, 5.0, 10.0)

#: Cut-off for the modified z-score recommended by Iglewicz & Hoaglin (1993).
MODIFIED_Z_THRESHOLD = 3.5

#: Significance level of the checks that raise diagnostics (warm-up, trend, multimodality).
#: Stricter than the usual 0.05 so that a clean experiment with several conditions is rarely
#: warned about by chance.
DIAGNOSTIC_ALPHA = 0.01

_HOUR = 3600.0
_DAY = 86400.0


def _f(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def deviation_from_median(x: np.ndarray, median: float | None = None) -> np.ndarray | None:
    """Deviation of each value from the median, in percent of the median.

    Parameters
    ----------
    x : numpy.ndarray
        Values.
    median : float, optional
        Reference (default: the median of ``x``).

    Returns
    -------
    numpy.ndarray or None
        ``(x / median - 1) * 100``; None when the median is 0.

    References
    ----------
    Hoeger, R. (2016). Oracle Database Cloud (DBaaS) performance consistency, part 3. Blog
    post (deviation of each run from the median run time).
    """
    x = np.asarray(x, dtype=np.float64)
    med = float(np.median(x)) if median is None else float(median)
    if med == 0 or not math.isfinite(med):
        return None
    return (x / med - 1.0) * 100.0


def share_beyond(
    deviation_pct: np.ndarray, thresholds: tuple[float, ...] = THRESHOLDS_PCT
) -> dict[float, float]:
    """Share of deviations whose absolute value exceeds each threshold (in percent)."""
    d = np.abs(np.asarray(deviation_pct, dtype=np.float64))
    n = d.size
    return {t: (float(np.count_nonzero(d > t)) / n if n else 0.0) for t in thresholds}


def modified_z_scores(x: np.ndarray) -> np.ndarray:
    """Modified z-scores ``0.6745 * (x - median) / MAD``.

    When more than half the values are identical the MAD is 0; the mean absolute deviation
    (scaled by 1.2533 to match the MAD's scale under normality) is used instead, and when that
    is 0 too every score is 0.

    References
    ----------
    Iglewicz, B. & Hoaglin, D. C. (1993). How to Detect and Handle Outliers. ASQC Quality
    Press, section 3.3 (modified z-score, cut-off 3.5).
    """
    x = np.asarray(x, dtype=np.float64)
    med = float(np.median(x))
    dev = x - med
    mad = float(np.median(np.abs(dev)))
    if mad > 0:
        return 0.6745 * dev / mad
    mean_ad = float(np.mean(np.abs(dev)))
    if mean_ad > 0:
        return dev / (1.253314 * mean_ad)
    return np.zeros_like(x)


@dataclass(frozen=True, slots=True)
class LevelConsistency:
    """Deviation from the median at one level (sample means or transactions)."""

    n: int
    median: float
    beyond: dict[float, float] | None
    max_abs_deviation_pct: float | None
    deviation_pct: tuple[float, ...] | None = None
    ids: tuple[int, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        d: dict[str, Any] = {
            "n": self.n,
            "median": _f(self.median),
            "beyond_pct": None
            if self.beyond is None
            else {f"{k:g}": _f(v) for k, v in self.beyond.items()},
            "max_abs_deviation_pct": _f(self.max_abs_deviation_pct),
        }
        if self.deviation_pct is not None:
            d["sample"] = list(self.ids or ())
            d["deviation_pct"] = [_f(v) for v in self.deviation_pct]
        return d


def _median_sorted(s: np.ndarray) -> float:
    n = s.size
    return float((s[(n - 1) // 2] + s[n // 2]) / 2)


def _beyond_sorted(s: np.ndarray, med: float) -> dict[float, float]:
    # |x / med - 1| * 100 > t  <=>  x outside [med - t*|med|/100, med + t*|med|/100]; on a
    # sorted array that is two binary searches per threshold instead of a pass over the data.
    n = s.size
    out = {}
    for t in THRESHOLDS_PCT:
        half = abs(med) * t / 100.0
        below = np.searchsorted(s, med - half, side="left")
        above = n - np.searchsorted(s, med + half, side="right")
        out[t] = float(below + above) / n
    return out


def _level(
    x: np.ndarray,
    *,
    keep: bool,
    ids: np.ndarray | None = None,
    sorted_x: np.ndarray | None = None,
) -> LevelConsistency:
    s = np.sort(x) if sorted_x is None else sorted_x
    med = _median_sorted(s)
    if med == 0:
        return LevelConsistency(int(s.size), med, None, None)
    extreme = max(abs(float(s[0]) / med - 1), abs(float(s[-1]) / med - 1)) * 100
    dev = deviation_from_median(x, med) if keep else None
    return LevelConsistency(
        n=int(s.size),
        median=med,
        beyond=_beyond_sorted(s, med),
        max_abs_deviation_pct=extreme,
        deviation_pct=None if dev is None else tuple(float(v) for v in dev),
        ids=tuple(int(i) for i in ids) if (keep and ids is not None) else None,
    )


@dataclass(frozen=True, slots=True)
class GroupConsistency:
    """Deviation profile of one session or one period, against the overall median."""

    key: int
    n: int
    median: float
    median_deviation_pct: float | None
    beyond: dict[float, float] | None
    start_s: float | None = None

    def to_dict(self, key_name: str) -> dict[str, Any]:
        """JSON-able form; ``key_name`` is ``"session"`` or ``"period"``."""
        d: dict[str, Any] = {key_name: self.key}
        if self.start_s is not None:
            d["start_s"] = _f(self.start_s)
        d.update(
            n=self.n,
            median=_f(self.median),
            median_deviation_pct=_f(self.median_deviation_pct),
            beyond_pct=None
            if self.beyond is None
            else {f"{k:g}": _f(v) for k, v in self.beyond.items()},
        )
        return d


def breakdown(
    x: np.ndarray,
    keys: np.ndarray,
    *,
    median: float | None = None,
    order: np.ndarray | None = None,
) -> tuple[GroupConsistency, ...]:
    """Per-group (session, period) medians and exceedance shares against a common median.

    Parameters
    ----------
    x : numpy.ndarray
        Values.
    keys : numpy.ndarray
        Integer group key per value.
    median : float, optional
        The common reference, default the median of ``x``.
    order : numpy.ndarray, optional
        ``numpy.argsort(x)`` if the caller has it.

    Returns
    -------
    tuple of GroupConsistency
        In ascending key order.

    References
    ----------
    Hoeger, R. (2016). Oracle Database Cloud (DBaaS) performance consistency, part 3 (the
    per-day and per-thread views).
    """
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x) if order is None else order
    g = group_codes(np.asarray(keys))
    small = np.int16 if g.k < 2**15 else np.int64
    # Visiting values in ascending order and then sorting stably by group leaves every group's
    # values contiguous *and* sorted; a stable sort on small integer codes is a radix sort.
    by_group = np.argsort(g.codes[order].astype(small), kind="stable")
    in_order = x[order]
    med = _median_sorted(in_order) if median is None else float(median)
    xs = in_order[by_group]
    bounds = np.concatenate([[0], np.cumsum(g.counts)])
    out = []
    for j in range(g.k):
        seg = xs[bounds[j] : bounds[j + 1]]
        gmed = _median_sorted(seg)
        if med == 0:
            beyond, mdev = None, None
        else:
            beyond = _beyond_sorted(seg, med)
            mdev = (gmed / med - 1) * 100
        out.append(GroupConsistency(int(g.labels[j]), int(seg.size), gmed, mdev, beyond))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Outliers:
    """Observations with ``|modified z| > threshold`` (kept in every statistic)."""

    threshold: float
    samples: tuple[int, ...]
    n_transactions: int | None
    share_transactions: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "method": "modified z-score",
            "threshold": self.threshold,
            "samples": list(self.samples),
            "n_transactions": self.n_transactions,
            "share_transactions": _f(self.share_transactions),
        }


@dataclass(frozen=True, slots=True)
class WarmUp:
    """Are the first samples slower than the rest, or do samples drift over the run?

    ``p_value`` is the one-sided Mann-Whitney test of "the first ``first_k`` samples are slower
    than the rest"; ``trend_tau``/``trend_p`` the Mann-Kendall trend test (Kendall's tau between
    run order and value). None when there are fewer than 8 samples or no variance.
    """

    first_k: int
    first_mean: float | None
    rest_mean: float | None
    change_pct: float | None
    p_value: float | None
    detected: bool
    trend_tau: float | None
    trend_p: float | None
    trend: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "first_k": self.first_k,
            "first_mean": _f(self.first_mean),
            "rest_mean": _f(self.rest_mean),
            "change_pct": _f(self.change_pct),
            "p": _f(self.p_value),
            "detected": self.detected,
            "trend_tau": _f(self.trend_tau),
            "trend_p": _f(self.trend_p),
            "trend": self.trend,
        }


_WARMUP_MIN_N = 8


def detect_warmup(
    means: np.ndarray,
    *,
    higher_is_slower: bool = True,
    alpha: float = DIAGNOSTIC_ALPHA,
) -> WarmUp:
    """Check whether the first samples are slower than the rest, and for a trend.

    Parameters
    ----------
    means : numpy.ndarray
        One value per sample, in run order.
    higher_is_slower : bool
        True for latency, False for throughput.
    alpha : float
        Level at which ``detected`` and ``trend`` are set.

    Returns
    -------
    WarmUp
        The first ``k = max(2, round(n / 10))`` samples are compared with the rest by a
        one-sided Mann-Whitney U test; the whole sequence by the Mann-Kendall test.

    References
    ----------
    Mann, H. B. (1945). Nonparametric tests against trend. Econometrica 13(3), 245-259.
    Kendall, M. G. (1975). Rank Correlation Methods, 4th ed. Griffin.
    Mann, H. B. & Whitney, D. R. (1947). Annals of Mathematical Statistics 18(1), 50-60.
    """
    x = np.asarray(means, dtype=np.float64)
    n = x.size
    k = max(2, round(n / 10))
    if n < _WARMUP_MIN_N or float(np.ptp(x)) == 0.0:
        return WarmUp(k, None, None, None, None, False, None, None, False)
    first, rest = x[:k], x[k:]
    fm, rm = float(first.mean()), float(rest.mean())
    change = (fm / rm - 1) * 100 if rm != 0 else None
    pooled = np.concatenate([first, rest])
    ties = np.unique(pooled).size < pooled.size
    method = "exact" if (not ties and n <= 50) else "asymptotic"
    alternative = "greater" if higher_is_slower else "less"
    _, p = mann_whitney_u(first, rest, alternative=alternative, method=method)
    tau, tp = kendall_trend(x)
    return WarmUp(k, fm, rm, change, p, p < alpha, tau, tp, tp < alpha)


@dataclass(frozen=True, slots=True)
class Multimodality:
    """Silverman's bandwidth test of unimodality.

    ``p`` is the share of smoothed-bootstrap samples that still show more than one mode at the
    critical bandwidth; ``multimodal`` is ``p < alpha``. ``modes`` are the locations of the two
    highest modes just below the critical bandwidth (on the original scale) when multimodal.
    ``scale`` is ``"log"`` when the test ran on log values (all values positive).
    """

    test: str
    p: float | None
    multimodal: bool
    modes: tuple[float, ...]
    n: int
    scale: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "test": self.test,
            "p": _f(self.p),
            "multimodal": self.multimodal,
            "modes": [_f(m) for m in self.modes],
            "n": self.n,
            "scale": self.scale,
        }


_GRID = 512


def _kde_on_grid(weights: np.ndarray, h_cells: float) -> np.ndarray:
    # Gaussian KDE of binned data by FFT convolution; rows are independent data sets.
    g = weights.shape[-1]
    half = min(g - 1, math.ceil(4 * h_cells))
    j = np.arange(-half, half + 1)
    kern = np.exp(-0.5 * (j / h_cells) ** 2)
    size = 1 << int(g + 2 * half).bit_length()
    kpad = np.zeros(size)
    kpad[: half + 1] = kern[half:]
    kpad[size - half :] = kern[:half]
    f = np.fft.irfft(np.fft.rfft(weights, size, axis=-1) * np.fft.rfft(kpad), size, axis=-1)
    return f[..., :g]


def _count_modes(f: np.ndarray) -> np.ndarray:
    f = np.atleast_2d(f)
    tol = 1e-9 * f.max(axis=1, keepdims=True)
    inner = (f[:, 1:-1] > f[:, :-2] + tol) & (f[:, 1:-1] >= f[:, 2:])
    ends = (f[:, 0] > f[:, 1] + tol[:, 0]).astype(np.int64) + (f[:, -1] > f[:, -2] + tol[:, 0])
    counts: np.ndarray = inner.sum(axis=1) + ends
    return counts


def _bin_linear(y: np.ndarray, lo: float, step: float) -> np.ndarray:
    # Linear binning (each point split between its two neighbouring grid nodes) keeps the
    # binned KDE accurate for bandwidths down to about one grid step.
    y = np.atleast_2d(y)
    pos = np.clip((y - lo) / step, 0, _GRID - 1 - 1e-9)
    i = np.floor(pos).astype(np.int64)
    frac = pos - i
    rows = y.shape[0]
    off = (np.arange(rows) * _GRID)[:, None]
    w = np.bincount((i + off).ravel(), weights=(1 - frac).ravel(), minlength=rows * _GRID)
    w += np.bincount((i + 1 + off).ravel(), weights=frac.ravel(), minlength=rows * _GRID)
    return w.reshape(rows, _GRID)


def _mode_locations(f: np.ndarray, lo: float, step: float) -> list[tuple[float, float]]:
    inner = np.flatnonzero((f[1:-1] > f[:-2]) & (f[1:-1] >= f[2:])) + 1
    return sorted(((float(f[i]), lo + i * step) for i in inner), reverse=True)


def multimodality(
    x: np.ndarray,
    *,
    rng: np.random.Generator,
    n_boot: int = 200,
    max_n: int = 1000,
    alpha: float = DIAGNOSTIC_ALPHA,
    sorted_x: np.ndarray | None = None,
) -> Multimodality:
    """Test whether a distribution has more than one mode (Silverman's test).

    The critical bandwidth ``h1`` is the smallest Gaussian-kernel bandwidth at which the
    density estimate has a single mode; a large ``h1`` means the data need heavy smoothing to
    look unimodal. Its significance comes from a smoothed bootstrap of the ``h1`` density
    (shrunk to keep the sample variance): the p-value is the share of bootstrap samples that
    are still multimodal at ``h1``. Positive data are tested on the log scale, where latency
    distributions are closer to symmetric and long right tails do not produce spurious modes.

    Parameters
    ----------
    x : numpy.ndarray
        Values (sample means or transactions). Above ``max_n`` values the test runs on
        ``max_n`` evenly spaced order statistics, which keep the shape of the distribution.
    rng : numpy.random.Generator
        Source of the bootstrap.
    n_boot : int
        Bootstrap samples.
    alpha : float
        Level for ``multimodal``.
    sorted_x : numpy.ndarray, optional
        ``numpy.sort(x)`` if already available.

    Returns
    -------
    Multimodality
        ``test == "none"`` for fewer than 20 values or no variance.

    Notes
    -----
    The test is known to be conservative (Hall & York 2001): a significant result is reliable,
    a non-significant one does not prove unimodality.

    References
    ----------
    Silverman, B. W. (1981). Using kernel density estimates to investigate multimodality.
    JRSS B 43(1), 97-99.
    Efron, B. & Tibshirani, R. J. (1993). An Introduction to the Bootstrap, section 16.5.
    Hall, P. & York, M. (2001). On the calibration of Silverman's test for multimodality.
    Statistica Sinica 11, 515-536.
    Besag, J. & Clifford, P. (1991). Sequential Monte Carlo p-values. Biometrika 78(2),
    301-304.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    s = np.sort(x) if sorted_x is None else sorted_x
    if n < 20 or s[-1] == s[0]:
        return Multimodality("none", None, False, (), int(n), None)
    if n > max_n:
        s = quantiles_sorted(s, np.linspace(0, 1, max_n))
    distinct = np.unique(s)
    if distinct.size < 0.5 * s.size:
        # Values recorded at a coarse resolution (whole milliseconds, integer TPS) form
        # spikes that any small bandwidth sees as separate modes; spreading each value
        # uniformly over its rounding interval removes that artefact of the recording.
        res = float(np.min(np.diff(distinct))) if distinct.size > 1 else 0.0
        s = np.sort(s + rng.uniform(-res / 2, res / 2, size=s.size))
    scale = "linear"
    if s[0] > 0:
        s = np.log(s)
        scale = "log"
    mu, sd = float(s.mean()), float(s.std(ddof=1))
    if not sd > 0:
        return Multimodality("none", None, False, (), int(n), scale)
    y = (s - mu) / sd
    lo, hi = float(y[0]), float(y[-1])
    step = (hi - lo) / (_GRID - 1)
    w = _bin_linear(y, lo, step)

    def modes(h: float) -> int:
        return int(_count_modes(_kde_on_grid(w, h / step))[0])

    h_lo, h_hi = step, max(hi - lo, step * 2)
    if modes(h_lo) <= 1:
        h_crit = h_lo
    else:
        # The mode count does not increase with the bandwidth (Silverman 1981), so bisection
        # finds h_crit; bisecting in log space reaches 0.5% precision in about 10 steps.
        while h_hi > 1.005 * h_lo:
            mid = math.sqrt(h_lo * h_hi)
            if modes(mid) <= 1:
                h_hi = mid
            else:
                h_lo = mid
        h_crit = h_hi

    # Smoothed bootstrap from the h_crit density, rescaled to the sample variance (Efron &
    # Tibshirani 1993, eq. 16.21); the grid is widened to hold the smoothed points. Batches
    # stop early once 10 bootstrap samples were multimodal: the p-value is then clearly
    # large and its sequential estimate count/draws is valid (Besag & Clifford 1991).
    m = y.size
    blo, bhi = lo - 4 * h_crit, hi + 4 * h_crit
    bstep = (bhi - blo) / (_GRID - 1)
    shrink = 1.0 / math.sqrt(1 + h_crit**2)
    done = 0
    count = 0
    while done < n_boot and count < 10:
        size = min(25, n_boot - done)
        xb = y[rng.integers(0, m, size=(size, m))]
        mb = xb.mean(axis=1, keepdims=True)
        yb = mb + (xb - mb + h_crit * rng.standard_normal((size, m))) * shrink
        fb = _kde_on_grid(_bin_linear(yb, blo, bstep), h_crit / bstep)
        count += int(np.count_nonzero(_count_modes(fb) > 1))
        done += size
    p = count / done
    multimodal = p < alpha
    found: tuple[float, ...] = ()
    if multimodal:
        # Locate the modes with Silverman's robust rule-of-thumb bandwidth when it resolves
        # them (h_crit itself smooths each bump towards the other), else just below h_crit.
        iqr = float(np.subtract(*np.percentile(y, [75, 25])))
        h_rot = 0.9 * min(1.0, iqr / 1.34) * m ** (-0.2) if iqr > 0 else h_crit
        h_loc = h_rot if 0 < h_rot < h_crit and modes(h_rot) >= 2 else 0.98 * h_crit
        f = _kde_on_grid(w, h_loc / step)[0]
        top = _mode_locations(f, lo, step)[:2]
        locs = sorted(loc * sd + mu for _, loc in top)
        found = tuple(math.exp(v) if scale == "log" else v for v in locs)
    return Multimodality("silverman", p, multimodal, found, int(n), scale)


@dataclass(frozen=True, slots=True)
class Consistency:
    """Consistency block of a condition summary.

    Attributes
    ----------
    samples : LevelConsistency
        Deviation of each sample mean from the median sample mean (listed per sample).
    transactions : LevelConsistency or None
        Shares of transactions beyond the thresholds, against the median transaction; None for
        per-sample data.
    by_session, by_period : tuple of GroupConsistency or None
        Breakdowns of the values per session and per period (``period`` is ``"hour"`` or
        ``"day"``).
    outliers : Outliers
    warmup : WarmUp
    multimodality : Multimodality
        Of the observations at the analysis level.
    multimodality_transactions : Multimodality or None
        Of the transactions, when the analysis level is the sample and values are
        per-transaction.
    """

    samples: LevelConsistency
    transactions: LevelConsistency | None
    by_session: tuple[GroupConsistency, ...] | None
    period: str | None
    by_period: tuple[GroupConsistency, ...] | None
    outliers: Outliers
    warmup: WarmUp
    multimodality: Multimodality
    multimodality_transactions: Multimodality | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (plain floats, ints, strings, None, lists and dicts)."""
        return {
            "thresholds_pct": list(THRESHOLDS_PCT),
            "samples": self.samples.to_dict(),
            "transactions": None if self.transactions is None else self.transactions.to_dict(),
            "by_session": None
            if self.by_session is None
            else [g.to_dict("session") for g in self.by_session],
            "period": self.period,
            "by_period": None
            if self.by_period is None
            else [g.to_dict("period") for g in self.by_period],
            "outliers": self.outliers.to_dict(),
            "warmup": self.warmup.to_dict(),
            "multimodality": self.multimodality.to_dict(),
            "multimodality_transactions": None
            if self.multimodality_transactions is None
            else self.multimodality_transactions.to_dict(),
        }


def _count_mz_outliers(s: np.ndarray, x: np.ndarray) -> int:
    # |Mz| > 3.5 <=> |x - median| > 3.5 * MAD / 0.6745: counted on the sorted values with two
    # binary searches. The MAD itself needs one O(n) selection.
    med = _median_sorted(s)
    mad = float(np.median(np.abs(x - med)))
    if mad > 0:
        c = MODIFIED_Z_THRESHOLD * mad / 0.6745
    else:
        mean_ad = float(np.mean(np.abs(x - med)))
        if mean_ad == 0:
            return 0
        c = MODIFIED_Z_THRESHOLD * 1.253314 * mean_ad
    below = np.searchsorted(s, med - c, side="left")
    above = s.size - np.searchsorted(s, med + c, side="right")
    return int(below + above)


def consistency(
    sample_means: np.ndarray,
    sample_ids: np.ndarray,
    *,
    values: np.ndarray | None = None,
    session: np.ndarray | None = None,
    time_s: np.ndarray | None = None,
    level: Literal["sample", "transaction"] = "sample",
    higher_is_slower: bool = True,
    rng: np.random.Generator,
    values_order: np.ndarray | None = None,
) -> Consistency:
    """Deviation-from-median profile, outliers, warm-up and multimodality of one condition.

    Parameters
    ----------
    sample_means : numpy.ndarray
        One value per sample in run order (the sample-level observations).
    sample_ids : numpy.ndarray
        The sample index of each entry of ``sample_means``.
    values : numpy.ndarray, optional
        Per-transaction values, if the data have them.
    session, time_s : numpy.ndarray, optional
        Session id and seconds since the run started, per entry of ``values`` when given,
        else per entry of ``sample_means``; the breakdowns use the same values.
    level : {"sample", "transaction"}
        Which observations the multimodality test examines first.
    higher_is_slower : bool
        True for latency, False for throughput (direction of the warm-up check).
    rng : numpy.random.Generator
        For the multimodality bootstrap.
    values_order : numpy.ndarray, optional
        ``numpy.argsort(values)`` if the caller has it (saves the only O(n log n) step).

    Returns
    -------
    Consistency

    References
    ----------
    Hoeger, R. (2016). Oracle Database Cloud (DBaaS) performance consistency, parts 1-3.
    Iglewicz, B. & Hoaglin, D. C. (1993). How to Detect and Handle Outliers, section 3.3.
    Silverman, B. W. (1981). JRSS B 43(1), 97-99.
    """
    means = np.asarray(sample_means, dtype=np.float64)
    ids = np.asarray(sample_ids)
    samples = _level(means, keep=True, ids=ids)
    tx = None
    mz_tx = None
    sorted_values = None
    if values is not None:
        order = np.argsort(values) if values_order is None else values_order
        sorted_values = values[order]
        tx = _level(values, keep=False, sorted_x=sorted_values)
        mz_tx = _count_mz_outliers(sorted_values, values)
    base = values if values is not None else means
    base_order = order if values is not None else None
    by_session = None
    if session is not None and session.size == base.size and base.size:
        by_session = breakdown(base, session, median=tx.median if tx else None, order=base_order)
    by_period = None
    period = None
    if time_s is not None and base.size == time_s.size and time_s.size:
        span = float(time_s.max() - time_s.min())
        length = _DAY if span > 48 * _HOUR else _HOUR
        period = "day" if length == _DAY else "hour"
        keys = np.floor(time_s / length).astype(np.int64)
        groups = breakdown(base, keys, order=base_order)
        by_period = tuple(
            GroupConsistency(
                g.key, g.n, g.median, g.median_deviation_pct, g.beyond, start_s=g.key * length
            )
            for g in groups
        )
    mz = np.abs(modified_z_scores(means)) > MODIFIED_Z_THRESHOLD
    outliers = Outliers(
        MODIFIED_Z_THRESHOLD,
        tuple(int(i) for i in ids[mz]),
        mz_tx,
        None if mz_tx is None or values is None else mz_tx / values.size,
    )
    warm = detect_warmup(means, higher_is_slower=higher_is_slower)
    if level == "transaction" and values is not None:
        mm = multimodality(values, rng=rng, sorted_x=sorted_values)
        mm_tx = None
    else:
        mm = multimodality(means, rng=rng)
        mm_tx = None
        if values is not None:
            mm_tx = multimodality(values, rng=rng, sorted_x=sorted_values)
    return Consistency(samples, tx, by_session, period, by_period, outliers, warm, mm, mm_tx)
