"""hyperfine ``--export-json`` → an imported run.

Each command is a condition (its ``command`` string; with ``--condition NAME`` and several
commands, ``NAME/command``), and each of its runs one observation: one transaction in a sample
of its own, like a ``csv`` import without samples. hyperfine records no timestamps, so the run
has no timeline and no throughput. A run whose exit code is not 0 (kept with ``-i``) is stored
with status ``error`` and the exit code, and is left out of latency figures.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

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


def _line_of(text: str, needle: str, start: int = 0) -> int | None:
    at = text.find(needle, start)
    return text.count("\n", 0, at) + 1 if at >= 0 else None


#: the longest run time taken, in seconds: its nanoseconds must fit in a 64-bit integer
MAX_SECONDS = 9e9


def read_hyperfine(file: Path) -> list[dict[str, Any]]:
    """The ``results`` of a hyperfine JSON export, checked."""
    text = "\n".join(read_text(file)) + "\n"
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise bad(
            file, exc.lineno, f"not JSON ({exc.msg}); expected hyperfine --export-json"
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise bad(file, 1, 'no "results" list; expected hyperfine --export-json output')
    if not doc["results"]:
        raise bad(file, _line_of(text, '"results"'), '"results" is empty; expected commands')
    out = []
    for index, result in enumerate(doc["results"]):
        line = _line_of(text, '"command"', 0)
        if isinstance(result, dict) and isinstance(result.get("command"), str):
            line = _line_of(text, json.dumps(result["command"])) or line
        where = f"results[{index}]"
        if not isinstance(result, dict) or not isinstance(result.get("command"), str):
            raise bad(file, line, f'{where} has no "command" string; expected one per command')
        times = result.get("times")
        if not isinstance(times, list) or not times:
            raise bad(
                file,
                line,
                f'{where} ({result["command"]!r}) has no "times"; expected the run times'
                " (hyperfine 1.9 or later)",
            )
        wrong = next(
            (
                i
                for i, t in enumerate(times)
                if isinstance(t, bool)
                or not isinstance(t, int | float)
                or not 0 <= t < MAX_SECONDS  # inf (1e400) and NaN too
            ),
            None,
        )
        if wrong is not None:
            raise bad(
                file,
                line,
                f"{where}.times[{wrong}] is {times[wrong]!r}; expected a number of seconds ≥ 0"
                f" and below {MAX_SECONDS:.0e} (stored in nanoseconds)",
            )
        codes = result.get("exit_codes")
        if codes is None:
            codes = [0] * len(times)
        if not isinstance(codes, list) or len(codes) != len(times):
            raise bad(
                file, line, f"{where}.exit_codes: expected one exit code per time ({len(times)})"
            )
        # hyperfine writes an i32, or null for a command a signal ended; anything else is not
        # its output (and a larger integer would not fit the stored 64-bit column).
        odd = next(
            (
                i
                for i, c in enumerate(codes)
                if c is not None and (type(c) is not int or not -(2**31) <= c < 2**31)
            ),
            None,
        )
        if odd is not None:
            raise bad(
                file,
                line,
                f"{where}.exit_codes[{odd}] is {codes[odd]!r}; expected a 32-bit whole number,"
                " or null for a command a signal ended",
            )
        out.append(
            {
                "command": result["command"],
                "times": [float(t) for t in times],
                "exit_codes": [int(c) if isinstance(c, int) else -1 for c in codes],
                "stats": {
                    k: result.get(k)
                    for k in ("mean", "stddev", "median", "user", "system", "min", "max")
                },
                "parameters": result.get("parameters"),
            }
        )
    return out


def import_hyperfine(
    store: Store,
    paths: Sequence[str | Path],
    *,
    conditions: ConditionRule | None = None,
    run_id: int | None = None,
    force: bool = False,
    name: str | None = None,
) -> int:
    """Import hyperfine JSON exports as a run (or into ``run_id``); return its id."""
    rule = conditions or ConditionRule()
    files = input_files(paths)
    labels: list[str] = []
    samples: list[ImportedSample] = []
    sample_ids: list[np.ndarray] = []
    values: list[np.ndarray] = []
    codes: list[np.ndarray] = []
    records = []
    for file in files:
        results = read_hyperfine(file)
        for result in results:
            if rule.explicit:
                base = rule.label(file)
                label = base if len(results) == 1 else f"{base}/{result['command']}"
            else:
                label = result["command"]
            cid = label_index(labels, label)
            first = len(samples)
            n = len(result["times"])
            samples.extend(ImportedSample(first + i, cid, 0, 0) for i in range(n))
            sample_ids.append(np.arange(first, first + n, dtype=np.int32))
            values.append(np.round(np.asarray(result["times"]) * 1e9).astype(np.int64))
            codes.append(np.asarray(result["exit_codes"], dtype=np.int64))
        meta = {
            "commands": [{k: r[k] for k in ("command", "stats", "parameters")} for r in results]
        }
        records.append(ImportedFile(str(file), sha256(file), "hyperfine", None, meta))
    end = np.concatenate(values)
    code = np.concatenate(codes)
    n = len(end)
    failed = code != 0
    table = pa.table(
        {
            "sample_id": np.concatenate(sample_ids),
            "session": np.zeros(n, dtype=np.int32),
            "txn_type": np.zeros(n, dtype=np.int16),
            "intended_start_ns": np.zeros(n, dtype=np.int64),
            "start_ns": np.zeros(n, dtype=np.int64),
            "end_ns": end,
            "status": pa.array(np.where(failed, "error", "ok").tolist(), type=pa.string()),
            "error_code": pa.array(
                [f"exit {c}" if c else None for c in code.tolist()], type=pa.string()
            ),
            "retries": np.zeros(n, dtype=np.int32),
            "warmup": np.zeros(n, dtype=bool),
        }
    )
    batch = ImportBatch(
        name=name or files[0].stem,
        description="hyperfine --export-json: one observation per run of each command",
        source=", ".join(str(f) for f in files),
        settings={
            "format": "hyperfine",
            "timed": False,
            "files": [str(f) for f in files],
            "samples": "one per run of a command",
        },
        conditions=labels,
        transaction_types=["run"],
        samples=samples,
        files=records,
        transactions=table,
        environment=client_environment(),
        tool_version=tool_version(),
    )
    return store.import_batch(batch, run_id=run_id, force=force)
