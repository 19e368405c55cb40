"""BenchBase, HammerDB and YCSB imports: figures, compare, report and malformed input.

Fixtures (tests/fixtures/import/): the YCSB ones were written by the real YCSB client
(``ycsb/generate.sh``, with HdrHistogram's Java reader for ``expected_hdr.json``); BenchBase
and HammerDB cannot be installed here, so theirs are built from the formats their sources
write (``benchbase/make_fixtures.py``, ``hammerdb/make_fixtures.py``).
"""

from __future__ import annotations

import csv
import importlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from wannabet.cli import app
from wannabet.errors import ImportError_, MissingExtra
from wannabet.importers import ConditionRule, import_hammerdb, import_ycsb
from wannabet.store import Store
from wannabet.testing import cli
from wannabet.testing.ci import require_module

FIXTURES = Path(__file__).parent / "fixtures" / "import"
BENCHBASE = FIXTURES / "benchbase"
HAMMERDB = FIXTURES / "hammerdb"
YCSB = FIXTURES / "ycsb"


def run(*args: str) -> Any:
    """The CLI in this process."""
    return CliRunner().invoke(app, [str(a) for a in args])


def ok(*args: str) -> str:
    result = run(*args)
    assert result.exit_code == 0, result.output + result.stderr
    return str(result.stdout)


