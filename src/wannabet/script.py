"""The pgbench-compatible script dialect: text → :class:`wannabet.model.Script`.

Supported, as in pgbench:

- ``\\set name expression`` with pgbench's expression language: integers, floats, booleans
  and NULL; arithmetic, comparison, bitwise and logical operators (pgbench's AND, OR and NOT
  on booleans, ``IS [NOT] NULL|TRUE|FALSE``, ``ISNULL``, ``NOTNULL``), ``CASE``, parentheses,
  and the functions in :data:`FUNCTIONS`;
- ``\\sleep n [us|ms|s]`` for think time;
- ``\\if`` / ``\\elif`` / ``\\else`` / ``\\endif``;
- SQL statements ending with ``;`` (several per transaction, explicit ``BEGIN``/``COMMIT``
  allowed), with ``:name`` placeholders that become bound parameters, or ending with
  ``\\gset [prefix]`` / ``\\aset [prefix]``, which store the result's columns in variables.

Errors are :class:`ScriptError` with a line number relative to the script; :mod:`wannabet.spec`
turns them into file lines.

Where statements end and where ``:name`` placeholders are depends on the target's SQL lexing
(:data:`wannabet.model.SqlDialect`, owned by the backend): ``'it\\'s; here'`` is one string on
MySQL and a string followed by SQL on PostgreSQL, and ``#`` starts a comment on MySQL only.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Iterable

from wannabet.model import (
    BinOp,
    BitNot,
    BoolLit,
    BranchCommand,
    Call,
    Case,
    Command,
    CopyCommand,
    Expr,
    FloatLit,
    IntLit,
    Is,
    Logic,
    Neg,
    Not,
    NullLit,
    PipelineCommand,
    Script,
    SetCommand,
    SleepCommand,
    SqlCommand,
    SqlDialect,
    VarRef,
)

#: function name → (minimum, maximum) number of arguments (None: no maximum)
FUNCTIONS: dict[str, tuple[int, int | None]] = {
    "random": (2, 2),
    "random_gaussian": (3, 3),
    "random_exponential": (3, 3),
    "random_zipfian": (3, 3),
    "abs": (1, 1),
    "least": (1, None),
    "greatest": (1, None),
    "int": (1, 1),
    "double": (1, 1),
    "sqrt": (1, 1),
    "pi": (0, 0),
    "exp": (1, 1),
    "ln": (1, 1),
    "pow": (2, 2),
    "power": (2, 2),
    "mod": (2, 2),
    "hash": (1, 2),
    "hash_fnv1a": (1, 2),
    "hash_murmur2": (1, 2),
    "permute": (2, 3),
    "debug": (1, 1),
}

#: functions whose last argument, a seed, defaults to ``:default_seed`` as in pgbench: the
#: engine always gets it (their number of arguments there)
SEEDED_FUNCTIONS = {"hash": 2, "hash_fnv1a": 2, "hash_murmur2": 2, "permute": 3}
#: other names of functions, as pgbench has them
FUNCTION_ALIASES = {"power": "pow"}

META_COMMANDS = (
    "set",
    "sleep",
    "if",
    "elif",
    "else",
    "endif",
    "gset",
    "aset",
    "copy",
    "startpipeline",
    "syncpipeline",
    "endpipeline",
)
_KEYWORDS = {
    "and", "or", "not", "is", "isnull", "notnull", "null", "true", "false",
    "case", "when", "then", "else", "end",
}  # fmt: skip
#: ``\\gset``/``\\aset`` followed by more than a prefix word (a line _CAPTURE did not take)
_BAD_CAPTURE = re.compile(r"(?<!\\)\\([ga]set)(?=\s|$)", re.I)
#: a line that ends with ``\\gset [prefix]`` or ``\\aset [prefix]``
_CAPTURE = re.compile(r"(?P<sql>.*?)\\(?P<kind>[ga]set)(?:[ \t]+(?P<prefix>\w+))?\s*$", re.S | re.I)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOKEN = re.compile(
    r"\s*(?:(?P<float>\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\.\d+(?:[eE][-+]?\d+)?)"
    r"|(?P<int>\d+)|:(?P<var>[A-Za-z0-9_]+)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op><=|>=|<>|!=|<<|>>|[-+*/%(),<>=&|#~]))"
)


class ScriptError(ValueError):
    """A script is malformed; ``line`` counts from 1 at the script's first line."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


