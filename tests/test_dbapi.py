"""The DB-API engine (issue #15): DuckDB through its Python package, and any DB-API module
(sqlite3, psycopg) through ``dbapi://``. The engine tests of ``test_engine.py`` also run on
DuckDB; these cover what is the DB-API engine's own."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import quote

import duckdb
import numpy as np
import pytest

from wannabet.backends import parse_target
from wannabet.engine import STATUS_NAMES, NativeEngine, SampleRequest, compile_program
from wannabet.engine.dbapi import bind, render
from wannabet.errors import QueryError, SpecError, TargetError
from wannabet.spec import parse_experiment
from wannabet.targets import Target
from wannabet.testing import ThrowawayPostgres
from wannabet.testing.cli import one_line_error, wannabet

ENGINE = NativeEngine()
OK, SERIALIZATION = STATUS_NAMES.index("ok"), STATUS_NAMES.index("serialization")
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def sample(target: Target, script: str, *, sessions: int = 2, count: int = 200, **options: object):  # type: ignore[no-untyped-def]
    spec = f"name = 'e'\n[[workload.transactions]]\nscript = '''\n{script}\n'''\n"
    experiment = parse_experiment(spec, file="e")
    request = SampleRequest(
        program=compile_program(experiment.workload, target.placeholder_style),
        sessions=sessions,
        session_sql=(),
        duration_ns=0,
        max_transactions=count,
        seed=3,
        **options,  # type: ignore[arg-type]
    )
    return ENGINE.run_sample(target, request)


# -- placeholders (no database) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("style", "sql", "params"),
    [
        ("qmark", "SELECT ? + ?, '5%' FROM t", (1, 2)),
        ("numeric", "SELECT :1 + :2, '5%' FROM t", (1, 2)),
        ("named", "SELECT :p1 + :p2, '5%' FROM t", {"p1": 1, "p2": 2}),
        ("format", "SELECT %s + %s, '5%%' FROM t", (1, 2)),
        ("pyformat", "SELECT %(p1)s + %(p2)s, '5%%' FROM t", {"p1": 1, "p2": 2}),
    ],
)
def test_statements_are_written_in_the_modules_paramstyle(
    style: str, sql: str, params: object
) -> None:
    parts = ["SELECT ", " + ", ", '5%' FROM t"]
    assert render(parts, style) == sql
    assert bind(style, (1, 2)) == params
    # Without parameters the driver does not read placeholders, so nothing is escaped.
    assert render(["SELECT '5%'"], style) == "SELECT '5%'"


# -- DuckDB ------------------------------------------------------------------------------------


@pytest.fixture
def duck(tmp_path: Path) -> Target:
    t = parse_target(f"duckdb:///{tmp_path / 'd.duckdb'}")
    ENGINE.execute(t, "CREATE TABLE accounts AS SELECT range AS id, 0 AS balance FROM range(1, 4)")
    return t


def test_duckdb_conflicts_are_retried_with_max_tries(duck: Target) -> None:
    """Two sessions updating three rows conflict (DuckDB's optimistic concurrency); retried,
    every transaction ends committed and the table counts each exactly once."""
    script = "\\set id random(1, 3)\nUPDATE accounts SET balance = balance + 1 WHERE id = :id;"
    once = sample(duck, script, count=400)
    assert (once.columns["status"] == SERIALIZATION).any()  # the case is the one meant
    ENGINE.execute(duck, "UPDATE accounts SET balance = 0")
    retried = sample(duck, script, count=400, max_tries=50)
    assert (retried.columns["status"] == OK).all()
    assert retried.columns["retries"].sum() > 0
    assert int(ENGINE.query(duck, "SELECT sum(balance) FROM accounts")[0][0] or 0) == 400


def test_duckdb_gset_reads_a_result_into_the_next_statement(duck: Target) -> None:
    script = (
        "BEGIN;\nSELECT max(id) AS top, count(*) AS n FROM accounts \\gset\n"
        "UPDATE accounts SET balance = balance + :n WHERE id = :top;\nCOMMIT;"
    )
    result = sample(duck, script, sessions=1, count=10)
    assert (result.columns["status"] == OK).all()
    assert ENGINE.query(duck, "SELECT balance FROM accounts WHERE id = 3") == [("30",)]


def test_duckdb_errors_roll_back_and_name_the_driver_class(duck: Target) -> None:
    script = "BEGIN;\nUPDATE accounts SET balance = balance + 1;\nSELECT error('no');\nCOMMIT;"
    result = sample(duck, script, sessions=1, count=5)
    assert (result.columns["status"] == STATUS_NAMES.index("error")).all()
    assert set(result.error_codes) == {"InvalidInputException"}
    assert ENGINE.query(duck, "SELECT sum(balance) FROM accounts") == [("0",)]
    with pytest.raises(QueryError, match="missing_table"):
        ENGINE.execute(duck, "SELECT * FROM missing_table")


def test_duckdb_urls() -> None:
    t = parse_target("duckdb:///x.duckdb?threads=2&memory_limit=1GB")
    assert t.kind == "duckdb" and t.path is not None and t.path.is_absolute()
    for bad in ("duckdb:///:memory:", "duckdb://x.duckdb", "duckdb:///x.duckdb?threads"):
        with pytest.raises(SpecError):
            parse_target(bad)


def test_the_duckdb_example_records_accuracy_time_memory_and_threads(tmp_path: Path) -> None:
    """examples/duckdb-approx-distinct.toml in a short form, through the command line."""
    results = tmp_path / "r.duckdb"
    target = f"duckdb:///{tmp_path / 'approx.duckdb'}"
    example = EXAMPLES / "duckdb-approx-distinct.toml"
    quick = ("--samples", "2", "--duration", "0.5s", "--warmup", "0s")
    run = wannabet("run", str(example), "--target", target, "--results", str(results), *quick)
    assert run.returncode == 0, run.stderr
    summary = wannabet("summary", "--results", str(results), "--format", "json")
    doc = json.loads(summary.stdout)
    names = {c["condition"] for c in doc["conditions"]}
    assert names == {f"method={m},threads={t}" for m in ("exact", "approx") for t in (1, 2)}
    compare = wannabet(
        "compare", "--results", str(results), "--stat", "result",
        "--baseline", "method=exact,threads=1",
    )  # fmt: skip
    assert compare.returncode == 0, compare.stderr
    import duckdb

    with duckdb.connect(str(tmp_path / "approx.duckdb"), read_only=True) as con:
        truth = con.execute("SELECT count(DISTINCT customer) FROM orders").fetchone()[0]
    with duckdb.connect(str(results), read_only=True) as con:
        stats = [json.loads(s) for (s,) in con.execute("SELECT stats FROM samples").fetchall()]
        answers = con.execute(
            "SELECT c.label, min(r.min), max(r.max), sum(r.count) FROM sample_results r"
            " JOIN samples s USING (run_id, sample_id)"
            " JOIN conditions c USING (run_id, condition_id) GROUP BY c.label"
        ).fetchall()
    for s in stats:
        assert s["duckdb"]["peak_memory_bytes"] >= s["duckdb"]["memory_bytes"] >= 0
        assert s["client_process"]["cpu_s"] > 0
    # Every execution's answer was recorded: the exact count is the truth, the estimate is
    # off by a little (HyperLogLog), and the threads setting changes neither.
    assert {label for label, *_ in answers} == names
    for label, lo, hi, n in answers:
        assert n > 0
        if label.startswith("method=exact"):
            assert lo == hi == truth
        else:
            assert lo == hi != truth and abs(lo / truth - 1) < 0.05


def test_duckdb_threads_is_a_factor_that_takes_effect(duck: Target) -> None:
    for threads in (1, 2):
        spec = (
            f"name = 'e'\n[workload]\nsession_sql = ['SET threads = {threads}']\n"
            "[[workload.transactions]]\nresult = true\n"
            "script = \"SELECT current_setting('threads');\"\n"
        )
        experiment = parse_experiment(spec, file="e")
        request = SampleRequest(
            program=compile_program(experiment.workload, duck.placeholder_style),
            sessions=1,
            session_sql=experiment.workload.session_sql,
            duration_ns=0,
            max_transactions=3,
            seed=1,
        )
        result = ENGINE.run_sample(duck, request)
        r = result.summaries.results
        assert r["min"].tolist() == r["max"].tolist() == [float(threads)]


# -- any DB-API module -------------------------------------------------------------------------


def test_sqlite3_through_dbapi_commits_exactly_what_it_reports(tmp_path: Path) -> None:
    db = tmp_path / "g.db"
    t = parse_target(f"dbapi://sqlite3?database={quote(str(db))}&timeout=10")
    assert t.kind == "dbapi"
    ENGINE.execute(
        t, "CREATE TABLE a (id INTEGER PRIMARY KEY, n INTEGER); INSERT INTO a VALUES (1, 0)"
    )
    result = sample(t, "UPDATE a SET n = n + 1 WHERE id = 1;", sessions=1, count=300)
    assert (result.columns["status"] == OK).all()
    assert ENGINE.query(t, "SELECT n FROM a") == [("300",)]


def test_psycopg_through_dbapi_escapes_percent_and_binds(postgres: ThrowawayPostgres) -> None:
    """psycopg's paramstyle is pyformat: a literal % must be doubled, values go by name."""
    conninfo = quote(postgres.url)
    t = parse_target(f"dbapi://psycopg?conninfo={conninfo}")
    ENGINE.execute(t, "DROP TABLE IF EXISTS pct; CREATE TABLE pct (id int, name text)")
    ENGINE.execute(t, "INSERT INTO pct VALUES (1, 'x5%'), (2, 'y')")
    script = (
        "\\set id random(1, 2)\n"
        # No parameter: sent as written, so its % stays single (lit = 1 only then).
        "SELECT count(*) AS lit FROM pct WHERE name = 'x5%' \\gset\n"
        "SELECT count(*) AS hits FROM pct WHERE name LIKE '%5\\%' ESCAPE '\\' AND id = :id \\gset\n"
        "INSERT INTO pct VALUES (:hits + 10 + 100 * :lit, 'z');"
    )
    result = sample(t, script, sessions=2, count=100)
    assert (result.columns["status"] == OK).all()
    hits = ENGINE.query(t, "SELECT count(*) FROM pct WHERE id = 111")[0][0]
    misses = ENGINE.query(t, "SELECT count(*) FROM pct WHERE id = 110")[0][0]
    assert int(hits or 0) + int(misses or 0) == 100 and int(hits or 0) > 0


def test_a_missing_module_or_a_bad_url_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="'no_such_driver' is not installed"):
        ENGINE.execute(parse_target("dbapi://no_such_driver?x=1"), "SELECT 1")
    with pytest.raises(TargetError, match=r"not a DB-API 2\.0 module"):
        ENGINE.execute(parse_target("dbapi://json"), "SELECT 1")
    with pytest.raises(SpecError, match="dbapi://<module>"):
        parse_target("dbapi:///path")
    secret = parse_target("dbapi://psycopg?host=localhost&password=hunter2")
    assert "hunter2" not in secret.display and secret.password == "hunter2"


