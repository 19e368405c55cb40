"""``wannabet report`` and ``wannabet summary`` as library calls: what they show, gathered.

:func:`gather_report` makes the comparison exactly as ``wannabet compare`` does
(:func:`wannabet.verdicts.analyze`), reduces the runs' transactions to what the report plots
(:mod:`wannabet.reports.data`), takes the unit-of-work results of their stored database
statistics and the differences between their environments, and hands all of it over as one
:class:`ReportInput`; :func:`wannabet.render.report.render_report` only turns it into charts and
HTML. :func:`run_summary` does the same for ``wannabet summary``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wannabet.analysis.bayes import BayesAnalysis
from wannabet.analysis.client import ClientCost
from wannabet.analysis.diagnostics import environment_differences
from wannabet.analysis.relations import RelationActivity
from wannabet.datasets import (
    OpenLoop,
    TypeSummary,
    load_type_summaries,
    open_loop,
    transaction_type_names,
)
from wannabet.documents import ComparisonDocument
from wannabet.errors import AnalysisError
from wannabet.render.report.inputs import (
    ReportInput,
    ResponseCurve,
    UnitOfWork,
    UnitOfWorkRow,
)
from wannabet.reports.data import load_report_data
from wannabet.store import ConditionSummary, RunInfo, Store
from wannabet.verdicts import (
    ComparisonOptions,
    Metric,
    add_degraded,
    add_open_loop,
    add_sequences,
    analyze,
    comparison_documents,
    degraded_documents,
    document,
    flatten_environment,
    resolve_metric,
    runs_of,
)

__all__ = [
    "ReportInput",
    "ResponseCurve",
    "RunSummary",
    "UnitOfWork",
    "UnitOfWorkRow",
    "build_report",
    "gather_report",
    "run_summary",
    "unit_of_work_input",
]

if TYPE_CHECKING:
    from wannabet.analysis.unit_of_work import UnitOfWork as UnitOfWorkResult
    from wannabet.profiling import RunProfiles
    from wannabet.render.report import Report
    from wannabet.store.queries import GeneratorSummary


def unit_of_work_input(
    results: Sequence[UnitOfWorkResult], labels: Sequence[str] | None = None
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


def gather_report(
    store: Store,
    run_ids: Sequence[int] = (),
    options: ComparisonOptions | None = None,
    *,
    bayes: BayesAnalysis | None = None,
    unit_of_work: UnitOfWork | None = None,
    html: bool = True,
) -> ReportInput:
    """Gather what the report of one or more stored runs shows.

    Parameters
    ----------
    store : Store
        The results file.
    run_ids : sequence of int
        The runs; empty means the latest. Several runs are compared together, as by
        ``wannabet compare --run A --run B``.
    options : ComparisonOptions, optional
        Baseline, metric (default ``auto``), level, alpha, ROPE, seed, warm-up, Bayes.
    bayes : BayesAnalysis, optional
        A Bayesian analysis of the same comparison made elsewhere; by default the one made
        with ``options.bayes`` (``Comparison.bayes``), if any.
    unit_of_work : UnitOfWork, optional
        Per-condition unit-of-work results; by default those of the runs' stored database
        statistics, if any were taken.
    html : bool
        False: only the comparison (for the Markdown verdict table); no plot data is read.
    """
    opts = options or ComparisonOptions()
    runs = runs_of(store, run_ids)
    metric = resolve_metric(opts.metric, runs)
    doc: ComparisonDocument | None
    problem = None
    try:
        comparison, _ = analyze(store, [r.run_id for r in runs], _with_metric(opts, metric))
    except AnalysisError as exc:
        # A run whose conditions cannot be compared (every condition without a single
        # successful transaction, say) still deserves its page: everything but the verdict.
        doc, problem = None, str(exc)
    else:
        doc = document(comparison, runs)
        add_sequences(store, runs, doc)
        add_open_loop(store, runs, doc)
        add_degraded(store, runs, doc)
        if doc["excluded"] and not doc["comparisons"]:
            left = ", ".join(f"{e['condition']} ({e['reason']})" for e in doc["excluded"])
            problem = f"nothing left to compare once {left} is left out"
        if bayes is None:
            bayes = comparison.bayes
    gathered = ReportInput(tuple(runs), opts, metric, doc, problem, bayes, store.path)
    if not html:
        return gathered
    several = len(runs) > 1
    conditions = {r.run_id: store.conditions(r.run_id) for r in runs}
    labels = [
        [f"{r.run_id}:{c.label}" if several else c.label for c in conditions[r.run_id]]
        for r in runs
    ]
    if unit_of_work is None:
        unit_of_work = _stored_unit_of_work(store, runs, several)
    period = doc["conditions"][0]["consistency"].get("period") if doc else None
    data = load_report_data(
        store,
        runs,
        labels=labels,
        metric=metric,
        include_warmup=opts.include_warmup,
        period_seconds=86400.0 if period == "day" else 3600.0,
        seed=opts.seed,
    )
    per_type: tuple[ComparisonDocument, ...] = ()
    if doc is not None and metric == "latency" and not several:
        per_type = _per_type_tails(store, runs[0], opts)
    from wannabet.work import relations_for_run

    relations = () if several else tuple(relations_for_run(store, runs[0].run_id))
    profiles = None if several else _profiles(store, runs[0].run_id, opts)
    environments = {r.run_id: flatten_environment(r.environment or {}) for r in runs}
    differences: dict[str, dict[str, str | None]] = {}
    if several:
        differences = environment_differences(
            {f"run {r.run_id}": environments[r.run_id] for r in runs}
        )
    return ReportInput(
        tuple(runs),
        opts,
        metric,
        doc,
        problem,
        bayes,
        store.path,
        data=data,
        unit_of_work=unit_of_work,
        conditions=conditions,
        environments=environments,
        environment_differences=differences,
        per_type=per_type,
        relations=relations,
        profiles=profiles,
        generators=() if several else tuple(store.generator_summaries(runs[0].run_id)),
    )


def _profiles(store: Store, run_id: int, options: ComparisonOptions) -> RunProfiles | None:
    """The run's profiles for the comparison's pairs, against its baseline (the run's first
    condition when the baseline has no profile), at the comparison's alpha."""
    from wannabet.profiling import run_profiles

    try:
        return run_profiles(
            store, run_id, baseline=options.baseline, alpha=options.alpha, pairs=options.pairs
        )
    except AnalysisError:
        return run_profiles(store, run_id, alpha=options.alpha, pairs=options.pairs)