def parse_script(
    text: str, *, known_variables: Iterable[str] = (), dialect: SqlDialect = "standard"
) -> Script:
    """Parse a transaction script.

    Parameters
    ----------
    text
        The script, as written in the experiment file.
    known_variables
        Variables defined outside the script (workload variables, ``client_id``, ``scale``).
    dialect
        How the target lexes SQL: where quotes and comments are, so where statements end and
        which ``:name`` are placeholders.

    Raises
    ------
    ScriptError
        On an unknown meta-command, a malformed expression, an unknown variable, or a script
        without any SQL statement.
    """
    scope = _Scope(set(known_variables), dialect)
    commands: list[Command] = []
    sql_buffer: list[str] = []
    sql_start = 0
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        lineno = i + 1
        raw = lines[i]
        stripped = raw.strip()
        capture = _CAPTURE.fullmatch(stripped) if "\\" in stripped else None
        if capture and (sql_buffer or not stripped.startswith("\\") or _is_capture(stripped)):
            if not sql_buffer:
                sql_start = lineno
            sql = "\n".join([*sql_buffer, capture["sql"]])
            _capture(commands, sql, sql_start, lineno, capture, scope)
            sql_buffer = []
            i += 1
            continue
        bad = _BAD_CAPTURE.search(stripped) if "\\" in stripped else None
        if bad:
            word = bad[1].lower()
            raise ScriptError(
                f"\\{word} ends an SQL statement and takes at most one prefix word:"
                f" SELECT ... \\{word} [prefix]",
                lineno,
            )
        if not sql_buffer and stripped.startswith("\\"):
            # Meta-commands end at the end of the line, unless it ends with a backslash.
            while raw.rstrip().endswith("\\") and i + 1 < len(lines) and raw.strip() != "\\":
                i += 1
                raw = raw.rstrip()[:-1] + " " + lines[i]
            commands.append(_parse_meta(raw.strip(), lineno, scope))
            i += 1
            continue
        if not sql_buffer:
            if not stripped or stripped.startswith("--"):
                i += 1
                continue
            sql_start = lineno
        sql_buffer.append(raw)
        statements, rest = split_statements("\n".join(sql_buffer), dialect)
        for statement in statements:
            commands.append(_parse_sql(statement, sql_start, scope))
        sql_buffer = [rest] if rest.strip() and not _only_comments(rest, dialect) else []
        if statements and sql_buffer:
            sql_start = lineno
        i += 1
    if sql_buffer:
        # The last statement may omit its semicolon, as pgbench allows.
        last = joined("\n".join(sql_buffer), dialect).strip()
        commands.append(_parse_sql(last, sql_start, scope))
    if not any(isinstance(c, SqlCommand | CopyCommand) for c in commands):
        raise ScriptError("the script has no SQL statement; add at least one, ending with ;", 1)
    _check_branches(commands)
    _check_pipelines(commands)
    return Script(
        text=text,
        commands=tuple(commands),
        captured_variables=tuple(sorted(scope.deferred)),
        dialect=dialect,
    )


def parse_script_for_any_target(text: str, *, known_variables: Iterable[str] = ()) -> Script:
    """:func:`parse_script` before the target is known: the standard reading, else MySQL's.

    An experiment file is read before ``--target`` names where it runs, and a script valid on
    MySQL may not read under the standard rules (``# it's`` is a comment there, an open quote
    here). The run reads each script again as its target lexes SQL and refuses it then, with
    its line, if that reading fails.

    Raises
    ------
    ScriptError
        The standard reading's error, when no reading takes the script.
    """
    known = set(known_variables)
    try:
        return parse_script(text, known_variables=known)
    except ScriptError as standard:
        try:
            return parse_script(text, known_variables=known, dialect="mysql")
        except ScriptError:
            raise standard from None


class _Scope:
    """The variables a script may read at a point: those known before it and those its
    ``\\set`` commands defined. After a ``\\gset``/``\\aset`` any name may be a result
    column; such names are collected for the engine to check against the real columns."""

    def __init__(self, defined: set[str], dialect: SqlDialect) -> None:
        self.defined = defined
        self.dialect = dialect
        self.capturing = False
        self.deferred: set[str] = set()


def _is_capture(line: str) -> bool:
    return re.fullmatch(r"\\[ga]set(?:[ \t]+\w+)?", line) is not None


