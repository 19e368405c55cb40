"""Verdicts on one statistic of the samples: a mean, a latency quantile or a throughput.

``compare --stat p99`` asks whether the 99th percentile changed. The input is what every
sample summarises its transactions into (per transaction type): a count, latency sums, a
latency histogram (:mod:`wannabet.analysis.histogram`), and the sample's measured window.
:class:`ConditionSamples` holds one condition's samples, :func:`sample_values` turns each
sample into one value of the statistic, and :func:`compare_statistic` judges them:

* ``level="sample"``: each sample's statistic is one observation (its p99 from its own
  histogram, its mean from its moments, its TPS from its count over its window), and
  :func:`wannabet.analysis.compare` judges those values with the same tests, intervals, ROPE
  and four verdicts as the sample means.
* ``level="transaction"``: the statistic of all the condition's transactions, with samples as
  clusters. A quantile is the quantile of the merged histogram of the condition; its
  uncertainty comes from a cluster bootstrap that resamples whole samples and merges their
  histograms (:func:`cluster_bootstrap_quantile_change`). The mean keeps the method of the
  transaction-level comparison (ratio estimator, cluster-robust Welch t, BCa cluster
  bootstrap), computed from per-sample sums and counts.

Everything here is pure NumPy and SciPy and does no I/O.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from . import histogram
from .clt import Interval
from .compare import (
    Comparison,
    ConditionSummary,
    Level,
    Metric,
    Pairs,
    PairwiseComparison,
    Verdict,
    _fmt_n,
    _seed_for,
    compare,
    p_text,
    verdict,
)
from .dependence import cluster_mean
from .diagnostics import MIN_SAMPLES, Diagnostic, too_few_samples
from .distributions import norm_cdf, t_ppf, t_sf
from .effects import (
    _bca_interval,
    _cluster_weights,
    _contain,
    _expand,
    _expand_in_ratio,
    _finite_share,
    _quantile_points,
    _welch_df,
    relative_change_pct,
)
from .observations import AnalysisError, Observations
from .tests import TestResult, cluster_welch_t, holm

__all__ = [
    "QUANTILES",
    "STATS",
    "ConditionSamples",
    "SampleHistograms",
    "Stat",
    "cluster_bootstrap_mean_change",
    "cluster_bootstrap_quantile_change",
    "compare_statistic",
    "pooled_value",
    "resampled_quantiles",
    "sample_values",
    "stat_quantile",
]

Stat = Literal["mean", "median", "p90", "p95", "p99", "p99.9", "tps", "result"]
#: every statistic ``compare --stat`` judges, in the order the help lists them; ``result`` is
#: the mean of the transactions' recorded results (``result = true``), not a latency
STATS: tuple[str, ...] = ("mean", "median", "p90", "p95", "p99", "p99.9", "tps", "result")
#: the quantile statistics and their probabilities
QUANTILES: Mapping[str, float] = {
    "median": 0.5,
    "p90": 0.9,
    "p95": 0.95,
    "p99": 0.99,
    "p99.9": 0.999,
}


def stat_quantile(stat: str) -> float | None:
    """The probability of a quantile statistic (``"p99"`` → 0.99); None for mean and tps."""
    if stat not in STATS:
        raise AnalysisError(f"stat={stat!r} is not a statistic; use one of {', '.join(STATS)}")
    return QUANTILES.get(stat)


@dataclass(frozen=True, slots=True, eq=False)
class SampleHistograms:
    """The latency histograms of one condition's samples on one common set of bins.

    Attributes
    ----------
    lo_ns, hi_ns : numpy.ndarray
        The union of the samples' bins (uint64, sorted, disjoint).
    counts : numpy.ndarray
        ``(k, n_bins)`` float64: row ``i`` is sample ``i``'s histogram on those bins. Counts
        are exact in float64 up to 2**53 transactions.
    """

    lo_ns: NDArray[np.uint64]
    hi_ns: NDArray[np.uint64]
    counts: NDArray[np.float64]

    @classmethod
    def from_histograms(cls, hists: Sequence[histogram.Histogram]) -> SampleHistograms:
        """Put the samples' histograms on the union of their bins.

        Raises
        ------
        ValueError
            If two histograms have overlapping bins that are not identical (layouts differ).
        """
        union = histogram.merge(*hists)  # checks that the layouts agree
        lo = union.lo_ns
        counts = np.zeros((len(hists), lo.size), dtype=np.float64)
        for i, h in enumerate(hists):
            if len(h):
                counts[i, np.searchsorted(lo, h.lo_ns)] = h.count.astype(np.float64)
        return cls(lo, union.hi_ns, counts)

    @property
    def k(self) -> int:
        """Number of samples."""
        return int(self.counts.shape[0])

    @property
    def n(self) -> NDArray[np.float64]:
        """Transactions per sample."""
        out: NDArray[np.float64] = self.counts.sum(axis=1)
        return out

    def midpoints_ms(self) -> NDArray[np.float64]:
        """Midpoint of each bin in ms: the value a bin reports."""
        lo = self.lo_ns.astype(np.float64)
        out: NDArray[np.float64] = (lo + (self.hi_ns - self.lo_ns).astype(np.float64) / 2) / 1e6
        return out

    def quantiles_ms(self, q: float) -> NDArray[np.float64]:
        """Each sample's ``q`` quantile in ms (NaN for a sample without a transaction).

        Same rule as :func:`wannabet.analysis.histogram.quantiles`: the inverse of the
        empirical CDF, reported as the midpoint of the bin holding the order statistic.
        """
        return _quantiles_of_rows(self.counts, self.midpoints_ms(), q)

    def pooled_quantile_ms(self, q: float) -> float:
        """The ``q`` quantile of all samples' transactions together (their merged histogram)."""
        merged = self.counts.sum(axis=0)[None, :]
        return float(_quantiles_of_rows(merged, self.midpoints_ms(), q)[0])


