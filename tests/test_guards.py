"""The guards that keep the design as ``docs/architecture.md`` draws it, run with the suite.

They run as tests so that the README's one test command (and so CI) checks them: the layer
contracts (import-linter, configured in ``pyproject.toml``), mypy in strict mode, and ruff's lint
and format checks. Each runs its tool in a child process on the repository's own configuration
and fails with the tool's output.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from wannabet.render.format import MISSING

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    return subprocess.run(
        args, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False, env=env
    )


def _tool(name: str) -> str:
    """The tool installed beside this interpreter (the ``test`` extra installs them all)."""
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert found, f"{name} is not installed: python -m pip install '.[test]'"
    return found


class TestGuards:
    def test_layers_hold(self) -> None:
        proc = _run(_tool("lint-imports"), "--no-cache")
        assert proc.returncode == 0, proc.stdout + proc.stderr

    def test_mypy_strict(self) -> None:
        proc = _run(sys.executable, "-m", "mypy", "--no-incremental")
        assert proc.returncode == 0, proc.stdout + proc.stderr

    def test_ruff_lint(self) -> None:
        proc = _run(_tool("ruff"), "check", "--no-cache", "src", "tests")
        assert proc.returncode == 0, proc.stdout + proc.stderr

    def test_ruff_format(self) -> None:
        proc = _run(_tool("ruff"), "format", "--check", "--no-cache", "src", "tests")
        assert proc.returncode == 0, proc.stdout + proc.stderr


# The rules of issue #12 that no linter knows, as scans of each source file's whole text (so a
# statement split over lines is still seen).
SRC = ROOT / "src" / "wannabet"
# Every table and view the store creates, read from its own DDL, so a new one is guarded at once.
RESULTS_TABLES = "|".join(
    sorted(
        set(
            re.findall(
                r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:TABLE|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)",
                "".join(p.read_text() for p in (SRC / "store").glob("*.py")),
            )
        )
    )
)
# In capitals anywhere: lower case would match prose ("from samples").
SQL_OVER_RESULTS = re.compile(rf"\b(FROM|JOIN|INTO|UPDATE|TABLE)\s+({RESULTS_TABLES})\b")
# In any case inside a string that reads as SQL (not a docstring): `"select * from samples"`.
SQL_STATEMENT = re.compile(r"\b(select|insert|update|delete|create|copy)\b", re.IGNORECASE)
SQL_OVER_RESULTS_ANY_CASE = re.compile(
    rf"\b(from|join|into|update|table)\s+({RESULTS_TABLES})\b", re.IGNORECASE
)
# a kind (a target's, a run's) or a URL scheme compared with a database's name: `kind ==
# "postgresql"`, `url.scheme in ("mysql", ...)`, `case "sqlite":`, `.startswith("postgres")`
DATABASES = "sqlite|postgresql|postgres|mysql|mariadb|duckdb|oracle|dbapi"
KIND_COMPARISON = re.compile(
    rf"\b\w*(kind|scheme)\s*(==|!=|in\b|not\s+in\b)\s*[(\[{{]?\s*[\"']({DATABASES})[\"']"
    rf"|^\s*case\s+[\"']({DATABASES})[\"']"
    rf"|\b\w*(kind|scheme|url|target)\w*\.startswith\(\s*[(]?\s*[\"']({DATABASES})",
    re.IGNORECASE | re.MULTILINE,
)
# `import wannabet._engine`, `from wannabet._engine import X`, `from wannabet import _engine, x`,
# `importlib.import_module("wannabet._engine")`
ENGINE_IMPORT = re.compile(
    r"^\s*(import\s+wannabet\._engine\b|from\s+wannabet\._engine\s+import\b"
    r"|from\s+wannabet\s+import\s+\(?[^#\n]*\b_engine\b)"
    r"|import_module\(\s*[\"']wannabet\._engine\b",
    re.MULTILINE,
)

# the default significance level written out: `alpha: float = 0.05`, `.get("alpha", 0.05)`
ALPHA_LITERAL = re.compile(r"\balpha\b[^\n]{0,40}?(?<![\d.])0\.05\b(?!\d)", re.IGNORECASE)


def _hits(pattern: re.Pattern[str], outside: str) -> list[str]:
    """``file:line: text`` of every match in the package's sources outside ``outside``."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if SRC / outside in path.parents:
            continue
        text = path.read_text()
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"{path.relative_to(ROOT)}:{line}: {' '.join(m.group(0).split())}")
    return found


def _sql_strings(text: str) -> list[tuple[int, str]]:
    """The string constants of a module that are not docstrings, with their lines (an
    f-string's literal parts joined)."""
    tree = ast.parse(text)
    skipped = set()  # docstrings, and the literal parts of f-strings
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                skipped.add(id(body[0].value))
        if isinstance(node, ast.JoinedStr):  # its parts are read with it, below
            skipped.update(id(v) for v in node.values)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = [v.value for v in node.values if isinstance(v, ast.Constant)]
            out.append((node.lineno, " ? ".join(str(p) for p in parts)))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skipped
        ):
            out.append((node.lineno, node.value))
    return out


