"""Catalog entry 08 (issue #20): seed 002's commit-write experiment, in a short form.

Four commit settings under a CPU-bound and an IO-bound load, read as a unit-of-work table (CPU
and wait per commit), a response-time curve and the factorial effects of the settings: on
PostgreSQL (``synchronous_commit`` x ``commit_delay``) and on MariaDB
(``innodb_flush_log_at_trx_commit``). The short form runs every condition of each file for two
half-second samples and checks the figures the catalog page reads from the full form: where the
time of a commit goes under each load, what the settings save, and the interaction the seed
found (the no-wait commit helps the IO-bound load and barely the CPU-bound one).

The 30,000-row table is kept at its full size: it loads in a fraction of a second, and its scan
is what makes the ``cpu`` load CPU-bound.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import throwaway_postgres
from wannabet.testing import ThrowawayPostgres
from wannabet.testing.cli import wannabet
from wannabet.testing.mariadb import ThrowawayMariaDB
from wannabet.testing.report_page import chart_spec

CATALOG = Path(__file__).resolve().parent.parent / "examples" / "catalog"
QUICK = ("--samples", "2", "--duration", "0.5s", "--warmup", "0s")


def _run_all_analyses(
    example: Path, url: str, tmp_path: Path
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Run the file in its short form, then what the page shows: the summary (unit of work),
    compare --bayes (the factorial effects) and the report; the first two as JSON, the last as
    the datasets of its response-curve chart."""
    results = tmp_path / "r.duckdb"
    run = wannabet("run", str(example), "--target", url, "--results", str(results), *QUICK)
    assert run.returncode == 0, run.stderr
    summary = wannabet("summary", "--results", str(results), "--format", "json")
    assert summary.returncode == 0, summary.stderr
    bayes = wannabet("compare", "--bayes", "--results", str(results), "--format", "json")
    assert bayes.returncode == 0, bayes.stderr
    page = tmp_path / "report.html"
    report = wannabet("report", "--results", str(results), "-o", str(page))
    assert report.returncode == 0, report.stderr
    spec = chart_spec(page.read_text(), "response-curve")
    return json.loads(summary.stdout), json.loads(bayes.stdout), spec


def _by_condition(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["condition"]: c for c in doc["conditions"]}


def _effects(doc: dict[str, Any]) -> dict[str, tuple[float, float, float]]:
    """Factorial terms -> (centre, HDI low, HDI high), in %."""
    return {e["term"]: (e["mean_pct"], *e["hdi_pct"]) for e in doc["bayes"]["effects"]}


def _curve_points(spec: dict[str, Any]) -> set[str]:
    """Conditions with an operating point (the measured load and response) on the curves."""
    return {
        row["condition"]
        for rows in spec["datasets"].values()
        for row in rows
        if "load" in row and "t" in row
    }


def _assert_curve_points(spec: dict[str, Any], conditions: dict[str, dict[str, Any]]) -> None:
    """The curve chart marks every condition's operating point but those whose unit of work
    says why it has no curve (a measured rate at or past the CPU model's capacity, which a busy
    machine's CPU per commit can reach for the CPU-bound load); the IO-bound load always has
    one."""
    expected = {
        name
        for name, c in conditions.items()
        if not any("no response-time curve" in n for n in c["unit_of_work"]["notes"])
    }
    assert _curve_points(spec) == expected
    assert {name for name in conditions if name.startswith("load=io")} <= expected


@pytest.fixture(scope="module")
def quiet_postgres() -> Iterator[ThrowawayPostgres]:
    """A server of this test's own without autovacuum: a worker's visit commits even when it
    processes no table and leaves no counter (docs/statistics.md, "Commits cross-check"), so on
    the suite's shared server the commit check could count visits to other tests' tables."""
    with throwaway_postgres(settings={"autovacuum": "off"}) as server:
        yield server


