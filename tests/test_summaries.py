"""Per-sample summaries in the store: schema 3's backfill, add_sample, the summary queries.

The reference is :func:`wannabet.store.summaries.from_columns` (itself held to the engine) and
:func:`wannabet.analysis.histogram.from_values`; every query is checked against a brute-force
computation over the raw ``transactions`` of a stored run.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wannabet.analysis import histogram
from wannabet.backends import parse_target
from wannabet.datasets import load_type_summaries
from wannabet.engine import NativeEngine
from wannabet.errors import StoreError
from wannabet.model import STATUS_NAMES
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import ConditionRow, SampleRow, Store, queries
from wannabet.store.schema import MIGRATIONS, SCHEMA_VERSION, _bin_width
from wannabet.store.store import ImportBatch, ImportedSample
from wannabet.store.summaries import SampleSummaries, from_columns

T0 = 1_700_000_000_000_000_000
STATUS = np.asarray(STATUS_NAMES, dtype=object)


def columns(n: int, seed: int, *, types: int = 2, t0: int = T0) -> dict[str, np.ndarray]:
    """A sample's engine columns: several types, errors, latencies from 0 ns to 50 ms."""
    rng = np.random.default_rng(seed)
    start = t0 + np.sort(rng.integers(0, 2_000_000_000, n)).astype(np.int64)
    intended = start - rng.integers(0, 1000, n)
    latency = np.where(
        rng.random(n) < 0.1,
        rng.integers(1, 600, n),  # below 256 ns and around it: bins of one value
        rng.lognormal(np.log(2e6), 1.0, n).astype(np.int64),
    )
    return {
        "session": rng.integers(0, 4, n).astype(np.int32),
        "txn_type": rng.integers(0, types, n).astype(np.int16),
        "intended_start_ns": intended,
        "start_ns": start,
        "end_ns": intended + latency,
        "status": rng.choice([0, 0, 0, 0, 2, 5], n).astype(np.int8),
        "error_code": np.full(n, -1, dtype=np.int32),
        "retries": np.zeros(n, dtype=np.int32),
    }


def make_run(store: Store, types: int = 2) -> int:
    return store.create_run(
        name="s",
        kind="run",
        conditions=[ConditionRow(0, "a", {}), ConditionRow(1, "b", {})],
        transaction_types=[(f"t{i}", 1, "SELECT 1;") for i in range(types)],
    )


def row(sample_id: int, condition: int) -> SampleRow:
    return SampleRow(
        sample_id, condition, sample_id, sample_id, T0, T0 + 500_000_000, T0 + 2_100_000_000, 0.5
    )


# -- comparing summaries ---------------------------------------------------------------------------


def stored(con: duckdb.DuckDBPyConnection, run_id: int, sample_id: int) -> dict[str, Any]:
    """One sample's rows of the three tables, as sorted numpy columns."""
    out = {}
    for table, order in (
        ("sample_moments", "txn_type, warmup"),
        ("sample_statuses", "txn_type, warmup, status"),
        ("sample_bins", "txn_type, warmup, lo_ns"),
    ):
        rows = con.execute(
            f"SELECT * EXCLUDE (run_id, sample_id) FROM {table}"
            f" WHERE run_id = ? AND sample_id = ? ORDER BY {order}",
            [run_id, sample_id],
        ).fetchnumpy()
        out[table] = {k: np.ma.filled(v, np.nan) if np.ma.isMaskedArray(v) else v
                      for k, v in rows.items()}  # fmt: skip
    return out


def assert_equal_summaries(got: Mapping[str, Any], expected: SampleSummaries) -> None:
    assert_equal_moments_and_bins(got, expected)
    s, e = got["sample_statuses"], expected.statuses
    names = STATUS[e["status"].astype(np.int64)]
    order = np.lexsort((names, e["warmup"], e["txn_type"]))
    np.testing.assert_array_equal(s["txn_type"], e["txn_type"][order])
    np.testing.assert_array_equal(s["warmup"], e["warmup"][order])
    assert s["status"].tolist() == names[order].tolist()
    np.testing.assert_array_equal(s["count"], e["count"][order])


