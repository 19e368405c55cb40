"""How every output format writes a number, a percentage, a p-value, an interval, a latency,
a sample's name and a label.

One home for these, so a terminal table, a Markdown table and the HTML report print the same
figure the same way; the verdict table's figures of a comparison (:func:`verdict_cells`) are
written here once for all three. Latencies are carried in ms everywhere (JSON and CSV too); a
table shows a column of them in the :class:`TimeUnit` :func:`time_unit` picks for it (ns, µs,
ms or s). A sample is named by :func:`sample_name` (``off #4 (block 4)``) wherever it is shown.

Labels and messages come from results files: :func:`strip_control`, :func:`one_line`,
:func:`cell` and :func:`markup` keep escape sequences, control characters and line breaks from
reaching a terminal, breaking a table row or becoming rich markup.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wannabet.documents import PairDocument

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


@dataclass(frozen=True, slots=True)
class TimeUnit:
    """The unit a column of latencies is shown in; the values themselves are always in ms.

    ``per_ms`` is how many of the unit make one millisecond (1,000 for µs).
    """

    name: str
    per_ms: float

    def scaled(self, value_ms: float | None) -> float | None:
        """``value_ms`` in this unit; None when missing, infinite or NaN."""
        if value_ms is None or not math.isfinite(float(value_ms)):
            return None
        return float(value_ms) * self.per_ms

    def num(self, value_ms: float | None) -> str:
        """``value_ms`` in this unit, as :func:`fmt_num` writes it (without the unit)."""
        return finite_num(self.scaled(value_ms))

    def interval(self, pair: Sequence[float | None] | None) -> str:
        """``[low, high]`` of two values in ms, in this unit."""
        if not pair or len(pair) < 2:
            return MISSING
        return interval([self.scaled(pair[0]), self.scaled(pair[1])])

    def __str__(self) -> str:
        return self.name


NS = TimeUnit("ns", 1e6)
US = TimeUnit("µs", 1e3)
MS = TimeUnit("ms", 1.0)
S = TimeUnit("s", 1e-3)


def time_unit(values_ms: Iterable[float | None]) -> TimeUnit:
    """The unit for a column (or a table, or a chart axis) of latencies given in ms.

    As hyperfine and criterion do, one unit for the whole column so its values compare, chosen
    from its typical value (the median of its finite, non-zero magnitudes): the largest of s,
    ms, µs and ns in which that value is at least 1. ms when there is nothing to go by.
    """
    sizes = [
        abs(float(v))
        for v in values_ms
        if v is not None and math.isfinite(float(v)) and float(v) != 0.0
    ]
    if not sizes:
        return MS
    typical = statistics.median(sizes)
    for unit in (S, MS, US):
        if typical * unit.per_ms >= 1.0:
            return unit
    return NS


def column_unit(unit: str, values: Iterable[float | None]) -> TimeUnit:
    """How to show a column whose values are in ``unit``: latencies (``"ms"``) in the
    :func:`time_unit` that suits them; anything else (``"tps"``) as it is, under its own name."""
    return time_unit(values) if unit == "ms" else TimeUnit(unit, 1.0)


def duration(value_ms: float | None) -> str:
    """One latency (in ms) in the unit that suits it alone: ``400 ns``, ``1.23 ms``, ``2.50 s``."""
    if value_ms is None or not math.isfinite(float(value_ms)):
        return MISSING
    unit = time_unit([value_ms])
    return f"{unit.num(value_ms)} {unit.name}"


def sample_name(
    condition: str, number: int, block: int | None = None, *, of: int | str | None = None
) -> str:
    """How every output names one sample: its condition, its number within the condition
    (1-based, in run order: every stored sample of the condition counts) and, where known, its
    block (1-based): ``off #4 (block 4)``. ``of``: the condition's number of samples, for a
    progress line (``off #4/10 (block 4)``)."""
    name = f"{condition} #{number}" + ("" if of is None else f"/{of}")
    return name if block is None else f"{name} (block {block})"


def p_value(p: float | None) -> str:
    """A p-value to three decimals, ``<0.001`` below that: the analysis' rule
    (:func:`wannabet.analysis.tests.p_rounded`), so a table and a sentence round alike."""
    if p is None:
        return MISSING
    # Here, not at the top: the formatting helpers stay free of the analysis' imports.
    from wannabet.analysis.tests import p_rounded

    return p_rounded(p)


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


def share(x: float | None) -> str:
    """A fraction as a percentage with one decimal, unsigned: 0.123 is ``12.3%`` (a CV, a
    posterior probability); "–" when unknown."""
    return MISSING if x is None else f"{100 * x:.1f}%"


def signed(x: float | None, digits: int) -> str:
    """``x`` with its sign and ``digits`` decimals: a change (``+3.2`` percentage points),
    Cliff's delta (``-0.41``); "–" when unknown."""
    return MISSING if x is None else f"{x:+.{digits}f}"


def signed_interval(low: float, high: float, digits: int = 1) -> str:
    """``[low, high]`` of a change, each end with its sign and ``digits`` decimals:
    ``[+9.1, +22.0]`` (:func:`interval` writes unsigned figures)."""
    return f"[{signed(low, digits)}, {signed(high, digits)}]"


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


def error_markup(text: Any) -> str:
    """An error message for the one ``error:`` line: a driver's several lines (psycopg's
    "Connection refused" then "\tIs the server running…") joined with ``; `` rather than
    shown as escaped ``\n\t``, then :func:`markup`."""
    lines = [line.strip() for line in str(text).splitlines()]
    return markup("; ".join(line for line in lines if line))


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


@dataclass(frozen=True, slots=True)
class VerdictCells:
    """One comparison's figures in the verdict table, as every output writes them (``compare``
    in a terminal and in Markdown, ``summary``, the report); each adds its own markup and
    chooses its columns."""

    #: change of the mean (or of the statistic): ``+3.2%``
    delta: str
    #: its interval: ``[1.1, 5.3]%``
    ci: str
    #: change of the median
    median_delta: str
    test: str
    #: the Holm-adjusted p-value
    p: str
    #: Cliff's delta: ``+0.41``
    cliff: str


def verdict_cells(pair: PairDocument) -> VerdictCells:
    """The verdict table's figures of one comparison (``comparisons[]`` of the document)."""
    return VerdictCells(
        delta=pct(pair["delta_pct"]),
        ci=interval(pair["ci_pct"], "%"),
        median_delta=pct(pair["median_delta_pct"]),
        test=pair["test"] or MISSING,
        p=p_value(pair["p_adjusted"]),
        cliff=signed(pair["cliffs_delta"], 2),
    )


#: the verdict table's title by ``--pairs``
_PAIRS_TITLE = {
    "baseline": "Against the baseline",
    "all": "Every pair (against the earlier condition)",
    "successive": "Each against the one before",
}


def pairs_title(pairs: str) -> str:
    """The verdict table's title for ``--pairs`` (``compare``, ``report``)."""
    # Here, not at the top: the formatting helpers stay free of the analysis' imports.
    from wannabet.analysis.compare import WITHIN

    if pairs.startswith(WITHIN):
        factor = pairs.removeprefix(WITHIN)
        return f"The levels of {factor}, every other factor held fixed (against the earlier)"
    return _PAIRS_TITLE[pairs]


def pairs_caption(pairs: str) -> str | None:
    """What a verdict table says of its pairs (the report's caption, the Markdown line above
    the table); None against the baseline, which the table's rows say by themselves."""
    if pairs == "baseline":
        return None
    return f"{pairs_title(pairs)}; Holm's correction over these pairs"
