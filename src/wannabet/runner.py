"""Orchestrates one run: design × engine → store, with progress and clean interruption.

The order of events, and why:

1. Connect to the target and record its version and settings. An unreachable target fails here,
   before any run is written, so no half-made run is left behind.
2. Write the run as ``running``; run the setup SQL once.
3. For every scheduled sample: apply the condition's ``system_sql`` when the condition changes,
   run the sample (each session applies the ``session_sql``), write it in one transaction.
4. Close the run as ``complete``, ``interrupted`` (Ctrl-C) or ``failed``. Samples written before
   an interruption or failure stay readable.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import numpy as np

from wannabet import design
from wannabet.analysis.sequential import SequentialComparison, sequential_comparisons
from wannabet.backends import (
    collector_for,
    database_file,
    parse_target,
    password_variables,
    profiled_processes,
    refused_in_transaction,
)
from wannabet.durations import duration_option
from wannabet.engine.base import (
    DryCondition,
    Engine,
    HeldConnection,
    Progress,
    SampleRequest,
    SampleResult,
)
from wannabet.engine.program import Program, compile_program
from wannabet.environment import client_environment, server_environment
from wannabet.errors import (
    HookError,
    Interrupted,
    QueryError,
    SpecError,
    TargetError,
    UnknownRun,
    WannabetError,
)
from wannabet.model import (
    STATUS_NAMES,
    Background,
    Condition,
    CopyCommand,
    Experiment,
    Hook,
    PipelineCommand,
    ScheduledSample,
    SqlCommand,
    SqlDialect,
    StatisticsPlan,
    Transaction,
    Workload,
)
from wannabet.render.format import sample_name
from wannabet.samplers import Collector, StatsOptions
from wannabet.script import fill, split_sql
from wannabet.spec import DEFAULT_MAX_SAMPLES, parse_record
from wannabet.store import SCHEDULE_KEY, ConditionRow, RunInfo, SampleRow, Store, queries
from wannabet.store.summaries import SampleSummaries
from wannabet.targets import Target, redact
from wannabet.version import tool_version


class RunObserver(Protocol):
    """Receives progress; the CLI draws it, tests record it."""

    def run_started(
        self,
        run_id: int,
        conditions: Sequence[Condition],
        plan: Sequence[ScheduledSample],
        done: frozenset[int] = frozenset(),
    ) -> None:
        """The run starts (or, resumed, goes on: ``done`` are the positions it has)."""
        ...

    def sample_started(self, sample: ScheduledSample, condition: Condition, number: int) -> None:
        """A sample starts; ``number`` is the one it will be stored and named under (within its
        condition, 1-based: a degraded attempt that is run again keeps its own number)."""
        ...

    def sample_progress(self, ok: int, errors: int, elapsed_s: float, p99_ms: float) -> None: ...

    def block_finished(self, block: int, sequences: Sequence[SequentialComparison]) -> None:
        """A block of a run that stops when decided ended: each comparison's sequence."""
        ...

    def sample_finished(
        self, sample: ScheduledSample, result: SampleResult, tps: float
    ) -> None: ...


class SilentObserver:
    def run_started(
        self,
        run_id: int,
        conditions: Sequence[Condition],
        plan: Sequence[ScheduledSample],
        done: frozenset[int] = frozenset(),
    ) -> None:
        pass

    def sample_started(self, sample: ScheduledSample, condition: Condition, number: int) -> None:
        pass

    def sample_progress(self, ok: int, errors: int, elapsed_s: float, p99_ms: float) -> None:
        pass

    def block_finished(self, block: int, sequences: Sequence[SequentialComparison]) -> None:
        pass

    def sample_finished(self, sample: ScheduledSample, result: SampleResult, tps: float) -> None:
        pass


@dataclass(frozen=True, slots=True)
class RunWarning:
    """Something the user would want to change while the run goes on, and how."""

    message: str
    advice: str

    def __str__(self) -> str:
        return f"{self.message}; {self.advice}"


#: projected rows of a run above which the runner suggests storing a fraction of them
#: (a results file grows by about 40 bytes a row, and every analysis reads them all)
MANY_ROWS = 20_000_000


@dataclass(frozen=True, slots=True)
class RunOutcome:
    run_id: int
    status: str
    samples: int
    #: conditions in which no transaction succeeded, with the first error message of each
    failed_conditions: tuple[tuple[str, str], ...] = ()


def with_overrides(
    experiment: Experiment,
    *,
    samples: int | None = None,
    duration_s: float | None = None,
    warmup_s: float | None = None,
    sessions: int | None = None,
    seed: int | None = None,
    record: str | None = None,
    until_decided: bool = False,
    max_samples: int | None = None,
    profile: bool | None = None,
    generators: int | None = None,
    ray_address: str | None = None,
) -> Experiment:
    """The experiment with command-line overrides applied.

    ``record`` is the text of ``--record`` ("auto", "all", "none" or a fraction such as
    "0.01"). ``until_decided`` turns the sequential stopping rule on (a file may already have
    it on); ``max_samples`` is then the most samples per condition. ``profile`` turns the
    file's ``[profile] perf`` on or off. ``generators`` and ``ray_address`` override the file's
    ``[distributed]`` table (0 generators: this process alone).
    """
    if profile is not None and profile != experiment.profile.perf:
        experiment = dataclasses.replace(
            experiment, profile=dataclasses.replace(experiment.profile, perf=profile)
        )
    distributed = experiment.distributed
    if generators is not None:
        distributed = dataclasses.replace(distributed, generators=generators)
    if ray_address is not None:
        distributed = dataclasses.replace(distributed, address=ray_address)
    if ray_address is not None and distributed.generators == 0:
        raise SpecError(
            "names a Ray cluster for load generators, and the run has none; add --generators N",
            key="--ray-address",
            file="command line",
        )
    # The file's address without generators is as much a mistake as --ray-address without
    # them (it would be ignored); --generators 0 says to run here alone, whatever the file says.
    if distributed.address is not None and distributed.generators == 0 and generators is None:
        raise SpecError(
            "names a Ray cluster for load generators, and the run has none; add generators = N"
            " to [distributed] (or --generators N)",
            key="distributed.address",
            file=experiment.source_path,
        )
    experiment = dataclasses.replace(experiment, distributed=distributed)
    sampling = experiment.sampling
    if until_decided or sampling.until_decided:
        if samples is not None:
            raise SpecError(
                "a run that stops when decided takes at most --max-samples samples per"
                " condition; give --max-samples instead of --samples",
                key="--samples",
                file="command line",
            )
        if not sampling.until_decided:
            sampling = dataclasses.replace(
                sampling, until_decided=True, samples=DEFAULT_MAX_SAMPLES
            )
        if sampling.order == "sequential":
            raise SpecError(
                "--until-decided judges the conditions block by block; the file's"
                " [sampling] order must be randomized-blocks (the default) or blocks",
                key="--until-decided",
                file="command line",
            )
        if max_samples is not None:
            sampling = dataclasses.replace(sampling, samples=max_samples)
    elif max_samples is not None:
        raise SpecError(
            "applies only to a run that stops when decided; add --until-decided",
            key="--max-samples",
            file="command line",
        )
    if record is not None:
        try:
            fraction, max_rows = parse_record(record)
        except ValueError as exc:
            raise SpecError(
                f"{exc}; e.g. --record 0.01", key="--record", file="command line"
            ) from None
        sampling = dataclasses.replace(sampling, record=fraction, max_rows=max_rows)
    if samples is not None:
        sampling = dataclasses.replace(sampling, samples=samples)
    if duration_s is not None:
        sampling = dataclasses.replace(sampling, duration_s=duration_s)
    if warmup_s is not None:
        sampling = dataclasses.replace(sampling, warmup_s=warmup_s)
    if seed is not None:
        sampling = dataclasses.replace(sampling, seed=seed)
    if sessions is not None:
        sweep = next(
            (f for f in experiment.factors if any(v.sessions is not None for v in f.settings)),
            None,
        )
        if sweep is not None:
            # The levels' sessions would win for every condition: silently ignored otherwise.
            raise SpecError(
                f"factor {sweep.name!r} sets each level's sessions, which would win over"
                f" --sessions {sessions}; drop --sessions, or the levels' sessions",
                key="--sessions",
                file="command line",
            )
    workload = experiment.workload
    if sessions is not None:
        workload = dataclasses.replace(workload, sessions=sessions)
    return dataclasses.replace(experiment, sampling=sampling, workload=workload)


@dataclass(frozen=True, slots=True)
class RunSetup:
    """Where and how a run goes, with the command line's choices merged into the file's."""

    target: Target
    #: the default SQLite target beside the results file, which wannabet owns and makes afresh
    fresh_target: bool
    statistics: StatsOptions
    #: the rows the run may store could fill the results file's disk (None: they cannot)
    storage: str | None = None


def prepare_run(
    experiment: Experiment,
    store: Store,
    *,
    target: str | None = None,
    file: str = "<experiment>",
    stats: bool | None = None,
    stats_interval: str | None = None,
    server_cores: int | None = None,
) -> RunSetup:
    """The target and statistics of a run of ``experiment`` (from ``file``).

    ``target`` overrides the file's; without either, the run goes to a SQLite file named after
    the experiment beside the results file. ``stats``, ``stats_interval`` (a duration such as
    ``"20ms"``) and ``server_cores`` override the file's ``[statistics]`` table.
    """
    _check_size(experiment, file)
    store.check_writable()  # before the default target is made beside it
    url = target or experiment.target
    fresh = url is None
    if url is None:
        name = re.sub(r"[^A-Za-z0-9_.-]+", "-", experiment.name).strip("-") or "target"
        url = f"sqlite:///{(store.path.parent / f'{name}.sqlite').resolve()}"
    resolved = parse_target(
        url,
        key="--target" if target else "target",
        file="command line" if target else file,
    )
    refuse_results_file(
        resolved,
        store.path,
        key="--target" if target else "target",
        file="command line" if target else file,
    )
    statistics = statistics_options(
        experiment.statistics,
        enabled=stats,
        wait_interval=stats_interval,
        server_cores=server_cores,
    )
    return RunSetup(resolved, fresh, statistics, storage_warning(experiment, store.path))


