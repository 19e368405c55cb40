"""The runner's bookkeeping, with the fake engine (no database behaviour is claimed here)."""

from __future__ import annotations

import dataclasses
import os
import signal
import textwrap
import time
from pathlib import Path

import pytest

from wannabet import runner
from wannabet.backends import parse_target
from wannabet.design import schedule
from wannabet.engine import FakeEngine, Progress, SampleRequest, SampleResult
from wannabet.errors import ConnectError, Interrupted, SpecError
from wannabet.runner import RunWarning, run_experiment, with_overrides
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.targets import Target

SPEC = textwrap.dedent(
    """\
    name = "fake"
    [setup]
    sql = "CREATE TABLE t (x int)"
    [workload]
    sessions = 3
    session_sql = "PRAGMA cache_size = 1000"
    [[workload.transactions]]
    script = "SELECT 1;"
    [[factors]]
    name = "mode"
    levels = ["a", "b"]
    session_sql = "SET mode = {level}"
    system_sql = "ALTER SYSTEM SET mode = {level}"
    [sampling]
    samples = 4
    duration = "1s"
    warmup = "0s"
    seed = 11
    """
)


def run(tmp_path: Path, engine: FakeEngine) -> tuple[Store, int]:
    store = Store(tmp_path / "r.duckdb")
    exp = parse_experiment(SPEC, file="fake.toml")
    outcome = run_experiment(
        exp, target=parse_target(f"sqlite:///{tmp_path}/t.db"), store=store, engine=engine
    )
    return store, outcome.run_id


def test_every_sample_is_stored_in_schedule_order(tmp_path: Path) -> None:
    store, run_id = run(tmp_path, FakeEngine(transactions_per_sample=50))
    info = store.run(run_id)
    assert info.status == "complete"
    assert info.samples == 8 and info.transactions == 400
    samples = store.samples(run_id)
    expected = schedule(2, 4, "randomized-blocks", 11)
    assert [(s["block"], s["condition_id"]) for s in samples] == [
        (e.block, e.condition_index) for e in expected
    ]
    assert info.settings["schedule"] == [[e.block, e.condition_index] for e in expected]
    assert info.schedule == [(s["block"], s["condition_id"]) for s in samples]


def test_a_runs_rates_and_sessions_per_condition_are_read_back(tmp_path: Path) -> None:
    text = textwrap.dedent(
        """\
        name = "sweep"
        [workload]
        sessions = 3
        [[workload.transactions]]
        script = "SELECT 1;"
        [[factors]]
        name = "load"
        [factors.levels.closed]
        sessions = 5
        [factors.levels.open]
        rate = 200
        [sampling]
        samples = 1
        duration = "0.2s"
        warmup = "0s"
        """
    )
    store = Store(tmp_path / "r.duckdb")
    outcome = run_experiment(
        parse_experiment(text, file="sweep.toml"),
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=store,
        engine=FakeEngine(transactions_per_sample=10),
    )
    info = store.run(outcome.run_id)
    assert dict(info.rates) == {"load=open": 200}
    assert info.sessions_of("load=closed") == 5
    assert info.sessions_of("load=open") == 3  # the workload's
    assert info.sessions_of("nope") == 3


def test_setup_and_system_sql_run_when_the_condition_changes(tmp_path: Path) -> None:
    engine = FakeEngine(transactions_per_sample=10)
    run(tmp_path, engine)
    assert engine.executed[0] == "CREATE TABLE t (x int)"
    system = engine.executed[1:]
    order = [e.condition_index for e in schedule(2, 4, "randomized-blocks", 11)]
    changes = [c for i, c in enumerate(order) if i == 0 or order[i - 1] != c]
    assert system == [f"ALTER SYSTEM SET mode = {'ab'[c]}" for c in changes]


def test_session_sql_reaches_the_engine(tmp_path: Path) -> None:
    engine = FakeEngine(transactions_per_sample=400, slowdown={"SET mode = b": 3.0})
    store, run_id = run(tmp_path, engine)
    a, b = store.condition_summaries(run_id)
    assert b.latency_ms["p50"] / a.latency_ms["p50"] == pytest.approx(3.0, rel=0.1)