def _capture(
    commands: list[Command],
    sql: str,
    sql_start: int,
    lineno: int,
    m: re.Match[str],
    scope: _Scope,
) -> None:
    """A statement ended by ``\\gset``/``\\aset`` (on its last line or the next one)."""
    kind = m["kind"].lower()  # as pgbench, any case: \GSET
    prefix = m["prefix"] or ""
    statements, rest = split_statements(sql, scope.dialect)
    if rest.strip() and not _only_comments(rest, scope.dialect):
        statements.append(joined(rest, scope.dialect).strip())
    elif not statements:
        # Alone on a line right after a finished statement: it applies to that one.
        last = commands[-1] if commands else None
        if not isinstance(last, SqlCommand) or last.capture is not None:
            raise ScriptError(
                f"\\{kind} must follow an SQL statement, e.g. SELECT ... \\{kind}", lineno
            )
        commands[-1] = dataclasses.replace(last, capture=(kind, prefix))  # type: ignore[arg-type]
        scope.capturing = True
        return
    for statement in statements[:-1]:
        commands.append(_parse_sql(statement, sql_start, scope))
    command = _parse_sql(statements[-1], sql_start, scope)
    if command.compound:
        raise ScriptError(
            f"\\{kind} after statements joined with \\; is not supported; end the statement"
            " it reads with ; and put the others before it",
            lineno,
        )
    commands.append(dataclasses.replace(command, capture=(kind, prefix)))  # type: ignore[arg-type]
    scope.capturing = True


def _check_branches(commands: list[Command]) -> None:
    """``\\if`` ... ``\\endif`` nest properly; ``\\elif``/``\\else`` only inside, in order."""
    open_ifs: list[tuple[int, bool]] = []  # (line of the \if, an \else was seen)
    for c in commands:
        if not isinstance(c, BranchCommand):
            continue
        if c.kind == "if":
            open_ifs.append((c.line, False))
            continue
        if not open_ifs:
            raise ScriptError(f"\\{c.kind} without a \\if before it", c.line)
        if_line, seen_else = open_ifs[-1]
        if c.kind == "endif":
            open_ifs.pop()
        elif seen_else:
            raise ScriptError(f"\\{c.kind} after \\else (of the \\if on line {if_line})", c.line)
        elif c.kind == "else":
            open_ifs[-1] = (if_line, True)
    if open_ifs:
        raise ScriptError("\\if without \\endif; close it with \\endif", open_ifs[-1][0])


def _check_pipelines(commands: list[Command]) -> None:
    """``\\startpipeline`` ... ``\\endpipeline`` pair up, and what is inside needs no result
    before the pipeline ends: no ``\\gset``/``\\aset``, ``\\if`` or ``\\copy`` inside."""
    start: int | None = None
    for c in commands:
        if isinstance(c, PipelineCommand):
            if c.kind == "start":
                if start is not None:
                    raise ScriptError(
                        f"\\startpipeline inside the pipeline started on line {start}", c.line
                    )
                start = c.line
            elif start is None:
                raise ScriptError(f"\\{c.kind}pipeline without \\startpipeline before it", c.line)
            elif c.kind == "end":
                start = None
            continue
        if start is None:
            continue
        refused: tuple[str, str] | None = None
        if isinstance(c, SqlCommand) and c.capture is not None:
            refused = (f"\\{c.capture[0]}", "its result would arrive only at \\endpipeline")
        elif isinstance(c, BranchCommand):
            refused = (f"\\{c.kind}", "a branch cannot depend on results still to come")
        elif isinstance(c, CopyCommand):
            refused = ("\\copy", "a COPY cannot be pipelined")
        if refused is not None:
            what, why = refused
            raise ScriptError(
                f"{what} inside the pipeline started on line {start} ({why}); end the pipeline"
                " first",
                c.line,
            )
    if start is not None:
        raise ScriptError("\\startpipeline without \\endpipeline; end it in the script", start)


def _only_comments(text: str, dialect: SqlDialect = "standard") -> bool:
    """True when ``text`` holds nothing but white space and comments."""
    return _strip_comments(text, dialect).strip() == ""


def _strip_comments(text: str, dialect: SqlDialect = "standard") -> str:
    """``text`` without its comments; quoted parts are kept as they are."""
    out, i, n = [], 0, len(text)
    while i < n:
        skipped = _skip(text, i, dialect)
        if skipped is None:
            out.append(text[i])
            i += 1
            continue
        kind, end = skipped
        if kind == "quote":
            out.append(text[i:end])
        i = end
    return "".join(out)


