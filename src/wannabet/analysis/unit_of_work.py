"""Unit-of-work time analysis: what the database spent per unit of work, and the queue it implies.

Per condition, over its samples (one observation per sample, as everywhere in wannabet):

- λ, units per second: committed transactions / the sample's elapsed time;
- CPU ms per unit (the service time): server CPU time / units (SQLite: the engine threads' CPU,
  since SQLite runs inside them);
- wait ms per unit (the queue time): sampled non-idle wait time / units (SQLite: the sessions'
  busy time inside transactions minus their CPU);
- response ms per unit = CPU + wait (CPU, wait and response are averaged over the same
  samples, so the identity holds for the means too);
- utilization: λ · CPU per unit / cores, i.e. CPU time / (the engine's elapsed × cores): the
  same window as λ.

Each is a mean over samples with a Student-t interval. The M/M/m curve (Erlang C) with the
service time fitted as the mean CPU per unit shows where a condition sits on its response-time
curve and what a change of service time does at higher arrival rates. m is the server's cores
(for SQLite, the cores the engine's threads may use: the model is of the CPU, and SQLite's one
write lock, which no CPU model captures, can saturate before it). The curve
is calibrated through the measured point: the fixed (non-CPU) wait is the measured response
minus the model's CPU response at the measured λ, floored at 0 (then the point is drawn at the
model's value and a note says so).

Where CPU, wait, I/O and commits come from depends on the database: its backend reads them out
of the stored statistics (a :class:`WorkSource` turning each sample into a :class:`SampleWork`),
and this module only computes with them. It takes no backend and no store: the service layer
(:mod:`wannabet.work`) picks the source by the run's target.

References
----------
Shallahamer, C. (2007). *Oracle Performance Firefighting*, ch. 9 (unit-of-work time analysis).
Kleinrock, L. (1975). *Queueing Systems, Vol. 1: Theory*, §3.5 (M/M/m, Erlang's C formula).
Gunther, N. J. (2005). *Analyzing Computer System Performance with Perl::PDQ*, ch. 2.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from wannabet.analysis.distributions import t_ppf
from wannabet.errors import AnalysisError

__all__ = [
    "COMMIT_MISMATCH",
    "IO_STAT_PREFIX",
    "STRAY_COMMITS",
    "WORK_STATS",
    "Estimate",
    "ResponseCurve",
    "SampleWork",
    "ServerCheck",
    "UnitOfWork",
    "WaitEvent",
    "WorkSource",
    "calibrated_curve",
    "check_unit",
    "erlang_c",
    "is_work_stat",
    "mmm_response_ms",
    "response_curve",
    "sample_statistics",
    "statistics_by_condition",
    "t_estimate",
    "unit_of_work",
    "unit_of_work_by_condition",
    "unit_of_work_from_samples",
    "work_values",
]

#: relative difference between the engine's and the server's commits that flags a run
COMMIT_MISMATCH = 0.01
#: commits a single sample may be apart whatever its size: one or two commits of a background
#: job (autovacuum, autoanalyze) in a sample of forty are 2.5-5% of it and no sign that the
#: engine miscounts; the run's sums are still held to COMMIT_MISMATCH
STRAY_COMMITS = 2
_CURVE_POINTS = 60
_TOP_WAITS = 5


@dataclass(frozen=True, slots=True)
class SampleWork:
    """What one sample's statistics say about the database's work, as totals for the sample.

    None is unknown (never a guess): a sample without CPU or wait adds nothing to that figure.
    """

    #: CPU seconds the database spent (a server's processes; SQLite: the engine threads)
    cpu_s: float | None
    #: seconds waited (sampled wait events; SQLite: busy time minus CPU)
    wait_s: float | None
    #: cores the CPU figure is out of
    cores: int | None = None
    #: milliseconds the server's sessions were active (PostgreSQL ``active_time``)
    active_ms: float | None = None
    #: I/O figures by name, in the order they are reported
    io: Mapping[str, float] = field(default_factory=dict)
    #: sampled wait events: (type, event, seconds); counted only when ``wait_s`` is known
    events: Sequence[tuple[str, str, float]] = ()
    #: (the engine's commits, the server's commits) when the sample's cross-check is reliable
    commits: tuple[int, int] | None = None
    #: what this sample's wait figure cannot show (the condition's notes list each once)
    notes: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class WorkSource:
    """How one backend's stored statistics give the unit-of-work figures.

    A backend declares it (:attr:`wannabet.backends.Backend.work`); the analysis calls
    ``extract`` on every valid sample's statistics document and labels the figures with the
    sources. A note is added when the figure it is about is missing or misleading on this
    backend; None adds no note.
    """

    cpu_source: str
    wait_source: str
    extract: Callable[[Mapping[str, Any]], SampleWork]
    #: added when no sample has a CPU figure
    cpu_unknown_note: str | None = None
    #: added when the wait per unit exceeds the CPU per unit
    waits_exceed_cpu_note: str | None = None


@dataclass(frozen=True, slots=True)
class Estimate:
    """A mean over samples with its two-sided Student-t interval (None when n < 2)."""

    mean: float
    low: float | None
    high: float | None
    n: int
    level: float = 0.95

    def to_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "low": self.low, "high": self.high, "n": self.n}


def t_estimate(x: Sequence[float] | np.ndarray, level: float = 0.95) -> Estimate | None:
    """Mean and t interval of per-sample values; None without values."""
    a = np.asarray(x, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return None
    mean = float(a.mean())
    if a.size < 2:
        return Estimate(mean, None, None, 1, level)
    half = float(t_ppf(0.5 + level / 2, a.size - 1) * a.std(ddof=1) / np.sqrt(a.size))
    return Estimate(mean, mean - half, mean + half, int(a.size), level)


@dataclass(frozen=True, slots=True)
class WaitEvent:
    type: str
    event: str
    ms_per_unit: float
    share: float  # of all sampled wait time

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "event": self.event,
            "ms_per_unit": self.ms_per_unit,
            "share": self.share,
        }


@dataclass(frozen=True, slots=True)
class ServerCheck:
    """The engine's committed server transactions against the server's ``xact_commit``."""

    engine_commits: int | None
    server_commits: int | None
    samples: int
    #: the largest single sample's relative difference, among samples more than
    #: :data:`STRAY_COMMITS` apart: errors of opposite sign in different samples cancel in the
    #: sums, not here
    worst_sample_mismatch: float | None = None

    @property
    def mismatch(self) -> float | None:
        if not self.engine_commits or self.server_commits is None:
            return None
        return abs(self.server_commits - self.engine_commits) / self.engine_commits

    @property
    def ok(self) -> bool | None:
        m = self.mismatch
        if m is None:
            return None
        worst = self.worst_sample_mismatch
        return m <= COMMIT_MISMATCH and (worst is None or worst <= COMMIT_MISMATCH)

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine_commits": self.engine_commits,
            "server_commits": self.server_commits,
            "samples": self.samples,
            "mismatch": self.mismatch,
            "worst_sample_mismatch": self.worst_sample_mismatch,
            "ok": self.ok,
        }


@dataclass(frozen=True, slots=True)
class ResponseCurve:
    """R(λ) = wait + S·(1 + C(m, λS)/(m − λS)): M/M/m for the CPU, other waits held fixed."""

    cores: int
    service_ms: float
    wait_ms: float
    units_per_s: tuple[float, ...]
    response_ms: tuple[float, ...]
    operating_units_per_s: float
    operating_response_ms: float

    @property
    def capacity_units_per_s(self) -> float:
        return self.cores / (self.service_ms / 1000.0)

    def response_at(self, units_per_s: float) -> float:
        """The model's response time (ms) at an arrival rate; inf at or beyond capacity."""
        return self.wait_ms + mmm_response_ms(self.service_ms, self.cores, units_per_s)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": "M/M/m (Erlang C) for the CPU; the non-CPU wait is held fixed, calibrated"
            " so the curve passes through the measured point",
            "cores": self.cores,
            "service_ms": self.service_ms,
            "wait_ms": self.wait_ms,
            "capacity_units_per_s": self.capacity_units_per_s,
            "units_per_s": list(self.units_per_s),
            "response_ms": list(self.response_ms),
            "operating_point": {
                "units_per_s": self.operating_units_per_s,
                "response_ms": self.operating_response_ms,
            },
        }


