"""pgbench logs → an imported run.

Two kinds of log, told apart by their first line (or by ``log``):

- per-transaction logs (``pgbench -l``), one line per transaction::

      client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]

  where ``time`` is the latency in µs, or ``skipped``, ``failed``, ``serialization``,
  ``deadlock`` or ``other``. With ``--rate`` the latency counts from the *scheduled* start, so
  the intended start is ``completion − time`` and the actual start is that plus the lag.
  DuckDB's CSV reader reads them: no Python loop runs per line.
- aggregated logs (``--aggregate-interval``), one line per interval and thread. PostgreSQL 15
  fixed the layout at 15 fields; older versions wrote 6, 10 or 11.

Files are ``prefix.PID`` (thread 0) and ``prefix.PID.N`` (thread N); the files of one pgbench
invocation (same prefix and PID) are one sample, or one sample per ``sample_interval_s`` of
completion time. pgbench's own summary output (``summary``) is stored with the run, names the
scripts, and is cross-checked: transaction counts exactly, the mean latency to its rounding.

References
----------
PostgreSQL documentation, "pgbench", sections "Per-Transaction Logging" and
"Aggregated Logging" (versions 14 and 15).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import duckdb
import numpy as np

from wannabet.environment import client_environment
from wannabet.errors import ImportError_
from wannabet.importers._common import (
    ConditionRule,
    bad,
    check_file,
    input_files,
    read_text,
    sha256,
)
from wannabet.store.schema import LATENCY_MS
from wannabet.store.store import ImportBatch, ImportedFile, ImportedSample, Store
from wannabet.version import tool_version

LogKind = Literal["auto", "transactions", "aggregate"]
Layout = Literal["auto", "14", "15"]
Extra = Literal["auto", "lag", "retries"]

_WORDS = ("skipped", "failed", "serialization", "deadlock", "other")
_FILE_NAME = re.compile(r"^(?P<invocation>.+?\.\d+)(?:\.(?P<thread>\d+))?$")
# PostgreSQL 15+: every field always present (zero when it does not apply); failures are
# serialization plus deadlock failures.
_AGG_15 = (
    "interval_start",
    "num_transactions",
    "sum_latency",
    "sum_latency_2",
    "min_latency",
    "max_latency",
    "sum_lag",
    "sum_lag_2",
    "min_lag",
    "max_lag",
    "skipped",
    "retried",
    "retries",
    "serialization_failures",
    "deadlock_failures",
)
_AGG_14 = _AGG_15[:11]


@dataclass(frozen=True, slots=True)
class PgbenchSummary:
    """What pgbench printed at the end of a run, with the line of each figure."""

    path: str
    text: str
    processed: tuple[int, int] | None = None
    failed: tuple[int, int] | None = None
    skipped: tuple[int, int] | None = None
    latency_avg_ms: tuple[float, int] | None = None
    latency_measured: bool = False
    tps: float | None = None
    clients: int | None = None
    max_tries: int | None = None
    rate_limited: bool = False
    scripts: tuple[str, ...] = ()
    version: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "version": self.version,
            "processed": self.processed[0] if self.processed else None,
            "failed": self.failed[0] if self.failed else None,
            "skipped": self.skipped[0] if self.skipped else None,
            "latency_avg_ms": self.latency_avg_ms[0] if self.latency_avg_ms else None,
            "tps": self.tps,
            "clients": self.clients,
            "max_tries": self.max_tries,
            "scripts": list(self.scripts),
            "text": self.text,
        }


def parse_summary(path: str | Path) -> PgbenchSummary:
    """Parse pgbench's summary output (its stdout)."""
    file = Path(path)
    lines = read_text(file)
    found: dict[str, Any] = {}
    scripts: dict[int, str] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if m := re.match(r"pgbench \(([^)\s]+)", line):
            found["version"] = m.group(1)
        elif m := re.match(r"number of transactions actually processed: (\d+)", line):
            found["processed"] = (int(m.group(1)), number)
        elif m := re.match(r"number of failed transactions: (\d+)", line):
            found["failed"] = (int(m.group(1)), number)
        elif m := re.match(r"number of transactions skipped: (\d+)", line):
            found["skipped"] = (int(m.group(1)), number)
        elif m := re.match(r"latency average = ([0-9.]+) ms", line):
            found["latency_avg_ms"] = (float(m.group(1)), number)
        elif line.startswith("latency stddev ="):
            # pgbench measures latency per transaction only with --rate, --latency-limit or
            # --progress; otherwise its "average" is duration × clients / transactions.
            found["latency_measured"] = True
        elif m := re.match(r"tps = ([0-9.]+)", line):
            found["tps"] = float(m.group(1))
        elif m := re.match(r"number of clients: (\d+)", line):
            found["clients"] = int(m.group(1))
        elif m := re.match(r"maximum number of tries: (\d+)", line):
            found["max_tries"] = int(m.group(1))
        elif line.startswith("rate limit schedule lag"):
            found["rate_limited"] = True
        elif m := re.match(r"transaction type: (.+)$", line):
            scripts.setdefault(0, m.group(1))
        elif m := re.match(r"SQL script (\d+): (.+)$", line):
            scripts[int(m.group(1)) - 1] = m.group(2)
    if "processed" not in found:
        raise bad(
            file,
            None,
            "no 'number of transactions actually processed' line; expected pgbench's summary"
            " output (its stdout)",
        )
    names = tuple(scripts.get(i, f"script {i}") for i in range(max(scripts, default=-1) + 1))
    return PgbenchSummary(path=str(file), text="\n".join(lines), scripts=names, **found)


