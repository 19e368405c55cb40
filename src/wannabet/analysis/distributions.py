"""Distribution functions of the analysis: the normal, Student's t, F and chi-square.

They are computed in the native extension (``native/src/distributions.rs``: the statrs crate,
libm's ``erfc``, quantiles refined by Newton steps) rather than taken from SciPy, because
importing ``scipy.stats`` costs about a second and ``scipy.special`` a quarter of one: SciPy
1.16+ rewrites hundreds of docstrings while it loads. That was most of what ``wannabet compare``
took (issue #16; docs/architecture.md "What compare imports"). The suite checks every function
against SciPy over seeded grids (tests/analysis/test_distributions.py).

Each function takes floats or NumPy arrays (broadcast together) and returns a float for scalar
arguments, an array otherwise, like the ``scipy.stats`` method it stands for. ``df = inf`` is
the normal (t) or chi-square (F) limit; invalid parameters give NaN.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from wannabet._engine import distribution as _native

__all__ = ["chi2_sf", "f_sf", "norm_cdf", "norm_ppf", "norm_sf", "t_ppf", "t_sf"]


def _call(name: str, x: Any, a: Any = 0.0, b: Any = 0.0) -> Any:
    xs, as_, bs = np.broadcast_arrays(
        np.asarray(x, dtype=np.float64), np.asarray(a, dtype=np.float64), np.asarray(b, np.float64)
    )
    flat = [np.ascontiguousarray(v, dtype=np.float64).ravel() for v in (xs, as_, bs)]
    out = np.asarray(_native(name, *flat)).reshape(xs.shape)
    return float(out) if out.ndim == 0 else out


def norm_sf(x: Any) -> Any:
    """``scipy.stats.norm.sf(x)``, accurate far into the upper tail."""
    return _call("norm_sf", x)


def norm_cdf(x: Any) -> Any:
    """``scipy.stats.norm.cdf(x)``."""
    return _call("norm_sf", np.negative(x))


def norm_ppf(q: Any) -> Any:
    """``scipy.stats.norm.ppf(q)``."""
    return _call("norm_ppf", q)


def t_sf(x: Any, df: Any) -> Any:
    """``scipy.stats.t.sf(x, df)``: P(T > x) with ``df`` degrees of freedom."""
    return _call("t_sf", x, df)


def t_ppf(q: Any, df: Any) -> Any:
    """``scipy.stats.t.ppf(q, df)``."""
    return _call("t_ppf", q, df)


def f_sf(x: Any, dfn: Any, dfd: Any) -> Any:
    """``scipy.stats.f.sf(x, dfn, dfd)``; ``dfd = inf`` is the limit ``chi2(dfn) / dfn``
    (where SciPy gives NaN; Welch's ANOVA reaches it when every group has infinite df)."""
    return _call("f_sf", x, dfn, dfd)


def chi2_sf(x: Any, df: Any) -> Any:
    """``scipy.stats.chi2.sf(x, df)``."""
    return _call("chi2_sf", x, df)
