"""fio results → an imported run: JSON / JSON+ output and histogram logs (aggregates), and
latency logs (one transaction per I/O).

**JSON output** (``--output-format=json`` or ``json+``, fio 3.0 or later): per job (one entry
per thread, or one per group with ``group_reporting``), per direction (``read``, ``write``,
``trim``, ``sync``; ``mixed`` with ``unified_rw_reporting=mixed``), the I/O counts, IOPS,
bandwidth and the completion latency (``clat_ns``: min, max, mean, stddev, ``N`` and the
``percentile`` map), plus, with ``json+``, the latency histogram ``bins``:
``{"<bucket value ns>": count}``. Each job name is a condition, each direction that did I/O a
transaction type; each file's jobs of one condition make one sample, and each of its
directions one row of ``aggregates``. fio sometimes prints lines before the JSON
(``note: ...``): they are skipped up to the first line that starts with ``{``, as fio's
test library (``t/fiotestlib.py``) skips them, and so is text after the document
(``--output-format=json,normal``).

**Histogram logs** (``--write_hist_log`` with ``--log_hist_msec``, ``PREFIX_clat_hist.N.log``):
one line per direction and interval, ``time_ms, direction, block_size, count, count, ...``: the
completions of the interval (the difference of fio's cumulative histogram since the previous
line) in fio's 1,856 buckets, or in ``1856 >> log_hist_coarseness`` wider ones. Each interval
is a sample, with per direction one row of ``aggregates`` holding its histogram. fio writes a
line when the first I/O completes after the interval's end, and never writes the last, partial
interval: the logs hold fewer completions than the JSON, and the shortfall is recorded.

fio's latency histogram (``stat.h``, ``plat_val_to_idx`` / ``plat_idx_to_val`` in ``stat.c``)
has 29 groups of 64 buckets: values below 128 ns have a bucket each; above, each power of two
``[2^m, 2^(m+1))`` is split into 64 buckets of width ``2^(m-6)``, so a bucket is at most 1/64
(1.6 %) of its lowest value wide; the last bucket, from about 17.05 s, also holds every
larger latency.
``json+`` names a bucket by ``plat_idx_to_val``: its lowest value plus half its width (the
value fio reports as a percentile). The import recovers each bucket's index from it and stores
the bucket's edges, so wannabet's quantile of the stored bins (the midpoint of the bucket
holding the order statistic) is within half a nanosecond of fio's percentile.

**Latency logs** (``--write_lat_log=PREFIX``: ``PREFIX_clat.N.log``, ``_lat``, ``_slat``, one
per thread): one line per I/O, ``time_ms, latency_ns, direction, block_size[, offset][,
priority]`` (fio's HOWTO, "Log File Formats": the latency in ns, the time in ms, here the
completion's, since the job started). Each line is a transaction of its direction, ended at
its time and started its latency before, in the session of its thread; the completion
latencies (``_clat``) are taken, as for the JSON and the histogram logs (``_lat`` when it is
all there is). A run's I/Os are sliced by completion time into samples of
``--sample-interval`` (default 1 s) from the job's start, placed as the histogram logs'
intervals are. With ``log_avg_msec`` a line is a window's average (or, with
``log_max_value``, its maximum) over I/Os whose number the log does not record: refused, as
neither a count nor a mean over windows can be formed. The bandwidth and IOPS logs are refused.

References
----------
fio source: ``stat.c`` (``show_thread_status_json``, ``add_ddir_status_json``,
``add_ddir_lat_json``, ``calc_clat_percentiles``, ``add_clat_sample``), ``stat.h``
(``FIO_IO_U_PLAT_*``), ``iolog.c`` (``flush_hist_samples``); fio's HOWTO, "Log File Formats"
and ``log_hist_msec``.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
import pyarrow as pa

from wannabet.analysis import histogram
from wannabet.environment import client_environment
from wannabet.errors import ImportError_
from wannabet.importers._common import (
    ConditionRule,
    bad,
    check_file,
    input_files,
    label_index,
    read_text,
    sha256,
)
from wannabet.store.store import ImportBatch, ImportedFile, ImportedSample, Store
from wannabet.version import tool_version

# -- fio's latency histogram (stat.h) -------------------------------------------------------------

_BITS = 6  # FIO_IO_U_PLAT_BITS
_VAL = 1 << _BITS  # FIO_IO_U_PLAT_VAL: buckets per group
#: FIO_IO_U_PLAT_NR: buckets of fio's latency histogram (29 groups of 64)
PLAT_NR = 29 * _VAL

#: the directions of a job, in fio's order (``mixed``: ``unified_rw_reporting=mixed``)
_DIRECTIONS = ("read", "write", "trim", "sync", "mixed")
#: a histogram log's direction field (``io_sample_ddir``: DDIR_READ, DDIR_WRITE, DDIR_TRIM)
_LOG_DIRECTIONS = {0: "read", 1: "write", 2: "trim"}
#: the percentiles stored for a histogram log's interval (fio's own for the JSON)
_LOG_PERCENTILES = (50.0, 90.0, 95.0, 99.0, 99.9, 99.99)
#: a log time from this on is epoch ms (log_unix_epoch), not ms since the job started (3 years)
_EPOCH_MS = 100_000_000_000
_HIST_NAME = re.compile(r"^(?P<prefix>.*)_clat_hist(?:\.(?P<thread>\d+))?\.log$")
_LAT_NAME = re.compile(r"^(?P<prefix>.*)_(?P<kind>clat|slat|lat)(?:\.(?P<thread>\d+))?\.log$")
_OTHER_LOG = re.compile(r"_(?:bw|iops)(?:\.\d+)?\.log$")
#: the start of a log line: numbers separated by commas
_NUMBERS = re.compile(r"^\s*\d+\s*,\s*-?\d+\s*(?:,|$)")


def bucket_edges(index: int) -> tuple[int, int]:
    """Lowest and highest latency (ns) of fio's histogram bucket ``index``.

    The last bucket also holds every larger latency (``plat_val_to_idx`` clamps the index).
    """
    if not 0 <= index < PLAT_NR:
        raise ValueError(f"fio has no latency bucket {index}")
    if index < 2 * _VAL:
        return index, index
    error_bits = (index >> _BITS) - 1
    lo = (1 << (error_bits + _BITS)) + (index % _VAL) * (1 << error_bits)
    return lo, lo + (1 << error_bits) - 1


def bucket_value(index: int) -> int:
    """fio's name of bucket ``index`` (``plat_idx_to_val``): its lowest value plus half its
    width, the value fio prints as a percentile and as a ``json+`` bin."""
    lo, hi = bucket_edges(index)
    return lo if lo == hi else lo + (hi - lo + 1) // 2


def bucket_index(value_ns: int) -> int:
    """The bucket fio records a latency of ``value_ns`` in (``plat_val_to_idx``)."""
    if value_ns < 2 * _VAL:
        return max(value_ns, 0)
    error_bits = value_ns.bit_length() - 1 - _BITS
    index = ((error_bits + 1) << _BITS) + ((_VAL - 1) & (value_ns >> error_bits))
    return min(index, PLAT_NR - 1)


def fio_percentile(counts: dict[int, int], percent: float) -> int:
    """fio's percentile of a histogram (``calc_clat_percentiles``): the value of the first
    bucket where the running count reaches ``percent / 100 · n``."""
    total = sum(counts.values())
    running = 0
    for index in sorted(counts):
        running += counts[index]
        if running >= percent / 100.0 * total:
            return bucket_value(index)
    return bucket_value(max(counts))


def bins_ns(counts: dict[int, int], stride: int = 1, max_ns: int | None = None) -> list[list[int]]:
    """fio buckets (``index → count``; with ``stride``, each key the first of ``stride``
    merged buckets) as disjoint integer-ns bins ``[lo_ns, hi_ns, count]``, the shape of
    :mod:`wannabet.analysis.histogram`. The last bucket holds everything above its lowest
    value: ``max_ns``, when it is larger, is its highest."""
    out = []
    for index in sorted(counts):
        if counts[index] <= 0:
            continue
        lo = bucket_edges(index)[0]
        last = min(index + stride - 1, PLAT_NR - 1)
        hi = bucket_edges(last)[1]
        if last == PLAT_NR - 1 and max_ns is not None:
            hi = max(hi, max_ns)
        out.append([lo, hi, int(counts[index])])
    return out


# -- JSON output ----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Direction:
    """One direction of one job entry: its latency figures (ns) and its I/O facts."""

    name: str
    count: int
    latency: str  # "clat" or "lat": which of fio's latencies the figures are
    min_ns: int
    max_ns: int
    mean_ns: float
    stddev_ns: float
    percentiles: dict[float, int] | None  # percent → ns, as fio printed it
    bins: dict[int, int] | None  # bucket index → count (json+)
    facts: dict[str, Any]


@dataclass(slots=True)
class _Job:
    index: int
    line: int | None
    name: str
    groupid: int
    error: int
    total_err: int | None
    start_ms: int | None
    runtime_ms: int
    options: dict[str, Any]
    directions: dict[str, _Direction]


@dataclass(slots=True)
class _Output:
    """One fio JSON output file."""

    file: Path
    version: str
    end_ms: int
    time: str | None
    jobs: list[_Job]
    global_options: dict[str, Any]
    disk_util: list[Any]
    skipped: int  # lines of text before the JSON

    def option(self, job: _Job, key: str) -> Any:
        return job.options.get(key, self.global_options.get(key))


def _line_of(text: str, needle: str, occurrence: int = 0) -> int | None:
    at = -1
    for _ in range(occurrence + 1):
        at = text.find(needle, at + 1)
        if at < 0:
            return None
    return text.count("\n", 0, at) + 1


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _count(value: Any) -> int | None:
    """``value`` when it is a whole number ≥ 0, else None."""
    return int(value) if _whole(value) else None


def _number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def read_fio_json(file: Path) -> _Output:
    """One fio JSON (or JSON+) output, checked: every job and direction with its figures."""
    lines = read_text(file)
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("{")), None)
    if start is None:
        raise bad(
            file,
            None,
            "no line starts with '{'; expected fio's JSON output (--output-format=json or json+)",
        )
    text = "\n".join([lines[start].lstrip(), *lines[start + 1 :]]) + "\n"
    try:
        doc, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError as exc:
        raise bad(
            file,
            exc.lineno + start,
            f"not JSON ({exc.msg}); expected fio's JSON output (--output-format=json or json+)",
        ) from None
    # Text after the document is fio's too (--output-format=json,normal prints it); a second
    # document is a second run appended to the file.
    after = text.count("\n", 0, end) + start
    second = next(
        (i for i, line in enumerate(lines[after + 1 :], after + 2) if line.startswith("{")), None
    )
    if second is not None:
        raise bad(
            file,
            second,
            "a second JSON document (two fio runs appended to one file); expected one run per file",
        )

    def where(line: int | None) -> int | None:
        return line + start if line is not None else None

    if not isinstance(doc, dict):
        raise bad(file, start + 1, "not a JSON object; expected fio's JSON output")
    version = doc.get("fio version")
    if isinstance(version, str) and re.match(r"^fio-[0-2]\.", version):
        raise bad(
            file,
            where(_line_of(text, '"fio version"')),
            f"written by {version}, which reports latencies in µs with another histogram"
            " layout; expected the output of fio 3.0 or later",
        )
    jobs = doc.get("jobs")
    if jobs is None:
        what = (
            "fio's client/server output (client_stats), which is not read"
            if "client_stats" in doc
            else 'no "jobs" list'
        )
        raise bad(file, start + 1, f"{what}; expected the JSON output of a fio run")
    if not isinstance(jobs, list) or not jobs:
        raise bad(
            file, where(_line_of(text, '"jobs"')), '"jobs" is empty; expected one entry per job'
        )
    stamp = _count(doc.get("timestamp_ms"))
    if stamp is None:
        seconds = _count(doc.get("timestamp"))
        if seconds is None:
            raise bad(
                file,
                start + 1,
                'no "timestamp_ms" or "timestamp"; expected fio\'s JSON output, which has the'
                " time the run ended",
            )
        stamp = seconds * 1000
    global_options = doc.get("global options")
    disk_util = doc.get("disk_util")
    out = _Output(
        file=file,
        version=str(version) if version is not None else "unknown",
        end_ms=stamp,
        time=doc.get("time") if isinstance(doc.get("time"), str) else None,
        jobs=[],
        global_options=dict(global_options) if isinstance(global_options, dict) else {},
        disk_util=list(disk_util) if isinstance(disk_util, list) else [],
        skipped=start,
    )
    for index, job in enumerate(jobs):
        out.jobs.append(_read_job(file, where(_line_of(text, '"jobname"', index)), index, job))
    if not any(job.directions for job in out.jobs):
        raise bad(
            file,
            where(_line_of(text, '"jobs"')),
            "no job did any I/O (every direction has N = 0); expected the output of a fio run"
            " that read or wrote",
        )
    return out


def _read_job(file: Path, line: int | None, index: int, job: Any) -> _Job:
    if not isinstance(job, dict) or not isinstance(job.get("jobname"), str):
        raise bad(file, line, f'jobs[{index}] has no "jobname"; expected one object per fio job')
    name = job["jobname"]
    here = f"jobs[{index}] ({name!r})"
    present = [d for d in _DIRECTIONS if d in job]
    if not any(d in job for d in ("read", "write", "trim", "mixed")):
        raise bad(
            file,
            line,
            f"{here} has no read, write or trim statistics; expected fio's per-job JSON"
            " (--output-format=json or json+, not terse or normal)",
        )
    runtime = _count(job.get("job_runtime"))
    if runtime is None:
        elapsed = _count(job.get("elapsed"))
        if elapsed is None:
            raise bad(file, line, f'{here} has no "job_runtime"; expected milliseconds ≥ 0')
        runtime = elapsed * 1000
    directions = {}
    for direction in present:
        parsed = _read_direction(file, line, f"{here}.{direction}", direction, job[direction])
        if parsed is not None:
            directions[direction] = parsed
    options = job.get("job options")
    start = _count(job.get("job_start"))
    return _Job(
        index=index,
        line=line,
        name=name,
        groupid=_count(job.get("groupid")) or 0,
        error=int(job["error"]) if isinstance(job.get("error"), int) else 0,
        total_err=_count(job.get("total_err")),
        start_ms=start or None,
        runtime_ms=runtime,
        options=dict(options) if isinstance(options, dict) else {},
        directions=directions,
    )


def _read_direction(
    file: Path, line: int | None, here: str, name: str, stats: Any
) -> _Direction | None:
    """One direction's figures, or None when it did no I/O."""
    if not isinstance(stats, dict):
        raise bad(file, line, f"{here} is not an object; expected fio's per-direction statistics")
    if "clat" in stats or ("lat" in stats and "lat_ns" not in stats):
        raise bad(
            file,
            line,
            f'{here} has latencies in µs ("clat"), as fio 2.x wrote them; expected fio 3.0 or'
            " later (clat_ns)",
        )
    clat, lat = stats.get("clat_ns"), stats.get("lat_ns")
    for key, value in (("clat_ns", clat), ("lat_ns", lat)):
        if value is not None and not isinstance(value, dict):
            raise bad(file, line, f"{here}.{key} is not an object; expected fio's latency figures")
    # The completion latency, what fio's percentiles describe by default; the total latency when
    # only it has percentiles (lat_percentiles=1) or when it is all there is (sync).
    chosen, key = (clat, "clat") if clat is not None else (lat, "lat")
    if lat is not None and clat is not None and "percentile" not in clat and "percentile" in lat:
        chosen, key = lat, "lat"
    if chosen is None:
        raise bad(file, line, f'{here} has no "clat_ns" or "lat_ns"; expected fio 3.0 or later')
    total_ios = stats.get("total_ios")
    if total_ios is not None and not _whole(total_ios):
        raise bad(file, line, f"{here}.total_ios {total_ios!r}; expected a whole number ≥ 0")
    count = chosen.get("N", total_ios)
    if not _whole(count):
        raise bad(file, line, f"{here}.{key}_ns has no count N; expected a whole number ≥ 0")
    if count == 0:
        return None
    figures: dict[str, float] = {}
    for figure in ("min", "max", "mean", "stddev"):
        value = chosen.get(figure)
        if not _number(value):
            raise bad(
                file, line, f"{here}.{key}_ns.{figure} {value!r}; expected a number of ns ≥ 0"
            )
        figures[figure] = float(value)
    percentiles = None
    if "percentile" in chosen:
        raw = chosen["percentile"]
        if not isinstance(raw, dict):
            raise bad(file, line, f"{here}.{key}_ns.percentile: expected an object")
        percentiles = {}
        for pct, value in raw.items():
            try:
                p = float(pct)
            except ValueError:
                p = math.nan
            if not 0 < p <= 100 or not _whole(value):
                raise bad(
                    file,
                    line,
                    f"{here}.{key}_ns.percentile {pct!r}: {value!r}; expected"
                    ' "percent": latency in ns',
                )
            percentiles[p] = int(value)
    bins = None
    if "bins" in chosen:
        bins = _read_bins(file, line, f"{here}.{key}_ns.bins", chosen["bins"], int(count))
    facts: dict[str, Any] = {
        k: stats[k]
        for k in (
            "io_bytes",
            "bw_bytes",
            "iops",
            "runtime",
            "total_ios",
            "short_ios",
            "drop_ios",
            "iops_min",
            "iops_max",
            "iops_mean",
            "iops_stddev",
            "bw_min",
            "bw_max",
            "bw_mean",
            "bw_dev",
        )
        if k in stats and _number(stats[k])
    }
    for other in ("slat", "clat", "lat"):
        if other == key:
            continue
        value = stats.get(f"{other}_ns")
        if isinstance(value, dict) and value.get("N"):
            facts[f"{other}_ns"] = {
                k: value[k] for k in ("min", "max", "mean", "stddev", "N") if k in value
            }
    return _Direction(
        name=name,
        count=int(count),
        latency=key,
        min_ns=int(figures["min"]),
        max_ns=int(figures["max"]),
        mean_ns=figures["mean"],
        stddev_ns=figures["stddev"],
        percentiles=percentiles,
        bins=bins,
        facts=facts,
    )


