"""Per-sample database and OS statistics: one sampler per source behind a small Protocol.

:func:`wannabet.backends.collector_for` builds the samplers a target supports; the runner
starts them right before each sample and stops them right after it, and stores the deltas with
the sample.
"""

from __future__ import annotations

from wannabet.samplers.base import (
    STATS_LAYOUT,
    Collector,
    Interrupted,
    Sampler,
    SampleStats,
    Section,
    StatsWarning,
)
from wannabet.samplers.options import StatsOptions

__all__ = [
    "STATS_LAYOUT",
    "Collector",
    "Interrupted",
    "SampleStats",
    "Sampler",
    "Section",
    "StatsOptions",
    "StatsWarning",
]