def import_pgbench(
    store: Store,
    paths: Sequence[str | Path],
    *,
    conditions: ConditionRule | None = None,
    summary: str | Path | None = None,
    log: LogKind = "auto",
    layout: Layout = "auto",
    extra: Extra = "auto",
    sample_interval_s: float | None = None,
    aggregate_interval_s: float | None = None,
    run_id: int | None = None,
    force: bool = False,
    name: str | None = None,
) -> int:
    """Import pgbench logs as a run (or into ``run_id``); return the run id.

    Parameters
    ----------
    conditions
        Where each file's condition comes from; default ``baseline``.
    summary
        pgbench's stdout of the same run: stored, and its counts cross-checked.
    log
        ``transactions`` (``-l``), ``aggregate`` (``--aggregate-interval``) or ``auto``.
    layout
        Aggregated log layout: ``14`` (PostgreSQL ≤ 14), ``15`` (15 and later) or ``auto``.
    extra
        What a 7th field of a per-transaction log is: ``lag`` (``--rate``) or ``retries``
        (``--max-tries``); ``auto`` asks the summary or the data.
    sample_interval_s
        Slice per-transaction logs into samples of this many seconds of completion time;
        default one sample per pgbench invocation.
    aggregate_interval_s
        The ``--aggregate-interval`` of aggregated logs; default the smallest step between
        intervals (one interval alone needs it).
    """
    rule = conditions or ConditionRule()
    files = input_files(paths)
    for f in files:
        check_file(f)
    parsed = parse_summary(summary) if summary is not None else None
    if sample_interval_s is not None and sample_interval_s <= 0:
        raise ImportError_("command line: --sample-interval must be longer than 0s")
    first = {f: _first_fields(f) for f in files}
    kinds = {f: _kind(f, first[f], log) for f in files}
    if len(set(kinds.values())) > 1:
        raise ImportError_(
            "command line: mixes per-transaction and aggregated pgbench logs; import them"
            " separately"
        )
    kind = next(iter(kinds.values()))
    con = duckdb.connect()
    try:
        if kind == "aggregate":
            batch = _aggregated(con, files, first, rule, parsed, layout, aggregate_interval_s, name)
        else:
            batch = _transactions(con, files, first, rule, parsed, extra, sample_interval_s, name)
    finally:
        con.close()
    return store.import_batch(batch, run_id=run_id, force=force)


def _first_fields(file: Path) -> tuple[list[str], int]:
    with file.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("ascii").strip()
            except UnicodeDecodeError:
                raise bad(file, number, "not a pgbench log: expected numbers and words") from None
            if line:
                return line.split(), number
    raise bad(file, None, "holds only blank lines; expected pgbench log lines")