def _read_bins(file: Path, line: int | None, here: str, raw: Any, count: int) -> dict[int, int]:
    """``json+`` bins (``{"<bucket value ns>": count}``) as bucket index → count."""
    if not isinstance(raw, dict):
        raise bad(file, line, f"{here}: expected an object of bucket value (ns) → count")
    out: dict[int, int] = {}
    for key, value in raw.items():
        index = bucket_index(int(key)) if key.isdigit() else None
        if index is None or bucket_value(index) != int(key):
            raise bad(
                file,
                line,
                f"{here} key {key!r} is not the value of a fio latency bucket; expected the"
                " json+ output of fio 3.0 or later",
            )
        if not _whole(value):
            raise bad(file, line, f"{here}[{key!r}] {value!r}; expected a count ≥ 0")
        out[index] = out.get(index, 0) + int(value)
    if sum(out.values()) != count:
        raise bad(
            file,
            line,
            f"{here} hold {sum(out.values())} latencies and N is {count}; expected the bins of"
            " the same latencies",
        )
    return out


# -- histogram logs -------------------------------------------------------------------------------


@dataclass(slots=True)
class _LogLine:
    line: int
    time_ms: int
    direction: str
    block_size: int
    counts: dict[int, int]  # first fio bucket of each (merged) bucket → count


