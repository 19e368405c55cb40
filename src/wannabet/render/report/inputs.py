"""What the HTML report is given: plain, frozen data, gathered by :mod:`wannabet.reports`.

The renderer (``build.py``, ``charts.py``, ``page.py``) turns these into charts and a page; it
reads no results file and runs no analysis, so it can be tested with hand-made inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from wannabet.documents import ComparisonDocument
from wannabet.store import ConditionRow, RunInfo

if TYPE_CHECKING:
    from wannabet.analysis.bayes import BayesAnalysis
    from wannabet.analysis.relations import RelationActivity
    from wannabet.profiling import RunProfiles
    from wannabet.store.queries import GeneratorSummary
    from wannabet.verdicts import ComparisonOptions, Metric

#: The five quantiles of box plots and per-group summaries.
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


@dataclass(frozen=True, slots=True)
class SamplePoint:
    """One sample in run order.

    ``position`` (0-based in the run) and ``block`` (0-based, as stored) are the stored order;
    ``number`` is how every output names the sample: its rank within its condition, 1-based,
    in run order (``off #4``; see :func:`wannabet.render.format.sample_name`).
    """

    run_id: int
    condition: str
    position: int
    block: int
    number: int
    value: float | None
    transactions: int
    errors: int
    tps: float | None


@dataclass(frozen=True, slots=True)
class Quantiles:
    """p5, p25, p50, p75, p95 of the latencies of one group, and its size."""

    n: int
    values: tuple[float, float, float, float, float]


@dataclass(frozen=True, slots=True)
class LatencyData:
    """Reduced latencies of one condition (successful transactions only)."""

    n: int
    log_counts: tuple[int, ...]
    linear_counts: tuple[int, ...]
    linear_beyond: int
    log_density: tuple[float, ...] | None
    kde_n: int  # latencies behind the density: min(n, KDE_SUBSAMPLE)
    kde_bandwidth: float | None  # kernel sd in decades of ms (Scott's rule); None without one
    quantiles: Quantiles
    min_ms: float
    max_ms: float
    by_session: Mapping[int, Quantiles]
    by_period: Mapping[int, Quantiles]
    heat: tuple[tuple[int, int, int], ...]  # (time bucket, latency bucket, count); () untimed
    heat_bucket_s: float  # seconds per time bucket (the run's span / HEAT_TIME_BINS)


@dataclass(frozen=True, slots=True)
class ConditionData:
    """Everything the report draws for one condition (``label`` as the comparison names it)."""

    label: str
    run_id: int
    levels: Mapping[str, str]
    samples: tuple[SamplePoint, ...]
    transactions: int
    errors: int
    errors_by_status: Mapping[str, int]
    latency: LatencyData | None


@dataclass(frozen=True, slots=True)
class Axes:
    """Bins shared by every condition, so histograms and heatmaps are comparable."""

    log_edges: tuple[float, ...]  # log10(ms)
    linear_edges: tuple[float, ...]  # ms
    kde_grid: tuple[float, ...]  # log10(ms)
    heat_log_edges: tuple[float, ...]  # log10(ms)
    period_seconds: float


@dataclass(frozen=True, slots=True)
class ReportData:
    """The reduced data of every compared run."""

    runs: tuple[RunInfo, ...]
    conditions: tuple[ConditionData, ...]
    axes: Axes | None
    per_transaction: bool
    #: False when a run was imported without timestamps (every start_ns is 0): then nothing
    #: is drawn against time (no heatmap, no periods).
    timed: bool = True
    #: latency histograms per sample: a run's transactions', or an import's own (fio's):
    #: distributions and a heatmap, without per-transaction values when not ``per_transaction``
    histograms: bool = False


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


@dataclass(frozen=True, slots=True)
class ReportInput:
    """Everything the report shows, gathered from the results file.

    ``doc`` is None when the analysis refused (``problem`` says why); ``data`` is None when only
    the verdict table was asked for (no page).
    """

    runs: tuple[RunInfo, ...]
    options: ComparisonOptions
    metric: Metric
    doc: ComparisonDocument | None
    problem: str | None
    bayes: BayesAnalysis | None
    results: Path
    data: ReportData | None = None
    unit_of_work: UnitOfWork | None = None
    #: per run id, its conditions as stored
    conditions: Mapping[int, Sequence[ConditionRow]] = field(default_factory=dict)
    #: per run id, its environment flattened to ``section.key`` → value
    environments: Mapping[int, Mapping[str, str]] = field(default_factory=dict)
    #: keys whose values differ between the runs (several runs only): key → run → value
    environment_differences: Mapping[str, Mapping[str, str | None]] = field(default_factory=dict)
    #: one run with several transaction types: each type's p99 verdict (``--txn T --stat p99``)
    per_type: tuple[ComparisonDocument, ...] = ()
    #: what each table and index did per condition (PostgreSQL statistics; one run only)
    relations: tuple[RelationActivity, ...] = ()
    #: the run's CPU profiles and their differences (a run made with --profile; one run only)
    profiles: RunProfiles | None = None
    #: a distributed run, per condition and load generator (one run only)
    generators: tuple[GeneratorSummary, ...] = ()
