"""Log-linear latency histograms: self-describing bins, exact merges, bounded-error quantiles.

A :class:`Histogram` is a set of bins ``(lo_ns, hi_ns, count)``: ``count`` latencies lie in
``[lo_ns, hi_ns]`` (nanoseconds, both inclusive). The bins say what they cover, so histograms
from the engine, from raw imported transactions and, later, from other tools' own bins
(sysbench, fio) share one shape, and the store needs no knowledge of a layout.

The engine and :func:`from_values` use the bucket layout of Gil Tene's HdrHistogram with 2
significant decimal digits and a lowest discernible value of 1 ns (256 sub-buckets, unit
magnitude 0): a value below 256 ns has a bin of its own; above, each power of two ``[2^k,
2^(k+1))`` is split into 128 bins of width ``2^(k-7)``. A bin is therefore at most ``lo / 128``
wide (:data:`MAX_RELATIVE_WIDTH`), and its midpoint is within ``1/256`` (0.39 %) of any value
in it. Histograms with this layout merge exactly: the merge sums the counts of identical bins,
and equals the histogram of the pooled values.

Everything here is pure NumPy and does no I/O.

References
----------
.. [1] G. Tene, "HdrHistogram: A High Dynamic Range Histogram",
   http://hdrhistogram.org/ (bucket layout: ``getBucketIndex``, ``getSubBucketIndex``,
   ``lowestEquivalentValue``, ``highestEquivalentValue``).
.. [2] R. J. Hyndman and Y. Fan, "Sample Quantiles in Statistical Packages", The American
   Statistician 50(4), 361-365, 1996 (definition 1, the inverse of the empirical CDF).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "MAX_RELATIVE_WIDTH",
    "MAX_VALUE_NS",
    "SIGNIFICANT_DIGITS",
    "SUB_BUCKET_COUNT",
    "Histogram",
    "count",
    "draw",
    "from_values",
    "mean_bounds",
    "median_abs_deviation",
    "merge",
    "midpoints",
    "quantile",
    "quantiles",
]

#: Significant decimal digits of the layout (HdrHistogram's ``numberOfSignificantValueDigits``).
SIGNIFICANT_DIGITS = 2

#: Sub-buckets per bucket: the smallest power of two at or above ``2 * 10**SIGNIFICANT_DIGITS``.
SUB_BUCKET_COUNT = 256

#: Largest ``(hi - lo + 1) / lo`` of a bin of the layout (values below 256 ns are exact).
MAX_RELATIVE_WIDTH = 1 / 128

#: Largest latency :func:`from_values` accepts (about 292 years): HdrHistogram's values are
#: signed 64-bit, and every bin edge up to it fits an int64 column.
MAX_VALUE_NS = 2**63 - 1

_HALF_MAGNITUDE = 7  # log2(SUB_BUCKET_COUNT / 2)
_COUNT_MAGNITUDE = 8  # log2(SUB_BUCKET_COUNT)


@dataclass(frozen=True, slots=True, eq=False)
class Histogram:
    """Counts of latencies in disjoint bins ``[lo_ns[i], hi_ns[i]]`` (nanoseconds, inclusive).

    Parameters
    ----------
    lo_ns, hi_ns : array_like of int
        Lowest and highest value of each bin, non-negative integers, ``lo_ns <= hi_ns``. Bins
        are sorted by ``lo_ns`` and do not overlap (``hi_ns[i] < lo_ns[i + 1]``).
    count : array_like of int
        Number of values in each bin (non-negative; bins may be empty).

    The arrays are stored as read-only ``uint64`` copies. Any layout is accepted; the one
    :func:`from_values` and the engine produce is HdrHistogram's with 2 significant digits.
    Two histograms are equal when their bins and counts are identical.

    Raises
    ------
    ValueError
        If an array is not one-dimensional integers, a value is negative, the lengths differ,
        a bin ends before it starts, or the bins are unsorted or overlap.
    """

    lo_ns: NDArray[np.uint64]
    hi_ns: NDArray[np.uint64]
    count: NDArray[np.uint64]

    def __post_init__(self) -> None:
        lo = _u64("lo_ns", self.lo_ns)
        hi = _u64("hi_ns", self.hi_ns)
        n = _u64("count", self.count)
        if not lo.size == hi.size == n.size:
            raise ValueError(
                f"lo_ns, hi_ns and count must have one entry per bin, got lengths {lo.size}, "
                f"{hi.size} and {n.size}"
            )
        bad = np.flatnonzero(lo > hi)
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"bin {i} ends before it starts: lo_ns {lo[i]} > hi_ns {hi[i]}")
        bad = np.flatnonzero(hi[:-1] >= lo[1:])
        if bad.size:
            i = int(bad[0])
            raise ValueError(
                f"bins must be sorted by lo_ns and must not overlap: bin {i} [{lo[i]}, {hi[i]}] "
                f"is not below bin {i + 1} [{lo[i + 1]}, {hi[i + 1]}]"
            )
        for name, arr in (("lo_ns", lo), ("hi_ns", hi), ("count", n)):
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Histogram):
            return NotImplemented
        return (
            np.array_equal(self.lo_ns, other.lo_ns)
            and np.array_equal(self.hi_ns, other.hi_ns)
            and np.array_equal(self.count, other.count)
        )

    __hash__ = None  # type: ignore[assignment]  # equality compares array contents

    def __len__(self) -> int:
        """Number of bins (not of values: see :func:`count`)."""
        return int(self.lo_ns.size)


def _u64(name: str, values: Any) -> NDArray[np.uint64]:
    """``values`` as a fresh 1-D uint64 array, or a ValueError naming ``name``."""
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint64)
    if arr.dtype.kind not in "iu":
        raise ValueError(
            f"{name} must hold integers (nanoseconds or counts), got dtype {arr.dtype}; "
            "round float values first"
        )
    if arr.dtype.kind == "i":
        neg = np.flatnonzero(arr < 0)
        if neg.size:
            i = int(neg[0])
            raise ValueError(f"{name} must not be negative, got {arr[i]} at index {i}")
    return arr.astype(np.uint64, copy=True)


def _bit_length(x: NDArray[np.uint64]) -> NDArray[np.int64]:
    """Number of bits of each (positive) value: ``floor(log2(x)) + 1``, exact for all uint64."""
    # The biased exponent of the float64 is floor(log2(x)) + 1023 when the conversion is exact.
    bits = (x.astype(np.float64).view(np.int64) >> 52) - 1022
    if x.size and int(x.max()) >= 2**53:
        # Above 2**53 the conversion rounds to nearest and can reach the next power of two.
        bits -= (x >> (bits - 1).astype(np.uint64)) == 0
    return bits


def from_values(values_ns: ArrayLike) -> Histogram:
    """Histogram of latencies in HdrHistogram's layout with 2 significant digits.

    Gives bin for bin the histogram the engine records (``wannabet._engine``), so raw
    per-transaction data, imported or stored, produces the same histograms without the engine.

    Parameters
    ----------
    values_ns : array_like of int
        Latencies in nanoseconds, integers from 0 to :data:`MAX_VALUE_NS`, in any order.

    Returns
    -------
    Histogram
        The non-empty bins.

    Raises
    ------
    ValueError
        If ``values_ns`` is not one-dimensional, not integers, or holds a value outside
        ``[0, MAX_VALUE_NS]``.

    Notes
    -----
    HdrHistogram with sub-bucket count 256 and unit magnitude 0 puts ``v`` in bucket
    ``b = max(bit_length(v) - 8, 0)`` at sub-bucket ``s = v >> b`` (128 <= s < 256 when
    ``b > 0``); the bin is ``[s << b, ((s + 1) << b) - 1]``. Its index in the counts array is
    ``b * 128 + s``, which orders bins by value. See [1]_ in the module references.
    """
    v = _u64("values_ns", values_ns)
    too_large = np.flatnonzero(v > np.uint64(MAX_VALUE_NS))
    if too_large.size:
        i = int(too_large[0])
        raise ValueError(
            f"values_ns must be at most {MAX_VALUE_NS} (2**63 - 1), got {v[i]} at index {i}"
        )
    if v.size == 0:
        return Histogram(v, v, v)
    bucket = _bit_length(v | np.uint64(SUB_BUCKET_COUNT - 1)) - _COUNT_MAGNITUDE
    sub = v >> bucket.astype(np.uint64)
    index = (bucket << _HALF_MAGNITUDE) + sub.astype(np.int64)
    counts = np.bincount(index)
    nonzero = np.flatnonzero(counts)
    b = np.maximum((nonzero >> _HALF_MAGNITUDE) - 1, 0)
    s = nonzero - (b << _HALF_MAGNITUDE)
    shift = b.astype(np.uint64)
    lo = s.astype(np.uint64) << shift
    hi = lo + ((np.uint64(1) << shift) - np.uint64(1))
    return Histogram(lo, hi, counts[nonzero].astype(np.uint64))


def merge(*hists: Histogram) -> Histogram:
    """Exact merge: the counts of identical bins are summed.

    For histograms of the same layout (all of the engine's and :func:`from_values`'s) the
    result equals the histogram of all their values pooled. Merging no histogram gives an
    empty one.

    Raises
    ------
    ValueError
        If two bins overlap without being identical: the layouts differ, and counts cannot be
        split between bins without inventing where the values lay.
    """
    if not hists:
        empty = np.zeros(0, dtype=np.uint64)
        return Histogram(empty, empty, empty)
    if len(hists) == 1:
        return hists[0]
    lo = np.concatenate([h.lo_ns for h in hists])
    hi = np.concatenate([h.hi_ns for h in hists])
    n = np.concatenate([h.count for h in hists])
    order = np.lexsort((hi, lo))
    lo, hi, n = lo[order], hi[order], n[order]
    first = np.ones(lo.size, dtype=bool)
    first[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
    starts = np.flatnonzero(first)
    lo, hi = lo[starts], hi[starts]
    n = np.add.reduceat(n, starts) if starts.size else n
    clash = np.flatnonzero(hi[:-1] >= lo[1:])
    if clash.size:
        i = int(clash[0])
        raise ValueError(
            "histograms with different bin layouts cannot be merged exactly: bin "
            f"[{lo[i]}, {hi[i]}] overlaps bin [{lo[i + 1]}, {hi[i + 1]}]"
        )
    return Histogram(lo, hi, n.astype(np.uint64))


def count(h: Histogram) -> int:
    """Number of values in the histogram (the sum of its bin counts)."""
    return int(h.count.sum(dtype=np.uint64))


def midpoints(h: Histogram) -> NDArray[np.float64]:
    """Midpoint ``(lo + hi) / 2`` of every bin, in nanoseconds: the value a bin reports.

    With :attr:`Histogram.count` as weights, these are what a resampling method (a bootstrap
    over samples' histograms, for example) draws from.
    """
    lo = h.lo_ns.astype(np.float64)
    return lo + (h.hi_ns - h.lo_ns).astype(np.float64) / 2


def mean_bounds(h: Histogram) -> tuple[float, float]:
    """Bounds on the mean of the values: ``(Σ lo·c / n, Σ hi·c / n)``.

    Every value lies in its bin, so the exact mean lies between the two (up to floating-point
    rounding of the sums). With the HdrHistogram layout the bounds are less than 1/128 of the
    lower one apart.

    Raises
    ------
    ValueError
        If the histogram holds no value.
    """
    n = count(h)
    if n == 0:
        raise ValueError("the mean of an empty histogram is undefined: it holds no value")
    c = h.count.astype(np.float64)
    return (
        float(np.dot(h.lo_ns.astype(np.float64), c) / n),
        float(np.dot(h.hi_ns.astype(np.float64), c) / n),
    )


def quantiles(
    h: Histogram, qs: ArrayLike, *, extremes: tuple[float, float] | None = None
) -> NDArray[np.float64]:
    """Quantiles of the values, each reported as the midpoint of the bin it falls in.

    The rank rule is the inverse of the empirical CDF (Hyndman and Fan's definition 1 [2]_,
    NumPy's ``method="inverted_cdf"``): for ``n`` values the ``q`` quantile is the order
    statistic ``x_(k)`` with ``k = max(ceil(n·q), 1)``, computed with NumPy's arithmetic. The
    histogram finds the bin holding ``x_(k)`` exactly and reports its midpoint, so the result
    is within half a bin, at most 1/256 (0.39 %) relative, of
    ``np.quantile(values, q, method="inverted_cdf")``.

    Parameters
    ----------
    h : Histogram
        A histogram holding at least one value.
    qs : array_like of float
        Probabilities in ``[0, 1]``.
    extremes : (float, float), optional
        The smallest and largest value, when known (a sample's ``min_ns`` and ``max_ns``): no
        quantile is reported outside them. A bin's midpoint may lie past the largest value in
        it, and a p99 above the maximum printed beside it reads as a contradiction; the exact
        order statistic lies between the extremes, so clipping only brings the figure closer.

    Returns
    -------
    numpy.ndarray of float64
        One quantile (nanoseconds) per probability, in the shape of ``qs``.

    Raises
    ------
    ValueError
        If the histogram is empty or a probability is outside ``[0, 1]``.
    """
    q = np.asarray(qs, dtype=np.float64)
    bad = ~((q >= 0) & (q <= 1))
    if bad.any():
        raise ValueError(f"quantile probabilities must lie in [0, 1], got {q[bad].ravel()[0]}")
    n = count(h)
    if n == 0:
        raise ValueError("the quantiles of an empty histogram are undefined: it holds no value")
    # NumPy's inverted_cdf: 0-based index n*q - 1, rounded up, clipped at 0.
    index = np.clip(np.ceil(n * q - 1), 0, n - 1).astype(np.uint64)
    cumulative = np.cumsum(h.count, dtype=np.uint64)
    bins = np.searchsorted(cumulative, index + np.uint64(1), side="left")
    result: NDArray[np.float64] = midpoints(h)[bins]
    if extremes is not None:
        result = np.clip(result, extremes[0], extremes[1])
    return result


def quantile(h: Histogram, q: float) -> float:
    """The ``q`` quantile of the values (see :func:`quantiles` for the definition)."""
    return float(quantiles(h, q))


def draw(h: Histogram, size: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """``size`` values drawn from ``h`` (ns): a bin with probability proportional to its count,
    then a uniform value inside it. Stands in for raw transactions where none were stored; each
    value is within one bin width (at most 0.78 %) of a latency that was measured.
    """
    total = count(h)
    if total == 0 or size <= 0:
        return np.empty(0, dtype=np.float64)
    p = h.count.astype(np.float64) / float(total)
    which = rng.choice(p.size, size=size, p=p)
    lo = h.lo_ns.astype(np.float64)[which]
    width = h.hi_ns.astype(np.float64)[which] - lo + 1.0
    out: NDArray[np.float64] = np.minimum(lo + rng.random(size) * width, lo + width - 1.0)
    return out


def median_abs_deviation(h: Histogram, center_ns: float) -> float:
    """Median of ``|x - center_ns|`` over the histogram's values, each bin at its midpoint
    (inverse empirical CDF, as :func:`quantiles`); NaN for an empty histogram."""
    total = count(h)
    if total == 0:
        return float("nan")
    dev = np.abs(midpoints(h) - center_ns)
    order = np.argsort(dev, kind="stable")
    cum = np.cumsum(h.count[order].astype(np.float64))
    j = int(np.searchsorted(cum, total / 2.0, side="left"))
    return float(dev[order][min(j, dev.size - 1)])
