"""The engine against real databases: SQLite files, the throwaway PostgreSQL and MariaDB, and
DuckDB files through the DB-API engine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from wannabet.analysis import histogram
from wannabet.backends import parse_target
from wannabet.engine import STATUS_NAMES, NativeEngine, SampleRequest, SampleResult, compile_program
from wannabet.errors import ConnectError, QueryError, WannabetError
from wannabet.spec import parse_experiment
from wannabet.store.summaries import BIN_COLUMNS, MOMENT_COLUMNS, STATUS_COLUMNS, from_columns
from wannabet.targets import Target
from wannabet.testing import ThrowawayPostgres
from wannabet.testing.mariadb import ThrowawayMariaDB

ENGINE = NativeEngine()
OK, CONSTRAINT, SCRIPT, SERIALIZATION, DEADLOCK = (
    STATUS_NAMES.index(s) for s in ("ok", "constraint", "script", "serialization", "deadlock")
)


@pytest.fixture(params=["sqlite", "postgresql", "mariadb", "duckdb"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    if request.param == "duckdb":
        # Through the DB-API engine: the same runner, DuckDB's Python connections as sessions.
        yield parse_target(f"duckdb:///{tmp_path / 'engine.duckdb'}")
    elif request.param == "sqlite":
        t = parse_target(f"sqlite:///{tmp_path / 'engine.db'}")
        ENGINE.execute(t, "PRAGMA journal_mode = WAL")
        yield t
    elif request.param == "mariadb":
        my: ThrowawayMariaDB = request.getfixturevalue("mariadb")
        t = parse_target(my.url)
        ENGINE.execute(t, "DROP TABLE IF EXISTS accounts, uniq")
        yield t
    else:
        pg: ThrowawayPostgres = request.getfixturevalue("postgres")
        t = parse_target(pg.url)
        ENGINE.execute(t, "DROP TABLE IF EXISTS accounts, uniq")
        yield t


def conflicts(target: Target) -> set[int]:
    """Statuses of concurrent writes to one row besides success: DuckDB's optimistic
    concurrency fails the second writer with a conflict (a serialization failure) where the
    others make it wait."""
    return {SERIALIZATION} if target.kind == "duckdb" else set()


def sample(
    target: Target,
    script: str,
    *,
    sessions: int = 2,
    seconds: float = 0.0,
    count: int = 0,
    seed: int = 1,
    **options: object,
) -> SampleResult:
    spec = f"name = 'e'\n[[workload.transactions]]\nscript = '''\n{script}\n'''\n"
    experiment = parse_experiment(spec, file="e")
    request = SampleRequest(
        program=compile_program(experiment.workload, target.placeholder_style),
        sessions=sessions,
        session_sql=(),
        duration_ns=int(seconds * 1e9),
        max_transactions=count,
        seed=seed,
        **options,  # type: ignore[arg-type]
    )
    return ENGINE.run_sample(target, request)


def scalar(target: Target, sql: str) -> int:
    return int(ENGINE.query(target, sql)[0][0] or 0)


def make_accounts(target: Target, rows: int = 1000) -> None:
    ENGINE.execute(
        target, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)"
    )
    values = ", ".join(f"({i}, 0)" for i in range(1, rows + 1))
    ENGINE.execute(target, f"INSERT INTO accounts VALUES {values}")


def test_committed_updates_leave_exactly_that_many_increments(target: Target) -> None:
    make_accounts(target)
    result = sample(
        target,
        "\\set id random(1, 1000)\nUPDATE accounts SET balance = balance + 1 WHERE id = :id;",
        seconds=1.0,
    )
    ok = int((result.columns["status"] == OK).sum())
    assert ok >= 10  # a time-limited sample: how many depends on the disk's fsync
    assert set(np.unique(result.columns["status"])) <= {OK} | conflicts(target)
    assert scalar(target, "SELECT sum(balance) FROM accounts") == ok


def test_explicit_transactions_with_several_statements(target: Target) -> None:
    make_accounts(target, 10)
    result = sample(
        target,
        "\\set a random(1, 10)\n\\set b random(1, 10)\nBEGIN;\n"
        "UPDATE accounts SET balance = balance - 1 WHERE id = :a;\n"
        "UPDATE accounts SET balance = balance + 1 WHERE id = :b;\n"
        "SELECT balance FROM accounts WHERE id = :a;\nCOMMIT;",
        count=500,
    )
    assert result.count == 500
    # Two sessions updating two rows in random order deadlock now and then on PostgreSQL.
    status = result.columns["status"]
    assert set(np.unique(status)) <= {OK, DEADLOCK} | conflicts(target)
    assert (status == OK).sum() > 300
    # Transfers conserve money (failed ones rolled back), and each moved one unit.
    assert scalar(target, "SELECT sum(balance) FROM accounts") == 0
    assert scalar(target, "SELECT sum(abs(balance)) FROM accounts") <= 1000


def test_errors_are_counted_by_class_with_their_codes(target: Target) -> None:
    ENGINE.execute(target, "CREATE TABLE uniq (id INTEGER PRIMARY KEY)")
    result = sample(target, "\\set id random(1, 50)\nINSERT INTO uniq VALUES (:id);", count=400)
    status = result.columns["status"]
    rows = scalar(target, "SELECT count(*) FROM uniq")
    assert (status == OK).sum() == rows <= 50
    # DuckDB's optimistic concurrency may fail the second of two sessions inserting the same
    # new key at once with a conflict instead (seen once in 400).
    conflict = np.isin(status, list(conflicts(target)))
    assert (status == CONSTRAINT).sum() + conflict.sum() == 400 - rows
    assert (status == CONSTRAINT).sum() > 300
    assert set(np.unique(status)) <= {OK, CONSTRAINT} | conflicts(target)
    codes = {result.error_codes[i] for i in result.columns["error_code"][status == CONSTRAINT]}
    # Each database's own name for a duplicate key: SQLSTATE, result code, error number.
    duplicate = {
        "postgresql": "23505",
        "sqlite": "SQLITE_CONSTRAINT_PRIMARYKEY",
        "mysql": "1062",
        "duckdb": "ConstraintException",  # the driver's exception class
    }
    assert codes == {duplicate[target.kind]}
    assert (result.columns["error_code"][status == OK] == -1).all()


def test_script_errors_fail_the_transaction_and_the_session_goes_on(target: Target) -> None:
    make_accounts(target, 10)
    result = sample(
        target,
        "\\set id random(1, 2)\n\\set zero :id - :id\n\\set boom 1 / :zero\n"
        "UPDATE accounts SET balance = balance + 1 WHERE id = :id;",
        count=50,
    )
    assert result.count == 50
    assert (result.columns["status"] == SCRIPT).all()
    assert scalar(target, "SELECT sum(balance) FROM accounts") == 0


def test_abort_on_error_raises(target: Target) -> None:
    ENGINE.execute(target, "CREATE TABLE uniq (id INTEGER PRIMARY KEY)")
    with pytest.raises(QueryError):
        sample(target, "INSERT INTO uniq VALUES (1);", count=10, on_error="abort")


def test_a_request_value_out_of_the_engines_range_is_reported_not_raised_raw(
    tmp_path: Path,
) -> None:
    t = parse_target(f"sqlite:///{tmp_path / 'range.db'}")
    with pytest.raises(WannabetError, match=r"the engine refused the workload: .*max_tries"):
        sample(t, "SELECT 1;", count=1, max_tries=2**40)


def test_a_refused_prepare_names_the_statement_and_its_transaction(target: Target) -> None:
    """The engine reports which statement the database refused as attributes, not only in the
    message, so that the runner can point at its line without parsing text."""
    with pytest.raises(QueryError) as info:
        sample(target, "SELECT 1;\nSELECT * FROM no_such_table;", count=1)
    error = info.value
    assert (error.statement, error.transaction) == (2, "t1")
    assert error.reason is not None and "no_such_table" in error.reason
    assert str(error).startswith(
        f"prepare failed for statement 2 of transaction 't1': {error.reason}"
    )


@pytest.mark.postgres
@pytest.mark.parametrize("server", ["postgres", "tls_postgres"])
def test_abort_cancels_the_statements_other_sessions_are_running(
    server: str, request: pytest.FixtureRequest
) -> None:
    """Session 0 fails after 0.5 s while session 1 sleeps for 30 s: the failure must end the
    sample without waiting for the sleep (the cancel goes over TLS when the session's does)."""
    import time

    pg: ThrowawayPostgres = request.getfixturevalue(server)
    target = parse_target(pg.url + ("?sslmode=require" if pg.tls else ""))
    started = time.monotonic()
    with pytest.raises(QueryError, match="division by zero"):
        sample(
            target,
            "SELECT pg_sleep(CASE WHEN :client_id = 0 THEN 0.5 ELSE 30 END);\n"
            "SELECT 1 / :client_id;",
            seconds=60,
            on_error="abort",
        )
    assert time.monotonic() - started < 15
    # The sleeping backend was cancelled, not left running on the server.
    busy = "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(CASE%'"
    deadline = time.monotonic() + 5
    while scalar(target, busy + " AND state = 'active'") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert scalar(target, busy + " AND state = 'active'") == 0


def test_times_are_consistent_and_seeded(target: Target) -> None:
    make_accounts(target, 100)
    script = "\\set id random(1, 100)\nSELECT balance FROM accounts WHERE id = :id;"
    result = sample(target, script, seconds=0.5)
    c = result.columns
    assert (c["intended_start_ns"] == c["start_ns"]).all()  # closed loop
    assert (c["start_ns"] <= c["end_ns"]).all()
    assert c["start_ns"].min() >= result.t0_ns and c["end_ns"].max() <= result.end_ns
    # Transactions stop starting at the deadline; in-flight ones finish soon after.
    assert (
        c["start_ns"].max() < result.t0_ns + 500_000_000
    )  # integers: ns epochs overflow float precision
    assert set(np.unique(c["session"])) == {0, 1}


def test_open_loop_keeps_the_rate_and_measures_from_the_schedule(target: Target) -> None:
    make_accounts(target, 100)
    script = "\\set id random(1, 100)\nSELECT balance FROM accounts WHERE id = :id;"
    result = sample(target, script, seconds=1.0, rate=200.0)
    c = result.columns
    # Poisson arrivals at 200/s for 1 s: 200 ± 14 (sd); allow 5 sd.
    assert 130 <= result.count <= 270
    assert (c["intended_start_ns"] <= c["start_ns"]).all()


def test_unreachable_target_is_a_connect_error(tmp_path: Path) -> None:
    with pytest.raises(ConnectError, match="cannot connect"):
        ENGINE.query(parse_target("postgresql://u:pw@127.0.0.1:1/db"), "SELECT 1")
    with pytest.raises(ConnectError):
        ENGINE.query(parse_target(f"sqlite:///{tmp_path / 'missing-dir' / 'x.db'}"), "SELECT 1")


def test_serialization_failures_are_classified_and_retried(postgres: ThrowawayPostgres) -> None:
    t = parse_target(postgres.url)
    ENGINE.execute(t, "DROP TABLE IF EXISTS hot")
    ENGINE.execute(t, "CREATE TABLE hot (id int PRIMARY KEY, n int NOT NULL)")
    ENGINE.execute(t, "INSERT INTO hot VALUES (1, 0)")
    script = (
        "BEGIN ISOLATION LEVEL REPEATABLE READ;\nSELECT n FROM hot WHERE id = 1;\n"
        "\\sleep 1 ms\nUPDATE hot SET n = n + 1 WHERE id = 1;\nCOMMIT;"
    )
    plain = sample(t, script, sessions=2, count=200)
    status = plain.columns["status"]
    assert (status == SERIALIZATION).sum() > 0
    assert {plain.error_codes[i] for i in plain.columns["error_code"][status == SERIALIZATION]} == {
        "40001"
    }
    assert scalar(t, "SELECT n FROM hot") == (status == OK).sum()
    # Two sessions hammering one row can starve one of them for dozens of tries in a row.
    retried = sample(t, script, sessions=2, count=200, max_tries=1000)
    assert (retried.columns["status"] == OK).sum() == 200
    assert retried.columns["retries"].sum() > 0
    assert scalar(t, "SELECT n FROM hot") == (status == OK).sum() + 200


def test_the_engine_reports_its_cpu_and_the_databases_work(target: Target) -> None:
    make_accounts(target, 10)
    script = "\\set id random(1, 10)\nUPDATE accounts SET balance = balance + 1 WHERE id = :id;\n"
    result = sample(target, script, sessions=2, count=40)
    assert len(result.session_cpu_ns) == 2 and all(ns > 0 for ns in result.session_cpu_ns)
    if target.kind == "postgresql":
        # 40 autocommit transactions, plus per session its start-up and its one prepare; each
        # execution receives BindComplete (5 bytes), CommandComplete "UPDATE 1" (14) and
        # ReadyForQuery (6), and nothing of the set-up is counted.
        assert result.counters == {"server_commits": 40 + 2 * (1 + 1), "bytes_received": 40 * 25}
    elif target.kind == "mysql":
        # MySQL counts explicit COMMITs only (Com_commit); autocommit updates are none.
        assert result.counters == {"server_commits": 0}
        committed = sample(target, f"BEGIN;\n{script}COMMIT;", sessions=2, count=40)
        assert committed.counters == {"server_commits": 40}
    elif target.kind == "duckdb":
        assert result.counters == {}  # the DB-API engine counts nothing of the database's
    else:
        assert result.counters["cache_hit"] > 0 and result.counters["cache_write"] > 0
        assert set(result.counters) == {"cache_hit", "cache_miss", "cache_write", "cache_spill"}


@pytest.mark.parametrize("commit", ["COMMIT", "ROLLBACK"])
def test_server_commits_count_commits_not_rollbacks(
    postgres: ThrowawayPostgres, commit: str
) -> None:
    t = parse_target(postgres.url)
    ENGINE.execute(t, "DROP TABLE IF EXISTS accounts")
    make_accounts(t, 10)
    script = f"BEGIN;\nUPDATE accounts SET balance = balance + 1 WHERE id = 1;\n{commit};"
    result = sample(t, script, sessions=1, count=5)
    assert (result.columns["status"] == OK).all()
    # Start-up and three prepares (BEGIN, UPDATE, COMMIT/ROLLBACK) commit in both cases. Per
    # transaction: BindComplete, CommandComplete and ReadyForQuery of each statement (22 bytes
    # for BEGIN, 25 for UPDATE 1, 23 for COMMIT or 25 for ROLLBACK).
    received = 5 * (22 + 25 + (23 if commit == "COMMIT" else 25))
    assert result.counters == {
        "server_commits": 1 + 3 + (5 if commit == "COMMIT" else 0),
        "bytes_received": received,
    }


@pytest.mark.postgres
def test_the_engine_logs_in_with_a_password_from_the_password_file(
    postgres: ThrowawayPostgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"127.0.0.1:{postgres.port}:*:{postgres.user}:{postgres.password}\n")
    pgpass.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    monkeypatch.delenv("PGPASSWORD", raising=False)
    url = f"postgresql://{postgres.user}@127.0.0.1:{postgres.port}/{postgres.database}"
    with pytest.raises(ConnectError):  # scram-sha-256: without the file, no way in
        monkeypatch.setenv("PGPASSFILE", str(tmp_path / "none"))
        ENGINE.query(parse_target(url), "SELECT 1")
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    assert ENGINE.query(parse_target(url), "SELECT 1") == [("1",)]


# The per-sample summaries the engine builds while it runs (issue #13)

TWO_TYPES = """\
name = 'e'
[[workload.transactions]]
name = 'deposit'
weight = 3
script = '''
\\set id random(1, 100)
UPDATE accounts SET balance = balance + 1 WHERE id = :id;
'''
[[workload.transactions]]
name = 'signup'
weight = 1
script = '''
\\set id random(1, 40)
INSERT INTO uniq VALUES (:id);
'''
"""


def two_type_sample(
    target: Target,
    *,
    sessions: int = 2,
    duration_ns: int = 0,
    max_transactions: int = 0,
    seed: int = 1,
    warmup_ns: int = 0,
    rate: float = 0.0,
    record: float = 1.0,
    max_rows: int = 0,
) -> SampleResult:
    """Deposits that succeed and sign-ups that mostly violate a primary key."""
    experiment = parse_experiment(TWO_TYPES, file="e")
    request = SampleRequest(
        program=compile_program(experiment.workload, target.placeholder_style),
        sessions=sessions,
        session_sql=(),
        duration_ns=duration_ns,
        max_transactions=max_transactions,
        seed=seed,
        rate=rate,
        warmup_ns=warmup_ns,
        record=record,
        max_rows=max_rows,
    )
    return ENGINE.run_sample(target, request)


def assert_summaries_are_those_of_the_rows(result: SampleResult, warmup_ns: int) -> None:
    """The engine's summaries equal the NumPy reference computed from its rows: exactly for
    counts, extremes, statuses and bins; to rounding for the floating-point sums."""
    expected = from_columns(result.columns, result.t0_ns + warmup_ns)
    got = result.summaries
    for table, spec in (("statuses", STATUS_COLUMNS), ("bins", BIN_COLUMNS)):
        for column, dtype in spec:
            mine, reference = getattr(got, table)[column], getattr(expected, table)[column]
            assert mine.dtype == dtype
            np.testing.assert_array_equal(mine, reference, err_msg=f"{table}.{column}")
    for column, dtype in MOMENT_COLUMNS:
        mine, reference = got.moments[column], expected.moments[column]
        assert mine.dtype == dtype
        if dtype is np.float64:
            # Summation order differs (per session, then merged; NumPy sums pairwise). Log sums
            # of latencies around 1 ms add terms of both signs, hence a tolerance per term too.
            atol = 1e-9 * float(expected.moments["count"].max())
            np.testing.assert_allclose(mine, reference, rtol=1e-9, atol=atol, err_msg=column)
        else:
            np.testing.assert_array_equal(mine, reference, err_msg=f"moments.{column}")


@pytest.mark.parametrize("rate", [0.0, 400.0], ids=["closed-loop", "open-loop"])
def test_the_engines_summaries_equal_those_of_its_rows(target: Target, rate: float) -> None:
    make_accounts(target, 100)
    ENGINE.execute(target, "CREATE TABLE uniq (id INTEGER PRIMARY KEY)")
    warmup_ns = 300_000_000
    result = two_type_sample(
        target, sessions=3, duration_ns=900_000_000, warmup_ns=warmup_ns, rate=rate
    )
    assert_summaries_are_those_of_the_rows(result, warmup_ns)
    # The case is the one meant: both types, both phases, failures among the successes.
    statuses = result.summaries.statuses
    groups = set(zip(statuses["txn_type"].tolist(), statuses["warmup"].tolist(), strict=True))
    assert groups == {(0, True), (0, False), (1, True), (1, False)}
    assert (
        {OK, CONSTRAINT} <= set(statuses["status"].tolist()) <= {OK, CONSTRAINT} | conflicts(target)
    )
    assert int(statuses["count"].sum()) == result.count
    if rate:  # latency counts from the schedule, not from when the transaction started
        c = result.columns
        assert (c["intended_start_ns"] < c["start_ns"]).any()


def test_the_engines_histogram_quantiles_are_within_1pct_of_its_transactions(
    target: Target,
) -> None:
    # A real run (SQLite and PostgreSQL): the quantiles the analyses take from the engine's
    # histograms against the exact order statistics of the very transactions it ran.
    make_accounts(target, 100)
    ENGINE.execute(target, "CREATE TABLE uniq (id INTEGER PRIMARY KEY)")
    # A count, not a duration: on a busy machine with durable commits 0.6 s gave 169.
    result = two_type_sample(target, sessions=2, max_transactions=4000)
    c, bins = result.columns, result.summaries.bins
    ok = c["status"] == OK
    exact = (c["end_ns"] - c["intended_start_ns"])[ok].astype(np.float64)
    groups = {(int(t), bool(w)) for t, w in zip(bins["txn_type"], bins["warmup"], strict=True)}
    merged = histogram.merge(
        *(
            histogram.Histogram(bins["lo_ns"][mine], bins["hi_ns"][mine], bins["count"][mine])
            for mine in ((bins["txn_type"] == t) & (bins["warmup"] == w) for t, w in groups)
        )
    )
    assert histogram.count(merged) == exact.size > 1000
    qs = [0.01, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999]
    got = histogram.quantiles(merged, qs)
    want = np.quantile(exact, qs, method="inverted_cdf")
    np.testing.assert_allclose(got, want, rtol=0.01)


def test_a_count_limited_sample_with_one_session_has_the_same_summaries(target: Target) -> None:
    make_accounts(target, 100)
    ENGINE.execute(target, "CREATE TABLE uniq (id INTEGER PRIMARY KEY)")
    result = two_type_sample(target, sessions=1, max_transactions=300, warmup_ns=10**15)
    assert_summaries_are_those_of_the_rows(result, 10**15)
    assert result.summaries.moments["warmup"].all()  # the warm-up outlasts the sample


def test_a_recorded_fraction_keeps_seeded_rows_and_the_summaries_count_every_one(
    target: Target,
) -> None:
    make_accounts(target, 100)
    ENGINE.execute(target, "CREATE TABLE uniq (id INTEGER PRIMARY KEY)")

    def kept(seed: int, record: float) -> SampleResult:
        result = two_type_sample(target, sessions=1, max_transactions=600, seed=seed, record=record)
        statuses = result.summaries.statuses
        assert int(statuses["count"].sum()) == 600
        assert int(result.summaries.moments["count"].sum()) == int(
            statuses["count"][statuses["status"] == OK].sum()
        )
        assert int(result.summaries.bins["count"].sum()) == int(
            result.summaries.moments["count"].sum()
        )
        return result

    first, again, other = kept(7, 0.2), kept(7, 0.2), kept(8, 0.2)
    # Binomial(600, 0.2): 120 ± 9.8 (sd); allow 5 sd.
    assert 71 <= first.count <= 169
    # One session and a count limit: the same seed makes the same choices and keeps the same
    # rows (seen through the sequence of their types), another seed others.
    np.testing.assert_array_equal(first.columns["txn_type"], again.columns["txn_type"])
    assert (
        len(other.columns["txn_type"]) != len(first.columns["txn_type"])
        or (other.columns["txn_type"] != first.columns["txn_type"]).any()
    )
    # Nothing kept, everything counted; everything kept, the same as without the option.
    assert kept(7, 0.0).count == 0
    assert kept(7, 1.0).count == 600


def test_max_rows_keeps_a_uniform_subset_in_start_order_and_counts_every_transaction(
    target: Target,
) -> None:
    make_accounts(target, 100)
    ENGINE.execute(target, "CREATE TABLE uniq (id INTEGER PRIMARY KEY)")
    result = two_type_sample(target, sessions=1, max_transactions=2000, max_rows=400)
    statuses = result.summaries.statuses
    assert int(statuses["count"].sum()) == 2000  # the summaries count every transaction
    starts = result.columns["start_ns"]
    assert result.count == 400 and bool(np.all(np.diff(starts) > 0))
    # A uniform subset, not the first rows: the kept rows span the sample's time from its
    # first tenth to its last (a uniform test over the transactions' order is the Rust unit
    # test's; time is not order here, since the rate changes as the sample runs).
    where = (starts - result.t0_ns) / (result.end_ns - result.t0_ns)
    assert where.min() < 0.1 and where.max() > 0.9
    # Several sessions share the cap: each keeps at most its ceil(cap / sessions).
    shared = two_type_sample(target, sessions=2, max_transactions=2000, max_rows=401)
    assert int(shared.summaries.statuses["count"].sum()) == 2000
    for session in (0, 1):
        assert int((shared.columns["session"] == session).sum()) <= 201
    # Below the cap, every row.
    assert two_type_sample(target, sessions=1, max_transactions=300, max_rows=400).count == 300
