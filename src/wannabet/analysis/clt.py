"""Central-limit statements: the mean's confidence interval and "wanna bet" ranges.

The central limit theorem makes sample means approximately normal whatever the distribution of
single transactions. That licenses two different "plus or minus" statements, which are easy to
confuse:

* a **confidence interval** for the true mean (shrinks like ``sd / sqrt(n)``), and
* a **prediction interval** for the *next* sample mean (stays about ``sd`` wide, because the
  next sample has its own noise on top of our uncertainty about the mean).

The bet "9 of the next 10 sample means fall between a and b" is a 90% prediction interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .distributions import norm_cdf, norm_ppf, t_ppf

__all__ = [
    "CLTSummary",
    "Interval",
    "WithinRange",
    "bet_sentence",
    "clt_summary",
    "format_range",
    "mean_interval",
    "prediction_interval",
    "sd_range",
    "share_within",
]

#: Below this many observations the mean's interval uses Student's t instead of the normal
#: quantile, the usual textbook rule of thumb the reference analysts follow.
Z_MIN_N = 30


@dataclass(frozen=True, slots=True)
class Interval:
    """A two-sided interval around an estimate.

    ``method`` says how it was computed (e.g. ``"t (4 df)"``, ``"z"``, ``"bca bootstrap"``);
    ``level`` is the nominal coverage in (0, 1).
    """

    estimate: float
    low: float
    high: float
    level: float
    method: str

    def contains(self, value: float) -> bool:
        """True when ``low <= value <= high``."""
        return self.low <= value <= self.high


@dataclass(frozen=True, slots=True)
class WithinRange:
    """How many values fall within ``mean +/- k_sd * sd``."""

    k_sd: float
    low: float
    high: float
    count: int
    n: int

    @property
    def share(self) -> float:
        """Fraction of values inside the range."""
        return self.count / self.n if self.n else 0.0


@dataclass(frozen=True, slots=True)
class CLTSummary:
    """Central-limit block of a condition summary.

    Attributes
    ----------
    n : int
        Number of sample means the prediction ranges are based on.
    mean_ci95 : Interval
        95% confidence interval of the mean; ``method`` says t or z (or cluster-robust t at the
        transaction level).
    prediction90, prediction95 : Interval
        Where the next sample mean should fall with 90% / 95% probability:
        ``mean +/- t(n-1) * sd * sqrt(1 + 1/n)``.
    sd_range_1645, sd_range_2 : Interval
        The plain ``mean +/- 1.645 sd`` and ``mean +/- 2 sd`` ranges of the reference analysis.
    bet : str
        The "wanna bet" sentence, built from ``prediction90``.
    within_2sd : WithinRange
        How many of the observed sample means fall within ``mean +/- 2 sd``.
    """

    n: int
    mean: float
    sd: float
    mean_ci95: Interval
    prediction90: Interval
    prediction95: Interval
    sd_range_1645: Interval
    sd_range_2: Interval
    bet: str
    within_2sd: WithinRange


def _mean_sd(x: np.ndarray) -> tuple[int, float, float]:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError("needs a non-empty 1-D array")
    n = int(x.size)
    return n, float(x.mean()), float(x.std(ddof=1)) if n > 1 else 0.0


def mean_interval(x: np.ndarray, level: float = 0.95) -> Interval:
    """Confidence interval of the mean: Student's t below 30 values, normal (z) from 30 on.

    Parameters
    ----------
    x : numpy.ndarray
        Independent observations (e.g. sample means).
    level : float
        Coverage, default 0.95.

    Returns
    -------
    Interval
        ``mean +/- q * sd / sqrt(n)`` with ``q`` from t(n-1) or N(0, 1); ``method`` names it.
        A single value gives the degenerate interval [x, x] with method ``"none (n=1)"``.

    References
    ----------
    Student (1908). The probable error of a mean. Biometrika 6(1), 1-25.
    Montgomery, D. C. & Runger, G. C. (2014). Applied Statistics and Probability for Engineers,
    6th ed., Wiley, sections 8.1-8.2 (z interval for large n, t interval for small n).
    """
    n, mean, sd = _mean_sd(x)
    if n < 2:
        return Interval(mean, mean, mean, level, "none (n=1)")
    if n < Z_MIN_N:
        q = float(t_ppf(0.5 + level / 2, n - 1))
        method = f"t ({n - 1} df)"
    else:
        q = float(norm_ppf(0.5 + level / 2))
        method = "z"
    half = q * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, level, method)


def prediction_interval(x: np.ndarray, level: float = 0.90) -> Interval:
    """Interval that the next observation (e.g. the next sample mean) falls in with ``level``.

    ``mean +/- t(level, n-1) * sd * sqrt(1 + 1/n)``: the ``1/n`` term is the uncertainty about
    the mean, the ``1`` the next observation's own scatter; t accounts for estimating ``sd``.

    Parameters
    ----------
    x : numpy.ndarray
        Independent, approximately normal observations (sample means are, by the CLT).
    level : float
        Probability, default 0.90 ("9 of the next 10").

    Returns
    -------
    Interval

    References
    ----------
    Hahn, G. J. & Meeker, W. Q. (1991). Statistical Intervals. Wiley, section 4.7 (prediction
    interval for one future observation from a normal distribution).
    """
    n, mean, sd = _mean_sd(x)
    if n < 2:
        return Interval(mean, mean, mean, level, "none (n=1)")
    q = float(t_ppf(0.5 + level / 2, n - 1))
    half = q * sd * math.sqrt(1 + 1 / n)
    return Interval(mean, mean - half, mean + half, level, f"t prediction ({n - 1} df)")


def sd_range(x: np.ndarray, k_sd: float) -> Interval:
    """The plain ``mean +/- k_sd * sd`` range (sd with ``ddof=1``).

    For normal data about 90% of values lie within 1.645 sd and 95% within 1.96 (about 2) sd.
    This ignores that mean and sd are estimated, so for few samples it is too narrow to bet on;
    :func:`prediction_interval` corrects that.

    References
    ----------
    Shallahamer, C. (2012). Wanna bet? Cool facts about the central limit theorem. OraPub blog
    (the +/- 1.645 sd and +/- 2 sd ranges).
    """
    _n, mean, sd = _mean_sd(x)
    level = float(2 * norm_cdf(k_sd) - 1)
    return Interval(mean, mean - k_sd * sd, mean + k_sd * sd, level, f"mean +/- {k_sd:g} sd")


def share_within(x: np.ndarray, k_sd: float = 2.0) -> WithinRange:
    """Count the values within ``mean +/- k_sd * sd`` of their own mean.

    Parameters
    ----------
    x : numpy.ndarray
        Values, e.g. sample means.
    k_sd : float
        Half-width in standard deviations (``ddof=1``).

    Returns
    -------
    WithinRange
        For the thirty child means of the reference article, ``k_sd=2`` gives 29 of 30.

    References
    ----------
    Shallahamer, C. (2012). Wanna bet? Cool facts about the central limit theorem. OraPub blog.
    """
    r = sd_range(x, k_sd)
    xs = np.asarray(x, dtype=np.float64)
    count = int(np.count_nonzero((xs >= r.low) & (xs <= r.high)))
    return WithinRange(k_sd=float(k_sd), low=r.low, high=r.high, count=count, n=int(xs.size))


def _decimals(lo: float, hi: float) -> int:
    # Enough decimals that the width of the range shows about three significant digits.
    width = abs(hi - lo)
    ref = width if width > 0 else max(abs(lo), abs(hi))
    if ref == 0 or not math.isfinite(ref):
        return 1
    return int(min(6, max(0, 2 - math.floor(math.log10(ref)))))


def format_range(lo: float, hi: float) -> tuple[str, str]:
    """Format both ends of a range with the same, width-appropriate number of decimals."""
    d = _decimals(lo, hi)
    return f"{lo:.{d}f}", f"{hi:.{d}f}"


#: the units a latency in ms is said in, largest first, with how many make one ms
_TIME_UNITS = (("s", 1e-3), ("ms", 1.0), ("µs", 1e3), ("ns", 1e6))


def _readable_ms(low: float, high: float) -> tuple[float, float, str]:
    """Two latencies in ms, in the largest unit in which their typical size is at least 1:
    the rule the tables beside the sentence choose their unit by
    (:func:`wannabet.render.format.time_unit`), so the bet reads in the table's unit."""
    sizes = [abs(v) for v in (low, high) if math.isfinite(v) and v != 0.0]
    if not sizes:
        return low, high, "ms"
    typical = sum(sizes) / len(sizes)
    name, per_ms = next(((n, k) for n, k in _TIME_UNITS if typical * k >= 1.0), _TIME_UNITS[-1])
    return low * per_ms, high * per_ms, name