def error(*args: str, code: int = 2) -> str:
    """The one ``error:`` line of a command that must fail with ``code``."""
    result = run(*args)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def summary(results: Path, *args: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(ok("summary", "--results", results, "--format", "json", *args))
    return doc


def compare(results: Path, *args: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(ok("compare", "--results", results, "--format", "json", *args))
    return doc


def nothing_written(results: Path) -> None:
    assert not results.exists() or Store(results).runs() == []


def writes_report(results: Path, tmp_path: Path, *labels: str) -> None:
    page = tmp_path / "report.html"
    ok("report", "--results", results, "-o", page)
    html = page.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html")
    for label in labels:
        assert label in html


def latencies_by_type(store: Store, run_id: int) -> dict[tuple[str, str], np.ndarray]:
    """Every stored latency (µs), per (condition, type), sorted."""
    with store.read() as con:
        rows = con.execute(
            "SELECT c.label, tt.name, t.end_ns - t.intended_start_ns FROM transactions t"
            " JOIN samples s USING (run_id, sample_id)"
            " JOIN conditions c ON c.run_id = t.run_id AND c.condition_id = s.condition_id"
            " JOIN transaction_types tt ON tt.run_id = t.run_id AND tt.txn_type = t.txn_type"
            " WHERE t.run_id = ? AND t.status = 'ok'",
            [run_id],
        ).fetchall()
    out: dict[tuple[str, str], list[int]] = {}
    for label, name, ns in rows:
        assert ns % 1000 == 0
        out.setdefault((label, name), []).append(ns // 1000)
    return {k: np.sort(np.asarray(v)) for k, v in out.items()}


def p99_close(reported: float, exact: float) -> None:
    # summary's percentiles come from the stored histograms: within half a bin (1/256).
    assert reported == pytest.approx(exact, rel=1 / 256 + 1e-9)


# -- BenchBase -------------------------------------------------------------------------------------


def benchbase_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_benchbase_lines_become_transactions_with_their_worker_type_and_times(
    results: Path,
) -> None:
    raw = BENCHBASE / "tpcc_before.raw.csv"
    companions = [BENCHBASE / "tpcc_before.summary.json", BENCHBASE / "tpcc_before.params.json"]
    ok("import", "benchbase", raw, *companions, "--condition", "before", "--results", results)
    store = Store(results)
    info = store.run()
    assert (info.kind, info.conditions, info.samples) == ("import", 1, 1)
    rows = benchbase_rows(raw)
    assert info.transactions == len(rows)
    # Figures per type, computed independently from the fixture.
    doc = summary(results)
    for t in doc["types"]:
        lat = np.array([int(r["Latency (microseconds)"]) for r in rows
                        if r["Transaction Name"] == t["txn"]]) / 1000  # fmt: skip
        assert t["transactions"] == len(lat)
        assert t["latency_ms"]["mean"] == pytest.approx(lat.mean(), rel=1e-12)
        assert t["latency_ms"]["max"] == pytest.approx(lat.max())
        p99_close(t["latency_ms"]["p99"], float(np.quantile(lat, 0.99, method="inverted_cdf")))
    assert [t["txn"] for t in doc["types"]] == [
        "NewOrder", "Payment", "OrderStatus", "Delivery", "StockLevel",
    ]  # fmt: skip
    # Start = the decimal epoch seconds exactly, end = start + latency, session = worker.
    with store.read() as con:
        got = con.execute(
            "SELECT session, start_ns, end_ns, intended_start_ns FROM transactions"
            " WHERE run_id = ? ORDER BY start_ns, session",
            [info.run_id],
        ).fetchall()
    first = min(
        rows, key=lambda r: (r["Start Time (microseconds)"], int(r["Worker Id (start number)"]))
    )
    seconds, micros = first["Start Time (microseconds)"].split(".")
    start_ns = (int(seconds) * 1_000_000 + int(micros)) * 1000
    assert got[0] == (int(first["Worker Id (start number)"]), start_ns,
                      start_ns + int(first["Latency (microseconds)"]) * 1000, start_ns)  # fmt: skip
    assert {g[0] for g in got} == {int(r["Worker Id (start number)"]) for r in rows}
    # The summary's DBMS and the parameters are the server's environment.
    assert info.environment["server"] == "POSTGRES"
    assert info.environment["server_version"].startswith("16.4")
    assert info.environment["server_settings"]["shared_buffers"] == "16384"
    (file_doc,) = info.settings["files"]
    assert file_doc["summary"]["Benchmark Type"] == "tpcc"
    assert file_doc["succeeded"] == len(rows) - 3  # from the goodput
    with store.read() as con:
        formats = sorted(r[0] for r in con.execute("SELECT format FROM imports").fetchall())
    assert formats == ["benchbase", "benchbase-summary", "benchbase-summary"]


def test_benchbase_two_conditions_sliced_into_samples_give_a_verdict_and_a_report(
    results: Path, tmp_path: Path
) -> None:
    # Through the command line: --sample-interval reaches the importer.
    ok("import", "benchbase", BENCHBASE / "tpcc_before.raw.csv",
       BENCHBASE / "tpcc_before.summary.json", "--condition", "before",
       "--sample-interval", "100ms", "--results", results)  # fmt: skip
    ok("import", "benchbase", BENCHBASE / "tpcc_after.raw.csv",
       BENCHBASE / "tpcc_after.summary.json", "--condition", "after",
       "--sample-interval", "100ms", "--run", "1", "--results", results)  # fmt: skip
    store = Store(results)
    run_id = 1
    info = store.run(run_id)
    assert info.conditions == 2 and info.samples >= 14
    with store.read() as con:
        windows = con.execute(
            "SELECT max((end_ns - t0_ns) / 1e9) FROM samples WHERE run_id = ?", [run_id]
        ).fetchone()
    assert windows is not None and windows[0] <= 0.1 + 1e-9
    (cmp,) = compare(results)["comparisons"]
    # The fixture's "after" latencies are 0.7 times "before"'s.
    assert (cmp["baseline"], cmp["condition"], cmp["verdict"]) == ("before", "after", "faster")
    assert -40 < cmp["delta_pct"] < -20
    writes_report(results, tmp_path, "before", "after")


def test_benchbase_summary_that_disagrees_names_its_line(results: Path, tmp_path: Path) -> None:
    shutil.copy(BENCHBASE / "tpcc_before.raw.csv", tmp_path / "run.raw.csv")
    text = (BENCHBASE / "tpcc_before.summary.json").read_text()
    lines = text.splitlines()
    at = next(i for i, x in enumerate(lines) if "99th Percentile" in x)
    lines[at] = re.sub(r"\d+(,?)$", r"1\1", lines[at])
    (tmp_path / "run.summary.json").write_text("\n".join(lines) + "\n")
    line = error("import", "benchbase", tmp_path / "run.raw.csv", tmp_path / "run.summary.json",
                 "--results", results)  # fmt: skip
    assert f"run.summary.json:{at + 1}: 99th Percentile Latency (microseconds) is 1" in line
    nothing_written(results)


HEADER = (
    "Transaction Type Index,Transaction Name,Start Time (microseconds),Latency (microseconds),"
    "Worker Id (start number),Phase Id (index in config file)"
)
GOOD = "1,NewOrder,1722222636.414196,6786,0,1"


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"r.raw.csv": ""}, "r.raw.csv: the file is empty"),
        ({"r.raw.csv": "a,b,c\n" + GOOD}, "r.raw.csv:1: header 'a,b,c'; expected BenchBase's"),
        ({"r.raw.csv": HEADER + "\n"}, "r.raw.csv: no transactions after the header"),
        ({"r.raw.csv": f"{HEADER}\n{GOOD}\n1,NewOrder,1722222636.5,12,0"},
         "r.raw.csv:3: 5 fields; expected 6"),
        ({"r.raw.csv": f"{HEADER}\n{GOOD}\n1,NewOrder,1722222636.5,fast,0,1"},
         "r.raw.csv:3: Latency (microseconds) 'fast'; expected a whole number of µs"),
        ({"r.raw.csv": f"{HEADER}\n{GOOD}\n{GOOD}\n1,NewOrder,1722222636.5,-4,0,1"},
         "r.raw.csv:4: Latency (microseconds) '-4'; expected a whole number of µs ≥ 0"),
        ({"r.raw.csv": f"{HEADER}\n1,NewOrder,yesterday,5,0,1"},
         "r.raw.csv:2: Start Time 'yesterday'; expected epoch seconds"),
        ({"r.raw.csv": f"{HEADER}\n{GOOD}\n1,Payment,1722222636.5,5,0,1"},
         "r.raw.csv:3: Transaction Type Index 1 is named both 'NewOrder' and 'Payment'"),
        ({"r.raw.csv": f"{HEADER}\n{GOOD}", "r.summary.json": "{not json"},
         "r.summary.json:1: not JSON"),
        ({"r.raw.csv": f"{HEADER}\n{GOOD}", "r.summary.json": "[1, 2]"},
         "r.summary.json:1: a JSON list; expected BenchBase's summary.json"),
        ({"r.raw.csv": f"{HEADER}\n{GOOD}", "r.summary.json": '{"x": 1}'},
         "r.summary.json:1: no 'Latency Distribution'"),
        ({"r.raw.csv": f"{HEADER}\n{GOOD}", "other.summary.json": '{"Measured Requests": 1}'},
         "other.summary.json: no other.raw.csv among the files"),
        ({"r.raw.csv": f"{HEADER}\n{GOOD}", "r.summary.json": '{"Measured Requests": 2}'},
         "r.summary.json:1: BenchBase reports 2 measured requests, r.raw.csv holds 1 lines"),
        ({"r.samples.csv": "Time (seconds),Requests\n0,1"},
         "r.samples.csv: a file BenchBase derives"),
        ({"r.csv": "Time (seconds),Throughput (requests/second)\n0,1"},
         "r.csv:1: BenchBase's per-window results"),
    ],
)  # fmt: skip
def test_malformed_benchbase(
    tmp_path: Path, results: Path, files: dict[str, str], message: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    line = error("import", "benchbase", *(tmp_path / n for n in files), "--results", results)
    assert message in line, line
    nothing_written(results)


# -- HammerDB --------------------------------------------------------------------------------------


def summary_blocks(path: Path) -> list[dict[str, dict[str, float]]]:
    """The SUMMARY blocks of an xtprof log, read here independently of the importer."""
    reports: list[dict[str, dict[str, float]]] = []
    inside = False
    proc = ""
    for line in path.read_text().splitlines():
        if line.startswith(">>>>> SUMMARY OF"):
            inside = True
            reports.append({})
        elif line.startswith(">>>>> VIRTUAL USER") or "Time Profile Report" in line:
            inside = False
        elif inside and line.startswith(">>>>> PROC: "):
            proc = line.split()[-1]
            reports[-1][proc] = {}
        elif inside and (line.startswith("CALLS") or line.startswith("P99")):
            for key, value in re.findall(r"([A-Z0-9]+): ([0-9.]+)", line):
                reports[-1][proc][key] = float(value)
    return reports


def test_hammerdb_summary_blocks_become_aggregates_and_results_their_samples(
    results: Path,
) -> None:
    ok("import", "hammerdb", HAMMERDB / "before.log", HAMMERDB / "before_output.txt",
       "--condition", "before", "--results", results)  # fmt: skip
    store = Store(results)
    info = store.run()
    assert info.aggregates_only and (info.conditions, info.samples) == (1, 4)
    expected = summary_blocks(HAMMERDB / "before.log")
    assert len(expected) == 4
    rows = store.aggregates(info.run_id)
    assert len(rows) == 4 * 5
    for row in rows:
        want = expected[row["sample_id"]][row["txn_name"]]
        assert row["count"] == want["CALLS"] and row["failed"] == 0
        assert (row["lat_min_ms"], row["lat_mean_ms"], row["lat_max_ms"], row["lat_sum_ms"]) == (
            want["MIN"], want["AVG"], want["MAX"], want["TOTAL"],
        )  # fmt: skip
        assert row["percentiles"] == {
            k.lower(): want[k] for k in ("P25", "P50", "P75", "P95", "P99")
        }
        assert row["extra"]["sd_ms"] == want["SD"] and row["extra"]["ratio_pct"] == want["RATIO"]
        # Each virtual user's block is kept with the row: VUs 2 and 3, whose calls add up.
        users = row["extra"]["virtual_users"]
        assert [u["virtual_user"] for u in users] == [2, 3]
        assert sum(u["calls"] for u in users) == row["count"]
    # Samples: calls per second over the median elapsed time; NOPM/TPM from the output.
    nopm = [
        int(m)
        for m in re.findall(r"achieved (\d+) NOPM", (HAMMERDB / "before_output.txt").read_text())
    ]
    with store.read() as con:
        samples = con.execute(
            "SELECT transactions, (end_ns - t0_ns) / 1e9, tps, stats FROM samples"
            " WHERE run_id = ? ORDER BY sample_id",
            [info.run_id],
        ).fetchall()
    for (n, seconds, tps, stats), block, want_nopm in zip(samples, expected, nopm, strict=True):
        assert n == sum(p["CALLS"] for p in block.values())
        assert tps == pytest.approx(n / seconds)
        assert json.loads(stats)["nopm"] == want_nopm
    (c,) = summary(results)["conditions"]
    assert c["transactions"] == sum(p["CALLS"] for b in expected for p in b.values())
    # Percentiles of several rows cannot be combined; the mean and maximum can.
    assert c["latency_ms"]["p99"] is None
    assert c["latency_ms"]["max"] == max(p["MAX"] for b in expected for p in b.values())


def test_hammerdb_older_layout_and_a_result_line_before_the_report(results: Path) -> None:
    ok("import", "hammerdb", HAMMERDB / "old_format.log", "--results", results)
    store = Store(results)
    rows = {r["txn_name"]: r for r in store.aggregates(store.run().run_id)}
    assert set(rows) == {"NEWORD", "PAYMENT", "DELIVERY", "SLEV", "OSTAT"}
    neword = rows["NEWORD"]
    assert set(neword["percentiles"]) == {"p50", "p95", "p99"}
    # HammerDB before 6 printed the standard deviation in clock clicks, without a unit.
    assert "sd_clicks" in neword["extra"] and "sd_ms" not in neword["extra"]
    with store.read() as con:
        (stats,) = con.execute("SELECT stats FROM samples").fetchone() or (None,)
    assert json.loads(stats)["nopm"] == 351 and json.loads(stats)["tpm"] == 812


def test_hammerdb_compare_throughput_refuse_latency_and_report(
    results: Path, tmp_path: Path
) -> None:
    store = Store(results)
    run_id = import_hammerdb(store, [HAMMERDB / "before.log"], conditions=ConditionRule("before"))
    import_hammerdb(
        store, [HAMMERDB / "after.log"], conditions=ConditionRule("after"), run_id=run_id
    )
    (cmp,) = compare(results, "--metric", "throughput")["comparisons"]
    assert (cmp["condition"], cmp["verdict"]) == ("after", "faster")
    assert cmp["delta_pct"] > 15
    line = error("compare", "--results", results, "--metric", "latency", code=5)
    assert "only aggregates" in line and "--metric throughput" in line
    writes_report(results, tmp_path, "before", "after")


REPORT = "PostgreSQL Hammerdb Time Profile Report @ Tue Jun 23 16:03:54 BST 2026"
SUMMARY = ">>>>> SUMMARY OF 1 ACTIVE VIRTUAL USERS : MEDIAN ELAPSED TIME : 60000ms"
CALLS = "CALLS: 10\tMIN: 0.1ms\tAVG: 0.2ms\tMAX: 0.3ms\tTOTAL: 2.0ms"
PCTS = "P99: 0.3ms\tP95: 0.3ms\tP50: 0.2ms\tSD: 0.1ms\tRATIO: 0.1%"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "x.log: the file is empty"),
        ("hello\nworld\n", "x.log: no 'Hammerdb Time Profile Report' and no 'TEST RESULT'"),
        (f"{REPORT}\n{SUMMARY}\n>>>>> PROC: NEWORD\nCALLS: ten\tMIN: 0.1ms\n",
         "x.log:4: CALLS 'ten'; expected a number"),
        (f"{REPORT}\n{SUMMARY}\n>>>>> PROC: NEWORD\n{PCTS}\n", "x.log:4: expected 'CALLS: N"),
        (f"{REPORT}\n{SUMMARY}\n>>>>> PROC: NEWORD\n>>>>> PROC: PAYMENT\n",
         "x.log:4: PROC NEWORD has no figures"),
        (f"{REPORT}\n{SUMMARY}\n>>>>> PROC: NEWORD\n{CALLS}\n", "x.log:3: PROC NEWORD ends before"),
        (f"{REPORT}\n>>>>> VIRTUAL USER 2 : ELAPSED TIME : 60000ms\n>>>>> PROC: NEWORD\n"
         f"{CALLS}\n{PCTS}\n", "x.log:1: this report has no '>>>>> SUMMARY OF"),
        (f"{REPORT}\n{SUMMARY}\n>>>>> PROC: NEWORD\nCALLS: 10\tMIN: 0.1ms\n",
         "x.log:4: no AVG, MAX, TOTAL"),
        (f"{REPORT}\n{SUMMARY}\n>>>>> PROC: NEWORD\n{CALLS}\n{PCTS}\nTEST RESULT : System achieved"
         f" 5 NOPM from 9 PostgreSQL TPM\nTEST RESULT : System achieved 5 NOPM from 9 MySQL TPM\n",
         "x.log:6: 2 TEST RESULT line(s) for 1 report(s)"),
        (f"{CALLS}\n", "x.log:1: report lines before a report header"),
    ],
)  # fmt: skip
def test_malformed_hammerdb(tmp_path: Path, results: Path, text: str, message: str) -> None:
    bad = tmp_path / "x.log"
    bad.write_text(text)
    line = error("import", "hammerdb", bad, "--results", results)
    assert message in line, line
    nothing_written(results)


