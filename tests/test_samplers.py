"""Per-sample statistics against real SQLite runs and the throwaway PostgreSQL."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wannabet.backends import backend_for, collector_for, parse_target
from wannabet.engine import NativeEngine, SampleRequest, SampleResult
from wannabet.engine.base import Progress
from wannabet.engine.fake import FakeEngine
from wannabet.errors import AnalysisError
from wannabet.runner import run_experiment, with_overrides
from wannabet.samplers import Collector, Section, StatsOptions
from wannabet.samplers.base import Interrupted, delta, never
from wannabet.spec import load_experiment
from wannabet.store import Store
from wannabet.targets import Target
from wannabet.testing import ThrowawayPostgres
from wannabet.testing.cli import wannabet
from wannabet.work import unit_of_work_for_run

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
WAL_FLUSH = {"WALSync", "WALWrite", "WALWriteLock"}

# One row per session: no lock waits between sessions, so what a commit waits for is the WAL.
COMMIT_TOML = """
name = "commit-waits"
[setup]
sql = '''
DROP TABLE IF EXISTS counters;
CREATE TABLE counters (id int PRIMARY KEY, n bigint NOT NULL);
INSERT INTO counters SELECT i, 0 FROM generate_series(0, 7) i;
'''
[workload]
sessions = 2
[[workload.transactions]]
name = "bump"
script = '''
UPDATE counters SET n = n + 1 WHERE id = :client_id;
'''
[[factors]]
name = "synchronous_commit"
levels = ["on", "off"]
session_sql = "SET synchronous_commit = {level}"
[sampling]
samples = 3
duration = "1.5s"
warmup = "0.3s"
"""


def walk_numbers(doc: Any) -> Iterator[float]:
    if isinstance(doc, bool):
        return
    if isinstance(doc, int | float):
        yield doc
    elif isinstance(doc, dict):
        for v in doc.values():
            yield from walk_numbers(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from walk_numbers(v)


def stats_of(store: Store, run_id: int) -> list[dict[str, Any]]:
    return [json.loads(s["stats"]) | {"_condition": s["condition"]} for s in store.samples(run_id)]


# -- pure parts ---------------------------------------------------------------------------


def test_a_counter_that_goes_backwards_yields_no_delta() -> None:
    ok, negative = delta({"a": 1, "b": 2.5, "s": "x"}, {"a": 4, "b": 3.0, "s": "y"})
    assert ok == {"a": 3, "b": 0.5} and negative == []
    none, negative = delta({"a": 10, "b": 1}, {"a": 2, "b": 5})
    assert none == {} and negative == ["a"]


class _Broken:
    def __init__(self, where: str) -> None:
        self.where = where
        self.name = f"broken-{where}"

    def start(self, interrupted: Interrupted = never) -> None:
        if self.where == "start":
            raise PermissionError("permission denied for view pg_stat_wal")

    def stop(self, result: SampleResult, interrupted: Interrupted = never) -> Section:
        if self.where == "stop":
            raise RuntimeError("view missing")
        return Section(self.name, {"x": 1})

    def close(self) -> None:
        raise RuntimeError("close fails too")


def test_a_failing_sampler_becomes_a_warning_and_flags_the_sample(tmp_path: Path) -> None:
    collector = Collector([_Broken("start"), _Broken("stop"), _Broken("never")])
    collector.start()
    doc = collector.stop(_fake_result()).to_json()
    assert doc["warnings"] == [
        "broken-start: permission denied for view pg_stat_wal",
        "broken-stop: view missing",
    ]
    assert doc["broken-never"] == {"x": 1}
    # A sampler set up for the run but failing on this sample leaves the sample without
    # figures its neighbours have: its statistics are invalid, so analyses leave it out.
    assert doc["valid"] is False
    assert doc["invalid"] == [
        "broken-start: failed to start: permission denied for view pg_stat_wal",
        "broken-stop: failed: view missing",
    ]
    collector.close()  # a failing close is swallowed


def test_samplers_stop_in_reverse_order() -> None:
    calls: list[str] = []

    class Tracing(_Broken):
        def start(self, interrupted: Interrupted = never) -> None:
            calls.append(f"start {self.where}")

        def stop(self, result: SampleResult, interrupted: Interrupted = never) -> Section:
            calls.append(f"stop {self.where}")
            return Section(self.name, {})

    collector = Collector([Tracing("a"), Tracing("b")])
    collector.start()
    doc = collector.stop(_fake_result()).to_json()
    assert calls == ["start a", "start b", "stop b", "stop a"]
    assert [k for k in doc if k.startswith("broken")] == ["broken-a", "broken-b"]


def _fake_result() -> SampleResult:
    return FakeEngine().run_sample(
        Target(backend_for("sqlite"), "sqlite:///x"),
        SampleRequest(
            program=_program(),
            sessions=1,
            session_sql=(),
            duration_ns=0,
            max_transactions=5,
            seed=1,
        ),
    )


def _program() -> Any:
    from wannabet.engine import compile_program

    exp = load_experiment(EXAMPLES / "sqlite-synchronous.toml")
    return compile_program(exp.workload, "qmark")


def test_the_engine_sampler_counts_commits_per_transaction_type() -> None:
    from wannabet.samplers.process import EngineSampler

    result = _fake_result()
    names = _program().transaction_names
    section = EngineSampler(names).stop(result)
    ok = result.columns["status"] == 0
    by_type = section.values["committed_by_type"]
    assert list(by_type) == list(names)
    for index, name in enumerate(names):
        assert by_type[name] == int((result.columns["txn_type"][ok] == index).sum())
    assert sum(by_type.values()) == section.values["committed"]


def test_failure_messages_are_scrubbed() -> None:
    class Leaky(_Broken):
        def start(self, interrupted: Interrupted = never) -> None:
            raise RuntimeError("cannot connect to postgresql://u:s3cret@db/x: refused")

    collector = Collector([Leaky("start")], scrub=lambda t: t.replace("s3cret", "***"))
    collector.start()
    doc = collector.stop(_fake_result()).to_json()
    assert doc["warnings"] == ["broken-start: cannot connect to postgresql://u:***@db/x: refused"]
    assert "s3cret" not in json.dumps(doc)


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("postgresql://u@127.0.0.1:5432/d", True),
        ("postgresql://u@localhost/d", True),
        ("postgresql://u@[::1]:5432/d", True),
        ("postgresql:///d?host=/var/run/postgresql", True),
        ("postgresql://u@db.example.com/d", False),
        ("postgresql://u@10.0.0.7:5432/d", False),
    ],
)
def test_only_loopback_and_socket_hosts_count_as_local(url: str, local: bool) -> None:
    from wannabet.backends.postgresql.sampler import is_local_host

    assert is_local_host(Target(backend_for("postgresql"), url)) is local


def test_the_statistics_connection_targets_the_engines_host_not_pghost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from wannabet.backends.postgresql.sampler import engine_host_port, is_local_host

    # The engine ignores PGHOST/PGPORT and defaults to TCP localhost:5432; so does this.
    monkeypatch.setenv("PGHOST", "db.example.com")
    monkeypatch.setenv("PGPORT", "6000")
    target = Target(backend_for("postgresql"), "postgresql:///d")
    assert engine_host_port(target) == ("localhost", 5432)
    assert is_local_host(target)
    assert engine_host_port(Target(backend_for("postgresql"), "postgresql://u@h:5433/d")) == (
        "h",
        5433,
    )
    assert engine_host_port(
        Target(backend_for("postgresql"), "postgresql:///d?host=/s&port=7")
    ) == ("/s", 7)


def test_stats_options_are_validated() -> None:
    with pytest.raises(ValueError, match="between 10ms and 50ms"):
        StatsOptions(wait_interval_s=0.005)
    with pytest.raises(ValueError, match="at least 1"):
        StatsOptions(server_cores=0)


# -- SQLite -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sqlite_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, int]:
    tmp = tmp_path_factory.mktemp("sqlite-stats")
    exp = with_overrides(
        load_experiment(EXAMPLES / "sqlite-synchronous.toml"),
        samples=2,
        duration_s=0.6,
        warmup_s=0.1,
    )
    store = Store(tmp / "r.duckdb")
    target = parse_target(f"sqlite:///{tmp / 'bench.sqlite'}")
    out = run_experiment(exp, target=target, store=store, engine=NativeEngine())
    return store, out.run_id


def test_sqlite_samples_carry_cpu_and_io(sqlite_run: tuple[Store, int]) -> None:
    store, run_id = sqlite_run
    docs = stats_of(store, run_id)
    assert len(docs) == 6
    for doc in docs:
        assert doc["valid"] is True, doc
        eng, proc = doc["engine"], doc["client_process"]
        assert eng["cpu_s"] > 0 and len(eng["session_cpu_s"]) == 2
        assert eng["cache_hit"] > 0 and eng["cache_write"] > 0
        assert proc["cpu_s"] > 0 and proc["write_calls"] > 0
        assert proc["read_bytes"] is not None and proc["write_bytes"] is not None
        assert proc["fsync_calls"] is None  # not measurable: unknown, not zero
        # The engine's threads are part of the process: their CPU cannot exceed it.
        # psutil reads user and system time in clock ticks, each truncated.
        assert eng["cpu_s"] <= proc["cpu_s"] * 1.05 + 2 / os.sysconf("SC_CLK_TCK")
    units = unit_of_work_for_run(store, run_id)
    assert {u.condition for u in units} == {
        "synchronous=FULL",
        "synchronous=NORMAL",
        "synchronous=OFF",
    }
    for u in units:
        assert u.cpu_source == "engine threads"
        assert u.cpu_ms_per_unit and u.wait_ms_per_unit and u.response_ms_per_unit
        assert u.cpu_ms_per_unit.mean > 0
        assert u.io_per_unit["write_calls"].mean > 0 and "write_bytes" in u.io_per_unit
        assert u.response_ms_per_unit.mean == pytest.approx(
            u.cpu_ms_per_unit.mean + u.wait_ms_per_unit.mean
        )
        assert u.server_check is None


def test_a_transaction_type_can_be_the_unit(sqlite_run: tuple[Store, int]) -> None:
    store, run_id = sqlite_run
    commits = {u.condition: u for u in unit_of_work_for_run(store, run_id)}
    updates = {u.condition: u for u in unit_of_work_for_run(store, run_id, "update")}
    reads = {u.condition: u for u in unit_of_work_for_run(store, run_id, "read")}
    for label, c in commits.items():
        u, r = updates[label], reads[label]
        assert u.unit == "update" and r.unit == "read"
        assert c.units_per_s and u.units_per_s and r.units_per_s
        # Every committed transaction is an update or a read, sample by sample.
        assert u.units_per_s.mean + r.units_per_s.mean == pytest.approx(c.units_per_s.mean)
        # The same CPU charged to fewer units (weights 3:1): more per unit.
        assert u.cpu_ms_per_unit and c.cpu_ms_per_unit
        assert u.cpu_ms_per_unit.mean > c.cpu_ms_per_unit.mean
    with pytest.raises(AnalysisError, match=r"'nope' is not a transaction type.*read, update"):
        unit_of_work_for_run(store, run_id, "nope")


def test_summary_json_gains_unit_of_work(sqlite_run: tuple[Store, int], tmp_path: Path) -> None:
    store, run_id = sqlite_run
    proc = wannabet(
        "summary",
        "--results",
        str(store.path),
        "--run",
        str(run_id),
        "--format",
        "json",
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    for cond in json.loads(proc.stdout)["conditions"]:
        uow = cond["unit_of_work"]
        assert uow["unit"] == "commit"
        for key in ("units_per_s", "cpu_ms_per_unit", "wait_ms_per_unit", "response_ms_per_unit"):
            assert uow[key] > 0
        assert isinstance(uow["top_waits"], list)
        assert cond["server_check"] == {"engine_commits": None, "server_commits": None}


def test_summary_markdown_has_the_unit_of_work_table(sqlite_run: tuple[Store, int]) -> None:
    store, run_id = sqlite_run
    proc = wannabet(
        "summary",
        "--results",
        str(store.path),
        "--run",
        str(run_id),
        "--format",
        "markdown",
        "--unit",
        "update",
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "**Unit of work** (per update, mean of samples)" in proc.stdout
    for label in ("synchronous=FULL", "synchronous=NORMAL", "synchronous=OFF"):
        # Cells are padded to align the columns.
        assert re.search(rf"^\| {re.escape(label)} +\| ", proc.stdout, re.MULTILINE), label


def test_no_stats_stores_none_and_a_bad_interval_is_refused(tmp_path: Path) -> None:
    results = tmp_path / "r.duckdb"
    base = [
        "run",
        str(EXAMPLES / "sqlite-synchronous.toml"),
        "--results",
        str(results),
        "--samples",
        "1",
        "--duration",
        "0.2s",
        "--warmup",
        "0s",
    ]
    proc = wannabet(*base, "--stats-interval", "5ms", timeout=120)
    assert proc.returncode == 2
    assert "--stats-interval" in proc.stderr and "between 10ms and 50ms" in proc.stderr
    proc = wannabet(*base, "--no-stats", timeout=120)
    assert proc.returncode == 0, proc.stderr
    store = Store(results)
    assert all(json.loads(s["stats"]) == {} for s in store.samples(store.run().run_id))
    assert unit_of_work_for_run(store, store.run().run_id) == []


def test_the_files_statistics_table_is_used_and_the_command_line_wins(tmp_path: Path) -> None:
    exp = tmp_path / "exp.toml"
    exp.write_text(
        (EXAMPLES / "sqlite-synchronous.toml").read_text() + "\n[statistics]\nenabled = false\n"
    )
    short = ["--samples", "1", "--duration", "0.2s", "--warmup", "0s"]
    off, on = tmp_path / "off.duckdb", tmp_path / "on.duckdb"
    proc = wannabet("run", str(exp), "--results", str(off), *short, timeout=120)
    assert proc.returncode == 0, proc.stderr
    proc = wannabet("run", str(exp), "--results", str(on), "--stats", *short, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for results, enabled in ((off, False), (on, True)):
        store = Store(results)
        run = store.run()
        assert run.settings["statistics"]["enabled"] is enabled
        stats = [json.loads(s["stats"]) for s in store.samples(run.run_id)]
        assert stats and all((doc != {}) is enabled for doc in stats)


# -- PostgreSQL ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def commit_run(
    postgres: ThrowawayPostgres, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Store, int]:
    tmp = tmp_path_factory.mktemp("pg-stats")
    (tmp / "exp.toml").write_text(COMMIT_TOML)
    store = Store(tmp / "r.duckdb")
    out = run_experiment(
        load_experiment(tmp / "exp.toml"),
        target=parse_target(postgres.url),
        store=store,
        engine=NativeEngine(),
    )
    return store, out.run_id


@pytest.mark.postgres
def test_server_commits_match_the_engine(commit_run: tuple[Store, int]) -> None:
    store, run_id = commit_run
    for doc in stats_of(store, run_id):
        pg = doc["postgres"]
        assert doc["valid"] is True and doc["warnings"] == [], doc["warnings"]
        assert pg["commits_check_reliable"] is True
        assert pg["engine_commits"] > doc["engine"]["committed"]  # setup transactions count
        assert abs(pg["server_commits"] - pg["engine_commits"]) <= 0.01 * pg["engine_commits"]
        assert pg["local"] is True and pg["cpu_s"] > 0 and pg["cores"] >= 1
        assert pg["waits"]["polls"] > 10 and pg["waits"]["error"] is None
        # Both sessions are found by their application_name, the sampler's own backend is not.
        assert pg["waits"]["max_sessions"] == 2
        assert pg["wal"]["wal_records"] > 0 and "blks_hit" in pg["database"]
    for u in unit_of_work_for_run(store, run_id):
        assert u.server_check is not None and u.server_check.ok, u.server_check
        assert u.server_check.samples == 3


@pytest.mark.postgres
@pytest.mark.parametrize("login", ["password", "client certificate"])
def test_server_commits_match_the_engine_over_tls(
    tls_postgres: ThrowawayPostgres, tmp_path: Path, login: str
) -> None:
    """The engine follows the protocol inside TLS (transaction status, commits), and the
    statistics connections (psycopg and the native poller) use the same URL, also when the
    server knows the user by a client certificate only."""
    (tmp_path / "exp.toml").write_text(COMMIT_TOML)
    store = Store(tmp_path / "r.duckdb")
    url = f"{tls_postgres.url}?sslmode=verify-full&sslrootcert={tls_postgres.ca_file}"
    if login == "client certificate":
        cert, key = tls_postgres.client_certificate(tmp_path)
        pg = tls_postgres
        url = (
            f"postgresql://{pg.cert_user}@127.0.0.1:{pg.port}/{pg.database}?sslmode=verify-full"
            f"&sslrootcert={pg.ca_file}&sslcert={cert}&sslkey={key}"
        )
    out = run_experiment(
        with_overrides(load_experiment(tmp_path / "exp.toml"), samples=1),
        target=parse_target(url),
        store=store,
        engine=NativeEngine(),
    )
    docs = stats_of(store, out.run_id)
    assert len(docs) == 2
    for doc in docs:
        assert doc["valid"] and doc["warnings"] == [], doc
        pg = doc["postgres"]
        assert pg["engine_commits"] > 0 and pg["commits_check_reliable"] is True
        # Within the 1%: the server also counts commits of its own workers
        # (autovacuum on the table the other login just updated); a scan that lost its way
        # inside TLS would be off by far more.
        assert abs(pg["server_commits"] - pg["engine_commits"]) <= 0.01 * pg["engine_commits"], pg
        assert pg["waits"]["polls"] > 0 and pg["waits"]["error"] is None


@pytest.mark.postgres
def test_synchronous_commit_off_waits_less_per_commit(commit_run: tuple[Store, int]) -> None:
    store, run_id = commit_run
    units = {u.condition: u for u in unit_of_work_for_run(store, run_id)}
    on, off = units["synchronous_commit=on"], units["synchronous_commit=off"]
    for u in (on, off):
        assert u.cpu_ms_per_unit and u.wait_ms_per_unit and u.response_ms_per_unit
        assert u.response_ms_per_unit.mean == pytest.approx(
            u.cpu_ms_per_unit.mean + u.wait_ms_per_unit.mean
        )
        if u.curve is not None:
            assert len(u.curve.units_per_s) == len(u.curve.response_ms)
        else:  # a closed loop of no more sessions than the server's cores: no CPU queue
            assert any("cannot queue for CPU" in n for n in u.notes), u.notes
        assert u.io_per_unit["wal_bytes"].mean > 0
    assert on.wait_ms_per_unit and off.wait_ms_per_unit
    assert off.wait_ms_per_unit.mean < 0.5 * on.wait_ms_per_unit.mean
    assert on.top_waits and on.top_waits[0].event in WAL_FLUSH, on.top_waits
    flush_off = sum(w.ms_per_unit for w in off.top_waits if w.event in WAL_FLUSH)
    flush_on = sum(w.ms_per_unit for w in on.top_waits if w.event in WAL_FLUSH)
    assert flush_off < 0.25 * flush_on


class _ResetsStatistics:
    """A real engine that has pg_stat_reset() run in the middle of one chosen sample."""

    def __init__(self, engine: NativeEngine, at_sample: int) -> None:
        self._engine = engine
        self._at = at_sample
        self._n = 0
        self.application_name = engine.application_name

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def run_sample(
        self, target: Target, request: SampleRequest, progress: Progress | None = None
    ) -> SampleResult:
        timer = None
        if self._n == self._at:
            timer = threading.Timer(0.4, self._engine.execute, (target, "SELECT pg_stat_reset()"))
            timer.start()
        self._n += 1
        try:
            return self._engine.run_sample(target, request, progress)
        finally:
            if timer is not None:
                timer.join()


@pytest.mark.postgres
def test_a_statistics_reset_mid_sample_invalidates_that_sample(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    (tmp_path / "exp.toml").write_text(COMMIT_TOML)
    exp = with_overrides(load_experiment(tmp_path / "exp.toml"), samples=2, duration_s=1.0)
    store = Store(tmp_path / "r.duckdb")
    out = run_experiment(
        exp,
        target=parse_target(postgres.url),
        store=store,
        engine=_ResetsStatistics(NativeEngine(), at_sample=1),  # type: ignore[arg-type]
    )
    docs = [json.loads(s["stats"]) for s in store.samples(out.run_id)]
    assert [d["valid"] for d in docs] == [True, False, True, True]
    assert any("reset" in r for r in docs[1]["invalid"])
    assert docs[1]["postgres"]["server_commits"] is None
    assert docs[1]["postgres"]["database"] == {}
    for d in docs:
        assert all(v >= 0 for v in walk_numbers(d)), d
    by = {u.condition: u for u in unit_of_work_for_run(store, out.run_id)}
    assert sorted(u.valid_samples for u in by.values()) == [1, 2]


@pytest.mark.postgres
def test_a_sampler_without_permission_degrades_to_a_warning(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    postgres.psql(
        "CREATE ROLE limited LOGIN PASSWORD 'limited-pw';"
        " GRANT CREATE ON SCHEMA public TO limited;"
        " REVOKE SELECT ON pg_stat_bgwriter FROM PUBLIC;"
    )
    try:
        (tmp_path / "exp.toml").write_text(COMMIT_TOML.replace("counters", "counters_limited"))
        exp = with_overrides(load_experiment(tmp_path / "exp.toml"), samples=1, duration_s=0.5)
        url = f"postgresql://limited:limited-pw@127.0.0.1:{postgres.port}/{postgres.database}"
        store = Store(tmp_path / "r.duckdb")
        out = run_experiment(exp, target=parse_target(url), store=store, engine=NativeEngine())
        assert out.status == "complete"
        docs = [json.loads(s["stats"]) for s in store.samples(out.run_id)]
        for d in docs:
            assert any("bgwriter" in w and "permission denied" in w for w in d["warnings"]), d
            assert d["postgres"]["database"]["xact_commit"] > 0  # the rest still measured
        # The password reaches a driver message when it is also the (missing) database's name:
        # the statistics connection's error must not carry it into the stored warnings.
        leaky = parse_target(
            f"postgresql://limited:limited-pw@127.0.0.1:{postgres.port}/limited-pw"
        )
        collector = collector_for(leaky, NativeEngine(), StatsOptions(), transaction_names=())
        assert collector is not None
        collector.start()
        doc = collector.stop(_fake_result()).to_json()
        collector.close()
        assert any("does not exist" in w and "***" in w for w in doc["warnings"]), doc
        assert "limited-pw" not in json.dumps(doc)
    finally:
        postgres.psql(
            "DROP TABLE IF EXISTS counters_limited; REVOKE CREATE ON SCHEMA public FROM limited;"
            " DROP ROLE limited; GRANT SELECT ON pg_stat_bgwriter TO PUBLIC;"
        )


@pytest.mark.postgres
def test_pg_stat_statements_deltas_when_installed(tmp_path: Path) -> None:
    server = ThrowawayPostgres(settings={"shared_preload_libraries": "pg_stat_statements"})
    with server:
        server.psql("CREATE EXTENSION pg_stat_statements")
        (tmp_path / "exp.toml").write_text(COMMIT_TOML)
        exp = with_overrides(load_experiment(tmp_path / "exp.toml"), samples=1, duration_s=0.5)
        store = Store(tmp_path / "r.duckdb")
        out = run_experiment(
            exp, target=parse_target(server.url), store=store, engine=NativeEngine()
        )
        for doc in stats_of(store, out.run_id):
            assert doc["warnings"] == []
            statements = doc["postgres"]["statements"]
            bump = [s for s in statements if s["query"].startswith("UPDATE counters")]
            assert len(bump) == 1
            # Every committed UPDATE ran once; calls is a delta, so earlier samples are not in it.
            assert bump[0]["calls"] == doc["engine"]["committed"]
            assert bump[0]["total_exec_ms"] > 0


def _one_type_toml(name: str, script: str, sessions: int, duration: str) -> str:
    return f"""
