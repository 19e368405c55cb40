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