def _block_comment_end(text: str, i: int, *, nested: bool = True) -> int:
    """The offset after the ``/* ... */`` comment starting at ``i``; they nest in PostgreSQL,
    not in MySQL."""
    if not nested:
        close = text.find("*/", i + 2)
        return len(text) if close < 0 else close + 2
    depth, i, n = 0, i, len(text)
    while i < n:
        if text.startswith("/*", i):
            depth += 1
            i += 2
        elif text.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        else:
            i += 1
    return n


def _parse_meta(line: str, lineno: int, scope: _Scope) -> Command:
    # As pgbench: the name in any case (\SET), and any white space (tabs too) between words.
    word, rest = ([*line[1:].split(None, 1), "", ""])[:2]
    word = word.lower()
    rest = rest.strip()
    if word in ("if", "elif"):
        if not rest:
            raise ScriptError(f"\\{word} needs a condition, e.g. \\{word} :n > 10", lineno)
        condition = _ExprParser(rest, lineno, scope).parse()
        return BranchCommand(kind=word, expr=condition, line=lineno)  # type: ignore[arg-type]
    if word in ("else", "endif"):
        if rest:
            raise ScriptError(f"\\{word} takes nothing after it (got {rest!r})", lineno)
        return BranchCommand(kind=word, expr=None, line=lineno)  # type: ignore[arg-type]
    if word == "copy":
        return _parse_copy(rest, lineno, scope)
    if word in ("startpipeline", "syncpipeline", "endpipeline"):
        if rest:
            raise ScriptError(f"\\{word} takes nothing after it (got {rest!r})", lineno)
        kind = word.removesuffix("pipeline")
        return PipelineCommand(kind=kind, line=lineno)  # type: ignore[arg-type]
    if word == "set":
        name, expr_text = ([*rest.split(None, 1), "", ""])[:2]
        if not _NAME.fullmatch(name):
            raise ScriptError(
                f"\\set needs a variable name and an expression, e.g. '\\set id random(1, 1000)'"
                f" (got {line!r})",
                lineno,
            )
        if not expr_text.strip():
            raise ScriptError(f"\\set {name} needs an expression after the name", lineno)
        value_expr = _ExprParser(expr_text, lineno, scope).parse()
        scope.defined.add(name)
        return SetCommand(variable=name, expr=value_expr, line=lineno)
    if word == "sleep":
        parts = rest.split()
        if not parts or len(parts) > 2:
            raise ScriptError(
                "\\sleep needs a duration and an optional unit: \\sleep 10 ms", lineno
            )
        unit = parts[1].lower() if len(parts) == 2 else "s"
        if unit not in ("us", "ms", "s"):
            raise ScriptError(f"\\sleep unit {unit!r} is not one of us, ms, s", lineno)
        value = parts[0]
        if value.startswith(":"):
            expr: Expr = VarRef(_known(value[1:], lineno, scope))
        elif re.fullmatch(r"[0-9]{1,18}", value):
            expr = IntLit(int(value))
        else:
            raise ScriptError(f"\\sleep takes an integer or a :variable, not {value!r}", lineno)
        return SleepCommand(expr=expr, unit=unit, line=lineno)  # type: ignore[arg-type]
    hint = difflib.get_close_matches(word, META_COMMANDS, n=1)
    suggestion = f"; did you mean \\{hint[0]}?" if hint else ""
    supported = ", ".join(f"\\{m}" for m in META_COMMANDS)
    raise ScriptError(f"unknown meta-command \\{word} (supported: {supported}){suggestion}", lineno)


_COPY = re.compile(
    r"(?P<table>[A-Za-z_][\w.$]*|\"[^\"]+\")\s*(?:\((?P<columns>[^)]*)\))?\s+from\s+(?P<source>.+)",
    re.I | re.S,
)
_COPY_USAGE = (
    "\\copy needs: \\copy table [(columns)] FROM 'file' [(options)]"
    " or \\copy table [(columns)] FROM generate_series(first, last)"
)


