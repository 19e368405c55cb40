"""Durations as people write them: ``"5s"``, ``"500ms"``, ``"1m30s"``, ``"2h"``, or seconds."""

from __future__ import annotations

import math
import re

from wannabet.errors import SpecError

_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(us|ms|s|m|h)")
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: object) -> float:
    """Seconds in ``value``; raise ValueError with the accepted forms otherwise."""
    if isinstance(value, bool):
        raise ValueError(_hint(value))
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise ValueError(_hint(value))
        return _bounded(float(value), value)
    if not isinstance(value, str):
        raise ValueError(_hint(value))
    text = value.strip().replace(" ", "")
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        # A bare number is seconds, on the command line as in the file.
        return _bounded(float(text), value)
    pos, total = 0, 0.0
    for m in _PART.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise ValueError(_hint(value))
    return _bounded(total, value)


#: longer than this is surely a typo, and would overflow nanosecond clocks further down
MAX_SECONDS = 30 * 86_400


def _bounded(seconds: float, value: object) -> float:
    if seconds > MAX_SECONDS:
        raise ValueError(f'{value!r} is longer than 30 days; write e.g. "5s" or "10m"')
    return seconds


def duration_option(value: str | None, option: str, *, allow_zero: bool = False) -> float | None:
    """A duration given on the command line as ``option``; None when not given."""
    if value is None:
        return None
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        raise SpecError(str(exc), key=option, file="command line") from None
    if seconds == 0 and not allow_zero:
        raise SpecError("must be longer than 0s", key=option, file="command line")
    return seconds


def _hint(value: object) -> str:
    return (
        f'{value!r} is not a duration; write e.g. "5s", "500ms", "1m30s", "2h"'
        " or a number of seconds"
    )


def format_duration(seconds: float) -> str:
    """``seconds`` as an experiment file writes it, read back by :func:`parse_duration`:
    ``"250ms"``, ``"5s"``, ``"2.5s"``."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{seconds:g}s"
