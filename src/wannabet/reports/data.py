"""What the report plots, reduced from the results file to a size that fits in a mail.

No per-transaction row ever reaches the page, and none is read beyond a bounded subset: the
report's cost grows with samples, not transactions. Per condition it keeps:

* latency histograms as bin counts (log-spaced and linear bins), rebinned from the samples'
  stored latency histograms (each stored bin at its midpoint, within 0.4 % of its values);
* five quantiles overall and per period, from the merged histograms (a sample belongs to the
  period its measured window starts in);
* heatmap cells: time buckets x log-latency buckets, each sample's histogram spread over the
  time buckets its window covers (the time resolution is the sample's);
* per session, five quantiles of the bounded subset of transactions the comparison examines
  (:func:`wannabet.datasets.load_observations`), and from it a seeded subsample of at most
  :data:`KDE_SUBSAMPLE` latencies for the smoothed density on a fixed grid;
* one row per sample (its mean latency or TPS) for the run-order and CLT plots.

A million transactions or a billion give the same page size and about the same time.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from scipy import stats

from wannabet.analysis import Observations, histogram
from wannabet.datasets import load_observations
from wannabet.render.report.inputs import (
    QUANTILES,
    Axes,
    ConditionData,
    LatencyData,
    Quantiles,
    ReportData,
    SamplePoint,
)
from wannabet.store import RunInfo, Store, queries

#: Most latencies per condition fed to the kernel density estimate.
KDE_SUBSAMPLE = 4000
#: Points on which each density is evaluated.
KDE_POINTS = 160
#: Bins of the latency histograms.
HIST_BINS = 60
#: Time x latency buckets of the heatmap.
HEAT_TIME_BINS = 60
HEAT_LATENCY_BINS = 30
#: Smallest latency placed on a log axis (ms); zero latencies are drawn here.
LOG_FLOOR_MS = 1e-4


def _edges(lo: float, hi: float, n: int) -> tuple[float, ...]:
    if not hi > lo:
        hi = lo + 1.0
    return tuple(float(x) for x in np.linspace(lo, hi, n + 1))


def load_report_data(
    store: Store,
    runs: Sequence[RunInfo],
    *,
    labels: Sequence[Sequence[str]],
    metric: str,
    include_warmup: bool = False,
    period_seconds: float = 3600.0,
    seed: int = 0,
) -> ReportData:
    """Reduce the transactions of ``runs`` to what the report plots.

    Parameters
    ----------
    store : Store
        The results file.
    runs : sequence of RunInfo
        The compared runs.
    labels : sequence of sequences of str
        Per run, the label of each of its conditions (in condition order) as the comparison
        names them (``RUN:condition`` when several runs are compared).
    metric : {"latency", "throughput"}
        What the per-sample value is: mean latency (ms) or TPS.
    include_warmup : bool
        Count warm-up transactions too.
    period_seconds : float
        Width of the periods of the consistency breakdown (an hour, or a day for long runs).
    seed : int
        Seed of the subsets (the comparison's) and of the density's subsample.
    """
    per_tx = any(not r.aggregates_only and r.transactions > 0 for r in runs)
    with_time = all(r.timed for r in runs)
    summaries = {}
    with store.read() as con:
        for r in runs:
            summaries[r.run_id] = _Summaries.read(con, r.run_id, include_warmup)
    # An import that kept its tool's per-sample histograms (fio's json+ bins and histogram
    # logs) has latency distributions and a heatmap too, though no per-transaction values.
    binned = any(s.by_sample for s in summaries.values())
    axes = None
    if per_tx or binned:
        hists = [h for s in summaries.values() for h in s.by_condition.values() if len(h)]
        if hists:
            lows = [_lowest_ms(h) for h in hists]
            lo = math.log10(max(min(x or LOG_FLOOR_MS for x in lows), LOG_FLOOR_MS))
            hi = math.log10(max(max(_highest_ms(h) for h in hists), LOG_FLOOR_MS))
            lin_hi = max(float(histogram.quantile(h, 0.99)) / 1e6 for h in hists) or 1.0
            span = max(hi - lo, 0.05)
            axes = Axes(
                log_edges=_edges(lo, lo + span, HIST_BINS),
                linear_edges=_edges(0.0, lin_hi, HIST_BINS),
                kde_grid=tuple(
                    float(x) for x in np.linspace(lo - 0.1 * span, hi + 0.1 * span, KDE_POINTS)
                ),
                heat_log_edges=_edges(lo, lo + span, HEAT_LATENCY_BINS),
                period_seconds=period_seconds,
            )
    conditions: list[ConditionData] = []
    for r, run_labels in zip(runs, labels, strict=True):
        subsets: dict[str, Observations] = {}
        if axes is not None and r.transactions > 0 and not r.aggregates_only:
            found = load_observations(
                store, r, include_warmup=include_warmup, skip_empty=True, seed=seed
            )
            subsets = {o.condition: o for o in found}
        conditions += _run_conditions(
            store, r, run_labels, axes, summaries[r.run_id], subsets, metric, seed
        )
    return ReportData(
        tuple(runs),
        tuple(conditions),
        axes,
        per_tx and axes is not None,
        timed=with_time,
        histograms=axes is not None,
    )


def _lowest_ms(h: histogram.Histogram) -> float:
    nonzero = (h.count > 0) & (h.hi_ns > 0)
    return float(h.lo_ns[nonzero].min()) / 1e6 if nonzero.any() else 0.0


def _highest_ms(h: histogram.Histogram) -> float:
    filled = h.count > 0
    return float(h.hi_ns[filled].max()) / 1e6 if filled.any() else 0.0


class _Summaries:
    """One run's per-sample summaries, as the report needs them."""

    def __init__(
        self,
        windows: queries.SampleWindows,
        moments: queries.SampleMoments,
        by_sample: dict[int, histogram.Histogram],
        statuses: queries.StatusCounts,
        conditions: dict[int, int] | None = None,
    ) -> None:
        self.windows = windows
        self.by_sample = by_sample
        self.statuses = statuses
        self.means = {
            int(sid): float(total) / float(n)
            for sid, total, n in zip(moments.sample_id, moments.sum_ms, moments.count, strict=True)
            if n
        }
        self.condition_of = dict(
            zip(moments.sample_id.tolist(), moments.condition_id.tolist(), strict=True)
        )
        with_moments = set(self.condition_of.values())
        # Samples with histograms but no moments (an import of a tool's histograms alone).
        self.condition_of = {**(conditions or {}), **self.condition_of}
        grouped: dict[int, list[histogram.Histogram]] = {}
        for sid, h in by_sample.items():
            grouped.setdefault(int(self.condition_of.get(sid, -1)), []).append(h)
        self.by_condition = {}
        for c, hs in grouped.items():
            # Imported histograms whose layouts overlap cannot be merged: that condition
            # gets no merged histogram rather than the report a traceback.
            with contextlib.suppress(ValueError):
                self.by_condition[c] = histogram.merge(*hs)
        #: per condition: the fastest and slowest successful transaction, ms
        self.extremes: dict[int, tuple[float, float]] = {}
        for c in with_moments:
            mine = moments.condition_id == c
            self.extremes[int(c)] = (
                float(moments.min_ns[mine].min()) / 1e6,
                float(moments.max_ns[mine].max()) / 1e6,
            )
        origin = float(windows.measure_start_ns.min()) if windows.sample_id.size else 0.0
        #: per sample id: its measured window, seconds since the first measured window opened
        self.window_s = {
            int(sid): ((float(start) - origin) / 1e9, (float(end) - origin) / 1e9)
            for sid, start, end in zip(
                windows.sample_id, windows.measure_start_ns, windows.end_ns, strict=True
            )
        }
        #: seconds from the first measured window's start to the last sample's end
        self.span_s = max([0.0, *(end for _, end in self.window_s.values())])

    @classmethod
    def read(cls, con: Any, run_id: int, include_warmup: bool) -> _Summaries:
        return cls(
            queries.sample_windows(con, run_id),
            queries.sample_moments(con, run_id, include_warmup=include_warmup),
            queries.histograms_by_sample(
                queries.sample_bins(con, run_id, include_warmup=include_warmup)
            ),
            queries.status_counts(con, run_id, include_warmup=include_warmup),
            queries.sample_conditions(con, run_id),
        )

    def counts(self, condition_id: int) -> tuple[int, int, dict[str, int]]:
        """Transactions, failures and failures by status of one condition."""
        mine = np.asarray(self.statuses.condition_id) == condition_id
        n = int(np.asarray(self.statuses.count)[mine].sum())
        by_status: dict[str, int] = {}
        for status, count in zip(
            np.asarray(self.statuses.status)[mine].tolist(),
            np.asarray(self.statuses.count)[mine].tolist(),
            strict=True,
        ):
            if str(status) != "ok":
                by_status[str(status)] = by_status.get(str(status), 0) + int(count)
        return n, sum(by_status.values()), by_status


def _run_conditions(
    store: Store,
    run: RunInfo,
    labels: Sequence[str],
    axes: Axes | None,
    summ: _Summaries,
    subsets: dict[str, Observations],
    metric: str,
    seed: int,
) -> list[ConditionData]:
    rid = run.run_id
    rows = store.conditions(rid)
    if len(rows) != len(labels):
        raise ValueError(f"run {rid} has {len(rows)} conditions, {len(labels)} labels given")
    samples = store.samples(rid)
    out = []
    for row, label in zip(rows, labels, strict=True):
        cid = row.condition_id
        points = []
        # Every stored sample of the condition, in run order: the k-th is its sample #k.
        mine = [s for s in samples if s["condition_id"] == cid]
        for number, s in enumerate(mine, start=1):
            value = summ.means.get(int(s["sample_id"])) if metric == "latency" else s["tps"]
            points.append(
                SamplePoint(
                    run_id=rid,
                    condition=label,
                    position=int(s["position"]),
                    block=int(s["block"]),
                    number=number,
                    value=_finite(value),
                    transactions=int(s["transactions"] or 0),
                    errors=int(s["errors"] or 0),
                    tps=_finite(s["tps"]),
                )
            )
        n, errors, by_status = summ.counts(cid)
        if not n:
            # Imports that kept only aggregates: their sample rows hold the counts.
            n = sum(p.transactions for p in points)
            errors = sum(p.errors for p in points)
        latency = None
        subset = subsets.get(row.label)
        if axes is not None and (subset is not None or run.aggregates_only):
            latency = _latency(summ, cid, subset, axes, seed, with_time=run.timed)
        out.append(
            ConditionData(
                label=label,
                run_id=rid,
                levels=dict(row.levels),
                samples=tuple(points),
                transactions=n,
                errors=errors,
                errors_by_status=by_status,
                latency=latency,
            )
        )
    return out


def _finite(x: Any) -> float | None:
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def _five(qs: Sequence[float]) -> tuple[float, float, float, float, float]:
    return cast("tuple[float, float, float, float, float]", tuple(float(q) for q in qs))


def _quantiles(h: histogram.Histogram, extremes_ms: tuple[float, float] | None) -> Quantiles:
    """The report's quantiles of ``h``, never outside the condition's extremes when known."""
    # NULL extremes (an import that kept none) read as 0: no bound then.
    ns = None
    if extremes_ms is not None and extremes_ms[1] > 0:
        ns = (extremes_ms[0] * 1e6, extremes_ms[1] * 1e6)
    qs = histogram.quantiles(h, QUANTILES, extremes=ns) / 1e6
    return Quantiles(histogram.count(h), _five(qs.tolist()))


def _binned(mids_ms: np.ndarray, counts: np.ndarray, lo: float, width: float, n: int) -> np.ndarray:
    lg = np.log10(np.maximum(mids_ms, LOG_FLOOR_MS))
    b = np.clip(np.floor((lg - lo) / width), 0, n - 1).astype(np.int64)
    return np.bincount(b, weights=counts, minlength=n)


def _latency(
    summ: _Summaries,
    cid: int,
    subset: Observations | None,
    axes: Axes,
    seed: int,
    *,
    with_time: bool,
) -> LatencyData | None:
    """One condition's latency figures from its samples' histograms; per session, per period
    and the density from ``subset``, its transactions (None: an import of histograms alone,
    which has none of them)."""
    h = summ.by_condition.get(cid)
    if h is None or histogram.count(h) == 0:
        return None
    n = histogram.count(h)
    mids = histogram.midpoints(h) / 1e6
    counts = h.count.astype(np.float64)
    lo, hi = axes.log_edges[0], axes.log_edges[-1]
    log_counts = _binned(mids, counts, lo, (hi - lo) / HIST_BINS, HIST_BINS)
    lin_hi = axes.linear_edges[-1]
    inside = mids <= lin_hi
    lin = np.bincount(
        np.minimum(np.floor(mids[inside] / (lin_hi / HIST_BINS)), HIST_BINS - 1).astype(np.int64),
        weights=counts[inside],
        minlength=HIST_BINS,
    )
    sids = [int(s) for s in summ.windows.sample_id if summ.condition_of.get(int(s)) == cid]
    heat: list[tuple[int, int, int]] = []
    heat_w = 1.0
    if with_time:
        heat_w = max(summ.span_s / HEAT_TIME_BINS, 1e-9)
        heat = _heat(summ, sids, axes, heat_w)
    # Per session and period: the quantiles of the comparison's subset of transactions (all of
    # them up to its size), counts stated for all of the condition's transactions.
    by_session: dict[int, Quantiles] = {}
    by_period: dict[int, Quantiles] = {}
    density: tuple[float, ...] | None = None
    bandwidth: float | None = None
    sub = np.zeros(0)
    if subset is not None:
        scale = n / subset.values.size
        by_session = _grouped(subset.values, subset.session, scale)
        if with_time and subset.time_s is not None:
            period = np.floor(subset.time_s / axes.period_seconds).astype(np.int64)
            by_period = _grouped(subset.values, period, scale)
        rng = np.random.default_rng([seed, 0x4B44])
        sub = subset.values
        if sub.size > KDE_SUBSAMPLE:
            sub = rng.choice(sub, KDE_SUBSAMPLE, replace=False)
        density, bandwidth = _log_density(
            np.log10(np.maximum(sub, LOG_FLOOR_MS)), np.asarray(axes.kde_grid)
        )
    # Without moments, the extremes the histogram bounds (its lowest and highest edge).
    low, high = summ.extremes.get(cid, (_lowest_ms(h), _highest_ms(h)))
    return LatencyData(
        n=n,
        log_counts=tuple(round(float(x)) for x in log_counts),
        linear_counts=tuple(round(float(x)) for x in lin),
        linear_beyond=n - round(float(lin.sum())),
        log_density=density,
        kde_n=int(sub.size),
        kde_bandwidth=bandwidth,
        quantiles=_quantiles(h, summ.extremes.get(cid)),
        min_ms=low,
        max_ms=high,
        by_session=by_session,
        by_period=by_period,
        heat=tuple(heat),
        heat_bucket_s=heat_w,
    )


def _grouped(values: np.ndarray, keys: np.ndarray | None, scale: float) -> dict[int, Quantiles]:
    if keys is None:
        return {}
    out = {}
    for key in np.unique(keys).tolist():
        mine = values[keys == key]
        five = _five(np.quantile(mine, QUANTILES).tolist())
        out[int(key)] = Quantiles(round(mine.size * scale), five)
    return out


def _heat(
    summ: _Summaries, sids: Sequence[int], axes: Axes, width_s: float
) -> list[tuple[int, int, int]]:
    """Time x log-latency cells of one condition: each sample's histogram spread over the time
    buckets its measured window covers, in proportion to the overlap."""
    lo = axes.heat_log_edges[0]
    lw = (axes.heat_log_edges[-1] - lo) / HEAT_LATENCY_BINS
    cells = np.zeros((HEAT_TIME_BINS, HEAT_LATENCY_BINS))
    for s in sids:
        h = summ.by_sample.get(s)
        if h is None or not len(h):
            continue
        lat = _binned(
            histogram.midpoints(h) / 1e6, h.count.astype(np.float64), lo, lw, HEAT_LATENCY_BINS
        )
        start_s, end_s = summ.window_s[s]
        a = start_s / width_s
        b = max(end_s / width_s, a)
        first = min(int(a), HEAT_TIME_BINS - 1)
        last = min(int(b), HEAT_TIME_BINS - 1)
        if b - a <= 0 or first == last:
            cells[first] += lat
            continue
        edges = np.clip(np.arange(first, last + 2, dtype=np.float64), a, b)
        share = np.diff(edges) / (b - a)
        cells[first : last + 1] += share[:, None] * lat[None, :]
    whole = np.rint(cells).astype(np.int64)
    return [(int(t), int(b), int(whole[t, b])) for t, b in zip(*np.nonzero(whole), strict=True)]


def _log_density(lg: np.ndarray, grid: np.ndarray) -> tuple[tuple[float, ...] | None, float | None]:
    """Gaussian KDE of log10 latencies on ``grid`` and its bandwidth (the kernel's sd, in
    decades); ``(None, None)`` when it is undefined.

    A KDE needs at least two distinct values (otherwise its covariance is singular).
    """
    if lg.size < 2 or float(np.ptp(lg)) == 0.0:
        return None, None
    try:
        kde = stats.gaussian_kde(lg)
    except np.linalg.LinAlgError:
        return None, None
    f = kde(grid)
    if not np.all(np.isfinite(f)):
        return None, None
    return tuple(float(x) for x in f), float(np.sqrt(kde.covariance[0, 0]))
