"""YCSB measurements → an imported run: raw measurements, or HdrHistogram interval logs.

**Raw measurements** (``measurementtype=raw``, ``OneMeasurementRaw``): for each measurement, a
header line and one line per operation::

    READ latency raw data: op, timestamp(ms), latency(us)
    READ,1535556470123,532

written to ``measurement.raw.output_file`` (appended, measurement after measurement) or to
stdout, among YCSB's other output and before its summary (``[READ], Total Operations, 1000``,
``[OVERALL], RunTime(ms), 1009``). The timestamp is ``System.currentTimeMillis()`` when the
measurement is recorded, after the operation returned (``DBWrapper.measure``): the completion,
to the millisecond. The latency is in whole µs. Each line becomes a transaction: the operation
is its type, ``end = timestamp``, ``start = end − latency`` (exact to the µs, the end to the ms).
A measurement ``OP-FAILED`` or ``OP-STATUS`` (``DBWrapper``: a call whose status was not OK)
is operation ``OP`` with status ``error`` and the status name as error code. With
``measurement.interval=intended`` or ``both``, the ``Intended-OP`` measurements count from the
intended start (YCSB's correction for coordinated omission, as wannabet's latency does): they
are used instead of ``OP`` (``intended_start = end − latency``). ``CLEANUP`` (each thread's
``DB.cleanup()``, not an operation of the workload) is left out and counted in the settings.
The summary lines, in the same file or in YCSB's stdout given alongside, are stored and checked:
each measurement's count, minimum, maximum, mean and percentiles (``sorted[(int)(n·q)]``).
Samples: one per file (one YCSB run), or one per ``sample_interval_s`` of completion time.

**HdrHistogram logs** (``measurementtype=hdrhistogram`` with ``hdrhistogram.fileoutput=true``,
``OneMeasurementHdrHistogram``): one file per measurement, ``PATH + NAME + ".hdr"``, in
HdrHistogram's interval log format (``HistogramLogWriter``)::

    #[Logging for: READ]
    #[Histogram log format version 1.3]
    #[StartTime: 1535556470.123 (seconds since epoch), ...]
    "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
    0.115,0.080,0.012,HISTFAAAAC542pNpmSzMwMAgyAABzFCaEULZ...

one line per status interval (``status.interval``) holding that interval's histogram of µs.
The files of one run (same folder and ``PATH``) are read together: intervals that end at the
same status tick are one sample (YCSB closes every measurement's interval at each tick); a
first or last interval shorter than half the others is merged into its neighbour. Each sample
gets, per operation, one row of ``aggregates``: count, failures, minimum, maximum, mean, the
percentiles and the histogram's buckets (``histogram.bins_ns``), as HdrHistogram computes them.
No transactions are invented. Decoding uses the ``hdrhistogram`` package (V2 encoding, written
by HdrHistogram 2.1.5 and later); YCSB 0.17.0 bundles HdrHistogram 2.1.4, whose V1 encoding
(zlib-compressed fixed-width counts) that package cannot read, so it is unpacked here and its
counts loaded into the package's histogram.

References
----------
YCSB source: ``core/src/main/java/site/ycsb/measurements/OneMeasurementRaw.java``,
``OneMeasurementHdrHistogram.java``, ``Measurements.java``, ``DBWrapper.java``,
``measurements/exporter/TextMeasurementsExporter.java``. HdrHistogram: ``HistogramLogWriter``,
``HistogramLogReader`` and the encoding of ``AbstractHistogram`` (Java, 2.1.4 and 2.1.12).
"""

from __future__ import annotations

import base64
import binascii
import functools
import importlib
import math
import re
import statistics
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from wannabet.environment import client_environment
from wannabet.errors import ImportError_, MissingExtra
from wannabet.importers._common import (
    ConditionRule,
    bad,
    check_file,
    input_files,
    label_index,
    sha256,
)
from wannabet.importers.benchbase import sliced_samples
from wannabet.store.store import ImportBatch, ImportedFile, ImportedSample, Store
from wannabet.version import tool_version

