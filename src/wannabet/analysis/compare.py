"""The verdict: is a condition faster, slower, the same, or not yet known against the baseline?

:func:`compare` summarizes every condition, tests each against the baseline, estimates how
large the change is with intervals, and turns that into one of four verdicts:

* ``faster`` / ``slower`` - the test is significant at ``alpha`` (Holm-adjusted when there are
  several conditions) **and** the interval of the relative change of the mean lies wholly
  outside the region of practical equivalence ``+/- rope_pct``;
* ``no-difference`` - the interval lies wholly inside the ROPE ("equivalent within +/-2%"):
  a positive finding, as much a bet as faster or slower;
* ``inconclusive`` - anything else: too few samples, an interval too wide to tell, a test and
  an interval that disagree; the note says which, and so what more data would settle.

Two levels of analysis:

* ``level="sample"`` (default): each sample's mean is one observation, as the reference
  analysts did. Welch's t when both groups look normal, else Mann-Whitney U.
* ``level="transaction"``: statistics of all transactions, with inference that treats each
  sample as a cluster (ratio-estimator mean with cluster-robust standard error, Welch t with
  samples-minus-one df, cluster bootstrap). Transactions are never treated as independent.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from . import histogram
from .agreement import disagreement
from .clt import CLTSummary, Interval, clt_summary
from .consistency import Consistency, consistency
from .dependence import (
    ClusterMean,
    Groups,
    cluster_mean,
    effective_sample_size,
    group_codes,
    lag1_autocorrelation,
)
from .descriptive import MAD_TO_SD, Descriptive, Normality, describe, normality
from .diagnostics import (
    MIN_SAMPLES,
    Diagnostic,
    condition_diagnostics,
    environment_diagnostic,
    too_few_samples,
)
from .distributions import t_ppf
from .effects import (
    Clustered,
    RelativeChange,
    bootstrap_relative_change,
    cliffs_delta,
    cluster_bootstrap_relative_change,
    hodges_lehmann,
)
from .observations import AnalysisError, Moments, Observations
from .tests import (
    TestResult,
    cluster_welch_anova,
    cluster_welch_t,
    holm,
    kruskal_wallis,
    one_way_anova,
    p_text,
    two_sample_test,
)

if TYPE_CHECKING:  # the Bayesian module is imported only when asked for
    from .bayes import BayesAnalysis

__all__ = [
    "Comparison",
    "ConditionSummary",
    "Level",
    "Metric",
    "PairwiseComparison",
    "Verdict",
    "compare",
    "p_text",
    "verdict",
]

#: what is compared: a latency (lower is faster), a throughput (higher is faster), or the
#: transactions' recorded result (``compare --stat result``: neither direction is faster)
#: ``cost``: a unit-of-work figure per sample (server CPU, wait or response ms per commit,
#: ``compare --stat cpu``); lower or higher, not faster or slower
Metric = Literal["latency", "throughput", "result", "cost"]
Level = Literal["sample", "transaction"]
#: which pairs of conditions are compared: each against the baseline, every pair, each against
#: the one before it (successive states), or ``within=FACTOR``: the levels of one factor with
#: every other factor held fixed (each pair of conditions that differ in that factor only)
Pairs = str
PAIRS: tuple[str, ...] = ("baseline", "all", "successive", "within=FACTOR")
#: the prefix of ``--pairs within=FACTOR``
WITHIN = "within="
#: ``higher``/``lower``: a result that changed beyond the ROPE (the result metric only)
Verdict = Literal["faster", "slower", "higher", "lower", "no-difference", "inconclusive"]

_DEFAULT_UNIT = {"latency": "ms", "throughput": "tps", "result": "", "cost": "ms"}
#: what the one value per sample is, in the bet sentence and its "no bet" reasons
_DEFAULT_VALUES_NAME = {
    "latency": "sample means",
    "throughput": "sample throughputs",
    "result": "sample results",
    "cost": "sample costs",
}


def _f(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _pair(iv: Interval | None) -> list[float | None] | None:
    if iv is None:
        return None
    if iv.method.startswith("none"):  # one value: no interval, not a zero-width one
        return [None, None]
    return [_f(iv.low), _f(iv.high)]


@dataclass(frozen=True, slots=True)
class ConditionSummary:
    """Everything known about one condition on its own.

    Attributes
    ----------
    condition : str
        Label.
    level : {"sample", "transaction"}
        Level of the observations ``n`` counts and ``descriptive`` describes.
    n, n_samples : int
        Observations at ``level``; samples.
    n_transactions : int or None
        Number of per-transaction values; None when values are one per sample.
    descriptive : Descriptive
        Location, spread, shape of the observations at ``level``.
    normality : Normality
        Normality test of the same observations.
    clt : CLTSummary
        Confidence interval of the mean and prediction ranges for the next sample mean.
    autocorrelation_lag1 : float or None
        Transaction level: lag-1 autocorrelation of transactions within samples. Sample level:
        of the sample means in run order.
    ess : float or None
        Transaction level: effective number of independent transactions for the mean
        (``var / se**2``). Sample level: effective number of samples (Geyer).
    consistency : Consistency
    diagnostics : tuple of Diagnostic
    """

    condition: str
    level: str
    n: int
    n_samples: int
    n_transactions: int | None
    descriptive: Descriptive
    normality: Normality
    clt: CLTSummary
    autocorrelation_lag1: float | None
    ess: float | None
    consistency: Consistency
    diagnostics: tuple[Diagnostic, ...]

    @property
    def mean(self) -> float:
        """Mean of the observations."""
        return self.descriptive.mean

    @property
    def median(self) -> float:
        """Median of the observations."""
        return self.descriptive.median

    @property
    def sd(self) -> float:
        """Standard deviation of the observations."""
        return self.descriptive.sd

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, see ``docs/statistics.md`` for the contract."""
        d = self.descriptive
        c = self.clt
        return {
            "condition": self.condition,
            "n": self.n,
            "n_samples": self.n_samples,
            "n_transactions": self.n_transactions,
            "mean": _f(d.mean),
            "sd": _f(d.sd),
            "median": _f(d.median),
            "mad": _f(d.mad),
            "p5": _f(d.p5),
            "p25": _f(d.p25),
            "p50": _f(d.p50),
            "p75": _f(d.p75),
            "p95": _f(d.p95),
            "p99": _f(d.p99),
            "min": _f(d.min),
            "max": _f(d.max),
            "cv": _f(d.cv),
            "robust_cv": _f(d.robust_cv),
            "skewness": _f(d.skewness),
            "normality": {"test": self.normality.test, "p": _f(self.normality.p)},
            "clt": {
                "mean_ci95": _pair(c.mean_ci95),
                "ci_method": c.mean_ci95.method,
                "prediction90": _pair(c.prediction90),
                "prediction95": _pair(c.prediction95),
                "sd_range_1645": _pair(c.sd_range_1645),
                "sd_range_2": _pair(c.sd_range_2),
                "within_sd_range_2": {"count": c.within_2sd.count, "n": c.within_2sd.n},
                "bet": c.bet,
            },
            "autocorrelation_lag1": _f(self.autocorrelation_lag1),
            "ess": _f(self.ess),
            "consistency": self.consistency.to_dict(),
            "diagnostics": [g.to_dict() for g in self.diagnostics],
        }


