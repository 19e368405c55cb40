"""Exports (issue #21): every table, the joined transactions and the per-sample summary, in
Parquet and CSV, read back with DuckDB; and ``txn_type`` as one thing in every table and view
(migration 6)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from typer.testing import CliRunner

from wannabet.backends import parse_target
from wannabet.cli import app
from wannabet.engine import NativeEngine
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import ConditionRow, SampleRow, Store
from wannabet.store.schema import MIGRATIONS, SCHEMA_VERSION
from wannabet.store.store import EXPORTS

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "import"

# Two conditions that differ in the work of one of two transaction types; a warm-up, so that
# leaving it out matters. A recursive count keeps SQLite at some thousands of transactions per
# sample: every one is stored as a row (recorded = 1), cheaply.
EXPERIMENT = textwrap.dedent(
    """\
    name = "export"
    [workload]
    sessions = 2
    [[workload.transactions]]
    name = "count"
    script = '''
    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {n})
    SELECT count(*) FROM c;
    '''
    [[workload.transactions]]
    name = "one"
    script = "SELECT 1;"
    [[factors]]
    name = "n"
    levels = ["200", "2000"]
    [sampling]
    samples = 3
    duration = "0.15s"
    warmup = "0.05s"
    seed = 7
    """
)


@pytest.fixture(scope="module")
def native_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A real SQLite run of the native engine: 2 conditions × 3 samples, 2 types."""
    where = tmp_path_factory.mktemp("native")
    store = Store(where / "results.duckdb")
    run_id = run_experiment(
        parse_experiment(EXPERIMENT, file="e.toml"),
        target=parse_target(f"sqlite:///{where}/t.db"),
        store=store,
        engine=NativeEngine(),
    ).run_id
    return store.path, run_id