@dataclass(slots=True)
class _HistLog:
    file: Path
    prefix: str
    thread: int | None
    stride: int
    lines: list[_LogLine]


def _log_kind(file: Path) -> str | None:
    """Which of fio's logs the file is: ``"hist"`` (a histogram log), ``"lat"`` (a per-I/O
    latency log, ``--write_lat_log``), or None (not a log: fio's JSON output). Refuse the
    logs that are not read."""
    if file.name.endswith(".log.fz"):
        check_file(file)
        raise bad(
            file,
            None,
            "a compressed fio log (log_compression with log_store_compressed); expected the"
            " plain text log: decompress it with fio --inflate-log=FILE",
        )
    if _LAT_NAME.match(file.name) and file.is_file() and file.stat().st_size == 0:
        # fio writes an empty _slat log for a synchronous engine (no submission latency),
        # and a glob of a run's latency logs picks it up: it is a latency log, left unused.
        return "lat"
    check_file(file)
    with file.open("rb") as handle:
        head = handle.read(1 << 16).decode("utf-8", "replace").lstrip("\ufeff")
    lines = head.splitlines()
    number = next((i for i, x in enumerate(lines) if x.strip()), 0)
    first = lines[number] if lines else ""
    if _HIST_NAME.match(file.name):
        return "hist"
    if not _NUMBERS.match(first):
        return None
    if first.count(",") + 1 > 8:
        return "hist"
    if _LAT_NAME.match(file.name):
        return "lat"
    expected = (
        "expected fio's JSON output, a latency log (--write_lat_log: PREFIX_clat.N.log) or a"
        " histogram log (--write_hist_log with --log_hist_msec)"
    )
    if m := _OTHER_LOG.search(file.name):
        kind, option = {
            "_bw": ("bandwidth log", "write_bw_log"),
            "_iops": ("IOPS log", "write_iops_log"),
        }[m.group(0).split(".")[0]]
        raise bad(
            file,
            number + 1,
            f"a fio {kind} ({option}), which is not read: its values are throughputs, not"
            f" the latency of an I/O; {expected}",
        )
    raise bad(
        file,
        number + 1,
        "a fio per-I/O log whose name does not say what it holds (fio names them"
        f" PREFIX_clat.N.log, _lat, _slat, _bw, _iops); {expected}, under fio's own name",
    )


def read_hist_log(file: Path) -> _HistLog:
    """One fio histogram log (``--write_hist_log``), checked line by line."""
    lines = read_text(file)
    m = _HIST_NAME.match(file.name)
    prefix = m.group("prefix") if m else file.stem
    thread = int(m.group("thread")) if m and m.group("thread") else None
    out = _HistLog(file, prefix, thread, 0, [])
    width: int | None = None
    expected = "'time_ms, direction, block_size, count, count, ...' (fio's histogram log)"
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        parts = raw.split(",")
        try:
            values = [int(p) for p in parts]
        except ValueError:
            bad_field = next(p.strip() for p in parts if not _is_int(p))
            raise bad(
                file, number, f"{bad_field[:30]!r} is not a whole number; expected {expected}"
            ) from None
        buckets = len(values) - 3
        if width is None:
            stride = PLAT_NR // buckets if buckets > 0 else 0
            if buckets <= 0 or stride * buckets != PLAT_NR or stride & (stride - 1) or stride > 64:
                raise bad(
                    file,
                    number,
                    f"{len(values)} fields; expected 3 + {PLAT_NR} (or {PLAT_NR} >> N with"
                    " log_hist_coarseness=N): time_ms, direction, block_size and the buckets",
                )
            width, out.stride = len(values), stride
        elif len(values) != width:
            raise bad(
                file,
                number,
                f"{len(values)} fields, the first line has {width}; expected every line complete"
                " (is the file truncated?)",
            )
        time_ms, ddir, block_size = values[:3]
        if ddir not in _LOG_DIRECTIONS or time_ms < 0 or block_size < 0:
            raise bad(
                file,
                number,
                f"time {time_ms}, direction {ddir}; expected a time ≥ 0 and a direction 0 (read),"
                " 1 (write) or 2 (trim)",
            )
        counts = {}
        for position, value in enumerate(values[3:]):
            if value < 0 or value >= 1 << 62:
                raise bad(
                    file,
                    number,
                    f"bucket {position} holds {value}; expected a count ≥ 0 (fio prints a"
                    " histogram that went back, e.g. after a statistics reset, as a huge number)",
                )
            if value:
                counts[position * out.stride] = value
        out.lines.append(_LogLine(number, time_ms, _LOG_DIRECTIONS[ddir], block_size, counts))
    if not out.lines:
        raise bad(file, None, f"no interval lines; expected {expected}")
    return out


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


