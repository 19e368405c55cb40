"""The report opened in headless Chromium from file://: it renders, offline, and stays inert.

Every run here is a real `wannabet run` on SQLite or a real import; the browser is Debian's
chromium driven by selenium. The screenshots are kept in test-artifacts/.
"""

from __future__ import annotations

import csv
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from .conftest import PWNED, Browser, Page, Runs, ok

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


def report(results: Path, out: Path, *runs: int) -> Path:
    args = [arg for r in runs for arg in ("--run", str(r))]
    ok("report", "--results", str(results), *args, "-o", str(out))
    return out


def spec_of(page: Page, key: str) -> dict[str, Any]:
    """The Vega-Lite spec of the chart whose data-key is ``key``, as the page holds it."""
    (chart,) = [c for c in page.charts if c["key"] == key]
    text = page.driver.execute_script(
        "return document.getElementById(arguments[0] + '-spec').textContent", chart["id"]
    )
    spec: dict[str, Any] = json.loads(text)
    return spec


def assert_rendered(page: Page, expected: set[str]) -> None:
    assert page.severe() == [], page.severe()
    keys = {c["key"] for c in page.charts}
    assert keys == expected, keys
    for c in page.charts:
        # Each plot is a drawn SVG with marks in it, not an empty element or an error note.
        assert c["rendered"] == "1", c
        assert c["svg"] + c["canvas"] >= 1 and c["marks"] > 10, c


FULL = {
    "histogram-log",
    "histogram-linear",
    "boxes",
    "run-order",
    "heatmap",
    "deviation-samples",
    "deviation-session",
    "clt",
}
# A real SQLite run also has database statistics; its unit-of-work curve is drawn only where a
# CPU queue can form: its 2 sessions on fewer than 2 cores.
SQLITE = FULL | ({"response-curve"} if len(os.sched_getaffinity(0)) < 2 else set())


def test_real_sqlite_run_renders_and_a_hostile_name_stays_text(
    browser: Browser, sqlite_runs: Runs, tmp_path: Path
) -> None:
    out = report(sqlite_runs.results, tmp_path / "report.html", sqlite_runs.ids["two"])
    page = browser.open(out, screenshot="report-sqlite.png")
    assert_rendered(page, SQLITE)
    assert page.title == f"wannabet report: {PWNED}"
    assert page.title != "PWNED"
    h1 = page.driver.find_element("id", "report-title").text
    assert h1 == PWNED
    # Only the page's own scripts: one JSON block per chart, the runtime, the loader.
    scripts = page.driver.execute_script("return document.scripts.length")
    assert scripts == len(page.charts) + 2
    # The description's rich markup and HTML are shown literally.
    assert "[red]x and <b>bold</b> stay literal" in page.text
    # The verdict sentence names both conditions.
    sentence = page.driver.find_element("css selector", "ul.verdicts li").text
    assert "synchronous=OFF" in sentence and "synchronous=FULL" in sentence


def test_one_condition_renders_without_a_verdict(
    browser: Browser, sqlite_runs: Runs, tmp_path: Path
) -> None:
    out = report(sqlite_runs.results, tmp_path / "one.html", sqlite_runs.ids["one"])
    page = browser.open(out, screenshot="report-one-condition.png")
    # One session: no per-session breakdown is drawn, and the page says so.
    assert_rendered(page, SQLITE - {"deviation-session"})
    assert "One condition only" in page.text
    assert "Fewer than two sessions" in page.text


def test_six_conditions_render(browser: Browser, sqlite_runs: Runs, tmp_path: Path) -> None:
    out = report(sqlite_runs.results, tmp_path / "six.html", sqlite_runs.ids["six"])
    page = browser.open(out, screenshot="report-six-conditions.png")
    assert_rendered(page, SQLITE - {"deviation-session"})
    rows = page.driver.find_elements("css selector", "#verdict-table tr")
    assert len(rows) == 1 + 5  # header + every condition against the baseline
    for level in ("synchronous=OFF,cache=2000", "synchronous=NORMAL,cache=100"):
        assert level in page.text


