"""Catalog entry 05 (examples/catalog/05-approx-count-distinct.toml) in a short form.

The entry counts the distinct values of three columns of a 10M-row DuckDB table exactly and with
approx_count_distinct, at 1 and 2 threads, with a perf profile of every sample. Here the table
has 20,000 rows, each condition two samples, perf samples at 999 Hz instead of 99 (a query of a
few milliseconds would otherwise get no stack at all), and the column factor keeps the low- and
high-cardinality strings and drops the unique number `id`: 8 conditions instead of 12, since
perf takes from a fraction of a second to several seconds (on a loaded machine) to attach to
and read back every profiled sample, whatever its length. Every factor, the recorded answers,
the comparisons, the flame graphs and the report are the entry's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from wannabet.testing.ci import unavailable
from wannabet.testing.cli import wannabet
from wannabet.testing.packages import PackageUnavailable, ensure_command

ENTRY = (
    Path(__file__).resolve().parent.parent
    / "examples"
    / "catalog"
    / "05-approx-count-distinct.toml"
)
ROWS = 20_000
#: literal -> replacement; each literal must be in the file exactly once
SHRINK = {
    "range(10000000)": f"range({ROWS})",
    "frequency = 99\n": "frequency = 999\n",
    'levels = ["id", "val_lowcard", "val_unique"]': 'levels = ["val_lowcard", "val_unique"]',
}
COLUMNS = ("val_lowcard", "val_unique")
#: the exact number of distinct values of each column of the shrunken table
EXACT = {"val_lowcard": 10, "val_unique": ROWS}


def label(column: str, method: str, threads: int) -> str:
    return f"column={column},method={method},threads={threads}"


LABELS = [label(c, m, t) for c in COLUMNS for m in ("exact", "approx") for t in (1, 2)]


def ok(*args: str) -> str:
    done = wannabet(*args)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        ensure_command("perf", package="linux-perf")
    except PackageUnavailable as exc:
        unavailable("perf", exc)
    folder = tmp_path_factory.mktemp("catalog05")
    text = ENTRY.read_text()
    for literal, replacement in SHRINK.items():
        assert text.count(literal) == 1, literal  # the entry changed: update the test
        text = text.replace(literal, replacement)
    experiment = folder / "05.toml"
    experiment.write_text(text)
    results = folder / "r.duckdb"
    target = f"duckdb:///{folder / 'approx.duckdb'}"
    ok("run", str(experiment), "--target", target, "-r", str(results), "--samples", "2")
    return results


def by_pair(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c["baseline"], c["condition"]): c for c in doc["comparisons"]}


def test_every_condition_ran_and_recorded_its_answer(run: Path) -> None:
    with duckdb.connect(str(run), read_only=True) as con:
        rows = con.execute(
            "SELECT c.label, s.status, r.count, r.min, r.max"
            " FROM samples s JOIN conditions c USING (condition_id)"
            " JOIN sample_results r USING (sample_id)"
        ).fetchall()
    assert sorted({r[0] for r in rows}) == sorted(LABELS)
    assert len(rows) == 2 * len(LABELS)
    for cond, status, count, low, high in rows:
        assert status == "complete" and count == 1, (cond, status, count)
        column = cond.split(",")[0].split("=")[1]
        if "method=exact" in cond:
            assert low == high == EXACT[column], cond
        else:
            # HyperLogLog: within a few percent (DuckDB's sketch, measured 0.9-2.4%), the same
            # answer every time (the sketch is deterministic).
            assert low == high and abs(low / EXACT[column] - 1) < 0.05, (cond, low)


def test_the_accuracy_table_gives_each_estimates_relative_error(run: Path) -> None:
    doc = json.loads(
        ok("compare", "-r", str(run), "--stat", "result", "--pairs", "all", "-f", "json")
    )
    assert doc["stat"] == "result" and len(doc["comparisons"]) == 28  # 8 choose 2
    means = {c["condition"]: c["mean"] for c in doc["conditions"]}
    pairs = by_pair(doc)
    for column in COLUMNS:
        for threads in (1, 2):
            exact, approx = label(column, "exact", threads), label(column, "approx", threads)
            c = pairs[(exact, approx)]
            error = (means[approx] / means[exact] - 1) * 100
            assert c["delta_pct"] == pytest.approx(error, abs=1e-9)
            # Constant answers differ exactly: the interval is the point, the verdict sure.
            assert c["ci_pct"] == pytest.approx([error, error], abs=1e-9)
            expected = "no-difference" if abs(error) < 2 else ("higher" if error > 0 else "lower")
            assert c["verdict"] == expected, c
        # The threads never change an answer.
        same = pairs[(label(column, "exact", 1), label(column, "exact", 2))]
        assert same["delta_pct"] == 0 and same["verdict"] == "no-difference"


def test_the_time_comparison_covers_method_and_threads(run: Path) -> None:
    doc = json.loads(
        ok("compare", "-r", str(run), "--stat", "median", "--pairs", "all", "-f", "json")
    )
    medians = {c["condition"]: c["stat_value"] for c in doc["conditions"]}
    assert set(medians) == set(LABELS) and all(v > 0 for v in medians.values())
    pairs = by_pair(doc)
    for column in COLUMNS:
        for base, other in (
            (label(column, "exact", 1), label(column, "approx", 1)),
            (label(column, "exact", 1), label(column, "exact", 2)),
            (label(column, "approx", 1), label(column, "approx", 2)),
        ):
            c = pairs[(base, other)]
            low, high = c["ci_pct"]
            assert low <= c["delta_pct"] <= high, c
            assert c["verdict"] in ("faster", "slower", "no-difference", "inconclusive")
    # The entry's question per factor: exact against approx with column and threads held
    # fixed, one pair per column and thread count, and nothing else in Holm's family.
    within = json.loads(
        ok("compare", "-r", str(run), "--stat", "median", "--pairs", "within=method", "-f", "json")
    )
    assert within["pairs"] == "within=method"
    assert sorted((c["baseline"], c["condition"]) for c in within["comparisons"]) == sorted(
        (label(column, "exact", threads), label(column, "approx", threads))
        for column in COLUMNS
        for threads in (1, 2)
    )
    # The per-condition time table too (summary), with one transaction per sample.
    summary = json.loads(ok("summary", "-r", str(run), "-f", "json"))
    assert {c["condition"]: c["transactions"] for c in summary["conditions"]} == dict.fromkeys(
        LABELS, 2
    )


def test_the_factorial_effects_answer_per_factor(run: Path) -> None:
    # The entry's verdict: compare --bayes's main effects and interactions of the 2 x 2 x 2
    # design (the short form's column factor has two levels), each with its HDI.
    doc = json.loads(ok("compare", "-r", str(run), "--bayes", "-f", "json"))
    bayes = doc["bayes"]
    assert {c["condition"] for c in bayes["conditions"]} == set(LABELS)
    effects = {e["term"]: e for e in bayes["effects"]}
    mains = {"column: val_unique vs val_lowcard", "method: approx vs exact", "threads: 2 vs 1"}
    assert mains <= set(effects), sorted(effects)
    assert len(effects) == 7  # 3 main effects, 3 two-way and 1 three-way interaction
    assert sum("×" in term for term in effects) == 4
    for e in effects.values():
        low, high = e["hdi_pct"]
        assert -100 < low < high and low <= e["mean_pct"] <= high, e


def test_every_sample_has_a_profile_and_the_profiles_compare(run: Path, tmp_path: Path) -> None:
    with duckdb.connect(str(run), read_only=True) as con:
        per_sample = con.execute(
            "SELECT s.sample_id, count(p.stack) FROM samples s"
            " LEFT JOIN profiles p USING (run_id, sample_id) GROUP BY ALL"
        ).fetchall()
        stacks = [s for (s,) in con.execute("SELECT stack FROM profiles").fetchall()]
    assert len(per_sample) == 2 * len(LABELS) and all(n > 0 for _, n in per_sample), per_sample
    # DuckDB runs in the engine's session threads of this process, and its code is in them.
    assert any(s.startswith("wannabet-sessio") and "duckdb" in s.lower() for s in stacks)
    baseline = label("val_unique", "exact", 1)
    doc = json.loads(
        ok("compare", "-r", str(run), "--profile", "--baseline", baseline, "-f", "json")
    )
    diffs = {d["condition"]: d for d in doc["differences"]}
    assert set(diffs) == set(LABELS) - {baseline}
    for d in diffs.values():
        assert d["baseline"] == baseline and d["changes"], d
        for c in d["changes"]:
            if c["ci_pp"] is None:  # a frame that cannot be tested (no spread) is not decided
                assert c["verdict"] == "undecided", c
                continue
            assert c["ci_pp"][0] <= c["change_pp"] <= c["ci_pp"][1], c
            # A decided frame's interval excludes zero on its side.
            if c["verdict"] == "grew":
                assert c["ci_pp"][0] > 0, c
            elif c["verdict"] == "shrank":
                assert c["ci_pp"][1] < 0, c
    page = tmp_path / "approx.html"
    ok("report", "-r", str(run), "-o", str(page))
    html = page.read_text()
    assert "CPU profiles" in html and html.count('class="flame"') >= len(LABELS)
