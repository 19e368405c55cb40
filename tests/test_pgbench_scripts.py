"""pgbench-complete scripts (issue #14): the expression language, ``\\if``, ``\\gset``/``\\aset``,
``protocol`` and pgbench's own built-in scripts, parsed and then run by the engine against SQLite
and the throwaway PostgreSQL."""

from __future__ import annotations

import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from wannabet.backends import parse_target
from wannabet.engine import STATUS_NAMES, NativeEngine, SampleRequest, SampleResult, compile_program
from wannabet.errors import QueryError
from wannabet.model import (
    PREDEFINED_VARIABLES,
    BinOp,
    BoolLit,
    Call,
    Case,
    IntLit,
    Is,
    Logic,
    Not,
    SqlCommand,
    VarRef,
)
from wannabet.runner import run_experiment
from wannabet.script import ScriptError, parse_script
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.targets import Target
from wannabet.testing import ThrowawayPostgres
from wannabet.testing.cli import wannabet

ENGINE = NativeEngine()
OK, SCRIPT = STATUS_NAMES.index("ok"), STATUS_NAMES.index("script")


def expr(text: str) -> object:
    [command, _] = parse_script(
        f"\\set x {text}\nSELECT 1;", known_variables=PREDEFINED_VARIABLES
    ).commands
    return command.expr  # type: ignore[union-attr]


# --- the parser -----------------------------------------------------------------------------------


def test_operators_bind_as_in_pgbench() -> None:
    # OR < AND < NOT < IS < comparison < bitwise < + - < * / %
    assert expr("1 + 2 * 3 = 7 OR NOT true AND false") == Logic(
        "or",
        BinOp("=", BinOp("+", IntLit(1), BinOp("*", IntLit(2), IntLit(3))), IntLit(7)),
        Logic("and", Not(BoolLit(True)), BoolLit(False)),
    )
    assert expr("1 | 2 + 3") == BinOp("|", IntLit(1), BinOp("+", IntLit(2), IntLit(3)))
    assert expr("1 != 2") == BinOp("<>", IntLit(1), IntLit(2))
    assert expr(":client_id IS NOT NULL") == Not(Is(VarRef("client_id"), None))
    assert expr(":client_id notnull") == Not(Is(VarRef("client_id"), None))
    assert expr("(1 < 2) is true") == Is(BinOp("<", IntLit(1), IntLit(2)), True)
    assert expr("CASE WHEN :scale > 1 THEN 10 ELSE 20 END") == Case(
        ((BinOp(">", VarRef("scale"), IntLit(1)), IntLit(10)),), IntLit(20)
    )
    assert expr("-9223372036854775808") == IntLit(-(2**63))
    # The seed of hash() and permute() defaults to :default_seed; power() is pow().
    assert expr("hash(5)") == Call("hash", (IntLit(5), VarRef("default_seed")))
    assert expr("permute(1, 10)") == Call(
        "permute", (IntLit(1), IntLit(10), VarRef("default_seed"))
    )
    assert expr("power(2, 3)") == Call("pow", (IntLit(2), IntLit(3)))


@pytest.mark.parametrize(
    ("script", "line", "message"),
    [
        ("SELECT 1;\n\\elif 1\n", 2, "\\elif without a \\if"),
        ("SELECT 1;\n\\if 1\nSELECT 2;\n", 2, "\\if without \\endif"),
        ("\\if 1\n\\else\n\\else\n\\endif\nSELECT 1;", 3, "\\else after \\else"),
        ("\\if 1\n\\else\n\\elif 0\n\\endif\nSELECT 1;", 3, "\\elif after \\else"),
        ("\\endif\nSELECT 1;", 1, "\\endif without a \\if"),
        ("\\if\nSELECT 1;\n\\endif", 1, "needs a condition"),
        ("\\gset\nSELECT 1;", 1, "must follow an SQL statement"),
        ("SELECT 1 AS a \\gset p q", 1, "at most one prefix"),
        ("\\set x 1 < 2 < 3\nSELECT 1;", 1, "do not chain"),
        ("\\set x CASE 1 END\nSELECT 1;", 1, "at least one WHEN"),
        ("\\set x 1 IS 2\nSELECT 1;", 1, "NULL, TRUE or FALSE"),
        ("\\set x hash(1, 2, 3)\nSELECT 1;", 1, "hash() takes 1 to 2 arguments"),
        ("SELECT :nope;", 1, "unknown variable :nope"),
    ],
)
def test_script_mistakes_are_named_with_their_line(script: str, line: int, message: str) -> None:
    with pytest.raises(ScriptError) as err:
        parse_script(script)
    assert message in str(err.value)
    assert err.value.line == line