# -- per-I/O latency logs -------------------------------------------------------------------------


@dataclass(slots=True)
class _LatLog:
    """One per-I/O latency log (``--write_lat_log``): one line per completed I/O."""

    file: Path
    prefix: str
    kind: str  # "clat", "lat" or "slat": which of fio's latencies
    thread: int | None
    time_ms: np.ndarray  # when the I/O completed: ms since the job started (or epoch ms)
    value_ns: np.ndarray  # its latency
    direction: np.ndarray  # 0 read, 1 write, 2 trim


#: a latency log's line (fio's HOWTO, "Log File Formats")
_LAT_LINE = (
    "'time_ms, latency_ns, direction, block_size[, offset][, priority]' (fio's latency log,"
    " one line per I/O)"
)


def read_lat_log(file: Path) -> _LatLog:
    """One fio latency log (``--write_lat_log``: ``PREFIX_clat.N.log``, ``_lat``, ``_slat``),
    checked: one I/O per line, none of ``log_avg_msec``'s window averages."""
    m = _LAT_NAME.match(file.name)
    assert m is not None  # _log_kind said so
    thread = int(m.group("thread")) if m.group("thread") else None
    empty = np.zeros(0, dtype=np.int64)
    out = _LatLog(file, m.group("prefix"), m.group("kind"), thread, empty, empty, empty)
    if file.stat().st_size == 0:
        return out
    numbered = [(n, line) for n, line in enumerate(read_text(file), start=1) if line.strip()]
    lines = [line for _, line in numbered]
    widths = {line.count(",") for line in lines}
    try:
        if len(widths) != 1 or not 3 <= widths.pop() <= 6:
            raise ValueError("fields")
        # The columns after the block size (offset with log_offset, the priority, in hex
        # with log_prio) are not read: which is which depends on options the log omits.
        data = np.loadtxt(
            lines, delimiter=",", dtype=np.int64, ndmin=2, usecols=(0, 1, 2, 3), comments=None
        )
    except (ValueError, IndexError):
        _refuse_lat_line(file)
        raise  # not reached: _refuse_lat_line raises
    if not len(data):
        raise bad(file, None, f"no lines; expected {_LAT_LINE}")
    time_ms, value_ns, direction, block_size = data.T
    wrong = (time_ms < 0) | (value_ns < 0) | (direction < 0) | (direction > 2)
    if wrong.any():
        at = int(np.argmax(wrong))
        raise bad(
            file,
            numbered[at][0],
            f"time {time_ms[at]}, latency {value_ns[at]}, direction {direction[at]}; expected"
            " a time and latency ≥ 0 and a direction 0 (read), 1 (write) or 2 (trim)",
        )
    windowed = block_size <= 0
    if windowed.any():
        raise bad(file, numbered[int(np.argmax(windowed))][0], _WINDOWED)
    out.time_ms, out.value_ns, out.direction = time_ms, value_ns, direction
    return out


#: why log_avg_msec's logs are refused
_WINDOWED = (
    "block size 0: a line of windowed logging (log_avg_msec), the average (or with"
    " log_max_value the largest) latency of a window of I/Os whose number the log does not"
    " record, so neither their count nor a mean over windows can be formed from it; expected a"
    " log of every I/O (fio without log_avg_msec), or histograms per interval (--write_hist_log"
    " with --log_hist_msec)"
)


def _refuse_lat_line(file: Path) -> None:
    """Raise the error of the first line of ``file`` that is not a latency log line."""
    width = None
    for number, raw in enumerate(read_text(file), start=1):
        if not raw.strip():
            continue
        parts = [p.strip() for p in raw.split(",")]
        if width is None:
            width = len(parts)
            if not 4 <= width <= 7:
                raise bad(file, number, f"{width} fields; expected {_LAT_LINE}")
        elif len(parts) != width:
            raise bad(
                file,
                number,
                f"{len(parts)} fields, the first line has {width}; expected every line complete"
                " (is the file truncated?)",
            )
        for part in parts[:4]:
            if not _is_int(part):
                raise bad(
                    file, number, f"{part[:30]!r} is not a whole number; expected {_LAT_LINE}"
                )
    raise bad(file, None, f"not a latency log; expected {_LAT_LINE}")


def _chosen_lat_logs(logs: Sequence[_LatLog]) -> tuple[list[_LatLog], list[_LatLog]]:
    """The logs to import and the ones left out. fio's ``_clat``, ``_lat`` and ``_slat`` logs
    of one prefix describe the same I/Os: the completion latency (``_clat``) is taken, as
    for the JSON and the histogram logs; the total latency (``_lat``) when it is all there
    is. A submission latency alone is not the latency of an I/O: refused."""
    kinds: dict[tuple[Path, str], set[str]] = {}
    for log in logs:
        kinds.setdefault((log.file.parent, log.prefix), set()).add(log.kind)
    chosen: list[_LatLog] = []
    unused: list[_LatLog] = []
    for log in logs:
        have = kinds[(log.file.parent, log.prefix)]
        want = "clat" if "clat" in have else "lat" if "lat" in have else None
        if want is None:
            raise bad(
                log.file,
                None,
                "a submission latency log (_slat) without the completion latencies of its"
                f" I/Os; expected {log.prefix}_clat.N.log (or _lat) with it",
            )
        (chosen if log.kind == want else unused).append(log)
    if not any(len(log.time_ms) for log in chosen):
        raise bad(chosen[0].file, None, f"no lines; expected {_LAT_LINE}")
    return chosen, unused


#: the samples of latency logs without --sample-interval
DEFAULT_LAT_INTERVAL_S = 1.0


L = TypeVar("L", _HistLog, _LatLog)


# -- conditions, pairing --------------------------------------------------------------------------


def _labels(output: _Output, rule: ConditionRule) -> dict[int, str]:
    """Each job's condition (by its index): its name, or with ``--condition`` (or a name
    pattern) that label, followed by ``/name`` when the file holds several job names."""
    names = {job.name for job in output.jobs if job.directions}
    out = {}
    for job in output.jobs:
        if rule.explicit:
            base = rule.label(output.file)
            out[job.index] = base if len(names) <= 1 else f"{base}/{job.name}"
        else:
            out[job.index] = job.name
    return out


def _log_prefix(output: _Output, job: _Job, option: str = "write_hist_log") -> str | None:
    """The name fio gives the job's logs of ``option`` (``PREFIX_clat_hist.N.log`` for
    ``write_hist_log``, ``PREFIX_clat.N.log`` for ``write_lat_log``), or None when the job
    wrote none."""
    value = output.option(job, option)
    if value is None:
        return None
    text = str(value).strip()
    return Path(text).name if text else job.name


@dataclass(slots=True)
class _LogRun(Generic[L]):
    """The logs of one fio run and one condition, with that run's JSON if given."""

    label: str
    folder: Path
    prefix: str
    logs: list[L] = field(default_factory=list)
    output: _Output | None = None
    jobs: list[_Job] = field(default_factory=list)


