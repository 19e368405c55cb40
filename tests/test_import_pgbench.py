"""pgbench logs written by a REAL pgbench against the test PostgreSQL, imported and checked
against pgbench's own summary."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from test_summaries import assert_summaries_match_rows
from wannabet.importers import parse_summary
from wannabet.store import Store
from wannabet.testing import ThrowawayPostgres
from wannabet.testing.cli import wannabet, wannabet_ok

DATABASE = "wannabet_import"


ok = wannabet_ok


@dataclass(frozen=True)
class PgbenchRun:
    logs: list[Path]
    summary: Path

    @property
    def args(self) -> list[str]:
        return [str(p) for p in self.logs]


class Pgbench:
    def __init__(self, server: ThrowawayPostgres, root: Path) -> None:
        self.server = server
        self.root = root
        self.env = dict(server.env(), PGDATABASE=DATABASE)

    def __call__(self, name: str, *options: str, script: str | None = None) -> PgbenchRun:
        directory = self.root / name
        directory.mkdir()
        args = [
            str(self.server.bindir / "pgbench"),
            "-n",
            "-l",
            f"--log-prefix={directory}/pgbench_log",
        ]
        if script is not None:
            path = directory / "script.sql"
            path.write_text(script)
            args += ["-f", str(path)]
        proc = subprocess.run(
            [*args, *options], capture_output=True, text=True, env=self.env, timeout=120,
            check=False, cwd=directory,
        )  # fmt: skip
        assert proc.returncode in (0, 2), proc.stderr  # 2: some transactions failed
        summary = directory / "summary.txt"
        summary.write_text(proc.stdout)
        logs = sorted(directory.glob("pgbench_log.*"))
        assert logs, proc.stderr
        return PgbenchRun(logs, summary)


@pytest.fixture(scope="module")
def pgbench(
    postgres: ThrowawayPostgres, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pgbench]:
    postgres.psql(f"DROP DATABASE IF EXISTS {DATABASE}")
    postgres.psql(f"CREATE DATABASE {DATABASE}")
    runner = Pgbench(postgres, tmp_path_factory.mktemp("pgbench"))
    init = subprocess.run(
        [str(postgres.bindir / "pgbench"), "-i", "-s", "1", "-q"], capture_output=True,
        text=True, env=runner.env, timeout=120, check=False,
    )  # fmt: skip
    assert init.returncode == 0, init.stderr
    yield runner
    postgres.psql(f"DROP DATABASE IF EXISTS {DATABASE}")


def check_against_summary(results: Path, run: PgbenchRun) -> dict:
    """The imported counts and mean latency equal pgbench's own figures."""
    reported = parse_summary(run.summary)
    (c,) = json.loads(ok("summary", "--results", str(results), "--format", "json"))["conditions"]
    assert reported.processed is not None
    ok_count = c["transactions"] - c["errors"]
    assert ok_count == reported.processed[0]
    assert c["errors_by_status"].get("skipped", 0) == (reported.skipped or (0, 0))[0]
    failures = sum(v for k, v in c["errors_by_status"].items() if k != "skipped")
    assert failures == (reported.failed or (0, 0))[0]
    if reported.latency_measured:
        assert reported.latency_avg_ms is not None
        assert c["latency_ms"]["mean"] == pytest.approx(reported.latency_avg_ms[0], abs=0.001)
    # The per-sample summaries are those of the imported rows (skipped ones included).
    store = Store(results)
    with store.read() as con:
        assert assert_summaries_match_rows(con, store.run().run_id) == c["samples"]
    return c