def assert_equal_moments_and_bins(got: Mapping[str, Any], expected: SampleSummaries) -> None:
    m, e = got["sample_moments"], expected.moments
    order = np.lexsort((e["warmup"], e["txn_type"]))
    for col in ("txn_type", "warmup", "count", "min_ns", "max_ns"):
        np.testing.assert_array_equal(m[col], e[col][order], err_msg=col)
    for col in ("sum_ms", "sumsq_ms", "sumlog_ms", "sumlog2_ms"):
        np.testing.assert_allclose(m[col], e[col][order], rtol=1e-12, err_msg=col)
    b, e = got["sample_bins"], expected.bins
    order = np.lexsort((e["lo_ns"], e["warmup"], e["txn_type"]))
    for col in ("txn_type", "warmup", "lo_ns", "hi_ns", "count"):
        np.testing.assert_array_equal(b[col], e[col][order], err_msg=col)


def raw_columns(
    con: duckdb.DuckDBPyConnection, run_id: int, sample_id: int
) -> dict[str, np.ndarray]:
    """A stored sample's transactions as engine columns (status names back to codes)."""
    rows = con.execute(
        "SELECT txn_type, intended_start_ns, start_ns, end_ns, status FROM transactions"
        " WHERE run_id = ? AND sample_id = ?",
        [run_id, sample_id],
    ).fetchnumpy()
    code = {name: i for i, name in enumerate(STATUS_NAMES)}
    return {
        **{k: np.asarray(v) for k, v in rows.items() if k != "status"},
        "status": np.asarray([code[s] for s in rows["status"]], dtype=np.int8),
    }


def assert_summaries_match_rows(con: duckdb.DuckDBPyConnection, run_id: int) -> int:
    """Every sample of a run that has rows: its summary tables equal its rows' summaries.

    Moments and bins against :func:`from_columns`, with the stored ``warmup`` flag as the
    phase; statuses counted by name (imports have statuses the engine has no code for, such as
    pgbench's ``skipped``). Returns the number of samples checked.
    """
    ids = [
        int(r[0])
        for r in con.execute(
            "SELECT DISTINCT sample_id FROM transactions WHERE run_id = ? ORDER BY 1", [run_id]
        ).fetchall()
    ]
    for sid in ids:
        rows = con.execute(
            "SELECT txn_type, intended_start_ns, end_ns, status, warmup FROM transactions"
            " WHERE run_id = ? AND sample_id = ?",
            [run_id, sid],
        ).fetchnumpy()
        names = np.asarray(rows["status"], dtype=object)
        warm = np.asarray(rows["warmup"], dtype=bool)
        cols = {
            "txn_type": np.asarray(rows["txn_type"]),
            "intended_start_ns": np.asarray(rows["intended_start_ns"]),
            "end_ns": np.asarray(rows["end_ns"]),
            "start_ns": np.where(warm, 0, 1),  # warm-up: started before measure_start_ns = 1
            "status": np.where(names == "ok", 0, 1).astype(np.int8),
        }
        got = stored(con, run_id, sid)
        assert_equal_moments_and_bins(got, from_columns(cols, 1))
        expected: dict[tuple[int, bool, str], int] = {}
        for key in zip(cols["txn_type"].tolist(), warm.tolist(), names.tolist(), strict=True):
            expected[key] = expected.get(key, 0) + 1
        s = got["sample_statuses"]
        found = zip(s["txn_type"].tolist(), s["warmup"].tolist(), s["status"].tolist(),
                    s["count"].tolist(), strict=True)  # fmt: skip
        assert {(t, w, n): c for t, w, n, c in found} == expected
    return len(ids)


# -- the bin formula -------------------------------------------------------------------------------


