"""Assemble the report: the comparison document, the reduced data, the charts, the page."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from wannabet.analysis.bayes import BayesOptions
from wannabet.errors import AnalysisError
from wannabet.render.format import finite_num, fmt_num, interval, one_line, p_value, pct
from wannabet.render.markdown import comparison_markdown
from wannabet.render.report import charts
from wannabet.render.report.data import (
    ConditionData,
    ReportData,
    aggregate_only,
    load_report_data,
)
from wannabet.render.report.page import Chart, render_page
from wannabet.store import ConditionRow, RunInfo, Store

MetricChoice = Literal["auto", "latency", "throughput"]


@dataclass(frozen=True, slots=True)
class ReportOptions:
    """How the comparison behind the report is made (the options of ``wannabet compare``).

    ``metric="auto"`` compares latency when the runs hold per-transaction latencies and
    throughput when they hold only aggregates (Swingbench, sysbench, aggregated pgbench logs).
    """

    baseline: str | None = None
    metric: MetricChoice = "auto"
    level: Literal["sample", "transaction"] = "sample"
    alpha: float = 0.05
    rope_pct: float = 2.0
    seed: int = 0
    include_warmup: bool = False
    bayes: BayesOptions | None = None  # adds the Bayesian section (needs the bayes extra)


@dataclass(frozen=True, slots=True)
class UnitOfWorkRow:
    """One condition of the unit-of-work table (see the database statistics analysis)."""

    condition: str
    units_per_s: float | None
    cpu_ms_per_unit: float | None
    wait_ms_per_unit: float | None
    response_ms_per_unit: float | None
    top_waits: tuple[tuple[str, float], ...] = ()  # (wait event, ms per unit), largest first


@dataclass(frozen=True, slots=True)
class ResponseCurve:
    """Modelled response time per unit against load for one condition (e.g. M/M/m)."""

    condition: str
    load: Sequence[float]
    response_ms: Sequence[float]
    load_label: str = "units of work per second"
    operating_load: float | None = None  # where the condition ran, marked on its curve
    operating_response_ms: float | None = None


@dataclass(frozen=True, slots=True)
class UnitOfWork:
    """Input of the unit-of-work section: plain per-condition rows plus curve arrays."""

    rows: tuple[UnitOfWorkRow, ...]
    curves: tuple[ResponseCurve, ...] = ()
    unit: str = "unit of work"
    notes: tuple[str, ...] = ()  # caveats: invalid samples, commit-count mismatches, unknowns


def unit_of_work_input(
    results: Sequence[Any], labels: Sequence[str] | None = None
) -> UnitOfWork | None:
    """The section's input from the analysis' per-condition results (``unit_of_work_for_run``).

    ``labels`` renames the conditions (several runs in one report); None when no condition has
    database statistics, so the section says so instead of drawing an empty table.
    """
    rows, curves, notes = [], [], []
    unit = "unit of work"
    for i, u in enumerate(results):
        d = u.to_dict()
        name = labels[i] if labels is not None else u.condition
        figures = ("units_per_s", "cpu_ms_per_unit", "wait_ms_per_unit", "response_ms_per_unit")
        if all(d[k] is None for k in figures):
            continue
        unit = u.unit
        rows.append(
            UnitOfWorkRow(
                name,
                d["units_per_s"],
                d["cpu_ms_per_unit"],
                d["wait_ms_per_unit"],
                d["response_ms_per_unit"],
                top_waits=tuple((f"{w.type}:{w.event}", w.ms_per_unit) for w in u.top_waits),
            )
        )
        if u.curve is not None:
            curves.append(
                ResponseCurve(
                    name,
                    u.curve.units_per_s,
                    u.curve.response_ms,
                    load_label=f"{u.unit}s per second",
                    operating_load=u.curve.operating_units_per_s,
                    operating_response_ms=u.curve.operating_response_ms,
                )
            )
        check = u.server_check
        if check is not None and check.ok is False:
            notes.append(
                f"{name}: the server counted {check.server_commits:,} commits, the engine"
                f" {check.engine_commits:,} ({100 * (check.mismatch or 0):.1f}% apart): something"
                " else ran on the server, or statistics were lost; treat the figures with care"
            )
        notes.extend(f"{name}: {n}" for n in u.notes)
    if not rows:
        return None
    return UnitOfWork(tuple(rows), tuple(curves), unit, tuple(notes))


@dataclass(frozen=True, slots=True)
class Report:
    """A built report: the page, its verdict table in Markdown, and what it is built from."""

    html: str
    markdown: str
    doc: Mapping[str, Any] | None
    charts: tuple[str, ...] = field(default=())
    #: Why there is no verdict (the analysis' one-line error), None when there is one.
    problem: str | None = None


def build_report(
    store: Store,
    run_ids: Sequence[int] = (),
    options: ReportOptions | None = None,
    *,
    bayes: Any | None = None,
    unit_of_work: UnitOfWork | None = None,
    html: bool = True,
) -> Report:
    """Build the self-contained HTML report of one or more stored runs.

    Parameters
    ----------
    store : Store
        The results file.
    run_ids : sequence of int
        The runs; empty means the latest. Several runs are compared together, as by
        ``wannabet compare --run A --run B``.
    options : ReportOptions, optional
        Baseline, metric, level, alpha, ROPE, seed, warm-up.
    bayes : BayesAnalysis, optional
        A Bayesian analysis of the same comparison made elsewhere; by default the one made
        with ``options.bayes`` (``Comparison.bayes``), if any.
    unit_of_work : UnitOfWork, optional
        Per-condition unit-of-work results, when database statistics were collected.
    html : bool
        False: only the comparison and its Markdown verdict table (no plots, no page).

    Returns
    -------
    Report
        ``html`` opens offline: the plotting runtime is inlined once and every chart is data
        embedded in the page.
    """
    from wannabet.verdicts import analyze_runs

    opts = options or ReportOptions()
    runs = [store.run(r) for r in dict.fromkeys(run_ids)] or [store.run()]
    metric: Literal["latency", "throughput"]
    if opts.metric == "auto":
        metric = "throughput" if all(aggregate_only(r) for r in runs) else "latency"
    else:
        metric = opts.metric
    doc: dict[str, Any] | None
    problem = None
    try:
        comparison, _ = analyze_runs(
            store,
            [r.run_id for r in runs],
            baseline=opts.baseline,
            metric=metric,
            level=opts.level,
            alpha=opts.alpha,
            rope_pct=opts.rope_pct,
            seed=opts.seed,
            include_warmup=opts.include_warmup,
            bayes=opts.bayes,
        )
    except AnalysisError as exc:
        # A run whose conditions cannot be compared (every condition without a single
        # successful transaction, say) still deserves its page: everything but the verdict.
        doc, problem = None, str(exc)
    else:
        doc = comparison.to_dict()
        described = [
            {k: v for k, v in r.to_dict().items() if k not in ("settings", "environment")}
            for r in runs
        ]
        doc["run"] = described if len(runs) > 1 else described[0]
        if doc["excluded"] and not doc["comparisons"]:
            left = ", ".join(f"{e['condition']} ({e['reason']})" for e in doc["excluded"])
            problem = f"nothing left to compare once {left} is left out"
        if bayes is None:
            bayes = getattr(comparison, "bayes", None)
    if not html:
        markdown = comparison_markdown(doc) if doc is not None else f"No comparison: {problem}\n"
        return Report(html="", markdown=markdown, doc=doc, problem=problem)
    several = len(runs) > 1
    labels = [
        [f"{r.run_id}:{c.label}" if several else c.label for c in store.conditions(r.run_id)]
        for r in runs
    ]
    if unit_of_work is None:
        unit_of_work = _stored_unit_of_work(store, runs, several)
    period = (doc or {}).get("conditions", [{}])[0].get("consistency", {}).get("period")
    data = load_report_data(
        store,
        runs,
        labels=labels,
        metric=metric,
        include_warmup=opts.include_warmup,
        period_seconds=86400.0 if period == "day" else 3600.0,
        seed=opts.seed,
    )
    unit = "ms" if metric == "latency" else "tps"
    context = _context(
        runs,
        data,
        doc,
        problem,
        metric,
        unit,
        opts,
        bayes,
        unit_of_work,
        {r.run_id: store.conditions(r.run_id) for r in runs},
        store.path,
    )
    built: list[Chart] = []

    def chart(key: str, title: str, spec: dict[str, Any] | None, note: str = "") -> Chart | None:
        if spec is None:
            return None
        c = Chart(f"chart-{len(built)}", key, title, spec, note)
        built.append(c)
        return c

    context["charts"] = {
        "histogram_log": chart(
            "histogram-log",
            "Response times (log x)",
            charts.histogram(data, log_x=True),
            _kde_note(data),
        ),
        "histogram_linear": chart(
            "histogram-linear", "Response times (linear x)", charts.histogram(data, log_x=False)
        ),
        "boxes": chart("boxes", "Side by side", charts.boxes(data)),
        "run_order": chart("run-order", "Run order", charts.run_order(data, metric, unit)),
        "heatmap": chart("heatmap", "Latency heatmap", charts.heatmap(data)),
        "deviation_samples": chart(
            "deviation-samples", "Per sample", charts.deviation_samples(doc or {})
        ),
        "deviation_session": chart(
            "deviation-session", "Per session", charts.deviation_groups(data, "session")
        ),
        "deviation_period": chart(
            "deviation-period", "Per period", charts.deviation_groups(data, "period")
        ),
        "clt": chart("clt", "Sample means", charts.clt(data, doc or {})),
        "posterior": chart(
            "posterior",
            "Posterior of the relative change",
            charts.posterior(
                getattr(bayes, "pairs", ()) or (), float(getattr(bayes, "rope_pct", opts.rope_pct))
            )
            if bayes is not None
            else None,
        ),
        "response_curve": chart(
            "response-curve",
            "Response time per unit",
            charts.response_curve(unit_of_work.curves) if unit_of_work else None,
        ),
    }
    page = render_page(context, built)
    markdown = comparison_markdown(doc) if doc is not None else f"No comparison: {problem}\n"
    return Report(
        html=page,
        markdown=markdown,
        doc=doc,
        charts=tuple(c.key for c in built),
        problem=problem,
    )


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


def _stored_unit_of_work(store: Store, runs: Sequence[RunInfo], several: bool) -> UnitOfWork | None:
    """The unit-of-work results of the runs' stored database statistics, if any were taken."""
    from wannabet.analysis.unit_of_work import unit_of_work_for_run

    results: list[Any] = []
    names: list[str] = []
    for r in runs:
        for u in unit_of_work_for_run(store, r.run_id):
            results.append(u)
            names.append(f"{r.run_id}:{u.condition}" if several else u.condition)
    return unit_of_work_input(results, names)


