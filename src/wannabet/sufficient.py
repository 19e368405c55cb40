"""Per-sample sufficient statistics of a stored run.

The per-sample summaries give, per sample, n, Σy, Σy², Σlog y and Σ(log y)² of the latency in
ms of every successful transaction (stored as a row or not). The Bayesian models work on these
numbers only, so their cost does not grow with the number of transactions. The queries are
:func:`wannabet.store.queries.latency_sufficient_stats` and ``tps_sufficient_stats``.

Runs without per-transaction rows:

* throughput: each sample's TPS is one value (``n = 1``);
* latency of aggregate-only imports (pgbench ``--aggregate-interval``, Swingbench, sysbench):
  refused with advice, as ``compare`` refuses them, because the sample-level model needs each
  sample's mean and within-sample variance of the very latencies it compares, and the
  transaction-level models need Σlog y, which no aggregate keeps.
"""

from __future__ import annotations

from typing import Literal

from wannabet.analysis.bayes_models import SampleStats
from wannabet.errors import AnalysisError
from wannabet.store import RunInfo, Store, queries

__all__ = ["load_sample_stats"]


def load_sample_stats(
    store: Store,
    run: RunInfo,
    *,
    metric: Literal["latency", "throughput"] = "latency",
    include_warmup: bool = False,
    skip_empty: bool = False,
) -> list[SampleStats]:
    """Per-condition, per-sample sufficient statistics of a run, in condition order.

    Samples are in run order; conditions carry their factor levels for factorial effects.
    ``skip_empty`` leaves out a condition with nothing to estimate (every transaction failed)
    instead of refusing the run: the comparison leaves it out too, and says so.
    """
    run_id = run.run_id
    conditions = store.conditions(run_id)
    if not conditions:
        raise AnalysisError(f"run {run_id} has no conditions to compare")
    with store.read() as con:
        if metric == "throughput":
            if not run.timed:
                raise AnalysisError(
                    f"run {run_id} was imported without a time column, so it has no "
                    "throughput; compare --metric latency, or import with --time"
                )
            # Every sample with a TPS, stalled ones (0 TPS) included, exactly the values the
            # frequentist comparison uses; dropping them would bias toward "faster".
            stalled = queries.first_stalled_sample(con, run_id)
            if stalled is not None:
                label, position = stalled
                raise AnalysisError(
                    f"sample {position} of condition {label!r} in run {run_id} completed no "
                    "transactions (0 TPS); the Bayesian models work on log throughput and "
                    "cannot take it: compare --bayes --metric latency, or compare without "
                    "--bayes"
                )
            stats = queries.tps_sufficient_stats(con, run_id)
        else:
            if run.aggregates_only:
                raise AnalysisError(
                    f"run {run_id} was imported from a file that holds only aggregates, not one "
                    "latency per transaction; compare --bayes --metric throughput instead"
                )
            stats = queries.latency_sufficient_stats(con, run_id, include_warmup=include_warmup)
    cond = stats.condition_id
    n, s1, s2, l1, l2 = stats.n, stats.s1, stats.s2, stats.l1, stats.l2
    out = []
    for c in conditions:
        sel = cond == c.condition_id
        if not sel.any():
            if skip_empty:
                continue
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