@dataclass(frozen=True, slots=True)
class UnitOfWork:
    """Unit-of-work figures for one condition (see the module docstring)."""

    condition: str
    unit: str
    samples: int
    valid_samples: int
    units_per_s: Estimate | None
    cpu_ms_per_unit: Estimate | None
    wait_ms_per_unit: Estimate | None
    response_ms_per_unit: Estimate | None
    utilization: Estimate | None
    top_waits: tuple[WaitEvent, ...]
    cpu_source: str
    wait_source: str
    engine_cpu_ms_per_unit: Estimate | None = None
    active_ms_per_unit: Estimate | None = None
    server_check: ServerCheck | None = None
    curve: ResponseCurve | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: I/O per unit by source figure: PostgreSQL ``wal_bytes``, ``wal_sync``, ``blks_read``,
    #: ``blks_hit``; SQLite (the client process) ``read_bytes``, ``write_bytes``, ``write_calls``
    io_per_unit: Mapping[str, Estimate] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        def m(e: Estimate | None) -> float | None:
            return None if e is None else e.mean

        def d(e: Estimate | None) -> dict[str, Any] | None:
            return None if e is None else e.to_dict()

        return {
            "unit": self.unit,
            "units_per_s": m(self.units_per_s),
            "cpu_ms_per_unit": m(self.cpu_ms_per_unit),
            "wait_ms_per_unit": m(self.wait_ms_per_unit),
            "response_ms_per_unit": m(self.response_ms_per_unit),
            "top_waits": [w.to_dict() for w in self.top_waits],
            "utilization": m(self.utilization),
            "intervals": {
                "units_per_s": d(self.units_per_s),
                "cpu_ms_per_unit": d(self.cpu_ms_per_unit),
                "wait_ms_per_unit": d(self.wait_ms_per_unit),
                "response_ms_per_unit": d(self.response_ms_per_unit),
                "utilization": d(self.utilization),
            },
            "cpu_source": self.cpu_source,
            "wait_source": self.wait_source,
            "engine_cpu_ms_per_unit": m(self.engine_cpu_ms_per_unit),
            "active_ms_per_unit": m(self.active_ms_per_unit),
            "samples": self.samples,
            "valid_samples": self.valid_samples,
            "curve": None if self.curve is None else self.curve.to_dict(),
            "io_per_unit": {k: e.mean for k, e in self.io_per_unit.items()},
            "notes": list(self.notes),
        }


