"""The sampler contract: snapshot statistics around one sample and hand back its deltas.

A :class:`Sampler` is created per run from the target. The runner calls :meth:`Sampler.start`
right before ``engine.run_sample`` and :meth:`Sampler.stop` right after it; ``stop`` returns one
:class:`Section` of deltas. :class:`Collector` runs several samplers and turns any failure of one
into a :class:`StatsWarning` on the sample, never into a failed run: statistics explain a result,
they must not cost it.

The stored layout (``samples.stats``) is documented in ``docs/results-schema.md``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from wannabet.engine.base import SampleResult

#: version of the ``samples.stats`` layout
STATS_LAYOUT = 1


@dataclass(frozen=True, slots=True)
class StatsWarning:
    """Something the statistics could not measure, and what to do about it."""

    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


@dataclass(frozen=True, slots=True)
class Section:
    """One sampler's figures for one sample.

    ``values`` holds deltas (never negative) and derived figures; a figure that could not be
    measured is ``None``, never a guess. ``invalid`` lists why the section's deltas cannot be
    trusted (a statistics reset, a server restart); an invalid section keeps no deltas.
    """

    name: str
    values: Mapping[str, Any] = field(default_factory=dict)
    invalid: tuple[str, ...] = ()
    warnings: tuple[StatsWarning, ...] = ()
    #: folded call stacks with their weights (the profile sampler's): stored in the
    #: ``profiles`` table, not in ``samples.stats``
    stacks: tuple[tuple[str, int], ...] = ()


#: tells a sampler's wait loops that Ctrl-C was pressed, so they give up at once
Interrupted = Callable[[], bool]


def never() -> bool:
    """The default :data:`Interrupted`: nothing ever interrupts."""
    return False


class Sampler(Protocol):
    """Collects one source of statistics around every sample."""

    name: str

    def start(self, interrupted: Interrupted = never) -> None:
        """Snapshot right before the sample."""
        ...

    def stop(self, result: SampleResult, interrupted: Interrupted = never) -> Section:
        """Snapshot right after the sample; return the deltas."""
        ...

    def close(self) -> None:
        """Release connections and threads."""
        ...


@dataclass(frozen=True, slots=True)
class SampleStats:
    """Everything the samplers measured for one sample, as stored with it."""

    sections: tuple[Section, ...]
    warnings: tuple[StatsWarning, ...] = ()

    @property
    def valid(self) -> bool:
        return not any(s.invalid for s in self.sections)

    @property
    def stacks(self) -> tuple[tuple[str, int], ...]:
        """The sample's folded stacks (none unless it was profiled)."""
        return tuple(stack for s in self.sections for stack in s.stacks)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"layout": STATS_LAYOUT, "valid": self.valid}
        invalid = [f"{s.name}: {r}" for s in self.sections for r in s.invalid]
        if invalid:
            out["invalid"] = invalid
        for s in self.sections:
            out[s.name] = dict(s.values)
        warnings = [*self.warnings, *(w for s in self.sections for w in s.warnings)]
        out["warnings"] = [str(w) for w in warnings]
        return out


def delta(
    before: Mapping[str, Any], after: Mapping[str, Any], keys: Sequence[str] | None = None
) -> tuple[dict[str, float | int], list[str]]:
    """Deltas of the numeric counters present in both snapshots.

    Returns the deltas and the names of counters that went backwards. A counter that went
    backwards (a statistics reset, a restart) yields no delta at all: the caller marks the
    section invalid, so no negative or partial figure is ever stored.
    """
    out: dict[str, float | int] = {}
    negative: list[str] = []
    for key in keys if keys is not None else after.keys():
        a, b = before.get(key), after.get(key)
        if isinstance(a, bool) or isinstance(b, bool):
            continue
        if not isinstance(a, int | float) or not isinstance(b, int | float):
            continue
        d = b - a
        if d < 0:
            negative.append(key)
        else:
            out[key] = d
    return ({} if negative else out), negative


class Collector:
    """Runs samplers around each sample; a failing sampler becomes a warning, not an error."""

    def __init__(
        self,
        samplers: Sequence[Sampler],
        warnings: Sequence[StatsWarning] = (),
        scrub: Callable[[str], str] = lambda text: text,
    ):
        self._samplers = list(samplers)
        self._scrub = scrub  # driver messages may quote a connection string
        self._setup_warnings = tuple(warnings)
        self._started: list[Sampler] = []
        self._start_warnings: list[StatsWarning] = []
        self._failed: list[Section] = []

    def start(self, interrupted: Interrupted = never) -> None:
        """Start every sampler; ``interrupted`` lets their wait loops give up on Ctrl-C."""
        self._started = []
        self._start_warnings = []
        self._failed = []
        for sampler in self._samplers:
            try:
                sampler.start(interrupted)
            except Exception as exc:
                message = self._scrub(_describe(exc))
                self._start_warnings.append(StatsWarning(sampler.name, message))
                # Set up for this run but failed now (a server restart, a lost connection):
                # the sample lacks figures its neighbours have, so it is flagged, not mixed in.
                self._failed.append(Section(sampler.name, {}, (f"failed to start: {message}",)))
            else:
                self._started.append(sampler)

    def stop(self, result: SampleResult, interrupted: Interrupted = never) -> SampleStats:
        sections = list(self._failed)
        warnings = [*self._setup_warnings, *self._start_warnings]
        # Reverse order: the last sampler started is the one nearest the sample.
        for sampler in reversed(self._started):
            try:
                sections.append(sampler.stop(result, interrupted))
            except Exception as exc:
                message = self._scrub(_describe(exc))
                warnings.append(StatsWarning(sampler.name, message))
                sections.append(Section(sampler.name, {}, (f"failed: {message}",)))
        self._started = []
        self._failed = []
        # Stored in the samplers' own order whatever the stop order was.
        order = {s.name: i for i, s in enumerate(self._samplers)}
        sections.sort(key=lambda s: order.get(s.name, len(order)))
        return SampleStats(tuple(sections), tuple(warnings))

    def abandon(self) -> None:
        """The sample was discarded: stop whatever runs without reading it."""
        for sampler in reversed(self._started):
            abandon = getattr(sampler, "abandon", None)
            if abandon is not None:
                with contextlib.suppress(Exception):
                    abandon()
        self._started = []
        self._failed = []

    def close(self) -> None:
        for sampler in reversed(self._samplers):
            with contextlib.suppress(Exception):
                sampler.close()


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text