def _sql_hits_in_any_case(outside: str) -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if SRC / outside in path.parents:
            continue
        for line, string in _sql_strings(path.read_text()):
            m = SQL_OVER_RESULTS_ANY_CASE.search(string)
            if m and SQL_STATEMENT.search(string):
                found.append(f"{path.relative_to(ROOT)}:{line}: {' '.join(m.group(0).split())}")
    return found


def test_sql_over_the_results_tables_lives_in_the_store() -> None:
    hits = _hits(SQL_OVER_RESULTS, outside="store") + _sql_hits_in_any_case(outside="store")
    assert not hits, "move these queries into wannabet.store:\n" + "\n".join(hits)


def test_no_backend_is_chosen_by_comparing_its_kind() -> None:
    hits = _hits(KIND_COMPARISON, outside="backends")
    assert not hits, "ask wannabet.backends (backend_for) instead:\n" + "\n".join(hits)


def test_only_the_engine_package_imports_the_extension() -> None:
    # The one other owner: the distribution functions the analysis layer (below the engine's)
    # takes from the extension (docs/architecture.md, "The engine boundary").
    numeric = "src/wannabet/analysis/distributions.py:"
    hits = [h for h in _hits(ENGINE_IMPORT, outside="engine") if not h.startswith(numeric)]
    assert not hits, "call the extension through wannabet.engine:\n" + "\n".join(hits)


def test_the_default_alpha_is_written_once() -> None:
    # The analysis layer's functions keep their own documented defaults (it depends on NumPy
    # and SciPy alone); everything above it takes wannabet.model.DEFAULT_ALPHA.
    hits = _hits(ALPHA_LITERAL, outside="analysis")
    assert not hits, "use wannabet.model.DEFAULT_ALPHA:\n" + "\n".join(hits)


def _dash_literals(text: str) -> list[int]:
    """The lines of a module's string constants that are a lone "–" (the missing figure), not
    the dash of a range inside an f-string (``f"{low}–{high}"``)."""
    tree = ast.parse(text)
    in_fstrings = {
        id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value == MISSING and id(node) not in in_fstrings
    ]


def _missing_spelled_out() -> list[str]:
    render = SRC / "render"
    hits = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sorted(render.rglob("*.py"))
        if path != render / "format.py"
        for line in _dash_literals(path.read_text())
    ]
    for path in sorted((render / "templates").glob("*")):
        text = path.read_text()
        hits += [
            f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
            for m in re.finditer(rf"[\"']{MISSING}[\"']", text)
        ]
    return hits


def test_render_writes_a_missing_figure_as_format_missing() -> None:
    # One spelling of "no figure here", so that changing it changes every output.
    hits = _missing_spelled_out()
    assert not hits, "write wannabet.render.format.MISSING:\n" + "\n".join(hits)


def test_the_guards_see_what_they_guard() -> None:
    """Each scan finds its pattern where it is allowed and in the forms it claims to catch, so
    none of them passes by matching nothing at all."""
    assert _hits(SQL_OVER_RESULTS, outside="engine")  # the store's own queries
    assert SQL_OVER_RESULTS.search('"SELECT count(*)\n    FROM\n  samples WHERE run_id = ?"')
    assert not SQL_OVER_RESULTS.search("the mean of the values from samples of one condition")
    assert {"profiles", "sample_results", "samples", "transaction_latency"} <= set(
        RESULTS_TABLES.split("|")
    )
    module = (
        '"""Reads samples from the store: select ... from samples."""\n'
        'Q = "select count(*) from samples where run_id = ?"\n'
        'P = f"select * from profiles where run_id = {run}"\n'
        'NOTE = "the mean of the values from samples"\n'
    )
    found = [
        (line, s)
        for line, s in _sql_strings(module)
        if SQL_OVER_RESULTS_ANY_CASE.search(s) and SQL_STATEMENT.search(s)
    ]
    assert [line for line, _ in found] == [2, 3], found  # not the docstring, not the prose
    assert KIND_COMPARISON.search('if target.kind == "postgresql":')
    assert KIND_COMPARISON.search('if url.scheme in ("mysql", "mariadb"):')
    assert KIND_COMPARISON.search('    match kind:\n        case "sqlite":')
    assert KIND_COMPARISON.search('if target_url.startswith("postgres"):')
    assert KIND_COMPARISON.search("if run.target_kind in ('sqlite', 'duckdb'):")
    assert _dash_literals('X = "–" if v is None else f"{lo}–{hi}"\nY = f"{v or \'–\'}"') == [1, 2]
    assert _hits(ENGINE_IMPORT, outside="store")  # the engine package's own imports
    assert _hits(ALPHA_LITERAL, outside="store")  # the analysis layer's own defaults
    for form in ('alpha = data.get("alpha", 0.05)', "alpha or 0.05", "alpha: AlphaOption = 0.05"):
        assert ALPHA_LITERAL.search(form), form
    assert not ALPHA_LITERAL.search("alpha: float = DEFAULT_ALPHA, rope_pct: float = 0.055")
    for form in (
        "import wannabet._engine",
        "from wannabet._engine import WaitCounts",
        "from wannabet import _engine",
        "from wannabet import version, _engine",
        'native = importlib.import_module("wannabet._engine")',
    ):
        assert ENGINE_IMPORT.search(form), form
