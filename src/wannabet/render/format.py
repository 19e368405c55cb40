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

# C0/C1 control characters (ESC among them), and the bidi marks, embeddings, overrides and
# isolates: a label taken from a results file must not move the cursor, recolour or retitle the
# terminal it is printed in, nor reorder what follows it on screen so that it shows text other
# than what it holds. They are shown, escaped (``\x1b``, ``\u202e``), not dropped: a label
# that holds one is visibly odd, and two labels differing only by one stay distinct.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Whatever breaks a line: newlines, tabs, and the Unicode line and paragraph separators.
_BREAKS = re.compile("[\r\n\t\u2028\u2029]")


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def fmt_num(value: float | None) -> str:
    """A figure with three significant-ish digits: ``1,234``, ``123.4``, ``12.34``, ``0.123``,
    and below 0.001 three significant digits (``0.000412``): a latency under 1 µs is not
    ``0.000`` ms."""
    if value is None:
        return MISSING
    v = float(value)
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 100:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    if v == 0 or abs(v) >= 0.001 or not math.isfinite(v):
        return f"{v:.3f}"
    return f"{v:.{2 - math.floor(math.log10(abs(v)))}f}"


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
    """``text`` with every control character (ESC, so every escape sequence) and bidi control
    shown escaped, ``\\x1b``, ``\\u202e``: nothing in it acts on a terminal (tabs and
    newlines kept)."""
    return _CONTROL.sub(_escaped, text)


def one_line(text: str) -> str:
    """``text`` on one line: :func:`strip_control`, and every line or paragraph break
    (``\\r``, ``\\n``, tab, U+2028, U+2029) shown escaped too, so it never breaks a row."""
    return _BREAKS.sub(_escaped, strip_control(text))


def clean_strings(value: Any) -> Any:
    """``value`` with :func:`one_line` applied to every string inside it (dicts, lists)."""
    if isinstance(value, str):
        return one_line(value)
    if isinstance(value, dict):
        return {k: clean_strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_strings(v) for v in value]
    return value


def cell(text: Any) -> str:
    """One Markdown table cell: control characters shown escaped, pipes escaped, one line."""
    return one_line(str(text)).replace("|", "\\|")


def markup(text: Any) -> str:
    """``text`` for a rich console: on one line, control characters shown escaped, rich
    markup escaped. Names, messages and table cells all go through it."""
    from rich.markup import escape

    return escape(one_line(str(text)))


#: a name (of a run, condition, level, transaction type) for a rich console: :func:`markup`
label = markup


def speed_factor(latency_delta_pct: float) -> str:
    """A change of latency as the factor by which the work got faster or slower: −82.6% is
    "5.7×" (faster), +12% is "1.12×" (slower). Two decimals below 2×, one below 100×."""
    ratio = 1.0 + latency_delta_pct / 100.0
    if ratio <= 0.0:
        return "∞×"
    factor = 1.0 / ratio if ratio < 1.0 else ratio
    if factor < 2.0:
        return f"{factor:.2f}×"
    if factor < 100.0:
        return f"{factor:.1f}×"
    return f"{factor:,.0f}×"