def test_bin_sql_is_hdrhistograms_layout_bin_for_bin() -> None:
    rng = np.random.default_rng(7)
    powers = [(1 << k) + np.arange(-2, 3) for k in range(8, 63)]
    values = np.concatenate(
        [
            np.arange(0, 700),
            *powers,
            [2**53 - 1, 2**53 + 1, 2**62 + 12345, 2**63 - 1],
            rng.integers(0, 2**45, 20_000),
            rng.lognormal(np.log(1e6), 2.0, 20_000).astype(np.int64),
        ]
    ).astype(np.int64)
    con = duckdb.connect()
    con.execute("CREATE TABLE v (ns BIGINT)")
    con.register("incoming", pa.table({"ns": values}))
    con.execute("INSERT INTO v SELECT ns FROM incoming")
    got = con.execute(
        "SELECT ns - ns % w AS lo, ns - ns % w + (w - 1) AS hi, count(*) AS n"
        f" FROM (SELECT ns, {_bin_width('ns')} AS w FROM v) GROUP BY ALL ORDER BY lo"
    ).fetchnumpy()
    h = histogram.from_values(values)
    np.testing.assert_array_equal(got["lo"].astype(np.uint64), h.lo_ns)
    np.testing.assert_array_equal(got["hi"].astype(np.uint64), h.hi_ns)
    np.testing.assert_array_equal(got["n"].astype(np.uint64), h.count)


# -- migration 3 -----------------------------------------------------------------------------------


def version_2_file(path: Path, samples: list[tuple[SampleRow, dict[str, np.ndarray]]]) -> None:
    """A results file as wannabet wrote it before schema 3: samples and their transactions."""
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE schema_version"
        " (version INTEGER NOT NULL, applied_at TIMESTAMPTZ NOT NULL, note VARCHAR)"
    )
    for version, note, statements in MIGRATIONS[:2]:
        for sql in statements:
            con.execute(sql)
        con.execute("INSERT INTO schema_version VALUES (?, now(), ?)", [version, note])
    con.execute(
        "INSERT INTO runs (run_id, name, kind, status, started_at) VALUES (1, 'old', 'run',"
        " 'complete', now())"
    )
    con.execute("INSERT INTO conditions VALUES (1, 0, 'a', '{}', '[]', '[]')")
    con.execute("INSERT INTO conditions VALUES (1, 1, 'b', '{}', '[]', '[]')")
    for t in (0, 1):
        con.execute("INSERT INTO transaction_types VALUES (1, ?, ?, 1, '')", [t, f"t{t}"])
    for r, cols in samples:
        warm = cols["start_ns"] < r.measure_start_ns
        ok = cols["status"] == 0
        con.execute(
            "INSERT INTO samples VALUES (1, ?, ?, ?, ?, 'complete', ?, ?, ?, 1.6, 0.5, ?, ?, ?,"
            " 1.0, 0, '{}', '{}')",
            [r.sample_id, r.condition_id, r.block, r.position, r.t0_ns, r.measure_start_ns,
             r.end_ns, int((~warm).sum()), int((~warm & ok).sum()), int((~warm & ~ok).sum())],
        )  # fmt: skip
        n = len(cols["start_ns"])
        con.register(
            "incoming",
            pa.table(
                {
                    "sample_id": np.full(n, r.sample_id, dtype=np.int32),
                    "session": cols["session"],
                    "txn_type": cols["txn_type"],
                    "intended_start_ns": cols["intended_start_ns"],
                    "start_ns": cols["start_ns"],
                    "end_ns": cols["end_ns"],
                    "status": pa.array(STATUS[cols["status"].astype(np.int64)], pa.string()),
                    "retries": cols["retries"],
                    "warmup": warm,
                }
            ),
        )
        con.execute(
            "INSERT INTO transactions SELECT 1, sample_id, session, txn_type, intended_start_ns,"
            " start_ns, end_ns, status, NULL, retries, warmup FROM incoming"
        )
        con.unregister("incoming")
    con.close()


