"""A stored run as analysis input: one :class:`~wannabet.analysis.Observations` per condition.

The heavy lifting stays in DuckDB: rows come out already filtered and ordered, as numpy columns,
so a million transactions never pass through a Python loop.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from wannabet.analysis import Observations
from wannabet.errors import AnalysisError
from wannabet.store import RunInfo, Store


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
    settings = run.settings or {}
    if metric == "latency" and (
        settings.get("aggregates_only") or settings.get("log") == "aggregate"
    ):
        raise AnalysisError(
            f"run {run_id} was imported from a file that holds only aggregates, not one latency"
            " per transaction; compare --metric throughput (one value per interval) instead"
        )
    # Imports without a time column have no real timestamps: no per-period breakdowns then.
    timed = bool(settings.get("timed", True))
    if metric == "throughput" and not timed:
        raise AnalysisError(
            f"run {run_id} was imported without a time column, so it has no throughput;"
            " compare --metric latency, or import with --time"
        )
    with store.read() as con:
        if metric == "throughput":
            rows = con.execute(
                "SELECT condition_id, position, tps FROM samples"
                " WHERE run_id = ? AND tps IS NOT NULL ORDER BY condition_id, position",
                [run_id],
            ).fetchnumpy()
            cond = np.asarray(rows["condition_id"])
            values = np.asarray(rows["tps"], dtype=np.float64)
            sample = np.asarray(rows["position"], dtype=np.int64)
            session = None
            time_s = None
        else:
            warm = "" if include_warmup else "AND NOT warmup"
            # A filtered scan keeps insertion order (DuckDB's preserve_insertion_order), which
            # is run order and, within a sample, start order: no sort of millions of rows.
            rows = con.execute(
                f"""
                SELECT sample_id, session, (end_ns - intended_start_ns) / 1e6 AS latency_ms,
                       start_ns
                FROM transactions WHERE run_id = ? AND status = 'ok' {warm}
                """,
                [run_id],
            ).fetchnumpy()
            layout = con.execute(
                "SELECT sample_id, condition_id, position FROM samples WHERE run_id = ?"
                " ORDER BY sample_id",
                [run_id],
            ).fetchnumpy()
            sample_ids = np.asarray(layout["sample_id"], dtype=np.int64)
            index = np.searchsorted(sample_ids, np.asarray(rows["sample_id"], dtype=np.int64))
            sample = np.asarray(layout["position"], dtype=np.int64)[index]
            start = np.asarray(rows["start_ns"], dtype=np.int64)
            if np.any(np.diff(sample) < 0):
                # Not written in run order (e.g. appended imports): sort the honest way.
                by = np.lexsort((start, sample))
            else:
                by = np.arange(sample.size)
            cond_unsorted = np.asarray(layout["condition_id"], dtype=np.int64)[index][by]
            # A stable sort by condition keeps run and time order inside each condition.
            regroup = np.argsort(cond_unsorted, kind="stable")
            by = by[regroup]
            cond = cond_unsorted[regroup]
            sample = sample[by]
            values = np.asarray(rows["latency_ms"], dtype=np.float64)[by]
            session = np.asarray(rows["session"], dtype=np.int64)[by]
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