def refuse_results_file(target: Target, results: Path, *, key: str, file: str | None) -> None:
    """Refuse a target whose database is the results file: the run would write its results
    into the database it measures (DuckDB: the two connections lock or corrupt each other).

    Raises
    ------
    SpecError
        The target's file and ``results`` are one file (the same inode, or for files not made
        yet the same resolved path: relative, absolute and through symlinks alike).
    """
    path = database_file(target)
    if path is None or not _same_file(path, results):
        return
    raise SpecError(
        f"{target.display} is the results file {results} itself; the run would store its"
        " results in the database it measures: name another results file (--results) or"
        " another target",
        key=key,
        file=file,
    )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet
        return a.expanduser().resolve() == b.expanduser().resolve()


#: the longest run wannabet starts: beyond it an option is a typo, not a plan
MAX_RUN_S = 30 * 86_400
#: bytes a stored transaction row takes in the results file, at most (6.4-7.4 measured,
#: docs/benchmarks.md)
ROW_BYTES = 8


def planned_seconds(experiment: Experiment, conditions: int) -> float | None:
    """How long the run's samples take at most (None: samples end by a transaction count)."""
    sampling = experiment.sampling
    if sampling.duration_s is None:
        return None
    per_sample = sampling.duration_s + sampling.warmup_s + sampling.cooldown_s
    return conditions * sampling.samples * per_sample


def _check_size(experiment: Experiment, file: str) -> None:
    """Refuse, before anything runs, a run longer than :data:`MAX_RUN_S`."""
    conditions = len(design.conditions(experiment.factors))
    seconds = planned_seconds(experiment, conditions)
    if seconds is not None and seconds > MAX_RUN_S:
        sampling = experiment.sampling
        raise SpecError(
            f"the run would take {seconds / 86_400:,.0f} days ({conditions} conditions x"
            f" {sampling.samples:,} samples x {seconds / conditions / sampling.samples:g} s);"
            " wannabet starts runs of at most 30 days: fewer or shorter samples",
            key="sampling",
            file=file,
        )


def storage_warning(experiment: Experiment, results: Path) -> str | None:
    """A sentence when the rows the run may store could fill the results file's disk."""
    sampling = experiment.sampling
    if sampling.max_rows <= 0 or sampling.record <= 0:
        return None  # every row ("all"): no bound to check; none: nothing stored
    conditions = len(design.conditions(experiment.factors))
    most = conditions * sampling.samples * sampling.max_rows * ROW_BYTES
    try:
        free = shutil.disk_usage(results.resolve().parent).free
    except OSError:
        return None
    if most <= free:
        return None
    return (
        f"the run may store up to {most / 1e9:,.1f} GB of transaction rows (at most"
        f" {sampling.max_rows:,} per sample), more than the {free / 1e9:,.1f} GB free beside"
        f" {results.name}; a fast workload would fill the disk: use [sampling] record = 0.01"
        " or fewer samples"
    )


def statistics_options(
    plan: StatisticsPlan,
    *,
    enabled: bool | None = None,
    wait_interval: str | None = None,
    server_cores: int | None = None,
) -> StatsOptions:
    """The file's ``[statistics]`` (``plan``) with every option that is not None applied."""
    interval = (
        plan.wait_interval_s
        if wait_interval is None
        else (duration_option(wait_interval, "--stats-interval") or 0.0)
    )
    try:
        return StatsOptions(
            enabled=plan.enabled if enabled is None else enabled,
            wait_interval_s=interval,
            server_cores=plan.server_cores if server_cores is None else server_cores,
        )
    except ValueError as exc:
        raise SpecError(
            f"{exc}; e.g. --stats-interval 50ms", key="--stats-interval", file="command line"
        ) from None


def sample_seed(seed: int, position: int) -> int:
    """A distinct, reproducible engine seed for every sample of a run."""
    return (seed * 1_000_003 + position * 7_919 + 1) % (2**63)


def _marker(path: Path) -> Path:
    """The file beside a default target that says wannabet made it (named like ``-wal``)."""
    return path.with_name(path.name + "-wannabet")


def reset_default_target(path: Path) -> None:
    """Start the default SQLite target afresh: delete it if wannabet made it.

    Only a file with wannabet's marker beside it is deleted; any other file at that path is
    refused, so a user's database that happens to share the name is never lost. The new file
    is left for ``[setup]`` to create, so its ``PRAGMA page_size`` and ``auto_vacuum`` apply.
    """
    marker = _marker(path)
    if path.exists() and not _made_by_wannabet(path, marker):
        raise SpecError(
            "exists and wannabet did not make it, so it is not deleted as the default"
            f" target; move it away (or delete it if an older wannabet made it), or name it"
            f" as the target (target = 'sqlite:///{path}' or --target) to run on its data",
            file=str(path),
        )
    for suffix in ("", "-wal", "-shm", "-journal"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("pending\n")  # until the file exists and its identity can be recorded


def mark_default_target(path: Path) -> None:
    """Record the default target's identity beside it, once the file exists."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return
    _marker(path).write_text(f"{info.st_dev}:{info.st_ino}\n")


def _made_by_wannabet(path: Path, marker: Path) -> bool:
    try:
        recorded = marker.read_text().strip()
    except OSError:
        return False
    info = path.stat()
    return recorded in ("pending", f"{info.st_dev}:{info.st_ino}")


def run_experiment(
    experiment: Experiment,
    *,
    target: Target,
    store: Store,
    engine: Engine,
    observer: RunObserver | None = None,
    fresh_target: bool = False,
    statistics: StatsOptions | None = None,
    warn: Callable[[RunWarning], None] | None = None,
    resume: int | None = None,
) -> RunOutcome:
    """Run every sample of ``experiment`` against ``target`` and store the results.

    Parameters
    ----------
    fresh_target
        Delete the SQLite target file first (used for the default target, which wannabet owns).
    statistics
        How per-sample database and OS statistics are collected (default: on). A sampler that
        fails becomes a warning stored with the samples, never a failed run.
    warn
        Receives what the user would want to change while the run goes on (a run whose first
        sample projects more than :data:`MANY_ROWS` stored rows, a degraded sample).
    resume
        Go on with this interrupted or failed run instead of starting one: the same schedule,
        seed and sample ids, skipping the positions done; ``[setup]`` does not run again.
        Refused (SpecError) when the file, the settings, the target or its environment
        changed.

    Raises
    ------
    ConnectError
        The target is unreachable; nothing was written.
    Interrupted
        Ctrl-C; the run is marked ``interrupted`` and finished samples are kept.
    WannabetError
        Anything else that stopped the run; it is marked ``failed``.
    """
    observer = observer or SilentObserver()
    plan = _plan(experiment, target)
    for condition, where in zip(plan.conditions, plan.targets, strict=True):
        refuse_results_file(
            where,
            store.path,
            key=f"target of condition {condition.label}" if condition.target else "target",
            file=experiment.source_path,
        )
    # The default target is made afresh only when a condition runs on it, and never for a
    # resumed run: its database is the one the run left, which the samples to come expect.
    fresh_target = (
        fresh_target and resume is None and any(t.url == target.url for t in plan.servers)
    )
    if fresh_target and target.path is not None:
        reset_default_target(target.path)
    # The run's own target unless every level names another: the first its conditions use.
    primary, *others = plan.distinct_servers
    environment = _probe(engine, primary)
    generators = getattr(engine, "environment", None)
    if callable(generators):
        # A distributed engine: every generator's host and clock offset.
        environment["generators"] = generators()
    if others:
        # The other targets' servers, with the conditions that run on them.
        environment["targets"] = [
            {
                "target": other.display,
                "conditions": [
                    c.label
                    for c, t in zip(plan.conditions, plan.servers, strict=True)
                    if t.url == other.url
                ],
                **server_environment(engine, other),
            }
            for other in others
        ]
    statistics = statistics or StatsOptions.of_plan(experiment.statistics)
    # Before the run exists: a profile perf cannot record stops it now, in one line, not after
    # the set-up or in its middle.
    hz = experiment.profile.frequency_hz
    profiled = (
        {
            url: (profiled_processes(t, engine, hz), hz)
            for url, t in {t.url: t for t in plan.targets}.items()
        }
        if experiment.profile.perf
        else {}
    )
    resumed = None
    if resume is None:
        run_id = _create_run(store, experiment, primary, plan, environment, statistics)
    else:
        resumed = _resume(store, resume, experiment, primary, plan, environment, statistics)
        run_id = resume
    run = _SampleLoop(experiment, store, engine, observer, plan, run_id, warn)
    if resumed is not None:
        run.resume_from(resumed)
    observer.run_started(run_id, plan.conditions, plan.schedule, run.skip)
    stopped_by = [int(signal.SIGINT)]  # which signal stopped the run, set by the handler
    try:
        if resumed is None:
            for where in plan.distinct_servers:
                _setup(experiment, where, engine, fresh_target and where is target)
            if experiment.setup.sql:
                # What the samples run on is the server as the set-up left it.
                after = server_environment(engine, primary)
                store.update_environment(run_id, **after)
        # After setup: a setup failure should not wait for a statistics connection first.
        for where in {t.url: t for t in plan.targets}.values():
            run.collectors[where.url] = collector_for(
                where,
                engine,
                statistics,
                transaction_names=plan.type_names,
                profile=profiled.get(where.url),
            )
        with _deferred_interrupt(stopped_by) as interrupt:
            run.run_all(interrupt)
    except KeyboardInterrupt:
        raise _interrupted(store, run_id, run.done, stopped_by[0]) from None
    except WannabetError as exc:
        store.finish_run(run_id, "failed", str(exc))
        raise
    except BaseException as exc:
        store.finish_run(run_id, "failed", f"{type(exc).__name__}: {exc}")
        raise
    finally:
        for collector in run.collectors.values():
            if collector is not None:
                collector.close()
        if fresh_target and target.path is not None:
            mark_default_target(target.path)  # made by the first sample when there is no setup
    return _finish(run)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a run runs: its conditions, the order of its samples, the compiled workload of each
    condition, and the run's transaction types (every name any condition runs, first seen
    first) with, per condition, the type id of each of its program's transactions."""

    conditions: tuple[Condition, ...]
    schedule: tuple[ScheduledSample, ...]
    programs: tuple[Program, ...]
    types: tuple[Transaction, ...]
    type_ids: tuple[tuple[int, ...], ...]
    #: where each condition's samples run (the run's target unless a level names another),
    #: with its level's connection parameters
    targets: tuple[Target, ...]
    #: each condition's server: its target without the level's ``target_params``, which change
    #: how the sessions connect, not where (set-up and the environment probe go here)
    servers: tuple[Target, ...]

    @property
    def type_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.types)

    @property
    def distinct_servers(self) -> tuple[Target, ...]:
        """Every server of the run once, in the order of the first conditions that use them."""
        seen: dict[str, Target] = {}
        for t in self.servers:
            seen.setdefault(t.url, t)
        return tuple(seen.values())

    @property
    def passwords(self) -> tuple[str | None, ...]:
        """Every target's password, to scrub from what the run writes."""
        return tuple({t.password for t in (*self.targets, *self.servers)})