def _quantiles_of_rows(
    counts: NDArray[np.float64], mids: NDArray[np.float64], q: float
) -> NDArray[np.float64]:
    n = counts.sum(axis=1)
    if counts.shape[1] == 0:  # no transaction in any row
        return np.full(counts.shape[0], np.nan)
    cum = np.cumsum(counts, axis=1)
    # NumPy's inverted_cdf: the order statistic of 0-based index ceil(n q - 1), clipped.
    index = np.clip(np.ceil(n * q - 1), 0, np.maximum(n - 1, 0))
    j = np.argmax(cum >= (index + 1)[:, None], axis=1)
    out = mids[j]
    return np.where(n > 0, out, np.nan)


def resampled_quantiles(
    sh: SampleHistograms, weights: NDArray[np.float64], q: float
) -> NDArray[np.float64]:
    """The ``q`` quantile (ms) of each resample: row ``b`` of ``weights`` says how often each
    sample is drawn, the resample's histogram is the weighted sum of the samples' histograms.

    The quantile of a merge lies between the smallest and the largest of the merged samples'
    quantiles (the merged CDF is an average of theirs), so only the bins in that range are
    searched: the work is ``n_boot x (k + bins in range)``, not ``n_boot x all bins``.
    """
    mids = sh.midpoints_ms()
    per_sample = sh.quantiles_ms(q)
    present = np.isfinite(per_sample)
    if not present.any():
        return np.full(weights.shape[0], np.nan)
    lo_j = int(np.searchsorted(mids, np.nanmin(per_sample)))
    hi_j = int(np.searchsorted(mids, np.nanmax(per_sample))) + 1
    below = sh.counts[:, :lo_j].sum(axis=1)  # per sample, values below the range
    window = sh.counts[:, lo_j:hi_j]
    total = weights @ sh.n
    index = np.clip(np.ceil(total * q - 1), 0, np.maximum(total - 1, 0))
    cum = (weights @ below)[:, None] + np.cumsum(weights @ window, axis=1)
    j = np.argmax(cum >= (index + 1)[:, None], axis=1)
    out: NDArray[np.float64] = np.where(total > 0, mids[lo_j:hi_j][j], np.nan)
    return out


