"""Where statements end and which ``:name`` are placeholders, as each target lexes SQL: the
standard rules (PostgreSQL, SQLite, DuckDB) and MySQL's (backslash escapes, backticks, ``#``
and ``-- `` comments, comments that do not nest). Each case is what the server itself reads:
the MariaDB test in ``tests/test_mysql.py`` runs such a script and set-up for real."""

from __future__ import annotations

import pytest

from wannabet.model import SqlCommand
from wannabet.script import (
    ScriptError,
    parse_script,
    parse_script_for_any_target,
    split_sql,
)


@pytest.mark.parametrize(
    ("sql", "standard", "mysql"),
    [
        # \' ends a standard string (the backslash is a character); on MySQL it is a quote.
        (
            r"SELECT 'it\'s; x'; SELECT 2",
            [r"SELECT 'it\'s", "x'; SELECT 2"],
            [r"SELECT 'it\'s; x'", "SELECT 2"],
        ),
        (
            r'SELECT "a\"; b"; SELECT 2',
            [r'SELECT "a\"', 'b"; SELECT 2'],
            [r'SELECT "a\"; b"', "SELECT 2"],
        ),
        # Backticks quote a MySQL identifier.
        (
            "SELECT `a;b` FROM t; SELECT 2",
            ["SELECT `a", "b` FROM t", "SELECT 2"],
            ["SELECT `a;b` FROM t", "SELECT 2"],
        ),
        # '#' starts a comment on MySQL only.
        (
            "SELECT 1 # c; d\n; SELECT 2",
            ["SELECT 1 # c", "d", "SELECT 2"],
            ["SELECT 1 # c; d", "SELECT 2"],
        ),
        # MySQL's "--" is a comment only before white space: 5--1 is five minus minus one.
        ("SELECT 5--1; SELECT 2", ["SELECT 5--1; SELECT 2"], ["SELECT 5--1", "SELECT 2"]),
        (
            "SELECT 5 -- one; two\n; SELECT 2",
            ["SELECT 5 -- one; two", "SELECT 2"],
            ["SELECT 5 -- one; two", "SELECT 2"],
        ),
        # Comments nest in PostgreSQL, not in MySQL.
        (
            "SELECT /* a /* b */ ; */ 1; SELECT 2",
            ["SELECT /* a /* b */ ; */ 1", "SELECT 2"],
            ["SELECT /* a /* b */", "*/ 1", "SELECT 2"],
        ),
        # Both: doubled quotes, and standard's dollar quotes (plain text on MySQL).
        (
            "SELECT 'a''; b'; SELECT 2",
            ["SELECT 'a''; b'", "SELECT 2"],
            ["SELECT 'a''; b'", "SELECT 2"],
        ),
        (
            "SELECT $$a; b$$; SELECT 2",
            ["SELECT $$a; b$$", "SELECT 2"],
            ["SELECT $$a", "b$$", "SELECT 2"],
        ),
    ],
)
def test_statements_end_where_each_server_reads_their_end(
    sql: str, standard: list[str], mysql: list[str]
) -> None:
    assert split_sql(sql) == standard
    assert split_sql(sql, "mysql") == mysql


def _params(script: str, dialect: str) -> list[tuple[str, ...]]:
    parsed = parse_script(script, dialect=dialect)  # type: ignore[arg-type]
    return [c.params for c in parsed.commands if isinstance(c, SqlCommand)]


def test_placeholders_inside_mysql_strings_comments_and_identifiers_are_text() -> None:
    script = (
        "\\set id 1\n"
        "# the row of :id; ignored\n"
        'SELECT `x:id`, \'it\\\'s :id\', "say \\":id\\"" FROM t WHERE id = :id; -- and :id\n'
    )
    assert _params(script, "mysql") == [("id",)]
    # The standard reading finds a statement in the comment and more placeholders.
    assert _params(script, "standard") != [("id",)]


def test_a_script_only_mysql_reads_is_taken_before_the_target_is_known() -> None:
    script = "# the row of :nothing\nSELECT 1;\n"
    with pytest.raises(ScriptError, match="nothing"):
        parse_script(script)
    parsed = parse_script_for_any_target(script)
    assert parsed.dialect == "mysql" and len(parsed.statements) == 1
    # A script neither reads gets the standard reading's error.
    with pytest.raises(ScriptError, match="unknown variable"):
        parse_script_for_any_target("SELECT :nothing;")


def test_a_commit_joined_in_a_mysql_comment_is_not_a_statement() -> None:
    # The statements a \; compound sends, as the engine counts their COMMITs.
    [command] = parse_script(
        "BEGIN \\; SELECT 1 # no; COMMIT\n \\; COMMIT;", dialect="mysql"
    ).commands
    assert isinstance(command, SqlCommand) and command.compound
    assert command.statements == ("BEGIN", "SELECT 1", "COMMIT")
