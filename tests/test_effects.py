"""Bootstrap intervals of a relative change (``wannabet.analysis.effects``) at their edges."""

from __future__ import annotations

import numpy as np
import pytest

from wannabet.analysis.effects import bootstrap_relative_change


def test_a_baseline_of_zeros_but_one_still_gets_an_interval() -> None:
    # A wait per commit: zero in most samples. Leaving out the one non-zero sample makes the
    # baseline's mean 0 and that jackknife value infinite; the interval falls back to the
    # bias-corrected percentile instead of failing (it once raised inside numpy).
    a = np.array([0.0, 0.0, 0.0, 0.02])
    b = np.array([0.9, 1.1, 1.0, 1.2])
    change = bootstrap_relative_change(a, b, rng=np.random.default_rng(1), n_boot=2000, level=0.95)
    assert change.mean is not None
    assert change.mean.estimate == pytest.approx((1.05 / 0.005 - 1) * 100)
    assert np.isfinite([change.mean.low, change.mean.high]).all()
    assert change.mean.low <= change.mean.estimate <= change.mean.high


def test_an_all_zero_baseline_has_no_relative_change() -> None:
    a, b = np.zeros(4), np.array([0.9, 1.1, 1.0, 1.2])
    change = bootstrap_relative_change(a, b, rng=np.random.default_rng(1), n_boot=2000, level=0.95)
    assert change.mean is None


def test_a_slow_outlier_in_a_few_baseline_samples_keeps_the_interval_above_minus_100() -> None:
    # Two slow samples among five: stretching the resampled baseline means linearly (the
    # small-sample expansion) carried some below zero, and the interval to -484 %.
    a = np.array([0.434, 1.080, 19.83, 13.58, 1.3875])
    b = np.array([0.049, 0.031, 0.061, 0.086, 0.033])
    for seed in range(5):
        r = bootstrap_relative_change(a, b, rng=np.random.default_rng(seed))
        assert r.mean is not None and r.median is not None
        assert -100 < r.mean.low <= r.mean.estimate <= r.mean.high < 0, r.mean
        assert -100 < r.median.low <= r.median.estimate <= r.median.high < 0, r.median