def erlang_c(m: int, a: float) -> float:
    """Probability that an arrival waits in an M/M/m queue with offered load ``a`` = λ·S.

    Computed from Erlang B by its stable recursion B(k) = a·B(k−1) / (k + a·B(k−1)), then
    C = B / (1 − ρ(1 − B)) with ρ = a/m. Returns 1 at or beyond saturation (a ≥ m).

    References
    ----------
    Kleinrock (1975), eq. 3.42; Gross & Harris, *Fundamentals of Queueing Theory*, §2.3.
    """
    if m < 1:
        raise ValueError(f"m must be at least 1, got {m}")
    if a < 0:
        raise ValueError(f"the offered load must be ≥ 0, got {a}")
    if a >= m:
        return 1.0
    b = 1.0
    for k in range(1, m + 1):
        b = a * b / (k + a * b)
    rho = a / m
    return b / (1.0 - rho * (1.0 - b))


def mmm_response_ms(service_ms: float, m: int, units_per_s: float) -> float:
    """Mean response time (queue + service) of an M/M/m queue; inf at saturation."""
    a = units_per_s * service_ms / 1000.0
    if a >= m:
        return float("inf")
    return service_ms * (1.0 + erlang_c(m, a) / (m - a))


def response_curve(
    service_ms: float,
    wait_ms: float,
    cores: int,
    operating_units_per_s: float,
    operating_response_ms: float,
    points: int = _CURVE_POINTS,
) -> ResponseCurve | None:
    """The response-time curve from 0 to 98% of capacity, as arrays ready to plot."""
    if service_ms <= 0 or cores < 1:
        return None
    capacity = cores / (service_ms / 1000.0)
    if not math.isfinite(capacity):
        return None  # a service time too small to measure: no queue to draw
    lam = np.linspace(0.0, 0.98 * capacity, points)
    if 0.0 < operating_units_per_s < capacity:
        # The curve reaches the operating rate even when it lies above 98% of capacity.
        lam = np.union1d(lam, [operating_units_per_s])
    resp = [wait_ms + mmm_response_ms(service_ms, cores, float(x)) for x in lam]
    return ResponseCurve(
        cores=cores,
        service_ms=service_ms,
        wait_ms=wait_ms,
        units_per_s=tuple(float(x) for x in lam),
        response_ms=tuple(resp),
        operating_units_per_s=operating_units_per_s,
        operating_response_ms=operating_response_ms,
    )


