"""Markdown tables that read as well in a terminal or a plain-text ticket as rendered.

Every column is padded to its widest cell, so the table is aligned before any Markdown renderer
sees it. The verdict table is the one ``compare``, ``summary`` and ``report`` share: the same
rows, whichever command printed them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from wannabet.render.summary import fmt_num

# CSI/OSC escape sequences and the remaining C0/C1 control characters: a label taken from a
# results file must not move the cursor, recolour or retitle the terminal it is printed in.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# Bidi embeddings, overrides and isolates (U+202A-202E, U+2066-2069) are dropped too: they
# reorder what follows them on screen, so a label could show text other than what it holds.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# Whatever breaks a line: newlines, tabs, and the Unicode line and paragraph separators.
_BREAKS = re.compile("[\r\n\t\u2028\u2029]")


def strip_control(text: str) -> str:
    """``text`` without ANSI escape sequences, control characters and bidi overrides
    (tabs and newlines kept)."""
    return _CONTROL.sub("", _ANSI.sub("", text))


def one_line(text: str) -> str:
    """``text`` on one line: :func:`strip_control`, then every line or paragraph break
    (``\\r``, ``\\n``, tab, U+2028, U+2029) as a space."""
    return _BREAKS.sub(" ", strip_control(text))


def clean_strings(value: Any) -> Any:
    """``value`` with :func:`strip_control` applied to every string inside it (dicts, lists)."""
    if isinstance(value, str):
        return strip_control(value)
    if isinstance(value, dict):
        return {k: clean_strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_strings(v) for v in value]
    return value


def cell(text: Any) -> str:
    """One table cell: control characters stripped, pipes escaped, on a single line."""
    return one_line(str(text)).replace("|", "\\|")


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


def _p(p: float | None) -> str:
    if p is None:
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x:+.1f}%"


def _interval(pair: Sequence[float | None] | None, suffix: str = "") -> str:
    if not pair or pair[0] is None or pair[1] is None:
        return "–"
    return f"[{fmt_num(pair[0])}, {fmt_num(pair[1])}]{suffix}"


def conditions_markdown(doc: Mapping[str, Any]) -> str:
    """Per-condition statistics of a comparison document as an aligned Markdown table."""
    rows = [
        [
            c["condition"],
            c["n"],
            fmt_num(c["mean"]),
            fmt_num(c["sd"]),
            fmt_num(c["median"]),
            fmt_num(c["p95"]),
            _p(c["normality"]["p"]),
            _interval(c["clt"]["mean_ci95"]),
        ]
        for c in doc["conditions"]
    ]
    return markdown_table(
        ["condition", "n", "mean", "sd", "median", "p95", "normality p", "mean 95% CI"],
        rows,
        ["left", "right", "right", "right", "right", "right", "right", "left"],
    )


def verdict_markdown(doc: Mapping[str, Any]) -> str:
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
            _pct(c["delta_pct"]),
            _interval(c["ci_pct"], "%"),
            c["test"] or "–",
            _p(c["p_adjusted"]),
            f"**{c['verdict']}**",
            c["note"],
        ]
        for c in doc["comparisons"]
    ]
    return markdown_table(
        ["condition", "baseline", "Δ mean", "CI", "test", "p (adj.)", "verdict", "note"],
        rows,
        ["left", "left", "right", "left", "left", "right", "left", "left"],
    )


def heading(doc: Mapping[str, Any]) -> str:
    """The line above the tables: which runs, metric, level, alpha and ROPE."""
    runs = doc.get("run") or {}
    if isinstance(runs, list):
        what = "Runs " + ", ".join(f"{r['run_id']} ({r['name']})" for r in runs)
    else:
        what = f"Run {runs.get('run_id', '?')}: {runs.get('name', '')}"
    return (
        f"**{cell(what)}**, {doc['metric']} ({doc['unit']}), {doc['level']} level,"
        f" α = {doc['alpha']}, ROPE ±{doc['rope_pct']:g}%"
    )


def comparison_markdown(doc: Mapping[str, Any]) -> str:
    """Heading, per-condition table, verdict table and, when made, the Bayesian table:
    ``compare --format markdown``."""
    from wannabet.render.compare import bayes_markdown

    parts = [heading(doc), "", conditions_markdown(doc).rstrip("\n")]
    verdicts = verdict_markdown(doc)
    if verdicts:
        parts += ["", verdicts.rstrip("\n")]
    bayes = bayes_markdown(doc)
    if bayes:
        parts.append(bayes.rstrip("\n"))
    for e in doc.get("excluded", []):
        parts += ["", f"Left out: {strip_control(e['condition'])} ({strip_control(e['reason'])})."]
    return "\n".join(parts) + "\n"
