"""The CPU profiles of a stored run: per condition its summed stacks, and per pair of conditions
(each against the baseline by default, as ``compare --pairs`` chooses) which frames grew or shrank
(:func:`wannabet.analysis.profiles.compare_profile_pairs`).

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

from wannabet.analysis.compare import check_pairs, pairs_of
from wannabet.analysis.profiles import ProfileComparison, Share, compare_profile_pairs
from wannabet.errors import AnalysisError
from wannabet.model import DEFAULT_ALPHA
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
    """Which frames of ``label`` grew or shrank against ``baseline`` (the pair's reference: the
    run's baseline, or with the other ``pairs`` choices the earlier condition)."""

    label: str
    baseline: str
    comparison: ProfileComparison

    def to_dict(self) -> dict[str, Any]:
        return {"condition": self.label, "baseline": self.baseline, **self.comparison.to_dict()}


@dataclass(frozen=True, slots=True)
class RunProfiles:
    """A run's profiles per condition and their differences, one per pair compared."""

    run_id: int
    conditions: tuple[ConditionProfile, ...]
    differences: tuple[ProfileDifference, ...]
    #: which pairs: "baseline", "all", "successive" or "within=FACTOR" (over the conditions
    #: with profiles)
    pairs: str = "baseline"

    def to_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "pairs": self.pairs,
            "conditions": [{"condition": c.label, "samples": c.samples} for c in self.conditions],
            "differences": [d.to_dict() for d in self.differences],
        }


def run_profiles(
    store: Store,
    run_id: int,
    *,
    baseline: str | None = None,
    alpha: float = DEFAULT_ALPHA,
    share: Share = "inclusive",
    top: int | None = 20,
    pairs: str = "baseline",
) -> RunProfiles | None:
    """The profiles of run ``run_id``; None when none of its samples was profiled.

    ``baseline`` is a condition's label (default: the run's first condition). ``pairs`` chooses
    the comparisons, as ``compare --pairs``: every other condition with profiles against the
    baseline, every pair of them, each against the one before it, in the run's order of
    conditions, or (``within=FACTOR``) the pairs that differ in that factor alone; conditions
    without a profiled sample take no part. Holm's correction runs over
    the frames of all the pairs together, so the family-wise error stays ``alpha`` however
    many pairs are compared.

    Raises
    ------
    AnalysisError
        ``baseline`` names no condition of the run, or (with ``pairs`` "baseline") it has no
        profiled sample; ``pairs`` is not a choice.
    """
    check_pairs(pairs)
    by_condition = store.sample_profiles(run_id)
    if not by_condition:
        return None
    rows = store.conditions(run_id)
    labels = {c.condition_id: c.label for c in rows}
    base_row = rows[0] if baseline is None else next((c for c in rows if c.label == baseline), None)
    if base_row is None:
        known = ", ".join(c.label for c in rows)
        raise AnalysisError(f"no condition {baseline!r} in run {run_id}; its conditions: {known}")
    if pairs == "baseline" and base_row.condition_id not in by_condition:
        raise AnalysisError(
            f"the baseline {base_row.label!r} has no profiled sample in run {run_id}; choose"
            " another with --baseline"
        )
    conditions = tuple(
        ConditionProfile(labels[cid], len(profiles), _summed(profiles))
        for cid, profiles in sorted(by_condition.items())
    )
    by_label = {labels[cid]: profiles for cid, profiles in by_condition.items()}
    profiled = [c.label for c in rows if c.label in by_label]
    family = pairs_of(profiled, base_row.label, pairs, {c.label: c.levels for c in rows})
    # One Holm family over the frames of every pair: more pairs must not mean more false
    # "changed" frames (compare adjusts over its pairs of conditions the same way).
    judged = compare_profile_pairs(
        [(by_label[reference], by_label[label]) for reference, label in family],
        share=share,
        alpha=alpha,
        top=top,
    )
    differences = tuple(
        ProfileDifference(label, reference, comparison)
        for (reference, label), comparison in zip(family, judged, strict=True)
    )
    return RunProfiles(run_id, conditions, differences, pairs)


def _summed(profiles: Sequence[dict[str, float]]) -> tuple[tuple[str, int], ...]:
    total: Counter[str] = Counter()
    for profile in profiles:
        total.update(profile)
    return tuple(sorted((stack, int(w)) for stack, w in total.items()))