def calibrated_curve(
    service_ms: float, response_ms: float, servers: int, units_per_s: float
) -> tuple[ResponseCurve | None, str | None]:
    """The response curve through the measured point (λ, response), and a note if it cannot be.

    The CPU part follows M/M/m with the measured service time; the rest of the response is a
    fixed wait chosen so the model gives the measured response at the measured λ. When the CPU
    model alone already exceeds the measured response, the fixed wait is 0 and the operating
    point is drawn at the model's value, which the note says.
    """
    cpu_part = mmm_response_ms(service_ms, servers, units_per_s)
    if not math.isfinite(cpu_part):
        return None, (
            f"the measured rate is at or beyond the CPU model's capacity ({servers} server(s)):"
            " no response-time curve"
        )
    fixed = response_ms - cpu_part
    note = None
    if fixed < 0:
        # Typical of a closed loop with few sessions: at most sessions - 1 requests can queue,
        # so an open-system queue overstates the wait. The point stays where it was measured.
        note = (
            f"the M/M/{servers} model gives {cpu_part:.3g} ms at the measured rate, more than"
            f" the {response_ms:.3g} ms measured (few sessions cannot queue like an open"
            " system): the curve is an upper bound here"
        )
        fixed = 0.0
    curve = response_curve(service_ms, fixed, servers, units_per_s, response_ms)
    return curve, note


