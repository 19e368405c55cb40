"""Differences between CPU profiles (issue #17, item 3): which frames of a flame graph grew or
shrank, judged over the measured samples.

* Folded stacks are parsed exactly and malformed lines are refused with one clear error.
* Inclusive shares count a recursive frame once per stack; self shares sum to 1.
* Each frame's Welch t, p-value, df and interval are SciPy's ``ttest_ind(equal_var=False)`` on
  the same per-sample shares; the adjusted p-values are Holm's procedure written out.
* Calibration by simulation: profiles whose frame probabilities vary from sample to sample
  (Dirichlet around one profile of a call tree, then multinomial stack samples). A vs A must
  flag any frame at most at alpha (within 3 Monte Carlo standard errors), while the per-frame
  test on pooled counts, which takes the stack samples for independent, flags far more often.
  A function that takes 10 more points of the CPU is found every time, and the frames whose
  share did not change are not flagged beyond alpha.

docs/statistics.md quotes the figures this prints (run with ``-s``).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats

from wannabet.analysis.profiles import (
    compare_profile_pairs,
    compare_profiles,
    compare_shares,
    frame_shares,
    parse_folded,
)
from wannabet.analysis.tests import holm
from wannabet.errors import AnalysisError, ImportError_

from .test_pairs import holm as holm_by_hand  # the written-out reference

ALPHA = 0.05


def upper(rate: float, n: int) -> float:
    # one-sided binomial tolerance: 3 standard errors (about 1 in 700 by chance)
    return rate + 3 * math.sqrt(rate * (1 - rate) / n)


# -- parsing and shares ---------------------------------------------------------------------

FOLDED = """\
main;a;b 3
main;a 1