def test_dbapi_sessions_report_their_cpu(duck: Target) -> None:
    result = sample(duck, "SELECT count(*) FROM range(1000);", sessions=2, count=50)
    assert len(result.session_cpu_ns) == 2 and all(ns > 0 for ns in result.session_cpu_ns)
    assert np.all(result.columns["end_ns"] >= result.columns["start_ns"])


def test_the_duckdb_sampler_sees_a_sort_spill_past_the_memory_limit(tmp_path: Path) -> None:
    """A sort of ~200 MB under a 60 MB limit spills to temporary files: the peak shows it, and
    the end-of-sample level is back to nothing spilled."""
    from wannabet.backends.duckdb.sampler import DuckDBSampler

    t = parse_target(f"duckdb:///{tmp_path / 's.duckdb'}?memory_limit=60MB&threads=1")
    ENGINE.execute(
        t, "CREATE TABLE t AS SELECT range AS i, md5(range::VARCHAR) AS s FROM range(3000000)"
    )
    sampler = DuckDBSampler(t)
    try:
        sampler.start()
        result = sample(
            t, "SELECT count(*) FROM (SELECT s FROM t ORDER BY s);", sessions=1, count=2
        )
        section = sampler.stop(result)
    finally:
        sampler.close()
    assert (result.columns["status"] == OK).all()
    v = section.values
    assert max(v["peak_temporary_bytes"], v["peak_temporary_file_bytes"]) > 50_000_000
    assert v["temporary_file_bytes"] == 0
    assert 0 < v["peak_memory_bytes"] <= 60 * 2**20 * 1.2


