"""The guards that keep the design as ``docs/architecture.md`` draws it, run with the suite.

They run as tests so that the README's one test command (and so CI) checks them: the layer
contracts (import-linter, configured in ``pyproject.toml``), mypy in strict mode, and ruff's lint
and format checks. Each runs its tool in a child process on the repository's own configuration
and fails with the tool's output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

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


# The rules of issue #12 that no linter knows, as plain scans of the source.
SRC = ROOT / "src" / "wannabet"
RESULTS_TABLES = (
    "runs|conditions|transaction_types|samples|transactions|aggregates|imports|"
    "transaction_latency|schema_version"
)
SQL_OVER_RESULTS = re.compile(rf"\b(FROM|JOIN|INTO|UPDATE|TABLE)\s+({RESULTS_TABLES})\b")
# a kind (a target's, a run's) compared with a database's name: `kind == "postgresql"`
DATABASES = "sqlite|postgresql|postgres|mysql|mariadb|duckdb|oracle|dbapi"
KIND_COMPARISON = re.compile(
    rf"\bkind\s*(==|!=|in\b|not\s+in\b)\s*[(\[{{]?\s*[\"']({DATABASES})[\"']", re.IGNORECASE
)
ENGINE_IMPORT = re.compile(r"^\s*(from\s+wannabet\s+import\s+_engine|import\s+wannabet\._engine)")


def _sources(outside: str) -> list[tuple[Path, int, str]]:
    skip = SRC / outside
    return [
        (path, number, line)
        for path in sorted(SRC.rglob("*.py"))
        if skip not in path.parents
        for number, line in enumerate(path.read_text().splitlines(), start=1)
    ]


def _where(hits: list[tuple[Path, int, str]]) -> str:
    return "\n".join(f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p, n, line in hits)


def test_sql_over_the_results_tables_lives_in_the_store() -> None:
    hits = [h for h in _sources("store") if SQL_OVER_RESULTS.search(h[2])]
    assert not hits, "move these queries into wannabet.store:\n" + _where(hits)


def test_no_backend_is_chosen_by_comparing_its_kind() -> None:
    hits = [h for h in _sources("backends") if KIND_COMPARISON.search(h[2])]
    assert not hits, "ask wannabet.backends (backend_for) instead:\n" + _where(hits)


def test_only_the_engine_package_imports_the_extension() -> None:
    hits = [h for h in _sources("engine") if ENGINE_IMPORT.search(h[2])]
    assert not hits, "call the extension through wannabet.engine:\n" + _where(hits)


def test_the_guards_see_what_they_guard() -> None:
    """Each scan finds its pattern where it is allowed, so none of them passes by matching
    nothing at all."""
    store = [
        line for path in (SRC / "store").rglob("*.py") for line in path.read_text().splitlines()
    ]
    assert any(SQL_OVER_RESULTS.search(line) for line in store)
    assert KIND_COMPARISON.search('if target.kind == "postgresql":')
    engine = [
        line for path in (SRC / "engine").rglob("*.py") for line in path.read_text().splitlines()
    ]
    assert any(ENGINE_IMPORT.search(line) for line in engine)