def _log_runs(
    logs: Sequence[L], outputs: Sequence[_Output], rule: ConditionRule
) -> list[_LogRun[L]]:
    """Group the logs by run and condition: a log whose prefix a given JSON's job names (its
    ``write_hist_log``, or ``write_lat_log`` for latency logs) belongs to that job's run, else
    to the logs of its folder and prefix."""
    hist = all(isinstance(log, _HistLog) for log in logs)
    option, what, name = (
        ("write_hist_log", "histogram log", "_clat_hist.N.log")
        if hist
        else ("write_lat_log", "latency log", "_clat.N.log")
    )
    runs: dict[tuple[str, ...], _LogRun[L]] = {}
    for log in logs:
        found = []
        for output in outputs:
            labels = _labels(output, rule)
            jobs = [j for j in output.jobs if _log_prefix(output, j, option) == log.prefix]
            if jobs:
                found.append((output, labels, jobs))
        if len(found) > 1:
            near = [f for f in found if f[0].file.parent == log.file.parent]
            found = near if len(near) == 1 else found
        if len(found) > 1:
            raise bad(
                log.file,
                None,
                f"a {what} of jobs in {len(found)} JSON outputs"
                f" ({found[0][0].file.name}, {found[1][0].file.name}); expected each run's files"
                " (its JSON and its logs) in a folder of their own",
            )
        if found:
            output, labels, jobs = found[0]
            conditions = {labels[j.index] for j in jobs}
            if len(conditions) > 1:
                raise bad(
                    log.file,
                    None,
                    f"the log prefix {log.prefix!r} is shared by the jobs {sorted(conditions)} of"
                    f" {output.file.name}; expected one {option} name per job",
                )
            label = conditions.pop()
            key: tuple[str, ...] = ("json", str(output.file), label)
            run = runs.setdefault(
                key, _LogRun(label, log.file.parent, log.prefix, output=output, jobs=jobs)
            )
        else:
            label = rule.label(log.file) if rule.explicit else log.prefix
            key = ("log", str(log.file.parent), log.prefix, label)
            run = runs.setdefault(key, _LogRun(label, log.file.parent, log.prefix))
        run.logs.append(log)
    for output in outputs:
        labels = _labels(output, rule)
        logged = {r.label for r in runs.values() if r.output is output}
        if not logged:
            raise bad(
                output.file,
                None,
                f"no {what} among the files is of this run; import fio's JSON outputs"
                f" without logs and the {what}s (with their JSON) separately",
            )
        for job in output.jobs:
            if job.directions and labels[job.index] not in logged:
                prefix = _log_prefix(output, job, option) or job.name
                raise bad(
                    output.file,
                    job.line,
                    f"job {job.name!r} has no {what} among the files; expected"
                    f" {prefix}{name} with it (or import the JSON alone)",
                )
    return list(runs.values())


# -- the import -----------------------------------------------------------------------------------


def import_fio(
    store: Store,
    paths: Sequence[str | Path],
    *,
    conditions: ConditionRule | None = None,
    run_id: int | None = None,
    force: bool = False,
    name: str | None = None,
    sample_interval_s: float | None = None,
) -> int:
    """Import fio's JSON outputs, or its histogram logs (with their JSON), as a run of
    aggregates, or its latency logs (with their JSON) as a run of per-I/O transactions (or
    into ``run_id``); return its id.

    Parameters
    ----------
    conditions
        Where each job's condition comes from; default the job's name. With ``--condition``
        (or a file name pattern) and several job names in a file: ``LABEL/jobname``.
    sample_interval_s
        Latency logs only: the length of a sample, from the job's start (default
        :data:`DEFAULT_LAT_INTERVAL_S`).
    """
    rule = conditions or ConditionRule()
    files = input_files(paths)
    if sample_interval_s is not None and sample_interval_s <= 0:
        raise ImportError_("command line: --sample-interval must be longer than 0s")
    kinds = {f: _log_kind(f) for f in files}
    if {"hist", "lat"} <= set(kinds.values()):
        raise ImportError_(
            "command line: histogram logs and latency logs together; import each kind of log"
            " (with its JSON) as a run of its own"
        )
    outputs = [read_fio_json(f) for f in files if kinds[f] is None]
    if "lat" in kinds.values():
        chosen, unused = _chosen_lat_logs([read_lat_log(f) for f, k in kinds.items() if k])
        interval = sample_interval_s or DEFAULT_LAT_INTERVAL_S
        batch = _lat_batch(_log_runs(chosen, outputs, rule), unused, interval, name, files)
    elif sample_interval_s is not None:
        raise ImportError_(
            "command line: --sample-interval slices fio's latency logs (--write_lat_log); fio's"
            " JSON has no per-I/O times, and a histogram log's samples are its intervals"
            " (log_hist_msec)"
        )
    elif "hist" in kinds.values():
        logs = [read_hist_log(f) for f, k in kinds.items() if k]
        batch = _log_batch(_log_runs(logs, outputs, rule), name, files)
    else:
        batch = _json_batch(outputs, rule, name, files)
    return store.import_batch(batch, run_id=run_id, force=force)


@dataclass(slots=True)
class _Merged:
    """A direction of the jobs of one condition in one file, merged."""

    count: int
    latency: str
    min_ns: int
    max_ns: int
    sum_ns: float
    sum2_ns2: float
    percentiles: dict[float, int] | None
    bins: dict[int, int] | None
    facts: dict[str, Any]
    per_job: list[dict[str, Any]]


def _merge(parts: Sequence[_Direction]) -> _Merged:
    """Counts and sums add, extremes combine, bins add (one layout); fio's percentiles are
    taken as printed for one job and recomputed from the merged bins for several (as fio's
    ``group_reporting`` does), or left out when there are no bins."""
    count = sum(p.count for p in parts)
    sums = [p.mean_ns * p.count for p in parts]
    # fio's stddev is the sample standard deviation (n - 1).
    squares = [(p.count - 1) * p.stddev_ns**2 + p.count * p.mean_ns**2 for p in parts]
    bins: dict[int, int] | None = None
    if all(p.bins is not None for p in parts):
        bins = {}
        for p in parts:
            for index, c in (p.bins or {}).items():
                bins[index] = bins.get(index, 0) + c
    percentiles = parts[0].percentiles if len(parts) == 1 else None
    if len(parts) > 1 and bins and parts[0].percentiles is not None:
        percentiles = {p: fio_percentile(bins, p) for p in parts[0].percentiles}
    facts: dict[str, Any] = {}
    for key in ("io_bytes", "bw_bytes", "iops", "total_ios", "short_ios", "drop_ios"):
        values = [p.facts[key] for p in parts if key in p.facts]
        if values:
            facts[key] = sum(values)
    runtimes = [p.facts["runtime"] for p in parts if "runtime" in p.facts]
    if runtimes:
        facts["runtime_ms"] = max(runtimes)
    return _Merged(
        count=count,
        latency=parts[0].latency,
        min_ns=min(p.min_ns for p in parts),
        max_ns=max(p.max_ns for p in parts),
        sum_ns=sum(sums),
        sum2_ns2=sum(squares),
        percentiles=percentiles,
        bins=bins,
        facts=facts,
        per_job=[
            {
                "min_ns": p.min_ns,
                "max_ns": p.max_ns,
                "mean_ns": p.mean_ns,
                "stddev_ns": p.stddev_ns,
                "count": p.count,
                **({"percentiles_ns": _pct_keys(p.percentiles, 1)} if p.percentiles else {}),
                **p.facts,
            }
            for p in parts
        ],
    )