# -- fetch_size through DB-API -----------------------------------------------------------------


def test_fetch_size_sets_the_cursors_arraysize(tmp_path: Path) -> None:
    """PEP 249's arraysize is python-oracledb's rows per round trip (JDBC's fetch size)."""
    from wannabet.engine.dbapi import DbapiSession, driver_of

    db = quote(str(tmp_path / "a.db"))
    session = DbapiSession(driver_of(parse_target(f"dbapi://sqlite3?database={db}")))
    try:
        session.set_fetch_size(7)
        assert session._cursor.arraysize == 7
    finally:
        session.close()
    # DuckDB's cursor has no arraysize: the size goes to fetchmany alone.
    duck = DbapiSession(driver_of(parse_target(f"duckdb:///{tmp_path / 'a.duckdb'}")))
    try:
        duck.set_fetch_size(7)
    finally:
        duck.close()


def test_fetch_size_reads_every_row_and_gsets_the_row(tmp_path: Path) -> None:
    """Read three rows at a time, a result gives the row count and the captured row that a whole
    read gives (``\\gset`` on ten rows names the count it found)."""
    t = parse_target(f"dbapi://sqlite3?database={quote(str(tmp_path / 'f.db'))}")
    ENGINE.execute(t, "CREATE TABLE src (id INTEGER); CREATE TABLE seen (id INTEGER, n INTEGER)")
    ENGINE.execute(t, "INSERT INTO src VALUES " + ", ".join(f"({i})" for i in range(1, 11)))
    script = (
        "SELECT id AS last FROM src WHERE id = 10 \\gset\n"
        "SELECT count(*) AS n FROM src \\gset\n"
        "INSERT INTO seen VALUES (:last, :n);"
    )
    for fetch_size in (3, 0):
        result = sample(t, script, sessions=1, count=4, fetch_size=fetch_size)
        assert (result.columns["status"] == OK).all()
        many = sample(t, "SELECT id FROM src \\gset", sessions=1, count=1, fetch_size=fetch_size)
        assert many.error_messages == {"script": "\\gset expects one row, got 10"}
    assert ENGINE.query(t, "SELECT id, n, count(*) FROM seen GROUP BY id, n") == [("10", "10", "8")]


