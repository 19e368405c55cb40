"""The ``wannabet`` command. Each command parses, calls one library function, renders.

Errors are one line on stderr with a non-zero exit code (see :mod:`wannabet.errors`); ``--debug``
shows the traceback instead.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from wannabet.durations import duration_option
from wannabet.errors import QueryError, SpecError, WannabetError
from wannabet.model import (
    DEFAULT_ALPHA,
    DEFAULT_ROPE_PCT,
    PLAN_CHANGE_PCT,
    PLAN_MIN_SAMPLES,
    PLAN_POWER,
)
from wannabet.render.format import error_markup, markup, one_line
from wannabet.store import DEFAULT_RESULTS, Store

if TYPE_CHECKING:
    from wannabet.api import Results

app = typer.Typer(
    help="Database performance experiments you can bet on.",
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    rich_markup_mode=None,
)
# Piped output is read by people too: do not squeeze tables into 80 columns when there is no
# terminal to fit (COLUMNS still wins when set).
_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 160
# No emoji codes: a message that names :id: must print it, not 🆔.
console = Console(width=_WIDTH, emoji=False)
err_console = Console(stderr=True, emoji=False)
_state = {"debug": False}

F = TypeVar("F", bound=Callable[..., Any])


class Format(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"
    csv = "csv"


class ExportFormat(StrEnum):
    parquet = "parquet"
    csv = "csv"


ResultsOption = Annotated[
    Path,
    typer.Option("--results", "-r", help="The results file (DuckDB).", envvar="WANNABET_RESULTS"),
]
RunOption = Annotated[int | None, typer.Option("--run", help="Run id; default: the latest run.")]
FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
# Options several commands share; `report` is made by the same comparison as `compare`.
WarmupOption = Annotated[
    bool, typer.Option("--include-warmup", help="Count warm-up transactions too.")
]
DegradedOption = Annotated[
    bool,
    typer.Option(
        "--include-degraded",
        help="Analyse degraded samples too (overran their deadline, lost sessions); default:"
        " left out, and said so.",
    ),
]


def _traceback() -> None:
    """With --debug, the traceback of the exception being handled, before its one line: the
    exit code stays the documented one."""
    if _state["debug"]:
        import traceback

        traceback.print_exc(file=sys.stderr)


def handled(fn: F) -> F:
    """Turn WannabetError into one line and an exit code, unless --debug."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except WannabetError as exc:
            _traceback()
            err_console.print(
                f"[red]error:[/red] {error_markup(exc)}", highlight=False, soft_wrap=True
            )
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            _traceback()
            err_console.print("interrupted", highlight=False)
            raise typer.Exit(130) from None
        except OSError as exc:
            # A file problem no check foresaw: still one line, naming the file.
            _traceback()
            where = f"{exc.filename}: " if exc.filename else ""
            err_console.print(
                f"[red]error:[/red] {markup(where + (exc.strerror or str(exc)))}",
                highlight=False,
                soft_wrap=True,
            )
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _version(value: bool) -> None:
    if value:
        from wannabet import __version__

        console.print(f"wannabet {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    _state["debug"] = debug


@app.command()
@handled
def run(
    file: Annotated[Path, typer.Argument(help="The experiment file (TOML).", metavar="FILE")],
    target: Annotated[
        str | None,
        typer.Option("--target", "-t", help="Database URL; overrides the file's target."),
    ] = None,
    results: ResultsOption = Path(DEFAULT_RESULTS),
    samples: Annotated[
        int | None, typer.Option(help="Samples per condition.", min=1, max=1_000_000)
    ] = None,
    until_decided: Annotated[
        bool,
        typer.Option(
            "--until-decided",
            help="Stop as soon as every comparison with the baseline is decided (faster,"
            " slower or equivalent within the file's [sampling] rope, default 2%), judged"
            " after every block by anytime-valid confidence sequences.",
        ),
    ] = False,
    max_samples: Annotated[
        int | None,
        typer.Option(
            help="With --until-decided: the most samples per condition (default: the file's"
            " max_samples, else 60).",
            min=2,
            max=1_000_000,
        ),
    ] = None,
    duration: Annotated[str | None, typer.Option(help="Duration of each sample, e.g. 5s.")] = None,
    warmup: Annotated[str | None, typer.Option(help="Warm-up of each sample, e.g. 1s.")] = None,
    sessions: Annotated[
        int | None, typer.Option(help="Concurrent sessions.", min=1, max=10_000)
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option(help="Seed of the run order and the scripts.", min=0, max=2**63 - 1),
    ] = None,
    record: Annotated[
        str | None,
        typer.Option(
            help="Which transactions to store as rows: auto (every one up to 1,000,000 per"
            " sample, beyond that a uniform random 1,000,000), all, none or a seeded fraction"
            " such as 0.01 (default: the file's [sampling] record, else auto). The per-sample"
            " summaries count every transaction either way.",
            show_default=False,
        ),
    ] = None,
    output: FormatOption = Format.table,
    stats: Annotated[
        bool | None,
        typer.Option(
            "--stats/--no-stats",
            help="Collect database and OS statistics per sample (default: the file's"
            " [statistics] enabled, else on).",
            show_default=False,
        ),
    ] = None,
    stats_interval: Annotated[
        str | None,
        typer.Option(
            help="How often to sample PostgreSQL wait events, 10ms to 50ms (default: the"
            " file's [statistics] wait_interval, else 50ms)."
        ),
    ] = None,
    server_cores: Annotated[
        int | None,
        typer.Option(
            help="CPU cores of the database server (for utilization and the response-time"
            " curve); overrides the cores a local server may use.",
            min=1,
            max=65536,
        ),
    ] = None,
    profile: Annotated[
        bool | None,
        typer.Option(
            "--profile/--no-profile",
            help="Record a CPU profile of the server per sample with perf (cpu-clock, call"
            " graphs), for flame graphs and compare --profile (default: the file's [profile]"
            " perf, else off). Refused before the run starts when perf cannot.",
            show_default=False,
        ),
    ] = None,
    generators: Annotated[
        int | None,
        typer.Option(
            "--generators",
            help="Run every sample on N load generators (Ray actors) at once, the sessions split"
            " between them, merged into one sample (default: the file's [distributed]"
            " generators, else none: this process). Needs wannabet[distributed].",
            min=0,
            max=1024,
            metavar="N",
        ),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            help="The Ray cluster of the load generators (ray.init's address: auto,"
            " ray://host:10001); default: the file's [distributed] address, else a local one.",
            metavar="ADDRESS",
        ),
    ] = None,
    resume: Annotated[
        int | None,
        typer.Option(
            "--resume",
            help="Go on with this interrupted or failed run where it stopped: the same"
            " schedule, seed and finished samples. Refused if the file, the options, the"
            " target or its environment changed.",
            metavar="RUN",
            min=0,
        ),
    ] = None,
) -> None:
    """Run an experiment and store its transactions (all, a fraction or none: --record)."""
    from wannabet import api
    from wannabet.render.progress import ProgressDisplay

    prepared = api.prepare_experiment(
        file,
        results=results,
        target=target,
        samples=samples,
        duration=duration,
        warmup=warmup,
        sessions=sessions,
        seed=seed,
        record=record,
        until_decided=until_decided,
        max_samples=max_samples,
        stats=stats,
        stats_interval=stats_interval,
        server_cores=server_cores,
        profile=profile,
        generators=generators,
        ray_address=ray_address,
        resume=resume,
    )
    if prepared.storage_warning is not None:
        err_console.print(
            f"[yellow]warning:[/yellow] {markup(prepared.storage_warning)}",
            highlight=False,
            soft_wrap=True,
        )
    sampling = prepared.experiment.sampling
    display = ProgressDisplay(
        err_console,
        sample_seconds=(sampling.duration_s + sampling.warmup_s) if sampling.duration_s else None,
        samples_per_condition=sampling.samples,
        until_decided=sampling.until_decided,
        warmup_s=sampling.warmup_s,
    )
    with display:
        outcome = prepared.run(
            observer=display,
            # Printed through the display's console, above the live bar.
            warn=lambda w: err_console.print(
                f"[yellow]warning:[/yellow] {markup(str(w))}", highlight=False, soft_wrap=True
            ),
        )
    _print_summary(outcome.run.results, outcome.run.id, output)
    for label, message in outcome.failed_conditions:
        err_console.print(
            f"[yellow]warning:[/yellow] {markup(label)}: no transaction succeeded;"
            f" the first error: {markup(message)}",
            highlight=False,
            soft_wrap=True,
        )
    if output is Format.table:
        err_console.print(
            markup(_after_run_hint(outcome.run.results.store, results, outcome.run.id)),
            highlight=False,
            soft_wrap=True,  # one line even when stderr is a file: the command stays whole
        )