#: ``site.ycsb.Status`` names other than OK: ``DBWrapper`` names a failed call's measurement
#: ``OP-NAME`` (or ``OP-FAILED``)
_STATUSES = (
    "FAILED",
    "ERROR",
    "NOT_FOUND",
    "NOT_IMPLEMENTED",
    "UNEXPECTED_STATE",
    "BAD_REQUEST",
    "FORBIDDEN",
    "SERVICE_UNAVAILABLE",
)
_RAW_HEADER = re.compile(r"^(.+) latency raw data: op, timestamp\(ms\), latency\(us\)$")
_SUMMARY_LINE = re.compile(r"^\[([^\]]+)\], ([^,]+), (.+)$")
_RAW_TARGET = re.compile(r"^Raw data measurement: will output to result file: (.+)$")
# Every line as one column, numbered (DuckDB keeps the file's order).
_LINES = (
    "SELECT {grp}, row_number() OVER (), line FROM read_csv(?, header = false,"
    " columns = {{'line': 'VARCHAR'}}, delim = '\x1e', quote = '', escape = '',"
    " auto_detect = false, strict_mode = false)"
)
#: a raw measurement line, and one whose figures are whole numbers ≥ 0
_DATA = "[^,]+,[0-9]+,-?[0-9]+"
_GOOD = "[^,]+,[0-9]+,[0-9]+"
_PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9, 99.99)
#: YCSB's own name of each percentile it prints in raw mode, and its ``(int)(n·q)`` factor
_RAW_PERCENTILES = {
    "p1": 0.01,
    "p5": 0.05,
    "p50": 0.5,
    "p90": 0.9,
    "p95": 0.95,
    "p99": 0.99,
    "p99.9": 0.999,
    "p99.99": 0.9999,
}


@dataclass(frozen=True, slots=True)
class Measurement:
    """What a YCSB measurement name says: the operation, the failed status (None: OK), and
    whether it counts from the intended start."""

    name: str
    op: str
    status: str | None
    intended: bool


def measurement(name: str) -> Measurement:
    """Split a YCSB measurement name (``READ``, ``READ-FAILED``, ``Intended-UPDATE``,
    ``RawREAD`` of ``hdrhistogram+raw``)."""
    rest = name[3:] if name.startswith("Raw") and name[3:4].isupper() else name
    intended = rest.startswith("Intended-")
    rest = rest.removeprefix("Intended-")
    for status in _STATUSES:
        if rest.endswith("-" + status) and len(rest) > len(status) + 1:
            return Measurement(name, rest[: -len(status) - 1], status, intended)
    return Measurement(name, rest, None, intended)


def _chosen(names: Sequence[str]) -> tuple[list[Measurement], list[str]]:
    """The measurements to import (``Intended-`` ones where they exist), and those left out."""
    parsed = [measurement(n) for n in names]
    intended_ops = {m.op for m in parsed if m.intended}
    keep, dropped = [], []
    for m in parsed:
        if m.op == "CLEANUP" or (m.op in intended_ops and not m.intended):
            dropped.append(m.name)
        else:
            keep.append(m)
    return keep, dropped


# -- files -------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Summary:
    """YCSB's summary lines (``[NAME], what, value``) of one file, with their line numbers."""

    file: Path
    values: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)
    raw_target: str | None = None

    def get(self, name: str, what: str) -> tuple[str, int] | None:
        return self.values.get((name, what))

    def overall(self) -> dict[str, float]:
        out = {}
        for (name, what), (value, _) in self.values.items():
            if name == "OVERALL":
                try:
                    out[what] = float(value)
                except ValueError:
                    continue
        return out

    @property
    def empty(self) -> bool:
        return not self.values


def _parse_summary(file: Path, lines: Sequence[tuple[int, str]]) -> _Summary:
    summary = _Summary(file)
    for number, line in lines:
        if m := _SUMMARY_LINE.match(line):
            summary.values[(m.group(1), m.group(2).strip())] = (m.group(3).strip(), number)
        elif m := _RAW_TARGET.match(line):
            summary.raw_target = Path(m.group(1).strip()).name
    return summary


@dataclass(slots=True)
class _RawRun:
    file: Path
    label: str
    grp: int
    headers: dict[str, int]  # measurement → line of its header
    summary: _Summary | None = None
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _Interval:
    line: int
    start_s: float
    end_s: float
    buckets: dict[tuple[int, int], int]  # (lowest, highest equivalent µs) → count


@dataclass(slots=True)
class _HdrLog:
    file: Path
    measurement: str
    intervals: list[_Interval]
    version: str | None


@dataclass(slots=True)
class _HdrRun:
    key: str
    label: str
    logs: dict[str, _HdrLog] = field(default_factory=dict)
    summary: _Summary | None = None


def _is_hdr(file: Path) -> bool:
    check_file(file)
    with file.open("rb") as handle:
        head = handle.read(4096).decode("utf-8", "replace").lstrip("\ufeff")
    first = next((x.strip() for x in head.splitlines() if x.strip()), "")
    return first.startswith(("#[", '"StartTimestamp"')) or bool(
        re.match(r"^(Tag=[^,]*,)?[0-9.]+,[0-9.]+,[0-9.]+,HIST", first)
    )


