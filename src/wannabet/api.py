"""The Python API: what the command line does, as calls that return objects.

``wannabet.open_results(path)`` opens a results file; its :class:`Results` lists runs, hands out
a :class:`Run`'s samples, per-sample summaries and transactions as :class:`Table` (Arrow, with
``to_pandas()`` and ``to_polars()``), and runs ``summary``, ``compare``, ``plan`` and ``report``
as the CLI does, returning objects with ``to_dict()`` and a notebook view (``_repr_html_``).
``wannabet.run_experiment(file)`` runs an experiment. The CLI's commands are these calls plus
printing (``docs/python.md``); nothing here prints.

Heavy modules (the analysis, the engine, the report) are imported inside the calls that need
them, so ``import wannabet`` stays as cheap as ``wannabet --version``.
"""

from __future__ import annotations

import html
import importlib.util
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from wannabet.errors import AnalysisError, MissingExtra
from wannabet.model import (
    DEFAULT_ALPHA,
    DEFAULT_ROPE_PCT,
    PLAN_CHANGE_PCT,
    PLAN_MIN_SAMPLES,
    PLAN_POWER,
)
from wannabet.store import DEFAULT_RESULTS, RunInfo, Store

if TYPE_CHECKING:
    import altair as alt

    from wannabet.analysis.planning import Pilot
    from wannabet.analysis.planning import Plan as PlanResult
    from wannabet.documents import ComparisonDocument
    from wannabet.errors import SpecError
    from wannabet.model import Experiment
    from wannabet.profiling import RunProfiles
    from wannabet.render.report import Report as BuiltReport
    from wannabet.reports import RunSummary
    from wannabet.runner import Finding, RunObserver, RunSetup, RunWarning

__all__ = [
    "CheckResult",
    "Comparison",
    "Outcome",
    "Plan",
    "Prepared",
    "Report",
    "Results",
    "Run",
    "Summary",
    "Table",
    "check_experiment",
    "open_results",
    "prepare_experiment",
    "run_experiment",
]


# -- tables ------------------------------------------------------------------------------------


class Table:
    """An Arrow table, with the conversions a notebook wants.

    ``arrow`` is the :class:`pyarrow.Table` itself; ``to_pandas()`` and ``to_polars()`` need
    pandas or polars (``pip install 'wannabet[notebook]'``). Arrow consumers (DuckDB, polars,
    pandas ≥ 2.2) also read the object directly through the Arrow C stream interface.
    """

    def __init__(self, table: pa.Table) -> None:
        self.arrow = table

    @property
    def columns(self) -> list[str]:
        return list(self.arrow.column_names)

    def __len__(self) -> int:
        return int(self.arrow.num_rows)

    def to_arrow(self) -> pa.Table:
        return self.arrow

    def to_pylist(self) -> list[dict[str, Any]]:
        return list(self.arrow.to_pylist())

    def to_pandas(self) -> Any:
        if importlib.util.find_spec("pandas") is None:
            raise MissingExtra("to_pandas()", "notebook", "pandas")
        return self.arrow.to_pandas()

    def to_polars(self) -> Any:
        try:
            import polars
        except ModuleNotFoundError:
            raise MissingExtra("to_polars()", "notebook", "polars") from None
        return polars.from_arrow(self.arrow)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self.arrow.__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        return f"<wannabet.Table {len(self)} rows × {len(self.columns)} columns: {self.columns}>"

    def _repr_html_(self, max_rows: int = 20) -> str:
        head = self.arrow.slice(0, max_rows).to_pylist()
        cells = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>"
            + "".join(f"<td>{html.escape(_cell(row[c]))}</td>" for c in self.columns)
            + "</tr>"
            for row in head
        )
        more = (
            f"<p>{len(self) - max_rows:,} more rows; .to_pandas() or .to_polars() for all</p>"
            if len(self) > max_rows
            else ""
        )
        return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>{more}"


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _rich(*renderables: Any) -> tuple[str, str]:
    """The CLI's rich output of ``renderables``, as plain text and as HTML."""
    from rich.console import Console

    console = Console(
        record=True, width=120, file=io.StringIO(), color_system="truecolor", emoji=False
    )
    for r in renderables:
        console.print(r, highlight=False)
    text = console.export_text(clear=False)
    page = console.export_html(
        inline_styles=True,
        code_format=(
            '<pre style="font-family: ui-monospace, Menlo, Consolas, monospace;'
            ' line-height: 1.25">{code}</pre>'
        ),
    )
    return text, page