def test_gset_and_aset_end_a_statement_in_each_of_their_forms() -> None:
    script = parse_script(
        textwrap.dedent(
            """\
            SELECT 1 AS a \\gset
            SELECT 2 AS b,
                   3 AS c
              \\aset p_
            SELECT 4 AS d;
            \\gset
            SELECT 5 AS e; SELECT 6 AS f \\gset
            UPDATE t SET v = :a + :p_b + :d + :f;
            """
        )
    )
    sql = [c for c in script.commands if isinstance(c, SqlCommand)]
    assert [(c.text.split()[1], c.capture) for c in sql] == [
        ("1", ("gset", "")),
        ("2", ("aset", "p_")),
        ("4", ("gset", "")),
        ("5", None),
        ("6", ("gset", "")),
        ("t", None),
    ]
    assert [c.line for c in sql] == [1, 2, 5, 7, 7, 8]
    # Names only a result can provide; the engine checks them against the real columns.
    assert script.captured_variables == ("a", "d", "f", "p_b")


def test_if_chains_compile_to_jumps_that_skip_the_other_branches() -> None:
    experiment = parse_experiment(
        "name = 'e'\n[[workload.transactions]]\nscript = '''\n"
        "\\if :scale = 1\nSELECT 1;\n\\elif :scale = 2\nSELECT 2;\n\\else\nSELECT 3;\n\\endif\n"
        "SELECT 4;\n'''\n",
        file="e",
    )
    program = compile_program(experiment.workload, "dollar")
    [(_, _, commands, _)] = program.transactions
    shape = [(c[0], c[-1] if c[0].startswith("jump") else c[1]) for c in commands]
    assert shape == [
        ("jump_unless", 3),  # \if false: on to the \elif test
        ("sql", "SELECT 1"),
        ("jump", 7),  # the \if branch done: after \endif
        ("jump_unless", 6),  # \elif false: on to the \else branch
        ("sql", "SELECT 2"),
        ("jump", 7),
        ("sql", "SELECT 3"),
        ("sql", "SELECT 4"),
    ]


# --- the engine -----------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    if request.param == "sqlite":
        yield parse_target(f"sqlite:///{tmp_path / 'scripts.db'}")
    else:
        pg: ThrowawayPostgres = request.getfixturevalue("postgres")
        t = parse_target(pg.url)
        ENGINE.execute(t, "DROP TABLE IF EXISTS branch, seen")
        yield t


def sample(target: Target, script: str, count: int, **options: object) -> SampleResult:
    spec = f"name = 'e'\n[[workload.transactions]]\nscript = '''\n{script}\n'''\n"
    experiment = parse_experiment(spec, file="e")
    request = SampleRequest(
        program=compile_program(experiment.workload, target.placeholder_style),
        sessions=2,
        session_sql=(),
        duration_ns=0,
        max_transactions=count,
        seed=3,
        **options,  # type: ignore[arg-type]
    )
    return ENGINE.run_sample(target, request)


BRANCHES = textwrap.dedent(
    """\
    \\set n random(1, 10)
    SELECT :n * 2 AS doubled, :n + 0 AS original \\gset
    \\if :doubled > 10
    INSERT INTO branch VALUES ('high', :original);
    \\elif :doubled = 10
    INSERT INTO branch VALUES ('five', :original);
    \\else
    INSERT INTO branch VALUES ('low', :original);
    \\endif
    """
)


@pytest.mark.parametrize("protocol", ["prepared", "extended", "simple"])
def test_gset_and_if_drive_the_next_statement(target: Target, protocol: str) -> None:
    ENGINE.execute(target, "CREATE TABLE branch (kind TEXT NOT NULL, v INTEGER NOT NULL)")
    result = sample(target, BRANCHES, 300, protocol=protocol)
    assert (result.columns["status"] == OK).all()
    rows = ENGINE.query(target, "SELECT kind, v, count(*) FROM branch GROUP BY kind, v")
    counts = {(kind, int(v)): int(n) for kind, v, n in rows}
    assert sum(counts.values()) == 300
    # Each value took exactly its branch, and every branch and value occurred.
    assert {v for _, v in counts} == set(range(1, 11))
    for kind, v in counts:
        assert kind == ("high" if v > 5 else "five" if v == 5 else "low"), (kind, v)


