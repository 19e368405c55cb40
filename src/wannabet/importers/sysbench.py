"""sysbench text output → an imported run.

- ``--report-interval`` lines (``[ 10s ] thds: 8 tps: ... qps: ... lat (ms,95%): ... err/s: ...
  reconn/s: ...``) become samples: one per interval, with its TPS and, in the sample's
  ``stats``, its QPS, latency percentile, errors and reconnects per second. Without them the
  final summary makes one sample for the whole run.
- The final summary (transactions, queries, errors, total time, latency min/avg/max/percentile/
  sum) and the ``--histogram`` output become one row of ``aggregates`` per file.

sysbench keeps no per-transaction data: ``summary`` shows the mean, the maximum, the percentile
sysbench printed and, from the ``--histogram`` buckets, the other percentiles (within a bucket,
1.8% wide); ``compare --metric throughput`` works from the interval samples.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wannabet.environment import client_environment
from wannabet.importers._common import (
    ConditionRule,
    bad,
    input_files,
    label_index,
    read_text,
    sha256,
)
from wannabet.store.store import ImportBatch, ImportedFile, ImportedSample, Store
from wannabet.version import tool_version

_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_INTERVAL = re.compile(
    rf"^\[\s*{_NUM}s\s*\]\s+thds:\s*(\d+)\s+(tps|eps):\s*{_NUM}"
    rf"(?:\s+qps:\s*{_NUM}\s*\(r/w/o:\s*{_NUM}/{_NUM}/{_NUM}\))?"
    rf"(?:\s+lat\s*\(ms,\s*([^)]+)\):\s*{_NUM})?"
    rf"(?:\s+err/s:?\s*{_NUM})?"
    rf"(?:\s+reconn/s:?\s*{_NUM})?\s*$"
)
_CHECKPOINT = re.compile(rf"^\[\s*{_NUM}s\s*\]\s+Checkpoint report:")
_SUMMARY = {
    "transactions": re.compile(rf"^transactions:\s+(\d+)\s+\({_NUM} per sec\.\)"),
    "queries": re.compile(rf"^queries:\s+(\d+)\s+\({_NUM} per sec\.\)"),
    "ignored_errors": re.compile(r"^ignored errors:\s+(\d+)"),
    "reconnects": re.compile(r"^reconnects:\s+(\d+)"),
    "total_time_s": re.compile(rf"^total time:\s+{_NUM}s"),
    "events": re.compile(r"^total number of events:\s+(\d+)"),
    "min": re.compile(rf"^min:\s+{_NUM}"),
    "avg": re.compile(rf"^avg:\s+{_NUM}"),
    "max": re.compile(rf"^max:\s+{_NUM}"),
    "percentile": re.compile(rf"^(\d+(?:\.\d+)?)th percentile:\s+{_NUM}"),
    "sum": re.compile(rf"^sum:\s+{_NUM}"),
    "threads": re.compile(r"^Number of threads:\s+(\d+)"),
    "version": re.compile(r"^sysbench\s+(\S+)"),
}
_HISTOGRAM_ROW = re.compile(rf"^{_NUM}\s+\|\**\s+(\d+)$")


def read_sysbench(file: Path) -> dict[str, Any]:
    """The intervals, the final summary and the histogram of one sysbench output."""
    lines = read_text(file)
    intervals: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    histogram: list[list[float]] = []
    in_histogram = False
    histogram_line = events_line = 0
    warmup = False
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("Warming up for"):
            warmup = True
        if line.startswith("["):
            if _CHECKPOINT.match(line):
                # Each checkpoint resets sysbench's counters and histogram: the final summary
                # covers only the time since the last one, and no report covers the run.
                raise bad(
                    file,
                    number,
                    "a --report-checkpoints report; expected sysbench's output without them"
                    " (each one resets its counters, so no summary covers the whole run)",
                )
            m = _INTERVAL.match(line)
            if m is None:
                raise bad(
                    file,
                    number,
                    "an interval line sysbench did not write; expected"
                    " '[ Ns ] thds: N tps: X qps: X (r/w/o: X/X/X) lat (ms,95%): X err/s: X"
                    " reconn/s: X'",
                )
            at = float(m.group(1))
            if intervals and at <= intervals[-1]["at_s"]:
                raise bad(file, number, f"interval at {at:g}s; expected times that increase")
            intervals.append(
                {
                    "at_s": at,
                    "threads": int(m.group(2)),
                    "tps": float(m.group(4)),
                    "qps": _f(m.group(5)),
                    "latency_label": m.group(9),
                    "latency_ms": _f(m.group(10)),
                    "errors_per_s": _f(m.group(11)),
                    "reconnects_per_s": _f(m.group(12)),
                }
            )
            continue
        if line.startswith("Latency histogram"):
            in_histogram = True
            histogram_line = number
            continue
        if in_histogram:
            if line.startswith("value"):
                continue
            m = _HISTOGRAM_ROW.match(line)
            if m:
                histogram.append([float(m.group(1)), int(m.group(2))])
                continue
            if "|" in line:
                # A damaged row must not end the histogram quietly: every later bucket, and
                # the percentiles they make, would be lost.
                raise bad(file, number, "a histogram row; expected 'value |*** count'")
            in_histogram = False
        for key, pattern in _SUMMARY.items():
            m = pattern.match(line)
            if m is None:
                continue
            if key == "percentile":
                summary["percentile"] = (float(m.group(1)), float(m.group(2)))
            elif key == "version":
                summary[key] = m.group(1)
            elif key in ("transactions", "queries"):
                summary[key] = int(m.group(1))
                summary[f"{key}_per_s"] = float(m.group(2))
            else:
                summary.setdefault(key, float(m.group(1)))
            if key == "events":
                events_line = number
            break
    if not intervals and "transactions" not in summary and "events" not in summary:
        raise bad(
            file,
            None,
            "no interval lines and no 'transactions:' or 'total number of events:' line;"
            " expected sysbench's output (its stdout)",
        )
    if "total_time_s" not in summary:
        # Cut off before its final summary: what the run did is not all there.
        raise bad(
            file,
            None,
            "no 'total time:' line; expected sysbench's final summary (is the output cut off?)",
        )
    # Every event adds one to the histogram and one to the events (sb_event_stop), and the
    # histogram is printed once the workers have stopped, so the two agree exactly. Not after
    # a warm-up (sysbench 1.1 --warmup-time): it resets the counters and the histogram one
    # after the other while the workers run, and the events ending in between are in one only.
    total = sum(int(count) for _, count in histogram)
    if histogram and "events" in summary and not warmup and total != summary["events"]:
        raise bad(
            file,
            histogram_line,
            f"the histogram counts {total} events, but line {events_line}'s 'total number of"
            f" events:' is {summary['events']:.0f}; expected the same number (sysbench counts"
            " every event in both): is the file damaged?",
        )
    return {"intervals": intervals, "summary": summary, "histogram": histogram}


def _f(text: str | None) -> float | None:
    return float(text) if text is not None else None


def import_sysbench(
    store: Store,
    paths: Sequence[str | Path],
    *,
    conditions: ConditionRule | None = None,
    run_id: int | None = None,
    force: bool = False,
    name: str | None = None,
) -> int:
    """Import sysbench outputs as a run (or into ``run_id``); return its id."""
    rule = conditions or ConditionRule()
    files = input_files(paths)
    labels: list[str] = []
    samples: list[ImportedSample] = []
    aggregates: list[dict[str, Any]] = []
    records = []
    documents = []
    for file in files:
        doc = read_sysbench(file)
        label = rule.label(file)
        cid = label_index(labels, label)
        summary = doc["summary"]
        previous = 0.0
        for iv in doc["intervals"]:
            seconds = iv["at_s"] - previous
            count = round(iv["tps"] * seconds)
            errors = round((iv["errors_per_s"] or 0.0) * seconds)
            samples.append(
                ImportedSample(
                    len(samples),
                    cid,
                    int(previous * 1e9),
                    int(iv["at_s"] * 1e9),
                    (count + errors, count, errors, iv["tps"]),
                    stats={k: v for k, v in iv.items() if k != "tps"},
                )
            )
            previous = iv["at_s"]
        if not doc["intervals"]:
            seconds = summary["total_time_s"]
            done = int(summary.get("transactions", summary.get("events", 0)))
            errors = int(summary.get("ignored_errors", 0))
            samples.append(
                ImportedSample(
                    len(samples),
                    cid,
                    0,
                    int(seconds * 1e9),
                    (done + errors, done, errors, done / seconds if seconds else None),
                    # The summary's counts are exact (interval counts are rounded from rates;
                    # its latency figures are rounded to 0.01 ms): statuses only.
                    statuses={(0, "ok"): done, (0, "error"): errors},
                )
            )
        count = summary.get("transactions", summary.get("events"))
        if count is not None:
            pct = summary.get("percentile")
            key = f"p{pct[0]:g}" if pct else None
            aggregates.append(
                {
                    "sample_id": None,
                    "condition_id": cid,
                    "txn_type": None,
                    "count": int(count),
                    "failed": int(summary.get("ignored_errors", 0)),
                    "lat_mean_ms": summary.get("avg"),
                    # The sum over the events is exact to 0.01 ms, the mean only to 0.01 ms
                    # per event: the sum makes the mean when it covers the same events.
                    "lat_sum_ms": summary.get("sum")
                    if summary.get("events") == summary.get("transactions", summary.get("events"))
                    else None,
                    "lat_min_ms": summary.get("min"),
                    "lat_max_ms": summary.get("max"),
                    "percentiles": {key: pct[1]} if pct else None,
                    "histogram": {
                        "buckets": doc["histogram"],
                        "bins_ns": histogram_bins(doc["histogram"]),
                    }
                    if doc["histogram"]
                    else None,
                    "extra": {
                        "latency_sum_ms": summary.get("sum"),
                        "events": summary.get("events"),
                        "queries": summary.get("queries"),
                        "reconnects": summary.get("reconnects"),
                        "file": str(file),
                    },
                }
            )
        meta = {"summary": summary, "intervals": len(doc["intervals"])}
        documents.append({"file": str(file), "condition": label, **meta})
        records.append(ImportedFile(str(file), sha256(file), "sysbench", label, meta))
    batch = ImportBatch(
        name=name or files[0].stem,
        description="sysbench output: aggregates only, no per-transaction data",
        source=", ".join(str(f) for f in files),
        settings={
            "format": "sysbench",
            "timed": True,
            "aggregates_only": True,
            "files": documents,
            "samples": "one per --report-interval line (or one per file)",
        },
        conditions=labels,
        transaction_types=[],
        samples=samples,
        files=records,
        aggregates=aggregates,
        environment=client_environment(),
        tool_version=tool_version(),
    )
    return store.import_batch(batch, run_id=run_id, force=force)


#: sysbench's latency histogram (``sb_histogram_init(..., 1024, 0.001, 100000)`` in sysbench.c):
#: bucket i holds the latencies (ms) with ``floor((ln v - ln 0.001) * MULT + 0.5) == i`` and is
#: printed as ``exp(i / MULT + ln 0.001)``, the centre of the bucket on the log scale.
_SIZE, _LOW_MS, _HIGH_MS = 1024, 0.001, 100_000.0
_MULT = (_SIZE - 1) / (math.log(_HIGH_MS) - math.log(_LOW_MS))


def histogram_bins(buckets: Sequence[Sequence[float]]) -> list[list[int]]:
    """sysbench's printed ``(value, count)`` buckets as disjoint integer-ns bins
    ``[lo_ns, hi_ns, count]`` (the bins of :mod:`wannabet.analysis.histogram`).

    The printed value is rounded to 0.001 ms, so the bucket index is recovered from it and the
    edges are computed from the index: ``exp((i ± 0.5) / MULT + ln 0.001)``.
    """
    deduct = math.log(_LOW_MS)
    by_index: dict[int, int] = {}
    for value, count in buckets:
        if value <= 0 or count <= 0:
            continue
        i = min(max(round((math.log(value) - deduct) * _MULT), 0), _SIZE - 1)
        by_index[i] = by_index.get(i, 0) + int(count)
    out = []
    for i in sorted(by_index):
        lo = math.ceil(math.exp((i - 0.5) / _MULT + deduct) * 1e6)
        hi = math.ceil(math.exp((i + 0.5) / _MULT + deduct) * 1e6) - 1
        out.append([lo, hi, by_index[i]])
    return out