def _kind(file: Path, first: tuple[list[str], int], log: LogKind) -> str:
    fields, number = first
    numbers = [_int(x) for x in fields]
    if log != "auto":
        return log
    # A transaction line has a client id first and an epoch fifth; an aggregate line starts
    # with an epoch.
    if len(fields) in (6, 7, 8) and numbers[4] is not None and numbers[4] > 100_000_000:
        return "transactions"
    if len(fields) in (6, 10, 11, 15) and numbers[0] is not None and numbers[0] > 100_000_000:
        return "aggregate"
    raise bad(
        file,
        number,
        f"{len(fields)} fields; expected a pgbench per-transaction log line (6 to 8 fields:"
        " client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries])"
        " or an aggregated one (6, 10, 11 or 15 fields starting with interval_start)",
    )


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _invocations(files: Sequence[Path], rule: ConditionRule) -> tuple[list[int], list[str]]:
    """Per file, the index of its (invocation, condition) group; and the groups' conditions."""
    keys: dict[tuple[str, str], int] = {}
    labels: list[str] = []
    group_of = []
    for f in files:
        label = rule.label(f)
        m = _FILE_NAME.match(f.name)
        invocation = str(f.parent / m.group("invocation")) if m else str(f)
        key = (invocation, label)
        if key not in keys:
            keys[key] = len(keys)
            labels.append(label)
        group_of.append(keys[key])
    return group_of, labels