def test_aset_keeps_the_last_row_and_gset_wants_exactly_one(target: Target) -> None:
    ENGINE.execute(target, "CREATE TABLE seen (v INTEGER)")
    script = textwrap.dedent(
        """\
        SELECT 7 AS last_v WHERE 1 = 0 \\aset
        SELECT v AS last_v FROM (SELECT 1 AS v UNION ALL SELECT 2) AS s ORDER BY v \\aset
        INSERT INTO seen VALUES (:last_v);
        """
    )
    result = sample(target, script, 10)
    assert (result.columns["status"] == OK).all()
    assert ENGINE.query(target, "SELECT DISTINCT v FROM seen") == [("2",)]
    none = sample(target, "SELECT 1 AS one WHERE 1 = 0 \\gset\nSELECT :one;", 4)
    assert (none.columns["status"] == SCRIPT).all()
    assert "expects one row, got 0" in str(none.error_messages)


def test_a_variable_no_result_provides_is_refused_before_the_sample(target: Target) -> None:
    with pytest.raises(QueryError, match=r"variable :tow is used but no .*columns give: two"):
        sample(target, "SELECT 2 AS two \\gset\nSELECT :tow;", 4)


def test_expressions_evaluate_as_in_pgbench(target: Target) -> None:
    # hash_fnv1a(42, 5432) and permute(5, 1000, 12345) as real pgbench 15 prints them (debug()).
    ENGINE.execute(target, "CREATE TABLE seen (v BIGINT)")
    script = textwrap.dedent(
        """\
        \\set h hash_fnv1a(42, 5432)
        \\set p permute(5, 1000, 12345)
        \\set ok CASE WHEN :client_id IS NULL THEN 0 WHEN 7 & 3 = 3 AND NOT false THEN 1 END
        \\set sum mod(17, 5) + int(pow(2, 10)) + (1 << 4)
        INSERT INTO seen VALUES (:h), (:p), (:ok), (:sum);
        """
    )
    result = sample(target, script, 1)
    assert (result.columns["status"] == OK).all()
    got = [int(v) for (v,) in ENGINE.query(target, "SELECT v FROM seen")]
    assert got[2:] == [1, 2 + 1024 + 16]
    assert got[:2] == [8300031466468664087, 452]


def test_doubles_become_integers_as_pgbench_rounds_them(target: Target) -> None:
    """pgbench's coerceToInt rounds with rint() (halves to even): the values real pgbench 15
    gives for int(), % and mod() of doubles, a double random() bound, and pi()."""
    ENGINE.execute(target, "CREATE TABLE seen (k BIGINT, v DOUBLE PRECISION)")
    script = textwrap.dedent(
        """\
        \\set a int(3.7) + 100 * int(9.5) + 10000 * int(-3.5) + 1000000 * int(2.5)
        \\set b 7.5 % 2 + 10 * mod(7.9, 3) + 100 * random(1.6, 1.6)
        \\set p pi() * 2
        INSERT INTO seen VALUES (1, :a), (2, :b), (3, :p);
        """
    )
    result = sample(target, script, 1)
    assert (result.columns["status"] == OK).all(), result.error_messages
    got = {int(k): float(v) for k, v in ENGINE.query(target, "SELECT k, v FROM seen")}
    assert got[1] == 4 + 100 * 10 + 10000 * -4 + 1000000 * 2
    assert got[2] == 0 + 10 * 2 + 100 * 2
    assert got[3] == pytest.approx(2 * 3.141592653589793)


