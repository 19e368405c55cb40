"""fio imports, on the output of real fio runs made here: JSON, JSON+ and histogram logs.

The six runs (``fio_runs``, one second of I/O each, side by side) use Debian's ``fio``
package, installed when missing and we are root (``wannabet.testing.packages``); in CI a
missing fio fails the tests.
Malformed inputs are made from that output, or written inline.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from wannabet.analysis import histogram
from wannabet.errors import ImportError_
from wannabet.importers import ConditionRule, import_fio
from wannabet.importers.fio import (
    PLAT_NR,
    bucket_edges,
    bucket_index,
    bucket_value,
    fio_percentile,
)
from wannabet.store import Store
from wannabet.testing.ci import unavailable
from wannabet.testing.cli import wannabet
from wannabet.testing.packages import PackageUnavailable, ensure_command

# -- fio, run once for the module -----------------------------------------------------------------

#: a small file on local disk, read and written with a synchronous engine for one second
COMMON = (
    "--size=8M",
    "--bs=4k",
    "--ioengine=psync",
    "--runtime=1",
    "--time_based",
    "--randseed=1",
)


@dataclass(frozen=True)
class FioRuns:
    folder: Path
    fast: Path  # json+, randread, histogram log every 200 ms
    slow: Path  # the same at --rate_iops=1000, its log's buckets 4 of fio's each
    mixed: Path  # json+, randrw, two clones (numjobs=2) without group_reporting, fdatasync
    plain: Path  # json (no bins), fio's stdout with its "note:" line before the JSON
    lat: Path  # json+, randrw, two clones, latency logs of every I/O (lat_clat.N.log, ...)
    avg: Path  # json, randread, latency logs of 100 ms windows' averages (log_avg_msec)

    def doc(self, path: Path) -> dict[str, Any]:
        text = path.read_text()
        loaded: dict[str, Any] = json.loads(
            text[text.index("\n{") + 1 :] if text[0] != "{" else text
        )
        return loaded

    def log(self, name: str) -> Path:
        return self.folder / f"{name}_clat_hist.1.log"


@pytest.fixture(scope="module")
def fio_runs(tmp_path_factory: pytest.TempPathFactory) -> FioRuns:
    try:
        fio = ensure_command("fio", package="fio")
    except PackageUnavailable as exc:
        unavailable("fio", exc)
    folder = tmp_path_factory.mktemp("fio")
    logs = ("--log_hist_msec=200",)
    jobs = {
        "fast": ("--rw=randread", "--output-format=json+", *logs, "--write_hist_log=fast"),
        "slow": ("--rw=randread", "--rate_iops=1000", "--output-format=json+", *logs,
                 "--log_hist_coarseness=2", "--write_hist_log=slow"),
        "mixed": ("--rw=randrw", "--numjobs=2", "--fdatasync=16", "--output-format=json+"),
        # Written to stdout, where fio puts its notes too (iodepth > 1 with a sync engine).
        "plain": ("--rw=randread", "--iodepth=4", "--output-format=json"),
        "lat": ("--rw=randrw", "--numjobs=2", "--output-format=json+", "--write_lat_log=lat"),
        "avg": ("--rw=randread", "--output-format=json", "--write_lat_log=avg",
                "--log_avg_msec=100"),
    }  # fmt: skip
    # The six runs at once, each on its own file: about a second and a half in all.
    with contextlib.ExitStack() as stack:
        running = {}
        for name, args in jobs.items():
            out = folder / f"{name}.json"
            target = [] if name == "plain" else [f"--output={out}"]
            command = [fio, f"--name={name}", f"--filename={folder / name}.data", *COMMON, *args]
            running[name] = subprocess.Popen(
                [*command, *target],
                cwd=folder,
                stdout=stack.enter_context(out.open("w"))
                if name == "plain"
                else subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
        for name, process in running.items():
            _, stderr = process.communicate(timeout=60)
            assert process.returncode == 0, (name, stderr)
    return FioRuns(folder, *(folder / f"{name}.json" for name in jobs))


# -- helpers ---------------------------------------------------------------------------------------


def run(*args: object) -> subprocess.CompletedProcess[str]:
    """The command in this process, through its entry point (output as a pipe gets it)."""
    return wannabet(*(str(a) for a in args))


def ok(*args: object) -> str:
    result = run(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def error(*args: object, code: int = 2) -> str:
    """The one ``error:`` line of a command that must fail with ``code``."""
    result = run(*args)
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return str(lines[0])


def nothing_written(results: Path) -> None:
    assert not results.exists() or Store(results).runs() == []


def rows(results: Path, run_id: int = 1) -> list[dict[str, Any]]:
    return Store(results).aggregates(run_id)


def settings(results: Path, run_id: int = 1) -> dict[str, Any]:
    found = Store(results).run(run_id).settings
    assert found is not None
    return dict(found)


def fio_bins(stats: dict[str, Any]) -> dict[int, int]:
    """json+ bins, read here: fio's bucket value → its index."""
    return {bucket_index(int(k)): int(v) for k, v in stats["bins"].items()}


