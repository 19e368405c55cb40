"""What each condition cost the client: wannabet's own process, where the engine runs.

Per condition, from the samples' statistics documents (``engine`` and ``client_process``
sections): the process's peak resident memory (``peak_rss_bytes``, the kernel's high-water mark
reset at each sample's start) as the median and range over samples, and the bytes received from
the server per transaction (``bytes_received`` over the sample's transactions, pooled).

Why the median of the peaks: the peak is the whole process's memory, and the run's first sample
is lower than the rest while the process still grows (imports, the database's first pages), so a
mean would bias a comparison against whichever condition ran first. The differences between
conditions are what a condition holds; the level is the process's.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ClientCost:
    """One condition's client figures; None where no sample recorded them."""

    condition: str
    #: samples with a statistics document
    samples: int
    #: median, lowest and highest peak resident memory of the samples that recorded one
    peak_rss_bytes: float | None
    peak_rss_min_bytes: int | None
    peak_rss_max_bytes: int | None
    #: bytes received from the server per transaction (the native PostgreSQL and MySQL clients
    #: count them; in-process and DB-API targets have no wire)
    bytes_per_transaction: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "peak_rss_bytes": self.peak_rss_bytes,
            "peak_rss_min_bytes": self.peak_rss_min_bytes,
            "peak_rss_max_bytes": self.peak_rss_max_bytes,
            "bytes_per_transaction": self.bytes_per_transaction,
        }


def _number(section: Any, key: str) -> float | None:
    value = section.get(key) if isinstance(section, Mapping) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def client_costs(by_condition: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[ClientCost]:
    """Per condition (in the mapping's order), the client's peak memory and bytes received;
    conditions whose samples recorded neither are left out."""
    out = []
    for condition, docs in by_condition.items():
        peaks = [
            int(p)
            for d in docs
            if (p := _number(d.get("client_process"), "peak_rss_bytes")) is not None
        ]
        received = transactions = 0.0
        counted = False
        for d in docs:
            engine = d.get("engine")
            got, n = _number(engine, "bytes_received"), _number(engine, "transactions")
            if got is not None and n:
                received, transactions, counted = received + got, transactions + n, True
        if not peaks and not counted:
            continue
        out.append(
            ClientCost(
                condition=condition,
                samples=len(docs),
                peak_rss_bytes=float(statistics.median(peaks)) if peaks else None,
                peak_rss_min_bytes=min(peaks) if peaks else None,
                peak_rss_max_bytes=max(peaks) if peaks else None,
                bytes_per_transaction=received / transactions if counted else None,
            )
        )
    return out