def test_and_or_follow_pgbench_not_sql(target: Target) -> None:
    """pgbench's AND and OR (evalLazyFunc) are not SQL's: a NULL on the left gives NULL, and
    numbers are not booleans to them. Real pgbench 15 gives each of these (debug())."""
    ENGINE.execute(target, "CREATE TABLE seen (v BIGINT)")
    script = textwrap.dedent(
        """\
        \\set a CASE WHEN (NULL AND false) IS NULL THEN 1 ELSE 0 END
        \\set b CASE WHEN (NULL OR true) IS NULL THEN 1 ELSE 0 END
        \\set c CASE WHEN (false AND NULL) IS FALSE THEN 1 ELSE 0 END
        \\set d CASE WHEN (true OR NULL) IS TRUE THEN 1 ELSE 0 END
        \\set e CASE WHEN (false AND 1) IS FALSE AND (true OR 1) IS TRUE THEN 1 ELSE 0 END
        INSERT INTO seen VALUES (:a + 10 * :b + 100 * :c + 1000 * :d + 10000 * :e);
        """
    )
    result = sample(target, script, 1)
    assert (result.columns["status"] == OK).all(), result.error_messages
    assert ENGINE.query(target, "SELECT v FROM seen") == [("11111",)]
    refused = sample(target, "\\set x 1 AND 2\nSELECT 1;", 2)
    assert (refused.columns["status"] == SCRIPT).all()
    assert "cannot coerce int to boolean" in str(refused.error_messages)


def test_meta_commands_take_any_case_and_any_white_space_as_pgbench() -> None:
    # Real pgbench 15 runs this script: it compares meta-command names and \sleep units with
    # pg_strcasecmp, and its lexer takes any white space between words.
    script = parse_script(
        "\\SET\tx 1\n\\Sleep 1 US\n\\sleep\t10\tMS\n\\set  y  :x + 1\n\\set\tw\t2\n"
        "\\IF :x = 1\nSELECT :y AS z \\GSET\n\\ELSE\nSELECT 1 AS q \\Aset\n\\ENDIF\n",
        known_variables=PREDEFINED_VARIABLES,
    )
    kinds = [type(c).__name__ for c in script.commands]
    assert kinds == [
        *("SetCommand", "SleepCommand", "SleepCommand", "SetCommand", "SetCommand"),
        *("BranchCommand", "SqlCommand", "BranchCommand", "SqlCommand", "BranchCommand"),
    ]
    assert [c.unit for c in script.commands[1:3]] == ["us", "ms"]  # type: ignore[attr-defined]
    assert [c.variable for c in script.commands[3:5]] == ["y", "w"]  # type: ignore[attr-defined]
    assert [c.kind for c in script.commands[5::2]] == ["if", "else", "endif"]  # type: ignore[attr-defined]
    assert [c.capture for c in script.commands[6::2]] == [("gset", ""), ("aset", "")]  # type: ignore[attr-defined]


def test_pi_and_float_random_bounds_pass_check(tmp_path: Path) -> None:
    """pi() takes no argument and once crashed ``wannabet check`` with an IndexError; constant
    float bounds of random() are compared as the integers pgbench rounds them to (real pgbench
    15 runs random(1.4, 1.2) as random(1, 1) and refuses random(2.6, 2.4) as an empty range)."""
    path = tmp_path / "e.toml"
    body = "name = 'e'\n[[workload.transactions]]\nscript = '''\n\\set x pi() * 2\n{}\n'''\n"
    path.write_text(body.format("\\set r random(1.4, 1.2)\nSELECT :x, :r;"))
    checked = wannabet("check", str(path))
    assert checked.returncode == 0 and "ok:" in checked.stdout, checked.stderr
    dry = wannabet("check", str(path), "--target", f"sqlite:///{tmp_path / 'check.db'}")
    assert dry.returncode == 0, dry.stderr
    path.write_text(body.format("\\set r random(2.6, 2.4)\nSELECT :x, :r;"))
    refused = wannabet("check", str(path))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert (
        f"{path}:5: workload.transactions[0].script: random(): the lower bound 2.6 exceeds 2.4"
        " (as integers, 3 and 2)" in refused.stderr
    ), refused.stderr