def verdict_sentence(c: Mapping[str, Any], metric: str, alpha: float, rope_pct: float) -> str:
    """One sentence per comparison: who is faster, by how much, how sure, and the bet."""
    name, base = c["condition"], c["baseline"]
    d, ci = c.get("delta_pct"), c.get("ci_pct") or [None, None]
    level = f"{100 * (1 - alpha):g}%"
    what = "mean response time" if metric == "latency" else "mean throughput"
    if d is None or ci[0] is None or ci[1] is None:
        return f"{name} against {base}: no estimate of the change ({c.get('note', '')})."
    change = f"{what} {d:+.1f}%, {level} CI {ci[0]:+.1f}% to {ci[1]:+.1f}%"
    if c["verdict"] in ("faster", "slower"):
        return f"{name} is {abs(d):.0f}% {c['verdict']} than {base} ({change}); you can bet on it."
    if c["verdict"] == "no-difference":
        return (
            f"{name} and {base} perform the same within ±{rope_pct:g}% ({change});"
            " bet on no difference."
        )
    return f"No bet yet on {name} against {base} ({change}): {c.get('note', '')}."


def shown_target(target: str | None, results: Path) -> str:
    """The run's target as the page shows it: a SQLite file in the results file's directory
    (where ``run`` creates one by default) relative to it, so a mailed page carries no
    machine path; anything else as stored."""
    if not target:
        return "–"
    prefix = "sqlite:///"
    if target.lower().startswith(prefix):
        path = Path(target[len(prefix) :])
        base = results.resolve().parent
        if path.is_absolute() and path.parent == base:
            return f"{prefix}{path.name} (next to the results file)"
    return target