# -- YCSB raw --------------------------------------------------------------------------------------


def ycsb_raw(path: Path) -> dict[str, list[tuple[int, int]]]:
    """(timestamp ms, latency µs) per measurement, read here from YCSB's raw lines."""
    out: dict[str, list[tuple[int, int]]] = {}
    for line in path.read_text().splitlines():
        if m := re.fullmatch(r"([^,\s]+),(\d+),(\d+)", line):
            out.setdefault(m.group(1), []).append((int(m.group(2)), int(m.group(3))))
    return out


def test_ycsb_raw_lines_become_transactions(results: Path) -> None:
    raw = YCSB / "raw" / "fast.csv"
    ok("import", "ycsb", raw, YCSB / "raw" / "fast.stdout.txt", "--condition", "fast",
       "--results", results)  # fmt: skip
    store = Store(results)
    info = store.run()
    lines = ycsb_raw(raw)
    assert set(lines) == {"READ", "UPDATE", "CLEANUP"}
    stored = latencies_by_type(store, info.run_id)
    # CLEANUP is not an operation of the workload: left out, and counted in the settings.
    assert set(stored) == {("fast", "READ"), ("fast", "UPDATE")}
    assert info.settings["files"][0]["left_out"] == {"CLEANUP": len(lines["CLEANUP"])}
    assert info.settings["files"][0]["overall"]["RunTime(ms)"] > 0
    doc = summary(results)
    for t in doc["types"]:
        lat = np.array([us for _, us in lines[t["txn"]]])
        assert stored[("fast", t["txn"])].tolist() == sorted(lat.tolist())
        assert t["latency_ms"]["mean"] == pytest.approx(lat.mean() / 1000, rel=1e-12)
        p99_close(
            t["latency_ms"]["p99"], float(np.quantile(lat, 0.99, method="inverted_cdf")) / 1000
        )
    # The timestamp is the completion (ms); the start is the latency before it.
    with store.read() as con:
        ends = con.execute(
            "SELECT end_ns, end_ns - start_ns FROM transactions WHERE run_id = ?", [info.run_id]
        ).fetchall()
    want = sorted((ts * 1_000_000, us * 1000) for op in ("READ", "UPDATE") for ts, us in lines[op])
    assert sorted(ends) == want


