"""The comparison of conditions in every output format, from the JSON contract's dict."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from wannabet.render.summary import fmt_num

_VERDICT_STYLE = {
    "faster": "bold green",
    "slower": "bold red",
    "no-difference": "bold",
    "inconclusive": "dim",
}


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
    from wannabet.render.markdown import clean_strings

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
            _p(c["normality"]["p"]),
            _interval(c["clt"]["mean_ci95"]),
        )
    parts: list[Any] = [conditions]
    bets = []
    for c in doc["conditions"]:
        clt = c["clt"]
        if clt.get("bet"):
            within = clt["within_sd_range_2"]
            check = (
                f" ({within['count']} of {within['n']} observed lie within ±2 sd,"
                f" {_interval(clt['sd_range_2'])})"
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
        table.add_row(escape(c["condition"]), fmt_num(c["mean"]), _interval(c["hdi"]))
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
                _pct(p["mean_pct"]),
                _interval(p["hdi_pct"], "%"),
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
            table.add_row(escape(e["term"]), _pct(e["mean_pct"]), _interval(e["hdi_pct"], "%"))
        out.append(table)
    return out


def bayes_markdown(doc: Mapping[str, Any]) -> str:
    """The Bayesian section of a comparison document as Markdown ("" without one).

    Aligned tables (:func:`wannabet.render.markdown.markdown_table`): labels are cleaned of
    control characters and line breaks, so they can neither break a row nor reach the
    terminal as escape sequences.
    """
    from wannabet.render.markdown import cell, markdown_table

    b = doc.get("bayes")
    if not b:
        return ""
    level = f"{100 * b['hdi_prob']:g}%"
    header = ["condition", "baseline", "Δ mean", f"{level} HDI"]
    header += ["P(faster)", "R-hat", "ESS", "decision"]
    rows = [
        [
            c["condition"],
            c["baseline"],
            _pct(p["mean_pct"]),
            _interval(p["hdi_pct"], "%"),
            f"{p['p_faster']:.3f}",
            "–" if p["rhat_max"] is None else format(p["rhat_max"], ".3f"),
            "–" if p["ess_min"] is None else format(p["ess_min"], ".0f"),
            f"**{p['rope_decision']}**",
        ]
        for c in doc["comparisons"]
        if (p := c.get("bayes"))
    ]
    out = [
        "",
        f"**Bayesian estimation**, {cell(b['model'])} model, {level} HDI, ROPE ±{b['rope_pct']:g}%",
        "",
        markdown_table(
            header,
            rows,
            ["left", "left", "right", "left", "right", "right", "right", "left"],
        ).rstrip("\n"),
    ]
    if b["effects"]:
        effects = [
            [e["term"], _pct(e["mean_pct"]), _interval(e["hdi_pct"], "%")] for e in b["effects"]
        ]
        out += [
            "",
            markdown_table(
                ["factorial term", "Δ mean", f"{level} HDI"], effects, ["left", "right", "left"]
            ).rstrip("\n"),
        ]
    return "\n".join(out)


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
