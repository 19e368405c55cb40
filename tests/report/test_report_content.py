"""What the report says and how it is built, checked without a browser."""

from __future__ import annotations

import io
import json
import math
import os
import re
from html import escape
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from wannabet.analysis.bayes import BayesOptions
from wannabet.analysis.tests import p_text
from wannabet.render.format import (
    VerdictCells,
    cell,
    interval,
    one_line,
    p_value,
    share,
    signed,
    signed_interval,
    strip_control,
    verdict_cells,
)
from wannabet.render.markdown import markdown_table, verdict_markdown
from wannabet.render.report import verdict_sentence
from wannabet.render.report.build import condition_notes
from wannabet.render.report.charts import LABEL_LIMIT
from wannabet.render.report.inputs import ConditionData, ReportData, SamplePoint
from wannabet.render.report.page import json_for_html
from wannabet.reports import ResponseCurve, UnitOfWork, UnitOfWorkRow, build_report
from wannabet.reports.data import (
    HEAT_LATENCY_BINS,
    HEAT_TIME_BINS,
    HIST_BINS,
    KDE_POINTS,
    _log_density,
)
from wannabet.store import Store
from wannabet.verdicts import ComparisonOptions, compare_runs

from .conftest import Runs, ok, wannabet


class _Scripts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self._open, self._text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._open is not None:
            self.scripts.append((self._open, "".join(self._text)))
            self._open = None


@given(st.text())
def test_json_for_html_is_inert_and_round_trips(text: str) -> None:
    out = str(json_for_html({"label": text, "list": [text, "</script><!--"]}))
    assert "<" not in out and ">" not in out and "&" not in out
    assert "\u2028" not in out and "\u2029" not in out
    assert json.loads(out) == {"label": text, "list": [text, "</script><!--"]}


def test_hostile_labels_stay_inside_their_json_blocks(sqlite_runs: Runs) -> None:
    built = build_report(Store(sqlite_runs.results), [sqlite_runs.ids["two"]])
    parser = _Scripts()
    parser.feed(built.html)
    specs = [(a, t) for a, t in parser.scripts if a.get("type") == "application/json"]
    plain = [t for a, t in parser.scripts if a.get("type") is None]
    # Every chart spec is one JSON element that parses, and only two scripts run: the
    # runtime and the loader. The injected </script><script> never became an element.
    assert len(specs) == len(built.charts) and len(plain) == 2
    for _, text in specs:
        json.loads(text)
    assert "document.title='PWNED'" not in "".join(plain)
    assert "&lt;/script&gt;&lt;script&gt;document.title=&#39;PWNED&#39;&lt;/script&gt;" in (
        built.html
    )
    # No network: the page forbids it, and nothing refers to an http(s) resource to load.
    assert "default-src 'none'" in built.html
    assert not re.search(r"""(src|href)\s*=\s*["']https?:""", built.html)


def test_the_report_holds_no_per_transaction_data(sqlite_runs: Runs) -> None:
    store = Store(sqlite_runs.results)
    built = build_report(store, [sqlite_runs.ids["six"]])
    n_tx = store.run(sqlite_runs.ids["six"]).transactions
    parser = _Scripts()
    parser.feed(built.html)
    rows = sum(
        len(d)
        for a, t in parser.scripts
        if a.get("type") == "application/json"
        for d in json.loads(t).get("datasets", {}).values()
    )
    # Bins, densities on fixed grids, heatmap cells and one point per sample: a bound that
    # depends on the number of conditions and samples, never on the transactions.
    info = store.run(sqlite_runs.ids["six"])
    per_condition = 2 * HIST_BINS + 2 * KDE_POINTS + HEAT_TIME_BINS * HEAT_LATENCY_BINS + 100
    assert rows <= info.conditions * per_condition + 4 * info.samples
    assert n_tx > 1_000  # a run of thousands, even on a loaded machine
    assert len(built.html.encode()) < 3_000_000