def _after_run_hint(store: Store, results: Path, run_id: int) -> str:
    """Where the run went and the command to run next: the comparison when there is
    something to compare, else the report."""
    where = "" if results == Path(DEFAULT_RESULTS) else f" -r {shlex.quote(str(results))}"
    if store.run(run_id).conditions >= 2:
        step = f"wannabet compare{where} --run {run_id}"
    else:
        step = f"wannabet report{where} --run {run_id} -o run-{run_id}.html"
    return f"Stored in {results} as run {run_id}. Next: {step}"


@app.command()
@handled
def check(
    file: Annotated[Path, typer.Argument(help="The experiment file.", show_default=False)],
    target: Annotated[
        str | None,
        typer.Option(
            "--target",
            "-t",
            help="Also connect here and prepare every statement of every condition, after the"
            " set-up and the condition's SQL, in a transaction that is rolled back (a dry run:"
            " no workload runs, nothing is kept).",
        ),
    ] = None,
) -> None:
    """Validate an experiment file and report every error in it, not just the first."""
    from wannabet import api

    checked = api.check_experiment(file, target=target)
    for exc in checked.errors:
        err_console.print(f"[red]error:[/red] {error_markup(exc)}", highlight=False, soft_wrap=True)
    if checked.errors:
        err_console.print(
            f"{_count(len(checked.errors), 'error')} in {markup(str(file))}", highlight=False
        )
        raise typer.Exit(SpecError.exit_code)
    for finding in checked.findings:
        label = "[red]error:[/red]" if finding.error else "[yellow]note:[/yellow]"
        err_console.print(f"{label} {markup(finding.message)}", highlight=False, soft_wrap=True)
    if checked.refused:
        err_console.print(
            f"{_count(len(checked.refused), 'error')} against the target in {markup(str(file))}",
            highlight=False,
        )
        raise typer.Exit(QueryError.exit_code)
    on_target = ""
    if checked.on_target:
        statements = _count(checked.statements, "statement")
        on_target = (
            f"; the target prepared all {statements}"
            if not checked.unchecked
            else f"; {statements} tried on the target,"
            f" {_count(checked.unchecked, 'note')} above on what it could not check"
        )
    console.print(
        f"ok: {markup(str(file))}: {_count(checked.conditions, 'condition')},"
        f" {_count(checked.samples, 'sample')} each"
        f"{' at most (until decided)' if checked.until_decided else ''},"
        f" {_count(checked.transaction_types, 'transaction type')}{on_target}",
        highlight=False,
    )


