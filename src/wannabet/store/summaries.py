"""Per-sample summaries: what a sample's transactions add up to, per transaction type and phase.

The engine builds them while it runs (``native/src/runner``), so they cost nothing afterwards,
and they are exact whether or not every transaction is also stored as a row. Three small column
tables, each keyed by ``(txn_type, warmup)``; "all types together" is never stored, because it is
an exact merge of the per-type rows (sums add, histograms merge bin by bin).

``moments``
    one row per (txn_type, warmup) with at least one successful transaction: ``count``, and over
    their latencies (``end_ns - intended_start_ns``, as in :data:`wannabet.store.schema.LATENCY_MS`)
    in milliseconds ``sum_ms``, ``sumsq_ms`` (Σ ms²), ``sumlog_ms`` and ``sumlog2_ms`` (Σ ln ms and
    Σ (ln ms)², NaN when a latency is not positive, since its log is undefined), and ``min_ns``,
    ``max_ns``.
``statuses``
    one row per (txn_type, warmup, status) that occurred, every status (``ok`` included), with its
    ``count``: errors by class.
``bins``
    the latency histogram of the successful transactions of each (txn_type, warmup): one row per
    non-empty bin ``[lo_ns, hi_ns]`` with its ``count`` (HdrHistogram's layout with 2 significant
    digits; see :mod:`wannabet.analysis.histogram`).
``results``
    for transaction types that record a result (``result = true``): one row per (txn_type,
    warmup) with at least one successful transaction whose result is a number: ``count``,
    ``sum``, ``sumsq``, ``min``, ``max`` of the results. Empty otherwise.

:func:`from_columns` computes the same summaries from a sample's transaction columns in NumPy:
the reference the engine's are tested against, and what engines without native summaries use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from wannabet.analysis import histogram

__all__ = [
    "BIN_COLUMNS",
    "MOMENT_COLUMNS",
    "RESULT_COLUMNS",
    "STATUS_COLUMNS",
    "SampleSummaries",
    "from_columns",
    "merge",
]

Columns = Mapping[str, NDArray[np.generic]]

MOMENT_COLUMNS: tuple[tuple[str, type], ...] = (
    ("txn_type", np.int16),
    ("warmup", np.bool_),
    ("count", np.int64),
    ("sum_ms", np.float64),
    ("sumsq_ms", np.float64),
    ("sumlog_ms", np.float64),
    ("sumlog2_ms", np.float64),
    ("min_ns", np.int64),
    ("max_ns", np.int64),
)
STATUS_COLUMNS: tuple[tuple[str, type], ...] = (
    ("txn_type", np.int16),
    ("warmup", np.bool_),
    ("status", np.int8),
    ("count", np.int64),
)
BIN_COLUMNS: tuple[tuple[str, type], ...] = (
    ("txn_type", np.int16),
    ("warmup", np.bool_),
    ("lo_ns", np.int64),
    ("hi_ns", np.int64),
    ("count", np.int64),
)
RESULT_COLUMNS: tuple[tuple[str, type], ...] = (
    ("txn_type", np.int16),
    ("warmup", np.bool_),
    ("count", np.int64),
    ("sum", np.float64),
    ("sumsq", np.float64),
    ("min", np.float64),
    ("max", np.float64),
)


def _none(spec: tuple[tuple[str, type], ...]) -> dict[str, NDArray[Any]]:
    return {col: np.empty(0, dtype=dtype) for col, dtype in spec}


def _table(
    name: str, given: Columns, spec: tuple[tuple[str, type], ...]
) -> dict[str, NDArray[Any]]:
    missing = [col for col, _ in spec if col not in given]
    if missing:
        raise ValueError(f"SampleSummaries.{name} lacks the columns {missing}")
    out: dict[str, NDArray[Any]] = {
        col: np.ascontiguousarray(given[col], dtype=dtype) for col, dtype in spec
    }
    lengths = {len(a) for a in out.values()}
    if len(lengths) > 1:
        raise ValueError(f"SampleSummaries.{name}: columns of different lengths {sorted(lengths)}")
    return out


@dataclass(frozen=True, slots=True, eq=False)
class SampleSummaries:
    """The summaries of one sample (see the module docstring for the three tables)."""

    moments: Mapping[str, NDArray[Any]]
    statuses: Mapping[str, NDArray[Any]]
    bins: Mapping[str, NDArray[Any]]
    #: empty unless transactions record a result (``result = true``)
    results: Mapping[str, NDArray[Any]] = field(default_factory=lambda: _none(RESULT_COLUMNS))

    def __post_init__(self) -> None:
        object.__setattr__(self, "moments", _table("moments", self.moments, MOMENT_COLUMNS))
        object.__setattr__(self, "statuses", _table("statuses", self.statuses, STATUS_COLUMNS))
        object.__setattr__(self, "bins", _table("bins", self.bins, BIN_COLUMNS))
        object.__setattr__(self, "results", _table("results", self.results, RESULT_COLUMNS))

    @classmethod
    def empty(cls) -> SampleSummaries:
        return cls(_none(MOMENT_COLUMNS), _none(STATUS_COLUMNS), _none(BIN_COLUMNS))


def from_columns(columns: Columns, measure_start_ns: int) -> SampleSummaries:
    """The summaries of a sample from its transaction columns.

    ``columns`` are the engine's (``txn_type``, ``intended_start_ns``, ``start_ns``, ``end_ns``,
    ``status``); a transaction is warm-up when it started before ``measure_start_ns``, as the
    store marks it. Status 0 is success.
    """
    txn = np.asarray(columns["txn_type"], dtype=np.int16)
    status = np.asarray(columns["status"], dtype=np.int8)
    warm = np.asarray(columns["start_ns"], dtype=np.int64) < measure_start_ns
    latency = np.maximum(
        np.asarray(columns["end_ns"], dtype=np.int64)
        - np.asarray(columns["intended_start_ns"], dtype=np.int64),
        0,
    )
    moments: dict[str, list[float | int | bool]] = {col: [] for col, _ in MOMENT_COLUMNS}
    statuses: dict[str, list[int | bool]] = {col: [] for col, _ in STATUS_COLUMNS}
    bins: dict[str, list[NDArray[Any]]] = {col: [] for col, _ in BIN_COLUMNS}
    for t in np.unique(txn):
        for w in (True, False):
            group = (txn == t) & (warm == w)
            if not group.any():
                continue
            codes, counts = np.unique(status[group], return_counts=True)
            for code, n in zip(codes, counts, strict=True):
                statuses["txn_type"].append(int(t))
                statuses["warmup"].append(w)
                statuses["status"].append(int(code))
                statuses["count"].append(int(n))
            ns = latency[group & (status == 0)]
            if ns.size == 0:
                continue
            ms = ns / 1e6
            positive = bool((ns > 0).all())
            logs = np.log(ms) if positive else None
            moments["txn_type"].append(int(t))
            moments["warmup"].append(w)
            moments["count"].append(int(ns.size))
            moments["sum_ms"].append(float(ms.sum()))
            moments["sumsq_ms"].append(float((ms * ms).sum()))
            moments["sumlog_ms"].append(float(logs.sum()) if logs is not None else np.nan)
            moments["sumlog2_ms"].append(float((logs * logs).sum()) if logs is not None else np.nan)
            moments["min_ns"].append(int(ns.min()))
            moments["max_ns"].append(int(ns.max()))
            h = histogram.from_values(ns.astype(np.uint64))
            keep = h.count > 0
            n_bins = int(keep.sum())
            bins["txn_type"].append(np.full(n_bins, t, dtype=np.int16))
            bins["warmup"].append(np.full(n_bins, w, dtype=np.bool_))
            bins["lo_ns"].append(h.lo_ns[keep].astype(np.int64))
            bins["hi_ns"].append(h.hi_ns[keep].astype(np.int64))
            bins["count"].append(h.count[keep].astype(np.int64))
    return SampleSummaries(
        moments={
            col: np.asarray(v, dtype=dtype)
            for (col, dtype), v in zip(MOMENT_COLUMNS, moments.values(), strict=True)
        },
        statuses={
            col: np.asarray(v, dtype=dtype)
            for (col, dtype), v in zip(STATUS_COLUMNS, statuses.values(), strict=True)
        },
        bins={
            col: (np.concatenate(parts) if parts else np.empty(0, dtype=dtype)).astype(dtype)
            for (col, dtype), parts in zip(BIN_COLUMNS, bins.values(), strict=True)
        },
    )


#: how each summary column merges over parts with the same key: summed, smallest, largest
_SUMMED, _LEAST, _MOST = "sum", "min", "max"
_MERGE: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "moments": (
        ("txn_type", "warmup"),
        {
            "count": _SUMMED,
            "sum_ms": _SUMMED,
            "sumsq_ms": _SUMMED,
            "sumlog_ms": _SUMMED,
            "sumlog2_ms": _SUMMED,
            "min_ns": _LEAST,
            "max_ns": _MOST,
        },
    ),
    "statuses": (("txn_type", "warmup", "status"), {"count": _SUMMED}),
    "bins": (("txn_type", "warmup", "lo_ns", "hi_ns"), {"count": _SUMMED}),
    "results": (
        ("txn_type", "warmup"),
        {"count": _SUMMED, "sum": _SUMMED, "sumsq": _SUMMED, "min": _LEAST, "max": _MOST},
    ),
}
_SPECS = {
    "moments": MOMENT_COLUMNS,
    "statuses": STATUS_COLUMNS,
    "bins": BIN_COLUMNS,
    "results": RESULT_COLUMNS,
}


def merge(parts: Sequence[SampleSummaries]) -> SampleSummaries:
    """The summaries of one sample run in ``parts`` (by several load generators), exactly.

    Rows with the same key add up: counts and sums add (a NaN log sum stays NaN), minima and
    maxima take the least and the most, histogram bins with the same bounds add their counts.
    Every generator's histograms share the one bin layout, so nothing is rebinned.
    """
    tables: dict[str, dict[str, NDArray[Any]]] = {}
    for name, (keys, rules) in _MERGE.items():
        spec = _SPECS[name]
        merged: dict[tuple[Any, ...], dict[str, Any]] = {}
        for part in parts:
            table = getattr(part, name)
            for i in range(len(table[keys[0]])):
                key = tuple(table[k][i].item() for k in keys)
                row = {col: table[col][i].item() for col in rules}
                got = merged.get(key)
                if got is None:
                    merged[key] = row
                    continue
                for col, rule in rules.items():
                    a, b = got[col], row[col]
                    got[col] = (
                        a + b if rule == _SUMMED else min(a, b) if rule == _LEAST else max(a, b)
                    )
        ordered = sorted(merged)
        tables[name] = {
            col: np.asarray(
                [k[keys.index(col)] for k in ordered]
                if col in keys
                else [merged[k][col] for k in ordered],
                dtype=dtype,
            )
            for col, dtype in spec
        }
    return SampleSummaries(tables["moments"], tables["statuses"], tables["bins"], tables["results"])
