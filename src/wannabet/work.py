"""Unit-of-work figures of a stored run: its samples' statistics, read by its backend.

The analysis (:mod:`wannabet.analysis.unit_of_work`) is pure and takes the backend's reading
of the statistics as an argument; this is where a stored run meets both: the store gives the
samples and the run's target, the registry the target's backend.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wannabet.analysis import Observations
from wannabet.analysis.client import ClientCost, client_costs
from wannabet.analysis.relations import RelationActivity, relation_activity
from wannabet.analysis.unit_of_work import (
    IO_STAT_PREFIX,
    UnitOfWork,
    WorkSource,
    check_unit,
    sample_statistics,
    statistics_by_condition,
    unit_of_work_by_condition,
    work_values,
)
from wannabet.backends import backend_for
from wannabet.errors import AnalysisError
from wannabet.store import RunInfo, Store

__all__ = ["client_for_run", "relations_for_run", "unit_of_work_for_run", "work_observations"]


def _by_condition(store: Store, run_id: int) -> dict[str, list[Any]]:
    return statistics_by_condition(store.samples(run_id), include_degraded=store.include_degraded)


def relations_for_run(store: Store, run_id: int) -> list[RelationActivity]:
    """What each table and index did per condition, from the run's PostgreSQL statistics;
    empty for runs without them."""
    return relation_activity(_by_condition(store, run_id))


def client_for_run(store: Store, run_id: int) -> list[ClientCost]:
    """What each condition cost wannabet's own process (peak memory, bytes received), from the
    run's statistics; empty for runs without them."""
    return client_costs(_by_condition(store, run_id))


def unit_of_work_for_run(store: Store, run_id: int, unit: str = "commit") -> list[UnitOfWork]:
    """Per-condition unit-of-work results of a stored run: what summary and report show.

    Runs without statistics (imports, ``--no-stats`` runs) give an empty list.

    Raises
    ------
    AnalysisError
        ``unit`` is neither ``"commit"`` nor a transaction type of the run.
    TargetError
        The run has statistics but its target is no backend's.
    """
    by_condition = _by_condition(store, run_id)
    if not by_condition:
        return []
    # Every run records its target's kind; only imports have none, and they have no statistics.
    info = store.run(run_id)
    backend = backend_for(info.target_kind or "")
    return unit_of_work_by_condition(
        by_condition,
        unit,
        source=backend.work(),
        closed_sessions=closed_loops(info, list(by_condition)),
    )


def closed_loops(info: RunInfo, labels: list[str]) -> dict[str, int]:
    """The sessions of each closed-loop condition of a run (open-loop ones are left out)."""
    out = {}
    for label in labels:
        n = info.sessions_of(label)
        if label not in info.rates and n is not None:
            out[label] = n
    return out


def work_observations(
    store: Store, info: RunInfo, stat: str, unit: str = "commit"
) -> tuple[list[Observations], dict[str, float]]:
    """Per condition (in condition order), each sample's unit-of-work figure ``stat`` in ms per
    unit as :class:`Observations` numbered as every output numbers samples, and the mean of
    those values (the figure ``summary`` reports). Conditions without the figure in any sample
    are left out; so are degraded samples unless the store includes them.

    Raises
    ------
    AnalysisError
        ``unit`` is neither ``"commit"`` nor a transaction type of the run, or ``stat`` is not
        a unit-of-work figure.
    """
    from wannabet.datasets import sample_numbers

    number = sample_numbers(store, info.run_id)
    docs: dict[str, list[Any]] = {}
    ids: dict[str, list[int]] = {}
    for row in sorted(store.samples(info.run_id), key=lambda r: int(r.get("condition_id") or 0)):
        # The same filter as summary's, row by row, so each value keeps its sample's number.
        doc = sample_statistics(row, include_degraded=store.include_degraded)
        if doc is not None:
            docs.setdefault(str(row["condition"]), []).append(doc)
            ids.setdefault(str(row["condition"]), []).append(number[int(row["position"])])
    if not docs:
        return [], {}
    # The same unit check as summary's: an unknown type is an error, not an empty comparison.
    check_unit(docs, unit)
    source = backend_for(info.target_kind or "").work()
    if stat.startswith(IO_STAT_PREFIX):
        _check_counter(stat.removeprefix(IO_STAT_PREFIX), docs, source, info)
    out, means = [], {}
    for label, found in docs.items():
        kept = [
            (n, v)
            for n, v in zip(ids[label], work_values(found, stat, unit, source=source), strict=True)
            if v is not None
        ]
        if not kept:
            continue
        values = np.array([v for _, v in kept], dtype=float)
        out.append(Observations(label, values, np.array([n for n, _ in kept], dtype=np.int64)))
        means[label] = float(values.mean())
    return out, means


def _check_counter(
    counter: str, docs: dict[str, list[Any]], source: WorkSource, info: RunInfo
) -> None:
    """An I/O counter no sample of the run has is a mistake to name, with the ones it has."""
    seen = {key for found in docs.values() for doc in found for key in source.extract(doc).io}
    if counter not in seen:
        have = ", ".join(f"io:{k}" for k in sorted(seen)) or "none"
        raise AnalysisError(
            f"run {info.run_id} has no I/O counter {counter!r}; its samples have: {have}"
        )