@app.command()
@handled
def summary(
    results: ResultsOption = Path(DEFAULT_RESULTS),
    run_id: RunOption = None,
    output: FormatOption = Format.table,
    include_warmup: WarmupOption = False,
    include_degraded: DegradedOption = False,
    unit: Annotated[
        str,
        typer.Option(help="Unit of work: 'commit' or a transaction type's name."),
    ] = "commit",
) -> None:
    """Per-condition transactions, errors, TPS and latency of a run."""
    from wannabet import api

    _print_summary(
        api.Results(results, include_degraded=include_degraded),
        run_id,
        output,
        include_warmup=include_warmup,
        unit=unit,
    )


def _print_summary(
    results: Results,
    run_id: int | None,
    output: Format,
    *,
    include_warmup: bool = False,
    unit: str = "commit",
) -> None:
    from wannabet.render import summary as render
    from wannabet.render.markdown import degraded_warnings

    summary = results.summary(
        run_id, include_warmup=include_warmup, unit=unit, verdict=output is Format.markdown
    )
    shown = summary.result
    info, rows, units, types = shown.run, shown.rows, shown.units, shown.types
    if output is Format.json:
        sys.stdout.write(summary.to_json() + "\n")
    elif output is Format.csv:
        sys.stdout.write(render.summary_csv(rows, types))
    elif output is Format.markdown:
        from wannabet.render.markdown import verdict_markdown

        sys.stdout.write(render.summary_markdown(info, rows))
        if render.stop_sentence(info):
            sys.stdout.write("\n" + render.stop_sentence(info) + "\n")
        if types:
            sys.stdout.write("\n" + render.types_markdown(types))
        if units:
            sys.stdout.write("\n" + render.unit_of_work_markdown(units))
        if shown.relations:
            sys.stdout.write("\n" + render.relations_markdown(shown.relations))
        if shown.open_loop:
            sys.stdout.write("\n" + render.open_loop_markdown(shown.open_loop))
        if shown.generators:
            sys.stdout.write("\n" + render.generators_markdown(shown.generators))
        if shown.client:
            sys.stdout.write("\n" + render.client_markdown(shown.client))
        for warning in degraded_warnings(shown.degraded):
            sys.stdout.write(f"\nWarning: {one_line(warning)}.\n")
        # The same verdict table as `compare` and `report --format markdown`.
        doc = shown.verdict
        if doc is not None and doc["comparisons"]:
            sys.stdout.write("\n" + verdict_markdown(doc))
    else:
        console.print(render.summary_table(info, rows))
        if types:
            console.print(render.types_table(types))
        if units:
            console.print(render.unit_of_work_table(units))
            for line in render.curve_lines(units):
                console.print(f"  {markup(line)}", highlight=False)
        for table in render.relations_tables(shown.relations):
            console.print(table)
        if shown.open_loop:
            console.print(render.open_loop_table(shown.open_loop))
        if shown.generators:
            console.print(render.generators_table(shown.generators))
        if shown.client:
            console.print(render.client_table(shown.client))
        warnings = render.summary_warnings(rows, shown.open_loop) + degraded_warnings(
            shown.degraded
        )
        for warning in render.unit_of_work_warnings(units) + warnings:
            console.print(f"[yellow]warning:[/yellow] {markup(warning)}", highlight=False)
        stopped = render.stop_sentence(info)
        if stopped:
            console.print(markup(stopped), highlight=False)
        if info.status != "complete":
            console.print(
                f"[yellow]run {info.run_id} is {info.status}[/yellow]"
                + (f": {markup(info.message)}" if info.message else ""),
                highlight=False,
            )


