"""The client's cost per condition (wannabet.analysis.client): peak memory and bytes received."""

from __future__ import annotations

import pytest

from wannabet.analysis.client import client_costs

MIB = 2**20


def doc(peak: int | None, received: int | None = None, transactions: int = 10) -> dict:  # type: ignore[type-arg]
    engine: dict[str, int] = {"transactions": transactions}
    if received is not None:
        engine["bytes_received"] = received
    return {"engine": engine, "client_process": {"peak_rss_bytes": peak}}


def test_peaks_are_the_median_and_range_of_the_samples() -> None:
    # The first sample (the process still growing) is the lowest: the median is not pulled down.
    (cost,) = client_costs({"a": [doc(140 * MIB), doc(200 * MIB), doc(202 * MIB), doc(199 * MIB)]})
    assert cost.samples == 4
    assert cost.peak_rss_bytes == pytest.approx(199.5 * MIB)
    assert (cost.peak_rss_min_bytes, cost.peak_rss_max_bytes) == (140 * MIB, 202 * MIB)
    assert cost.bytes_per_transaction is None


def test_bytes_per_transaction_pool_the_samples() -> None:
    # 1,000 bytes over 10 transactions and 5,000 over 40: 6,000 / 50, not the mean of 100 and 125.
    (cost,) = client_costs({"a": [doc(None, 1000, 10), doc(None, 5000, 40)]})
    assert cost.bytes_per_transaction == pytest.approx(120.0)
    assert cost.peak_rss_bytes is None and cost.peak_rss_min_bytes is None


def test_conditions_keep_their_order_and_those_without_figures_are_left_out() -> None:
    costs = client_costs(
        {
            "b": [doc(3 * MIB)],
            "none": [{"engine": {"transactions": 5}, "client_process": {"peak_rss_bytes": None}}],
            "a": [doc(1 * MIB), {"valid": False}],
            "no-transactions": [doc(None, 500, 0)],
        }
    )
    assert [c.condition for c in costs] == ["b", "a"]
    assert costs[1].samples == 2 and costs[1].peak_rss_bytes == 1 * MIB
    assert costs[1].to_dict()["peak_rss_bytes"] == 1 * MIB