name = "{name}"
[workload]
sessions = {sessions}
[[workload.transactions]]
name = "t"
script = '''
{script}
'''
[sampling]
samples = 2
duration = "{duration}"
warmup = "0s"
"""


@pytest.mark.postgres
def test_the_wait_estimate_finds_a_known_sleep(postgres: ThrowawayPostgres, tmp_path: Path) -> None:
    """An independent check of the sampled waits: every unit sleeps 50 ms on the server."""
    (tmp_path / "exp.toml").write_text(
        _one_type_toml("sleep", "SELECT pg_sleep(0.05);", sessions=2, duration="1.5s")
    )
    store = Store(tmp_path / "r.duckdb")
    out = run_experiment(
        load_experiment(tmp_path / "exp.toml"),
        target=parse_target(postgres.url),
        store=store,
        engine=NativeEngine(),
    )
    (u,) = unit_of_work_for_run(store, out.run_id)
    sleep = [w for w in u.top_waits if w.event == "PgSleep"]
    assert sleep, u.top_waits
    # At least the 50 ms asked for (less only by sampling error); at most the latency the
    # engine measured, which also grows when a loaded machine wakes the sleeper late.
    docs = stats_of(store, out.run_id)
    latency_ms = (
        1000
        * sum(d["engine"]["busy_s"] for d in docs)
        / sum(d["engine"]["transactions"] for d in docs)
    )
    assert 0.8 * 50.0 <= sleep[0].ms_per_unit <= 1.15 * latency_ms, (sleep, latency_ms)
    # The server's own account of active time agrees with CPU + sampled waits.
    assert u.active_ms_per_unit and u.response_ms_per_unit
    assert u.active_ms_per_unit.mean == pytest.approx(u.response_ms_per_unit.mean, rel=0.2)


@pytest.mark.postgres
def test_server_cpu_per_unit_matches_a_cpu_bound_statement(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    """One session summing a long cross join: the server spends its latency on the CPU."""
    # Two small series joined, not one long one: a 6-million-row series is materialized and
    # spills to temporary files (BufFileWrite/Read waits), so part of its time is I/O, the
    # more so the busier the disk. The join's rows are made on the fly, in memory.
    script = "SELECT sum(a.i) FROM generate_series(1, 2000) a(i), generate_series(1, 3000) b(j);"
    (tmp_path / "exp.toml").write_text(_one_type_toml("burn", script, sessions=1, duration="2s"))
    store = Store(tmp_path / "r.duckdb")
    out = run_experiment(
        load_experiment(tmp_path / "exp.toml"),
        target=parse_target(postgres.url),
        store=store,
        engine=NativeEngine(),
    )
    for doc in stats_of(store, out.run_id):
        pg, eng = doc["postgres"], doc["engine"]
        # Totals over the sample, not per commit: a statement of ~1 s still running when the
        # sample ends counts in the server's CPU and the engine's busy time but is not a commit,
        # so dividing one by commits and the other by transactions compares different things.
        busy = eng["busy_s"]
        # CPU can only fall short of the latency (network, waiting for a core on a busy
        # machine), never exceed it by more than the measurement's grain; on an idle server
        # they are nearly equal.
        assert 0.25 * busy <= pg["cpu_s"] <= 1.1 * busy, (pg, eng)
        # Load-independent: the polls see the backend active without a wait event (running
        # or runnable) for as long as the statement runs.
        assert pg["database"]["temp_bytes"] == 0, pg["waits"]["events"]
        assert pg["waits"]["on_cpu_s"] == pytest.approx(busy, rel=0.25), (pg, eng)


@pytest.mark.postgres
def test_a_reset_between_snapshots_invalidates_even_when_counters_grew(
    postgres: ThrowawayPostgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wannabet.backends.postgresql.sampler import PostgresSampler

    sampler = PostgresSampler(parse_target(postgres.url), application_name="no-such-app")
    try:
        before = sampler._snapshot()
        after = {**before, "database": dict(before["database"])}
        after["database"]["xact_commit"] = before["database"]["xact_commit"] + 1000
        after["database"]["stats_reset"] = "a later reset"
        restarted = {**before, "database": dict(before["database"])}
        restarted["database"]["_postmaster_start"] = "another start"
        snapshots = iter([after, restarted])
        monkeypatch.setattr(sampler, "_snapshot", lambda: next(snapshots))
        monkeypatch.setattr(sampler, "_wait_for_sessions", lambda seen: True)
        sampler._sessions_gone_before = True
        sampler._before = before
        section = sampler.stop(_fake_result())
        assert any("reset" in r for r in section.invalid), section.invalid
        assert section.values["database"] == {} and section.values["server_commits"] is None
        # A restart in between (a new postmaster start time) is caught the same way.
        sampler._before = before
        section = sampler.stop(_fake_result())
        assert any("restarted" in r for r in section.invalid), section.invalid
    finally:
        sampler.close()


def _waits_threads() -> list[str]:
    """The native polling threads of this process, by their OS thread names."""
    return [
        task.name
        for task in Path("/proc/self/task").iterdir()
        if _read(task / "comm").strip() == "wannabet-waits"
    ]


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:  # a thread that ended while being listed
        return ""


@pytest.mark.postgres
def test_abandon_leaves_no_polling_thread(postgres: ThrowawayPostgres) -> None:
    from wannabet.backends.postgresql.sampler import PostgresSampler

    sampler = PostgresSampler(parse_target(postgres.url), application_name="no-such-app")
    try:
        sampler.start()
        # The thread names itself once it runs; on a loaded machine that is a moment later.
        deadline = time.monotonic() + 10
        while not _waits_threads() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(_waits_threads()) == 1
        sampler.abandon()
        assert _waits_threads() == []
    finally:
        sampler.close()


@pytest.mark.postgres
def test_ctrl_c_during_a_statistics_wait_ends_promptly_and_keeps_finished_samples(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    """A session of another client sharing the run's application_name makes the sampler wait
    (up to BACKEND_EXIT_TIMEOUT_S) for it to leave; Ctrl-C must not wait with it."""
    import os
    import signal
    import time

    import psycopg

    from wannabet.backends.postgresql.sampler import BACKEND_EXIT_TIMEOUT_S
    from wannabet.errors import StoreError

    app = "wb-ctrl-c"
    (tmp_path / "exp.toml").write_text(COMMIT_TOML.replace("counters", "counters_ctrl_c"))
    results = tmp_path / "r.duckdb"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wannabet",
            "run",
            str(tmp_path / "exp.toml"),
            "--target",
            f"{postgres.url}?application_name={app}",
            "--results",
            str(results),
            "--samples",
            "50",
            "--duration",
            "0.3s",
            "--warmup",
            "0s",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env | {"PYTHONFAULTHANDLER": "1"},
    )
    with proc:
        store = Store(results)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            if results.exists():
                try:
                    if store.run().samples >= 1:
                        break
                except StoreError:
                    continue
        assert proc.poll() is None, "the run ended before it was interrupted"
        with psycopg.connect(postgres.url, application_name=app):
            time.sleep(1.0)  # the next sample's start now waits for this session to leave
            proc.send_signal(signal.SIGINT)
            t0 = time.monotonic()
            try:
                _, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGABRT)
                _, err = proc.communicate(timeout=30)
                pytest.fail(f"no exit within 60 s of Ctrl-C; where it was:\n{err[-4000:]}")
            took = time.monotonic() - t0
    assert proc.returncode == 130, err
    # Without the interrupt check the wait runs to its timeout (about 9 s more, the wait having
    # begun a second before Ctrl-C) before Ctrl-C is honoured; a loaded machine needs seconds
    # of slack for the interpreter's and DuckDB's shutdown.
    assert took < BACKEND_EXIT_TIMEOUT_S - 3, took
    info = store.run()
    assert info.status == "interrupted" and info.samples >= 1
    for sample in store.samples(info.run_id):
        assert json.loads(sample["stats"])["postgres"]["waits"]["polls"] > 0


FROZEN_TOML = """
name = "frozen-server"
[workload]
sessions = 2
[[workload.transactions]]
name = "one"
script = "SELECT 1"
[sampling]
samples = 50
duration = "1s"
warmup = "0s"
grace = "0.5s"
on_degraded = "skip"
"""


@pytest.mark.postgres
@pytest.mark.parametrize("frozen_for_s", [1.0, 3.0])
def test_ctrl_c_on_a_frozen_server_ends_the_run_promptly_and_keeps_finished_samples(
    fresh_postgres: ThrowawayPostgres, tmp_path: Path, frozen_for_s: float
) -> None:
    """Every process of the server stopped (SIGSTOP) in the middle of a sample, then Ctrl-C
    (during the sample, or while its statistics are read): the statistics sampler's end of
    its polls, its closing snapshot and the next start's probe and reconnect each waited for
    their timeouts (about 16 s in all) before Ctrl-C was honoured. The bound is generous for a
    loaded machine and far below that; the sample in flight itself ends by its deadline (1 s
    and a grace of 0.5 s)."""
    import contextlib
    import signal

    import psutil  # type: ignore[import-untyped]

    from wannabet.errors import StoreError

    app = "wb-frozen"
    (tmp_path / "exp.toml").write_text(FROZEN_TOML)
    results = tmp_path / "r.duckdb"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "wannabet",
            "run",
            str(tmp_path / "exp.toml"),
            "--target",
            f"{fresh_postgres.url}?application_name={app}",
            "--results",
            str(results),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env | {"PYTHONFAULTHANDLER": "1"},
    )
    with proc:
        store = Store(results)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            if results.exists():
                try:
                    if store.run().samples >= 2:
                        break
                except StoreError:
                    continue
        # Frozen once the sessions of the sample after those are connected.
        query = f"SELECT count(*) FROM pg_stat_activity WHERE application_name = '{app}'"
        while time.monotonic() < deadline and fresh_postgres.psql(query).strip() != "2":
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it was interrupted"
        postmaster = int((fresh_postgres.data / "postmaster.pid").read_text().split()[0])
        server = [postmaster, *(c.pid for c in psutil.Process(postmaster).children())]
        for pid in server:
            with contextlib.suppress(ProcessLookupError):  # a backend on its way out
                os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(frozen_for_s)  # the sampler is now stuck on the frozen server
            proc.send_signal(signal.SIGINT)
            t0 = time.monotonic()
            try:
                _, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGABRT)
                _, err = proc.communicate(timeout=30)
                pytest.fail(f"no exit within 60 s of Ctrl-C; where it was:\n{err[-4000:]}")
            took = time.monotonic() - t0
        finally:
            for pid in server:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
    assert proc.returncode == 130, err
    assert took < 8, (took, err)
    info = store.run()
    assert info.status == "interrupted" and info.samples >= 2
    assert f"kept {info.samples} finished samples" in err
    samples = store.samples(info.run_id)
    assert len(samples) == info.samples
    for sample in samples:
        # Each finished sample is whole and says what it is: sound with its transactions, or
        # degraded (the frozen one: its sessions stuck) with the reason; its statistics are
        # either measured or say why not.
        if sample["status"] == "complete":
            assert sample["transactions"] > 0
        else:
            assert sample["status"] == "degraded" and "did not return" in sample["reason"]
        stats = json.loads(sample["stats"])
        if stats["valid"]:
            assert stats["postgres"]["waits"]["polls"] > 0
        else:  # the statistics read that Ctrl-C cut short, named as such
            assert any("cut short by the interrupt (Ctrl-C)" in r for r in stats["invalid"])


@pytest.mark.postgres
def test_a_lost_statistics_connection_is_reopened_at_the_next_start(
    postgres: ThrowawayPostgres,
) -> None:
    from wannabet.backends.postgresql.sampler import PostgresSampler

    sampler = PostgresSampler(parse_target(postgres.url), application_name="no-such-app")
    try:
        old_pid = sampler._own_pid
        # What a server restart or an administrator does to the connection.
        postgres.psql(f"SELECT pg_terminate_backend({old_pid}, 5000)")
        sampler.start()
        section = sampler.stop(_fake_result())
        assert sampler._own_pid != old_pid
        assert section.invalid == () and section.values["database"]["xact_commit"] >= 0
    finally:
        sampler.close()


def _sleepers(url: str, app: str, n: int, seconds: float) -> tuple[list[Any], list[int]]:
    """``n`` connections named ``app`` that run pg_sleep(seconds) without blocking the caller."""
    import psycopg

    conns = [psycopg.connect(url, application_name=app, autocommit=True) for _ in range(n)]
    pids = [c.info.backend_pid for c in conns]
    for c in conns:
        c.pgconn.send_query(f"SELECT pg_sleep({seconds})".encode())
    return conns, pids


@pytest.mark.postgres
def test_the_native_poller_counts_the_runs_sessions_by_wait_event(
    postgres: ThrowawayPostgres,
) -> None:
    import time

    import psycopg

    from wannabet import _engine  # type: ignore[attr-defined]

    poller = _engine.WaitPoller(postgres.url, "probe-app", 0.01, 5.0)
    foreign = psycopg.connect(postgres.url, application_name="probe-app", autocommit=True)
    conns, pids = _sleepers(postgres.url, "probe-app", 2, 1.5)
    try:
        deadline = time.monotonic() + 5
        sql = (
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'probe-app'"
            " AND wait_event = 'PgSleep'"
        )
        while int(postgres.psql(sql)) < 2:
            assert time.monotonic() < deadline, "the sleepers did not start"
            time.sleep(0.02)
        t0 = time.monotonic()
        poller.start([foreign.info.backend_pid])
        time.sleep(0.3)
        counts = poller.stop()
        took = time.monotonic() - t0
    finally:
        for c in (*conns, foreign):
            c.close()
        poller.close()
    assert counts["error"] is None
    polls = counts["polls"]
    # Polls every 10 ms ±50% for at least 0.3 s; the idle foreign session's group is left out.
    assert 0.29 <= counts["elapsed_s"] <= took, (counts, took)
    assert 3 <= polls <= counts["elapsed_s"] / 0.005 + 1, counts
    assert counts["events"] == [("Timeout", "PgSleep", 2 * polls)]
    assert counts["active"] == 2 * polls and counts["on_cpu"] == 0
    assert counts["sessions"] == 2 * polls and counts["max_sessions"] == 2
    assert sorted(counts["pids"]) == sorted(pids)
    assert 0 < counts["cpu_s"] < counts["elapsed_s"]
    assert poller.closed


def test_the_native_poller_refuses_misuse(tmp_path: Path) -> None:
    from wannabet import _engine  # type: ignore[attr-defined]

    with pytest.raises(ValueError, match="PostgreSQL target"):
        _engine.WaitPoller(f"sqlite://{tmp_path / 'x.db'}", "app", 0.05, 5.0)
    with pytest.raises(ValueError, match="interval_s must be a positive"):
        _engine.WaitPoller("postgresql://u@127.0.0.1:1/db", "app", 0.0, 5.0)
    with pytest.raises(_engine.ConnectError) as info:
        _engine.WaitPoller("postgresql://u:s3cret@127.0.0.1:1/db", "app", 0.05, 5.0)
    assert "s3cret" not in str(info.value)


def test_the_poller_wrapper_raises_wannabet_errors(tmp_path: Path) -> None:
    from wannabet.engine.waits import WaitPoller
    from wannabet.errors import ConnectError, QueryError, WannabetError

    with pytest.raises(WannabetError, match=r"refused the wait poller: .*PostgreSQL target"):
        WaitPoller(f"sqlite://{tmp_path / 'x.db'}", "app", 0.05, 5.0)
    with pytest.raises(ConnectError) as info:
        WaitPoller("postgresql://u:s3cret@127.0.0.1:1/db", "app", 0.05, 5.0)
    assert not isinstance(info.value, QueryError) and "s3cret" not in str(info.value)


@pytest.mark.postgres
def test_the_native_poller_refuses_to_stop_twice(postgres: ThrowawayPostgres) -> None:
    from wannabet import _engine  # type: ignore[attr-defined]

    poller = _engine.WaitPoller(postgres.url, "probe-app", 0.05, 5.0)
    try:
        with pytest.raises(ValueError, match="not running"):
            poller.stop()
        poller.start()
        with pytest.raises(ValueError, match="is running"):
            poller.start()
        with pytest.raises(ValueError, match="is running"):
            poller.query("SELECT 1")
        assert poller.stop()["error"] is None
        assert poller.query("SELECT 1") == [["1"]]
    finally:
        poller.close()
    with pytest.raises(ValueError, match="is closed"):
        poller.start()


@pytest.mark.postgres
def test_a_killed_poller_connection_flags_the_sample_and_is_reopened(
    postgres: ThrowawayPostgres,
) -> None:
    """The poller's backend terminated mid-sample: that sample reports no waits (rather than
    too few) and an unreliable commits check; the next sample polls on a new connection."""
    import time

    from wannabet.backends.postgresql.sampler import PostgresSampler

    sampler = PostgresSampler(parse_target(postgres.url), application_name="no-such-app")
    try:
        old_pid = sampler._waits.backend_pid
        sampler.start()
        time.sleep(0.2)
        postgres.psql(f"SELECT pg_terminate_backend({old_pid}, 5000)")
        time.sleep(0.2)
        section = sampler.stop(_fake_result())
        assert section.values["waits"]["wait_s"] is None
        assert section.values["commits_check_reliable"] is False
        assert any("wait-event sampling stopped" in w.message for w in section.warnings)
        # Only the waits are lost: the database deltas and the server CPU stay.
        assert section.invalid == () and section.values["database"]["xact_commit"] > 0
        assert section.values["cpu_s"] is not None
        sampler.start()
        time.sleep(0.2)
        section = sampler.stop(_fake_result())
        assert sampler._waits.backend_pid != old_pid
        assert section.values["waits"]["polls"] > 0 and section.values["waits"]["error"] is None
        assert section.values["commits_check_reliable"] is True
        # Once reopened, the poller is kept: the next sample polls on the same connection.
        new_pid = sampler._waits.backend_pid
        sampler.start()
        sampler.stop(_fake_result())
        assert sampler._waits.backend_pid == new_pid
    finally:
        sampler.close()


@pytest.mark.postgres
def test_a_poller_connection_killed_between_samples_is_reopened_before_the_next(
    postgres: ThrowawayPostgres,
) -> None:
    from wannabet.backends.postgresql.sampler import PostgresSampler

    sampler = PostgresSampler(parse_target(postgres.url), application_name="no-such-app")
    try:
        old_pid = sampler._waits.backend_pid
        postgres.psql(f"SELECT pg_terminate_backend({old_pid}, 5000)")  # idle_session_timeout alike
        sampler.start()
        section = sampler.stop(_fake_result())
        assert sampler._waits.backend_pid != old_pid
        assert section.values["waits"]["polls"] > 0 and section.values["waits"]["error"] is None
        assert section.values["commits_check_reliable"] is True
        assert section.invalid == () and section.warnings == ()
    finally:
        sampler.close()


@pytest.mark.postgres
def test_a_client_leaving_during_a_sample_does_not_invalidate_it(
    postgres: ThrowawayPostgres,
) -> None:
    """numbackends falls when any client disconnects: it is a gauge, not a counter."""
    import psycopg

    from wannabet.backends.postgresql.sampler import PostgresSampler

    other = psycopg.connect(postgres.url, application_name="someone-else")
    sampler = PostgresSampler(parse_target(postgres.url), application_name="no-such-app")
    try:
        sampler.start()
        other.close()
        section = sampler.stop(_fake_result())
        assert section.invalid == ()
        assert section.values["database"]["xact_commit"] > 0
        assert "numbackends" not in section.values["database"]
    finally:
        sampler.close()


@pytest.mark.postgres
def test_the_native_poller_answers_a_second_thread_while_busy(
    postgres: ThrowawayPostgres,
) -> None:
    """A call in flight releases the GIL but not the poller's state lock: another thread
    must get an error at once, not deadlock the process (run apart, so a hang fails)."""
    code = f"""