def _transactions(
    con: duckdb.DuckDBPyConnection,
    files: Sequence[Path],
    first: dict[Path, tuple[list[str], int]],
    rule: ConditionRule,
    summary: PgbenchSummary | None,
    extra: Extra,
    sample_interval_s: float | None,
    name: str | None,
) -> ImportBatch:
    group_of, labels = _invocations(files, rule)
    con.execute(
        "CREATE TABLE tx (file INTEGER, client_id INTEGER, time VARCHAR, script_no INTEGER,"
        " epoch BIGINT, us BIGINT, lag BIGINT, retries INTEGER)"
    )
    layouts: dict[str, list[str]] = {}
    for index, f in enumerate(files):
        fields, number = first[f]
        columns = ["client_id", "transaction_no", "time", "script_no", "time_epoch", "time_us"]
        if len(fields) == 8:
            columns += ["schedule_lag", "retries"]
        elif len(fields) == 7:
            columns.append(_seventh(f, number, fields, summary, extra))
        layouts[str(f)] = columns
        sql_types = {
            "client_id": "INTEGER",
            "transaction_no": "BIGINT",
            "time": "VARCHAR",
            "script_no": "INTEGER",
            "time_epoch": "BIGINT",
            "time_us": "BIGINT",
            "schedule_lag": "BIGINT",
            "retries": "INTEGER",
        }
        spec = "{" + ", ".join(f"'{c}': '{sql_types[c]}'" for c in columns) + "}"
        lag = "schedule_lag" if "schedule_lag" in columns else "NULL"
        retries = "retries" if "retries" in columns else "0"
        try:
            con.execute(
                f"INSERT INTO tx SELECT {index}, client_id, time, script_no, time_epoch, time_us,"
                f" {lag}, {retries} FROM read_csv(?, delim = ' ', header = false,"
                f" auto_detect = false, quote = '', escape = '', columns = {spec},"
                " strict_mode = true, null_padding = false)",
                [str(f)],
            )
        except duckdb.Error:
            raise _locate_bad_line(f, len(columns), columns) from None
    # Values DuckDB cannot reject by type: the time words, negatives, microseconds.
    problems = [
        (
            f"try_cast(time AS BIGINT) IS NULL AND time NOT IN {_WORDS!r}",
            "time: expected a latency in µs or one of " + ", ".join(_WORDS),
        ),
        ("try_cast(time AS BIGINT) < 0", "time: expected a latency ≥ 0 µs"),
        ("us < 0 OR us >= 1000000", "time_us: expected 0 to 999999"),
        ("client_id < 0 OR script_no < 0", "client_id and script_no: expected ≥ 0"),
        ("lag < 0", "schedule_lag: expected ≥ 0 µs"),
        ("retries < 0", "retries: expected ≥ 0"),
    ]
    # One scan for every check; the slow search for the line only when one fails.
    flags = con.execute(
        "SELECT " + ", ".join(f"coalesce(bool_or({w}), false)" for w, _ in problems) + " FROM tx"
    ).fetchone()
    assert flags is not None
    for (where, expected), failed in zip(problems, flags, strict=True):
        if not failed:
            continue
        row = con.execute(f"SELECT file FROM tx WHERE {where} LIMIT 1").fetchone()
        if row:
            f = files[int(row[0])]
            raise bad(f, _line_of(f, where, layouts[str(f)]), expected)
    con.execute(
        "CREATE TABLE grp AS SELECT unnest(?::INTEGER[]) AS file, unnest(?::INTEGER[]) AS grp",
        [list(range(len(files))), group_of],
    )
    # Times in ns. Failed transactions have no latency: they start and end at completion.
    con.execute(
        """
        CREATE TABLE t AS
        SELECT g.grp, client_id, script_no, retries,
               epoch * 1000000000 + us * 1000 AS end_ns,
               epoch * 1000000000 + us * 1000
                   - coalesce(try_cast(time AS BIGINT),
                              CASE WHEN time = 'skipped' THEN lag END, 0) * 1000
                   AS intended_start_ns,
               CASE WHEN try_cast(time AS BIGINT) IS NOT NULL THEN 'ok'
                    WHEN time = 'skipped' THEN 'skipped'
                    WHEN time IN ('serialization', 'deadlock') THEN time
                    ELSE 'error' END AS status,
               coalesce(lag, 0) AS lag
        FROM tx JOIN grp g USING (file)
        """
    )
    con.execute("DROP TABLE tx")
    step = int(sample_interval_s * 1e9) if sample_interval_s else 0
    con.execute(
        f"""
        CREATE TABLE bounds AS
        SELECT grp, min(intended_start_ns) AS t0, max(end_ns) AS t1 FROM t GROUP BY grp;
        CREATE TABLE smp AS
        SELECT grp, slice, row_number() OVER (ORDER BY grp, slice) - 1 AS sample_id
        FROM (SELECT DISTINCT t.grp,
                     {f"(t.end_ns - b.t0) // {step}" if step else "0"} AS slice
              FROM t JOIN bounds b USING (grp));
        """
    )
    samples_rows = con.execute(
        "SELECT s.sample_id, s.grp, s.slice, b.t0, b.t1 FROM smp s JOIN bounds b USING (grp)"
        " ORDER BY s.sample_id"
    ).fetchall()
    samples = []
    for sample_id, grp, slice_, t0, t1 in samples_rows:
        start = int(t0) + int(slice_) * step if step else int(t0)
        end = min(start + step, int(t1)) if step else int(t1)
        samples.append(ImportedSample(int(sample_id), int(grp), start, max(end, start + 1)))
    table = con.sql(
        f"""
        SELECT s.sample_id::INTEGER AS sample_id, t.client_id::INTEGER AS session,
               t.script_no::SMALLINT AS txn_type,
               t.intended_start_ns,
               CASE WHEN t.status IN ('ok', 'skipped')
                    THEN least(t.intended_start_ns + t.lag * 1000, t.end_ns)
                    ELSE t.end_ns END AS start_ns,
               t.end_ns,
               t.status::ENUM('ok', 'error', 'serialization', 'deadlock', 'skipped') AS status,
               (CASE t.status WHEN 'serialization' THEN '40001' WHEN 'deadlock' THEN '40P01'
                END)::VARCHAR AS error_code,
               t.retries::INTEGER AS retries, false AS warmup
        FROM t JOIN bounds b USING (grp)
        JOIN smp s ON s.grp = t.grp
             AND s.slice = {f"(t.end_ns - b.t0) // {step}" if step else "0"}
        """
    ).to_arrow_table()
    totals = con.execute(
        "SELECT count(*) FILTER (WHERE status = 'ok'),"
        " count(*) FILTER (WHERE status IN ('error', 'serialization', 'deadlock')),"
        " count(*) FILTER (WHERE status = 'skipped'),"
        f" avg({LATENCY_MS}) FILTER (WHERE status = 'ok'),"
        " max(script_no), count(*)"
        " FROM t"
    ).fetchone()
    assert totals is not None
    ok, failed, skipped, mean_ms, max_script, total = totals
    if not total:
        raise bad(files[0], None, "no transactions; expected pgbench log lines")
    if summary is not None:
        _cross_check(summary, int(ok), int(failed), int(skipped), mean_ms)
    names = list(summary.scripts) if summary else []
    types = [names[i] if i < len(names) else f"script {i}" for i in range(int(max_script) + 1)]
    settings: dict[str, Any] = {
        "format": "pgbench",
        "log": "transactions",
        "timed": True,
        "files": [str(f) for f in files],
        "fields": layouts,
        "samples": f"every {sample_interval_s:g}s" if step else "one per pgbench invocation",
        "ok": int(ok),
        "failed": int(failed),
        "skipped": int(skipped),
        "summary": summary.to_dict() if summary else None,
    }
    return ImportBatch(
        name=name or files[0].name,
        description=f"pgbench per-transaction log ({len(files)} file(s))",
        source=", ".join(str(f) for f in files),
        settings=settings,
        conditions=labels,
        transaction_types=types,
        samples=samples,
        files=_records(files, group_of, labels, "pgbench", summary),
        transactions=table,
        environment=client_environment(),
        tool_version=tool_version(),
    )