def test_each_density_uses_its_own_conditions_subsample(
    sqlite_runs: Runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wannabet.reports import data as report_data

    store = Store(sqlite_runs.results)
    info = store.run(sqlite_runs.ids["six"])
    labels = [[c.label for c in store.conditions(info.run_id)]]
    first = report_data.load_report_data(store, [info], labels=labels, metric="latency")
    sizes = sorted(c.latency.n for c in first.conditions if c.latency is not None)
    assert len(sizes) == 6 and sizes[0] < sizes[-1]
    # A subsample size between the smallest and the largest condition: some conditions are
    # subsampled, others give every transaction.
    cap = (sizes[0] + sizes[-1]) // 2
    monkeypatch.setattr(report_data, "KDE_SUBSAMPLE", cap)
    data = report_data.load_report_data(store, [info], labels=labels, metric="latency")
    for c in data.conditions:
        assert c.latency is not None and c.latency.log_density is not None
        # The reservoir is drawn from the condition's own transactions, not from the run's.
        assert c.latency.kde_n == min(c.latency.n, cap)
        assert c.latency.n == sum(c.latency.log_counts)


def test_the_verdict_sentence_carries_the_comparison(sqlite_runs: Runs) -> None:
    store = Store(sqlite_runs.results)
    built = build_report(store, [sqlite_runs.ids["two"]])
    assert built.doc is not None
    (c,) = built.doc["comparisons"]
    sentence = verdict_sentence(c, "latency", 0.05, 2.0)
    lo, hi = c["ci_pct"]
    assert f"{c['delta_pct']:+.1f}%" in sentence and f"{lo:+.1f}% to {hi:+.1f}%" in sentence
    if c["verdict"] == "faster":
        factor = 1 / (1 + c["delta_pct"] / 100)
        # Two decimals below 2×, one below 100×, none above (the factor depends on the
        # machine: 149× on a loaded one).
        shown = (
            f"{factor:.2f}" if factor < 2 else f"{factor:.1f}" if factor < 100 else f"{factor:,.0f}"
        )
        assert sentence.startswith(f"synchronous=OFF is {shown}×"), sentence
        assert " faster than " in sentence and sentence.endswith("you can bet on it.")
    # The page shows the same sentence, escaped.
    assert sentence.replace("'", "&#39;") in built.html


def test_verdict_sentences_for_each_outcome() -> None:
    base = {"condition": "b", "baseline": "a", "median_delta_pct": None}
    slower = {**base, "delta_pct": 12.0, "ci_pct": [8.0, 16.0], "verdict": "slower", "note": ""}
    assert verdict_sentence(slower, "latency", 0.05, 2.0) == (
        "b is 1.12× slower than a (mean response time +12.0%, 95% CI +8.0% to +16.0%);"
        " you can bet on it."
    )
    # A DBA reads "83% faster" as 83% more throughput: a latency cut by 82.6% is 5.7× faster.
    quicker = {**base, "delta_pct": -82.6, "ci_pct": [-85.0, -80.1], "verdict": "faster",
               "note": ""}  # fmt: skip
    assert verdict_sentence(quicker, "latency", 0.05, 2.0).startswith(
        "b is 5.7× faster than a (mean response time -82.6%"
    )
    # A throughput change is said as one.
    more = {**base, "delta_pct": 25.0, "ci_pct": [20.0, 30.0], "verdict": "faster", "note": ""}
    assert verdict_sentence(more, "throughput", 0.05, 2.0).startswith(
        "b is faster than a: throughput +25% (mean throughput +25.0%"
    )
    same = {**base, "delta_pct": 0.5, "ci_pct": [-1.0, 1.5], "verdict": "no-difference",
            "note": "equivalent within +/-2%"}  # fmt: skip
    assert "perform the same within ±2%" in verdict_sentence(same, "latency", 0.1, 2.0)
    assert "90% CI" in verdict_sentence(same, "latency", 0.1, 2.0)
    unsure = {**base, "delta_pct": 5.0, "ci_pct": [-3.0, 13.0], "verdict": "inconclusive",
              "note": "inconclusive: more samples needed"}  # fmt: skip
    assert verdict_sentence(unsure, "throughput", 0.05, 2.0).startswith("No bet yet on b")
    none = {**base, "delta_pct": None, "ci_pct": None, "verdict": "inconclusive", "note": "x"}
    assert "no estimate" in verdict_sentence(none, "latency", 0.05, 2.0)


def test_markdown_verdict_table_is_the_same_everywhere(sqlite_runs: Runs) -> None:
    results, rid = str(sqlite_runs.results), str(sqlite_runs.ids["six"])
    doc = compare_runs(Store(sqlite_runs.results), [sqlite_runs.ids["six"]])
    table = verdict_markdown(doc)
    assert table.count("\n") == 2 + 5
    for cmd in (
        ["compare", "--format", "markdown"],
        ["summary", "--format", "markdown"],
        ["report", "--format", "markdown"],
    ):
        out = ok(*cmd, "--results", results, "--run", rid)
        assert table in out, cmd


def test_the_figures_of_a_comparison_have_one_spelling() -> None:
    assert (share(0.12345), share(0.0), share(None)) == ("12.3%", "0.0%", "–")
    assert (signed(-0.4142, 2), signed(0.0, 2), signed(15.63, 1), signed(None, 1)) == (
        "-0.41",
        "+0.00",
        "+15.6",
        "–",
    )
    assert signed_interval(9.14, 22.0) == "[+9.1, +22.0]"
    assert signed_interval(-3.25, 0.5, 2) == "[-3.25, +0.50]"
    pair = {"delta_pct": -4.25, "ci_pct": [-6.5, -2.0], "median_delta_pct": None,
            "test": "", "p_adjusted": 0.0004, "cliffs_delta": -0.4142}  # fmt: skip
    assert verdict_cells(pair) == VerdictCells(  # type: ignore[arg-type]
        delta="-4.2%", ci="[-6.50, -2.00]%", median_delta="–", test="–", p="<0.001", cliff="-0.41"
    )


@given(st.floats(min_value=0.0, max_value=1.0) | st.sampled_from([0.000999, 0.001, 0.0315]))
def test_a_p_value_reads_the_same_in_a_table_and_in_a_sentence(p: float) -> None:
    from wannabet.analysis.tests import p_text

    shown = p_value(p)
    assert shown == ("<0.001" if p < 0.001 else f"{p:.3f}")
    assert p_text(p) == ("p" if shown.startswith("<") else "p=") + shown
    assert (p_value(None), p_text(None)) == ("–", "p=n/a")


def test_every_output_writes_a_comparisons_figures_alike(sqlite_runs: Runs) -> None:
    from rich.console import Console

    from wannabet.render.compare import compare_table

    store = Store(sqlite_runs.results)
    doc = compare_runs(store, [sqlite_runs.ids["six"]])
    console = Console(width=400, color_system=None, record=True, file=io.StringIO())
    console.print(compare_table(doc))
    terminal = console.export_text()
    markdown = verdict_markdown(doc)
    html = build_report(store, [sqlite_runs.ids["six"]]).html
    for c in doc["conditions"]:
        cv = "–" if c["cv"] is None else f"{100 * c['cv']:.1f}%"
        assert f" {cv} " in terminal and f">{cv}<" in html
    for pair in doc["comparisons"]:
        cells = verdict_cells(pair)
        d = pair["cliffs_delta"]
        assert cells.cliff == ("–" if d is None else f"{d:+.2f}")
        row = next(line for line in terminal.splitlines() if f"{pair['condition']} vs" in line)
        assert [x.strip() for x in row.split("│")[2:8]] == [cells.delta, cells.ci,
            cells.median_delta, cells.test, cells.p, cells.cliff]  # fmt: skip
        line = next(ln for ln in markdown.splitlines() if ln.startswith(f"| {pair['condition']} "))
        assert [x.strip() for x in line.split("|")[3:7]] == [cells.delta, cells.ci, cells.test,
                                                            cells.p]  # fmt: skip
        for cell_text in (cells.delta, cells.ci, cells.median_delta, cells.p, cells.cliff):
            assert f">{cell_text}<" in html
    # The omnibus test's p rounds as compare's sentence does (it was "%.3g": p = 0.0123).
    omnibus = doc["omnibus"]
    assert omnibus is not None and omnibus["p"] is not None
    shown = p_text(omnibus["p"]).replace("p=", "p = ").replace("p<", "p <")
    assert f"Omnibus test: {omnibus['test']}, {escape(shown)}." in html


def test_markdown_tables_are_aligned_plain_text() -> None:
    text = markdown_table(
        ["condition", "n", "note"],
        [["a|b", 3, "x\x1b[31mred\x1b[0m"], ["日本", 12345, "two\nlines"]],
        ["left", "right", "left"],
    )
    lines = text.splitlines()
    # Control characters and line breaks are shown escaped, on the row's own line.
    assert "a\\|b" in lines[2] and "\x1b" not in text
    assert "x\\x1b[31mred\\x1b[0m" in lines[2] and "two\\nlines" in lines[3]
    # Every line is equally wide on a terminal (wide characters count twice).
    assert len({len(line) + sum(1 for ch in line if ch in "日本") for line in lines}) == 1


def test_strip_control_keeps_text_and_shows_escapes() -> None:
    assert strip_control("a\x1b[1;31mb\x1b]0;title\x07c\x00d\te") == (
        "a\\x1b[1;31mb\\x1b]0;title\\x07c\\x00d\te"
    )


def test_labels_with_markup_and_escapes_print_literally(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    rows = ["cond,sample,ms"]
    for s in range(6):
        for cond in ("[red]x", "esc\x1b[31mape"):
            rows += [f"{cond},{s},{v:.3f}" for v in rng.gamma(5.0, 0.2, 20)]
    (tmp_path / "m.csv").write_text("\n".join(rows) + "\n")
    results = str(tmp_path / "r.duckdb")
    ok("import", "csv", str(tmp_path / "m.csv"), "--condition", "cond", "--value", "ms",
       "--sample", "sample", "--results", results)  # fmt: skip
    for fmt in ("table", "markdown"):
        out = wannabet("compare", "--results", results, "--format", fmt)
        assert out.returncode == 0, out.stderr
        assert "[red]x" in out.stdout and "\x1b" not in out.stdout, fmt
    md = ok("report", "--results", results, "--format", "markdown")
    assert "[red]x" in md and "esc\\x1b[31mape" in md and "\x1b" not in md


def test_report_command_errors_are_one_line(sqlite_runs: Runs, tmp_path: Path) -> None:
    proc = wannabet("report", "--results", str(sqlite_runs.results))
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "error: command line: --output: the HTML report needs a file to go to; add -o report.html"
    )
    missing = tmp_path / "no" / "such" / "dir" / "r.html"
    proc = wannabet("report", "--results", str(sqlite_runs.results), "-o", str(missing))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "cannot write" in proc.stderr


def test_bayesian_section_with_a_real_posterior(sqlite_runs: Runs) -> None:
    built = build_report(
        Store(sqlite_runs.results),
        [sqlite_runs.ids["two"]],
        ComparisonOptions(bayes=BayesOptions(model="gamma", seed=1)),
    )
    assert "posterior" in built.chart_keys
    assert built.doc is not None
    pair = built.doc["comparisons"][0]["bayes"]
    lo, hi = pair["hdi_pct"]
    # The HDI of the table is the one the analysis computed, and the shaded area lies in it.
    assert interval([lo, hi], "%") in built.html
    parser = _Scripts()
    parser.feed(built.html)
    spec = json.loads(parser.scripts[built.chart_keys.index("posterior")][1])
    shaded = [r["change"] for d in spec["datasets"].values() for r in d if r["kind"] == "hdi"]
    # Chart data carry 5 significant digits: the edges may round outwards by half a unit.
    tol = 0.5 * 10 ** (math.floor(math.log10(max(abs(lo), abs(hi)))) - 4) + 1e-9
    assert shaded and lo - tol <= min(shaded) and max(shaded) <= hi + tol


def test_unit_of_work_section_from_stored_statistics(sqlite_runs: Runs, tmp_path: Path) -> None:
    from wannabet.render.format import time_unit
    from wannabet.work import unit_of_work_for_run

    store = Store(sqlite_runs.results)
    run_id = sqlite_runs.ids["two"]
    built = build_report(store, [run_id])
    assert "No database statistics were collected" not in built.html
    units = unit_of_work_for_run(store, run_id)
    # The run is a closed loop of 2 sessions: on a machine with 2 cores or more nothing can
    # queue for a CPU, so no M/M/m curve is drawn, and the notes say why.
    cores = len(os.sched_getaffinity(0))
    assert ("response-curve" in built.chart_keys) == (cores < 2)
    if cores >= 2:
        assert all(any("cannot queue for CPU" in n for n in u.notes) for u in units)
    table = built.html[built.html.index('id="unit-of-work-table"') :]
    table = table[: table.index("</table>")]
    # The table shows the analysis' own figures for every condition of the run, in one unit.
    unit = time_unit(u.response_ms_per_unit.mean for u in units if u.response_ms_per_unit)
    assert f"<th>CPU {unit}/unit</th>" in table
    for u in units:
        assert u.cpu_ms_per_unit is not None and u.response_ms_per_unit is not None
        assert u.condition in table
        assert unit.num(u.cpu_ms_per_unit.mean) in table
        assert unit.num(u.response_ms_per_unit.mean) in table
    if "response-curve" in built.chart_keys:
        # The curve marks where each condition ran.
        parser = _Scripts()
        parser.feed(built.html)
        spec = json.loads(parser.scripts[built.chart_keys.index("response-curve")][1])
        layers = spec.get("layer", [])
        assert [layer["mark"]["type"] for layer in layers] == ["line", "point"]

    # An imported run has no database statistics, and says so.
    times = tmp_path / "times.csv"
    times.write_text("setting,ms\nA,1.0\nA,1.2\nB,2.0\nB,2.1\n")
    results = tmp_path / "imported.duckdb"
    ok(
        "import",
        "csv",
        str(times),
        "--condition",
        "setting",
        "--value",
        "ms",
        "--results",
        str(results),
    )
    imported = build_report(Store(results))
    assert "No database statistics were collected for this run." in imported.html
    assert "response-curve" not in imported.chart_keys


def test_unit_of_work_section_from_supplied_rows(sqlite_runs: Runs) -> None:
    store = Store(sqlite_runs.results)
    uow = UnitOfWork(
        rows=(
            UnitOfWorkRow("synchronous=FULL", 950.0, 0.21, 0.74, 1.02, (("WALWrite", 0.5),)),
            UnitOfWorkRow("synchronous=OFF", 9800.0, 0.08, 0.01, 0.1),
        ),
        curves=(
            ResponseCurve("synchronous=FULL", [100.0, 500.0, 900.0], [1.0, 1.4, 5.0]),
            ResponseCurve("synchronous=OFF", [100.0, 5000.0, 9000.0], [0.1, 0.2, 0.9]),
        ),
        unit="transaction",
    )
    built = build_report(store, [sqlite_runs.ids["two"]], unit_of_work=uow)
    assert "No database statistics" not in built.html
    assert "response-curve" in built.chart_keys
    # Response times of 1.02 and 0.1 ms: the table is in µs, its top waits too.
    assert "<th>response µs/unit</th>" in built.html
    assert "WALWrite 500.0 µs" in built.html and "9,800" in built.html


def test_differing_environments_are_shown_prominently(sqlite_runs: Runs, tmp_path: Path) -> None:
    import shutil

    from wannabet.analysis.diagnostics import environment_differences
    from wannabet.verdicts import flatten_environment

    results = tmp_path / "copy.duckdb"
    shutil.copy(sqlite_runs.results, results)
    rows = ["cond,sample,ms"] + [f"imported,{s},{1 + 0.01 * k}" for s in range(4) for k in range(5)]
    (tmp_path / "i.csv").write_text("\n".join(rows) + "\n")
    ok("import", "csv", str(tmp_path / "i.csv"), "--condition", "cond", "--value", "ms",
       "--sample", "sample", "--results", str(results))  # fmt: skip
    store = Store(results)
    native, imported = store.run(sqlite_runs.ids["one"]), store.run()
    diff = environment_differences(
        {f"run {r.run_id}": flatten_environment(r.environment or {}) for r in (native, imported)}
    )
    assert "server" in diff  # an imported CSV knows no server
    html = build_report(store, [native.run_id, imported.run_id]).html
    box = html[html.index('id="env-diff"') :].split("</div>")[0]
    assert "different environments" in box
    for key in diff:
        assert f"<code>{key}</code>" in box
    same = build_report(store, [native.run_id, sqlite_runs.ids["two"]]).html
    native_diff = environment_differences(
        {
            f"run {r}": flatten_environment(store.run(r).environment or {})
            for r in (native.run_id, sqlite_runs.ids["two"])
        }
    )
    assert ('id="env-diff"' in same) == bool(native_diff)


def test_bidi_overrides_and_line_separators_are_cleaned() -> None:
    # A right-to-left override would show "gnp.exe" as "exe.png"; U+2028 breaks a line.
    assert strip_control("a\u202egnp.exe\u2066b\u2069") == "a\\u202egnp.exe\\u2066b\\u2069"
    assert one_line("x\u2028y\u2029z\r\nw\tv") == "x\\u2028y\\u2029z\\r\\nw\\tv"
    assert cell("a\u2028|b") == "a\\u2028\\|b"


def test_chart_labels_are_single_clean_lines_in_data_and_sort(tmp_path: Path) -> None:
    label = "line\u2028sep\u202e\x1b[31m"
    rows = ["cond,sample,ms,t"]
    rng = np.random.default_rng(4)
    for s in range(5):
        for cond in (label, "plain"):
            rows += [
                f'"{cond}",{s},{v:.3f},{s * 5 + k}' for k, v in enumerate(rng.gamma(5, 0.2, 20))
            ]
    (tmp_path / "m.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    results = tmp_path / "r.duckdb"
    ok("import", "csv", str(tmp_path / "m.csv"), "--condition", "cond", "--value", "ms",
       "--sample", "sample", "--time", "t", "--results", str(results))  # fmt: skip
    built = build_report(Store(results))
    parser = _Scripts()
    parser.feed(built.html)
    specs = [json.loads(t) for a, t in parser.scripts if a.get("type") == "application/json"]
    text = json.dumps(specs, ensure_ascii=False)
    for bad in ("\u2028", "\u202e", "\x1b"):
        assert bad not in text
    # The cleaned label is the same in the data and in every sort array.
    sorts = [
        s["facet"]["row"]["sort"]
        for s in specs
        if isinstance(s.get("facet", {}).get("row", {}).get("sort"), list)
    ]
    assert sorts and all("line\\u2028sep\\u202e\\x1b[31m" in s for s in sorts)
    for s in specs:
        if "facet" in s and "row" in s["facet"] and "header" in s["facet"]["row"]:
            assert s["facet"]["row"]["header"]["labelLimit"] == LABEL_LIMIT


def test_a_condition_of_warm_up_only_gets_a_note() -> None:
    cond = ConditionData(
        label="warm",
        run_id=1,
        levels={},
        samples=(SamplePoint(1, "warm", 0, 0, 1, None, 0, 0, None),),
        transactions=0,
        errors=0,
        errors_by_status={},
        latency=None,
    )
    data = ReportData(runs=(), conditions=(cond,), axes=None, per_transaction=True)
    (note,) = condition_notes(data)
    assert note.startswith("warm: no measured transactions (all warm-up")


def test_the_density_bandwidth_is_scotts_rule() -> None:
    lg = np.random.default_rng(8).normal(0.3, 0.2, 500)
    _, bandwidth = _log_density(lg, np.linspace(-1, 2, 50))
    # Scott's rule in one dimension: n^(-1/5) times the sample standard deviation.
    assert bandwidth == pytest.approx(500 ** (-0.2) * np.std(lg, ddof=1), rel=1e-12)


def test_report_names_the_bandwidth_captions_sample_means_and_links_nowhere(
    sqlite_runs: Runs,
) -> None:
    built = build_report(Store(sqlite_runs.results), [sqlite_runs.ids["two"]])
    html = built.html
    assert "bandwidth by Scott" in html
    assert "statistics of the 4 sample means of each condition" in html
    assert "<th>transaction p95</th>" in html
    # A mailed page has no docs/ beside it: the source of the full text is named instead.
    assert 'href="docs/' not in html
    assert "docs/statistics.md in the wannabet source" in html


def test_report_markdown_fails_as_compare_does(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_text("cond,ms\na,1\na,2\nb,3\nb,4\n")
    results = str(tmp_path / "r.duckdb")
    ok("import", "csv", str(tmp_path / "m.csv"), "--condition", "cond", "--value", "ms",
       "--results", results)  # fmt: skip
    args = ["--results", results, "--metric", "throughput", "--format", "markdown"]
    compare, report = wannabet("compare", *args), wannabet("report", *args)
    assert compare.returncode == report.returncode == 5
    assert report.stderr == compare.stderr and len(report.stderr.strip().splitlines()) == 1
    assert report.stdout == ""


def test_bayes_and_unit_of_work_markdown_are_aligned_and_clean(sqlite_runs: Runs) -> None:
    from dataclasses import replace

    from wannabet.render.markdown import bayes_markdown
    from wannabet.render.summary import unit_of_work_markdown
    from wannabet.work import unit_of_work_for_run

    bad = "x\x1b[31m|y\nz\u2028w"
    doc = {
        "bayes": {"hdi_prob": 0.95, "model": "gamma", "rope_pct": 2.0,
                  "effects": [{"term": bad, "mean_pct": 1.0, "hdi_pct": [0.5, 1.5]}]},
        "comparisons": [
            {"condition": bad, "baseline": "base", "bayes": {
                "mean_pct": -3.2, "hdi_pct": [-4.0, -2.5], "p_faster": 0.99, "rhat_max": 1.001,
                "ess_min": 1800.0, "rope_decision": "outside"}},
        ],
    }  # fmt: skip
    units = [
        replace(u, condition=bad)
        for u in unit_of_work_for_run(Store(sqlite_runs.results), sqlite_runs.ids["two"])
    ]
    assert units
    for text in (bayes_markdown(doc), unit_of_work_markdown(units)):
        assert "\x1b" not in text and "\u2028" not in text
        table = [line for line in text.splitlines() if line.startswith("|")]
        assert len(table) >= 3
        # Aligned: every row of a table is as wide as its header (padded plain text).
        header_width = len(table[0])
        assert all(len(line) == header_width for line in table[:3]), table
        assert "x\\x1b[31m\\|y\\nz\\u2028w" in text


def test_the_runtime_is_built_for_altairs_vega_lite(monkeypatch: pytest.MonkeyPatch) -> None:
    import altair

    from wannabet.render.report import page

    # vl-convert's default is its newest Vega-Lite; a different Altair schema must still get
    # its own version (the bundle names it as a string constant).
    for schema, expected in (("v5.20.1", "5.20."), (altair.SCHEMA_VERSION, None)):
        monkeypatch.setattr(altair, "SCHEMA_VERSION", schema)
        page.vega_runtime.cache_clear()
        mm = ".".join(schema.removeprefix("v").split(".")[:2])
        assert page.vega_lite_version() == "v" + mm.replace(".", "_")
        assert re.search(rf'"{re.escape(expected or mm + ".")}\d+"', str(page.vega_runtime()))
    page.vega_runtime.cache_clear()


def test_a_sqlite_target_next_to_the_results_is_shown_without_its_machine_path(
    tmp_path: Path,
) -> None:
    from wannabet.render.report.build import shown_target

    results = tmp_path / "wannabet.duckdb"
    beside = f"sqlite:///{tmp_path.resolve() / 'bench.sqlite'}"
    assert shown_target(beside, results) == "sqlite:///bench.sqlite (next to the results file)"
    elsewhere = f"sqlite:///{(tmp_path / 'sub' / 'x.db').resolve()}"
    assert shown_target(elsewhere, results) == elsewhere
    assert shown_target("postgresql://u@h/db", results) == "postgresql://u@h/db"
    assert shown_target(None, results) == "–"


def test_the_density_subsample_is_the_same_in_every_process(sqlite_runs: Runs) -> None:
    """A report rebuilt from the same file draws the same curves: the KDE's subsample must not
    depend on how DuckDB parallelised the scan."""
    code = f"""
import json
from wannabet.reports import data
from wannabet.store import Store
data.KDE_SUBSAMPLE = 500
store = Store({str(sqlite_runs.results)!r})
info = store.run({sqlite_runs.ids["six"]})
labels = [[c.label for c in store.conditions(info.run_id)]]
d = data.load_report_data(store, [info], labels=labels, metric="latency")
print(json.dumps([[c.latency.kde_bandwidth, c.latency.log_density] for c in d.conditions]))
"""
    import subprocess
    import sys

    outs = [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
        ).stdout
        for _ in range(3)
    ]
    assert outs[0] == outs[1] == outs[2]
    assert json.loads(outs[0])[0][0] is not None


def test_the_vega_runtime_is_cached_and_a_damaged_cache_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vl_convert

    from wannabet.render.report import page

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    bundled: list[int] = []
    real = vl_convert.javascript_bundle

    def counting(**kwargs: str) -> str:
        bundled.append(1)
        return real(**kwargs)

    monkeypatch.setattr(vl_convert, "javascript_bundle", counting)
    build = page.vega_runtime.__wrapped__  # without the per-process memo
    first = build()
    (cached,) = (tmp_path / "wannabet").glob("vega-runtime-*.js")
    assert build() == first and len(bundled) == 1  # read back, not bundled again
    text = cached.read_text()
    cached.write_text(text[: len(text) // 2])  # as after a crash of another writer
    assert build() == first and len(bundled) == 2
    assert cached.read_text() == text
    # A cache directory others may write to is not trusted: its script would reach reports.
    cached.parent.chmod(0o777)
    assert build() == first and len(bundled) == 3


def test_a_run_with_several_types_shows_each_types_p99_verdict(tmp_path: Path) -> None:
    from test_verdicts import mixed_run

    store = mixed_run(tmp_path)
    report = build_report(store, [], ComparisonOptions())
    table = report.html.split('id="per-type-table"')[1].split("</table>")[0]
    rows = re.findall(
        r"<tr><td class=\"label\">(\w+)</td><td class=\"label\">after</td>"
        r"<td class=\"label\">before</td>.*?"
        r"<td class=\"(faster|slower|no-difference|inconclusive)\">",
        table,
    )
    assert dict(rows)["update"] == "slower"
    assert dict(rows)["lookup"] != "slower"
    assert "Per transaction type: p99" in report.html
    # Each row shows the two p99s (a row's "values" once printed a dict method instead).
    assert "built-in method" not in table
    assert len(re.findall(r'<td class="num">[\d.,]+ → [\d.,]+</td>', table)) == len(rows)


def test_small_figures_keep_their_digits() -> None:
    from wannabet.render.format import fmt_num, speed_factor

    # A latency under 1 µs is not "0.000 ms": three significant digits below 0.001.
    assert fmt_num(0.000412) == "0.000412"
    assert fmt_num(0.0000031) == "0.00000310"
    assert fmt_num(0.0) == "0.000" and fmt_num(0.123) == "0.123" and fmt_num(1234.5) == "1,234"
    assert fmt_num(-0.0005) == "-0.000500"
    # Speed factors: two decimals below 2×, one below 100×.
    assert speed_factor(-82.6) == "5.7×" and speed_factor(12.0) == "1.12×"
    assert speed_factor(-99.5) == "200×" and speed_factor(-100.0) == "∞×"