def test_fetch_size_bounds_the_clients_memory_where_a_whole_read_holds_every_row(
    tmp_path: Path,
) -> None:
    """The DB-API engine is a buffering client: read whole (fetchall), a 100 MB result is held
    in the process; 100 rows at a time, only one batch is. The seed 000 story of fetch size and
    client memory, with the sampler's per-sample peak resident memory as the measure."""
    from wannabet.samplers.process import ProcessSampler

    t = parse_target(f"duckdb:///{tmp_path / 'm.duckdb'}?threads=1")
    ENGINE.execute(
        t,
        "CREATE TABLE wide AS SELECT range AS id, repeat('x', 500) || range::VARCHAR AS pad"
        " FROM range(200000)",
    )
    peaks = {}
    for fetch_size in (0, 100, 0, 100):
        sampler = ProcessSampler()
        sampler.start()
        result = sample(t, "SELECT id, pad FROM wide;", sessions=1, count=1, fetch_size=fetch_size)
        peak = sampler.stop(result).values["peak_rss_bytes"]
        assert (result.columns["status"] == OK).all() and peak is not None
        peaks[fetch_size] = min(peaks.get(fetch_size, peak), peak)
    # 200,000 rows of ~510-byte strings held at once: over 100 MB more than a batch of 100.
    assert peaks[0] - peaks[100] > 80 * 2**20, peaks


