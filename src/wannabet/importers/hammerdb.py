"""HammerDB transaction-timing reports (xtprof) → an imported run of aggregates.

With the ``xtprof`` time profiler, HammerDB appends to ``hdbxtprofile.log`` (or
``hdbxtprofile_GUID.log``) one report per run (``modules/xtprof-1.0.tm``, ``xttimeproflog``),
with tabs between the fields::

    PostgreSQL Hammerdb Time Profile Report @ Wed Jun 24 17:43:51 BST 2026
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    >>>>> VIRTUAL USER 2 : ELAPSED TIME : 419775ms
    >>>>> PROC: NEWORD
    CALLS: 656700  MIN: 0.164ms  AVG: 0.295ms  MAX: 12.313ms  TOTAL: 193566.895ms
    P99: 0.529ms  P95: 0.387ms  P75: 0.321ms  P50: 0.286ms  P25: 0.253ms  SD: 0.148ms  RATIO: 46.1%
    ...
    >>>>> SUMMARY OF 4 ACTIVE VIRTUAL USERS : MEDIAN ELAPSED TIME : 419051ms
    >>>>> PROC: NEWORD
    ...

HammerDB 4.1 to 5.0 wrote ``P99 P95 P50 SD RATIO`` with the standard deviation in clock clicks
(no unit); 6.0 adds ``P75`` and ``P25`` and gives ``SD`` in ms. Both are read.

Each report is one sample and its ``SUMMARY`` block one row of ``aggregates`` per stored
procedure (count, minimum, mean, maximum, total time and the percentiles); the per-virtual-user
blocks are kept in the row's ``extra``. HammerDB keeps no per-transaction data, and its
percentiles (from 6.0, of a reservoir sample of ``xt_reservoir`` calls) are stored as printed,
never combined. A sample spans the median elapsed time of the virtual users (ramp-up
included, as the counts are) and its throughput is the procedures' calls per second.

The ``TEST RESULT : System achieved N NOPM from M DB TPM`` line of HammerDB's output, when
given (in the same file or another one of the same condition, in run order), is stored with
its report's sample.

References
----------
HammerDB source: ``modules/xtprof-1.0.tm`` (report layout), ``modules/tpcccommon-1.0.tm``
(``testresult``); HammerDB documentation, "Time Profiling".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wannabet.environment import client_environment
from wannabet.errors import ImportError_
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

_NUM = r"(-?[0-9]+(?:\.[0-9]+)?)"
_HEADER = re.compile(r"^(?P<db>.*?)\s*ham+erdb time profile report @ (?P<when>.+)$", re.I)
_SEPARATOR = re.compile(r"^\+(?:-\+)+$")
_VU = re.compile(rf"^>>>>> VIRTUAL USER (\d+) : ELAPSED TIME : {_NUM}ms$")
_SUMMARY = re.compile(
    rf"^>>>>> SUMMARY OF (\d+) ACTIVE VIRTUAL USERS : MEDIAN ELAPSED TIME : {_NUM}ms$"
)
_PROC = re.compile(r"^>>>>> PROC: (\S+)$")
_VALUE = re.compile(rf"^{_NUM}(ms|%)?$")
_RESULT = (
    re.compile(r"TEST RESULT : System achieved (\d+) NOPM from (\d+) (.+?) TPM\s*$"),
    re.compile(r"TEST RESULT : System achieved (\d+) (.+?) TPM at (\d+) NOPM\s*$"),
)
_CALLS_FIELDS = ("CALLS", "MIN", "AVG", "MAX", "TOTAL")
_CALLS_LINE = "'CALLS: N<tab>MIN: Xms<tab>AVG: Xms<tab>MAX: Xms<tab>TOTAL: Xms'"
_PCT_LINE = (
    "'P99: Xms<tab>P95: Xms<tab>[P75: Xms<tab>]P50: Xms<tab>[P25: Xms<tab>]SD: X<tab>RATIO: X%'"
)


@dataclass(slots=True)
class _Block:
    """One virtual user's or the summary's figures, per procedure."""

    who: str  # "summary" or the virtual user's number
    elapsed_ms: float
    users: int | None = None
    procs: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(slots=True)
class _Report:
    file: Path
    line: int
    database: str
    when: str
    blocks: list[_Block] = field(default_factory=list)
    result: dict[str, Any] | None = None

    @property
    def summary(self) -> _Block | None:
        return next((b for b in self.blocks if b.who == "summary"), None)


@dataclass(slots=True)
class _Parsed:
    reports: list[_Report]
    results: list[tuple[dict[str, Any], int]]


def _result(line: str) -> dict[str, Any] | None:
    m = _RESULT[0].search(line)
    if m:
        return {"nopm": int(m.group(1)), "tpm": int(m.group(2)), "database": m.group(3)}
    m = _RESULT[1].search(line)
    if m:
        return {"nopm": int(m.group(3)), "tpm": int(m.group(1)), "database": m.group(2)}
    return None


def _fields(file: Path, number: int, line: str, expected: str) -> dict[str, tuple[float, str]]:
    """``KEY: VALUE[unit]`` pairs separated by tabs (or spaces)."""
    out: dict[str, tuple[float, str]] = {}
    position = 0
    for m in re.finditer(r"\s*([A-Z][A-Z0-9]*):\s*(\S+)\s*", line):
        if m.start() != position:
            break
        position = m.end()
        value = _VALUE.match(m.group(2))
        if value is None:
            raise bad(
                file, number, f"{m.group(1)} {m.group(2)!r}; expected a number (ms) in {expected}"
            )
        out[m.group(1)] = (float(value.group(1)), value.group(2) or "")
    if position != len(line):
        raise bad(file, number, f"{line[position:][:40]!r}; expected {expected}")
    return out


def read_hammerdb(file: Path) -> _Parsed:
    """The xtprof reports and ``TEST RESULT`` lines of one file, checked."""
    lines = read_text(file)
    reports: list[_Report] = []
    results: list[tuple[dict[str, Any], int]] = []
    report: _Report | None = None
    block: _Block | None = None
    proc: str | None = None  # a PROC line whose figures are not complete yet
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        found = _result(line)
        if found is not None:
            results.append((found, number))
            continue
        if m := _HEADER.match(line):
            _close(file, report, block, proc)
            report = _Report(file, number, m.group("db").strip(), m.group("when").strip())
            reports.append(report)
            block, proc = None, None
            continue
        if report is None:
            # HammerDB's own chatter around a report (a concatenated log): not ours.
            if line.startswith(">>>>>") or line.startswith(("CALLS:", "P99:")):
                raise bad(
                    file,
                    number,
                    "report lines before a report header; expected 'DB Hammerdb Time Profile"
                    " Report @ DATE' first",
                )
            continue
        if _SEPARATOR.match(line):
            continue
        if (m := _VU.match(line)) or (m := _SUMMARY.match(line)):
            if proc is not None:
                raise bad(file, number, f"PROC {proc} has no figures; expected {_CALLS_LINE}")
            if m.re is _VU:
                block = _Block(m.group(1), float(m.group(2)))
            else:
                block = _Block("summary", float(m.group(2)), users=int(m.group(1)))
            report.blocks.append(block)
            continue
        if m := _PROC.match(line):
            if block is None:
                raise bad(
                    file, number, "a PROC before any '>>>>> VIRTUAL USER' or '>>>>> SUMMARY' line"
                )
            if proc is not None:
                raise bad(file, number, f"PROC {proc} has no figures; expected {_CALLS_LINE}")
            proc = m.group(1)
            if proc in block.procs:
                raise bad(file, number, f"PROC {proc} a second time in the same block")
            block.procs[proc] = {"line": number}
            continue
        if line.startswith("CALLS:") or line.startswith("P99:"):
            first = line.startswith("CALLS:")
            expected = _CALLS_LINE if first else _PCT_LINE
            if block is None or proc is None:
                raise bad(file, number, "figures without a '>>>>> PROC: NAME' line before them")
            figures = block.procs[proc]
            if first == ("calls" in figures):
                raise bad(
                    file, number, f"expected {_PCT_LINE if 'calls' in figures else _CALLS_LINE}"
                )
            values = _fields(file, number, line, expected)
            need = _CALLS_FIELDS if first else ("P99", "P95", "P50", "SD", "RATIO")
            missing = [k for k in need if k not in values]
            if missing:
                raise bad(file, number, f"no {', '.join(missing)}; expected {expected}")
            if first:
                calls = values["CALLS"][0]
                if calls < 0 or calls != int(calls):
                    raise bad(file, number, f"CALLS {calls:g}; expected a whole number ≥ 0")
                figures.update(
                    calls=int(calls),
                    min_ms=values["MIN"][0],
                    avg_ms=values["AVG"][0],
                    max_ms=values["MAX"][0],
                    total_ms=values["TOTAL"][0],
                )
            else:
                figures["percentiles"] = {
                    k.lower(): values[k][0]
                    for k in ("P25", "P50", "P75", "P95", "P99")
                    if k in values
                }
                sd, unit = values["SD"]
                figures["sd_ms" if unit == "ms" else "sd_clicks"] = sd
                figures["ratio_pct"] = values["RATIO"][0]
                proc = None
            continue
        summary = report.summary
        if summary is not None and proc is None and summary.procs:
            # The report is complete: what follows is someone else's text.
            _close(file, report, block, proc)
            report, block = None, None
            continue
        raise bad(
            file,
            number,
            f"{line[:60]!r}; expected a HammerDB xtprof report line ('>>>>> PROC: NAME',"
            f" {_CALLS_LINE} or {_PCT_LINE})",
        )
    _close(file, report, block, proc)
    if not reports and not results:
        raise bad(
            file,
            None,
            "no 'Hammerdb Time Profile Report' and no 'TEST RESULT' line; expected HammerDB's"
            " hdbxtprofile.log (xtprof) or its output",
        )
    return _Parsed(reports, results)


def _close(file: Path, report: _Report | None, block: _Block | None, proc: str | None) -> None:
    if report is None:
        return
    if proc is not None and block is not None:
        line = block.procs[proc]["line"]
        expected = _PCT_LINE if "calls" in block.procs[proc] else _CALLS_LINE
        raise bad(file, line, f"PROC {proc} ends before its figures; expected {expected}")
    summary = report.summary
    if summary is None or not summary.procs:
        raise bad(
            file,
            report.line,
            "this report has no '>>>>> SUMMARY OF N ACTIVE VIRTUAL USERS' block with"
            " procedures; expected HammerDB's complete xtprof report",
        )


def _epoch_ns(when: str) -> int | None:
    """HammerDB's ``clock format`` time (``Wed Jun 24 17:43:51 BST 2026``), read as UTC: the
    zone name cannot be resolved, and only the order of the reports matters."""
    parts = when.split()
    if len(parts) == 6:
        parts = parts[:4] + parts[5:]
    try:
        parsed = datetime.strptime(" ".join(parts), "%a %b %d %H:%M:%S %Y")
    except ValueError:
        return None
    return int(parsed.replace(tzinfo=UTC).timestamp()) * 1_000_000_000


def import_hammerdb(
    store: Store,
    paths: Sequence[str | Path],
    *,
    conditions: ConditionRule | None = None,
    run_id: int | None = None,
    force: bool = False,
    name: str | None = None,
) -> int:
    """Import HammerDB xtprof reports as a run of aggregates (or into ``run_id``)."""
    rule = conditions or ConditionRule()
    files = input_files(paths)
    labels: list[str] = []
    parsed: list[tuple[Path, str, _Parsed]] = []
    for file in files:
        doc = read_hammerdb(file)
        label = rule.label(file)
        label_index(labels, label)
        parsed.append((file, label, doc))
    _attach_results(parsed)
    types: list[str] = []
    samples: list[ImportedSample] = []
    aggregates: list[dict[str, Any]] = []
    records = []
    documents = []
    for file, label, doc in parsed:
        cid = labels.index(label)
        for report in doc.reports:
            summary = report.summary
            assert summary is not None
            for proc in summary.procs:
                if proc not in types:
                    types.append(proc)
            sample_id = len(samples)
            calls = sum(p["calls"] for p in summary.procs.values())
            seconds = summary.elapsed_ms / 1000
            end = _epoch_ns(report.when) or int(summary.elapsed_ms * 1e6) * (sample_id + 1)
            stats: dict[str, Any] = {
                "virtual_users": summary.users,
                "median_elapsed_ms": summary.elapsed_ms,
                "report_time": report.when,
                "database": report.database,
            }
            if report.result is not None:
                stats.update(nopm=report.result["nopm"], tpm=report.result["tpm"])
            samples.append(
                ImportedSample(
                    sample_id,
                    cid,
                    end - int(summary.elapsed_ms * 1e6),
                    end,
                    (calls, calls, 0, calls / seconds if seconds > 0 else None),
                    stats=stats,
                    # xtprof times every call of a procedure, whatever its outcome.
                    statuses={(types.index(p), "ok"): f["calls"] for p, f in summary.procs.items()},
                )
            )
            for proc, figures in summary.procs.items():
                aggregates.append(_row(sample_id, cid, types.index(proc), proc, figures, report))
        meta = {
            "reports": [
                {
                    "line": r.line,
                    "database": r.database,
                    "time": r.when,
                    "virtual_users": [b.who for b in r.blocks if b.who != "summary"],
                    "result": r.result,
                }
                for r in doc.reports
            ],
            "results": [r for r, _ in doc.results],
        }
        documents.append({"file": str(file), "condition": label, **meta})
        fmt = "hammerdb" if doc.reports else "hammerdb-summary"
        records.append(ImportedFile(str(file), sha256(file), fmt, label, meta))
    if not samples:
        raise ImportError_(
            f"{files[0]}: TEST RESULT lines but no xtprof report; expected HammerDB's"
            " hdbxtprofile.log with them"
        )
    batch = ImportBatch(
        name=name or files[0].stem,
        description="HammerDB xtprof time profile: aggregates only, no per-transaction data",
        source=", ".join(str(f) for f in files),
        settings={
            "format": "hammerdb",
            "timed": True,
            "aggregates_only": True,
            "files": documents,
            "samples": "one per xtprof report (one HammerDB run)",
        },
        conditions=labels,
        transaction_types=types,
        samples=samples,
        files=records,
        aggregates=aggregates,
        environment=client_environment() | _server(parsed),
        tool_version=tool_version(),
    )
    return store.import_batch(batch, run_id=run_id, force=force)


def _row(
    sample_id: int, cid: int, txn_type: int, proc: str, figures: dict[str, Any], report: _Report
) -> dict[str, Any]:
    users = []
    for block in report.blocks:
        if block.who == "summary" or proc not in block.procs:
            continue
        f = block.procs[proc]
        users.append(
            {
                "virtual_user": int(block.who),
                "elapsed_ms": block.elapsed_ms,
                **{k: v for k, v in f.items() if k != "line"},
            }
        )
    extra: dict[str, Any] = {
        k: figures[k] for k in ("sd_ms", "sd_clicks", "ratio_pct", "total_ms") if k in figures
    }
    extra["virtual_users"] = users
    extra["percentiles_from"] = (
        "the calls xtprof kept per virtual user (from HammerDB 6.0: a reservoir of xt_reservoir)"
    )
    return {
        "sample_id": sample_id,
        "condition_id": cid,
        "txn_type": txn_type,
        "count": figures["calls"],
        "failed": 0,
        "lat_sum_ms": figures["total_ms"],
        "lat_min_ms": figures["min_ms"],
        "lat_mean_ms": figures["avg_ms"],
        "lat_max_ms": figures["max_ms"],
        "percentiles": figures.get("percentiles") or None,
        "extra": extra,
    }


def _attach_results(parsed: Sequence[tuple[Path, str, _Parsed]]) -> None:
    """Give each report its ``TEST RESULT``: the ones in its own file in order, then those of
    files without reports (HammerDB's output) of the same condition, in order."""
    spare: dict[str, list[tuple[dict[str, Any], Path, int]]] = {}
    waiting: dict[str, list[_Report]] = {}
    for file, label, doc in parsed:
        if doc.reports and doc.results:
            if len(doc.results) != len(doc.reports):
                raise bad(
                    file,
                    doc.results[0][1],
                    f"{len(doc.results)} TEST RESULT line(s) for {len(doc.reports)} report(s);"
                    " expected one per report, in the same order",
                )
            for report, (result, _) in zip(doc.reports, doc.results, strict=True):
                report.result = result
        elif doc.reports:
            waiting.setdefault(label, []).extend(doc.reports)
        else:
            spare.setdefault(label, []).extend((r, file, n) for r, n in doc.results)
    for label, results in spare.items():
        reports = waiting.get(label, [])
        if len(results) != len(reports):
            _, file, line = results[0]
            raise bad(
                file,
                line,
                f"{len(results)} TEST RESULT line(s) for {len(reports)} report(s) of condition"
                f" {label!r} without one; expected one per report, in the same order",
            )
        for report, (result, _, _) in zip(reports, results, strict=True):
            report.result = result


def _server(parsed: Sequence[tuple[Path, str, _Parsed]]) -> dict[str, Any]:
    names = {r.database for _, _, doc in parsed for r in doc.reports if r.database}
    return {"server": next(iter(names))} if len(names) == 1 else {}