def check_aggregated_summaries(results: Path) -> None:
    """Each interval's summaries are exactly its aggregates row: counts by status, Σ, Σ², min
    and max; the log sums are not known (NULL) and there are no bins."""
    store = Store(results)
    run_id = store.run().run_id
    rows = {r["sample_id"]: r for r in store.aggregates(run_id)}
    with store.read() as con:
        moments = {
            r[0]: r[1:]
            for r in con.execute(
                "SELECT sample_id, count, sum_ms, sumsq_ms, sumlog_ms, sumlog2_ms, min_ns, max_ns"
                " FROM sample_moments WHERE run_id = ? AND txn_type = 0 AND NOT warmup",
                [run_id],
            ).fetchall()
        }
        statuses: dict[int, dict[str, int]] = {}
        for sid, status, n in con.execute(
            "SELECT sample_id, status, count FROM sample_statuses WHERE run_id = ?", [run_id]
        ).fetchall():
            statuses.setdefault(sid, {})[status] = n
        assert con.execute("SELECT count(*) FROM sample_bins").fetchone() == (0,)
        totals = dict(
            con.execute(
                "SELECT sample_id, transactions FROM samples WHERE run_id = ?", [run_id]
            ).fetchall()
        )
    for sid, r in rows.items():
        by = statuses.get(sid, {})
        assert by.get("ok", 0) == r["count"]
        assert by.get("serialization", 0) + by.get("deadlock", 0) == r["failed"]
        assert by.get("skipped", 0) == r["skipped"]
        assert sum(by.values()) == totals[sid]
        if r["count"]:
            n, s1, s2, l1, l2, lo, hi = moments[sid]
            assert (n, s1, s2) == (r["count"], r["lat_sum_ms"], r["lat_sum2_ms2"])
            assert (l1, l2) == (None, None)
            assert (lo, hi) == (round(r["lat_min_ms"] * 1e6), round(r["lat_max_ms"] * 1e6))
        else:
            assert sid not in moments


def check_aggregated_against_summary(results: Path, run: PgbenchRun) -> dict:
    """pgbench 15 leaves the last, partial interval out of an aggregated log: the logged counts
    plus what the import recorded as unlogged equal pgbench's; with nothing unlogged the mean
    equals pgbench's to its rounding, and it is the exact Σlatency / count of the log."""
    reported = parse_summary(run.summary)
    assert reported.processed is not None
    (c,) = json.loads(ok("summary", "--results", str(results), "--format", "json"))["conditions"]
    unlogged = Store(results).run().settings["unlogged"]  # type: ignore[index]
    assert c["transactions"] - c["errors"] + unlogged.get("ok", 0) == reported.processed[0]
    failed = c["errors_by_status"].get("failed", 0) + unlogged.get("failed", 0)
    assert failed == (reported.failed or (0, 0))[0]
    sums = [line.split() for p in run.logs for line in p.read_text().splitlines()]
    mean = sum(float(x[2]) for x in sums) / sum(int(x[1]) for x in sums) / 1000
    assert c["latency_ms"]["mean"] == pytest.approx(mean, rel=1e-12)
    if not unlogged and reported.latency_avg_ms is not None:
        assert c["latency_ms"]["mean"] == pytest.approx(reported.latency_avg_ms[0], abs=0.001)
    check_aggregated_summaries(results)
    return c


def test_plain_log_matches_pgbench_summary(pgbench: Pgbench, results: Path) -> None:
    # -P makes pgbench measure latency per transaction (otherwise its "average" is derived from
    # the run time), so the mean can be compared.
    run = pgbench("plain", "-c", "2", "-j", "2", "-T", "2", "-P", "1")
    assert len(run.logs) == 2  # one per thread: prefix.PID and prefix.PID.1
    ok("import", "pgbench", *run.args, "--summary", str(run.summary), "--results", str(results))
    c = check_against_summary(results, run)
    assert c["errors"] == 0 and c["samples"] == 1  # one sample per pgbench invocation
    info = Store(results).run()
    assert info.settings is not None and info.settings["summary"]["processed"] == c["transactions"]
    assert "number of transactions actually processed" in info.settings["summary"]["text"]
    with Store(results).read() as con:
        sessions, types, bad_order = con.execute(
            "SELECT count(DISTINCT session), count(DISTINCT txn_type),"
            " count(*) FILTER (WHERE NOT (intended_start_ns <= start_ns AND start_ns <= end_ns))"
            " FROM transactions"
        ).fetchone()
        name = con.execute("SELECT name FROM transaction_types").fetchone()[0]
    assert (sessions, types, bad_order) == (2, 1, 0)
    assert "TPC-B" in name


def test_rate_with_latency_limit_counts_skipped(pgbench: Pgbench, results: Path) -> None:
    # A rate far beyond what one client can do makes it fall behind: transactions later than
    # the limit are skipped.
    run = pgbench("rate", "-c", "1", "-T", "2", "-R", "20000", "-L", "1")
    fields = run.logs[0].read_text().splitlines()[0].split()
    assert len(fields) == 7  # schedule_lag
    ok("import", "pgbench", *run.args, "--summary", str(run.summary), "--results", str(results))
    c = check_against_summary(results, run)
    assert c["errors_by_status"]["skipped"] > 0
    with Store(results).read() as con:
        lagging = con.execute(
            "SELECT count(*) FROM transactions WHERE status = 'ok' AND start_ns > intended_start_ns"
        ).fetchone()[0]
    assert lagging > 0  # latency counts from the scheduled start


