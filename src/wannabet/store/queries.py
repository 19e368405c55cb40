"""Named read queries over the results tables, for the analyses and the report.

Every ``SELECT`` an analysis or a renderer needs is here (or in :class:`~wannabet.store.Store`),
so the results schema has one owner: a column renamed in :mod:`wannabet.store.schema` is fixed
in this folder only. Each function takes an open connection (``with store.read() as con``), so a
caller that runs several queries opens the file once, and returns numpy columns or typed records,
never a cursor. The reductions stay in DuckDB: a million transactions never pass through a
Python loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import duckdb
import numpy as np
import pyarrow as pa

from wannabet.analysis import histogram
from wannabet.store.schema import INCLUDE_DEGRADED, LATENCY_MS, latency_ms

# -- per-sample and per-transaction columns (datasets, sufficient statistics) ----------------------


@dataclass(frozen=True, slots=True)
class SampleTps:
    """The TPS of every sample that has one, ordered by condition, then run order."""

    condition_id: np.ndarray  # int
    position: np.ndarray  # int
    tps: np.ndarray  # float64


@dataclass(frozen=True, slots=True)
class TransactionLatencies:
    """The successful transactions of a run in insertion order (run order, then start order)."""

    sample_id: np.ndarray  # int64
    session: np.ndarray  # int64
    latency_ms: np.ndarray  # float64
    start_ns: np.ndarray  # int64


@dataclass(frozen=True, slots=True)
class SufficientStats:
    """Per sample, ordered by condition then run order: n, Σy, Σy², Σlog y and Σ(log y)².

    The log sums are NaN where they are undefined (a latency that is not positive).
    """

    condition_id: np.ndarray  # int64
    n: np.ndarray  # float64
    s1: np.ndarray
    s2: np.ndarray
    l1: np.ndarray
    l2: np.ndarray


#: the samples an analysis uses, as a condition on ``samples s``: a ``degraded`` one only when
#: the store was opened to include them (:class:`~wannabet.store.Store` sets the variable on
#: every connection it opens). The one place that decides which samples count.
ANALYSED = f"(s.status <> 'degraded' OR getvariable('{INCLUDE_DEGRADED}'))"


def _warmup_filter(include_warmup: bool, table: str = "") -> str:
    return "" if include_warmup else f"AND NOT {table + '.' if table else ''}warmup"


def sample_tps(con: duckdb.DuckDBPyConnection, run_id: int) -> SampleTps:
    """The TPS of every sample of ``run_id`` that has one (stalled samples' 0 included)."""
    rows = con.execute(
        "SELECT condition_id, position, tps FROM samples s"
        f" WHERE run_id = ? AND tps IS NOT NULL AND {ANALYSED} ORDER BY condition_id, position",
        [run_id],
    ).fetchnumpy()
    return SampleTps(
        condition_id=np.asarray(rows["condition_id"]),
        position=np.asarray(rows["position"], dtype=np.int64),
        tps=np.asarray(rows["tps"], dtype=np.float64),
    )


def transaction_blocks(
    con: duckdb.DuckDBPyConnection,
    run_id: int,
    blocks: Sequence[tuple[int, int, int]],
    *,
    include_warmup: bool = False,
) -> TransactionLatencies:
    """Runs of consecutive successful transactions: for each ``(sample_id, offset, limit)``,
    ``limit`` of the sample's stored rows from the ``offset``-th on, in start order.

    Rows are written sample after sample, so DuckDB's zone maps skip every row group of other
    samples and the cost grows with the rows read up to each offset, not with the run.
    """
    if not blocks:
        none = np.empty(0, dtype=np.int64)
        return TransactionLatencies(none, none, np.empty(0, dtype=np.float64), none)
    part = (
        f"(SELECT sample_id, session, {LATENCY_MS} AS latency_ms, start_ns FROM transactions"
        f" WHERE run_id = ? AND sample_id = ? AND status = 'ok' {_warmup_filter(include_warmup)}"
        " LIMIT ? OFFSET ?)"
    )
    params: list[int] = []
    for sample_id, offset, limit in blocks:
        params += [run_id, int(sample_id), int(limit), int(offset)]
    rows = con.execute(" UNION ALL ".join([part] * len(blocks)), params).fetchnumpy()
    sample = np.asarray(rows["sample_id"], dtype=np.int64)
    start = np.asarray(rows["start_ns"], dtype=np.int64)
    # A union's branches may interleave: put every block back in sample and start order.
    order = np.lexsort((start, sample))
    return TransactionLatencies(
        sample_id=sample[order],
        session=np.asarray(rows["session"], dtype=np.int64)[order],
        latency_ms=np.asarray(rows["latency_ms"], dtype=np.float64)[order],
        start_ns=start[order],
    )


def sample_conditions(con: duckdb.DuckDBPyConnection, run_id: int) -> dict[int, int]:
    """Every sample's condition id, by ``sample_id`` (a sample with histograms but no
    moments, as an import of a tool's histograms alone, is found through it)."""
    rows = con.execute(
        "SELECT sample_id, condition_id FROM samples WHERE run_id = ?", [run_id]
    ).fetchall()
    return {int(sid): int(cid) for sid, cid in rows}


def sample_windows(con: duckdb.DuckDBPyConnection, run_id: int) -> SampleWindows:
    """Every sample's start (clock and measured window) and the share of its transactions
    stored as rows, by ``sample_id``."""
    rows = con.execute(
        "SELECT sample_id, t0_ns, measure_start_ns, end_ns, coalesce(recorded, 1.0) AS recorded"
        f" FROM samples s WHERE run_id = ? AND {ANALYSED} ORDER BY sample_id",
        [run_id],
    ).fetchnumpy()
    return SampleWindows(
        sample_id=np.asarray(rows["sample_id"], dtype=np.int64),
        t0_ns=np.asarray(rows["t0_ns"], dtype=np.int64),
        measure_start_ns=np.asarray(rows["measure_start_ns"], dtype=np.int64),
        end_ns=np.asarray(rows["end_ns"], dtype=np.int64),
        recorded=np.asarray(rows["recorded"], dtype=np.float64),
    )


def first_stalled_sample(con: duckdb.DuckDBPyConnection, run_id: int) -> tuple[str, int] | None:
    """Condition label and position of the first sample that completed nothing (0 TPS)."""
    row = con.execute(
        "SELECT c.label, s.position FROM samples s JOIN conditions c"
        " ON c.run_id = s.run_id AND c.condition_id = s.condition_id"
        f" WHERE s.run_id = ? AND s.tps IS NOT NULL AND s.tps <= 0 AND {ANALYSED}"
        " ORDER BY s.condition_id, s.position LIMIT 1",
        [run_id],
    ).fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


def tps_sufficient_stats(con: duckdb.DuckDBPyConnection, run_id: int) -> SufficientStats:
    """Each sample's TPS as one observation (``n = 1``), for the Bayesian throughput models."""
    rows = con.execute(
        "SELECT condition_id, 1 AS n, tps AS s1, tps * tps AS s2, ln(tps) AS l1,"
        " ln(tps) * ln(tps) AS l2 FROM samples s"
        f" WHERE run_id = ? AND tps IS NOT NULL AND {ANALYSED}"
        " ORDER BY condition_id, position",
        [run_id],
    ).fetchnumpy()
    return _sufficient(rows)


def latency_sufficient_stats(
    con: duckdb.DuckDBPyConnection, run_id: int, *, include_warmup: bool = False
) -> SufficientStats:
    """The latency sums of every sample, from the per-sample summaries (every transaction,
    whatever share of them was stored as rows).

    Log sums are NaN when a latency is not positive (or not known): the log-scale transaction
    models refuse such data, the sample-level model does not need them.
    """
    m = sample_moments(con, run_id, include_warmup=include_warmup)
    order = np.lexsort((m.position, m.condition_id))
    return SufficientStats(
        condition_id=m.condition_id[order],
        n=m.count[order].astype(np.float64),
        s1=m.sum_ms[order],
        s2=m.sumsq_ms[order],
        l1=m.sumlog_ms[order],
        l2=m.sumlog2_ms[order],
    )


def _sufficient(rows: dict[str, np.ndarray]) -> SufficientStats:
    def col(name: str) -> np.ndarray:
        a = rows[name]
        if isinstance(a, np.ma.MaskedArray):
            return np.asarray(a.filled(np.nan), dtype=np.float64)
        return np.asarray(a, dtype=np.float64)

    return SufficientStats(
        np.asarray(rows["condition_id"], dtype=np.int64),
        col("n"),
        col("s1"),
        col("s2"),
        col("l1"),
        col("l2"),
    )


class RunSpec(NamedTuple):
    """The experiment file a run was started from: its text and where it was read."""

    spec_text: str | None
    source: str | None


def run_spec(con: duckdb.DuckDBPyConnection, run_id: int) -> RunSpec | None:
    """The stored experiment file of ``run_id``; None when there is no such run."""
    row = con.execute("SELECT spec_text, source FROM runs WHERE run_id = ?", [run_id]).fetchone()
    return None if row is None else RunSpec(row[0], row[1])


# -- the report's reductions -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SampleWindows:
    """Per sample, by ``sample_id``: clock start, start of the measured window, end (ns), and
    the share of its transactions stored as rows (``samples.recorded``)."""

    sample_id: np.ndarray  # int64
    t0_ns: np.ndarray  # int64
    measure_start_ns: np.ndarray  # int64
    end_ns: np.ndarray  # int64
    recorded: np.ndarray  # float64


@dataclass(frozen=True, slots=True)
class SampleMoments:
    """Per sample with a successful transaction, ordered by ``sample_id``: count and latency sums.

    ``sum_ms``, ``sumsq_ms`` are Σ ms and Σ ms²; ``sumlog_ms``, ``sumlog2_ms`` are Σ ln ms and
    Σ (ln ms)², NaN when undefined (a latency that is not positive) or not known (an import of
    aggregates); ``min_ns``, ``max_ns`` the extremes, in integer ns.
    """

    sample_id: np.ndarray  # int64
    condition_id: np.ndarray  # int64
    position: np.ndarray  # int64
    block: np.ndarray  # int64
    count: np.ndarray  # int64
    sum_ms: np.ndarray  # float64
    sumsq_ms: np.ndarray  # float64
    sumlog_ms: np.ndarray  # float64
    sumlog2_ms: np.ndarray  # float64
    min_ns: np.ndarray  # int64
    max_ns: np.ndarray  # int64


@dataclass(frozen=True, slots=True)
class SampleBins:
    """Latency histogram bins per sample, ordered by ``sample_id`` then ``lo_ns``.

    Bins with identical edges (of several types or phases) are merged: their counts summed.
    """

    sample_id: np.ndarray  # int64
    lo_ns: np.ndarray  # int64
    hi_ns: np.ndarray  # int64
    count: np.ndarray  # int64


@dataclass(frozen=True, slots=True)
class ConditionBins:
    """Latency histogram bins per condition (all its samples merged), by condition, ``lo_ns``."""

    condition_id: np.ndarray  # int64
    lo_ns: np.ndarray  # int64
    hi_ns: np.ndarray  # int64
    count: np.ndarray  # int64


@dataclass(frozen=True, slots=True)
class StatusCounts:
    """Transactions per condition, type and status (``transactions.status`` names), sorted so."""

    condition_id: np.ndarray  # int64
    txn_type: np.ndarray  # int64
    status: np.ndarray  # object (str)
    count: np.ndarray  # int64


def _summary_filter(txn_type: int | None, include_warmup: bool, table: str) -> str:
    """The type and phase conditions on a summary table (``txn_type`` is an int, inlined)."""
    parts = [] if include_warmup else [f"AND NOT {table}.warmup"]
    if txn_type is not None:
        parts.append(f"AND {table}.txn_type = {int(txn_type)}")
    return " ".join(parts)


def _int64(rows: dict[str, np.ndarray], name: str) -> np.ndarray:
    return np.asarray(rows[name], dtype=np.int64)


def _float64(rows: dict[str, np.ndarray], name: str) -> np.ndarray:
    a = rows[name]
    if isinstance(a, np.ma.MaskedArray):
        return np.asarray(np.ma.filled(a.astype(np.float64), np.nan), dtype=np.float64)
    return np.asarray(a, dtype=np.float64)


def sample_moments(
    con: duckdb.DuckDBPyConnection,
    run_id: int,
    *,
    txn_type: int | None = None,
    include_warmup: bool = False,
) -> SampleMoments:
    """Each sample's moments, over one transaction type or all (``txn_type=None``).

    Reads ``sample_moments`` (a few rows per sample, never the transactions) and merges the
    rows of a sample's types (and phases, with ``include_warmup``): counts and sums add, the
    extremes are the extremes of extremes. A NaN log sum stays NaN, and a merge with a log sum
    that is not known (NULL) is not known.
    """
    rows = con.execute(
        f"""
        SELECT s.sample_id, s.condition_id, s.position, s.block, sum(m.count)::BIGINT AS count,
               fsum(m.sum_ms) AS sum_ms, fsum(m.sumsq_ms) AS sumsq_ms,
               CASE WHEN count(m.sumlog_ms) = count(*) THEN fsum(m.sumlog_ms) END AS sumlog_ms,
               CASE WHEN count(m.sumlog2_ms) = count(*) THEN fsum(m.sumlog2_ms) END
                   AS sumlog2_ms,
               min(m.min_ns) AS min_ns, max(m.max_ns) AS max_ns
        FROM sample_moments m JOIN samples s USING (run_id, sample_id)
        WHERE m.run_id = ? AND {ANALYSED} {_summary_filter(txn_type, include_warmup, "m")}
        GROUP BY s.sample_id, s.condition_id, s.position, s.block
        ORDER BY s.sample_id
        """,
        [run_id],
    ).fetchnumpy()
    return SampleMoments(
        sample_id=_int64(rows, "sample_id"),
        condition_id=_int64(rows, "condition_id"),
        position=_int64(rows, "position"),
        block=_int64(rows, "block"),
        count=_int64(rows, "count"),
        sum_ms=_float64(rows, "sum_ms"),
        sumsq_ms=_float64(rows, "sumsq_ms"),
        sumlog_ms=_float64(rows, "sumlog_ms"),
        sumlog2_ms=_float64(rows, "sumlog2_ms"),
        min_ns=_int64(rows, "min_ns"),
        max_ns=_int64(rows, "max_ns"),
    )


@dataclass(frozen=True, slots=True)
class SampleResults:
    """Per sample with a recorded result, ordered by ``sample_id``: the results' count, sum
    and sum of squares (``result = true`` transactions)."""

    sample_id: np.ndarray  # int64
    count: np.ndarray  # int64
    sum: np.ndarray  # float64
    sumsq: np.ndarray  # float64


def sample_results(
    con: duckdb.DuckDBPyConnection,
    run_id: int,
    *,
    txn_type: int | None = None,
    include_warmup: bool = False,
) -> SampleResults:
    """Each sample's results, over one transaction type or all, from ``sample_results``."""
    rows = con.execute(
        f"""
        SELECT r.sample_id, sum(r.count)::BIGINT AS count, fsum(r.sum) AS sum,
               fsum(r.sumsq) AS sumsq
        FROM sample_results r JOIN samples s USING (run_id, sample_id)
        WHERE r.run_id = ? AND {ANALYSED} {_summary_filter(txn_type, include_warmup, "r")}
        GROUP BY r.sample_id
        ORDER BY r.sample_id
        """,
        [run_id],
    ).fetchnumpy()
    return SampleResults(
        sample_id=_int64(rows, "sample_id"),
        count=_int64(rows, "count"),
        sum=_float64(rows, "sum"),
        sumsq=_float64(rows, "sumsq"),
    )


def sample_bins(
    con: duckdb.DuckDBPyConnection,
    run_id: int,
    *,
    txn_type: int | None = None,
    include_warmup: bool = False,
) -> SampleBins:
    """Each sample's latency histogram (successful transactions), one type or all merged."""
    rows = _bins_by(con, run_id, "b.sample_id", txn_type, include_warmup)
    return SampleBins(
        sample_id=_int64(rows, "key"),
        lo_ns=_int64(rows, "lo_ns"),
        hi_ns=_int64(rows, "hi_ns"),
        count=_int64(rows, "count"),
    )


def _bins_by(
    con: duckdb.DuckDBPyConnection,
    run_id: int,
    key: str,
    txn_type: int | None,
    include_warmup: bool,
) -> dict[str, np.ndarray]:
    """The analysed samples' latency bins summed per ``key`` (a column: ``b.sample_id``,
    ``s.condition_id``) and bin, ordered by key and bin."""
    return con.execute(
        f"""
        SELECT {key} AS key, b.lo_ns, b.hi_ns, sum(b.count)::BIGINT AS count
        FROM sample_bins b JOIN samples s USING (run_id, sample_id)
        WHERE b.run_id = ? AND {ANALYSED} {_summary_filter(txn_type, include_warmup, "b")}
        GROUP BY {key}, b.lo_ns, b.hi_ns
        ORDER BY {key}, b.lo_ns
        """,
        [run_id],
    ).fetchnumpy()


def histograms_by_sample(bins: SampleBins) -> dict[int, histogram.Histogram]:
    """The bins of :func:`sample_bins` split into one histogram per sample id."""
    ids, first = np.unique(bins.sample_id, return_index=True)
    bounds = [*first.tolist(), len(bins.sample_id)]
    return {
        int(sid): histogram.Histogram(
            bins.lo_ns[a:b].astype(np.uint64),
            bins.hi_ns[a:b].astype(np.uint64),
            bins.count[a:b].astype(np.uint64),
        )
        for sid, a, b in zip(ids, bounds[:-1], bounds[1:], strict=True)
    }


def condition_histogram(bins: ConditionBins, condition_id: int) -> histogram.Histogram:
    """The histogram of one condition out of :func:`condition_bins` (empty when it has none)."""
    mine = bins.condition_id == condition_id
    return histogram.Histogram(
        bins.lo_ns[mine].astype(np.uint64),
        bins.hi_ns[mine].astype(np.uint64),
        bins.count[mine].astype(np.uint64),
    )


def condition_bins(
    con: duckdb.DuckDBPyConnection,
    run_id: int,
    *,
    txn_type: int | None = None,
    include_warmup: bool = False,
) -> ConditionBins:
    """Each condition's latency histogram: its samples' bins merged in DuckDB (``GROUP BY``)."""
    rows = _bins_by(con, run_id, "s.condition_id", txn_type, include_warmup)
    return ConditionBins(
        condition_id=_int64(rows, "key"),
        lo_ns=_int64(rows, "lo_ns"),
        hi_ns=_int64(rows, "hi_ns"),
        count=_int64(rows, "count"),
    )


def status_counts(
    con: duckdb.DuckDBPyConnection, run_id: int, *, include_warmup: bool = False
) -> StatusCounts:
    """Transactions per condition, type and status, from ``sample_statuses``."""
    rows = con.execute(
        f"""
        SELECT s.condition_id, st.txn_type, st.status, sum(st.count)::BIGINT AS count
        FROM sample_statuses st JOIN samples s USING (run_id, sample_id)
        WHERE st.run_id = ? AND {ANALYSED} {_summary_filter(None, include_warmup, "st")}
        GROUP BY s.condition_id, st.txn_type, st.status
        ORDER BY s.condition_id, st.txn_type, st.status
        """,
        [run_id],
    ).fetchnumpy()
    return StatusCounts(
        condition_id=_int64(rows, "condition_id"),
        txn_type=_int64(rows, "txn_type"),
        status=np.asarray(rows["status"], dtype=object),
        count=_int64(rows, "count"),
    )


def _arrow(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> pa.Table:
    """The rows of ``sql`` as an Arrow table, through a relation (Arrow from ``execute()``
    costs an extra copy, and DuckDB 2 warns about it). DuckDB 2 refuses a relation while a
    result of ``execute()`` is unfinished (a ``fetchone``): that result is run to its end first."""
    finish = getattr(con, "complete", None)  # DuckDB 2; DuckDB 1 closes it by itself
    if finish is not None:
        finish()
    return con.sql(sql, params=params).to_arrow_table()


def samples_table(con: duckdb.DuckDBPyConnection, run_id: int) -> pa.Table:
    """Every sample of ``run_id`` (degraded ones too: ``status`` says which) with its
    condition's label, in ``sample_id`` order."""
    return _arrow(
        con,
        "SELECT s.*, c.label AS condition FROM samples s JOIN conditions c"
        " USING (run_id, condition_id) WHERE s.run_id = ? ORDER BY s.sample_id",
        [run_id],
    )


def transactions_table(
    con: duckdb.DuckDBPyConnection, run_id: int, *, include_warmup: bool = False
) -> pa.Table:
    """The stored transactions of the samples of ``run_id`` that :data:`ANALYSED` takes, as
    the ``transaction_latency`` view has them, in sample and start order."""
    return _arrow(
        con,
        f"""
        SELECT l.* FROM transaction_latency l JOIN samples s USING (run_id, sample_id)
        WHERE l.run_id = ? AND {ANALYSED} {_warmup_filter(include_warmup, "l")}
        ORDER BY l.sample_id, l.start_ns
        """,
        [run_id],
    )


#: the latency quantiles of :func:`sample_summary`: its column and probability
SUMMARY_QUANTILES: tuple[tuple[str, float], ...] = (
    ("p50_ms", 0.5),
    ("p95_ms", 0.95),
    ("p99_ms", 0.99),
)


def sample_summary(con: duckdb.DuckDBPyConnection, run_id: int) -> pa.Table:
    """One row per sample of ``run_id`` (those :data:`ANALYSED` takes), in ``sample_id`` order:
    the sample, its condition's label, its counts and TPS, and its latency figures.

    The figures are ``summary``'s, per sample and by the same code: measured (non-warm-up)
    successful transactions, mean and extremes from :func:`sample_moments`, p50/p95/p99 from
    the sample's merged histogram (:func:`sample_bins` and
    :func:`~wannabet.analysis.histogram.quantiles`: the order statistic's bin at its
    midpoint). ``sd_ms`` is the sample standard
    deviation from the same sums. A sample with no known latency (none succeeded, or an import
    that kept no latencies) has NULL figures, never NaN.
    """
    table = _arrow(
        con,
        f"""
        SELECT s.run_id, s.sample_id, s.position, s.condition_id, c.label AS condition, s.block,
               s.status, s.reason, s.t0_ns, s.measure_start_ns, s.end_ns, s.duration_s,
               s.warmup_s, coalesce(s.recorded, 1.0) AS recorded, s.transactions, s.committed,
               s.errors, s.tps, s.sessions_lost
        FROM samples s JOIN conditions c USING (run_id, condition_id)
        WHERE s.run_id = ? AND {ANALYSED}
        ORDER BY s.sample_id
        """,
        [run_id],
    )
    ids = table.column("sample_id").to_numpy().astype(np.int64).tolist()
    m = sample_moments(con, run_id)
    # each sample's row of sample_moments (-1: it has none); one step per sample
    row = {sid: i for i, sid in enumerate(m.sample_id.tolist())}
    at = np.asarray([row.get(sid, -1) for sid in ids], dtype=np.int64)
    has = at >= 0

    def pick(column: np.ndarray) -> np.ndarray:
        out = np.zeros(len(ids), dtype=column.dtype)
        out[has] = column[at[has]]
        return out

    n = pick(m.count)
    known = has & (n > 0)
    sum_ms, sumsq_ms = pick(m.sum_ms), pick(m.sumsq_ms)
    mean = sum_ms / np.maximum(n, 1)
    var = np.maximum(sumsq_ms - sum_ms * mean, 0.0) / np.maximum(n - 1, 1)
    quantiles = np.full((len(ids), len(SUMMARY_QUANTILES)), np.nan)
    hists = histograms_by_sample(sample_bins(con, run_id))
    low, high = pick(m.min_ns), pick(m.max_ns)
    for i, sid in enumerate(ids):
        h = hists.get(sid)
        if h is not None and histogram.count(h) > 0:
            # NULL extremes (an import that kept none) read as 0: no bound then.
            extremes = (float(low[i]), float(high[i])) if known[i] and high[i] > 0 else None
            qs = [q for _, q in SUMMARY_QUANTILES]
            quantiles[i] = histogram.quantiles(h, qs, extremes=extremes) / 1e6
    figures = {
        "mean_ms": (mean, known),
        "sd_ms": (np.sqrt(var), known & (n > 1)),
        "min_ms": (low / 1e6, known),
        **{name: (quantiles[:, j], known) for j, (name, _) in enumerate(SUMMARY_QUANTILES)},
        "max_ms": (high / 1e6, known),
    }
    table = table.append_column("latency_count", pa.array(n, mask=~known, type=pa.int64()))
    for name, (values, valid) in figures.items():
        shown = valid & np.isfinite(values)  # NULL, never NaN
        table = table.append_column(name, pa.array(values, mask=~shown, type=pa.float64()))
    return table


def transaction_type_names(con: duckdb.DuckDBPyConnection, run_id: int) -> dict[int, str]:
    """The run's transaction types: index → name, in index order."""
    rows = con.execute(
        "SELECT txn_type, name FROM transaction_types WHERE run_id = ? ORDER BY txn_type",
        [run_id],
    ).fetchall()
    return {int(t): str(n) for t, n in rows}


# -- a pilot run's samples, for ``wannabet plan`` ---------------------------------------------

#: the latency of a transaction of the table aliased ``t``
_T_MS = latency_ms("t")


def pilot_samples(con: duckdb.DuckDBPyConnection, run_id: int) -> list[tuple[Any, ...]]:
    """Per sample in run order: ``(sample_id, condition label, block, duration_s, warmup_s,
    t0_ns, end_ns, committed, position)``."""
    return con.execute(
        f"""
        SELECT s.sample_id, c.label, s.block, s.duration_s, s.warmup_s, s.t0_ns, s.end_ns,
               s.committed, s.position
        FROM samples s JOIN conditions c USING (run_id, condition_id)
        WHERE s.run_id = ? AND {ANALYSED} ORDER BY s.position
        """,
        [run_id],
    ).fetchall()


def _measured(txn_type: int | None) -> tuple[str, list[Any]]:
    """The stored successful transactions after the warm-up (of one type, or all)."""
    if txn_type is None:
        return "t.status = 'ok' AND NOT t.warmup", []
    return "t.status = 'ok' AND NOT t.warmup AND t.txn_type = ?", [txn_type]


def half_statistics(
    con: duckdb.DuckDBPyConnection, run_id: int, *, txn_type: int | None = None
) -> list[tuple[Any, ...]]:
    """Per sample and half of its measured window (by start time): ``(sample_id, late, count,
    mean ms, p99 ms)`` of the stored successful transactions."""
    where, params = _measured(txn_type)
    return con.execute(
        f"""
        SELECT t.sample_id,
               t.start_ns >= s.measure_start_ns + (s.end_ns - s.measure_start_ns) // 2 AS late,
               count(*) AS n, avg({_T_MS}) AS mean_ms,
               quantile_cont({_T_MS}, 0.99) AS p99_ms
        FROM transactions t JOIN samples s USING (run_id, sample_id)
        WHERE t.run_id = ? AND {where} AND {ANALYSED}
        GROUP BY ALL
        """,
        [run_id, *params],
    ).fetchall()


def whole_statistics(
    con: duckdb.DuckDBPyConnection, run_id: int, *, txn_type: int | None = None
) -> list[tuple[Any, ...]]:
    """Per sample: ``(sample_id, count, mean ms, variance ms², p99 ms)`` of the stored
    successful transactions after the warm-up."""
    where, params = _measured(txn_type)
    return con.execute(
        f"""
        SELECT t.sample_id, count(*) AS n, avg({_T_MS}) AS mean_ms,
               var_samp({_T_MS}) AS var_ms, quantile_cont({_T_MS}, 0.99) AS p99_ms
        FROM transactions t JOIN samples s USING (run_id, sample_id)
        WHERE t.run_id = ? AND {where} AND {ANALYSED}
        GROUP BY t.sample_id
        """,
        [run_id, *params],
    ).fetchall()


def schedule_lag(con: duckdb.DuckDBPyConnection, run_id: int) -> list[tuple[Any, ...]]:
    """Per condition: ``(condition_id, arrivals, measured seconds, stored rows, mean lag ms,
    p99 lag ms)``: transactions of any status after the warm-up per measured second, and how
    late the stored ones started against their schedule (``start_ns - intended_start_ns``)."""
    return con.execute(
        f"""
        WITH lag AS (
            SELECT s.condition_id, count(*) AS n,
                   avg((t.start_ns - t.intended_start_ns) / 1e6) AS mean_ms,
                   quantile_cont((t.start_ns - t.intended_start_ns) / 1e6, 0.99) AS p99_ms
            FROM transactions t JOIN samples s USING (run_id, sample_id)
            WHERE t.run_id = ? AND NOT t.warmup AND {ANALYSED}
            GROUP BY s.condition_id
        ), arrivals AS (
            SELECT condition_id, sum(transactions) AS arrivals, sum(duration_s) AS seconds
            FROM samples s WHERE run_id = ? AND {ANALYSED} GROUP BY condition_id
        )
        SELECT a.condition_id, a.arrivals, a.seconds, coalesce(l.n, 0), l.mean_ms, l.p99_ms
        FROM arrivals a LEFT JOIN lag l USING (condition_id)
        ORDER BY a.condition_id
        """,
        [run_id, run_id],
    ).fetchall()


class DegradedSample(NamedTuple):
    sample_id: int
    position: int
    condition: str
    reason: str | None
    #: its number within its condition (1-based, in run order, every stored sample counting)
    number: int
    #: its block, 0-based as stored
    block: int


def degraded_samples(con: duckdb.DuckDBPyConnection, run_id: int) -> list[DegradedSample]:
    """Every degraded sample of ``run_id``, whether the analyses include them or not."""
    rows = con.execute(
        "SELECT sample_id, position, label, reason, number, block FROM ("
        "  SELECT s.sample_id, s.position, c.label, s.reason, s.status, s.block,"
        "         row_number() OVER (PARTITION BY s.condition_id ORDER BY s.sample_id) AS number"
        "  FROM samples s JOIN conditions c USING (run_id, condition_id) WHERE s.run_id = ?"
        ") WHERE status = 'degraded' ORDER BY sample_id",
        [run_id],
    ).fetchall()
    return [DegradedSample(int(a), int(b), str(c), d, int(e), int(f)) for a, b, c, d, e, f in rows]


def sample_profiles(
    con: duckdb.DuckDBPyConnection, run_id: int
) -> dict[int, list[dict[str, float]]]:
    """Per condition id, the folded profile (``stack -> weight``) of every analysed sample that
    was profiled, in the order the samples ran."""
    rows = con.execute(
        "SELECT s.condition_id, s.sample_id, p.stack, p.weight FROM profiles p"
        " JOIN samples s USING (run_id, sample_id)"
        f" WHERE p.run_id = ? AND {ANALYSED} ORDER BY s.condition_id, s.position, p.stack",
        [run_id],
    ).fetchall()
    out: dict[int, dict[int, dict[str, float]]] = {}
    for condition_id, sample_id, stack, weight in rows:
        out.setdefault(condition_id, {}).setdefault(sample_id, {})[stack] = float(weight)
    return {c: list(samples.values()) for c, samples in out.items()}


@dataclass(frozen=True, slots=True)
class GeneratorSummary:
    """One load generator's part of one condition of a distributed run."""

    condition: str
    generator: int
    host: str
    samples: int
    #: samples in which the generator was lost
    lost: int
    #: measured commits, summed over the samples
    committed: int
    #: mean over the samples of its commits per second of the measured window
    tps: float | None
    #: quantiles of its stored successful transactions (None: no rows stored)
    p50_ms: float | None
    p99_ms: float | None
    #: its clock against the coordinator's (median over the samples of the offset measured
    #: before each), the largest uncertainty of those measurements, and the largest
    #: |start lag|: how late or early it started against the instant asked
    offset_ms: float | None = None
    uncertainty_ms: float | None = None
    start_lag_ms: float | None = None
    #: the largest start skew of the condition's samples (how far apart its generators started)
    start_skew_ms: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "condition": self.condition,
            "generator": self.generator,
            "host": self.host,
            "samples": self.samples,
            "lost": self.lost,
            "committed": self.committed,
            "tps": self.tps,
            "p50_ms": self.p50_ms,
            "p99_ms": self.p99_ms,
            "offset_ms": self.offset_ms,
            "uncertainty_ms": self.uncertainty_ms,
            "start_lag_ms": self.start_lag_ms,
            "start_skew_ms": self.start_skew_ms,
        }


def _generator_rows(run_id: int) -> str:
    """SQL: one row per sample and generator of a distributed run (its stats' ``generators``
    entries), with the generator's session range, its clock and whether the sample is analysed.
    Every sample, degraded ones included: a lost generator makes its sample degraded, and it
    must be counted as lost whether or not degraded samples are analysed."""
    return f"""
        WITH g AS (
            SELECT s.sample_id, s.condition_id, s.duration_s, {ANALYSED} AS analysed,
                   (json_extract(s.stats, '$.generators.start_skew_ns'))::BIGINT AS skew_ns,
                   unnest(CAST(json_extract(s.stats, '$.generators.generators') AS JSON[])) AS j
            FROM samples s
            WHERE s.run_id = {int(run_id)}
              AND json_extract(s.stats, '$.generators.generators') IS NOT NULL
        )
        SELECT sample_id, condition_id, duration_s, analysed, skew_ns,
               (j->>'generator')::INTEGER AS generator, j->>'host' AS host,
               (j->'sessions'->>0)::INTEGER AS first_session,
               (j->'sessions'->>1)::INTEGER AS last_session,
               coalesce((j->>'committed')::BIGINT, 0) AS committed,
               j->>'lost' AS lost,
               (j->>'offset_ns')::BIGINT AS offset_ns,
               (j->>'uncertainty_ns')::BIGINT AS uncertainty_ns,
               (j->>'start_lag_ns')::BIGINT AS start_lag_ns
        FROM g
    """


def generator_summaries(con: duckdb.DuckDBPyConnection, run_id: int) -> list[GeneratorSummary]:
    """Per condition and load generator of a distributed run: its samples, commits, TPS and
    latency quantiles (from the stored rows of its sessions); empty for a run on one host."""
    rows = con.execute(
        f"""
        WITH gg AS ({_generator_rows(run_id)}),
        lat AS (
            SELECT gg.condition_id, gg.generator,
                   quantile_cont({latency_ms("t")}, [0.5, 0.99]) AS q
            FROM transactions t
            JOIN gg ON t.run_id = ? AND t.sample_id = gg.sample_id
                   AND t.session BETWEEN gg.first_session AND gg.last_session
            WHERE t.status = 'ok' AND NOT t.warmup AND gg.analysed
            GROUP BY ALL
        ),
        skew AS (
            SELECT condition_id, max(skew_ns) AS skew_ns FROM gg GROUP BY condition_id
        )
        SELECT c.label, gg.generator, any_value(gg.host),
               count(*) FILTER (WHERE gg.analysed), count(gg.lost),
               sum(gg.committed) FILTER (WHERE gg.analysed),
               avg(CASE WHEN gg.lost IS NULL AND gg.duration_s > 0
                        THEN gg.committed / gg.duration_s END) FILTER (WHERE gg.analysed),
               any_value(lat.q),
               median(gg.offset_ns), max(gg.uncertainty_ns), max(abs(gg.start_lag_ns)),
               any_value(skew.skew_ns)
        FROM gg
        JOIN conditions c ON c.run_id = ? AND c.condition_id = gg.condition_id
        LEFT JOIN lat ON lat.condition_id = gg.condition_id AND lat.generator = gg.generator
        LEFT JOIN skew ON skew.condition_id = gg.condition_id
        GROUP BY c.label, gg.condition_id, gg.generator
        ORDER BY gg.condition_id, gg.generator
        """,
        [run_id, run_id],
    ).fetchall()

    def ms(ns: Any) -> float | None:
        return None if ns is None else float(ns) / 1e6

    return [
        GeneratorSummary(
            condition=label,
            generator=int(generator),
            host=str(host),
            samples=int(samples),
            lost=int(lost),
            committed=int(committed or 0),
            tps=None if tps is None else float(tps),
            p50_ms=None if q is None else float(q[0]),
            p99_ms=None if q is None else float(q[1]),
            offset_ms=ms(offset),
            uncertainty_ms=ms(uncertainty),
            start_lag_ms=ms(lag),
            start_skew_ms=ms(skew),
        )
        for (
            label,
            generator,
            host,
            samples,
            lost,
            committed,
            tps,
            q,
            offset,
            uncertainty,
            lag,
            skew,
        ) in rows
    ]
