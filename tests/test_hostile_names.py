"""Hostile names (issue #19, point 5): escape sequences, bidi controls and newlines in the
experiment, factor, level and transaction names reach no output as raw control characters, and
never break a row, in any command or format."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from wannabet.cli import app

# Raw control characters: C0 (but the newline between lines of output and the tab), C1,
# bidi controls and the Unicode line and paragraph separators.
RAW = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
)
TAIL = "NEWLINE_TAIL"

HOSTILE = f"""\
name = "evil\\u001b[2J\\u001b]0;pwned\\u0007run\\u202e\\n{TAIL}"
description = "clears\\u001b[2J the screen"
[workload]
sessions = 1
[[workload.transactions]]
name = "t\\u001b[1mbold\\n{TAIL}"
script = "SELECT length('{{f}}');"
[[factors]]
name = "f"
levels = ["a\\u001b[31mred", "b\\u202e\\u2066\\n{TAIL}"]
[sampling]
samples = 2
duration = "0.1s"
warmup = "0s"
seed = 1
"""


def _cli(*args: str) -> tuple[int, str]:
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout + result.stderr


def _clean(text: str, where: str) -> None:
    raw = RAW.search(text)
    assert raw is None, (
        f"{where}: raw {raw.group()!r} in {text[max(0, raw.start() - 40) : raw.end() + 40]!r}"
    )
    for line in text.splitlines():
        assert not re.match(rf"^[\s│┃|,\"]*{TAIL}", line), f"{where}: a name broke a row: {line!r}"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("hostile")
    file = tmp / "e.toml"
    file.write_text(HOSTILE, encoding="utf-8")
    results = tmp / "r.duckdb"
    code, out = _cli(
        "run", str(file), "-r", str(results), "-t", f"sqlite:///{tmp}/t.db", "--no-stats"
    )
    assert code == 0, out
    _clean(out, "run")
    code, out = _cli("check", str(file))
    assert code == 0, out
    _clean(out, "check")
    return results


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown"])
def test_runs_summary_and_compare_show_no_raw_control_character(hostile: Path, fmt: str) -> None:
    for command in (
        ["runs"],
        ["summary"],
        ["compare"],
        ["compare", "--txn", f"t\x1b[1mbold\n{TAIL}"],
    ):
        code, out = _cli(*command, "-r", str(hostile), "-f", fmt)
        assert code == 0, out
        _clean(out, f"{' '.join(command)} -f {fmt}")
        if fmt == "csv":
            for row in csv.reader(io.StringIO(out)):
                assert all("\n" not in field for field in row)


def test_plan_and_the_report_show_no_raw_control_character(hostile: Path, tmp_path: Path) -> None:
    for fmt in ("table", "json"):
        code, out = _cli(
            "plan", "-r", str(hostile), "--change", "50%", "--min-samples", "2", "-f", fmt
        )
        assert code == 0, out
        _clean(out, f"plan -f {fmt}")
    page = tmp_path / "r.html"
    code, out = _cli("report", "-r", str(hostile), "-o", str(page))
    assert code == 0, out
    _clean(out, "report")
    _clean(page.read_text(encoding="utf-8"), "report page")
    code, out = _cli("report", "-r", str(hostile), "--format", "markdown")
    assert code == 0, out
    _clean(out, "report --format markdown")
