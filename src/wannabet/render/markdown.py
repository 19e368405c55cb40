"""Markdown tables that read as well in a terminal or a plain-text ticket as rendered.

Every column is padded to its widest cell, so the table is aligned before any Markdown renderer
sees it. The verdict table is the one ``compare``, ``summary`` and ``report`` share: the same
rows, whichever command printed them.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from wannabet.documents import ComparisonDocument, PairDocument
from wannabet.render.format import (
    TimeUnit,
    cell,
    column_unit,
    fixed,
    interval,
    one_line,
    p_value,
    pairs_caption,
    pct,
    sample_name,
    strip_control,
    verdict_cells,
)


def _width(text: str) -> int:
    # East Asian wide characters take two columns in a terminal.
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int, align: str) -> str:
    fill = " " * (width - _width(text))
    return fill + text if align == "right" else text + fill


def markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[Any]], align: Sequence[str] | None = None
) -> str:
    """A GitHub-flavoured Markdown table with every column padded to its widest cell.

    Parameters
    ----------
    header : sequence of str
        Column titles.
    rows : sequence of sequences
        Cell values; each is converted with ``str`` and passed through :func:`cell`.
    align : sequence of {"left", "right"}, optional
        Per column; default left.

    Returns
    -------
    str
        The table, one line per row, ending with a newline.
    """
    aligns = list(align) if align is not None else ["left"] * len(header)
    if any(a not in ("left", "right") for a in aligns):
        raise ValueError(f"align must hold 'left' or 'right'; got {aligns}")
    if len(aligns) != len(header):
        raise ValueError(f"align has {len(aligns)} entries for {len(header)} columns")
    head = [cell(h) for h in header]
    body = [[cell(v) for v in row] for row in rows]
    for row in body:
        if len(row) != len(head):
            raise ValueError(f"a row has {len(row)} cells for {len(head)} columns")
    widths = [max([3, _width(h), *(_width(r[i]) for r in body)]) for i, h in enumerate(head)]
    rule = [
        ("-" * (w - 1) + ":") if a == "right" else "-" * w
        for w, a in zip(widths, aligns, strict=True)
    ]
    lines = [
        "| " + " | ".join(_pad(c, w, a) for c, w, a in zip(r, widths, aligns, strict=True)) + " |"
        for r in [head, *body]
    ]
    lines.insert(1, "| " + " | ".join(rule) + " |")
    return "\n".join(lines) + "\n"


def shown_unit(doc: ComparisonDocument) -> TimeUnit:
    """The unit the conditions' figures are shown in: latencies in the one that suits them
    (µs, ms or s, as the terminal table), anything else in the document's own."""
    return column_unit(doc["unit"], (c["median"] for c in doc.get("conditions", [])))


def level_note(doc: ComparisonDocument) -> str:
    """What one observation of the per-condition table is, so its mean is not mistaken for
    summary's (which pools every transaction)."""
    if doc.get("level") == "transaction":
        return "n, mean, sd, median, p95: over the transactions, each counting once"
    what = (doc.get("stat") or "mean latency") if doc.get("metric") == "latency" else "TPS"
    return (
        f"n, mean, sd, median, p95: over the samples' {what}, each sample counting once"
        " (summary pools the transactions instead, so its mean can differ)"
    )


def conditions_markdown(doc: ComparisonDocument) -> str:
    """Per-condition statistics of a comparison document as an aligned Markdown table.

    With ``--stat``, the statistic of all the condition's transactions comes first, and the
    other columns describe the per-sample values of the statistic.
    """
    stat = doc.get("stat")
    u = shown_unit(doc)
    if stat is not None:
        return markdown_table(
            [
                "condition",
                stat,
                "samples",
                f"mean of samples' {stat}",
                "sd",
                "median",
                "mean 95% CI",
            ],
            [
                [
                    c["condition"],
                    u.num(c.get("stat_value")),
                    c["n"],
                    u.num(c["mean"]),
                    u.num(c["sd"]),
                    u.num(c["median"]),
                    u.interval(c["clt"]["mean_ci95"]),
                ]
                for c in doc["conditions"]
            ],
            ["left"] + ["right"] * 5 + ["left"],
        )
    rows = [
        [
            c["condition"],
            c["n"],
            u.num(c["mean"]),
            u.num(c["sd"]),
            u.num(c["median"]),
            u.num(c["p95"]),
            p_value(c["normality"]["p"]),
            u.interval(c["clt"]["mean_ci95"]),
        ]
        for c in doc["conditions"]
    ]
    table = markdown_table(
        ["condition", "n", "mean", "sd", "median", "p95", "normality p", "mean 95% CI"],
        rows,
        ["left", "right", "right", "right", "right", "right", "right", "left"],
    )
    return table + f"\n_{level_note(doc)}._\n"


def split(c: PairDocument) -> str:
    """The disagreement sentence of a comparison with a Bayesian decision ("" when none)."""
    return c.get("disagreement") or ""


