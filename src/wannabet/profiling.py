"""The CPU profiles of a stored run: per condition its summed stacks, and per condition against
the baseline which frames grew or shrank (:func:`wannabet.analysis.profiles.compare_profiles`).

The report draws these (a flame graph per condition, a differential one per comparison) and
``wannabet compare --profile`` prints the frames. The store gives one profile per analysed
sample; the analysis compares the conditions' samples, so a frame is called changed only when
the samples say so, not when two summed profiles merely differ.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wannabet.analysis.profiles import ProfileComparison, Share, compare_profiles
from wannabet.errors import AnalysisError
from wannabet.store import Store

__all__ = ["ConditionProfile", "ProfileDifference", "RunProfiles", "run_profiles"]


@dataclass(frozen=True, slots=True)
class ConditionProfile:
    """One condition's profiles, summed over its profiled samples."""

    label: str
    samples: int
    #: folded stack -> summed weight (perf's periods: ns of CPU for cpu-clock)
    stacks: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class ProfileDifference:
    """Which frames of ``label`` grew or shrank against ``baseline``."""

    label: str
    baseline: str
    comparison: ProfileComparison

    def to_dict(self) -> dict[str, Any]:
        return {"condition": self.label, "baseline": self.baseline, **self.comparison.to_dict()}


@dataclass(frozen=True, slots=True)
class RunProfiles:
    """A run's profiles per condition and their differences from the baseline."""

    run_id: int
    conditions: tuple[ConditionProfile, ...]
    differences: tuple[ProfileDifference, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "conditions": [{"condition": c.label, "samples": c.samples} for c in self.conditions],
            "differences": [d.to_dict() for d in self.differences],
        }


def run_profiles(
    store: Store,
    run_id: int,
    *,
    baseline: str | None = None,
    alpha: float = 0.05,
    share: Share = "inclusive",
    top: int | None = 20,
) -> RunProfiles | None:
    """The profiles of run ``run_id``; None when none of its samples was profiled.

    ``baseline`` is a condition's label (default: the run's first condition); every other
    condition with profiles is compared with it.

    Raises
    ------
    AnalysisError
        ``baseline`` names no condition of the run, or it has no profiled sample.
    """
    by_condition = store.sample_profiles(run_id)
    if not by_condition:
        return None
    rows = store.conditions(run_id)
    labels = {c.condition_id: c.label for c in rows}
    base_row = rows[0] if baseline is None else next((c for c in rows if c.label == baseline), None)
    if base_row is None:
        known = ", ".join(c.label for c in rows)
        raise AnalysisError(f"no condition {baseline!r} in run {run_id}; its conditions: {known}")
    if base_row.condition_id not in by_condition:
        raise AnalysisError(
            f"the baseline {base_row.label!r} has no profiled sample in run {run_id}; choose"
            " another with --baseline"
        )
    conditions = tuple(
        ConditionProfile(labels[cid], len(profiles), _summed(profiles))
        for cid, profiles in sorted(by_condition.items())
    )
    base_profiles = by_condition[base_row.condition_id]
    differences = tuple(
        ProfileDifference(
            labels[cid],
            base_row.label,
            compare_profiles(base_profiles, profiles, share=share, alpha=alpha, top=top),
        )
        for cid, profiles in sorted(by_condition.items())
        if cid != base_row.condition_id
    )
    return RunProfiles(run_id, conditions, differences)


def _summed(profiles: Sequence[dict[str, float]]) -> tuple[tuple[str, int], ...]:
    total: Counter[str] = Counter()
    for profile in profiles:
        total.update(profile)
    return tuple(sorted((stack, int(w)) for stack, w in total.items()))