def as_histogram(bins: list[list[int]]) -> histogram.Histogram:
    lo, hi, count = (np.asarray(col, dtype=np.uint64) for col in zip(*bins, strict=True))
    return histogram.Histogram(lo, hi, count)


# -- fio's histogram layout -----------------------------------------------------------------------


def test_bucket_layout_is_fios() -> None:
    # Contiguous from 0, exact below 128 ns, 64 buckets per power of two above, each at most
    # 1/64 of its lowest value wide; each bucket's name (plat_idx_to_val) is inside it and maps
    # back to it (plat_val_to_idx), and every value inside maps to it.
    previous_hi = -1
    for index in range(PLAT_NR):
        lo, hi = bucket_edges(index)
        assert lo == previous_hi + 1
        previous_hi = hi
        assert (hi - lo + 1) <= max(1, lo // 64)
        assert lo <= bucket_value(index) <= hi and bucket_index(bucket_value(index)) == index
        assert bucket_index(lo) == index and bucket_index(hi) == index
    assert bucket_edges(PLAT_NR - 1) == (2**34 - 2**27, 2**34 - 1)  # ~17.2 s
    assert bucket_index(10**12) == PLAT_NR - 1
    # Values fio prints: 2^20 + 16 · 2^14 is bucket 1104's lowest value, named 2^13 higher.
    assert bucket_value(bucket_index(2**20 + 16 * 2**14)) == 2**20 + 16 * 2**14 + 2**13


# -- JSON+ -----------------------------------------------------------------------------------------


def test_json_plus_counts_iops_percentiles_and_bins_are_fios(
    fio_runs: FioRuns, results: Path
) -> None:
    out = ok("import", "fio", fio_runs.fast, "--results", results)
    assert "as run 1: aggregates only" in out and "1 condition, 1 sample" in out
    read = fio_runs.doc(fio_runs.fast)["jobs"][0]["read"]
    clat = read["clat_ns"]
    (row,) = rows(results)
    assert (row["condition"], row["txn_name"]) == ("fast", "read")
    # Counts: every completion fio timed; with a synchronous engine every I/O it issued.
    assert row["count"] == clat["N"] == read["total_ios"] > 1000
    assert row["extra"]["iops"] == read["iops"]
    assert row["lat_min_ms"] == clat["min"] / 1e6 and row["lat_max_ms"] == clat["max"] / 1e6
    assert row["lat_mean_ms"] == pytest.approx(clat["mean"] / 1e6, rel=1e-12)
    # fio's percentiles, as printed.
    assert row["percentiles"] == {f"p{float(p):g}": v / 1e6 for p, v in clat["percentile"].items()}
    # The bins: fio's buckets with their edges, every latency in them ...
    h = as_histogram(row["histogram"]["bins_ns"])
    assert histogram.count(h) == clat["N"]
    assert int(h.lo_ns[0]) <= clat["min"] and clat["max"] <= int(h.hi_ns[-1])
    low, high = histogram.mean_bounds(h)
    assert low <= clat["mean"] <= high
    # ... so wannabet's quantiles of the stored bins are fio's percentiles (within half a ns of
    # fio's name of the bucket, which is well inside the bucket's 1/64 width).
    for percent, value in clat["percentile"].items():
        q = histogram.quantile(h, float(percent) / 100)
        assert abs(q - value) <= max(1.0, value / 64), (percent, q, value)
        assert abs(q - value) <= 0.5, (percent, q, value)
    # The sample: its length is the job's runtime, its throughput fio's IOPS.
    (sample,) = Store(results).samples(1)
    assert sample["committed"] == clat["N"]
    assert sample["tps"] == pytest.approx(read["iops"], rel=0.01)
    doc = json.loads(ok("summary", "--results", results, "--format", "json"))
    (cond,) = doc["conditions"]
    assert cond["transactions"] == clat["N"] and cond["tps"] == pytest.approx(
        read["iops"], rel=0.01
    )
    assert cond["latency_ms"]["p50"] == clat["percentile"]["50.000000"] / 1e6
    assert cond["latency_ms"]["p99"] == clat["percentile"]["99.000000"] / 1e6


def test_clones_merge_exactly_and_percentiles_are_fios_rule(
    fio_runs: FioRuns, results: Path
) -> None:
    jobs = fio_runs.doc(fio_runs.mixed)["jobs"]
    assert [j["jobname"] for j in jobs] == ["mixed", "mixed"]
    # fio's percentile rule, applied to each clone's own bins, gives what fio printed.
    for job in jobs:
        for direction in ("read", "write"):
            clat = job[direction]["clat_ns"]
            bins = fio_bins(clat)
            for percent, value in clat["percentile"].items():
                assert fio_percentile(bins, float(percent)) == value
    import_fio(Store(results), [fio_runs.mixed])
    by_type = {r["txn_name"]: r for r in rows(results)}
    assert list(by_type) == ["read", "write", "sync"]
    iops = 0.0
    for direction, row in by_type.items():
        # fdatasync has only a total latency (lat_ns), and no IOPS of its own.
        kind = "lat_ns" if direction == "sync" else "clat_ns"
        assert row["extra"]["latency"] == kind[:-3]
        clats = [j[direction][kind] for j in jobs]
        n = sum(c["N"] for c in clats)
        assert row["condition"] == "mixed" and row["count"] == n
        assert row["lat_min_ms"] == min(c["min"] for c in clats) / 1e6
        assert row["lat_max_ms"] == max(c["max"] for c in clats) / 1e6
        mean = sum(c["mean"] * c["N"] for c in clats) / n
        assert row["lat_mean_ms"] == pytest.approx(mean / 1e6, rel=1e-9)
        merged: dict[int, int] = {}
        for c in clats:
            for index, count in fio_bins(c).items():
                merged[index] = merged.get(index, 0) + count
        stored = as_histogram(row["histogram"]["bins_ns"])
        assert histogram.count(stored) == n
        # Recomputed from the merged bins as fio's group_reporting would.
        for key, value in row["percentiles"].items():
            assert value == fio_percentile(merged, float(key[1:])) / 1e6
        assert row["extra"]["jobs"] == 2 and len(row["extra"]["per_job"]) == 2
        iops += sum(j[direction].get("iops", 0.0) for j in jobs)
    # The sample's throughput counts every timed operation over the job's runtime: fio's IOPS
    # (reads and writes) plus the fdatasyncs.
    (sample,) = Store(results).samples(1)
    runtime_s = max(j["job_runtime"] for j in jobs) / 1000
    assert sample["committed"] == sum(r["count"] for r in by_type.values())
    syncs = by_type["sync"]["count"]
    assert syncs > 0 and sample["tps"] == pytest.approx(iops + syncs / runtime_s, rel=0.02)
    assert json.loads(sample["stats"])["fio_iops"] == pytest.approx(iops)


def test_plain_json_after_fios_note_line(fio_runs: FioRuns, results: Path) -> None:
    assert fio_runs.plain.read_text().startswith("note: ")
    import_fio(Store(results), [fio_runs.plain])
    clat = fio_runs.doc(fio_runs.plain)["jobs"][0]["read"]["clat_ns"]
    assert "bins" not in clat
    (row,) = rows(results)
    assert row["count"] == clat["N"] and row["histogram"] is None
    assert row["percentiles"]["p99"] == clat["percentile"]["99.000000"] / 1e6
    (document,) = settings(results)["files"]
    assert document["lines_before_json"] == 1 and document["fio_version"].startswith("fio-3")


def test_conditions_from_options_and_names(fio_runs: FioRuns, results: Path) -> None:
    store = Store(results)
    run_id = import_fio(store, [fio_runs.fast], conditions=ConditionRule("before"))
    import_fio(store, [fio_runs.slow], conditions=ConditionRule("after"), run_id=run_id)
    assert [c.label for c in store.conditions(run_id)] == ["before", "after"]
    # A pattern over the file name; a file of several job names gives LABEL/jobname.
    both = fio_runs.folder / "both-run.json"
    doc = fio_runs.doc(fio_runs.fast)
    other = json.loads(json.dumps(doc["jobs"][0]))
    other["jobname"] = "second"
    doc["jobs"].append(other)
    both.write_text(json.dumps(doc))
    second = import_fio(store, [both], conditions=ConditionRule(pattern=r"^(\w+)-run"))
    assert [c.label for c in store.conditions(second)] == ["both/fast", "both/second"]


# -- histogram logs ------------------------------------------------------------------------------


def test_histogram_logs_give_interval_samples_compare_and_report(
    fio_runs: FioRuns, results: Path, tmp_path: Path
) -> None:
    files = [fio_runs.fast, fio_runs.log("fast"), fio_runs.slow, fio_runs.log("slow")]
    out = ok("import", "fio", *files, "--results", results)
    assert "2 conditions" in out
    info = Store(results).run(1)
    assert settings(results)["format"] == "fio-hist" and info.aggregates_only
    samples = Store(results).samples(1)
    by_label = {c.label: c.condition_id for c in Store(results).conditions(1)}
    assert set(by_label) == {"fast", "slow"}
    for label in ("fast", "slow"):
        mine = [s for s in samples if s["condition_id"] == by_label[label]]
        # One sample per 200 ms interval, the last (partial) one never written by fio. A line
        # comes after its interval's first completion past the end, which a loaded machine can
        # delay by well over 100 ms (a sample of 0.35 s or more seen in CI).
        assert 3 <= len(mine) <= 5
        assert all(0.1 < s["duration_s"] < 0.5 for s in mine)
        clat = fio_runs.doc(fio_runs.fast if label == "fast" else fio_runs.slow)["jobs"][0]
        clat = clat["read"]["clat_ns"]
        mine_rows = [r for r in rows(results) if r["condition"] == label]
        logged = sum(r["count"] for r in mine_rows)
        (document,) = [f for f in settings(results)["files"] if f.get("condition") == label]
        assert document["interval_ms"] == 200.0
        assert logged + document["unlogged"]["read"] == clat["N"]
        assert 0 <= document["unlogged"]["read"] < clat["N"] / 2
        # The logs' buckets are the JSON's (or 4 of them merged, log_hist_coarseness=2): merged
        # over the intervals, no bucket holds more than fio's json+ bins within its edges.
        json_bins = {bucket_edges(i): c for i, c in fio_bins(clat).items()}
        merged: dict[tuple[int, int], int] = {}
        for r in mine_rows:
            assert r["histogram"]["buckets"] == (PLAT_NR if label == "fast" else PLAT_NR // 4)
            for lo, hi, count in r["histogram"]["bins_ns"]:
                merged[(lo, hi)] = merged.get((lo, hi), 0) + count
        for (lo, hi), count in merged.items():
            assert count <= sum(c for (a, b), c in json_bins.items() if lo <= a and b <= hi)
            if label == "fast":
                assert (lo, hi) in json_bins
        # Each interval's figures are its bins'.
        for r in mine_rows:
            h = as_histogram(r["histogram"]["bins_ns"])
            assert r["count"] == histogram.count(h)
            for key, q in (("p50", 0.5), ("p99", 0.99)):
                assert r["percentiles"][key] * 1e6 == pytest.approx(histogram.quantile(h, q))
            assert round(r["lat_min_ms"] * 1e6) == int(h.lo_ns[0])
    slow_tps = [s["tps"] for s in samples if s["condition_id"] == by_label["slow"]]
    assert np.median(slow_tps) == pytest.approx(1000, rel=0.15)  # --rate_iops=1000
    doc = json.loads(
        ok("compare", "--results", results, "--metric", "throughput", "--format", "json")
    )
    (cmp,) = doc["comparisons"]
    assert (cmp["baseline"], cmp["condition"], cmp["verdict"]) == ("fast", "slow", "slower")
    assert cmp["delta_pct"] < -50
    line = error("compare", "--results", results, "--metric", "latency", code=5)
    assert "only aggregates" in line
    page = tmp_path / "report.html"
    ok("report", "--results", results, "-o", page)
    html = page.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html") and "slow" in html
    assert "fast" in html


def test_histogram_log_alone_takes_its_prefix_and_infers_the_interval(
    fio_runs: FioRuns, results: Path
) -> None:
    import_fio(Store(results), [fio_runs.log("fast")])
    (document,) = settings(results)["files"]
    # Estimated from the lines' times (the JSON has it): a millisecond or so off on the few
    # lines of a one-second run, up to 4 ms seen on a loaded CI machine (3% allowed), and every
    # line still in its own interval.
    assert document["condition"] == "fast" and abs(document["interval_ms"] - 200) <= 6
    assert document["unlogged"] is None and document["json"] is None
    assert [c.label for c in Store(results).conditions(1)] == ["fast"]
    lines = fio_runs.log("fast").read_text().splitlines()
    assert len(Store(results).samples(1)) == len(lines) == document["logs"][0]["lines"]


def raw_log_buckets(path: Path) -> dict[int, int]:
    """A histogram log's buckets summed over its lines, read here from the raw text."""
    merged: dict[int, int] = {}
    for line in path.read_text().splitlines():
        for index, count in enumerate(int(x) for x in line.split(",")[3:]):
            if count:
                merged[index] = merged.get(index, 0) + count
    return merged


def test_histogram_log_percentiles_and_heatmap_come_from_the_stored_bins(
    fio_runs: FioRuns, results: Path, tmp_path: Path
) -> None:
    # Several interval rows: no single row holds the condition's percentiles, the per-sample
    # histograms do.
    ok("import", "fio", fio_runs.fast, fio_runs.log("fast"), "--results", results)
    assert len(rows(results)) >= 3
    doc = json.loads(ok("summary", "--results", results, "--format", "json"))
    (cond,) = doc["conditions"]
    merged = raw_log_buckets(fio_runs.log("fast"))
    assert cond["transactions"] == sum(merged.values())
    for key, percent in (("p50", 50.0), ("p95", 95.0), ("p99", 99.0)):
        # fio's rule on the raw log's buckets: the bucket holding the order statistic, named
        # by its midpoint; wannabet's quantile of the stored bins is that bucket's midpoint.
        expected = fio_percentile(merged, percent)
        lo, hi = bucket_edges(bucket_index(expected))
        shown = cond["latency_ms"][key] * 1e6
        assert lo <= shown <= hi + 1 and abs(shown - expected) <= 0.5, (key, shown, expected)
    page = tmp_path / "report.html"
    ok("report", "--results", results, "-o", page)
    html = page.read_text(encoding="utf-8")
    assert 'data-key="heatmap"' in html and "Aggregates only: no heatmap" not in html
    assert 'id="tool-histograms"' in html and 'data-key="histogram-log"' in html


def test_json_plus_of_two_directions_has_percentiles_of_the_merged_bins(
    fio_runs: FioRuns, results: Path
) -> None:
    import_fio(Store(results), [fio_runs.mixed])
    merged: dict[int, int] = {}
    for job in fio_runs.doc(fio_runs.mixed)["jobs"]:
        for direction, kind in (("read", "clat_ns"), ("write", "clat_ns"), ("sync", "lat_ns")):
            for index, count in fio_bins(job[direction][kind]).items():
                merged[index] = merged.get(index, 0) + count
    (cond,) = json.loads(ok("summary", "--results", results, "--format", "json"))["conditions"]
    for key, percent in (("p50", 50.0), ("p99", 99.0)):
        expected = fio_percentile(merged, percent)
        assert abs(cond["latency_ms"][key] * 1e6 - expected) <= 0.5, (key, expected)
    # One run with bins and one without in a condition: no histogram covers it, no percentile.
    other = tmp_results = results.with_name("partial.duckdb")
    store = Store(tmp_results)
    run_id = import_fio(store, [fio_runs.fast], conditions=ConditionRule("x"))
    import_fio(store, [fio_runs.plain], conditions=ConditionRule("x"), run_id=run_id)
    (cond,) = json.loads(ok("summary", "--results", other, "--format", "json"))["conditions"]
    assert cond["latency_ms"]["p50"] is None and cond["latency_ms"]["mean"] is not None


# -- latency logs ---------------------------------------------------------------------------------


def lat_logs(fio_runs: FioRuns, name: str) -> list[Path]:
    return sorted(fio_runs.folder.glob(f"{name}_*lat.*.log"))


def test_latency_logs_are_fios_ios_as_transactions_in_interval_samples(
    fio_runs: FioRuns, results: Path
) -> None:
    logs = lat_logs(fio_runs, "lat")
    # fio writes _clat, _lat and _slat logs per thread; _slat is empty for a synchronous engine.
    assert {p.name for p in logs} >= {"lat_clat.1.log", "lat_clat.2.log", "lat_slat.1.log"}
    out = ok("import", "fio", fio_runs.lat, *logs, "--sample-interval", "200ms",
             "--results", results)  # fmt: skip
    assert "1 condition" in out and "aggregates only" not in out
    store = Store(results)
    info = store.run(1)
    assert settings(results)["format"] == "fio-lat" and not info.aggregates_only
    # The completion latencies are imported, the other logs of the same I/Os left out.
    assert sorted(Path(f).name for f in settings(results)["unused"]) == [
        p.name for p in logs if "_clat." not in p.name
    ]
    jobs = fio_runs.doc(fio_runs.lat)["jobs"]
    table = store.transactions_table(1)
    latency = np.asarray(table.column("latency_ms").to_numpy())
    names = np.asarray(table.column("txn_name").to_pylist())
    doc = json.loads(ok("summary", "--results", results, "--format", "json"))
    per_type = {t["txn"]: t for t in doc["types"]}
    for direction in ("read", "write"):
        clats = [j[direction]["clat_ns"] for j in jobs]
        n = sum(c["N"] for c in clats)
        mine = latency[names == direction]
        # Every I/O fio timed, each with its latency in ns: fio's count, mean, extremes.
        assert len(mine) == n > 1000
        mean = sum(c["mean"] * c["N"] for c in clats) / n
        assert mine.mean() * 1e6 == pytest.approx(mean, rel=1e-9)
        assert round(mine.min() * 1e6) == min(c["min"] for c in clats)
        assert round(mine.max() * 1e6) == max(c["max"] for c in clats)
        # fio's percentiles (of its buckets, 1/64 wide) hold the exact order statistic.
        merged: dict[int, int] = {}
        for c in clats:
            for index, count in fio_bins(c).items():
                merged[index] = merged.get(index, 0) + count
        for percent in (50.0, 99.0):
            exact = np.sort(mine)[math.ceil(percent / 100 * n) - 1] * 1e6
            lo, hi = bucket_edges(bucket_index(fio_percentile(merged, percent)))
            assert lo - 1 <= exact <= hi + 1, (direction, percent, exact, lo, hi)
        # summary's figures, from the per-sample summaries of the stored I/Os.
        assert per_type[direction]["transactions"] == n
        assert per_type[direction]["latency_ms"]["mean"] * 1e6 == pytest.approx(mean, rel=1e-9)
        for key, percent in (("p50", 50.0), ("p99", 99.0)):
            fio_value = fio_percentile(merged, percent)
            shown = per_type[direction]["latency_ms"][key] * 1e6
            assert abs(shown - fio_value) <= fio_value * (1 / 64 + 1 / 256) + 1, (key, shown)
    # Each thread a session; samples of 200 ms of completion time from the job's start.
    assert sorted(set(table.column("session").to_pylist())) == [0, 1]
    samples = store.samples(1)
    assert 5 <= len(samples) <= 7
    assert sum(s["transactions"] for s in samples) == len(latency)
    assert all(s["duration_s"] <= 0.2 + 1e-9 for s in samples)
    assert sum(s["duration_s"] > 0.19 for s in samples) >= 4
    starts = [s["t0_ns"] for s in samples]
    assert all((b - starts[0]) % 200_000_000 == 0 for b in starts)
    # Each I/O in the sample of its completion time.
    ends = np.asarray(table.column("end_ns").to_numpy())
    sample_ids = np.asarray(table.column("sample_id").to_numpy())
    by_id = {s["sample_id"]: s for s in samples}
    for sid in np.unique(sample_ids).tolist():
        mine_ends = ends[sample_ids == sid]
        assert by_id[sid]["t0_ns"] <= mine_ends.min() and mine_ends.max() < by_id[sid]["end_ns"]
    # Per-I/O rows: the latency comparison, refused for aggregates, works.
    ok("compare", "--results", results, "--metric", "latency", "--level", "transaction")


def test_latency_logs_default_to_one_second_samples_and_alone(
    fio_runs: FioRuns, results: Path
) -> None:
    clat = [p for p in lat_logs(fio_runs, "lat") if "_clat." in p.name]
    import_fio(Store(results), clat)
    (document,) = settings(results)["files"]
    assert document["condition"] == "lat" and document["json"] is None
    assert settings(results)["samples"].startswith("every 1s")
    samples = Store(results).samples(1)
    # A one-second run: its I/Os up to 1 s, and those of the ms fio took past it.
    assert 1 <= len(samples) <= 2 and samples[0]["duration_s"] > 0.9
    jobs = fio_runs.doc(fio_runs.lat)["jobs"]
    total = sum(j[d]["clat_ns"]["N"] for j in jobs for d in ("read", "write"))
    assert sum(s["transactions"] for s in samples) == total


def test_windowed_latency_logs_are_refused(
    fio_runs: FioRuns, results: Path, tmp_path: Path
) -> None:
    # log_avg_msec: each line a window's mean over I/Os the log does not count.
    (log,) = [p for p in lat_logs(fio_runs, "avg") if "_clat." in p.name]
    assert log.read_text().splitlines()[0].split(",")[3].strip() == "0"
    line = error("import", "fio", log, "--results", results)
    assert f"{log.name}:1: block size 0: a line of windowed logging (log_avg_msec)" in line
    assert "--write_hist_log" in line
    nothing_written(results)
    # The JSON says so too, whatever the logs look like.
    doc = fio_runs.doc(fio_runs.lat)
    for job in doc["jobs"]:
        job["job options"]["log_avg_msec"] = "100"
    edited_json = tmp_path / "lat.json"
    edited_json.write_text(json.dumps(doc))
    clat = [p for p in lat_logs(fio_runs, "lat") if "_clat." in p.name]
    line = error("import", "fio", edited_json, *clat, "--results", results)
    assert "job 'lat' has log_avg_msec=100" in line
    nothing_written(results)


def test_malformed_latency_logs(fio_runs: FioRuns, results: Path, tmp_path: Path) -> None:
    (first,) = [p for p in lat_logs(fio_runs, "lat") if p.name == "lat_clat.1.log"]
    lines = first.read_text().splitlines()
    folder = tmp_path / "bad"
    folder.mkdir()
    bad = folder / "lat_clat.1.log"

    def refused(text: str, *others: Path) -> str:
        bad.write_text(text)
        line = error("import", "fio", *others, bad, "--results", results)
        nothing_written(results)
        return line

    assert "lat_clat.1.log:2: 'x' is not a whole number" in refused(
        lines[0] + "\n" + ", ".join(["0", "x", *lines[1].split(",")[2:]])
    )
    assert "lat_clat.1.log:3: 4 fields, the first line has 5" in refused(
        "\n".join([*lines[:2], lines[2].rsplit(",", 1)[0]])
    )
    assert "lat_clat.1.log:2: time" in refused(lines[0] + "\n" + "5, 100, 7, 4096, 0")
    # A log cut short, with the JSON of the run: fio logs every I/O it times.
    line = refused("\n".join(lines[:-10]), fio_runs.lat, *lat_logs(fio_runs, "lat")[1:2])
    assert "hold" in line and "expected the complete logs" in line
    # A submission latency alone is not an I/O's latency.
    slat = folder / "s_slat.1.log"
    slat.write_text("0, 100, 0, 4096, 0\n")
    assert "a submission latency log (_slat)" in error("import", "fio", slat, "--results", results)
    line = error("import", "fio", fio_runs.fast, "--sample-interval", "1s", "--results", results)
    assert "--sample-interval slices fio's latency logs" in line
    line = error("import", "fio", fio_runs.log("fast"), first, "--results", results)
    assert "histogram logs and latency logs together" in line
    nothing_written(results)


# -- malformed input ------------------------------------------------------------------------------


JOB = '{"jobname": "a", "job_runtime": 1000, "read": {"total_ios": 0, "clat_ns": {"N": 0}}}'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hello\nworld\n", "x.json: no line starts with '{'"),
        ("note: a warning\n{\"jobs\": [\n", "x.json:3: not JSON"),
        ('{"fio version": "fio-3.33", "timestamp_ms": 1}', 'x.json:1: no "jobs" list'),
        ('{"fio version": "fio-2.2.10", "jobs": []}', "expected the output of fio 3.0 or later"),
        ('{"timestamp_ms": 1, "jobs": []}', '"jobs" is empty'),
        ('{"timestamp_ms": 1, "jobs": [{"jobname": "a", "job_runtime": 1}]}',
         "x.json:1: jobs[0] ('a') has no read, write or trim statistics"),
        ('{"timestamp_ms": 1, "jobs": [' + JOB + "]}", "no job did any I/O"),
        ('{"timestamp_ms": 1, "jobs": [{"jobname": "a", "job_runtime": 1, "read":'
         ' {"total_ios": 5, "clat": {"min": 1}}}]}', "latencies in µs"),
        ('{"timestamp_ms": 1, "jobs": [{"jobname": "a", "job_runtime": 1, "read":'
         ' {"total_ios": 5, "clat_ns": {"N": 5, "min": 1, "max": 2, "mean": "x",'
         ' "stddev": 0}}}]}', "jobs[0] ('a').read.clat_ns.mean 'x'; expected a number"),
        ('{"client_stats": []}', "client/server output"),
    ],
)  # fmt: skip
def test_malformed_json(tmp_path: Path, results: Path, text: str, message: str) -> None:
    bad = tmp_path / "x.json"
    bad.write_text(text)
    line = error("import", "fio", bad, "--results", results)
    assert message in line, line
    nothing_written(results)