@dataclass(frozen=True, slots=True, eq=False)
class ConditionSamples:
    """What one condition's samples summarise its transactions (of one type, or all) into.

    Parameters
    ----------
    condition : str
        Label.
    position : array_like of int
        Each sample's place in run order (sorted ascending).
    count : array_like of int
        Successful transactions per sample (0 when a sample had none of this type).
    sum_ms, sumsq_ms : array_like of float
        Sum and sum of squares of their latencies in ms.
    histograms : SampleHistograms, optional
        Per-sample latency histograms, rows in the order of ``position``; needed for quantiles.
    duration_s : array_like of float, optional
        Each sample's measured window; needed for TPS.
    """

    condition: str
    position: NDArray[np.int64]
    count: NDArray[np.float64]
    sum_ms: NDArray[np.float64]
    sumsq_ms: NDArray[np.float64]
    histograms: SampleHistograms | None = None
    duration_s: NDArray[np.float64] | None = None

    def __post_init__(self) -> None:
        k = np.asarray(self.position).size
        for name in ("position", "count", "sum_ms", "sumsq_ms", "duration_s"):
            value = getattr(self, name)
            if value is None:
                continue
            dtype = np.int64 if name == "position" else np.float64
            arr = np.ascontiguousarray(value, dtype=dtype)
            if arr.shape != (k,):
                raise AnalysisError(
                    f"ConditionSamples({self.condition!r}).{name} has {arr.size} entries for "
                    f"{k} samples; give one per sample"
                )
            object.__setattr__(self, name, arr)
        if self.histograms is not None and self.histograms.k != k:
            raise AnalysisError(
                f"ConditionSamples({self.condition!r}) has {self.histograms.k} histograms for "
                f"{k} samples; give one per sample"
            )


def sample_values(cs: ConditionSamples, stat: str) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Each sample's value of ``stat``, with the sample's position.

    Samples without a successful transaction have no latency statistic and are left out; for
    ``tps`` they count, with 0.
    """
    q = stat_quantile(stat)
    if stat == "tps":
        if cs.duration_s is None:
            raise AnalysisError(
                f"{cs.condition}: the samples' measured windows are unknown, so there is no TPS"
            )
        keep = cs.duration_s > 0
        return cs.position[keep], cs.count[keep] / cs.duration_s[keep]
    keep = cs.count > 0
    if q is None:
        return cs.position[keep], cs.sum_ms[keep] / cs.count[keep]
    if cs.histograms is None:
        raise AnalysisError(
            f"{cs.condition}: no latency histograms, so no {stat}; the run keeps only moments"
        )
    return cs.position[keep], cs.histograms.quantiles_ms(q)[keep]


def pooled_value(cs: ConditionSamples, stat: str) -> float | None:
    """``stat`` of all the condition's transactions together (TPS: all over all windows)."""
    q = stat_quantile(stat)
    total = float(cs.count.sum())
    if stat == "tps":
        if cs.duration_s is None or not cs.duration_s.sum() > 0:
            return None
        return total / float(cs.duration_s.sum())
    if total == 0:
        return None
    if q is None:
        return float(cs.sum_ms.sum()) / total
    return None if cs.histograms is None else cs.histograms.pooled_quantile_ms(q)