def _parse_copy(rest: str, lineno: int, scope: _Scope) -> CopyCommand:
    m = _COPY.fullmatch(rest.strip())
    if not m:
        raise ScriptError(_COPY_USAGE, lineno)
    columns = tuple(c.strip() for c in (m["columns"] or "").split(",") if c.strip())
    source = m["source"].strip()
    series = re.fullmatch(r"generate_series\s*\((?P<args>.*)\)", source, re.I | re.S)
    if series:
        args = _split_top_level(series["args"])
        if len(args) != 2:
            raise ScriptError("generate_series() in \\copy takes two bounds: (first, last)", lineno)
        first, last = (_ExprParser(a, lineno, scope).parse() for a in args)
        return CopyCommand(m["table"], columns, None, (first, last), (), "", lineno)
    quoted = re.match(r"'((?:[^']|'')*)'", source)
    if not quoted:
        raise ScriptError(_COPY_USAGE + f" (got FROM {source[:40]!r})", lineno)
    path = quoted[1].replace("''", "'")
    tail = source[quoted.end() :].strip()
    tail = re.sub(r"^with\b", "", tail, flags=re.I).strip()
    options_sql = ""
    if tail:
        group = re.fullmatch(r"\((.*)\)", tail, re.S)
        if not group:
            raise ScriptError(
                f"\\copy options go in parentheses, e.g. (FORMAT csv, HEADER); got {tail!r}",
                lineno,
            )
        options_sql = group[1].strip()
    options = tuple(_copy_option(o, lineno) for o in _split_top_level(options_sql) if o.strip())
    return CopyCommand(m["table"], columns, path, None, options, options_sql, lineno)


def _copy_option(text: str, lineno: int) -> tuple[str, str]:
    key, _, value = text.strip().partition(" ")
    value = value.strip()
    if value.startswith("'") and value.endswith("'") and len(value) >= 2:
        value = value[1:-1].replace("''", "'")
    else:
        value = value.lower()
    if not re.fullmatch(r"[A-Za-z_]+", key):
        raise ScriptError(f"cannot read the \\copy option {text.strip()!r}", lineno)
    return key.lower(), value


def _split_top_level(text: str) -> list[str]:
    """``text`` split at commas outside parentheses and quotes."""
    parts, depth, start, quote = [], 0, 0, ""
    for i, c in enumerate(text):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()] if text.strip() else []


def _known(name: str, lineno: int, scope: _Scope) -> str:
    if name not in scope.defined:
        if scope.capturing:
            # Perhaps a column of an earlier \gset/\aset: the engine checks once it knows them.
            scope.deferred.add(name)
            return name
        hint = difflib.get_close_matches(name, sorted(scope.defined), n=1)
        suggestion = f"; did you mean :{hint[0]}?" if hint else ""
        raise ScriptError(
            f"unknown variable :{name}: set it with \\set before use or define it in"
            f" [workload.variables]{suggestion}",
            lineno,
        )
    return name


