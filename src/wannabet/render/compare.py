"""The comparison of conditions in every output format, from the JSON contract's dict."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from wannabet.render.summary import fmt_num

_VERDICT_STYLE = {"faster": "bold green", "slower": "bold red", "no-difference": "dim"}


def compare_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, allow_nan=False)


def _interval(pair: list[float | None] | None, suffix: str = "") -> str:
    if not pair or pair[0] is None or pair[1] is None:
        return "–"
    return f"[{fmt_num(pair[0])}, {fmt_num(pair[1])}]{suffix}"


def _p(p: float | None) -> str:
    if p is None:
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:+.1f}%"


def compare_table(doc: dict[str, Any]) -> Group:
    unit = doc["unit"]
    title = f"{_runs(doc)} · {doc['metric']} ({unit})"
    title += f" · {doc['level']} level · α={doc['alpha']} · ROPE ±{doc['rope_pct']:g}%"
    conditions = Table(title=escape(title), title_justify="left")
    conditions.add_column("condition", style="bold", overflow="fold")
    for name in ("n", "mean", "sd", "median", "p95", "CV", "normality p", "mean 95% CI"):
        conditions.add_column(name, justify="right")
    for c in doc["conditions"]:
        conditions.add_row(
            escape(c["condition"]),
            str(c["n"]),
            fmt_num(c["mean"]),
            fmt_num(c["sd"]),
            fmt_num(c["median"]),
            fmt_num(c["p95"]),
            "–" if c["cv"] is None else f"{100 * c['cv']:.1f}%",
            _p(c["normality"]["p"]),
            _interval(c["clt"]["mean_ci95"]),
        )
    parts: list[Any] = [conditions]
    bets = []
    for c in doc["conditions"]:
        clt = c["clt"]
        if clt.get("bet"):
            within = clt["within_sd_range_2"]
            bets.append(
                f"  {escape(c['condition'])}: {escape(clt['bet'])}"
                f" ({within['count']} of {within['n']} observed lie within ±2 sd,"
                f" {_interval(clt['sd_range_2'])})"
            )
    if bets:
        parts.append(Text.from_markup("[bold]Wanna bet?[/bold]\n" + "\n".join(bets)))
    if doc["comparisons"]:
        table = Table(title="Against the baseline", title_justify="left")
        table.add_column("condition", style="bold", overflow="fold")
        for name in ("Δ mean", "CI", "Δ median", "test", "p (adj.)", "Cliff's δ", "verdict"):
            table.add_column(name, justify="right" if name not in ("test", "verdict") else "left")
        for c in doc["comparisons"]:
            style = _VERDICT_STYLE.get(c["verdict"], "")
            table.add_row(
                escape(f"{c['condition']} vs {c['baseline']}"),
                _pct(c["delta_pct"]),
                _interval(c["ci_pct"], "%"),
                _pct(c["median_delta_pct"]),
                escape(c["test"] or "–"),
                _p(c["p_adjusted"]),
                "–" if c["cliffs_delta"] is None else f"{c['cliffs_delta']:+.2f}",
                f"[{style}]{c['verdict']}[/{style}]" if style else c["verdict"],
            )
        parts.append(table)
        lines = [
            f"  {escape(c['condition'])}: {escape(c['summary'])} — {escape(c['note'])}"
            for c in doc["comparisons"]
        ]
        parts.append(Text.from_markup("\n".join(lines)))
    if doc.get("omnibus"):
        parts.append(Text(f"Omnibus: {doc['omnibus']['test']} p={_p(doc['omnibus']['p'])}"))
    warnings = [
        f"  [yellow]![/yellow] {escape(c['condition'])}: {escape(d['message'])}"
        f" → {escape(d['advice'])}"
        for c in doc["conditions"]
        for d in c["diagnostics"]
    ]
    if warnings:
        parts.append(Text.from_markup("[bold]Diagnostics[/bold]\n" + "\n".join(warnings)))
    return Group(*parts)


def compare_markdown(doc: dict[str, Any]) -> str:
    out = [
        f"**{_md(_runs(doc))}**,"
        f" {doc['metric']} ({doc['unit']}),"
        f" {doc['level']} level, α = {doc['alpha']}, ROPE ±{doc['rope_pct']:g}%",
        "",
        "| condition | n | mean | sd | median | p95 | normality p | mean 95% CI |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for c in doc["conditions"]:
        out.append(
            f"| {_md(c['condition'])} | {c['n']} | {fmt_num(c['mean'])} | {fmt_num(c['sd'])}"
            f" | {fmt_num(c['median'])} | {fmt_num(c['p95'])} | {_p(c['normality']['p'])}"
            f" | {_interval(c['clt']['mean_ci95'])} |"
        )
    if doc["comparisons"]:
        out += [
            "",
            "| condition | baseline | Δ mean | CI | test | p (adj.) | verdict | note |",
            "|---|---|---:|---|---|---:|---|---|",
        ]
        for c in doc["comparisons"]:
            out.append(
                f"| {_md(c['condition'])} | {_md(c['baseline'])} | {_pct(c['delta_pct'])}"
                f" | {_interval(c['ci_pct'], '%')} | {_md(c['test'] or '–')}"
                f" | {_p(c['p_adjusted'])}"
                f" | **{c['verdict']}** | {_md(c['note'])} |"
            )
    return "\n".join(out) + "\n"


def compare_csv(doc: dict[str, Any]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(
        [
            "condition",
            "baseline",
            "n",
            "mean",
            "sd",
            "median",
            "p95",
            "p99",
            "delta_pct",
            "ci_low_pct",
            "ci_high_pct",
            "test",
            "p_value",
            "p_adjusted",
            "verdict",
        ]
    )
    by_name = {c["condition"]: c for c in doc["comparisons"]}
    for c in doc["conditions"]:
        cmp = by_name.get(c["condition"], {})
        ci = cmp.get("ci_pct") or [None, None]
        row = [
            c["condition"],
            cmp.get("baseline"),
            c["n"],
            c["mean"],
            c["sd"],
            c["median"],
            c["p95"],
            c["p99"],
            cmp.get("delta_pct"),
            ci[0],
            ci[1],
            cmp.get("test"),
            cmp.get("p_value"),
            cmp.get("p_adjusted"),
            cmp.get("verdict"),
        ]
        writer.writerow(["" if v is None else v for v in row])
    return buf.getvalue()


def _runs(doc: dict[str, Any]) -> str:
    runs = doc.get("run") or {}
    if isinstance(runs, list):
        return "Runs " + ", ".join(f"{r['run_id']} ({r['name']})" for r in runs)
    return f"Run {runs.get('run_id', '?')}: {runs.get('name', '')}"


def _md(text: str) -> str:
    return str(text).replace("|", "\\|")
