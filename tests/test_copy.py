"""``\\copy`` bulk loads (issue #14): a file or a generated series into a table, COPY FROM STDIN on
PostgreSQL and one transaction of prepared INSERTs on SQLite, with the rows and bytes loaded
recorded per sample."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from wannabet.backends import parse_target
from wannabet.engine import STATUS_NAMES, NativeEngine, SampleRequest, SampleResult, compile_program
from wannabet.errors import SpecError
from wannabet.model import CopyCommand
from wannabet.runner import run_experiment
from wannabet.script import ScriptError, parse_script
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.targets import Target
from wannabet.testing import ThrowawayPostgres

ENGINE = NativeEngine()
OK = STATUS_NAMES.index("ok")


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    if request.param == "sqlite":
        yield parse_target(f"sqlite:///{tmp_path / 'copy.db'}")
    else:
        pg: ThrowawayPostgres = request.getfixturevalue("postgres")
        t = parse_target(pg.url)
        ENGINE.execute(t, "DROP TABLE IF EXISTS items, nums")
        yield t


def write_csv(path: Path, rows: int) -> int:
    """A CSV with a header, quoted commas and quotes, and empty (NULL) fields; its size."""
    lines = ["id,name,note"]
    for i in range(1, rows + 1):
        note = "" if i % 10 == 0 else f'"note {i}, ""quoted"""'
        lines.append(f"{i},name-{i},{note}")
    path.write_text("\n".join(lines) + "\n")
    return path.stat().st_size


def sample(target: Target, script: str, tmp_path: Path, **variables: int) -> SampleResult:
    spec = f"name = 'e'\n[[workload.transactions]]\nscript = '''\n{script}\n'''\n"
    if variables:
        spec += "[workload.variables]\n" + "".join(f"{k} = {v}\n" for k, v in variables.items())
    file = tmp_path / "e.toml"
    file.write_text(spec)
    experiment = parse_experiment(spec, file=str(file))
    request = SampleRequest(
        program=compile_program(experiment.workload, target.placeholder_style),
        sessions=1,
        session_sql=(),
        duration_ns=0,
        max_transactions=1,
        seed=1,
    )
    return ENGINE.run_sample(target, request)