def cluster_bootstrap_quantile_change(
    a: SampleHistograms,
    b: SampleHistograms,
    q: float,
    *,
    rng: np.random.Generator,
    n_boot: int = 2000,
    level: float = 0.95,
) -> tuple[Interval | None, TestResult]:
    """Cluster bootstrap of the % change of the ``q`` quantile of all transactions.

    Each resample draws ``k`` samples with replacement within each condition, merges their
    histograms and takes the quantile of the merge; the ratio of the two resampled quantiles
    is one draw of the change. Like the mean's cluster bootstrap, the resampled log quantiles
    are stretched by ``sqrt(k / (k - 1))`` around the estimate (the expanded bootstrap), and
    the percentile points are Student t points with Welch-Satterthwaite degrees of freedom.

    The test is a Wald test of the log ratio: its estimate over the bootstrap standard
    deviation of the resampled log ratios, against Student t with the same degrees of
    freedom. Interval and test use one bootstrap distribution, so they agree.

    Returns
    -------
    (Interval or None, TestResult)
        The change in % with its percentile interval at ``level`` (None when a condition has
        fewer than two samples with transactions), and the test.

    References
    ----------
    Davison, A. C. & Hinkley, D. V. (1997). Bootstrap Methods and their Application.
    Cambridge University Press, section 3.8 (resampling the top level of hierarchical data).
    Hesterberg, T. C. (2015). What teachers should know about the bootstrap. The American
    Statistician 69(4), 371-386 (the expanded percentile interval).
    Welch, B. L. (1947). Biometrika 34(1/2), 28-35.
    """
    name = f"cluster bootstrap of the {q:g} quantile"
    if a.k < 2 or b.k < 2:
        return None, TestResult(name, None, None, note="fewer than 2 samples in a condition")
    qa, qb = a.pooled_quantile_ms(q), b.pooled_quantile_ms(q)
    est = relative_change_pct(qa, qb)
    if est is None or qb <= 0 or qa <= 0:
        return None, TestResult(name, None, None, note="the baseline quantile is 0")
    la = np.log(resampled_quantiles(a, _cluster_weights(rng, a.k, n_boot), q))
    lb = np.log(resampled_quantiles(b, _cluster_weights(rng, b.k, n_boot), q))
    la = _expand(la, math.log(qa), a.k)
    lb = _expand(lb, math.log(qb), b.k)
    va, vb = float(np.var(la, ddof=1)), float(np.var(lb, ddof=1))
    df = _welch_df(va, a.k - 1, vb, b.k - 1)
    log_est = math.log(qb / qa)
    boot = _finite_share(lb - la)
    se = math.sqrt(va + vb)
    if boot.size < 0.9 * n_boot:
        return None, TestResult(name, None, None, note="too many undefined resamples")
    if se == 0:
        # Every resample gives the same quantiles: no sampling variation to test against.
        p = 1.0 if log_est == 0 else 0.0
        iv = _contain(est, est, est, level, "percentile cluster bootstrap (no variation)")
        return iv, TestResult(name, None, p, None)
    t = log_est / se
    dfv = df if df is not None else float(a.k + b.k - 2)
    p = float(2 * t_sf(abs(t), dfv))
    probs = norm_cdf(_quantile_points(level, dfv))
    lo, hi = np.quantile(boot, probs)
    iv = _contain(
        est,
        (math.exp(float(lo)) - 1) * 100,
        (math.exp(float(hi)) - 1) * 100,
        level,
        "percentile cluster bootstrap",
    )
    return iv, TestResult(name + " (Wald t on the log ratio)", t, p, (dfv,))


def cluster_bootstrap_mean_change(
    a: ConditionSamples,
    b: ConditionSamples,
    *,
    rng: np.random.Generator,
    n_boot: int = 2000,
    level: float = 0.95,
) -> tuple[Interval | None, TestResult]:
    """The transaction-level comparison of means from per-sample sums and counts.

    The same method as ``compare(level="transaction")``: the ratio-estimator mean with its
    cluster-robust standard error, Welch's t with samples-minus-one degrees of freedom, and the
    BCa cluster bootstrap of the relative change (delete-one-sample jackknife acceleration).

    References
    ----------
    See :func:`wannabet.analysis.dependence.cluster_mean` and
    :func:`wannabet.analysis.effects.cluster_bootstrap_relative_change`.
    """
    ka, kb = a.count > 0, b.count > 0
    sa, na, sb, nb = a.sum_ms[ka], a.count[ka], b.sum_ms[kb], b.count[kb]
    ca, cb = cluster_mean(sa, na), cluster_mean(sb, nb)
    test = cluster_welch_t(ca, cb)
    if sa.size < 2 or sb.size < 2:
        return None, test
    est = relative_change_pct(ca.mean, cb.mean)
    if est is None:
        return None, test
    wa = _cluster_weights(rng, sa.size, n_boot)
    wb = _cluster_weights(rng, sb.size, n_boot)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = None
        if ca.mean != 0 and cb.mean != 0:
            df = _welch_df((ca.se / ca.mean) ** 2, ca.df, (cb.se / cb.mean) ** 2, cb.df)
        ma = _expand_in_ratio((wa @ sa) / (wa @ na), ca.mean, sa.size)
        mb = _expand_in_ratio((wb @ sb) / (wb @ nb), cb.mean, sb.size)
        boot = _finite_share((mb / ma - 1) * 100)
        if boot.size < 0.9 * n_boot:
            return None, test
        ta, tna, tb, tnb = sa.sum(), na.sum(), sb.sum(), nb.sum()
        jack_a = (cb.mean / ((ta - sa) / (tna - na)) - 1) * 100
        jack_b = (((tb - sb) / (tnb - nb)) / ca.mean - 1) * 100
        iv = _bca_interval(est, boot, [jack_a, jack_b], level, df)
    iv = dataclasses.replace(iv, method=iv.method.replace("bca bootstrap", "bca cluster bootstrap"))
    return iv, test