def _design(
    runs: Sequence[RunInfo],
    store_conditions: Mapping[int, Sequence[ConditionRow]],
    results: Path,
) -> list[dict[str, Any]]:
    from wannabet.verdicts import flatten_environment

    out = []
    for r in runs:
        conds = store_conditions[r.run_id]
        factors: dict[str, list[str]] = {}
        for c in conds:
            for k, v in c.levels.items():
                factors.setdefault(str(k), [])
                if str(v) not in factors[str(k)]:
                    factors[str(k)].append(str(v))
        settings = dict(r.settings or {})
        schedule = settings.pop("schedule", None)
        by_id = {c.condition_id: c.label for c in conds}
        blocks: dict[int, list[str]] = {}
        for entry in schedule or []:
            if isinstance(entry, list | tuple) and len(entry) == 2:
                blocks.setdefault(int(entry[0]), []).append(by_id.get(int(entry[1]), str(entry[1])))
        out.append(
            {
                "run": r,
                "target": shown_target(r.target, results),
                "factors": [(k, ", ".join(v)) for k, v in factors.items()],
                "conditions": [(c.label, "; ".join(c.session_sql + c.system_sql)) for c in conds],
                "blocks": sorted(blocks.items()),
                "settings": [(k, _setting(v)) for k, v in settings.items()],
                "environment": sorted(flatten_environment(r.environment or {}).items()),
            }
        )
    return out


