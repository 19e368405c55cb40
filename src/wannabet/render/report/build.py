"""Turn the gathered report (:class:`wannabet.reports.ReportInput`) into charts and one page.

Nothing here reads the results file or runs an analysis: :func:`wannabet.reports.gather_report`
has done both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from wannabet.analysis.agreement import disagreement
from wannabet.documents import ComparisonDocument, PairDocument
from wannabet.render.format import (
    MISSING,
    MS,
    TimeUnit,
    finite_num,
    interval,
    one_line,
    p_value,
    pairs_caption,
    pct,
    sample_name,
    share,
    speed_factor,
    time_unit,
    verdict_cells,
)
from wannabet.render.markdown import (
    comparison_markdown,
    degraded_warnings,
    open_loop_warnings,
)
from wannabet.render.profiles import FRAME_KEYS, flame_graphs, frame_cells
from wannabet.render.report import charts
from wannabet.render.report.inputs import ConditionData, ReportData, ReportInput
from wannabet.render.report.page import Chart, render_page
from wannabet.render.summary import generator_cells, relation_sections
from wannabet.store import SCHEDULE_KEY

if TYPE_CHECKING:
    import altair as alt

    from wannabet.analysis.bayes import BayesPair


@dataclass(frozen=True, slots=True)
class Report:
    """A built report: the page, its verdict table in Markdown, and what it is built from.

    ``charts`` holds every chart of the page in page order, each a
    :class:`~wannabet.render.report.page.Chart` with its ``key``, its Vega-Lite ``spec`` and
    its Altair chart (``altair``); :meth:`chart` finds one by key.
    """

    html: str
    markdown: str
    doc: ComparisonDocument | None
    charts: tuple[Chart, ...] = field(default=())
    #: Why there is no verdict (the analysis' one-line error), None when there is one.
    problem: str | None = None

    @property
    def chart_keys(self) -> tuple[str, ...]:
        """The keys of the charts drawn (``"histogram-log"``, ``"run-order"``, …)."""
        return tuple(c.key for c in self.charts)

    def chart(self, key: str) -> Chart:
        """The chart whose key is ``key``; ``chart(key).altair`` is its Altair chart.

        Raises
        ------
        KeyError
            When the report has no such chart (not drawn for lack of data), naming those it has.
        """
        for c in self.charts:
            if c.key == key:
                return c
        raise KeyError(f"no chart {key!r} in this report; it has: {', '.join(self.chart_keys)}")


def render_report(inputs: ReportInput) -> Report:
    """Turn what :func:`wannabet.reports.gather_report` gathered into the report.

    Returns
    -------
    Report
        ``html`` opens offline: the plotting runtime is inlined once and every chart is data
        embedded in the page. Without plot data (``inputs.data`` is None) only the Markdown
        verdict table is made.
    """
    doc, problem, metric, bayes = inputs.doc, inputs.problem, inputs.metric, inputs.bayes
    data, unit_of_work = inputs.data, inputs.unit_of_work
    if data is None:
        markdown = comparison_markdown(doc) if doc is not None else f"No comparison: {problem}\n"
        return Report(html="", markdown=markdown, doc=doc, problem=problem)
    unit = "ms" if metric == "latency" else "tps"
    context = _context(inputs, data, unit)
    built: list[Chart] = []

    def chart(key: str, title: str, made: alt.TopLevelMixin | None, note: str = "") -> Chart | None:
        if made is None:
            return None
        c = Chart(f"chart-{len(built)}", key, title, charts.spec(made), made, note)
        built.append(c)
        return c

    conditions = doc["conditions"] if doc else []
    curves = unit_of_work.curves if unit_of_work else ()
    # One colour per condition in every chart: the conditions as declared, then any label
    # only a unit-of-work curve carries.
    colors = charts.condition_colors(
        [c.label for c in data.conditions] + [c.condition for c in curves]
    )
    lat = _chart_unit(data, metric)
    names = {
        (c.label, s.number): sample_name(c.label, s.number, s.block + 1)
        for c in data.conditions
        for s in c.samples
    }
    context["charts"] = {
        "histogram_log": chart(
            "histogram-log",
            "Response times (log x)",
            charts.histogram(data, log_x=True, colors=colors, unit=lat),
            _kde_note(data),
        ),
        "histogram_linear": chart(
            "histogram-linear",
            "Response times (linear x)",
            charts.histogram(data, log_x=False, colors=colors, unit=lat),
        ),
        "boxes": chart("boxes", "Side by side", charts.boxes(data, colors=colors, unit=lat)),
        "run_order": chart(
            "run-order",
            "Run order",
            charts.run_order(data, metric, unit, colors=colors, latency_unit=lat),
        ),
        "heatmap": chart("heatmap", "Latency heatmap", charts.heatmap(data, unit=lat)),
        "deviation_samples": chart(
            "deviation-samples",
            "Per sample",
            charts.deviation_samples(conditions, colors=colors, names=names),
        ),
        "deviation_session": chart(
            "deviation-session",
            "Per session",
            charts.deviation_groups(data, "session", colors=colors),
        ),
        "deviation_period": chart(
            "deviation-period", "Per period", charts.deviation_groups(data, "period", colors=colors)
        ),
        "clt": chart(
            "clt",
            "Sample means",
            charts.clt(data, conditions, colors=colors, unit=lat if metric == "latency" else None),
        ),
        "posterior": chart(
            "posterior",
            "Posterior of the relative change",
            charts.posterior(
                getattr(bayes, "pairs", ()) or (),
                float(getattr(bayes, "rope_pct", inputs.options.rope_pct)),
            )
            if bayes is not None
            else None,
        ),
        "response_curve": chart(
            "response-curve",
            "Response time per unit",
            charts.response_curve(curves, colors=colors) if curves else None,
        ),
    }
    page = render_page(context, built)
    markdown = comparison_markdown(doc) if doc is not None else f"No comparison: {problem}\n"
    return Report(html=page, markdown=markdown, doc=doc, charts=tuple(built), problem=problem)


def _chart_unit(data: ReportData, metric: str) -> TimeUnit:
    """The unit of every chart's latencies: the one that suits the conditions' median
    transactions (or, without them, their sample means)."""
    medians = [c.latency.quantiles.values[2] for c in data.conditions if c.latency is not None]
    if medians:
        return time_unit(medians)
    if metric == "latency":
        return time_unit([s.value for c in data.conditions for s in c.samples])
    return MS


def _tx_quantile(cd: ConditionData | None, i: int) -> float | None:
    if cd is None or cd.latency is None or cd.latency.n == 0:
        return None
    return float(cd.latency.quantiles.values[i])


def condition_notes(data: ReportData) -> list[str]:
    """Warnings about conditions with nothing to plot: all failed, or nothing measured."""
    notes = []
    for cd in data.conditions:
        if cd.transactions and cd.errors == cd.transactions:
            kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(cd.errors_by_status.items()))
            notes.append(
                f"{cd.label}: no successful transaction; all {cd.transactions:,} failed"
                + (f" ({kinds})" if kinds else "")
                + ". It has no response times to plot."
            )
        elif data.per_transaction and cd.samples and not cd.transactions:
            # Warm-up transactions are not counted (unless included), so a condition whose
            # every transaction was warm-up has none, and no latencies either.
            notes.append(
                f"{cd.label}: no measured transactions (all warm-up or empty samples);"
                " lengthen the samples or shorten the warm-up."
            )
    return notes


def _kde_note(data: ReportData) -> str:
    """The bandwidth of each smoothed density, so a reader can judge a second bump."""
    parts = [
        f"{one_line(c.label)} {c.latency.kde_bandwidth:.3g}"
        for c in data.conditions
        if c.latency is not None and c.latency.kde_bandwidth is not None
    ]
    if not parts:
        return ""
    return (
        "Curve: Gaussian kernel on log10(ms), bandwidth by Scott's rule (kernel sd in decades): "
        + "; ".join(parts)
        + ". A bump narrower than about twice the bandwidth is smoothed away; the"
        " analysis' bimodality check works on the data, not on this curve."
    )


def verdict_sentence(c: PairDocument, metric: str, alpha: float, rope_pct: float) -> str:
    """One sentence per comparison: who is faster, by how much, how sure, and the bet."""
    name, base = c["condition"], c["baseline"]
    d, ci = c.get("delta_pct"), c.get("ci_pct") or [None, None]
    level = f"{100 * (1 - alpha):g}%"
    what = "mean response time" if metric == "latency" else "mean throughput"
    if c.get("disagreement"):
        # The classical and the Bayesian analyses disagree: no bet either way.
        return str(c["disagreement"])
    if c.get("fixed_verdict") is not None:
        # A run that stopped when decided: the sequence's verdict and interval, in its note.
        if c["verdict"] in ("faster", "slower") and d is not None:
            how = _how_much(name, base, c["verdict"], d, metric)
            return f"{how} ({c['note']}); you can bet on it."
        if c["verdict"] == "no-difference":
            return (
                f"{name} and {base} perform the same within ±{rope_pct:g}% ({c['note']});"
                " bet on no difference."
            )
        return f"No bet yet on {name} against {base}: {c['note']}."
    if d is None or ci[0] is None or ci[1] is None:
        return f"{name} against {base}: no estimate of the change ({c.get('note', '')})."
    change = f"{what} {d:+.1f}%, {level} CI {ci[0]:+.1f}% to {ci[1]:+.1f}%"
    if c["verdict"] in ("faster", "slower"):
        return f"{_how_much(name, base, c['verdict'], d, metric)} ({change}); you can bet on it."
    if c["verdict"] == "no-difference":
        return (
            f"{name} and {base} perform the same within ±{rope_pct:g}% ({change});"
            " bet on no difference."
        )
    return f"No bet yet on {name} against {base} ({change}): {c.get('note', '')}."


def _how_much(name: str, base: str, verdict: str, delta_pct: float, metric: str) -> str:
    """How much faster, as a DBA reads it: a latency change as a factor of speed ("5.7×
    faster" for −82.6%: "83% faster" would read as 83% more throughput), a throughput change
    as the change of throughput."""
    if metric == "latency":
        return f"{name} is {speed_factor(delta_pct)} {verdict} than {base}"
    return f"{name} is {verdict} than {base}: throughput {delta_pct:+.0f}%"


def shown_target(target: str | None, results: Path) -> str:
    """The run's target as the page shows it: a SQLite file in the results file's directory
    (where ``run`` creates one by default) relative to it, so a mailed page carries no
    machine path; anything else as stored."""
    if not target:
        return MISSING
    prefix = "sqlite:///"
    if target.lower().startswith(prefix):
        path = Path(target[len(prefix) :])
        base = results.resolve().parent
        if path.is_absolute() and path.parent == base:
            return f"{prefix}{path.name} (next to the results file)"
    return target


def _design(inputs: ReportInput) -> list[dict[str, Any]]:
    out = []
    for r in inputs.runs:
        conds = inputs.conditions[r.run_id]
        factors: dict[str, list[str]] = {}
        for c in conds:
            for k, v in c.levels.items():
                factors.setdefault(str(k), [])
                if str(v) not in factors[str(k)]:
                    factors[str(k)].append(str(v))
        # The schedule is shown as blocks, not as a setting.
        settings = {k: v for k, v in (r.settings or {}).items() if k != SCHEDULE_KEY}
        by_id = {c.condition_id: c.label for c in conds}
        blocks: dict[int, list[str]] = {}
        for block, condition_id in r.schedule:
            blocks.setdefault(block, []).append(by_id.get(condition_id, str(condition_id)))
        out.append(
            {
                "run": r,
                "target": shown_target(r.target, inputs.results),
                "factors": [(k, ", ".join(v)) for k, v in factors.items()],
                "conditions": [(c.label, "; ".join(c.session_sql + c.system_sql)) for c in conds],
                "blocks": sorted(blocks.items()),
                "settings": [(k, _setting(v)) for k, v in settings.items()],
                "environment": sorted(inputs.environments[r.run_id].items()),
            }
        )
    return out


def _with_disagreement(
    c: PairDocument, pair: BayesPair | None, alpha: float, rope: float
) -> PairDocument:
    """The comparison with its ``disagreement`` sentence when the report's own Bayesian
    analysis (not in the document) decides otherwise than the classical verdict."""
    if pair is None or "disagreement" in c:
        return c
    entry = cast("PairDocument", {**c, "bayes": pair.to_dict()})
    entry["disagreement"] = disagreement(entry, alpha, rope)
    return entry


def _profiles(inputs: ReportInput) -> dict[str, Any] | None:
    """The flame graphs and the frames that changed, for the page (None: no profiles)."""
    profiles = inputs.profiles
    if profiles is None:
        return None
    plain, diffs = flame_graphs(profiles)
    tables = []
    for d in profiles.differences:
        c = d.comparison
        tables.append(
            {
                "title": f"{d.label} against {d.baseline}",
                "baseline": d.baseline,
                "label": d.label,
                "summary": (
                    f"{len(c.grew)} frame(s) grew and {len(c.shrank)} shrank of {c.n_tested}"
                    f" tested ({c.n_left_out} under {100 * c.min_share:g}% of the CPU left out),"
                    f" over {c.n_baseline} and {c.n_other} samples"
                    + (f". {c.note}" if c.note else "")
                ),
                "rows": [dict(zip(FRAME_KEYS, frame_cells(ch), strict=True)) for ch in c.changes],
            }
        )
    return {"flames": plain, "diffs": diffs, "tables": tables}


def _setting(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return MISSING if v is None else str(v)


def _context(inputs: ReportInput, data: ReportData, unit: str) -> dict[str, Any]:
    runs, doc, opts = inputs.runs, inputs.doc, inputs.options
    metric, bayes, unit_of_work = inputs.metric, inputs.bayes, inputs.unit_of_work
    alpha = float(doc["alpha"]) if doc else opts.alpha
    rope = float(doc["rope_pct"]) if doc else opts.rope_pct
    pairs = {p.name: p for p in bayes.pairs} if bayes else {}
    comparisons = [
        _with_disagreement(c, pairs.get(c["condition"]), alpha, rope)
        for c in (doc["comparisons"] if doc else [])
    ]
    conditions = doc["conditions"] if doc else []
    sentences = [verdict_sentence(c, metric, alpha, rope) for c in comparisons]
    if doc:
        sentences += [f"Warning: {w}." for w in open_loop_warnings(doc)]
        sentences += [f"Warning: {w}." for w in degraded_warnings(doc.get("degraded", []))]
    sequential = doc.get("sequential") if doc else None
    if sequential:
        # How the run stopped comes first: it says how to read every figure after it.
        sentences.insert(0, sequential["note"])
    env_diff = [
        (k, [(name, MISSING if v is None else str(v)) for name, v in vals.items()])
        for k, vals in inputs.environment_differences.items()
    ]
    verdict_rows = []
    bayes_rows = []
    for c in comparisons:
        cells = verdict_cells(c)
        verdict_rows.append(
            {
                "condition": c["condition"],
                "baseline": c["baseline"],
                "delta": cells.delta,
                "ci": cells.ci,
                "median_delta": cells.median_delta,
                "test": cells.test,
                "p": cells.p,
                "cliff": cells.cliff,
                "verdict": c["verdict"],
                "note": c.get("disagreement") or c["note"],
                "split": bool(c.get("disagreement")),
            }
        )
        p = pairs.get(c["condition"])
        if p is not None:
            bayes_rows.append(
                {
                    "condition": c["condition"],
                    "baseline": c["baseline"],
                    "mean": pct(p.mean_pct),
                    "hdi": interval(list(p.hdi_pct), "%"),
                    "p_faster": share(float(p.p_faster)),
                    "rope": str(p.rope_decision),
                    "rhat": finite_num(p.rhat_max),
                    "ess": finite_num(p.ess_min),
                    "split": bool(c.get("disagreement")),
                }
            )
    # Other pairs (--pairs) keep the baseline column and say in the caption which pairs they
    # are. One baseline for every comparison (the usual case): the tables' captions name it and
    # the rows need no column for it.
    caption = pairs_caption(str(doc.get("pairs", "baseline"))) if doc else None
    baselines = {r["baseline"] for r in verdict_rows}
    shared_baseline = next(iter(baselines)) if len(baselines) == 1 and caption is None else None
    by_label = {c.label: c for c in data.conditions}
    # One unit for the whole table (µs, ms or s, from the medians), so its columns compare.
    tu = time_unit(c["median"] for c in conditions) if metric == "latency" else MS
    cond_rows = []
    for cond in conditions:
        cd = by_label.get(cond["condition"])
        cond_rows.append(
            {
                "condition": cond["condition"],
                "n": cond["n"],
                "mean": tu.num(cond["mean"]),
                "sd": tu.num(cond["sd"]),
                "median": tu.num(cond["median"]),
                "p95": tu.num(cond["p95"]),
                "p99": tu.num(cond["p99"]),
                "cv": share(cond["cv"]),
                "ci": tu.interval(cond["clt"]["mean_ci95"]),
                "transactions": MISSING if cd is None else f"{cd.transactions:,}",
                # Percentiles of the transactions themselves, beside those of the sample means.
                "tx_p50": tu.num(_tx_quantile(cd, 2)) if metric == "latency" else MISSING,
                "tx_p95": tu.num(_tx_quantile(cd, 4)) if metric == "latency" else MISSING,
                "errors": MISSING if cd is None else f"{cd.errors:,}",
                "bet": cond["clt"].get("bet") or "",
            }
        )
    if metric == "latency":
        unit = tu.name
    notes = condition_notes(data)
    diagnostics = [{"condition": c["condition"], **d} for c in conditions for d in c["diagnostics"]]
    effects = []
    for e in bayes.effects if bayes else ():
        effects.append(
            {"term": e.term, "mean": pct(e.mean_pct), "hdi": interval(list(e.hdi_pct), "%")}
        )
    question = runs[0].description or runs[0].name
    level = doc["level"] if doc else opts.level
    n_samples = sorted({int(c["n"]) for c in conditions})
    if level == "sample":
        what = "sample means" if metric == "latency" else "per-sample throughputs"
        n_text = " or ".join(str(n) for n in n_samples) or MISSING
        cond_caption = (
            f"Sample level: n, mean, sd, median, p95, p99, CV and the CI are statistics of"
            f" the {n_text} {what} of each condition, not of single transactions."
        )
        if metric == "latency":
            cond_caption += (
                " The columns “transaction p50/p95” are percentiles of the measured"
                " transactions themselves."
            )
    else:
        cond_caption = "Transaction level: n counts transactions; the statistics are theirs."
    uow_rows = []
    uow_unit = MS
    if unit_of_work is not None:
        uow_unit = time_unit(r.response_ms_per_unit for r in unit_of_work.rows)
        for row in unit_of_work.rows:
            uow_rows.append(
                {
                    "condition": row.condition,
                    "units": finite_num(row.units_per_s),
                    "cpu": uow_unit.num(row.cpu_ms_per_unit),
                    "wait": uow_unit.num(row.wait_ms_per_unit),
                    "response": uow_unit.num(row.response_ms_per_unit),
                    "waits": ", ".join(
                        f"{w} {uow_unit.num(ms)} {uow_unit}" for w, ms in row.top_waits[:3]
                    )
                    or MISSING,
                }
            )
    tail_unit = time_unit(x.get("stat_value") for d in inputs.per_type for x in d["conditions"])
    tail_rows = [
        {
            "txn": d.get("txn") or "all",
            "stat": d.get("stat") or "mean",
            "condition": c["condition"],
            "baseline": c["baseline"],
            "values": " → ".join(
                tail_unit.num(
                    next(
                        (x.get("stat_value") for x in d["conditions"] if x["condition"] == name),
                        None,
                    )
                )
                for name in (c["baseline"], c["condition"])
            ),
            "delta": pct(c["delta_pct"]),
            "ci": interval(c["ci_pct"], "%"),
            "p": p_value(c["p_adjusted"]),
            "verdict": c["verdict"],
        }
        for d in inputs.per_type
        for c in d["comparisons"]
    ]
    return {
        "tail_rows": tail_rows,
        "tail_unit": tail_unit.name,
        "title": " vs ".join(dict.fromkeys(r.name for r in runs)),
        "question": question,
        "runs": runs,
        "metric": metric,
        "unit": unit,
        "level": level,
        "cond_caption": cond_caption,
        "timed": data.timed,
        "alpha": alpha,
        "rope": rope,
        "ci_level": f"{100 * (1 - alpha):g}%",
        "baseline": conditions[0]["condition"] if doc else None,
        "sentences": sentences,
        "problem": inputs.problem,
        "env_diff": env_diff,
        "design": _design(inputs),
        "verdict_rows": verdict_rows,
        "bayes_rows": bayes_rows,
        "shared_baseline": shared_baseline,
        "pairs_caption": caption,
        "has_bayes": bool(pairs),
        "bayes": bayes,
        "effects": effects,
        "omnibus": doc["omnibus"] if doc else None,
        "cond_rows": cond_rows,
        "notes": notes,
        "diagnostics": diagnostics,
        "per_transaction": data.per_transaction,
        "histograms": data.histograms,
        "unit_of_work": unit_of_work,
        "uow_rows": uow_rows,
        "uow_unit": uow_unit.name,
        "relation_tables": [
            {"title": title, "header": header, "rows": rows}
            for title, header, rows in relation_sections(inputs.relations)
        ],
        "profiles": _profiles(inputs),
        "generators": [
            dict(
                zip(
                    (
                        "condition",
                        "generator",
                        "host",
                        "samples",
                        "lost",
                        "committed",
                        "tps",
                        "p50",
                        "p99",
                        "offset",
                        "uncertainty",
                        "lag",
                        "skew",
                    ),
                    generator_cells(g),
                    strict=True,
                )
            )
            for g in inputs.generators
        ],
    }
