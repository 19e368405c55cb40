"""The target as a factor (issue #14): a level runs its samples on another server, or on the
run's server with other connection parameters, and the two are sampled in randomized blocks
like any other factor (the seed 004 experiment: one workload, two platforms)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from wannabet.backends import parse_target
from wannabet.engine import FakeEngine, NativeEngine
from wannabet.errors import SpecError
from wannabet.runner import run_experiment, with_query
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres


def two_platforms(plain: ThrowawayPostgres, tls: ThrowawayPostgres) -> str:
    tls_url = f"{tls.url}?sslmode=verify-full&sslrootcert={tls.ca_file}"
    return textwrap.dedent(
        f"""\
        name = "two-platforms"
        [setup]
        sql = "DROP TABLE IF EXISTS hits; CREATE TABLE hits (app text, port int)"
        [workload]
        sessions = 2
        [[workload.transactions]]
        name = "hit"
        script = "INSERT INTO hits SELECT current_setting('application_name'), inet_server_port()"
        [[factors]]
        name = "platform"
        [factors.levels.plain]
        target = "{plain.url}"
        [factors.levels.tls]
        target = "{tls_url}"
        [[factors]]
        name = "app"
        [factors.levels.a]
        target_params = {{ application_name = "wb-a" }}
        [factors.levels.b]
        target_params = {{ application_name = "wb-b" }}
        [sampling]
        samples = 2
        duration = "0.3s"
        warmup = "0s"
        seed = 4
        """
    )


def test_each_level_runs_on_its_own_server_with_its_own_parameters(
    postgres: ThrowawayPostgres, tls_postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    store = Store(tmp_path / "r.duckdb")
    outcome = run_experiment(
        parse_experiment(two_platforms(postgres, tls_postgres), file="p.toml"),
        # The run's own target, the default one, is neither: every level names its server.
        target=parse_target(f"sqlite:///{tmp_path}/unused.db"),
        store=store,
        engine=NativeEngine(),
        fresh_target=True,
    )
    assert outcome.status == "complete"
    # Nothing ran on the default target, so wannabet made no file there.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.duckdb"]
    committed = {
        s.condition: s.transactions - s.errors for s in store.condition_summaries(outcome.run_id)
    }
    engine = NativeEngine()
    found: dict[str, int] = {}
    for platform, server in (("plain", postgres), ("tls", tls_postgres)):
        rows = engine.query(
            parse_target(server.url), "SELECT app, port, count(*) FROM hits GROUP BY 1, 2"
        )
        for app, port, count in rows:
            assert int(port) == server.port  # each server's rows were inserted on it
            found[f"platform={platform},app={app.removeprefix('wb-')}"] = int(count)
    # Every committed transaction of a condition is a row on its server, with its parameters.
    assert found == committed, (found, committed)
    assert min(committed.values()) > 0
    with store.read() as con:
        target, kind, settings, environment, spec_text = con.execute(
            "SELECT target, target_kind, settings, environment, spec_text FROM runs"
        ).fetchone()
    assert kind == "postgresql"
    where = json.loads(settings)["targets"]
    assert sorted(where) == sorted(committed)
    secrets = (postgres.password, tls_postgres.password)
    assert not any(secret in v for secret in secrets for v in where.values())
    assert str(tls_postgres.port) in where["platform=tls,app=b"]
    assert "application_name=wb-b" in where["platform=tls,app=b"]
    # Both servers were probed; the second is listed with the conditions it ran.
    others = json.loads(environment)["targets"]
    assert [sorted(o["conditions"]) for o in others] == [
        ["platform=plain,app=a", "platform=plain,app=b"]
    ] or [sorted(o["conditions"]) for o in others] == [["platform=tls,app=a", "platform=tls,app=b"]]
    assert "server_version" in others[0]
    text = (target or "") + spec_text + settings + environment
    assert postgres.password not in text and tls_postgres.password not in text


def test_target_params_replace_the_same_parameter_of_the_url() -> None:
    url = "postgresql://u:p%40ss@h:5432/db?sslmode=disable&application_name=x"
    out = with_query(url, [("sslmode", "require"), ("connect_timeout", "3")])
    assert out == (
        "postgresql://u:p%40ss@h:5432/db?sslmode=require&application_name=x&connect_timeout=3"
    )
    assert with_query(url, []) == url

    # A space is %20: libpq decodes %XX only, so a "+" would reach the server as a plus.
    assert with_query("postgresql://h/db", [("options", "-c jit=off")]) == (
        "postgresql://h/db?options=-c%20jit%3Doff"
    )


def test_level_targets_that_are_files_open_the_files_they_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A level's SQLite target, relative or absolute, is the file it names: the canonical URL of
    a file target is not parsed again as if it were written by the user."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "abs").mkdir()
    text = textwrap.dedent(
        f"""\
        name = "two-files"
        [setup]
        sql = "CREATE TABLE IF NOT EXISTS hits (n INTEGER)"
        [[workload.transactions]]
        script = "INSERT INTO hits VALUES (1);"
        [[factors]]
        name = "file"
        [factors.levels.relative]
        target = "sqlite:///rel.db"
        [factors.levels.absolute]
        target = "sqlite:///{tmp_path}/abs/abs.db"
        [sampling]
        samples = 1
        duration = "0.1s"
        warmup = "0s"
        """
    )
    store = Store(tmp_path / "r.duckdb")
    outcome = run_experiment(
        parse_experiment(text, file="e.toml"),
        target=parse_target(f"sqlite:///{tmp_path}/unused.db"),
        store=store,
        engine=NativeEngine(),
    )
    assert outcome.status == "complete"
    committed = {
        s.condition: s.transactions - s.errors for s in store.condition_summaries(outcome.run_id)
    }
    engine = NativeEngine()
    for level, path in (("relative", tmp_path / "rel.db"), ("absolute", tmp_path / "abs/abs.db")):
        rows = engine.query(parse_target(f"sqlite:///{path}"), "SELECT count(*) FROM hits")
        assert int(rows[0][0]) == committed[f"file={level}"] > 0


def test_target_params_with_spaces_reach_the_server_as_written(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    text = textwrap.dedent(
        f"""\
        name = "options"
        target = "{postgres.url}"
        [setup]
        sql = "DROP TABLE IF EXISTS seen; CREATE TABLE seen (jit text, level text)"
        [[workload.transactions]]
        script = "INSERT INTO seen VALUES (current_setting('jit'), '{{jit}}');"
        [[factors]]
        name = "jit"
        [factors.levels.off]
        target_params = {{ options = "-c jit=off" }}
        [factors.levels.on]
        target_params = {{ options = "-c jit=on" }}
        [sampling]
        samples = 1
        duration = "0.1s"
        warmup = "0s"
        """
    )
    outcome = run_experiment(
        parse_experiment(text, file="e.toml"),
        target=parse_target(postgres.url),
        store=Store(tmp_path / "r.duckdb"),
        engine=NativeEngine(),
    )
    assert outcome.status == "complete"
    rows = NativeEngine().query(
        parse_target(postgres.url), "SELECT DISTINCT jit, level FROM seen ORDER BY level"
    )
    assert [tuple(r) for r in rows] == [("off", "off"), ("on", "on")]


def run_fake(tmp_path: Path, text: str) -> FakeEngine:
    engine = FakeEngine()
    run_experiment(
        parse_experiment(text, file="e.toml"),
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=Store(tmp_path / "r.duckdb"),
        engine=engine,
    )
    return engine


def test_the_targets_of_one_run_are_of_one_kind(tmp_path: Path) -> None:
    text = textwrap.dedent(
        """\
        name = "e"
        [[workload.transactions]]
        script = "SELECT 1;"
        [[factors]]
        name = "platform"
        [factors.levels.file]
        target = "sqlite:///other.db"
        [factors.levels.server]
        target = "postgresql://u@127.0.0.1:1/db"
        [sampling]
        samples = 1
        duration = "0.1s"
        """
    )
    with pytest.raises(SpecError, match="targets are of 2 kinds"):
        run_fake(tmp_path, text)


@pytest.mark.parametrize(
    ("level", "message"),
    [
        ('target = "nowhere"', "must be a target URL"),
        ("target = 5", "must be a string"),
        ('target_params = "sslmode=require"', "must be a table of parameters"),
        ("target_params = { sslmode = [1] }", "must be text or a number"),
    ],
)
def test_a_bad_level_target_is_named_with_its_key(level: str, message: str) -> None:
    text = textwrap.dedent(
        f"""\
        name = "e"
        [[workload.transactions]]
        script = "SELECT 1;"
        [[factors]]
        name = "platform"
        [factors.levels.a]
        {level}
        [factors.levels.b]
        session_sql = "SELECT 2"
        """
    )
    with pytest.raises(SpecError, match=message) as info:
        parse_experiment(text, file="e.toml")
    assert "factors[0].levels.a.target" in str(info.value)


def test_a_level_target_the_backend_refuses_fails_before_the_run(tmp_path: Path) -> None:
    text = textwrap.dedent(
        """\
        name = "e"
        [[workload.transactions]]
        script = "SELECT 1;"
        [[factors]]
        name = "platform"
        [factors.levels.a]
        target = "db2://u@h/db"
        [factors.levels.b]
        session_sql = "SELECT 2"
        [sampling]
        samples = 1
        duration = "0.1s"
        """
    )
    with pytest.raises(SpecError, match="unsupported target") as info:
        run_fake(tmp_path, text)
    assert "target of condition platform=a" in str(info.value)
    assert not (tmp_path / "r.duckdb").exists()