def import_ycsb(
    store: Store,
    paths: Sequence[str | Path],
    *,
    conditions: ConditionRule | None = None,
    run_id: int | None = None,
    force: bool = False,
    name: str | None = None,
    sample_interval_s: float | None = None,
) -> int:
    """Import YCSB raw measurements or HdrHistogram logs (with YCSB's stdout) as a run.

    Parameters
    ----------
    conditions
        Where each file's condition comes from; default ``baseline``.
    sample_interval_s
        Raw measurements: slice each file into samples of this many seconds of completion
        time; default one sample per file. HdrHistogram logs have YCSB's intervals.
    """
    rule = conditions or ConditionRule()
    files = input_files(paths)
    if sample_interval_s is not None and sample_interval_s <= 0:
        raise ImportError_("command line: --sample-interval must be longer than 0s")
    hdr_files = [f for f in files if _is_hdr(f)]
    text_files = [f for f in files if f not in hdr_files]
    con = duckdb.connect()
    try:
        con.execute("CREATE TABLE lines (grp INTEGER, n BIGINT, line VARCHAR)")
        raw_runs: list[_RawRun] = []
        summaries: list[_Summary] = []
        for file in text_files:
            run, summary = _read_text(con, file, len(raw_runs), rule)
            if run is not None:
                run.summary = summary if not summary.empty else None
                raw_runs.append(run)
            else:
                summaries.append(summary)
        if raw_runs and hdr_files:
            raise ImportError_(
                f"command line: mixes YCSB raw measurements ({raw_runs[0].file}) and"
                f" HdrHistogram logs ({hdr_files[0]}); import them separately"
            )
        if raw_runs:
            _pair(summaries, raw_runs, lambda r: [r.file])
            batch = _raw_batch(con, raw_runs, sample_interval_s, name, files)
        elif hdr_files:
            if sample_interval_s is not None:
                raise ImportError_(
                    "command line: --sample-interval slices raw measurements; HdrHistogram"
                    " logs are sampled by their own intervals (leave the option out)"
                )
            runs = _hdr_runs(hdr_files, rule)
            _pair(summaries, runs, lambda r: [log.file for log in r.logs.values()])
            batch = _hdr_batch(runs, name, files)
        else:
            raise bad(
                text_files[0],
                None,
                "YCSB's summary but no measurements; expected the raw measurements"
                " (measurementtype=raw) or the .hdr logs (hdrhistogram.fileoutput=true) with it",
            )
    finally:
        con.close()
    return store.import_batch(batch, run_id=run_id, force=force)


def _pair(summaries: Sequence[_Summary], runs: Sequence[Any], files_of: Any) -> None:
    """Give each stdout-only summary to its run: the raw file it names, else the one run in
    its folder."""
    for summary in summaries:
        named = [
            r
            for r in runs
            if summary.raw_target is not None
            and any(f.name == summary.raw_target for f in files_of(r))
        ]
        near = [r for r in runs if any(f.parent == summary.file.parent for f in files_of(r))]
        found = named or near
        if len(found) != 1:
            raise bad(
                summary.file,
                None,
                f"YCSB's summary, and {len(found)} runs it could belong to; expected each run's"
                " files (its measurements and its stdout) in a folder of their own",
            )
        if found[0].summary is not None:
            raise bad(summary.file, None, f"a second summary for {files_of(found[0])[0]}")
        found[0].summary = summary


