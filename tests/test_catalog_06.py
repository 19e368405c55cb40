"""Catalog entry 06 (examples/catalog/06-slob-vs-calibrate-io.toml and its fio job file) in a
short form.

The entry reads random blocks of a 1 GiB table at 1, 4 and 16 sessions with a cold OS page
cache, draws the latency heatmap, tests each level for more than one mode, and measures the
same storage with fio at iodepth 1, 4 and 16, imported beside it. Here, as in
tests/test_example_slob.py, the table has 8192 blocks (64 MiB) on a PostgreSQL of its own with
2 MB of shared_buffers (the same table-to-buffers ratio as the full form on a server with
16 MB), each level two samples of 0.5 s; fio reads a 16 MiB file for 1 s per job, logging its
histogram every 200 ms.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import throwaway_postgres
from wannabet.store import Store
from wannabet.testing.ci import unavailable
from wannabet.testing.cli import wannabet
from wannabet.testing.packages import PackageUnavailable, ensure_command
from wannabet.testing.report_page import heatmap_counts

CATALOG = Path(__file__).resolve().parent.parent / "examples" / "catalog"
ENTRY = CATALOG / "06-slob-vs-calibrate-io.toml"
FIO_JOB = CATALOG / "06-slob-vs-calibrate-io.fio"
ROWS = 8192
#: literal -> replacement, each of which must be in its file exactly once
SHRINK_TOML = {
    "generate_series(1, 131072)": f"generate_series(1, {ROWS})",
    "rows = 131072": f"rows = {ROWS}",
}
SHRINK_FIO = {
    "size=1g": "size=16m",
    "runtime=20": "runtime=1",
    "log_hist_msec=1000": "log_hist_msec=200",
}
LEVELS = ("sessions=1", "sessions=4", "sessions=16")
DEPTHS = ("iodepth=1", "iodepth=4", "iodepth=16")
QUICK = ("--samples", "2", "--duration", "0.5s")


def shrink(path: Path, replacements: dict[str, str]) -> str:
    text = path.read_text()
    for literal, replacement in replacements.items():
        assert text.count(literal) == 1, (path.name, literal)  # the entry changed: update this
        text = text.replace(literal, replacement)
    return text


def ok(*args: str) -> str:
    done = wannabet(*args)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.postgres
def test_slob_levels_heatmap_modes_and_fio_beside_them(tmp_path: Path) -> None:
    try:
        fio = ensure_command("fio", package="fio")
    except PackageUnavailable as exc:
        unavailable("fio", exc)
    experiment = tmp_path / "06.toml"
    experiment.write_text(shrink(ENTRY, SHRINK_TOML))
    results = tmp_path / "r.duckdb"

    # -- SLOB on PostgreSQL -------------------------------------------------------------------
    with throwaway_postgres(settings={"shared_buffers": "2MB"}) as pg:
        ok("run", str(experiment), "--target", pg.url, "-r", str(results), *QUICK)
    store = Store(results, read_only=True)
    samples = store.samples(1)
    assert Counter(s["condition"] for s in samples) == dict.fromkeys(LEVELS, 2)
    for s in samples:
        assert s["status"] == "complete", s
        stats = json.loads(s["stats"])
        [hook] = stats["hooks"]  # the page-cache drop ran before every sample, and said so
        assert "the OS page cache" in hook["output"], hook
        [table] = [t for t in stats["postgres"]["tables"] if t["relation"] == "slob"]
        committed = stats["engine"]["committed"]
        # Reads past shared_buffers: 256 buffers hold at most 3% of the table's blocks.
        assert committed > 100 and table["heap_blks_read"] > 0.8 * committed, (table, committed)

    # Reads per second at each level, judged against one session.
    throughput = json.loads(
        ok("compare", "-r", str(results), "--metric", "throughput", "-f", "json")
    )
    tps = {c["condition"]: c["mean"] for c in throughput["conditions"]}
    assert set(tps) == set(LEVELS) and all(v > 100 for v in tps.values()), tps
    for c in throughput["comparisons"]:
        assert c["baseline"] == "sessions=1" and c["condition"] in LEVELS[1:]
        assert c["delta_pct"] == pytest.approx((tps[c["condition"]] / tps["sessions=1"] - 1) * 100)

    # The tail per level, with the multimodality test on every level's transactions.
    tail = json.loads(ok("compare", "-r", str(results), "--stat", "p99", "-f", "json"))
    assert tail["stat"] == "p99"
    plain = json.loads(ok("compare", "-r", str(results), "-f", "json"))
    for c in plain["conditions"]:
        modes = c["consistency"]["multimodality_transactions"]
        assert modes["test"] == "silverman" and 0 <= modes["p"] <= 1 and modes["n"] > 100, modes
        # The diagnostic is there exactly when the transactions' test found several modes.
        said = [d["message"] for d in c["diagnostics"] if d["code"] == "bimodal"]
        assert any("transactions" in m for m in said) == modes["multimodal"], (modes, said)

    # The heatmap holds every level's transactions (within rounding over time buckets).
    page = tmp_path / "slob.html"
    ok("report", "-r", str(results), "-o", str(page))
    counts = heatmap_counts(page.read_text())
    for c in plain["conditions"]:
        n = c["n_transactions"]
        assert abs(counts[c["condition"]] - n) <= 0.02 * n, (c["condition"], counts, n)

    # -- fio on the same file system, imported as run 2 ---------------------------------------
    job = tmp_path / "06.fio"
    job.write_text(shrink(FIO_JOB, SHRINK_FIO))
    done = subprocess.run(
        [fio, job.name, "--output-format=json+", "--output=fio.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    logs = sorted(str(p) for p in tmp_path.glob("iodepth*_clat_hist.*.log"))
    assert len(logs) == 3, logs
    ok("import", "fio", str(tmp_path / "fio.json"), *logs, "-r", str(results))
    fio_doc = json.loads((tmp_path / "fio.json").read_text())
    iops = {j["jobname"]: j["read"]["iops"] for j in fio_doc["jobs"]}
    assert set(iops) == set(DEPTHS)
    summary = json.loads(ok("summary", "-r", str(results), "--run", "2", "-f", "json"))
    for c in summary["conditions"]:
        # The logged intervals' reads per second are fio's IOPS (the last, partial interval
        # is not logged).
        assert c["tps"] == pytest.approx(iops[c["condition"]], rel=0.25), (c, iops)
    # The conditions come in the order of the files (the shell's glob puts iodepth16 before
    # iodepth1), hence the entry's explicit baseline.
    device = json.loads(
        ok(
            "compare", "-r", str(results), "--run", "2", "--metric", "throughput",
            "--baseline", "iodepth=1", "-f", "json",
        )
    )  # fmt: skip
    assert {c["condition"] for c in device["conditions"]} == set(DEPTHS)
    per_second = {c["condition"]: c["mean"] for c in device["conditions"]}
    for c in device["comparisons"]:
        assert c["baseline"] == "iodepth=1" and c["condition"] in DEPTHS[1:]
        expected = (per_second[c["condition"]] / per_second["iodepth=1"] - 1) * 100
        assert c["delta_pct"] == pytest.approx(expected)
