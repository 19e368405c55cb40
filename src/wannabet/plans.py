"""``wannabet plan``: the samples and sample length a run needs, from a pilot run's store.

Reads per sample the value of the statistic and of each half of the sample (by start time), and
the time a sample costs beyond its measured window; :mod:`wannabet.analysis.planning` does the
statistics. Also writes a plan into an experiment file's ``[sampling]`` table.
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import numpy as np

from wannabet.analysis.planning import Pilot, Plan, PlanStat, variance_components
from wannabet.datasets import transaction_type_id
from wannabet.durations import format_duration
from wannabet.errors import AnalysisError, SpecError
from wannabet.store import RunInfo, Store, queries


def load_pilot(store: Store, run: RunInfo, stat: PlanStat, txn: str | None = None) -> Pilot:
    """The variance components of ``stat`` (of one transaction type, or all) in ``run``."""
    if stat == "tps" and txn is not None:
        raise SpecError(
            "a plan for throughput covers every transaction type; drop --txn, or plan for"
            " --stat mean or p99 of the type",
            key="--txn",
            file="command line",
        )
    if not run.timed:
        raise AnalysisError(
            f"run {run.run_id} has no start times (an import without a time column): its"
            " samples cannot be split in halves or timed; plan from a run or a timed import"
        )
    type_id = None if txn is None else transaction_type_id(store, run, txn)
    with store.read() as con:
        samples = queries.pilot_samples(con, run.run_id)
        halves = queries.half_statistics(con, run.run_id, txn_type=type_id)
        whole = queries.whole_statistics(con, run.run_id, txn_type=type_id)
    # What the pilot leaves out, as summary and compare say it: degraded samples measured
    # something else than the condition (a stuck server, a restart).
    degraded = 0 if store.include_degraded else len(store.degraded_samples(run.run_id))
    if not samples:
        left = (
            f"; its {degraded} degraded sample(s) are left out (--include-degraded takes them in)"
            if degraded
            else ""
        )
        raise AnalysisError(f"run {run.run_id} has no samples to plan from{left}")
    by_half: dict[int, dict[bool, tuple[int, float, float]]] = {}
    for sid, late, n, mean_ms, p99_ms in halves:
        by_half.setdefault(int(sid), {})[bool(late)] = (int(n), float(mean_ms), float(p99_ms))
    rows = {int(sid): (int(n), float(m), v, float(p)) for sid, n, m, v, p in whole}
    label, block, value, duration, half = [], [], [], [], []
    for sid, cond, blk, dur, _, _, _, committed, _ in samples:
        sid = int(sid)
        row = rows.get(sid)
        parts = by_half.get(sid, {})
        if stat == "tps":
            v = float(committed) / float(dur) if dur else math.nan
            # The halves last equally long: their TPS ratio is the ratio of their counts
            # (of the stored rows, a uniform subset when not every row was kept).
            h = math.log(parts[False][0] / parts[True][0]) if len(parts) == 2 else math.nan
        elif row is None:
            continue  # no stored success in this sample
        else:
            i = 1 if stat == "mean" else 2
            v = row[1] if stat == "mean" else row[3]
            h = (
                math.log(parts[False][i] / parts[True][i])
                if len(parts) == 2 and parts[False][i] > 0 and parts[True][i] > 0
                else math.nan
            )
        label.append(str(cond))
        block.append(int(blk))
        value.append(v)
        duration.append(float(dur))
        half.append(h)
    if not any(int(s[7] or 0) for s in samples):
        raise AnalysisError(
            f"run {run.run_id} has no successful transaction to plan from (every one failed);"
            " plan from a pilot run whose transactions succeed"
        )
    if not value or all(math.isnan(h) for h in half):
        raise AnalysisError(
            f"run {run.run_id} stored no transaction rows to split its samples in halves; plan"
            ' from a pilot run with [sampling] record = "auto" (the default)'
        )
    components = variance_components(
        label, block, value, duration, half_log_ratio=np.asarray(half, dtype=np.float64)
    )
    # What a sample costs besides its measured window: its warm-up and the gap before the next.
    gaps = [max(0, int(b[5]) - int(a[6])) / 1e9 for a, b in itertools.pairwise(samples)]
    warmup = float(np.median([float(s[4]) for s in samples]))
    overhead = warmup + (float(np.mean(gaps)) if gaps else 0.0)
    seen = tuple(dict.fromkeys(label))
    return Pilot(components, overhead, seen, stat, txn, degraded)


_TABLE = re.compile(r"^\s*\[([^\[\]]+)\]\s*(#.*)?$")
#: ``key = value  # comment``: the comment (with the space before it) after a TOML value that
#: is a number, a basic or literal string, or a boolean
_COMMENT_AFTER_VALUE = re.compile(
    r"""^\s*[\w.]+\s*=\s*(?:"(?:[^"\\]|\\.)*"|'[^']*'|[^\s#]+)(\s*#.*)?\s*$"""
)


def write_plan(path: Path, plan: Plan) -> None:
    """Set ``samples`` and ``duration`` in the ``[sampling]`` table of the experiment file at
    ``path``, keeping everything else (comments included); the result must still parse."""
    from wannabet.spec import parse_experiment

    if plan.best is None or plan.best.samples is None:
        raise AnalysisError("no plan reaches the power asked for: nothing to write")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read it: {exc.strerror}", file=str(path)) from None
    values = {
        "samples": str(plan.best.samples),
        "duration": f'"{format_duration(plan.best.duration_s)}"',
    }
    lines = text.splitlines()
    start = next(
        (
            i
            for i, line in enumerate(lines)
            if (m := _TABLE.match(line)) and m[1].strip() == "sampling"
        ),
        None,
    )
    if start is None:
        lines += ["", "[sampling]", *(f"{k} = {v}" for k, v in values.items())]
    else:
        end = next((i for i in range(start + 1, len(lines)) if _TABLE.match(lines[i])), len(lines))
        for i in range(start + 1, end):
            m = re.match(r"^(\s*)(samples|duration|until_decided)\s*=", lines[i])
            if m and m[2] == "until_decided" and "true" in lines[i].split("#")[0]:
                raise SpecError(
                    "this file stops when decided (until_decided = true); a plan is a fixed"
                    " number of samples: remove until_decided or give the plan on the command line",
                    key="sampling.until_decided",
                    file=str(path),
                    line=i + 1,
                )
            if m and m[2] in values:
                # The value is replaced; a comment after it stays.
                tail = _COMMENT_AFTER_VALUE.match(lines[i])
                comment = tail[1] if tail and tail[1] else ""
                lines[i] = f"{m[1]}{m[2]} = {values.pop(m[2])}{comment}"
        lines[start + 1 : start + 1] = [f"{k} = {v}" for k, v in values.items()]
    new = "\n".join(lines) + "\n"
    parse_experiment(new, file=str(path))  # a plan never leaves a file that does not load
    path.write_text(new, encoding="utf-8")
