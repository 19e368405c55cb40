"""How results are presented (issue #21): one colour per condition, latencies in a unit that
suits them, one name for a sample everywhere, and the report's charts as Altair objects.

Runs are real: a SQLite experiment run by ``wannabet run`` and CSV files imported by
``wannabet import``; the outputs are rendered in-process from them.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from wannabet.engine.base import COLUMNS, SampleResult
from wannabet.render.format import MS, NS, US, S, duration, sample_name, time_unit
from wannabet.reports import ResponseCurve, UnitOfWork, UnitOfWorkRow, build_report
from wannabet.store import Store
from wannabet.store.summaries import from_columns as summaries_from_columns
from wannabet.testing.cli import wannabet, wannabet_ok
from wannabet.verdicts import compare_runs

# Declared OFF before FULL: alphabetical order would swap them.
DECLARED = ["synchronous=OFF", "synchronous=FULL"]
EXPERIMENT = """
name = "declared-order"
[setup]
sql = '''
DROP TABLE IF EXISTS t;
CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL);
INSERT INTO t VALUES (1, 0);
'''
[workload]
sessions = 1
[[workload.transactions]]
name = "update"
script = "UPDATE t SET v = v + 1 WHERE id = 1;"
[[factors]]
name = "synchronous"
levels = ["OFF", "FULL"]
session_sql = "PRAGMA synchronous = {level}"
[sampling]
samples = 3
duration = "0.15s"
warmup = "0s"
seed = 5
"""


@pytest.fixture(scope="module")
def declared_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("presentation")
    (work / "e.toml").write_text(EXPERIMENT)
    results = work / "results.duckdb"
    wannabet_ok("run", str(work / "e.toml"), "--results", str(results), "--no-stats")
    return results


def _import_csv(tmp_path: Path, rows: list[str]) -> Store:
    (tmp_path / "m.csv").write_text("\n".join(["cond,sample,ms,t", *rows]) + "\n")
    results = tmp_path / "r.duckdb"
    wannabet_ok("import", "csv", str(tmp_path / "m.csv"), "--condition", "cond", "--value",
                "ms", "--sample", "sample", "--time", "t", "--results", str(results))  # fmt: skip
    return Store(results)


def _encodings(spec: Any, channel: str) -> Iterator[dict[str, Any]]:
    """Every ``channel`` encoding of the condition anywhere in a Vega-Lite spec."""
    if isinstance(spec, dict):
        enc = spec.get("encoding")
        found = enc.get(channel) if isinstance(enc, dict) else None
        if isinstance(found, dict) and found.get("field") == "condition":
            yield found
        for value in spec.values():
            yield from _encodings(value, channel)
    elif isinstance(spec, list):
        for value in spec:
            yield from _encodings(value, channel)


# -- one colour per condition, in declaration order -------------------------------------------


def test_every_chart_gives_a_condition_the_same_colour_in_declaration_order(
    declared_run: Path,
) -> None:
    # The unit-of-work curves come in another order than the conditions were declared.
    uow = UnitOfWork(
        rows=tuple(UnitOfWorkRow(label, 900.0, 0.2, 0.5, 1.0) for label in reversed(DECLARED)),
        curves=tuple(
            ResponseCurve(
                label,
                [100.0, 500.0, 900.0],
                [1.0, 1.4, 5.0],
                operating_load=400.0,
                operating_response_ms=1.3,
            )
            for label in reversed(DECLARED)
        ),
    )
    html = build_report(Store(declared_run), unit_of_work=uow).html
    specs = _page_specs(html)
    coloured = {"histogram-log", "histogram-linear", "boxes", "run-order"}
    coloured |= {"deviation-samples", "clt", "response-curve"}
    assert coloured <= set(specs)
    # The first condition declared gets the palette's first colour (Vega's "tableau10").
    expected = {"synchronous=OFF": "#4c78a8", "synchronous=FULL": "#f58518"}
    for key, spec in specs.items():
        colors = list(_encodings(spec, "color"))
        assert bool(colors) is (key in coloured), key
        for color in colors:
            scale = color.get("scale", {})
            # Each condition maps to its colour, whatever the chart draws.
            mapping = dict(zip(scale.get("domain", []), scale.get("range", []), strict=True))
            assert mapping == expected, (key, color)
            legend = color.get("legend")
            assert "sort" not in color and (legend is None or "sort" not in legend), key


def _page_specs(html: str) -> dict[str, Any]:
    """Each chart's Vega-Lite spec as the page embeds it, by the chart's key."""
    keys = dict(re.findall(r'id="(chart-\d+)" data-key="([^"]+)"', html))
    script = r'<script type="application/json" id="(chart-\d+)-spec">(.*?)</script>'
    found = re.findall(script, html)
    return {keys[element]: json.loads(text) for element, text in found}


# -- the charts as Altair objects -------------------------------------------------------------


def test_each_chart_is_an_altair_chart(declared_run: Path) -> None:
    import altair as alt

    from wannabet.render.report.charts import spec

    built = build_report(Store(declared_run))
    assert built.chart_keys and built.chart_keys == tuple(c.key for c in built.charts)
    for c in built.charts:
        chart = built.chart(c.key).altair
        assert isinstance(chart, alt.TopLevelMixin)
        # The page embeds exactly what the Altair chart says.
        assert spec(chart) == c.spec
    with pytest.raises(KeyError, match=r"no chart 'posterior'.*run-order"):
        built.chart("posterior")


# -- units: µs, ms or s, chosen per column ----------------------------------------------------


def test_time_units_suit_the_column() -> None:
    assert time_unit([0.0004, 0.0005]) is NS and duration(0.0004) == "400.0 ns"
    assert time_unit([0.012, 0.4]) is US and duration(0.4) == "400.0 µs"
    assert time_unit([1.5, 20.0, 0.9]) is MS and duration(1.5) == "1.50 ms"
    assert time_unit([2500.0, 3100.0]) is S and duration(2500.0) == "2.50 s"
    # One unit for a column, from its typical value: an outlier does not move it.
    assert time_unit([0.3, 0.4, 0.5, 900.0]) is US
    assert time_unit([None, float("nan"), 0.0]) is MS and duration(None) == "–"
    assert US.num(0.0123) == "12.30" and US.interval([0.001, 0.002]) == "[1.00, 2.00]"


def _lognormal_rows(mu_ms: float, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(6):
        for cond, shift in (("a", 1.0), ("b", 1.1)):
            for k in range(20):
                ms = mu_ms * shift * rng.lognormal(0.0, 0.1)
                rows.append(f"{cond},{s},{ms:.9f},{s * 10 + k * 0.3}")
    return rows


def _console_text(renderable: Any) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(renderable)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(out, str)
    return out


def test_latencies_under_a_microsecond_are_shown_in_ns(tmp_path: Path) -> None:
    """Issue #21: "Latencies under 1 µs show as 0.000 ms"."""
    from wannabet.render.compare import compare_table
    from wannabet.render.markdown import conditions_markdown, heading
    from wannabet.render.summary import summary_markdown, summary_table

    store = _import_csv(tmp_path, _lognormal_rows(0.0004, seed=3))  # 0.4 µs
    run = store.run()
    rows = store.condition_summaries(run.run_id)
    for text in (_console_text(summary_table(run, rows)), summary_markdown(run, rows)):
        assert "mean ns" in text and "p99 ns" in text and "mean ms" not in text
        assert "0.000" not in text
    doc = compare_runs(store, [run.run_id])
    table = _console_text(compare_table(doc))
    assert "latency (ns)" in table
    mean_a = doc["conditions"][0]["mean"]
    assert 0.0003 < mean_a < 0.0005  # the JSON stays in ms
    assert f"{mean_a * 1e6:.1f}" in table
    assert "latency (ns)" in heading(doc) and f"{mean_a * 1e6:.1f}" in conditions_markdown(doc)
    # The report: its tables and its latency axes.
    built = build_report(store)
    assert "Per condition (ns, statistics of the sample means)" in built.html
    axis = built.chart("histogram-log").spec["spec"]["layer"][0]["encoding"]["x"]["title"]
    assert axis == "response time (ns, log scale)"
    assert json.loads(wannabet_ok("compare", "-r", str(store.path), "-f", "json"))["unit"] == "ms"