def unit_of_work(
    condition: str,
    samples: Sequence[Mapping[str, Any]],
    unit: str = "commit",
    *,
    source: WorkSource,
    closed_sessions: int | None = None,
) -> UnitOfWork:
    """Unit-of-work figures of one condition from its samples' stored statistics.

    ``samples`` are ``samples.stats`` documents (``docs/results-schema.md``); ``source`` is
    the run's backend's reading of them. Samples whose statistics are invalid (a reset, a
    restart) are left out and counted in ``notes``.
    ``unit`` is ``"commit"`` (every committed transaction) or a transaction type's name: then
    λ counts that type only, and all CPU and wait time is charged to it, as when an analyst
    picks one business transaction as the unit.
    """
    valid = [s for s in samples if s.get("valid", False) and "engine" in s]
    notes: list[str] = []
    if len(valid) < len(samples):
        notes.append(
            f"{len(samples) - len(valid)} of {len(samples)} samples have invalid statistics"
            " (statistics reset or server restart) and are left out"
        )
    lam: list[float] = []
    cpu: list[float] = []
    wait: list[float] = []
    cpu_only: list[float] = []
    wait_only: list[float] = []
    response: list[float] = []
    util: list[float] = []
    ecpu: list[float] = []
    active: list[float] = []
    io: dict[str, list[float]] = defaultdict(list)
    event_wait: dict[tuple[str, str], float] = defaultdict(float)
    wait_units = 0
    worst: float | None = None
    warned = list(dict.fromkeys(w for s in samples for w in s.get("warnings", [])))
    notes.extend(f"statistics: {w}" for w in warned)
    cores_seen: list[int] = []
    eng_commits = srv_commits = 0
    checked = 0
    blind: list[str] = []
    for s in valid:
        eng = s["engine"]
        units = _units(eng, unit)
        elapsed = float(eng.get("elapsed_s") or 0.0)
        if units <= 0 or elapsed <= 0:
            continue
        lam.append(units / elapsed)
        if eng.get("cpu_s") is not None:
            ecpu.append(eng["cpu_s"] * 1000.0 / units)
        work = source.extract(s)
        cpu_s, wait_s, cores = work.cpu_s, work.wait_s, work.cores
        if work.active_ms is not None:
            active.append(work.active_ms / units)
        for key, value in work.io.items():
            io[key].append(value / units)
        if wait_s is not None:
            # Only samples whose sampling completed: ms per unit divides by their units.
            wait_units += units
            for event_type, event, event_s in work.events:
                event_wait[(event_type, event)] += event_s * 1000.0
        blind.extend(work.notes)
        if work.commits is not None:
            e_n, s_n = work.commits
            eng_commits += e_n
            srv_commits += s_n
            checked += 1
            if e_n > 0 and abs(s_n - e_n) > STRAY_COMMITS:
                worst = max(worst or 0.0, abs(s_n - e_n) / e_n)
        if cores:
            cores_seen.append(int(cores))
        if cpu_s is not None:
            cpu_only.append(cpu_s * 1000.0 / units)
            if cores:
                # λ·S/m on λ's own window (the engine's), whatever window the sampler had.
                util.append(cpu_s / (elapsed * cores))
        if wait_s is not None:
            wait_only.append(wait_s * 1000.0 / units)
        if cpu_s is not None and wait_s is not None:
            cpu.append(cpu_s * 1000.0 / units)
            wait.append(wait_s * 1000.0 / units)
            response.append((cpu_s + wait_s) * 1000.0 / units)
    notes.extend(dict.fromkeys(blind))
    if not response:
        # No sample has both: each figure over the samples that have it; no response.
        cpu, wait = cpu_only, wait_only
    if source.cpu_unknown_note and not cpu and valid:
        notes.append(source.cpu_unknown_note)
    cpu_e, wait_e = t_estimate(cpu), t_estimate(wait)
    resp_e = t_estimate(response)
    total_wait = sum(event_wait.values())
    top = tuple(
        WaitEvent(t, e, ms / wait_units if wait_units else 0.0, ms / total_wait)
        for (t, e), ms in sorted(event_wait.items(), key=lambda kv: -kv[1])[:_TOP_WAITS]
        if total_wait > 0
    )
    lam_e = t_estimate(lam)
    # m = 1 for SQLite writers would overstate the queue: only the part of a commit that holds
    # the write lock is serialised, the rest of the engine thread's CPU runs in parallel.
    servers = min(cores_seen) if cores_seen else None
    curve = None
    if closed_sessions is not None and servers and closed_sessions <= servers:
        # Nothing can queue for a CPU: the M/M/m curve, an open system's, would draw waits
        # this load cannot have.
        notes.append(
            f"a closed loop of {closed_sessions} session(s) on {servers} core(s) cannot queue"
            " for CPU: no response-time curve (it applies to an open loop, or to more sessions"
            " than cores)"
        )
    elif cpu_e is not None and resp_e and lam_e and servers:
        curve, note = calibrated_curve(cpu_e.mean, resp_e.mean, servers, lam_e.mean)
        if note:
            notes.append(note)
    elif cpu_e is not None and not cores_seen:
        notes.append("server cores unknown: no response-time curve (run --server-cores N)")
    if (
        source.waits_exceed_cpu_note
        and cpu_e is not None
        and wait_e is not None
        and wait_e.mean > cpu_e.mean
    ):
        notes.append(source.waits_exceed_cpu_note)
    check = (
        ServerCheck(eng_commits, srv_commits, checked, worst_sample_mismatch=worst)
        if checked
        else None
    )
    if check is not None and check.ok is False:
        notes.append(
            f"the server counted {srv_commits} commits where the engine issued {eng_commits}"
            f" ({check.mismatch:.1%} apart; worst sample {worst or 0.0:.1%}): something else"
            " committed in this database, or statistics were lost; the run's figures are suspect"
        )
    return UnitOfWork(
        condition=condition,
        unit=unit,
        samples=len(samples),
        valid_samples=len(valid),
        units_per_s=lam_e,
        cpu_ms_per_unit=cpu_e,
        wait_ms_per_unit=wait_e,
        response_ms_per_unit=resp_e,
        utilization=t_estimate(util),
        top_waits=top,
        cpu_source=source.cpu_source,
        wait_source=source.wait_source,
        engine_cpu_ms_per_unit=t_estimate(ecpu),
        active_ms_per_unit=t_estimate(active),
        server_check=check,
        curve=curve,
        notes=tuple(notes),
        io_per_unit={k: e for k, v in io.items() if (e := t_estimate(v)) is not None},
    )