class _ExprParser:
    """Recursive descent over pgbench's expression grammar, with its precedence (lowest first):
    OR, AND, NOT, IS/ISNULL/NOTNULL, comparisons, bitwise and shifts, + -, * / %, unary."""

    def __init__(self, text: str, lineno: int, scope: _Scope) -> None:
        self.lineno = lineno
        self.scope = scope
        self.text = text
        self.tokens = self._tokenize(text)
        self.pos = 0

    def _tokenize(self, text: str) -> list[tuple[str, str]]:
        tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                bad = text[pos:].strip()[:20]
                raise ScriptError(f"cannot read the expression at {bad!r}", self.lineno)
            kind = m.lastgroup
            assert kind is not None
            value = m.group(kind)
            if kind == "name" and value.lower() in _KEYWORDS:
                kind, value = "kw", value.lower()
            tokens.append((kind, value))
            pos = m.end()
        return tokens

    def _fail(self, what: str) -> ScriptError:
        return ScriptError(f"{what} in expression {self.text.strip()!r}", self.lineno)

    def parse(self) -> Expr:
        expr = self._or()
        if self.pos != len(self.tokens):
            raise self._fail(f"unexpected {self.tokens[self.pos][1]!r}")
        return expr

    def _peek(self) -> tuple[str, str] | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self, value: str, kind: str = "op") -> bool:
        tok = self._peek()
        if tok and tok[0] == kind and tok[1] == value:
            self.pos += 1
            return True
        return False

    def _expect(self, value: str, kind: str = "op") -> None:
        if not self._take(value, kind):
            shown = value.upper() if kind == "kw" else value
            raise self._fail(f"missing {shown}")

    def _or(self) -> Expr:
        left = self._and()
        while self._take("or", "kw"):
            left = Logic("or", left, self._and())
        return left

    def _and(self) -> Expr:
        left = self._not()
        while self._take("and", "kw"):
            left = Logic("and", left, self._not())
        return left

    def _not(self) -> Expr:
        if self._take("not", "kw"):
            return Not(self._not())
        return self._is()

    def _is(self) -> Expr:
        left = self._comparison()
        if self._take("isnull", "kw"):
            return Is(left, None)
        if self._take("notnull", "kw"):
            return Not(Is(left, None))
        if self._take("is", "kw"):
            negated = self._take("not", "kw")
            tok = self._peek()
            values = {"null": None, "true": True, "false": False}
            if not tok or tok[0] != "kw" or tok[1] not in values:
                raise self._fail("IS needs NULL, TRUE or FALSE after it")
            self.pos += 1
            test = Is(left, values[tok[1]])
            return Not(test) if negated else test
        return left

    def _comparison(self) -> Expr:
        left = self._bits()
        tok = self._peek()
        if tok and tok[0] == "op" and tok[1] in ("=", "<>", "!=", "<", "<=", ">", ">="):
            self.pos += 1
            op = "<>" if tok[1] == "!=" else tok[1]
            left = BinOp(op, left, self._bits())  # type: ignore[arg-type]
            nxt = self._peek()
            if nxt and nxt[0] == "op" and nxt[1] in ("=", "<>", "!=", "<", "<=", ">", ">="):
                raise self._fail("comparisons do not chain (write a < b AND b < c)")
        return left

    def _bits(self) -> Expr:
        left = self._sum()
        while (tok := self._peek()) and tok[0] == "op" and tok[1] in ("&", "|", "#", "<<", ">>"):
            self.pos += 1
            left = BinOp(tok[1], left, self._sum())  # type: ignore[arg-type]
        return left

    def _sum(self) -> Expr:
        left = self._product()
        while (tok := self._peek()) and tok[0] == "op" and tok[1] in ("+", "-"):
            self.pos += 1
            left = BinOp(tok[1], left, self._product())  # type: ignore[arg-type]
        return left

    def _product(self) -> Expr:
        left = self._unary()
        while (tok := self._peek()) and tok[0] == "op" and tok[1] in ("*", "/", "%"):
            self.pos += 1
            left = BinOp(tok[1], left, self._unary())  # type: ignore[arg-type]
        return left

    def _unary(self) -> Expr:
        if self._take("-"):
            if self._peek() == ("int", str(2**63)):
                self.pos += 1  # -9223372036854775808: the one literal only a minus makes fit
                return IntLit(-(2**63))
            operand = self._unary()
            if isinstance(operand, IntLit):
                return IntLit(-operand.value)
            if isinstance(operand, FloatLit):
                return FloatLit(-operand.value)
            return Neg(operand)
        if self._take("+"):
            return self._unary()
        if self._take("~"):
            return BitNot(self._unary())
        return self._primary()

    def _primary(self) -> Expr:
        tok = self._peek()
        if tok is None:
            raise ScriptError(f"the expression {self.text.strip()!r} ends too early", self.lineno)
        kind, value = tok
        self.pos += 1
        if kind == "int":
            number = int(value)
            if number > 2**63 - 1:
                raise ScriptError(f"{value} is too large for a 64-bit integer", self.lineno)
            return IntLit(number)
        if kind == "float":
            real = float(value)
            if not math.isfinite(real):
                raise ScriptError(f"{value} is too large for a floating-point number", self.lineno)
            return FloatLit(real)
        if kind == "var":
            return VarRef(_known(value, self.lineno, self.scope))
        if kind == "kw":
            if value in ("true", "false"):
                return BoolLit(value == "true")
            if value == "null":
                return NullLit()
            if value == "case":
                return self._case()
            raise self._fail(f"unexpected {value.upper()}")
        if kind == "name":
            return self._call(value)
        if value == "(":
            inner = self._or()
            if not self._take(")"):
                raise self._fail("missing )")
            return inner
        raise self._fail(f"unexpected {value!r}")

    def _case(self) -> Expr:
        arms: list[tuple[Expr, Expr]] = []
        while self._take("when", "kw"):
            condition = self._or()
            self._expect("then", "kw")
            arms.append((condition, self._or()))
        if not arms:
            raise self._fail("CASE needs at least one WHEN ... THEN ...")
        otherwise = self._or() if self._take("else", "kw") else None
        self._expect("end", "kw")
        return Case(tuple(arms), otherwise)

    def _call(self, name: str) -> Expr:
        name = name.lower()
        if name not in FUNCTIONS:
            hint = difflib.get_close_matches(name, FUNCTIONS, n=1)
            suggestion = f"; did you mean {hint[0]}()?" if hint else ""
            raise ScriptError(
                f"unknown function {name}() (supported: {', '.join(FUNCTIONS)}){suggestion}"
                if not hint
                else f"unknown function {name}(){suggestion}",
                self.lineno,
            )
        if not self._take("("):
            raise ScriptError(f"{name} is a function: write {name}(...)", self.lineno)
        args: list[Expr] = []
        if not self._take(")"):
            args.append(self._or())
            while self._take(","):
                args.append(self._or())
            if not self._take(")"):
                raise ScriptError(f"missing ) after the arguments of {name}()", self.lineno)
        low, high = FUNCTIONS[name]
        if len(args) < low or (high is not None and len(args) > high):
            want = f"{low}" if low == high else f"{low} to {high}" if high else f"at least {low}"
            raise ScriptError(
                f"{name}() takes {want} argument{'s' if (high or low) != 1 else ''},"
                f" got {len(args)}",
                self.lineno,
            )
        _check_literal_parameters(name, args, self.lineno)
        if name in SEEDED_FUNCTIONS and len(args) < SEEDED_FUNCTIONS[name]:
            args.append(VarRef("default_seed"))
        return Call(FUNCTION_ALIASES.get(name, name), tuple(args))