def test_latencies_of_seconds_are_shown_in_s(tmp_path: Path) -> None:
    from wannabet.render.compare import compare_table
    from wannabet.render.summary import summary_table

    store = _import_csv(tmp_path, _lognormal_rows(2500.0, seed=4))
    run = store.run()
    text = _console_text(summary_table(run, store.condition_summaries(run.run_id)))
    assert "mean s" in text and "max s" in text and "mean ms" not in text
    doc = compare_runs(store, [run.run_id])
    table = _console_text(compare_table(doc))
    assert "latency (s)" in table and f"{doc['conditions'][0]['mean'] / 1e3:.2f}" in table
    built = build_report(store)
    assert "Per condition (s, statistics of the sample means)" in built.html
    y = built.chart("run-order").spec["layer"][-1]["encoding"]["y"]["title"]
    assert y == "mean response time (s)"


# -- one name for a sample: condition, its number in the condition, block ---------------------


def test_a_sample_has_one_name_everywhere(tmp_path: Path) -> None:
    """Issue #21: the progress line, compare's outlier warning and the report's run-order chart
    numbered samples three ways. Conditions a and b alternate in the run; b's fourth sample
    (position 7 in the run) is the outlier, so it is "b #4 (block 4)" everywhere."""
    rng = np.random.default_rng(8)
    rows = []
    for s in range(10):
        for cond in ("a", "b"):
            slow = 6.0 if (cond, s) == ("b", 3) else 1.0
            rows += [
                f"{cond},{s},{slow * rng.lognormal(0, 0.05):.6f},{s * 10 + k}" for k in range(20)
            ]
    store = _import_csv(tmp_path, rows)
    doc = compare_runs(store, [store.run().run_id])
    (b,) = [c for c in doc["conditions"] if c["condition"] == "b"]
    assert b["consistency"]["outliers"]["samples"] == [4]
    assert b["consistency"]["samples"]["sample"] == list(range(1, 11))
    (outlier,) = [d for d in b["diagnostics"] if d["code"] == "outliers"]
    assert "(|Mz| > 3.5): b #4;" in outlier["message"]
    assert "sample 7" not in outlier["message"] and "sample 3" not in outlier["message"]

    built = build_report(store)
    points = [
        r
        for d in built.chart("run-order").spec["datasets"].values()
        for r in d
        if r.get("kind") == "point"
    ]
    slowest = max(points, key=lambda r: r["value"])
    assert slowest["sample"] == "b #4 (block 4)"
    assert {r["sample"] for r in points} == {
        sample_name(c, k, k) for c in ("a", "b") for k in range(1, 11)
    }
    # The run-order axis shows no third numbering: no position labels, blocks named instead.
    encoding = built.chart("run-order").spec["layer"][-1]["encoding"]
    assert encoding["x"]["axis"]["labels"] is False
    tooltips = {t["field"] for t in encoding["tooltip"]}
    assert "order" not in tooltips and "sample" in tooltips
    datasets = built.chart("deviation-samples").spec["datasets"].values()
    deviations = [r for d in datasets for r in d if "deviation" in r]
    assert max(deviations, key=lambda r: r["deviation"])["sample"] == "b #4 (block 4)"
    assert "b #4;" in built.html  # the diagnostic, on the page