def _read_text(
    con: duckdb.DuckDBPyConnection, file: Path, grp: int, rule: ConditionRule
) -> tuple[_RawRun | None, _Summary]:
    """A text file: raw measurements (and maybe YCSB's summary), or YCSB's stdout alone."""
    check_file(file)
    try:
        con.execute("INSERT INTO lines " + _LINES.format(grp=grp), [str(file)])
    except duckdb.Error as exc:
        message = str(exc).strip().split("\n", 1)[0]
        raise bad(
            file, None, f"cannot be read as text ({message}); expected YCSB's output"
        ) from None
    # Few: headers, summary lines and YCSB's chatter, never the measurements.
    numbered = [
        (int(n), str(line))
        for n, line in con.execute(
            "SELECT n, line FROM lines WHERE grp = ? AND line IS NOT NULL"
            f" AND NOT regexp_full_match(line, '{_DATA}') ORDER BY n",
            [grp],
        ).fetchall()
    ]
    headers: dict[str, int] = {}
    for number, line in numbered:
        if m := _RAW_HEADER.match(line):
            if m.group(1) in headers:
                raise bad(
                    file,
                    number,
                    f"a second {m.group(1)} section (first at line {headers[m.group(1)]}): the"
                    " file holds more than one YCSB run (measurement.raw.output_file appends);"
                    " expected one run per file",
                )
            headers[m.group(1)] = number
    summary = _parse_summary(file, numbered)
    first_data = con.execute(
        f"SELECT min(n) FROM lines WHERE grp = ? AND regexp_full_match(line, '{_DATA}')", [grp]
    ).fetchone()
    if not headers:
        con.execute("DELETE FROM lines WHERE grp = ?", [grp])
        if first_data and first_data[0] is not None:
            raise bad(
                file,
                int(first_data[0]),
                "a raw measurement without any 'OP latency raw data: op, timestamp(ms),"
                " latency(us)' header; expected YCSB's raw output (measurementtype=raw)",
            )
        if summary.empty:
            raise bad(
                file,
                None,
                "no raw measurements ('OP latency raw data: ...') and no summary ('[OVERALL],"
                " RunTime(ms), N'); expected YCSB's output, or .hdr logs",
            )
        return None, summary
    names = list(headers)
    # A line that starts like a measurement's line but is not one: malformed.
    near = con.execute(
        "SELECT n, line FROM lines WHERE grp = ? AND split_part(line, ',', 1) IN"
        f" (SELECT unnest(?::VARCHAR[])) AND NOT regexp_full_match(line, '{_GOOD}')"
        " ORDER BY n LIMIT 1",
        [grp, names],
    ).fetchone()
    if near:
        raise bad(
            file,
            int(near[0]),
            f"{str(near[1])[:60]!r}; expected 'OP,timestamp_ms,latency_us' (whole numbers ≥ 0)",
        )
    orphan = con.execute(
        f"SELECT n, line FROM lines WHERE grp = ? AND regexp_full_match(line, '{_DATA}')"
        " AND split_part(line, ',', 1) NOT IN (SELECT unnest(?::VARCHAR[])) ORDER BY n LIMIT 1",
        [grp, names],
    ).fetchone()
    if orphan:
        op = str(orphan[1]).split(",", 1)[0]
        raise bad(
            file,
            int(orphan[0]),
            f"a raw line of {op} without its header; expected '{op} latency raw data: op,"
            " timestamp(ms), latency(us)' before it",
        )
    return _RawRun(file, rule.label(file), grp, headers), summary


# -- raw measurements --------------------------------------------------------------------------


def _raw_batch(
    con: duckdb.DuckDBPyConnection,
    runs: Sequence[_RawRun],
    sample_interval_s: float | None,
    name: str | None,
    files: Sequence[Path],
) -> ImportBatch:
    con.execute(
        "CREATE TABLE data AS SELECT grp, split_part(line, ',', 1) AS name,"
        " split_part(line, ',', 2)::BIGINT AS ts_ms, split_part(line, ',', 3)::BIGINT AS lat_us"
        f" FROM lines WHERE regexp_full_match(line, '{_GOOD}')"
    )
    con.execute("DROP TABLE lines")
    labels: list[str] = []
    types: list[str] = []
    mapping = []
    for run in runs:
        label_index(labels, run.label)
        keep, dropped = _chosen(list(run.headers))
        counts = dict(
            con.execute(
                "SELECT name, count(*) FROM data WHERE grp = ? GROUP BY name", [run.grp]
            ).fetchall()
        )
        for m in keep:
            if m.op not in types:
                types.append(m.op)
            mapping.append(
                (run.grp, m.name, types.index(m.op), m.status, "error" if m.status else "ok")
            )
        run.facts = {
            "measurements": {n: int(counts.get(n, 0)) for n in run.headers},
            "imported": [m.name for m in keep],
            "left_out": {n: int(counts.get(n, 0)) for n in dropped},
            "latency_from": "intended start"
            if any(m.intended for m in keep)
            else "start (measurement.interval=op)",
        }
        if run.summary is not None:
            _check_raw_summary(con, run)
    if not mapping:
        raise bad(runs[0].file, None, "only CLEANUP measurements; expected the workload's")
    con.execute(
        "CREATE TABLE m (grp INTEGER, name VARCHAR, txn_type SMALLINT, error_code VARCHAR,"
        " status VARCHAR)"
    )
    con.executemany("INSERT INTO m VALUES (?, ?, ?, ?, ?)", mapping)
    con.execute(
        """
        CREATE TABLE rows AS
        SELECT d.grp, 0 AS session, m.txn_type,
               d.ts_ms * 1000000 - d.lat_us * 1000 AS intended_start_ns,
               d.ts_ms * 1000000 - d.lat_us * 1000 AS start_ns,
               d.ts_ms * 1000000 AS end_ns, m.status, m.error_code
        FROM data d JOIN m USING (grp, name)
        """
    )
    groups = [labels.index(r.label) for r in runs]
    samples, table = sliced_samples(con, "rows", groups, sample_interval_s)
    if not table.num_rows:
        raise bad(
            runs[0].file, None, "no measurements after the headers; expected 'OP,ms,us' lines"
        )
    records: list[ImportedFile] = []
    documents = []
    for run in runs:
        meta: dict[str, Any] = {"summary_file": None, **run.facts}
        if run.summary is not None:
            meta["overall"] = run.summary.overall()
            if run.summary.file != run.file:
                meta["summary_file"] = str(run.summary.file)
                records.append(
                    ImportedFile(
                        str(run.summary.file),
                        sha256(run.summary.file),
                        "ycsb-summary",
                        run.label,
                        {"summary": True, "of": str(run.file)},
                    )
                )
        documents.append({"file": str(run.file), "condition": run.label, **meta})
        records.append(ImportedFile(str(run.file), sha256(run.file), "ycsb-raw", run.label, meta))
    return ImportBatch(
        name=name or runs[0].file.stem,
        description=f"YCSB raw measurements ({len(runs)} run(s))",
        source=", ".join(str(f) for f in files),
        settings={
            "format": "ycsb-raw",
            "timed": True,
            "files": documents,
            "samples": f"every {sample_interval_s:g}s"
            if sample_interval_s
            else "one per file (one YCSB run)",
            "sessions": "YCSB's raw measurements do not name the thread: one session",
        },
        conditions=labels,
        transaction_types=types,
        samples=samples,
        files=records,
        transactions=table,
        environment=client_environment(),
        tool_version=tool_version(),
    )


