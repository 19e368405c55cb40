"""How every output format writes a number, a percentage, a p-value, an interval and a label.

One home for these, so a terminal table, a Markdown table and the HTML report print the same
figure the same way. Labels and messages come from results files: :func:`strip_control`,
:func:`one_line`, :func:`cell` and :func:`markup` keep escape sequences, control characters and
line breaks from reaching a terminal, breaking a table row or becoming rich markup.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

#: what a missing figure prints as
MISSING = "–"

# CSI/OSC escape sequences and the remaining C0/C1 control characters: a label taken from a
# results file must not move the cursor, recolour or retitle the terminal it is printed in.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# Bidi embeddings, overrides and isolates (U+202A-202E, U+2066-2069) are dropped too: they
# reorder what follows them on screen, so a label could show text other than what it holds.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# Whatever breaks a line: newlines, tabs, and the Unicode line and paragraph separators.
_BREAKS = re.compile("[\r\n\t\u2028\u2029]")


def fmt_num(value: float | None) -> str:
    """A figure with three significant-ish digits: ``1,234``, ``123.4``, ``12.34``, ``0.123``."""
    if value is None:
        return MISSING
    v = float(value)
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def finite_num(value: float | None, suffix: str = "") -> str:
    """:func:`fmt_num` with ``suffix``; a missing, infinite or NaN value is "–"."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return MISSING
    return fmt_num(value) + suffix


def p_value(p: float | None) -> str:
    """A p-value to three decimals, ``<0.001`` below that."""
    if p is None:
        return MISSING
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def fixed(value: float | None, digits: int) -> str:
    """``value`` with ``digits`` decimals (a probability, R-hat, ESS); ``–`` when unknown."""
    return MISSING if value is None else format(value, f".{digits}f")


def pct(x: float | None) -> str:
    """A signed relative change: ``+3.2%``."""
    return MISSING if x is None else f"{x:+.1f}%"


def interval(pair: Sequence[float | None] | None, suffix: str = "") -> str:
    """``[low, high]`` with :func:`fmt_num` and ``suffix``; "–" when either end is missing."""
    if not pair or pair[0] is None or pair[1] is None:
        return MISSING
    return f"[{fmt_num(pair[0])}, {fmt_num(pair[1])}]{suffix}"


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
    """One Markdown table cell: control characters stripped, pipes escaped, on a single line."""
    return one_line(str(text)).replace("|", "\\|")


def markup(text: Any) -> str:
    """``text`` for a rich console: control characters stripped and rich markup escaped."""
    from rich.markup import escape

    return escape(strip_control(str(text)))
