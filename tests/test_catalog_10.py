"""Catalog 10 (seed 004): performance consistency on two platforms, in a short form.

Two throwaway PostgreSQL servers stand in for the two platforms: the suite's, and one of this
test's own with 16 MB of shared_buffers (the seed's minimal buffer cache), so that the
`physical` workload's inner table misses the buffers on it. The file's level targets and its
table sizes are replaced by text; a test that cannot find what it replaces fails.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from conftest import throwaway_postgres
from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres
from wannabet.testing.cli import wannabet

EXAMPLE = (
    Path(__file__).resolve().parent.parent
    / "examples"
    / "catalog"
    / "10-performance-consistency.toml"
)
#: the long form's literals, and the short form's: 100 outer rows, a 20,000-row big table
SHRINK = (
    ("generate_series(1, 20000) g;", "generate_series(1, 100) g;"),
    (
        "(g * 7) % 100000 ELSE 200000 - (g * 7) % 100000",
        "(g * 7) % 10000 ELSE 20000 - (g * 7) % 10000",
    ),
    ("generate_series(1, 200000) g;", "generate_series(1, 20000) g;"),
    ("random(0, 199999)", "random(0, 19999)"),
    ("% 200000 + 1;", "% 20000 + 1;"),
)
LEVELS = {f"platform={p},io={io}" for p in ("a", "b") for io in ("logical", "physical")}


def _replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"{old!r} is not in the example once"
    return text.replace(old, new)


def _assert_the_platforms_ran_on_their_own_servers(
    results: Path, big: ThrowawayPostgres, small: ThrowawayPostgres
) -> None:
    """The entry's comparison of two platforms means something only if each level of
    `platform` ran on its own server: the run's stored settings say where each condition ran,
    and its environment which server (with its shared_buffers) the conditions found there."""
    run = Store(results, read_only=True).run()
    where = run.settings.get("targets") or {}
    assert set(where) == LEVELS, where  # no per-condition targets: every level ran on one server
    port = {label: urlsplit(url).port for label, url in where.items()}
    assert {port[f"platform=a,io={io}"] for io in ("logical", "physical")} == {big.port}, port
    assert {port[f"platform=b,io={io}"] for io in ("logical", "physical")} == {small.port}, port
    # The environment holds the run's first server's settings, and each other server's with
    # the conditions that ran on it: b's are the 16 MB server's, a's the suite server's.
    environment = run.environment
    shared_buffers = {label: environment["server_settings"]["shared_buffers"] for label in LEVELS}
    for other in environment.get("targets", []):
        for label in other["conditions"]:
            shared_buffers[label] = other["server_settings"]["shared_buffers"]
    small_pages = "2048 8kB"  # 16 MB in 8 kB pages, as pg_settings gives it
    assert {shared_buffers[f"platform=b,io={io}"] for io in ("logical", "physical")} == {
        small_pages
    }, shared_buffers
    a_buffers = {shared_buffers[f"platform=a,io={io}"] for io in ("logical", "physical")}
    assert len(a_buffers) == 1 and small_pages not in a_buffers, shared_buffers


@pytest.fixture(scope="module")
def small_buffers() -> Iterator[ThrowawayPostgres]:
    with throwaway_postgres(settings={"shared_buffers": "16MB"}) as server:
        yield server


@pytest.mark.postgres
def test_two_platforms_two_workloads_deviation_per_period_and_session(
    postgres: Any, small_buffers: ThrowawayPostgres, tmp_path: Path
) -> None:
    text = EXAMPLE.read_text()
    for old, new in SHRINK:
        text = _replace_once(text, old, new)
    text = _replace_once(text, "postgresql://bench@platform-a.example:5432/bench", postgres.url)
    text = _replace_once(
        text, "postgresql://bench@platform-b.example:5432/bench", small_buffers.url
    )
    experiment = tmp_path / "10.toml"
    experiment.write_text(text)
    results = tmp_path / "r.duckdb"
    done = wannabet(
        "run",
        str(experiment),
        "-r",
        str(results),
        "--samples",
        "3",
        "--duration",
        "1.5s",
        "--warmup",
        "0.2s",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    _assert_the_platforms_ran_on_their_own_servers(results, postgres, small_buffers)

    compare = wannabet("compare", "-r", str(results), "--format", "json")
    assert compare.returncode == 0, compare.stderr
    doc = json.loads(compare.stdout)
    conditions = {c["condition"]: c for c in doc["conditions"]}
    assert set(conditions) == LEVELS
    for c in conditions.values():
        consistency = c["consistency"]
        # Deviation from the median per sample, per session and per period: the seed's plots.
        assert consistency["samples"]["n"] == 3
        assert len(consistency["samples"]["deviation_pct"]) == 3
        assert {s["session"] for s in consistency["by_session"]} == {0, 1}
        assert consistency["period"] == "hour" and consistency["by_period"]

    summary = wannabet("summary", "-r", str(results), "--format", "json")
    stats = json.loads(summary.stdout)
    by_label = {c["condition"]: c for c in stats["conditions"]}
    # The physical workload read blocks from outside the 16 MB buffer cache of b, the
    # logical one hardly any.
    reads = {
        label: c["unit_of_work"]["io_per_unit"]["blks_read"]
        for label, c in by_label.items()
        if c.get("unit_of_work") and c["unit_of_work"].get("io_per_unit")
    }
    assert reads["platform=b,io=physical"] > 10 * max(reads["platform=b,io=logical"], 0.01), reads

    out = tmp_path / "r.html"
    report = wannabet("report", "-r", str(results), "-o", str(out))
    assert report.returncode == 0, report.stderr
    html = out.read_text()
    # The seed's plots: deviation from the median per sample and per session (per period needs
    # a run over more than one hour: the long form; the short one has its one period in JSON).
    for key in ("deviation-samples", "deviation-session"):
        assert f'data-key="{key}"' in html, key