def test_ycsb_intended_measurements_replace_the_plain_ones(results: Path) -> None:
    file = YCSB / "raw" / "both.stdout.txt"
    ok("import", "ycsb", file, "--results", results)
    store = Store(results)
    info = store.run()
    lines = ycsb_raw(file)
    stored = latencies_by_type(store, info.run_id)
    for op in ("READ", "UPDATE"):
        assert stored[("baseline", op)].tolist() == sorted(us for _, us in lines[f"Intended-{op}"])
    assert info.settings["files"][0]["latency_from"] == "intended start"
    assert set(info.settings["files"][0]["left_out"]) == {
        "READ", "UPDATE", "CLEANUP", "Intended-CLEANUP",
    }  # fmt: skip


def test_ycsb_failed_measurements_are_errors_of_their_operation(
    tmp_path: Path, results: Path
) -> None:
    file = tmp_path / "run.txt"
    file.write_text(
        "YCSB Client 0.17.0\n"
        "READ latency raw data: op, timestamp(ms), latency(us)\n"
        "READ,1700000000100,500\nREAD,1700000000200,700\n"
        "READ-NOT_FOUND latency raw data: op, timestamp(ms), latency(us)\n"
        "READ-NOT_FOUND,1700000000150,90\n"
        "READ-MODIFY-WRITE latency raw data: op, timestamp(ms), latency(us)\n"
        "READ-MODIFY-WRITE,1700000000300,1300\n"
        "[READ], Total Operations, 2\n[READ], Average, 600.0\n[READ], p50, 700\n"
        "[READ-NOT_FOUND], Total Operations, 1\n"
    )
    ok("import", "ycsb", file, "--results", results)
    (c,) = summary(results)["conditions"]
    assert (c["transactions"], c["errors"]) == (4, 1)
    with Store(results).read() as con:
        rows = con.execute(
            "SELECT tt.name, t.status, t.error_code FROM transactions t JOIN transaction_types tt"
            " USING (run_id, txn_type) ORDER BY t.end_ns"
        ).fetchall()
    assert rows == [
        ("READ", "ok", None), ("READ", "error", "NOT_FOUND"), ("READ", "ok", None),
        ("READ-MODIFY-WRITE", "ok", None),
    ]  # fmt: skip


