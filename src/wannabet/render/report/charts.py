"""The report's plots, built with Altair.

Every function takes reduced data (see :mod:`wannabet.render.report.inputs`) and returns an
Altair chart (or None when there is nothing to draw); :func:`spec` turns one into the plain
Vega-Lite dict the page embeds, and vega-embed draws it as SVG. Numbers are rounded to five
significant digits: the page stays small and nothing visible changes.

Two conventions hold in every chart:

* **One colour per condition.** Every chart that colours by condition takes the same
  ``colors`` scale (:func:`condition_colors`): an explicit domain of every condition label in
  declaration order and one palette, so a condition has the same colour in every chart and the
  legends list the conditions as the experiment declares them.
* **Latencies in one unit.** Values arrive in ms; a chart that shows latencies draws them in
  the :class:`~wannabet.render.format.TimeUnit` it is given (µs for a sub-millisecond run, s
  for a slow one), and its axis says which.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import numpy as np
from scipy import stats

from wannabet.documents import ConditionDocument
from wannabet.render.format import MS, TimeUnit, one_line, sample_name, time_unit
from wannabet.render.report.inputs import QUANTILES, ConditionData, ReportData

WIDTH = 540
FACET_HEIGHT = 70
#: Widest facet header label in pixels; a longer one ends in an ellipsis (tooltips show it all).
LABEL_LIMIT = 200
#: The colours of conditions, in declaration order (Vega's "tableau10"); an experiment with
#: more conditions reuses them in the same order.
PALETTE = (
    "#4c78a8",
    "#f58518",
    "#e45756",
    "#72b7b2",
    "#54a24b",
    "#eeca3b",
    "#b279a2",
    "#ff9da6",
    "#9d755d",
    "#bab0ac",
)
#: Most block starts labelled in the run-order chart; beyond it only the dashed lines show.
BLOCK_LABELS = 24


def _r(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return float(f"{x:.5g}")


def _data(rows: Sequence[Mapping[str, Any]]) -> alt.InlineData:
    return alt.InlineData(values=[dict(r) for r in rows])


def _kind(kind: str) -> alt.Chart:
    # Faceted layers need one shared dataset: each layer keeps the rows of its kind.
    return alt.Chart().transform_filter(alt.datum.kind == kind)


def _tag(kind: str, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "kind": kind} for r in rows]


def _one_line(value: Any) -> Any:
    if isinstance(value, str):
        return one_line(value)
    if isinstance(value, dict):
        return {k: _one_line(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_one_line(v) for v in value]
    return value


def spec(chart: Any) -> dict[str, Any]:
    """The chart as a Vega-Lite dict, every string in it on one clean line.

    Vega-Lite compiles ``sort`` arrays of labels into Vega expressions with plain
    ``JSON.stringify``, which leaves U+2028/U+2029 raw, and Vega's expression parser rejects
    them. Cleaning every string of the finished spec (the data values and the sort arrays
    alike) keeps the labels matching each other, whatever a label holds.
    """
    spec: dict[str, Any] = _one_line(chart.to_dict())
    spec.setdefault("config", {})["font"] = "system-ui, sans-serif"
    return spec


def _header() -> alt.Header:
    # Long labels (several factors, several runs) are cut with an ellipsis, not at 200 px.
    return alt.Header(labelAngle=0, labelLimit=LABEL_LIMIT)


def _order(conditions: Sequence[ConditionData]) -> list[str]:
    return [c.label for c in conditions]


def condition_colors(labels: Sequence[str]) -> alt.Scale:
    """The colour scale of every chart: ``labels`` (every condition, in declaration order) as
    the domain, the :data:`PALETTE` in order as the range, so the first condition declared
    gets the first colour in every chart, whatever a chart draws or leaves out."""
    domain = list(dict.fromkeys(labels))
    return alt.Scale(domain=domain, range=[PALETTE[i % len(PALETTE)] for i in range(len(domain))])


def _colors(colors: alt.Scale | None, conditions: Sequence[ConditionData]) -> alt.Scale:
    return colors if colors is not None else condition_colors(_order(conditions))


def _legend(colors: alt.Scale) -> alt.Legend:
    # The legend follows the scale's domain: declaration order, not alphabetical. At most
    # three entries a row, so six long labels do not make the chart wider than the page.
    n = len(colors.to_dict().get("domain", [])) or 1
    return alt.Legend(orient="top", columns=min(n, 3), labelLimit=LABEL_LIMIT)


def _color(colors: alt.Scale, *, legend: bool = True) -> alt.Color:
    return alt.Color("condition:N", scale=colors, legend=_legend(colors) if legend else None)


def histogram(
    report: ReportData,
    *,
    log_x: bool,
    colors: alt.Scale | None = None,
    unit: TimeUnit = MS,
) -> alt.TopLevelMixin | None:
    """Histogram of response times per condition, as densities, with the smoothed density.

    ``log_x``: log-spaced bins on a log axis, densities per decade; otherwise linear bins up to
    the 99th percentile, densities per ``unit``. The smoothed curve is the Gaussian KDE of
    log10 latencies, transformed to the linear axis by the change of variables
    ``f(x) = g(log10 x) / (x ln 10)``.
    """
    axes = report.axes
    if axes is None:
        return None
    bars: list[dict[str, Any]] = []
    curve: list[dict[str, Any]] = []
    with_data = [c for c in report.conditions if c.latency is not None and c.latency.n > 0]
    if not with_data:
        return None
    k = unit.per_ms
    for c in with_data:
        lat = c.latency
        assert lat is not None
        if log_x:
            edges = [10**e * k for e in axes.log_edges]
            counts = lat.log_counts
            widths = np.diff(axes.log_edges)  # per decade
        else:
            edges = [e * k for e in axes.linear_edges]
            counts = lat.linear_counts
            widths = np.diff(axes.linear_edges) * k  # per unit
        for i, n in enumerate(counts):
            if n:
                bars.append(
                    {
                        "condition": c.label,
                        "from": _r(edges[i]),
                        "to": _r(edges[i + 1]),
                        "density": _r(n / (lat.n * float(widths[i]))),
                        "count": n,
                    }
                )
        if lat.log_density is not None:
            for g, f in zip(axes.kde_grid, lat.log_density, strict=True):
                x = 10**g  # ms
                if not log_x and x > axes.linear_edges[-1]:
                    continue
                y = f if log_x else f / (x * k * math.log(10))
                curve.append({"condition": c.label, "t": _r(x * k), "density": _r(y)})
    scale = alt.Scale(type="log") if log_x else alt.Scale(zero=True)
    per = "per decade" if log_x else f"per {unit}"
    x_title = (
        f"response time ({unit}, log scale)" if log_x else f"response time ({unit}, up to p99)"
    )
    colors = _colors(colors, with_data)
    base_bars = (
        _kind("bar")
        .mark_rect(opacity=0.55)
        .encode(
            # A log axis over several decades would draw a grid line at every minor tick.
            x=alt.X("from:Q", scale=scale, title=x_title, axis=alt.Axis(grid=not log_x)),
            x2="to:Q",
            y=alt.Y("density:Q", title=f"density ({per})"),
            color=_color(colors),
            tooltip=[
                alt.Tooltip("condition:N"),
                alt.Tooltip("from:Q", title=f"from {unit}", format=".4g"),
                alt.Tooltip("to:Q", title=f"to {unit}", format=".4g"),
                alt.Tooltip("count:Q"),
            ],
        )
    )
    line = (
        _kind("kde")
        .mark_line(strokeWidth=2)
        .encode(x=alt.X("t:Q", scale=scale), y="density:Q", color=_color(colors))
    )
    layered = alt.layer(
        base_bars, line, data=_data(_tag("bar", bars) + _tag("kde", curve))
    ).properties(width=WIDTH, height=FACET_HEIGHT)
    chart: alt.TopLevelMixin = layered.facet(
        row=alt.Row("condition:N", sort=_order(with_data), header=_header())
    ).resolve_scale(y="independent")
    return chart


def boxes(
    report: ReportData, *, colors: alt.Scale | None = None, unit: TimeUnit = MS
) -> alt.TopLevelMixin | None:
    """Side-by-side box plots: p25-p75 box, p5-p95 whiskers, median tick, on a log axis."""
    rows = []
    conds = [c for c in report.conditions if c.latency is not None and c.latency.n > 0]
    floor = 1e-4 * unit.per_ms  # a zero latency sits at the axis' floor (0.1 µs)
    for c in conds:
        assert c.latency is not None
        q = c.latency.quantiles.values
        rows.append(
            {
                "condition": c.label,
                **{
                    f"p{round(100 * p)}": _r(max(v * unit.per_ms, floor))
                    for p, v in zip(QUANTILES, q, strict=True)
                },
                "n": c.latency.n,
            }
        )
    if not rows:
        return None
    tip = [alt.Tooltip("condition:N"), alt.Tooltip("n:Q")] + [
        alt.Tooltip(f"p{round(100 * p)}:Q", title=f"p{round(100 * p)} {unit}", format=".4g")
        for p in QUANTILES
    ]
    y = alt.Y("condition:N", sort=_order(conds), title=None)
    scale = alt.Scale(type="log")
    base = alt.Chart(_data(rows)).encode(y=y, tooltip=tip)
    whisker = base.mark_rule().encode(
        x=alt.X(
            "p5:Q", scale=scale, title=f"response time ({unit}, log scale): p5 · p25–p75 · p95"
        ),
        x2="p95:Q",
    )
    box = base.mark_bar(size=16, opacity=0.7).encode(
        x=alt.X("p25:Q", scale=scale), x2="p75:Q", color=_color(_colors(colors, conds))
    )
    median = base.mark_tick(color="black", size=18, thickness=2).encode(
        x=alt.X("p50:Q", scale=scale)
    )
    return alt.layer(whisker, box, median).properties(width=WIDTH, height=28 * len(rows) + 20)


def run_order(
    report: ReportData,
    metric: str,
    unit: str,
    *,
    colors: alt.Scale | None = None,
    latency_unit: TimeUnit = MS,
) -> alt.TopLevelMixin | None:
    """Each sample's mean (or TPS) in the order run, coloured by condition, blocks marked.

    A sample is named as everywhere else, by its condition, its number within the condition
    and its block (:func:`~wannabet.render.format.sample_name`); the x axis is the order the
    samples ran in, with the blocks labelled rather than a third numbering of positions.
    """
    points: list[dict[str, Any]] = []
    boundaries: list[dict[str, Any]] = []
    several = len(report.runs) > 1
    latency = metric == "latency"
    for c in report.conditions:
        for s in c.samples:
            value = latency_unit.scaled(s.value) if latency else s.value
            points.append(
                {
                    "run": s.run_id,
                    "condition": c.label,
                    "sample": sample_name(c.label, s.number, s.block + 1),
                    "order": s.position,
                    "block": s.block + 1,
                    "value": _r(value),
                    "transactions": s.transactions,
                    "errors": s.errors,
                }
            )
    if not points:
        return None
    for run in report.runs:
        mine = sorted((p["order"], p["block"]) for p in points if p["run"] == run.run_id)
        if mine:
            boundaries.append({"run": run.run_id, "at": mine[0][0] - 0.5, "block": mine[0][1]})
        for (_, b0), (pos, b1) in itertools.pairwise(mine):
            if b1 != b0:
                boundaries.append({"run": run.run_id, "at": pos - 0.5, "block": b1})
    for b in boundaries:
        b["label"] = f"block {b['block']}"
    title = f"mean response time ({latency_unit})" if latency else f"throughput ({unit})"
    colors_ = _colors(colors, report.conditions)
    pts = (
        _kind("point")
        .mark_point(filled=True, size=60)
        .encode(
            # The position is only where to draw: samples are named by condition, number and
            # block, and the blocks are labelled along the top.
            x=alt.X(
                "order:Q",
                title="samples in the order they ran (dashed lines: block starts)",
                axis=alt.Axis(labels=False, ticks=False, grid=False),
            ),
            y=alt.Y("value:Q", title=title, scale=alt.Scale(zero=False)),
            color=_color(colors_),
            # Colour and shape share one legend: each condition's coloured mark.
            shape=alt.Shape(
                "condition:N",
                scale=alt.Scale(domain=colors_.to_dict().get("domain", [])),
                legend=_legend(colors_),
            ),
            tooltip=[
                alt.Tooltip("sample:N"),
                alt.Tooltip("value:Q", title=title, format=".4g"),
                alt.Tooltip("transactions:Q"),
                alt.Tooltip("errors:Q"),
            ],
        )
    )
    rules = (
        _kind("block")
        .mark_rule(color="#bbb", strokeDash=[3, 3])
        .encode(x="at:Q", tooltip=[alt.Tooltip("label:N", title="starts")])
    )
    layers: list[Any] = [rules, pts]
    if len(boundaries) <= BLOCK_LABELS * (len(report.runs) or 1):
        layers.insert(
            1,
            _kind("block")
            .mark_text(align="left", baseline="top", dx=3, dy=2, fontSize=10, color="#777")
            .encode(x="at:Q", y=alt.value(0), text="label:N"),
        )
    rows = _tag("point", points) + _tag("block", boundaries)
    chart = alt.layer(*layers, data=_data(rows)).properties(width=WIDTH, height=240)
    if several:
        return chart.facet(row=alt.Row("run:O", title="run"))
    # Zoom and pan along the run: a scale-bound interval selection.
    return chart.add_params(alt.selection_interval(bind="scales", encodings=["x"]))


def heatmap(report: ReportData, *, unit: TimeUnit = MS) -> alt.TopLevelMixin | None:
    """Time buckets x log-latency buckets, colour = transactions, one row per condition."""
    axes = report.axes
    if axes is None:
        return None
    rows = []
    edges = [10**e * unit.per_ms for e in axes.heat_log_edges]
    conds = [c for c in report.conditions if c.latency is not None and c.latency.heat]
    for c in conds:
        assert c.latency is not None
        w = c.latency.heat_bucket_s
        for tb, lb, n in c.latency.heat:
            rows.append(
                {
                    "condition": c.label,
                    "t": _r(tb * w),
                    "t2": _r((tb + 1) * w),
                    "from": _r(edges[lb]),
                    "to": _r(edges[lb + 1]),
                    "count": n,
                }
            )
    if not rows:
        return None
    chart: alt.TopLevelMixin = (
        alt.Chart(_data(rows))
        .mark_rect()
        .encode(
            x=alt.X("t:Q", title="seconds since the run's first transaction"),
            x2="t2:Q",
            y=alt.Y("from:Q", scale=alt.Scale(type="log"), title=f"response time ({unit})"),
            y2="to:Q",
            color=alt.Color(
                "count:Q", scale=alt.Scale(type="log", scheme="viridis"), title="transactions"
            ),
            tooltip=[
                alt.Tooltip("condition:N"),
                alt.Tooltip("t:Q", title="from s", format=".4g"),
                alt.Tooltip("from:Q", title=f"from {unit}", format=".4g"),
                alt.Tooltip("to:Q", title=f"to {unit}", format=".4g"),
                alt.Tooltip("count:Q", title="transactions"),
            ],
        )
        .properties(width=WIDTH, height=110)
        .facet(row=alt.Row("condition:N", sort=_order(conds), header=_header()))
    )
    return chart


def deviation_samples(
    conditions: Sequence[ConditionDocument],
    *,
    colors: alt.Scale | None = None,
    names: Mapping[tuple[str, int], str] | None = None,
) -> alt.TopLevelMixin | None:
    """Each sample's deviation from its condition's median sample, with +/-2.5/5/10% bands.

    ``names``: (condition, sample number) → the sample's name with its block, as the run-order
    chart names it; without an entry a sample is named by its condition and number.
    """
    rows = []
    order = []
    for c in conditions:
        s = c["consistency"]["samples"]
        devs = s.get("deviation_pct") or []
        ids = s.get("sample") or list(range(1, len(devs) + 1))
        order.append(c["condition"])
        for i, d in zip(ids, devs, strict=False):
            if d is not None:
                name = (names or {}).get((c["condition"], int(i)))
                rows.append(
                    {
                        "condition": c["condition"],
                        "sample": name or sample_name(c["condition"], int(i)),
                        "deviation": _r(d),
                    }
                )
    if not rows:
        return None
    bands = [{"lo": -t, "hi": t, "band": f"±{t:g}%"} for t in (10.0, 5.0, 2.5)]
    y = alt.Y("condition:N", sort=order, title=None)
    band = (
        alt.Chart(_data(bands))
        .mark_rect(opacity=0.12, color="#4c78a8")
        .encode(x="lo:Q", x2="hi:Q", tooltip=["band:N"])
    )
    dots = (
        alt.Chart(_data(rows))
        .mark_tick(thickness=2, size=18)
        .encode(
            x=alt.X("deviation:Q", title="deviation of each sample from the median sample (%)"),
            y=y,
            color=_color(colors or condition_colors(order), legend=False),
            tooltip=[
                alt.Tooltip("sample:N"),
                alt.Tooltip("deviation:Q", format="+.2f", title="deviation %"),
            ],
        )
    )
    return alt.layer(band, dots).properties(width=WIDTH, height=30 * len(order) + 20)


def deviation_groups(
    report: ReportData, key: str, *, colors: alt.Scale | None = None
) -> alt.TopLevelMixin | None:
    """Deviation of each session's (or period's) latency quantiles from the condition median.

    Box: p25-p75, whiskers p5-p95, tick the median, all in percent of the condition's median
    transaction; a session whose box sits off zero is slower or faster than the others.
    """
    from wannabet.analysis.consistency import deviation_from_median

    rows = []
    conds = []
    for c in report.conditions:
        lat = c.latency
        if lat is None or lat.n == 0:
            continue
        groups = lat.by_session if key == "session" else lat.by_period
        if len(groups) < 2:
            continue
        median = lat.quantiles.values[2]
        conds.append(c.label)
        for k, q in groups.items():
            dev = deviation_from_median(np.asarray(q.values), median)
            if dev is None:
                continue
            rows.append(
                {
                    "condition": c.label,
                    key: k,
                    "n": q.n,
                    **{
                        f"d{round(100 * p)}": _r(float(v))
                        for p, v in zip(QUANTILES, dev, strict=True)
                    },
                }
            )
    if not rows:
        return None
    label = "session" if key == "session" else "period"
    base = alt.Chart(_data(rows)).encode(
        y=alt.Y(f"{key}:O", title=label),
        tooltip=[alt.Tooltip("condition:N"), alt.Tooltip(f"{key}:O"), alt.Tooltip("n:Q")]
        + [alt.Tooltip(f"d{round(100 * p)}:Q", format="+.1f") for p in QUANTILES],
    )
    whisker = base.mark_rule().encode(
        x=alt.X("d5:Q", title="deviation from the condition's median transaction (%)"), x2="d95:Q"
    )
    box = base.mark_bar(size=10, opacity=0.7).encode(
        x="d25:Q", x2="d75:Q", color=_color(colors or condition_colors(conds), legend=False)
    )
    med = base.mark_tick(color="black", thickness=2, size=12).encode(x="d50:Q")
    per = max(len({r[key] for r in rows if r["condition"] == c}) for c in conds)
    chart: alt.TopLevelMixin = (
        alt.layer(whisker, box, med)
        .properties(width=WIDTH, height=16 * per + 10)
        .facet(row=alt.Row("condition:N", sort=conds, header=_header()))
        .resolve_scale(y="independent")
    )
    return chart


def clt(
    report: ReportData,
    conditions: Sequence[ConditionDocument],
    *,
    colors: alt.Scale | None = None,
    unit: TimeUnit | None = None,
) -> alt.TopLevelMixin | None:
    """Sample means per condition against the normal curve, with the 90% "bet" range shaded.

    The normal curve has the mean and sd of the sample means (recovered exactly from the
    ``mean +/- 2 sd`` range of the analysis); the band is the analysis' 90% prediction
    interval for the next sample mean. ``unit``: the sample means are latencies in ms, drawn in
    this unit; None for throughputs, drawn as they are.
    """
    points, curves, bets = [], [], []
    order = []
    k = unit.per_ms if unit is not None else 1.0
    by_label = {c.label: c for c in report.conditions}
    for c in conditions:
        data = by_label.get(c["condition"])
        rng = c["clt"].get("sd_range_2")
        pred = c["clt"].get("prediction90")
        if data is None or not rng or rng[0] is None or rng[1] is None:
            continue
        measured = [s for s in data.samples if s.value is not None]
        if len(measured) < 2:
            continue
        mean, sd = k * (rng[0] + rng[1]) / 2, k * (rng[1] - rng[0]) / 4
        order.append(c["condition"])
        for s in measured:
            assert s.value is not None
            points.append(
                {
                    "condition": c["condition"],
                    "value": _r(k * s.value),
                    "sample": sample_name(c["condition"], s.number, s.block + 1),
                }
            )
        if sd > 0:
            xs = np.linspace(mean - 4 * sd, mean + 4 * sd, 81)
            for x, f in zip(xs, stats.norm.pdf(xs, mean, sd), strict=True):
                curves.append({"condition": c["condition"], "value": _r(float(x)), "pdf": _r(f)})
        if pred and pred[0] is not None and pred[1] is not None:
            bets.append(
                {
                    "condition": c["condition"],
                    "lo": _r(k * pred[0]),
                    "hi": _r(k * pred[1]),
                    "bet": c["clt"].get("bet") or "",
                }
            )
    if not order:
        return None
    title = "sample mean" + (f" ({unit})" if unit is not None else "")
    x = alt.X("value:Q", title=title, scale=alt.Scale(zero=False))
    layers: list[Any] = []
    if bets:
        layers.append(
            _kind("bet")
            .mark_rect(opacity=0.15, color="#f58518")
            .encode(x=alt.X("lo:Q", title=title), x2="hi:Q", tooltip=["bet:N"])
        )
    if curves:
        layers.append(
            _kind("normal")
            .mark_line(color="#555")
            .encode(x=x, y=alt.Y("pdf:Q", title="normal density"))
        )
    layers.append(
        _kind("mean")
        .mark_tick(thickness=2, size=22)
        .encode(
            x=x,
            color=_color(colors or condition_colors(order), legend=False),
            tooltip=[alt.Tooltip("sample:N"), alt.Tooltip("value:Q", title=title, format=".4g")],
        )
    )
    rows = _tag("bet", bets) + _tag("normal", curves) + _tag("mean", points)
    chart: alt.TopLevelMixin = (
        alt.layer(*layers, data=_data(rows))
        .properties(width=WIDTH, height=FACET_HEIGHT + 20)
        .facet(row=alt.Row("condition:N", sort=order, header=_header()))
        .resolve_scale(x="independent", y="independent")
    )
    return chart


def posterior(pairs: Sequence[Any], rope_pct: float) -> alt.TopLevelMixin | None:
    """Posterior density of each pair's relative change (%) with the HDI and ROPE shaded.

    ``pairs`` are ``BayesPair`` objects of the Bayesian analysis (``draws_pct``, ``hdi_pct``,
    ``name``, ``baseline``); the density is a Gaussian KDE of at most 4000 draws.
    """
    curves, ropes = [], []
    order = []
    for p in pairs:
        draws = np.asarray(p.draws_pct, dtype=np.float64)
        draws = draws[np.isfinite(draws)]
        if draws.size < 2 or float(np.ptp(draws)) == 0.0:
            continue
        if draws.size > 4000:
            draws = draws[np.linspace(0, draws.size - 1, 4000).astype(np.int64)]
        label = f"{p.name} vs {p.baseline}"
        order.append(label)
        lo, hi = float(np.min(draws)), float(np.max(draws))
        pad = 0.1 * (hi - lo)
        # The grid covers the posterior only, so a narrow posterior far from the ROPE is
        # still drawn smoothly; the ROPE is drawn where it meets that range.
        grid = np.linspace(lo - pad, hi + pad, 200)
        f = stats.gaussian_kde(draws)(grid)
        h_lo, h_hi = (float(v) for v in p.hdi_pct)
        for x, y in zip(grid, f, strict=True):
            curves.append(
                {
                    "pair": label,
                    "change": _r(float(x)),
                    "density": _r(float(y)),
                    "in_hdi": bool(h_lo <= x <= h_hi),
                }
            )
        # Where the ROPE misses the plotted range its band has zero width at the nearer
        # edge: invisible, and every facet keeps a row (an empty layer makes Vega warn).
        r_lo = min(max(-rope_pct, lo - pad), hi + pad)
        r_hi = max(min(rope_pct, hi + pad), r_lo)
        ropes.append({"pair": label, "lo": _r(r_lo), "hi": _r(r_hi)})
    if not order:
        return None
    x = alt.X("change:Q", title="relative change of the mean (%)")
    rope = (
        _kind("rope")
        .mark_rect(color="#999", opacity=0.25)
        .encode(x=alt.X("lo:Q", title="relative change of the mean (%)"), x2="hi:Q")
    )
    area = (
        _kind("hdi")
        .mark_area(color="#4c78a8", opacity=0.45)
        .encode(x=x, y=alt.Y("density:Q", title="posterior density"))
    )
    line = (
        _kind("density")
        .mark_line(color="#1f3b5c")
        .encode(x=x, y="density:Q", tooltip=[alt.Tooltip("change:Q", format="+.2f")])
    )
    rows = (
        _tag("rope", ropes)
        + _tag("hdi", [c for c in curves if c["in_hdi"]])
        + _tag("density", curves)
    )
    chart: alt.TopLevelMixin = (
        alt.layer(rope, area, line, data=_data(rows))
        .properties(width=WIDTH, height=FACET_HEIGHT + 20)
        .facet(row=alt.Row("pair:N", sort=order, header=_header(), title=None))
        .resolve_scale(x="independent", y="independent")
    )
    return chart


def response_curve(
    curves: Sequence[Any], *, colors: alt.Scale | None = None
) -> alt.TopLevelMixin | None:
    """Response time per unit of work against load, one line per condition (M/M/m model).

    A dot marks where each condition actually ran, so the distance to the elbow shows. The
    response times are drawn in the unit that suits them (µs, ms or s), chosen from where the
    conditions ran.
    """
    rows, points = [], []
    for c in curves:
        for x, y in zip(c.load, c.response_ms, strict=True):
            if math.isfinite(float(x)) and math.isfinite(float(y)):
                rows.append({"condition": c.condition, "load": float(x), "ms": float(y)})
        x0, y0 = getattr(c, "operating_load", None), getattr(c, "operating_response_ms", None)
        if x0 is not None and y0 is not None and math.isfinite(x0) and math.isfinite(y0):
            points.append({"condition": c.condition, "load": float(x0), "ms": float(y0)})
    if not rows:
        return None
    unit = time_unit([p["ms"] for p in points] or [r["ms"] for r in rows])
    for r in rows + points:
        r["load"], r["t"] = _r(r["load"]), _r(r.pop("ms") * unit.per_ms)
    tooltip = [
        alt.Tooltip("condition:N"),
        alt.Tooltip("load:Q", format=".4g"),
        alt.Tooltip("t:Q", title=f"response {unit}", format=".4g"),
    ]
    x = alt.X("load:Q", title=curves[0].load_label)
    y = alt.Y("t:Q", title=f"response time per unit ({unit})")
    if colors is None:
        colors = condition_colors([c.condition for c in curves])
    color = _color(colors)
    chart: Any = alt.Chart(_data(rows)).mark_line().encode(x=x, y=y, color=color, tooltip=tooltip)
    if points:
        chart = chart + alt.Chart(_data(points)).mark_point(filled=True, size=80).encode(
            x=x, y=y, color=color, tooltip=tooltip
        )
    made: alt.TopLevelMixin = chart.properties(width=WIDTH, height=240)
    return made