@app.command("runs")
@handled
def list_runs(
    results: ResultsOption = Path(DEFAULT_RESULTS),
    output: FormatOption = Format.table,
    delete: Annotated[
        list[int] | None,
        typer.Option("--delete", help="Remove this run and all it stored; repeat for several."),
    ] = None,
    keep_last: Annotated[
        int | None,
        typer.Option(
            "--keep-last", help="Remove every run but the N latest (running ones stay).", min=0
        ),
    ] = None,
) -> None:
    """List the runs in the results file, or remove some."""
    from wannabet.render import runs as render

    if delete or keep_last is not None:
        store = Store(results)
        ids = list(delete or [])
        if keep_last is not None:
            every = store.runs()
            older = every[: max(len(every) - keep_last, 0)]
            ids += [r.run_id for r in older if r.status != "running"]
        removed = store.delete_runs(ids) if ids else []
        err_console.print(
            f"removed {_count(len(removed), 'run')}"
            + (f" ({', '.join(map(str, removed))})" if removed else ""),
            highlight=False,
        )
    runs = Store(results, read_only=True).runs()
    if output is Format.json:
        sys.stdout.write(render.runs_json(runs) + "\n")
    elif output is Format.csv:
        sys.stdout.write(render.runs_csv(runs))
    elif output is Format.markdown:
        sys.stdout.write(render.runs_markdown(runs))
    elif not runs:
        console.print("no runs yet; start one with `wannabet run FILE`")
    else:
        console.print(render.runs_table(runs))


@app.command()
@handled
def export(
    results: ResultsOption = Path(DEFAULT_RESULTS),
    run_id: RunOption = None,
    all_runs: Annotated[bool, typer.Option("--all", help="Export every run.")] = False,
    output: Annotated[
        ExportFormat, typer.Option("--format", "-f", help="File format.")
    ] = ExportFormat.parquet,
    directory: Annotated[
        Path, typer.Option("--output", "-o", help="Directory to write into.")
    ] = Path("export"),
) -> None:
    """Write a run's tables, its transactions with condition, type and latency, and one row per
    sample with summary's figures, as Parquet or CSV files (see docs/results-schema.md)."""
    if all_runs and run_id is not None:
        raise SpecError("give --run ID or --all, not both", key="--all", file="command line")
    store = Store(results, read_only=True)
    chosen = None if all_runs else store.run(run_id).run_id
    rows: dict[str, int] = {}

    def written(path: Path, n: int) -> None:
        # One path per line on stdout as each file lands: a long export shows its progress.
        rows[path.stem] = n
        console.print(str(path), highlight=False, soft_wrap=True)  # never folded

    paths = store.export(chosen, directory, output.value, written=written)
    err_console.print(
        f"wrote {_count(len(paths), 'file')} to {markup(str(directory))}:"
        f" {_count(rows.get('samples', 0), 'sample')},"
        f" {_count(rows.get('transactions', 0), 'stored transaction')},"
        f" {_count(rows.get('aggregates', 0), 'aggregate row')}",
        highlight=False,
    )


import_app = typer.Typer(help="Import results from other tools as runs.", no_args_is_help=True)
app.add_typer(import_app, name="import")


class Unit(StrEnum):
    ms = "ms"
    us = "us"
    s = "s"


FilesArgument = Annotated[list[Path], typer.Argument(help="The files to import.", metavar="FILES")]
ConditionOption = Annotated[
    str | None, typer.Option("--condition", help="Condition of every file.")
]
ConditionFromFilename = Annotated[
    str | None,
    typer.Option(
        "--condition-from-filename",
        help="Regular expression finding the condition in each file name (its group"
        " 'condition', else its first group, else the match).",
    ),
]
AppendOption = Annotated[
    int | None, typer.Option("--run", help="Append to this imported run (builds a comparison).")
]
ForceOption = Annotated[
    bool, typer.Option("--force", help="Import files even if their content was imported before.")
]
NameOption = Annotated[
    str | None, typer.Option("--name", help="Run name; default the first file's name.")
]


@import_app.command("csv")
@handled
def import_csv(
    file: Annotated[Path, typer.Argument(help="The CSV file, with a header line.", metavar="FILE")],
    condition: Annotated[str, typer.Option("--condition", help="Column with the condition.")],
    value: Annotated[str, typer.Option("--value", help="Column with the measured value.")],
    sample: Annotated[
        str | None, typer.Option("--sample", help="Column grouping rows into samples.")
    ] = None,
    session: Annotated[str | None, typer.Option("--session", help="Column with a session.")] = None,
    time: Annotated[
        str | None, typer.Option("--time", help="Column with seconds or a timestamp.")
    ] = None,
    unit: Annotated[Unit, typer.Option("--unit", help="Unit of the value column.")] = Unit.ms,
    name: Annotated[
        str | None, typer.Option("--name", help="Run name; default the file name.")
    ] = None,
    run: AppendOption = None,
    force: ForceOption = False,
    results: ResultsOption = Path(DEFAULT_RESULTS),
) -> None:
    """Import a table of measurements (one row per transaction) as a run."""
    from wannabet.importers import import_csv as do_import

    store = Store(results)
    run_id = do_import(
        store,
        file,
        condition=condition,
        value=value,
        sample=sample,
        session=session,
        time=time,
        unit=unit.value,
        name=name,
        run_id=run,
        force=force,
    )
    info = store.run(run_id)
    console.print(
        f"imported {info.transactions:,} rows of {markup(str(file))} as run {run_id}:"
        f" {_count(info.conditions, 'condition')}, {_count(info.samples, 'sample')}",
        highlight=False,
    )


