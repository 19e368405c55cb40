"""Swingbench results XML → an imported run of aggregates.

Swingbench keeps no per-transaction data, only aggregates, and the import says so:

- ``TPSReadings`` (epoch ms, tps pairs) become samples with a throughput and nothing else: one
  sample per reading, each as long as the step between readings. Without readings the
  ``Overview`` totals make one sample for the whole run.
- Each transaction type's ``Result`` (average, minimum, maximum response, the decile
  percentiles, counts and the histogram when present) becomes one row of ``aggregates``.
  ``summary`` shows the mean and maximum they determine; ``compare --metric latency`` has no
  per-transaction latencies to compare.
- ``Overview`` and the DML statement counts are stored in the run's settings.

Element names are matched without their namespace, and with the misspellings of real files
(``TenthPrecentile``, ``FortiethPrecentile``, ``FiftythPercentile``). Every element but
``Results`` is optional.
"""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from wannabet.environment import client_environment
from wannabet.importers._common import (
    ConditionRule,
    bad,
    check_file,
    input_files,
    label_index,
    sha256,
)
from wannabet.store.store import ImportBatch, ImportedFile, ImportedSample, Store
from wannabet.version import tool_version

_PERCENTILES = {
    "tenthprecentile": "p10",
    "tenthpercentile": "p10",
    "twentiethpercentile": "p20",
    "twentiethprecentile": "p20",
    "thirtiethpercentile": "p30",
    "thirtiethprecentile": "p30",
    "fortiethprecentile": "p40",
    "fortiethpercentile": "p40",
    "fiftythpercentile": "p50",
    "fiftiethpercentile": "p50",
    "fiftythprecentile": "p50",
    "sixtiethpercentile": "p60",
    "seventiethpercentile": "p70",
    "eightiethpercentile": "p80",
    "ninetiethpercentile": "p90",
    "ninetiethprecentile": "p90",
}
_OVERVIEW = {
    "benchmarkname": "benchmark",
    "comment": "comment",
    "timeofrun": "time_of_run",
    "totalruntime": "total_run_time",
    "totallogontime": "total_logon_time",
    "totalcompletedtransactions": "completed",
    "totalfailedtransactions": "failed",
    "averagetransactionspersecond": "average_tps",
    "maximumtransactionrate": "maximum_transaction_rate",
}
_DML = ("select", "insert", "update", "delete", "commit", "rollback")


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1].lower()


def _find(root: ET.Element, name: str) -> ET.Element | None:
    for el in root.iter():
        if _local(el.tag) == name:
            return el
    return None


def _number(file: Path, el: ET.Element, what: str) -> float:
    """A figure of the file: every one Swingbench writes (counts, times, rates) is a finite
    number ≥ 0, so anything else is a damaged file, not a value to store."""
    text = (el.text or "").strip().strip('"').replace(",", "")
    try:
        value = float(text)
    except ValueError:
        raise bad(file, _line(el), f"<{what}> holds {text!r}; expected a number") from None
    if not math.isfinite(value) or value < 0:
        raise bad(file, _line(el), f"<{what}> holds {text!r}; expected a number ≥ 0")
    return value


def _count(file: Path, el: ET.Element, what: str, unit: str = "transactions") -> int:
    value = _number(file, el, what)
    if value != int(value):
        raise bad(file, _line(el), f"<{what}> holds {value!r}; expected a whole number of {unit}")
    return int(value)


def _histogram(file: Path, el: ET.Element, what: str) -> dict[str, list[Any]]:
    """A ``<…Histogram>``: its counts, as bucket elements or as a list in its text. A count
    that is not a whole number ≥ 0 is a damaged file (it was dropped or stored as it was)."""

    def whole(text: str) -> int:
        if not text.isdigit():
            raise bad(
                file, _line(el), f"<{what}> holds the count {text!r}; expected whole numbers ≥ 0"
            )
        return int(text)

    buckets = [
        [float(b.get("upper") or b.get("bucket") or b.get("time") or 0), whole(c)]
        for b in el
        for c in [(b.get("count") or b.text or "0").strip()]
    ]
    if buckets:
        return {"buckets": buckets}
    return {"counts": [whole(c) for c in re.findall(r"-?\d+(?:\.\d+)?", el.text or "")]}


#: the latest TPS reading time taken, in epoch ms (the year 2255): its ns must fit in 64 bits
MAX_EPOCH_MS = 9e12
#: the largest TPS reading taken, a billion per second, far beyond any database: a sample's
#: count (tps × the readings' step, at most 9e9 s) must fit in 64 bits
MAX_TPS = 1e9

# Line of each element of the file being read: ElementTree keeps none, and its elements take
# no extra attributes. One file is read at a time.
_LINES: dict[int, int] = {}


def _line(el: ET.Element) -> int | None:
    return _LINES.get(id(el))