def _seventh(
    file: Path, number: int, fields: list[str], summary: PgbenchSummary | None, extra: Extra
) -> str:
    if extra != "auto":
        return "schedule_lag" if extra == "lag" else "retries"
    if fields[2] == "skipped":
        return "schedule_lag"
    if summary is not None:
        if summary.rate_limited or summary.skipped is not None:
            return "schedule_lag"
        if summary.max_tries is None:
            # Before PostgreSQL 15 the only optional field was the schedule lag.
            return "schedule_lag"
        if summary.max_tries != 1:
            return "retries"
    raise bad(
        file,
        number,
        "7 fields: the 7th is schedule_lag (--rate) or retries (--max-tries) and the log"
        " cannot tell; expected --pgbench-extra lag|retries or --summary with pgbench's output",
    )


def _locate_bad_line(file: Path, width: int, columns: list[str]) -> ImportError_:
    """Find the first line that does not fit the layout: only on the error path."""
    integer = re.compile(r"-?\d+$")
    with file.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                fields = raw.decode("ascii").split()
            except UnicodeDecodeError:
                return bad(file, number, "not ASCII text; expected a pgbench log line")
            if len(fields) != width:
                return bad(
                    file,
                    number,
                    f"{len(fields)} fields; expected {width} like line 1 ({' '.join(columns)})",
                )
            for column, value in zip(columns, fields, strict=True):
                if column != "time" and not integer.match(value):
                    return bad(file, number, f"{column}: {value!r}; expected a whole number")
    return bad(file, None, f"cannot be read as a pgbench log with fields {' '.join(columns)}")


def _line_of(file: Path, where: str, columns: list[str]) -> int | None:
    types = {c: ("VARCHAR" if c == "time" else "BIGINT") for c in columns}
    spec = "{" + ", ".join(f"'{c}': '{t}'" for c, t in types.items()) + "}"
    renamed = where.replace("lag", "schedule_lag") if "schedule_lag" in columns else where
    renamed = renamed.replace("us ", "time_us ")
    con = duckdb.connect()
    try:
        row = con.execute(
            f"SELECT line FROM (SELECT row_number() OVER () AS line, * FROM read_csv(?,"
            f" delim = ' ', header = false, auto_detect = false, quote = '', escape = '',"
            f" columns = {spec})) WHERE {renamed} ORDER BY line LIMIT 1",
            [str(file)],
        ).fetchone()
    except duckdb.Error:
        return None
    finally:
        con.close()
    return int(row[0]) if row else None