import threading, time
from wannabet import _engine
p = _engine.WaitPoller({postgres.url!r}, "probe-app", 0.05, 5.0)
t = threading.Thread(target=p.query, args=("SELECT pg_sleep(1)",))
t.start()
probe = _engine.WaitPoller({postgres.url!r}, "probe-2", 0.05, 5.0)
deadline = time.monotonic() + 10
sql = "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'"
while probe.query(sql) != [["1"]]:
    assert time.monotonic() < deadline, "the first query did not start"
    time.sleep(0.02)
probe.close()
assert p.closed is False
try:
    p.query("SELECT 1")
except ValueError as exc:
    assert "busy" in str(exc), exc
else:
    raise AssertionError("a second query ran during the first")
t.join()
assert p.query("SELECT 1") == [["1"]]
p.close()
assert p.closed
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_autovacuum_jobs_count_new_tables_and_leave_dropped_ones_out() -> None:
    from wannabet.backends.postgresql.sampler import autovacuum_jobs

    before = {1: 4, 2: 7, 3: 1}
    # 1 ran twice more, 2 was dropped (its 7 jobs are not taken off), 4 is new with 1 job,
    # 3 did nothing.
    assert autovacuum_jobs(before, {1: 6, 3: 1, 4: 1}) == 3
    # A table whose counters were reset reads lower: nothing, not a negative count.
    assert autovacuum_jobs(before, {1: 0, 2: 7, 3: 1}) == 0
    assert autovacuum_jobs({}, {}) == 0