class PgbenchLog(StrEnum):
    auto = "auto"
    transactions = "transactions"
    aggregate = "aggregate"


class PgbenchVersion(StrEnum):
    auto = "auto"
    v14 = "14"
    v15 = "15"


class PgbenchExtra(StrEnum):
    auto = "auto"
    lag = "lag"
    retries = "retries"


def _rule(condition: str | None, pattern: str | None, default: str = "baseline") -> Any:
    from wannabet.importers import ConditionRule

    return ConditionRule(name=condition, pattern=pattern, default=default)


def _imported(store: Store, run_id: int, files: list[Path]) -> None:
    info = store.run(run_id)
    what = (
        f"{info.transactions:,} transactions"
        if not info.aggregates_only
        else "aggregates only (no per-transaction data)"
    )
    console.print(
        f"imported {_count(len(files), 'file')} as run {run_id}: {what},"
        f" {_count(info.conditions, 'condition')}, {_count(info.samples, 'sample')}",
        highlight=False,
    )


@import_app.command("pgbench")
@handled
def import_pgbench(
    files: FilesArgument,
    condition: ConditionOption = None,
    condition_from_filename: ConditionFromFilename = None,
    summary: Annotated[
        Path | None,
        typer.Option("--summary", help="pgbench's own output: stored and cross-checked."),
    ] = None,
    log: Annotated[
        PgbenchLog, typer.Option("--log", help="Log kind; default detected.")
    ] = PgbenchLog.auto,
    pgbench_version: Annotated[
        PgbenchVersion,
        typer.Option("--pgbench-version", help="Aggregated log layout: 14 (<= 14) or 15 (15+)."),
    ] = PgbenchVersion.auto,
    pgbench_extra: Annotated[
        PgbenchExtra,
        typer.Option("--pgbench-extra", help="What a 7th log field is: lag or retries."),
    ] = PgbenchExtra.auto,
    sample_interval: Annotated[
        str | None,
        typer.Option(
            "--sample-interval",
            help="Slice per-transaction logs into samples, e.g. 10s; default one per invocation.",
        ),
    ] = None,
    aggregate_interval: Annotated[
        str | None,
        typer.Option("--aggregate-interval", help="pgbench's --aggregate-interval, e.g. 5s."),
    ] = None,
    run_id: AppendOption = None,
    force: ForceOption = False,
    name: NameOption = None,
    results: ResultsOption = Path(DEFAULT_RESULTS),
) -> None:
    """Import pgbench per-transaction (-l) or aggregated (--aggregate-interval) logs."""
    from wannabet.importers import import_pgbench as do_import

    store = Store(results)
    new_id = do_import(
        store,
        files,
        conditions=_rule(condition, condition_from_filename),
        summary=summary,
        log=log.value,
        layout=pgbench_version.value,
        extra=pgbench_extra.value,
        sample_interval_s=duration_option(sample_interval, "--sample-interval"),
        aggregate_interval_s=duration_option(aggregate_interval, "--aggregate-interval"),
        run_id=run_id,
        force=force,
        name=name,
    )
    _imported(store, new_id, files)


def _import_format(fmt: str, files: list[Path], rule: Any, results: Path, **options: Any) -> None:
    """``wannabet import FMT``: the format's importer into the results file, then the line
    saying where the files went."""
    from wannabet import importers

    store = Store(results)
    new_id = getattr(importers, f"import_{fmt}")(store, files, conditions=rule, **options)
    _imported(store, new_id, files)


def _plain_format_command(fmt: str, help_text: str) -> None:
    """Register ``wannabet import FMT`` for a format with no options of its own."""

    @import_app.command(fmt, help=help_text)
    @handled
    def command(
        files: FilesArgument,
        condition: ConditionOption = None,
        condition_from_filename: ConditionFromFilename = None,
        run_id: AppendOption = None,
        force: ForceOption = False,
        name: NameOption = None,
        results: ResultsOption = Path(DEFAULT_RESULTS),
    ) -> None:
        rule = _rule(condition, condition_from_filename)
        _import_format(fmt, files, rule, results, run_id=run_id, force=force, name=name)


for _fmt, _help in (
    (
        "swingbench",
        "Import Swingbench results XML (aggregates only: TPS readings and percentiles).",
    ),
    ("sysbench", "Import sysbench output: --report-interval lines, final summary, --histogram."),
    (
        "hyperfine",
        "Import hyperfine --export-json: each command a condition, each run an observation.",
    ),
    ("hammerdb", "Import HammerDB transaction-timing (xtprof) output, as aggregates."),
):
    _plain_format_command(_fmt, _help)


SampleIntervalOption = Annotated[
    str | None,
    typer.Option(
        "--sample-interval",
        help="Slice each file's transactions into samples of this length, e.g. 10s; default"
        " one sample per file.",
    ),
]