def test_migration_backfills_the_summaries_of_an_older_file(tmp_path: Path) -> None:
    samples = [(row(i, i % 2), columns(3000, i)) for i in range(4)]
    # A sample with a successful transaction of latency 0 (a clock step): log sums undefined.
    zero = samples[2][1]
    first_ok = np.flatnonzero(zero["status"] == 0)[0]
    zero["end_ns"][first_ok] = zero["intended_start_ns"][first_ok] - 5  # clamped to 0
    path = tmp_path / "old.duckdb"
    version_2_file(path, samples)
    store = Store(path, read_only=True)
    assert store.schema_version() == SCHEMA_VERSION >= 3
    with store.read() as con:
        for r, cols in samples:
            assert_equal_summaries(
                stored(con, 1, r.sample_id), from_columns(cols, r.measure_start_ns)
            )
        assert con.execute("SELECT DISTINCT recorded FROM samples").fetchall() == [(1.0,)]
        nan_groups = con.execute(
            "SELECT DISTINCT sample_id FROM sample_moments WHERE isnan(sumlog_ms)"
        ).fetchall()
    assert nan_groups == [(2,)]


def test_migration_of_a_file_without_transactions_adds_empty_tables(tmp_path: Path) -> None:
    path = tmp_path / "empty.duckdb"
    version_2_file(path, [])
    with Store(path).read() as con:
        for table in ("sample_moments", "sample_statuses", "sample_bins"):
            assert con.execute(f"SELECT count(*) FROM {table}").fetchone() == (0,)


# -- add_sample ------------------------------------------------------------------------------------