def test_protocols_reach_the_server_as_pgbench_sends_them(postgres: ThrowawayPostgres) -> None:
    target = parse_target(postgres.url)
    ENGINE.execute(
        target, "DROP TABLE IF EXISTS seen; CREATE TABLE seen (p TEXT, named INT, d INT)"
    )
    # What the server saw, read back by the script itself: prepared statements of the session,
    # and whether the running statement's text holds $1 (bound) or the value (inlined).
    script = textwrap.dedent(
        """\
        \\set x 41
        SELECT count(*) AS named FROM pg_prepared_statements \\gset
        SELECT strpos(query, chr(36) || '1') AS dollar FROM pg_stat_activity
         WHERE pid = pg_backend_pid() AND :x > 0 \\gset
        INSERT INTO seen VALUES ('{protocol}', :named, :dollar);
        """
    )
    for protocol in ("simple", "extended", "prepared"):
        result = sample(target, script.replace("{protocol}", protocol), 6, protocol=protocol)
        assert (result.columns["status"] == OK).all(), result.error_messages
    rows = ENGINE.query(target, "SELECT p, min(named), min(d), max(d) FROM seen GROUP BY p")
    seen = {p: tuple(int(v) for v in values) for p, *values in rows}
    # Simple: nothing prepared, the value in the text. Extended: bound, but to an unnamed
    # statement. Prepared: the script's three statements are named statements of the session.
    assert seen["simple"] == (0, 0, 0)
    assert seen["extended"][0] == 0 and seen["extended"][1] > 0
    assert seen["prepared"][0] == 3 and seen["prepared"][1] > 0


# --- pgbench's own scripts ------------------------------------------------------------------------


def builtin_script(pg: ThrowawayPostgres, name: str) -> str:
    """The built-in script as this pgbench prints it, exactly (``--show-script``)."""
    shown = subprocess.run(
        [str(pg.bindir / "pgbench"), f"--show-script={name}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    # pgbench prints a header line, then the script.
    lines = shown.stderr.splitlines()
    return "\n".join(lines[1:]) + "\n"


@pytest.mark.parametrize("name", ["tpcb-like", "simple-update", "select-only"])
def test_pgbenchs_builtin_scripts_run_verbatim_with_matching_effects(
    postgres: ThrowawayPostgres, tmp_path: Path, name: str
) -> None:
    database = f"pgbench_{name.replace('-', '_')}"
    postgres.psql(f"DROP DATABASE IF EXISTS {database}")
    postgres.psql(f"CREATE DATABASE {database}")
    env = postgres.env() | {"PGDATABASE": database}
    subprocess.run(
        [str(postgres.bindir / "pgbench"), "-i", "-s", "1", "-q"],
        env=env,
        capture_output=True,
        check=True,
        timeout=300,
    )
    url = postgres.url.rsplit("/", 1)[0] + f"/{database}"
    script = builtin_script(postgres, name)
    assert "\\set aid random(1, 100000 * :scale)" in script
    text = (
        f"name = '{name}'\n[workload]\nsessions = 2\n"
        f"[[workload.transactions]]\nname = '{name}'\nscript = '''\n{script}'''\n"
        "[[factors]]\nname = 'protocol'\nlevels = ['simple', 'prepared']\nprotocol = '{level}'\n"
        "[sampling]\nsamples = 2\ntransactions = 150\nwarmup = '0s'\nseed = 5\n"
    )
    store = Store(tmp_path / "r.duckdb")
    outcome = run_experiment(
        parse_experiment(text, file=f"{name}.toml"),
        target=parse_target(url),
        store=store,
        engine=ENGINE,
    )
    assert outcome.status == "complete"
    with store.read() as con:
        committed, failed = con.execute(
            "SELECT count(*) FILTER (WHERE status = 'ok'), count(*) FILTER (WHERE status <> 'ok')"
            " FROM transactions WHERE run_id = ?",
            [outcome.run_id],
        ).fetchone()  # type: ignore[misc]
    assert committed + failed == 2 * 2 * 150
    target = parse_target(url)
    history = int(ENGINE.query(target, "SELECT count(*) FROM pgbench_history")[0][0] or 0)
    deltas = int(ENGINE.query(target, "SELECT coalesce(sum(delta), 0) FROM pgbench_history")[0][0])
    accounts = int(ENGINE.query(target, "SELECT sum(abalance) FROM pgbench_accounts")[0][0])
    if name == "select-only":
        assert history == 0 and accounts == 0
        assert failed == 0
        return
    # Every committed transaction wrote one history row and moved its delta into an account.
    assert history == committed
    assert accounts == deltas
    if name == "tpcb-like":
        branches = int(ENGINE.query(target, "SELECT sum(bbalance) FROM pgbench_branches")[0][0])
        tellers = int(ENGINE.query(target, "SELECT sum(tbalance) FROM pgbench_tellers")[0][0])
        assert branches == tellers == deltas
