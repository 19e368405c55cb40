"""How many samples, and how long each: sample-size planning from a pilot run.

A sample's value of a statistic (its mean latency, p99 or TPS) varies for three reasons, the
levels of Kalibera & Jones (2013):

between blocks
    the machine drifts: every condition of a block shares it;
between samples
    each sample starts afresh (connections, caches, plans, the OS): a per-sample offset that a
    longer sample does not average away;
within a sample
    the transactions themselves, autocorrelated; their contribution to the sample's value
    shrinks as ``tau2 / duration``.

On the log scale (so a change is a ratio) the variance of a sample's value at duration ``d`` is
``between_blocks + between_samples + tau2 / d``. The pilot gives all three: ``tau2`` from the two
halves of each sample (their log ratio has variance ``4 tau2 / d``, autocorrelation included
at the scale of half a sample), the blocks from a two-way analysis of variance of conditions by
blocks, and the samples from what is left of the variance within a condition.

The verdict a plan is for is ``compare``'s at the sample level: a Welch t test of the samples'
values whose interval of the change must lie wholly outside the ROPE. Its power at ``n`` samples
per condition is that of a noncentral t with ``2n - 2`` degrees of freedom and noncentrality
``(|ln(1 + change)| - ln(1 + rope)) / sqrt(2 V(d) / n)``, at ``alpha`` over the comparisons
(Bonferroni, the first step of Holm). The plan is the ``(n, d)`` of least total run time whose
power reaches the target.

References
----------
Kalibera, T., Jones, R. (2013). Rigorous benchmarking in reasonable time. ISMM '13, 63-74.
Cohen, J. (1988). Statistical Power Analysis for the Behavioral Sciences, 2nd ed., ch. 2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import special, stats

from .observations import AnalysisError

__all__ = [
    "PLAN_STATS",
    "Candidate",
    "Pilot",
    "Plan",
    "PlanStat",
    "VarianceComponents",
    "plan_samples",
    "power",
    "variance_components",
]

#: sample durations a plan considers (s), besides the pilot's own
DURATIONS_S = (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0)
#: how far from the pilot's duration a plan extrapolates (a factor each way). The split of a
#: pilot's variance into between and within samples is uncertain when one dominates (a pilot
#: of 20 samples knows a variance to about +/-30%), and the error grows with the distance from
#: the duration measured; beyond it the warm-up and drift of a sample are also unknown. For
#: longer samples, run a pilot with longer samples.
EXTRAPOLATION = 4.0
MAX_SAMPLES = 1000


@dataclass(frozen=True, slots=True)
class VarianceComponents:
    """The variance of ``ln(value of a sample)`` by level, estimated from a pilot."""

    between_blocks: float
    between_samples: float
    #: within-sample variance times duration: the within part at duration d is ``tau2 / d``
    tau2: float
    #: the pilot's measured duration per sample (s)
    pilot_duration_s: float
    #: samples the estimates come from, and conditions
    samples: int
    conditions: int
    #: whether tau2 came from the halves of samples (False: from the transactions' spread,
    #: without autocorrelation: the best available when no rows were stored)
    from_halves: bool = True

    def variance(self, duration_s: float) -> float:
        """Variance of ``ln(value)`` of one sample of ``duration_s`` seconds."""
        return self.between_blocks + self.between_samples + self.tau2 / duration_s

    def shares(self) -> dict[str, float]:
        """Each level's share of a pilot-length sample's variance."""
        parts = {
            "between_blocks": self.between_blocks,
            "between_samples": self.between_samples,
            "within_samples": self.tau2 / self.pilot_duration_s,
        }
        total = sum(parts.values())
        return {k: (v / total if total > 0 else math.nan) for k, v in parts.items()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "between_blocks": self.between_blocks,
            "between_samples": self.between_samples,
            "within_samples_at_pilot": self.tau2 / self.pilot_duration_s,
            "tau2": self.tau2,
            "pilot_duration_s": self.pilot_duration_s,
            "samples": self.samples,
            "conditions": self.conditions,
            "from_halves": self.from_halves,
            "shares": self.shares(),
        }


def variance_components(
    condition: ArrayLike,
    block: ArrayLike,
    value: ArrayLike,
    duration_s: ArrayLike,
    *,
    half_log_ratio: ArrayLike | None = None,
    within_var_of_log_mean: ArrayLike | None = None,
) -> VarianceComponents:
    """The variance components of a pilot run's per-sample values.

    Parameters
    ----------
    condition, block, value, duration_s
        One entry per sample: its condition (any labels), block, value of the statistic (> 0)
        and measured duration in seconds.
    half_log_ratio
        Per sample, ``ln(value of its first half) - ln(value of its second half)``.
    within_var_of_log_mean
        Instead of halves, per sample: the variance of ``ln(value)`` due to its transactions
        (for a mean, ``sd^2 / (n mean^2)``), ignoring autocorrelation.
    """
    cond = np.asarray(condition)
    blk = np.asarray(block, dtype=np.int64)
    y = np.asarray(value, dtype=np.float64)
    dur = np.asarray(duration_s, dtype=np.float64)
    if not (len(cond) == len(blk) == len(y) == len(dur)):
        raise AnalysisError("condition, block, value and duration must have one entry per sample")
    keep = np.isfinite(y) & (y > 0) & np.isfinite(dur) & (dur > 0)
    cond, blk, y, dur = cond[keep], blk[keep], y[keep], dur[keep]
    labels, codes = np.unique(cond, return_inverse=True)
    k = len(labels)
    counts = np.bincount(codes, minlength=k)
    if k == 0 or np.any(counts < 2) or len(y) - k < 2:
        raise AnalysisError(
            "planning needs a pilot with at least 2 samples with a value in every condition;"
            " run one with samples = 5 or more"
        )
    ly = np.log(y)
    d0 = float(np.median(dur))
    # Pooled variance within conditions: everything but the conditions' own means.
    means = np.bincount(codes, weights=ly, minlength=k) / counts
    resid = ly - means[codes]
    pooled = float(resid @ resid) / (len(ly) - k)
    if half_log_ratio is not None:
        h = np.asarray(half_log_ratio, dtype=np.float64)[keep]
        h = h[np.isfinite(h)]
        if len(h) < 2:
            raise AnalysisError("planning needs both halves of at least 2 samples")
        # Var(D) = 2 * tau2 / (d/2) = 4 tau2 / d; E[D^2], not the variance: a trend inside the
        # samples (a warm-up too short) is within-sample variation too.
        tau2 = d0 * float(np.mean(h * h)) / 4.0
        from_halves = True
    elif within_var_of_log_mean is not None:
        w = np.asarray(within_var_of_log_mean, dtype=np.float64)[keep]
        tau2 = float(np.nanmean(w * dur))
        from_halves = False
    else:
        raise AnalysisError("give half_log_ratio or within_var_of_log_mean")
    between_total = max(0.0, pooled - tau2 / d0)
    between_blocks = min(_block_component(codes, blk, ly, k), between_total)
    return VarianceComponents(
        between_blocks=between_blocks,
        between_samples=between_total - between_blocks,
        tau2=tau2,
        pilot_duration_s=d0,
        samples=len(ly),
        conditions=k,
        from_halves=from_halves,
    )


def _block_component(codes: np.ndarray, blk: np.ndarray, ly: np.ndarray, k: int) -> float:
    """The block variance component from a two-way ANOVA (conditions x blocks) over the
    complete blocks, by the method of moments: ``(MS_blocks - MS_residual) / k``, at least 0."""
    if k < 2:
        return 0.0
    complete = [b for b in np.unique(blk) if np.count_nonzero(blk == b) == k]
    if len(complete) < 2:
        return 0.0
    table = np.empty((len(complete), k))
    for i, b in enumerate(complete):
        rows = blk == b
        if len(np.unique(codes[rows])) != k:
            return 0.0  # a block with two samples of one condition: not a plain layout
        table[i, codes[rows]] = ly[rows]
    r = len(complete)
    grand = table.mean()
    block_means, cond_means = table.mean(axis=1), table.mean(axis=0)
    ms_blocks = k * float(np.sum((block_means - grand) ** 2)) / (r - 1)
    resid = table - block_means[:, None] - cond_means[None, :] + grand
    ms_resid = float(np.sum(resid**2)) / ((r - 1) * (k - 1))
    return max(0.0, (ms_blocks - ms_resid) / k)


def power(
    n: int,
    variance: float,
    *,
    change_pct: float,
    rope_pct: float,
    alpha: float,
    comparisons: int = 1,
) -> float:
    """Chance that a Welch t verdict on ``n`` samples per condition calls a true change of
    ``change_pct`` faster or slower: its interval wholly beyond the ROPE, at ``alpha`` over
    ``comparisons`` (equal variances, so Welch's degrees of freedom are ``2n - 2``)."""
    if n < 2:
        return 0.0
    margin = abs(math.log1p(change_pct / 100)) - math.log1p(rope_pct / 100)
    if margin <= 0:
        return 0.0
    if variance <= 0:
        return 1.0
    df = 2 * n - 2
    q = float(special.stdtrit(df, 1 - alpha / comparisons / 2))
    ncp = margin / math.sqrt(2 * variance / n)
    return float(stats.nct.sf(q, df, ncp))


PlanStat = Literal["mean", "p99", "tps"]
PLAN_STATS: tuple[PlanStat, ...] = ("mean", "p99", "tps")


@dataclass(frozen=True, slots=True)
class Pilot:
    """What a pilot run says about the variance of a statistic and the cost of a sample."""

    components: VarianceComponents
    #: per sample beyond its measured duration: warm-up plus the gap to the next sample (s)
    overhead_s: float
    conditions: tuple[str, ...]
    stat: PlanStat
    txn: str | None
    #: the run's degraded samples, left out of the pilot (unless the store takes them in)
    degraded: int = 0


@dataclass(frozen=True, slots=True)
class Candidate:
    """The samples a duration needs for the target power, and what the run then costs."""

    duration_s: float
    samples: int | None  # None: not reachable within MAX_SAMPLES
    power: float
    run_s: float | None


@dataclass(frozen=True, slots=True)
class Plan:
    best: Candidate | None
    candidates: tuple[Candidate, ...]
    target_power: float
    change_pct: float
    rope_pct: float
    alpha: float
    comparisons: int
    conditions: int
    #: per sample, beyond its measured duration: warm-up and the set-up between samples (s)
    overhead_s: float
    #: the best plan's power if the true variance lies at either end of its 80% interval from
    #: the pilot (chi-square, samples - conditions degrees of freedom): how much the promise
    #: depends on the pilot's size
    power_range: tuple[float, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        def cand(c: Candidate) -> dict[str, Any]:
            return {
                "duration_s": c.duration_s,
                "samples": c.samples,
                "power": c.power,
                "run_s": c.run_s,
            }

        return {
            "samples": None if self.best is None else self.best.samples,
            "duration_s": None if self.best is None else self.best.duration_s,
            "power": None if self.best is None else self.best.power,
            "run_s": None if self.best is None else self.best.run_s,
            "target_power": self.target_power,
            "change_pct": self.change_pct,
            "rope_pct": self.rope_pct,
            "alpha": self.alpha,
            "comparisons": self.comparisons,
            "conditions": self.conditions,
            "overhead_s": self.overhead_s,
            "power_range": None if self.power_range is None else list(self.power_range),
            "candidates": [cand(c) for c in self.candidates],
        }


def plan_samples(
    components: VarianceComponents,
    *,
    change_pct: float,
    rope_pct: float = 2.0,
    alpha: float = 0.05,
    target_power: float = 0.8,
    conditions: int | None = None,
    comparisons: int | None = None,
    overhead_s: float = 0.0,
    min_samples: int = 10,
    durations_s: Sequence[float] | None = None,
) -> Plan:
    """The plan of least run time that reaches ``target_power`` for ``change_pct``.

    For each candidate duration (the pilot's, and the usual ones within a factor of
    :data:`EXTRAPOLATION` of it), the fewest samples per condition from ``min_samples`` up to
    :data:`MAX_SAMPLES` that reach the power; the run then takes
    ``conditions * samples * (duration + overhead_s)``.
    """
    if not 0 < target_power < 1:
        raise AnalysisError(f"power={target_power!r} must be between 0 and 1, e.g. 0.8")
    if not 0 < alpha < 1:
        raise AnalysisError(f"alpha={alpha!r} must be between 0 and 1")
    if abs(math.log1p(change_pct / 100)) <= math.log1p(rope_pct / 100):
        raise AnalysisError(
            f"a change of {change_pct:g}% lies inside the ROPE of ±{rope_pct:g}%: no verdict can"
            " call it faster or slower; plan for a larger change or a smaller --rope"
        )
    k = conditions if conditions is not None else components.conditions
    m = comparisons if comparisons is not None else max(k - 1, 1)
    d0 = components.pilot_duration_s
    grid = durations_s if durations_s is not None else DURATIONS_S
    near = [d for d in grid if abs(d - d0) <= 0.02 * d0]
    # A pilot of 5 s measures 5.01 s: plan with the 5 s it was asked for.
    pilot = near[0] if near else d0
    chosen = sorted({pilot} | {d for d in grid if d0 / EXTRAPOLATION <= d <= d0 * EXTRAPOLATION})
    out = []
    for d in chosen:
        v = components.variance(d)
        found: Candidate | None = None
        for n in range(max(min_samples, 2), MAX_SAMPLES + 1):
            p = power(n, v, change_pct=change_pct, rope_pct=rope_pct, alpha=alpha, comparisons=m)
            if p >= target_power:
                found = Candidate(d, n, p, k * n * (d + overhead_s))
                break
        if found is None:
            p = power(
                MAX_SAMPLES, v, change_pct=change_pct, rope_pct=rope_pct, alpha=alpha, comparisons=m
            )
            found = Candidate(d, None, p, None)
        out.append(found)
    reachable = [c for c in out if c.run_s is not None]
    best = min(reachable, key=lambda c: (c.run_s, c.duration_s)) if reachable else None
    power_range = None
    df = components.samples - components.conditions
    if best is not None and best.samples is not None and df >= 1:
        v = components.variance(best.duration_s)
        bounds = []
        for q in (stats.chi2.ppf(0.1, df), stats.chi2.ppf(0.9, df)):
            bounds.append(
                power(
                    best.samples,
                    v * df / float(q),
                    change_pct=change_pct,
                    rope_pct=rope_pct,
                    alpha=alpha,
                    comparisons=m,
                )
            )
        power_range = (min(bounds), max(bounds))
    return Plan(
        best=best,
        candidates=tuple(out),
        target_power=target_power,
        change_pct=change_pct,
        rope_pct=rope_pct,
        alpha=alpha,
        comparisons=m,
        conditions=k,
        overhead_s=overhead_s,
        power_range=power_range,
    )