def test_fetch_size_is_a_factor_on_duckdb(tmp_path: Path) -> None:
    """The runner takes fetch_size for DB-API targets (refused only where it changes nothing)."""
    from wannabet.runner import run_experiment
    from wannabet.store import Store

    target = parse_target(f"duckdb:///{tmp_path / 'x.duckdb'}")
    ENGINE.execute(target, "CREATE TABLE t AS SELECT range AS id FROM range(1000)")
    text = (
        'name = "e"\n[sampling]\nsamples = 1\ntransactions = 20\nwarmup = "0s"\n'
        '[[workload.transactions]]\nscript = "SELECT id FROM t;"\n'
        '[[factors]]\nname = "fetch"\nlevels = [10, 1000]\nfetch_size = "{level}"\n'
    )
    store = Store(tmp_path / "r.duckdb")
    out = run_experiment(
        parse_experiment(text, file="e.toml"), target=target, store=store, engine=ENGINE
    )
    summaries = store.condition_summaries(out.run_id)
    assert sorted(s.condition for s in summaries) == ["fetch=10", "fetch=1000"]
    assert all(s.errors == 0 and s.transactions == 20 for s in summaries)


@pytest.mark.parametrize("form", ["conninfo", "url"])
def test_a_password_inside_a_conninfo_is_never_shown_or_stored(
    postgres: ThrowawayPostgres, tmp_path: Path, form: str
) -> None:
    """The documented ``dbapi://psycopg?conninfo=...`` carries the password encoded inside a
    value: scrubbed from the stored target, summary, report and a connection error alike."""
    secret = postgres.password
    assert secret
    inner = (
        f"host=127.0.0.1 port={postgres.port} user={postgres.user} password={secret}"
        f" dbname={postgres.database}"
        if form == "conninfo"
        else postgres.url
    )
    url = "dbapi://psycopg?conninfo=" + quote(inner, safe="")
    file = tmp_path / "e.toml"
    file.write_text(
        'name = "e"\n[[workload.transactions]]\nscript = "SELECT 1;"\n'
        '[sampling]\nsamples = 1\ntransactions = 5\nwarmup = "0s"\n'
    )
    results = tmp_path / "r.duckdb"
    proc = wannabet("run", str(file), "-r", str(results), "-t", url, "--no-stats")
    assert proc.returncode == 0, proc.stderr
    shown = proc.stdout + proc.stderr
    summary = wannabet("summary", "-r", str(results), "-f", "json").stdout
    wannabet("report", "-r", str(results), "-o", str(tmp_path / "r.html"))
    with duckdb.connect(str(results), read_only=True) as con:
        stored = " ".join(
            str(v) for row in con.execute("SELECT * FROM runs").fetchall() for v in row
        )
    for text in (shown, summary, (tmp_path / "r.html").read_text(), stored):
        assert secret not in text and quote(secret, safe="") not in text
    assert "password%3D***" in stored or "%3A***%40" in stored
    # A connection that fails says so without it.
    refused = url.replace(f"port%3D{postgres.port}", "port%3D1").replace(
        f"%3A{postgres.port}", "%3A1"
    )
    proc = wannabet("run", str(file), "-r", str(results), "-t", refused, "--no-stats")
    assert proc.returncode == 3 and secret not in proc.stdout + proc.stderr


def test_a_duckdb_statement_past_the_grace_is_cancelled(duck: Target, tmp_path: Path) -> None:
    """DuckDB runs a session's statements on its cursor, a connection of its own: the cancel
    must reach that one, or the statement runs on and the session is given up on."""
    from wannabet.runner import run_experiment
    from wannabet.store import Store

    text = (
        'name = "long"\n[[workload.transactions]]\n'
        'script = "SELECT count(*) FROM range(10000000000) a WHERE a.range % 7 = 3;"\n'
        '[sampling]\nsamples = 1\nduration = "0.2s"\nwarmup = "0s"\ngrace = "0.4s"\n'
        'on_degraded = "skip"\n'
    )
    store = Store(tmp_path / "r.duckdb")
    outcome = run_experiment(
        parse_experiment(text, file="e.toml"), target=duck, store=store, engine=ENGINE
    )
    [sample] = store.samples(outcome.run_id)
    assert sample["status"] == "degraded"
    assert "still running were cancelled" in sample["reason"]
    assert "did not return" not in sample["reason"]  # the session came back
    with store.read() as con:
        assert con.execute("SELECT status FROM transactions").fetchall() == [("timeout",)]