CONFLICT = r"""
\set bid random(1, 2)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT bbalance FROM pgbench_branches WHERE bid = :bid;
\sleep 1 ms
UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = :bid;
END;
"""


def test_retries_and_detailed_failures_under_conflict(pgbench: Pgbench, results: Path) -> None:
    run = pgbench(
        "conflict", "-c", "4", "-j", "2", "-T", "2", "-P", "1", "--max-tries", "2",
        "--failures-detailed", script=CONFLICT,
    )  # fmt: skip
    text = "\n".join(p.read_text() for p in run.logs)
    assert re.search(r" serialization ", text), "the workload produced no failure"
    ok("import", "pgbench", *run.args, "--summary", str(run.summary), "--results", str(results))
    c = check_against_summary(results, run)
    assert c["errors_by_status"]["serialization"] > 0
    with Store(results).read() as con:
        retried, codes = con.execute(
            "SELECT count(*) FILTER (WHERE retries > 0),"
            " list(DISTINCT error_code) FILTER (WHERE status = 'serialization') FROM transactions"
        ).fetchone()
    assert retried > 0 and codes == ["40001"]


def test_aggregated_log_matches_summary(pgbench: Pgbench, results: Path) -> None:
    run = pgbench("agg", "-c", "2", "-j", "2", "-T", "3", "-P", "1", "--aggregate-interval", "1")
    fields = run.logs[0].read_text().splitlines()[0].split()
    ok(
        "import",
        "pgbench",
        *run.args,
        "--summary",
        str(run.summary),
        "--aggregate-interval",
        "1",
        "--results",
        str(results),
    )
    c = check_aggregated_against_summary(results, run)
    info = Store(results).run()
    assert info.settings is not None
    assert info.settings["layouts"][str(run.logs[0])] == ("15" if len(fields) == 15 else "14")
    assert 2 <= c["samples"] <= 4  # one per whole interval, threads merged
    assert c["latency_ms"]["p99"] is None  # not determined by aggregates
    with Store(results).read() as con:
        assert con.execute("SELECT count(*) FROM transactions").fetchone() == (0,)
    doc = json.loads(ok("compare", "--results", str(results), "--metric", "throughput",
                        "--format", "json"))  # fmt: skip
    assert doc["conditions"][0]["n"] == c["samples"]


def test_two_conditions_compare_and_sample_slices(pgbench: Pgbench, results: Path) -> None:
    a = pgbench("one-client", "-c", "1", "-T", "2", "-P", "1")
    b = pgbench("two-clients", "-c", "2", "-j", "2", "-T", "2", "-P", "1")
    ok("import", "pgbench", *a.args, "--condition", "c1", "--sample-interval", "500ms",
       "--results", str(results))  # fmt: skip
    run_id = str(Store(results).run().run_id)
    ok("import", "pgbench", *b.args, "--condition", "c2", "--sample-interval", "500ms",
       "--run", run_id, "--results", str(results))  # fmt: skip
    rows = json.loads(ok("summary", "--results", str(results), "--format", "json"))["conditions"]
    assert [r["condition"] for r in rows] == ["c1", "c2"]
    assert all(4 <= r["samples"] <= 6 for r in rows)
    doc = json.loads(ok("compare", "--results", str(results), "--format", "json"))
    assert doc["comparisons"][0]["condition"] == "c2"


def test_reimport_and_wrong_summary_are_refused(pgbench: Pgbench, results: Path) -> None:
    # Fixed transaction counts, so the two summaries differ for certain.
    a = pgbench("first", "-c", "1", "-t", "40")
    b = pgbench("second", "-c", "1", "-t", "60")
    proc = wannabet("import", "pgbench", *a.args, "--summary", str(b.summary),
                    "--results", str(results))  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    line = proc.stderr.strip()
    assert str(b.summary) in line and "pgbench reports" in line
    assert re.search(r"summary\.txt:\d+:", line)
    assert not results.exists() or Store(results).runs() == []
    ok("import", "pgbench", *a.args, "--results", str(results))
    proc = wannabet("import", "pgbench", *a.args, "--results", str(results))
    assert proc.returncode == 2 and "already imported as run 1" in proc.stderr