def _sliced_format_command(fmt: str, help_text: str) -> None:
    """Register ``wannabet import FMT`` for a per-transaction format that can be sliced into
    samples (``--sample-interval``), as pgbench's logs can."""

    @import_app.command(fmt, help=help_text)
    @handled
    def command(
        files: FilesArgument,
        condition: ConditionOption = None,
        condition_from_filename: ConditionFromFilename = None,
        sample_interval: SampleIntervalOption = None,
        run_id: AppendOption = None,
        force: ForceOption = False,
        name: NameOption = None,
        results: ResultsOption = Path(DEFAULT_RESULTS),
    ) -> None:
        _import_format(
            fmt,
            files,
            _rule(condition, condition_from_filename),
            results,
            run_id=run_id,
            force=force,
            name=name,
            sample_interval_s=duration_option(sample_interval, "--sample-interval"),
        )


for _fmt, _help in (
    (
        "benchbase",
        "Import BenchBase results: .raw.csv per-transaction files with their summary.json.",
    ),
    (
        "ycsb",
        "Import YCSB raw measurements (or HdrHistogram interval logs, whose samples are their"
        " intervals).",
    ),
    (
        "fio",
        "Import fio --output-format=json/json+ output (aggregates per job and direction),"
        " histogram logs (--write_hist_log), whose samples are their intervals, or latency logs"
        " (--write_lat_log), one transaction per I/O in samples of --sample-interval (default"
        " 1s).",
    ),
):
    _sliced_format_command(_fmt, _help)


class Metric(StrEnum):
    latency = "latency"
    throughput = "throughput"


class Level(StrEnum):
    sample = "sample"
    transaction = "transaction"


BaselineOption = Annotated[
    str | None, typer.Option("--baseline", help="Baseline condition; default the first.")
]
LevelOption = Annotated[
    Level, typer.Option("--level", help="One observation per sample or per transaction.")
]
AlphaOption = Annotated[
    float, typer.Option("--alpha", help="Significance level.", min=0.0001, max=0.5)
]
RopeOption = Annotated[
    str, typer.Option("--rope", help="Changes smaller than this are practically nothing.")
]
# compare's and report's: left out, the alpha and ROPE a run that stopped when decided stopped
# by, so the verdicts shown are the ones it stopped on
VerdictAlphaOption = Annotated[
    float | None,
    typer.Option(
        "--alpha",
        help=f"Significance level; default {DEFAULT_ALPHA:g}, or the run's own when it stopped"
        " when decided.",
        min=0.0001,
        max=0.5,
    ),
]
VerdictRopeOption = Annotated[
    str | None,
    typer.Option(
        "--rope",
        help="Changes smaller than this are practically nothing; default"
        f" {DEFAULT_ROPE_PCT:g}%, or the run's own when it stopped when decided.",
    ),
]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of the bootstrap.", min=0)]
PairsOption = Annotated[
    str,
    typer.Option(
        "--pairs",
        help="Which pairs: baseline (each condition against the baseline), all (every"
        " pair), successive (each against the one before it) or within=FACTOR (the levels"
        " of FACTOR, every other factor held fixed); Holm's correction runs over the pairs"
        " compared.",
        metavar="baseline|all|successive|within=FACTOR",
    ),
]


class BayesModelChoice(StrEnum):
    hierarchical = "hierarchical"
    gamma = "gamma"
    lognormal = "lognormal"
    student_t = "student-t"


