"""Any table of measurements (CSV) → an imported run.

Each row is one measurement (a transaction's latency, or any value where lower is better),
grouped into samples by a column, or each row its own sample. DuckDB reads and checks the file;
errors name the file, the line and what was expected, and nothing is written unless the whole
file is valid. Like every importer it writes an :class:`~wannabet.store.ImportBatch`: a file
already imported (same sha256) is refused unless ``force``, and ``run_id`` appends to an
imported CSV run.
"""

from __future__ import annotations

import csv
import difflib
from pathlib import Path
from typing import Literal

import duckdb
import numpy as np
import pyarrow as pa

from wannabet.environment import client_environment
from wannabet.errors import ImportError_
from wannabet.importers._common import sha256
from wannabet.store.store import ImportBatch, ImportedFile, ImportedSample, Store
from wannabet.version import tool_version

Unit = Literal["ms", "us", "s"]
_UNIT_NS = {"us": 1_000.0, "ms": 1_000_000.0, "s": 1_000_000_000.0}


def import_csv(
    store: Store,
    path: str | Path,
    *,
    condition: str,
    value: str,
    sample: str | None = None,
    session: str | None = None,
    time: str | None = None,
    unit: Unit = "ms",
    name: str | None = None,
    run_id: int | None = None,
    force: bool = False,
) -> int:
    """Import ``path`` as a new run (or into the imported CSV run ``run_id``); return its id.

    Parameters
    ----------
    condition, value
        Columns holding the condition label and the measured value.
    sample
        Column grouping rows into samples; without it each row is its own sample.
    session
        Column with an integer session (thread, client) number.
    time
        Column with the measurement's time: seconds (a number) or a timestamp.
    unit
        Unit of ``value``: ``ms`` (default), ``us`` or ``s``.
    force
        Import the file even if its content is already in the results file.
    """
    file = Path(path)
    if not file.is_file():
        raise ImportError_(f"{file}: no such file")
    if file.stat().st_size == 0:
        raise ImportError_(f"{file}: the file is empty; expected a header line and rows")
    con = duckdb.connect()
    try:
        batch = _read(con, file, condition, value, sample, session, time, unit, name)
    finally:
        con.close()
    return store.import_batch(batch, run_id=run_id, force=force)


