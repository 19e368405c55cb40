"""BenchBase results → an imported run.

BenchBase (``cmu-db/benchbase``, formerly OLTPBench) writes, per run, ``NAME.raw.csv`` with one
line per measured request (``ResultWriter.writeRaw``), under the header :data:`RAW_HEADER`
(``Transaction Type Index,Transaction Name,Start Time (microseconds),Latency (microseconds),``
``Worker Id (start number),Phase Id (index in config file)``, one line)::

    4,DeleteEmployee,1722222636.414196,6786,0,1

The "Start Time (microseconds)" column holds, despite its header, epoch *seconds* with six
decimals (``String.format("%10.6f", startNs / 1e9 - offset)``); the latency is in whole µs
(``(end − start + 500) / 1000``). Each line becomes a transaction: the worker is the session,
the name the transaction type. BenchBase records a line for every request measured in the
``MEASURE`` state whatever its outcome (``Worker.run`` calls ``addLatency`` after ``doWork``
returns, successful, aborted or failed), and has no status column: every line is stored ``ok``.

``NAME.summary.json`` (``ResultWriter.writeSummary``) is optional. Its figures are checked
against the raw file, exactly as BenchBase computed them (``DistributionStatistics``: count,
minimum, maximum, the mean truncated to a whole µs, and the percentiles ``sorted[int(q·n)]``),
and it is stored with the run; its DBMS type and version become the run's server environment.
``NAME.params.json`` (the DBMS parameters BenchBase collected) is stored as the server's
settings. Companions pair with their raw file by name.

Samples: one per raw file (one BenchBase run), or one per ``sample_interval_s`` of completion
time within each file.

References
----------
BenchBase source: ``src/main/java/com/oltpbenchmark/util/ResultWriter.java``,
``DistributionStatistics.java``, ``LatencyRecord.java``, ``api/Worker.java``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

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

RAW_HEADER = (
    "Transaction Type Index",
    "Transaction Name",
    "Start Time (microseconds)",
    "Latency (microseconds)",
    "Worker Id (start number)",
    "Phase Id (index in config file)",
)
_RAW_COLUMNS = {
    "type_index": "INTEGER",
    "name": "VARCHAR",
    "start_s": "DECIMAL(18,6)",
    "latency_us": "BIGINT",
    "worker": "INTEGER",
    "phase": "INTEGER",
}
#: ``DistributionStatistics.toMap()``: key → quantile (None: the truncated mean)
_DISTRIBUTION = {
    "Minimum Latency (microseconds)": 0.0,
    "25th Percentile Latency (microseconds)": 0.25,
    "Median Latency (microseconds)": 0.5,
    "Average Latency (microseconds)": None,
    "75th Percentile Latency (microseconds)": 0.75,
    "90th Percentile Latency (microseconds)": 0.9,
    "95th Percentile Latency (microseconds)": 0.95,
    "99th Percentile Latency (microseconds)": 0.99,
    "Maximum Latency (microseconds)": 1.0,
}
_DERIVED = (".samples.csv", ".results.csv", ".metrics.json", ".config.xml")


@dataclass(slots=True)
class _Run:
    """One BenchBase run: its raw file and the companions named after it."""

    raw: Path
    label: str
    summary: dict[str, Any] | None = None
    summary_path: Path | None = None
    summary_text: str = ""
    params: dict[str, Any] | None = None
    params_path: Path | None = None
    facts: dict[str, Any] = field(default_factory=dict)


def _base(file: Path, suffix: str) -> str:
    return str(file.parent / file.name[: -len(suffix)])


def _first_line(file: Path) -> str:
    check_file(file)
    with file.open("rb") as handle:
        raw = handle.readline()
    try:
        return raw.decode("utf-8").rstrip("\r\n").lstrip("\ufeff")
    except UnicodeDecodeError:
        raise bad(file, 1, "not UTF-8 text; expected a BenchBase .raw.csv header") from None


def _read_json(file: Path, what: str) -> tuple[dict[str, Any], str]:
    text = "\n".join(read_text(file)) + "\n"
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad(file, exc.lineno, f"not JSON ({exc.msg}); expected BenchBase's {what}") from None
    if not isinstance(doc, dict):
        raise bad(file, 1, f"a JSON {type(doc).__name__}; expected BenchBase's {what} (an object)")
    return doc, text


def _line_of(text: str, needle: str) -> int | None:
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else None


def _classify(files: Sequence[Path], rule: ConditionRule) -> list[_Run]:
    """Raw files and their companions, paired by name (``NAME.raw.csv``, ``NAME.summary.json``,
    ``NAME.params.json``)."""
    runs: dict[str, _Run] = {}
    companions: list[tuple[Path, str, str]] = []
    for file in files:
        name = file.name
        if name.endswith(".json"):
            check_file(file)
            kind = "params" if name.endswith(".params.json") else "summary"
            if name.endswith(".metrics.json"):
                raise bad(
                    file,
                    None,
                    "BenchBase's DBMS metrics are not imported; expected NAME.raw.csv with"
                    " NAME.summary.json (and NAME.params.json)",
                )
            suffix = ".params.json" if kind == "params" else ".summary.json"
            base = _base(file, suffix) if name.endswith(suffix) else str(file.with_suffix(""))
            companions.append((file, kind, base))
            continue
        if any(name.endswith(s) for s in _DERIVED) or ".results." in name:
            raise bad(
                file,
                None,
                "a file BenchBase derives from the raw data (per-window results, metrics or"
                " configuration); expected NAME.raw.csv with NAME.summary.json",
            )
        header = _first_line(file)
        fields = tuple(f.strip() for f in header.split(","))
        if fields != RAW_HEADER:
            if fields and fields[0] == "Time (seconds)":
                raise bad(
                    file,
                    1,
                    "BenchBase's per-window results (.samples.csv or .results.csv), computed"
                    " from the raw data; expected the .raw.csv",
                )
            raise bad(
                file,
                1,
                f"header {header[:80]!r}; expected BenchBase's .raw.csv header"
                f" {','.join(RAW_HEADER)!r}",
            )
        base = _base(file, ".raw.csv") if name.endswith(".raw.csv") else str(file.with_suffix(""))
        if base in runs:
            raise bad(file, None, f"a second raw file named like {runs[base].raw}")
        runs[base] = _Run(file, rule.label(file))
    if not runs:
        raise bad(
            files[0],
            None,
            "no BenchBase .raw.csv among the files; expected NAME.raw.csv (with its"
            " NAME.summary.json)",
        )
    for file, kind, base in companions:
        run = runs.get(base)
        if run is None:
            raise bad(
                file,
                None,
                f"no {Path(base).name}.raw.csv among the files; expected each"
                f" .{kind}.json with the raw file of the same run",
            )
        what = "summary.json" if kind == "summary" else "params.json"
        doc, text = _read_json(file, what)
        if kind == "params":
            run.params, run.params_path = doc, file
            continue
        known = ("Latency Distribution", "Measured Requests", "Throughput (requests/second)")
        if not any(k in doc for k in known):
            raise bad(
                file,
                1,
                "no 'Latency Distribution', 'Measured Requests' or 'Throughput"
                " (requests/second)'; expected BenchBase's summary.json",
            )
        run.summary, run.summary_path, run.summary_text = doc, file, text
    return list(runs.values())


def import_benchbase(
    store: Store,
    paths: Sequence[str | Path],
    *,
    conditions: ConditionRule | None = None,
    run_id: int | None = None,
    force: bool = False,
    name: str | None = None,
    sample_interval_s: float | None = None,
) -> int:
    """Import BenchBase ``.raw.csv`` files (with their ``.summary.json``) as a run.

    Parameters
    ----------
    conditions
        Where each raw file's condition comes from (its companions take the same); default
        ``baseline``.
    sample_interval_s
        Slice each raw file into samples of this many seconds of completion time; default one
        sample per raw file.
    """
    rule = conditions or ConditionRule()
    files = input_files(paths)
    if sample_interval_s is not None and sample_interval_s <= 0:
        raise ImportError_("command line: --sample-interval must be longer than 0s")
    runs = _classify(files, rule)
    labels: list[str] = []
    con = duckdb.connect()
    try:
        con.execute(
            "CREATE TABLE raw (grp INTEGER, "
            + ", ".join(f"{c} {t}" for c, t in _RAW_COLUMNS.items())
            + ")"
        )
        for index, run in enumerate(runs):
            label_index(labels, run.label)
            _read_raw(con, index, run.raw)
        types = [
            str(r[0])
            for r in con.execute(
                "SELECT name FROM raw GROUP BY name ORDER BY min(type_index), name"
            ).fetchall()
        ]
        con.execute(
            "CREATE TABLE types AS SELECT unnest(?::VARCHAR[]) AS name,"
            " (generate_subscripts(?::VARCHAR[], 1) - 1)::SMALLINT AS txn_type",
            [types, types],
        )
        for index, run in enumerate(runs):
            run.facts = _facts(con, index, run)
        # Epoch seconds with 6 decimals → ns, exactly (DECIMAL, no float on the way).
        con.execute(
            "CREATE TABLE rows AS SELECT r.grp, r.worker AS session, y.txn_type,"
            " (r.start_s::DECIMAL(38, 6) * 1000000)::BIGINT * 1000 AS intended_start_ns,"
            " (r.start_s::DECIMAL(38, 6) * 1000000)::BIGINT * 1000 AS start_ns,"
            " (r.start_s::DECIMAL(38, 6) * 1000000)::BIGINT * 1000 + r.latency_us * 1000 AS end_ns,"
            " 'ok' AS status, NULL::VARCHAR AS error_code FROM raw r JOIN types y USING (name)"
        )
        con.execute("DROP TABLE raw")
        groups = [labels.index(r.label) for r in runs]
        samples, table = sliced_samples(con, "rows", groups, sample_interval_s)
    finally:
        con.close()
    return store.import_batch(
        _batch(runs, labels, types, samples, table, sample_interval_s, name, files),
        run_id=run_id,
        force=force,
    )


def _read_raw(con: duckdb.DuckDBPyConnection, index: int, file: Path) -> None:
    spec = "{" + ", ".join(f"'{c}': '{t}'" for c, t in _RAW_COLUMNS.items()) + "}"
    try:
        con.execute(
            f"INSERT INTO raw SELECT {index}, *"
            " FROM read_csv(?, header = false, skip = 1, delim = ',', quote = '', escape = '',"
            f" auto_detect = false, columns = {spec}, strict_mode = true,"
            " null_padding = false)",
            [str(file)],
        )
    except duckdb.Error:
        raise _locate_bad_line(file) from None
    # What DuckDB cannot reject by type, in one scan; the slow search for the line only when
    # something is wrong.
    row = con.execute(
        "SELECT count(*), coalesce(bool_or(latency_us < 0 OR worker < 0 OR type_index < 1"
        " OR name IS NULL OR trim(name) = '' OR start_s IS NULL OR latency_us IS NULL"
        " OR worker IS NULL OR phase IS NULL OR type_index IS NULL), false)"
        " FROM raw WHERE grp = ?",
        [index],
    ).fetchone()
    assert row is not None
    if row[1]:
        raise _locate_bad_line(file)
    if not row[0]:
        raise bad(file, None, "no transactions after the header; expected BenchBase's raw lines")
    clash = con.execute(
        "SELECT type_index, list(DISTINCT name ORDER BY name) FROM raw WHERE grp = ?"
        " GROUP BY type_index HAVING count(DISTINCT name) > 1 LIMIT 1",
        [index],
    ).fetchone()
    if clash:
        names = clash[1]
        raise bad(
            file,
            _line_with(file, f"{clash[0]},{names[1]},"),
            f"Transaction Type Index {clash[0]} is named both {names[0]!r} and {names[1]!r};"
            " expected one name per index (one BenchBase run per file)",
        )


def _line_with(file: Path, prefix: str) -> int | None:
    with file.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.decode("utf-8", "replace").startswith(prefix):
                return number
    return None


def _locate_bad_line(file: Path) -> ImportError_:
    """The first line that does not fit the raw layout: only on the error path."""
    with file.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1:
                continue
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError:
                return bad(file, number, "not UTF-8 text; expected a BenchBase raw line")
            if not line.strip():
                return bad(file, number, "an empty line; expected a BenchBase raw line")
            fields = line.split(",")
            if len(fields) != len(RAW_HEADER):
                return bad(
                    file,
                    number,
                    f"{len(fields)} fields; expected {len(RAW_HEADER)} like the header"
                    " (type index, name, start time, latency, worker, phase)",
                )
            checks = (
                (0, "Transaction Type Index", "a whole number ≥ 1", _int_at_least(1)),
                (2, "Start Time", "epoch seconds (e.g. 1722222636.414196)", _seconds),
                (3, "Latency (microseconds)", "a whole number of µs ≥ 0", _int_at_least(0)),
                (4, "Worker Id", "a whole number ≥ 0", _int_at_least(0)),
                (5, "Phase Id", "a whole number", _int_at_least(-(2**31))),
            )
            for position, column, expected, ok in checks:
                if not ok(fields[position].strip()):
                    return bad(file, number, f"{column} {fields[position]!r}; expected {expected}")
            if not fields[1].strip():
                return bad(file, number, "an empty Transaction Name; expected the type's name")
    return bad(file, None, "cannot be read as a BenchBase .raw.csv")


def _int_at_least(low: int) -> Any:
    def check(text: str) -> bool:
        try:
            return int(text) >= low
        except ValueError:
            return False

    return check


def _seconds(text: str) -> bool:
    head, _, tail = text.partition(".")
    return head.isdigit() and (not tail or (tail.isdigit() and len(tail) <= 6))


def _facts(con: duckdb.DuckDBPyConnection, index: int, run: _Run) -> dict[str, Any]:
    """What the raw file says about itself, checked against its summary.json."""
    latencies = con.execute("SELECT latency_us FROM raw WHERE grp = ?", [index]).fetchnumpy()
    values = np.sort(np.asarray(next(iter(latencies.values())), dtype=np.int64))
    n = len(values)
    computed: dict[str, int] = {}
    for key, q in _DISTRIBUTION.items():
        if q is None:
            computed[key] = int(int(values.sum()) / n)
        else:
            computed[key] = int(values[min(int(q * n), n - 1)])
    per_phase = dict(
        con.execute(
            "SELECT phase, count(*) FROM raw WHERE grp = ? GROUP BY phase ORDER BY phase",
            [index],
        ).fetchall()
    )
    facts: dict[str, Any] = {
        "requests": n,
        "phases": {str(k): int(v) for k, v in per_phase.items()},
        "latency_distribution_us": computed,
    }
    summary = run.summary
    if summary is None or run.summary_path is None:
        return facts
    path, text = run.summary_path, run.summary_text
    measured = summary.get("Measured Requests")
    if measured is not None and measured != n:
        raise bad(
            path,
            _line_of(text, '"Measured Requests"'),
            f"BenchBase reports {measured} measured requests, {run.raw.name} holds {n} lines;"
            " expected the summary of the run that wrote the raw file",
        )
    distribution = summary.get("Latency Distribution")
    if isinstance(distribution, dict):
        for key, value in distribution.items():
            if key in computed and value != computed[key]:
                raise bad(
                    path,
                    _line_of(text, json.dumps(key)),
                    f"{key} is {value}, the raw file gives {computed[key]}; expected the"
                    " summary of the run that wrote the raw file",
                )
    elapsed = summary.get("Elapsed Time (nanoseconds)")
    goodput = summary.get("Goodput (requests/second)")
    if isinstance(elapsed, int | float) and isinstance(goodput, int | float):
        # Goodput counts the successful requests only: what the raw file cannot tell.
        facts["succeeded"] = round(goodput * elapsed / 1e9)
    return facts


def sliced_samples(
    con: duckdb.DuckDBPyConnection,
    table: str,
    groups: Sequence[int],
    sample_interval_s: float | None,
) -> tuple[list[ImportedSample], pa.Table]:
    """Samples of per-transaction rows, and the rows as the ``transactions`` table wants them.

    ``table`` has ``grp`` (a run of the tool: one sample, or one per ``sample_interval_s`` of
    completion time from the run's first intended start), ``session``, ``txn_type``,
    ``intended_start_ns``, ``start_ns``, ``end_ns``, ``status`` and ``error_code``; ``groups``
    gives each group's condition. Slices without a completion make no sample.
    """
    step = int(sample_interval_s * 1e9) if sample_interval_s else 0
    slice_ = f"(r.end_ns - b.t0) // {step}" if step else "0"
    con.execute(
        f"""
        CREATE TEMP TABLE bounds AS
        SELECT grp, min(intended_start_ns) AS t0, max(end_ns) AS t1 FROM {table} GROUP BY grp;
        CREATE TEMP TABLE smp AS
        SELECT grp, slice, (row_number() OVER (ORDER BY grp, slice) - 1)::INTEGER AS sample_id
        FROM (SELECT DISTINCT r.grp, {slice_} AS slice FROM {table} r JOIN bounds b USING (grp));
        """
    )
    samples = []
    for sample_id, grp, slice_no, t0, t1 in con.execute(
        "SELECT s.sample_id, s.grp, s.slice, b.t0, b.t1 FROM smp s JOIN bounds b USING (grp)"
        " ORDER BY s.sample_id"
    ).fetchall():
        start = int(t0) + int(slice_no) * step if step else int(t0)
        end = min(start + step, int(t1)) if step else int(t1)
        samples.append(ImportedSample(int(sample_id), groups[int(grp)], start, max(end, start + 1)))
    rows = con.sql(
        f"""
        SELECT s.sample_id, r.session::INTEGER AS session, r.txn_type::SMALLINT AS txn_type,
               r.intended_start_ns, r.start_ns, r.end_ns,
               r.status::ENUM('ok', 'error') AS status, r.error_code::VARCHAR AS error_code,
               0::INTEGER AS retries, false AS warmup
        FROM {table} r JOIN bounds b USING (grp)
        JOIN smp s ON s.grp = r.grp AND s.slice = {slice_}
        ORDER BY s.sample_id, r.start_ns
        """
    ).to_arrow_table()
    return samples, rows


def _batch(
    runs: Sequence[_Run],
    labels: list[str],
    types: list[str],
    samples: list[ImportedSample],
    table: pa.Table,
    sample_interval_s: float | None,
    name: str | None,
    files: Sequence[Path],
) -> ImportBatch:
    records = []
    documents = []
    for run in runs:
        summary = run.summary or {}
        meta: dict[str, Any] = {
            "raw": str(run.raw),
            "summary": summary or None,
            "summary_file": str(run.summary_path) if run.summary_path else None,
            "params_file": str(run.params_path) if run.params_path else None,
            **run.facts,
        }
        documents.append({"condition": run.label, **meta})
        records.append(ImportedFile(str(run.raw), sha256(run.raw), "benchbase", run.label, meta))
        if run.summary_path is not None:
            records.append(
                ImportedFile(
                    str(run.summary_path),
                    sha256(run.summary_path),
                    "benchbase-summary",
                    run.label,
                    {"summary": True, "raw": str(run.raw)},
                )
            )
        if run.params_path is not None:
            records.append(
                ImportedFile(
                    str(run.params_path),
                    sha256(run.params_path),
                    "benchbase-summary",
                    run.label,
                    {"params": True, "raw": str(run.raw)},
                )
            )
    return ImportBatch(
        name=name or runs[0].raw.name.removesuffix(".raw.csv"),
        description=f"BenchBase raw results ({len(runs)} run(s))",
        source=", ".join(str(f) for f in files),
        settings={
            "format": "benchbase",
            "timed": True,
            "files": documents,
            "samples": (
                f"every {sample_interval_s:g}s" if sample_interval_s else "one per raw file"
            ),
            "status": "BenchBase's raw file records every measured request without its"
            " outcome: all are stored ok",
        },
        conditions=labels,
        transaction_types=types,
        samples=samples,
        files=records,
        transactions=table,
        environment=client_environment() | _server(runs),
        tool_version=tool_version(),
    )


def _server(runs: Sequence[_Run]) -> dict[str, Any]:
    """The server environment the runs agree on (BenchBase's DBMS type, version, parameters)."""
    out: dict[str, Any] = {}
    for key, target in (("DBMS Type", "server"), ("DBMS Version", "server_version")):
        values = {json.dumps((r.summary or {}).get(key)) for r in runs}
        value = (runs[0].summary or {}).get(key)
        if len(values) == 1 and value is not None:
            out[target] = str(value)
    params = {json.dumps(r.params, sort_keys=True) for r in runs}
    if len(params) == 1 and runs[0].params is not None:
        out["server_settings"] = runs[0].params
    return out
