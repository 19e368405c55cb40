"""The published figures of the "Wanna bet?" central-limit article reproduce exactly."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from wannabet.analysis import Observations, clt_summary, compare, sd_range, share_within

FIVE_GROUP_MEANS = np.array([38.2, 34.7, 41.2, 43.9, 42.1])

# The thirty child-sample means listed in the article (exponential parent, mean 5).
THIRTY_CHILD_MEANS = np.array(
    [
        6.35511,
        4.91329,
        3.7737,
        5.27418,
        6.52658,
        7.68304,
        4.4319,
        6.09553,
        4.64664,
        6.10894,
        4.422,
        5.21073,
        4.33155,
        6.78821,
        5.38437,
        5.38456,
        5.80179,
        4.60562,
        4.87516,
        6.77315,
        5.38634,
        5.55096,
        5.43312,
        4.48588,
        4.75642,
        5.06397,
        4.43674,
        4.72971,
        5.00164,
        6.06055,
    ]
)

# The ten group averages revealed after the bet was placed.
TEN_REVEALED = np.array([42.4, 35.9, 49.7, 46.1, 45.3, 40.0, 43.0, 39.3, 35.5, 42.1])


def test_five_group_means_mean_and_sd():
    c = clt_summary(FIVE_GROUP_MEANS)
    assert round(c.mean, 2) == 40.02
    assert round(c.sd, 3) == 3.619


def test_five_group_means_sd_ranges():
    r90 = sd_range(FIVE_GROUP_MEANS, 1.645)
    r95 = sd_range(FIVE_GROUP_MEANS, 2.0)
    assert (round(r90.low, 2), round(r90.high, 2)) == (34.07, 45.97)
    assert (round(r95.low, 2), round(r95.high, 2)) == (32.78, 47.26)
    # ... which the article rounds to the bet "between 32.8 and 47.2" (47.26 truncated)
    c = clt_summary(FIVE_GROUP_MEANS)
    assert (round(c.sd_range_2.low, 1), round(c.sd_range_2.high, 2)) == (32.8, 47.26)


def test_the_bet_is_won_nine_of_ten_times():
    r95 = sd_range(FIVE_GROUP_MEANS, 2.0)
    assert np.count_nonzero((TEN_REVEALED >= 32.8) & (TEN_REVEALED <= 47.2)) == 9
    assert np.count_nonzero((r95.low <= TEN_REVEALED) & (r95.high >= TEN_REVEALED)) == 9


def test_prediction_interval_is_the_honest_version_of_the_hedge():
    # With n = 5 the +/-2 sd hedge holds the next mean only ~86% of the time under normality;
    # the t prediction interval is wider and holds it 90% of the time.
    c = clt_summary(FIVE_GROUP_MEANS)
    assert c.prediction90.low < c.sd_range_2.low and c.prediction90.high > c.sd_range_2.high
    coverage_2sd = 2 * stats.t.cdf(2 / np.sqrt(1 + 1 / 5), 4) - 1
    assert coverage_2sd == pytest.approx(0.858, abs=0.002)
    assert c.bet == "9 of the next 10 sample means should fall between 31.6 and 48.5"


def test_thirty_child_means():
    c = clt_summary(THIRTY_CHILD_MEANS)
    assert round(c.mean, 3) == 5.343
    assert round(c.sd, 3) == 0.892
    w = share_within(THIRTY_CHILD_MEANS, 2.0)
    assert (w.count, w.n) == (29, 30)
    assert round(w.share, 2) == 0.97
    assert (round(w.low, 2), round(w.high, 2)) == (3.56, 7.13)
    assert c.within_2sd == w
    assert c.mean_ci95.method == "z"  # n = 30


def test_thirty_child_means_pass_normality_as_in_the_article():
    c = compare(
        [Observations("child", THIRTY_CHILD_MEANS, np.arange(30))], metric="latency", unit=""
    )
    s = c.conditions[0]
    assert s.normality.test == "shapiro-wilk"
    assert s.normality.p > 0.05
    assert s.n == s.n_samples == 30 and s.n_transactions is None


@pytest.mark.parametrize(("scale", "unit"), [(1e-6, "ns"), (1e-3, "µs"), (1.0, "ms"), (1e3, "s")])
def test_the_bet_is_said_in_the_unit_the_tables_choose(scale: float, unit: str) -> None:
    from wannabet.render.format import time_unit

    means_ms = np.asarray(THIRTY_CHILD_MEANS, dtype=float) / 2 * scale  # about 2.5 units each
    c = clt_summary(means_ms, unit="ms")
    assert time_unit([float(np.mean(means_ms))]).name == unit
    assert c.bet.endswith(f" {unit}")
    lo, hi = (float(v) for v in c.bet.split("between ")[1].removesuffix(f" {unit}").split(" and "))
    per = {"ns": 1e6, "µs": 1e3, "ms": 1.0, "s": 1e-3}[unit]
    assert lo == pytest.approx(c.prediction90.low * per, rel=1e-2)
    assert hi == pytest.approx(c.prediction90.high * per, rel=1e-2)
