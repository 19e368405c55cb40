"""The pgbench-compatible script dialect."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wannabet.model import BinOp, Call, IntLit, SleepCommand, SqlCommand, VarRef
from wannabet.script import ScriptError, parse_script, split_sql


def test_set_sleep_and_statements() -> None:
    script = parse_script(
        "\\set aid random(1, 100000 * :scale)\n"
        "\\set delta random(-5000, 5000)\n"
        "BEGIN;\n"
        "UPDATE t SET v = v + :delta WHERE id = :aid;\n"
        "\\sleep 10 ms\n"
        "SELECT v\n  FROM t WHERE id = :aid;\n"
        "COMMIT;\n",
        known_variables=["scale"],
    )
    kinds = [type(c).__name__ for c in script.commands]
    assert kinds == [
        "SetCommand",
        "SetCommand",
        "SqlCommand",
        "SqlCommand",
        "SleepCommand",
        "SqlCommand",
        "SqlCommand",
    ]
    first = script.commands[0]
    assert first.expr == Call("random", (IntLit(1), BinOp("*", IntLit(100000), VarRef("scale"))))
    assert script.commands[1].expr == Call("random", (IntLit(-5000), IntLit(5000)))
    sleep = script.commands[4]
    assert isinstance(sleep, SleepCommand) and sleep.unit_ns == 1_000_000
    select = script.commands[5]
    assert isinstance(select, SqlCommand) and select.line == 6
    assert select.render("dollar") == ("SELECT v\n  FROM t WHERE id = $1", ("aid",))


def test_placeholders_are_bound_not_interpolated() -> None:
    (cmd,) = parse_script(
        "\\set a 1\n\\set b 2\nUPDATE t SET x = :a, y = :b WHERE id = :a;", known_variables=[]
    ).statements
    # One placeholder per occurrence, as in pgbench: each use may need its own type.
    assert cmd.render("dollar") == ("UPDATE t SET x = $1, y = $2 WHERE id = $3", ("a", "b", "a"))
    assert cmd.render("qmark") == ("UPDATE t SET x = ?1, y = ?2 WHERE id = ?3", ("a", "b", "a"))


def test_casts_quotes_and_comments_are_not_placeholders() -> None:
    (cmd,) = parse_script(
        "\\set a 1\nSELECT ':b', \":c\", :a::int8, $$ :d; $$ /* :e; */ -- :f;\n;",
        known_variables=[],
    ).statements
    assert cmd.params == ("a",)


def test_semicolons_in_strings_do_not_split() -> None:
    assert split_sql("INSERT INTO t VALUES ('a;b'); SELECT 1; SELECT $x$;$x$") == [
        "INSERT INTO t VALUES ('a;b')",
        "SELECT 1",
        "SELECT $x$;$x$",
    ]


def test_last_statement_may_omit_semicolon() -> None:
    assert len(parse_script("SELECT 1;\nSELECT 2").statements) == 2


@pytest.mark.parametrize(
    ("script", "message", "line"),
    [
        ("\\shell ls\nSELECT 1;", "unknown meta-command \\shell", 1),
        ("SELECT 1;\n\\set x random(1, 2, 3)\n", "random() takes 2 arguments, got 3", 2),
        ("\\set x random(5, 1)\nSELECT 1;", "lower bound 5 exceeds 1", 1),
        ("\\set x random_gaussian(1, 10, 1.5)\nSELECT 1;", "at least 2.0", 1),
        ("\\set x random_exponential(1, 10, 0)\nSELECT 1;", "must be positive", 1),
        ("\\set x random_zipfian(1, 10, 1.0)\nSELECT 1;", "between 1.001 and 1000", 1),
        ("\\set x (1 + 2\nSELECT 1;", "missing )", 1),
        ("\\set x foo(1)\nSELECT 1;", "unknown function foo()", 1),
        ("\\sleep 10 minutes\nSELECT 1;", "unit 'minutes'", 1),
        ("\\set\nSELECT 1;", "needs a variable name", 1),
        ("SELECT 1;\n\nSELECT :y;", "unknown variable :y", 3),
        ("\\set x 1", "no SQL statement", 1),
    ],
)
def test_errors_name_the_line(script: str, message: str, line: int) -> None:
    with pytest.raises(ScriptError) as info:
        parse_script(script)
    assert message in str(info.value)
    assert info.value.line == line


def test_variable_must_be_set_before_use() -> None:
    with pytest.raises(ScriptError, match="unknown variable :x"):
        parse_script("SELECT :x;\n\\set x 1\n")


@given(
    st.integers(min_value=-(10**12), max_value=10**12), st.integers(min_value=0, max_value=10**12)
)
def test_integer_literals_round_trip(a: int, b: int) -> None:
    script = parse_script(f"\\set x {a} + {b}\nSELECT :x;")
    assert script.commands[0].expr == BinOp("+", IntLit(a), IntLit(b))


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_string_literals_never_become_placeholders(text: str) -> None:
    literal = text.replace("'", "''")
    (cmd,) = parse_script(f"\\set v 1\nSELECT '{literal}', :v;").statements
    assert cmd.params == ("v",)
    assert literal in cmd.render("dollar")[0]


def test_block_comment_after_a_statement_is_not_a_statement() -> None:
    script = parse_script("SELECT 1; /* note */\n\\set x 1\nSELECT :x; /* done */")
    assert [type(c).__name__ for c in script.commands] == ["SqlCommand", "SetCommand", "SqlCommand"]


def test_e_strings_nested_comments_and_array_slices() -> None:
    assert split_sql("SELECT E'it\\'s; fine'; SELECT 2") == ["SELECT E'it\\'s; fine'", "SELECT 2"]
    assert split_sql("SELECT /* a /* b; */ c; */ 1; SELECT 2") == [
        "SELECT /* a /* b; */ c; */ 1",
        "SELECT 2",
    ]
    (cmd,) = parse_script("\\set i 1\nSELECT (ARRAY[1,2,3])[1:2], :i;").statements
    assert cmd.params == ("i",)


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("\\set x 99999999999999999999\nSELECT 1;", "too large for a 64-bit integer"),
        ("\\sleep \u00b2\nSELECT 1;", "integer or a :variable"),
        ("\\sleep 99999999999999999999\nSELECT 1;", "integer or a :variable"),
    ],
)
def test_out_of_range_literals(script: str, message: str) -> None:
    with pytest.raises(ScriptError, match=message):
        parse_script(script)
