"""Bounds on every input (issue #19, point 4): options have the file's limits, a run too long is
refused before anything runs, deep TOML nesting is one line, --debug keeps the exit code, and a
run that could fill the disk is warned about before it starts."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from wannabet.runner import storage_warning
from wannabet.spec import parse_experiment
from wannabet.testing import cli
from wannabet.testing.cli import one_line_error

# The command line's own contract: exit codes and output of a real process.
wannabet = functools.partial(cli.wannabet, child=True)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sqlite-synchronous.toml"


def _cli(*args: str) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from wannabet.cli import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--samples", "1000000000000"),
        ("--sessions", "100000"),
        ("--seed", str(2**64)),
        ("--server-cores", "1000000"),
        ("--duration", "400d"),
    ],
)
def test_absurd_options_are_refused_before_anything_runs(
    tmp_path: Path, option: str, value: str
) -> None:
    results = tmp_path / "r.duckdb"
    # Through the command's entry point, which makes a usage error one line.
    proc = wannabet("run", str(EXAMPLE), "-r", str(results), option, value)
    assert option in one_line_error(proc, 2)
    assert not results.exists() and not list(tmp_path.iterdir())


def test_a_run_longer_than_30_days_is_refused_with_its_arithmetic(tmp_path: Path) -> None:
    results = tmp_path / "r.duckdb"
    code, _, err = _cli(
        "run", str(EXAMPLE), "-r", str(results), "--samples", "900000", "--duration", "10s"
    )
    assert code == 2
    assert "344 days (3 conditions x 900,000 samples x 11 s)" in err
    assert len(err.strip().splitlines()) == 1 and not results.exists()


def test_nesting_500_levels_deep_is_one_line(tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text('name = "x"\nv = ' + "[" * 500 + "]" * 500 + "\n", encoding="utf-8")
    for command in (["check"], ["run", "-r", str(tmp_path / "r.duckdb")]):
        code, _, err = _cli(command[0], str(deep), *command[1:])
        assert code == 2
        lines = [line for line in err.splitlines() if line.strip()]
        assert "nested more than 32 levels" in lines[0] and "Traceback" not in err
    # Deep enough to refuse, not so deep that the TOML reader gives up: the key and its line.
    deep.write_text('name = "x"\n\nv = ' + "[" * 40 + "]" * 40 + "\n", encoding="utf-8")
    code, _, err = _cli("check", str(deep))
    assert code == 2 and "deep.toml:3: v: arrays or tables nested more than 32" in err


def test_debug_adds_the_traceback_and_keeps_the_exit_code(tmp_path: Path) -> None:
    deep = tmp_path / "deep.toml"
    deep.write_text('name = "x"\nv = ' + "[" * 500 + "]" * 500 + "\n", encoding="utf-8")
    base = [sys.executable, "-m", "wannabet"]
    for args, code in (
        (["run", str(deep), "-r", str(tmp_path / "r.duckdb")], 2),
        (["summary", "-r", str(tmp_path / "missing.duckdb")], None),
        (["run", str(EXAMPLE), "--samples", "0"], 2),
    ):
        plain = subprocess.run([*base, *args], capture_output=True, text=True, check=False)
        debug = subprocess.run([*base, "--debug", *args], capture_output=True, text=True)
        assert plain.returncode != 0 and "Traceback" not in plain.stderr
        assert debug.returncode == plain.returncode, (args, debug.stderr)
        if code is not None:
            assert plain.returncode == code
        # The one line closes the debug output too.
        assert plain.stderr.strip().splitlines()[-1] in debug.stderr


def test_a_run_that_could_fill_the_disk_is_warned_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    experiment = parse_experiment(EXAMPLE.read_text(encoding="utf-8"), file="e.toml")

    def usage(free: int) -> Any:
        return lambda path: shutil._ntuple_diskusage(10**12, 10**12 - free, free)  # type: ignore[attr-defined]

    # 3 conditions x 6 samples x at most 1,000,000 rows x 8 bytes = 144 MB.
    monkeypatch.setattr(shutil, "disk_usage", usage(10**9))
    assert storage_warning(experiment, tmp_path / "r.duckdb") is None
    monkeypatch.setattr(shutil, "disk_usage", usage(10**8))
    warning = storage_warning(experiment, tmp_path / "r.duckdb")
    assert warning is not None and "up to 0.1 GB" in warning and "record = 0.01" in warning
    fraction = parse_experiment(
        EXAMPLE.read_text(encoding="utf-8").replace("seed = 42", 'seed = 42\nrecord = "all"'),
        file="e.toml",
    )
    assert storage_warning(fraction, tmp_path / "r.duckdb") is None  # no bound to check