def test_add_sample_without_summaries_computes_them_from_the_columns(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    run_id = make_run(store)
    cols = columns(4000, 3)
    r = row(0, 1)
    store.add_sample(run_id, r, cols)
    with store.read() as con:
        assert_equal_summaries(stored(con, run_id, 0), from_columns(cols, r.measure_start_ns))
        # ... and they equal the backfill's SQL over the stored rows.
        con_rows = raw_columns(con, run_id, 0)
    assert_equal_summaries(
        _backfilled(tmp_path, r, cols), from_columns(con_rows, r.measure_start_ns)
    )


def _backfilled(tmp_path: Path, r: SampleRow, cols: dict[str, np.ndarray]) -> dict[str, Any]:
    path = tmp_path / f"old-{r.sample_id}.duckdb"
    version_2_file(path, [(r, cols)])
    with Store(path).read() as con:
        return stored(con, 1, r.sample_id)


def engine_summaries() -> SampleSummaries:
    """Summaries as the engine hands them: two types, both phases, a NaN log sum."""
    return SampleSummaries(
        moments={
            "txn_type": [0, 1, 1],
            "warmup": [False, False, True],
            "count": [3, 2, 1],
            "sum_ms": [0.1 + 0.2, 5.5, 7.25],
            "sumsq_ms": [1 / 3, 20.5, 52.5625],
            "sumlog_ms": [-3.1, np.nan, 1.98],
            "sumlog2_ms": [4.2, np.nan, 3.9],
            "min_ns": [10, 0, 7_250_000],
            "max_ns": [200_000, 5_000_000, 7_250_000],
        },
        statuses={
            "txn_type": [0, 0, 1, 1],
            "warmup": [False, False, False, True],
            "status": [0, 3, 0, 0],
            "count": [3, 4, 2, 1],
        },
        bins={
            "txn_type": [0, 0, 1, 1, 1],
            "warmup": [False, False, False, False, True],
            "lo_ns": [10, 199_680, 0, 4_980_736, 7_241_728],
            "hi_ns": [10, 200_191, 0, 5_013_503, 7_274_495],
            "count": [1, 2, 1, 1, 1],
        },
    )


def test_engine_summaries_round_trip_as_they_are(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    run_id = make_run(store)
    summaries = engine_summaries()
    empty = {k: v[:0] for k, v in columns(0, 0).items()}  # record = "none": no rows at all
    store.add_sample(run_id, row(0, 0), empty, summaries=summaries, recorded=0.0)
    with store.read() as con:
        got = stored(con, run_id, 0)
        sample = con.execute(
            "SELECT transactions, committed, errors, tps, recorded FROM samples"
        ).fetchone()
        assert con.execute("SELECT count(*) FROM transactions").fetchone() == (0,)
    assert_equal_summaries(got, summaries)
    # Sums are stored bit for bit.
    np.testing.assert_array_equal(got["sample_moments"]["sum_ms"], summaries.moments["sum_ms"])
    duration = 1.6
    assert sample[:3] == (9, 5, 4)  # measured statuses only: 3 + 4 + 2
    assert sample[3] == pytest.approx(5 / duration)
    assert sample[4] == 0.0


def test_counts_come_from_the_summaries_when_rows_are_subsampled(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    run_id = make_run(store)
    cols = columns(5000, 11)
    r = row(0, 0)
    full = from_columns(cols, r.measure_start_ns)
    keep = np.random.default_rng(1).random(5000) < 0.5
    half = {k: v[keep] for k, v in cols.items()}
    store.add_sample(run_id, r, half, summaries=full, recorded=0.5)
    measured = cols["start_ns"] >= r.measure_start_ns
    ok = cols["status"] == 0
    with store.read() as con:
        sample = con.execute(
            "SELECT transactions, committed, errors, tps, recorded, duration_s FROM samples"
        ).fetchone()
        rows = con.execute("SELECT count(*) FROM transactions").fetchone()
        assert_equal_summaries(stored(con, run_id, 0), full)
    assert rows == (int(keep.sum()),)
    assert sample[:3] == (int(measured.sum()), int((measured & ok).sum()),
                          int((measured & ~ok).sum()))  # fmt: skip
    assert sample[3] == pytest.approx((measured & ok).sum() / sample[5])
    assert sample[4] == 0.5


@pytest.mark.parametrize("recorded", [-0.1, 1.5, float("nan")])
def test_a_recorded_fraction_outside_0_1_is_refused(tmp_path: Path, recorded: float) -> None:
    store = Store(tmp_path / "r.duckdb")
    run_id = make_run(store)
    cols = columns(10, 0)
    with pytest.raises(StoreError, match="recorded"):
        store.add_sample(run_id, row(0, 0), cols, recorded=recorded)


def test_a_status_code_outside_the_names_is_refused(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    run_id = make_run(store)
    cols = columns(10, 0)
    bad = from_columns(cols, T0)
    statuses = dict(bad.statuses)
    statuses["status"] = np.full(len(statuses["count"]), len(STATUS_NAMES), dtype=np.int8)
    bad = SampleSummaries(bad.moments, statuses, bad.bins)
    with pytest.raises(StoreError, match="status code"):
        store.add_sample(run_id, row(0, 0), cols, summaries=bad)
    assert store.samples(run_id) == []


# -- merging in SQL equals the histogram of the pooled latencies -----------------------------------

latencies = st.lists(
    st.one_of(st.integers(0, 300), st.integers(0, 2**40), st.sampled_from([255, 256, 511, 512])),
    min_size=1,
    max_size=60,
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    groups=st.lists(
        st.tuples(st.integers(0, 2), st.integers(0, 2), latencies), min_size=1, max_size=6
    ),
    via_import=st.booleans(),
)
def test_sql_merge_of_per_type_per_sample_bins_is_the_histogram_of_the_pooled_latencies(
    tmp_path_factory: pytest.TempPathFactory,
    groups: list[tuple[int, int, list[int]]],
    via_import: bool,
) -> None:
    """Each group is (sample, type, latencies), stored as rows or given to add_sample."""
    path = tmp_path_factory.mktemp("merge") / "r.duckdb"
    store = Store(path)
    # Samples numbered 0, 1, ... as stored; even ones are condition 0, odd ones condition 1.
    _, sample_of = np.unique(
        np.concatenate([np.full(len(v), s) for s, _, v in groups]), return_inverse=True
    )
    type_of = np.concatenate([np.full(len(v), t) for _, t, v in groups])
    ns = np.concatenate([np.asarray(v, dtype=np.int64) for _, _, v in groups])
    if via_import:
        run_id = _import(store, sample_of, type_of, ns)
    else:
        run_id = make_run(store, types=3)
        for s in np.unique(sample_of):
            mine = sample_of == s
            n = int(mine.sum())
            cols = {
                "session": np.zeros(n, dtype=np.int32),
                "txn_type": type_of[mine].astype(np.int16),
                "intended_start_ns": np.full(n, T0, dtype=np.int64),
                "start_ns": np.full(n, T0 + 10**9, dtype=np.int64),
                "end_ns": T0 + ns[mine],
                "status": np.zeros(n, dtype=np.int8),
                "error_code": np.full(n, -1, dtype=np.int32),
                "retries": np.zeros(n, dtype=np.int32),
            }
            store.add_sample(run_id, row(int(s), int(s) % 2), cols)
    with store.read() as con:
        per_sample = queries.histograms_by_sample(queries.sample_bins(con, run_id))
        by_condition = queries.condition_bins(con, run_id)
        by_type = {t: queries.sample_bins(con, run_id, txn_type=t) for t in range(3)}
    for s in np.unique(sample_of):
        assert per_sample[int(s)] == histogram.from_values(ns[sample_of == s])
        for t in range(3):
            h = queries.histograms_by_sample(by_type[t]).get(int(s))
            mine = (sample_of == s) & (type_of == t)
            assert (h is None) == (not mine.any())
            if h is not None:
                assert h == histogram.from_values(ns[mine])
    cond_of = sample_of % 2
    for c in np.unique(cond_of):
        at = by_condition.condition_id == c
        got = histogram.Histogram(
            by_condition.lo_ns[at].astype(np.uint64),
            by_condition.hi_ns[at].astype(np.uint64),
            by_condition.count[at].astype(np.uint64),
        )
        assert got == histogram.from_values(ns[cond_of == c])


def _import(store: Store, sample_of: np.ndarray, type_of: np.ndarray, ns: np.ndarray) -> int:
    """An import batch of per-transaction rows: summarised by the backfill's SQL."""
    n = len(ns)
    batch = ImportBatch(
        name="merge",
        description="",
        source="test",
        settings={"format": "csv"},
        conditions=["a", "b"],
        transaction_types=["t0", "t1", "t2"],
        samples=[ImportedSample(int(s), int(s) % 2, 0, 10**9) for s in np.unique(sample_of)],
        files=[],
        transactions=pa.table(
            {
                "sample_id": sample_of.astype(np.int32),
                "session": np.zeros(n, dtype=np.int32),
                "txn_type": type_of.astype(np.int16),
                "intended_start_ns": np.zeros(n, dtype=np.int64),
                "start_ns": np.zeros(n, dtype=np.int64),
                "end_ns": ns,
                "status": pa.array(["ok"] * n),
                "error_code": pa.nulls(n, pa.string()),
                "retries": np.zeros(n, dtype=np.int32),
                "warmup": np.zeros(n, dtype=bool),
            }
        ),
    )
    return store.import_batch(batch)


# -- the queries against brute force over a real stored run ----------------------------------------

SPEC = textwrap.dedent(
    """\
    name = "summaries"
    [setup]
    sql = '''
    DROP TABLE IF EXISTS uniq;
    CREATE TABLE uniq (id INTEGER PRIMARY KEY);
    '''
    [workload]
    sessions = 2
    [[workload.transactions]]
    name = "insert"
    weight = 1
    script = '''
    \\set id random(1, 3000)
    INSERT INTO uniq VALUES (:id);
    '''
    [[workload.transactions]]
    name = "read"
    weight = 2
    script = '''
    \\set id random(1, 3000)
    SELECT count(*) FROM uniq WHERE id <= :id;
    '''
    [[factors]]
    name = "cache"
    levels = ["100", "2000"]
    session_sql = "PRAGMA cache_size = {level}"
    [sampling]
    samples = 2
    duration = "0.4s"
    warmup = "0.2s"
    seed = 5
    """
)


@pytest.fixture(scope="module")
def native_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, int]]:
    tmp = tmp_path_factory.mktemp("native")
    store = Store(tmp / "r.duckdb")
    outcome = run_experiment(
        parse_experiment(SPEC, file="summaries.toml"),
        target=parse_target(f"sqlite:///{tmp}/t.db"),
        store=store,
        engine=NativeEngine(),
    )
    yield store, outcome.run_id


def brute(con: duckdb.DuckDBPyConnection, run_id: int) -> dict[str, np.ndarray]:
    """Every transaction of the run with its condition, position and latency (ns, clamped)."""
    rows = con.execute(
        "SELECT t.sample_id, s.condition_id, s.position, t.txn_type, t.warmup, t.status,"
        " greatest(t.end_ns - t.intended_start_ns, 0) AS ns"
        " FROM transactions t JOIN samples s USING (run_id, sample_id) WHERE t.run_id = ?",
        [run_id],
    ).fetchnumpy()
    return {k: np.asarray(v) for k, v in rows.items()}


def test_a_runs_stored_summaries_equal_from_columns_of_its_transactions(
    native_run: tuple[Store, int],
) -> None:
    store, run_id = native_run
    samples = store.samples(run_id)
    assert len(samples) == 4
    with store.read() as con:
        for s in samples:
            cols = raw_columns(con, run_id, s["sample_id"])
            assert_equal_summaries(
                stored(con, run_id, s["sample_id"]), from_columns(cols, s["measure_start_ns"])
            )
            assert s["recorded"] == 1.0
        kinds = con.execute(
            "SELECT bool_or(warmup), count(DISTINCT status), count(DISTINCT txn_type)"
            " FROM transactions"
        ).fetchone()
    # Warm-up, constraint errors (and perhaps busy ones) and two types: all exercised.
    assert kinds[0] is True and kinds[1] >= 2 and kinds[2] == 2


@pytest.mark.parametrize("txn_type", [None, 0, 1])
@pytest.mark.parametrize("include_warmup", [False, True])
def test_sample_moments_and_bins_match_brute_force(
    native_run: tuple[Store, int], txn_type: int | None, include_warmup: bool
) -> None:
    store, run_id = native_run
    with store.read() as con:
        raw = brute(con, run_id)
        moments = queries.sample_moments(
            con, run_id, txn_type=txn_type, include_warmup=include_warmup
        )
        bins = queries.sample_bins(con, run_id, txn_type=txn_type, include_warmup=include_warmup)
        by_condition = queries.condition_bins(
            con, run_id, txn_type=txn_type, include_warmup=include_warmup
        )
    keep = raw["status"] == "ok"
    if not include_warmup:
        keep &= ~raw["warmup"]
    if txn_type is not None:
        keep &= raw["txn_type"] == txn_type
    ids = np.unique(raw["sample_id"][keep])
    np.testing.assert_array_equal(moments.sample_id, ids)
    hists = queries.histograms_by_sample(bins)
    assert sorted(hists) == ids.tolist()
    for i, sid in enumerate(ids):
        mine = keep & (raw["sample_id"] == sid)
        ns = raw["ns"][mine]
        ms = ns / 1e6
        assert moments.condition_id[i] == raw["condition_id"][mine][0]
        assert moments.position[i] == raw["position"][mine][0]
        assert moments.count[i] == ns.size
        assert (moments.min_ns[i], moments.max_ns[i]) == (ns.min(), ns.max())
        assert moments.sum_ms[i] == pytest.approx(ms.sum(), rel=1e-12)
        assert moments.sumsq_ms[i] == pytest.approx((ms * ms).sum(), rel=1e-12)
        assert moments.sumlog_ms[i] == pytest.approx(np.log(ms).sum(), rel=1e-11)
        assert moments.sumlog2_ms[i] == pytest.approx((np.log(ms) ** 2).sum(), rel=1e-11)
        assert hists[int(sid)] == histogram.from_values(ns)
    for c in np.unique(raw["condition_id"][keep]):
        at = by_condition.condition_id == c
        assert histogram.Histogram(
            by_condition.lo_ns[at].astype(np.uint64),
            by_condition.hi_ns[at].astype(np.uint64),
            by_condition.count[at].astype(np.uint64),
        ) == histogram.from_values(raw["ns"][keep & (raw["condition_id"] == c)])


@pytest.mark.parametrize("include_warmup", [False, True])
def test_status_counts_match_brute_force(
    native_run: tuple[Store, int], include_warmup: bool
) -> None:
    store, run_id = native_run
    with store.read() as con:
        raw = brute(con, run_id)
        counts = queries.status_counts(con, run_id, include_warmup=include_warmup)
        names = queries.transaction_type_names(con, run_id)
    assert names == {0: "insert", 1: "read"}
    keep = np.ones(raw["ns"].size, dtype=bool) if include_warmup else ~raw["warmup"]
    expected: dict[tuple[int, int, str], int] = {}
    for c, t, s in zip(raw["condition_id"][keep], raw["txn_type"][keep], raw["status"][keep],
                       strict=True):  # fmt: skip
        expected[(int(c), int(t), str(s))] = expected.get((int(c), int(t), str(s)), 0) + 1
    got = {
        (int(c), int(t), str(s)): int(n)
        for c, t, s, n in zip(
            counts.condition_id, counts.txn_type, counts.status, counts.count, strict=True
        )
    }
    assert got == expected
    assert list(got) == sorted(got)


def test_a_nan_log_sum_stays_nan_and_an_unknown_one_is_nan(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    run_id = make_run(store)
    empty = {k: v[:0] for k, v in columns(0, 0).items()}
    store.add_sample(run_id, row(0, 0), empty, summaries=engine_summaries())
    with store.read() as con:
        merged = queries.sample_moments(con, run_id)
        one = queries.sample_moments(con, run_id, txn_type=0)
        both = queries.sample_moments(con, run_id, include_warmup=True)
    assert np.isnan(merged.sumlog_ms[0]) and np.isnan(merged.sumlog2_ms[0])
    assert one.sumlog_ms[0] == -3.1 and one.count[0] == 3
    assert merged.count[0] == 5 and both.count[0] == 6
    assert merged.sum_ms[0] == pytest.approx(0.1 + 0.2 + 5.5)
    assert (both.min_ns[0], both.max_ns[0]) == (0, 7_250_000)


def test_no_percentile_is_shown_above_the_maximum_beside_it(tmp_path: Path) -> None:
    # Every latency 9.97 ms, near the bottom of its bin [9,961,472, 10,027,007] ns, whose
    # midpoint (9.994 ms) lies above them all: the p99 shown is the maximum, not the midpoint.
    store = Store(tmp_path / "r.duckdb")
    run_id = make_run(store)
    for sid, condition in ((0, 0), (1, 1)):
        cols = columns(400, seed=sid)
        cols["status"][:] = 0
        cols["end_ns"] = cols["intended_start_ns"] + 9_970_000
        store.add_sample(run_id, row(sid, condition), cols)
    with store.read() as con:
        table = queries.sample_summary(con, run_id)
    for name in ("p50_ms", "p95_ms", "p99_ms"):
        assert (
            table.column(name).to_pylist()
            == table.column("max_ms").to_pylist()
            == [
                9.97,
                9.97,
            ]
        ), name
    per_type = load_type_summaries(store, store.run(run_id))
    assert per_type
    for s in per_type:
        assert s.latency_ms["p99"] == s.latency_ms["max"] == 9.97, s
