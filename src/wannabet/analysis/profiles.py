"""Differences between CPU profiles that you can trust: which frames grew or shrank.

A differential flame graph (Gregg 2014) colours every frame by how its count changed between
two profiles: red where it grew, blue where it shrank. It has no notion of noise, so it colours
every frame, and the eye is drawn to whatever moved most by chance. This module decides, frame
by frame, which changes are real, so that a flame graph can colour only those.

Input: for each condition, one profile per measured sample, each in Brendan Gregg's *folded*
format: one line per distinct stack, frames root first and separated by ``;``, then a space and
the number of stack samples (``main;exec_query;md5_block_data_order 42``). :func:`parse_folded`
reads that text into a mapping ``stack -> count``.

The quantity compared
---------------------
A frame's **inclusive share** in one sample is the fraction of that sample's stack samples
whose stack contains the frame: the width of its boxes in the sample's flame graph. A frame
that recurses (``parse;parse;parse``) counts once per stack, so a share never exceeds 1. The
**self share** (``share="self"``) counts only stacks where the frame is the leaf, the
frame's own work; self shares sum to 1 over the frames of a sample.

A frame is identified by its function name: the exact text between the separators
(``md5_block_data_order``). A function reached from several callers is one frame, whose
share adds up all its boxes in the flame graph; ``memcpy`` and ``memcpy_[k]`` (a kernel
annotation) are two frames. Compare paths instead of functions by renaming the frames first.

The test, and why it works from samples
----------------------------------------
Each frame gets one share per measured sample, and the two conditions' shares are compared with
Welch's t test of the difference of their means (Welch 1947), with its interval in percentage
points. The observations are the **samples**, not the stack samples: two runs of the same
workload differ in where their CPU time goes by far more than the multinomial scatter of a
profiler's ticks (cache and memory placement, background work, JIT and planner decisions; the
run-to-run variation of Kalibera & Jones 2013, the overdispersed compound multinomial of
Mosimann 1962). A test on the pooled counts of all samples (a two-proportion or chi-square
test per frame, which is what colouring a differential flame graph by count differences
implicitly does) takes the tens of thousands of stack samples for independent observations of
one fixed profile. Its standard errors are too small by the square root of the overdispersion,
and on identical conditions it finds "changes" almost every time: ``docs/statistics.md`` gives
the figures of the simulation in ``tests/analysis/test_profiles.py``.

The family
----------
Every frame whose **pooled mean share** (over the samples of both conditions together) reaches
``min_share`` is tested; the others are left out and counted. The pooled mean does not depend
on which samples carry which label, so the filter cannot prefer frames that differ between the
conditions and the error guarantee survives it (independent filtering, Bourgon, Gentleman &
Huber 2010). Holm's step-down adjustment (Holm 1979) runs over the frames tested: the chance
that *any* frame of an A-versus-A comparison is called changed stays at most ``alpha``. When
several pairs of conditions are compared (:func:`compare_profile_pairs`, ``compare --profile
--pairs all``), the family is every frame of every pair, so the guarantee holds for the whole
answer, not for each pair alone.

A frame **grew** or **shrank** when its Holm-adjusted p-value is below ``alpha``; else it is
**undecided**. Its interval is Welch's t interval at the level Holm tested it at: a frame
rejected at step ``j`` of ``m`` (``j`` from 1) gets ``1 - alpha / (m - j + 1)``, every frame not
rejected gets the level of the step where Holm stopped, ``1 - alpha / (m - R)`` after ``R``
rejections. So an interval excludes 0 exactly when the frame is decided, and each interval
covers its frame's true change with probability at least ``1 - alpha`` (it contains the plain
``1 - alpha`` interval). When nothing is decided, the intervals are Bonferroni's and cover all
the frames' changes simultaneously with probability at least ``1 - alpha``; with decided frames
that simultaneous statement is not made (compatible simultaneous intervals for Holm,
Strassburger & Bretz 2008, say no more than "greater than 0" for a rejected frame).

Shares are compositional: when one function takes 10 more points of the CPU, the others
together lose 10 points, and a frame whose absolute time did not change can shrink as a share.
A share answers "where did the time go", not "did this function get slower"; the per-unit CPU
figures of the unit-of-work analysis answer the second.

References
----------
Gregg, B. (2014). Differential flame graphs. brendangregg.com/blog/2014-11-09 (and
``difffolded.pl`` in github.com/brendangregg/FlameGraph).
Gregg, B. (2016). The flame graph. Communications of the ACM 59(6), 48-57.
Welch, B. L. (1947). The generalization of "Student's" problem when several different
population variances are involved. Biometrika 34(1/2), 28-35.
Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian Journal
of Statistics 6(2), 65-70.
Bourgon, R., Gentleman, R. & Huber, W. (2010). Independent filtering increases detection power
for high-throughput experiments. PNAS 107(21), 9546-9551.
Mosimann, J. E. (1962). On the compound multinomial distribution, the multivariate
beta-distribution, and correlations among proportions. Biometrika 49(1/2), 65-82.
Kalibera, T. & Jones, R. (2013). Rigorous benchmarking in reasonable time. ISMM '13, 63-74.
Strassburger, K. & Bretz, F. (2008). Compatible simultaneous lower confidence bounds for the
Holm procedure and other Bonferroni-based closed tests. Statistics in Medicine 27(24),
4914-4927.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import sparse, stats

from wannabet.errors import AnalysisError, ImportError_

from .clt import Interval
from .tests import TestResult, holm, welch_t_from_moments

__all__ = [
    "FrameChange",
    "FrameShares",
    "Profile",
    "ProfileComparison",
    "Share",
    "compare_profile_pairs",
    "compare_profiles",
    "compare_shares",
    "frame_shares",
    "parse_folded",
]

#: one measured sample's profile: folded stack (frames root first, ``;``-separated) -> count
Profile = Mapping[str, float]
#: which share of a frame is compared: inclusive (the flame graph's width) or self (leaf)
Share = Literal["inclusive", "self"]
FrameVerdict = Literal["grew", "shrank", "undecided"]

_SEP = ";"
#: a line: the stack (ending in a non-space), whitespace, the count (flamegraph.pl's rule)
_LINE = re.compile(r"(?P<stack>.*\S)\s+(?P<count>\S+)")
_COUNT = re.compile(r"\d+(?:\.\d*)?")
_FOLDED_FORM = "a folded line is 'root;caller;callee COUNT'"


def _f(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _shown(line: str) -> str:
    return repr(line if len(line) <= 80 else line[:77] + "...")


def parse_folded(text: str, *, source: str = "<folded>") -> dict[str, float]:
    """Read a profile in Brendan Gregg's folded-stack format.

    Parameters
    ----------
    text : str
        One line per stack: frames root first, separated by ``;``, then whitespace and the
        number of stack samples (an integer or a decimal, as ``flamegraph.pl`` reads them).
        A frame may contain spaces (C++ signatures): the count is the last token. Blank lines
        are skipped; a stack listed twice has its counts added.
    source : str
        Where the text came from (a file name), for the error message.

    Returns
    -------
    dict of str to float
        Stack -> count, in the order the stacks first appear.

    Raises
    ------
    ImportError_
        On the first malformed line, naming ``source``, the line number and the line: no
        count, a count that is not a non-negative number, an empty frame (``a;;b``, or a
        ``;`` at either end), or two counts (a ``difffolded.pl`` differential line).

    References
    ----------
    Gregg, B. (2016). The flame graph. Communications of the ACM 59(6), 48-57.
    """
    out: dict[str, float] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        where = f"{source}:{number}"
        m = _LINE.fullmatch(line)
        if m is None:
            raise ImportError_(
                f"{where}: no count after the stack in {_shown(line)}; {_FOLDED_FORM}"
            )
        stack, count = m.group("stack"), m.group("count")
        if not _COUNT.fullmatch(count):
            raise ImportError_(
                f"{where}: the count {count!r} is not a non-negative number in {_shown(line)};"
                f" {_FOLDED_FORM}"
            )
        frames = stack.split(_SEP)
        if any(not f.strip() for f in frames):
            raise ImportError_(
                f"{where}: an empty frame (';;' or a ';' at either end) in {_shown(line)};"
                f" {_FOLDED_FORM}"
            )
        tail = frames[-1].split()
        if len(tail) > 1 and _COUNT.fullmatch(tail[-1]):
            raise ImportError_(
                f"{where}: two counts in {_shown(line)}, a differential (difffolded.pl) line;"
                " give each sample's own folded profile"
            )
        out[stack] = out.get(stack, 0.0) + float(count)
    return out


@dataclass(frozen=True, slots=True, eq=False)
class FrameShares:
    """Every frame's share of every sample.

    Attributes
    ----------
    frames : tuple of str
        Frame (function) names, sorted.
    inclusive : numpy.ndarray
        ``(samples, frames)``: fraction of the sample's stack samples whose stack contains the
        frame (once per stack, however often it recurses).
    self_ : numpy.ndarray
        ``(samples, frames)``: fraction of the sample's stack samples with the frame as leaf;
        each row sums to 1.
    stack_samples : numpy.ndarray
        ``(samples,)``: each sample's total count.
    """

    frames: tuple[str, ...]
    inclusive: np.ndarray
    self_: np.ndarray
    stack_samples: np.ndarray

    def of(self, share: Share) -> np.ndarray:
        """The ``(samples, frames)`` matrix of ``share``."""
        return self.inclusive if share == "inclusive" else self.self_


def _shares(profiles: Sequence[Profile], labels: Sequence[str]) -> FrameShares:
    stack_index: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    for s, profile in enumerate(profiles):
        for stack, count in profile.items():
            j = stack_index.setdefault(stack, len(stack_index))
            rows.append(s)
            cols.append(j)
            vals.append(count)
    counts = np.asarray(vals, dtype=np.float64)
    bad = np.flatnonzero(~(np.isfinite(counts) & (counts >= 0)))
    if bad.size:
        k = int(bad[0])
        stack = next(st for st, j in stack_index.items() if j == cols[k])
        raise AnalysisError(
            f"{labels[rows[k]]}: the count {vals[k]!r} of stack {_shown(stack)} is not a finite"
            " number >= 0"
        )

    stacks = list(stack_index)
    split = [st.split(_SEP) for st in stacks]
    names = sorted({f for fs in split for f in fs})
    if any(not f.strip() for f in names):
        k = next(i for i, fs in enumerate(split) if any(not f.strip() for f in fs))
        raise AnalysisError(
            f"stack {_shown(stacks[k])} has an empty frame (';;' or a ';' at either end)"
        )
    frame_index = {f: i for i, f in enumerate(names)}
    # One entry per (stack, distinct frame in it): a recursive frame counts once per stack.
    inc_rows: list[int] = []
    inc_cols: list[int] = []
    for j, fs in enumerate(split):
        distinct = {frame_index[f] for f in fs}
        inc_rows.extend([j] * len(distinct))
        inc_cols.extend(distinct)
    leaf = np.fromiter((frame_index[fs[-1]] for fs in split), dtype=np.int64, count=len(split))

    n, n_stacks, n_frames = len(profiles), len(stacks), len(names)
    by_stack = sparse.csr_array((counts, (rows, cols)), shape=(n, n_stacks))
    contains = sparse.csr_array(
        (np.ones(len(inc_rows)), (inc_rows, inc_cols)), shape=(n_stacks, n_frames)
    )
    is_leaf = sparse.csr_array(
        (np.ones(n_stacks), (np.arange(n_stacks), leaf)), shape=(n_stacks, n_frames)
    )
    totals = np.asarray(by_stack.sum(axis=1), dtype=np.float64).reshape(n)
    empty = np.flatnonzero(totals <= 0)
    if empty.size:
        raise AnalysisError(
            f"{labels[int(empty[0])]} has no stack samples (an empty profile); drop it or"
            " profile that sample again"
        )
    inclusive = np.asarray((by_stack @ contains).toarray(), dtype=np.float64) / totals[:, None]
    self_ = np.asarray((by_stack @ is_leaf).toarray(), dtype=np.float64) / totals[:, None]
    return FrameShares(tuple(names), inclusive, self_, totals)


def frame_shares(profiles: Sequence[Profile]) -> FrameShares:
    """Each frame's inclusive and self share in each profile.

    Parameters
    ----------
    profiles : sequence of mapping
        One per measured sample: folded stack -> count (from :func:`parse_folded`).

    Returns
    -------
    FrameShares
        Over the union of the frames of all profiles (a frame absent from a sample has share 0
        there).

    Raises
    ------
    AnalysisError
        A profile without stack samples, a negative or non-finite count, an empty frame.
    """
    return _shares(profiles, [f"profile {k}" for k in range(len(profiles))])


@dataclass(frozen=True, slots=True)
class FrameChange:
    """One frame's change between the conditions.

    Attributes
    ----------
    frame : str
        Function name.
    baseline_pct, other_pct : float
        Mean share over each condition's samples, in %.
    change : Interval or None
        ``other - baseline`` in percentage points with Welch's t interval at the level Holm
        tested the frame at (``change.level``); None without a test.
    test : TestResult
        Welch's t of ``other - baseline`` on the per-sample shares (raw p-value).
    p_adjusted : float or None
        Holm-adjusted over the frames tested.
    verdict : {"grew", "shrank", "undecided"}
    note : str or None
        Why a frame could not be judged.
    """

    frame: str
    baseline_pct: float
    other_pct: float
    change: Interval | None
    test: TestResult
    p_adjusted: float | None
    verdict: FrameVerdict
    note: str | None = None

    @property
    def change_pp(self) -> float:
        """Change of the mean share, in percentage points."""
        return self.other_pct - self.baseline_pct

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (plain floats, None for what is unknown)."""
        c = self.change
        return {
            "frame": self.frame,
            "baseline_pct": _f(self.baseline_pct),
            "other_pct": _f(self.other_pct),
            "change_pp": _f(self.change_pp),
            "ci_pp": None if c is None else [_f(c.low), _f(c.high)],
            "ci_level": None if c is None else _f(c.level),
            "test": self.test.test,
            "t": _f(self.test.statistic),
            "df": None if self.test.df is None else _f(self.test.df[0]),
            "p_value": _f(self.test.p_value),
            "p_adjusted": _f(self.p_adjusted),
            "verdict": self.verdict,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True)