@pytest.mark.postgres
def test_autovacuum_during_a_sample_is_recorded_and_said(tmp_path: Path) -> None:
    """A server whose autovacuum looks every second, a table it analyzes after 10 changed
    rows: the samples record the autoanalyze runs on the table, and the unit of work says
    that background work ran in the measured window. A temporary table made and dropped in
    each transaction churns the system catalogs, which autovacuum processes too: the
    database-wide count holds those jobs as well (they commit like the table's)."""
    from conftest import throwaway_postgres
    from wannabet.backends.postgresql.work import AUTOVACUUM_RAN

    with throwaway_postgres(settings={"autovacuum_naptime": "1s"}) as server:
        server.psql(
            "CREATE TABLE av (id serial PRIMARY KEY, v int) WITH ("
            " autovacuum_analyze_threshold = 10, autovacuum_analyze_scale_factor = 0)"
        )
        script = "\n".join(
            ("INSERT INTO av (v) VALUES (1);", "CREATE TEMP TABLE s (a int);", "DROP TABLE s;")
        )
        text = _one_type_toml("av", script, sessions=1, duration="2s")
        (tmp_path / "exp.toml").write_text(text.replace("samples = 2", "samples = 3"))
        store = Store(tmp_path / "r.duckdb")
        out = run_experiment(
            load_experiment(tmp_path / "exp.toml"),
            target=parse_target(server.url),
            store=store,
            engine=NativeEngine(),
        )
    docs = stats_of(store, out.run_id)
    runs = [
        int(t.get("autoanalyze_count") or 0)
        for doc in docs
        for t in doc["postgres"]["tables"]
        if t["relation"] == "av"
    ]
    # Autovacuum's launcher visits the database every second; 6 s of inserts see it run.
    assert sum(runs) >= 1, runs
    # The workload's own table is one of the jobs; the catalogs (pg_class, pg_attribute, ...)
    # the temporary tables churn are the others, which no user-table figure shows.
    jobs = [doc["postgres"]["autovacuum"]["jobs"] for doc in docs]
    assert all(j >= r for j, r in zip(jobs, runs, strict=True)), (jobs, runs)
    assert sum(jobs) > sum(runs), (jobs, runs)
    [u] = unit_of_work_for_run(store, out.run_id)
    assert AUTOVACUUM_RAN in u.notes, u.notes