def test_ycsb_raw_two_conditions_give_a_verdict_and_a_report(results: Path, tmp_path: Path) -> None:
    store = Store(results)
    run_id = import_ycsb(store, [YCSB / "raw" / "fast.csv"], conditions=ConditionRule("fast"),
                         sample_interval_s=0.1)  # fmt: skip
    import_ycsb(store, [YCSB / "raw" / "slow.csv"], conditions=ConditionRule("slow"),
                sample_interval_s=0.1, run_id=run_id)  # fmt: skip
    assert store.run(run_id).samples >= 16
    (cmp,) = compare(results)["comparisons"]
    # BasicDB sleeps up to 2 ms for "fast" and up to 4 ms for "slow".
    assert (cmp["condition"], cmp["verdict"]) == ("slow", "slower")
    writes_report(results, tmp_path, "fast", "slow")


# -- YCSB HdrHistogram -----------------------------------------------------------------------------


@pytest.mark.parametrize("folder", ["hdr_v1", "hdr_v2"])
def test_ycsb_hdr_intervals_match_hdrhistograms_java_reader(folder: str, results: Path) -> None:
    require_module("hdrh", "hdr")
    logs = sorted((YCSB / folder).glob("*.hdr"))
    prefix = logs[0].name.split("-")[0]
    stdout = YCSB / folder / ("stdout.txt" if folder == "hdr_v1" else f"{prefix}.stdout.txt")
    ok("import", "ycsb", *(f for f in logs if f.name.startswith(prefix)), stdout,
       "--results", results)  # fmt: skip
    store = Store(results)
    info = store.run()
    assert info.aggregates_only and info.samples >= 3
    java = [e for e in json.loads((YCSB / "expected_hdr.json").read_text())
            if e["file"].startswith(prefix) and "CLEANUP" not in e["file"]]  # fmt: skip
    rows = store.aggregates(info.run_id)
    assert sum(r["count"] for r in rows) == sum(e["count"] for e in java)
    checked = 0
    for row in rows:
        if len(row["extra"]["intervals"]) != 1:
            continue  # a merged first or last interval: Java printed its parts
        ((start, _),) = row["extra"]["intervals"]
        (e,) = [e for e in java if e["file"].endswith(f"-{row['txn_name']}.hdr")
                and abs(e["start_ms"] - start * 1000) < 1.5]  # fmt: skip
        assert row["count"] == e["count"]
        assert row["lat_min_ms"] == e["min"] / 1000 and row["lat_max_ms"] == e["max"] / 1000
        assert row["lat_mean_ms"] == pytest.approx(e["mean"] / 1000, abs=1e-9)
        for key in ("p50", "p90", "p99", "p99.9"):
            assert row["percentiles"][key] == e[key] / 1000, (key, row, e)
        # The buckets' counts add up, and each bucket is one HdrHistogram bucket (3 digits).
        bins = row["histogram"]["bins_ns"]
        assert sum(b[2] for b in bins) == row["count"]
        assert all(b[1] - b[0] + 1 <= max(1000, b[0] / 1024) for b in bins)
        checked += 1
    assert checked >= 4
    # YCSB's own count per operation (its stdout) equals the logs'.
    text = stdout.read_text()
    for op in ("READ", "UPDATE"):
        ops = int(re.search(rf"\[{op}\], Operations, (\d+)", text).group(1))  # type: ignore[union-attr]
        assert sum(r["count"] for r in rows if r["txn_name"] == op) == ops