def _cross_check(
    summary: PgbenchSummary,
    ok: int,
    failed: int,
    skipped: int,
    mean_ms: float | None,
    *,
    final_interval: int | None = None,
) -> dict[str, int]:
    """Check the logs against pgbench's summary; return what the logs lack (aggregated only).

    pgbench 15 does not write the last, partial interval of an aggregated log, so there the
    logs may fall short by at most about one interval per log file (``final_interval``: the
    largest merged interval seen times the files); what is missing is returned and recorded,
    never invented.
    """
    path = Path(summary.path)
    checks = (
        (summary.processed, ok, "transactions processed", "ok"),
        (summary.failed, failed, "failed transactions", "failed"),
        (summary.skipped, skipped, "skipped transactions", "skipped"),
    )
    missing: dict[str, int] = {}
    for reported, counted, what, key in checks:
        if reported is None or reported[0] == counted:
            continue
        short = reported[0] - counted
        if final_interval is not None and 0 < short <= 1.5 * final_interval + 10:
            missing[key] = short
            continue
        raise bad(
            path,
            reported[1],
            f"pgbench reports {reported[0]} {what}, the logs hold {counted}; expected the"
            " summary of the run that wrote these logs (all of its log files, and no"
            " --sampling-rate)",
        )
    measured = summary.latency_avg_ms is not None and summary.latency_measured
    if measured and mean_ms is not None and not missing and summary.latency_avg_ms is not None:
        reported_ms, line = summary.latency_avg_ms
        # pgbench prints 3 decimals; the log rounds each latency to 1 µs.
        if abs(float(mean_ms) - reported_ms) > 0.0005 + 0.0005 + 1e-9:
            raise bad(
                path,
                line,
                f"pgbench reports a mean latency of {reported_ms:.3f} ms, the logs give"
                f" {float(mean_ms):.4f} ms; expected the summary of the run that wrote these logs",
            )
    return missing


def _records(
    files: Sequence[Path],
    group_of: Sequence[int],
    labels: Sequence[str],
    fmt: str,
    summary: PgbenchSummary | None,
) -> list[ImportedFile]:
    records = [
        ImportedFile(str(f), sha256(f), fmt, labels[g], {"invocation": g})
        for f, g in zip(files, group_of, strict=True)
    ]
    if summary is not None:
        records.append(
            ImportedFile(
                summary.path, sha256(Path(summary.path)), f"{fmt}-summary", None, {"summary": True}
            )
        )
    return records


