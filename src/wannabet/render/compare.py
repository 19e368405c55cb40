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

from wannabet.analysis.compare import p_text
from wannabet.documents import (
    BayesDocument,
    ComparisonDocument,
    ConditionDocument,
    PairDocument,
    SequentialDocument,
)
from wannabet.render.format import (
    clean_strings,
    column_unit,
    fixed,
    fmt_num,
    interval,
    one_line,
    p_value,
    pairs_title,
    pct,
    share,
    verdict_cells,
)
from wannabet.render.markdown import (
    degraded_warnings,
    diagnostic_lines,
    level_note,
    open_loop_warnings,
)

_VERDICT_STYLE = {
    "faster": "bold green",
    "slower": "bold red",
    "higher": "bold yellow",
    "lower": "bold yellow",
    "no-difference": "bold",
    "inconclusive": "dim",
}


def compare_json(doc: ComparisonDocument | list[ComparisonDocument]) -> str:
    """The document; several (one per ``--txn`` type) as a JSON array of documents."""
    return json.dumps(doc, indent=2, allow_nan=False)


def _stat_title(doc: ComparisonDocument) -> str:
    if "stat" not in doc:
        return ""
    txn = doc.get("txn")
    if doc["metric"] == "cost":
        # A unit-of-work figure: the server's time per unit, a commit or one transaction type's.
        return f" · {doc['stat']} per " + ("commit" if txn is None else f"{txn} transaction")
    return f" · {doc['stat']} of " + ("all types" if txn is None else f"type {txn}")


def compare_table(doc: ComparisonDocument) -> Group:
    # Labels and messages come from results files: no escape sequence reaches the terminal.
    doc = clean_strings(doc)
    unit = doc["unit"]
    # Latencies in the unit that suits the table (µs, ms or s); the JSON stays in ms.
    shown = column_unit(unit, (c["median"] for c in doc["conditions"]))
    title = f"{_runs(doc)} · {doc['metric']} ({shown})"
    title += f" · {doc['level']} level · α={doc['alpha']} · ROPE ±{doc['rope_pct']:g}%"
    title += _stat_title(doc)
    stat = doc.get("stat")
    conditions = Table(
        title=escape(title),
        title_justify="left",
        caption=escape(level_note(doc)) if stat is None else None,
        caption_justify="left",
    )
    conditions.add_column("condition", style="bold", overflow="fold")
    if stat is not None:
        # The statistic of all transactions; the columns after it describe one value per sample.
        conditions.add_column(stat, justify="right")
    for name in ("n", "mean", "sd", "median", "p95", "CV", "normality p", "mean 95% CI"):
        conditions.add_column(name, justify="right")
    for c in doc["conditions"]:
        first = [escape(c["condition"])]
        if stat is not None:
            first.append(shown.num(c.get("stat_value")))
        conditions.add_row(
            *first,
            str(c["n"]),
            shown.num(c["mean"]),
            shown.num(c["sd"]),
            shown.num(c["median"]),
            shown.num(c["p95"]),
            share(c["cv"]),
            p_value(c["normality"]["p"]),
            shown.interval(c["clt"]["mean_ci95"]),
        )
    parts: list[Any] = [conditions]
    bets = []
    for c in doc["conditions"]:
        clt = c["clt"]
        if clt.get("bet"):
            within = clt["within_sd_range_2"]
            check = (
                f" ({within['count']} of {within['n']} observed lie within ±2 sd,"
                f" {shown.interval(clt['sd_range_2'])} {shown})"
                if not clt["bet"].startswith("no bet")
                else ""
            )
            bets.append(f"  {escape(c['condition'])}: {escape(clt['bet'])}{check}")
    if bets:
        parts.append(Text.from_markup("[bold]Wanna bet?[/bold]\n" + "\n".join(bets)))
    sequential = doc.get("sequential")
    if sequential:
        parts.append(_sequential_table(sequential))
    if doc["comparisons"]:
        title = pairs_title(str(doc.get("pairs", "baseline")))
        if sequential:
            title += " · fixed-sample tests and intervals: descriptive only"
        table = Table(title=title, title_justify="left")
        table.add_column("condition", style="bold", overflow="fold")
        delta = f"Δ {stat or 'mean'}"
        for name in (delta, "CI", "Δ median", "test", "p (adj.)", "Cliff's δ", "verdict"):
            table.add_column(name, justify="right" if name not in ("test", "verdict") else "left")
        for pair in doc["comparisons"]:
            style = _VERDICT_STYLE.get(pair["verdict"], "")
            cells = verdict_cells(pair)
            table.add_row(
                escape(f"{pair['condition']} vs {pair['baseline']}"),
                cells.delta,
                cells.ci,
                cells.median_delta,
                escape(cells.test),
                cells.p,
                cells.cliff,
                _verdict_cell(pair, style),
            )
        parts.append(table)
        # Against one baseline the condition names the pair; with other pairs a condition
        # has several references, so each line names its own.
        named = doc.get("pairs", "baseline") != "baseline"
        lines = [
            f"  {escape(p['condition'] + (' vs ' + p['baseline'] if named else ''))}:"
            f" {escape(p['summary'])} — {escape(p['note'])}"
            for p in doc["comparisons"]
        ]
        parts.append(Text.from_markup("\n".join(lines)))
        split = [s for p in doc["comparisons"] if (s := p.get("disagreement"))]
        if split:
            parts.append(
                Text.from_markup(
                    "[bold yellow]The analyses disagree: no bet[/bold yellow]\n"
                    + "\n".join(f"  [yellow]![/yellow] {escape(s)}" for s in split)
                )
            )
    omnibus = doc["omnibus"]
    if omnibus:
        parts.append(Text(f"Omnibus: {omnibus['test']} {p_text(omnibus['p'])}"))
    if doc.get("types"):
        parts.append(_types_table(doc["types"], unit))
    bayes = doc.get("bayes")
    if bayes:
        parts += _bayes_tables(doc, bayes)
    warnings = [
        f"  [yellow]![/yellow] {escape(e['condition'])}: left out, {escape(e['reason'])}"
        " → see `wannabet summary` for its errors"
        for e in doc.get("excluded", [])
    ]
    warnings += [f"  [yellow]![/yellow] {escape(d)}" for d in diagnostic_lines(doc)]
    warnings += [
        f"  [yellow]![/yellow] {escape(one_line(w))}"
        for w in open_loop_warnings(doc) + degraded_warnings(doc.get("degraded", []))
    ]
    if warnings:
        parts.append(Text.from_markup("[bold]Diagnostics[/bold]\n" + "\n".join(warnings)))
    return Group(*parts)


