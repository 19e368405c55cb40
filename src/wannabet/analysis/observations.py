"""Input type of the analysis layer and the error it raises.

Every analysis function takes plain arrays; :class:`Observations` bundles the arrays that
describe one condition of an experiment, validated once so that the statistics never have to
second-guess their input.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The one exception tree of the package (stdlib only); re-exported here for the analysis API.
from wannabet.errors import AnalysisError

from .histogram import Histogram

__all__ = ["AnalysisError", "Moments", "Observations"]


def _as_1d(name: str, condition: str, arr: object, dtype: type) -> np.ndarray:
    a = np.asarray(arr)
    if a.ndim != 1:
        raise AnalysisError(
            f"Observations({condition!r}).{name} has shape {a.shape}; pass a 1-D array "
            "with one entry per value"
        )
    if dtype is np.int64:
        if (
            a.size
            and not np.issubdtype(a.dtype, np.integer)
            and (not np.all(np.isfinite(a)) or not np.all(a == np.round(a)))
        ):
            raise AnalysisError(
                f"Observations({condition!r}).{name} must hold integers; got dtype "
                f"{a.dtype} with non-integral entries"
            )
        return np.ascontiguousarray(a, dtype=np.int64)
    return np.ascontiguousarray(a, dtype=np.float64)


@dataclass(frozen=True, slots=True, eq=False)
class Moments:
    """Exact figures of *every* transaction of a condition whose :class:`Observations` hold only
    some of them (a bounded subset read from a large run, or values drawn from histograms).

    Parameters
    ----------
    sample : numpy.ndarray
        int64, ascending: the sample index of each entry (the indices ``Observations.sample``
        uses), every sample with at least one transaction.
    count, total, total_sq : numpy.ndarray
        float64 per sample: transactions, sum and sum of squares of their values.
    minimum, maximum : float
        Extremes over all transactions.
    histogram : Histogram, optional
        Latency histogram (ns) of all transactions, for quantiles within half a bin.
    consecutive : bool
        True when the values of each sample are consecutive transactions in the order they ran
        (so lag-1 autocorrelation means something); False for a random subset or drawn values.
    """

    sample: np.ndarray
    count: np.ndarray
    total: np.ndarray
    total_sq: np.ndarray
    minimum: float
    maximum: float
    histogram: Histogram | None = None
    consecutive: bool = False

    def __post_init__(self) -> None:
        sample = np.ascontiguousarray(self.sample, dtype=np.int64)
        k = sample.size
        if k == 0 or np.any(np.diff(sample) <= 0):
            raise AnalysisError(
                "Moments.sample must list each sample once, ascending, and at least one"
            )
        object.__setattr__(self, "sample", sample)
        for name in ("count", "total", "total_sq"):
            arr = np.ascontiguousarray(getattr(self, name), dtype=np.float64)
            if arr.shape != (k,):
                raise AnalysisError(f"Moments.{name} has {arr.size} entries for {k} samples")
            object.__setattr__(self, name, arr)
        if not np.all(self.count > 0):
            raise AnalysisError("Moments.count must be positive: leave out empty samples")

    @property
    def n(self) -> int:
        """Number of transactions."""
        return int(self.count.sum())

    @property
    def mean(self) -> float:
        """Mean of all transactions."""
        return float(self.total.sum()) / float(self.count.sum())

    @property
    def variance(self) -> float | None:
        """Sample variance of all transactions (``n - 1``), from the sums; None below 2.

        Clamped at 0: the difference of sums can round to a tiny negative for equal values.
        """
        n = float(self.count.sum())
        if n < 2:
            return None
        return max((float(self.total_sq.sum()) - float(self.total.sum()) ** 2 / n) / (n - 1), 0.0)


@dataclass(frozen=True, slots=True, eq=False)
class Observations:
    """The measured values of one condition.

    Parameters
    ----------
    condition : str
        Label of the condition, e.g. ``"synchronous=OFF"``.
    values : numpy.ndarray
        float64; latency in ms per transaction, or one value per sample (e.g. TPS, or an
        imported per-sample mean). Values inside a sample are in the order they occurred.
    sample : numpy.ndarray
        int64, same length: sample index of each value. Sample ``k`` ran before ``k + 1``.
    session : numpy.ndarray or None
        int64 per value (the connection that ran it), or None.
    time_s : numpy.ndarray or None
        float64 seconds since the start of the run, per value, or None.
    moments : Moments or None
        When ``values`` are a subset of the condition's transactions: exact per-sample figures
        of all of them. The analysis then takes every mean, count, extreme and (with a
        histogram) quantile from ``moments`` and only the shape of the distribution (modality,
        session and period medians, outlier share, Cliff's delta) from ``values``.

    Notes
    -----
    Arrays are converted to contiguous float64/int64 copies-or-views on construction. Equality
    is identity (``eq=False``) because element-wise array comparison has no single truth value.
    """

    condition: str
    values: np.ndarray
    sample: np.ndarray
    session: np.ndarray | None = None
    time_s: np.ndarray | None = None
    moments: Moments | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.condition, str) or not self.condition:
            raise AnalysisError(
                f"Observations.condition must be a non-empty string; got {self.condition!r}"
            )
        c = self.condition
        values = _as_1d("values", c, self.values, np.float64)
        sample = _as_1d("sample", c, self.sample, np.int64)
        if values.size == 0:
            raise AnalysisError(
                f"Observations({c!r}) has no values; run at least one sample of the condition"
            )
        if sample.shape != values.shape:
            raise AnalysisError(
                f"Observations({c!r}): sample has {sample.size} entries but values has "
                f"{values.size}; give every value its sample index"
            )
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise AnalysisError(
                f"Observations({c!r}).values[{i}] is {float(values[i])}; drop failed transactions "
                "(NaN/inf) before the analysis"
            )
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "sample", sample)
        if self.session is not None:
            session = _as_1d("session", c, self.session, np.int64)
            if session.shape != values.shape:
                raise AnalysisError(
                    f"Observations({c!r}): session has {session.size} entries but values has "
                    f"{values.size}; pass one session id per value or session=None"
                )
            object.__setattr__(self, "session", session)
        if self.time_s is not None:
            time_s = _as_1d("time_s", c, self.time_s, np.float64)
            if time_s.shape != values.shape:
                raise AnalysisError(
                    f"Observations({c!r}): time_s has {time_s.size} entries but values has "
                    f"{values.size}; pass one timestamp per value or time_s=None"
                )
            if not np.all(np.isfinite(time_s)):
                raise AnalysisError(
                    f"Observations({c!r}).time_s contains NaN/inf; pass seconds since the "
                    "run started or time_s=None"
                )
            object.__setattr__(self, "time_s", time_s)
        if self.moments is not None:
            stray = np.setdiff1d(sample, self.moments.sample)
            if stray.size:
                raise AnalysisError(
                    f"Observations({c!r}): sample {int(stray[0])} has values but no moments;"
                    " give Moments for every sample the values come from"
                )

    @property
    def n_values(self) -> int:
        """Number of values (transactions, or samples for per-sample data)."""
        return int(self.values.size)
