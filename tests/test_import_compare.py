"""`import csv` and `compare` end to end, including the published figures of the CLT article."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from test_summaries import assert_summaries_match_rows
from wannabet.analysis import histogram
from wannabet.store import Store, queries
from wannabet.testing import cli

# Imports of small fixtures: a hang shows within two minutes.
wannabet = functools.partial(cli.wannabet, timeout=120)

FIVE_GROUP_MEANS = [38.2, 34.7, 41.2, 43.9, 42.1]
# The thirty child-sample means listed in the CLT article (exponential parent, mean 5).
THIRTY_CHILD_MEANS = [
    6.35511, 4.91329, 3.7737, 5.27418, 6.52658, 7.68304, 4.4319, 6.09553, 4.64664, 6.10894,
    4.422, 5.21073, 4.33155, 6.78821, 5.38437, 5.38456, 5.80179, 4.60562, 4.87516, 6.77315,
    5.38634, 5.55096, 5.43312, 4.48588, 4.75642, 5.06397, 4.43674, 4.72971, 5.00164, 6.06055,
]  # fmt: skip


def write_csv(path: Path, header: str, rows: list[str]) -> Path:
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def compare_json(results: Path, *args: str) -> dict:
    proc = wannabet("compare", "--results", str(results), "--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_seed_002_five_group_means(tmp_path: Path) -> None:
    csv = write_csv(tmp_path / "five.csv", "group,mean_ms", [f"g,{v}" for v in FIVE_GROUP_MEANS])
    results = tmp_path / "r.duckdb"
    proc = wannabet(
        "import",
        "csv",
        str(csv),
        "--condition",
        "group",
        "--value",
        "mean_ms",
        "--results",
        str(results),
    )
    assert proc.returncode == 0, proc.stderr
    (c,) = compare_json(results)["conditions"]
    assert c["n"] == 5
    assert round(c["mean"], 2) == 40.02
    assert round(c["sd"], 3) == 3.619
    assert [round(x, 2) for x in c["clt"]["sd_range_1645"]] == [34.07, 45.97]
    assert [round(x, 2) for x in c["clt"]["sd_range_2"]] == [32.78, 47.26]


def test_seed_002_thirty_child_means(tmp_path: Path) -> None:
    rows = [f"child,{i},{v}" for i, v in enumerate(THIRTY_CHILD_MEANS)]
    csv = write_csv(tmp_path / "thirty.csv", "set,sample,mean", rows)
    results = tmp_path / "r.duckdb"
    proc = wannabet(
        "import", "csv", str(csv), "--condition", "set", "--value", "mean", "--sample", "sample",
        "--results", str(results),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (c,) = compare_json(results)["conditions"]
    assert round(c["mean"], 3) == 5.343
    assert round(c["sd"], 3) == 0.892
    assert c["clt"]["within_sd_range_2"] == {"count": 29, "n": 30}
    table = wannabet("compare", "--results", str(results)).stdout
    assert "29 of 30 observed lie within ±2 sd" in table
    # Each row is a sample of one value: its summaries are that value's.
    store = Store(results)
    run_id = store.run().run_id
    with store.read() as con:
        assert assert_summaries_match_rows(con, run_id) == 30
        moments = queries.sample_moments(con, run_id)
        pooled = queries.condition_bins(con, run_id)
    assert moments.sum_ms.tolist() == pytest.approx(THIRTY_CHILD_MEANS, rel=1e-9)
    ns = [round(v * 1e6) for v in THIRTY_CHILD_MEANS]
    assert pooled.count.sum() == 30
    assert pooled.lo_ns.tolist() == histogram.from_values(ns).lo_ns.tolist()


def test_samples_group_rows_and_a_real_difference_is_found(tmp_path: Path) -> None:
    import numpy as np

    rng = np.random.default_rng(5)
    rows = []
    for s in range(20):
        for cond, scale in (("before", 1.0), ("after", 0.8)):
            offset = rng.normal(0, 0.02)
            for v in rng.lognormal(np.log(2.0 * scale) + offset, 0.3, 50):
                rows.append(f"{cond},{cond}-{s},{v:.5f}")
    csv = write_csv(tmp_path / "ab.csv", "cond,sample,ms", rows)
    results = tmp_path / "r.duckdb"
    assert (
        wannabet(
            "import",
            "csv",
            str(csv),
            "--condition",
            "cond",
            "--value",
            "ms",
            "--sample",
            "sample",
            "--results",
            str(results),
        ).returncode
        == 0
    )
    info = Store(results).run()
    assert (info.kind, info.conditions, info.samples, info.transactions) == ("import", 2, 40, 2000)
    for level in ("sample", "transaction"):
        doc = compare_json(results, "--level", level, "--baseline", "before")
        (cmp,) = doc["comparisons"]
        assert cmp["condition"] == "after" and cmp["baseline"] == "before"
        assert cmp["verdict"] == "faster"
        assert -24 < cmp["delta_pct"] < -16
        assert cmp["ci_pct"][0] < cmp["delta_pct"] < cmp["ci_pct"][1] < -2
    assert "faster" in wannabet("compare", "--results", str(results), "--format", "markdown").stdout
    csv_out = wannabet("compare", "--results", str(results), "--format", "csv").stdout
    assert csv_out.splitlines()[0].startswith("condition,baseline,n,mean")


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        ("", ("--condition", "c", "--value", "v"), "the file is empty"),
        ("c,v\n", ("--condition", "c", "--value", "v"), "no rows after the header"),
        (
            "c,v\na,1\nb,2\n",
            ("--condition", "cond", "--value", "v"),
            ":1: --condition 'cond' is not a column",
        ),
        (
            "c,v\na,1\nb,x\n",
            ("--condition", "c", "--value", "v"),
            ":3: column 'v': 'x' is not a number",
        ),
        ("c,v\na,1\nb,\n", ("--condition", "c", "--value", "v"), ":3: column 'v': is empty"),
        (
            "c;v\na;1,5\nb;2,0\n",
            ("--condition", "c", "--value", "v"),
            ":2: column 'v': '1,5' has a comma",
        ),
        (
            "c,v\na,1\nb,2,3\nc,4\n",
            ("--condition", "c", "--value", "v"),
            ":3: 3 fields where the header has 2",
        ),
        (
            "c,v\na,1\nb,NaN\n",
            ("--condition", "c", "--value", "v"),
            ":3: column 'v': 'NaN' is not a finite number",
        ),
        (
            "c,v\na,1\nb,-2\n",
            ("--condition", "c", "--value", "v"),
            ":3: column 'v': '-2' is negative",
        ),
        (
            "c,v,t\na,1,0.5\nb,2,noon\n",
            ("--condition", "c", "--value", "v", "--time", "t"),
            ":3: column 't'",
        ),
    ],
)
def test_malformed_csv_is_one_line_and_imports_nothing(
    tmp_path: Path, content: str, args: tuple[str, ...], message: str
) -> None:
    csv = tmp_path / "bad.csv"
    csv.write_text(content)
    results = tmp_path / "r.duckdb"
    proc = wannabet("import", "csv", str(csv), *args, "--results", str(results))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "bad.csv" in lines[0]
    assert message in lines[0]
    assert not results.exists() or Store(results).runs() == []


def test_unknown_baseline_is_a_clear_error(tmp_path: Path) -> None:
    csv = write_csv(tmp_path / "x.csv", "c,v", ["a,1", "b,2", "a,1.5", "b,2.5"])
    results = tmp_path / "r.duckdb"
    wannabet(
        "import", "csv", str(csv), "--condition", "c", "--value", "v", "--results", str(results)
    )
    proc = wannabet("compare", "--results", str(results), "--baseline", "zzz")
    assert proc.returncode == 2 and "no condition 'zzz'" in proc.stderr and "a, b" in proc.stderr


def test_compare_across_runs_from_the_command_line(tmp_path: Path) -> None:
    results = tmp_path / "r.duckdb"
    for name, shift in (("before", 0.0), ("after", 5.0)):
        rows = [f"x,{v + shift}" for v in FIVE_GROUP_MEANS * 2]
        csv = write_csv(tmp_path / f"{name}.csv", "c,v", rows)
        proc = wannabet(
            "import", "csv", str(csv), "--condition", "c", "--value", "v", "--results", str(results)
        )
        assert proc.returncode == 0, proc.stderr
    doc = compare_json(results, "--run", "1", "--run", "2")
    assert [r["name"] for r in doc["run"]] == ["before", "after"]
    (cmp,) = doc["comparisons"]
    assert (cmp["condition"], cmp["baseline"]) == ("2:x", "1:x")
    table = wannabet("compare", "--results", str(results), "--run", "1", "--run", "2").stdout
    assert "Runs 1 (before), 2 (after)" in table


def test_a_csv_file_is_imported_once_unless_forced_and_can_join_a_run(tmp_path: Path) -> None:
    results = tmp_path / "r.duckdb"
    before = write_csv(tmp_path / "before.csv", "c,v", [f"old,{v}" for v in FIVE_GROUP_MEANS])
    after = write_csv(tmp_path / "after.csv", "c,v", [f"new,{v + 5}" for v in FIVE_GROUP_MEANS])
    args = ("--condition", "c", "--value", "v", "--results", str(results))
    assert wannabet("import", "csv", str(before), *args).returncode == 0
    # The same content again would double its weight: refused, and nothing written.
    proc = wannabet("import", "csv", str(before), *args)
    assert proc.returncode == 2 and "already imported as run 1" in proc.stderr, proc.stderr
    assert [r.run_id for r in Store(results).runs()] == [1]
    # Another file joins run 1 as a second condition, so the two compare within one run.
    proc = wannabet("import", "csv", str(after), *args, "--run", "1")
    assert proc.returncode == 0, proc.stderr
    doc = compare_json(results, "--run", "1", "--baseline", "old")
    assert [c["condition"] for c in doc["conditions"]] == ["old", "new"]
    assert all(c["n"] == 5 for c in doc["conditions"])
    assert wannabet("import", "csv", str(before), *args, "--force").returncode == 0
    assert [r.run_id for r in Store(results).runs()] == [1, 2]