@pytest.mark.postgres
def test_ctrl_c_while_sessions_connect_to_a_frozen_postmaster_ends_the_run_promptly(
    fresh_postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    """The postmaster alone stopped (SIGSTOP): running backends answer, but a sample's new
    sessions wait on their connect, whose timeout (10 s) Ctrl-C used to wait out before the
    engine looked at it; the run then ended "failed" rather than "interrupted"."""
    import contextlib
    import signal

    from wannabet.errors import StoreError

    (tmp_path / "exp.toml").write_text(FROZEN_TOML)
    results = tmp_path / "r.duckdb"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    command = [sys.executable, "-m", "wannabet", "run", str(tmp_path / "exp.toml")]
    command += ["--target", fresh_postgres.url, "--results", str(results)]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    with proc:
        store = Store(results)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            with contextlib.suppress(StoreError):
                if results.exists() and store.run().samples >= 2:
                    break
        assert proc.poll() is None, "the run ended before it was interrupted"
        postmaster = int((fresh_postgres.data / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGSTOP)
        try:
            time.sleep(2.5)  # the next sample's sessions are now waiting on their connect
            proc.send_signal(signal.SIGINT)
            t0 = time.monotonic()
            _, err = proc.communicate(timeout=60)
            took = time.monotonic() - t0
        finally:
            os.kill(postmaster, signal.SIGCONT)
    assert proc.returncode == 130, err
    assert took < 5, (took, err)
    info = store.run()
    assert info.status == "interrupted", info
    assert f"kept {info.samples} finished samples" in err
