"""CPU profiles on screen and in the report: the frames that grew or shrank, and flame graphs.

A differential flame graph here differs from Gregg's red/blue one in one way: only the frames
whose change is *decided* (:func:`wannabet.analysis.profiles.compare_profiles`: Welch over the
samples, Holm over the frames) are coloured, red for grown and blue for shrunk, deeper for a
larger change; every other frame is grey, however much its summed count moved. Hovering a frame
shows its shares and the interval of its change.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from wannabet.analysis.profiles import FrameChange, ProfileComparison
from wannabet.engine.flame import flame_graph
from wannabet.profiling import ProfileDifference, RunProfiles

from .format import signed, signed_interval
from .markdown import markdown_table

__all__ = [
    "FRAME_KEYS",
    "FlameGraph",
    "differential_graph",
    "flame_graphs",
    "frame_cells",
    "frame_line",
    "profile_tables",
]

#: undecided frames: a neutral grey, so that colour means a decided change
UNDECIDED = "#d9d9d9"
#: grown frames from light to deep red, shrunk from light to deep blue (by |change| / largest)
_RED = ((252, 187, 161), (203, 24, 29))
_BLUE = ((198, 219, 239), (8, 81, 156))


@dataclass(frozen=True, slots=True)
class FlameGraph:
    """One flame graph of the report: its title, what it shows, and the SVG."""

    key: str
    title: str
    caption: str
    svg: str


def _mix(scale: tuple[tuple[int, int, int], tuple[int, int, int]], t: float) -> str:
    lo, hi = scale
    t = min(max(t, 0.0), 1.0)
    r, g, b = (round(a + (z - a) * t) for a, z in zip(lo, hi, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def frame_line(change: FrameChange) -> str:
    """``md5_text: 0.0% → 15.6% of the CPU, +15.6 pp [+9.1, +22.0] (99.9%), grew``."""
    c = change.change
    interval = ""
    if c is not None:
        interval = f" {signed_interval(c.low, c.high)} ({100 * c.level:.4g}% interval)"
    return (
        f"{change.frame}: {change.baseline_pct:.1f}% → {change.other_pct:.1f}% of the CPU,"
        f" {signed(change.change_pp, 1)} pp{interval}, {change.verdict}"
    )


def _colours(comparison: ProfileComparison) -> tuple[dict[str, str], dict[str, str]]:
    """Per frame its colour and hover text: decided frames by their change, others grey."""
    changes = {c.frame: c for c in comparison.changes}
    largest = max(
        (abs(c.change_pp) for c in comparison.changes if c.frame in comparison.decided), default=0.0
    )
    colours: dict[str, str] = {}
    titles: dict[str, str] = {}
    for frame, verdict in comparison.decided.items():
        change = changes.get(frame)
        strength = abs(change.change_pp) / largest if change is not None and largest > 0 else 1.0
        colours[frame] = _mix(_RED if verdict == "grew" else _BLUE, 0.35 + 0.65 * strength)
    for frame, change in changes.items():
        titles[frame] = _hover(change)
    return colours, titles


def _hover(change: FrameChange) -> str:
    """A frame's hover text: its name, then its figures in one closing parenthesis (the graph's
    script takes the name back by cutting the last parenthesis, so none may be nested)."""
    c = change.change
    interval = ""
    if c is not None:
        interval = f", {signed(c.low, 1)} to {signed(c.high, 1)} pp at {100 * c.level:.4g}%"
    return (
        f"{change.frame} ({change.verdict}: {change.baseline_pct:.1f}% → {change.other_pct:.1f}%"
        f" of the CPU, {signed(change.change_pp, 1)} pp{interval})"
    )


def differential_graph(
    difference: ProfileDifference, stacks: tuple[tuple[str, int], ...]
) -> FlameGraph:
    """The flame graph of ``difference.label``'s profile (``stacks``), coloured by the frames
    whose change against the baseline is decided."""
    comparison = difference.comparison
    colours, titles = _colours(comparison)
    frames = {f for stack, _ in stacks for f in stack.split(";")}
    for frame in frames:
        colours.setdefault(frame, UNDECIDED)
    grew, shrank = len(comparison.grew), len(comparison.shrank)
    caption = (
        f"{difference.label} against {difference.baseline}: {grew} frame(s) grew (red) and"
        f" {shrank} shrank (blue) of {comparison.n_tested} tested at α = {comparison.alpha:g}"
        f" over {comparison.n_baseline} and {comparison.n_other} samples; grey frames did not"
        " change beyond sampling noise (or were not tested). Frames that shrank may be absent"
        " from this graph: the table lists them."
    )
    svg = flame_graph(
        stacks,
        f"{difference.label} vs {difference.baseline}",
        subtitle="red: grew, blue: shrank (decided over samples); grey: undecided",
        colors=colours,
        titles=titles,
    )
    return FlameGraph(
        f"diff-{difference.label}",
        f"{difference.label} against {difference.baseline}",
        caption,
        svg,
    )


def flame_graphs(profiles: RunProfiles) -> tuple[list[FlameGraph], list[FlameGraph]]:
    """Per condition its flame graph, and per comparison its differential one."""
    plain = [
        FlameGraph(
            f"flame-{c.label}",
            c.label,
            f"{c.label}: {c.samples} profiled sample(s) summed; width is the share of the"
            " server's CPU time seen by perf (cpu-clock).",
            flame_graph(c.stacks, c.label, subtitle=f"{c.samples} sample(s), perf cpu-clock"),
        )
        for c in profiles.conditions
    ]
    stacks = {c.label: c.stacks for c in profiles.conditions}
    diffs = [differential_graph(d, stacks[d.label]) for d in profiles.differences]
    return plain, diffs


def _columns(d: ProfileDifference) -> list[tuple[str, str]]:
    return [
        ("frame", "left"),
        (f"{d.baseline} %", "right"),
        (f"{d.label} %", "right"),
        ("change (pp)", "right"),
        ("interval (pp)", "right"),
        ("verdict", "left"),
    ]


#: what each of :func:`frame_cells` holds (the report's row keys)
FRAME_KEYS = ("frame", "baseline", "other", "change", "interval", "verdict")


def frame_cells(ch: FrameChange) -> list[str]:
    """One frame's row of a pair's table, on screen, in Markdown and in the report: its share
    of the CPU in each (%), the change and its interval (percentage points)."""
    iv = ch.change
    return [
        ch.frame,
        f"{ch.baseline_pct:.1f}",
        f"{ch.other_pct:.1f}",
        signed(ch.change_pp, 1),
        "" if iv is None else signed_interval(iv.low, iv.high),
        ch.verdict,
    ]


def _summary(c: ProfileComparison) -> str:
    """What was tested and how, said under each pair's table."""
    text = (
        f"{len(c.grew)} grew, {len(c.shrank)} shrank of {c.n_tested} frames tested"
        f" ({c.share} share per sample, Welch + Holm at α = {c.alpha:g}"
        + (f" over the {c.n_family} frames of all pairs" if c.n_family > c.n_tested else "")
        + f"); {c.n_left_out} frames under {100 * c.min_share:g}% left out;"
        f" {c.n_baseline} and {c.n_other} samples"
    )
    return f"{text}. {c.note}" if c.note else text