@app.command()
@handled
def compare(
    results: ResultsOption = Path(DEFAULT_RESULTS),
    run_ids: Annotated[
        list[int] | None,
        typer.Option(
            "--run",
            help="Run id; repeat to compare the conditions of several runs. Default: latest.",
        ),
    ] = None,
    baseline: BaselineOption = None,
    metric: Annotated[Metric, typer.Option("--metric", help="What to compare.")] = Metric.latency,
    level: LevelOption = Level.sample,
    alpha: VerdictAlphaOption = None,
    rope: VerdictRopeOption = None,
    seed: SeedOption = 0,
    output: FormatOption = Format.table,
    include_warmup: WarmupOption = False,
    include_degraded: DegradedOption = False,
    bayes: Annotated[
        bool,
        typer.Option("--bayes", help="Add Bayesian estimation: posterior, HDI, ROPE decision."),
    ] = False,
    bayes_model: Annotated[
        BayesModelChoice | None,
        typer.Option("--bayes-model", help="Bayesian model; default hierarchical."),
    ] = None,
    hdi: Annotated[
        float | None,
        typer.Option("--hdi", help="Mass of the HDI; default 0.95.", min=0.5, max=0.999),
    ] = None,
    prior_cv: Annotated[
        float | None,
        typer.Option("--prior-cv", help="Gamma model: CV of the prior on each mean; default 1."),
    ] = None,
    prior_mean: Annotated[
        float | None,
        typer.Option("--prior-mean", help="Gamma model: prior mean in ms; default pooled mean."),
    ] = None,
    prior_sd_max: Annotated[
        float | None,
        typer.Option("--prior-sd-max", help="Gamma model: bound of the uniform sd prior, ms."),
    ] = None,
    txn: Annotated[
        list[str] | None,
        typer.Option(
            "--txn",
            help="Judge this transaction type on its own; repeat for several. Default: all"
            " types together.",
        ),
    ] = None,
    pairs: PairsOption = "baseline",
    stat: Annotated[
        str | None,
        typer.Option(
            "--stat",
            help="The statistic judged: mean, median, p90, p95, p99, p99.9 (latency), tps"
            " (throughput), result (the transactions' recorded results, result = true); cpu,"
            " wait and response the server's ms per commit (per transaction of the --txn"
            " type) of each sample, as summary's unit of work; io:COUNTER one of its I/O"
            " counters per commit (io:blks_read, io:wal_bytes, io:Innodb_data_fsyncs, ...)."
            " Default: the mean latency.",
        ),
    ] = None,
    profile: Annotated[
        bool,
        typer.Option(
            "--profile",
            help="Compare the CPU profiles instead (a run made with --profile): per pair of"
            " conditions (--pairs), the frames whose share of the CPU grew or shrank, with"
            " intervals (Welch over the samples, Holm over the frames).",
        ),
    ] = False,
) -> None:
    """Is the difference between conditions real? Tests, intervals and a verdict."""
    from wannabet import api
    from wannabet.render import compare as render

    # compare's options, for the latency comparison or the profiles (whose library refuses
    # those that do not apply rather than ignore them)
    options: dict[str, Any] = {
        "baseline": baseline,
        "metric": metric.value,
        "level": level.value,
        "alpha": alpha,
        "rope": rope,
        "seed": seed,
        "include_warmup": include_warmup,
        "bayes": bayes,
        "bayes_model": None if bayes_model is None else bayes_model.value,
        "hdi_prob": hdi,
        "prior_cv": prior_cv,
        "prior_mean": prior_mean,
        "prior_sd_max": prior_sd_max,
        "txn": txn or (),
        "stat": stat,
        "pairs": pairs,
    }
    if profile:
        _compare_profiles(results, run_ids, output, include_degraded, **options)
        return
    found = api.Results(results, include_degraded=include_degraded).comparisons(
        run_ids or (), **options
    )
    docs = [c.document for c in found]
    if output is Format.json:
        # One document; one per type, as a JSON array, when several --txn are given.
        sys.stdout.write(render.compare_json(docs[0] if len(docs) == 1 else docs) + "\n")
    elif output is Format.markdown:
        from wannabet.render.markdown import comparison_markdown

        sys.stdout.write("\n".join(comparison_markdown(doc) for doc in docs))
    elif output is Format.csv:
        sys.stdout.write(render.compare_csv(docs[0] if len(docs) == 1 else docs))
    else:
        for doc in docs:
            console.print(render.compare_table(doc))


def _compare_profiles(
    results: Path,
    run_ids: list[int] | None,
    output: Format,
    include_degraded: bool,
    **options: Any,
) -> None:
    """``compare --profile``: the frames that grew or shrank, as a table or JSON; ``options``
    are compare's, for :meth:`wannabet.api.Results.profiles`."""
    from wannabet import api
    from wannabet.render.profiles import profile_markdown, profile_tables

    if run_ids and len(run_ids) > 1:
        raise SpecError(
            "compares the conditions of one run; give one --run",
            key="--profile",
            file="command line",
        )
    found = api.Results(results, include_degraded=include_degraded).profiles(
        run_ids[0] if run_ids else None, **options
    )
    if output is Format.json:
        sys.stdout.write(json.dumps(found.to_dict(), indent=2) + "\n")
    elif output is Format.markdown:
        sys.stdout.write(profile_markdown(found))
    elif output is Format.table:
        console.print(profile_tables(found))
    else:
        raise SpecError(
            "prints a table, Markdown or JSON; use --format table, markdown or json",
            key="--profile",
            file="command line",
        )


class PlanStatChoice(StrEnum):
    mean = "mean"
    p99 = "p99"
    tps = "tps"


@app.command()
@handled
def plan(
    results: ResultsOption = Path(DEFAULT_RESULTS),
    run_id: RunOption = None,
    # The library's defaults, read here so that --help shows them.
    change: Annotated[
        str, typer.Option("--change", help="The change to resolve, e.g. 5%.")
    ] = f"{PLAN_CHANGE_PCT:g}%",
    rope: RopeOption = f"{DEFAULT_ROPE_PCT:g}%",
    alpha: AlphaOption = DEFAULT_ALPHA,
    power: Annotated[
        float,
        typer.Option("--power", help="Chance of a verdict on that change.", min=0.5, max=0.99),
    ] = PLAN_POWER,
    stat: Annotated[
        PlanStatChoice,
        typer.Option("--stat", help="The statistic judged: mean or p99 latency, or TPS."),
    ] = PlanStatChoice.mean,
    txn: Annotated[
        str | None, typer.Option("--txn", help="Plan for this transaction type alone.")
    ] = None,
    min_samples: Annotated[
        int, typer.Option("--min-samples", help="Fewest samples per condition to plan.", min=2)
    ] = PLAN_MIN_SAMPLES,
    conditions: Annotated[
        int | None,
        typer.Option(
            "--conditions", help="Conditions of the planned run (default: the pilot's).", min=2
        ),
    ] = None,
    write: Annotated[
        Path | None,
        typer.Option(
            "--write",
            help="Write samples and duration into this experiment file's [sampling] table.",
            metavar="FILE",
        ),
    ] = None,
    output: FormatOption = Format.table,
    include_degraded: DegradedOption = False,
) -> None:
    """How many samples, how long each, and how long the run: from a pilot run."""
    from wannabet import api
    from wannabet.render.plan import plan_json, plan_table

    # The plan is a sentence and a few figures, not rows: it has no Markdown or CSV form.
    # Refused before any work, so that --write changes nothing either.
    if output not in (Format.table, Format.json):
        raise SpecError(
            f"plan prints a table or JSON, not {output.value}; use --format table or json",
            key="--format",
            file="command line",
        )
    planned = api.Results(results, include_degraded=include_degraded).plan(
        run_id,
        change=change,
        rope=rope,
        alpha=alpha,
        power=power,
        stat=stat.value,
        txn=txn,
        min_samples=min_samples,
        conditions=conditions,
    )
    if output is Format.json:
        sys.stdout.write(plan_json(planned.pilot, planned.result, planned.run_id) + "\n")
    else:
        console.print(plan_table(planned.pilot, planned.result, planned.run_id))
    if write is not None:
        planned.write(write)
        err_console.print(f"wrote the plan into {markup(str(write))}", highlight=False)