def test_interrupt_keeps_finished_samples(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    exp = parse_experiment(SPEC, file="fake.toml")
    with pytest.raises(Interrupted, match="kept 3 finished samples"):
        run_experiment(
            exp,
            target=parse_target(f"sqlite:///{tmp_path}/t.db"),
            store=store,
            engine=FakeEngine(transactions_per_sample=20, interrupt_at_sample=3),
        )
    info = store.run()
    assert info.status == "interrupted"
    assert info.samples == 3 and info.transactions == 60


def test_unreachable_target_writes_no_run(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    exp = parse_experiment(SPEC, file="fake.toml")
    with pytest.raises(ConnectError):
        run_experiment(
            exp,
            target=parse_target(f"sqlite:///{tmp_path}/t.db"),
            store=store,
            engine=FakeEngine(unreachable=True),
        )
    assert not store.path.exists() or store.runs() == []


def test_overrides() -> None:
    exp = with_overrides(
        parse_experiment(SPEC, file="f"),
        samples=2,
        duration_s=0.5,
        sessions=1,
        seed=3,
        warmup_s=0.1,
    )
    assert (exp.sampling.samples, exp.sampling.duration_s, exp.sampling.seed) == (2, 0.5, 3)
    assert exp.sampling.warmup_s == 0.1 and exp.workload.sessions == 1


def test_record_reaches_the_engine_and_the_runs_settings(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    exp = with_overrides(parse_experiment(SPEC, file="fake.toml"), record="0.25", warmup_s=0.5)
    requests: list[SampleRequest] = []
    results: list[SampleResult] = []

    class Recording(FakeEngine):
        def run_sample(
            self, target: Target, request: SampleRequest, progress: Progress | None = None
        ) -> SampleResult:
            requests.append(request)
            results.append(super().run_sample(target, request, progress))
            return results[-1]

    outcome = run_experiment(
        exp,
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=store,
        engine=Recording(transactions_per_sample=400),
    )
    info = store.run(outcome.run_id)
    assert info.status == "complete" and info.samples == 8
    assert info.settings["record"] == 0.25
    # The engine's time budget is warm-up + duration; it marks the warm-up's transactions.
    assert {(r.record, r.warmup_ns, r.duration_ns) for r in requests} == {
        (0.25, 500_000_000, 1_500_000_000)
    }
    # A seeded quarter of the 8 × 400 transactions as rows (binomial sd 24.5); the summaries
    # count all of them.
    rows = sum(r.count for r in results)
    assert 8 * 400 * 0.25 - 120 < rows < 8 * 400 * 0.25 + 120
    assert sum(int(r.summaries.statuses["count"].sum()) for r in results) == 8 * 400


def test_auto_keeps_at_most_max_rows_per_sample_and_stores_the_share_kept(
    tmp_path: Path,
) -> None:
    store = Store(tmp_path / "r.duckdb")
    exp = parse_experiment(SPEC, file="fake.toml")
    assert exp.sampling.record_setting == "auto"  # the default
    exp = dataclasses.replace(exp, sampling=dataclasses.replace(exp.sampling, max_rows=100))
    outcome = run_experiment(
        exp,
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=store,
        engine=FakeEngine(transactions_per_sample=400),
    )
    assert store.run(outcome.run_id).settings["record"] == "auto"
    with store.read() as con:
        rows = con.execute(
            "SELECT sample_id, count(*) FROM transactions GROUP BY sample_id"
        ).fetchall()
        recorded = {r[0] for r in con.execute("SELECT recorded FROM samples").fetchall()}
    assert len(rows) == 8 and {n for _, n in rows} == {100}
    assert recorded == {0.25}  # 100 of 400: what the analysis needs to know


def test_a_run_that_stores_no_rows_still_counts_its_successes(tmp_path: Path) -> None:
    # The runner's own bookkeeping (TPS, "no transaction succeeded") reads the summaries, which
    # count every transaction: with no rows it must not stop as if everything failed.
    store = Store(tmp_path / "r.duckdb")
    exp = with_overrides(parse_experiment(SPEC, file="fake.toml"), record="none")
    finished: list[float] = []

    class Observer(runner.SilentObserver):
        def sample_finished(self, sample: object, result: object, tps: float) -> None:
            finished.append(tps)

    outcome = run_experiment(
        exp,
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=store,
        engine=FakeEngine(transactions_per_sample=50),
        observer=Observer(),
    )
    assert outcome.status == "complete" and not outcome.failed_conditions
    assert store.run(outcome.run_id).settings["record"] == "none"
    assert len(finished) == 8 and all(tps > 0 for tps in finished)


def test_a_run_projected_to_store_many_rows_warns_once_after_its_first_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "MANY_ROWS", 8 * 50 - 1)
    warnings: list[RunWarning] = []
    store = Store(tmp_path / "r.duckdb")
    every_row = with_overrides(parse_experiment(SPEC, file="fake.toml"), record="all")
    run_experiment(
        every_row,
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=store,
        engine=FakeEngine(transactions_per_sample=50),
        warn=warnings.append,
    )
    assert len(warnings) == 1
    assert "about 400 transaction rows (50 in its first sample × 8 samples)" in str(warnings[0])
    assert '[sampling] record = "auto"' in warnings[0].advice and '"none"' in warnings[0].advice

    # At the threshold, or with fewer rows stored, no warning; nor with the default "auto",
    # whose rows are bounded.
    monkeypatch.setattr(runner, "MANY_ROWS", 8 * 50)
    warnings.clear()
    run_experiment(
        every_row,
        target=parse_target(f"sqlite:///{tmp_path}/t2.db"),
        store=store,
        engine=FakeEngine(transactions_per_sample=50),
        warn=warnings.append,
    )
    assert warnings == []


def test_a_bad_record_option_names_the_option_and_an_example() -> None:
    with pytest.raises(SpecError, match=r"--record.*got \"most\".*e\.g\. --record 0\.01"):
        with_overrides(parse_experiment(SPEC, file="f"), record="most")


class _InterruptedWhileConnecting(FakeEngine):
    """Ctrl-C arrives while a sample's sessions wait to connect to a server that does not
    answer; the connect then fails on its own timeout."""

    def run_sample(
        self, target: Target, request: SampleRequest, progress: Progress | None = None
    ) -> SampleResult:
        if self.samples_run == 2:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler runs: Ctrl-C is recorded
            raise ConnectError(f"cannot connect to {target.display}: timed out after 10 s")
        return super().run_sample(target, request, progress)


def test_an_engine_error_after_ctrl_c_ends_the_run_as_interrupted(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    exp = parse_experiment(SPEC, file="fake.toml")
    with pytest.raises(Interrupted, match="kept 2 finished samples"):
        run_experiment(
            exp,
            target=parse_target(f"sqlite:///{tmp_path}/t.db"),
            store=store,
            engine=_InterruptedWhileConnecting(transactions_per_sample=20),
        )
    info = store.run()
    assert info.status == "interrupted" and info.samples == 2


def test_a_failing_setup_statement_is_named_by_its_file_line(tmp_path: Path) -> None:
    from wannabet.testing.cli import wannabet

    file = tmp_path / "bad-setup.toml"
    file.write_text(
        'name = "x"\n'
        "[setup]\n"
        'sql = """\n'
        "CREATE TABLE ok_1 (x int);\n"
        "\n"
        "CREATE TABLE t t t (x int);\n"
        '"""\n'
        '[[workload.transactions]]\nname = "q"\nscript = "SELECT 1"\n'
    )
    done = wannabet(
        "run",
        str(file),
        "-t",
        f"sqlite:///{tmp_path / 'db.sqlite'}",
        "-r",
        str(tmp_path / "r.duckdb"),
    )
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert f"{file}:6: [setup] sql, statement 2 ('CREATE TABLE t t t (x int)') failed" in line, line
