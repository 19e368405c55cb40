"""Recorded results (issue #14): a transaction with ``result = true`` records the first column
of its last statement, each sample keeps the results' count and sums, and ``compare --stat
result`` judges the accuracy of one condition's answer against another's (the seed 001
experiment: an exact COUNT(DISTINCT) against an approximate one)."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from wannabet.analysis.statistic import ConditionSamples, compare_statistic
from wannabet.backends import parse_target
from wannabet.cli import app
from wannabet.engine import NativeEngine
from wannabet.errors import QueryError, SpecError
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres


def run(text: str, target: str, tmp_path: Path) -> tuple[Store, int]:
    store = Store(tmp_path / "r.duckdb")
    outcome = run_experiment(
        parse_experiment(text, file="e.toml"),
        target=parse_target(target),
        store=store,
        engine=NativeEngine(),
    )
    assert outcome.status == "complete"
    return store, outcome.run_id


def test_each_samples_results_add_up_to_what_the_transactions_returned(tmp_path: Path) -> None:
    text = textwrap.dedent(
        """\
        name = "results"
        [setup]
        sql = "CREATE TABLE drawn (x INTEGER)"
        [workload]
        sessions = 2
        # No fsync per commit: a busy disk must not leave the samples with a handful of draws.
        session_sql = ["PRAGMA synchronous = OFF"]
        [[workload.transactions]]
        name = "draw"
        result = true
        script = '''
        \\set x random(1, 1000)
        INSERT INTO drawn VALUES (:x);
        SELECT :x, 'not this column';
        '''
        [[workload.transactions]]
        name = "other"
        script = "SELECT 7;"
        [sampling]
        samples = 2
        duration = "0.3s"
        warmup = "0.1s"
        """
    )
    db = tmp_path / "t.db"
    store, run_id = run(text, f"sqlite:///{db}", tmp_path)
    with store.read() as con:
        got = con.execute(
            "SELECT t.name, sum(r.count), sum(r.sum), sum(r.sumsq), min(r.min), max(r.max)"
            " FROM sample_results r JOIN transaction_types t USING (run_id, txn_type)"
            " WHERE r.run_id = ? GROUP BY t.name",
            [run_id],
        ).fetchall()
        draws = con.execute(
            "SELECT sum(count) FROM sample_statuses st JOIN transaction_types t"
            " USING (run_id, txn_type) WHERE st.run_id = ? AND t.name = 'draw' AND status = 'ok'",
            [run_id],
        ).fetchone()
    with sqlite3.connect(db) as sq:
        n, total, squares, low, high = sq.execute(
            "SELECT count(*), sum(x), sum(x * x), min(x), max(x) FROM drawn"
        ).fetchone()
    # Only the transaction that records its result has results, and every one of them.
    assert [row[0] for row in got] == ["draw"]
    assert got[0][1:] == (n, float(total), float(squares), float(low), float(high))
    assert draws is not None and draws[0] == n > 100


APPROXIMATE = textwrap.dedent(
    """\
    name = "count-distinct"
    [setup]
    sql = '''
    CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER);
    WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 20000)
    INSERT INTO t SELECT i, i % 50 FROM g;
    '''
    [[workload.transactions]]
    script = "SELECT 1;"
    [[factors]]
    name = "method"
    [factors.levels.exact]
    transactions = [{ name = "distinct", result = true, script = "SELECT count(DISTINCT v) FROM t"}]
    [factors.levels.scaled]
    # A 10% sample scaled up: right for a count of rows, ten times too high for distinct values
    transactions = [{ name = "distinct", result = true, script = '''
    SELECT count(DISTINCT v) * 10 FROM t WHERE abs(random()) % 10 = 0;
    ''' }]
    [sampling]
    samples = 4
    duration = "0.2s"
    warmup = "0s"
    """
)


def test_compare_stat_result_judges_the_answer_against_the_reference(tmp_path: Path) -> None:
    store, _ = run(APPROXIMATE, f"sqlite:///{tmp_path}/t.db", tmp_path)
    out = CliRunner().invoke(
        app,
        [
            "compare",
            "--results",
            str(store.path),
            "--stat",
            "result",
            "--baseline",
            "method=exact",
            "--format",
            "json",
        ],
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["stat"] == "result"
    means = {c["condition"]: c["mean"] for c in doc["conditions"]}
    assert means == {"method=exact": 50.0, "method=scaled": 500.0}
    (pair,) = doc["comparisons"]
    # Every sample sees all 50 values: a constant answer, ten times the exact one.
    assert pair["verdict"] == "higher"
    assert pair["delta_pct"] == pytest.approx(900.0)
    assert "is exact" in pair["note"]
    table = CliRunner().invoke(
        app, ["compare", "--results", str(store.path), "--stat", "result"], terminal_width=200
    )
    assert table.exit_code == 0 and "higher" in table.stdout


def test_compare_stat_result_without_results_says_what_to_set(tmp_path: Path) -> None:
    text = 'name = "e"\n[[workload.transactions]]\nscript = "SELECT 1;"\n'
    text += '[sampling]\nsamples = 2\nduration = "0.1s"\nwarmup = "0s"\n'
    store, _ = run(text, f"sqlite:///{tmp_path}/t.db", tmp_path)
    out = CliRunner().invoke(app, ["compare", "--results", str(store.path), "--stat", "result"])
    assert out.exit_code != 0
    assert "recorded no result" in out.output and "result = true" in out.output


def test_a_result_from_a_statement_without_columns_is_refused_before_the_sample(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    text = textwrap.dedent(
        """\
        name = "e"
        [setup]
        sql = "DROP TABLE IF EXISTS r; CREATE TABLE r (x int)"
        [[workload.transactions]]
        name = "write"
        result = true
        script = "SELECT 1; INSERT INTO r VALUES (1);"
        [sampling]
        samples = 1
        duration = "0.1s"
        """
    )
    with pytest.raises(QueryError, match="records its result, but its last statement"):
        run(text, postgres.url, tmp_path)
    assert NativeEngine().query(parse_target(postgres.url), "SELECT count(*) FROM r") == [("0",)]


@pytest.mark.parametrize(
    ("line", "script", "message"),
    [
        ('result = "yes"', "SELECT 1;", "result: must be true or false"),
        (
            "result = true",
            "\\\\copy t FROM generate_series(1, 10)",
            "has no SQL statement whose first column",
        ),
    ],
)
def test_a_bad_result_setting_is_named(line: str, script: str, message: str) -> None:
    text = f'name = "e"\n[[workload.transactions]]\n{line}\nscript = "{script}"\n'
    with pytest.raises(SpecError, match=message) as info:
        parse_experiment(text, file="e.toml")
    assert "workload.transactions[0].result" in str(info.value)


def samples_of(condition: str, means: list[float]) -> ConditionSamples:
    """One transaction per sample whose answer is the sample's mean."""
    k = len(means)
    return ConditionSamples(
        condition=condition,
        position=np.arange(k, dtype=np.int64),
        count=np.ones(k),
        sum_ms=np.asarray(means, dtype=float),
        sumsq_ms=np.asarray(means, dtype=float) ** 2,
    )