def edited(fio_runs: FioRuns, tmp_path: Path, change: Any) -> Path:
    doc = fio_runs.doc(fio_runs.fast)
    change(doc["jobs"][0]["read"]["clat_ns"])
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_malformed_bins(fio_runs: FioRuns, tmp_path: Path, results: Path) -> None:
    def not_a_bucket(clat: dict[str, Any]) -> None:
        key = next(iter(clat["bins"]))
        clat["bins"][str(int(key) + 1) if int(key) >= 128 else "x"] = clat["bins"].pop(key)

    def one_more(clat: dict[str, Any]) -> None:
        key = next(iter(clat["bins"]))
        clat["bins"][key] += 1

    line = error("import", "fio", edited(fio_runs, tmp_path, not_a_bucket), "--results", results)
    assert "jobs[0] ('fast').read.clat_ns.bins key" in line
    assert "is not the value of a fio latency bucket" in line
    path = edited(fio_runs, tmp_path, one_more)
    at = path.read_text().split('"jobname"')[0].count("\n") + 1
    line = error("import", "fio", path, "--results", results)
    assert f"x.json:{at}: jobs[0] ('fast').read.clat_ns.bins hold" in line and "N is" in line
    nothing_written(results)


def test_malformed_histogram_logs(fio_runs: FioRuns, tmp_path: Path, results: Path) -> None:
    lines = fio_runs.log("fast").read_text().splitlines()
    bad = tmp_path / "t_clat_hist.1.log"

    def refused(text: str, *others: Path) -> str:
        bad.write_text(text)
        line = error("import", "fio", *others, bad, "--results", results)
        nothing_written(results)
        return line

    truncated = "\n".join([*lines[:2], lines[2][: lines[2].index(",", len(lines[2]) // 2)]])
    assert "t_clat_hist.1.log:3:" in refused(truncated)
    assert "the first line has 1859; expected every line complete" in refused(truncated)
    assert "t_clat_hist.1.log:1: 10 fields; expected 3 + 1856" in refused("1, 0, 4096" + ", 0" * 7)
    assert "'x' is not a whole number" in refused(
        lines[0] + "\n" + lines[1].replace(" 0,", " x,", 1)
    )
    wrong_direction = lines[0].split(",")
    wrong_direction[1] = " 7"
    assert "direction 7" in refused(",".join(wrong_direction))
    huge = lines[0].split(",")
    huge[5] = f" {2**64 - 1}"
    assert "bucket 2 holds 18446744073709551615; expected a count ≥ 0" in refused(",".join(huge))
    # A JSON of another run, with the log of this one.
    assert "no histogram log among the files is of this run" in refused(
        "\n".join(lines), fio_runs.slow
    )
    bandwidth_log = tmp_path / "job_bw.1.log"
    bandwidth_log.write_text("0, 271087, 0, 4096, 0\n1, 95328, 1, 4096, 0\n")
    line = error("import", "fio", bandwidth_log, "--results", results)
    assert "job_bw.1.log:1: a fio bandwidth log (write_bw_log), which is not read" in line
    assert "--write_lat_log" in line and "--write_hist_log" in line


def test_json_whose_job_has_no_log_and_duplicates(fio_runs: FioRuns, results: Path) -> None:
    line = error("import", "fio", fio_runs.fast, fio_runs.slow, fio_runs.log("fast"),
                 "--results", results)  # fmt: skip
    assert "slow.json" in line and "no histogram log among the files" in line
    nothing_written(results)
    ok("import", "fio", fio_runs.fast, "--results", results)
    copy = fio_runs.folder / "copy-of-fast.json"
    shutil.copy(fio_runs.fast, copy)
    line = error("import", "fio", copy, "--results", results)
    assert "already imported as run 1" in line and "--force" in line
    ok("import", "fio", copy, "--force", "--results", results)
    with pytest.raises(ImportError_, match="holds fio results"):
        import_fio(Store(results), [fio_runs.log("fast")], run_id=1)


def test_overlapping_imported_histograms_give_no_percentile_rather_than_a_traceback() -> None:
    """Histogram logs of two coarsenesses appended to one condition have bins that overlap:
    they cannot be merged, so that condition has no merged percentile (the other keeps its)."""
    import numpy as np

    from wannabet.store import queries
    from wannabet.store.store import _percentiles_ms

    bins = queries.ConditionBins(
        condition_id=np.array([0, 0, 1, 1], dtype=np.int64),
        lo_ns=np.array([100, 150, 100, 200], dtype=np.int64),
        hi_ns=np.array([199, 299, 199, 299], dtype=np.int64),
        count=np.array([5, 5, 5, 5], dtype=np.int64),
    )
    got = _percentiles_ms(bins, {0: "overlapping", 1: "fine"}, (0.5,))
    assert "overlapping" not in got
    assert got["fine"][0] is not None and 100 / 1e6 <= got["fine"][0] <= 299 / 1e6