# -- results of analyses --------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    """What ``wannabet summary`` shows of one run; ``to_dict()`` is its ``--format json``."""

    result: RunSummary

    @property
    def conditions(self) -> Table:
        """One row per condition: the summary table's figures (latencies as ``mean_ms``,
        ``p99_ms``, …)."""
        rows = []
        for row in self.result.rows:
            flat = row.to_dict()
            for name, value in flat.pop("latency_ms").items():
                flat[f"{name}_ms"] = value
            rows.append(flat)
        return Table(pa.Table.from_pylist(rows))

    def to_json(self) -> str:
        """The document ``wannabet summary --format json`` prints."""
        from wannabet.render.summary import summary_json

        r = self.result
        return summary_json(
            r.run,
            r.rows,
            r.units,
            r.types,
            r.relations,
            r.open_loop,
            r.degraded,
            r.generators,
            r.client,
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(json.loads(self.to_json()))

    def _tables(self) -> list[Any]:
        from wannabet.render import summary as render

        r = self.result
        shown: list[Any] = [render.summary_table(r.run, r.rows)]
        if r.types:
            shown.append(render.types_table(r.types))
        if r.units:
            shown.append(render.unit_of_work_table(r.units))
        if r.client:
            shown.append(render.client_table(r.client))
        return shown

    def __str__(self) -> str:
        return _rich(*self._tables())[0]

    def _repr_html_(self) -> str:
        return _rich(*self._tables())[1]


@dataclass(frozen=True)
class Comparison:
    """What ``wannabet compare`` says: the verdicts, their tests and intervals.

    ``to_dict()`` is the document ``compare --format json`` prints; ``pairs`` the verdict
    table, one row per comparison.
    """

    document: ComparisonDocument

    def to_dict(self) -> dict[str, Any]:
        from wannabet.render.compare import compare_json

        return dict(json.loads(compare_json(self.document)))

    @property
    def pairs(self) -> Table:
        keep = ("condition", "baseline", "verdict", "delta_pct", "p_value", "p_adjusted", "test")
        rows = []
        for pair in self.document["comparisons"]:
            row: dict[str, Any] = {k: pair.get(k) for k in keep}
            ci = pair.get("ci_pct")
            row["ci_low_pct"], row["ci_high_pct"] = (ci[0], ci[1]) if ci else (None, None)
            row["summary"] = pair.get("summary")
            rows.append(row)
        return Table(pa.Table.from_pylist(rows))

    @property
    def verdicts(self) -> dict[str, str]:
        """Each compared condition's verdict word (faster, slower, equivalent, …)."""
        return {p["condition"]: p["verdict"] for p in self.document["comparisons"]}

    def to_markdown(self) -> str:
        from wannabet.render.markdown import comparison_markdown

        return comparison_markdown(self.document)

    def __str__(self) -> str:
        from wannabet.render.compare import compare_table

        return _rich(compare_table(self.document))[0]

    def _repr_html_(self) -> str:
        from wannabet.render.compare import compare_table

        return _rich(compare_table(self.document))[1]


@dataclass(frozen=True)
class Plan:
    """What ``wannabet plan`` advises: samples, duration and the run's length."""

    pilot: Pilot
    result: PlanResult
    run_id: int

    def to_dict(self) -> dict[str, Any]:
        from wannabet.render.plan import plan_json

        return dict(json.loads(plan_json(self.pilot, self.result, self.run_id)))

    def write(self, experiment_file: str | Path) -> None:
        """Write samples and duration into the experiment file's ``[sampling]`` table."""
        from wannabet.plans import write_plan

        write_plan(Path(experiment_file), self.result)

    def __str__(self) -> str:
        from wannabet.render.plan import plan_table

        return _rich(plan_table(self.pilot, self.result, self.run_id))[0]

    def _repr_html_(self) -> str:
        from wannabet.render.plan import plan_table

        return _rich(plan_table(self.pilot, self.result, self.run_id))[1]


@dataclass(frozen=True)
class Report:
    """The HTML report, its charts as Altair objects, and its verdict table in Markdown."""

    built: BuiltReport

    @property
    def html(self) -> str:
        return self.built.html

    @property
    def markdown(self) -> str:
        return self.built.markdown

    @property
    def charts(self) -> list[str]:
        """The keys of the charts this report has (``chart(key)`` gives one); a chart without
        data is left out, as on the page."""
        return list(self.built.chart_keys)

    def chart(self, key: str) -> alt.TopLevelMixin:
        """One chart of the report as an Altair chart, to show, change or save; KeyError
        (naming the charts there are) for a key the report has not drawn."""
        made = self.built.chart(key).altair
        if made is None:  # every chart the report builds keeps its Altair object
            raise KeyError(f"chart {key!r} has no Altair object")
        return made

    def save(self, path: str | Path) -> Path:
        """Write the self-contained HTML page (opens offline)."""
        out = Path(path)
        out.write_text(self.built.html, encoding="utf-8")
        return out

    def _repr_html_(self) -> str:
        if self.built.doc is not None:
            return Comparison(self.built.doc)._repr_html_()
        return f"<p>No comparison: {html.escape(self.built.problem or 'nothing to compare')}</p>"


# -- the results file -------------------------------------------------------------------------


class Results:
    """A results file (DuckDB), read-only: runs, their data and their analyses.

    ``include_degraded`` puts degraded samples (deadline passed, reconnects) back into the
    analyses, as ``--include-degraded`` does.
    """

    def __init__(self, path: str | Path = DEFAULT_RESULTS, *, include_degraded: bool = False):
        self.path = Path(path)
        self.include_degraded = include_degraded
        self.store = Store(self.path, read_only=True, include_degraded=include_degraded)

    def __repr__(self) -> str:
        return f"<wannabet.Results {str(self.path)!r}>"

    def runs(self) -> list[RunInfo]:
        """Every run, oldest first."""
        return self.store.runs()

    def runs_table(self) -> Table:
        """The runs as a table (what ``wannabet runs --format json`` lists)."""
        return Table(pa.Table.from_pylist([r.to_dict() for r in self.runs()]))

    def run(self, run_id: int | None = None) -> Run:
        """One run; None: the latest."""
        return Run(self, self.store.run(run_id))

    def summary(
        self,
        run_id: int | None = None,
        *,
        include_warmup: bool = False,
        unit: str = "commit",
        verdict: bool = False,
    ) -> Summary:
        """``wannabet summary``: per condition transactions, errors, TPS and latency."""
        from wannabet.reports import run_summary

        return Summary(
            run_summary(
                self.store, run_id, include_warmup=include_warmup, unit=unit, verdict=verdict
            )
        )

    def compare(self, runs: int | Sequence[int] = (), **options: Any) -> Comparison:
        """``wannabet compare``; the options are its flags' (``baseline``, ``metric``,
        ``level``, ``alpha``, ``rope``, ``seed``, ``include_warmup``, ``bayes``,
        ``bayes_model``, ``hdi_prob``, ``stat``, ``pairs``, one ``txn``)."""
        docs = self.comparisons(runs, **options)
        return docs[0]

    def comparisons(self, runs: int | Sequence[int] = (), **options: Any) -> list[Comparison]:
        """``compare`` with several transaction types (``txn=[...]``): one per type."""
        from wannabet.verdicts import comparison_documents, comparison_options

        ids = _ids(runs)
        txn = options.pop("txn", ())
        options["txn"] = (txn,) if isinstance(txn, str) else tuple(txn)
        with self.store.held():
            chosen = comparison_options(self.store, ids, **options)
            return [Comparison(d) for d in comparison_documents(self.store, ids, chosen)]

    def profiles(
        self,
        run_id: int | None = None,
        *,
        baseline: str | None = None,
        alpha: float | None = None,
        share: str = "inclusive",
        top: int | None = 20,
        pairs: str = "baseline",
        **options: Any,
    ) -> RunProfiles:
        """``compare --profile``: the run's CPU profiles per condition, and the frames that grew
        or shrank per pair of conditions (decided over the samples, Holm over the frames);
        ``pairs`` as in :meth:`comparisons`: "baseline", "all", "successive" or
        "within=FACTOR". ``alpha`` not given is compare's: the one a run that stopped when
        decided stopped by, else :data:`~wannabet.model.DEFAULT_ALPHA`. ``options`` are
        compare's other options, which do not apply here: given (not at their defaults), they
        are refused (SpecError).

        Raises AnalysisError when the run has no profiles (run it with ``--profile``).
        """
        from wannabet.profiling import run_profiles
        from wannabet.verdicts import (
            check_pairs_option,
            check_profile_options,
            condition_levels,
            resolve_alpha,
        )

        check_profile_options(**options)
        check_pairs_option(pairs)
        info = self.store.run(run_id)
        condition_levels(self.store, [info], pairs)  # a FACTOR the run lacks: one line, exit 2
        if share not in ("inclusive", "self"):
            raise AnalysisError(f"share must be 'inclusive' or 'self', not {share!r}")
        chosen: Literal["inclusive", "self"] = "self" if share == "self" else "inclusive"
        found = run_profiles(
            self.store,
            info.run_id,
            baseline=baseline,
            alpha=resolve_alpha(self.store, [info.run_id], alpha),
            share=chosen,
            top=top,
            pairs=pairs,
        )
        if found is None:
            lost = _profile_warning(self.store, info.run_id)
            if lost is not None:
                raise AnalysisError(
                    f"run {info.run_id} was profiled, but no sample's profile was recorded"
                    f" ({lost}); see wannabet summary for each sample's warnings"
                )
            raise AnalysisError(
                f"run {info.run_id} has no CPU profiles; run the experiment with --profile"
                " (or [profile] perf = true)"
            )
        return found

    def plan(
        self,
        run_id: int | None = None,
        *,
        change: str = f"{PLAN_CHANGE_PCT:g}%",
        rope: str = f"{DEFAULT_ROPE_PCT:g}%",
        alpha: float = DEFAULT_ALPHA,
        power: float = PLAN_POWER,
        stat: str = "mean",
        txn: str | None = None,
        min_samples: int = PLAN_MIN_SAMPLES,
        conditions: int | None = None,
    ) -> Plan:
        """``wannabet plan``: samples per condition and their duration, from a pilot run."""
        from wannabet.analysis.planning import plan_samples
        from wannabet.plans import load_pilot
        from wannabet.verdicts import parse_percent

        info = self.store.run(run_id)
        pilot = load_pilot(self.store, info, stat, txn)  # type: ignore[arg-type]
        result = plan_samples(
            pilot.components,
            change_pct=parse_percent(change, "--change"),
            rope_pct=parse_percent(rope, "--rope"),
            alpha=alpha,
            target_power=power,
            conditions=conditions,
            overhead_s=pilot.overhead_s,
            min_samples=min_samples,
        )
        return Plan(pilot, result, info.run_id)

    def report(
        self, runs: int | Sequence[int] = (), *, html: bool = True, **options: Any
    ) -> Report:
        """``wannabet report``: the page, its charts and its verdict table."""
        from wannabet.render.report import render_report
        from wannabet.reports import gather_report
        from wannabet.verdicts import comparison_options

        ids = _ids(runs)
        options.setdefault("metric", "auto")
        chosen = comparison_options(self.store, ids, **options)
        return Report(render_report(gather_report(self.store, ids, chosen, html=html)))

    def export(
        self, directory: str | Path, run_id: int | None = None, fmt: str = "parquet"
    ) -> list[Path]:
        """``wannabet export``: the run's tables (every run's with ``run_id=None``)."""
        return self.store.export(run_id, directory, fmt)


def _ids(runs: int | Sequence[int]) -> tuple[int, ...]:
    return (runs,) if isinstance(runs, int) else tuple(runs)


@dataclass(frozen=True)
class Run:
    """One run of a results file: what it is, its data, and its analyses."""

    results: Results
    info: RunInfo

    @property
    def id(self) -> int:
        return self.info.run_id

    def __repr__(self) -> str:
        i = self.info
        return f"<wannabet.Run {i.run_id} {i.name!r} {i.status}: {i.samples} samples>"

    def conditions(self) -> list[str]:
        """The condition labels, in declaration order."""
        return [c.label for c in self.results.store.conditions(self.id)]

    def samples(self) -> Table:
        """One row per sample: condition, block, times, counts, status."""
        return Table(self.results.store.samples_table(self.id))

    def sample_summaries(self) -> Table:
        """One row per sample: its latency figures and TPS, from every transaction."""
        return Table(self.results.store.sample_summaries_table(self.id))

    def transactions(self, *, include_warmup: bool = False) -> Table:
        """The stored transactions, joined: condition, sample, type name, status, latency in
        ms. Empty for an aggregates-only import; a sample of them where ``record`` said so."""
        return Table(self.results.store.transactions_table(self.id, include_warmup=include_warmup))

    def summary(self, **options: Any) -> Summary:
        return self.results.summary(self.id, **options)

    def compare(self, **options: Any) -> Comparison:
        return self.results.compare(self.id, **options)

    def plan(self, **options: Any) -> Plan:
        return self.results.plan(self.id, **options)

    def report(self, **options: Any) -> Report:
        return self.results.report(self.id, **options)


def open_results(path: str | Path = DEFAULT_RESULTS, *, include_degraded: bool = False) -> Results:
    """Open a results file to read (``wannabet.duckdb`` by default)."""
    if not Path(path).exists():
        from wannabet.errors import StoreError

        raise StoreError(f"{path}: no such results file; run an experiment first")
    return Results(path, include_degraded=include_degraded)


# -- checking -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CheckResult:
    """What ``wannabet check`` found in an experiment file.

    ``errors`` are the file's mistakes (every one, in file order), or, when the file is valid
    and no target was given, what every target would refuse (a pipeline under the simple
    protocol, ...); with errors the rest was not checked and the counts are 0. ``findings`` are
    the target's (``target=``): refusals (``error``) and notes on what it could not check.
    """

    file: Path
    errors: tuple[SpecError, ...] = ()
    findings: tuple[Finding, ...] = ()
    #: whether the statements were prepared against a target (a dry run)
    on_target: bool = False
    conditions: int = 0
    #: samples per condition (at most, with ``until_decided``)
    samples: int = 0
    until_decided: bool = False
    transaction_types: int = 0
    #: the statements of every condition's transactions, counted once per condition
    statements: int = 0

    @property
    def refused(self) -> list[Finding]:
        """The target's refusals: the findings that are errors."""
        return [f for f in self.findings if f.error]

    @property
    def unchecked(self) -> int:
        """How many notes say that a statement could not be checked on the target."""
        return sum(f.unchecked for f in self.findings)

    @property
    def ok(self) -> bool:
        """No error in the file and no refusal from the target."""
        return not self.errors and not self.refused


def check_experiment(file: str | Path, *, target: str | None = None) -> CheckResult:
    """``wannabet check``: every error of an experiment file, not just the first; with
    ``target`` (a URL), every statement of every condition also prepared there after the set-up
    and the condition's SQL, in a transaction that is rolled back (nothing runs, nothing is
    kept).

    Mistakes are returned, not raised (:class:`CheckResult`); a bad ``target`` URL or a target
    that cannot be reached raises, as ``run`` would.
    """
    from wannabet import design
    from wannabet.backends import parse_target
    from wannabet.engine import NativeEngine
    from wannabet.runner import dry_run_experiment, protocol_errors
    from wannabet.spec import check_file, load_experiment

    path = Path(file)
    errors = check_file(path)
    if errors:
        return CheckResult(path, errors=tuple(errors))
    experiment = load_experiment(path)
    if target is None:
        # What run refuses on every target; with a target the dry run says it.
        errors = protocol_errors(experiment)
        if errors:
            return CheckResult(path, errors=tuple(errors))
    conditions = design.conditions(experiment.factors)
    ran = [c.transactions or experiment.workload.transactions for c in conditions]
    findings = (
        ()
        if target is None
        else tuple(
            dry_run_experiment(
                experiment,
                parse_target(target, key="--target", file="command line"),
                NativeEngine(),
            )
        )
    )
    return CheckResult(
        path,
        findings=findings,
        on_target=target is not None,
        conditions=len(conditions),
        samples=experiment.sampling.samples,
        until_decided=experiment.sampling.until_decided,
        transaction_types=len({t.name for transactions in ran for t in transactions}),
        statements=sum(len(t.script.statements) for transactions in ran for t in transactions),
    )


# -- running --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """An experiment checked, its target resolved and its run about to start.

    ``experiment`` is the file with the options applied (its ``sampling`` is what a progress
    display needs); ``storage_warning`` what the results file's size will be, when large.
    """

    experiment: Experiment
    store: Store
    setup: RunSetup
    resume: int | None = None

    @property
    def storage_warning(self) -> str | None:
        return self.setup.storage

    def run(
        self,
        *,
        observer: RunObserver | None = None,
        warn: Callable[[RunWarning], None] | None = None,
    ) -> Outcome:
        """Run every sample and store it; ``observer`` receives progress (the CLI's bar),
        ``warn`` what the user would want to change while the run goes on."""
        from wannabet.engine import NativeEngine
        from wannabet.runner import run_experiment as run_all

        plan = self.experiment.distributed
        engine: Any
        if plan.generators:
            from wannabet.engine.distributed import DistributedEngine

            engine = DistributedEngine(
                plan.generators, plan.address, start_tolerance_s=plan.start_tolerance_s
            )
        else:
            engine = NativeEngine()
        try:
            outcome = run_all(
                self.experiment,
                target=self.setup.target,
                store=self.store,
                engine=engine,
                observer=observer,
                fresh_target=self.setup.fresh_target,
                statistics=self.setup.statistics,
                warn=warn,
                resume=self.resume,
            )
        finally:
            close = getattr(engine, "close", None)
            if close is not None:
                close()
        done = Results(self.store.path)
        return Outcome(Run(done, done.store.run(outcome.run_id)), list(outcome.failed_conditions))


@dataclass(frozen=True)
class Outcome:
    """A finished run, and the conditions in which no transaction succeeded (with the first
    error of each)."""

    run: Run
    failed_conditions: list[tuple[str, str]]


def prepare_experiment(
    file: str | Path,
    *,
    results: str | Path = DEFAULT_RESULTS,
    target: str | None = None,
    samples: int | None = None,
    duration: str | None = None,
    warmup: str | None = None,
    sessions: int | None = None,
    seed: int | None = None,
    record: str | None = None,
    until_decided: bool = False,
    max_samples: int | None = None,
    stats: bool | None = None,
    stats_interval: str | None = None,
    server_cores: int | None = None,
    profile: bool | None = None,
    generators: int | None = None,
    ray_address: str | None = None,
    resume: int | None = None,
) -> Prepared:
    """Load an experiment file and apply ``wannabet run``'s options to it (durations as text
    such as ``"5s"``); nothing runs yet. ``profile`` turns the file's ``[profile] perf`` on or
    off; ``generators`` and ``ray_address`` run the samples on Ray load generators
    (``[distributed]``). ``resume`` goes on with an interrupted run."""
    from wannabet.durations import duration_option
    from wannabet.runner import prepare_run, run_to_resume, with_overrides
    from wannabet.spec import load_experiment

    store = Store(results)
    if resume is not None and seed is None:
        # A file without a seed drew one when the run started; the run goes on with it.
        seed = run_to_resume(store, resume).seed
    experiment = with_overrides(
        load_experiment(Path(file)),
        samples=samples,
        duration_s=duration_option(duration, "--duration"),
        warmup_s=duration_option(warmup, "--warmup", allow_zero=True),
        sessions=sessions,
        seed=seed,
        record=record,
        until_decided=until_decided,
        max_samples=max_samples,
        profile=profile,
        generators=generators,
        ray_address=ray_address,
    )
    setup = prepare_run(
        experiment,
        store,
        target=target,
        file=str(file),
        stats=stats,
        stats_interval=stats_interval,
        server_cores=server_cores,
    )
    return Prepared(experiment, store, setup, resume)


def run_experiment(file: str | Path, **options: Any) -> Outcome:
    """Run an experiment file as ``wannabet run`` does (without its progress bar); the
    keyword arguments are :func:`prepare_experiment`'s."""
    return prepare_experiment(file, **options).run()


def _profile_warning(store: Store, run_id: int) -> str | None:
    """The first warning of the profiler in the run's samples: it ran with profiles, and says
    why none was kept (None: no sample had the profiler)."""
    for sample in store.samples(run_id):
        doc = json.loads(sample["stats"] or "{}")
        for warning in doc.get("warnings", ()):
            if str(warning).startswith("profile:"):
                return str(warning).removeprefix("profile:").strip()
    return None