@dataclass(frozen=True, slots=True)
class PairwiseComparison:
    """One condition against the baseline.

    Attributes
    ----------
    condition, baseline : str
        Labels.
    test : TestResult
        The two-sample test; ``p_adjusted`` is its Holm-adjusted p-value (equal to the raw
        p-value with a single comparison).
    delta : Interval or None
        Relative change of the mean in %, with its bootstrap interval at ``1 - alpha``.
    median_delta : Interval or None
        Relative change of the median in %, with its bootstrap interval.
    hodges_lehmann : Interval or None
        Hodges-Lehmann shift (in the unit of the data) of the sample means, with its
        distribution-free interval.
    cliffs_delta : float or None
        P(condition > baseline) - P(condition < baseline) over pairs of observations
        (transactions at the transaction level).
    verdict : {"faster", "slower", "no-difference", "inconclusive"}
    note : str
        Why the verdict is what it is.
    summary : str
        Compact benchstat-style line: ``-17.2% [-19.0, -15.1] (p<0.001, n=30)`` or
        ``~ (p=0.450, n=30)``.
    n_baseline, n_condition : int
        Independent units (samples, or batches) behind the test.
    """

    condition: str
    baseline: str
    test: TestResult
    p_adjusted: float | None
    delta: Interval | None
    median_delta: Interval | None
    hodges_lehmann: Interval | None
    cliffs_delta: float | None
    verdict: Verdict
    note: str
    summary: str
    n_baseline: int
    n_condition: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form, see ``docs/statistics.md`` for the contract."""
        hl = self.hodges_lehmann
        return {
            "condition": self.condition,
            "baseline": self.baseline,
            "test": self.test.test,
            "p_value": _f(self.test.p_value),
            "p_adjusted": _f(self.p_adjusted),
            "delta_pct": None if self.delta is None else _f(self.delta.estimate),
            "ci_pct": _pair(self.delta),
            "median_delta_pct": None
            if self.median_delta is None
            else _f(self.median_delta.estimate),
            "median_ci_pct": _pair(self.median_delta),
            "hodges_lehmann": None if hl is None else {"shift": _f(hl.estimate), "ci": _pair(hl)},
            "cliffs_delta": _f(self.cliffs_delta),
            "verdict": self.verdict,
            "note": self.note,
            "summary": self.summary,
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    """Result of :func:`compare`."""

    metric: str
    level: str
    unit: str
    alpha: float
    rope_pct: float
    baseline: str
    conditions: tuple[ConditionSummary, ...]
    omnibus: TestResult | None
    comparisons: tuple[PairwiseComparison, ...]
    seed: int
    n_boot: int
    bayes: BayesAnalysis | None = None
    #: conditions left out of the comparison, with why (no successful transaction, say)
    excluded: tuple[tuple[str, str], ...] = ()
    #: the statistic judged (``compare --stat``); None: the mean, as before the option existed
    stat: str | None = None
    #: per condition, ``stat`` of all its transactions (TPS: all of them over all windows)
    stat_values: Mapping[str, float | None] | None = None
    #: the transaction type judged (``compare --txn``); None: all types together
    txn: str | None = None
    #: which pairs were compared (``compare --pairs``); Holm's family is exactly those
    pairs: str = "baseline"

    def condition(self, name: str) -> ConditionSummary:
        """The summary of condition ``name``."""
        for c in self.conditions:
            if c.condition == name:
                return c
        raise KeyError(name)

    def comparison(self, name: str, reference: str | None = None) -> PairwiseComparison:
        """The comparison of condition ``name`` against ``reference`` (default: whichever it
        was compared with first, the baseline unless other pairs were asked for)."""
        for c in self.comparisons:
            if c.condition == name and reference in (None, c.baseline):
                return c
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """The documented JSON contract (plain types only, no NaN; ``run`` is for the caller)."""
        om = None
        if self.omnibus is not None:
            om = {"test": self.omnibus.test, "p": _f(self.omnibus.p_value)}
        comparisons = [c.to_dict() for c in self.comparisons]
        doc: dict[str, Any] = {
            "run": None,
            "metric": self.metric,
            "level": self.level,
            "unit": self.unit,
            "alpha": float(self.alpha),
            "rope_pct": float(self.rope_pct),
            "conditions": [c.to_dict() for c in self.conditions],
            "omnibus": om,
            "comparisons": comparisons,
            "excluded": [{"condition": c, "reason": r} for c, r in self.excluded],
        }
        if self.pairs != "baseline":
            # Only with --pairs all|successive, so the usual document does not change.
            doc["pairs"] = self.pairs
        if self.stat is not None:
            # Only with --txn/--stat, so the document of a plain comparison does not change.
            doc["txn"] = self.txn
            doc["stat"] = self.stat
            values = self.stat_values or {}
            for entry in doc["conditions"]:
                entry["stat_value"] = _f(values.get(entry["condition"]))
        if self.bayes is not None:
            # Each pair goes into its comparison; the conditions' posteriors, the factorial
            # effects and the diagnostics into one top-level block.
            pairs = {p.name: p for p in self.bayes.pairs}
            for entry in comparisons:
                pair = pairs.get(entry["condition"])
                entry["bayes"] = None if pair is None else pair.to_dict()
                # One verdict: where the two analyses disagree, the sentence every format
                # shows instead of a bet (None: they agree).
                entry["disagreement"] = disagreement(entry, self.alpha, self.rope_pct)
            doc["bayes"] = self.bayes.to_dict()
        return doc


@dataclass(frozen=True, slots=True, eq=False)
class _Prepared:
    obs: Observations
    samples: Groups
    sample_means: np.ndarray
    per_transaction: bool
    x: np.ndarray  # observations at the analysis level
    sorted_x: np.ndarray
    units: np.ndarray  # the independent units: sample (or batch) means
    value_order: np.ndarray | None  # argsort of the per-transaction values
    cmean: ClusterMean | None
    clustered: Clustered | None
    batch: bool


def _prepare(obs: Observations, level: Level) -> _Prepared:
    if obs.moments is not None and obs.moments.sample.size >= 2:
        return _prepare_subset(obs, level)
    samples = group_codes(obs.sample)
    means = samples.means(obs.values)
    if obs.moments is not None:  # one sample, its values a subset: its exact mean
        means = obs.moments.total / obs.moments.count
    per_tx = bool(samples.counts.max() > 1)
    # One argsort of the transactions serves every order statistic downstream (percentiles,
    # medians per session and period, Cliff's delta, the bootstrap histograms).
    order = np.argsort(obs.values) if per_tx else None
    if level == "sample":
        s = np.sort(means)
        return _Prepared(obs, samples, means, per_tx, means, s, means, order, None, None, False)
    x = obs.values
    if order is None:
        order = np.argsort(x)
    s = x[order]
    codes, batch = samples.codes, False
    if samples.k < 2 and x.size >= 4:
        # One sample only: fall back to batch means inside it (documented diagnostic).
        nb = min(30, math.isqrt(x.size))
        codes, batch = (np.arange(x.size) * nb) // x.size, True
    clustered = Clustered.from_codes(x, codes, order=order)
    var = float(x.var(ddof=1)) if x.size > 1 else None
    cm = cluster_mean(clustered.sums, clustered.counts, var_values=var)
    units = clustered.sums / clustered.counts
    return _Prepared(obs, samples, means, per_tx, x, s, units, order, cm, clustered, batch)


def _prepare_subset(obs: Observations, level: Level) -> _Prepared:
    """A condition whose values are a subset of its transactions: the sample means, the
    cluster sums and the variance come from the exact moments, the order statistics that
    describe the shape from the subset (see :class:`Observations`)."""
    m = obs.moments
    assert m is not None
    means = m.total / m.count
    # Codes of the values point at the samples of the moments (every sample, even one that
    # contributed no value to the subset).
    samples = Groups(m.sample, np.searchsorted(m.sample, obs.sample), m.count.astype(np.int64))
    order = np.argsort(obs.values)
    if level == "sample":
        s = np.sort(means)
        return _Prepared(obs, samples, means, True, means, s, means, order, None, None, False)
    x = obs.values
    clustered = Clustered(m.total, m.count, x[order], samples.codes[order])
    cm = cluster_mean(m.total, m.count, var_values=m.variance)
    return _Prepared(obs, samples, means, True, x, x[order], means, order, cm, clustered, False)


def _seed_for(seed: int, *labels: str) -> np.random.Generator:
    # Random streams are keyed by condition labels, not positions, so that reordering the
    # conditions cannot change any condition's or comparison's numbers.
    key = [int(seed)] + [zlib.crc32(lbl.encode("utf-8")) for lbl in labels]
    return np.random.default_rng(np.random.SeedSequence(key))


def _summarize(
    p: _Prepared,
    *,
    level: Level,
    metric: Metric,
    unit: str,
    seed: int,
    values_name: str,
) -> ConditionSummary:
    obs = p.obs
    m = obs.moments
    desc = describe(p.x, sorted_x=p.sorted_x)
    if m is not None and level == "transaction":
        desc = _described_by_moments(desc, m)
    norm = normality(p.x)
    what = "batch means" if p.batch else values_name
    if level == "transaction" and p.cmean is not None:
        cm = p.cmean
        if cm.n_clusters >= 2 and math.isfinite(cm.se):
            q = float(t_ppf(0.975, cm.df))
            ci = Interval(
                cm.mean,
                cm.mean - q * cm.se,
                cm.mean + q * cm.se,
                0.95,
                f"cluster-robust t ({cm.df} df, {what[:-6]} = cluster)",
            )
        else:
            ci = Interval(cm.mean, cm.mean, cm.mean, 0.95, "none (1 cluster)")
        clt = clt_summary(p.units, mean_ci=ci, unit=unit, what=what)
        # Only consecutive transactions have a lag-1 autocorrelation; a subset has gaps.
        consecutive = m is None or m.consecutive
        lag1 = lag1_autocorrelation(p.x, p.samples.codes) if consecutive else None
        ess = cm.ess
    else:
        clt = clt_summary(p.x, unit=unit, what=what)
        lag1 = lag1_autocorrelation(p.sample_means)
        ess = effective_sample_size(p.sample_means)
    session, time_s = obs.session, obs.time_s
    if not p.per_transaction:
        # One value per sample: put session and time in the order of the sample means.
        first = np.zeros(p.samples.k, dtype=np.int64)
        first[p.samples.codes] = np.arange(p.samples.codes.size)
        session = None if session is None else session[first]
        time_s = None if time_s is None else time_s[first]
    cons = consistency(
        p.sample_means,
        p.samples.labels,
        values=obs.values if p.per_transaction else None,
        session=session,
        time_s=time_s,
        level=level,
        higher_is_slower=metric in ("latency", "cost"),
        rng=_seed_for(seed, obs.condition, "multimodality"),
        values_order=p.value_order,
    )
    if m is not None:
        cons = _scaled_to_all(cons, m)
    n_units = p.units.size if (level == "transaction" and p.batch) else p.samples.k
    diags = condition_diagnostics(
        obs.condition,
        n_samples=int(n_units),
        n=desc.n,
        sd=desc.sd,
        consistency=cons,
        unit=unit,
        batch_means=p.batch,
    )
    return ConditionSummary(
        condition=obs.condition,
        level=level,
        n=desc.n,
        n_samples=p.samples.k,
        n_transactions=(m.n if m is not None else int(obs.values.size))
        if p.per_transaction
        else None,
        descriptive=desc,
        normality=norm,
        clt=clt,
        autocorrelation_lag1=lag1,
        ess=ess,
        consistency=cons,
        diagnostics=diags,
    )


def _described_by_moments(d: Descriptive, m: Moments) -> Descriptive:
    """``d`` (of a subset of the transactions) with every figure the moments know exactly:
    count, mean, standard deviation, extremes; with a histogram, the quantiles and the MAD too
    (within half a bin). The skewness stays that of the subset."""
    mean = m.mean
    sd = math.sqrt(m.variance or 0.0)
    out = dataclasses.replace(
        d,
        n=m.n,
        mean=mean,
        sd=sd,
        min=m.minimum,
        max=m.maximum,
        cv=sd / mean if mean else None,
    )
    h = m.histogram
    if h is None or histogram.count(h) == 0:
        return out
    p5, p25, p50, p75, p95, p99 = (
        histogram.quantiles(h, [0.05, 0.25, 0.5, 0.75, 0.95, 0.99]) / 1e6
    ).tolist()
    mad = histogram.median_abs_deviation(h, p50 * 1e6) / 1e6
    return dataclasses.replace(
        out,
        median=p50,
        mad=mad,
        p5=p5,
        p25=p25,
        p50=p50,
        p75=p75,
        p95=p95,
        p99=p99,
        robust_cv=mad * MAD_TO_SD / p50 if p50 else None,
    )


def _scaled_to_all(c: Consistency, m: Moments) -> Consistency:
    """Consistency of a subset, with its transaction count and extremes those of all the
    transactions (the median and the shares are the subset's estimates)."""
    n = m.n
    tx = c.transactions
    if tx is not None:
        extreme = tx.max_abs_deviation_pct
        if tx.median:
            extreme = max(abs(m.minimum / tx.median - 1), abs(m.maximum / tx.median - 1)) * 100
        tx = dataclasses.replace(tx, n=n, max_abs_deviation_pct=extreme)
    out = c.outliers
    if out.share_transactions is not None:
        out = dataclasses.replace(out, n_transactions=round(out.share_transactions * n))
    return dataclasses.replace(c, transactions=tx, outliers=out)


def _fmt_n(a: int, b: int) -> str:
    return f"n={a}" if a == b else f"n={a}+{b}"


def verdict(
    *,
    p_value: float | None,
    interval: Interval | None,
    alpha: float,
    rope_pct: float,
    metric: Metric,
    test_direction: float | None = None,
) -> tuple[Verdict, str]:
    """Turn a p-value and an interval of the relative change into a verdict and a note.

    Parameters
    ----------
    p_value : float or None
        (Adjusted) p-value of the test.
    interval : Interval or None
        Relative change of the mean in %, with its interval.
    alpha : float
        Significance level.
    rope_pct : float
        Half-width of the region of practical equivalence, in %.
    metric : {"latency", "throughput"}
        Lower latency or higher throughput is faster.
    test_direction : float, optional
        Sign of the test statistic for "condition minus baseline" (t, or U minus its null
        mean). A significant test pointing the other way than the interval gives
        inconclusive: a rank test can react to a shift of the bulk while a few extreme
        values move the mean the other way.

    Returns
    -------
    (verdict, note)
        ``faster``/``slower`` only when ``p_value < alpha`` and the interval lies wholly
        outside ``[-rope_pct, +rope_pct]``.

    References
    ----------
    Kruschke, J. K. (2018). Rejecting or accepting parameter values in Bayesian estimation.
    Advances in Methods and Practices in Psychological Science 1(2), 270-280 (the ROPE
    decision rule).
    Kruschke, J. K. (2015). Doing Bayesian Data Analysis, 2nd ed., Academic Press, section 12.1.
    """
    rope = f"+/-{rope_pct:g}%"
    if p_value is None or interval is None:
        return "inconclusive", "inconclusive: the change could not be estimated"
    lo, hi = interval.low, interval.high
    significant = p_value < alpha
    if significant and (lo > rope_pct or hi < -rope_pct):
        up = lo > rope_pct
        if test_direction is not None and test_direction != 0 and (test_direction > 0) != up:
            return "inconclusive", (
                "inconclusive: the test and the change of the mean point in opposite "
                "directions; look at the distributions"
            )
        word: Verdict
        if metric in ("result", "cost"):
            word = "higher" if up else "lower"
        else:
            faster = up if metric == "throughput" else not up
            word = "faster" if faster else "slower"
        return word, (
            f"{word}: significant at alpha={alpha:g} and the interval "
            f"[{lo:.1f}, {hi:.1f}]% lies outside {rope}"
        )
    if lo >= -rope_pct and hi <= rope_pct:
        extra = " (statistically detectable but practically negligible)" if significant else ""
        return "no-difference", f"equivalent within {rope}{extra}"
    if significant:
        reason = f"significant, but the interval [{lo:.1f}, {hi:.1f}]% reaches into {rope}"
    elif lo > rope_pct or hi < -rope_pct:
        # Not "wider than the ROPE": the interval is clear of it, the test is what fails. With
        # several pairs the p-value carries Holm's correction and the interval does not.
        reason = (
            f"the interval [{lo:.1f}, {hi:.1f}]% lies outside {rope}, but the test is not"
            f" significant (p={p_value:.3g}, Holm-adjusted when several pairs are compared;"
            " the interval is not)"
        )
    else:
        reason = f"not significant and the interval [{lo:.1f}, {hi:.1f}]% is wider than {rope}"
    return "inconclusive", f"inconclusive: more samples needed ({reason})"


def _validate(
    groups: Sequence[Observations],
    baseline: str | None,
    metric: str,
    level: str,
    alpha: float,
    rope_pct: float,
    n_boot: int,
) -> str:
    if len(groups) == 0:
        raise AnalysisError("compare() got no conditions; pass at least one Observations")
    for g in groups:
        if not isinstance(g, Observations):
            raise AnalysisError(
                f"compare() takes Observations, got {type(g).__name__}; wrap the arrays in "
                "wannabet.analysis.Observations"
            )
    labels = [g.condition for g in groups]
    dup = sorted({lbl for lbl in labels if labels.count(lbl) > 1})
    if dup:
        raise AnalysisError(f"condition labels must be unique; {dup} appear more than once")
    if baseline is not None and baseline not in labels:
        raise AnalysisError(f"baseline={baseline!r} is not one of the conditions {labels}")
    if metric not in ("latency", "throughput", "result", "cost"):
        raise AnalysisError(f"metric={metric!r}; use 'latency', 'throughput', 'result' or 'cost'")
    if level not in ("sample", "transaction"):
        raise AnalysisError(f"level={level!r}; use 'sample' or 'transaction'")
    if not (0 < alpha < 1):
        raise AnalysisError(f"alpha={alpha!r} must lie strictly between 0 and 1, e.g. 0.05")
    if not (math.isfinite(rope_pct) and rope_pct >= 0):
        raise AnalysisError(f"rope_pct={rope_pct!r} must be a finite percentage >= 0, e.g. 2.0")
    if int(n_boot) < 100:
        raise AnalysisError(f"n_boot={n_boot!r} is too few resamples; use at least 100 (2000)")
    return baseline if baseline is not None else labels[0]


def compare(
    groups: Sequence[Observations],
    *,
    baseline: str | None = None,
    metric: Metric = "latency",
    level: Level = "sample",
    alpha: float = 0.05,
    rope_pct: float = 2.0,
    seed: int = 0,
    n_boot: int = 2000,
    unit: str | None = None,
    environments: Mapping[str, Mapping[str, str]] | None = None,
    pairs: Pairs = "baseline",
    levels: Mapping[str, Mapping[str, str]] | None = None,
    values_name: str | None = None,
) -> Comparison:
    """Compare conditions against a baseline and judge faster, slower or no difference.

    Parameters
    ----------
    groups : sequence of Observations
        One per condition.
    baseline : str, optional
        Label of the baseline condition; default the first group.
    metric : {"latency", "throughput"}
        Latency: lower is faster. Throughput (one value per sample): higher is faster.
    level : {"sample", "transaction"}
        ``"sample"``: one observation per sample (its mean). ``"transaction"``: statistics of
        all transactions with samples as clusters for every test and interval.
    alpha : float
        Significance level; intervals of the change are at ``1 - alpha``.
    rope_pct : float
        Region of practical equivalence, +/- percent of the baseline.
    seed : int
        Seed of every bootstrap (streams are keyed by condition labels).
    n_boot : int
        Bootstrap resamples.
    unit : str, optional
        Unit label; default "ms" for latency, "tps" for throughput.
    environments : mapping, optional
        Recorded environment (key -> value) per condition or run; differing keys raise an
        ``environment-differs`` diagnostic.
    pairs : {"baseline", "all", "successive", "within=FACTOR"}
        Each condition against the baseline; every pair (the earlier condition of the two, in
        the order given, as the reference); each condition against the one before it; or the
        pairs of conditions that differ in FACTOR alone (needs ``levels``). The Holm
        adjustment runs over exactly the pairs compared.
    levels : mapping, optional
        Each condition's factor levels (factor -> level), for ``pairs="within=FACTOR"``.
    values_name : str, optional
        What the one value per sample is, in the plural, for the bet sentence (e.g.
        ``"sample p99s"``); default by metric: "sample means" for latency, "sample
        throughputs" for throughput.

    Returns
    -------
    Comparison
        ``to_dict()`` gives the JSON contract documented in ``docs/statistics.md``.

    Notes
    -----
    Two conditions: Welch's t if both sample-level groups pass Shapiro-Wilk at ``alpha``, else
    Mann-Whitney U (exact for small samples without ties). Three or more: one-way ANOVA (all
    normal) or Kruskal-Wallis as omnibus test, then each condition against the baseline with
    Holm-adjusted p-values; the verdicts use the adjusted p-values (Holm alone controls the
    family-wise error, so the omnibus test is reported but does not gate them). At the
    transaction level the tests are cluster-robust Welch t / Welch ANOVA.

    References
    ----------
    Welch, B. L. (1947). Biometrika 34(1/2), 28-35.
    Mann, H. B. & Whitney, D. R. (1947). Annals of Mathematical Statistics 18(1), 50-60.
    Kruskal, W. H. & Wallis, W. A. (1952). JASA 47(260), 583-621.
    Holm, S. (1979). Scandinavian Journal of Statistics 6(2), 65-70.
    Efron, B. & Tibshirani, R. J. (1993). An Introduction to the Bootstrap, chapter 14.
    Kruschke, J. K. (2018). Advances in Methods and Practices in Psychological Science 1(2),
    270-280.
    """
    base = _validate(groups, baseline, metric, level, alpha, rope_pct, n_boot)
    unit = _DEFAULT_UNIT[metric] if unit is None else unit
    n_boot = int(n_boot)
    what = _DEFAULT_VALUES_NAME[metric] if values_name is None else values_name
    prepared = {g.condition: _prepare(g, level) for g in groups}
    summaries = {
        name: _summarize(p, level=level, metric=metric, unit=unit, seed=seed, values_name=what)
        for name, p in prepared.items()
    }
    if environments:
        summaries = _attach_environment(summaries, environments, base)

    normal = {name: s.normality.is_normal(alpha) for name, s in summaries.items()}
    omnibus = None
    if len(groups) >= 3:
        if level == "transaction":
            cms = [prepared[g.condition].cmean for g in groups]
            omnibus = cluster_welch_anova([c for c in cms if c is not None])
        elif all(normal.values()):
            omnibus = one_way_anova([prepared[g.condition].x for g in groups])
        else:
            omnibus = kruskal_wallis([prepared[g.condition].x for g in groups])

    family = pairs_of([g.condition for g in groups], base, pairs, levels)
    raw: list[TestResult] = []
    for ref, name in family:
        pb, po = prepared[ref], prepared[name]
        if level == "transaction":
            assert pb.cmean is not None and po.cmean is not None
            raw.append(cluster_welch_t(pb.cmean, po.cmean))
        else:
            raw.append(two_sample_test(pb.x, po.x, a_normal=normal[ref], b_normal=normal[name]))
    adjusted = holm([t.p_value for t in raw])

    comparisons = []
    for (ref, name), test, p_adj in zip(family, raw, adjusted, strict=True):
        comparisons.append(
            _pairwise(
                prepared[ref],
                prepared[name],
                summaries[ref],
                summaries[name],
                test,
                p_adj,
                level=level,
                metric=metric,
                alpha=alpha,
                rope_pct=rope_pct,
                seed=seed,
                n_boot=n_boot,
            )
        )
    return Comparison(
        metric=metric,
        level=level,
        unit=unit,
        alpha=float(alpha),
        rope_pct=float(rope_pct),
        baseline=base,
        conditions=tuple(summaries[g.condition] for g in groups),
        omnibus=omnibus,
        comparisons=tuple(comparisons),
        seed=int(seed),
        n_boot=n_boot,
        pairs=pairs,
    )


def check_pairs(pairs: str) -> str | None:
    """The factor of ``within=FACTOR`` (None for the other choices); AnalysisError when
    ``pairs`` is not a choice."""
    if pairs in PAIRS[:3]:
        return None
    if pairs.startswith(WITHIN) and pairs[len(WITHIN) :].strip():
        return pairs[len(WITHIN) :].strip()
    raise AnalysisError(f"pairs={pairs!r}; use one of {', '.join(PAIRS)}")


def pairs_of(
    labels: Sequence[str],
    baseline: str,
    pairs: str,
    levels: Mapping[str, Mapping[str, str]] | None = None,
) -> list[tuple[str, str]]:
    """(reference, condition) of each comparison ``pairs`` asks for, in a stable order.

    ``levels`` (each label's factor levels) is needed by ``within=FACTOR`` only: the pairs of
    conditions whose levels differ in FACTOR and agree in every other factor, the earlier one
    of each pair (in the order of ``labels``) as its reference.
    """
    factor = check_pairs(pairs)
    if pairs == "baseline":
        return [(baseline, name) for name in labels if name != baseline]
    if pairs == "all":
        return list(itertools.combinations(labels, 2))
    if pairs == "successive":
        return list(itertools.pairwise(labels))
    assert factor is not None
    levels = levels or {}
    known = sorted({f for name in labels for f in levels.get(name, {})})
    if factor not in known:
        raise AnalysisError(
            f"pairs={pairs!r}: no factor {factor!r} among the conditions compared"
            + (f"; their factors: {', '.join(known)}" if known else "; they have no factors")
        )
    held: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for name in labels:
        mine = levels.get(name, {})
        if factor in mine:
            rest = tuple(sorted((k, v) for k, v in mine.items() if k != factor))
            held.setdefault(rest, []).append(name)
    # Group by group, in the order each first appears: a factor's levels side by side.
    found = [pair for group in held.values() for pair in itertools.combinations(group, 2)]
    if not found:
        raise AnalysisError(
            f"pairs={pairs!r}: no two conditions differ in {factor!r} alone (each level of it"
            " meets a different combination of the other factors)"
        )
    return found


def _attach_environment(
    summaries: dict[str, ConditionSummary],
    environments: Mapping[str, Mapping[str, str]],
    base: str,
) -> dict[str, ConditionSummary]:
    out = dict(summaries)
    keyed_by_condition = set(environments) <= set(summaries)
    if keyed_by_condition and base in environments:
        # Each condition against the baseline's environment.
        for name in environments:
            if name == base:
                continue
            d = environment_diagnostic({base: environments[base], name: environments[name]})
            if d is not None:
                s = out[name]
                out[name] = _with_diagnostic(s, d)
        return out
    d = environment_diagnostic(environments)
    if d is not None:
        out[base] = _with_diagnostic(out[base], d)
    return out


def _with_diagnostic(s: ConditionSummary, d: Diagnostic) -> ConditionSummary:
    return ConditionSummary(
        s.condition,
        s.level,
        s.n,
        s.n_samples,
        s.n_transactions,
        s.descriptive,
        s.normality,
        s.clt,
        s.autocorrelation_lag1,
        s.ess,
        s.consistency,
        (*s.diagnostics, d),
    )


def _pairwise(
    pb: _Prepared,
    po: _Prepared,
    sb: ConditionSummary,
    so: ConditionSummary,
    test: TestResult,
    p_adj: float | None,
    *,
    level: Level,
    metric: Metric,
    alpha: float,
    rope_pct: float,
    seed: int,
    n_boot: int,
) -> PairwiseComparison:
    base, name = pb.obs.condition, po.obs.condition
    rng = _seed_for(seed, base, name)
    ci_level = 1 - alpha
    if level == "transaction" and pb.clustered is not None and po.clustered is not None:
        change: RelativeChange = cluster_bootstrap_relative_change(
            pb.clustered, po.clustered, rng=rng, n_boot=n_boot, level=ci_level
        )
    else:
        change = bootstrap_relative_change(pb.x, po.x, rng=rng, n_boot=n_boot, level=ci_level)
    cliff = cliffs_delta(pb.x, po.x, sorted_a=pb.sorted_x, sorted_b=po.sorted_x)
    hl = None
    if pb.units.size >= 1 and po.units.size >= 1:
        hl = hodges_lehmann(pb.units, po.units, level=ci_level)
    n_b, n_o = int(pb.units.size), int(po.units.size)

    blocked = None
    if min(n_b, n_o) < MIN_SAMPLES:
        blocked = too_few_samples(n_b, n_o)
    elif sb.descriptive.sd == 0 or so.descriptive.sd == 0:
        which = [s.condition for s in (sb, so) if s.descriptive.sd == 0]
        blocked = (
            f"cannot judge: {' and '.join(repr(w) for w in which)} "
            f"{'have' if len(which) > 1 else 'has'} zero variance "
            "(see the zero-variance diagnostic)"
        )
    if blocked is not None:
        v: Verdict = "inconclusive"
        note = blocked
    else:
        direction = test.statistic
        if direction is not None and test.test.startswith("mann-whitney"):
            direction = direction - pb.x.size * po.x.size / 2
        v, note = verdict(
            p_value=p_adj,
            interval=change.mean,
            alpha=alpha,
            rope_pct=rope_pct,
            metric=metric,
            test_direction=direction,
        )
    if v in ("no-difference", "inconclusive"):
        mark = "~" if v == "no-difference" else "?"
        summary = f"{mark} ({p_text(p_adj)}, {_fmt_n(n_b, n_o)})"
    else:
        assert change.mean is not None
        d = change.mean
        summary = (
            f"{d.estimate:+.1f}% [{d.low:.1f}, {d.high:.1f}] ({p_text(p_adj)}, {_fmt_n(n_b, n_o)})"
        )
    return PairwiseComparison(
        condition=name,
        baseline=base,
        test=test,
        p_adjusted=p_adj,
        delta=change.mean,
        median_delta=change.median,
        hodges_lehmann=hl,
        cliffs_delta=cliff,
        verdict=v,
        note=note,
        summary=summary,
        n_baseline=n_b,
        n_condition=n_o,
    )
