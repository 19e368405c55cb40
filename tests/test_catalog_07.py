"""Catalog entry 7, "Wanna bet?" (seed article 002): the central limit theorem through imports.

The entry is examples/catalog/07-wanna-bet.sh: three `wannabet import csv` runs and their
`compare`. This test makes the same imports in this process (each command line is checked to
stand in the script as written, so the two cannot drift apart) and checks the article's own
figures come out: the five group means' 40.0 +/- 2 x 3.6 (32.8 to 47.2), nine of the ten hidden
means inside it, and 29 of the article's 30 child means within 5.343 +/- 2 x 0.892. The data
are a few hundred rows, so the short form is the full form less the shell around it.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from wannabet.testing.cli import wannabet
from wannabet.testing.report_page import chart_spec

CATALOG = Path(__file__).resolve().parent.parent / "examples" / "catalog"
SCRIPT = CATALOG / "07-wanna-bet.sh"
DATA = CATALOG / "data"
GENERATOR = DATA / "07-generate-exponential.py"

# The import options exactly as the script writes them after the file name.
AGES = (
    '07-dba-ages.csv" --condition condition --value mean_age --sample group --name wanna-bet-ages'
)
ARTICLE = (
    '07-article-child-means.csv" --condition condition --value mean --sample child_set'
    " --name wanna-bet-clt"
)
GENERATED = '07-exponential-900.csv" --condition condition --value value --sample child_set --run'
SCALE_UP = "--values 8100 --sets 90"
SCALE_UP_IMPORT = (
    '"$big" --condition condition --value value --sample child_set --name wanna-bet-8100'
)


def _options(line: str) -> list[str]:
    """The options after the quoted file name of one of the script's lines above."""
    return line.split('" ', 1)[1].split()


def _compare(results: Path, run: int, *more: str) -> dict[str, Any]:
    out = wannabet("compare", "--results", str(results), "--run", str(run), "-f", "json", *more)
    assert out.returncode == 0, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc


def _conditions(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["condition"]: c for c in doc["conditions"]}


def _generate(*args: str) -> str:
    out = subprocess.run(
        [sys.executable, str(GENERATOR), *args], capture_output=True, text=True, check=True
    )
    return out.stdout


def _import(results: Path, path: Path, options: list[str]) -> None:
    out = wannabet("import", "csv", str(path), *options, "--results", str(results))
    assert out.returncode == 0, out.stderr


def test_the_script_imports_what_this_test_imports() -> None:
    text = SCRIPT.read_text()
    for line in (AGES, ARTICLE, GENERATED, SCALE_UP, SCALE_UP_IMPORT):
        assert text.count(line) == 1, line


def test_the_generated_set_is_the_generators_output() -> None:
    # The committed 900 values are what the script draws from its fixed seed, so anyone can
    # make them again (and a change to either shows here).
    assert _generate() == (DATA / "07-exponential-900.csv").read_text()