def _setting(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return "–" if v is None else str(v)


def _context(
    runs: Sequence[RunInfo],
    data: ReportData,
    doc: Mapping[str, Any] | None,
    problem: str | None,
    metric: str,
    unit: str,
    opts: ReportOptions,
    bayes: Any | None,
    unit_of_work: UnitOfWork | None,
    store_conditions: Mapping[int, Sequence[ConditionRow]],
    results: Path,
) -> dict[str, Any]:
    from wannabet.analysis.diagnostics import environment_differences
    from wannabet.verdicts import flatten_environment

    alpha = float(doc["alpha"]) if doc else opts.alpha
    rope = float(doc["rope_pct"]) if doc else opts.rope_pct
    comparisons = list((doc or {}).get("comparisons", []))
    sentences = [verdict_sentence(c, metric, alpha, rope) for c in comparisons]
    env_diff: list[tuple[str, list[tuple[str, str]]]] = []
    if len(runs) > 1:
        diff = environment_differences(
            {f"run {r.run_id}": flatten_environment(r.environment or {}) for r in runs}
        )
        env_diff = [
            (k, [(name, "–" if v is None else str(v)) for name, v in vals.items()])
            for k, vals in diff.items()
        ]
    pairs = {p.name: p for p in (getattr(bayes, "pairs", ()) or ())} if bayes else {}
    verdict_rows = []
    for c in comparisons:
        p = pairs.get(c["condition"])
        verdict_rows.append(
            {
                "condition": c["condition"],
                "baseline": c["baseline"],
                "delta": pct(c["delta_pct"]),
                "ci": interval(c["ci_pct"], "%"),
                "median_delta": pct(c["median_delta_pct"]),
                "test": c["test"] or "–",
                "p": p_value(c["p_adjusted"]),
                "cliff": "–" if c["cliffs_delta"] is None else f"{c['cliffs_delta']:+.2f}",
                "verdict": c["verdict"],
                "note": c["note"],
                "bayes": None
                if p is None
                else {
                    "mean": pct(p.mean_pct),
                    "hdi": interval(list(p.hdi_pct), "%"),
                    "p_faster": f"{100 * float(p.p_faster):.1f}%",
                    "rope": str(p.rope_decision),
                    "rhat": finite_num(p.rhat_max),
                    "ess": finite_num(p.ess_min),
                },
            }
        )
    by_label = {c.label: c for c in data.conditions}
    cond_rows = []
    for c in (doc or {}).get("conditions", []):
        cd = by_label.get(c["condition"])
        cond_rows.append(
            {
                "condition": c["condition"],
                "n": c["n"],
                "mean": finite_num(c["mean"]),
                "sd": finite_num(c["sd"]),
                "median": finite_num(c["median"]),
                "p95": finite_num(c["p95"]),
                "p99": finite_num(c["p99"]),
                "cv": "–" if c["cv"] is None else f"{100 * c['cv']:.1f}%",
                "ci": interval(c["clt"]["mean_ci95"]),
                "transactions": "–" if cd is None else f"{cd.transactions:,}",
                # Percentiles of the transactions themselves, beside those of the sample means.
                "tx_p50": finite_num(_tx_quantile(cd, 2)) if metric == "latency" else "–",
                "tx_p95": finite_num(_tx_quantile(cd, 4)) if metric == "latency" else "–",
                "errors": "–" if cd is None else f"{cd.errors:,}",
                "bet": c["clt"].get("bet") or "",
            }
        )
    notes = condition_notes(data)
    diagnostics = [
        {"condition": c["condition"], **d}
        for c in (doc or {}).get("conditions", [])
        for d in c["diagnostics"]
    ]
    effects = []
    for e in getattr(bayes, "effects", ()) or ():
        effects.append(
            {"term": e.term, "mean": pct(e.mean_pct), "hdi": interval(list(e.hdi_pct), "%")}
        )
    question = runs[0].description or runs[0].name
    level = (doc or {}).get("level", opts.level)
    n_samples = sorted({int(c["n"]) for c in (doc or {}).get("conditions", [])})
    if level == "sample":
        what = "sample means" if metric == "latency" else "per-sample throughputs"
        n_text = " or ".join(str(n) for n in n_samples) or "–"
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
    if unit_of_work is not None:
        for row in unit_of_work.rows:
            uow_rows.append(
                {
                    "condition": row.condition,
                    "units": finite_num(row.units_per_s),
                    "cpu": finite_num(row.cpu_ms_per_unit),
                    "wait": finite_num(row.wait_ms_per_unit),
                    "response": finite_num(row.response_ms_per_unit),
                    "waits": ", ".join(f"{w} {fmt_num(ms)} ms" for w, ms in row.top_waits[:3])
                    or "–",
                }
            )
    return {
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
        "baseline": (doc or {}).get("conditions", [{}])[0].get("condition") if doc else None,
        "sentences": sentences,
        "problem": problem,
        "env_diff": env_diff,
        "design": _design(runs, store_conditions, results),
        "verdict_rows": verdict_rows,
        "has_bayes": bool(pairs),
        "bayes": bayes,
        "effects": effects,
        "omnibus": (doc or {}).get("omnibus"),
        "cond_rows": cond_rows,
        "notes": notes,
        "diagnostics": diagnostics,
        "per_transaction": data.per_transaction,
        "unit_of_work": unit_of_work,
        "uow_rows": uow_rows,
    }
