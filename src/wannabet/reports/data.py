"""What the report plots, reduced from the results file to a size that fits in a mail.

No per-transaction row ever reaches the page. Per condition the report keeps:

* latency histograms as bin counts (log-spaced and linear bins), computed by ``GROUP BY``;
* a bounded, seeded subsample (at most :data:`KDE_SUBSAMPLE` latencies) for the smoothed
  density, which is evaluated on a fixed grid;
* five quantiles, overall and per session and per period;
* heatmap cells: time buckets x log-latency buckets with their counts;
* one row per sample (its mean latency or TPS) for the run-order and CLT plots.

A million transactions or ten million give the same page size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from scipy import stats

from wannabet.render.report.inputs import (
    QUANTILES,
    Axes,
    ConditionData,
    LatencyData,
    Quantiles,
    ReportData,
    SamplePoint,
)
from wannabet.store import RunInfo, Store
from wannabet.store.queries import LatencyScan, condition_counts, sample_mean_latencies

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
        Seed of the subsample for the density estimate.
    """
    per_tx = any(not r.aggregates_only and r.transactions > 0 for r in runs)
    with_time = all(r.timed for r in runs)
    axes = None
    with store.read() as con:

        def scan(run_id: int) -> LatencyScan:
            return LatencyScan(con, run_id, include_warmup, LOG_FLOOR_MS)

        if per_tx:
            ranges = []
            for r in runs:
                found = scan(r.run_id).range()
                if found is not None:
                    ranges.append(found)
            if ranges:
                lo = math.log10(max(min(x[0] or LOG_FLOOR_MS for x in ranges), LOG_FLOOR_MS))
                hi = math.log10(max(max(x[1] for x in ranges), LOG_FLOOR_MS))
                lin_hi = max(float(x[2]) for x in ranges) or 1.0
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
            conditions += _run_conditions(
                con, store, r, run_labels, axes, scan(r.run_id), metric, include_warmup, seed
            )
    return ReportData(
        tuple(runs), tuple(conditions), axes, per_tx and axes is not None, timed=with_time
    )


def _run_conditions(
    con: Any,
    store: Store,
    run: RunInfo,
    labels: Sequence[str],
    axes: Axes | None,
    scan: LatencyScan,
    metric: str,
    include_warmup: bool,
    seed: int,
) -> list[ConditionData]:
    rid = run.run_id
    rows = store.conditions(rid)
    if len(rows) != len(labels):
        raise ValueError(f"run {rid} has {len(rows)} conditions, {len(labels)} labels given")
    counts = condition_counts(con, rid, include_warmup=include_warmup)
    sample_means = sample_mean_latencies(con, rid, include_warmup=include_warmup)
    samples = store.samples(rid)
    latency: dict[int, LatencyData] = {}
    if axes is not None and run.transactions > 0:
        latency = _latencies(scan, axes, seed, with_time=run.timed)
    out = []
    for row, label in zip(rows, labels, strict=True):
        cid = row.condition_id
        points = []
        for s in samples:
            if s["condition_id"] != cid:
                continue
            value = sample_means.get(int(s["sample_id"])) if metric == "latency" else s["tps"]
            points.append(
                SamplePoint(
                    run_id=rid,
                    condition=label,
                    position=int(s["position"]),
                    block=int(s["block"]),
                    value=_finite(value),
                    transactions=int(s["transactions"] or 0),
                    errors=int(s["errors"] or 0),
                    tps=_finite(s["tps"]),
                )
            )
        n, errors, by_status = counts.get(cid, (0, 0, {}))
        if not n:
            # Imports that kept only aggregates: their sample rows hold the counts.
            n = sum(p.transactions for p in points)
            errors = sum(p.errors for p in points)
        out.append(
            ConditionData(
                label=label,
                run_id=rid,
                levels=dict(row.levels),
                samples=tuple(points),
                transactions=n,
                errors=errors,
                errors_by_status=by_status,
                latency=latency.get(cid),
            )
        )
    return out