def _sequential_table(seq: SequentialDocument) -> Group:
    """How a run that stops when decided stopped, and each comparison's sequence."""
    table = Table(
        title=f"Anytime-valid confidence sequences · {seq['statistic']} · alpha"
        f" {seq['alpha']:g} over all comparisons · ROPE ±{seq['rope_pct']:g}%",
        title_justify="left",
    )
    table.add_column("condition", style="bold", overflow="fold")
    for name in ("blocks", "Δ", "interval", "state"):
        table.add_column(name, justify="left" if name == "state" else "right")
    for c in seq["comparisons"]:
        style = _VERDICT_STYLE.get(_SEQUENCE_VERDICT.get(c["state"], ""), "")
        state = f"[{style}]{escape(c['state'])}[/{style}]" if style else escape(c["state"])
        table.add_row(
            escape(f"{c['condition']} vs {c['baseline']}"),
            str(c["blocks"]),
            pct(c["change_pct"]),
            "none yet"
            if c["low_pct"] is None or c["high_pct"] is None
            else interval([c["low_pct"], c["high_pct"]], "%"),
            state,
        )
    return Group(Text.from_markup(f"[bold]{escape(seq['note'])}[/bold]"), table)


_SEQUENCE_VERDICT = {"faster": "faster", "slower": "slower", "no-difference": "no-difference"}


def _verdict_cell(pair: PairDocument, style: str) -> str:
    """The verdict, marked when the Bayesian analysis does not support it."""
    verdict = escape(pair["verdict"])
    text = f"[{style}]{verdict}[/{style}]" if style else verdict
    bayes = pair.get("bayes")
    if pair.get("disagreement") and bayes:
        text += f" [yellow](Bayes: {escape(bayes['rope_decision'])})[/yellow]"
    return text


def _types_table(types: list[ComparisonDocument], unit: str) -> Table:
    """Each transaction type's own verdict on the statistic (``compare --txn NAME``)."""
    stat = str(types[0].get("stat") or "mean")
    hint = "; compare --txn NAME --stat p99 for tails" if stat == "mean" else ""
    table = Table(title=f"Per transaction type ({stat} of the type{hint})", title_justify="left")
    table.add_column("type", style="bold", overflow="fold")
    table.add_column("condition", overflow="fold")
    shown = column_unit(unit, (c.get("stat_value") for t in types for c in t["conditions"]))
    for name in (
        f"baseline {shown}",
        f"condition {shown}",
        f"Δ {stat}",
        "CI",
        "p (adj.)",
        "verdict",
    ):
        table.add_column(name, justify="left" if name == "verdict" else "right")
    for t in types:
        values = {c["condition"]: c.get("stat_value") for c in t["conditions"]}
        for pair in t["comparisons"]:
            style = _VERDICT_STYLE.get(pair["verdict"], "")
            table.add_row(
                escape(str(t.get("txn"))),
                escape(f"{pair['condition']} vs {pair['baseline']}"),
                shown.num(values.get(pair["baseline"])),
                shown.num(values.get(pair["condition"])),
                pct(pair["delta_pct"]),
                interval(pair["ci_pct"], "%"),
                p_value(pair["p_adjusted"]),
                f"[{style}]{pair['verdict']}[/{style}]" if style else pair["verdict"],
            )
    return table