def _check_literal_parameters(name: str, args: list[Expr], lineno: int) -> None:
    """Catch out-of-range constant parameters now rather than as failed transactions later."""
    values = [a.value if isinstance(a, IntLit | FloatLit) else None for a in args]
    if len(values) < 2:  # pi(), abs(x), ...: no bounds to check
        return
    low, high = values[0], values[1]
    # The engine rounds float bounds as pgbench's rint() does, halves to even as round() does:
    # random(1.4, 1.2) is random(1, 1), not an empty range.
    if (
        name.startswith("random")
        and low is not None
        and high is not None
        and round(low) > round(high)
    ):
        rounded = (
            f" (as integers, {round(low)} and {round(high)})"
            if isinstance(low, float) or isinstance(high, float)
            else ""
        )
        raise ScriptError(f"{name}(): the lower bound {low} exceeds {high}{rounded}", lineno)
    if len(values) < 3 or values[2] is None:
        return
    p = values[2]
    if name == "random_gaussian" and p < 2.0:
        raise ScriptError(f"random_gaussian() parameter must be at least 2.0, got {p}", lineno)
    if name == "random_exponential" and p <= 0:
        raise ScriptError(f"random_exponential() parameter must be positive, got {p}", lineno)
    if name == "random_zipfian" and not 1.001 <= p <= 1000:
        raise ScriptError(
            f"random_zipfian() parameter must be between 1.001 and 1000, got {p}", lineno
        )


#: ``{name}`` in a script or the workload's session SQL: the condition's level of factor ``name``
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")


def fill(text: str, levels: dict[str, str]) -> str:
    """``text`` with each ``{factor}`` of a factor in ``levels`` replaced by its level; other
    braces (JSON, arrays) are left alone."""
    return PLACEHOLDER.sub(lambda m: levels.get(m[1], m[0]), text)


def split_sql(text: str, dialect: SqlDialect = "standard") -> list[str]:
    """The statements of a SQL batch, split at semicolons outside quotes and comments."""
    statements, rest = split_statements(text, dialect)
    if rest.strip() and not _only_comments(rest, dialect):
        statements.append(rest.strip())
    return statements


def split_statements(text: str, dialect: SqlDialect = "standard") -> tuple[list[str], str]:
    """Split complete ``;``-terminated statements off ``text``; return them and the remainder.

    Semicolons inside quotes, dollar quotes and comments do not end a statement.
    """
    statements: list[str] = []
    start = 0
    for end in _scan(text, want=";", dialect=dialect):
        if end > 0 and text[end - 1] == "\\":
            continue  # "\\;" joins the next statement to this one: one compound query
        statement = joined(text[start:end], dialect).strip()
        if statement and not _only_comments(statement, dialect):
            statements.append(statement)
        start = end + 1
    return statements, text[start:]