def _plan(experiment: Experiment, target: Target) -> _Plan:
    try:
        conditions = design.with_placeholders(
            design.conditions(experiment.factors), experiment.workload
        )
        servers, targets = condition_targets(experiment, conditions, target)
        # Each condition's scripts as its target lexes SQL (the file was read before any
        # target was known).
        conditions = tuple(
            design.lexed_as(c, experiment.workload, where.backend.sql_dialect)
            for c, where in zip(conditions, targets, strict=True)
        )
        for c, where in zip(conditions, targets, strict=True):
            background = c.background or experiment.background
            if background is not None:  # refused now rather than at its first sample
                _background_workload(experiment, background, where.backend.sql_dialect)
    except design.PlaceholderError as exc:
        t = exc.transaction
        raise SpecError(
            str(exc), file=experiment.source_path, key=t.name, line=t.file_line(exc.line)
        ) from None
    sampling = experiment.sampling
    schedule = design.schedule(len(conditions), sampling.samples, sampling.order, sampling.seed)
    types: list[Transaction] = []
    programs: list[Program] = []
    type_ids: list[tuple[int, ...]] = []
    compiled: dict[tuple[tuple[Transaction, ...], str], Program] = {}
    for condition, where in zip(conditions, targets, strict=True):
        transactions = condition.transactions or experiment.workload.transactions
        for t in transactions:
            if all(known.name != t.name for known in types):
                types.append(t)
        _check_protocol_features(experiment, condition, where)
        key = (transactions, where.placeholder_style)
        if key not in compiled:
            workload = dataclasses.replace(experiment.workload, transactions=transactions)
            compiled[key] = compile_program(workload, where.placeholder_style)
        programs.append(compiled[key])
        names = [known.name for known in types]
        type_ids.append(tuple(names.index(t.name) for t in transactions))
    return _Plan(
        conditions, schedule, tuple(programs), tuple(types), tuple(type_ids), targets, servers
    )


def _background_workload(
    experiment: Experiment, background: Background, dialect: SqlDialect
) -> Workload:
    """The workload a background load runs: its transactions, as the target lexes SQL."""
    workload = dataclasses.replace(
        experiment.workload,
        transactions=background.transactions,
        session_sql=background.session_sql,
    )
    own = Condition(levels=(), transactions=background.transactions)
    lexed = design.lexed_as(own, workload, dialect).transactions
    return dataclasses.replace(workload, transactions=lexed or background.transactions)


def condition_targets(
    experiment: Experiment, conditions: Sequence[Condition], base: Target
) -> tuple[tuple[Target, ...], tuple[Target, ...]]:
    """Each condition's server, its level's ``target`` (else the run's ``base``), and its
    target: the server with its level's ``target_params`` put into the URL's query.

    Raises
    ------
    SpecError
        A level's target is not a URL its backend accepts, or the run's targets are of more
        than one kind (their statistics and unit of work would not compare).
    """
    servers: list[Target] = []
    out: list[Target] = []
    parsed: dict[str, Target] = {base.url: base}
    for condition in conditions:
        key = f"target of condition {condition.label}"
        server = condition.target or base.url
        if server not in parsed:
            parsed[server] = parse_target(server, key=key, file=experiment.source_path)
        servers.append(parsed[server])
        if not condition.target_params:
            out.append(parsed[server])
            continue
        url = with_query(_as_written(parsed[server]), condition.target_params)
        if url not in parsed:
            parsed[url] = parse_target(url, key=key, file=experiment.source_path)
        out.append(parsed[url])
    kinds = sorted({t.kind for t in out})
    if len(kinds) > 1:
        raise SpecError(
            f"the run's targets are of {len(kinds)} kinds ({', '.join(kinds)}); one run compares"
            " targets of one kind, so run each kind as its own experiment",
            file=experiment.source_path,
            key="target",
        )
    return tuple(servers), tuple(out)


@dataclass(frozen=True, slots=True)
class _ProtocolUse:
    """Something of pgbench's protocol a condition uses: the backend feature it needs, the
    protocols that carry it, and what to say when either is missing."""

    feature: str
    protocols: tuple[str, ...]
    no_backend: str  # {kind}: the target's kind
    no_protocol: str
    key: str | None = None
    line: int | None = None


def _protocol_uses(experiment: Experiment, condition: Condition) -> list[_ProtocolUse]:
    """What a condition uses of pgbench's protocol beyond plain statements."""
    uses = []
    ran = condition.transactions or experiment.workload.transactions
    if condition.fetch_size or experiment.workload.fetch_size:
        uses.append(
            _ProtocolUse(
                "fetch_size",
                ("extended", "prepared"),
                "{kind} reads a result in the client's process, so a fetch size changes nothing;"
                " remove fetch_size or run on PostgreSQL",
                'the simple protocol returns a whole result at once; use protocol = "extended"'
                ' or "prepared" with fetch_size (as JDBC and libpq do)',
                key=f"fetch_size ({condition.label})",
            )
        )
    piped = next((t for t in ran if t.script.pipelined), None)
    if piped is not None:
        start = next(c for c in piped.script.commands if isinstance(c, PipelineCommand))
        uses.append(
            _ProtocolUse(
                "pipelines",
                ("extended", "prepared"),
                f"transaction {piped.name!r} uses \\startpipeline, which {{kind}} does not have;"
                " run it on PostgreSQL or remove the pipeline",
                f"transaction {piped.name!r} uses \\startpipeline, which needs protocol ="
                f' "extended" or "prepared" (as pgbench refuses -M simple); in {condition.label}',
                line=piped.file_line(start.line),
            )
        )
    joined = next(((t, c) for t in ran for c in t.script.statements if c.compound), None)
    if joined is not None:
        transaction, command = joined
        uses.append(
            _ProtocolUse(
                "compound",
                ("simple",),
                f"transaction {transaction.name!r} joins statements with \\;, which {{kind}}"
                " cannot send as one query; end each statement with ; instead",
                f"transaction {transaction.name!r} joins statements with \\;, which only"
                f' protocol = "simple" sends as one query (as in pgbench); in {condition.label}',
                line=transaction.file_line(command.line),
            )
        )
    return uses


def protocol_errors(experiment: Experiment) -> list[SpecError]:
    """What every target refuses: a fetch size, a pipeline or joined statements under a
    protocol that does not carry them (``check`` without a target says it, as ``run`` would);
    one error per feature and line, from the first condition that has it."""
    out: dict[tuple[str, int | None], SpecError] = {}
    for condition in design.conditions(experiment.factors):
        protocol = condition.protocol or experiment.workload.protocol
        for use in _protocol_uses(experiment, condition):
            if protocol not in use.protocols:
                out.setdefault(
                    (use.feature, use.line),
                    SpecError(
                        use.no_protocol, file=experiment.source_path, key=use.key, line=use.line
                    ),
                )
    return list(out.values())


def _check_protocol_features(experiment: Experiment, condition: Condition, target: Target) -> None:
    """A fetch size, a pipeline or joined statements need a backend that has them and a
    protocol that carries them; refused before the run, naming the key or line."""
    protocol = condition.protocol or experiment.workload.protocol
    if target.backend.driver is not None and protocol != "prepared":
        raise SpecError(
            f"{target.kind} is driven through its Python DB-API module, which has no choice of"
            f' protocol; remove protocol = "{protocol}" (in {condition.label})',
            file=experiment.source_path,
            key="protocol",
        )
    for use in _protocol_uses(experiment, condition):
        problem = None
        if use.feature not in target.backend.features:
            problem = use.no_backend.format(kind=target.kind)
        elif protocol not in use.protocols:
            problem = use.no_protocol
        if problem is not None:
            raise SpecError(problem, file=experiment.source_path, key=use.key, line=use.line)


