"""A stored run as analysis input: one :class:`~wannabet.analysis.Observations` per condition,
or, for verdicts on one statistic of one transaction type, one
:class:`~wannabet.analysis.statistic.ConditionSamples` per condition.

The heavy lifting stays in DuckDB (:mod:`wannabet.store.queries`): rows come out already filtered
and ordered, as numpy columns, so a million transactions never pass through a Python loop.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from wannabet.analysis import Moments, Observations, histogram
from wannabet.analysis.statistic import ConditionSamples, SampleHistograms, stat_quantile
from wannabet.errors import AnalysisError, SpecError
from wannabet.model import STATUS_NAMES
from wannabet.store import ConditionRow, RunInfo, Store, queries

#: Transactions per condition the shape analyses examine at most (modality, session and period
#: medians, outlier share, Cliff's delta, the median's bootstrap): all of them below it, a
#: seeded subset of this size above it. Means, counts, extremes and quantiles are exact (from
#: the per-sample summaries) whatever the size.
SHAPE_SUBSET = 100_000


def load_observations(
    store: Store,
    run: RunInfo,
    *,
    metric: Literal["latency", "throughput"] = "latency",
    include_warmup: bool = False,
    skip_empty: bool = False,
    seed: int = 0,
) -> list[Observations]:
    """Per-condition observations of a run, in condition order.

    A condition without a single value (every transaction failed, say) is an error, or with
    ``skip_empty`` left out, so the caller can compare the others and say which it left out.

    Each value's sample is given by its number within its condition (1-based, in run order,
    counting every stored sample of the condition, as :func:`sample_numbers`), the number every
    output names a sample by (``off #4``).

    ``latency``: per successful transaction, its latency in ms with its sample (in run order),
    session and time since the run started. A condition of at most :data:`SHAPE_SUBSET`
    transactions, every one stored, gives them all. A larger one, or one whose rows were not
    all stored, gives a subset of that size (runs of consecutive stored rows at seeded offsets,
    each sample in proportion to its transactions; or, where a sample stored no rows, values
    drawn from its latency histogram) with :class:`~wannabet.analysis.Moments` holding the exact
    per-sample moments and histogram of all of them. The cost grows with samples, not
    transactions. ``throughput``: the TPS of every sample, one value per sample.
    """
    run_id = run.run_id
    conditions = store.conditions(run_id)
    if not conditions:
        raise AnalysisError(f"run {run_id} has no conditions to compare")
    if metric == "latency" and run.aggregates_only:
        raise AnalysisError(
            f"run {run_id} was imported from a file that holds only aggregates, not one latency"
            " per transaction; compare --metric throughput (one value per interval) instead"
        )
    # Imports without a time column have no real timestamps: no per-period breakdowns then.
    timed = run.timed
    if metric == "throughput" and not timed:
        raise AnalysisError(
            f"run {run_id} was imported without a time column, so it has no throughput;"
            " compare --metric latency, or import with --time"
        )
    if metric == "latency":
        return _latency_observations(store, run, conditions, include_warmup, skip_empty, seed)
    with store.read() as con:
        tps = queries.sample_tps(con, run_id)
    number = sample_numbers(store, run_id)
    out = []
    for c in conditions:
        mine = tps.condition_id == c.condition_id
        if skip_empty and not mine.any():
            continue
        ids = np.array([number[int(p)] for p in tps.position[mine]], dtype=np.int64)
        out.append(Observations(c.label, tps.tps[mine], ids))
    return out


def sample_numbers(store: Store, run_id: int) -> dict[int, int]:
    """Position in the run → the sample's number within its condition: 1-based, in run order,
    counting every stored sample (degraded or empty ones too), so a sample keeps its number
    whatever an analysis leaves out."""
    seen: dict[int, int] = {}
    out = {}
    for s in store.samples(run_id):
        cid = int(s["condition_id"])
        seen[cid] = seen.get(cid, 0) + 1
        out[int(s["position"])] = seen[cid]
    return out


def block_means(store: Store, run: RunInfo) -> dict[str, dict[int, float]]:
    """Per condition label: each block's sample mean latency (ms) after the warm-up, from the
    per-sample summaries (what a run that stops when decided judged after each block)."""
    labels = {c.condition_id: c.label for c in store.conditions(run.run_id)}
    with store.read() as con:
        m = queries.sample_moments(con, run.run_id)
    out: dict[str, dict[int, float]] = {}
    for cid, block, count, total in zip(
        m.condition_id.tolist(), m.block.tolist(), m.count.tolist(), m.sum_ms.tolist(), strict=True
    ):
        if count > 0 and cid in labels:
            out.setdefault(labels[cid], {})[int(block)] = float(total) / int(count)
    return out


def _latency_observations(
    store: Store,
    run: RunInfo,
    conditions: Sequence[ConditionRow],
    include_warmup: bool,
    skip_empty: bool,
    seed: int,
) -> list[Observations]:
    run_id = run.run_id
    with store.read() as con:
        moments = queries.sample_moments(con, run_id, include_warmup=include_warmup)
        windows = queries.sample_windows(con, run_id)
        hists = queries.histograms_by_sample(
            queries.sample_bins(con, run_id, include_warmup=include_warmup)
        )
        plans = {
            c.condition_id: _subset_plan(moments, windows, c.condition_id, seed) for c in conditions
        }
        blocks = [b for plan in plans.values() for b in plan.blocks]
        rows = queries.transaction_blocks(con, run_id, blocks, include_warmup=include_warmup)
    number = sample_numbers(store, run_id)
    w_row = {int(sid): i for i, sid in enumerate(windows.sample_id)}
    start_col = windows.t0_ns if include_warmup else windows.measure_start_ns
    origin = int(start_col.min()) if start_col.size else 0
    out = []
    for c in conditions:
        plan = plans[c.condition_id]
        if plan.n == 0:
            if not skip_empty:
                raise AnalysisError(
                    f"{c.label}: no successful transaction to compare; see wannabet summary"
                )
            continue
        mine = np.isin(rows.sample_id, plan.with_rows)
        sample_id = [rows.sample_id[mine]]
        values = [rows.latency_ms[mine]]
        session = [rows.session[mine]]
        start = [rows.start_ns[mine]]
        rng = np.random.default_rng([seed, run_id, c.condition_id])
        for sid, size in plan.drawn:
            # No rows stored: values drawn from the sample's histogram, at its start time.
            drawn = histogram.draw(hists.get(sid, histogram.merge()), size, rng) / 1e6
            sample_id.append(np.full(drawn.size, sid, dtype=np.int64))
            values.append(drawn)
            start.append(np.full(drawn.size, start_col[w_row[sid]], dtype=np.int64))
        sid_all = np.concatenate(sample_id)
        order = np.argsort(sid_all, kind="stable")
        m = plan.moments
        numbers = np.array([number[int(p)] for p in m.position], dtype=np.int64)
        # Each row's sample number, by looking its sample id up among the plan's (vectorised:
        # a Python loop here cost 60 ms per million rows).
        by_id = np.argsort(m.sample_id, kind="stable")
        where = np.searchsorted(m.sample_id, sid_all[order], sorter=by_id)
        sample = numbers[by_id[where]]
        time_s = None
        if run.timed:
            time_s = (np.concatenate(start)[order] - origin) / 1e9
        sessions = None if plan.drawn else np.concatenate(session)[order]
        exact = None
        if not plan.complete:
            merged = histogram.merge(*(hists[int(sid)] for sid in m.sample_id if int(sid) in hists))
            exact = Moments(
                sample=numbers,
                count=m.count,
                total=m.sum_ms,
                total_sq=m.sumsq_ms,
                minimum=float(m.min_ns.min()) / 1e6,
                maximum=float(m.max_ns.max()) / 1e6,
                histogram=merged,
                consecutive=plan.consecutive,
            )
        out.append(
            Observations(
                condition=c.label,
                values=np.concatenate(values)[order],
                sample=sample,
                session=sessions,
                time_s=time_s,
                moments=exact,
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class _SubsetPlan:
    """Which transactions of one condition the shape analyses read (see load_observations)."""

    n: int  # successful transactions
    moments: queries.SampleMoments  # the condition's samples, in run order
    blocks: list[tuple[int, int, int]]  # (sample_id, offset, limit) of stored rows
    with_rows: NDArray[np.int64]  # sample ids read from rows
    drawn: list[tuple[int, int]]  # (sample_id, size) drawn from histograms
    complete: bool  # every transaction, as stored
    consecutive: bool  # each sample's values are consecutive transactions


def _subset_plan(
    moments: queries.SampleMoments, windows: queries.SampleWindows, condition_id: int, seed: int
) -> _SubsetPlan:
    mine = np.asarray(moments.condition_id) == condition_id
    order = np.argsort(np.asarray(moments.position)[mine], kind="stable")
    m = queries.SampleMoments(
        *(np.asarray(getattr(moments, f))[mine][order] for f in queries.SampleMoments.__slots__)
    )
    count = m.count.astype(np.int64)
    n = int(count.sum())
    recorded = dict(zip(windows.sample_id.tolist(), windows.recorded.tolist(), strict=True))
    share = np.array([recorded.get(int(s), 1.0) for s in m.sample_id], dtype=np.float64)
    complete = n <= SHAPE_SUBSET and bool(np.all(share >= 1.0))
    rng = np.random.default_rng([seed, condition_id, 0x5EED])
    blocks: list[tuple[int, int, int]] = []
    drawn: list[tuple[int, int]] = []
    if n and np.any(share <= 0.0):
        # A sample without rows: the whole condition is drawn from histograms, so every value
        # has the same standing (no session for some and not for others).
        size = np.ceil(SHAPE_SUBSET * count / n).astype(np.int64)
        drawn = [(int(s), int(k)) for s, k in zip(m.sample_id, size, strict=True)]
    elif n:
        for sid, total, kept in zip(m.sample_id, count, share, strict=True):
            stored = round(int(total) * float(kept))
            want = int(total) if complete else int(np.ceil(SHAPE_SUBSET * int(total) / n))
            limit = min(want, stored)  # complete: every transaction, all of them stored
            offset = int(rng.integers(0, stored - limit + 1)) if stored > limit else 0
            blocks.append((int(sid), offset, limit))
    return _SubsetPlan(
        n=n,
        moments=m,
        blocks=blocks,
        with_rows=np.array([b[0] for b in blocks], dtype=np.int64),
        drawn=drawn,
        complete=complete,
        consecutive=not drawn and bool(np.all(share >= 1.0)),
    )


def transaction_type_names(store: Store, run: RunInfo) -> dict[int, str]:
    """The run's transaction types, id → name, in id order."""
    with store.read() as con:
        names = queries.transaction_type_names(con, run.run_id)
    return {int(k): str(v) for k, v in dict(names).items()}


def transaction_type_id(store: Store, run: RunInfo, name: str) -> int:
    """The id of the transaction type ``name`` of ``run``; a one-line error listing the names."""
    names = transaction_type_names(store, run)
    for type_id, type_name in names.items():
        if type_name == name:
            return type_id
    known = ", ".join(names.values()) or "none recorded"
    raise SpecError(
        f"run {run.run_id} has no transaction type {name!r}; its types: {known}",
        key="--txn",
        file="command line",
    )


def _result_samples(
    store: Store,
    run: RunInfo,
    conditions: Sequence[ConditionRow],
    layout: Sequence[dict[str, Any]],
    txn_type: int | None,
    include_warmup: bool,
) -> list[ConditionSamples]:
    """Per condition, its samples' recorded results as count and sums (``compare --stat
    result``); a sample without a result has count 0."""
    with store.read() as con:
        results = queries.sample_results(
            con, run.run_id, txn_type=txn_type, include_warmup=include_warmup
        )
    if not results.sample_id.size:
        raise AnalysisError(
            f"run {run.run_id} recorded no result: give the transaction whose answer matters"
            " result = true in the experiment file (its last statement's first column is"
            " recorded), and run it again"
        )
    row = {int(s): i for i, s in enumerate(results.sample_id)}
    out = []
    for c in conditions:
        samples = [s for s in layout if int(s["condition_id"]) == c.condition_id]
        at = [row.get(int(s["sample_id"])) for s in samples]

        def column(values: NDArray[Any], at: list[int | None] = at) -> NDArray[np.float64]:
            return np.array([0.0 if i is None else float(values[i]) for i in at])

        out.append(
            ConditionSamples(
                condition=c.label,
                position=np.arange(1, len(samples) + 1, dtype=np.int64),  # sample #k
                count=column(results.count),
                sum_ms=column(results.sum),
                sumsq_ms=column(results.sumsq),
            )
        )
    return out


def load_condition_samples(
    store: Store,
    run: RunInfo,
    *,
    stat: str,
    txn_type: int | None = None,
    include_warmup: bool = False,
) -> list[ConditionSamples]:
    """Per condition, what its samples summarise its transactions (of ``txn_type``) into.

    Reads the per-sample summaries only (moments, and histograms when ``stat`` is a quantile),
    never the transactions. Every sample of a condition is there, in run order; one without a
    successful transaction of the type has count 0. ``tps`` counts measured transactions only,
    over each sample's measured window, whatever ``include_warmup`` says (as the samples' TPS).
    """
    run_id = run.run_id
    conditions = store.conditions(run_id)
    if not conditions:
        raise AnalysisError(f"run {run_id} has no conditions to compare")
    if run.aggregates_only:
        raise AnalysisError(
            f"run {run_id} was imported from a file that holds only aggregates, without"
            " per-sample latency summaries; compare --metric throughput instead"
        )
    warm = include_warmup and stat != "tps"
    layout = sorted(store.samples(run_id), key=lambda s: int(s["position"]))
    if stat == "result":
        return _result_samples(store, run, conditions, layout, txn_type, warm)
    with store.read() as con:
        moments = queries.sample_moments(con, run_id, txn_type=txn_type, include_warmup=warm)
        bins = None
        if stat_quantile(stat) is not None:
            bins = queries.sample_bins(con, run_id, txn_type=txn_type, include_warmup=warm)
    m_id = np.asarray(moments.sample_id, dtype=np.int64)
    row = {int(s): i for i, s in enumerate(m_id)}
    hists: dict[int, histogram.Histogram] = {}
    if bins is not None:
        hists = queries.histograms_by_sample(bins)
    empty = histogram.merge()
    out = []
    for c in conditions:
        samples = [s for s in layout if int(s["condition_id"]) == c.condition_id]
        at = [row.get(int(s["sample_id"])) for s in samples]

        def column(name: str, at: list[int | None] = at) -> NDArray[np.float64]:
            values = np.asarray(getattr(moments, name), dtype=np.float64)
            return np.array([0.0 if i is None else float(values[i]) for i in at])

        sh = None
        if bins is not None:
            sh = SampleHistograms.from_histograms(
                [hists.get(int(s["sample_id"]), empty) for s in samples]
            )
        out.append(
            ConditionSamples(
                condition=c.label,
                position=np.arange(1, len(samples) + 1, dtype=np.int64),  # sample #k
                count=column("count"),
                sum_ms=column("sum_ms"),
                sumsq_ms=column("sumsq_ms"),
                histograms=sh,
                duration_s=np.array([float(s["duration_s"] or 0.0) for s in samples]),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class TypeSummary:
    """One condition's figures for one transaction type (``summary``'s per-type rows, like
    pgbench ``-r``): measured transactions of any status, failures, TPS (successes over the
    samples' measured windows), and latency in ms (mean and max from the per-sample moments,
    quantiles from the condition's merged histogram of the type)."""

    condition: str
    txn: str
    transactions: int
    errors: int
    errors_by_status: dict[str, int]
    tps: float | None
    latency_ms: dict[str, float | None]

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``docs/cli.md``: ``summary``'s ``types``)."""
        return {
            "condition": self.condition,
            "txn": self.txn,
            "transactions": self.transactions,
            "errors": self.errors,
            "errors_by_status": dict(self.errors_by_status),
            "tps": self.tps,
            "latency_ms": dict(self.latency_ms),
        }


def _status_name(status: Any) -> str:
    if isinstance(status, str):
        return status
    code = int(status)
    return STATUS_NAMES[code] if 0 <= code < len(STATUS_NAMES) else str(code)


def load_type_summaries(
    store: Store, run: RunInfo, *, include_warmup: bool = False
) -> list[TypeSummary]:
    """Per condition and transaction type, the figures of ``summary``'s per-type rows; empty
    when the run has fewer than two transaction types (the all-types rows say it all)."""
    names = transaction_type_names(store, run)
    if len(names) < 2:
        return []
    run_id = run.run_id
    conditions = store.conditions(run_id)
    windows: dict[int, float] = {}
    for s in store.samples(run_id):
        cid = int(s["condition_id"])
        windows[cid] = windows.get(cid, 0.0) + float(s["duration_s"] or 0.0)
    with store.read() as con:
        statuses = queries.status_counts(con, run_id, include_warmup=include_warmup)
        moments_of, bins_of = queries.sample_moments, queries.condition_bins
        per_type = {
            t: (
                moments_of(con, run_id, txn_type=t, include_warmup=include_warmup),
                bins_of(con, run_id, txn_type=t, include_warmup=include_warmup),
                # TPS counts measured transactions only, as the samples' TPS does.
                moments_of(con, run_id, txn_type=t, include_warmup=False),
            )
            for t in names
        }
    s_cond = np.asarray(statuses.condition_id, dtype=np.int64)
    s_type = np.asarray(statuses.txn_type, dtype=np.int64)
    s_count = np.asarray(statuses.count, dtype=np.int64)
    s_name = [_status_name(v) for v in np.asarray(statuses.status).tolist()]
    out = []
    for c in conditions:
        for t, tname in names.items():
            moments, bins, measured = per_type[t]
            here = (s_cond == c.condition_id) & (s_type == t)
            by_status: dict[str, int] = {}
            for i in np.flatnonzero(here):
                if s_name[i] != "ok":
                    by_status[s_name[i]] = by_status.get(s_name[i], 0) + int(s_count[i])
            m = np.asarray(moments.condition_id, dtype=np.int64) == c.condition_id
            n_ok = float(np.asarray(moments.count, dtype=np.float64)[m].sum())
            ok_measured = float(
                np.asarray(measured.count, dtype=np.float64)[
                    np.asarray(measured.condition_id, dtype=np.int64) == c.condition_id
                ].sum()
            )
            latency: dict[str, float | None] = dict.fromkeys(("mean", "p50", "p95", "p99", "max"))
            if n_ok > 0:
                h = queries.condition_histogram(bins, c.condition_id)
                low = float(np.asarray(moments.min_ns, dtype=np.float64)[m].min())
                high = float(np.asarray(moments.max_ns, dtype=np.float64)[m].max())
                # NULL extremes (an import that kept none) read as 0: no bound then.
                extremes = (low, high) if high > 0 else None
                qs = histogram.quantiles(h, [0.5, 0.95, 0.99], extremes=extremes) / 1e6
                p50, p95, p99 = qs.tolist()
                latency = {
                    "mean": float(np.asarray(moments.sum_ms, dtype=np.float64)[m].sum()) / n_ok,
                    "p50": p50,
                    "p95": p95,
                    "p99": p99,
                    "max": high / 1e6,
                }
            window = windows.get(c.condition_id, 0.0)
            out.append(
                TypeSummary(
                    condition=c.label,
                    txn=tname,
                    transactions=int(s_count[here].sum()),
                    errors=sum(by_status.values()),
                    errors_by_status=by_status,
                    tps=ok_measured / window if window > 0 else None,
                    latency_ms=latency,
                )
            )
    return out


def load_type_histograms(
    store: Store, run: RunInfo, *, include_warmup: bool = False
) -> dict[str, dict[str, histogram.Histogram]]:
    """Per condition label, the latency histogram of each transaction type (merged over the
    condition's samples); empty when the run has fewer than two types or the store has no
    per-sample summaries."""
    names = transaction_type_names(store, run)
    if len(names) < 2:
        return {}
    labels = {c.condition_id: c.label for c in store.conditions(run.run_id)}
    out: dict[str, dict[str, histogram.Histogram]] = {label: {} for label in labels.values()}
    with store.read() as con:
        for t, tname in names.items():
            bins = queries.condition_bins(
                con, run.run_id, txn_type=t, include_warmup=include_warmup
            )
            for c, label in labels.items():
                out[label][tname] = queries.condition_histogram(bins, c)
    return out


#: an open-loop condition that reached less than this share of its requested rate missed it
RATE_MARGIN = 0.05


@dataclass(frozen=True, slots=True)
class OpenLoop:
    """One open-loop condition: the rate asked for and the rate reached, and how late the
    transactions started against their schedule. A system that cannot keep up shows both: fewer
    arrivals than asked, and a lag that grows through the sample."""

    condition: str
    requested_rate: float
    achieved_rate: float | None
    lag_mean_ms: float | None
    lag_p99_ms: float | None
    #: the measured seconds the rate was asked for, over all the condition's samples
    seconds: float = 0.0

    @property
    def missed(self) -> bool:
        """Whether the rate reached fell short of the rate asked by more than
        :data:`RATE_MARGIN`, and by more than chance: arrivals are random (Poisson), so over
        ``seconds`` their count varies by about its square root; a shortfall within three of
        those is not a missed rate."""
        if self.achieved_rate is None:
            return False
        expected = self.requested_rate * self.seconds
        shortfall = (self.requested_rate - self.achieved_rate) * self.seconds
        return self.achieved_rate < self.requested_rate * (
            1 - RATE_MARGIN
        ) and shortfall > 3 * math.sqrt(max(expected, 1.0))

    def warning(self) -> str | None:
        if not self.missed or self.achieved_rate is None:
            return None
        lag = (
            ""
            if self.lag_mean_ms is None
            else (
                f"; transactions started {self.lag_mean_ms:,.1f} ms late on average"
                f" (p99 {self.lag_p99_ms or 0:,.1f} ms), and latency counts from the schedule"
            )
        )
        return (
            f"{self.condition}: open loop at {self.requested_rate:,.0f}/s reached only"
            f" {self.achieved_rate:,.0f}/s ({self.achieved_rate / self.requested_rate:.0%}):"
            f" the target could not keep up{lag}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "condition": self.condition,
            "requested_rate": self.requested_rate,
            "achieved_rate": self.achieved_rate,
            "lag_mean_ms": self.lag_mean_ms,
            "lag_p99_ms": self.lag_p99_ms,
            "missed": self.missed,
        }


def open_loop(store: Store, run: RunInfo) -> list[OpenLoop]:
    """The open-loop conditions of ``run`` (those with a rate), in condition order."""
    rates = run.rates
    if not rates:
        return []
    labels = {c.condition_id: c.label for c in store.conditions(run.run_id)}
    with store.read() as con:
        rows = queries.schedule_lag(con, run.run_id)
    out = []
    for cid, arrivals, seconds, _, lag_mean, lag_p99 in rows:
        label = labels.get(int(cid))
        rate = rates.get(label) if label is not None else None
        if not rate:
            continue
        out.append(
            OpenLoop(
                condition=str(label),
                requested_rate=float(rate),
                achieved_rate=float(arrivals) / float(seconds) if seconds else None,
                lag_mean_ms=None if lag_mean is None else float(lag_mean),
                lag_p99_ms=None if lag_p99 is None else float(lag_p99),
                seconds=float(seconds or 0.0),
            )
        )
    return out
