"""The per-condition summary of a run in every output format.

The JSON form is a contract (``docs/cli.md``)::

    {"run": {...}, "conditions": [{"condition": "synchronous=OFF", "samples": N,
      "transactions": N, "errors": N, "errors_by_status": {...}, "tps": x,
      "latency_ms": {"mean", "p50", "p95", "p99", "max"}}]}
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from typing import Any

from rich.table import Table

from wannabet.store import ConditionSummary, RunInfo

_COLUMNS = (
    "condition",
    "samples",
    "transactions",
    "errors",
    "tps",
    "mean_ms",
    "p50_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
)


def summary_dict(run: RunInfo, rows: Sequence[ConditionSummary]) -> dict[str, Any]:
    return {"run": run.to_dict(), "conditions": [r.to_dict() for r in rows]}


def summary_json(run: RunInfo, rows: Sequence[ConditionSummary]) -> str:
    return json.dumps(summary_dict(run, rows), indent=2, allow_nan=False)


def _flat(row: ConditionSummary) -> list[Any]:
    lat = row.latency_ms
    return [
        row.condition,
        row.samples,
        row.transactions,
        row.errors,
        row.tps,
        lat["mean"],
        lat["p50"],
        lat["p95"],
        lat["p99"],
        lat["max"],
    ]


def summary_csv(rows: Sequence[ConditionSummary]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_COLUMNS)
    for row in rows:
        writer.writerow(["" if v is None else v for v in _flat(row)])
    return out.getvalue()


def summary_markdown(run: RunInfo, rows: Sequence[ConditionSummary]) -> str:
    lines = [
        f"**Run {run.run_id}: {_md(run.name)}** ({run.status})",
        "",
        "| condition | samples | transactions | errors | TPS"
        " | mean ms | p50 ms | p95 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        cells = _flat(row)
        lines.append(
            "| "
            + " | ".join(
                [_md(cells[0]), *(str(c) for c in cells[1:4]), *(fmt_num(c) for c in cells[4:])]
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


def summary_table(run: RunInfo, rows: Sequence[ConditionSummary]) -> Table:
    table = Table(title=f"Run {run.run_id}: {run.name} ({run.status})", title_justify="left")
    table.add_column("condition", style="bold", overflow="fold")
    for name in (
        "samples",
        "transactions",
        "errors",
        "TPS",
        "mean ms",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
    ):
        table.add_column(name, justify="right")
    for row in rows:
        cells = _flat(row)
        errors = str(cells[3]) if not row.errors else f"[red]{cells[3]}[/red]"
        table.add_row(
            _escape(cells[0]),
            str(cells[1]),
            str(cells[2]),
            errors,
            *(fmt_num(c) for c in cells[4:]),
        )
    return table


def summary_warnings(rows: Sequence[ConditionSummary]) -> list[str]:
    """What a reader of the table must not miss."""
    out = []
    for row in rows:
        if row.samples and not row.transactions:
            out.append(
                f"{row.condition}: no measured transactions; every one was warm-up or the"
                " samples were empty (lengthen the duration or shorten the warm-up)"
            )
        if row.sessions_lost:
            out.append(
                f"{row.condition}: {row.sessions_lost} session(s) lost their connection; those"
                " samples ran with fewer sessions than planned (see the server log)"
            )
        if row.transactions and row.errors:
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(row.errors_by_status.items()))
            out.append(f"{row.condition}: {row.errors} failed transactions ({kinds})")
    return out


def fmt_num(value: Any) -> str:
    if value is None:
        return "–"
    v = float(value)
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def _md(text: str) -> str:
    return str(text).replace("|", "\\|")


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(str(text))