def test_an_estimate_is_tested_against_the_exact_answer_as_scipy_does() -> None:
    estimates = [101.0, 103.5, 99.0, 104.0, 102.5, 100.5, 103.0, 102.0]
    exact = samples_of("exact", [100.0] * 8)
    result = compare_statistic(
        [exact, samples_of("estimate", estimates)], stat="result", baseline="exact"
    )
    (pair,) = result.comparisons
    reference = stats.ttest_1samp(estimates, 100.0)
    assert pair.p_adjusted == pytest.approx(reference.pvalue, rel=1e-9)
    low, high = stats.t.interval(0.95, 7, loc=np.mean(estimates), scale=stats.sem(estimates))
    assert pair.delta is not None
    assert (pair.delta.low, pair.delta.high) == pytest.approx((low - 100.0, high - 100.0))
    assert pair.verdict == "inconclusive"  # +1.9%, its interval reaching into the ±2% ROPE
    # The other way round: the exact answer against a varying baseline, through 1 / x.
    flipped = compare_statistic(
        [samples_of("estimate", estimates), exact], stat="result", baseline="estimate"
    )
    (back,) = flipped.comparisons
    assert back.p_adjusted == pytest.approx(reference.pvalue, rel=1e-9)
    assert back.delta is not None
    assert (back.delta.low, back.delta.high) == pytest.approx(
        (100 * (100.0 / high - 1), 100 * (100.0 / low - 1))
    )
