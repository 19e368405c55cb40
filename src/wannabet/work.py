"""Unit-of-work figures of a stored run: its samples' statistics, read by its backend.

The analysis (:mod:`wannabet.analysis.unit_of_work`) is pure and takes the backend's reading
of the statistics as an argument; this is where a stored run meets both: the store gives the
samples and the run's target, the registry the target's backend.
"""

from __future__ import annotations

from wannabet.analysis.client import ClientCost, client_costs
from wannabet.analysis.relations import RelationActivity, relation_activity
from wannabet.analysis.unit_of_work import (
    UnitOfWork,
    statistics_by_condition,
    unit_of_work_by_condition,
)
from wannabet.backends import backend_for
from wannabet.store import RunInfo, Store

__all__ = ["client_for_run", "relations_for_run", "unit_of_work_for_run"]


def relations_for_run(store: Store, run_id: int) -> list[RelationActivity]:
    """What each table and index did per condition, from the run's PostgreSQL statistics;
    empty for runs without them."""
    return relation_activity(statistics_by_condition(store.samples(run_id)))


def client_for_run(store: Store, run_id: int) -> list[ClientCost]:
    """What each condition cost wannabet's own process (peak memory, bytes received), from the
    run's statistics; empty for runs without them."""
    return client_costs(statistics_by_condition(store.samples(run_id)))


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
    by_condition = statistics_by_condition(store.samples(run_id))
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
    settings = info.settings or {}
    rates = settings.get("rates") or {}
    sessions = settings.get("sessions_by_condition") or {}
    default = settings.get("sessions")
    out = {}
    for label in labels:
        n = sessions.get(label, default)
        if label not in rates and isinstance(n, int):
            out[label] = n
    return out