def _run_shell(
    command: str, env: dict[str, str], timeout_s: float
) -> subprocess.CompletedProcess[str]:
    """``/bin/sh -c command``, its output captured; past ``timeout_s`` the shell and every
    process it started are killed (``subprocess.run`` kills the shell alone, and a ``sleep``
    or a load it started would go on beside the samples) and TimeoutExpired raised."""
    import psutil  # type: ignore[import-untyped]

    with subprocess.Popen(
        ["/bin/sh", "-c", command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        env=env,
    ) as proc:
        try:
            out, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            try:
                tree = psutil.Process(proc.pid).children(recursive=True)
            except psutil.NoSuchProcess:
                tree = []
            proc.kill()
            for child in tree:
                with suppress(psutil.NoSuchProcess):
                    child.kill()
            proc.communicate()
            raise
        except BaseException:
            proc.kill()  # Ctrl-C: the shell goes with the run
            raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


def _as_written(target: Target) -> str:
    """A URL that parses back to ``target``.

    A file target's canonical URL is the engine's ``scheme://`` followed by the absolute path,
    which read again as a URL names a path relative to the working directory; written with
    the documented ``scheme:///`` before the absolute path it names the same file.
    """
    if target.path is None:
        return target.url
    scheme = target.url.split(":", 1)[0]
    query = target.url.partition("?")[2]
    return f"{scheme}:///{target.path}" + (f"?{query}" if query else "")


def with_query(url: str, params: Sequence[tuple[str, str]]) -> str:
    """``url`` with ``params`` set in its query (replacing the same names).

    Values are percent-encoded, a space as ``%20``: libpq and the MySQL client decode ``%XX``
    only, so a ``+`` would reach the server as a plus (``options = "-c jit=off"``).
    """
    if not params:
        return url
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    query.update(params)
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


def _with_type_ids(result: SampleResult, ids: tuple[int, ...]) -> SampleResult:
    """``result`` with its program's transaction indices turned into the run's type ids."""
    if ids == tuple(range(len(ids))):
        return result
    lookup = np.asarray(ids, dtype=np.int16)

    def mapped(table: Mapping[str, Any]) -> dict[str, Any]:
        return {k: (lookup[v] if k == "txn_type" else v) for k, v in table.items()}

    summaries = SampleSummaries(
        mapped(result.summaries.moments),
        mapped(result.summaries.statuses),
        mapped(result.summaries.bins),
        mapped(result.summaries.results),
    )
    return dataclasses.replace(result, columns=mapped(result.columns), summaries=summaries)


def _probe(engine: Engine, target: Target) -> dict[str, Any]:
    """The client's and the server's environment; an unreachable target fails here, before any
    run is written."""
    return client_environment() | server_environment(engine, target)


def _create_run(
    store: Store,
    experiment: Experiment,
    target: Target,
    plan: _Plan,
    environment: dict[str, Any],
    statistics: StatsOptions,
) -> int:
    """Write the run as ``running``, with its settings, conditions and transaction types."""
    sampling = experiment.sampling
    return store.create_run(
        name=experiment.name,
        kind="run",
        description=experiment.description,
        source=experiment.source_path,
        # The file may hold a target URL with a password: store it scrubbed.
        spec_text=redact(experiment.source_text, *plan.passwords),
        target=target.display,
        target_kind=target.kind,
        seed=sampling.seed,
        tool_version=tool_version(),
        settings=_settings(experiment, target, plan, statistics),
        environment=environment,
        conditions=[
            ConditionRow(i, c.label, dict(c.levels), c.session_sql, c.system_sql)
            for i, c in enumerate(plan.conditions)
        ],
        transaction_types=[(t.name, t.weight, t.script.text) for t in plan.types],
    )


def _settings(
    experiment: Experiment, target: Target, plan: _Plan, statistics: StatsOptions
) -> dict[str, Any]:
    """The run's effective plan, as stored in ``runs.settings`` (and compared on resume)."""
    sampling = experiment.sampling
    workload = experiment.workload
    settings: dict[str, Any] = {
        "sessions": workload.sessions,
        "samples": sampling.samples,
        "duration_s": sampling.duration_s,
        "transactions_per_sample": sampling.transactions,
        "warmup_s": sampling.warmup_s,
        "cooldown_s": sampling.cooldown_s,
        "order": sampling.order,
        "seed": sampling.seed,
        # "auto", "all", "none" or the fraction of transactions stored as rows
        "record": sampling.record_setting,
        "rate": workload.rate,
        "on_error": workload.on_error,
        "max_tries": workload.max_tries,
        "protocol": workload.protocol,
        "reconnect_s": workload.reconnect_s,
        SCHEDULE_KEY: [[s.block, s.condition_index] for s in plan.schedule],
    }
    rates = {
        c.label: rate
        for c in plan.conditions
        if (rate := c.rate if c.rate is not None else workload.rate)
    }
    if rates:
        # The open-loop rate each condition asked for: summary and compare show what it reached.
        settings["rates"] = rates
    if any(c.sessions for c in plan.conditions):
        # A level that sets its own sessions (a concurrency sweep): each condition's count.
        settings["sessions_by_condition"] = {
            c.label: c.sessions or workload.sessions for c in plan.conditions
        }
    if sampling.until_decided:
        # The rule the run stops by; _SampleLoop adds how it stopped.
        settings["until_decided"] = {
            "max_samples": sampling.samples,
            "alpha": sampling.alpha,
            "rope_pct": sampling.rope_pct,
            "statistic": "mean latency per sample",
        }
    if any(t.url != target.url for t in plan.targets):
        # Where each condition ran, when a level chose another target (passwords scrubbed).
        settings["targets"] = {
            c.label: t.display for c, t in zip(plan.conditions, plan.targets, strict=True)
        }
    fetch = {c.fetch_size for c in plan.conditions} | {workload.fetch_size}
    if fetch != {None}:
        settings["fetch_size"] = workload.fetch_size
    settings["statistics"] = {
        "enabled": statistics.enabled,
        "wait_interval_s": statistics.wait_interval_s,
        "server_cores": statistics.server_cores,
    }
    if sampling.grace_s is not None or sampling.timeout_s is not None:
        settings["grace_s"] = sampling.effective_grace_s
        settings["timeout_s"] = sampling.timeout_s
    settings["on_degraded"] = sampling.on_degraded
    return settings


@dataclass(frozen=True, slots=True)
class _Resumed:
    """Where a resumed run goes on: the positions of its schedule already done, and the id
    of the next sample."""

    done: frozenset[int]
    next_sample_id: int
    #: condition index -> the samples stored for it (degraded ones too): what numbers the next
    stored: dict[int, int]


#: what of the environment must be the same for a run to be resumed: the server (its kind,
#: version and settings) and the client (the machine and wannabet)
_RESUME_ENVIRONMENT = ("server", "server_version", "host", "cpu", "cpus", "wannabet")


def run_to_resume(store: Store, run_id: int) -> RunInfo:
    """The run ``--resume RUN`` names; a run the file does not hold is refused naming the
    option (exit code 2)."""
    try:
        return store.run(run_id)
    except UnknownRun:
        raise UnknownRun(
            f"--resume {run_id}: no such run in {store.path}; see `wannabet runs`"
        ) from None


def _resume(
    store: Store,
    run_id: int,
    experiment: Experiment,
    target: Target,
    plan: _Plan,
    environment: Mapping[str, Any],
    statistics: StatsOptions,
) -> _Resumed:
    """Check that run ``run_id`` can go on as it started (the same file, settings, target and
    environment), mark it running again and say where it goes on. A difference is refused in
    one line naming it: samples measured on something else are not the same experiment."""
    where = f"--resume {run_id}"
    info = run_to_resume(store, run_id)

    def refuse(why: str) -> SpecError:
        return SpecError(f"run {run_id} cannot be resumed: {why}", key=where, file="command line")

    if info.kind != "run":
        raise refuse("it is an import; only runs of an experiment file go on")
    if info.status == "complete":
        raise refuse("it is complete; nothing is left to run")
    if info.status == "running":
        raise refuse("it is still running; stop it first (Ctrl-C or kill)")
    spec = store.run_spec(run_id)
    if spec is None or spec.spec_text != redact(experiment.source_text, *plan.passwords):
        raise refuse(
            "the experiment file is not the one it started from (its text changed); resume"
            " with that file unchanged"
        )
    if info.target != target.display:
        raise refuse(f"it ran on {info.target}, not {target.display}")
    fresh = json.loads(json.dumps(_settings(experiment, target, plan, statistics)))
    stored = dict(info.settings or {})
    changed = [
        f"{key} {stored.get(key)!r} → {value!r}"
        for key, value in fresh.items()
        if key != "until_decided" and stored.get(key) != value
    ]
    rule = fresh.get("until_decided") or {}
    if any((info.until_decided or {}).get(k) != v for k, v in rule.items()):
        changed.append("until_decided")
    if changed:
        raise refuse(
            "its settings differ from the command line's and the file's: "
            + "; ".join(changed[:3])
            + "; give the same options (and --seed) it started with"
        )
    before = dict(info.environment or {})
    differences = [
        f"{key} {before.get(key)!r} → {environment.get(key)!r}"
        for key in _RESUME_ENVIRONMENT
        if before.get(key) != environment.get(key)
    ]
    was = before.get("server_settings") or {}
    now = environment.get("server_settings") or {}
    differences += [
        f"{key} {was.get(key)!r} → {now.get(key)!r}"
        for key in sorted(set(was) | set(now))
        if was.get(key) != now.get(key)
    ]
    if differences:
        raise refuse(
            "the target's environment changed: "
            + "; ".join(differences[:3])
            + ("; …" if len(differences) > 3 else "")
        )
    samples = store.samples(run_id)
    skip = experiment.sampling.on_degraded == "skip"
    done = frozenset(int(s["position"]) for s in samples if s["status"] == "complete" or skip)
    next_id = max((int(s["sample_id"]) for s in samples), default=-1) + 1
    per_condition: dict[int, int] = {}
    for s in samples:
        per_condition[int(s["condition_id"])] = per_condition.get(int(s["condition_id"]), 0) + 1
    store.resume_run(run_id)
    return _Resumed(done, next_id, per_condition)


def _setup(experiment: Experiment, target: Target, engine: Engine, fresh_target: bool) -> None:
    """Run the setup SQL once; mark the default target as wannabet's once it exists."""
    if experiment.setup.sql:
        where = f"{experiment.source_path or '<experiment>'}: [setup] sql"
        _execute_all(engine, target, experiment.setup.sql, where, experiment.setup.sql_line)
    if fresh_target and target.path is not None:
        mark_default_target(target.path)


class _SampleLoop:
    """The samples of one run in their scheduled order, and what they have shown so far."""

    def __init__(
        self,
        experiment: Experiment,
        store: Store,
        engine: Engine,
        observer: RunObserver,
        plan: _Plan,
        run_id: int,
        warn: Callable[[RunWarning], None] | None = None,
    ) -> None:
        self.experiment = experiment
        self.warn = warn
        self.store = store
        self.engine = engine
        self.observer = observer
        self.plan = plan
        self.run_id = run_id
        #: each target's statistics (by URL), None when statistics are off
        self.collectors: dict[str, Collector | None] = {}
        self.interrupt: _Interrupt | None = None  # set while the samples run
        #: the current condition's held sessions, open while the run is in it
        self.held: list[HeldConnection] = []
        self._background_programs: dict[tuple[tuple[Transaction, ...], str], Program] = {}
        self.done = 0
        #: the id of the next sample stored: samples are numbered in the order they ran, so
        #: without retries the id is the position in the schedule
        self.next_sample_id = 0
        #: condition index -> samples stored for it so far (degraded ones too): a sample's
        #: number within its condition, as every output names it (``off #4 (block 4)``)
        self.stored: dict[int, int] = {}
        #: positions of the schedule not to run (done before a resume)
        self.skip: frozenset[int] = frozenset()
        #: condition index -> block -> the sample's mean latency (ms): what until_decided judges
        self.block_means: dict[int, dict[int, float]] = {}
        #: the sequences after the last finished block (until_decided)
        self.sequences: list[SequentialComparison] = []
        self.succeeded: dict[int, int] = {}  # condition index -> successful transactions so far
        #: the longest transaction any sample of the run completed (ns): the default grace
        #: grows to twice it (see :meth:`grace_ns`)
        self.longest_ns = 0
        # condition index -> its first error, while none succeeded
        self.first_error: dict[int, str] = {}
        sampling = experiment.sampling
        self.warmup_ns = int(sampling.warmup_s * 1e9)
        self.duration_ns = (
            int(sampling.duration_s * 1e9) + self.warmup_ns if sampling.duration_s else 0
        )

    def resume_from(self, resumed: _Resumed) -> None:
        """Go on after the samples a resumed run has: skip their positions, number the next
        sample after them, and (until decided) know their block means again."""
        self.skip = resumed.done
        self.next_sample_id = resumed.next_sample_id
        self.stored = dict(resumed.stored)
        self.done = len(resumed.done)
        if self.experiment.sampling.until_decided:
            with self.store.read() as con:
                moments = queries.sample_moments(con, self.run_id)
            for condition, block, count, total in zip(
                moments.condition_id.tolist(),
                moments.block.tolist(),
                moments.count.tolist(),
                moments.sum_ms.tolist(),
                strict=True,
            ):
                if count:
                    self.block_means.setdefault(condition, {})[block] = total / count

    def run_all(self, interrupt: _Interrupt) -> None:
        """Every scheduled sample; a condition's ``system_sql`` runs when the condition changes."""
        sampling = self.experiment.sampling
        plan = self.plan.schedule
        previous: int | None = None

        def progress(ok: int, errors: int, elapsed_s: float, p99_ms: float) -> None:
            interrupt.check()  # stops the engine, which discards the sample in flight
            self.observer.sample_progress(ok, errors, elapsed_s, p99_ms)

        self.interrupt = interrupt
        self.hooks("before-run")
        try:
            for scheduled in plan:
                if scheduled.position in self.skip:
                    continue
                interrupt.check()
                condition = self.plan.conditions[scheduled.condition_index]
                if scheduled.condition_index != previous:
                    if previous is not None:
                        self.hooks("after-condition", self.plan.conditions[previous])
                        self._end_held(self.plan.conditions[previous])
                    for sql in condition.system_sql:
                        where = f"system_sql of {condition.label}"
                        _execute_all(self.engine, self.target_of(condition), sql, where)
                    for number, command in enumerate(condition.system_shell, start=1):
                        where = f"system_shell {number} of {condition.label}"
                        self.run_hook(
                            Hook("before-condition", shell=command, where=where),
                            "before-condition",
                            condition,
                        )
                    self._open_held(condition)
                    self.hooks("before-condition", condition)
                    previous = scheduled.condition_index
                self.run_scheduled(scheduled, condition, interrupt, progress)
                last = scheduled is plan[-1]
                block_ends = last or plan[scheduled.position + 1].block != scheduled.block
                if (
                    sampling.until_decided
                    and block_ends
                    and self.judge_block(scheduled.block, last)
                ):
                    break
                if sampling.cooldown_s and not last:
                    interrupt.sleep(sampling.cooldown_s)
            if previous is not None:
                self.hooks("after-condition", self.plan.conditions[previous])
                self._end_held(self.plan.conditions[previous])
        finally:
            # A failure or Ctrl-C: close what is still held; the server rolls it back.
            for held in self.held:
                held.close()
            self.held = []
        self.hooks("after-run")

    def judge_block(self, block: int, last: bool) -> bool:
        """After a block of a run that stops when decided: update every comparison's
        confidence sequence, show it, and say whether the run stops here (every comparison is
        decided). How it stopped is written to the run's settings."""
        sampling = self.experiment.sampling
        conditions = self.plan.conditions
        values = {conditions[i].label: means for i, means in self.block_means.items()}
        pairs = [(c.label, conditions[0].label) for c in conditions[1:]]
        if not pairs:
            return False  # one condition: nothing to decide, the run takes every sample
        self.sequences = sequential_comparisons(
            values, pairs=pairs, alpha=sampling.alpha, rope_pct=sampling.rope_pct
        )
        self.observer.block_finished(block, self.sequences)
        decided = all(s.state != "undecided" for s in self.sequences)
        if decided or last:
            self.store.add_settings(
                self.run_id,
                until_decided={
                    "max_samples": sampling.samples,
                    "alpha": sampling.alpha,
                    "rope_pct": sampling.rope_pct,
                    "statistic": "mean latency per sample",
                    "stopped": "decided" if decided else "max_samples",
                    "blocks": block + 1,
                },
            )
        return decided

    def target_of(self, condition: Condition) -> Target:
        """Where ``condition``'s samples, held sessions and SQL go."""
        return self.plan.targets[self.plan.conditions.index(condition)]

    def scrub(self, text: str) -> str:
        """``text`` without any of the run's passwords."""
        return redact(text, *self.plan.passwords)

    def _open_held(self, condition: Condition) -> None:
        """The condition's held sessions: each on its own connection, left open."""
        for number, spec in enumerate(condition.held, start=1):
            where = f"held session {number} of {condition.label}"
            held = self.engine.hold(self.target_of(condition))
            self.held.append(held)
            try:
                held.execute(spec.sql)
            except QueryError as exc:
                raise QueryError(f"{where} failed: {exc}", code=exc.code) from None

    def _end_held(self, condition: Condition) -> None:
        """End the condition's held sessions as asked: ROLLBACK or COMMIT, then close."""
        for number, (spec, held) in enumerate(zip(condition.held, self.held, strict=True), 1):
            try:
                held.execute("COMMIT" if spec.end == "commit" else "ROLLBACK")
            except QueryError as exc:
                where = f"held session {number} of {condition.label}"
                raise QueryError(f"{where}: {spec.end} failed: {exc}", code=exc.code) from None
            held.close()
        self.held = []

    def _check_interrupt(self) -> None:
        if self.interrupt is not None:
            self.interrupt.check()

    def hooks(
        self,
        when: str,
        condition: Condition | None = None,
        scheduled: ScheduledSample | None = None,
    ) -> list[dict[str, Any]]:
        """Run the experiment's hooks of ``when``, in file order; what each did, for the record.

        SQL goes to the target statement by statement (a failure is a ``QueryError`` naming the
        hook). A shell command runs with ``/bin/sh -c`` and its output captured, told where the
        run is by ``WANNABET_*`` variables; a non-zero exit or its time limit stops the run with
        a :class:`HookError` naming the hook and the command's last line of output.
        """
        return [
            self.run_hook(hook, when, condition, scheduled)
            for hook in self.experiment.hooks
            if hook.when == when
        ]

    def run_hook(
        self,
        hook: Hook,
        when: str,
        condition: Condition | None = None,
        scheduled: ScheduledSample | None = None,
    ) -> dict[str, Any]:
        """One hook (or a level's ``system_shell``, run as one); what it did, for the record."""
        # A condition's and a sample's hooks go to its target; the run's to every target.
        targets = (self.target_of(condition),) if condition else self.plan.distinct_servers
        start = time.perf_counter()
        output = ""
        if hook.sql is not None:
            for target in targets:
                _execute_all(self.engine, target, hook.sql, f"{hook.where} ({when})")
        else:
            assert hook.shell is not None
            env = {
                # The target's password is not the hook's: a client's password variable
                # (PGPASSWORD) is left out, as the URL is.
                **{k: v for k, v in os.environ.items() if k not in password_variables()},
                "WANNABET_HOOK": when,
                "WANNABET_RUN_ID": str(self.run_id),
                "WANNABET_TARGET_KIND": targets[0].kind,
                # A file that ships its own scripts finds them from any current directory.
                "WANNABET_EXPERIMENT_DIR": _experiment_dir(self.experiment),
            }
            if condition is not None:
                env["WANNABET_CONDITION"] = condition.label
            if scheduled is not None:
                env["WANNABET_SAMPLE"] = str(scheduled.position)
                env["WANNABET_BLOCK"] = str(scheduled.block)
            try:
                proc = _run_shell(hook.shell, env, hook.timeout_s)
            except subprocess.TimeoutExpired:
                self._check_interrupt()
                raise HookError(
                    f"{hook.where} ({when}): still running after {hook.timeout_s:g} s, its"
                    " timeout; make the command faster or raise timeout"
                ) from None
            output = self.scrub(proc.stdout)
            if proc.returncode != 0:
                # Ctrl-C reaches the hook too: the run was interrupted, the hook did not fail.
                self._check_interrupt()
                last = (output.strip().splitlines() or ["no output"])[-1][:300]
                raise HookError(
                    f"{hook.where} ({when}): the command exited with {proc.returncode}:"
                    f" {last}; fix the command (it ran as /bin/sh -c)"
                )
        return {
            "when": when,
            "hook": hook.where,
            "seconds": round(time.perf_counter() - start, 6),
            "end_ns": time.time_ns(),
            "output": output[-2000:],
        }

    def run_scheduled(
        self,
        scheduled: ScheduledSample,
        condition: Condition,
        interrupt: _Interrupt,
        progress: Progress,
    ) -> None:
        """One scheduled sample, and what ``on_degraded`` says to do when it is degraded: run
        it again once (a degraded retry stops the run), go on, or stop. The stop is a
        TargetError: the run ends ``failed``, with every finished sample kept."""
        policy = self.experiment.sampling.on_degraded
        reason = self.run_one(scheduled, condition, interrupt, progress, retry=policy == "retry")
        again = False
        if reason is not None and policy == "retry":
            again = True
            reason = self.run_one(scheduled, condition, interrupt, progress, retry=False)
        if reason is None or policy == "skip":
            return
        # The sample just stored: its number within its condition.
        name = self.sample_name(scheduled, condition, 0)
        raise TargetError(
            f"sample {name} was degraded{' again' if again else ''}: {reason};"
            f" the run stops (on_degraded = {policy!r}) with its finished samples kept; once"
            f" the server is well, continue it with `wannabet run FILE --resume {self.run_id}`"
        )

    def grace_ns(self) -> int:
        """How long the next sample may run past its deadline: ``grace`` when the file sets it,
        else the default (a tenth of the deadline, 1 s to 60 s) or, when longer, twice the
        longest transaction a sample of this run has completed, at most 10 minutes. A workload
        whose transactions take seconds needs that long to finish the one in flight at the
        deadline; a server that stops answering completes nothing, so it cannot lengthen it."""
        sampling = self.experiment.sampling
        grace_s = sampling.effective_grace_s
        if sampling.grace_s is None:
            grace_s = max(grace_s, min(2.0 * self.longest_ns / 1e9, _MAX_LEARNED_GRACE_S))
        return int(grace_s * 1e9)

    def sample_name(self, scheduled: ScheduledSample, condition: Condition, ahead: int) -> str:
        """The sample as every output names it (``off #4 (block 4)``); ``ahead`` is 1 for a
        sample about to be stored, 0 for the one just stored."""
        number = self.stored.get(scheduled.condition_index, 0) + ahead
        return sample_name(self.scrub(condition.label), number, scheduled.block + 1)

    def run_one(
        self,
        scheduled: ScheduledSample,
        condition: Condition,
        interrupt: _Interrupt,
        progress: Progress,
        *,
        retry: bool = False,
    ) -> str | None:
        """One sample: run it with its statistics, write it, count its outcome. Returns why it
        is degraded, or None (``retry``: the warning says it will be run again)."""
        experiment, engine, target = self.experiment, self.engine, self.target_of(condition)
        collector = self.collectors.get(target.url)
        program = self.plan.programs[scheduled.condition_index]
        sampling, workload = experiment.sampling, experiment.workload
        warmup_ns = self.warmup_ns
        number = self.stored.get(scheduled.condition_index, 0) + 1
        self.observer.sample_started(scheduled, condition, number)
        prepared = self.hooks("before-sample", condition, scheduled)
        request = SampleRequest(
            program=program,
            sessions=condition.sessions or workload.sessions,
            session_sql=tuple(fill(sql, dict(condition.levels)) for sql in workload.session_sql)
            + condition.session_sql,
            duration_ns=self.duration_ns,
            max_transactions=sampling.transactions or 0,
            seed=sample_seed(sampling.seed, scheduled.position),
            on_error=workload.on_error,
            max_tries=workload.max_tries,
            rate=(condition.rate if condition.rate is not None else workload.rate) or 0.0,
            warmup_ns=warmup_ns,
            record=sampling.record,
            max_rows=sampling.max_rows,
            protocol=condition.protocol or workload.protocol,
            fetch_size=condition.fetch_size or workload.fetch_size or 0,
            deadline_ns=int((sampling.deadline_s or 0.0) * 1e9),
            grace_ns=self.grace_ns(),
            reconnect_ns=int((workload.reconnect_s or 0.0) * 1e9),
        )
        background = condition.background or experiment.background
        load = None
        if background is not None:
            background_request = self._background_request(background, request, target)
            load = _BackgroundLoad(engine, target, background_request)
        try:
            if load is not None:
                load.start()  # before the statistics: its sessions' set-up is not the sample's
            if collector is not None:
                # The samplers' wait loops give up on Ctrl-C instead of delaying it.
                collector.start(interrupt.interrupted)
            interrupt.check()
            try:
                result = engine.run_sample(target, request, progress)
            except BaseException:
                if load is not None:
                    load.stop(report=False)  # the sample's own error is the one to report
                raise
            if load is not None:
                load.stop()
            result = _with_type_ids(result, self.plan.type_ids[scheduled.condition_index])
        except BaseException as exc:
            if collector is not None:
                collector.abandon()
            if isinstance(exc, WannabetError) and interrupt.interrupted():
                # Ctrl-C came while the engine waited on the server (its sessions connecting
                # to a frozen one): that wait's error is not why the run ended.
                raise KeyboardInterrupt from None
            if isinstance(exc, QueryError):
                ran = condition.transactions or workload.transactions
                raise _located(exc, experiment, ran) from None
            raise
        # Said before the statistics are read: on a frozen server that read waits for its own
        # deadline, and the user should hear of the stuck sample within its grace.
        reason = degraded_reason(result)
        if reason is not None and self.warn is not None:
            self.warn(
                RunWarning(
                    f"sample {self.sample_name(scheduled, condition, 1)} is degraded: {reason}",
                    "the analyses leave it out (--include-degraded takes it in); "
                    + _POLICY_ADVICE[
                        "retry" if retry else "skip" if sampling.on_degraded == "skip" else "stop"
                    ],
                )
            )
        measured_stats = (
            collector.stop(result, interrupt.interrupted) if collector is not None else None
        )
        stats = measured_stats.to_json() if measured_stats is not None else None
        if collector is None:
            # What a bulk load loaded is its answer, not a statistic: kept with statistics
            # off too, where the engine's section has it otherwise.
            copied = {k: int(v) for k, v in result.counters.items() if k in _COPY_COUNTERS}
            if copied:
                stats = {"engine": copied}
        if prepared:
            # What the before-sample hooks did (time, output) is kept with the sample.
            stats = {**(stats or {}), "hooks": prepared}
        if load is not None:
            stats = {**(stats or {}), "background": load.record()}
        if result.generators:
            # Who ran the sample: per load generator its host, sessions, clock and start.
            stats = {
                **(stats or {}),
                "generators": {
                    "start_skew_ns": result.start_skew_ns,
                    "start_tolerance_ns": result.start_tolerance_ns,
                    "generators": [dict(g) for g in result.generators],
                },
            }
        if condition.held:
            # The sample ran while these were held open on connections of their own.
            held = [{"sql": h.sql, "end": h.end} for h in condition.held]
            stats = {**(stats or {}), "held": held}
        self.longest_ns = max(self.longest_ns, _longest_service_ns(result))
        # Samples are numbered in the order they ran; the position is their place in the
        # schedule (the same for a degraded sample and its retry).
        sample_id = self.next_sample_id
        self.next_sample_id += 1
        index = scheduled.condition_index
        self.stored[index] = self.stored.get(index, 0) + 1
        row = SampleRow(
            sample_id=sample_id,
            condition_id=scheduled.condition_index,
            block=scheduled.block,
            position=scheduled.position,
            t0_ns=result.t0_ns,
            measure_start_ns=result.t0_ns + warmup_ns,
            end_ns=result.end_ns,
            warmup_s=sampling.warmup_s,
            sessions_lost=result.sessions_lost,
            error_messages=result.error_messages,
            stats=stats,
            status="complete" if reason is None else "degraded",
            reason=reason,
        )
        recorded = sampling.record
        transactions = int(result.summaries.statuses["count"].sum())
        if sampling.max_rows > 0 and transactions > 0:
            # A capped sample kept a uniform subset: the share it kept, not the setting.
            recorded = min(1.0, result.count / transactions)
        # A Ctrl-C here waits until the sample is written: it is finished, so it is kept.
        self.store.add_sample(
            self.run_id,
            row,
            result.columns,
            result.error_codes,
            summaries=result.summaries,
            recorded=recorded,
            stacks=measured_stats.stacks if measured_stats is not None else (),
        )
        self.done += 1
        if self.done == 1 and sampling.max_rows == 0:
            self._warn_of_many_rows(result.count)
        window_s = max(result.end_ns - row.measure_start_ns, 1) / 1e9
        # From the summaries, which count every transaction whether its row was kept or not.
        statuses = result.summaries.statuses
        ok = statuses["status"] == 0
        committed = int(statuses["count"][ok & ~statuses["warmup"]].sum())
        if reason is None or not retry:  # a retried attempt is not one of the run's samples
            self.observer.sample_finished(scheduled, result, committed / window_s)
        if reason is not None:
            self.hooks("after-sample", condition, scheduled)
            return reason
        if sampling.until_decided:
            moments = result.summaries.moments
            measured = ~moments["warmup"]
            count = int(moments["count"][measured].sum())
            if count:
                mean = float(moments["sum_ms"][measured].sum()) / count
                self.block_means.setdefault(scheduled.condition_index, {})[scheduled.block] = mean
        self.hooks("after-sample", condition, scheduled)
        self._tally(
            scheduled.condition_index,
            result,
            succeeded=int(statuses["count"][ok].sum()),
            transactions=int(statuses["count"].sum()),
        )
        return None

    def _background_request(
        self, background: Background, measured: SampleRequest, target: Target
    ) -> SampleRequest:
        """The background's sample: its own program and sessions, no rows kept, and a time
        limit past the measured sample's (it is stopped when that one ends)."""
        key = (background.transactions, target.placeholder_style)
        if key not in self._background_programs:
            workload = _background_workload(self.experiment, background, target.backend.sql_dialect)
            self._background_programs[key] = compile_program(workload, target.placeholder_style)
        limit_ns = measured.duration_ns + 5_000_000_000 if measured.duration_ns else 86_400 * 10**9
        return SampleRequest(
            program=self._background_programs[key],
            sessions=background.sessions,
            session_sql=background.session_sql,
            duration_ns=limit_ns,
            deadline_ns=limit_ns,
            grace_ns=measured.grace_ns,
            max_transactions=0,
            seed=measured.seed ^ 0x5EED,
            on_error="continue",
            rate=background.rate or 0.0,
            record=0.0,
            protocol=measured.protocol,
            fetch_size=measured.fetch_size,
            # On PostgreSQL its own application name: the statistics sampler counts the run's
            # sessions by theirs, and these are not the measured ones.
            role="background",
        )

    def _warn_of_many_rows(self, rows: int) -> None:
        """After the first sample: suggest storing fewer rows when the run would store more
        than :data:`MANY_ROWS` (its first sample's rows times its samples)."""
        samples = len(self.plan.schedule)
        projected = rows * samples
        if self.warn is None or projected <= MANY_ROWS:
            return
        self.warn(
            RunWarning(
                f"this run will store about {projected:,} transaction rows ({rows:,} in its"
                f" first sample × {samples} samples), slow to write and to analyse",
                'set [sampling] record = "auto" (at most 1,000,000 rows per sample), 0.01 (a'
                ' seeded 1% of the rows) or "none" in the experiment file, or --record auto;'
                " the per-sample summaries count every transaction either way",
            )
        )

    def _tally(
        self, index: int, result: SampleResult, *, succeeded: int, transactions: int
    ) -> None:
        """Count the sample's successes; stop the run when every condition has only failed."""
        so_far, first_error = self.succeeded, self.first_error
        so_far[index] = so_far.get(index, 0) + succeeded
        # No success so far and transactions in this sample: they all failed.
        if not so_far[index] and transactions and index not in first_error:
            message = next(iter(result.error_messages.values()), "no message")
            first_error[index] = self.scrub(message)
        if len(first_error) == len(self.plan.conditions) and not any(so_far.values()):
            # Every condition has run, with failures and not one success (a sample
            # without arrivals proves nothing): the script or the target is broken,
            # and more samples would only repeat the error.
            raise TargetError(
                f"no transaction succeeded in the first sample of any condition, so"
                f" the run stops: {first_error[index]}; fix the script or the target"
            )


def _longest_service_ns(result: SampleResult) -> int:
    """The longest successful transaction of a sample, from its start (not its intended start:
    an open loop's schedule lag is not time a transaction in flight needs to finish); from the
    summaries' latencies when no row was kept."""
    cols = result.columns
    ok = np.asarray(cols["status"]) == 0
    if ok.any():
        took = np.asarray(cols["end_ns"])[ok] - np.asarray(cols["start_ns"])[ok]
        return int(took.max())
    longest = result.summaries.moments["max_ns"]
    return int(longest.max()) if len(longest) else 0


def _experiment_dir(experiment: Experiment) -> str:
    """The experiment file's directory (absolute), or the current one for a file given as
    text (``parse_experiment`` without a path)."""
    source = Path(experiment.source_path) if experiment.source_path else None
    return str((source.parent if source is not None and source.is_file() else Path.cwd()).resolve())


#: the most the default grace grows to from the transactions seen (a longer one: set ``grace``)
_MAX_LEARNED_GRACE_S = 600.0

#: what happens after a degraded sample, per ``on_degraded``
_POLICY_ADVICE = {
    "retry": "it is run again once",
    "skip": "the run goes on (on_degraded = 'skip')",
    "stop": "the run stops",
}


#: the engine's counters of a sample's `\\copy` loads
_COPY_COUNTERS = ("copy_rows", "copy_bytes")


def degraded_reason(result: SampleResult) -> str | None:
    """Why a sample is not a sound measurement of its condition, or None: it ran past its
    deadline and grace (statements cancelled, sessions given up on) or lost sessions (a
    server restart ends every session)."""
    reasons = []
    statuses = result.summaries.statuses
    timeouts = int(statuses["count"][statuses["status"] == STATUS_NAMES.index("timeout")].sum())
    if result.overran:
        reasons.append(
            f"it ran past its deadline and grace, and {timeouts:,} statement(s) still running"
            " were cancelled (status timeout)"
        )
    if result.sessions_stuck:
        reasons.append(
            f"{result.sessions_stuck} session(s) did not return even after the cancel and were"
            " given up on (their transactions are not recorded): the server may be stuck"
        )
    if result.reconnects:
        reasons.append(
            f"sessions lost their connection and got it back {result.reconnects} time(s)"
            " (reconnect)"
        )
    lost_generators = [g for g in result.generators if g.get("lost")]
    if lost_generators:
        names = ", ".join(f"generator {g['generator']} on {g['host']}" for g in lost_generators)
        reasons.append(f"{names} was lost ({lost_generators[0]['lost']})")
    elif result.sessions_lost:
        reasons.append(f"{result.sessions_lost} session(s) lost their connection")
    if result.start_tolerance_ns and result.start_skew_ns > result.start_tolerance_ns:
        reasons.append(
            f"its load generators started {result.start_skew_ns / 1e6:.1f} ms apart, more than"
            f" the {result.start_tolerance_ns / 1e6:g} ms tolerance"
        )
    return "; ".join(reasons) or None


class _StopBackground(Exception):
    """Raised from the background sample's progress call to end it."""


class _BackgroundLoad:
    """An unmeasured load on a thread of its own while one sample runs (``[background]``).

    The engine releases the GIL while a sample runs, so the two samples run side by side. The
    background is stopped through its progress call, which raises once the measured sample is
    over; what it did is the last progress it reported: committed and failed transactions, its
    time and its p99, recorded with the sample and used by no analysis.
    """

    #: how long the background's sessions may take to connect and start
    START_TIMEOUT_S = 30.0

    def __init__(self, engine: Engine, target: Target, request: SampleRequest) -> None:
        self.engine = engine
        self.target = target
        self.request = request
        self.last: tuple[int, int, float, float] = (0, 0, 0.0, 0.0)
        self.error: BaseException | None = None
        self._started = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wannabet-background", daemon=True)

    def _progress(self, ok: int, errors: int, elapsed_s: float, p99_ms: float) -> None:
        self.last = (ok, errors, elapsed_s, p99_ms)
        self._started.set()
        if self._stopping.is_set():
            raise _StopBackground

    def _run(self) -> None:
        try:
            self.engine.run_sample(self.target, self.request, self._progress)
        except _StopBackground:
            pass
        except BaseException as exc:  # reported by start() or stop() on the runner's thread
            self.error = exc
        finally:
            self._started.set()

    def start(self) -> None:
        """Start it and wait until its sessions run; its failure to start is the run's."""
        self._thread.start()
        self._started.wait(self.START_TIMEOUT_S)
        if self.error is not None:
            raise self.error
        if not self._started.is_set():
            self.stop()
            raise QueryError(
                f"[background]: its sessions did not start within {self.START_TIMEOUT_S:g} s"
            )

    def stop(self, *, report: bool = True) -> None:
        """Stop it (within one progress tick) and wait; with ``report``, raise its error."""
        self._stopping.set()
        self._thread.join()
        if report and self.error is not None:
            raise self.error

    def record(self) -> dict[str, Any]:
        ok, errors, seconds, p99_ms = self.last
        return {
            "sessions": self.request.sessions,
            "committed": ok,
            "errors": errors,
            "seconds": round(seconds, 6),
            "tps": ok / seconds if seconds > 0 else None,
            "p99_ms": p99_ms,
        }


def _interrupted(store: Store, run_id: int, done: int, by: int) -> Interrupted:
    """Close the run as ``interrupted``; the error to raise, with the shell's exit code."""
    how = "by the user" if by == signal.SIGINT else f"by {signal.Signals(by).name}"
    store.finish_run(run_id, "interrupted", f"interrupted {how} after {done} samples")
    error = Interrupted(
        f"interrupted {how}: run {run_id} kept {done} finished sample{'s' if done != 1 else ''}"
    )
    error.exit_code = 128 + by  # the shell's convention: 130 for Ctrl-C, 143 for SIGTERM
    return error


def _finish(run: _SampleLoop) -> RunOutcome:
    """Close the run as ``complete``; name the conditions in which nothing succeeded."""
    run.store.finish_run(run.run_id, "complete")
    failed = tuple(
        (run.plan.conditions[i].label, run.first_error[i])
        for i in sorted(run.first_error)
        if not run.succeeded[i]
    )
    return RunOutcome(
        run_id=run.run_id, status="complete", samples=run.done, failed_conditions=failed
    )


@dataclass(frozen=True, slots=True)
class Finding:
    """What ``check --target`` found: an error, or a note (something it could not check)."""

    error: bool
    message: str
    #: a note that a statement of the workload could not be checked
    unchecked: bool = False


def dry_run_experiment(experiment: Experiment, target: Target, engine: Engine) -> list[Finding]:
    """``check --target``: every statement of every condition prepared against the target,
    after the set-up and the condition's SQL, in one transaction that is rolled back; nothing
    of the workload runs and nothing is kept. Every refusal is reported with its file line."""
    plan = _plan(experiment, target)
    # A database file the check opens for the first time (SQLite, DuckDB) is not kept either.
    made = [
        path
        for t in {t.url: t for t in plan.targets}.values()
        if (path := database_file(t)) is not None and not path.exists()
    ]
    try:
        return _dry_run(experiment, target, engine, plan)
    finally:
        for path in made:
            for suffix in ("", "-journal", "-wal", "-shm", ".wal"):
                path.with_name(path.name + suffix).unlink(missing_ok=True)


def _dry_run(experiment: Experiment, target: Target, engine: Engine, plan: _Plan) -> list[Finding]:
    where = experiment.source_path or "<experiment>"
    dialect = target.backend.sql_dialect
    setup = (
        split_sql(experiment.setup.sql, dialect)
        if experiment.setup and experiment.setup.sql
        else []
    )
    dry: list[DryCondition] = []
    statements: list[list[tuple[Transaction, SqlCommand]]] = []
    for condition, on_target in zip(plan.conditions, plan.targets, strict=True):
        batches = (*condition.system_sql, *experiment.workload.session_sql, *condition.session_sql)
        ran = condition.transactions or experiment.workload.transactions
        # Statements joined with \; cannot be prepared (the server takes one at a time); a
        # \copy's table and columns are checked by a SELECT of them that reads no row.
        statements.append(
            [
                (t, c)
                for t in ran
                for c in (*t.script.statements, *_copy_probes(t))
                if not c.compound
            ]
        )
        dry.append(
            (
                [s for batch in batches for s in split_sql(batch, on_target.backend.sql_dialect)],
                [
                    (c.render(on_target.placeholder_style)[0], len(c.params))
                    for _, c in statements[-1]
                ],
            )
        )
    # Each target gets the set-up and its own conditions.
    condition_results: list[Any] = [None] * len(dry)
    joined = {
        (t.name, t.file_line(c.line))
        for condition in plan.conditions
        for t in condition.transactions or experiment.workload.transactions
        for c in t.script.statements
        if c.compound
    }
    findings: list[Finding] = [
        Finding(
            False,
            f"{where}{'' if line is None else f':{line}'}: transaction {name!r}: statements"
            " joined with \\; cannot be prepared on their own; not checked",
            unchecked=True,
        )
        for name, line in sorted(joined, key=lambda x: (x[0], x[1] or 0))
    ]
    targets = tuple({t.url: t for t in plan.targets}.values())
    several = len(targets) > 1
    untried: set[str] = set()
    for server in targets:
        mine = [i for i, t in enumerate(plan.targets) if t.url == server.url]
        if "transactional_ddl" in server.backend.features:
            setup_result, results = engine.dry_run(server, setup, [dry[i] for i in mine])
        else:
            # DDL and settings commit at once there (MySQL): trying them would keep them.
            # Only the statements are prepared, against the database as it is now.
            untried.add(server.url)
            setup_result, results = engine.dry_run(server, [], [([], dry[i][1]) for i in mine])
            findings.append(
                Finding(
                    False,
                    f"{where}: {server.kind} commits DDL and settings at once, so check did not"
                    f" run the [setup] or the conditions' SQL on {server.display}; the statements"
                    " were prepared against its tables as they are now",
                )
            )
        for i, result in zip(mine, results, strict=True):
            condition_results[i] = result
        on = f" on {server.display}" if several else ""
        for k, (message, code) in enumerate(setup_result, start=1):
            if message is None:
                continue
            first = _first_line(setup[k - 1])
            if refused_in_transaction(server, message, code):
                note = f"{where}: [setup] statement {k} ({first!r}) cannot run inside the dry run's"
                findings.append(Finding(False, note + f" transaction{on}; not checked"))
            else:
                what = f"{where}: [setup] statement {k} ({first!r}) failed{on}"
                findings.append(Finding(True, f"{what}: {message}"))
    # The same refusal in several conditions is reported once, naming the first of them.
    refused: dict[tuple[str, str], list[str]] = {}
    for index, condition in enumerate(plan.conditions):
        label = condition.label
        sql, _ = dry[index]
        ran_results, prepared = condition_results[index]
        for k, (message, code) in enumerate(ran_results):
            if message is not None and not refused_in_transaction(
                plan.targets[index], message, code
            ):
                what = f"{where}: SQL of condition {label} ({_first_line(sql[k])!r}) failed"
                refused.setdefault((what, message), []).append(label)
        provided: dict[str, set[str]] = {}
        skipped_setup = plan.targets[index].url in untried and bool(setup)
        for (transaction, command), (message, got) in zip(statements[index], prepared, strict=True):
            if message is not None and skipped_setup:
                line = transaction.file_line(command.line)
                untried_note = Finding(
                    False,
                    f"{where}{'' if line is None else f':{line}'}: {transaction.name!r} was"
                    f" refused ({message}); the [setup], not run, may be what it needs",
                    unchecked=True,
                )
                if untried_note not in findings:  # once, not once per condition
                    findings.append(untried_note)
            elif message is not None:
                line = transaction.file_line(command.line)
                at = "" if line is None else f":{line}"
                if command in transaction.script.statements:
                    k = transaction.script.statements.index(command) + 1
                    what = (
                        f"{where}{at}: the database refused statement {k} of {transaction.name!r}"
                    )
                else:
                    what = f"{where}{at}: the database refused the \\copy of {transaction.name!r}"
                refused.setdefault((what, message), []).append(label)
            elif command.capture is not None:
                prefix = command.capture[1]
                provided.setdefault(transaction.name, set()).update(prefix + c for c in got)
        for transaction in condition.transactions or experiment.workload.transactions:
            names = provided.get(transaction.name)
            missing = [v for v in transaction.script.captured_variables if v not in (names or ())]
            if missing and names is not None:
                what = (
                    f"{where}: transaction {transaction.name!r}: variable :{missing[0]} is used"
                    " but no \\gset or \\aset result has a column of that name"
                )
                refused.setdefault((what, "columns: " + ", ".join(sorted(names))), []).append(label)
    for (what, message), labels in refused.items():
        scope = ""
        if len(plan.conditions) > 1:
            more = f" and {len(labels) - 1} more" if len(labels) > 1 else ""
            scope = f" (in {labels[0]}{more})"
        findings.append(Finding(True, f"{what}{scope}: {message}"))
    return findings


def _copy_probes(transaction: Transaction) -> list[SqlCommand]:
    """Per ``\\copy``, a SELECT of its table's columns that reads no row: preparing it checks
    that the table and the columns exist (the load itself cannot be prepared)."""
    probes = []
    for c in transaction.script.commands:
        if isinstance(c, CopyCommand):
            sql = f"SELECT {', '.join(c.columns) or '*'} FROM {c.table} WHERE false"
            probes.append(SqlCommand(text=sql, parts=(sql,), params=(), line=c.line))
    return probes


def _first_line(sql: str) -> str:
    return sql.strip().split("\n", 1)[0][:60]


def _located(
    exc: QueryError, experiment: Experiment, transactions: Sequence[Transaction]
) -> QueryError:
    """A statement the database refused to prepare, named by its line in the experiment file
    (``transactions``: the ones the failing sample ran)."""
    k, name, why = exc.statement, exc.transaction, exc.reason
    if k is None or name is None or why is None:
        return exc
    for transaction in transactions:
        statements = transaction.script.statements
        if transaction.name == name and 0 < k <= len(statements):
            where = experiment.source_path or "<experiment>"
            line = transaction.file_line(statements[k - 1].line)
            if line is not None:
                where += f":{line}"
            return QueryError(
                f"{where}: the database refused statement {k} of transaction {name!r}: {why};"
                " fix the SQL",
                code=exc.code,
                index=exc.index,
                statement=k,
                transaction=name,
                reason=why,
            )
    return exc


#: the signals that stop a run cleanly: Ctrl-C, kill/timeout/systemd, a closed terminal
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Interrupt:
    """Ctrl-C (or SIGTERM, SIGHUP), taken when it is safe: between samples, or through the
    engine's progress call.

    Raising KeyboardInterrupt wherever the signal lands could cut a results-file write in half;
    instead the handler records the request, and the runner raises at the next safe point (at
    most a progress tick, about 0.25 s, later). A second signal raises at once.
    """

    def __init__(self, stopped_by: list[int]) -> None:
        self.requested = False
        self.stopped_by = stopped_by

    def handle(self, signum: int, frame: object) -> None:
        self.stopped_by[0] = signum
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True

    def interrupted(self) -> bool:
        return self.requested

    def check(self) -> None:
        if self.requested:
            raise KeyboardInterrupt

    def sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.check()
            time.sleep(min(0.1, max(deadline - time.monotonic(), 0)))
        self.check()


@contextmanager
def _deferred_interrupt(stopped_by: list[int]) -> Iterator[_Interrupt]:
    interrupt = _Interrupt(stopped_by)
    if threading.current_thread() is not threading.main_thread():
        yield interrupt  # signal handlers belong to the main thread; leave Ctrl-C as it is
        return
    # A signal the caller ignores (SIGHUP under nohup) stays ignored.
    caught = [s for s in STOP_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]
    previous = {s: signal.signal(s, interrupt.handle) for s in caught}
    try:
        yield interrupt
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _execute_all(
    engine: Engine, target: Target, sql: str, where: str, first_line: int | None = None
) -> None:
    """Run a SQL batch statement by statement on one connection; ``first_line``, the file line
    of the batch's first line, lets an error name the failing statement's line.

    Statement by statement lets PostgreSQL run commands that refuse the implicit transaction of
    a multi-statement query (ALTER SYSTEM, VACUUM, CREATE DATABASE), and lets the error name the
    statement that failed; one connection keeps BEGIN ... COMMIT, SET and temporary tables
    working across statements.
    """
    statements = split_sql(sql, target.backend.sql_dialect)
    try:
        engine.execute_many(target, statements)
    except QueryError as exc:
        index = exc.index
        if index is None or not 0 <= index < len(statements):
            raise QueryError(f"{where} failed: {exc}", code=exc.code) from None
        first = _first_line(statements[index])
        line = _statement_line(sql, statements, index, first_line)
        at = where if line is None else _at_line(where, line)
        raise QueryError(
            f"{at}, statement {index + 1} ({first!r}) failed: {exc}", code=exc.code
        ) from None


def _statement_line(
    sql: str, statements: list[str], index: int, first_line: int | None
) -> int | None:
    """The file line where ``statements[index]`` (split from ``sql`` in order) begins."""
    if first_line is None:
        return None
    at = 0
    for k, statement in enumerate(statements[: index + 1]):
        found = sql.find(statement.strip(), at)
        if found < 0:
            return None
        if k == index:
            return first_line + sql.count("\n", 0, found)
        at = found + len(statement.strip())
    return None


def _at_line(where: str, line: int) -> str:
    """``file: [setup] sql`` at ``line`` → ``file:line: [setup] sql``."""
    file, sep, rest = where.partition(": ")
    return f"{file}:{line}: {rest}" if sep else f"{where} (line {line})"
