"""CPU profiles end to end (issue #17): ``perf`` on the throwaway PostgreSQL during every sample,
the frames that grew when one condition hashes with ``md5``, and the flame graphs in the report,
opened in headless Chromium.

Real components only: Debian's ``perf`` (installed when missing and root), the suite's
PostgreSQL, the engine's inferno. The A-vs-A calibration of the frame test (no frame flagged
more often than alpha allows) is the seeded simulation in ``tests/analysis/test_profiles.py``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest

from wannabet.testing.ci import unavailable
from wannabet.testing.cli import one_line_error, wannabet
from wannabet.testing.packages import PackageUnavailable, ensure_command

from .conftest import Browser

pytestmark = pytest.mark.postgres

#: Two conditions that differ only in a CPU-heavy function: counting a generated series, and
#: counting the md5 of each of its numbers.
MD5 = """
name = "md5-profile"
[[workload.transactions]]
name = "q"
script = "SELECT 1"
[[factors]]
name = "query"
[factors.levels.count]
transactions = [{ name = "q", script = "SELECT count(*) FROM generate_series(1, 20000)" }]
[factors.levels.md5]
transactions = [
  { name = "q", script = "SELECT count(md5(g::text)) FROM generate_series(1, 20000) g" },
]
[sampling]
samples = 6
duration = "1s"
warmup = "0s"
[profile]
perf = true
frequency = 199
"""


@dataclass(frozen=True)
class ProfiledRun:
    results: Path
    folder: Path


@pytest.fixture(scope="module")
def md5_run(postgres: Any, tmp_path_factory: pytest.TempPathFactory) -> ProfiledRun:
    try:
        ensure_command("perf", package="linux-perf")
    except PackageUnavailable as exc:
        unavailable("perf", exc)
    folder = tmp_path_factory.mktemp("profiles")
    experiment = folder / "md5.toml"
    experiment.write_text(MD5)
    results = folder / "md5.duckdb"
    done = wannabet("run", str(experiment), "--target", postgres.url, "-r", str(results))
    assert done.returncode == 0, done.stderr[-2000:]
    return ProfiledRun(results, folder)


def test_every_sample_has_a_profile_of_the_postgres_server(md5_run: ProfiledRun) -> None:
    with duckdb.connect(str(md5_run.results), read_only=True) as con:
        rows = con.execute(
            "SELECT s.sample_id, s.stats, count(p.stack), coalesce(sum(p.weight), 0)"
            " FROM samples s LEFT JOIN profiles p USING (run_id, sample_id)"
            " GROUP BY ALL ORDER BY s.sample_id"
        ).fetchall()
        roots = {
            r[0] for r in con.execute("SELECT split_part(stack, ';', 1) FROM profiles").fetchall()
        }
    assert len(rows) == 12
    for _, stats, stacks, weight in rows:
        section = json.loads(stats)["profile"]
        assert section["event"] == "cpu-clock" and section["frequency_hz"] == 199
        # The postmaster and its processes (checkpointer, walwriter, ... and the backends).
        assert section["processes"] >= 3
        assert section["stack_samples"] > 10 and stacks > 5
        assert weight == pytest.approx(section["cpu_s"] * 1e9)
    # Every stack is the server's: its processes are named postgres.
    assert roots == {"postgres"}, roots


def test_the_md5_frames_grew_with_an_interval_that_excludes_zero(md5_run: ProfiledRun) -> None:
    done = wannabet("compare", "-r", str(md5_run.results), "--profile", "--format", "json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    (diff,) = found["differences"]
    assert (diff["baseline"], diff["condition"]) == ("query=count", "query=md5")
    md5_frames = [c for c in diff["changes"] if "md5" in c["frame"].lower()]
    grown = [c for c in md5_frames if c["verdict"] == "grew"]
    assert grown, md5_frames
    for c in grown:
        assert c["ci_pp"][0] > 0 and c["baseline_pct"] == 0.0, c
        assert diff["decided"][c["frame"]] == "grew"
    # Nothing of md5 in the baseline: no md5 frame shrank.
    assert not [c for c in md5_frames if c["verdict"] == "shrank"]
    table = wannabet("compare", "-r", str(md5_run.results), "--profile")
    assert table.returncode == 0 and grown[0]["frame"] in table.stdout
    assert "grew" in table.stdout and "Welch + Holm" in table.stdout


def test_the_report_draws_flame_graphs_offline_in_chromium(
    md5_run: ProfiledRun, browser: Browser
) -> None:
    out = md5_run.folder / "md5.html"
    done = wannabet("report", "-r", str(md5_run.results), "-o", str(out))
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    # Offline: the page's policy forbids every fetch, and nothing in it points at the network
    # other than XML namespaces.
    assert "default-src 'none'" in html
    assert 'src="http' not in html and "src='http" not in html
    page = browser.open(out, screenshot="report-profiles.png")
    assert page.severe() == [], page.severe()
    assert "CPU profiles" in page.text
    d = page.driver
    frames = d.find_elements("css selector", "iframe.flame")
    assert len(frames) == 3  # two conditions and one differential graph
    drawn = []
    for frame in frames:
        d.switch_to.frame(frame)
        try:
            drawn.append(
                d.execute_script(
                    "const f = document.querySelectorAll('#frames > g');"
                    "return {frames: f.length, text: document.documentElement.textContent,"
                    " fills: Array.from(document.querySelectorAll('#frames rect'))"
                    ".map(r => r.getAttribute('fill'))};"
                )
            )
        finally:
            d.switch_to.default_content()
    assert page.driver.get_log("browser") == []  # the graphs' own scripts ran cleanly
    for graph in drawn:
        assert graph["frames"] > 10, graph["frames"]
    assert "md5" in drawn[1]["text"] and "md5" not in drawn[0]["text"]
    # The differential graph colours decided frames red or blue and leaves the rest grey.
    fills = drawn[2]["fills"]
    assert "rgb(217,217,217)" in fills
    assert any(f.startswith("rgb(") and f not in ("rgb(217,217,217)",) for f in fills)
    table = d.find_element("css selector", "table.frames")
    assert "grew" in table.text and "md5" in table.text


def test_a_target_that_cannot_be_profiled_is_refused_before_the_run(tmp_path: Path) -> None:
    experiment = tmp_path / "one.toml"
    experiment.write_text(
        'name = "one"\n[[workload.transactions]]\nname = "q"\nscript = "SELECT 1"\n'
        '[sampling]\nsamples = 1\nduration = "0.2s"\nwarmup = "0s"\n'
    )
    results = tmp_path / "r.duckdb"
    # No perf on PATH: one line, exit code 8, and no run was started.
    env = {**os.environ, "PATH": str(tmp_path)}
    done = wannabet("run", str(experiment), "-r", str(results), "--profile", env=env)
    line = one_line_error(done, 8)
    assert "perf" in line and "linux-perf" in line
    if results.exists():
        with duckdb.connect(str(results), read_only=True) as con:
            assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)
