"""Swingbench, sysbench and hyperfine imports: round trips, summaries, compare, bad input."""

from __future__ import annotations

import functools
import itertools
import json
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from test_summaries import assert_summaries_match_rows
from wannabet.importers.sysbench import histogram_bins
from wannabet.store import Store, queries
from wannabet.testing import cli
from wannabet.testing.ci import unavailable
from wannabet.testing.packages import PackageUnavailable, ensure_command

# Imports of small fixtures: a hang shows within two minutes.
wannabet = functools.partial(cli.wannabet, timeout=120)

FIXTURES = Path(__file__).parent / "fixtures" / "import"


ok = functools.partial(cli.wannabet_ok, timeout=120)


def summary(results: Path) -> dict:
    return json.loads(ok("summary", "--results", str(results), "--format", "json"))


def one_line_error(proc: subprocess.CompletedProcess[str], file: str, message: str) -> None:
    line = cli.one_line_error(proc, code=2)
    assert file in line and message in line, line


# -- Swingbench ------------------------------------------------------------------------------------


def test_swingbench_round_trip_keeps_aggregates_and_invents_no_latencies(results: Path) -> None:
    ok("import", "swingbench", str(FIXTURES / "swingbench_soe.xml"), "--condition", "before",
       "--results", str(results))  # fmt: skip
    store = Store(results)
    info = store.run()
    assert (info.kind, info.conditions, info.samples) == ("import", 1, 10)
    assert info.settings is not None and info.settings["aggregates_only"] is True
    overview = info.settings["files"][0]["overview"]
    assert overview["benchmark"] == "Order Entry (PLSQL) V2"
    assert overview["completed"] == 2000 and overview["average_tps"] == 200.0
    assert info.settings["files"][0]["dml"]["select"] == 12000
    rows = {r["txn_name"]: r for r in store.aggregates(info.run_id)}
    reg = rows["Customer Registration"]
    # The misspelt elements of real files are read.
    assert reg["percentiles"] == {
        "p10": 4, "p20": 6, "p30": 8, "p40": 9, "p50": 10, "p60": 12, "p70": 14, "p80": 17,
        "p90": 24,
    }  # fmt: skip
    assert (reg["count"], reg["failed"], reg["lat_mean_ms"], reg["lat_max_ms"]) == (
        800,
        1,
        12.5,
        80,
    )
    assert reg["histogram"]["counts"][:3] == [300, 250, 150]
    assert reg["extra"]["rollbacks"] == 1
    assert rows["Browse Products"]["percentiles"] == {"p10": 2, "p50": 4, "p90": 9}
    with store.read() as con:
        assert con.execute("SELECT count(*) FROM transactions").fetchone() == (0,)
    (c,) = summary(results)["conditions"]
    assert c["transactions"] == 2004 and c["errors"] == 4
    # Count-weighted mean of the types' means; no percentile can be combined across types.
    assert c["latency_ms"]["mean"] == pytest.approx((800 * 12.5 + 1200 * 5.0) / 2000)
    assert c["latency_ms"]["max"] == 80
    assert c["latency_ms"]["p50"] is None and c["latency_ms"]["p99"] is None
    assert c["tps"] == pytest.approx(200.0)


def test_swingbench_two_files_compare_throughput(results: Path, tmp_path: Path) -> None:
    ok("import", "swingbench", str(FIXTURES / "swingbench_soe.xml"), "--condition", "before",
       "--results", str(results))  # fmt: skip
    run_id = str(Store(results).run().run_id)
    ok("import", "swingbench", str(FIXTURES / "swingbench_faster.xml"), "--condition", "after",
       "--run", run_id, "--results", str(results))  # fmt: skip
    info = Store(results).run()
    assert (info.conditions, info.samples) == (2, 20)
    doc = json.loads(ok("compare", "--results", str(results), "--metric", "throughput",
                        "--format", "json"))  # fmt: skip
    (cmp,) = doc["comparisons"]
    assert cmp["condition"] == "after" and cmp["baseline"] == "before"
    assert 20 < cmp["delta_pct"] < 30
    table = ok("summary", "--results", str(results))
    assert "before" in table and "after" in table