def _values_name(stat: str) -> str:
    """The per-sample values of ``stat`` in the plural, as the bet sentence names them."""
    return {"tps": "sample throughputs", "result": "sample results"}.get(stat, f"sample {stat}s")


def compare_statistic(
    groups: Sequence[ConditionSamples],
    *,
    stat: str,
    level: Level = "sample",
    baseline: str | None = None,
    alpha: float = 0.05,
    rope_pct: float = 2.0,
    seed: int = 0,
    n_boot: int = 2000,
    environments: Mapping[str, Mapping[str, str]] | None = None,
    pairs: Pairs = "baseline",
    levels: Mapping[str, Mapping[str, str]] | None = None,
) -> Comparison:
    """Compare conditions on one statistic of their samples and judge each against the baseline.

    Parameters
    ----------
    groups : sequence of ConditionSamples
        One per condition.
    stat : {"mean", "median", "p90", "p95", "p99", "p99.9", "tps"}
        The statistic. ``tps`` is higher-is-faster and is always judged at the sample level
        (a sample's throughput is one number).
    level : {"sample", "transaction"}
        ``"sample"``: each sample's statistic is one observation, judged exactly as
        :func:`wannabet.analysis.compare` judges sample means. ``"transaction"``: the statistic
        of all transactions with samples as clusters (see the module docstring).
    baseline, alpha, rope_pct, seed, n_boot, environments, pairs, levels
        As for :func:`wannabet.analysis.compare`.

    Returns
    -------
    Comparison
        ``stat`` is set and ``stat_values`` holds each condition's statistic of all its
        transactions. The condition summaries describe the per-sample values of ``stat``.

    Notes
    -----
    At the transaction level the omnibus test is not computed (None), and the p-values of the
    pairwise tests are Holm-adjusted as at the sample level; the pairwise entries have no
    median change (``median_delta``), and their Hodges-Lehmann shift and Cliff's delta are of
    the per-sample values.
    """
    if not groups:
        raise AnalysisError("compare_statistic() got no conditions; pass at least one")
    q = stat_quantile(stat)
    metric: Metric = "throughput" if stat == "tps" else "result" if stat == "result" else "latency"
    unit = {"tps": "tps", "result": ""}.get(stat, "ms")
    obs = []
    for g in groups:
        pos, values = sample_values(g, stat)
        if values.size == 0:
            raise AnalysisError(f"{g.condition} has no sample with a {stat}; see wannabet summary")
        obs.append(Observations(g.condition, values, pos))
    # The sample level as it is: the tests, the intervals and the verdicts of sample means.
    result = compare(
        obs,
        baseline=baseline,
        metric=metric,
        level="sample",
        alpha=alpha,
        rope_pct=rope_pct,
        seed=seed,
        n_boot=n_boot,
        unit=unit,
        environments=environments,
        pairs=pairs,
        levels=levels,
        values_name=_values_name(stat),
    )
    pooled = {g.condition: pooled_value(g, stat) for g in groups}
    result = dataclasses.replace(result, stat=stat, stat_values=pooled)
    if stat == "result":
        result = _constant_results(result, alpha, rope_pct)
    if level == "sample" or stat == "tps" or _all_constant(result):
        return result
    by_name = {g.condition: g for g in groups}
    summaries = {c.condition: c for c in result.conditions}
    # The pairs the sample level compared, each judged again at the transaction level.
    family = [(c.baseline, c.condition) for c in result.comparisons]
    tested: list[tuple[Interval | None, TestResult]] = []
    for base, name in family:
        a, b = by_name[base], by_name[name]
        if q is None:
            # The stream of compare(level="transaction"), so the mean is judged identically.
            rng = _seed_for(seed, base, name)
            tested.append(
                cluster_bootstrap_mean_change(a, b, rng=rng, n_boot=n_boot, level=1 - alpha)
            )
        else:
            rng = _seed_for(seed, base, name, stat)
            ha, hb = a.histograms, b.histograms
            assert ha is not None and hb is not None  # sample_values checked
            tested.append(
                cluster_bootstrap_quantile_change(
                    _with_transactions(ha),
                    _with_transactions(hb),
                    q,
                    rng=rng,
                    n_boot=n_boot,
                    level=1 - alpha,
                )
            )
    adjusted = holm([test.p_value for _, test in tested])
    judged = []
    for (base, name), (interval, test), p_adj, sample_pair in zip(
        family, tested, adjusted, result.comparisons, strict=True
    ):
        judged.append(
            _transaction_pair(
                summaries[base],
                summaries[name],
                sample_pair,
                interval,
                test,
                p_adj,
                alpha=alpha,
                rope_pct=rope_pct,
                metric=metric,
            )
        )
    conditions = tuple(dataclasses.replace(c, level="transaction") for c in result.conditions)
    return dataclasses.replace(
        result, level="transaction", conditions=conditions, omnibus=None, comparisons=tuple(judged)
    )


