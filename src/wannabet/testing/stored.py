"""Transactions to write through the store in tests: the columns of ``Store.add_sample`` for a
sample whose transactions all committed, from their start and end times."""

from __future__ import annotations

import numpy as np

__all__ = ["committed_columns"]


def committed_columns(start_ns: np.ndarray, end_ns: np.ndarray) -> dict[str, np.ndarray]:
    """One session's transactions of type 0, each committed on its first try, started on time
    (``intended_start_ns`` = ``start_ns``)."""
    n = start_ns.size
    return {
        "session": np.zeros(n, dtype=np.int32),
        "txn_type": np.zeros(n, dtype=np.int16),
        "intended_start_ns": start_ns,
        "start_ns": start_ns,
        "end_ns": end_ns,
        "status": np.zeros(n, dtype=np.int8),
        "error_code": np.full(n, -1, dtype=np.int32),
        "retries": np.zeros(n, dtype=np.int32),
    }
