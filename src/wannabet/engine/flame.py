"""Folded stacks and flame graphs, drawn by the engine's ``inferno`` (``native/src/flame.rs``).

:func:`fold_perf` turns the text of ``perf script`` into folded stacks; :func:`flame_graph`
draws folded stacks as an interactive SVG (search and zoom by its own script, nothing fetched).
The profile sampler and the report reach the extension only through these two functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from wannabet import _engine

__all__ = ["flame_graph", "fold_perf"]


def fold_perf(text: bytes) -> list[tuple[str, int]]:
    """``perf script`` output as ``(stack, weight)`` pairs, frames root first, ``;`` between.

    The first frame is the thread's name (``postgres``); the weight sums the event's periods,
    which for ``cpu-clock`` are nanoseconds of CPU. Raises ValueError when the text cannot be
    read.
    """
    return _engine.fold_perf(text)


def flame_graph(
    stacks: Sequence[tuple[str, int]],
    title: str,
    *,
    subtitle: str | None = None,
    colors: Mapping[str, str] | None = None,
    titles: Mapping[str, str] | None = None,
) -> str:
    """An interactive flame graph of ``stacks`` as SVG text.

    ``colors`` maps function names to ``#rrggbb``; the others get the "hot" palette, chosen
    from the name so that a function has the same colour in every graph. ``titles`` replaces
    the hover text of the functions it names. Raises ValueError for a colour that is not
    ``#rrggbb``.
    """
    return _engine.flame_graph(
        list(stacks),
        title,
        subtitle,
        dict(colors) if colors is not None else None,
        dict(titles) if titles is not None else None,
    )
