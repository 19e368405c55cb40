"""Per-sample sufficient statistics of a stored run, computed in DuckDB.

One ``GROUP BY`` over the successful transactions of the run gives, per sample, n, Σy, Σy²,
Σlog y and Σ(log y)² of the latency in ms. The Bayesian models work on these numbers only, so
their cost does not grow with the number of transactions.

Runs without per-transaction rows:

* throughput: each sample's TPS is one value (``n = 1``);
* latency of aggregate-only imports (pgbench ``--aggregate-interval``, Swingbench, sysbench):
  refused with advice, as ``compare`` refuses them, because the sample-level model needs each
  sample's mean and within-sample variance of the very latencies it compares, and the
  transaction-level models need Σlog y, which no aggregate keeps.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from wannabet.analysis.bayes_models import SampleStats
from wannabet.errors import AnalysisError
from wannabet.store import RunInfo, Store

__all__ = ["load_sample_stats"]


def load_sample_stats(
    store: Store,
    run: RunInfo,
    *,
    metric: Literal["latency", "throughput"] = "latency",
    include_warmup: bool = False,
) -> list[SampleStats]:
    """Per-condition, per-sample sufficient statistics of a run, in condition order.

    Samples are in run order; conditions carry their factor levels for factorial effects.
    """
    run_id = run.run_id
    conditions = store.conditions(run_id)
    if not conditions:
        raise AnalysisError(f"run {run_id} has no conditions to compare")
    settings = run.settings or {}
    with store.read() as con:
        if metric == "throughput":
            if not bool(settings.get("timed", True)):
                raise AnalysisError(
                    f"run {run_id} was imported without a time column, so it has no "
                    "throughput; compare --metric latency, or import with --time"
                )
            # Every sample with a TPS, stalled ones (0 TPS) included, exactly the values the
            # frequentist comparison uses; dropping them would bias toward "faster".
            stalled = con.execute(
                "SELECT c.label, s.position FROM samples s JOIN conditions c"
                " ON c.run_id = s.run_id AND c.condition_id = s.condition_id"
                " WHERE s.run_id = ? AND s.tps IS NOT NULL AND s.tps <= 0"
                " ORDER BY s.condition_id, s.position LIMIT 1",
                [run_id],
            ).fetchone()
            if stalled is not None:
                label, position = stalled
                raise AnalysisError(
                    f"sample {position} of condition {label!r} in run {run_id} completed no "
                    "transactions (0 TPS); the Bayesian models work on log throughput and "
                    "cannot take it: compare --bayes --metric latency, or compare without "
                    "--bayes"
                )
            rows = con.execute(
                "SELECT condition_id, 1 AS n, tps AS s1, tps * tps AS s2, ln(tps) AS l1,"
                " ln(tps) * ln(tps) AS l2 FROM samples"
                " WHERE run_id = ? AND tps IS NOT NULL"
                " ORDER BY condition_id, position",
                [run_id],
            ).fetchnumpy()
        else:
            if settings.get("aggregates_only") or settings.get("log") == "aggregate":
                raise AnalysisError(
                    f"run {run_id} was imported from a file that holds only aggregates, not one "
                    "latency per transaction; compare --bayes --metric throughput instead"
                )
            warm = "" if include_warmup else "AND NOT t.warmup"
            # Log sums are NULL (then NaN) when a latency is not positive: the log-scale
            # transaction models refuse such data, the sample-level model does not need them.
            # ln() only ever sees positive values (the inner CASE): some DuckDB versions raise
            # on ln(0) instead of returning -inf, which would abort every model.
            rows = con.execute(
                f"""
                WITH tx AS (
                    SELECT t.sample_id, (t.end_ns - t.intended_start_ns) / 1e6 AS y
                    FROM transactions t
                    WHERE t.run_id = ? AND t.status = 'ok' {warm}
                ), per_sample AS (
                    SELECT sample_id, count(*) AS n, sum(y) AS s1, sum(y * y) AS s2,
                           CASE WHEN min(y) > 0
                                THEN sum(CASE WHEN y > 0 THEN ln(y) END) END AS l1,
                           CASE WHEN min(y) > 0
                                THEN sum(CASE WHEN y > 0 THEN ln(y) * ln(y) END) END AS l2
                    FROM tx GROUP BY sample_id
                )
                SELECT s.condition_id, p.n, p.s1, p.s2, p.l1, p.l2
                FROM per_sample p JOIN samples s ON s.run_id = ? AND s.sample_id = p.sample_id
                ORDER BY s.condition_id, s.position
                """,
                [run_id, run_id],
            ).fetchnumpy()
    cond = np.asarray(rows["condition_id"], dtype=np.int64)

    def col(name: str) -> np.ndarray:
        a = rows[name]
        if isinstance(a, np.ma.MaskedArray):
            return np.asarray(a.filled(np.nan), dtype=np.float64)
        return np.asarray(a, dtype=np.float64)

    n, s1, s2, l1, l2 = (col(c) for c in ("n", "s1", "s2", "l1", "l2"))
    out = []
    for c in conditions:
        sel = cond == c.condition_id
        if not sel.any():
            what = "throughput" if metric == "throughput" else "successful transactions"
            raise AnalysisError(
                f"condition {c.label!r} of run {run_id} has no samples with {what}; "
                "nothing to estimate"
            )
        out.append(
            SampleStats(
                c.label,
                n[sel],
                s1[sel],
                s2[sel],
                l1[sel],
                l2[sel],
                {str(k): str(v) for k, v in c.levels.items()},
            )
        )
    return out