def _pct_keys(percentiles: dict[float, int], scale: float = 1e6) -> dict[str, float]:
    """fio's ``{percent: ns}`` as wannabet's ``{"p50": ms}`` (``scale`` 1: keep ns)."""
    return {f"p{p:g}": (v / scale if scale != 1 else v) for p, v in sorted(percentiles.items())}


def _windows(output: _Output) -> dict[int, tuple[int, int]]:
    """Each job's (start, end) in epoch ms: from ``job_start`` (fio 3.36 and later), else the
    run's end (the JSON's timestamp) going back through the groups (``stonewall``), each as
    long as its longest job."""
    groups = sorted({job.groupid for job in output.jobs})
    length = {g: max(j.runtime_ms for j in output.jobs if j.groupid == g) for g in groups}
    ends: dict[int, int] = {}
    end = output.end_ms
    for g in reversed(groups):
        ends[g] = end
        end -= length[g]
    out = {}
    for job in output.jobs:
        if job.start_ms is not None:
            out[job.index] = (job.start_ms, job.start_ms + job.runtime_ms)
        else:
            out[job.index] = (ends[job.groupid] - job.runtime_ms, ends[job.groupid])
    return out


def _json_batch(
    outputs: Sequence[_Output], rule: ConditionRule, name: str | None, files: Sequence[Path]
) -> ImportBatch:
    labels: list[str] = []
    types = [d for d in _DIRECTIONS if any(d in j.directions for o in outputs for j in o.jobs)]
    samples: list[ImportedSample] = []
    aggregates: list[dict[str, Any]] = []
    records: list[ImportedFile] = []
    documents = []
    for output in outputs:
        by_label: dict[str, list[_Job]] = {}
        job_labels = _labels(output, rule)
        for job in output.jobs:
            if job.directions:
                by_label.setdefault(job_labels[job.index], []).append(job)
        windows = _windows(output)
        for label, jobs in by_label.items():
            cid = label_index(labels, label)
            sample_id = len(samples)
            t0 = min(windows[j.index][0] for j in jobs)
            t1 = max(windows[j.index][1] for j in jobs)
            statuses: dict[tuple[int, str], int] = {}
            moments: dict[int, tuple[int, float, float, int, int]] = {}
            bins: dict[int, list[list[int]]] = {}
            iops = 0.0
            for direction in types:
                parts = [j.directions[direction] for j in jobs if direction in j.directions]
                if not parts:
                    continue
                merged = _merge(parts)
                t = types.index(direction)
                statuses[(t, "ok")] = merged.count
                moments[t] = (
                    merged.count,
                    merged.sum_ns / 1e6,
                    merged.sum2_ns2 / 1e12,
                    merged.min_ns,
                    merged.max_ns,
                )
                iops += float(merged.facts.get("iops", 0.0))
                row = _json_row(sample_id, cid, t, merged)
                if row["histogram"] is not None:
                    bins[t] = row["histogram"]["bins_ns"]
                aggregates.append(row)
            ok = sum(statuses.values())
            errors = sum(j.total_err or 0 for j in jobs)
            seconds = (t1 - t0) / 1000
            samples.append(
                ImportedSample(
                    sample_id,
                    cid,
                    t0 * 1_000_000,
                    max(t1, t0 + 1) * 1_000_000,
                    (ok + errors, ok, errors, ok / seconds if seconds > 0 else None),
                    stats={
                        "jobs": [j.name for j in jobs],
                        "fio_iops": iops,
                        "job_runtime_ms": max(j.runtime_ms for j in jobs),
                        "error": max((j.error for j in jobs), key=abs),
                        "total_err": errors if any(j.total_err is not None for j in jobs) else None,
                    },
                    statuses=statuses,
                    moments=moments,
                    bins=bins if len(bins) == len(moments) else None,
                )
            )
        meta = _output_meta(output, job_labels)
        documents.append({"file": str(output.file), **meta})
        records.append(ImportedFile(str(output.file), sha256(output.file), "fio-json", None, meta))
    return ImportBatch(
        name=name or files[0].stem,
        description="fio JSON output: aggregates per job and direction, no per-I/O data",
        source=", ".join(str(f) for f in files),
        settings={
            "format": "fio",
            "timed": True,
            "aggregates_only": True,
            "files": documents,
            "samples": "one per job name (condition) and fio run",
        },
        conditions=labels,
        transaction_types=types,
        samples=samples,
        files=records,
        aggregates=aggregates,
        environment=client_environment(),
        tool_version=tool_version(),
    )


def _json_row(sample_id: int, cid: int, txn_type: int, merged: _Merged) -> dict[str, Any]:
    extra: dict[str, Any] = {
        "latency": merged.latency,
        "jobs": len(merged.per_job),
        **merged.facts,
    }
    if len(merged.per_job) > 1:
        extra["per_job"] = merged.per_job
    else:
        extra.update({k: v for k, v in merged.per_job[0].items() if k.endswith("_ns")})
    if merged.percentiles is None and any("percentiles_ns" in p for p in merged.per_job):
        extra["percentiles_not_merged"] = (
            "fio's percentiles of several jobs cannot be combined without json+ bins; each"
            " job's are in per_job"
        )
    return {
        "sample_id": sample_id,
        "condition_id": cid,
        "txn_type": txn_type,
        "count": merged.count,
        "failed": 0,
        "lat_sum_ms": merged.sum_ns / 1e6,
        "lat_sum2_ms2": merged.sum2_ns2 / 1e12,
        "lat_min_ms": merged.min_ns / 1e6,
        "lat_max_ms": merged.max_ns / 1e6,
        "lat_mean_ms": merged.sum_ns / merged.count / 1e6,
        "percentiles": _pct_keys(merged.percentiles) if merged.percentiles else None,
        "histogram": {
            "bins_ns": bins_ns(merged.bins, max_ns=merged.max_ns),
            "layout": "fio",
        }
        if merged.bins
        else None,
        "extra": extra,
    }


def _output_meta(output: _Output, labels: dict[int, str]) -> dict[str, Any]:
    return {
        "fio_version": output.version,
        "time": output.time,
        "end_ms": output.end_ms,
        "lines_before_json": output.skipped,
        "global_options": output.global_options,
        "jobs": [
            {
                "jobname": job.name,
                "condition": labels[job.index],
                "groupid": job.groupid,
                "error": job.error,
                "job_runtime_ms": job.runtime_ms,
                "job_start_ms": job.start_ms,
                "options": job.options,
                "directions": {
                    d: {"count": v.count, "latency": v.latency, **v.facts}
                    for d, v in job.directions.items()
                },
            }
            for job in output.jobs
        ],
        "disk_util": output.disk_util,
    }


def _interval_ms(run: _LogRun[_HistLog]) -> float:
    """``log_hist_msec``: from the run's JSON, else estimated from the times of the lines.

    fio starts a direction's first interval at its first completion ``f`` and moves each
    interval's start by exactly ``log_hist_msec`` (``hist_last``), writing the k-th line at the
    first completion after ``f + k·msec``. So ``msec ≤ t_k / k`` for every line (with times
    since the job started), and the steps between lines are ``msec`` give or take how late
    each line came. The estimate is the median step, to the ms, but no more than the smallest
    ``t_k / k``: exact on long logs, within a ms or so on a few lines (a few ms when a loaded
    machine delays fio's lines).
    """
    if run.output is not None and run.jobs:
        value = run.output.option(run.jobs[0], "log_hist_msec")
        try:
            msec = float(str(value))
        except ValueError:
            msec = 0.0
        if msec > 0:
            return msec
    bounds: list[float] = []
    steps: list[int] = []
    for log in run.logs:
        for direction in _LOG_DIRECTIONS.values():
            times = [x.time_ms for x in log.lines if x.direction == direction]
            steps.extend(b - a for a, b in itertools.pairwise(times) if b > a)
            k, previous = 0, -1
            for t in times:
                # A time that goes back starts another thread's lines (per_job_logs=0).
                k = 1 if t < previous else k + 1
                previous = t
                if t < _EPOCH_MS:
                    bounds.append(t / k)
    estimate = round(statistics.median(steps)) if steps else None
    if bounds:
        bound = math.floor(min(bounds))
        estimate = bound if estimate is None else min(estimate, bound)
    return float(max(1, estimate or 1))