def test_zero_successful_transactions_in_one_condition(
    browser: Browser, sqlite_runs: Runs, tmp_path: Path
) -> None:
    out = report(sqlite_runs.results, tmp_path / "zero.html", sqlite_runs.ids["zero"])
    html = out.read_text()
    assert not re.search(r"\bNaN\b|Infinity", html.split("<script>")[0])
    page = browser.open(out, screenshot="report-zero-success.png")
    # The failing condition is left out of the comparison; the other keeps its statistics.
    assert_rendered(page, SQLITE - {"deviation-session"})
    assert "No verdict." in page.text
    assert "query_only=ON: no successful transaction; all" in page.text
    # The failing condition still shows in the run order (its samples ran).
    spec = spec_of(page, "run-order")
    values = [r for d in spec["datasets"].values() for r in d if r["kind"] == "point"]
    assert {r["condition"] for r in values} == {"query_only=OFF", "query_only=ON"}
    assert all(r["value"] is None for r in values if r["condition"] == "query_only=ON")


def test_several_runs_compared(browser: Browser, sqlite_runs: Runs, tmp_path: Path) -> None:
    one, two = sqlite_runs.ids["one"], sqlite_runs.ids["two"]
    out = report(sqlite_runs.results, tmp_path / "several.html", one, two)
    page = browser.open(out)
    assert_rendered(page, SQLITE)
    assert f"{two}:synchronous=OFF" in page.text and f"{one}:baseline" in page.text


def _pgbench_logs(directory: Path) -> list[Path]:
    # Two pgbench -l logs (one per condition), 400 transactions each, seeded.
    rng = np.random.default_rng(11)
    out = []
    for name, scale in (("fast", 900.0), ("slow", 1400.0)):
        lines = []
        t = 1_700_000_000_000_000
        for i in range(400):
            lat = int(rng.gamma(4.0, scale / 4.0))
            t += lat + int(rng.integers(0, 50))
            lines.append(f"{i % 2} {i // 2} {lat} 0 {t // 1_000_000} {t % 1_000_000}")
        path = directory / f"pgbench_log_{name}.1234"
        path.write_text("\n".join(lines) + "\n")
        out.append(path)
    return out


def _csv(directory: Path) -> Path:
    rng = np.random.default_rng(5)
    rows = ["cond,sample,ms,t"]
    for s in range(12):
        for cond, mu in (("[red]x", 2.0), ("plain", 2.4)):
            for k in range(30):
                rows.append(f"{cond},{s},{rng.lognormal(np.log(mu), 0.3):.4f},{s * 10 + k * 0.3}")
    path = directory / "measurements.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


IMPORTS = {
    "pgbench": FULL,
    "csv": FULL - {"deviation-session"},
    # No timestamps: nothing is drawn against time.
    "hyperfine": FULL - {"deviation-session", "heatmap"},
    # Aggregates only: no response time per transaction, so no histogram or heatmap.
    "swingbench": {"run-order", "deviation-samples", "clt"},
    "sysbench": {"run-order", "deviation-samples", "clt"},
}


@pytest.mark.parametrize("fmt", sorted(IMPORTS))
def test_imported_runs_render(browser: Browser, tmp_path: Path, fmt: str) -> None:
    results = tmp_path / "imported.duckdb"
    if fmt == "pgbench":
        logs = _pgbench_logs(tmp_path)
        args = ["pgbench", *map(str, logs), "--condition-from-filename", r"log_(\w+)\."]
        args += ["--sample-interval", "0.1s"]
    elif fmt == "csv":
        args = ["csv", str(_csv(tmp_path)), "--condition", "cond", "--value", "ms"]
        args += ["--sample", "sample", "--time", "t"]
    elif fmt == "hyperfine":
        args = ["hyperfine", str(FIXTURES / "hyperfine.json")]
    elif fmt == "swingbench":
        args = ["swingbench", str(FIXTURES / "swingbench_soe.xml")]
        args += ["--condition", "soe"]
    else:
        args = ["sysbench", str(FIXTURES / "sysbench_oltp.txt")]
        args += ["--condition", "default"]
    ok("import", *args, "--results", str(results))
    if fmt in ("swingbench", "sysbench"):
        second = "swingbench_faster.xml" if fmt == "swingbench" else "sysbench_oltp_tuned.txt"
        ok("import", fmt, str(FIXTURES / second), "--condition", "tuned", "--run", "1",
           "--results", str(results))  # fmt: skip
    out = report(results, tmp_path / f"{fmt}.html")
    page = browser.open(out, screenshot=f"report-import-{fmt}.png")
    assert_rendered(page, IMPORTS[fmt])
    assert "No database statistics were collected for this run." in page.text
    untimed = fmt == "hyperfine"
    assert ("No timestamps" in page.text) is untimed