_DECISION_STYLE = {"credible-difference": "bold", "practically-equivalent": "green"}


def _bayes_tables(doc: ComparisonDocument, b: BayesDocument) -> list[Any]:
    level = f"{100 * b['hdi_prob']:g}%"
    title = f"Bayesian estimation · {b['model']} model · {level} HDI · ROPE ±{b['rope_pct']:g}%"
    out: list[Any] = []
    table = Table(title=escape(title), title_justify="left")
    table.add_column("condition", style="bold", overflow="fold")
    for name in (f"posterior mean ({doc['unit']})", f"{level} HDI"):
        table.add_column(name, justify="right")
    for bc in b["conditions"]:
        table.add_row(escape(bc["condition"]), fmt_num(bc["mean"]), interval(bc["hdi"]))
    out.append(table)
    pairs = [(c, p) for c in doc["comparisons"] if (p := c.get("bayes"))]
    if pairs:
        faster = "higher is faster" if doc["metric"] == "throughput" else "lower is faster"
        table = Table(title=f"Change against the baseline ({faster})", title_justify="left")
        table.add_column("condition", style="bold", overflow="fold")
        # R-hat and ESS exist for MCMC (the student-t model) only; exact draws have none.
        mcmc = any(p["rhat_max"] is not None for _, p in pairs)
        names = ("Δ mean", f"{level} HDI", "P(faster)", *(("R-hat", "ESS") if mcmc else ()))
        for name in (*names, "decision"):
            table.add_column(name, justify="left" if name == "decision" else "right")
        for c, p in pairs:
            style = _DECISION_STYLE.get(p["rope_decision"], "")
            checks = (fixed(p["rhat_max"], 3), fixed(p["ess_min"], 0)) if mcmc else ()
            table.add_row(
                escape(f"{c['condition']} vs {c['baseline']}"),
                pct(p["mean_pct"]),
                interval(p["hdi_pct"], "%"),
                fixed(p["p_faster"], 3),
                *checks,
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


def compare_csv(doc: ComparisonDocument | list[ComparisonDocument]) -> str:
    """One row per condition; with ``--txn``/``--stat`` three more columns (``txn``, ``stat``,
    ``stat_value``), and the rows of every type's document under one header."""
    docs = doc if isinstance(doc, list) else [doc]
    # A comparison's per-type documents follow its own rows.
    docs = [clean_strings(d) for top in docs for d in (top, *top.get("types", []))]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    by_stat = any("stat" in d for d in docs)
    writer.writerow(_CSV_HEADER + (["txn", "stat", "stat_value"] if by_stat else []))
    for d in docs:
        _csv_rows(writer, d, by_stat)
    return buf.getvalue()


def _csv_rows(writer: Any, doc: ComparisonDocument, by_stat: bool) -> None:
    for c in doc["conditions"]:
        # One row per comparison the condition is the subject of (one against the baseline;
        # several with --pairs all), and one without any for the first reference.
        against: list[PairDocument | None] = [
            p for p in doc["comparisons"] if p["condition"] == c["condition"]
        ]
        for cmp in against or [None]:
            _csv_row(writer, doc, c, cmp, by_stat)


def _csv_row(
    writer: Any,
    doc: ComparisonDocument,
    c: ConditionDocument,
    cmp: PairDocument | None,
    by_stat: bool,
) -> None:
    row: list[Any] = [c["condition"], None, c["n"], c["mean"], c["sd"], c["median"]]
    row += [c["p95"], c["p99"], None, None, None, None, None, None, None]
    if cmp is not None:  # the baseline has no row against itself
        ci = cmp["ci_pct"] or [None, None]
        row[1] = cmp["baseline"]
        row[8:] = [cmp["delta_pct"], ci[0], ci[1], cmp["test"], cmp["p_value"]]
        row[13:] = [cmp["p_adjusted"], cmp["verdict"]]
    if by_stat:
        row += [doc.get("txn") or "all", doc.get("stat"), c.get("stat_value")]
    writer.writerow(["" if v is None else v for v in row])


_CSV_HEADER = [
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


def _runs(doc: ComparisonDocument) -> str:
    runs = doc.get("run") or {}
    if isinstance(runs, list):
        return "Runs " + ", ".join(f"{r['run_id']} ({r['name']})" for r in runs)
    return f"Run {runs.get('run_id', '?')}: {runs.get('name', '')}"