def test_ycsb_hdr_conditions_from_names_compare_throughput_and_report(
    results: Path, tmp_path: Path
) -> None:
    require_module("hdrh", "hdr")
    logs = sorted((YCSB / "hdr_v2").glob("*.hdr"))
    ok("import", "ycsb", *logs, "--condition-from-filename", "^(fast|slow)-",
       "--results", results)  # fmt: skip
    info = Store(results).run()
    assert info.conditions == 2 and info.samples >= 8
    (cmp,) = compare(results, "--metric", "throughput")["comparisons"]
    # -target 300 against -target 200 operations per second.
    assert (cmp["baseline"], cmp["condition"]) == ("fast", "slow")
    assert cmp["delta_pct"] == pytest.approx(-33.3, abs=6)
    assert cmp["verdict"] == "slower"
    writes_report(results, tmp_path, "fast", "slow")


def test_ycsb_hdr_logs_refuse_a_sample_interval(results: Path) -> None:
    line = error("import", "ycsb", YCSB / "hdr_v2" / "fast-READ.hdr", "--sample-interval", "1s",
                 "--results", results)  # fmt: skip
    assert "HdrHistogram logs are sampled by their own intervals" in line
    nothing_written(results)


def test_ycsb_hdr_without_the_package_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, results: Path
) -> None:
    real = importlib.import_module

    def without_hdrh(name: str, package: str | None = None) -> Any:
        if name.startswith("hdrh"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", without_hdrh)
    with pytest.raises(MissingExtra) as caught:
        import_ycsb(Store(results), [YCSB / "hdr_v2" / "fast-READ.hdr"])
    assert caught.value.exit_code == 7 and "wannabet[hdr]" in str(caught.value)
    nothing_written(results)


LOG = (
    "#[Logging for: READ]\n#[Histogram log format version 1.3]\n"
    "#[StartTime: 1700000000.000 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]\n"
    '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"\n'
)


def first_interval() -> str:
    for line in (YCSB / "hdr_v2" / "fast-READ.hdr").read_text().splitlines():
        if line[:1].isdigit():
            return line
    raise AssertionError("no interval in the fixture")


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"x.txt": ""}, "x.txt: the file is empty"),
        ({"x.txt": "hello\n"}, "x.txt: no raw measurements"),
        ({"x.txt": "READ latency raw data: op, timestamp(ms), latency(us)\n"
                   "READ,1700000000100,500\nREAD,1700000000200,slow\n"},
         "x.txt:3: 'READ,1700000000200,slow'; expected 'OP,timestamp_ms,latency_us'"),
        ({"x.txt": "READ latency raw data: op, timestamp(ms), latency(us)\n"
                   "READ,1700000000100,500\nREAD,1700000000200,-3\n"},
         "x.txt:3: 'READ,1700000000200,-3'; expected"),
        ({"x.txt": "READ latency raw data: op, timestamp(ms), latency(us)\n"
                   "READ,1700000000100,500\nUPDATE,1700000000200,3\n"},
         "x.txt:3: a raw line of UPDATE without its header"),
        ({"x.txt": "READ,1700000000100,500\n"}, "x.txt:1: a raw measurement without any"),
        ({"x.txt": "READ latency raw data: op, timestamp(ms), latency(us)\nREAD,1,5\n"
                   "READ latency raw data: op, timestamp(ms), latency(us)\nREAD,2,5\n"},
         "x.txt:3: a second READ section (first at line 1)"),
        ({"x.txt": "READ latency raw data: op, timestamp(ms), latency(us)\nREAD,1,5\nREAD,2,7\n"
                   "[READ], Total Operations, 3\n"},
         "x.txt:4: YCSB reports [READ], Total Operations = 3, x.txt gives 2"),
        ({"x.txt": "[OVERALL], RunTime(ms), 10\n"}, "x.txt: YCSB's summary but no measurements"),
        ({"READ.hdr": LOG + "0.1,1.0,0.1,HISTnotbase64!!\n"},
         "READ.hdr:5: not base64; expected an HdrHistogram compressed histogram"),
        ({"READ.hdr": LOG + "0.1,1.0,HISTFAAAAA\n"},
         "READ.hdr:5: 3 fields; expected StartTimestamp"),
        ({"READ.hdr": LOG + "soon,1.0,0.1,HISTFAAAAA==\n"},
         "READ.hdr:5: a timestamp, length or max"),
        ({"READ.hdr": LOG}, "READ.hdr: no interval lines"),
        ({"READ.hdr": LOG + "0.1,1.0,0.1,aGVsbG8gd29ybGQ=\n"},
         "READ.hdr:5: encoding cookie 0x68656c6c, not a compressed histogram"),
    ],
)  # fmt: skip
def test_malformed_ycsb(tmp_path: Path, results: Path, files: dict[str, str], message: str) -> None:
    if any(n.endswith(".hdr") for n in files):
        require_module("hdrh", "hdr")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    line = error("import", "ycsb", *(tmp_path / n for n in files), "--results", results)
    assert message in line, line
    nothing_written(results)


