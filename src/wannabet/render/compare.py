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

from wannabet.render.format import clean_strings, fmt_num, interval, p_value, pct

_VERDICT_STYLE = {
    "faster": "bold green",
    "slower": "bold red",
    "no-difference": "bold",
    "inconclusive": "dim",
}


def compare_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, allow_nan=False)


def compare_table(doc: dict[str, Any]) -> Group:
    # Labels and messages come from results files: no escape sequence reaches the terminal.
    doc = clean_strings(doc)
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
            p_value(c["normality"]["p"]),
            interval(c["clt"]["mean_ci95"]),
        )
    parts: list[Any] = [conditions]
    bets = []
    for c in doc["conditions"]:
        clt = c["clt"]
        if clt.get("bet"):
            within = clt["within_sd_range_2"]
            check = (
                f" ({within['count']} of {within['n']} observed lie within ±2 sd,"
                f" {interval(clt['sd_range_2'])})"
                if not clt["bet"].startswith("no bet")
                else ""
            )
            bets.append(f"  {escape(c['condition'])}: {escape(clt['bet'])}{check}")
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
                pct(c["delta_pct"]),
                interval(c["ci_pct"], "%"),
                pct(c["median_delta_pct"]),
                escape(c["test"] or "–"),
                p_value(c["p_adjusted"]),
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
        parts.append(Text(f"Omnibus: {doc['omnibus']['test']} p={p_value(doc['omnibus']['p'])}"))
    if doc.get("bayes"):
        parts += _bayes_tables(doc)
    warnings = [
        f"  [yellow]![/yellow] {escape(e['condition'])}: left out, {escape(e['reason'])}"
        " → see `wannabet summary` for its errors"
        for e in doc.get("excluded", [])
    ]
    warnings += [
        f"  [yellow]![/yellow] {escape(c['condition'])}: {escape(d['message'])}"
        f" → {escape(d['advice'])}"
        for c in doc["conditions"]
        for d in c["diagnostics"]
    ]
    warnings += [
        f"  [yellow]![/yellow] {escape(d['message'])} → {escape(d['advice'])}"
        for d in (doc.get("bayes") or {}).get("diagnostics", [])
    ]
    if warnings:
        parts.append(Text.from_markup("[bold]Diagnostics[/bold]\n" + "\n".join(warnings)))
    return Group(*parts)


_DECISION_STYLE = {"credible-difference": "bold", "practically-equivalent": "green"}


def _bayes_tables(doc: dict[str, Any]) -> list[Any]:
    b = doc["bayes"]
    level = f"{100 * b['hdi_prob']:g}%"
    title = f"Bayesian estimation · {b['model']} model · {level} HDI · ROPE ±{b['rope_pct']:g}%"
    out: list[Any] = []
    table = Table(title=escape(title), title_justify="left")
    table.add_column("condition", style="bold", overflow="fold")
    for name in (f"posterior mean ({doc['unit']})", f"{level} HDI"):
        table.add_column(name, justify="right")
    for c in b["conditions"]:
        table.add_row(escape(c["condition"]), fmt_num(c["mean"]), interval(c["hdi"]))
    out.append(table)
    pairs = [c for c in doc["comparisons"] if c.get("bayes")]
    if pairs:
        faster = "higher is faster" if doc["metric"] == "throughput" else "lower is faster"
        table = Table(title=f"Change against the baseline ({faster})", title_justify="left")
        table.add_column("condition", style="bold", overflow="fold")
        for name in ("Δ mean", f"{level} HDI", "P(faster)", "R-hat", "ESS", "decision"):
            table.add_column(name, justify="left" if name == "decision" else "right")
        for c in pairs:
            p = c["bayes"]
            style = _DECISION_STYLE.get(p["rope_decision"], "")
            table.add_row(
                escape(f"{c['condition']} vs {c['baseline']}"),
                pct(p["mean_pct"]),
                interval(p["hdi_pct"], "%"),
                "–" if p["p_faster"] is None else f"{p['p_faster']:.3f}",
                "–" if p["rhat_max"] is None else f"{p['rhat_max']:.3f}",
                "–" if p["ess_min"] is None else f"{p['ess_min']:.0f}",
                f"[{style}]{p['rope_decision']}[/{style}]" if style else p["rope_decision"],
            )
        out.append(table)
    if b["effects"]:
        table = Table(title="Factorial effects on the mean", title_justify="left")
        table.add_column("term", style="bold", overflow="fold")
        for name in ("Δ mean", f"{level} HDI"):
            table.add_column(name, justify="right")
        for e in b["effects"]:
            table.add_row(escape(e["term"]), pct(e["mean_pct"]), interval(e["hdi_pct"], "%"))
        out.append(table)
    return out


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