def _all_constant(result: Comparison) -> bool:
    return all(c.descriptive.sd == 0 for c in result.conditions)


def _against_constant(
    varying: ConditionSummary, constant: float, *, baseline_constant: bool, alpha: float
) -> tuple[Interval | None, TestResult]:
    """The relative difference between a varying condition's mean answer and a constant one:
    a one-sample t test of the varying condition's sample means against the constant, and
    its t interval carried through the ratio (exact, since the constant has no error)."""
    d = varying.descriptive
    n = d.n
    name = "one-sample t against the constant answer"
    if n < 2 or d.sd == 0 or constant == 0:
        return None, TestResult(name, None, None, note="needs 2 varying samples, a nonzero answer")
    se = d.sd / math.sqrt(n)
    t = (d.mean - constant) / se
    p = float(2 * t_sf(abs(t), n - 1))
    h = float(t_ppf(1 - alpha / 2, n - 1)) * se
    lo, hi = d.mean - h, d.mean + h
    method = f"t ({n - 1} df), one sample"
    if baseline_constant:
        ends = sorted((end / constant - 1) * 100 for end in (lo, hi))
        est = (d.mean / constant - 1) * 100
        return Interval(est, ends[0], ends[1], 1 - alpha, method), TestResult(name, t, p, (n - 1,))
    if lo <= 0 <= hi:
        return None, TestResult(name, -t, p, (n - 1,), note="the baseline's interval spans 0")
    ends = sorted((constant / end - 1) * 100 for end in (lo, hi))
    est = (constant / d.mean - 1) * 100
    return Interval(est, ends[0], ends[1], 1 - alpha, method), TestResult(name, -t, p, (n - 1,))