def _read(
    con: duckdb.DuckDBPyConnection,
    file: Path,
    condition: str,
    value: str,
    sample: str | None,
    session: str | None,
    time: str | None,
    unit: Unit,
    name: str | None,
) -> ImportBatch:
    try:
        con.execute(
            "CREATE TABLE raw AS SELECT row_number() OVER () + 1 AS line, *"
            " FROM read_csv(?, header = true, all_varchar = true)",
            [str(file)],
        )
    except duckdb.Error as exc:
        message = str(exc).strip().split("\n", 1)[0]
        raise ImportError_(f"{file}: cannot read it as CSV: {message}") from None
    columns = [row[0] for row in con.execute("DESCRIBE raw").fetchall()][1:]
    if len(columns) == 1:
        _check_ragged(file, columns[0])
    for option, column in (
        ("--condition", condition),
        ("--value", value),
        ("--sample", sample),
        ("--session", session),
        ("--time", time),
    ):
        if column is not None and column not in columns:
            hint = difflib.get_close_matches(column, columns, n=1)
            advice = f"did you mean {hint[0]!r}?" if hint else f"columns: {', '.join(columns)}"
            raise ImportError_(f"{file}:1: {option} {column!r} is not a column; {advice}")
    count = con.execute("SELECT count(*) FROM raw").fetchone()
    if not count or not count[0]:
        raise ImportError_(f"{file}: no rows after the header line")

    def q(column: str) -> str:
        return '"' + column.replace('"', '""') + '"'

    _first_bad(
        con, file, f"{q(condition)} IS NULL", condition, "is empty; every row needs a condition"
    )
    _first_bad(con, file, f"{q(value)} IS NULL", value, "is empty; every row needs a value")
    _first_bad(
        con,
        file,
        f"regexp_full_match({q(value)}, '-?[0-9]+,[0-9]+')",
        value,
        "has a comma; write numbers with a decimal point and no thousands separator (1234.5)",
    )
    _first_bad(con, file, f"TRY_CAST({q(value)} AS DOUBLE) IS NULL", value, "is not a number")
    _first_bad(
        con, file, f"NOT isfinite(TRY_CAST({q(value)} AS DOUBLE))", value, "is not a finite number"
    )
    _first_bad(con, file, f"TRY_CAST({q(value)} AS DOUBLE) < 0", value, "is negative")
    if session is not None:
        _first_bad(
            con,
            file,
            f"TRY_CAST({q(session)} AS INTEGER) IS NULL",
            session,
            "is not a whole number",
        )
    time_ns = "0::BIGINT"
    if time is not None:
        as_number = f"TRY_CAST({q(time)} AS DOUBLE)"
        as_stamp = f"TRY_CAST({q(time)} AS TIMESTAMP)"
        _first_bad(
            con,
            file,
            f"{as_number} IS NULL AND {as_stamp} IS NULL",
            time,
            "is neither a number of seconds nor a timestamp",
        )
        time_ns = f"coalesce(({as_number} * 1e9)::BIGINT, epoch_ns({as_stamp}))"
    sample_key = q(sample) if sample is not None else "line::VARCHAR"
    rows = con.execute(
        f"""
        WITH r AS (
            SELECT line, {q(condition)} AS condition, coalesce({sample_key}, '') AS sample_key,
                   {f"TRY_CAST({q(session)} AS INTEGER)" if session else "0"} AS session,
                   {time_ns} AS start_ns,
                   ({time_ns} + (TRY_CAST({q(value)} AS DOUBLE) * {_UNIT_NS[unit]})::BIGINT)
                       AS end_ns
            FROM raw
        ),
        conds AS (
            SELECT condition, row_number() OVER (ORDER BY min(line)) - 1 AS condition_id
            FROM r GROUP BY condition
        ),
        keys AS (
            SELECT condition, sample_key, row_number() OVER (ORDER BY min(line)) - 1 AS sample_id
            FROM r GROUP BY condition, sample_key
        )
        SELECT c.condition_id, c.condition, s.sample_id, r.session, r.start_ns, r.end_ns
        FROM r JOIN conds c USING (condition) JOIN keys s USING (condition, sample_key)
        ORDER BY s.sample_id, r.line
        """
    ).fetchnumpy()
    condition_id = np.asarray(rows["condition_id"], dtype=np.int64)
    labels = np.asarray(rows["condition"], dtype=object)
    sample_id = np.asarray(rows["sample_id"], dtype=np.int64)
    start = np.asarray(rows["start_ns"], dtype=np.int64)
    end = np.asarray(rows["end_ns"], dtype=np.int64)
    n = len(sample_id)

    # Conditions are numbered in order of first appearance (the query's condition_id).
    order = np.unique(condition_id)
    conditions = [str(labels[np.argmax(condition_id == c)]) for c in order]
    # Per-sample bounds, vectorized: rows are sorted by sample_id.
    ids, first = np.unique(sample_id, return_index=True)
    t0 = np.minimum.reduceat(start, first)
    t1 = np.maximum.reduceat(end, first)
    sample_condition = condition_id[first]
    samples = [
        ImportedSample(
            sample_id=int(s),
            condition=int(sample_condition[i]),
            t0_ns=int(t0[i]),
            end_ns=int(t1[i]) if time is not None else int(t0[i]),
        )
        for i, s in enumerate(ids)
    ]
    table = pa.table(
        {
            "sample_id": sample_id.astype(np.int32),
            "session": np.asarray(rows["session"], dtype=np.int32),
            "txn_type": np.zeros(n, dtype=np.int16),
            "intended_start_ns": start,
            "start_ns": start,
            "end_ns": end,
            "status": pa.DictionaryArray.from_arrays(
                pa.array(np.zeros(n, dtype=np.int8)), pa.array(["ok"])
            ),
            "error_code": pa.nulls(n, type=pa.string()),
            "retries": np.zeros(n, dtype=np.int32),
            "warmup": np.zeros(n, dtype=bool),
        }
    )
    settings = {
        "format": "csv",
        "columns": {
            "condition": condition,
            "value": value,
            "sample": sample,
            "session": session,
            "time": time,
        },
        "unit": unit,
        "timed": time is not None,
        "samples_per_condition": {
            label: int(np.sum(sample_condition == i)) for i, label in enumerate(conditions)
        },
    }
    return ImportBatch(
        name=name or file.stem,
        description=f"imported from {file.name}",
        source=str(file),
        settings=settings,
        conditions=conditions,
        transaction_types=["row"],
        samples=samples,
        files=[ImportedFile(str(file), sha256(file), "csv", None, {"rows": n})],
        transactions=table,
        environment=client_environment(),
        tool_version=tool_version(),
    )


def _check_ragged(file: Path, header: str) -> None:
    """A header DuckDB read as one column although it holds a delimiter: some row has more or
    fewer fields than the header, which defeats the delimiter detection. Name that row."""
    delimiter = next((d for d in (",", ";", "\t", "|") if d in header), None)
    if delimiter is None:
        return
    with file.open(newline="", encoding="utf-8", errors="replace") as handle:
        rows = csv.reader(handle, delimiter=delimiter)
        width = len(next(rows, []))
        for line, row in enumerate(rows, start=2):
            if row and len(row) != width:
                raise ImportError_(
                    f"{file}:{line}: {len(row)} fields where the header has {width}"
                    f" ({delimiter!r}-separated); every row needs the header's fields"
                )


def _first_bad(
    con: duckdb.DuckDBPyConnection, file: Path, where: str, column: str, problem: str
) -> None:
    row = con.execute(
        f'SELECT line, "{column.replace(chr(34), chr(34) * 2)}" FROM raw WHERE {where}'
        " ORDER BY line LIMIT 1"
    ).fetchone()
    if row:
        shown = "" if row[1] is None else f"{row[1]!r} "
        raise ImportError_(f"{file}:{row[0]}: column {column!r}: {shown}{problem}")