def bet_sentence(interval: Interval, *, unit: str = "", what: str = "sample means") -> str:
    """Phrase a prediction interval as a bet: "9 of the next 10 sample means should fall ...".

    Parameters
    ----------
    interval : Interval
        A prediction interval; its level picks the odds (0.90 -> 9 of 10, 0.95 -> 19 of 20).
    unit : str
        Appended to the upper bound, e.g. ``"ms"``.
    what : str
        What is predicted, e.g. ``"sample means"``.
    """
    low, high = interval.low, interval.high
    if unit == "ms":
        low, high, unit = _readable_ms(low, high)
    lo, hi = format_range(low, high)
    suffix = f" {unit}" if unit else ""
    level = interval.level
    if abs(level - 0.95) < 1e-9:
        odds = "19 of the next 20"
    elif abs(level * 10 - round(level * 10)) < 1e-9:
        odds = f"{round(level * 10)} of the next 10"
    else:
        odds = f"{level:.0%} of the next"
    return f"{odds} {what} should fall between {lo} and {hi}{suffix}"


def clt_summary(
    x: np.ndarray,
    *,
    mean_ci: Interval | None = None,
    unit: str = "",
    what: str = "sample means",
) -> CLTSummary:
    """Central-limit summary of a set of sample means.

    Parameters
    ----------
    x : numpy.ndarray
        One mean per sample (or per batch).
    mean_ci : Interval, optional
        A 95% interval for the mean computed elsewhere (the transaction level passes its
        cluster-robust interval); by default :func:`mean_interval` of ``x``.
    unit, what : str
        Wording of the bet sentence.

    Returns
    -------
    CLTSummary

    References
    ----------
    Hahn, G. J. & Meeker, W. Q. (1991). Statistical Intervals. Wiley, sections 4.7 and 2.3.
    Shallahamer, C. (2012). Wanna bet? Cool facts about the central limit theorem. OraPub blog.
    """
    n, mean, sd = _mean_sd(x)
    p90 = prediction_interval(x, 0.90)
    if n < 2:
        bet = f"no bet: one of the {what} says nothing about the next; run at least 2, better 10"
    elif p90.low < 0 <= float(np.min(x)):
        # A normal prediction below zero for a quantity that cannot be negative (a latency,
        # a rate): too few samples, or too skewed, for this bet to mean anything.
        why = "run at least 10" if n < 10 else "they are too skewed for a normal bet"
        bet = f"no bet: from {n} {what} the 90% prediction interval reaches below zero; {why}"
    else:
        bet = bet_sentence(p90, unit=unit, what=what)
    return CLTSummary(
        n=n,
        mean=mean,
        sd=sd,
        mean_ci95=mean_ci if mean_ci is not None else mean_interval(x, 0.95),
        prediction90=p90,
        prediction95=prediction_interval(x, 0.95),
        sd_range_1645=sd_range(x, 1.645),
        sd_range_2=sd_range(x, 2.0),
        bet=bet,
        within_2sd=share_within(x, 2.0),
    )