@pytest.mark.postgres
def test_postgres_commit_settings_under_cpu_and_io_bound_loads(
    quiet_postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    summary, bayes, curve = _run_all_analyses(
        CATALOG / "08-commit-write-postgres.toml", quiet_postgres.url, tmp_path
    )
    label = "load={},synchronous_commit={},commit_delay={}".format
    conditions = _by_condition(summary)
    assert set(conditions) == {
        label(load, sc, cd) for load in ("cpu", "io") for sc in ("on", "off") for cd in (0, 1000)
    }
    for name, c in conditions.items():
        assert c["samples"] == 2 and c["errors"] == 0 and c["transactions"] > 0, (name, c)
        uow = c["unit_of_work"]
        assert uow["unit"] == "commit" and uow["cpu_ms_per_unit"] > 0, (name, uow)
        # The server counted the commits the engine made (autovacuum, whose commits would
        # count too, is off on this test's own server); a few stray commits, never more than
        # 0.1% of thousands, are still tolerated.
        check = c["server_check"]
        stray = abs(check["engine_commits"] - check["server_commits"])
        assert stray <= max(5, check["engine_commits"] // 1000), (name, check)

    def uow(load: str, sc: str, cd: int = 0) -> dict[str, Any]:
        return dict(conditions[label(load, sc, cd)]["unit_of_work"])

    # IO-bound, commits waiting for the WAL flush: a commit is mostly wait, on the WAL.
    io_on = uow("io", "on")
    assert io_on["wait_ms_per_unit"] > io_on["cpu_ms_per_unit"], io_on
    assert {w["event"] for w in io_on["top_waits"]} & {"WALSync", "WALWrite"}, io_on
    # ... and not waiting for it removes most of that wait and raises the commit rate. By how
    # much depends on this disk's flush: several times where an fsync takes milliseconds, about
    # 1.25x where it took 0.2 ms and the machine's two cores became the limit (seen in CI).
    io_off = uow("io", "off")
    assert io_off["wait_ms_per_unit"] < 0.5 * io_on["wait_ms_per_unit"], (io_on, io_off)
    assert io_off["units_per_s"] > 1.1 * io_on["units_per_s"], (io_on, io_off)
    # CPU-bound: the scan costs several times the CPU of the IO-bound load's commit.
    assert uow("cpu", "on")["cpu_ms_per_unit"] > 3 * io_on["cpu_ms_per_unit"]

    # The factorial effects: synchronous_commit = off is faster on average, and the seed's
    # finding is the interaction, much faster for the IO-bound load than for the CPU-bound one.
    effects = _effects(bayes)
    assert len(effects) == 7, sorted(effects)  # 3 main effects, 3 two-way, 1 three-way
    _, _, high = effects["synchronous_commit: off vs on"]
    assert high < 0, effects
    _, _, high = effects["load × synchronous_commit: (io vs cpu) × (off vs on)"]
    # Credibly and practically negative: on an idle machine about -90%, on a loaded CI
    # machine once -44% (the CPU-bound load's contention shrinks the IO-bound load's gain).
    assert high < -20, effects
    assert "commit_delay: 1000 vs 0" in effects

    # The report draws the operating points on the response-time curves.
    _assert_curve_points(curve, conditions)


def test_mariadb_flush_settings_under_cpu_and_io_bound_loads(
    mariadb: ThrowawayMariaDB, tmp_path: Path
) -> None:
    summary, bayes, curve = _run_all_analyses(
        CATALOG / "08-commit-write-mariadb.toml", mariadb.url, tmp_path
    )
    label = "load={},innodb_flush_log_at_trx_commit={}".format
    conditions = _by_condition(summary)
    assert set(conditions) == {label(load, f) for load in ("cpu", "io") for f in ("1", "2", "0")}
    for name, c in conditions.items():
        assert c["samples"] == 2 and c["errors"] == 0 and c["transactions"] > 0, (name, c)
        uow = c["unit_of_work"]
        assert uow["unit"] == "commit" and uow["cpu_ms_per_unit"] > 0, (name, uow)
        # Both loads commit explicitly, so the server's Com_commit matches exactly.
        check = c["server_check"]
        assert check["engine_commits"] == check["server_commits"] > 0, (name, check)

    def uow(load: str, flush: str) -> dict[str, Any]:
        return dict(conditions[label(load, flush)]["unit_of_work"])

    # What each setting saves: log syncs. With 1 every group of commits syncs (group commit
    # shares one sync among the five sessions' commits); with 2 and 0 about once a second.
    fsyncs = {f: uow("io", f)["io_per_unit"]["Innodb_data_fsyncs"] for f in ("1", "2", "0")}
    assert 0.05 < fsyncs["1"] <= 1.05, fsyncs
    assert fsyncs["2"] < fsyncs["1"] / 20 and fsyncs["0"] < fsyncs["1"] / 20, fsyncs
    # ... and the IO-bound load commits faster without them.
    assert uow("io", "0")["units_per_s"] > 1.5 * uow("io", "1")["units_per_s"]
    assert uow("cpu", "1")["cpu_ms_per_unit"] > 3 * uow("io", "1")["cpu_ms_per_unit"]

    effects = _effects(bayes)
    # 2 main effects (load; flush 2 vs 1, 0 vs 1) and their two interactions.
    assert len(effects) == 5, sorted(effects)
    # Faster on average over both loads. Its HDI, from 2 samples per cell averaged over a load
    # that gains and one that does not, excluded 0 in most runs but not in all.
    centre, _, _ = effects["innodb_flush_log_at_trx_commit: 0 vs 1"]
    assert centre < 0, effects
    assert "load × innodb_flush_log_at_trx_commit: (io vs cpu) × (0 vs 1)" in effects

    _assert_curve_points(curve, conditions)
    # The after-run hook put the durable setting back.
    assert mariadb.sql_as_root("SELECT @@GLOBAL.innodb_flush_log_at_trx_commit").strip() == "1"