#: the tail statistic the report judges per transaction type
REPORT_TAIL_STAT = "p99"


def _per_type_tails(
    store: Store, run: RunInfo, options: ComparisonOptions
) -> tuple[ComparisonDocument, ...]:
    """Each transaction type's p99 verdict, when the run has several types (issue #13)."""
    from dataclasses import replace

    try:
        names = list(transaction_type_names(store, run).values())
    except AnalysisError:  # a results file without per-sample summaries
        return ()
    if len(names) < 2:
        return ()
    per_type = replace(options, txn=tuple(names), stat=REPORT_TAIL_STAT, bayes=None)
    try:
        return tuple(comparison_documents(store, [run.run_id], per_type))
    except AnalysisError:  # a type without a latency in some condition: the rest still shows
        return ()


def build_report(
    store: Store,
    run_ids: Sequence[int] = (),
    options: ComparisonOptions | None = None,
    *,
    bayes: BayesAnalysis | None = None,
    unit_of_work: UnitOfWork | None = None,
    html: bool = True,
) -> Report:
    """The self-contained HTML report of one or more stored runs: :func:`gather_report`, then
    :func:`wannabet.render.report.render_report`.

    ``Report.html`` opens offline: the plotting runtime is inlined once and every chart is data
    embedded in the page; with ``html=False`` only ``Report.markdown`` (the verdict table).
    """
    from wannabet.render.report import render_report

    return render_report(
        gather_report(store, run_ids, options, bayes=bayes, unit_of_work=unit_of_work, html=html)
    )


def _with_metric(options: ComparisonOptions, metric: Metric) -> ComparisonOptions:
    from dataclasses import replace

    return replace(options, metric=metric)


def _stored_unit_of_work(store: Store, runs: Sequence[RunInfo], several: bool) -> UnitOfWork | None:
    """The unit-of-work results of the runs' stored database statistics, if any were taken."""
    from wannabet.work import unit_of_work_for_run

    results: list[Any] = []
    names: list[str] = []
    for r in runs:
        for u in unit_of_work_for_run(store, r.run_id):
            results.append(u)
            names.append(f"{r.run_id}:{u.condition}" if several else u.condition)
    return unit_of_work_input(results, names)


@dataclass(frozen=True, slots=True)
class RunSummary:
    """What ``wannabet summary`` shows of one run."""

    run: RunInfo
    rows: list[ConditionSummary]
    units: list[UnitOfWorkResult]
    #: per condition and transaction type (pgbench ``-r``); empty with fewer than two types
    types: list[TypeSummary] = field(default_factory=list)
    #: the verdict document ``compare`` gives for the run (asked for with ``verdict=True``);
    #: None when not asked, or when the analysis refuses
    verdict: ComparisonDocument | None = None
    #: per condition, the tables and indexes its samples used (PostgreSQL statistics)
    relations: list[RelationActivity] = field(default_factory=list)
    #: per open-loop condition: the rate asked for and reached, and the schedule lag
    open_loop: list[OpenLoop] = field(default_factory=list)
    #: the run's degraded samples, left out of the figures unless the store includes them
    degraded: list[dict[str, Any]] = field(default_factory=list)
    #: a distributed run, per condition and load generator (empty for a run on one host)
    generators: list[GeneratorSummary] = field(default_factory=list)
    #: per condition, what it cost wannabet's own process: peak memory, bytes received
    client: list[ClientCost] = field(default_factory=list)


def run_summary(
    store: Store,
    run_id: int | None = None,
    *,
    include_warmup: bool = False,
    unit: str = "commit",
    verdict: bool = False,
) -> RunSummary:
    """The run's per-condition summary and its unit-of-work results (``unit``: ``commit`` or a
    transaction type's name); the latest run when ``run_id`` is None. With ``verdict``, also the
    comparison ``compare`` makes of the run's conditions (Markdown's summary shows it)."""
    from wannabet.work import client_for_run, relations_for_run, unit_of_work_for_run

    info = store.run(run_id)
    rows = store.condition_summaries(info.run_id, include_warmup=include_warmup)
    units = unit_of_work_for_run(store, info.run_id, unit)
    types = (
        []
        if info.aggregates_only
        else load_type_summaries(store, info, include_warmup=include_warmup)
    )
    doc = None
    if verdict:
        options = ComparisonOptions(include_warmup=include_warmup)
        doc = gather_report(store, [info.run_id], options, html=False).doc
    return RunSummary(
        info,
        rows,
        units,
        types,
        doc,
        relations_for_run(store, info.run_id),
        open_loop(store, info),
        degraded_documents(store, [info]),
        store.generator_summaries(info.run_id),
        client_for_run(store, info.run_id),
    )