_NOTHING = "One condition has profiles: nothing to compare it with."


def _title(d: ProfileDifference) -> str:
    return f"CPU profile: {d.label} against {d.baseline}"


def profile_tables(profiles: RunProfiles) -> Group:
    """``compare --profile``: per pair of conditions, the frames that changed."""
    parts: list[object] = []
    for d in profiles.differences:
        table = Table(title=escape(_title(d)), title_justify="left")
        for name, justify in _columns(d):
            table.add_column(escape(name), justify=justify)  # type: ignore[arg-type]
        for ch in d.comparison.changes:
            cells = [escape(v) for v in frame_cells(ch)]
            style = {"grew": "red", "shrank": "blue"}.get(ch.verdict, "")
            if style:
                cells[-1] = f"[{style}]{ch.verdict}[/{style}]"
            table.add_row(*cells)
        parts.append(table)
        parts.append(Text(_summary(d.comparison)))
    if not profiles.differences:
        parts.append(Text(_NOTHING))
    return Group(*parts)  # type: ignore[arg-type]


def profile_markdown(profiles: RunProfiles) -> str:
    """``compare --profile --format markdown``: the tables of :func:`profile_tables`."""
    out: list[str] = []
    for d in profiles.differences:
        columns = _columns(d)
        table = markdown_table(
            [name for name, _ in columns],
            [frame_cells(ch) for ch in d.comparison.changes],
            [justify for _, justify in columns],
        )
        out.append(f"### {_title(d)}\n\n{table}\n{_summary(d.comparison)}\n")
    if not profiles.differences:
        out.append(_NOTHING + "\n")
    return "\n".join(out)