def test_check_with_a_duckdb_target_prepares_every_condition(tmp_path: Path) -> None:
    """DuckDB has no SAVEPOINT: each condition is tried in a transaction of its own, after the
    set-up, and a wrong column is still found (it failed every statement before)."""
    target = f"duckdb:///{tmp_path / 'chk.duckdb'}"
    example = EXAMPLES / "duckdb-approx-distinct.toml"
    proc = wannabet("check", str(example), "--target", target)
    assert proc.returncode == 0, proc.stderr
    assert "prepared all 4 statements" in proc.stdout
    broken = tmp_path / "broken.toml"
    broken.write_text(example.read_text().replace("count(DISTINCT", "count(DISTINCT nope +", 1))
    proc = wannabet("check", str(broken), "--target", target)
    assert proc.returncode == 3
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert errors and all("nope" in ln for ln in errors), proc.stderr


def _dry_run_after_failures(target: Target) -> None:
    """A refused statement leaves DuckDB's transaction aborted (psycopg's alike): the items
    after it are judged on their own, not refused for that reason."""
    ENGINE.execute(target, "DROP TABLE IF EXISTS dry_t")
    setup = ["CREATE TABLE dry_t (a int)", "SELECT nope_setup", "INSERT INTO dry_t VALUES (1)"]
    conditions: list[tuple[list[str], list[tuple[str, int]]]] = [
        (
            ["SELECT 1", "SELECT nope_sql", "SELECT 2"],
            [
                ("SELECT a FROM dry_t", 0),
                ("SELECT nope_prepared", 0),
                ("SELECT a + 1 FROM dry_t", 0),
            ],
        ),
        ([], [("SELECT a FROM dry_t WHERE a = $1", 1)]),
    ]
    done, out = ENGINE.dry_run(target, setup, conditions)
    refused = [message is not None for message, _ in done]
    assert refused == [False, True, False], done
    assert "nope_setup" in str(done[1][0])
    (ran, prepared), (ran2, prepared2) = out
    assert [m is not None for m, _ in ran] == [False, True, False], ran
    assert [m is not None for m, _ in prepared] == [False, True, False], prepared
    assert "nope_prepared" in str(prepared[1][0])
    assert ran2 == [] and [m for m, _ in prepared2] == [None], prepared2
    # Rolled back: the set-up's table is not left behind.
    assert ENGINE.query(
        target, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'dry_t'"
    ) == [("0",)]


def test_a_duckdb_dry_run_goes_on_after_a_refused_statement(tmp_path: Path) -> None:
    _dry_run_after_failures(parse_target(f"duckdb:///{tmp_path / 'dry.duckdb'}"))


def test_a_psycopg_dry_run_goes_on_after_a_refused_statement(postgres: ThrowawayPostgres) -> None:
    _dry_run_after_failures(parse_target(f"dbapi://psycopg?conninfo={quote(postgres.url)}"))


def test_a_drivers_message_of_several_lines_is_one_readable_error_line(tmp_path: Path) -> None:
    # libpq says "Connection refused" and, on a line of its own, "\tIs the server running…":
    # joined with "; ", not shown as an escaped \n\t.
    file = tmp_path / "e.toml"
    file.write_text('name = "x"\n[[workload.transactions]]\nname = "q"\nscript = "SELECT 1"\n')
    conninfo = quote("host=127.0.0.1 port=1 connect_timeout=2", safe="")
    line = one_line_error(
        wannabet("check", str(file), "-t", f"dbapi://psycopg?conninfo={conninfo}"), 3
    )
    assert "Connection refused; Is the server running" in line, line
    assert "\\n" not in line and "\\t" not in line, line
