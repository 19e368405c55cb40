"""The results store: schema, round-trip, crash bookkeeping, export."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wannabet.engine import STATUS_NAMES
from wannabet.errors import StoreError
from wannabet.store import ConditionRow, SampleRow, Store, queries
from wannabet.store.schema import MIGRATIONS, SCHEMA_VERSION
from wannabet.store.store import EXPORTS


def make_run(store: Store) -> int:
    return store.create_run(
        name="rt",
        kind="run",
        seed=1,
        target="sqlite:///x.db",
        settings={"sessions": 2},
        environment={"host": "h"},
        conditions=[ConditionRow(0, "a=1", {"a": "1"}), ConditionRow(1, "a=2", {"a": "2"})],
        transaction_types=[("t", 1, "SELECT 1;")],
    )


def columns(n: int, seed: int = 0, t0: int = 1_700_000_000_000_000_000) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    start = t0 + np.sort(rng.integers(0, 2_000_000_000, n)).astype(np.int64)
    return {
        "session": rng.integers(0, 4, n).astype(np.int32),
        "txn_type": np.zeros(n, dtype=np.int16),
        "intended_start_ns": start - rng.integers(0, 1000, n),
        "start_ns": start,
        "end_ns": start + rng.integers(1, 10_000_000, n),
        "status": rng.choice([0, 0, 0, 2, 5], n).astype(np.int8),
        "error_code": np.full(n, -1, dtype=np.int32),
        "retries": rng.integers(0, 3, n).astype(np.int32),
    }


def test_schema_is_versioned(results: Path) -> None:
    store = Store(results)
    make_run(store)
    assert store.schema_version() == SCHEMA_VERSION
    # Opening again applies nothing twice.
    assert Store(results).schema_version() == SCHEMA_VERSION
    con = duckdb.connect(str(results))
    assert con.execute("SELECT count(*) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    con.close()


def test_newer_schema_is_refused(results: Path) -> None:
    make_run(Store(results))
    con = duckdb.connect(str(results))
    con.execute("INSERT INTO schema_version VALUES (999, now(), 'future')")
    con.close()
    with pytest.raises(StoreError, match="newer than this wannabet"):
        Store(results).runs()


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no results file"):
        Store(tmp_path / "nope.duckdb").runs()


def test_not_a_duckdb_file(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.duckdb"
    bogus.write_text("hello")
    with pytest.raises(StoreError):
        Store(bogus).runs()


def test_sample_round_trip_is_lossless(results: Path) -> None:
    store = Store(results)
    run_id = make_run(store)
    cols = columns(5000)
    cols["error_code"][cols["status"] == 5] = 1
    cols["error_code"][cols["status"] == 2] = 0
    t0 = int(cols["start_ns"][0])
    row = SampleRow(0, 1, 0, 0, t0, t0 + 500_000_000, int(cols["end_ns"].max()), 0.5)
    store.add_sample(run_id, row, cols, ["40001", "23505"])
    with store.read() as con:
        back = con.execute(
            "SELECT session, txn_type, intended_start_ns, start_ns, end_ns, status, error_code,"
            " retries, warmup FROM transactions WHERE run_id = ? ORDER BY start_ns, end_ns",
            [run_id],
        ).fetchnumpy()
        sample = con.execute(
            "SELECT transactions, committed, errors, duration_s, tps FROM samples"
        ).fetchone()
    order = np.lexsort((cols["end_ns"], cols["start_ns"]))
    for name in ("session", "txn_type", "intended_start_ns", "start_ns", "end_ns", "retries"):
        np.testing.assert_array_equal(back[name], cols[name][order])
    names = np.array(STATUS_NAMES)[cols["status"][order]]
    np.testing.assert_array_equal(back["status"], names)
    codes = np.array([None, "40001", "23505"], dtype=object)[cols["error_code"][order] + 1]
    assert np.ma.asarray(back["error_code"]).tolist() == list(codes)
    warm = cols["start_ns"][order] < t0 + 500_000_000
    np.testing.assert_array_equal(back["warmup"], warm)
    measured = ~warm
    ok = cols["status"][order] == 0
    duration = (row.end_ns - row.measure_start_ns) / 1e9
    assert sample[0] == measured.sum()
    assert sample[1] == (ok & measured).sum()
    assert sample[2] == (~ok & measured).sum()
    assert sample[3] == pytest.approx(duration)
    assert sample[4] == pytest.approx((ok & measured).sum() / duration)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(n=st.integers(0, 300), seed=st.integers(0, 1000))
def test_round_trip_property(tmp_path: Path, n: int, seed: int) -> None:
    store = Store(tmp_path / f"p{n}-{seed}.duckdb")
    run_id = make_run(store)
    cols = columns(n, seed)
    store.add_sample(run_id, SampleRow(0, 0, 0, 0, 0, 0, 10**19 // 10, 0.0), cols)
    with store.read() as con:
        got = con.execute(
            "SELECT sum(end_ns - start_ns), count(*), sum(retries) FROM transactions"
        ).fetchone()
    assert got[1] == n
    if n:
        assert got[0] == int((cols["end_ns"] - cols["start_ns"]).sum())
        assert got[2] == int(cols["retries"].sum())


def test_summary_percentiles_match_numpy(results: Path) -> None:
    store = Store(results)
    run_id = make_run(store)
    cols = columns(2000, seed=3)
    cols["status"][:] = 0
    store.add_sample(run_id, SampleRow(0, 0, 0, 0, 0, 0, int(cols["end_ns"].max()), 0.0), cols)
    (a, b) = store.condition_summaries(run_id)
    ms = (cols["end_ns"] - cols["intended_start_ns"]) / 1e6
    assert a.condition == "a=1" and a.transactions == 2000 and a.errors == 0
    assert a.latency_ms["mean"] == pytest.approx(ms.mean())
    # Percentiles come from the merged histograms: the order statistic's bin, at its midpoint,
    # so within half a bin (1/256 relative) of the exact one (the inverse empirical CDF).
    for q in (50, 95, 99):
        exact = np.percentile(ms, q, method="inverted_cdf")
        assert a.latency_ms[f"p{q}"] == pytest.approx(exact, rel=1 / 256), q
    assert a.latency_ms["max"] == pytest.approx(ms.max())
    assert b.transactions == 0 and b.tps is None and b.latency_ms["p99"] is None


def test_no_summary_percentile_lies_above_the_maximum(results: Path) -> None:
    from wannabet.analysis import histogram

    # A latency at the bottom of its bin: the bin's midpoint lies above every value.
    latency = next(
        v
        for v in range(1_000_000, 2_000_000, 997)
        if histogram.quantile(histogram.from_values([v]), 0.99) > v
    )
    store = Store(results)
    run_id = make_run(store)
    cols = columns(50, seed=4)
    cols["status"][:] = 0
    cols["intended_start_ns"] = cols["start_ns"]
    cols["end_ns"] = cols["start_ns"] + latency
    store.add_sample(run_id, SampleRow(0, 0, 0, 0, 0, 0, int(cols["end_ns"].max()), 0.0), cols)
    a = store.condition_summaries(run_id)[0]
    assert a.latency_ms["max"] == pytest.approx(latency / 1e6)
    for q in ("p50", "p95", "p99"):
        assert a.latency_ms[q] == a.latency_ms["max"], q


def test_stale_running_run_is_marked_interrupted(results: Path) -> None:
    store = Store(results)
    # A child process creates a run and dies without closing it, as a crash would.
    code = (
        "import os; from wannabet.store import Store;"
        f" Store({str(results)!r}).create_run(name='crashed', kind='run'); os._exit(1)"
    )
    subprocess.run([sys.executable, "-c", code], check=False)
    # Every reader reports it as interrupted at once (issue #19), while the file still says
    # running until the next writer records it.
    reader = Store(results, read_only=True)
    assert reader.run().status == "interrupted"
    with reader.read() as con:
        assert con.execute("SELECT status FROM runs").fetchone() == ("running",)
    make_run(store)  # the next writer reaps it
    crashed = store.run(1)
    assert crashed.status == "interrupted"
    assert "without closing" in (crashed.message or "")


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_export(results: Path, tmp_path: Path, fmt: str) -> None:
    store = Store(results)
    run_id = make_run(store)
    cols = columns(100)
    store.add_sample(run_id, SampleRow(0, 0, 0, 0, 0, 0, 10**18, 0.0), cols)
    paths = store.export(run_id, tmp_path / "out", fmt)
    # Every table, the joined transactions and the per-sample summary (tests/test_export.py).
    assert {p.name for p in paths} == {f"{t}.{fmt}" for t in EXPORTS}
    txn = next(p for p in paths if p.name.startswith("transactions"))
    if fmt == "parquet":
        assert pq.read_table(txn).num_rows == 100
    else:
        assert len(txn.read_text().strip().splitlines()) == 101


def test_read_only_store_reads_and_refuses_writes(results: Path) -> None:
    store = Store(results)
    run_id = make_run(store)
    cols = columns(300, seed=5)
    store.add_sample(run_id, SampleRow(0, 0, 0, 0, 0, 0, int(cols["end_ns"].max()), 0.0), cols)
    before = results.read_bytes()
    reader = Store(results, read_only=True)
    assert [r.run_id for r in reader.runs()] == [run_id]
    assert reader.condition_summaries(run_id)[0].transactions == 300
    with reader.read() as con:
        got = queries.transaction_blocks(con, run_id, [(0, 0, 300)])
        # No download, ever: extensions are neither installed nor loaded on demand.
        assert con.execute("SELECT current_setting('autoload_known_extensions')").fetchone() == (
            False,
        )
        assert con.execute("SELECT current_setting('autoinstall_known_extensions')").fetchone() == (
            False,
        )
        with pytest.raises(duckdb.Error):
            con.execute("DELETE FROM runs")
    # Stored in start order; latency from the intended start.
    order = np.argsort(cols["start_ns"], kind="stable")
    ok = (cols["status"] == 0)[order]
    want = (cols["end_ns"] - cols["intended_start_ns"])[order][ok] / 1e6
    np.testing.assert_allclose(got.latency_ms, want)
    for write in (
        lambda: reader.finish_run(run_id, "complete"),
        lambda: reader.create_run(name="x", kind="run"),
    ):
        with pytest.raises(StoreError, match="read-only"):
            write()
    assert results.read_bytes() == before


def test_read_only_store_migrates_an_older_file_first(results: Path) -> None:
    con = duckdb.connect(str(results))
    con.execute(
        "CREATE TABLE schema_version"
        " (version INTEGER NOT NULL, applied_at TIMESTAMPTZ NOT NULL, note VARCHAR)"
    )
    for sql in MIGRATIONS[0][2]:
        con.execute(sql)
    con.execute("INSERT INTO schema_version VALUES (1, now(), 'initial schema')")
    con.close()
    reader = Store(results, read_only=True)
    assert reader.runs() == []
    assert reader.schema_version() == SCHEMA_VERSION


def test_read_only_store_refuses_a_newer_schema(results: Path) -> None:
    make_run(Store(results))
    con = duckdb.connect(str(results))
    con.execute("INSERT INTO schema_version VALUES (999, now(), 'future')")
    con.close()
    with pytest.raises(StoreError, match="newer than this wannabet"):
        Store(results, read_only=True).runs()


@pytest.mark.parametrize(
    ("settings", "aggregates_only", "timed", "log"),
    [
        ({}, False, True, None),
        ({"format": "swingbench", "aggregates_only": True}, True, True, None),
        ({"format": "pgbench", "log": "aggregate"}, True, True, "aggregate"),
        ({"format": "pgbench", "log": "transactions"}, False, True, "transactions"),
        ({"format": "hyperfine", "timed": False}, False, False, None),
    ],
)
def test_run_flags_come_from_the_settings(
    results: Path, settings: dict[str, object], aggregates_only: bool, timed: bool, log: str | None
) -> None:
    store = Store(results)
    run_id = store.create_run(name="flags", kind="import", settings=settings)
    info = Store(results, read_only=True).run(run_id)
    assert (info.aggregates_only, info.timed, info.log) == (aggregates_only, timed, log)
    assert info.format == settings.get("format")


def test_a_sample_of_totals_alone_is_counted_by_its_totals(tmp_path: Path) -> None:
    """A Swingbench file with its Overview alone: no per-status counts, only the sample's
    totals, which summary counts (it said 0 transactions and 0 errors)."""
    from wannabet.testing.cli import wannabet_ok

    overview = tmp_path / "ov.xml"
    overview.write_text(
        "<Results><Overview><TotalCompletedTransactions>1500</TotalCompletedTransactions>"
        "<TotalFailedTransactions>3</TotalFailedTransactions>"
        "<TotalRunTime>0:00:05</TotalRunTime></Overview></Results>"
    )
    results = tmp_path / "r.duckdb"
    wannabet_ok("import", "swingbench", str(overview), "--results", str(results))
    store = Store(results, read_only=True)
    [row] = store.condition_summaries(store.run().run_id)
    assert (row.transactions, row.errors, row.tps) == (1503, 3, pytest.approx(300.0))