def _log_batch(
    runs: Sequence[_LogRun[_HistLog]], name: str | None, files: Sequence[Path]
) -> ImportBatch:
    labels: list[str] = []
    types = [
        d
        for d in _DIRECTIONS
        if any(x.direction == d for r in runs for log in r.logs for x in log.lines)
    ]
    samples: list[ImportedSample] = []
    aggregates: list[dict[str, Any]] = []
    records: list[ImportedFile] = []
    documents = []
    for run in runs:
        cid = label_index(labels, run.label)
        msec = _interval_ms(run)
        strides = {log.stride for log in run.logs}
        if len(strides) > 1:
            raise bad(
                run.logs[-1].file,
                None,
                f"{PLAT_NR // run.logs[-1].stride} buckets, {run.logs[0].file.name} of the same"
                f" run has {PLAT_NR // run.logs[0].stride}; expected one log_hist_coarseness",
            )
        stride = strides.pop()
        # The times are ms since the job started (or, with log_unix_epoch, since 1970). A line
        # comes a little after the end of its interval: with the job's start known, interval
        # k is the k-th multiple of msec before the line; else the nearest one.
        first = min(x.time_ms for log in run.logs for x in log.lines)
        epoch = first >= _EPOCH_MS
        base_ms = 0
        if run.output is not None:
            windows = _windows(run.output)
            base_ms = min(windows[j.index][0] for j in run.jobs)
        starts = [j.start_ms for j in run.jobs if j.start_ms is not None]
        exact = not epoch or (bool(starts) and len(starts) == len(run.jobs))
        origin = (min(starts) if exact else first - msec) if epoch else 0
        nearest = math.floor if exact else round
        ticks: dict[int, dict[str, Any]] = {}
        for log in run.logs:
            for x in log.lines:
                tick = max(1, int(nearest((x.time_ms - origin) / msec)))
                slot = ticks.setdefault(tick, {"end": x.time_ms, "by": {}, "lines": 0})
                slot["end"] = max(slot["end"], x.time_ms)
                slot["lines"] += 1
                counts = slot["by"].setdefault(x.direction, {})
                for index, c in x.counts.items():
                    counts[index] = counts.get(index, 0) + c
        shift = 0 if epoch else base_ms
        previous = origin if epoch else 0
        logged: dict[str, int] = {}
        max_ns = _json_max(run)
        for tick in sorted(ticks):
            slot = ticks[tick]
            sample_id = len(samples)
            statuses: dict[tuple[int, str], int] = {}
            bins: dict[int, list[list[int]]] = {}
            for direction in types:
                counts = slot["by"].get(direction)
                if not counts:
                    continue
                t = types.index(direction)
                row = _log_row(sample_id, cid, t, counts, stride, max_ns.get(direction))
                statuses[(t, "ok")] = row["count"]
                bins[t] = row["histogram"]["bins_ns"]
                logged[direction] = logged.get(direction, 0) + row["count"]
                row["extra"] = {"interval_ms": msec, "tick": tick, "lines": slot["lines"]}
                aggregates.append(row)
            ok = sum(statuses.values())
            start_ms, end_ms = previous + shift, slot["end"] + shift
            seconds = (end_ms - start_ms) / 1000
            samples.append(
                ImportedSample(
                    sample_id,
                    cid,
                    int(start_ms * 1_000_000),
                    max(int(end_ms * 1_000_000), int(start_ms * 1_000_000) + 1),
                    (ok, ok, 0, ok / seconds if seconds > 0 else None),
                    stats={"interval_ms": msec, "tick": tick},
                    statuses=statuses,
                    bins=bins,
                )
            )
            previous = slot["end"]
        unlogged = _unlogged(run, logged)
        meta: dict[str, Any] = {
            "condition": run.label,
            "prefix": run.prefix,
            "interval_ms": msec,
            "buckets": PLAT_NR // stride,
            "logs": [
                {"file": str(log.file), "thread": log.thread, "lines": len(log.lines)}
                for log in run.logs
            ],
            "logged": logged,
            "unlogged": unlogged,
            "json": str(run.output.file) if run.output is not None else None,
        }
        documents.append(meta)
        for log in run.logs:
            records.append(
                ImportedFile(
                    str(log.file),
                    sha256(log.file),
                    "fio-hist",
                    run.label,
                    {"prefix": log.prefix, "thread": log.thread, "lines": len(log.lines)},
                )
            )
    _add_outputs(runs, documents, records)
    return ImportBatch(
        name=name or (runs[0].prefix if runs else files[0].stem),
        description="fio histogram logs (log_hist_msec): aggregates per interval and direction",
        source=", ".join(str(f) for f in files),
        settings={
            "format": "fio-hist",
            "timed": True,
            "aggregates_only": True,
            "files": documents,
            "samples": "one per histogram log interval (log_hist_msec)",
        },
        conditions=labels,
        transaction_types=types,
        samples=samples,
        files=records,
        aggregates=aggregates,
        environment=client_environment(),
        tool_version=tool_version(),
    )


