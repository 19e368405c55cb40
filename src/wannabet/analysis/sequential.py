"""Anytime-valid confidence sequences for the change between conditions, block by block.

A run with ``until_decided`` looks at its comparisons after every block and stops as soon as each
is decided. Looking again and again at a fixed-sample interval or p-value would inflate its error
rate far above its nominal level (with 50 looks, an A-vs-A comparison at alpha 0.05 is called
"different" in about a third of runs). A confidence sequence is a sequence of intervals that
covers the true change at *every* block at once with probability at least ``1 - alpha``, so it can
be watched, and the run stopped whenever, without losing that guarantee.

The data
    Randomized blocks run one sample of every condition per block. For a condition and its
    baseline the block's paired difference is ``d = ln(m_condition) - ln(m_baseline)`` of the two
    samples' mean latencies: block effects (drift of the machine) cancel, and the ``d`` of
    different blocks are independent with a common mean ``delta``, the log ratio of the two
    conditions. Sample means of thousands of transactions are close to normal (the central limit
    theorem), so the ``d`` are too; their variance is unknown.

The sequence
    For normal data with unknown variance the Bayes factor of the t statistic with a normal
    mixture N(0, g) over the standardized effect (Gönen et al. 2005; Rouder et al. 2009) is a
    likelihood ratio of the scale-invariant statistics, hence a nonnegative martingale under
    ``delta = delta0`` (Lai 1976; Pérez-Ortiz et al. 2024). By Ville's inequality it ever reaches
    ``1/alpha`` with probability at most ``alpha``. The values ``delta0`` it has not rejected form
    the confidence sequence: ``mean(d) +/- c_n(alpha, g) * sd(d) / sqrt(n)``, with ``c_n`` in
    closed form (:func:`radius_multiplier`). The running intersection of the intervals is kept:
    it has the same guarantee and never widens.

Several comparisons share ``alpha`` by Bonferroni: each sequence runs at ``alpha / m``, so the
chance that any of the ``m`` ever misses is at most ``alpha``.

References
----------
Lai, T. L. (1976). On confidence sequences. Annals of Statistics 4(2), 265-280.
Gönen, M., Johnson, W. O., Lu, Y., Westfall, P. H. (2005). The Bayesian two-sample t test.
The American Statistician 59(3), 252-257.
Rouder, J. N., Speckman, P. L., Sun, D., Morey, R. D., Iverson, G. (2009). Bayesian t tests for
accepting and rejecting the null hypothesis. Psychonomic Bulletin & Review 16, 225-237.
Howard, S. R., Ramdas, A., McAuliffe, J., Sekhon, J. (2021). Time-uniform, nonparametric,
nonasymptotic confidence sequences. Annals of Statistics 49(2), 1055-1080.
Pérez-Ortiz, M. F., Lardy, T., de Heide, R., Grünwald, P. D. (2024). E-statistics, group
invariance and anytime-valid testing. Annals of Statistics 52(4), 1410-1432.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .observations import AnalysisError

__all__ = [
    "MIXTURE_G",
    "SequenceState",
    "SequentialComparison",
    "confidence_sequence",
    "radius_multiplier",
    "sequential_comparisons",
]

#: variance of the normal mixture over the standardized effect ``delta / sd(d)``. Benchmark
#: effects are large in these units (sample means are precise), so the mixture puts its weight
#: up to about 2 standard deviations: the sequence can decide from the fourth block on, and
#: stays within about 1.8 times a fixed-sample t interval's width for 5 to 60 blocks.
MIXTURE_G = 4.0

SequenceState = Literal["faster", "slower", "no-difference", "undecided"]


@functools.lru_cache(maxsize=4096)
def radius_multiplier(n: int, alpha: float, g: float = MIXTURE_G) -> float:
    """``c`` such that ``mean +/- c * sd / sqrt(n)`` is the sequence's interval after ``n``
    paired differences; ``inf`` while ``n`` is too small to reject anything at ``alpha``.

    The Bayes factor ``BF(t) = (1 + n g)^(-1/2) * ((1 + t^2/v) / (1 + t^2/(v (1 + n g))))^((v +
    1)/2)`` with ``v = n - 1`` grows with ``|t|`` up to ``(1 + n g)^(v/2)``; solving ``BF(t) =
    1/alpha`` for ``t`` gives ``c``.
    """
    if n < 2:
        return math.inf
    if not 0.0 < alpha < 1.0:
        raise AnalysisError(f"alpha={alpha!r} must be between 0 and 1")
    v = n - 1
    k = 1.0 + n * g
    # (1 + u) / (1 + u / k) = r with u = t^2 / v
    log_r = (math.log(1.0 / alpha) + 0.5 * math.log(k)) * 2.0 / (v + 1)
    if log_r >= math.log(k):
        return math.inf
    r = math.exp(log_r)
    u = (r - 1.0) / (1.0 - r / k)
    return math.sqrt(u * v)


def confidence_sequence(
    d: ArrayLike, alpha: float, g: float = MIXTURE_G
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """The sequence over the paired differences ``d`` in the order they came.

    Returns
    -------
    (mean, low, high)
        After each difference: the running mean and the running intersection of the intervals
        (``-inf``/``inf`` while nothing is excluded yet). A sequence whose intersection became
        empty (possible only by chance, at most ``alpha``) keeps its last non-empty interval.
    """
    x = np.asarray(d, dtype=np.float64)
    if x.ndim != 1:
        raise AnalysisError("the paired differences must be one-dimensional")
    if not np.all(np.isfinite(x)):
        raise AnalysisError("the paired differences must be finite")
    n = len(x)
    if n == 0:
        empty = np.empty(0)
        return empty, empty.copy(), empty.copy()
    k = np.arange(1, n + 1, dtype=np.float64)
    # Running mean and SD from sums of the values shifted by the first one (no cancellation
    # when the change is large against its spread).
    y = x - x[0]
    s1, s2 = np.cumsum(y), np.cumsum(y * y)
    mean = x[0] + s1 / k
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.maximum(s2 - s1 * s1 / k, 0.0) / (k - 1)
    c = np.array([radius_multiplier(int(i), alpha, g) for i in k])
    with np.errstate(invalid="ignore"):
        r = np.where(np.isfinite(c), c * np.sqrt(var) / np.sqrt(k), np.inf)
    low = np.maximum.accumulate(mean - r)
    high = np.minimum.accumulate(mean + r)
    if np.any(low > high):
        # The intersection emptied (a miss, by chance): keep the last non-empty interval.
        lo, hi = -math.inf, math.inf
        for i in range(n):
            new_lo, new_hi = max(lo, mean[i] - r[i]), min(hi, mean[i] + r[i])
            if new_lo <= new_hi:
                lo, hi = new_lo, new_hi
            low[i], high[i] = lo, hi
    return mean, low, high


@dataclass(frozen=True, slots=True)
class SequentialComparison:
    """One condition against its reference after the blocks seen so far."""

    condition: str
    baseline: str
    #: blocks in which both conditions have a sample with a mean
    blocks: int
    #: the change of the geometric mean of the sample means, in %
    change_pct: float
    #: the confidence sequence's interval of the change in % (infinite while undecidable)
    low_pct: float
    high_pct: float
    state: SequenceState
    #: level of this sequence (alpha over the comparisons, by Bonferroni)
    alpha: float

    def to_dict(self) -> dict[str, Any]:
        def finite(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        return {
            "condition": self.condition,
            "baseline": self.baseline,
            "blocks": self.blocks,
            "change_pct": finite(self.change_pct),
            "low_pct": finite(self.low_pct),
            "high_pct": finite(self.high_pct),
            "state": self.state,
            "alpha": self.alpha,
        }

    def describe(self) -> str:
        """``[-12.0, -3.1]% faster``, or that there is no interval yet, for a progress line."""
        if not math.isfinite(self.high_pct):
            return f"no interval yet after {self.blocks} blocks, {self.state}"
        return f"[{self.low_pct:+.1f}, {self.high_pct:+.1f}]% {self.state}"


def _pct(log_ratio: float) -> float:
    if log_ratio == math.inf:
        return math.inf
    if log_ratio == -math.inf:
        return -100.0
    return (math.exp(log_ratio) - 1.0) * 100.0


def _state(low: float, high: float, rope_pct: float, higher_is_faster: bool) -> SequenceState:
    if low > rope_pct or high < -rope_pct:
        up = low > rope_pct
        return "faster" if up == higher_is_faster else "slower"
    if -rope_pct <= low and high <= rope_pct:
        return "no-difference"
    return "undecided"


def sequential_comparisons(
    block_values: Mapping[str, Mapping[int, float]],
    *,
    pairs: Sequence[tuple[str, str]],
    alpha: float,
    rope_pct: float,
    higher_is_faster: bool = False,
    g: float = MIXTURE_G,
) -> list[SequentialComparison]:
    """The confidence sequence of each ``(condition, reference)`` pair after every block so far.

    Parameters
    ----------
    block_values
        Per condition label: each block's sample statistic (the mean latency, or the TPS), > 0.
    pairs
        The comparisons, ``(condition, reference)``; ``alpha`` is split among them.
    alpha
        Probability that any of the sequences ever fails to cover its true change.
    rope_pct
        Half-width of the region of practical equivalence in %: a comparison is decided when its
        interval lies wholly outside it (faster or slower) or wholly inside it (no difference).
    higher_is_faster
        False for latency, True for throughput.
    """
    if not pairs:
        raise AnalysisError("a sequential comparison needs at least one pair of conditions")
    if not (math.isfinite(rope_pct) and rope_pct >= 0):
        raise AnalysisError(f"rope_pct={rope_pct!r} must be a finite percentage >= 0")
    level = alpha / len(pairs)
    out = []
    for condition, reference in pairs:
        mine, theirs = block_values.get(condition, {}), block_values.get(reference, {})
        both = sorted(b for b in mine if b in theirs and mine[b] > 0 and theirs[b] > 0)
        d = np.array([math.log(mine[b]) - math.log(theirs[b]) for b in both], dtype=np.float64)
        if len(d):
            mean, low, high = confidence_sequence(d, level, g)
            m, lo, hi = float(mean[-1]), float(low[-1]), float(high[-1])
        else:
            m, lo, hi = math.nan, -math.inf, math.inf
        # While nothing is excluded the interval is the whole line, not "down to -100%".
        low_pct, high_pct = (_pct(lo), _pct(hi)) if math.isfinite(lo) else (-math.inf, math.inf)
        out.append(
            SequentialComparison(
                condition=condition,
                baseline=reference,
                blocks=len(d),
                change_pct=_pct(m) if math.isfinite(m) else math.nan,
                low_pct=low_pct,
                high_pct=high_pct,
                state=_state(low_pct, high_pct, rope_pct, higher_is_faster),
                alpha=level,
            )
        )
    return out