def test_swingbench_namespace_free_and_minimal_files_parse(tmp_path: Path, results: Path) -> None:
    minimal = tmp_path / "minimal.xml"
    minimal.write_text(
        "<Results><Overview><TotalCompletedTransactions>600</TotalCompletedTransactions>"
        "<TotalRunTime>0:01:00</TotalRunTime></Overview></Results>"
    )
    ok("import", "swingbench", str(minimal), "--results", str(results))
    (c,) = summary(results)["conditions"]
    assert c["samples"] == 1 and c["tps"] == pytest.approx(10.0)
    assert c["latency_ms"]["mean"] is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("<Results><Overview>", "not well-formed XML"),
        ("<Other/>", ":1: the root element is <other>; expected a Swingbench <Results>"),
        ("<Results>\n<TransactionResults>\n<Result id='a'>\n<AverageResponse>x"
         "</AverageResponse>\n<TransactionCount>1</TransactionCount></Result>"
         "</TransactionResults></Results>",
         ":4: <AverageResponse> holds 'x'; expected a number"),
        ("<Results>\n<TransactionResults>\n<Result id='a'><AverageResponse>1</AverageResponse>"
         "</Result></TransactionResults></Results>",
         ":3: <Result id='a'> has no <TransactionCount>"),
        ("<Results>\n<TPSReadings>1687533274000,1,1687533275000</TPSReadings></Results>",
         ":2: <TPSReadings> holds 3 numbers; expected pairs"),
        ("<Results></Results>", "expected Swingbench results"),
        # Figures no Swingbench writes: stored as they were before (a mean of -500).
        ("<Results>\n<TransactionResults>\n<Result id='a'>\n<TransactionCount>-500"
         "</TransactionCount></Result></TransactionResults></Results>",
         ":4: <TransactionCount> holds '-500'; expected a number ≥ 0"),
        ("<Results>\n<TransactionResults>\n<Result id='a'>\n<TransactionCount>500.7"
         "</TransactionCount></Result></TransactionResults></Results>",
         ":4: <TransactionCount> holds 500.7; expected a whole number"),
        ("<Results>\n<TransactionResults>\n<Result id='a'><TransactionCount>5</TransactionCount>"
         "\n<AverageResponse>NaN</AverageResponse></Result></TransactionResults></Results>",
         ":4: <AverageResponse> holds 'NaN'"),
        ("<Results><Overview>\n<TotalFailedTransactions>-3</TotalFailedTransactions>"
         "</Overview></Results>", ":2: <TotalFailedTransactions> holds '-3'"),
        # Counts in a histogram, or of statements: dropped, truncated or stored negative before.
        ("<Results>\n<TransactionResults>\n<Result id='a'><TransactionCount>5</TransactionCount>"
         "\n<ResponseHistogram>3, -2, 1</ResponseHistogram></Result>"
         "</TransactionResults></Results>",
         ":4: <ResponseHistogram> holds the count '-2'; expected whole numbers ≥ 0"),
        ("<Results>\n<TransactionResults>\n<Result id='a'><TransactionCount>5</TransactionCount>"
         "\n<ResponseHistogram>3, 1.5</ResponseHistogram></Result></TransactionResults></Results>",
         ":4: <ResponseHistogram> holds the count '1.5'"),
        ("<Results>\n<TransactionResults>\n<Result id='a'><TransactionCount>5</TransactionCount>"
         "\n<ResponseHistogram><Bucket upper='10' count='2.5'/></ResponseHistogram></Result>"
         "</TransactionResults></Results>", ":4: <ResponseHistogram> holds the count '2.5'"),
        ("<Results><DMLResults>\n<SelectStatements>12000.5</SelectStatements></DMLResults>"
         "</Results>", ":2: <SelectStatements> holds 12000.5; expected a whole number of"
         " statements"),
        # Not finite, or past the 64-bit nanoseconds: an OverflowError's traceback before.
        ("<Results>\n<TPSReadings>1687533274000,1e400,1687533275000,5</TPSReadings></Results>",
         ":2: <TPSReadings> pair 1 is (1687533274000, 1e400); expected epoch milliseconds"),
        ("<Results>\n<TPSReadings>1e400,5,1687533275000,5</TPSReadings></Results>",
         ":2: <TPSReadings> pair 1 is (1e400, 5)"),
    ],
)  # fmt: skip
def test_malformed_swingbench(tmp_path: Path, results: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text(content)
    one_line_error(wannabet("import", "swingbench", str(bad), "--results", str(results)),
                   "bad.xml", message)  # fmt: skip
    assert not results.exists() or Store(results).runs() == []


def test_swingbench_latency_compare_is_refused_with_a_reason(results: Path) -> None:
    ok("import", "swingbench", str(FIXTURES / "swingbench_soe.xml"), "--condition", "before",
       "--results", str(results))  # fmt: skip
    proc = wannabet("compare", "--results", str(results), "--metric", "latency")
    assert proc.returncode == 5 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_swingbench_latency_compare_says_the_file_holds_only_aggregates(results: Path) -> None:
    ok("import", "swingbench", str(FIXTURES / "swingbench_soe.xml"), "--results", str(results))
    proc = wannabet("compare", "--results", str(results), "--metric", "latency")
    assert proc.returncode == 5
    assert "only aggregates" in proc.stderr and "--metric throughput" in proc.stderr
    assert "Traceback" not in proc.stderr


# -- sysbench --------------------------------------------------------------------------------------


def test_sysbench_round_trip_intervals_summary_and_histogram(results: Path) -> None:
    ok("import", "sysbench", str(FIXTURES / "sysbench_oltp.txt"), "--results", str(results))
    store = Store(results)
    info = store.run()
    samples = store.samples(info.run_id)
    assert [s["tps"] for s in samples] == [500.0, 520.0, 510.0, 490.0, 480.0]
    assert samples[1]["errors"] == 1
    stats = json.loads(samples[0]["stats"])
    assert stats["qps"] == 10000.0 and stats["latency_ms"] == 10.27
    assert stats["latency_label"] == "95%"
    (agg,) = store.aggregates(info.run_id)
    assert (agg["count"], agg["failed"]) == (2500, 1)
    assert (agg["lat_min_ms"], agg["lat_mean_ms"], agg["lat_max_ms"]) == (3.98, 7.99, 14.90)
    assert agg["percentiles"] == {"p95": 10.46}
    assert agg["histogram"]["buckets"][2] == [6.213, 1350]
    assert sum(c for _, c in agg["histogram"]["buckets"]) == 2500
    assert agg["extra"]["latency_sum_ms"] == 19975.0
    (c,) = summary(results)["conditions"]
    assert c["transactions"] == 2501 and c["errors"] == 1
    lat = c["latency_ms"]
    assert lat["mean"] == pytest.approx(7.99) and lat["max"] == pytest.approx(14.9)
    # p95 as sysbench printed it; p50 and p99 from its histogram buckets (their midpoints).
    assert lat["p95"] == 10.46
    assert lat["p50"] == pytest.approx(6.213, rel=0.01)
    assert lat["p99"] == pytest.approx(11.241, rel=0.01)


def test_sysbench_buckets_become_disjoint_bins_around_their_printed_centres() -> None:
    # Every bucket sysbench can print, as it prints it (log-scale centre, 3 decimals).
    mult = 1023 / (math.log(100_000) - math.log(0.001))
    centres = [round(math.exp(i / mult + math.log(0.001)), 3) for i in range(400, 1024, 7)]
    bins = histogram_bins([[c, 1] for c in centres])
    assert len(bins) == len(centres)
    for (lo, hi, n), centre in zip(bins, centres, strict=True):
        assert lo <= centre * 1e6 <= hi and n == 1
        assert (hi - lo) / lo == pytest.approx(math.exp(1 / mult) - 1, rel=0.01)  # 1.8% wide
    assert all(a[1] < b[0] for a, b in itertools.pairwise(bins))  # disjoint
    # The same bucket printed twice (two files' worth) is one bin with both counts.
    assert histogram_bins([[centres[0], 2], [centres[0], 3]]) == [[*bins[0][:2], 5]]


def test_sysbench_conditions_from_filenames_and_compare(results: Path) -> None:
    ok("import", "sysbench", str(FIXTURES / "sysbench_oltp.txt"),
       str(FIXTURES / "sysbench_oltp_tuned.txt"),
       "--condition-from-filename", r"sysbench_(?P<condition>oltp\w*)\.txt",
       "--results", str(results))  # fmt: skip
    conditions = [c["condition"] for c in summary(results)["conditions"]]
    assert conditions == ["oltp", "oltp_tuned"]
    doc = json.loads(ok("compare", "--results", str(results), "--metric", "throughput",
                        "--format", "json"))  # fmt: skip
    (cmp,) = doc["comparisons"]
    assert cmp["delta_pct"] == pytest.approx(20.0, abs=0.5)


def test_sysbench_without_intervals_is_one_sample(tmp_path: Path, results: Path) -> None:
    text = (FIXTURES / "sysbench_oltp.txt").read_text()
    plain = tmp_path / "plain.txt"
    plain.write_text("\n".join(x for x in text.splitlines() if not x.startswith("[")))
    ok("import", "sysbench", str(plain), "--results", str(results))
    (c,) = summary(results)["conditions"]
    assert c["samples"] == 1 and c["tps"] == pytest.approx(2500 / 5.002)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("hello\n", "expected sysbench's output"),
        ("[ 1s ] thds: 4 tps: 500.00 qps: 10000.00 (r/w/o: 7000.00/2000.00/1000.00)"
         " lat (ms,95%): 10.27 err/s: 0.00 reconn/s: 0.00\n"
         "[ 2s ] thds: four tps: 1\n", ":2: an interval line sysbench did not write"),
        ("[ 2s ] thds: 4 tps: 5.00\n[ 1s ] thds: 4 tps: 5.00\n", ":2: interval at 1s"),
        ("    transactions:                        2500   (499.80 per sec.)\n",
         "no 'total time:' line"),
        # --report-checkpoints: each report resets the counters, so none covers the run.
        ("[ 1s ] Checkpoint report:\nCPU speed:\n    events per second:  1203.51\n",
         ":1: a --report-checkpoints report; expected sysbench's output without them"),
    ],
)  # fmt: skip
def test_malformed_sysbench(tmp_path: Path, results: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text(content)
    one_line_error(wannabet("import", "sysbench", str(bad), "--results", str(results)),
                   "bad.txt", message)  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # A damaged histogram row: the later buckets (and the tail percentiles) would be lost.
        (lambda t: t.replace("       7.560 |", "         abc |"), ":23: a histogram row"),
        # Cut off before the final summary: the intervals alone are not the run.
        (lambda t: t.split("Latency histogram")[0], "no 'total time:' line"),
        # A row lost from the histogram (or a damaged count): its 2,500 events no longer add up.
        (lambda t: t.replace("      11.241 |**                                       30\n", ""),
         ":18: the histogram counts 2470 events, but line 39's 'total number of events:'"
         " is 2500"),
        (lambda t: t.replace("total number of events:              2500",
                             "total number of events:              2600"),
         "counts 2500 events, but line 40's 'total number of events:' is 2600"),
    ],
)  # fmt: skip
def test_a_damaged_sysbench_output_is_refused(
    tmp_path: Path, results: Path, change: Any, message: str
) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text(change((FIXTURES / "sysbench_oltp.txt").read_text()))
    proc = wannabet("import", "sysbench", str(bad), "--results", str(results))
    one_line_error(proc, "bad.txt", message)
    assert not results.exists() or not Store(results, read_only=True).runs()