def test_a_csv_file_loads_with_its_options_and_counts(target: Target, tmp_path: Path) -> None:
    ENGINE.execute(target, "CREATE TABLE items (id integer PRIMARY KEY, name text, note text)")
    size = write_csv(tmp_path / "items.csv", 2000)
    result = sample(
        target, "\\copy items (id, name, note) FROM 'items.csv' (FORMAT csv, HEADER)", tmp_path
    )
    assert (result.columns["status"] == OK).all(), result.error_messages
    assert result.counters["copy_rows"] == 2000
    assert result.counters["copy_bytes"] == size
    counts = ENGINE.query(
        target, "SELECT count(*), count(note), sum(id) FROM items WHERE note IS NULL OR note <> ''"
    )
    assert counts == [("2000", "1800", str(2000 * 2001 // 2))]
    [(note,)] = ENGINE.query(target, "SELECT note FROM items WHERE id = 7")
    assert note == 'note 7, "quoted"'


def test_a_generated_series_loads_without_a_file(target: Target, tmp_path: Path) -> None:
    ENGINE.execute(target, "CREATE TABLE nums (a bigint, b bigint)")
    result = sample(target, "\\copy nums (a, b) FROM generate_series(1, :n)", tmp_path, n=10000)
    assert (result.columns["status"] == OK).all(), result.error_messages
    assert result.counters["copy_rows"] == 10000
    # Each row is "i<TAB>i<NEWLINE>".
    assert result.counters["copy_bytes"] == sum(2 * len(str(i)) + 2 for i in range(1, 10001))
    assert ENGINE.query(target, "SELECT count(*), sum(a), sum(b) FROM nums") == [
        ("10000", "50005000", "50005000")
    ]


def test_a_failed_load_leaves_nothing_and_fails_its_transaction(
    target: Target, tmp_path: Path
) -> None:
    ENGINE.execute(target, "CREATE TABLE items (id integer PRIMARY KEY, name text, note text)")
    (tmp_path / "dup.csv").write_text("1,a,x\n2,b,y\n1,c,z\n")
    result = sample(target, "\\copy items FROM 'dup.csv' (FORMAT csv)", tmp_path)
    assert STATUS_NAMES[int(result.columns["status"][0])] == "constraint"
    assert ENGINE.query(target, "SELECT count(*) FROM items") == [("0",)]


def test_each_sample_is_one_timed_load_with_rows_and_bytes_in_its_statistics(
    postgres: ThrowawayPostgres, tmp_path: Path
) -> None:
    size = write_csv(tmp_path / "load.csv", 5000)
    text = textwrap.dedent(
        """\
        name = "load"
        [setup]
        sql = "DROP TABLE IF EXISTS items; CREATE TABLE items (id integer, name text, note text)"
        [[hooks]]
        when = "before-sample"
        sql = "TRUNCATE items"
        [workload]
        [[workload.transactions]]
        name = "load"
        script = "\\\\copy items FROM 'load.csv' (FORMAT csv, HEADER true)"
        [[factors]]
        name = "logged"
        [factors.levels.logged]
        system_sql = "ALTER TABLE items SET LOGGED"
        [factors.levels.unlogged]
        system_sql = "ALTER TABLE items SET UNLOGGED"
        [sampling]
        samples = 2
        transactions = 1
        warmup = "0s"
        """
    )
    file = tmp_path / "load.toml"
    file.write_text(text)
    store = Store(tmp_path / "r.duckdb")
    outcome = run_experiment(
        parse_experiment(text, file=str(file)),
        target=parse_target(postgres.url),
        store=store,
        engine=ENGINE,
    )
    assert outcome.status == "complete"
    with store.read() as con:
        rows = con.execute(
            "SELECT s.stats, (SELECT count(*) FROM transactions t WHERE t.run_id = s.run_id"
            " AND t.sample_id = s.sample_id AND t.status = 'ok') FROM samples s"
        ).fetchall()
    assert len(rows) == 4
    for stats, committed in rows:
        engine = json.loads(stats)["engine"]
        assert committed == 1
        assert (engine["copy_rows"], engine["copy_bytes"]) == (5000, size)


def test_what_a_load_loaded_is_kept_with_statistics_off(tmp_path: Path) -> None:
    size = write_csv(tmp_path / "load.csv", 300)
    text = textwrap.dedent(
        """\
        name = "load"
        [setup]
        sql = "CREATE TABLE items (id integer, name text, note text)"
        [[hooks]]
        when = "before-sample"
        sql = "DELETE FROM items"
        [[workload.transactions]]
        script = "\\\\copy items FROM 'load.csv' (FORMAT csv, HEADER true)"
        [sampling]
        samples = 2
        transactions = 1
        warmup = "0s"
        [statistics]
        enabled = false
        """
    )
    file = tmp_path / "load.toml"
    file.write_text(text)
    store = Store(tmp_path / "r.duckdb")
    outcome = run_experiment(
        parse_experiment(text, file=str(file)),
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=store,
        engine=ENGINE,
    )
    assert outcome.status == "complete"
    with store.read() as con:
        stats = [json.loads(s) for (s,) in con.execute("SELECT stats FROM samples").fetchall()]
    assert [s["engine"] for s in stats] == [{"copy_rows": 300, "copy_bytes": size}] * 2


def test_copy_syntax_and_files_are_checked_with_their_line(tmp_path: Path) -> None:
    [load] = parse_script(
        "\\copy s.t (a, b) FROM 'x y.csv' WITH (FORMAT csv, DELIMITER ';')"
    ).commands
    assert isinstance(load, CopyCommand)
    assert (load.table, load.columns, load.path) == ("s.t", ("a", "b"), "x y.csv")
    assert load.options == (("format", "csv"), ("delimiter", ";"))
    assert load.options_sql == "FORMAT csv, DELIMITER ';'"
    for bad, message in [
        ("\\copy t TO 'x'", "\\copy needs"),
        ("\\copy t FROM generate_series(1)", "two bounds"),
        ("\\copy t FROM 'x' FORMAT csv", "options go in parentheses"),
    ]:
        with pytest.raises(ScriptError, match="copy") as err:
            parse_script(bad)
        assert message in str(err.value)
    text = (
        "name = 'e'\n[[workload.transactions]]\n"
        "script = '''\nSELECT 1;\n\\copy t FROM 'nope.csv'\n'''\n"
    )
    file = tmp_path / "e.toml"
    file.write_text(text)
    with pytest.raises(SpecError, match=r"e\.toml:5: .*cannot read 'nope.csv'"):
        parse_experiment(text, file=str(file))