def _sample_result(
    start_ns: np.ndarray,
    end_ns: np.ndarray,
    status: np.ndarray,
    *,
    txn_type: np.ndarray | None = None,
    warmup_ns: int = 0,
    rows: bool = True,
) -> SampleResult:
    """A sample as the engine hands it over (closed loop: each transaction starts when
    scheduled), its summaries over every transaction; ``rows=False``: none kept as a row
    (``--record none``)."""
    size = len(start_ns)
    columns = {
        "session": np.zeros(size, dtype=np.int32),
        "txn_type": np.zeros(size, dtype=np.int16) if txn_type is None else txn_type,
        "intended_start_ns": start_ns,
        "start_ns": start_ns,
        "end_ns": end_ns,
        "status": status.astype(np.int8),
        "error_code": np.zeros(size, dtype=np.int32),
        "retries": np.zeros(size, dtype=np.int32),
    }
    summaries = summaries_from_columns(columns, warmup_ns)
    kept = columns if rows else {name: np.empty(0, dtype=dtype) for name, dtype in COLUMNS}
    return SampleResult(0, int(end_ns.max()), kept, summaries)


def test_the_progress_line_shows_the_p99_of_every_transaction_when_no_row_is_kept() -> None:
    # With --record none the sample keeps no row: the line showed "p99 –" for every sample.
    # The summaries count every transaction, so the p99 is the one `summary` shows.
    from wannabet.model import ScheduledSample
    from wannabet.render.progress import ProgressDisplay, sample_p99_ms

    rng = np.random.default_rng(7)
    size, warmup_ns = 4000, 50_000_000
    start = np.sort(rng.integers(0, 1_000_000_000, size)).astype(np.int64)
    latency = rng.lognormal(np.log(200_000), 0.6, size).astype(np.int64)  # ~0.2 ms
    status = (rng.random(size) < 0.05).astype(np.int64)
    # The warm-up's and the errors' latencies are far above the rest: neither may count.
    latency[start < warmup_ns] += 50_000_000
    latency[status != 0] += 80_000_000
    types = rng.integers(0, 2, size).astype(np.int16)
    measured = (start >= warmup_ns) & (status == 0)
    reference = float(np.quantile(latency[measured], 0.99, method="inverted_cdf")) / 1e6

    def result(rows: bool) -> SampleResult:
        return _sample_result(
            start, start + latency, status, txn_type=types, warmup_ns=warmup_ns, rows=rows
        )

    none_kept = sample_p99_ms(result(rows=False), warmup_ns)
    assert none_kept is not None
    # The same figure as with every row kept, within the histogram's resolution (half a bin).
    assert none_kept == sample_p99_ms(result(rows=True), warmup_ns)
    assert abs(none_kept - reference) <= reference / 256

    out = io.StringIO()
    display = ProgressDisplay(
        Console(file=out, width=200, color_system=None),
        sample_seconds=1.0,
        samples_per_condition=1,
        warmup_s=warmup_ns / 1e9,
    )
    condition = SimpleNamespace(label="on")
    plan = [ScheduledSample(0, 0, 0)]
    display.run_started(1, [condition], plan)  # type: ignore[list-item]
    display.sample_started(plan[0], condition, 1)  # type: ignore[arg-type]
    display.sample_finished(plan[0], result(rows=False), 100.0)
    assert f"100 TPS, p99 {duration(none_kept)}," in out.getvalue().splitlines()[-1]