class ProfileComparison:
    """Result of :func:`compare_profiles` (or :func:`compare_shares`).

    Attributes
    ----------
    share : {"inclusive", "self"}
        The share compared.
    alpha, min_share : float
        Family-wise error rate; the pooled mean share (fraction) a frame needs to be tested.
    n_baseline, n_other : int
        Samples per condition.
    n_frames : int
        Distinct frames seen in either condition.
    n_tested : int
        Frames tested: Holm's family.
    n_left_out : int
        Frames whose pooled mean share is below ``min_share`` (never tested).
    n_untestable : int
        Frames above ``min_share`` without a test: too few samples, or no variance in either
        condition and yet different means.
    decided : mapping of str to {"grew", "shrank"}
        Every decided frame, whatever ``top`` kept: what a flame graph colours.
    changes : tuple of FrameChange
        Frames above ``min_share``, decided first, then by the size of the change; the first
        ``top`` of them.
    note : str or None
        Why nothing was tested, when that is so.
    n_family : int
        Tests in Holm's family: :attr:`n_tested` for one pair, the frames tested in all the
        pairs when several were judged together (:func:`compare_profile_pairs`).
    """

    share: str
    alpha: float
    min_share: float
    n_baseline: int
    n_other: int
    n_frames: int
    n_tested: int
    n_left_out: int
    n_untestable: int
    decided: Mapping[str, FrameVerdict]
    changes: tuple[FrameChange, ...]
    note: str | None = None
    n_family: int = 0

    @property
    def grew(self) -> tuple[str, ...]:
        """Frames that grew, sorted by name."""
        return tuple(sorted(f for f, v in self.decided.items() if v == "grew"))

    @property
    def shrank(self) -> tuple[str, ...]:
        """Frames that shrank, sorted by name."""
        return tuple(sorted(f for f, v in self.decided.items() if v == "shrank"))

    def verdict_of(self, frame: str) -> FrameVerdict:
        """``grew``, ``shrank`` or ``undecided`` (also for a frame not tested or not seen)."""
        return self.decided.get(frame, "undecided")

    def change_of(self, frame: str) -> FrameChange:
        """The entry of ``frame`` among :attr:`changes` (``KeyError`` when ``top`` cut it)."""
        for c in self.changes:
            if c.frame == frame:
                return c
        raise KeyError(frame)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form: plain types only, no NaN."""
        return {
            "share": self.share,
            "alpha": float(self.alpha),
            "min_share": float(self.min_share),
            "n_baseline": self.n_baseline,
            "n_other": self.n_other,
            "n_frames": self.n_frames,
            "n_tested": self.n_tested,
            "n_left_out": self.n_left_out,
            "n_untestable": self.n_untestable,
            "n_family": self.n_family,
            "n_grew": len(self.grew),
            "n_shrank": len(self.shrank),
            "decided": dict(sorted(self.decided.items())),
            "changes": [c.to_dict() for c in self.changes],
            "note": self.note,
        }


def _validate(alpha: float, min_share: float, top: int | None, share: str) -> None:
    if not (0 < alpha < 1):
        raise AnalysisError(f"alpha={alpha!r} must lie strictly between 0 and 1, e.g. 0.05")
    if not (0 <= min_share < 1):
        raise AnalysisError(
            f"min_share={min_share!r} is a fraction of the stack samples in [0, 1), e.g. 0.005"
        )
    if top is not None and (isinstance(top, bool) or not isinstance(top, int) or top < 1):
        raise AnalysisError(f"top={top!r}; keep at least 1 frame, or None for all")
    if share not in ("inclusive", "self"):
        raise AnalysisError(f"share={share!r}; use 'inclusive' or 'self'")


def _holm_levels(
    p: Sequence[float | None], adjusted: Sequence[float | None], alpha: float
) -> np.ndarray:
    """Per test, the level alpha' Holm tested it at (NaN where there is no test): a test
    rejected at step j of m (from 0) gets ``alpha / (m - j)``; the others the level of the
    step where Holm stopped, ``alpha / (m - R)`` after R rejections."""
    out = np.full(len(p), np.nan)
    raw = {i: x for i, x in enumerate(p) if x is not None}
    m = len(raw)
    # holm() orders ties by position; adjusted p-values are non-decreasing along this order.
    order = sorted(raw, key=raw.__getitem__)
    rejected = sum(1 for x in adjusted if x is not None and x < alpha)
    for step, i in enumerate(order):
        out[i] = alpha / (m - step) if step < rejected else alpha / (m - rejected)
    return out


@dataclass(frozen=True, slots=True, eq=False)
class _FrameTests:
    """One pair's per-frame tests, before Holm's adjustment."""

    names: tuple[str, ...]
    kept: np.ndarray  # columns of ``names`` that reach ``min_share``
    mean_a: np.ndarray
    mean_b: np.ndarray
    var_a: np.ndarray  # variance of the mean, per kept frame
    var_b: np.ndarray
    tests: list[TestResult]
    n_a: int
    n_b: int
    note: str | None

    @property
    def p_values(self) -> list[float | None]:
        return [t.p_value for t in self.tests]


def _frame_tests(
    frames: Sequence[str], baseline: np.ndarray, other: np.ndarray, min_share: float
) -> _FrameTests:
    a = np.asarray(baseline, dtype=np.float64)
    b = np.asarray(other, dtype=np.float64)
    names = tuple(frames)
    for label, x in (("baseline", a), ("other", b)):
        if x.ndim != 2 or x.shape[1] != len(names):
            raise AnalysisError(
                f"{label} shares have shape {x.shape}; pass (samples, {len(names)} frames)"
            )
        if x.shape[0] == 0:
            raise AnalysisError(f"{label} has no samples; pass at least one profile")
        if not np.all(np.isfinite(x) & (x >= 0) & (x <= 1)):
            raise AnalysisError(f"{label} shares must be fractions in [0, 1]")
    n_a, n_b = a.shape[0], b.shape[0]
    # Label-free filter: the pooled mean is the same whichever samples carry which label.
    pooled = (a.sum(axis=0) + b.sum(axis=0)) / (n_a + n_b)
    kept = np.flatnonzero((pooled >= min_share) & (pooled > 0))
    a, b = a[:, kept], b[:, kept]
    mean_a, mean_b = a.mean(axis=0), b.mean(axis=0)
    note = None
    tests: list[TestResult]
    if n_a < 2 or n_b < 2:
        note = (
            f"no test: needs at least 2 samples per condition (baseline {n_a}, other {n_b});"
            " the changes are point estimates"
        )
        tests = [
            TestResult("welch-t", None, None, None, "needs at least 2 samples per condition")
        ] * kept.size
        var_a = var_b = np.full(kept.size, np.nan)
    else:
        var_a = a.var(axis=0, ddof=1) / n_a
        var_b = b.var(axis=0, ddof=1) / n_b
        tests = [
            welch_t_from_moments(ma, va, n_a - 1, mb, vb, n_b - 1)
            for ma, va, mb, vb in zip(
                mean_a.tolist(), var_a.tolist(), mean_b.tolist(), var_b.tolist(), strict=True
            )
        ]
    return _FrameTests(names, kept, mean_a, mean_b, var_a, var_b, tests, n_a, n_b, note)


def _judged(
    ft: _FrameTests,
    adjusted: Sequence[float | None],
    levels: np.ndarray,
    *,
    n_family: int,
    share: Share,
    alpha: float,
    min_share: float,
    top: int | None,
) -> ProfileComparison:
    """One pair's comparison from its tests and their Holm-adjusted p-values and levels
    (adjusted over this pair's frames alone, or over a family of pairs)."""
    tests, names, kept = ft.tests, ft.names, ft.kept
    df = np.array([t.df[0] if t.df else np.nan for t in tests])
    se = np.sqrt(ft.var_a + ft.var_b)
    with np.errstate(invalid="ignore"):
        q = stats.t.ppf(1 - levels / 2, df)
    diff = (ft.mean_b - ft.mean_a) * 100
    half = q * se * 100

    changes: list[FrameChange] = []
    decided: dict[str, FrameVerdict] = {}
    for k, i in enumerate(kept.tolist()):
        test, p_adj, d = tests[k], adjusted[k], float(diff[k])
        interval = None
        frame_note = None
        if test.p_value is None:
            frame_note = test.note
        elif test.df is None:  # no variance and no difference: nothing moved
            interval = Interval(d, d, d, 1 - float(levels[k]), "none (no variance)")
        else:
            lo, hi = d - float(half[k]), d + float(half[k])
            interval = Interval(
                d, lo, hi, 1 - float(levels[k]), f"welch t ({float(df[k]):.1f} df), holm level"
            )
        verdict: FrameVerdict = "undecided"
        if p_adj is not None and p_adj < alpha and interval is not None:
            if interval.low > 0:
                verdict = "grew"
            elif interval.high < 0:
                verdict = "shrank"
            else:  # only on the boundary, by rounding: say so rather than colour it
                frame_note = "significant, but the interval touches 0 (rounding)"
        if verdict != "undecided":
            decided[names[i]] = verdict
        changes.append(
            FrameChange(
                frame=names[i],
                baseline_pct=float(ft.mean_a[k]) * 100,
                other_pct=float(ft.mean_b[k]) * 100,
                change=interval,
                test=test,
                p_adjusted=p_adj,
                verdict=verdict,
                note=frame_note,
            )
        )
    changes.sort(key=lambda c: (c.verdict == "undecided", -abs(c.change_pp), c.frame))
    n_tested = sum(1 for p in ft.p_values if p is not None)
    return ProfileComparison(
        share=share,
        alpha=float(alpha),
        min_share=float(min_share),
        n_baseline=ft.n_a,
        n_other=ft.n_b,
        n_frames=len(names),
        n_tested=n_tested,
        n_left_out=len(names) - kept.size,
        n_untestable=kept.size - n_tested,
        decided=decided,
        changes=tuple(changes if top is None else changes[:top]),
        note=ft.note,
        n_family=n_family,
    )


def _as_family(
    pairs: Sequence[_FrameTests],
    *,
    share: Share,
    alpha: float,
    min_share: float,
    top: int | None,
) -> tuple[ProfileComparison, ...]:
    """Holm over every frame tested in every pair: one family, one error rate ``alpha``."""
    raw = [p for ft in pairs for p in ft.p_values]
    adjusted = holm(raw)
    levels = _holm_levels(raw, adjusted, alpha)
    n_family = sum(1 for p in raw if p is not None)
    out = []
    start = 0
    for ft in pairs:
        stop = start + len(ft.tests)
        out.append(
            _judged(
                ft,
                adjusted[start:stop],
                levels[start:stop],
                n_family=n_family,
                share=share,
                alpha=alpha,
                min_share=min_share,
                top=top,
            )
        )
        start = stop
    return tuple(out)


def compare_shares(
    frames: Sequence[str],
    baseline: np.ndarray,
    other: np.ndarray,
    *,
    share: Share = "inclusive",
    alpha: float = 0.05,
    min_share: float = 0.005,
    top: int | None = 20,
) -> ProfileComparison:
    """Which frames' shares changed, from per-sample share matrices.

    :func:`compare_profiles` after the shares are computed; use it directly when the shares
    come from elsewhere (a simulation, another profiler's report).

    Parameters
    ----------
    frames : sequence of str
        Names of the columns.
    baseline, other : numpy.ndarray
        ``(samples, frames)`` shares in [0, 1], one row per measured sample.
    share : {"inclusive", "self"}
        Which share the matrices hold (a label for the result).
    alpha, min_share, top
        As in :func:`compare_profiles`.

    Returns
    -------
    ProfileComparison
    """
    _validate(alpha, min_share, top, share)
    ft = _frame_tests(frames, baseline, other, min_share)
    [result] = _as_family([ft], share=share, alpha=alpha, min_share=min_share, top=top)
    return result


def compare_profiles(
    baseline: Sequence[Profile],
    other: Sequence[Profile],
    *,
    share: Share = "inclusive",
    alpha: float = 0.05,
    min_share: float = 0.005,
    top: int | None = 20,
) -> ProfileComparison:
    """Which frames grew or shrank between two conditions, judged over their samples.

    Parameters
    ----------
    baseline, other : sequence of mapping
        One profile per measured sample of each condition: folded stack -> count (from
        :func:`parse_folded`).
    share : {"inclusive", "self"}
        Compare each frame's inclusive share (the flame graph's width, default) or its self
        share (the frame as leaf).
    alpha : float
        Family-wise error rate over the frames tested.
    min_share : float
        Pooled mean share (a fraction: 0.005 is half a percent of the stack samples, over the
        samples of both conditions) a frame needs to be tested; the others are left out.
    top : int or None
        How many frames :attr:`ProfileComparison.changes` keeps (decided first, then by the size
        of the change); None keeps all. :attr:`ProfileComparison.decided` always has every
        decided frame.

    Returns
    -------
    ProfileComparison
        ``to_dict()`` is JSON-able.

    Raises
    ------
    AnalysisError
        No profiles in a condition, a profile without stack samples, a bad count or frame, or
        arguments out of range.

    Notes
    -----
    Per frame, Welch's t of ``mean(other shares) - mean(baseline shares)`` with one share per
    measured sample (0 where the frame is absent), Holm-adjusted over the frames tested; the
    interval of the change (percentage points) is Welch's at the level Holm tested the frame
    at, so it excludes 0 exactly when the frame is decided. With fewer than 2 samples in a
    condition nothing is tested. The module docstring explains why the samples, not the stack
    samples, are the observations.

    References
    ----------
    Welch, B. L. (1947). Biometrika 34(1/2), 28-35.
    Holm, S. (1979). Scandinavian Journal of Statistics 6(2), 65-70.
    Bourgon, R., Gentleman, R. & Huber, W. (2010). PNAS 107(21), 9546-9551.
    Gregg, B. (2014). Differential flame graphs. brendangregg.com/blog/2014-11-09.
    """
    [result] = compare_profile_pairs(
        [(baseline, other)], share=share, alpha=alpha, min_share=min_share, top=top
    )
    return result


def compare_profile_pairs(
    pairs: Sequence[tuple[Sequence[Profile], Sequence[Profile]]],
    *,
    share: Share = "inclusive",
    alpha: float = 0.05,
    min_share: float = 0.005,
    top: int | None = 20,
) -> tuple[ProfileComparison, ...]:
    """:func:`compare_profiles` for several pairs of conditions judged as one family.

    Each pair is filtered and tested as :func:`compare_profiles` does; Holm's adjustment then
    runs over the frames tested in all the pairs together, so that the chance that any frame
    of any pair is called changed when nothing changed stays at most ``alpha``, however many
    pairs are compared (as ``compare`` adjusts over its pairs of conditions). With one pair
    this is :func:`compare_profiles`. ``pairs``: (baseline profiles, other profiles) per pair.
    """
    _validate(alpha, min_share, top, share)
    tested = []
    for baseline, other in pairs:
        for label, group in (("baseline", baseline), ("other", other)):
            if len(group) == 0:
                raise AnalysisError(
                    f"{label} has no profiles; pass one profile per measured sample"
                )
        labels = [f"baseline sample {k}" for k in range(len(baseline))]
        labels += [f"other sample {k}" for k in range(len(other))]
        shares = _shares([*baseline, *other], labels)
        x = shares.of(share)
        n_a = len(baseline)
        tested.append(_frame_tests(shares.frames, x[:n_a], x[n_a:], min_share))
    return _as_family(tested, share=share, alpha=alpha, min_share=min_share, top=top)