def _check_raw_summary(con: duckdb.DuckDBPyConnection, run: _RawRun) -> None:
    """Each measurement's figures in YCSB's summary, as ``OneMeasurementRaw`` computed them."""
    summary = run.summary
    assert summary is not None
    for name in run.headers:
        got = con.execute(
            "SELECT lat_us FROM data WHERE grp = ? AND name = ? ORDER BY lat_us", [run.grp, name]
        ).fetchnumpy()
        values = np.asarray(got["lat_us"], dtype=np.int64)
        n = len(values)
        expected: dict[str, float] = {"Total Operations": n}
        if n:
            expected |= {
                "Average": float(values.sum()) / n,
                "Min": int(values[0]),
                "Max": int(values[-1]),
            }
            expected |= {k: int(values[int(n * q)]) for k, q in _RAW_PERCENTILES.items()}
        for what, value in expected.items():
            found = summary.get(name, what)
            if found is None:
                continue
            text, line = found
            try:
                reported = float(text)
            except ValueError:
                raise bad(
                    summary.file, line, f"[{name}], {what}: {text!r}; expected a number"
                ) from None
            if not math.isclose(reported, value, rel_tol=1e-9, abs_tol=1e-9):
                raise bad(
                    summary.file,
                    line,
                    f"YCSB reports [{name}], {what} = {text}, {run.file.name} gives {value:g};"
                    " expected the summary of the run that wrote the measurements",
                )


# -- HdrHistogram logs -------------------------------------------------------------------------


def _hdrh() -> Any:
    """The ``hdrhistogram`` package's histogram class, imported on first use."""
    try:
        return importlib.import_module("hdrh.histogram").HdrHistogram
    except ImportError:
        raise MissingExtra(
            "importing YCSB's HdrHistogram logs", "hdr", "the hdrhistogram package"
        ) from None


def decode_histogram(text: str) -> Any:
    """One ``Interval_Compressed_Histogram`` (base64) as an ``hdrh`` histogram.

    V2 (HdrHistogram 2.1.5 and later) by the package; V1 (2.1.4, YCSB 0.17.0) here: the same
    40-byte header and zlib compression, then fixed-width big-endian counts, which are loaded
    into the package's histogram. ``ValueError`` when it is neither.
    """
    histogram = _hdrh()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("not base64") from None
    if len(raw) < 8:
        raise ValueError("too short for a histogram")
    cookie, length = struct.unpack(">II", raw[:8])
    base = cookie & ~0xF0
    if base == 0x1C849304:  # V2 compressed
        try:
            return histogram.decode(text.encode())
        except Exception as exc:  # the package raises its own exceptions and zlib's
            raise ValueError(
                f"a V2 histogram that does not decode ({type(exc).__name__})"
            ) from None
    if base != 0x1C849302:  # V1 compressed
        raise ValueError(f"encoding cookie {cookie:#x}, not a compressed histogram (V1 or V2)")
    try:
        data = zlib.decompress(raw[8 : 8 + length])
    except zlib.error:
        raise ValueError("a V1 histogram whose payload does not decompress") from None
    if len(data) < 40:
        raise ValueError("a V1 histogram without its header")
    inner, _, offset, digits, lowest, highest, _ = struct.unpack(">IIIIqqd", data[:40])
    word = (inner & 0xF0) >> 4
    if inner & ~0xF0 != 0x1C849301 or word not in (2, 4, 8) or (len(data) - 40) % word:
        raise ValueError(f"a V1 histogram with payload cookie {inner:#x}")
    if offset:
        raise ValueError("a shifted (normalised) V1 histogram, which YCSB does not write")
    counts = np.frombuffer(data[40:], dtype={2: ">i2", 4: ">i4", 8: ">i8"}[word])
    if (counts < 0).any():
        raise ValueError("a V1 histogram with a negative count")
    nonzero = np.nonzero(counts)[0].tolist()
    # The index → value layout depends on the lowest value and the digits only.
    probe = _probe(histogram, max(lowest, 1), digits)
    values = [int(probe.get_value_from_index(i)) for i in nonzero]
    out = histogram(max(lowest, 1), max(highest, 2, *values), digits)
    for value, index in zip(values, nonzero, strict=True):
        if not out.record_value(value, int(counts[index])):
            raise ValueError(f"a V1 histogram whose value {value} does not fit its layout")
    return out