def _units(engine: Mapping[str, Any], unit: str) -> int:
    """A sample's units: its committed transactions, or those of the type ``unit``."""
    if unit == "commit":
        return int(engine.get("committed") or 0)
    return int((engine.get("committed_by_type") or {}).get(unit) or 0)


#: the unit-of-work figures ``compare --stat`` judges: each sample's ms per unit
WORK_STATS: tuple[str, ...] = ("cpu", "wait", "response")
#: ``io:COUNTER``: a sample's I/O counter (as the backend's unit of work reads it: ``blks_read``,
#: ``wal_bytes``, ``Innodb_data_fsyncs``, ...) per unit
IO_STAT_PREFIX = "io:"


def is_work_stat(stat: str) -> bool:
    """``stat`` is a per-sample unit-of-work figure: CPU, wait, response or an I/O counter."""
    return stat in WORK_STATS or (stat.startswith(IO_STAT_PREFIX) and len(stat) > 3)


def work_values(
    samples: Sequence[Mapping[str, Any]], stat: str, unit: str = "commit", *, source: WorkSource
) -> list[float | None]:
    """Each sample's ``stat`` (one of :data:`WORK_STATS`, in ms per unit, or ``io:COUNTER``,
    the counter per unit) or None where the sample has no such figure (invalid statistics, no
    units, CPU, wait or the counter unknown): the per-sample values whose means
    :func:`unit_of_work` reports, for a comparison over samples.
    """
    if not is_work_stat(stat):
        raise AnalysisError(
            f"{stat!r} is not a unit-of-work figure; use one of {WORK_STATS} or io:COUNTER"
        )
    counter = stat.removeprefix(IO_STAT_PREFIX) if stat.startswith(IO_STAT_PREFIX) else None
    out: list[float | None] = []
    for s in samples:
        eng = s.get("engine") or {}
        units = _units(eng, unit)
        if not s.get("valid", False) or units <= 0 or not float(eng.get("elapsed_s") or 0) > 0:
            out.append(None)
            continue
        work = source.extract(s)
        if counter is not None:
            value = work.io.get(counter)
            out.append(None if value is None else float(value) / units)
            continue
        cpu_s, wait_s = work.cpu_s, work.wait_s
        parts = {"cpu": (cpu_s,), "wait": (wait_s,), "response": (cpu_s, wait_s)}[stat]
        known = [x for x in parts if x is not None]
        out.append(sum(known) * 1000.0 / units if len(known) == len(parts) else None)
    return out