def test_sysbench_mean_is_its_latency_sum_over_its_events(tmp_path: Path, results: Path) -> None:
    # 'avg:' is rounded to 0.01 ms; 'sum:' is too, but over all 2,500 events: 7.995 ms each.
    text = (FIXTURES / "sysbench_oltp.txt").read_text()
    exact = tmp_path / "exact.txt"
    exact.write_text(text.replace("sum:                                19975.00",
                                  "sum:                                19987.50"))  # fmt: skip
    ok("import", "sysbench", str(exact), "--results", str(results))
    (c,) = summary(results)["conditions"]
    assert c["latency_ms"]["mean"] == pytest.approx(19987.50 / 2500, rel=1e-12)
    (agg,) = Store(results).aggregates(1)
    assert (agg["lat_mean_ms"], agg["lat_sum_ms"]) == (7.99, 19987.50)  # both kept as printed


def test_real_sysbench_histograms_count_every_event(tmp_path: Path, results: Path) -> None:
    # What the check above relies on, on sysbench's own output: several threads and interval
    # reports (which merge the per-thread histogram slots while the workers run).
    try:
        sysbench = ensure_command("sysbench", package="sysbench")
    except PackageUnavailable as exc:
        unavailable("sysbench", exc)
    out = tmp_path / "cpu.txt"
    args = ["cpu", "--threads=4", "--time=1", "--cpu-max-prime=2000", "--report-interval=1"]
    proc = subprocess.run(
        [sysbench, *args, "--histogram=on", "run"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    out.write_text(proc.stdout)
    ok("import", "sysbench", str(out), "--results", str(results))
    (agg,) = Store(results).aggregates(1)
    events = int(proc.stdout.split("total number of events:")[1].split()[0])
    assert agg["count"] == events == sum(c for _, c in agg["histogram"]["buckets"]) > 100


def test_sysbench_histogram_after_a_warm_up_need_not_add_up(tmp_path: Path, results: Path) -> None:
    # sysbench 1.1's --warmup-time resets its counters and then its histogram while the
    # workers run: an event ending in between is counted in one of them only.
    text = (FIXTURES / "sysbench_oltp.txt").read_text()
    text = text.replace("Threads started!\n", "Threads started!\n\nWarming up for 1 seconds...\n")
    warm = tmp_path / "warm.txt"
    warm.write_text(
        text.replace(
            "       4.103 |**                                       20",
            "       4.103 |**                                       18",
        )
    )
    ok("import", "sysbench", str(warm), "--results", str(results))
    (agg,) = Store(results).aggregates(1)
    assert agg["count"] == 2500 and sum(c for _, c in agg["histogram"]["buckets"]) == 2498


# -- hyperfine -------------------------------------------------------------------------------------


def test_hyperfine_commands_are_conditions_and_runs_observations(results: Path) -> None:
    ok("import", "hyperfine", str(FIXTURES / "hyperfine.json"), "--results", str(results))
    info = Store(results).run()
    assert (info.conditions, info.samples, info.transactions) == (2, 20, 20)
    rows = summary(results)["conditions"]
    assert [r["condition"] for r in rows] == ["psql -c 'select 1'", "psql -c 'select 2'"]
    assert rows[0]["latency_ms"]["mean"] == pytest.approx(12.1)
    assert rows[1]["errors"] == 1 and rows[1]["errors_by_status"] == {"error": 1}
    # Nine successful runs of the second command: the failed one is not a latency.
    times = [14.5, 15.0, 15.5, 14.0, 15.2, 14.8, 16.5, 15.1, 14.9]
    assert rows[1]["latency_ms"]["mean"] == pytest.approx(sum(times) / 9)
    doc = json.loads(ok("compare", "--results", str(results), "--format", "json"))
    (cmp,) = doc["comparisons"]
    assert cmp["verdict"] == "slower" and 20 < cmp["delta_pct"] < 30
    assert "slower" in ok("compare", "--results", str(results))


def test_hyperfine_condition_override(results: Path) -> None:
    ok("import", "hyperfine", str(FIXTURES / "hyperfine.json"), "--condition", "v1",
       "--results", str(results))  # fmt: skip
    rows = summary(results)["conditions"]
    assert rows[0]["condition"] == "v1/psql -c 'select 1'"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"results": [\n  {"command": "a",\n', ":3: not JSON"),
        ('{"x": 1}', ':1: no "results" list'),
        ('{"results": [\n{"command": "a", "times": []}]}', ":2: results[0] ('a') has no \"times\""),
        ('{"results": [\n{"command": "a", "times": [0.1, "x"]}]}', ":2: results[0].times"),
        ('{"results": [\n{"command": "a", "times": [0.1], "exit_codes": [0, 1]}]}',
         ":2: results[0].exit_codes"),
        # Too large for nanoseconds in 64 bits (1e400 is inf): stored as INT64_MIN before.
        ('{"results": [\n{"command": "a", "times": [0.1, 1e400]}]}', ":2: results[0].times[1]"),
        ('{"results": [\n{"command": "a", "times": [0.1, 1e12]}]}', ":2: results[0].times[1]"),
        ('{"results": [\n{"command": "a", "times": [0.1], "exit_codes": [3.5]}]}',
         ":2: results[0].exit_codes[0] is 3.5"),
        # An exit code is an i32 in hyperfine: a larger one was an OverflowError's traceback.
        ('{"results": [\n{"command": "a", "times": [0.1], "exit_codes": [100000000000000000000]}]}',
         ":2: results[0].exit_codes[0] is 100000000000000000000; expected a 32-bit whole number"),
    ],
)  # fmt: skip
def test_malformed_hyperfine(tmp_path: Path, results: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    one_line_error(wannabet("import", "hyperfine", str(bad), "--results", str(results)),
                   "bad.json", message)  # fmt: skip


# -- shared behaviour ------------------------------------------------------------------------------


def test_reimport_is_refused_by_content_unless_forced(tmp_path: Path, results: Path) -> None:
    copy = tmp_path / "renamed.json"
    shutil.copy(FIXTURES / "hyperfine.json", copy)
    ok("import", "hyperfine", str(FIXTURES / "hyperfine.json"), "--results", str(results))
    proc = wannabet("import", "hyperfine", str(copy), "--results", str(results))
    one_line_error(proc, "renamed.json", "already imported as run 1")
    assert "--force" in proc.stderr
    assert len(Store(results).runs()) == 1
    ok("import", "hyperfine", str(copy), "--force", "--results", str(results))
    assert len(Store(results).runs()) == 2


def test_a_failing_file_imports_nothing_of_the_batch(tmp_path: Path, results: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"results": []}')
    proc = wannabet("import", "hyperfine", str(FIXTURES / "hyperfine.json"), str(bad),
                    "--results", str(results))  # fmt: skip
    one_line_error(proc, "bad.json", '"results" is empty')
    assert not results.exists() or Store(results).runs() == []
    # Nothing was recorded as imported either: the good file imports now.
    ok("import", "hyperfine", str(FIXTURES / "hyperfine.json"), "--results", str(results))


def test_appending_to_a_run_of_another_format_is_refused(results: Path) -> None:
    ok("import", "hyperfine", str(FIXTURES / "hyperfine.json"), "--results", str(results))
    proc = wannabet("import", "sysbench", str(FIXTURES / "sysbench_oltp.txt"), "--run", "1",
                    "--results", str(results))  # fmt: skip
    one_line_error(proc, "--run 1", "holds hyperfine results")


def test_condition_from_filename_must_match(tmp_path: Path, results: Path) -> None:
    proc = wannabet(
        "import", "hyperfine", str(FIXTURES / "hyperfine.json"),
        "--condition-from-filename", r"run-(\d+)", "--results", str(results),
    )  # fmt: skip
    one_line_error(proc, "hyperfine.json", "does not match the file name")


# -- per-sample summaries (issue #13) --------------------------------------------------------------


def summary_rows(results: Path) -> dict[str, list[tuple]]:
    store = Store(results)
    with store.read() as con:
        return {
            table: con.execute(f"SELECT * EXCLUDE (run_id) FROM {table} ORDER BY ALL").fetchall()
            for table in ("sample_moments", "sample_statuses", "sample_bins")
        }


def test_hyperfine_runs_are_summarised_from_their_rows(results: Path) -> None:
    ok("import", "hyperfine", str(FIXTURES / "hyperfine.json"), "--results", str(results))
    store = Store(results)
    run_id = store.run().run_id
    with store.read() as con:
        assert assert_summaries_match_rows(con, run_id) == 20
        counts = queries.status_counts(con, run_id)
        moments = queries.sample_moments(con, run_id)
    keys = zip(counts.condition_id, counts.status, counts.count, strict=True)
    by = {(int(c), str(s)): int(n) for c, s, n in keys}
    assert by == {(0, "ok"): 10, (1, "ok"): 9, (1, "error"): 1}
    # One run per sample: the failed run's sample has no moments.
    assert len(moments.sample_id) == 19 and (moments.count == 1).all()
    assert moments.sum_ms[moments.condition_id == 1].sum() == pytest.approx(
        sum([14.5, 15.0, 15.5, 14.0, 15.2, 14.8, 16.5, 15.1, 14.9])
    )


def test_sysbench_summary_gives_exact_statuses_and_intervals_give_none(
    tmp_path: Path, results: Path
) -> None:
    ok("import", "sysbench", str(FIXTURES / "sysbench_oltp.txt"), "--results", str(results))
    # Interval counts are rounded from rates: nothing exact to summarise.
    assert summary_rows(results) == {"sample_moments": [], "sample_statuses": [], "sample_bins": []}
    text = (FIXTURES / "sysbench_oltp.txt").read_text()
    plain = tmp_path / "plain.txt"
    plain.write_text("\n".join(x for x in text.splitlines() if not x.startswith("[")))
    other = tmp_path / "other.duckdb"
    ok("import", "sysbench", str(plain), "--results", str(other))
    rows = summary_rows(other)
    assert rows["sample_statuses"] == [(0, 0, False, "error", 1), (0, 0, False, "ok", 2500)]
    # Its latency figures are rounded to 0.01 ms and it has no per-sample histogram.
    assert rows["sample_moments"] == [] and rows["sample_bins"] == []


def test_swingbench_overview_with_per_type_results_gives_per_type_statuses(
    tmp_path: Path, results: Path
) -> None:
    def write(name: str, completed: int) -> Path:
        file = tmp_path / name
        file.write_text(
            "<Results><Overview>"
            f"<TotalCompletedTransactions>{completed}</TotalCompletedTransactions>"
            "<TotalFailedTransactions>3</TotalFailedTransactions>"
            "<TotalRunTime>0:01:00</TotalRunTime></Overview><TransactionResults>"
            "<Result id='Browse'><TransactionCount>400</TransactionCount>"
            "<FailedTransactionCount>1</FailedTransactionCount></Result>"
            "<Result id='Order'><TransactionCount>200</TransactionCount>"
            "<FailedTransactionCount>2</FailedTransactionCount></Result>"
            "</TransactionResults></Results>"
        )
        return file

    ok("import", "swingbench", str(write("exact.xml", 600)), "--results", str(results))
    assert summary_rows(results)["sample_statuses"] == [
        (0, 0, False, "error", 1),
        (0, 0, False, "ok", 400),
        (0, 1, False, "error", 2),
        (0, 1, False, "ok", 200),
    ]
    assert summary_rows(results)["sample_moments"] == []
    # Per-type counts that disagree with the totals are not exact: no summaries.
    other = tmp_path / "other.duckdb"
    ok("import", "swingbench", str(write("off.xml", 650)), "--results", str(other))
    assert summary_rows(other)["sample_statuses"] == []
    # Readings-based samples (the real fixture) get none either.
    third = tmp_path / "third.duckdb"
    ok("import", "swingbench", str(FIXTURES / "swingbench_soe.xml"), "--results", str(third))
    assert summary_rows(third) == {"sample_moments": [], "sample_statuses": [], "sample_bins": []}
