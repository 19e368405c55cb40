#!/usr/bin/env python3
"""docs/img/slob-heatmap.png: the latency heatmap of a run of examples/postgres-slob.toml.

Without ``--target`` it starts a throwaway PostgreSQL (wannabet.testing.postgres: initdb in a
temporary directory, a free port on 127.0.0.1, the server's default 128 MB of shared_buffers)
and runs the example against it, as shipped unless ``--samples`` or ``--duration`` shorten it.
Run it as root for the example's hook to drop the OS page cache before every sample. The chart
is the one the report draws (``Report.chart("heatmap")``), rendered to PNG by vl-convert.

    python docs/img/make_slob_heatmap.py --samples 4                 # about 4 minutes
    python docs/img/make_slob_heatmap.py --target postgresql://u@host/db
    python docs/img/make_slob_heatmap.py --results r.duckdb          # an existing run of it
    python docs/img/make_slob_heatmap.py --work DIR                  # keep the run in DIR
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "postgres-slob.toml"
OUT = Path(__file__).resolve().parent / "slob-heatmap.png"


def run_example(results: Path, target: str | None, extra: list[str]) -> None:
    if target is None:
        from wannabet.testing.postgres import ThrowawayPostgres

        with ThrowawayPostgres() as server:
            run_example(results, server.url, extra)
        return
    command = [sys.executable, "-m", "wannabet", "run", str(EXAMPLE), "--target", target]
    subprocess.run([*command, "--results", str(results), *extra], check=True)


def render(results: Path, out: Path) -> None:
    import vl_convert

    import wannabet

    chart = wannabet.open_results(results).run().report().chart("heatmap")
    # At scale 1 (about 860 x 420 px) the labels read well and the PNG stays near 110 kB;
    # 1.5 would double its size for no detail the chart has.
    out.write_bytes(vl_convert.vegalite_to_png(chart.to_json(), scale=1))
    print(f"wrote {out} ({out.stat().st_size / 1024:.0f} kB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", help="a PostgreSQL URL (default: a throwaway server)")
    parser.add_argument("--results", type=Path, help="an existing results file of the example")
    parser.add_argument("--work", type=Path, help="a directory to keep the results file in")
    parser.add_argument("--samples", help="samples per condition (default: the file's 10)")
    parser.add_argument("--duration", help="seconds of each sample (default: the file's 20s)")
    parser.add_argument("-o", "--output", type=Path, default=OUT, help=f"default: {OUT.name}")
    args = parser.parse_args()
    extra = [f"--{k}={v}" for k, v in (("samples", args.samples), ("duration", args.duration)) if v]
    with tempfile.TemporaryDirectory() as tmp:
        results = args.results
        if results is None:
            work = args.work or Path(tmp)
            work.mkdir(parents=True, exist_ok=True)
            results = work / "slob.duckdb"
            run_example(results, args.target, extra)
        render(results, args.output)


if __name__ == "__main__":
    main()