def bayes_note(c: PairDocument) -> str:
    """`` (Bayes: <decision>)`` after a verdict the Bayesian analysis does not support."""
    bayes = c.get("bayes")
    return f" (Bayes: {bayes['rope_decision']})" if split(c) and bayes else ""


def verdict_markdown(doc: ComparisonDocument) -> str:
    """The verdict table of a comparison document (``wannabet.verdicts.compare_runs``).

    One row per condition against the baseline: change of the mean with its interval, the test,
    the adjusted p-value, the verdict and why. Empty string when there is nothing to compare
    (a single condition).
    """
    if not doc.get("comparisons"):
        return ""
    rows = [
        [
            c["condition"],
            c["baseline"],
            cells.delta,
            cells.ci,
            cells.test,
            cells.p,
            f"**{c['verdict']}**" + bayes_note(c),
            split(c) or c["note"],
        ]
        for c in doc["comparisons"]
        for cells in [verdict_cells(c)]
    ]
    table = markdown_table(
        [
            "condition",
            "baseline",
            f"Δ {doc.get('stat') or 'mean'}",
            "CI",
            "test",
            "p (adj.)",
            "verdict",
            "note",
        ],
        rows,
        ["left", "left", "right", "left", "left", "right", "left", "left"],
    )
    # Other pairs than against the baseline: the table says which, as the terminal's title.
    caption = pairs_caption(str(doc.get("pairs", "baseline")))
    return table if caption is None else f"_{one_line(caption)}._\n\n" + table


def sequential_markdown(doc: ComparisonDocument) -> str:
    """How a run that stops when decided stopped, and each comparison's anytime-valid
    interval; empty for a run of a fixed number of samples."""
    seq = doc.get("sequential")
    if not seq:
        return ""
    rows = [
        [
            f"{c['condition']} vs {c['baseline']}",
            c["blocks"],
            pct(c["change_pct"]),
            "none yet"
            if c["low_pct"] is None or c["high_pct"] is None
            else interval([c["low_pct"], c["high_pct"]], "%"),
            f"**{c['state']}**",
        ]
        for c in seq["comparisons"]
    ]
    title = (
        f"Anytime-valid confidence sequences ({seq['statistic']}, alpha {seq['alpha']:g} over"
        f" all comparisons, ROPE ±{seq['rope_pct']:g}%):"
    )
    table = markdown_table(
        ["comparison", "blocks", "Δ", "interval", "state"],
        rows,
        ["left", "right", "right", "left", "left"],
    )
    return f"{seq['note']}\n\n{title}\n\n{table}"


def types_markdown(doc: ComparisonDocument) -> str:
    """Each transaction type's verdict on the statistic (the document's ``types``); empty
    without."""
    rows = []
    types = doc.get("types", [])
    u = column_unit(doc["unit"], (c.get("stat_value") for t in types for c in t["conditions"]))
    for t in types:
        values = {c["condition"]: c.get("stat_value") for c in t["conditions"]}
        for c in t["comparisons"]:
            rows.append(
                [
                    str(t.get("txn")),
                    c["condition"],
                    c["baseline"],
                    u.num(values.get(c["baseline"])),
                    u.num(values.get(c["condition"])),
                    pct(c["delta_pct"]),
                    interval(c["ci_pct"], "%"),
                    p_value(c["p_adjusted"]),
                    f"**{c['verdict']}**",
                ]
            )
    if not rows:
        return ""
    unit = u.name
    stat = str(types[0].get("stat") or "mean")
    return f"Per transaction type ({stat} of the type):\n\n" + markdown_table(
        ["type", "condition", "baseline", f"baseline {unit}", f"condition {unit}", f"Δ {stat}",
         "CI", "p (adj.)", "verdict"],
        rows,
        ["left", "left", "left", "right", "right", "right", "left", "right", "left"],
    )  # fmt: skip


def heading(doc: ComparisonDocument) -> str:
    """The line above the tables: which runs, metric, level, alpha and ROPE."""
    runs = doc.get("run") or {}
    if isinstance(runs, list):
        what = "Runs " + ", ".join(f"{r['run_id']} ({r['name']})" for r in runs)
    else:
        what = f"Run {runs.get('run_id', '?')}: {runs.get('name', '')}"
    line = (
        f"**{cell(what)}**, {doc['metric']} ({shown_unit(doc)}), {doc['level']} level,"
        f" α = {doc['alpha']}, ROPE ±{doc['rope_pct']:g}%"
    )
    if "stat" in doc:
        txn = doc.get("txn")
        line += f", {doc['stat']} of " + ("all transaction types" if txn is None else cell(txn))
    return line


