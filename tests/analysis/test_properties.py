"""Property tests: invariants that must hold for any data, not just the data we thought of."""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wannabet.analysis import (
    Clustered,
    Observations,
    bootstrap_relative_change,
    cluster_bootstrap_relative_change,
    compare,
    hodges_lehmann,
    mean_interval,
    prediction_interval,
    share_within,
)

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

positive = st.floats(min_value=0.01, max_value=1e4, allow_nan=False, allow_infinity=False)
finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


def arrays(elements, min_size, max_size):
    return st.lists(elements, min_size=min_size, max_size=max_size).map(np.array)


def contains(iv) -> bool:
    return iv is None or iv.low <= iv.estimate <= iv.high


# --- an interval contains its estimate --------------------------------------------------------


@SETTINGS
@given(arrays(finite, 1, 60))
def test_clt_intervals_contain_the_mean(x):
    for iv in (mean_interval(x), prediction_interval(x, 0.9), prediction_interval(x, 0.95)):
        assert contains(iv)
        assert iv.estimate == float(np.mean(x))
    w = share_within(x, 2.0)
    assert 0 <= w.count <= w.n == x.size


@SETTINGS
@given(arrays(finite, 1, 25), arrays(finite, 1, 25))
def test_hodges_lehmann_interval_contains_the_shift(a, b):
    iv = hodges_lehmann(a, b)
    assert contains(iv)
    d = np.subtract.outer(b, a)
    assert d.min() <= iv.low and iv.high <= d.max()


@SETTINGS
@given(arrays(positive, 2, 25), arrays(positive, 2, 25), st.integers(0, 2**32 - 1))
def test_bootstrap_intervals_contain_their_estimates(a, b, seed):
    r = bootstrap_relative_change(a, b, rng=np.random.default_rng(seed), n_boot=200)
    assert contains(r.mean) and contains(r.median)
    assert r.mean is not None
    # Positive values cannot fall by 100 % or more: neither can an end of the interval.
    assert r.mean.low > -100 and (r.median is None or r.median.low > -100), r
    assert math.isclose(
        r.mean.estimate, (b.mean() / a.mean() - 1) * 100, rel_tol=1e-9, abs_tol=1e-9
    )


@SETTINGS
@given(
    arrays(positive, 4, 80),
    arrays(positive, 4, 80),
    st.integers(2, 6),
    st.integers(2, 6),
    st.integers(0, 2**32 - 1),
)
def test_cluster_bootstrap_intervals_contain_their_estimates(a, b, ka, kb, seed):
    ca = Clustered.from_codes(a, np.arange(a.size) * ka // a.size)
    cb = Clustered.from_codes(b, np.arange(b.size) * kb // b.size)
    r = cluster_bootstrap_relative_change(ca, cb, rng=np.random.default_rng(seed), n_boot=200)
    assert contains(r.mean) and contains(r.median)
    for iv in (r.mean, r.median):
        assert iv is None or iv.low > -100, r
    assert math.isclose(
        r.median.estimate, (np.median(b) / np.median(a) - 1) * 100, rel_tol=1e-9, abs_tol=1e-9
    )


# --- compare() never produces NaN and its intervals contain their estimates -------------------


@st.composite
def condition(draw, label):
    n_samples = draw(st.integers(1, 8))
    per = draw(st.integers(1, 6))
    values = draw(
        st.one_of(
            arrays(positive, n_samples * per, n_samples * per),
            st.just(np.full(n_samples * per, 7.0)),  # zero variance
            arrays(st.sampled_from([1.0, 2.0, 3.0]), n_samples * per, n_samples * per),  # ties
        )
    )
    return Observations(label, values, np.repeat(np.arange(n_samples), per))


def plain(obj) -> bool:
    if obj is None or isinstance(obj, (bool, int, str)):
        return True
    if isinstance(obj, float):
        return math.isfinite(obj)
    if isinstance(obj, list):
        return all(plain(v) for v in obj)
    if isinstance(obj, dict):
        return all(plain(v) for v in obj.values())
    return False


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    condition("a"),
    condition("b"),
    condition("c"),
    st.sampled_from(["sample", "transaction"]),
    st.sampled_from(["latency", "throughput"]),
)
def test_compare_handles_any_small_input(a, b, c, level, metric):
    res = compare([a, b, c], level=level, metric=metric, n_boot=100)
    d = res.to_dict()
    assert plain(d)
    json.dumps(d, allow_nan=False)
    for comp in res.comparisons:
        assert comp.verdict in ("faster", "slower", "no-difference", "inconclusive")
        for iv in (comp.delta, comp.median_delta, comp.hodges_lehmann):
            assert contains(iv)
        if comp.verdict in ("faster", "slower"):
            assert comp.test.p_value is not None and comp.p_adjusted < res.alpha
    for s in res.conditions:
        assert contains(s.clt.mean_ci95)


# --- the order of the conditions does not matter ----------------------------------------------


def approx_equal(x, y) -> bool:
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(approx_equal(x[k], y[k]) for k in x)
    if isinstance(x, list):
        return len(x) == len(y) and all(approx_equal(u, v) for u, v in zip(x, y, strict=True))
    if isinstance(x, float) and isinstance(y, float):
        return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
    return x == y


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 2**32 - 1),
    st.integers(3, 5),
    st.randoms(use_true_random=False),
    st.sampled_from(["sample", "transaction"]),
)
def test_order_of_conditions_does_not_change_results(seed, k, shuffler, level):
    rng = np.random.default_rng(seed)
    groups = []
    for i in range(k):
        n_samples = int(rng.integers(4, 12))
        per = int(rng.integers(1, 30))
        v = rng.lognormal(2 + 0.05 * i, 0.3, size=n_samples * per)
        groups.append(Observations(f"c{i}", v, np.repeat(np.arange(n_samples), per)))
    base = groups[0].condition
    shuffled = list(groups)
    shuffler.shuffle(shuffled)
    r1 = compare(groups, baseline=base, level=level, n_boot=200, seed=seed % 1000)
    r2 = compare(shuffled, baseline=base, level=level, n_boot=200, seed=seed % 1000)
    c1 = {c["condition"]: c for c in r1.to_dict()["comparisons"]}
    c2 = {c["condition"]: c for c in r2.to_dict()["comparisons"]}
    assert c1.keys() == c2.keys()
    for name in c1:
        assert approx_equal(c1[name], c2[name]), name
    s1 = {c["condition"]: c for c in r1.to_dict()["conditions"]}
    s2 = {c["condition"]: c for c in r2.to_dict()["conditions"]}
    for name in s1:
        assert approx_equal(s1[name], s2[name]), name
    assert approx_equal(r1.to_dict()["omnibus"], r2.to_dict()["omnibus"])