def test_bayesian_section_renders(browser: Browser, sqlite_runs: Runs, tmp_path: Path) -> None:
    out = tmp_path / "bayes.html"
    ok("report", "--results", str(sqlite_runs.results), "--run", str(sqlite_runs.ids["two"]),
       "--bayes", "--bayes-model", "gamma", "-o", str(out))  # fmt: skip
    page = browser.open(out, screenshot="report-bayes.png")
    assert_rendered(page, SQLITE | {"posterior"})
    header = page.driver.find_element("css selector", "#bayes-verdict-table tr").text
    assert "HDI" in header and "P(faster)" in header and "ROPE decision" in header
    assert_verdict_fits(page.driver, 1280)


# Per verdict table: its box, and every cell that holds a figure or a decision (td.num, and the
# verdict and ROPE decision words) with the number of lines its text takes.
_VERDICT_LAYOUT = """
const tables = Array.from(document.querySelectorAll('#verdict table'))
  .filter(t => t.id.endsWith('verdict-table'));
function lines(el) {
  const range = document.createRange();
  range.selectNodeContents(el);
  const tops = new Set();
  for (const r of range.getClientRects()) { if (r.width > 0) tops.add(Math.round(r.top)); }
  return tops.size;
}
return {
  viewport: document.documentElement.clientWidth,
  scroll: document.documentElement.scrollWidth,
  tables: tables.map(t => ({
    id: t.id,
    right: t.getBoundingClientRect().right,
    scroll: t.scrollWidth,
    client: t.clientWidth,
    headers: Array.from(t.querySelectorAll('th')).map(h => [
      h.textContent.trim(), h.getBoundingClientRect().right]),
    cells: Array.from(t.querySelectorAll('td')).map(c => ({
      text: c.textContent.trim(),
      figure: c.classList.contains('num') || c.classList.contains('word')
        || ['faster', 'slower', 'no-difference', 'inconclusive'].some(v => c.classList.contains(v)),
      lines: lines(c),
      right: c.getBoundingClientRect().right,
      overflow: c.scrollWidth - c.clientWidth,
    })),
  })),
};
"""


def assert_verdict_fits(driver: Any, width: int) -> dict[str, Any]:
    """At ``width`` px: no horizontal scrolling, every verdict column inside the window, and
    every figure and decision whole on one line (not broken or cut to fit)."""
    try:
        driver.set_window_size(width, 1000)
        layout: dict[str, Any] = driver.execute_script(_VERDICT_LAYOUT)
    finally:
        driver.set_window_size(1100, 1400)
    viewport = layout["viewport"]
    assert viewport <= width
    assert layout["scroll"] <= viewport, layout["scroll"]
    assert layout["tables"], "no verdict table"
    for t in layout["tables"]:
        assert t["right"] <= viewport and t["scroll"] <= t["client"], t["id"]
        for name, right in t["headers"]:
            assert right <= viewport, (t["id"], name, right)
        for c in t["cells"]:
            assert c["right"] <= viewport and c["overflow"] <= 0, (t["id"], c)
            if c["figure"]:
                assert c["lines"] == 1, (t["id"], c)
    return layout


def test_a_wide_verdict_fits_1280_px(browser: Browser, sqlite_runs: Runs, tmp_path: Path) -> None:
    """Issue #21: five comparisons with the Bayesian decision, in a 1280 px window, show every
    verdict column without scrolling, and no interval or decision is broken across lines."""
    from wannabet.analysis.bayes import BayesOptions
    from wannabet.reports import build_report
    from wannabet.store import Store
    from wannabet.verdicts import ComparisonOptions

    built = build_report(
        Store(sqlite_runs.results),
        [sqlite_runs.ids["six"]],
        ComparisonOptions(bayes=BayesOptions(model="gamma", seed=1)),
    )
    assert built.doc is not None and len(built.doc["comparisons"]) == 5
    out = tmp_path / "wide-verdict.html"
    out.write_text(built.html, encoding="utf-8")
    page = browser.open(out, screenshot="report-wide-verdict.png")
    layout = assert_verdict_fits(page.driver, 1280)
    headers = [h for t in layout["tables"] for h, _ in t["headers"]]
    for column in ("Δ mean", "p (adj.)", "verdict", "HDI", "P(faster)", "ROPE decision"):
        assert any(column in h for h in headers), (column, headers)
    # Every comparison has its row in each table, with its interval and its decision.
    for t in layout["tables"]:
        labels = {c["text"] for c in t["cells"]}
        assert {"synchronous=OFF,cache=2000", "synchronous=NORMAL,cache=100"} <= labels