def _lat_batch(
    runs: Sequence[_LogRun[_LatLog]],
    unused: Sequence[_LatLog],
    interval_s: float,
    name: str | None,
    files: Sequence[Path],
) -> ImportBatch:
    """Latency logs as transactions: each line one I/O (ended at its time, started its
    latency before), each direction a type, each thread a session; each run's I/Os sliced
    by completion time into samples of ``interval_s`` from the job's start."""
    labels: list[str] = []
    seen = {int(c) for r in runs for log in r.logs for c in np.unique(log.direction)}
    types = [d for code, d in _LOG_DIRECTIONS.items() if code in seen]
    code_type = np.full(3, -1, dtype=np.int16)
    for code, direction in _LOG_DIRECTIONS.items():
        if direction in types:
            code_type[code] = types.index(direction)
    step_ns = max(1, round(interval_s * 1e9))
    samples: list[ImportedSample] = []
    parts: list[pa.Table] = []
    records: list[ImportedFile] = []
    documents = []
    for run in runs:
        cid = label_index(labels, run.label)
        if run.output is not None:
            for job in run.jobs:
                value = str(run.output.option(job, "log_avg_msec") or "0").strip()
                if value not in ("", "0"):
                    raise bad(
                        run.output.file,
                        job.line,
                        f"job {job.name!r} has log_avg_msec={value}: its latency logs hold"
                        f" {_WINDOWED.split(': ', 1)[1]}",
                    )
        time_ms = np.concatenate([log.time_ms for log in run.logs])
        value_ns = np.concatenate([log.value_ns for log in run.logs])
        txn_type = code_type[np.concatenate([log.direction for log in run.logs])]
        session = np.concatenate(
            [np.full(len(log.time_ms), (log.thread or 1) - 1, dtype=np.int32) for log in run.logs]
        )
        if not len(time_ms):
            continue
        # The times are ms since the job started (or, with log_unix_epoch, since 1970): placed
        # after the job's start when the JSON is given, as the histogram logs are.
        epoch = int(time_ms.min()) >= _EPOCH_MS
        starts = [j.start_ms for j in run.jobs if j.start_ms is not None]
        if epoch:
            shift = 0
            origin = min(starts) if starts and len(starts) == len(run.jobs) else int(time_ms.min())
        else:
            shift = min(_windows(run.output)[j.index][0] for j in run.jobs) if run.output else 0
            origin = 0
        end_ns = (time_ms + shift) * 1_000_000
        start_ns = end_ns - value_ns
        slot = ((time_ms - origin) * 1_000_000) // step_ns
        slot = np.maximum(slot, 0)
        # fio truncates a completion's time to the ms: the last one may be a ms later.
        last_ns = int(end_ns.max()) + 1_000_000
        base = (origin + shift) * 1_000_000
        sample_of = {}
        for k in np.unique(slot).tolist():
            sample_of[k] = len(samples)
            t0 = base + k * step_ns
            t1 = min(t0 + step_ns, last_ns)
            samples.append(ImportedSample(len(samples), cid, t0, max(t1, t0 + 1)))
        lookup = np.vectorize(sample_of.__getitem__, otypes=[np.int32])
        order = np.lexsort((start_ns, slot))
        parts.append(
            pa.table(
                {
                    "sample_id": pa.array(lookup(slot[order]), pa.int32()),
                    "session": pa.array(session[order], pa.int32()),
                    "txn_type": pa.array(txn_type[order], pa.int16()),
                    "intended_start_ns": pa.array(start_ns[order], pa.int64()),
                    "start_ns": pa.array(start_ns[order], pa.int64()),
                    "end_ns": pa.array(end_ns[order], pa.int64()),
                    "status": pa.array(np.full(len(order), "ok", dtype=object), pa.string()),
                    "error_code": pa.nulls(len(order), pa.string()),
                    "retries": pa.array(np.zeros(len(order), dtype=np.int32), pa.int32()),
                    "warmup": pa.array(np.zeros(len(order), dtype=bool), pa.bool_()),
                }
            )
        )
        logged = {
            direction: int((np.concatenate([log.direction for log in run.logs]) == code).sum())
            for code, direction in _LOG_DIRECTIONS.items()
        }
        logged = {k: v for k, v in logged.items() if v}
        unlogged = _unlogged(run, logged)
        if unlogged and any(unlogged.values()):
            # fio logs every I/O it times; fewer lines than the JSON counts is another run's
            # logs, or a log cut short.
            direction = next(d for d, v in unlogged.items() if v)
            raise bad(
                run.logs[0].file,
                None,
                f"the logs of {run.label!r} hold {logged.get(direction, 0)} {direction} I/Os,"
                f" {run.output.file.name if run.output else 'the JSON'} reports"
                f" {logged.get(direction, 0) + unlogged[direction]}; expected the complete logs"
                " of the run that wrote the JSON",
            )
        meta: dict[str, Any] = {
            "condition": run.label,
            "prefix": run.prefix,
            "latency": run.logs[0].kind,
            "logs": [
                {"file": str(log.file), "thread": log.thread, "lines": len(log.time_ms)}
                for log in run.logs
            ],
            "logged": logged,
            "json": str(run.output.file) if run.output is not None else None,
        }
        documents.append(meta)
        for log in run.logs:
            records.append(
                ImportedFile(
                    str(log.file),
                    sha256(log.file),
                    "fio-lat",
                    run.label,
                    {
                        "prefix": log.prefix,
                        "kind": log.kind,
                        "thread": log.thread,
                        "lines": len(log.time_ms),
                    },
                )
            )
    for log in unused:
        records.append(
            ImportedFile(
                str(log.file),
                sha256(log.file),
                "fio-lat",
                None,
                {"prefix": log.prefix, "kind": log.kind, "thread": log.thread, "unused": True},
            )
        )
    _add_outputs(runs, documents, records)
    return ImportBatch(
        name=name or (runs[0].prefix if runs else files[0].stem),
        description="fio latency logs (write_lat_log): one transaction per I/O",
        source=", ".join(str(f) for f in files),
        settings={
            "format": "fio-lat",
            "timed": True,
            "files": documents,
            "unused": [str(log.file) for log in unused],
            "samples": f"every {interval_s:g}s of completion time from the job's start",
            "times": "fio logs each I/O's completion to the ms; its start is its latency"
            " (ns) before",
        },
        conditions=labels,
        transaction_types=types,
        samples=samples,
        files=records,
        transactions=pa.concat_tables(parts),
        environment=client_environment(),
        tool_version=tool_version(),
    )


def _add_outputs(
    runs: Sequence[_LogRun[Any]], documents: list[dict[str, Any]], records: list[ImportedFile]
) -> None:
    """The JSON outputs the logs were paired with, once each, as documents of the batch and
    records of the files imported."""
    outputs = {id(r.output): r.output for r in runs if r.output is not None}
    for output in outputs.values():
        meta = _output_meta(output, _labels_of(runs, output))
        documents.append({"file": str(output.file), **meta})
        records.append(
            ImportedFile(str(output.file), sha256(output.file), "fio-summary", None, meta)
        )


def _labels_of(runs: Sequence[_LogRun[Any]], output: _Output) -> dict[int, str]:
    out = {}
    for run in runs:
        if run.output is output:
            out.update({job.index: run.label for job in run.jobs})
    return {job.index: out.get(job.index, job.name) for job in output.jobs}


def _json_max(run: _LogRun[_HistLog]) -> dict[str, int]:
    """The largest latency of each direction in the run's JSON (the last bucket's top)."""
    out: dict[str, int] = {}
    for job in run.jobs:
        for direction, d in job.directions.items():
            if d.latency == "clat":
                out[direction] = max(out.get(direction, 0), d.max_ns)
    return out


def _unlogged(run: _LogRun[L], logged: dict[str, int]) -> dict[str, int] | None:
    """Per direction, the completions the JSON counts and the logs do not (fio does not write
    the last, partial interval); None without the JSON."""
    if run.output is None:
        return None
    out = {}
    for direction in sorted({d for j in run.jobs for d in j.directions} | set(logged)):
        if direction not in _LOG_DIRECTIONS.values():
            continue
        # The logs count completions, as clat_ns's N does (and lat_ns's: the same I/Os).
        total = sum(j.directions[direction].count for j in run.jobs if direction in j.directions)
        if logged.get(direction, 0) > total:
            raise bad(
                run.logs[0].file,
                None,
                f"the logs of {run.label!r} hold {logged.get(direction, 0)} {direction}"
                f" completions, {run.output.file.name} reports {total}; expected the logs of the"
                " run that wrote the JSON",
            )
        out[direction] = total - logged.get(direction, 0)
    return out


def _log_row(
    sample_id: int,
    cid: int,
    txn_type: int,
    counts: dict[int, int],
    stride: int,
    max_ns: int | None,
) -> dict[str, Any]:
    """One interval's histogram of one direction: count, extremes and mean of its buckets,
    percentiles (the midpoint of the bucket holding each), the buckets as bins."""
    bins = bins_ns(counts, stride, max_ns)
    lo, hi, c = (np.asarray(col, dtype=np.uint64) for col in zip(*bins, strict=True))
    h = histogram.Histogram(lo, hi, c)
    n = int(c.sum())
    mean = float(np.dot(histogram.midpoints(h), c.astype(np.float64)) / n)
    qs = histogram.quantiles(h, [p / 100 for p in _LOG_PERCENTILES])
    return {
        "sample_id": sample_id,
        "condition_id": cid,
        "txn_type": txn_type,
        "count": n,
        "failed": 0,
        "lat_min_ms": int(lo[0]) / 1e6,
        "lat_max_ms": int(hi[-1]) / 1e6,
        "lat_mean_ms": mean / 1e6,
        "percentiles": {
            f"p{p:g}": float(q) / 1e6 for p, q in zip(_LOG_PERCENTILES, qs, strict=True)
        },
        "histogram": {"bins_ns": bins, "layout": "fio", "buckets": PLAT_NR // stride},
    }


__all__ = [
    "PLAT_NR",
    "bins_ns",
    "bucket_edges",
    "bucket_index",
    "bucket_value",
    "fio_percentile",
    "import_fio",
    "read_fio_json",
    "read_hist_log",
]