def joined(statement: str, dialect: SqlDialect = "standard") -> str:
    """``statement`` with pgbench's ``\\;`` (outside quotes and comments) made a plain ``;``:
    the statements it joins are sent as one query."""
    cuts = [
        p - 1
        for p in _scan(statement, want=";", dialect=dialect)
        if p > 0 and statement[p - 1] == "\\"
    ]
    for p in reversed(cuts):
        statement = statement[:p] + statement[p + 1 :]
    return statement


def _scan(text: str, *, want: str, dialect: SqlDialect = "standard") -> Iterable[int]:
    """Yield the offsets of ``want`` characters that are outside quotes and comments."""
    i, n = 0, len(text)
    while i < n:
        skipped = _skip(text, i, dialect)
        if skipped is not None:
            i = skipped[1]
            continue
        if text[i] == want:
            yield i
        i += 1


def _skip(text: str, i: int, dialect: SqlDialect) -> tuple[str, int] | None:
    """When a quoted part or a comment starts at ``i``: ("quote" or "comment", the offset
    after it; a line comment ends before its newline); else None. Unterminated ones run to
    the end of ``text``."""
    n = len(text)
    c = text[i]
    if dialect == "mysql":
        if c in "'\"":
            # Backslash escapes (\\' is a quote inside), and a doubled quote ('') continues
            # the string as two strings would: the default sql_mode, not NO_BACKSLASH_ESCAPES.
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            return "quote", min(j + 1, n)
        if c == "`":
            close = text.find("`", i + 1)
            return "quote", n if close < 0 else close + 1
        # "-- " needs white space (or the end) after it: "--1" is minus minus one.
        if c == "#" or (text.startswith("--", i) and (i + 2 >= n or text[i + 2].isspace())):
            close = text.find("\n", i)
            return "comment", n if close < 0 else close
        if text.startswith("/*", i):
            return "comment", _block_comment_end(text, i, nested=False)
        return None
    if c in "eE" and text.startswith("'", i + 1) and (i == 0 or not _word_char(text[i - 1])):
        # E'...' strings take backslash escapes, so \\' does not end them.
        j = i + 2
        while j < n and text[j] != "'":
            j += 2 if text[j] == "\\" else 1
        return "quote", min(j + 1, n)
    if c in "'\"":
        close = text.find(c, i + 1)
        return "quote", n if close < 0 else close + 1
    if text.startswith("--", i):
        close = text.find("\n", i)
        return "comment", n if close < 0 else close
    if text.startswith("/*", i):
        return "comment", _block_comment_end(text, i)
    if c == "$":
        m = re.match(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$", text[i:])
        if m:
            tag = m.group(0)
            close = text.find(tag, i + len(tag))
            return "quote", n if close < 0 else close + len(tag)
    return None


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def _parse_sql(statement: str, lineno: int, scope: _Scope) -> SqlCommand:
    parts: list[str] = []
    params: list[str] = []
    last = 0
    for pos in _scan(statement, want=":", dialect=scope.dialect):
        if statement.startswith("::", pos) or (pos > 0 and statement[pos - 1] == ":"):
            continue  # a PostgreSQL cast, not a placeholder
        # A name starts with a letter or _, so array slices like a[1:2] stay SQL.
        m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", statement[pos + 1 :])
        if not m:
            continue
        line = lineno + statement.count("\n", 0, pos)
        params.append(_known(m.group(0), line, scope))
        parts.append(statement[last:pos])
        last = pos + 1 + m.end()
    parts.append(statement[last:])
    # Only a "\\;" leaves a ; inside one statement.
    cuts = list(_scan(statement, want=";", dialect=scope.dialect))
    joins: tuple[str, ...] = ()
    if cuts:
        # Each statement it joins, without its comments, for an engine that counts the
        # COMMITs among them (MySQL's Com_commit counts each).
        bounds = zip([-1, *cuts], [*cuts, len(statement)], strict=True)
        pieces = [statement[a + 1 : b] for a, b in bounds]
        joins = tuple(t for t in (_strip_comments(x, scope.dialect).strip() for x in pieces) if t)
    return SqlCommand(
        text=statement,
        parts=tuple(parts),
        params=tuple(params),
        line=lineno,
        compound=bool(cuts),
        statements=joins,
    )