class ReportFormat(StrEnum):
    html = "html"
    markdown = "markdown"


class ReportMetric(StrEnum):
    auto = "auto"
    latency = "latency"
    throughput = "throughput"


@app.command()
@handled
def report(
    results: ResultsOption = Path(DEFAULT_RESULTS),
    run_ids: Annotated[
        list[int] | None,
        typer.Option("--run", help="Run id; repeat to compare several runs. Default: latest."),
    ] = None,
    output_file: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="File to write; required for html."),
    ] = None,
    output: Annotated[
        ReportFormat, typer.Option("--format", "-f", help="html report or markdown verdict table.")
    ] = ReportFormat.html,
    baseline: BaselineOption = None,
    metric: Annotated[
        ReportMetric,
        typer.Option("--metric", help="What to compare; auto: latency unless only aggregates."),
    ] = ReportMetric.auto,
    level: LevelOption = Level.sample,
    alpha: VerdictAlphaOption = None,
    rope: VerdictRopeOption = None,
    seed: SeedOption = 0,
    include_warmup: WarmupOption = False,
    include_degraded: DegradedOption = False,
    bayes: Annotated[
        bool, typer.Option("--bayes", help="Add the Bayesian section: posterior, HDI, ROPE.")
    ] = False,
    bayes_model: Annotated[
        BayesModelChoice | None,
        typer.Option("--bayes-model", help="Bayesian model (with --bayes); default hierarchical."),
    ] = None,
    pairs: PairsOption = "baseline",
) -> None:
    """Write a self-contained HTML report (plots, verdict, design) that opens offline."""
    from wannabet import api

    if output is ReportFormat.html and output_file is None:
        raise SpecError(
            "the HTML report needs a file to go to; add -o report.html",
            key="--output",
            file="command line",
        )
    # The experiment file's [bayes] table applies here as it does to compare.
    built = (
        api.Results(results, include_degraded=include_degraded)
        .report(
            run_ids or (),
            html=output is ReportFormat.html,
            baseline=baseline,
            metric=metric.value,
            level=level.value,
            alpha=alpha,
            rope=rope,
            seed=seed,
            include_warmup=include_warmup,
            bayes=bayes,
            bayes_model=None if bayes_model is None else bayes_model.value,
            pairs=pairs,
        )
        .built
    )
    if output is ReportFormat.markdown and built.doc is None:
        from wannabet.errors import AnalysisError

        # Only a verdict table was asked for: fail as `compare` does (the page would still
        # have shown the rest).
        raise AnalysisError(built.problem or "nothing to compare")
    text = built.html if output is ReportFormat.html else built.markdown
    if output_file is None:
        sys.stdout.write(text)
        return
    try:
        output_file.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise SpecError(
            f"cannot write {output_file}: {exc.strerror}; choose a writable path",
            key="--output",
            file="command line",
        ) from None
    err_console.print(
        f"wrote {markup(str(output_file))} ({len(text.encode()) / 1e6:.2f} MB)", highlight=False
    )


def main() -> None:
    """Run the command line; a usage mistake is one line, like every other error."""
    try:
        code = app(standalone_mode=False)
    except typer.TyperException as exc:  # typer's click: usage errors (a bad option, value)
        if type(exc).__name__ == "NoArgsIsHelpError":  # `wannabet import` alone: its help
            exc.show()  # type: ignore[attr-defined]
        else:
            _traceback()
            ctx = getattr(exc, "ctx", None)
            where = ctx.command_path if ctx is not None else "wannabet"
            err_console.print(
                f"[red]error:[/red] {markup(exc.format_message())}; see {markup(where)} --help",
                highlight=False,
                soft_wrap=True,
            )
        sys.exit(getattr(exc, "exit_code", 2))
    except typer.Abort:
        err_console.print("interrupted", highlight=False)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