# -- the log format, on hand-written lines -----------------------------------------------------


def test_times_of_a_rate_limited_transaction(tmp_path: Path, results: Path) -> None:
    log = tmp_path / "pgbench_log.42"
    log.write_text(
        "0 1 1500 0 1700000000 500000 300\n"
        "1 1 skipped 0 1700000001 0 2500\n"
        "0 2 failed 1 1700000001 250000 10\n"
    )
    ok("import", "pgbench", str(log), "--pgbench-extra", "lag", "--results", str(results))
    with Store(results).read() as con:
        rows = con.execute(
            "SELECT session, txn_type, intended_start_ns, start_ns, end_ns, status, error_code"
            " FROM transactions ORDER BY end_ns"
        ).fetchall()
    end = 1_700_000_000_500_000_000
    assert rows[0] == (0, 0, end - 1_500_000, end - 1_500_000 + 300_000, end, "ok", None)
    skipped_end = 1_700_000_001_000_000_000
    assert rows[1] == (1, 0, skipped_end - 2_500_000, skipped_end, skipped_end, "skipped", None)
    assert rows[2][5] == "error" and rows[2][1] == 1


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        ("0 1 1234 0 1700000000 123\n0 2 abc 0 1700000000 456\n", (),
         ":2: time: expected a latency in µs or one of skipped"),
        ("0 1 1234 0 1700000000 123\n0 2 1234 0 1700000000 456\n0 3 12 0 1700000000\n", (),
         ":3: 5 fields; expected 6"),
        ("0 1 1234 0 1700000000 123\nx 2 1234 0 1700000000 456\n", (),
         ":2: client_id: 'x'; expected a whole number"),
        ("0 1 1234 0 1700000000 123\n0 2 1234 0 1700000000 4560000\n", (),
         ":2: time_us: expected 0 to 999999"),
        ("0 1 1234 0 1700000000 123 5\n", (), ":1: 7 fields: the 7th is schedule_lag"),
        ("1 2 3\n", (), ":1: 3 fields; expected a pgbench per-transaction log line"),
        ("1700000000 5 100 2000 10 30 0 0 0 0 0 0 0\n", ("--log", "aggregate"),
         ":1: 13 fields; expected 15"),
        ("1700000000 5 100 2000 10 30\n1700000001 5 100 2000 -10 30\n", (),
         ":2: a negative value"),
        ("", (), "the file is empty"),
    ],
)  # fmt: skip
def test_malformed_pgbench_logs(
    tmp_path: Path, results: Path, content: str, args: tuple[str, ...], message: str
) -> None:
    log = tmp_path / "pgbench_log.7"
    log.write_text(content)
    proc = wannabet("import", "pgbench", str(log), *args, "--results", str(results))
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "pgbench_log.7" in lines[0], proc.stderr
    assert message in lines[0]
    assert not results.exists() or Store(results).runs() == []


def test_summary_that_is_not_pgbench_output(tmp_path: Path, results: Path) -> None:
    log = tmp_path / "pgbench_log.7"
    log.write_text("0 1 1234 0 1700000000 123\n")
    summary = tmp_path / "summary.txt"
    summary.write_text("hello\n")
    proc = wannabet("import", "pgbench", str(log), "--summary", str(summary),
                    "--results", str(results))  # fmt: skip
    assert proc.returncode == 2
    assert "summary.txt: no 'number of transactions actually processed' line" in proc.stderr


def test_aggregated_failures_and_retries(pgbench: Pgbench, results: Path) -> None:
    run = pgbench(
        "agg-conflict", "-c", "4", "-j", "2", "-T", "2", "-P", "1", "--max-tries", "2",
        "--failures-detailed", "--aggregate-interval", "1", script=CONFLICT,
    )  # fmt: skip
    ok(
        "import",
        "pgbench",
        *run.args,
        "--summary",
        str(run.summary),
        "--aggregate-interval",
        "1",
        "--results",
        str(results),
    )
    c = check_aggregated_against_summary(results, run)
    assert c["errors_by_status"]["failed"] > 0
    rows = Store(results).aggregates(Store(results).run().run_id)
    assert sum(r["extra"]["serialization_failures"] for r in rows) == c["errors"]
    assert sum(r["retried"] for r in rows) > 0