main;c;a 2
main;r;r;r 4
"""


def test_folded_text_is_read_as_stacks_and_counts() -> None:
    text = "main;a;b 3\r\nmain;a 1\n\n  main;a;b\t2.5 \noperator new(unsigned long);x 7\n"
    assert parse_folded(text) == {
        "main;a;b": 5.5,  # listed twice: added
        "main;a": 1.0,
        "operator new(unsigned long);x": 7.0,  # a frame with spaces: the count is the last token
    }
    assert parse_folded("") == {}


def test_inclusive_shares_count_a_recursive_frame_once_and_self_shares_sum_to_one() -> None:
    shares = frame_shares([parse_folded(FOLDED), {"main;b": 1, "main": 3}])
    assert shares.frames == ("a", "b", "c", "main", "r")
    # total 10: a in 3+1+2 stacks (under main and under c), r once per stack however deep
    np.testing.assert_allclose(shares.inclusive[0], [0.6, 0.3, 0.2, 1.0, 0.4])
    np.testing.assert_allclose(shares.self_[0], [0.3, 0.3, 0.0, 0.0, 0.4])
    np.testing.assert_allclose(shares.inclusive[1], [0.0, 0.25, 0.0, 1.0, 0.0])
    np.testing.assert_allclose(shares.self_[1], [0.0, 0.25, 0.0, 0.75, 0.0])
    np.testing.assert_allclose(shares.stack_samples, [10, 4])
    np.testing.assert_allclose(shares.self_.sum(axis=1), 1.0)
    assert np.all(shares.inclusive >= shares.self_)
    assert np.all(shares.inclusive <= 1.0)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("main;a;b", "no count"),
        ("main;a;b -3", "not a non-negative number"),
        ("main;a;b 1e3", "not a non-negative number"),
        ("main;a;b x", "not a non-negative number"),
        ("main;;b 3", "empty frame"),
        (";main;b 3", "empty frame"),
        ("main;b; 3", "empty frame"),
        ("main;a;b 3 4", "two counts"),
    ],
)
def test_a_malformed_line_is_refused_with_its_number_and_text(line: str, why: str) -> None:
    text = f"main;ok 1\n{line}\nmain;;also-bad\n"
    with pytest.raises(ImportError_) as e:
        parse_folded(text, source="perf.folded")
    msg = str(e.value)
    assert msg.startswith("perf.folded:2: ")  # the first bad line, not the later one
    assert why in msg
    assert repr(line) in msg
    assert "\n" not in msg


def test_profiles_that_cannot_be_compared_are_refused() -> None:
    good = [{"main;a": 3, "main": 1}] * 3
    with pytest.raises(AnalysisError, match="other sample 1 has no stack samples"):
        compare_profiles(good, [{"main": 2}, {}])
    with pytest.raises(AnalysisError, match="baseline has no profiles"):
        compare_profiles([], good)
    with pytest.raises(AnalysisError, match="not a finite number"):
        compare_profiles(good, [{"main;a": -1, "main": 4}] * 2)
    with pytest.raises(AnalysisError, match="alpha"):
        compare_profiles(good, good, alpha=1.5)
    with pytest.raises(AnalysisError, match="min_share"):
        compare_profiles(good, good, min_share=5)
    with pytest.raises(AnalysisError, match="top"):
        compare_profiles(good, good, top=0)


# -- the test of one frame, against SciPy ----------------------------------------------------

STACKS = (
    "postgres;exec;scan",
    "postgres;exec;hash;md5",
    "postgres;exec",
    "postgres;parse;parse",
    "swapper;idle",
)


def hand_made(rng: np.random.Generator, n: int, md5: tuple[int, int]) -> list[dict[str, float]]:
    counts = rng.integers(50, 400, size=(n, len(STACKS)))
    counts[:, 1] = rng.integers(*md5, size=n)
    return [dict(zip(STACKS, map(float, row), strict=True)) for row in counts]


def test_each_frame_is_welchs_t_on_the_per_sample_shares_holm_adjusted() -> None:
    rng = np.random.default_rng(17)
    base = hand_made(rng, 6, (40, 120))
    other = hand_made(rng, 7, (300, 600))
    r = compare_profiles(base, other, min_share=0.0, top=None)
    shares = frame_shares([*base, *other])
    assert r.n_frames == len(shares.frames) == 8
    assert (r.n_tested, r.n_left_out, r.n_untestable) == (8, 0, 0)

    # md5's shares by hand: its stacks over all stacks, per sample
    md5_base = np.array([p[STACKS[1]] / sum(p.values()) for p in base])
    j = shares.frames.index("md5")
    np.testing.assert_allclose(shares.inclusive[:6, j], md5_base, rtol=1e-12)

    raw = {}
    for k, frame in enumerate(shares.frames):
        a, b = shares.inclusive[:6, k], shares.inclusive[6:, k]
        ref = stats.ttest_ind(b, a, equal_var=False)
        c = r.change_of(frame)
        assert c.test.statistic == pytest.approx(ref.statistic, rel=1e-10)
        assert c.test.p_value == pytest.approx(ref.pvalue, rel=1e-10)
        assert c.test.df is not None
        assert c.test.df[0] == pytest.approx(ref.df, rel=1e-10)
        assert c.change is not None
        ci = ref.confidence_interval(confidence_level=c.change.level)
        assert c.change.low == pytest.approx(ci.low * 100, rel=1e-9)
        assert c.change.high == pytest.approx(ci.high * 100, rel=1e-9)
        assert c.change_pp == pytest.approx((b.mean() - a.mean()) * 100, rel=1e-12)
        raw[frame] = float(ref.pvalue)

    adjusted = dict(zip(raw, holm_by_hand(list(raw.values())), strict=True))
    # the level of each interval: alpha / (m - j) at Holm's step j (from 0) for a rejected
    # frame, the level of the step Holm stopped at for the others
    order = sorted(raw, key=raw.__getitem__)
    rejected = [f for f in order if adjusted[f] < ALPHA]
    assert order[: len(rejected)] == rejected
    assert "md5" in rejected and len(rejected) < len(order)
    for step, frame in enumerate(order):
        c = r.change_of(frame)
        assert c.p_adjusted == pytest.approx(adjusted[frame], rel=1e-10)
        level = ALPHA / (8 - step) if frame in rejected else ALPHA / (8 - len(rejected))
        assert c.change is not None
        assert c.change.level == pytest.approx(1 - level, rel=1e-12)
        # decided exactly when the interval excludes 0
        excludes = c.change.low > 0 or c.change.high < 0
        assert (c.verdict != "undecided") == (frame in rejected) == excludes
        assert c.verdict == "undecided" or (c.verdict == "grew") == (c.change_pp > 0)
    assert r.verdict_of("md5") == "grew"
    assert set(r.decided) == set(rejected)
    # decided first, then by the size of the change
    verdicts = [c.verdict != "undecided" for c in r.changes]
    assert verdicts == sorted(verdicts, reverse=True)
    sizes = [abs(c.change_pp) for c in r.changes if c.verdict == "undecided"]
    assert sizes == sorted(sizes, reverse=True)


def test_swapping_the_conditions_flips_every_change_and_keeps_every_p_value() -> None:
    rng = np.random.default_rng(3)
    base, other = hand_made(rng, 5, (40, 120)), hand_made(rng, 8, (200, 500))
    r, s = compare_profiles(base, other, top=None), compare_profiles(other, base, top=None)
    assert (r.n_tested, r.n_left_out) == (s.n_tested, s.n_left_out)  # the filter is label-free
    for c in r.changes:
        d = s.change_of(c.frame)
        assert d.change_pp == pytest.approx(-c.change_pp)
        assert d.p_adjusted == pytest.approx(c.p_adjusted)
        flipped = {"grew": "shrank", "shrank": "grew", "undecided": "undecided"}
        assert d.verdict == flipped[c.verdict]


def test_the_filter_top_and_the_json_form() -> None:
    rng = np.random.default_rng(5)
    base, other = hand_made(rng, 6, (40, 120)), hand_made(rng, 6, (300, 600))
    # a rare frame in one sample only: below min_share, left out and counted
    base[0] = {**base[0], "postgres;exec;rare": 1.0}
    r = compare_profiles(base, other, min_share=0.005, top=1)
    assert r.n_frames == 9 and r.n_left_out == 1 and r.n_tested == 8
    assert len(r.changes) == 1
    assert len(r.decided) >= 2  # every decided frame, whatever top keeps
    with pytest.raises(KeyError):
        r.change_of("rare")
    d = r.to_dict()
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text) == d

    def plain(x: object) -> None:
        if isinstance(x, dict):
            for v in x.values():
                plain(v)
        elif isinstance(x, list):
            for v in x:
                plain(v)
        else:
            assert x is None or type(x) in (str, int, float, bool), type(x)

    plain(d)
    assert d["changes"][0]["verdict"] in ("grew", "shrank")
    assert d["n_grew"] + d["n_shrank"] == len(d["decided"])


def test_with_one_sample_in_a_condition_nothing_is_tested_and_it_says_so() -> None:
    rng = np.random.default_rng(9)
    r = compare_profiles(hand_made(rng, 1, (40, 120)), hand_made(rng, 5, (300, 600)))
    assert r.n_tested == 0 and not r.decided
    assert r.note is not None and "at least 2 samples" in r.note
    assert r.n_untestable == r.n_frames - r.n_left_out > 0
    md5 = r.change_of("md5")
    assert md5.verdict == "undecided" and md5.change is None and md5.p_adjusted is None
    assert md5.change_pp > 0  # the point estimate is still there
    json.dumps(r.to_dict(), allow_nan=False)


def test_the_self_share_is_compared_when_asked() -> None:
    rng = np.random.default_rng(11)
    base, other = hand_made(rng, 6, (40, 120)), hand_made(rng, 6, (300, 600))
    r = compare_profiles(base, other, share="self", min_share=0.0, top=None)
    assert r.share == "self"
    assert r.verdict_of("md5") == "grew"
    # hash is never a leaf: no self share anywhere, so never tested even with min_share=0
    assert r.n_left_out == 3  # hash, exec's caller postgres and swapper are never leaves
    with pytest.raises(KeyError):
        r.change_of("hash")


# -- calibration by simulation ---------------------------------------------------------------

#: Dirichlet concentration of each sample's frame probabilities around the common profile: a
#: frame with a 5% share varies by about 14% of its share from sample to sample (0.7 points)
CONCENTRATION = 1000.0
N_AVA = 300
N_POWER = 40


@dataclass(frozen=True)
class Tree:
    """A call tree: every node is a stack (its path from the root), every name a frame."""

    stacks: tuple[str, ...]
    frames: tuple[str, ...]
    contains: np.ndarray  # (nodes, frames): 1 where the node's stack contains the frame
    p: np.ndarray  # each node's share as a leaf (self share), summing to 1
    md5: int
    lz4: int


def make_tree(seed: int = 17, n_random: int = 100) -> Tree:
    rng = np.random.default_rng(seed)
    names, parent = ["main"], [-1]

    def add(name: str, under: int) -> int:
        names.append(name)
        parent.append(under)
        return len(names) - 1

    query = add("exec_query", 0)
    md5 = add("md5", add("hash_password", query))
    write = add("write_page", 0)
    lz4 = add("lz4_compress", add("compress_page", write))
    add("memcpy", add("parse", add("parse", add("parse", query))))  # recursion
    add("memcpy", write)  # one function under two callers
    for k in range(n_random):
        under = int(rng.integers(0, len(names)))
        while under in (md5, lz4):
            under = int(rng.integers(0, len(names)))
        add(f"fn{k:03d}", under)

    def path(i: int) -> list[str]:
        return [] if i < 0 else [*path(parent[i]), names[i]]

    paths = [path(i) for i in range(len(names))]
    frames = tuple(sorted(set(names)))
    index = {f: j for j, f in enumerate(frames)}
    contains = np.zeros((len(names), len(frames)))
    for i, fs in enumerate(paths):
        contains[i, [index[f] for f in set(fs)]] = 1.0
    others = [i for i in range(len(names)) if i not in (md5, lz4)]
    p = np.zeros(len(names))
    p[others] = rng.dirichlet(np.full(len(others), 0.3)) * 0.82
    p[md5], p[lz4] = 0.03, 0.15
    return Tree(tuple(";".join(fs) for fs in paths), frames, contains, p, md5, lz4)


def draw(rng: np.random.Generator, p: np.ndarray, n: int) -> np.ndarray:
    """(n samples, nodes) stack-sample counts: each sample's probabilities from a Dirichlet
    around ``p`` (run-to-run variation), then 2,000 to 4,000 multinomial stack samples."""
    g = rng.gamma(CONCENTRATION * p, size=(n, p.size))
    q = g / g.sum(axis=1, keepdims=True)
    return rng.multinomial(rng.integers(2000, 4001, size=n), q)


def pooled_count_test(
    tree: Tree, ca: np.ndarray, cb: np.ndarray, tested: np.ndarray
) -> list[float | None]:
    """Holm-adjusted p-values of the naive test: a two-proportion z test per frame on the
    counts pooled over all samples, taking every stack sample for an independent draw."""
    xa, xb = (ca @ tree.contains).sum(axis=0)[tested], (cb @ tree.contains).sum(axis=0)[tested]
    ta, tb = ca.sum(), cb.sum()
    pooled = (xa + xb) / (ta + tb)
    se = np.sqrt(pooled * (1 - pooled) * (1 / ta + 1 / tb))
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(se > 0, (xb / tb - xa / ta) / se, 0.0)
    return holm((2 * stats.norm.sf(np.abs(z))).tolist())


def shares(tree: Tree, counts: np.ndarray) -> np.ndarray:
    """(samples, frames) inclusive shares of simulated counts."""
    out: np.ndarray = (counts @ tree.contains) / counts.sum(axis=1, keepdims=True)
    return out


def folded(tree: Tree, counts: np.ndarray) -> list[dict[str, float]]:
    """The samples as parsed folded text, as a profiler would have written them."""
    out = []
    for row in counts:
        text = "".join(f"{tree.stacks[i]} {c}\n" for i, c in enumerate(row.tolist()) if c)
        out.append(parse_folded(text))
    return out


@pytest.fixture(scope="module")
def tree() -> Tree:
    return make_tree()


def test_the_simulated_tree_is_what_the_docs_say(tree: Tree) -> None:
    assert 100 <= len(tree.frames) <= 300
    assert tree.p.sum() == pytest.approx(1.0)
    # an end-to-end pass through folded text gives exactly the matrices' comparison
    rng = np.random.default_rng(1)
    ca, cb = draw(rng, tree.p, 12), draw(rng, tree.p, 9)
    via_text = compare_profiles(folded(tree, ca), folded(tree, cb), top=None)
    seen = tree.contains[(ca.sum(axis=0) + cb.sum(axis=0)) > 0].any(axis=0)
    cols = np.flatnonzero(seen)
    frames = [tree.frames[j] for j in cols]
    direct = compare_shares(frames, shares(tree, ca)[:, cols], shares(tree, cb)[:, cols], top=None)
    assert via_text.n_frames == direct.n_frames and via_text.n_tested == direct.n_tested
    for c in direct.changes:
        d = via_text.change_of(c.frame)
        assert d.change_pp == pytest.approx(c.change_pp, abs=1e-12)
        assert d.p_adjusted == pytest.approx(c.p_adjusted, rel=1e-9)


def test_a_vs_a_flags_a_frame_at_most_at_alpha_and_pooled_counts_flag_far_more(
    tree: Tree,
) -> None:
    rng = np.random.default_rng(20261127)
    start = time.perf_counter()
    any_flag = naive_flag = 0
    tested, left_out, frame_flags, naive_frames = [], [], 0, 0
    for _ in range(N_AVA):
        na, nb = (int(x) for x in rng.integers(10, 31, size=2))
        ca, cb = draw(rng, tree.p, na), draw(rng, tree.p, nb)
        r = compare_shares(tree.frames, shares(tree, ca), shares(tree, cb), top=None)
        any_flag += bool(r.decided)
        frame_flags += len(r.decided)
        tested.append(r.n_tested)
        left_out.append(r.n_left_out)
        pooled = (shares(tree, ca).sum(axis=0) + shares(tree, cb).sum(axis=0)) / (na + nb)
        keep = pooled >= r.min_share
        adjusted = pooled_count_test(tree, ca, cb, keep)
        flags = sum(1 for p in adjusted if p is not None and p < ALPHA)
        naive_flag += flags > 0
        naive_frames += flags
    seconds = time.perf_counter() - start
    rate, naive = any_flag / N_AVA, naive_flag / N_AVA
    print(
        f"\nprofiles A vs A: {N_AVA} experiments, {len(tree.frames)} frames, 10-30 samples per"
        f" condition, tested {np.mean(tested):.0f} frames per experiment (left out"
        f" {np.mean(left_out):.0f}); any frame flagged: sample-level Welch + Holm {rate:.3f}"
        f" ({frame_flags / N_AVA:.3f} frames per experiment), pooled-count z + Holm"
        f" {naive:.3f} ({naive_frames / N_AVA:.1f} frames per experiment); {seconds:.1f} s"
    )
    assert rate <= upper(ALPHA, N_AVA)
    assert naive >= 0.5


def test_a_function_taking_ten_more_points_is_found_and_unchanged_frames_are_not(
    tree: Tree,
) -> None:
    # md5 takes 10 points of the CPU from lz4_compress: md5 and its callers grow, lz4 and its
    # callers shrink, main (above both) and every other frame keep their true share
    pb = tree.p.copy()
    pb[tree.md5] += 0.10
    pb[tree.lz4] -= 0.10
    truth = (pb - tree.p) @ tree.contains * 100
    null = {f for f, d in zip(tree.frames, truth, strict=True) if abs(d) < 1e-9}
    moved = {f: d for f, d in zip(tree.frames, truth, strict=True) if f not in null}
    assert moved == pytest.approx(
        {
            "md5": 10,
            "hash_password": 10,
            "exec_query": 10,
            "lz4_compress": -10,
            "compress_page": -10,
            "write_page": -10,
        }
    )
    rng = np.random.default_rng(17)
    found = covered = null_flag = 0
    for _ in range(N_POWER):
        n = int(rng.integers(10, 31))
        ca, cb = draw(rng, tree.p, n), draw(rng, pb, n)
        r = compare_shares(tree.frames, shares(tree, ca), shares(tree, cb), top=None)
        md5 = r.change_of("md5")
        assert md5.change is not None
        found += md5.verdict == "grew" and md5.change.low > 0
        covered += md5.change.contains(10.0)
        null_flag += any(f in null for f in r.decided)
        assert r.verdict_of("lz4_compress") != "grew"
    print(
        f"\nprofiles +10 points for md5 (taken from lz4_compress): {N_POWER} experiments;"
        f" md5 grew with its interval above 0: {found / N_POWER:.3f}; its interval covered +10:"
        f" {covered / N_POWER:.3f}; any unchanged frame flagged: {null_flag / N_POWER:.3f}"
    )
    assert found >= N_POWER - 1
    assert covered / N_POWER >= 1 - upper(ALPHA, N_POWER)
    assert null_flag / N_POWER <= upper(ALPHA, N_POWER)


def test_several_pairs_are_one_holm_family_over_all_their_frames() -> None:
    rng = np.random.default_rng(29)
    groups = [hand_made(rng, 6, (40, 120)), hand_made(rng, 5, (300, 600))]
    groups.append(hand_made(rng, 7, (40, 120)))
    pairs = [(groups[0], groups[1]), (groups[0], groups[2]), (groups[1], groups[2])]
    judged = compare_profile_pairs(pairs, min_share=0.0, top=None)
    alone = [compare_profiles(a, b, min_share=0.0, top=None) for a, b in pairs]
    # the raw tests are each pair's own; only the adjustment spans the family
    raw = [c.test.p_value for r in alone for c in r.changes]
    assert all(p is not None for p in raw)
    adjusted = holm_by_hand(raw)
    m = len(raw)
    order = sorted(range(m), key=raw.__getitem__)
    rejected = sum(1 for p in adjusted if p < ALPHA)
    k = 0
    for r, single in zip(judged, alone, strict=True):
        assert r.n_family == m and single.n_family == single.n_tested
        for c in single.changes:
            got = r.change_of(c.frame)
            assert got.test.p_value == c.test.p_value
            assert got.p_adjusted == pytest.approx(adjusted[k], rel=1e-10)
            step = order.index(k)
            level = ALPHA / (m - step) if step < rejected else ALPHA / (m - rejected)
            assert got.change is not None
            assert got.change.level == pytest.approx(1 - level, rel=1e-12)
            assert (got.verdict != "undecided") == (adjusted[k] < ALPHA)
            k += 1
    # one pair alone is compare_profiles exactly
    [one] = compare_profile_pairs(pairs[:1], min_share=0.0, top=None)
    assert one.to_dict() == alone[0].to_dict()


def test_all_pairs_of_five_equal_conditions_flag_a_frame_at_most_at_alpha(tree: Tree) -> None:
    # Ten pairs judged one by one would flag some frame in far more than alpha of the
    # experiments; judged as one family they stay within it.
    rng = np.random.default_rng(20261128)
    n_exp, family_flags, per_pair_flags = 100, 0, 0
    for _ in range(n_exp):
        groups = [folded(tree, draw(rng, tree.p, int(rng.integers(8, 13)))) for _ in range(5)]
        pairs = [(groups[i], groups[j]) for i in range(5) for j in range(i + 1, 5)]
        family_flags += any(r.decided for r in compare_profile_pairs(pairs, top=1))
        per_pair_flags += any(compare_profiles(a, b, top=1).decided for a, b in pairs)
    rate, per_pair = family_flags / n_exp, per_pair_flags / n_exp
    print(
        f"\nprofiles, 10 pairs of equal conditions: any frame flagged {rate:.3f} as one family,"
        f" {per_pair:.3f} pair by pair ({n_exp} experiments)"
    )
    assert rate <= upper(ALPHA, n_exp)
    assert per_pair > rate
