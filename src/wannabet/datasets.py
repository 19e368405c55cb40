"""A stored run as analysis input: one :class:`~wannabet.analysis.Observations` per condition.

The heavy lifting stays in DuckDB (:mod:`wannabet.store.queries`): rows come out already filtered
and ordered, as numpy columns, so a million transactions never pass through a Python loop.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from wannabet.analysis import Observations
from wannabet.errors import AnalysisError
from wannabet.store import RunInfo, Store, queries


def load_observations(
    store: Store,
    run: RunInfo,
    *,
    metric: Literal["latency", "throughput"] = "latency",
    include_warmup: bool = False,
    skip_empty: bool = False,
) -> list[Observations]:
    """Per-condition observations of a run, in condition order.

    A condition without a single value (every transaction failed, say) is an error, or with
    ``skip_empty`` left out, so the caller can compare the others and say which it left out.

    ``latency``: the latency in ms of every successful transaction, with its sample (in run
    order), session and time since the run's first transaction. ``throughput``: the TPS of every
    sample, one value per sample.
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
    with store.read() as con:
        if metric == "throughput":
            tps = queries.sample_tps(con, run_id)
            cond = tps.condition_id
            values = tps.tps
            sample = tps.position
            session = None
            time_s = None
        else:
            # Rows come in run order and, within a sample, start order (see the query).
            rows = queries.transaction_latencies(con, run_id, include_warmup=include_warmup)
            layout = queries.sample_layout(con, run_id)
            index = np.searchsorted(layout.sample_id, rows.sample_id)
            sample = layout.position[index]
            start = rows.start_ns
            if np.any(np.diff(sample) < 0):
                # Not written in run order (e.g. appended imports): sort the honest way.
                by = np.lexsort((start, sample))
            else:
                by = np.arange(sample.size)
            cond_unsorted = layout.condition_id[index][by]
            # A stable sort by condition keeps run and time order inside each condition.
            regroup = np.argsort(cond_unsorted, kind="stable")
            by = by[regroup]
            cond = cond_unsorted[regroup]
            sample = sample[by]
            values = rows.latency_ms[by]
            session = rows.session[by]
            start = start[by]
            time_s = (start - start.min()) / 1e9 if timed and start.size else None
    # Rows are sorted by condition, so each condition is one contiguous slice.
    out = []
    for c in conditions:
        lo = int(np.searchsorted(cond, c.condition_id, side="left"))
        hi = int(np.searchsorted(cond, c.condition_id, side="right"))
        if skip_empty and hi == lo:
            continue
        out.append(
            Observations(
                condition=c.label,
                values=values[lo:hi],
                sample=sample[lo:hi],
                session=None if session is None else session[lo:hi],
                time_s=None if time_s is None else time_s[lo:hi],
            )
        )
    return out