def test_the_progress_lines_p99_is_never_above_the_samples_maximum() -> None:
    # Every latency 9.97 ms, near the bottom of its bin [9,961,472, 10,027,007] ns whose
    # midpoint lies above them all: the line shows the maximum, as summary's p99 does.
    from wannabet.render.progress import sample_p99_ms

    start = np.arange(100, dtype=np.int64) * 1_000_000
    status = np.zeros(100, dtype=np.int64)
    result = _sample_result(start, start + 9_970_000, status, rows=False)
    assert sample_p99_ms(result, 0) == 9.97


def test_a_run_recording_no_rows_prints_each_samples_stored_p99(tmp_path: Path) -> None:
    (tmp_path / "e.toml").write_text(EXPERIMENT)
    results = tmp_path / "r.duckdb"
    proc = wannabet("run", str(tmp_path / "e.toml"), "--results", str(results), "--no-stats",
                    "--record", "none")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    shown = re.findall(r"^\[\d+/6\] .*, p99 ([^,]+),", proc.stderr, re.MULTILINE)
    stored = Store(results, read_only=True).sample_summaries_table(1).column("p99_ms")
    assert len(stored) == 6
    assert shown == [duration(p) for p in stored.to_pylist()]


def test_the_progress_line_names_the_sample_as_everywhere() -> None:
    from wannabet.model import ScheduledSample
    from wannabet.render.progress import ProgressDisplay

    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)  # not a terminal: one line each
    display = ProgressDisplay(console, sample_seconds=1.0, samples_per_condition=3)
    conditions = [SimpleNamespace(label="on"), SimpleNamespace(label="off")]
    plan = [ScheduledSample(i, i // 2, i % 2) for i in range(6)]
    display.run_started(1, conditions, plan)  # type: ignore[arg-type]
    n = np.arange(3, dtype=np.int64)
    result = _sample_result(n, n + 1_000_000, np.zeros(3, dtype=np.int64))
    for s in plan[:4]:
        number = s.block + 1
        display.sample_started(s, conditions[s.condition_index], number)  # type: ignore[arg-type]
        display.sample_finished(s, result, 100.0)
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("[4/6] off #2/3 (block 2): 100 TPS")
    assert lines[-2].startswith("[3/6] on #2/3 (block 2):")


def test_a_resumed_runs_progress_counts_the_whole_run_and_its_eta_this_process() -> None:
    from wannabet.model import ScheduledSample
    from wannabet.render.progress import ProgressDisplay

    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    display = ProgressDisplay(console, sample_seconds=1.0, samples_per_condition=4)
    conditions = [SimpleNamespace(label="on"), SimpleNamespace(label="off")]
    plan = [ScheduledSample(i, i // 2, i % 2) for i in range(8)]
    display.run_started(1, conditions, plan, frozenset(range(3)))  # type: ignore[arg-type]
    n = np.arange(3, dtype=np.int64)
    result = _sample_result(n, n + 1_000_000, np.zeros(3, dtype=np.int64))
    for s in plan[3:]:
        display.sample_started(s, conditions[s.condition_index], s.block + 1)  # type: ignore[arg-type]
        display.sample_finished(s, result, 100.0)
    lines = out.getvalue().splitlines()
    assert lines[0] == "run 1: 5 samples left of 8 (resumed)"
    assert [line.split("]")[0] for line in lines[1:]] == [f"[{k}/8" for k in range(4, 9)]
    assert lines[-1].endswith("ETA 0:00:00") and "-" not in lines[-1].split("ETA")[1]