def test_ycsb_raw_and_hdr_together_and_summaries_without_a_run_are_refused(
    tmp_path: Path, results: Path
) -> None:
    line = error("import", "ycsb", YCSB / "raw" / "fast.csv", YCSB / "hdr_v2" / "fast-READ.hdr",
                 "--results", results)  # fmt: skip
    assert "mixes YCSB raw measurements" in line
    # Two runs in the folder of a stdout that names neither's raw file.
    (tmp_path / "a.csv").write_bytes((YCSB / "raw" / "fast.csv").read_bytes())
    (tmp_path / "b.csv").write_bytes((YCSB / "raw" / "slow.csv").read_bytes())
    (tmp_path / "out.txt").write_text("[OVERALL], RunTime(ms), 1009\n")
    line = error("import", "ycsb", tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "out.txt",
                 "--results", results)  # fmt: skip
    assert "out.txt: YCSB's summary, and 2 runs it could belong to" in line
    nothing_written(results)


# -- all formats -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "file"),
    [
        ("benchbase", BENCHBASE / "tpcc_after.raw.csv"),
        ("hammerdb", HAMMERDB / "after.log"),
        ("ycsb", YCSB / "raw" / "slow.csv"),
    ],
)
def test_same_content_twice_is_refused_unless_forced(
    tmp_path: Path, results: Path, fmt: str, file: Path
) -> None:
    ok("import", fmt, file, "--results", results)
    renamed = tmp_path / f"copy-{file.name}"
    shutil.copy(file, renamed)
    line = error("import", fmt, renamed, "--results", results)
    assert "already imported as run 1" in line and "--force" in line
    ok("import", fmt, renamed, "--force", "--results", results)
    assert len(Store(results).runs()) == 2


def test_one_bad_file_imports_nothing_of_the_batch(tmp_path: Path, results: Path) -> None:
    bad = tmp_path / "bad.log"
    bad.write_text("nothing here\n")
    with pytest.raises(ImportError_, match=r"bad\.log: no 'Hammerdb Time Profile Report'"):
        import_hammerdb(Store(results), [HAMMERDB / "before.log", bad])
    nothing_written(results)


def test_cli_exit_code_and_one_line_for_a_malformed_file(tmp_path: Path, results: Path) -> None:
    bad = tmp_path / "r.raw.csv"
    bad.write_text(f"{HEADER}\n{GOOD}\n1,NewOrder,1722222636.5\n")
    proc = cli.wannabet("import", "benchbase", str(bad), "--results", str(results), timeout=120)
    line = cli.one_line_error(proc, code=2)
    assert "r.raw.csv:3: 3 fields; expected 6" in line