def _parse(file: Path) -> ET.Element:
    check_file(file)
    # Record lines as the parser meets each start tag.
    _LINES.clear()
    parser: Any = ET.XMLPullParser(events=("start",))  # typeshed types its events loosely
    root: ET.Element | None = None
    try:
        with file.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                parser.feed(raw)
                for event in parser.read_events():
                    el = event[1]
                    if not isinstance(el, ET.Element):
                        continue
                    _LINES[id(el)] = number
                    if root is None:
                        root = el
        parser.close()
    except ET.ParseError as exc:
        line = exc.position[0] if exc.position else None
        raise bad(
            file, line, f"not well-formed XML ({exc}); expected a Swingbench results file"
        ) from None
    if root is None or _local(root.tag) != "results":
        tag = _local(root.tag) if root is not None else "nothing"
        raise bad(file, 1, f"the root element is <{tag}>; expected a Swingbench <Results>")
    return root


def read_swingbench(file: Path) -> dict[str, Any]:
    """Everything a results file says, as plain values."""
    root = _parse(file)
    overview: dict[str, Any] = {}
    ov = _find(root, "overview")
    if ov is not None:
        for el in ov:
            key = _OVERVIEW.get(_local(el.tag))
            if key is None:
                continue
            text = (el.text or "").strip().strip('"')
            if key in ("completed", "failed"):
                overview[key] = _count(file, el, el.tag.rsplit("}", 1)[-1])
            elif key in ("average_tps", "maximum_transaction_rate"):
                overview[key] = _number(file, el, el.tag.rsplit("}", 1)[-1])
            else:
                overview[key] = text
    dml: dict[str, float] = {}
    dml_el = _find(root, "dmlresults")
    if dml_el is not None:
        for el in dml_el:
            name = _local(el.tag).removesuffix("statements")
            if name in _DML:
                dml[name] = _count(file, el, el.tag.rsplit("}", 1)[-1], "statements")
    results = []
    for el in root.iter():
        if _local(el.tag) != "result":
            continue
        txn_name = el.get("id") or el.get("name")
        if not txn_name:
            raise bad(file, _line(el), "<Result> without an id; expected the transaction's name")
        item: dict[str, Any] = {"name": txn_name, "line": _line(el), "percentiles": {}}
        for child in el:
            tag = _local(child.tag)
            label = child.tag.rsplit("}", 1)[-1]
            if tag in _PERCENTILES:
                item["percentiles"][_PERCENTILES[tag]] = _number(file, child, label)
            elif tag in ("averageresponse", "minimumresponse", "maximumresponse"):
                item[tag[:3]] = _number(file, child, label)
            elif tag == "transactioncount":
                item["count"] = _count(file, child, label)
            elif tag in ("failedtransactioncount", "failedcount"):
                item["failed"] = _count(file, child, label)
            elif tag == "rollbackcount":
                item["rollbacks"] = _count(file, child, label)
            elif "histogram" in tag:
                item["histogram"] = _histogram(file, child, label)
        if "count" not in item:
            raise bad(
                file,
                _line(el),
                f"<Result id={txn_name!r}> has no <TransactionCount>; expected the count of"
                " completed transactions",
            )
        results.append(item)
    readings: list[tuple[float, float]] = []
    tps_el = _find(root, "tpsreadings")
    if tps_el is not None:
        text = " ".join([tps_el.text or ""] + [" ".join([c.text or "", *c.attrib.values()])
                                               for c in tps_el])  # fmt: skip
        numbers = re.findall(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text)
        if len(numbers) % 2:
            raise bad(
                file,
                _line(tps_el),
                f"<TPSReadings> holds {len(numbers)} numbers; expected pairs of epoch ms and tps",
            )
        readings = [(float(numbers[i]), float(numbers[i + 1])) for i in range(0, len(numbers), 2)]
        for i, (at, tps) in enumerate(readings):
            # Not inf (1e400) nor past 2255, whose nanoseconds would not fit in 64 bits.
            if not 1e11 <= at < MAX_EPOCH_MS or not 0 <= tps < MAX_TPS:
                raise bad(
                    file,
                    _line(tps_el),
                    f"<TPSReadings> pair {i + 1} is ({numbers[2 * i]}, {numbers[2 * i + 1]});"
                    f" expected epoch milliseconds (before {MAX_EPOCH_MS:.0e}) and a tps ≥ 0"
                    f" (below {MAX_TPS:.0e})",
                )
    if not results and not readings and "completed" not in overview:
        raise bad(
            file,
            _line(root),
            "no <Overview> totals, <Result> or <TPSReadings>; expected Swingbench results",
        )
    return {"overview": overview, "dml": dml, "results": results, "tps_readings": readings}


