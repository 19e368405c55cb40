"""A stored run as analysis input: one :class:`~wannabet.analysis.Observations` per condition.

The heavy lifting stays in DuckDB: rows come out already filtered and ordered, as numpy columns,
so a million transactions never pass through a Python loop.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from wannabet.analysis import Observations
from wannabet.errors import AnalysisError
from wannabet.store import Store


def load_observations(
    store: Store,
    run_id: int,
    *,
    metric: Literal["latency", "throughput"] = "latency",
    include_warmup: bool = False,
) -> list[Observations]:
    """Per-condition observations of a run, in condition order.

    ``latency``: the latency in ms of every successful transaction, with its sample (in run
    order), session and time since the run's first transaction. ``throughput``: the TPS of every
    sample, one value per sample.
    """
    conditions = store.conditions(run_id)
    if not conditions:
        raise AnalysisError(f"run {run_id} has no conditions to compare")
    # Imports without a time column have no real timestamps: no per-period breakdowns then.
    timed = bool((store.run(run_id).settings or {}).get("timed", True))
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
            warm = "" if include_warmup else "AND NOT t.warmup"
            rows = con.execute(
                f"""
                SELECT s.condition_id, s.position, t.session,
                       (t.end_ns - t.intended_start_ns) / 1e6 AS latency_ms,
                       (t.start_ns - min(t.start_ns) OVER ()) / 1e9 AS time_s
                FROM transactions t JOIN samples s USING (run_id, sample_id)
                WHERE t.run_id = ? AND t.status = 'ok' {warm}
                ORDER BY s.condition_id, s.position, t.start_ns
                """,
                [run_id],
            ).fetchnumpy()
            cond = np.asarray(rows["condition_id"])
            values = np.asarray(rows["latency_ms"], dtype=np.float64)
            sample = np.asarray(rows["position"], dtype=np.int64)
            session = np.asarray(rows["session"], dtype=np.int64)
            time_s = np.asarray(rows["time_s"], dtype=np.float64) if timed else None
    # Rows are sorted by condition, so each condition is one contiguous slice.
    out = []
    for c in conditions:
        lo = int(np.searchsorted(cond, c.condition_id, side="left"))
        hi = int(np.searchsorted(cond, c.condition_id, side="right"))
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