@functools.cache
def _probe(histogram: Any, lowest: int, digits: int) -> Any:
    return histogram(lowest, 2**62, digits)


def read_hdr_log(file: Path) -> _HdrLog:
    """One HdrHistogram interval log, checked, every interval decoded."""
    check_file(file)
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise bad(file, None, "not UTF-8 text; expected an HdrHistogram log (.hdr)") from None
    name: str | None = None
    start_time: float | None = None
    base_time: float | None = None
    version: str | None = None
    intervals: list[_Interval] = []
    raw_intervals: list[tuple[int, float, float, str]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            if m := re.match(r"^#\[Logging for: (.+)\]$", line):
                name = m.group(1)
            elif m := re.match(r"^#\[StartTime: ([0-9.]+)", line):
                start_time = float(m.group(1))
            elif m := re.match(r"^#\[BaseTime: ([0-9.]+)", line):
                base_time = float(m.group(1))
            elif m := re.match(r"^#\[Histogram log format version (\S+)\]$", line):
                version = m.group(1)
            continue
        if line.startswith('"StartTimestamp"'):
            continue
        fields = line.split(",")
        if fields[0].startswith("Tag="):
            fields = fields[1:]
        if len(fields) != 4:
            raise bad(
                file,
                number,
                f"{len(fields)} fields; expected StartTimestamp,Interval_Length,Interval_Max,"
                "Interval_Compressed_Histogram",
            )
        try:
            start, length = float(fields[0]), float(fields[1])
            float(fields[2])
        except ValueError:
            raise bad(
                file, number, "a timestamp, length or max that is not a number; expected seconds"
            ) from None
        if length < 0 or not math.isfinite(start + length):
            raise bad(file, number, f"interval length {fields[1]}; expected seconds ≥ 0")
        raw_intervals.append((number, start, length, fields[3]))
    if not raw_intervals:
        raise bad(file, None, "no interval lines; expected HdrHistogram's interval log")
    for number, start, length, encoded in raw_intervals:
        # HistogramLogReader: times are relative to the base time, or to the start time when
        # they are too small to be epoch seconds themselves.
        if base_time is not None:
            start += base_time
        elif start_time is not None and start < start_time - 365 * 24 * 3600:
            start += start_time
        try:
            histogram = decode_histogram(encoded)
        except ValueError as exc:
            raise bad(
                file, number, f"{exc}; expected an HdrHistogram compressed histogram"
            ) from None
        intervals.append(_Interval(number, start, start + length, _buckets(histogram)))
    measured = name or file.stem
    return _HdrLog(file, measured, intervals, version)


def _hdr_runs(files: Sequence[Path], rule: ConditionRule) -> list[_HdrRun]:
    """The logs of each YCSB run: those of one folder whose names differ only by the
    measurement (``PATH + NAME + ".hdr"``)."""
    runs: dict[str, _HdrRun] = {}
    for file in files:
        log = read_hdr_log(file)
        suffix = f"{log.measurement}.hdr"
        prefix = file.name[: -len(suffix)] if file.name.endswith(suffix) else file.name
        key = str(file.parent / prefix)
        label = rule.label(file)
        run = runs.setdefault(key, _HdrRun(key, label))
        if run.label != label:
            raise bad(
                file,
                None,
                f"condition {label!r}, but {next(iter(run.logs.values())).file.name} of the same"
                f" run has {run.label!r}; expected one condition per YCSB run",
            )
        if log.measurement in run.logs:
            raise bad(file, None, f"a second {log.measurement} log for the run {prefix!r}")
        run.logs[log.measurement] = log
    return list(runs.values())


def _ticks(intervals: Sequence[tuple[str, _Interval]]) -> list[list[tuple[str, _Interval]]]:
    """Intervals grouped by the status tick that closed them, short ones merged."""
    lengths = [i.end_s - i.start_s for _, i in intervals]
    typical = statistics.median(lengths) if lengths else 0.0
    tolerance = max(0.1 * typical, 0.005)
    groups: list[list[tuple[str, _Interval]]] = []
    for item in sorted(intervals, key=lambda x: x[1].end_s):
        if groups and item[1].end_s - groups[-1][0][1].end_s <= tolerance:
            groups[-1].append(item)
        else:
            groups.append([item])

    def span(group: list[tuple[str, _Interval]]) -> float:
        return max(i.end_s for _, i in group) - min(i.start_s for _, i in group)

    if len(groups) > 2:
        usual = statistics.median(span(g) for g in groups)
        merged: list[list[tuple[str, _Interval]]] = []
        for group in groups:
            if merged and span(group) < usual / 2:
                merged[-1].extend(group)
            else:
                merged.append(group)
        if len(merged) > 1 and span(merged[0]) < usual / 2:
            merged[1] = merged[0] + merged[1]
            merged = merged[1:]
        groups = merged
    return groups


def _buckets(histogram: Any) -> dict[tuple[int, int], int]:
    """The histogram's non-empty buckets: ``(lowest, highest equivalent value) → count``."""
    out: dict[tuple[int, int], int] = {}
    for item in histogram.get_recorded_iterator():
        value = int(item.value_iterated_to)
        key = (
            int(histogram.get_lowest_equivalent_value(value)),
            int(histogram.get_highest_equivalent_value(value)),
        )
        out[key] = out.get(key, 0) + int(item.count_at_value_iterated_to)
    return out


def hdr_statistics(buckets: dict[tuple[int, int], int]) -> dict[str, Any]:
    """Count, extremes, mean and percentiles of HdrHistogram buckets (µs → ms), as
    HdrHistogram (Java, 2.1.12) computes them: the minimum and maximum are their buckets' lowest
    and highest equivalent values, the mean weighs each bucket's median equivalent value, and a
    percentile is the highest equivalent value of the bucket holding the
    ``ceil(p / 100 · count)``-th value (the inverse of the empirical CDF, as wannabet's own
    quantiles; ``getValueAtPercentile``).
    """
    if not buckets:
        return {"count": 0}
    keys = sorted(buckets)
    lo = np.array([k[0] for k in keys], dtype=np.int64)
    hi = np.array([k[1] for k in keys], dtype=np.int64)
    count = np.array([buckets[k] for k in keys], dtype=np.int64)
    total = int(count.sum())
    cumulative = np.cumsum(count)
    median = lo + ((hi - lo + 1) >> 1)
    percentiles = {}
    for q in _PERCENTILES:
        # Java lowers the percentile by one ulp so that p·n does not round up past an integer.
        rank = max(1, math.ceil(math.nextafter(q, -math.inf) / 100.0 * total))
        at = int(np.searchsorted(cumulative, rank))
        percentiles[f"p{q:g}"] = int(hi[at]) / 1000
    return {
        "count": total,
        "min_ms": int(lo[0]) / 1000,
        "max_ms": int(hi[-1]) / 1000,
        "mean_ms": float((median * count).sum()) / total / 1000,
        "percentiles": percentiles,
        # Disjoint integer-ns bins (wannabet's histogram shape): [lo, hi] µs → ns.
        "bins_ns": [
            [int(a) * 1000, int(b) * 1000 + 999, int(c)]
            for a, b, c in zip(lo, hi, count, strict=True)
        ],
    }


def _merge(parts: Sequence[dict[tuple[int, int], int]]) -> dict[tuple[int, int], int]:
    """Buckets of several intervals of one run: one layout, so equal buckets add exactly."""
    out: dict[tuple[int, int], int] = {}
    for part in parts:
        for key, count in part.items():
            out[key] = out.get(key, 0) + count
    return out


def _hdr_batch(runs: Sequence[_HdrRun], name: str | None, files: Sequence[Path]) -> ImportBatch:
    labels: list[str] = []
    types: list[str] = []
    samples: list[ImportedSample] = []
    aggregates: list[dict[str, Any]] = []
    records: list[ImportedFile] = []
    documents = []
    for run in runs:
        cid = label_index(labels, run.label)
        keep, dropped = _chosen(list(run.logs))
        if not keep:
            raise bad(
                next(iter(run.logs.values())).file,
                None,
                "only CLEANUP logs; expected the workload's measurements (READ.hdr, ...)",
            )
        if run.summary is not None:
            _check_hdr_summary(run)
        chosen = {m.name: m for m in keep}
        for m in keep:
            if m.op not in types:
                types.append(m.op)
        items = [(n, i) for n in chosen for i in run.logs[n].intervals]
        for group in _ticks(items):
            sample_id = len(samples)
            t0 = min(i.start_s for _, i in group)
            t1 = max(i.end_s for _, i in group)
            by_op: dict[str, dict[str, list[Any]]] = {}
            for measured, interval in group:
                m = chosen[measured]
                slot = by_op.setdefault(m.op, {"ok": [], "failed": [], "names": []})
                slot["failed" if m.status else "ok"].append(interval.buckets)
                if measured not in slot["names"]:
                    slot["names"].append(measured)
            ok_total = failed_total = 0
            statuses: dict[tuple[int, str], int] = {}
            for op, slot in by_op.items():
                ok = hdr_statistics(_merge(slot["ok"]))
                failed = sum(sum(b.values()) for b in slot["failed"])
                if not ok["count"] and not failed:
                    continue
                t = types.index(op)
                statuses[(t, "ok")] = ok["count"]
                statuses[(t, "error")] = failed
                ok_total += ok["count"]
                failed_total += failed
                aggregates.append(
                    {
                        "sample_id": sample_id,
                        "condition_id": cid,
                        "txn_type": t,
                        "count": ok["count"],
                        "failed": failed,
                        "lat_sum_ms": None if ok["count"] else 0.0,
                        "lat_min_ms": ok.get("min_ms"),
                        "lat_max_ms": ok.get("max_ms"),
                        "lat_mean_ms": ok.get("mean_ms"),
                        "percentiles": ok.get("percentiles"),
                        "histogram": {"bins_ns": ok["bins_ns"], "unit": "µs"}
                        if ok["count"]
                        else None,
                        "extra": {
                            "measurements": slot["names"],
                            "intervals": [
                                [round(i.start_s, 3), round(i.end_s - i.start_s, 3)]
                                for measured, i in group
                                if chosen[measured].op == op
                            ],
                        },
                    }
                )
            seconds = t1 - t0
            samples.append(
                ImportedSample(
                    sample_id,
                    cid,
                    round(t0 * 1e9),
                    max(round(t1 * 1e9), round(t0 * 1e9) + 1),
                    (
                        ok_total + failed_total,
                        ok_total,
                        failed_total,
                        ok_total / seconds if seconds > 0 else None,
                    ),
                    statuses={k: v for k, v in statuses.items() if v},
                )
            )
        meta: dict[str, Any] = {
            "measurements": {
                n: {
                    "intervals": len(log.intervals),
                    "count": sum(sum(i.buckets.values()) for i in log.intervals),
                    "log_format": log.version,
                }
                for n, log in run.logs.items()
            },
            "imported": list(chosen),
            "left_out": dropped,
            "overall": run.summary.overall() if run.summary else None,
        }
        documents.append({"run": run.key, "condition": run.label, **meta})
        for log in run.logs.values():
            records.append(
                ImportedFile(
                    str(log.file),
                    sha256(log.file),
                    "ycsb-hdr",
                    run.label,
                    {"measurement": log.measurement, "run": run.key},
                )
            )
        if run.summary is not None:
            records.append(
                ImportedFile(
                    str(run.summary.file),
                    sha256(run.summary.file),
                    "ycsb-summary",
                    run.label,
                    {"summary": True, "of": run.key},
                )
            )
    return ImportBatch(
        name=name or Path(runs[0].key).name.rstrip("-_") or files[0].stem,
        description=f"YCSB HdrHistogram logs ({len(runs)} run(s)): aggregates only",
        source=", ".join(str(f) for f in files),
        settings={
            "format": "ycsb-hdrhistogram",
            "timed": True,
            "aggregates_only": True,
            "files": documents,
            "samples": "one per YCSB status interval (status.interval)",
        },
        conditions=labels,
        transaction_types=types,
        samples=samples,
        files=records,
        aggregates=aggregates,
        environment=client_environment(),
        tool_version=tool_version(),
    )


def _check_hdr_summary(run: _HdrRun) -> None:
    """The count of each measurement in YCSB's summary equals its log's."""
    summary = run.summary
    assert summary is not None
    for name, log in run.logs.items():
        found = summary.get(name, "Operations")
        if found is None:
            continue
        text, line = found
        count = sum(sum(i.buckets.values()) for i in log.intervals)
        if text != str(count):
            raise bad(
                summary.file,
                line,
                f"YCSB reports [{name}], Operations = {text}, {log.file.name} holds {count};"
                " expected the summary of the run that wrote the logs",
            )