def _seconds(text: str | None) -> float | None:
    if not text:
        return None
    parts = text.split(":")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        return None
    total = 0.0
    for v in values:
        total = total * 60 + v
    return total


def _epoch_ms(text: str | None) -> float | None:
    if not text:
        return None
    for fmt in ("%b %d, %Y %I:%M:%S %p", "%Y-%m-%dT%H:%M:%S", "%d-%b-%Y %H:%M:%S"):
        try:
            return datetime.strptime(text, fmt).timestamp() * 1000
        except ValueError:
            continue
    return None


def _type_statuses(
    results: list[dict[str, Any]], types: list[str], done: int, failed: int
) -> dict[tuple[int, str], int] | None:
    """Per-type ``ok``/``error`` counts of a file that is one sample, when they are exact.

    They are when the types' counts add up to the Overview's totals; otherwise (or without
    per-type results) the sample gets no summaries rather than counts that disagree.
    """
    if not results:
        return None
    ok = sum(int(r["count"]) for r in results)
    bad = sum(int(r.get("failed") or 0) for r in results)
    if (ok, bad) != (done, failed):
        return None
    out: dict[tuple[int, str], int] = {}
    for r in results:
        t = types.index(r["name"])
        out[(t, "ok")] = out.get((t, "ok"), 0) + int(r["count"])
        out[(t, "error")] = out.get((t, "error"), 0) + int(r.get("failed") or 0)
    return out


def import_swingbench(
    store: Store,
    paths: Sequence[str | Path],
    *,
    conditions: ConditionRule | None = None,
    run_id: int | None = None,
    force: bool = False,
    name: str | None = None,
) -> int:
    """Import Swingbench results files as a run of aggregates (or into ``run_id``)."""
    rule = conditions or ConditionRule()
    files = input_files(paths)
    labels: list[str] = []
    types: list[str] = []
    samples: list[ImportedSample] = []
    aggregates: list[dict[str, Any]] = []
    records = []
    documents = []
    for file in files:
        doc = read_swingbench(file)
        label = rule.label(file)
        cid = label_index(labels, label)
        for r in doc["results"]:
            if r["name"] not in types:
                types.append(r["name"])
        readings = doc["tps_readings"]
        overview = doc["overview"]
        if readings:
            steps = [b[0] - a[0] for a, b in itertools.pairwise(readings)]
            step_ms = min((s for s in steps if s > 0), default=1000.0)
            for at, tps in readings:
                t0 = int(at * 1e6)
                count = round(tps * step_ms / 1000)
                samples.append(
                    ImportedSample(
                        len(samples), cid, t0, t0 + int(step_ms * 1e6), (count, count, 0, tps)
                    )
                )
        elif "completed" in overview:
            seconds = _seconds(overview.get("total_run_time"))
            if not seconds:
                raise bad(
                    file,
                    None,
                    "no <TPSReadings> and no <TotalRunTime>; expected one of them for throughput",
                )
            t0 = int((_epoch_ms(overview.get("time_of_run")) or 0) * 1e6)
            done = int(overview["completed"])
            failed = int(overview.get("failed", 0))
            samples.append(
                ImportedSample(
                    len(samples),
                    cid,
                    t0,
                    t0 + int(seconds * 1e9),
                    (done + failed, done, failed, done / seconds),
                    statuses=_type_statuses(doc["results"], types, done, failed),
                )
            )
        for r in doc["results"]:
            aggregates.append(
                {
                    "sample_id": None,
                    "condition_id": cid,
                    "txn_type": types.index(r["name"]),
                    "count": r["count"],
                    "failed": r.get("failed", 0),
                    "lat_mean_ms": r.get("ave"),
                    "lat_min_ms": r.get("min"),
                    "lat_max_ms": r.get("max"),
                    "percentiles": r["percentiles"] or None,
                    "histogram": r.get("histogram"),
                    "extra": {"rollbacks": r.get("rollbacks"), "file": str(file)},
                }
            )
        meta = {k: v for k, v in doc.items() if k != "results"}
        meta["tps_readings"] = len(readings)
        documents.append({"file": str(file), "condition": label, **meta})
        records.append(ImportedFile(str(file), sha256(file), "swingbench", label, meta))
    settings = {
        "format": "swingbench",
        "timed": True,
        "aggregates_only": True,
        "files": documents,
        "samples": "one per TPS reading (or one per file from the Overview totals)",
    }
    batch = ImportBatch(
        name=name or files[0].stem,
        description="Swingbench results: aggregates only, no per-transaction data",
        source=", ".join(str(f) for f in files),
        settings=settings,
        conditions=labels,
        transaction_types=types,
        samples=samples,
        files=records,
        aggregates=aggregates,
        environment=client_environment(),
        tool_version=tool_version(),
    )
    return store.import_batch(batch, run_id=run_id, force=force)
