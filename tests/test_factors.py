"""Factors over more than SQL (issue #14): sessions and rate as factors, and per-level tables that
set SQL, sessions, rate or the transactions themselves; each checked as a real run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from wannabet.backends import parse_target
from wannabet.design import conditions
from wannabet.engine import NativeEngine
from wannabet.errors import SpecError
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres
from wannabet.verdicts import ComparisonOptions, comparison_documents

SWEEP = textwrap.dedent(
    """\
    name = "sweep"
    [workload]
    [[workload.transactions]]
    name = "read"
    script = "SELECT 1;"
    [[factors]]
    name = "sessions"
    levels = [1, 2, 4]
    sessions = "{level}"
    [sampling]
    samples = 2
    duration = "0.3s"
    warmup = "0s"
    seed = 1
    """
)

A_VS_B = textwrap.dedent(
    """\
    name = "a-vs-b"
    [setup]
    sql = '''
    DROP TABLE IF EXISTS t;
    CREATE TABLE t (id INTEGER PRIMARY KEY, x INTEGER NOT NULL);
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
    INSERT INTO t SELECT i, i % 100 FROM n;
    '''
    [workload]
    sessions = 1
    [[workload.transactions]]
    name = "ping"
    weight = 1
    script = "SELECT 1;"
    [[factors]]
    name = "query"
    [factors.levels.point]
    transactions = [
      { name = "query", script = "SELECT x FROM t WHERE id = 7;" },
      { name = "ping", script = "SELECT 1;" },
    ]
    [factors.levels.scan]
    transactions = [{ name = "query", script = "SELECT sum(x) FROM t WHERE x > 50;" }]
    [sampling]
    # Six samples a condition: one disturbed sample on a busy machine still leaves the rank
    # test below 0.05 (four gave p = 0.029 only when they did not overlap at all).
    samples = 6
    duration = "0.2s"
    warmup = "0s"
    seed = 2
    """
)


def run(tmp_path: Path, text: str, target: str | None = None) -> tuple[Store, int]:
    store = Store(tmp_path / "r.duckdb")
    outcome = run_experiment(
        parse_experiment(text, file="e.toml"),
        target=parse_target(target or f"sqlite:///{tmp_path}/t.db"),
        store=store,
        engine=NativeEngine(),
    )
    assert outcome.status == "complete"
    return store, outcome.run_id


def test_sessions_as_a_factor_runs_each_level_with_its_sessions(tmp_path: Path) -> None:
    store, run_id = run(tmp_path, SWEEP)
    with store.read() as con:
        used = dict(
            con.execute(
                "SELECT c.label, count(DISTINCT t.session) FROM transactions t"
                " JOIN samples s USING (run_id, sample_id)"
                " JOIN conditions c USING (run_id, condition_id) GROUP BY c.label"
            ).fetchall()
        )
    assert used == {"sessions=1": 1, "sessions=2": 2, "sessions=4": 4}
    summary = {c.condition: c for c in store.condition_summaries(run_id)}
    assert all(summary[f"sessions={n}"].transactions > 0 for n in (1, 2, 4))


def test_per_level_transactions_compare_query_a_with_query_b(tmp_path: Path) -> None:
    store, run_id = run(tmp_path, A_VS_B)
    with store.read() as con:
        types = con.execute(
            "SELECT txn_type, name FROM transaction_types ORDER BY txn_type"
        ).fetchall()
        ran = con.execute(
            "SELECT c.label, t.txn_type, count(*) FROM transactions t"
            " JOIN samples s USING (run_id, sample_id)"
            " JOIN conditions c USING (run_id, condition_id) GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    # The run's types: every name a condition runs, first seen first; the scan level runs
    # only its query, the point level its query and the ping.
    assert [name for _, name in types] == ["query", "ping"]
    by_label: dict[str, set[int]] = {}
    for label, txn, _ in ran:
        by_label.setdefault(label, set()).add(txn)
    assert by_label == {"query=point": {0, 1}, "query=scan": {0}}
    [doc] = comparison_documents(store, [run_id], ComparisonOptions(txn=("query",), stat="median"))
    [pair] = doc["comparisons"]
    assert pair["condition"] == "query=scan" and pair["verdict"] == "slower"


def test_an_index_written_as_per_level_sql_makes_lookups_faster(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    text = textwrap.dedent(
        """\
        name = "index"
        [setup]
        sql = '''
        DROP TABLE IF EXISTS items;
        CREATE TABLE items (id bigserial PRIMARY KEY, code integer NOT NULL, payload text);
        INSERT INTO items (code, payload) SELECT g, 'x' FROM generate_series(1, 20000) g;
        ANALYZE items;
        '''
        [workload]
        sessions = 2
        [[workload.transactions]]
        name = "lookup"
        script = '''
        \\set c random(1, 20000)
        SELECT payload FROM items WHERE code = :c;
        '''
        [[factors]]
        name = "index"
        [factors.levels.none]
        system_sql = "DROP INDEX IF EXISTS items_code"
        [factors.levels.btree]
        system_sql = "CREATE INDEX IF NOT EXISTS items_code ON items (code)"
        [sampling]
        samples = 4
        duration = "0.5s"
        warmup = "0.1s"
        seed = 3
        """
    )
    store, run_id = run(tmp_path, text, postgres.url)
    [doc] = comparison_documents(store, [run_id], ComparisonOptions())
    [pair] = doc["comparisons"]
    assert pair["condition"] == "index=btree" and pair["baseline"] == "index=none"
    assert pair["verdict"] == "faster" and pair["delta_pct"] < -50


def test_levels_set_sessions_rate_and_sql_per_level() -> None:
    text = SWEEP.replace(
        'levels = [1, 2, 4]\nsessions = "{level}"',
        textwrap.dedent(
            """\
            [factors.levels.light]
            sessions = 1
            rate = 50
            session_sql = "PRAGMA cache_size = 100"
            [factors.levels.heavy]
            sessions = 3
            system_sql = ["PRAGMA optimize", "PRAGMA wal_checkpoint"]
            """
        ),
    )
    factors = parse_experiment(text, file="e.toml").factors
    light, heavy = conditions(factors)
    assert light.label == "sessions=light" and heavy.label == "sessions=heavy"
    assert (light.sessions, light.rate, light.session_sql) == (
        1,
        50.0,
        ("PRAGMA cache_size = 100",),
    )
    assert (heavy.sessions, heavy.rate, heavy.system_sql) == (
        3, None, ("PRAGMA optimize", "PRAGMA wal_checkpoint")
    )  # fmt: skip


@pytest.mark.parametrize(
    ("change", "key", "fragment"),
    [
        ('sessions = "{level}"', "factors[0].sessions", None),  # valid: the sweep itself
        ('sessions = "4"', "factors[0].sessions", 'must be "{level}"'),
        ('sessions = "{level}"\nrate = "{level}"', "factors[0]", None),
        ("levels = [1, 2, 4]", "factors[0]", "changes nothing"),
    ],
)
def test_factor_keys_are_validated_with_their_line(
    change: str, key: str, fragment: str | None
) -> None:
    text = SWEEP.replace('sessions = "{level}"', change.replace("levels = [1, 2, 4]", ""))
    if fragment is None:
        parse_experiment(text, file="e.toml")
        return
    with pytest.raises(SpecError) as err:
        parse_experiment(text, file="e.toml")
    assert err.value.key == key and fragment in str(err.value), str(err.value)
    assert err.value.line is not None


@pytest.mark.parametrize(
    ("levels", "key", "fragment"),
    [
        ('levels = ["a", "b"]', "factors[0].levels", "level 'a' is not a sessions value"),
        ("levels = [1, 0]", "factors[0].levels", "out of range for sessions"),
    ],
)
def test_a_sweep_level_must_be_a_value(levels: str, key: str, fragment: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_experiment(SWEEP.replace("levels = [1, 2, 4]", levels), file="e.toml")
    assert err.value.key == key and fragment in str(err.value)


def test_two_factors_cannot_both_set_sessions_and_levels_check_their_keys() -> None:
    second = '[[factors]]\nname = "more"\nlevels = [8]\nsessions = "{level}"\n[sampling]'
    with pytest.raises(SpecError, match="factors 'sessions' and 'more' both set sessions"):
        parse_experiment(SWEEP.replace("[sampling]", second), file="e.toml")
    misspelt = A_VS_B.replace("[factors.levels.scan]", "[factors.levels.scan]\nsesions = 2")
    with pytest.raises(SpecError) as err:
        parse_experiment(misspelt, file="e.toml")
    assert err.value.key == "factors[0].levels.scan.sesions"
    assert "did you mean 'sessions'?" in str(err.value) and err.value.line is not None
    refused = A_VS_B.replace("SELECT x FROM t WHERE id = 7;", "\\\\gsett x")
    with pytest.raises(SpecError) as err:
        parse_experiment(refused, file="e.toml")
    assert err.value.key == "factors[0].levels.point.transactions[0].script"


def test_sessions_on_the_command_line_are_refused_when_levels_set_them() -> None:
    from wannabet.runner import with_overrides

    experiment = parse_experiment(SWEEP, file="e.toml")
    with pytest.raises(SpecError, match="would win over --sessions 3") as caught:
        with_overrides(experiment, sessions=3)
    assert caught.value.key == "--sessions"
    plain = parse_experiment(
        SWEEP.replace('sessions = "{level}"', 'session_sql = "PRAGMA cache_size = {level}"'),
        file="e.toml",
    )
    assert with_overrides(plain, sessions=3).workload.sessions == 3
