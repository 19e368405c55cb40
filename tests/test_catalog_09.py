"""Catalog entry 9 (examples/catalog/09-read-consistency.toml) in a short form.

The entry scans a 4M-row table once per sample while a held session keeps 1M of its rows updated
0, 2, 4 or 6 times without commit, in sequential order, and judges the four sets with an omnibus
test and all and successive pairs (Holm), with each scan's buffer statistics and its answer.
Here the table has 40,000 rows, the held updates touch 10,000 of them, and each set has two
samples: the same levels, held sessions, hooks, statistics and comparisons, in seconds.
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres
from wannabet.testing.cli import wannabet

ENTRY = Path(__file__).resolve().parent.parent / "examples" / "catalog" / "09-read-consistency.toml"
ROWS = 40_000
UPDATED = 10_000
#: literal -> (replacement, how many times the entry holds it)
SHRINK = {
    "generate_series(1, 4000000)": (f"generate_series(1, {ROWS})", 1),
    # Two per round: 2 + 4 + 6 held updates.
    "WHERE id <= 1000000;": (f"WHERE id <= {UPDATED};", 12),
}
LABELS = ["rounds=0", "rounds=1", "rounds=2", "rounds=3"]
#: sum(update_seq) of the committed table: g % 1000 over 1..ROWS, the held updates unseen
COMMITTED_SUM = sum(g % 1000 for g in range(1, ROWS + 1))


def ok(*args: str) -> str:
    done = wannabet(*args)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def run(postgres: ThrowawayPostgres, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("catalog09")
    text = ENTRY.read_text()
    for literal, (replacement, count) in SHRINK.items():
        assert text.count(literal) == count, literal  # the entry changed: update the test
        text = text.replace(literal, replacement)
    experiment = folder / "09.toml"
    experiment.write_text(text)
    results = folder / "r.duckdb"
    ok("run", str(experiment), "--target", postgres.url, "-r", str(results), "--samples", "2")
    return results


def samples_of(results: Path) -> list[dict[str, Any]]:
    store = Store(results, read_only=True)
    return store.samples(store.run().run_id)


@pytest.mark.postgres
def test_each_set_scans_the_row_versions_its_held_session_wrote(run: Path) -> None:
    samples = samples_of(run)
    # Sequential: all of one set's samples, then the next, each sample one scan.
    assert [s["condition"] for s in samples] == [label for label in LABELS for _ in (1, 2)]
    assert all(s["status"] == "complete" and s["transactions"] == 1 for s in samples)
    blocks: dict[str, list[int]] = {}
    for s in samples:
        stats = json.loads(s["stats"])
        [table] = [t for t in stats["postgres"]["tables"] if t["relation"] == "rc_test"]
        assert table["seq_scan"] == 1, table  # the scan itself; the caching hook is outside
        blocks.setdefault(s["condition"], []).append(
            table["heap_blks_hit"] + table["heap_blks_read"]
        )
        # The held session is recorded with every sample it was open for, and only those.
        held = stats.get("held") or []
        assert len(held) == (0 if s["condition"] == "rounds=0" else 1), (s["condition"], held)
    # Both scans of a set read the same blocks (VACUUM FULL before each set leaves the previous
    # set's versions out), and each round adds 2 x UPDATED row versions to read: at 2 rounds
    # the table holds 1.5 x its rows, at 3 rounds 2 x (within the pages' rounding).
    for label, pair in blocks.items():
        assert pair[0] == pair[1], (label, pair)
    base = blocks["rounds=0"][0]
    for k, label in enumerate(LABELS):
        versions = ROWS + 2 * k * UPDATED
        assert blocks[label][0] == pytest.approx(base * versions / ROWS, rel=0.05), blocks


@pytest.mark.postgres
def test_every_scan_saw_the_committed_table(run: Path) -> None:
    answers = ("--stat", "result", "--pairs", "all")
    doc = json.loads(ok("compare", "-r", str(run), *answers, "-f", "json"))
    assert {c["condition"]: c["stat_value"] for c in doc["conditions"]} == dict.fromkeys(
        LABELS, COMMITTED_SUM
    )
    assert {c["verdict"] for c in doc["comparisons"]} == {"no-difference"}


@pytest.mark.postgres
def test_the_sets_are_compared_all_pairs_and_successive_pairs(run: Path) -> None:
    every = json.loads(ok("compare", "-r", str(run), "--pairs", "all", "-f", "json"))
    assert every["pairs"] == "all"
    assert every["omnibus"]["test"] in {"kruskal-wallis", "one-way anova"}
    assert 0 <= every["omnibus"]["p"] <= 1
    pairs = [(c["baseline"], c["condition"]) for c in every["comparisons"]]
    assert pairs == [(a, b) for i, a in enumerate(LABELS) for b in LABELS[i + 1 :]]
    # Holm over the six: no adjusted p below its raw one, and the smallest multiplied by 6.
    for c in every["comparisons"]:
        assert c["p_adjusted"] >= c["p_value"], c
    smallest = min(every["comparisons"], key=lambda c: c["p_value"])
    assert smallest["p_adjusted"] == pytest.approx(min(1.0, 6 * smallest["p_value"]))

    successive = json.loads(ok("compare", "-r", str(run), "--pairs", "successive", "-f", "json"))
    assert successive["pairs"] == "successive"
    assert [(c["baseline"], c["condition"]) for c in successive["comparisons"]] == list(
        pairwise(LABELS)
    )
    # The same pair judged in a family of three is adjusted less than in a family of six.
    first = {(c["baseline"], c["condition"]): c for c in every["comparisons"]}
    for c in successive["comparisons"]:
        assert c["p_value"] == pytest.approx(first[(c["baseline"], c["condition"])]["p_value"])
        assert c["p_adjusted"] <= first[(c["baseline"], c["condition"])]["p_adjusted"]