def bayes_markdown(doc: ComparisonDocument) -> str:
    """The Bayesian section of a comparison document as Markdown ("" without one).

    Aligned tables (:func:`markdown_table`): labels are cleaned of
    control characters and line breaks, so they can neither break a row nor reach the
    terminal as escape sequences.
    """
    b = doc.get("bayes")
    if not b:
        return ""
    level = f"{100 * b['hdi_prob']:g}%"
    pairs = [(c, p) for c in doc["comparisons"] if (p := c.get("bayes"))]
    # R-hat and ESS exist for MCMC (the student-t model) only; exact draws have none.
    mcmc = any(p["rhat_max"] is not None for _, p in pairs)
    header = ["condition", "baseline", "Δ mean", f"{level} HDI", "P(faster)"]
    header += [*(("R-hat", "ESS") if mcmc else ()), "decision"]
    rows = [
        [
            c["condition"],
            c["baseline"],
            pct(p["mean_pct"]),
            interval(p["hdi_pct"], "%"),
            fixed(p["p_faster"], 3),
            *((fixed(p["rhat_max"], 3), fixed(p["ess_min"], 0)) if mcmc else ()),
            f"**{p['rope_decision']}**",
        ]
        for c, p in pairs
    ]
    out = [
        "",
        f"**Bayesian estimation**, {cell(b['model'])} model, {level} HDI, ROPE ±{b['rope_pct']:g}%",
        "",
        markdown_table(
            header,
            rows,
            ["left", "left", "right", "left", "right", *(["right"] * (len(header) - 6)), "left"],
        ).rstrip("\n"),
    ]
    if b["effects"]:
        effects = [
            [e["term"], pct(e["mean_pct"]), interval(e["hdi_pct"], "%")] for e in b["effects"]
        ]
        out += [
            "",
            markdown_table(
                ["factorial term", "Δ mean", f"{level} HDI"], effects, ["left", "right", "left"]
            ).rstrip("\n"),
        ]
    return "\n".join(out)


def open_loop_warnings(doc: ComparisonDocument) -> list[str]:
    """A sentence per open-loop condition whose target did not keep up with its rate."""
    out = []
    for o in doc.get("open_loop", []):
        if not o.get("missed"):
            continue
        lag = o.get("lag_mean_ms")
        late = "" if lag is None else f"; transactions started {lag:,.1f} ms late on average"
        out.append(
            f"{o['condition']}: open loop at {o['requested_rate']:,.0f}/s reached only"
            f" {o['achieved_rate']:,.0f}/s: the target could not keep up, so it was measured"
            f" at a lower load than asked{late}"
        )
    return out


def degraded_warnings(degraded: Sequence[Mapping[str, Any]]) -> list[str]:
    """One sentence on the degraded samples of a document (``compare``) or a run (``summary``):
    how many, which and why, and whether the figures include them."""
    if not degraded:
        return []
    included = bool(degraded[0].get("included"))
    listed = "; ".join(
        f"{sample_name(d['condition'], d['sample'], d.get('block'))}:"
        f" {d['reason'] or 'no reason recorded'}"
        for d in degraded[:3]
    )
    more = f"; and {len(degraded) - 3} more" if len(degraded) > 3 else ""
    n = len(degraded)
    what = f"{n} degraded sample{'s' if n != 1 else ''}"
    if included:
        return [f"{what} included, as --include-degraded asked ({listed}{more})"]
    return [f"{what} left out ({listed}{more}); --include-degraded takes them in"]


def diagnostic_lines(doc: ComparisonDocument) -> list[str]:
    """Each diagnostic of the comparison (the conditions', then the Bayesian model's), as
    ``message → advice``: the terminal, Markdown and the report list the same ones."""
    out = [
        f"{c['condition']}: {d['message']} → {d['advice']}"
        for c in doc["conditions"]
        for d in c["diagnostics"]
    ]
    bayes = doc.get("bayes")
    out += [f"{d['message']} → {d['advice']}" for d in (bayes["diagnostics"] if bayes else [])]
    return out


def comparison_markdown(doc: ComparisonDocument) -> str:
    """Heading, per-condition table, verdict table and, when made, the Bayesian table:
    ``compare --format markdown``."""
    parts = [heading(doc), "", conditions_markdown(doc).rstrip("\n")]
    sequential = sequential_markdown(doc)
    if sequential:
        parts += ["", sequential.rstrip("\n")]
    verdicts = verdict_markdown(doc)
    if verdicts:
        parts += ["", verdicts.rstrip("\n")]
    bayes = bayes_markdown(doc)
    if bayes:
        parts.append(bayes.rstrip("\n"))
    types = types_markdown(doc)
    if types:
        parts += ["", types.rstrip("\n")]
    for e in doc.get("excluded", []):
        parts += ["", f"Left out: {strip_control(e['condition'])} ({strip_control(e['reason'])})."]
    diagnostics = diagnostic_lines(doc)
    if diagnostics:
        # For tickets: what the terminal warns about travels with the verdict.
        parts += ["", "**Diagnostics**", ""] + [f"- {one_line(d)}" for d in diagnostics]
    for warning in open_loop_warnings(doc) + degraded_warnings(doc.get("degraded", [])):
        parts += ["", f"Warning: {one_line(warning)}."]
    return "\n".join(parts) + "\n"
