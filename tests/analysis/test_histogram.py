"""Latency histograms: exact merges, quantiles within the layout's error, the engine's layout."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wannabet.analysis.histogram import (
    MAX_RELATIVE_WIDTH,
    MAX_VALUE_NS,
    Histogram,
    count,
    from_values,
    mean_bounds,
    merge,
    midpoints,
    quantile,
    quantiles,
)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

QS = (0.5, 0.9, 0.95, 0.99, 0.999)

# Latencies of every scale the layout distinguishes: exact small values, realistic
# nanoseconds up to 100 s, and the whole range of the layout.
latency = st.one_of(
    st.integers(0, 600),
    st.integers(0, 10**11),
    st.integers(0, MAX_VALUE_NS),
)
latency_lists = st.lists(latency, min_size=0, max_size=300)


def u64(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.uint64)


def exact_quantiles(values: np.ndarray, qs) -> np.ndarray:
    return np.quantile(values, qs, method="inverted_cdf")


# --- merging ----------------------------------------------------------------------------------


@SETTINGS
@given(st.lists(latency_lists, min_size=1, max_size=5))
def test_merged_histograms_equal_the_histogram_of_the_pooled_values(parts) -> None:
    pooled = u64([v for part in parts for v in part])
    merged = merge(*(from_values(u64(part)) for part in parts))
    assert merged == from_values(pooled)
    assert count(merged) == pooled.size


@SETTINGS
@given(latency_lists, latency_lists)
def test_merge_does_not_depend_on_order(a, b) -> None:
    ha, hb = from_values(u64(a)), from_values(u64(b))
    assert merge(ha, hb) == merge(hb, ha)


def test_merging_nothing_gives_an_empty_histogram() -> None:
    empty = merge()
    assert len(empty) == 0 and count(empty) == 0
    assert empty == from_values(np.zeros(0, dtype=np.int64))


def test_different_layouts_do_not_merge() -> None:
    a = Histogram([100], [199], [3])
    b = Histogram([150], [249], [2])
    with pytest.raises(ValueError, match="different bin layouts"):
        merge(a, b)
    # Identical bins of another layout (an imported tool's) merge by summing.
    assert merge(a, a) == Histogram([100], [199], [6])


# --- the layout -------------------------------------------------------------------------------


@SETTINGS
@given(latency_lists)
def test_every_value_lies_in_one_bin_of_bounded_width(values) -> None:
    v = u64(values)
    h = from_values(v)
    assert count(h) == v.size
    for x in v:
        i = np.searchsorted(h.hi_ns, x)
        assert h.lo_ns[i] <= x <= h.hi_ns[i]
    width = (h.hi_ns - h.lo_ns).astype(float) + 1
    small = h.lo_ns < 256
    assert np.all(width[small] == 1)
    assert np.all(width[~small] / h.lo_ns[~small] <= MAX_RELATIVE_WIDTH)


def test_known_bins() -> None:
    h = from_values([7, 300, 301, 1_000_000])
    # Between 256 and 511 bins are 2 wide; between 2**19 and 2**20 they are 2**12 wide.
    assert h.lo_ns.tolist() == [7, 300, 999_424]
    assert h.hi_ns.tolist() == [7, 301, 1_003_519]
    assert h.count.tolist() == [1, 2, 1]
    assert midpoints(h).tolist() == [7.0, 300.5, 1_001_471.5]


@SETTINGS
@given(latency_lists)
def test_the_python_layout_is_the_engines(values) -> None:
    from wannabet import _engine

    v = u64(values)
    native = _engine.histogram_of(v)
    assert Histogram(native["lo_ns"], native["hi_ns"], native["count"]) == from_values(v)


def test_the_python_layout_is_the_engines_on_a_million_latencies() -> None:
    from wannabet import _engine

    rng = np.random.default_rng(13)
    v = np.concatenate(
        [
            rng.lognormal(np.log(1e6), 2.0, 1_000_000).astype(np.uint64),
            u64([0, 1, 255, 256, 511, 512, 2**53 - 1, 2**53, 2**53 + 1, 2**62, MAX_VALUE_NS]),
        ]
    )
    native = _engine.histogram_of(v)
    assert native["lo_ns"].dtype == native["hi_ns"].dtype == native["count"].dtype == np.uint64
    assert Histogram(native["lo_ns"], native["hi_ns"], native["count"]) == from_values(v)


# --- quantiles and the mean -------------------------------------------------------------------


@SETTINGS
@given(st.lists(st.integers(0, 255), min_size=1, max_size=300), st.floats(0, 1))
def test_quantiles_of_exact_bins_are_numpys_inverted_cdf(values, q) -> None:
    # Below 256 ns every value has its own bin: the rank rule alone decides the answer.
    v = np.array(values)
    assert quantile(from_values(v), q) == exact_quantiles(v, q)


@SETTINGS
@given(st.lists(latency, min_size=1, max_size=300), st.floats(0, 1))
def test_a_quantile_is_the_midpoint_of_the_bin_holding_the_exact_one(values, q) -> None:
    v = u64(values)
    h = from_values(v)
    exact = int(exact_quantiles(v, q))
    i = int(np.searchsorted(h.hi_ns, exact))
    assert h.lo_ns[i] <= exact <= h.hi_ns[i]
    assert quantile(h, q) == midpoints(h)[i]


@SETTINGS
@given(st.lists(latency, min_size=1, max_size=300), st.floats(0, 1))
def test_with_the_extremes_a_quantile_stays_between_them_and_nearer_the_exact_one(
    values, q
) -> None:
    v = u64(values)
    h = from_values(v)
    lo, hi = float(v.min()), float(v.max())
    exact = float(exact_quantiles(v, q))
    bounded = float(quantiles(h, [q], extremes=(lo, hi))[0])
    assert lo <= bounded <= hi
    assert bounded == min(max(quantile(h, q), lo), hi)
    assert abs(bounded - exact) <= abs(quantile(h, q) - exact)


def test_a_p99_above_the_maximum_is_brought_down_to_it() -> None:
    # Every value near the bottom of its bin, [9,961,472, 10,027,007] ns: the midpoint lies
    # past them all.
    v = u64([9_970_000] * 100)
    h = from_values(v)
    assert quantile(h, 0.99) > 9_970_000
    assert quantiles(h, [0.99], extremes=(9_970_000, 9_970_000))[0] == 9_970_000


def _lognormal(rng):
    return rng.lognormal(np.log(1e6), 1.0, 200_000)


def _exponential(rng):
    return rng.exponential(2e5, 200_000)


def _bimodal(rng):
    fast = rng.lognormal(np.log(2e5), 0.2, 150_000)
    slow = rng.lognormal(np.log(2e7), 0.3, 50_000)
    return np.concatenate([fast, slow])


def _heavy_tailed(rng):
    # Pareto (Lomax) with tail index 1.2: infinite variance, p99.9 far out.
    return np.minimum(1e5 * (1 + rng.pareto(1.2, 200_000)), 1e11)


def _log_uniform_100ns_to_100s(rng):
    return np.exp(rng.uniform(np.log(100), np.log(1e11), 200_000))


DISTRIBUTIONS = {
    "log-normal": _lognormal,
    "exponential": _exponential,
    "bimodal": _bimodal,
    "heavy-tailed": _heavy_tailed,
    "100 ns to 100 s": _log_uniform_100ns_to_100s,
}


@pytest.mark.parametrize("name", list(DISTRIBUTIONS))
def test_quantiles_are_within_one_percent_of_the_exact_ones(name) -> None:
    rng = np.random.default_rng(20261123)
    values = np.round(DISTRIBUTIONS[name](rng)).astype(np.int64)
    h = from_values(values)
    exact = exact_quantiles(values, QS)
    relative = np.abs(quantiles(h, QS) - exact) / exact
    assert relative.max() <= 0.01, dict(zip(QS, relative, strict=True))
    # The bound the layout guarantees: half a bin, at most 1/256 of a value.
    assert relative.max() <= MAX_RELATIVE_WIDTH / 2


@SETTINGS
@given(st.lists(latency, min_size=1, max_size=300))
def test_the_mean_lies_between_its_bounds(values) -> None:
    v = u64(values)
    low, high = mean_bounds(from_values(v))
    mean = sum(int(x) for x in v) / v.size
    assert low <= mean * (1 + 1e-12) and mean <= high * (1 + 1e-12)
    assert high - low <= MAX_RELATIVE_WIDTH * low + 1e-9 * high


def test_quantiles_keep_the_shape_of_the_probabilities() -> None:
    h = from_values([1, 2, 3, 4])
    assert quantiles(h, [[0.25, 0.5], [0.75, 1.0]]).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert quantile(h, 0.0) == 1.0


# --- the value type ---------------------------------------------------------------------------


def test_a_histogram_copies_its_arrays_and_is_read_only() -> None:
    lo = np.array([1, 2])
    h = Histogram(lo, [1, 2], [5, 0])
    lo[0] = 0
    assert h.lo_ns.tolist() == [1, 2] and h.lo_ns.dtype == np.uint64
    with pytest.raises(ValueError, match="read-only"):
        h.count[0] = 1
    assert count(h) == 5


@pytest.mark.parametrize(
    ("lo", "hi", "n", "message"),
    [
        ([-1, 5], [1, 6], [1, 1], "lo_ns must not be negative, got -1 at index 0"),
        ([0, 5], [1, 6], [1, -2], "count must not be negative, got -2 at index 1"),
        ([5, 0], [6, 1], [1, 1], r"sorted by lo_ns .* bin 0 \[5, 6\] is not below bin 1 \[0, 1\]"),
        ([0, 1], [1, 2], [1, 1], r"must not overlap: bin 0 \[0, 1\] is not below bin 1 \[1, 2\]"),
        ([0, 5], [1, 6], [1], "one entry per bin, got lengths 2, 2 and 1"),
        ([3], [2], [1], "bin 0 ends before it starts: lo_ns 3 > hi_ns 2"),
        ([0.5], [1.0], [1], "lo_ns must hold integers"),
        ([[0]], [[1]], [[1]], "lo_ns must be one-dimensional"),
    ],
)
def test_bad_bins_are_refused_with_the_reason(lo, hi, n, message) -> None:
    with pytest.raises(ValueError, match=message):
        Histogram(np.array(lo), np.array(hi), np.array(n))


TOO_LARGE = r"at most 9223372036854775807 \(2\*\*63 - 1\), got 9223372036854775808 at index 1"


def test_the_engine_refuses_the_latencies_from_values_refuses() -> None:
    from wannabet import _engine

    with pytest.raises(ValueError, match=TOO_LARGE):
        _engine.histogram_of(u64([1, 2**63]))


def test_bad_values_and_probabilities_are_refused() -> None:
    with pytest.raises(ValueError, match="values_ns must not be negative, got -3 at index 1"):
        from_values([5, -3])
    with pytest.raises(ValueError, match="values_ns must hold integers"):
        from_values([1.5])
    with pytest.raises(ValueError, match=TOO_LARGE):
        from_values(u64([1, 2**63]))
    h = from_values([1, 2])
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\], got 1.5"):
        quantiles(h, [0.5, 1.5])
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\], got nan"):
        quantile(h, float("nan"))
    with pytest.raises(ValueError, match="empty histogram"):
        quantile(merge(), 0.5)
    with pytest.raises(ValueError, match="empty histogram"):
        mean_bounds(merge())
