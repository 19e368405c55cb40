"""The environment a run records is the server its samples ran on: read again after
``[setup]`` (issue #21: a WAL database was recorded as ``journal_mode = delete``)."""

from __future__ import annotations

from pathlib import Path

from wannabet.store import Store

EXPERIMENT = """\
name = "wal"
[setup]
sql = '''
PRAGMA journal_mode = WAL;
DROP TABLE IF EXISTS t;
CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER);
'''
[workload]
sessions = 1
[[workload.transactions]]
name = "insert"
script = "INSERT INTO t (v) VALUES (1)"
[sampling]
samples = 1
duration = "0.1s"
warmup = "0s"
"""


def test_the_environment_is_recorded_after_the_setup(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from wannabet.cli import app

    file, results = tmp_path / "e.toml", tmp_path / "r.duckdb"
    file.write_text(EXPERIMENT, encoding="utf-8")
    target = tmp_path / "t.db"  # a new file: SQLite's default journal is "delete"
    result = CliRunner().invoke(
        app, ["run", str(file), "-r", str(results), "-t", f"sqlite:///{target}", "--no-stats"]
    )
    assert result.exit_code == 0, result.stderr
    environment = Store(results, read_only=True).run().environment
    assert environment is not None
    assert environment["server_settings"]["journal_mode"] == "wal"
    assert environment["server"] == "SQLite" and environment["host"]