def _constant_results(result: Comparison, alpha: float, rope_pct: float) -> Comparison:
    """Results that never vary are answers, not measurements: two conditions that each always
    give the same result differ by exactly their relative difference, with no uncertainty to
    test, and a varying condition is tested against a constant one (the exact answer) by a
    one-sample t test. A latency that never varies is a broken timer; a result that never
    varies is a deterministic query, so its zero-variance warning becomes a note."""
    constant = {c.condition for c in result.conditions if c.descriptive.sd == 0}
    by_name = {c.condition: c for c in result.conditions}
    # A pair tested against a constant is Bonferroni-adjusted over all the pairs.
    m = max(len(result.comparisons), 1)
    conditions = tuple(
        dataclasses.replace(
            c,
            diagnostics=tuple(
                Diagnostic(
                    "constant-result",
                    f"every sample of {c.condition!r} gave the same mean result: a"
                    " deterministic answer",
                    "its difference from another constant result is exact",
                )
                if d.code == "zero-variance"
                else d
                for d in c.diagnostics
            ),
        )
        for c in result.conditions
    )
    pairs = []
    for pair in result.comparisons:
        if {pair.condition, pair.baseline} <= constant and pair.delta is not None:
            change = pair.delta.estimate
            v: Verdict = (
                "no-difference"
                if abs(change) <= rope_pct
                else ("higher" if change > 0 else "lower")
            )
            note = (
                f"{v}: every sample of both conditions gave the same result, so the relative"
                f" difference {change:+.4g}% is exact"
            )
            pair = dataclasses.replace(
                pair,
                verdict=v,
                note=note,
                summary=f"{change:+.1f}% exact ({_fmt_n(pair.n_baseline, pair.n_condition)})",
            )
        elif len({pair.condition, pair.baseline} & constant) == 1:
            base_constant = pair.baseline in constant
            fixed = by_name[pair.baseline if base_constant else pair.condition]
            varying = by_name[pair.condition if base_constant else pair.baseline]
            interval, test = _against_constant(
                varying, fixed.descriptive.mean, baseline_constant=base_constant, alpha=alpha
            )
            p_adj = None if test.p_value is None else min(1.0, test.p_value * m)
            v, note = verdict(
                p_value=p_adj,
                interval=interval,
                alpha=alpha,
                rope_pct=rope_pct,
                metric="result",
                test_direction=test.statistic,
            )
            n = _fmt_n(pair.n_baseline, pair.n_condition)
            summary = f"? ({p_text(p_adj)}, {n})"
            if interval is not None and v in ("higher", "lower"):
                summary = (
                    f"{interval.estimate:+.1f}% [{interval.low:.1f}, {interval.high:.1f}]"
                    f" ({p_text(p_adj)}, {n})"
                )
            pair = dataclasses.replace(
                pair,
                test=test,
                p_adjusted=p_adj,
                delta=interval,
                verdict=v,
                note=f"{note}; {fixed.condition!r} always gave the same answer",
                summary=summary,
            )
        pairs.append(pair)
    return dataclasses.replace(result, conditions=conditions, comparisons=tuple(pairs))


def _with_transactions(sh: SampleHistograms) -> SampleHistograms:
    keep = sh.n > 0
    if keep.all():
        return sh
    return SampleHistograms(sh.lo_ns, sh.hi_ns, sh.counts[keep])


def _transaction_pair(
    sb: ConditionSummary,
    so: ConditionSummary,
    sample_pair: PairwiseComparison,
    interval: Interval | None,
    test: TestResult,
    p_adj: float | None,
    *,
    alpha: float,
    rope_pct: float,
    metric: Metric,
) -> PairwiseComparison:
    n_b, n_o = sb.n_samples, so.n_samples
    v: Verdict
    if min(n_b, n_o) < MIN_SAMPLES:
        v, note = "inconclusive", too_few_samples(n_b, n_o)
    else:
        v, note = verdict(
            p_value=p_adj,
            interval=interval,
            alpha=alpha,
            rope_pct=rope_pct,
            metric=metric,
            test_direction=test.statistic,
        )
    if v in ("faster", "slower", "higher", "lower") and interval is not None:
        summary = (
            f"{interval.estimate:+.1f}% [{interval.low:.1f}, {interval.high:.1f}] "
            f"({p_text(p_adj)}, {_fmt_n(n_b, n_o)})"
        )
    else:
        summary = f"{'~' if v == 'no-difference' else '?'} ({p_text(p_adj)}, {_fmt_n(n_b, n_o)})"
    return dataclasses.replace(
        sample_pair,
        test=test,
        p_adjusted=p_adj,
        delta=interval,
        median_delta=None,
        verdict=v,
        note=note,
        summary=summary,
        n_baseline=n_b,
        n_condition=n_o,
    )
