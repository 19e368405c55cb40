"""pgbench's pipelines (issue #14): ``\\startpipeline``, ``\\syncpipeline`` and ``\\endpipeline``
send the statements between them without waiting for each other's results; what lies between
two syncs is one transaction, as in pgbench."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from wannabet.backends import parse_target
from wannabet.engine import FakeEngine, NativeEngine
from wannabet.errors import SpecError, TargetError
from wannabet.runner import run_experiment
from wannabet.script import ScriptError, parse_script
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres

PIPELINED = textwrap.dedent(
    """\
    name = "pipelines"
    [setup]
    sql = "DROP TABLE IF EXISTS piped; CREATE TABLE piped (txn bigint, step int)"
    [workload]
    sessions = 2
    [[workload.transactions]]
    name = "three"
    script = '''
    \\set txn random(1, 1000000000000)
    \\startpipeline
    INSERT INTO piped VALUES (:txn, 1);
    INSERT INTO piped VALUES (:txn, 2);
    \\syncpipeline
    \\set step 3
    INSERT INTO piped VALUES (:txn, :step);
    \\endpipeline
    SELECT count(*) FROM piped WHERE txn = :txn;
    '''
    [[factors]]
    name = "protocol"
    levels = ["extended", "prepared"]
    protocol = "{level}"
    [sampling]
    samples = 2
    duration = "0.3s"
    warmup = "0s"
    """
)


def test_every_pipelined_statement_runs_once_in_order_with_its_values(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    store = Store(tmp_path / "r.duckdb")
    target = parse_target(postgres.url)
    outcome = run_experiment(
        parse_experiment(PIPELINED, file="p.toml"),
        target=target,
        store=store,
        engine=NativeEngine(),
    )
    assert outcome.status == "complete"
    summaries = store.condition_summaries(outcome.run_id)
    assert all(s.errors == 0 for s in summaries)
    committed = sum(s.transactions for s in summaries)
    assert committed > 20
    engine = NativeEngine()
    # Each transaction left its three rows, steps 1, 2 and 3 (the \set between the syncs too).
    rows = engine.query(
        target,
        "SELECT count(*), count(DISTINCT txn), sum(step) FROM piped",
    )
    assert rows == [(str(3 * committed), str(committed), str(6 * committed))]


def test_a_failing_statement_aborts_its_pipeline_and_commits_nothing_of_it(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    text = textwrap.dedent(
        """\
        name = "pipeline-error"
        [setup]
        sql = "DROP TABLE IF EXISTS piped; CREATE TABLE piped (step int)"
        [[workload.transactions]]
        name = "fails"
        script = '''
        INSERT INTO piped VALUES (0);
        \\startpipeline
        INSERT INTO piped VALUES (1);
        SELECT 1 / 0;
        INSERT INTO piped VALUES (3);
        \\endpipeline
        '''
        [sampling]
        samples = 1
        transactions = 5
        warmup = "0s"
        """
    )
    store = Store(tmp_path / "r.duckdb")
    target = parse_target(postgres.url)
    # Every transaction fails, so the run stops after its sample, which is kept.
    with pytest.raises(TargetError, match="division by zero"):
        run_experiment(
            parse_experiment(text, file="e.toml"),
            target=target,
            store=store,
            engine=NativeEngine(),
        )
    (summary,) = store.condition_summaries(store.runs()[0].run_id)
    assert summary.errors == summary.transactions == 5
    # The statement before the pipeline committed on its own; nothing of the pipeline did.
    assert NativeEngine().query(target, "SELECT step, count(*) FROM piped GROUP BY 1") == [
        ("0", "5")
    ]


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("\\startpipeline\nSELECT 1;", "\\startpipeline without \\endpipeline"),
        ("SELECT 1;\n\\syncpipeline", "\\syncpipeline without \\startpipeline"),
        ("\\startpipeline\n\\startpipeline\nSELECT 1;\n\\endpipeline", "inside the pipeline"),
        ("\\startpipeline\nSELECT 1 \\gset\n\\endpipeline", "\\gset inside the pipeline"),
        ("\\startpipeline\n\\if 1\nSELECT 1;\n\\endif\n\\endpipeline", "\\if inside the"),
        ("\\startpipeline now\nSELECT 1;\n\\endpipeline", "takes nothing after it"),
    ],
)
def test_a_malformed_pipeline_is_refused_with_its_line(script: str, message: str) -> None:
    with pytest.raises(ScriptError, match=message.replace("\\", "\\\\")):
        parse_script(script)


def run_fake(tmp_path: Path, text: str, target: str | None = None) -> None:
    run_experiment(
        parse_experiment(text, file="e.toml"),
        target=parse_target(target or f"sqlite:///{tmp_path}/t.db"),
        store=Store(tmp_path / "r.duckdb"),
        engine=FakeEngine(),
    )


PIPELINE_FILE = (
    'name = "e"\n[workload]\nprotocol = "PROTOCOL"\n[[workload.transactions]]\n'
    "script = '''\nSELECT 0;\n\\startpipeline\nSELECT 1;\n\\endpipeline\n'''\n"
)


def test_pipelines_on_sqlite_are_refused_before_the_run(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="sqlite does not have") as info:
        run_fake(tmp_path, PIPELINE_FILE.replace("PROTOCOL", "prepared"))
    assert str(info.value).startswith("e.toml:7:")


def test_pipelines_with_the_simple_protocol_are_refused(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    with pytest.raises(SpecError, match='needs protocol = "extended" or "prepared"'):
        run_fake(tmp_path, PIPELINE_FILE.replace("PROTOCOL", "simple"), postgres.url)


def test_a_result_inside_a_pipeline_is_refused() -> None:
    text = PIPELINE_FILE.replace("PROTOCOL", "prepared").replace(
        "[[workload.transactions]]\n", "[[workload.transactions]]\nresult = true\n"
    )
    with pytest.raises(SpecError, match="last statement is inside a pipeline"):
        parse_experiment(text, file="e.toml")


def test_check_without_a_target_refuses_what_every_target_refuses(tmp_path: Path) -> None:
    """A pipeline or a fetch size under the simple protocol is refused on any target, so
    ``check`` says so without one, with its line, as ``run`` would."""
    from typer.testing import CliRunner

    from wannabet.cli import app

    piped = tmp_path / "piped.toml"
    piped.write_text(PIPELINE_FILE.replace("PROTOCOL", "simple"))
    fetched = tmp_path / "fetched.toml"
    fetched.write_text(
        'name = "f"\n[workload]\nprotocol = "simple"\nfetch_size = 10\n'
        '[[workload.transactions]]\nscript = "SELECT 1;"\n'
    )
    fine = tmp_path / "fine.toml"
    fine.write_text(PIPELINE_FILE.replace("PROTOCOL", "extended"))
    for file, fragment in ((piped, "piped.toml:7:"), (fetched, "the simple protocol returns")):
        result = CliRunner().invoke(app, ["check", str(file)])
        assert result.exit_code == 2, result.stderr
        assert fragment in result.stderr and "1 error in" in result.stderr
    assert CliRunner().invoke(app, ["check", str(fine)]).exit_code == 0