def _finite(x: Any) -> float | None:
    if x is None:
        return None
    v = float(x)
    return v if math.isfinite(v) else None


def _five(qs: tuple[float, ...]) -> tuple[float, float, float, float, float]:
    return cast("tuple[float, float, float, float, float]", qs)


def _bin_counts(pairs: Sequence[tuple[float, int]], n: int) -> tuple[int, ...]:
    counts = [0] * n
    for b, c in pairs:
        counts[min(max(int(b), 0), n - 1)] += int(c)
    return tuple(counts)


def _latencies(
    scan: LatencyScan, axes: Axes, seed: int, *, with_time: bool = True
) -> dict[int, LatencyData]:
    lo, hi = axes.log_edges[0], axes.log_edges[-1]
    w_log = (hi - lo) / HIST_BINS
    lin_hi = axes.linear_edges[-1]
    w_lin = lin_hi / HIST_BINS
    seconds = scan.span_s()
    heat_w = max(seconds / HEAT_TIME_BINS, 1e-9)
    heat_lw = (axes.heat_log_edges[-1] - axes.heat_log_edges[0]) / HEAT_LATENCY_BINS
    result: dict[int, dict[str, Any]] = {}

    def slot(cid: int) -> dict[str, Any]:
        return result.setdefault(cid, {"session": {}, "period": {}})

    for row in scan.quantiles(QUANTILES):
        d = slot(row.condition_id)
        d["n"], d["q"] = row.n, Quantiles(row.n, _five(row.quantiles))
        d["min"], d["max"] = row.min_ms, row.max_ms
    for kind, bins in (
        ("log", scan.log_bins(lo, w_log)),
        ("linear", scan.linear_bins(w_lin, lin_hi)),
    ):
        grouped: dict[int, list[tuple[float, int]]] = {}
        for b in bins:
            grouped.setdefault(b.condition_id, []).append((b.bin, b.n))
        for cid, pairs in grouped.items():
            slot(cid)[kind] = _bin_counts(pairs, HIST_BINS)
    groups = [("session", scan.quantiles_by_session(QUANTILES))]
    if with_time:  # without timestamps every transaction would fall in period 0
        groups.append(("period", scan.quantiles_by_period(axes.period_seconds, QUANTILES)))
    for key, rows in groups:
        for g in rows:
            slot(g.condition_id)[key][g.key] = Quantiles(g.n, _five(g.quantiles))
    heat: dict[int, list[tuple[int, int, int]]] = {}
    heat_rows = (
        []
        if not with_time
        else scan.heat_cells(
            time_width_s=heat_w,
            time_bins=HEAT_TIME_BINS,
            log_lo=axes.heat_log_edges[0],
            log_width=heat_lw,
            latency_bins=HEAT_LATENCY_BINS,
        )
    )
    for cell in heat_rows:
        heat.setdefault(cell.condition_id, []).append((cell.time_bin, cell.latency_bin, cell.n))
    out = {}
    grid = np.asarray(axes.kde_grid)
    for cid, d in result.items():
        if "n" not in d:
            continue
        # A seeded subsample that is the same in every process: a report rebuilt from the same
        # file is the same.
        sub = scan.log_subsample(cid, seed=seed, limit=KDE_SUBSAMPLE)
        density, bandwidth = _log_density(sub, grid)
        lin = d.get("linear", (0,) * HIST_BINS)
        out[cid] = LatencyData(
            n=d["n"],
            log_counts=d.get("log", (0,) * HIST_BINS),
            linear_counts=lin,
            linear_beyond=d["n"] - sum(lin),
            log_density=density,
            kde_n=len(sub),
            kde_bandwidth=bandwidth,
            quantiles=d["q"],
            min_ms=float(d["min"]),
            max_ms=float(d["max"]),
            by_session=dict(d["session"]),
            by_period=dict(d["period"]),
            heat=tuple(heat.get(cid, ())),
            heat_bucket_s=heat_w,
        )
    return out


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
