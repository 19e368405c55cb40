"""``fetch_size`` (issue #14): a result read so many rows per round trip through a PostgreSQL
portal, as JDBC's setFetchSize and psycopg's named cursors read it, inside the script's own
transaction or in one of the engine's around the statement."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from wannabet.backends import parse_target
from wannabet.engine import FakeEngine, NativeEngine, SampleRequest, compile_program
from wannabet.errors import SpecError
from wannabet.model import QueryProtocol
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres


def received(
    postgres: ThrowawayPostgres, script: str, fetch_size: int, protocol: QueryProtocol
) -> int:
    """Bytes one transaction of ``script`` received from the server."""
    spec = f"name = 'e'\n[[workload.transactions]]\nscript = '''{script}'''\n"
    request = SampleRequest(
        program=compile_program(parse_experiment(spec, file="e").workload, "dollar"),
        sessions=1,
        session_sql=(),
        duration_ns=0,
        max_transactions=1,
        seed=1,
        protocol=protocol,
        fetch_size=fetch_size,
    )
    result = NativeEngine().run_sample(parse_target(postgres.url), request)
    assert int(result.summaries.statuses["count"].sum()) == 1
    assert result.error_messages == {}
    return int(result.counters["bytes_received"])


@pytest.mark.parametrize("protocol", ["prepared", "extended"])
def test_each_round_trip_of_a_fetch_is_one_more_execute(
    postgres: ThrowawayPostgres, protocol: QueryProtocol
) -> None:
    script = "SELECT g FROM generate_series(1, 1000) g;"
    by_10 = received(postgres, script, 10, protocol)
    by_100 = received(postgres, script, 100, protocol)
    # 1,000 rows 10 at a time take 90 round trips more than 100 at a time, and each of them
    # costs exactly a PortalSuspended (5 bytes) and a ReadyForQuery (6 bytes) more.
    assert by_10 - by_100 == 90 * 11
    # All at once: no portal, no BEGIN and COMMIT around it.
    assert received(postgres, script, 0, protocol) < by_100


def test_a_fetch_inside_the_scripts_transaction_leaves_it_open(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    text = textwrap.dedent(
        """\
        name = "fetch"
        [setup]
        sql = "DROP TABLE IF EXISTS kept; CREATE TABLE kept (what text, n int)"
        [workload]
        fetch_size = 7
        [[workload.transactions]]
        name = "inside"
        script = '''
        BEGIN;
        INSERT INTO kept VALUES ('rolled back', 0);
        SELECT count(*) AS n FROM generate_series(1, 50) \\gset
        SELECT g AS last FROM generate_series(1, 50) g \\aset
        INSERT INTO kept VALUES ('rolled back', :n::int + :last::int);
        ROLLBACK;
        '''
        [[workload.transactions]]
        name = "outside"
        script = '''
        SELECT g AS last FROM generate_series(1, 20) g \\aset
        INSERT INTO kept VALUES ('committed', :last::int);
        '''
        [sampling]
        samples = 1
        transactions = 40
        warmup = "0s"
        """
    )
    store = Store(tmp_path / "r.duckdb")
    target = parse_target(postgres.url)
    outcome = run_experiment(
        parse_experiment(text, file="f.toml"), target=target, store=store, engine=NativeEngine()
    )
    assert outcome.status == "complete"
    (summary,) = store.condition_summaries(outcome.run_id)
    assert summary.errors == 0 and summary.transactions == 40
    rows = NativeEngine().query(target, "SELECT what, n, count(*) FROM kept GROUP BY 1, 2")
    # The script's ROLLBACK undid its inserts: the fetches did not commit its transaction.
    # Outside one, each fetch ran in the engine's own and every row of the result arrived.
    assert len(rows) == 1 and rows[0][:2] == ("committed", "20"), rows
    assert 0 < int(rows[0][2]) < 40


def run_fake(tmp_path: Path, text: str) -> None:
    run_experiment(
        parse_experiment(text, file="e.toml"),
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=Store(tmp_path / "r.duckdb"),
        engine=FakeEngine(),
    )


def test_fetch_size_is_refused_where_it_would_change_nothing(tmp_path: Path) -> None:
    text = 'name = "e"\n[workload]\nfetch_size = 10\n[[workload.transactions]]\nscript = "SELECT 1"'
    with pytest.raises(SpecError, match="sqlite reads a result in the client's process"):
        run_fake(tmp_path, text)


def test_fetch_size_with_the_simple_protocol_is_refused(postgres: ThrowawayPostgres) -> None:
    text = textwrap.dedent(
        """\
        name = "e"
        [workload]
        protocol = "simple"
        [[workload.transactions]]
        script = "SELECT 1;"
        [[factors]]
        name = "fetch"
        fetch_size = "{level}"
        levels = [10, 1000]
        """
    )
    experiment = parse_experiment(text, file="e.toml")
    assert [s.fetch_size for s in experiment.factors[0].settings] == [10, 1000]
    with pytest.raises(SpecError, match="the simple protocol returns a whole result") as info:
        run_experiment(
            experiment,
            target=parse_target(postgres.url),
            store=Store(Path("/nonexistent/r.duckdb")),
            engine=FakeEngine(),
        )
    assert "fetch_size (fetch=10)" in str(info.value)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("fetch_size = 0", "workload.fetch_size: must be at least 1"),
        ('fetch_size = "many"', "workload.fetch_size: must be a whole number"),
    ],
)
def test_a_bad_fetch_size_is_named(line: str, message: str) -> None:
    text = f'name = "e"\n[workload]\n{line}\n[[workload.transactions]]\nscript = "SELECT 1;"'
    with pytest.raises(SpecError, match=message):
        parse_experiment(text, file="e.toml")
