"""Open-loop honesty (issue #19, point 7): a rate far above what the target can do is reported
as missed, with the schedule lag, by summary, compare (every format) and the report; a rate it
can keep is reported as reached."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

OPEN_LOOP = """\
name = "open-loop"
[setup]
sql = '''
PRAGMA journal_mode = WAL;
DROP TABLE IF EXISTS t;
CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER);
'''
[workload]
sessions = 1
rate = RATE
[[workload.transactions]]
name = "insert"
script = "INSERT INTO t (v) VALUES (1);"
[[factors]]
name = "synchronous"
levels = ["FULL", "OFF"]
session_sql = "PRAGMA synchronous = {level}"
[sampling]
samples = 2
duration = "0.4s"
warmup = "0s"
seed = 5
"""


def _cli(*args: str) -> tuple[int, str, str]:
    from typer.testing import CliRunner

    from wannabet.cli import app

    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _run(tmp_path: Path, rate: int) -> str:
    file = tmp_path / "e.toml"
    file.write_text(OPEN_LOOP.replace("RATE", str(rate)), encoding="utf-8")
    results = str(tmp_path / "r.duckdb")
    code, _, err = _cli(
        "run", str(file), "-r", results, "-t", f"sqlite:///{tmp_path}/t.db", "--no-stats"
    )
    assert code == 0, err
    return results


@pytest.fixture(scope="module")
def overloaded(tmp_path_factory: pytest.TempPathFactory) -> str:
    # SQLite with synchronous FULL commits a few thousand inserts a second at most.
    return _run(tmp_path_factory.mktemp("open-loop"), 2_000_000)


def test_summary_reports_the_missed_rate_and_the_lag(overloaded: str) -> None:
    code, out, _ = _cli("summary", "-r", overloaded, "-f", "json")
    assert code == 0
    rows = {o["condition"]: o for o in json.loads(out)["open_loop"]}
    assert set(rows) == {"synchronous=FULL", "synchronous=OFF"}
    for o in rows.values():
        assert o["requested_rate"] == 2_000_000 and o["missed"] is True
        assert 0 < o["achieved_rate"] < 0.95 * 2_000_000
        # Behind schedule: the transactions started late, the later the further in.
        assert o["lag_mean_ms"] > 1.0 and o["lag_p99_ms"] >= o["lag_mean_ms"]
    code, out, _ = _cli("summary", "-r", overloaded)
    assert "Open loop" in out and "could not keep up" in out
    code, out, _ = _cli("summary", "-r", overloaded, "-f", "markdown")
    assert "**Open loop**" in out and "**missed**" in out


def test_compare_and_the_report_say_the_load_was_lower_than_asked(
    overloaded: str, tmp_path: Path
) -> None:
    code, out, _ = _cli("compare", "-r", overloaded, "-f", "json")
    assert code == 0
    assert all(o["missed"] for o in json.loads(out)["open_loop"])
    for fmt in ("table", "markdown"):
        code, out, _ = _cli("compare", "-r", overloaded, "-f", fmt)
        assert code == 0 and "measured at a lower load than asked" in out, fmt
    page = tmp_path / "r.html"
    code, _, err = _cli("report", "-r", overloaded, "-o", str(page))
    assert code == 0, err
    assert "could not keep up" in page.read_text(encoding="utf-8")


def test_a_rate_the_target_keeps_is_reached_and_a_closed_loop_has_no_section(
    tmp_path: Path,
) -> None:
    # WAL with synchronous FULL commits thousands a second: 200/s is well within reach. Over
    # 0.8 s the count of Poisson arrivals varies by about 8%: reached, not missed.
    results = _run(tmp_path, 200)
    code, out, _ = _cli("summary", "-r", results, "-f", "json")
    rows = json.loads(out)["open_loop"]
    assert all(not o["missed"] for o in rows), rows
    assert all(o["achieved_rate"] == pytest.approx(200, rel=0.3) for o in rows)
    closed = tmp_path / "closed"
    closed.mkdir()
    file = closed / "e.toml"
    file.write_text(OPEN_LOOP.replace("rate = RATE\n", ""), encoding="utf-8")
    results = str(closed / "r.duckdb")
    code, _, err = _cli("run", str(file), "-r", results, "-t", f"sqlite:///{closed}/t.db")
    assert code == 0, err
    code, out, _ = _cli("summary", "-r", results, "-f", "json")
    assert "open_loop" not in json.loads(out)
    code, out, _ = _cli("compare", "-r", results, "-f", "json")
    assert "open_loop" not in json.loads(out)


def test_a_shortfall_within_chance_is_not_a_missed_rate() -> None:
    from wannabet.datasets import OpenLoop

    def reached(achieved: float, seconds: float) -> OpenLoop:
        return OpenLoop("c", 100.0, achieved, 1.0, 2.0, seconds=seconds)

    # 90/s over 1 s: 10 arrivals short of 100, within 3 sqrt(100) = 30 of chance.
    assert not reached(90.0, 1.0).missed
    # The same shortfall over 100 s: 1,000 short of 10,000, far beyond 3 sqrt(10,000) = 300.
    assert reached(90.0, 100.0).missed
    # Within the 5% margin, however long: a rate reached.
    assert not reached(96.0, 10_000.0).missed
    assert reached(90.0, 100.0).warning() is not None and reached(96.0, 1.0).warning() is None
