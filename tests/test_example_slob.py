"""examples/postgres-slob.toml (issue #17, part 4) in a short form, through the command line.

The example's point is that its reads are not buffer hits: a table of one row per block, much
larger than shared_buffers, read at random. Its full size (1 GiB) would take most of this
test's time to load, so the test shrinks the table to 8192 blocks (64 MiB) and runs it on a
PostgreSQL of its own with 2 MB of shared_buffers (256 buffers): the same ratio of table to
buffers as the example's full form on a server with 16 MB, and a buffer hit ratio that the
table's size, not the test's luck, keeps near 256 / 8192. The suite's shared server has the
default 128 MB, which would hold the whole shrunken table after the load.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from conftest import throwaway_postgres
from wannabet.datasets import SHAPE_SUBSET
from wannabet.store import Store
from wannabet.testing.cli import wannabet
from wannabet.testing.report_page import heatmap_counts

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "postgres-slob.toml"
ROWS = 8192
# Where the example holds its table size (131072 rows): the set-up's INSERT and the variable
# its reads draw their keys from.
SIZES = ("generate_series(1, {})", "rows = {}")
LEVELS = ("sessions=1", "sessions=4", "sessions=16")
QUICK = ("--samples", "2", "--duration", "0.8s")


def _may_drop_caches() -> bool:
    """Whether this process may drop the OS page cache, found out by doing it (pages only, as
    the example's hook does before every sample anyway): root in a container without the
    capability passes an access check and still fails the write."""
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1")
    except OSError:
        return False
    return True


@pytest.mark.postgres
def test_the_slob_example_reads_past_shared_buffers_and_reports_a_heatmap(
    tmp_path: Path,
) -> None:
    text = EXAMPLE.read_text()
    # Both places that hold the size are shrunk together: if either is missing or written
    # twice, this says so rather than running a table and keys that disagree.
    for size in SIZES:
        assert text.count(size.format(131072)) == 1, size
        text = text.replace(size.format(131072), size.format(ROWS))
    small = tmp_path / "postgres-slob.toml"
    small.write_text(text)
    results = tmp_path / "r.duckdb"

    with throwaway_postgres(settings={"shared_buffers": "2MB"}) as pg:
        run = wannabet("run", str(small), "--target", pg.url, "--results", str(results), *QUICK)
        assert run.returncode == 0, run.stderr
        # SLOB's one row per block: every row has a block of its own, so every read of a row
        # not in shared_buffers is one block read.
        blocks, rows = pg.psql(
            "SELECT pg_relation_size('slob') / current_setting('block_size')::int, count(*)"
            " FROM slob"
        ).split("|")
        assert int(blocks) == int(rows) == ROWS

    store = Store(results, read_only=True)
    samples = store.samples(store.run().run_id)
    assert Counter(s["condition"] for s in samples) == dict.fromkeys(LEVELS, 2)
    # Root may drop the OS page cache (unless a container forbids it); anyone else gets the
    # hook's note (or a drop through sudo) and a run that goes on. Either way the hook ran
    # before every sample and its word is kept with the sample.
    may_drop = _may_drop_caches()
    waits = 0.0
    for s in samples:
        assert s["status"] == "complete", s  # not degraded
        stats = json.loads(s["stats"])
        [hook] = stats["hooks"]
        assert hook["when"] == "before-sample"
        if may_drop:
            assert hook["output"].strip() == "dropped the OS page cache", hook
        else:
            assert "the OS page cache" in hook["output"], hook
        [table] = [t for t in stats["postgres"]["tables"] if t["relation"] == "slob"]
        # Nearly every read asked the kernel for its block: 256 buffers hold at most 3% of
        # the table (measured: 97% of the transactions read a block).
        committed = stats["engine"]["committed"]
        assert committed > 100, stats["engine"]
        assert table["heap_blks_read"] > 0.8 * committed, (table, committed)
        waits += sum(
            e["count"] for e in stats["postgres"]["waits"]["events"] if e["event"] == "DataFileRead"
        )
    # ... and the sessions were seen waiting for those reads (about 20 polls a sample, a third
    # to all of them on DataFileRead here).
    assert waits > 0

    # The multimodality test ran on every condition's transactions (all of them, up to the
    # bounded subset the shape analyses examine).
    compare = wannabet("compare", "--results", str(results), "--format", "json")
    assert compare.returncode == 0, compare.stderr
    conditions = {c["condition"]: c for c in json.loads(compare.stdout)["conditions"]}
    assert set(conditions) == set(LEVELS)
    for c in conditions.values():
        modes = c["consistency"]["multimodality_transactions"]
        assert modes["test"] == "silverman" and 0 <= modes["p"] <= 1, modes
        assert modes["n"] == min(c["n_transactions"], SHAPE_SUBSET) > 0

    # The report draws the latency heatmap with every level's transactions in it (spread over
    # time buckets with rounding, so within 2% of the measured count).
    page = tmp_path / "report.html"
    report = wannabet("report", "--results", str(results), "-o", str(page))
    assert report.returncode == 0, report.stderr
    counts = heatmap_counts(page.read_text())
    assert set(counts) == set(LEVELS)
    for label, c in conditions.items():
        assert abs(counts[label] - c["n_transactions"]) <= 0.02 * c["n_transactions"], (
            label,
            counts[label],
            c["n_transactions"],
        )