def test_the_bet_and_the_child_means_reproduce_the_article(tmp_path: Path) -> None:
    results = tmp_path / "r.duckdb"
    _import(results, DATA / "07-dba-ages.csv", _options(AGES))
    _import(results, DATA / "07-article-child-means.csv", _options(ARTICLE))
    _import(results, DATA / "07-exponential-900.csv", [*_options(GENERATED), "2"])

    # The bet: the article's 40.0, 3.6 and its ranges 34.1-46.0 (1.645 sd) and 32.8-47.2 (2 sd).
    ages = _conditions(_compare(results, 1))
    first = ages["first-5"]
    clt = first["clt"]
    assert (first["n"], round(first["mean"], 2), round(first["sd"], 3)) == (5, 40.02, 3.619)
    assert [round(v, 1) for v in clt["sd_range_1645"]] == [34.1, 46.0]
    assert [round(v, 2) for v in clt["sd_range_2"]] == [32.78, 47.26]
    assert clt["within_sd_range_2"] == {"count": 5, "n": 5}
    # With five means the honest 90% range is the prediction interval, wider than 2 sd.
    assert [round(v, 1) for v in clt["prediction90"]] == [31.6, 48.5]
    assert clt["bet"] == "9 of the next 10 sample means should fall between 31.6 and 48.5 ms"
    # ... and the ten turned over: 49.7 is the one outside either range, 9 of 10 inside.
    with (DATA / "07-dba-ages.csv").open() as f:
        hidden = [float(r["mean_age"]) for r in csv.DictReader(f) if r["condition"] == "next-10"]
    assert len(hidden) == ages["next-10"]["n"] == 10
    for lo, hi in (clt["sd_range_2"], clt["prediction90"]):
        assert [v for v in hidden if not lo <= v <= hi] == [49.7]

    # The child means: the article's 5.343 +/- 2 x 0.892 = 3.56 to 7.13 holds 29 of 30.
    doc = _compare(results, 2)
    means = _conditions(doc)
    article = means["article-30-means"]
    assert (round(article["mean"], 3), round(article["sd"], 3)) == (5.343, 0.892)
    assert [round(v, 2) for v in article["clt"]["sd_range_2"]] == [3.56, 7.13]
    assert article["clt"]["within_sd_range_2"] == {"count": 29, "n": 30}
    assert article["normality"]["test"] == "shapiro-wilk" and article["normality"]["p"] > 0.05
    # The generated set: 30 child sets of 30, the mean of their means the mean of all 900
    # (the article's "the means are the same"), and 29 of its 30 within 2 sd as well.
    gen = means["exponential-900"]
    with (DATA / "07-exponential-900.csv").open() as f:
        values = [float(r["value"]) for r in csv.DictReader(f)]
    assert (gen["n_samples"], gen["n_transactions"]) == (30, 900)
    assert gen["mean"] == pytest.approx(sum(values) / len(values), rel=1e-9)
    assert gen["clt"]["within_sd_range_2"] == {"count": 29, "n": 30}
    [comparison] = doc["comparisons"]
    assert comparison["verdict"] == "inconclusive"  # two draws of one sampling distribution

    # The parent set itself is far from normal (the article: p = 0.00000).
    raw = _conditions(_compare(results, 2, "--level", "transaction"))["exponential-900"]
    assert raw["n"] == 900 and raw["normality"]["p"] < 0.001
    assert raw["skewness"] > 1  # an exponential's is 2

    # The report draws each condition's 30 means against its normal curve, with the 90%
    # prediction band of the bet.
    page = tmp_path / "clt.html"
    report = wannabet("report", "--results", str(results), "--run", "2", "-o", str(page))
    assert report.returncode == 0, report.stderr
    spec = chart_spec(page.read_text(), "clt")
    rows = [r for rows in spec["datasets"].values() for r in rows]
    assert Counter((r["condition"], r["kind"]) for r in rows if r["kind"] != "normal") == {
        ("article-30-means", "mean"): 30,
        ("exponential-900", "mean"): 30,
        ("article-30-means", "bet"): 1,
        ("exponential-900", "bet"): 1,
    }
    for r in rows:
        if r["kind"] == "bet":
            p90 = means[r["condition"]]["clt"]["prediction90"]
            assert (r["lo"], r["hi"]) == pytest.approx(tuple(p90), abs=1e-4)


def test_the_scale_up_is_normal_with_about_95_percent_within_2_sd(tmp_path: Path) -> None:
    big = tmp_path / "exponential-8100.csv"
    big.write_text(_generate(*SCALE_UP.split()))
    results = tmp_path / "r.duckdb"
    _import(results, big, _options(SCALE_UP_IMPORT))
    [c] = _compare(results, 1)["conditions"]
    assert (c["n_samples"], c["n_transactions"]) == (90, 8100)
    # The article: p = 0.62 and 88 of 90; this seed's set: p = 0.74 and 86 of 90.
    assert c["normality"]["p"] > 0.05
    assert c["clt"]["within_sd_range_2"] == {"count": 86, "n": 90}
