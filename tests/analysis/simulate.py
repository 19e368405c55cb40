"""Simulated benchmark data with the structure that fools naive statistics.

Each condition is run as ``n_samples`` samples of ``per_sample`` transactions. Samples differ by
a random multiplicative offset (run-to-run variation: cache state, placement, noisy neighbours);
inside a sample the transactions follow a stationary AR(1) process (queues, checkpoints). The
marginal shape is normal, lognormal, or bimodal (a fast and a 2.5x slower path, switched by the
autocorrelated state).
"""

from __future__ import annotations

import numpy as np
from scipy.signal import lfilter

from wannabet.analysis import Observations

SHAPES = ("normal", "lognormal", "bimodal")


def ar1(rng: np.random.Generator, rows: int, cols: int, phi: float) -> np.ndarray:
    """Rows of a stationary AR(1) process with unit variance."""
    e = rng.standard_normal((rows, cols)) * np.sqrt(1 - phi**2)
    e[:, 0] = rng.standard_normal(rows)  # start in the stationary distribution
    return lfilter([1.0], [1.0, -phi], e, axis=1)


def simulate(
    rng: np.random.Generator,
    label: str,
    *,
    n_samples: int = 20,
    per_sample: int = 200,
    mean: float = 10.0,
    between_sd: float = 0.05,
    phi: float = 0.7,
    shape: str = "lognormal",
    shift: float = 1.0,
    ragged: bool = False,
) -> Observations:
    """One condition's latencies (ms); ``shift`` multiplies every value (1.1 = 10% slower).

    ``ragged=True`` gives every sample its own number of transactions (between half and 1.5
    times ``per_sample``), as time-boxed samples have.
    """
    z = ar1(rng, n_samples, per_sample * 3 // 2 if ragged else per_sample, phi)
    off = rng.normal(0.0, between_sd, (n_samples, 1))
    if shape == "normal":
        v = mean * (1 + off) * (1 + 0.2 * z)
    elif shape == "lognormal":
        v = mean * np.exp(off + 0.5 * z)
    elif shape == "bimodal":
        slow = z > 0.5
        noise = np.exp(0.1 * rng.standard_normal(z.shape))
        v = mean * np.exp(off) * np.where(slow, 2.5, 1.0) * noise
    else:
        raise ValueError(f"shape={shape!r}; use one of {SHAPES}")
    if ragged:
        counts = rng.integers(per_sample // 2, per_sample * 3 // 2 + 1, size=n_samples)
    else:
        counts = np.full(n_samples, per_sample)
    keep = np.arange(v.shape[1])[None, :] < counts[:, None]
    sample = np.repeat(np.arange(n_samples), counts)
    return Observations(label, (v * shift)[keep], sample)
