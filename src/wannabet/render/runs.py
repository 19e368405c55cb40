"""The list of runs in a results file."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

from rich.table import Table

from wannabet.render.format import cell, label, one_line
from wannabet.store import RunInfo

_STATUS_STYLE = {"complete": "green", "running": "yellow", "interrupted": "yellow", "failed": "red"}
_FIELDS = (
    "run_id",
    "name",
    "kind",
    "status",
    "started_at",
    "conditions",
    "samples",
    "transactions",
    "target",
)


def runs_table(runs: Sequence[RunInfo]) -> Table:
    table = Table(title="Runs", title_justify="left")
    for name in (
        "id",
        "name",
        "kind",
        "status",
        "started",
        "conditions",
        "samples",
        "transactions",
        "target",
    ):
        table.add_column(
            name,
            justify="right" if name in ("id", "conditions", "samples", "transactions") else "left",
        )
    for r in runs:
        style = _STATUS_STYLE.get(r.status, "")
        table.add_row(
            str(r.run_id),
            label(r.name),
            r.kind,
            f"[{style}]{r.status}[/{style}]" if style else r.status,
            r.started_at.strftime("%Y-%m-%d %H:%M:%S"),
            str(r.conditions),
            str(r.samples),
            f"{r.transactions:,}",
            label(r.target or ""),
        )
    return table


def runs_json(runs: Sequence[RunInfo]) -> str:
    return json.dumps([r.to_dict() for r in runs], indent=2)


def runs_csv(runs: Sequence[RunInfo]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_FIELDS)
    for r in runs:
        d = r.to_dict()
        writer.writerow([one_line(str(d[f])) if d[f] is not None else "" for f in _FIELDS])
    return out.getvalue()


def runs_markdown(runs: Sequence[RunInfo]) -> str:
    lines = ["| " + " | ".join(_FIELDS) + " |", "|" + "---|" * len(_FIELDS)]
    for r in runs:
        d = r.to_dict()
        lines.append(
            "| " + " | ".join(cell(d[f] if d[f] is not None else "") for f in _FIELDS) + " |"
        )
    return "\n".join(lines) + "\n"
