"""``compare --pairs within=FACTOR``: the levels of one factor compared with every other factor
held fixed. On a results file written through the store with seeded samples: a 2 x 3 design in
which ``cache`` slows every transaction by 30% and ``threads`` changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from wannabet.analysis.compare import pairs_of
from wannabet.errors import AnalysisError
from wannabet.store import ConditionRow, SampleRow, Store
from wannabet.testing.cli import one_line_error, wannabet_in_process
from wannabet.testing.stored import committed_columns

CACHE = ("warm", "cold")
THREADS = ("1", "2", "4")
CONDITIONS = [{"cache": c, "threads": t} for t in THREADS for c in CACHE]
SAMPLES = 8


def label(levels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in levels.items())


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("within") / "r.duckdb"
    store = Store(path)
    run_id = store.create_run(
        name="within",
        kind="run",
        seed=1,
        target="sqlite:///x.db",
        settings={"sessions": 1},
        environment={},
        conditions=[ConditionRow(i, label(lv), lv) for i, lv in enumerate(CONDITIONS)],
        transaction_types=[("t", 1, "SELECT 1;")],
    )
    rng = np.random.default_rng(52)
    t0 = 1_700_000_000_000_000_000
    sample_id = 0
    for position in range(SAMPLES):
        for cond, lv in enumerate(CONDITIONS):
            scale = 1.3 if lv["cache"] == "cold" else 1.0
            ms = scale * rng.gamma(8.0, 0.125, 300) * np.exp(rng.normal(0.0, 0.03))
            start = t0 + sample_id * 10**9 + np.arange(ms.size, dtype=np.int64) * 2_000_000
            cols = committed_columns(start, start + np.round(ms * 1e6).astype(np.int64))
            hot = int(rng.binomial(2000, 0.4 if lv["cache"] == "cold" else 0.05))
            stacks = [("main;read;disk", hot), ("main;read;memory", 2000 - hot)]
            row = SampleRow(sample_id, cond, 0, position, t0, t0, t0 + 10**9, 0.0)
            store.add_sample(run_id, row, cols, stacks=stacks)
            sample_id += 1
    store.finish_run(run_id, "complete")
    return path


def compared(results: Path, *args: str) -> dict:
    done = wannabet_in_process("compare", "-r", str(results), "-f", "json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_levels_of_one_factor_are_compared_with_the_others_held_fixed(results: Path) -> None:
    doc = compared(results, "--pairs", "within=cache")
    assert doc["pairs"] == "within=cache"
    pairs = [(c["baseline"], c["condition"], c["verdict"]) for c in doc["comparisons"]]
    # One pair per level of threads, and nothing else: Holm runs over these three.
    assert pairs == [
        (f"cache=warm,threads={t}", f"cache=cold,threads={t}", "slower") for t in THREADS
    ], pairs


def test_the_table_titles_the_pairs_and_each_line_names_its_reference(results: Path) -> None:
    done = wannabet_in_process("compare", "-r", str(results), "--pairs", "within=threads")
    assert done.returncode == 0, done.stderr
    assert "The levels of threads, every other factor held fixed" in done.stdout
    # threads=2 is compared with threads=1 and is the reference of threads=4: each line says which.
    assert "cache=warm,threads=2 vs cache=warm,threads=1: " in done.stdout, done.stdout
    assert "cache=warm,threads=4 vs cache=warm,threads=2: " in done.stdout, done.stdout


def test_a_factor_of_three_levels_gives_every_pair_of_its_levels(results: Path) -> None:
    doc = compared(results, "--pairs", "within=threads")
    pairs = [(c["baseline"], c["condition"]) for c in doc["comparisons"]]
    assert len(pairs) == 6  # 3 pairs of levels for each of the 2 levels of cache
    for reference, condition in pairs:
        ref = dict(kv.split("=") for kv in reference.split(","))
        other = dict(kv.split("=") for kv in condition.split(","))
        assert ref["cache"] == other["cache"] and ref["threads"] != other["threads"]
    # threads changes nothing: no pair is called faster or slower.
    assert not [c for c in doc["comparisons"] if c["verdict"] in ("faster", "slower")], doc


def test_a_statistic_and_the_profiles_take_the_same_pairs(results: Path) -> None:
    doc = compared(results, "--pairs", "within=cache", "--stat", "p99")
    assert len(doc["comparisons"]) == 3
    assert {c["verdict"] for c in doc["comparisons"]} == {"slower"}
    doc = compared(results, "--profile", "--pairs", "within=cache")
    assert doc["pairs"] == "within=cache" and len(doc["differences"]) == 3
    for d in doc["differences"]:
        assert "cache=warm" in d["baseline"] and "cache=cold" in d["condition"]
        assert d["decided"]["disk"] == "grew"


def test_an_unknown_factor_is_one_line_naming_the_factors(results: Path) -> None:
    done = wannabet_in_process("compare", "-r", str(results), "--pairs", "within=index")
    line = one_line_error(done, 2)
    assert "--pairs" in line and "'index'" in line and "cache, threads" in line, line
    done = wannabet_in_process(
        "compare", "-r", str(results), "--profile", "--pairs", "within=index"
    )
    line = one_line_error(done, 2)
    assert "--pairs" in line and "'index'" in line, line
    done = wannabet_in_process("compare", "-r", str(results), "--pairs", "between")
    line = one_line_error(done, 2)
    assert "within=FACTOR" in line, line


def test_pairs_of_within_needs_a_level_shared_by_two_conditions() -> None:
    levels = {
        "a": {"f": "1", "g": "x"},
        "b": {"f": "2", "g": "y"},  # differs from a in g too
        "c": {"f": "2", "g": "x"},
    }
    assert pairs_of(list(levels), "a", "within=f", levels) == [("a", "c")]
    # The earlier condition of the pair is its reference.
    assert pairs_of(list(levels), "a", "within=g", levels) == [("b", "c")]
    with pytest.raises(AnalysisError, match="no two conditions differ in 'f' alone"):
        pairs_of(["a", "b"], "a", "within=f", levels)


def test_the_report_takes_the_same_pairs_as_compare(results: Path, tmp_path: Path) -> None:
    """``report --pairs``: the Markdown verdict table and the page's are compare's pairs, each
    row naming its reference, and the page's caption says which pairs they are."""
    done = wannabet_in_process(
        "report", "-r", str(results), "-f", "markdown", "--pairs", "within=cache"
    )
    assert done.returncode == 0, done.stderr
    assert "_The levels of cache, every other factor held fixed" in done.stdout, done.stdout
    doc = compared(results, "--pairs", "within=cache")
    verdict_rows = [line for line in done.stdout.splitlines() if f"**{'slower'}**" in line]
    assert len(verdict_rows) == len(doc["comparisons"]) == 3, done.stdout
    for c, row in zip(doc["comparisons"], verdict_rows, strict=True):
        assert row.startswith(f"| {c['condition']} | {c['baseline']} |"), row
    page = tmp_path / "report.html"
    done = wannabet_in_process(
        "report", "-r", str(results), "-o", str(page), "--pairs", "within=cache"
    )
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert "The levels of cache, every other factor held fixed" in html
    assert "Each condition against the baseline" not in html
    # A pair's reference is in its row: the verdict table has the baseline column.
    assert "<th>baseline</th>" in html
    done = wannabet_in_process("report", "-r", str(results), "-f", "markdown", "--pairs", "x")
    line = one_line_error(done, 2)
    assert "--pairs" in line and "within=FACTOR" in line, line