def _aggregated(
    con: duckdb.DuckDBPyConnection,
    files: Sequence[Path],
    first: dict[Path, tuple[list[str], int]],
    rule: ConditionRule,
    summary: PgbenchSummary | None,
    layout: Layout,
    interval_s: float | None,
    name: str | None,
) -> ImportBatch:
    group_of, labels = _invocations(files, rule)
    rows: list[tuple[int, list[float]]] = []
    layouts: dict[str, str] = {}
    for index, f in enumerate(files):
        fields, number = first[f]
        width = len(fields)
        columns: tuple[str, ...]
        if layout == "15" or (layout == "auto" and width == 15):
            columns, version = _AGG_15, "15"
        elif width in (6, 10, 11):
            columns, version = _AGG_14[:width], "14"
        else:
            raise bad(
                f, number, f"{width} fields; expected 15 (PostgreSQL 15+) or 6, 10, 11 (≤ 14)"
            )
        if len(columns) != width:
            raise bad(f, number, f"{width} fields; expected {len(columns)} (layout {version})")
        layouts[str(f)] = version
        spec = "{" + ", ".join(f"'{c}': 'DOUBLE'" for c in columns) + "}"
        try:
            values = con.execute(
                f"SELECT * FROM read_csv(?, delim = ' ', header = false, auto_detect = false,"
                f" quote = '', escape = '', columns = {spec}, strict_mode = true)",
                [str(f)],
            ).fetchnumpy()
        except duckdb.Error:
            raise _locate_bad_line(f, width, ["interval_start", *columns[1:]]) from None
        matrix = np.column_stack([np.asarray(values[c], dtype=np.float64) for c in columns])
        full = np.zeros((len(matrix), len(_AGG_15)))
        full[:, : matrix.shape[1]] = matrix
        negative = np.nonzero((full < 0).any(axis=1))[0]
        if negative.size:
            raise bad(f, int(negative[0]) + 1, "a negative value; expected counts and sums ≥ 0")
        for line_values in full:
            rows.append((group_of[index], [float(x) for x in line_values]))
    if not rows:
        raise bad(files[0], None, "no intervals; expected aggregated pgbench log lines")
    starts = sorted({r[1][0] for r in rows})
    if interval_s is None:
        steps = np.diff(starts)
        if not steps.size:
            raise ImportError_(
                f"{files[0]}: one interval only; expected --aggregate-interval SECONDS to know"
                " its length"
            )
        interval_s = float(steps.min())
    # Threads write one line each per interval: merge them into one sample.
    merged: dict[tuple[int, float], np.ndarray] = {}
    for grp, row in rows:
        key = (grp, row[0])
        values_ = np.asarray(row)
        if key not in merged:
            merged[key] = values_
            continue
        into = merged[key]
        mins = (4, 8)
        maxes = (5, 9)
        for i in range(1, len(_AGG_15)):
            if i in mins:
                into[i] = (
                    min(x for x in (into[i], values_[i]) if x > 0)
                    if max(into[i], values_[i]) > 0
                    else 0.0
                )
            elif i in maxes:
                into[i] = max(into[i], values_[i])
            else:
                into[i] += values_[i]
    samples = []
    aggregates = []
    col = {c: i for i, c in enumerate(_AGG_15)}
    ok_total = failed_total = skipped_total = 0
    lat_sum = 0.0
    for sample_id, ((grp, start), v) in enumerate(sorted(merged.items())):
        count = int(v[col["num_transactions"]])
        failed = int(v[col["serialization_failures"]] + v[col["deadlock_failures"]])
        skipped = int(v[col["skipped"]])
        ok_total += count
        failed_total += failed
        skipped_total += skipped
        lat_sum += v[col["sum_latency"]]
        t0 = int(start * 1e9)
        # The log's counts and its µs sums, minimum and maximum are exact (pgbench measures
        # latencies in whole µs), so they are the sample's summaries; no histogram, no log sums.
        samples.append(
            ImportedSample(
                sample_id,
                grp,
                t0,
                t0 + int(interval_s * 1e9),
                totals=(count + failed + skipped, count, failed + skipped, count / interval_s),
                statuses={
                    (0, "ok"): count,
                    (0, "serialization"): int(v[col["serialization_failures"]]),
                    (0, "deadlock"): int(v[col["deadlock_failures"]]),
                    (0, "skipped"): skipped,
                },
                moments={
                    0: (
                        count,
                        v[col["sum_latency"]] / 1e3,
                        v[col["sum_latency_2"]] / 1e6,
                        round(v[col["min_latency"]] * 1000),
                        round(v[col["max_latency"]] * 1000),
                    )
                },
            )
        )
        aggregates.append(
            {
                "sample_id": sample_id,
                "condition_id": grp,
                "txn_type": None,
                "count": count,
                "failed": failed,
                "skipped": skipped,
                "retried": int(v[col["retried"]]),
                "retries": int(v[col["retries"]]),
                "lat_sum_ms": v[col["sum_latency"]] / 1e3,
                "lat_sum2_ms2": v[col["sum_latency_2"]] / 1e6,
                "lat_min_ms": v[col["min_latency"]] / 1e3 if count else None,
                "lat_max_ms": v[col["max_latency"]] / 1e3 if count else None,
                "lag_sum_ms": v[col["sum_lag"]] / 1e3,
                "lag_max_ms": v[col["max_lag"]] / 1e3,
                "extra": {
                    "serialization_failures": int(v[col["serialization_failures"]]),
                    "deadlock_failures": int(v[col["deadlock_failures"]]),
                },
            }
        )
    if summary is not None:
        mean = lat_sum / ok_total / 1e3 if ok_total else None
        largest = max(int(s.totals[0]) for s in samples if s.totals is not None)
        # Each thread's file lacks that thread's own last interval, so the logs may fall short
        # by up to one interval per file (the merged largest bounds each thread's share).
        unlogged = _cross_check(
            summary,
            ok_total,
            failed_total,
            skipped_total,
            mean,
            final_interval=largest * len(files),
        )
    else:
        unlogged = {}
    settings: dict[str, Any] = {
        "format": "pgbench",
        "log": "aggregate",
        "timed": True,
        "aggregate_interval_s": interval_s,
        "layouts": layouts,
        "files": [str(f) for f in files],
        "samples": "one per aggregate interval",
        # In pgbench's summary but not in the log: its last, partial interval.
        "unlogged": unlogged,
        "ok": ok_total,
        "failed": failed_total,
        "skipped": skipped_total,
        "summary": summary.to_dict() if summary else None,
    }
    return ImportBatch(
        name=name or files[0].name,
        description=f"pgbench aggregated log ({len(files)} file(s)); aggregates only",
        source=", ".join(str(f) for f in files),
        settings=settings,
        conditions=labels,
        transaction_types=[],
        samples=samples,
        files=_records(files, group_of, labels, "pgbench", summary),
        aggregates=aggregates,
        environment=client_environment(),
        tool_version=tool_version(),
    )