HOSTILE = "</script><script>document.title='PWNED'</script>\"\u2028'\\"


def test_a_hostile_label_in_chart_data_renders_every_chart(
    browser: Browser, tmp_path: Path
) -> None:
    # The label reaches every chart's data and sort arrays; U+2028 inside a sort array once
    # made Vega's expression parser fail ("Unexpected token ILLEGAL").
    rng = np.random.default_rng(23)
    with (tmp_path / "hostile.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["cond", "sample", "ms", "t"])
        for s in range(8):
            for cond, mu in ((HOSTILE, 2.0), ("plain", 2.5)):
                for k in range(25):
                    ms = rng.lognormal(np.log(mu), 0.3)
                    writer.writerow([cond, s, f"{ms:.4f}", s * 10 + k * 0.3])
    results = tmp_path / "hostile.duckdb"
    ok("import", "csv", str(tmp_path / "hostile.csv"), "--condition", "cond", "--value", "ms",
       "--sample", "sample", "--time", "t", "--results", str(results))  # fmt: skip
    page = browser.open(report(results, tmp_path / "hostile.html"))
    assert_rendered(page, FULL - {"deviation-session"})
    assert page.title != "PWNED" and "PWNED" not in page.driver.execute_script(
        "return document.title"
    )
    # The label is shown as text (its line separator as a space), never run.
    assert "document.title='PWNED'" in page.text


def test_a_timed_import_over_hours_shows_the_per_period_view(
    browser: Browser, tmp_path: Path
) -> None:
    # Three hours of transactions: the per-period view (hours) has three periods.
    rng = np.random.default_rng(29)
    rows = ["cond,sample,ms,t"]
    for s in range(9):
        for cond, mu in (("a", 2.0), ("b", 2.3)):
            for k in range(40):
                t = s * 1200 + k * 25 + (600 if cond == "b" else 0)
                rows.append(f"{cond},{s},{rng.lognormal(np.log(mu), 0.3):.4f},{t}")
    (tmp_path / "hours.csv").write_text("\n".join(rows) + "\n")
    results = tmp_path / "hours.duckdb"
    ok("import", "csv", str(tmp_path / "hours.csv"), "--condition", "cond", "--value", "ms",
       "--sample", "sample", "--time", "t", "--results", str(results))  # fmt: skip
    page = browser.open(report(results, tmp_path / "hours.html"), screenshot="report-periods.png")
    assert_rendered(page, FULL - {"deviation-session"} | {"deviation-period"})
    spec = spec_of(page, "deviation-period")
    periods = {r["period"] for d in spec["datasets"].values() for r in d if "period" in r}
    # Hours since the first transaction: the last starts 8 * 1200 + 600 + 39 * 25 s in.
    assert periods == set(range((8 * 1200 + 600 + 39 * 25) // 3600 + 1)) == {0, 1, 2, 3}


@pytest.mark.postgres
def test_the_postgres_examples_verdict_fits_1280_px(
    browser: Browser, postgres: Any, tmp_path: Path
) -> None:
    """Issue #21's own case: the PostgreSQL example's report with its Bayesian decision, in a
    1280 px window, shows every verdict column without scrolling
    (docs/img/report-postgres-verdicts-1280.png is this page)."""
    import wannabet

    example = Path(__file__).resolve().parents[2] / "examples" / "postgres-commit.toml"
    outcome = wannabet.run_experiment(
        example,
        results=tmp_path / "pg.duckdb",
        target=postgres.url,
        samples=3,
        duration="0.5s",
        warmup="0s",
        stats=False,
    )
    built = outcome.run.report(bayes=True, bayes_model="gamma")
    assert built.built.doc is not None and built.built.doc["comparisons"]
    page = browser.open(built.save(tmp_path / "pg.html"), screenshot="report-postgres-1280.png")
    layout = assert_verdict_fits(page.driver, 1280)
    headers = [h for t in layout["tables"] for h, _ in t["headers"]]
    for column in ("Δ mean", "p (adj.)", "verdict", "HDI", "P(faster)", "ROPE decision"):
        assert any(column in h for h in headers), (column, headers)
