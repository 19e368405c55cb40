"""Catalog entry 04 (examples/catalog/04-fetch-lots-of-data.toml) in a short form.

The entry is Swingbench's FetchLotsOfData as a script: count a random range of 101 customers'
rows (``\\gset``), then fetch them all or, above ``max_rows``, the first ``max_rows`` in key
order (``\\if``), from a table with a plain or a covering index. Here the customers have a
tenth of the rows (20,000 in all, ``max_rows`` 2,000, so about half the ranges are still
capped), each level two samples of a second.

The ``\\if`` is checked through what the covering index returned: its index-only scans read
``n`` entries for the count and ``min(n, max_rows)`` for the fetch, so the entries read per
transaction average E[n + min(n, max_rows)] over the ranges the script can draw, not the
E[2n] a script without the cap would read. Both expectations are computed here from the
set-up's own formula.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest

from wannabet.store import Store
from wannabet.testing.cli import wannabet

pytestmark = pytest.mark.postgres

ENTRY = (
    Path(__file__).resolve().parent.parent / "examples" / "catalog" / "04-fetch-lots-of-data.toml"
)
#: literal -> replacement; each literal must be in the file exactly once
SHRINK = {
    "THEN 201 ELSE 601": "THEN 21 ELSE 61",
    "max_rows = 20000": "max_rows = 2000",
}
MAX_ROWS = 2000
LEVELS = ("index=plain", "index=covering")


def runs_of(customer: int) -> int:
    """The shrunken set-up's rows per customer, as its SQL computes them."""
    return (customer * 7919) % (21 if customer < 500 else 61)


def range_rows() -> list[int]:
    """Rows of each range the script can draw: low in [0, 899], customers low..low+100."""
    per_customer = [runs_of(c) for c in range(1000)]
    return [sum(per_customer[low : low + 101]) for low in range(900)]


def ok(*args: str) -> str:
    done = wannabet(*args)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_fetch_lots_of_data_plain_against_covering(postgres: Any, tmp_path: Path) -> None:
    text = ENTRY.read_text()
    for literal, replacement in SHRINK.items():
        assert text.count(literal) == 1, literal  # the entry changed: update the test
        text = text.replace(literal, replacement)
    experiment = tmp_path / "04.toml"
    experiment.write_text(text)
    results = tmp_path / "r.duckdb"
    quick = ("--samples", "2", "--duration", "1s", "--warmup", "0s")
    ok("run", str(experiment), "--target", postgres.url, "-r", str(results), *quick)

    ranges = range_rows()
    assert sum(runs_of(c) for c in range(1000)) == int(
        postgres.psql("SELECT count(*) FROM mining_info_covering")
    )
    # Both branches of the \if run: some ranges are over the cap, some under.
    capped = sum(n > MAX_ROWS for n in ranges) / len(ranges)
    assert 0.3 < capped < 0.7, capped

    store = Store(results, read_only=True)
    samples = store.samples(store.run().run_id)
    assert sorted(s["condition"] for s in samples) == sorted(LEVELS * 2)
    entries = scans = 0
    for s in samples:
        assert s["status"] == "complete", s
        stats = json.loads(s["stats"])
        assert stats["engine"]["committed"] > 0
        if s["condition"] == "index=covering":
            [index] = [
                r
                for r in stats["postgres"]["indexes"]
                if r["relation"] == "mining_info_covering_key"
            ]
            entries += index["idx_tup_read"]
            scans += index["idx_scan"]
    transactions = scans / 2  # each transaction scans the index twice: count, then fetch
    assert transactions > 100, transactions
    per_txn = entries / transactions
    with_cap = statistics.fmean(n + min(n, MAX_ROWS) for n in ranges)
    without_cap = statistics.fmean(2 * n for n in ranges)
    spread = statistics.pstdev(n + min(n, MAX_ROWS) for n in ranges) / math.sqrt(transactions)
    assert abs(per_txn - with_cap) < 4 * spread, (per_txn, with_cap, spread)
    assert per_txn < without_cap - 4 * spread, (per_txn, without_cap)

    # The verdict and the tail, as the entry's page reports them.
    doc = json.loads(ok("compare", "-r", str(results), "-f", "json"))
    means = {c["condition"]: c["mean"] for c in doc["conditions"]}
    assert set(means) == set(LEVELS)
    [c] = doc["comparisons"]
    assert (c["baseline"], c["condition"]) == LEVELS
    assert c["delta_pct"] == pytest.approx((means[LEVELS[1]] / means[LEVELS[0]] - 1) * 100)
    assert c["ci_pct"][0] <= c["delta_pct"] <= c["ci_pct"][1]
    assert c["verdict"] in ("faster", "slower", "no-difference", "inconclusive")
    tail = json.loads(ok("compare", "-r", str(results), "--stat", "p99", "-f", "json"))
    assert tail["stat"] == "p99" and len(tail["comparisons"]) == 1
    # The summary's Tables section: each level read only its own table.
    summary = json.loads(ok("summary", "-r", str(results), "-f", "json"))
    read = {
        (r["condition"], r["relation"])
        for r in summary["relations"]
        if r["kind"] == "table" and r["per_sample"].get("idx_scan", 0) > 0
    }
    assert read == {
        ("index=plain", "mining_info_plain"),
        ("index=covering", "mining_info_covering"),
    }, read
