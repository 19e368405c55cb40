"""``wannabet check FILE --target URL`` (issue #14): every statement of every condition prepared
against the real database, after the set-up, in a transaction that is rolled back; a refused
statement is reported with its file line before any workload runs."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wannabet.backends import parse_target
from wannabet.cli import app
from wannabet.engine import NativeEngine
from wannabet.errors import QueryError
from wannabet.runner import dry_run_experiment
from wannabet.spec import load_experiment
from wannabet.testing import ThrowawayPostgres

FILE = textwrap.dedent(
    """\
    name = "dry"
    [setup]
    sql = '''
    CREATE TABLE dry_items (id integer PRIMARY KEY, code integer NOT NULL);
    VACUUM;
    '''
    [workload]
    [[workload.transactions]]
    name = "lookup"
    script = "SELECT code FROM dry_items WHERE id = :client_id;"
    [[factors]]
    name = "query"
    [factors.levels.good]
    transactions = [{ name = "q", script = '''
    SELECT code AS c FROM dry_items WHERE id = 1 \\gset
    SELECT :c;
    ''' }]
    [factors.levels.bad]
    transactions = [{ name = "q", script = '''
    \\set id 1
    SELECT cod FROM dry_items WHERE id = :id;
    SELECT id AS d FROM dry_items \\gset
    SELECT :c;
    ''' }]
    """
)


def cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("kind", ["postgresql", "sqlite"])
def test_a_misspelled_column_in_one_condition_is_reported_with_its_line(
    kind: str, postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    url = postgres.url if kind == "postgresql" else f"sqlite:///{tmp_path / 'dry.db'}"
    path = tmp_path / "dry.toml"
    path.write_text(FILE)
    code, out, err = cli("check", str(path), "--target", url)
    assert code == QueryError.exit_code, (out, err)
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    # The bad level's misspelled column, at its line (21), and its \gset that gives no :c.
    assert len(lines) == 2, err
    assert f"{path}:21: the database refused statement 1 of 'q' (in query=bad)" in lines[0]
    assert "cod" in lines[0]
    assert "variable :c is used but no \\gset or \\aset result has a column" in lines[1]
    assert "columns: d" in lines[1]
    # VACUUM cannot run in the dry run's transaction: said, not failed (each database says so
    # its own way: PostgreSQL's SQLSTATE 25001, SQLite's message).
    assert "note: " in err and "[setup] statement 2 ('VACUUM')" in err
    assert "cannot run inside the dry run's transaction; not checked" in err
    # Nothing ran and nothing was kept: the set-up's table was rolled back with the rest.
    target = parse_target(url)
    table = (
        "SELECT count(*) FROM pg_tables WHERE tablename = 'dry_items'"
        if kind == "postgresql"
        else "SELECT count(*) FROM sqlite_master WHERE name = 'dry_items'"
    )
    assert NativeEngine().query(target, table) == [("0",)]


def test_a_file_the_target_accepts_is_ok(postgres: ThrowawayPostgres, tmp_path: Path) -> None:
    good = FILE.split("[factors.levels.bad]")[0]
    path = tmp_path / "good.toml"
    path.write_text(good)
    findings = dry_run_experiment(load_experiment(path), parse_target(postgres.url), NativeEngine())
    assert [f for f in findings if f.error] == []
    code, out, err = cli("check", str(path), "--target", postgres.url)
    assert code == 0, err
    assert "the target prepared all 2 statements" in " ".join(out.split())


@pytest.mark.parametrize("kind", ["postgresql", "sqlite"])
def test_a_copy_into_a_misspelled_table_or_column_is_reported(
    kind: str, postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    url = postgres.url if kind == "postgresql" else f"sqlite:///{tmp_path / 'dry.db'}"
    text = textwrap.dedent(
        """\
        name = "dry-copy"
        [setup]
        sql = "CREATE TABLE dry_load (id integer, code integer)"
        [[workload.transactions]]
        name = "load"
        script = '''
        \\copy dry_load (id, code) FROM generate_series(1, 10)
        \\copy dry_lod (id) FROM generate_series(1, 10)
        \\copy dry_load (id, cod) FROM generate_series(1, 10)
        '''
        """
    )
    path = tmp_path / "copy.toml"
    path.write_text(text)
    findings = dry_run_experiment(load_experiment(path), parse_target(url), NativeEngine())
    errors = sorted(f.message for f in findings if f.error)
    # The right one passes; the misspelled table (line 8) and column (line 9) are named.
    assert len(errors) == 2, findings
    assert errors[0].startswith(f"{path}:8: the database refused the \\copy of 'load'")
    assert "dry_lod" in errors[0]
    assert errors[1].startswith(f"{path}:9: the database refused the \\copy of 'load'")
    assert "cod" in errors[1]


def test_a_duckdb_checkpoint_after_set_up_changes_is_not_a_failure(tmp_path: Path) -> None:
    # DuckDB refuses CHECKPOINT in a transaction that changed something: the dry run's doing,
    # not the file's.
    path = tmp_path / "dry.toml"
    path.write_text(
        'name = "dry"\n[setup]\nsql = """\nCREATE TABLE dry_items (id integer);\nCHECKPOINT;\n'
        'INSERT INTO dry_items VALUES (1)\n"""\n[[workload.transactions]]\nname = "q"\n'
        'script = "SELECT id FROM dry_items"\n'
    )
    code, out, err = cli("check", str(path), "--target", f"duckdb:///{tmp_path / 'dry.duckdb'}")
    assert code == 0, (out, err)
    assert "[setup] statement 2 ('CHECKPOINT')" in err and "not checked" in err, err
    assert "the target prepared all 1 statement" in " ".join(out.split())
    # The database file the check made to try it is not left behind, nor its log.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dry.toml"]


def test_check_leaves_no_new_sqlite_file_and_keeps_an_existing_one(tmp_path: Path) -> None:
    path = tmp_path / "dry.toml"
    path.write_text('name = "dry"\n[[workload.transactions]]\nname = "q"\nscript = "SELECT 1"\n')
    fresh = tmp_path / "fresh.sqlite"
    code, out, err = cli("check", str(path), "--target", f"sqlite:///{fresh}")
    assert code == 0, (out, err)
    assert not fresh.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["dry.toml"]
    kept = tmp_path / "kept.sqlite"
    NativeEngine().execute(parse_target(f"sqlite:///{kept}"), "CREATE TABLE k (x int)")
    code, out, err = cli("check", str(path), "--target", f"sqlite:///{kept}")
    assert code == 0, (out, err)
    assert NativeEngine().query(parse_target(f"sqlite:///{kept}"), "SELECT count(*) FROM k") == [
        ("0",)
    ]