def statistics_by_condition(
    rows: Sequence[Mapping[str, Any]], *, include_degraded: bool = False
) -> dict[str, list[Mapping[str, Any]]]:
    """The statistics documents of sample rows (``Store.samples``), per condition in condition
    order; conditions without statistics (imports, ``--no-stats`` runs) are left out, and so
    are degraded samples unless ``include_degraded``, as in every other analysis."""
    by_condition: dict[str, list[Mapping[str, Any]]] = {}
    # Conditions in their defined order, as the summary table lists them.
    rows = sorted(rows, key=lambda r: int(r.get("condition_id") or 0))
    for row in rows:
        stats_doc = sample_statistics(row, include_degraded=include_degraded)
        if stats_doc is not None:
            by_condition.setdefault(str(row["condition"]), []).append(stats_doc)
    return by_condition


def sample_statistics(
    row: Mapping[str, Any], *, include_degraded: bool = False
) -> Mapping[str, Any] | None:
    """One sample row's statistics document, or None when it has none (an import, a
    ``--no-stats`` run) or is degraded and ``include_degraded`` is off."""
    if row.get("status") == "degraded" and not include_degraded:
        return None
    raw = row.get("stats")
    stats_doc = json.loads(raw) if isinstance(raw, str) else (raw or {})
    if not stats_doc or ("engine" not in stats_doc and "valid" not in stats_doc):
        return None
    return stats_doc


def check_unit(by_condition: Mapping[str, Sequence[Mapping[str, Any]]], unit: str) -> None:
    """Raise AnalysisError when ``unit`` is neither ``"commit"`` nor a transaction type that
    the samples' statistics record."""
    if unit == "commit" or not by_condition:
        return
    types = {
        t
        for docs in by_condition.values()
        for d in docs
        for t in (d.get("engine") or {}).get("committed_by_type", {})
    }
    if unit not in types:
        known = ", ".join(sorted(types)) or "none recorded"
        raise AnalysisError(
            f"--unit {unit!r} is not a transaction type of this run; use 'commit' or one"
            f" of: {known}"
        )


def unit_of_work_by_condition(
    by_condition: Mapping[str, Sequence[Mapping[str, Any]]],
    unit: str = "commit",
    *,
    source: WorkSource,
    closed_sessions: Mapping[str, int] | None = None,
) -> list[UnitOfWork]:
    """Per-condition results from :func:`statistics_by_condition`, in its order.
    ``closed_sessions``: the sessions of each closed-loop condition (open-loop ones absent).

    Raises
    ------
    AnalysisError
        ``unit`` is neither ``"commit"`` nor a transaction type of the run.
    """
    check_unit(by_condition, unit)
    closed = closed_sessions or {}
    return [
        unit_of_work(name, docs, unit, source=source, closed_sessions=closed.get(name))
        for name, docs in by_condition.items()
    ]


def unit_of_work_from_samples(
    rows: Sequence[Mapping[str, Any]], unit: str = "commit", *, source: WorkSource
) -> list[UnitOfWork]:
    """Per-condition results from sample rows (``Store.samples``), in condition order.

    Conditions without statistics (imports, ``--no-stats`` runs) are left out.

    Raises
    ------
    AnalysisError
        ``unit`` is neither ``"commit"`` nor a transaction type of the run.
    """
    return unit_of_work_by_condition(statistics_by_condition(rows), unit, source=source)