def invoke(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def exported(directory: Path, fmt: str = "parquet") -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB whose views are the exported files, by their names."""
    con = duckdb.connect()
    reader = "read_parquet" if fmt == "parquet" else "read_csv"
    for name in EXPORTS:
        path = str(directory / f"{name}.{fmt}").replace("'", "''")
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM {reader}('{path}')")
    return con


def summary_json(results: Path, run_id: int) -> dict[str, Any]:
    out = invoke("summary", "--results", str(results), "--run", str(run_id), "-f", "json")
    doc: dict[str, Any] = json.loads(out)
    return doc


def documented_sql(heading: str) -> list[str]:
    """The ``sql`` blocks of one section of docs/results-schema.md."""
    text = (ROOT / "docs" / "results-schema.md").read_text()
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sql\n(.*?)```", section, re.DOTALL)


# -- (a) a real run round-trips through Parquet -------------------------------------------------


def test_a_run_exported_to_parquet_reproduces_summary(
    native_run: tuple[Path, int], tmp_path: Path
) -> None:
    results, run_id = native_run
    out = tmp_path / "out"
    printed = invoke("export", "--results", str(results), "--run", str(run_id), "-o", str(out))
    assert printed.split() == [str(out / f"{name}.parquet") for name in EXPORTS]
    shown = {c["condition"]: c for c in summary_json(results, run_id)["conditions"]}
    assert set(shown) == {"n=200", "n=2000"}
    con = exported(out)
    # Every transaction is a row (the comparisons with the rows rest on it), and the warm-up
    # is there to be left out.
    assert con.execute("SELECT min(recorded) FROM sample_summary").fetchone() == (1.0,)
    assert con.execute("SELECT count(*) FROM transaction_latency WHERE warmup").fetchone()[0] > 0

    # From the per-sample summary: counts, TPS, mean and maximum, as summary computes them.
    per_sample = con.execute(
        """
        SELECT condition, count(*), sum(transactions), sum(errors),
               sum(committed) / sum(duration_s),
               sum(mean_ms * latency_count) / sum(latency_count), max(max_ms)
        FROM sample_summary WHERE status = 'complete' GROUP BY condition
        """
    ).fetchall()
    assert len(per_sample) == 2
    for condition, samples, n, errors, tps, mean, mx in per_sample:
        want = shown[condition]
        assert (samples, n, errors) == (want["samples"], want["transactions"], want["errors"])
        assert samples == 3 and n > 50
        assert tps == pytest.approx(want["tps"], rel=1e-12)
        assert mean == pytest.approx(want["latency_ms"]["mean"], rel=1e-9)
        assert mx == pytest.approx(want["latency_ms"]["max"], rel=1e-12)

    # The percentiles exactly, from the exported histograms merged per condition.
    for q, key in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
        got = dict(
            con.execute(
                """
                WITH b AS (
                    SELECT s.condition_id, b.lo_ns, b.hi_ns, sum(b.count) AS n
                    FROM sample_bins b JOIN samples s USING (run_id, sample_id)
                    WHERE NOT b.warmup GROUP BY ALL
                ), c AS (
                    SELECT *, sum(n) OVER (PARTITION BY condition_id ORDER BY lo_ns) AS cum,
                           sum(n) OVER (PARTITION BY condition_id) AS total FROM b
                )
                SELECT k.label, min((lo_ns + hi_ns) / 2e6)
                FROM c JOIN conditions k USING (condition_id)
                WHERE cum >= greatest(ceil(? * total), 1) GROUP BY k.label
                """,
                [q],
            ).fetchall()
        )
        for condition, want in shown.items():
            assert got[condition] == pytest.approx(want["latency_ms"][key], rel=1e-12), key

    # From the joined transactions alone: counts and errors exactly, the mean to rounding, and
    # the p99 order statistic within the histogram's half bin (1/256) of summary's.
    rows = con.execute(
        """
        WITH m AS (
            SELECT condition, latency_ms, status,
                   row_number() OVER (PARTITION BY condition, status = 'ok'
                                      ORDER BY latency_ms) AS k,
                   count(*) OVER (PARTITION BY condition, status = 'ok') AS n_ok
            FROM transaction_latency WHERE NOT warmup
        )
        SELECT condition, count(*), count(*) FILTER (WHERE status <> 'ok'),
               avg(latency_ms) FILTER (WHERE status = 'ok'),
               max(latency_ms) FILTER (WHERE status = 'ok'),
               min(latency_ms) FILTER (WHERE status = 'ok' AND k = ceil(0.99 * n_ok))
        FROM m GROUP BY condition
        """
    ).fetchall()
    assert len(rows) == 2
    for condition, n, errors, mean, mx, p99 in rows:
        want = shown[condition]
        assert (n, errors) == (want["transactions"], want["errors"])
        assert mean == pytest.approx(want["latency_ms"]["mean"], rel=1e-9)
        assert mx == pytest.approx(want["latency_ms"]["max"], rel=1e-9)
        assert p99 == pytest.approx(want["latency_ms"]["p99"], rel=1 / 256)
    # Each sample's figures: its p99 is the documented query over the exported bins, and the
    # rest are its stored rows'.
    (p99_sql,) = [q for q in documented_sql("Per-sample summaries (migration 3)") if "p99" in q]
    p99 = dict(con.execute(p99_sql).fetchall())
    figures = con.execute(
        """
        SELECT s.sample_id, s.p99_ms, s.latency_count, s.mean_ms, s.sd_ms, s.min_ms, s.max_ms,
               count(*), avg(l.latency_ms), stddev_samp(l.latency_ms), min(l.latency_ms),
               max(l.latency_ms)
        FROM sample_summary s JOIN transaction_latency l USING (run_id, sample_id)
        WHERE l.status = 'ok' AND NOT l.warmup GROUP BY ALL ORDER BY s.sample_id
        """
    ).fetchall()
    assert len(figures) == len(p99) == 6
    for sample_id, sample_p99, n, mean, sd, lo, hi, *rows in figures:
        assert sample_p99 == pytest.approx(p99[sample_id], rel=1e-12)
        assert n == rows[0]
        np.testing.assert_allclose([mean, sd, lo, hi], rows[1:], rtol=1e-6)
    # The two conditions differ, so a swapped label would show.
    means = {c: s["latency_ms"]["mean"] for c, s in shown.items()}
    assert means["n=2000"] > means["n=200"]


def test_the_joined_transactions_carry_condition_type_name_and_latency(
    native_run: tuple[Path, int], tmp_path: Path
) -> None:
    results, run_id = native_run
    Store(results, read_only=True).export(run_id, tmp_path, "parquet")
    con = exported(tmp_path)
    # Column for column what the results file's view holds, for the same rows.
    with Store(results, read_only=True).read() as db:
        columns = [
            d[0] for d in db.execute("SELECT * FROM transaction_latency LIMIT 0").description
        ]
        stored = db.execute("SELECT count(*) FROM transactions").fetchone()
    got = con.execute("SELECT * FROM transaction_latency LIMIT 0").description
    assert [d[0] for d in got] == columns
    for name in ("condition", "txn_name", "latency_ms", "block", "start_ns", "end_ns"):
        assert name in columns
    assert con.execute("SELECT count(*) FROM transaction_latency").fetchone() == stored
    mismatches = con.execute(
        """
        SELECT count(*) FROM transaction_latency l
        JOIN transaction_types tt USING (run_id, txn_type)
        JOIN conditions c USING (run_id, condition_id)
        JOIN samples s USING (run_id, sample_id)
        WHERE l.txn_name <> tt.name OR l.condition <> c.label OR l.block <> s.block
           OR l.latency_ms <> (l.end_ns - l.intended_start_ns) / 1e6
        """
    ).fetchone()
    assert mismatches == (0,)
    assert dict(
        con.execute(
            "SELECT txn_name, count(*) FROM transaction_latency GROUP BY ALL ORDER BY 1"
        ).fetchall()
    ).keys() == {"count", "one"}
    # The raw table keeps its own columns (the file older scripts read).
    raw = [d[0] for d in con.execute("SELECT * FROM transactions LIMIT 0").description]
    assert raw[:5] == ["run_id", "sample_id", "session", "txn_type", "intended_start_ns"]
    assert "latency_ms" not in raw


# -- (b) imports: their aggregates and files are exported ----------------------------------------


def test_an_import_of_aggregates_exports_its_aggregates(results: Path, tmp_path: Path) -> None:
    invoke("import", "swingbench", str(FIXTURES / "swingbench_soe.xml"), "--condition",
           "before", "--results", str(results))  # fmt: skip
    store = Store(results, read_only=True)
    run_id = store.run().run_id
    out = tmp_path / "out"
    invoke("export", "--results", str(results), "-o", str(out))
    con = exported(out)
    assert con.execute("SELECT count(*) FROM aggregates").fetchone() == (
        len(store.aggregates(run_id)),
    )
    reg = con.execute(
        """
        SELECT a.count, a.failed, a.lat_mean_ms, a.lat_max_ms, a.percentiles, c.label
        FROM aggregates a
        JOIN transaction_types tt USING (run_id, txn_type)
        JOIN conditions c USING (run_id, condition_id)
        WHERE tt.name = 'Customer Registration'
        """
    ).fetchall()
    assert len(reg) == 1
    count, failed, mean, mx, percentiles, label = reg[0]
    assert (count, failed, mean, mx, label) == (800, 1, 12.5, 80, "before")
    assert json.loads(percentiles)["p50"] == 10
    # summary's figures of an aggregates-only import come from these rows.
    (shown,) = summary_json(results, run_id)["conditions"]
    n, errors, mean_all = con.execute(
        "SELECT sum(count + failed + skipped), sum(failed + skipped),"
        " sum(lat_mean_ms * count) / sum(count) FROM aggregates"
    ).fetchone()
    assert (n, errors) == (shown["transactions"], shown["errors"]) == (2004, 4)
    assert mean_all == pytest.approx(shown["latency_ms"]["mean"])
    # The imported file, and samples that know no latency: NULL, not invented.
    assert con.execute("SELECT format, condition FROM imports").fetchall() == [
        ("swingbench", "before")
    ]
    assert con.execute(
        "SELECT count(*), count(mean_ms), count(p99_ms), sum(committed) FROM sample_summary"
    ).fetchone() == (10, 0, 0, 2000)
    assert con.execute("SELECT count(*) FROM transactions").fetchone() == (0,)


def test_all_runs_export_a_run_and_an_import_together(
    native_run: tuple[Path, int], tmp_path: Path
) -> None:
    results = tmp_path / "two.duckdb"
    results.write_bytes(native_run[0].read_bytes())
    invoke("import", "sysbench", str(FIXTURES / "sysbench_oltp.txt"), "--condition", "x",
           "--results", str(results))  # fmt: skip
    seen: list[tuple[str, int]] = []
    paths = Store(results, read_only=True).export(
        None, tmp_path / "all", "parquet", written=lambda p, n: seen.append((p.stem, n))
    )
    assert [p.stem for p in paths] == [name for name, _ in seen] == list(EXPORTS)
    con = exported(tmp_path / "all")
    counts = dict(seen)
    for name in EXPORTS:
        assert con.execute(f"SELECT count(*) FROM {name}").fetchone() == (counts[name],), name
    assert con.execute("SELECT list(kind ORDER BY run_id) FROM runs").fetchone() == (
        ["run", "import"],
    )
    by_run = dict(
        con.execute("SELECT run_id, count(*) FROM sample_summary GROUP BY ALL").fetchall()
    )
    assert by_run[1] == 6 and by_run[2] >= 1
    assert con.execute("SELECT DISTINCT run_id FROM aggregates").fetchall() == [(2,)]
    histogram = con.execute(
        "SELECT histogram FROM aggregates WHERE histogram IS NOT NULL"
    ).fetchone()
    assert histogram is not None and json.loads(histogram[0])["bins_ns"]
    # One run only: no row of the other.
    Store(results, read_only=True).export(2, tmp_path / "one", "parquet")
    one = exported(tmp_path / "one")
    for name in EXPORTS:
        if name != "schema_version":
            found = one.execute(f"SELECT DISTINCT run_id FROM {name}").fetchall()
            assert found in ([], [(2,)]), name
    assert one.execute("SELECT count(*) FROM transactions").fetchone() == (0,)


# -- (d) CSV says what Parquet says ---------------------------------------------------------------


def test_csv_export_holds_what_parquet_holds(native_run: tuple[Path, int], tmp_path: Path) -> None:
    results, run_id = native_run
    store = Store(results, read_only=True)
    store.export(run_id, tmp_path / "p", "parquet")
    paths = store.export(run_id, tmp_path / "c", "csv")
    assert [p.name for p in paths] == [f"{name}.csv" for name in EXPORTS]
    csv, parquet = exported(tmp_path / "c", "csv"), exported(tmp_path / "p")
    for name in EXPORTS:
        n = parquet.execute(f"SELECT count(*) FROM {name}").fetchone()
        assert csv.execute(f"SELECT count(*) FROM {name}").fetchone() == n, name
    query = (
        "SELECT sample_id, condition, transactions, errors, tps, mean_ms, p99_ms, max_ms"
        " FROM sample_summary ORDER BY sample_id"
    )
    got, want = csv.execute(query).fetchall(), parquet.execute(query).fetchall()
    assert len(want) == 6
    for a, b in zip(got, want, strict=True):
        assert a[:4] == b[:4]
        np.testing.assert_allclose(a[4:], b[4:], rtol=1e-12)
    latency = "SELECT sum(latency_ms), count(*) FILTER (WHERE warmup) FROM transaction_latency"
    a, b = csv.execute(latency).fetchone(), parquet.execute(latency).fetchone()
    assert a[0] == pytest.approx(b[0], rel=1e-12) and a[1] == b[1]
    assert csv.execute("SELECT count(*) FROM aggregates").fetchone() == (0,)
    settings = csv.execute("SELECT settings FROM runs").fetchone()[0]
    assert json.loads(settings)["sessions"] == 2


# -- (c) migration 6 and (e) the documented join --------------------------------------------------


def _two_type_run(results: Path) -> int:
    """A run of two types written through the store: type 0 slow, type 1 fast."""
    store = Store(results)
    run_id = store.create_run(
        name="old",
        kind="run",
        conditions=[ConditionRow(0, "a", {"x": "a"})],
        transaction_types=[("slow", 1, "SELECT 1;"), ("fast", 1, "SELECT 2;")],
    )
    n = 400
    t0 = 1_700_000_000_000_000_000
    start = t0 + np.arange(n, dtype=np.int64) * 1_000_000
    kind = (np.arange(n) % 2).astype(np.int16)
    columns = {
        "session": np.zeros(n, dtype=np.int32),
        "txn_type": kind,
        "intended_start_ns": start,
        "start_ns": start,
        "end_ns": start + np.where(kind == 0, 3_000_000, 1_000_000),
        "status": np.zeros(n, dtype=np.int8),
        "error_code": np.full(n, -1, dtype=np.int32),
        "retries": np.zeros(n, dtype=np.int32),
    }
    store.add_sample(run_id, SampleRow(0, 0, 0, 0, t0, t0, int(start[-1]) + 10**7, 0.0), columns)
    return run_id


def _as_version_5(results: Path) -> None:
    """Make the file what wannabet with schema 5 left: migration 1's view, no migration 6, and
    none of what later migrations add (7: the profiles table)."""
    con = duckdb.connect(str(results))
    view = next(sql for sql in MIGRATIONS[0][2] if "CREATE VIEW transaction_latency" in sql)
    con.execute("DROP VIEW transaction_latency")
    con.execute(view)
    con.execute("DROP TABLE profiles")
    con.execute("DELETE FROM schema_version WHERE version > 5")
    con.close()


def test_migration_6_makes_txn_type_the_index_in_the_view(results: Path) -> None:
    assert SCHEMA_VERSION >= 6
    run_id = _two_type_run(results)
    _as_version_5(results)
    con = duckdb.connect(str(results))
    old = dict(
        (r[0], r[1])
        for r in con.execute("DESCRIBE transaction_latency").fetchall()
        if r[0] in ("txn_type", "txn_name")
    )
    con.close()
    assert old == {"txn_type": "VARCHAR"}  # the name, under the index's name

    store = Store(results, read_only=True)  # an older file: migrated first
    assert store.schema_version() == SCHEMA_VERSION
    with store.read() as db:
        types = {r[0]: r[1] for r in db.execute("DESCRIBE transaction_latency").fetchall()}
        rows = db.execute(
            "SELECT txn_type, txn_name, count(*), avg(latency_ms) FROM transaction_latency"
            " WHERE run_id = ? GROUP BY ALL ORDER BY txn_type",
            [run_id],
        ).fetchall()
        notes = db.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
    assert (types["txn_type"], types["txn_name"]) == ("SMALLINT", "VARCHAR")
    for name in ("position", "intended_start_ns", "end_ns", "latency_ms", "condition"):
        assert name in types
    assert rows == [(0, "slow", 200, pytest.approx(3.0)), (1, "fast", 200, pytest.approx(1.0))]
    assert [v for (v,) in notes] == list(range(1, SCHEMA_VERSION + 1))
    # The run reads as it did: nothing stored changed.
    (row,) = store.condition_summaries(run_id)
    assert row.transactions == 400 and row.latency_ms["mean"] == pytest.approx(2.0)


def test_the_documented_join_failed_before_migration_6_and_works_now(results: Path) -> None:
    blocks = documented_sql("`transaction_latency` (view)")
    join = next(sql for sql in blocks if "JOIN transaction_types" in sql)
    run_id = _two_type_run(results)
    assert run_id == 1  # the documented queries name run 1
    _as_version_5(results)
    con = duckdb.connect(str(results))
    with pytest.raises(duckdb.Error):
        con.execute(join).fetchall()
    con.close()

    with Store(results, read_only=True).read() as db:
        got = db.execute(join).fetchall()
        every = [db.execute(sql).fetchall() for sql in blocks]
    assert [(t, name) for t, name, *_ in got] == [(0, "slow"), (1, "fast")]
    for _, _, rows_mean, summaries_mean in got:
        assert rows_mean == pytest.approx(summaries_mean)
    assert [round(m) for _, _, m, _ in got] == [3, 1]
    assert all(every)  # every documented query of the view runs and finds rows

    # The aggregates' documented join runs too (no rows: the run imported none).
    (aggregates_join,) = documented_sql("`aggregates` (migration 2)")
    with Store(results, read_only=True).read() as db:
        assert db.execute(aggregates_join).fetchall() == []


# -- the same tables for Python, and degraded samples -----------------------------------------


def test_the_arrow_tables_are_what_the_export_holds(
    native_run: tuple[Path, int], tmp_path: Path
) -> None:
    results, run_id = native_run
    store = Store(results, read_only=True)
    store.export(run_id, tmp_path, "parquet")
    con = exported(tmp_path)
    summaries = store.sample_summaries_table(run_id)
    assert summaries.equals(con.sql("FROM sample_summary ORDER BY sample_id").to_arrow_table())
    samples = store.samples_table(run_id)
    assert (
        samples.column("condition").to_pylist()
        == con.sql(
            "SELECT c.label FROM samples JOIN conditions c USING (run_id, condition_id)"
            " ORDER BY sample_id"
        )
        .fetchnumpy()["label"]
        .tolist()
    )
    measured = store.transactions_table(run_id)
    every = store.transactions_table(run_id, include_warmup=True)
    assert (
        measured.num_rows
        == con.execute("SELECT count(*) FROM transaction_latency WHERE NOT warmup").fetchone()[0]
    )
    assert every.num_rows == con.execute("SELECT count(*) FROM transactions").fetchone()[0]
    assert every.num_rows > measured.num_rows
    assert measured.column_names == [d[0] for d in con.sql("FROM transaction_latency").description]


def test_degraded_samples_are_exported_and_say_so(results: Path, tmp_path: Path) -> None:
    run_id = _two_type_run(results)
    store = Store(results)
    n = 10
    t0 = 1_800_000_000_000_000_000
    start = t0 + np.arange(n, dtype=np.int64) * 1_000_000
    columns = {
        "session": np.zeros(n, dtype=np.int32),
        "txn_type": np.zeros(n, dtype=np.int16),
        "intended_start_ns": start,
        "start_ns": start,
        "end_ns": start + 50_000_000,
        "status": np.zeros(n, dtype=np.int8),
        "error_code": np.full(n, -1, dtype=np.int32),
        "retries": np.zeros(n, dtype=np.int32),
    }
    late = SampleRow(1, 0, 1, 1, t0, t0, int(start[-1]) + 10**8, 0.0, status="degraded",
                     reason="it ran past its deadline")  # fmt: skip
    store.add_sample(run_id, late, columns)
    store.export(run_id, tmp_path, "parquet")
    con = exported(tmp_path)
    assert con.execute(
        "SELECT sample_id, status, reason, latency_count, mean_ms FROM sample_summary"
        " ORDER BY sample_id"
    ).fetchall() == [
        (0, "complete", None, 400, pytest.approx(2.0)),
        (1, "degraded", "it ran past its deadline", 10, pytest.approx(50.0)),
    ]
    # The analyses leave it out unless asked, and so do the tables they read.
    assert Store(results, read_only=True).sample_summaries_table(run_id).num_rows == 1
    assert Store(results, read_only=True).transactions_table(run_id).num_rows == 400
    wide = Store(results, read_only=True, include_degraded=True)
    assert wide.sample_summaries_table(run_id).num_rows == 2
    assert wide.transactions_table(run_id).num_rows == 410
