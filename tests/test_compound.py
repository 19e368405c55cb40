"""pgbench's compound statements (issue #14): statements joined with ``\\;`` are sent as one
query with the simple protocol, as pgbench sends them."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from wannabet.backends import parse_target
from wannabet.engine import FakeEngine, NativeEngine
from wannabet.errors import SpecError
from wannabet.runner import dry_run_experiment, run_experiment
from wannabet.script import ScriptError, parse_script
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres

COMPOUND = textwrap.dedent(
    """\
    name = "compound"
    [setup]
    sql = "DROP TABLE IF EXISTS joined; CREATE TABLE joined (session int, step int, note text)"
    [workload]
    sessions = 2
    protocol = "simple"
    [[workload.transactions]]
    name = "two-in-one"
    script = '''
    \\set step 1
    INSERT INTO joined VALUES (:client_id, :step, 'a;b') \\;
    INSERT INTO joined VALUES (:client_id, :step + 1, 'c\\;d');
    '''
    [sampling]
    samples = 2
    duration = "0.3s"
    warmup = "0s"
    """
)


def test_joined_statements_parse_as_one_compound_statement() -> None:
    script = parse_script("SELECT 'x;y' \\; SELECT 2 \\;\nSELECT 3;\nSELECT 4;", known_variables=())
    first, second = script.statements
    assert first.compound and first.text == "SELECT 'x;y' ; SELECT 2 ;\nSELECT 3"
    assert not second.compound and second.text == "SELECT 4"
    with pytest.raises(ScriptError, match="\\\\gset after statements joined with"):
        parse_script("SELECT 1 \\; SELECT 2 AS n \\gset\nSELECT :n;")


def test_joined_statements_run_as_one_query_with_their_values(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    store = Store(tmp_path / "r.duckdb")
    target = parse_target(postgres.url)
    outcome = run_experiment(
        parse_experiment(COMPOUND, file="c.toml"),
        target=target,
        store=store,
        engine=NativeEngine(),
    )
    assert outcome.status == "complete"
    (summary,) = store.condition_summaries(outcome.run_id)
    assert summary.errors == 0 and summary.transactions > 10
    rows = NativeEngine().query(
        target, "SELECT step, note, count(*), count(DISTINCT session) FROM joined GROUP BY 1, 2"
    )
    # Both statements of every transaction, each with its value; quoted text kept as written
    # (a \; inside a string literal is the string's).
    n = str(summary.transactions)
    assert sorted(rows) == [("1", "a;b", n, "2"), ("2", "c\\;d", n, "2")]


def test_joined_statements_are_only_checked_by_the_server_when_they_run(
    postgres: ThrowawayPostgres,
) -> None:
    findings = dry_run_experiment(
        parse_experiment(COMPOUND, file="c.toml"), parse_target(postgres.url), NativeEngine()
    )
    assert [(f.error, "cannot be prepared on their own" in f.message) for f in findings] == [
        (False, True)
    ]
    assert "c.toml:11: transaction 'two-in-one'" in findings[0].message


def test_joined_statements_need_the_simple_protocol_and_postgresql(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    def run(text: str, url: str) -> None:
        run_experiment(
            parse_experiment(text, file="c.toml"),
            target=parse_target(url),
            store=Store(tmp_path / "r.duckdb"),
            engine=FakeEngine(),
        )

    prepared = COMPOUND.replace('protocol = "simple"', 'protocol = "prepared"')
    with pytest.raises(SpecError, match='only protocol = "simple" sends') as info:
        run(prepared, postgres.url)
    assert str(info.value).startswith("c.toml:11:")
    with pytest.raises(SpecError, match="sqlite cannot send as one query"):
        run(COMPOUND, f"sqlite:///{tmp_path}/t.db")
