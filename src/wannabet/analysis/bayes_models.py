"""Posterior draws of the Bayesian models, from sufficient statistics, without MCMC.

Every function here is pure: arrays of per-sample sufficient statistics in, independent
posterior draws out. The cost does not depend on the number of transactions, only on the
number of samples (hierarchical, factorial) or on a fixed grid (gamma).

==================  ===========================  =============================================
model               level                        how the draws are made
==================  ===========================  =============================================
``hierarchical``    sample (log sample means)    p(tau | y) on a 1-D grid, mu | tau normal
``gamma``           transaction, iid             2-D grid, widened until the tails close
``lognormal``       transaction, iid             conjugate normal-inverse-chi^2 (flat prior)
factorial effects   sample (log sample means)    cell means with a common variance: exact
==================  ===========================  =============================================

References
----------
Gelman, A., Carlin, J. B., Stern, H. S., Dunson, D. B., Vehtari, A. & Rubin, D. B. (2013).
Bayesian Data Analysis, 3rd ed., CRC Press: section 3.2 (normal model with noninformative
prior), section 5.4 (hierarchical normal model, computation through p(tau | y)), section 14.2
(linear regression with a flat prior on the coefficients and p(sigma^2) ∝ 1/sigma^2).
Kruschke, J. K. (2015). Doing Bayesian Data Analysis, 2nd ed., Academic Press, chapter 12.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .observations import AnalysisError, Observations

__all__ = [
    "GammaPrior",
    "SampleStats",
    "cell_means_draws",
    "gamma_draws",
    "gamma_log_posterior",
    "hierarchical_draws",
    "lognormal_draws",
    "sample_level_values",
]


@dataclass(frozen=True, slots=True, eq=False)
class SampleStats:
    """Sufficient statistics of one condition, one entry per sample.

    Attributes
    ----------
    condition : str
        Label.
    n : numpy.ndarray
        Successful transactions per sample (int64). One value per sample (throughput,
        aggregated imports) is stored as ``n = 1``.
    sum, sum_sq, sum_log, sum_log_sq : numpy.ndarray
        Σy, Σy², Σlog y, Σ(log y)² per sample (float64). The log sums are NaN when some value
        is not positive.
    levels : dict
        Factor levels of the condition (``{"journal_mode": "WAL", ...}``); empty if unknown.
    """

    condition: str
    n: np.ndarray
    sum: np.ndarray
    sum_sq: np.ndarray
    sum_log: np.ndarray
    sum_log_sq: np.ndarray
    levels: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        arrays = {}
        for name in ("n", "sum", "sum_sq", "sum_log", "sum_log_sq"):
            a = np.ascontiguousarray(getattr(self, name), dtype=np.float64)
            if a.ndim != 1:
                raise AnalysisError(
                    f"SampleStats({self.condition!r}).{name} must be 1-D, one entry per sample"
                )
            arrays[name] = a
        k = arrays["n"].size
        if k == 0:
            raise AnalysisError(f"condition {self.condition!r} has no samples with data")
        if any(a.size != k for a in arrays.values()):
            raise AnalysisError(
                f"SampleStats({self.condition!r}): every statistic needs one entry per sample"
            )
        if np.any(arrays["n"] < 1):
            raise AnalysisError(
                f"SampleStats({self.condition!r}): a sample with no transactions; drop it first"
            )
        for name, a in arrays.items():
            object.__setattr__(self, name, a)
        object.__setattr__(self, "levels", dict(self.levels))

    @property
    def k(self) -> int:
        """Number of samples."""
        return int(self.n.size)

    @property
    def total(self) -> int:
        """Number of transactions."""
        return int(self.n.sum())

    @property
    def positive(self) -> bool:
        """True when every value was positive (the log sums are defined)."""
        return bool(np.all(np.isfinite(self.sum_log)) and np.all(np.isfinite(self.sum_log_sq)))

    @classmethod
    def from_observations(
        cls, obs: Observations, levels: dict[str, str] | None = None
    ) -> SampleStats:
        """Per-sample sums of an :class:`Observations` (samples in the order they ran)."""
        labels, codes = np.unique(obs.sample, return_inverse=True)
        y = obs.values
        k = labels.size
        n = np.bincount(codes, minlength=k).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            ly = np.log(y) if np.all(y > 0) else np.full_like(y, np.nan)
        return cls(
            obs.condition,
            n,
            np.bincount(codes, y, k),
            np.bincount(codes, y * y, k),
            np.bincount(codes, ly, k),
            np.bincount(codes, ly * ly, k),
            levels or {},
        )


def sample_level_values(s: SampleStats) -> tuple[np.ndarray, np.ndarray]:
    """Log sample means and their within-sample measurement variances.

    Returns
    -------
    (logm, v)
        ``l_s = log(mean_s)`` and ``v_s = var_s / (n_s * mean_s^2)``, the delta-method variance
        of ``log(mean_s)`` from the within-sample variance (0 for one value per sample).
        Transactions inside a sample are autocorrelated, so ``v_s`` understates the true
        measurement error; the between-sample variance ``tau^2`` of the hierarchical model
        absorbs the rest, which is why the model is fitted on sample means at all.
    """
    if np.any(s.sum <= 0):
        raise AnalysisError(
            f"condition {s.condition!r} has a sample whose mean is not positive; the Bayesian "
            "models work on the log scale and need positive latencies or throughputs"
        )
    mean = s.sum / s.n
    logm = np.log(mean)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(s.n > 1, (s.sum_sq - s.n * mean * mean) / np.maximum(s.n - 1, 1), 0.0)
    var = np.maximum(var, 0.0)
    v = var / (s.n * mean * mean)
    return logm, v


def _sample_cells(
    rng: np.random.Generator, grid: np.ndarray, logp: np.ndarray, n: int
) -> np.ndarray:
    """Draws from a 1-D density known on a grid: pick a cell by its trapezoid mass, then a
    point uniformly inside it (the density is treated as flat within each small cell)."""
    p = np.exp(logp - logp.max())
    mass = 0.5 * (p[1:] + p[:-1]) * np.diff(grid)
    mass /= mass.sum()
    cell = rng.choice(mass.size, size=n, p=mass)
    return np.asarray(grid[cell] + rng.random(n) * (grid[cell + 1] - grid[cell]))


def hierarchical_draws(
    logm: np.ndarray,
    v: np.ndarray,
    *,
    tau_max: float,
    n_draws: int,
    rng: np.random.Generator,
    grid_points: int = 2000,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact draws of (mu, tau) in the normal hierarchical model with known variances.

    Model: ``l_s ~ Normal(mu, tau^2 + v_s)``, flat prior on ``mu``, ``tau ~ Uniform(0,
    tau_max)``.

    Parameters
    ----------
    logm, v : numpy.ndarray
        Observed values and their known measurement variances.
    tau_max : float
        Upper bound of the uniform prior on tau (the bound keeps the posterior proper with
        few samples).
    n_draws : int
    rng : numpy.random.Generator
    grid_points : int
        Points of the geometric grid of tau (relative spacing about 0.81% with 2000 points).

    Returns
    -------
    (mu, tau) : numpy.ndarray, numpy.ndarray

    References
    ----------
    Gelman et al. (2013), BDA3 section 5.4, equations (5.20) and (5.21).
    """
    if logm.size < 2:
        raise AnalysisError("the hierarchical model needs at least 2 samples per condition")
    tau = np.concatenate(([0.0], tau_max * np.geomspace(1e-7, 1.0, grid_points)))
    var = tau[:, None] ** 2 + v[None, :]
    if np.any(var[0] <= 0):
        # All measurement variances zero (one value per sample): tau = 0 is impossible.
        tau, var = tau[1:], var[1:]
    w = 1.0 / var
    v_mu = 1.0 / w.sum(axis=1)
    mu_hat = (w * logm[None, :]).sum(axis=1) * v_mu
    logp = 0.5 * np.log(v_mu) - 0.5 * np.log(var).sum(axis=1)
    logp -= 0.5 * (w * (logm[None, :] - mu_hat[:, None]) ** 2).sum(axis=1)
    t = _sample_cells(rng, tau, logp, n_draws)
    vt = t[:, None] ** 2 + v[None, :]
    wt = 1.0 / vt
    vm = 1.0 / wt.sum(axis=1)
    mh = (wt * logm[None, :]).sum(axis=1) * vm
    mu = mh + np.sqrt(vm) * rng.standard_normal(n_draws)
    return mu, t


def lognormal_draws(
    s: SampleStats, *, n_draws: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact draws of the log-normal model on all transactions (iid).

    ``log y ~ Normal(m, sigma^2)`` with the noninformative prior ``p(m, sigma^2) ∝ 1/sigma^2``
    (the limit of the conjugate normal-inverse-gamma family): ``sigma^2 | y`` is scaled
    inverse-chi^2 with ``n - 1`` degrees of freedom and scale ``s^2``; ``m | sigma^2, y`` is
    ``Normal(ybar, sigma^2 / n)``. The mean of y is ``exp(m + sigma^2 / 2)``.

    Returns
    -------
    (mean, m, sigma2)

    References
    ----------
    Gelman et al. (2013), BDA3 section 3.2.
    """
    if not s.positive:
        raise AnalysisError(
            f"condition {s.condition!r} has latencies <= 0; the log-normal model needs "
            "positive values (use --bayes-model hierarchical)"
        )
    n = float(s.n.sum())
    if n < 3:
        raise AnalysisError(f"condition {s.condition!r} has fewer than 3 transactions")
    ybar = float(s.sum_log.sum()) / n
    ss = max(float(s.sum_log_sq.sum()) - n * ybar * ybar, 0.0)
    s2 = ss / (n - 1)
    sigma2 = (n - 1) * s2 / rng.chisquare(n - 1, n_draws)
    m = ybar + np.sqrt(sigma2 / n) * rng.standard_normal(n_draws)
    return np.exp(m + sigma2 / 2), m, sigma2


@dataclass(frozen=True, slots=True)
class GammaPrior:
    """Priors of the seed's gamma model for one condition.

    ``mean ~ Gamma(shape, rate)`` with ``shape = 1 / cv^2`` and ``rate = shape / prior_mean``
    (prior mean ``prior_mean``, prior sd ``cv * prior_mean``); ``sd ~ Uniform(0, sd_max)``.
    """

    prior_mean: float
    cv: float
    sd_max: float

    def __post_init__(self) -> None:
        for name in ("prior_mean", "cv", "sd_max"):
            x = getattr(self, name)
            if not (math.isfinite(x) and x > 0):
                raise AnalysisError(f"gamma prior: {name}={x!r} must be a positive number")

    @property
    def shape(self) -> float:
        return 1.0 / self.cv**2

    @property
    def rate(self) -> float:
        return self.shape / self.prior_mean


def gamma_log_posterior(
    log_m: np.ndarray,
    log_s: np.ndarray,
    *,
    n: float,
    sum_y: float,
    sum_log_y: float,
    prior: GammaPrior,
) -> np.ndarray:
    """Log posterior density of (log mean, log sd) in the gamma model, up to a constant.

    Likelihood ``y ~ Gamma(a, b)`` with ``a = m^2 / s^2``, ``b = m / s^2``, through the
    sufficient statistics n, Σy, Σlog y. Priors as in :class:`GammaPrior`; the log-scale
    parametrization adds the Jacobian ``log m + log s``.
    """
    # Imported here, with the gamma model that needs it: scipy.special costs every `compare`
    # a quarter of a second of start-up (docs/architecture.md "What compare imports").
    from scipy import special

    m = np.exp(log_m)
    sd = np.exp(log_s)
    a = (m / sd) ** 2
    b = m / sd**2
    ll = n * (a * np.log(b) - special.gammaln(a)) + (a - 1) * sum_log_y - b * sum_y
    lp = (prior.shape - 1) * log_m - prior.rate * m
    out = ll + lp + log_m + log_s
    return np.where(sd <= prior.sd_max, out, -np.inf)


def gamma_draws(
    s: SampleStats,
    prior: GammaPrior,
    *,
    n_draws: int,
    rng: np.random.Generator,
    grid_points: int = 240,
    width: float = 9.0,
) -> np.ndarray:
    """Draws of the mean in the seed's gamma model (transactions iid), by numerical
    integration on a 2-D grid.

    The grid lies in the eigen-directions of the Laplace approximation of the posterior of
    (log mean, log sd) and starts at ``± width`` of its standard deviations. With few
    transactions the real posterior is curved and heavy-tailed, so the Laplace scale says
    little about where its mass ends: the density is checked on the edges of the box, and the
    box is widened (up to ``EDGE_WIDENINGS`` times, by ``EDGE_GROWTH`` each) until the edges
    are below ``EDGE_TOL`` of the peak. A box that never closes raises an error rather than
    truncating the tails. With many transactions the posterior is close to normal and the
    first box already closes; the cells stay far smaller than the posterior sd.

    References
    ----------
    Kruschke (2015), section 12 and the model in the reference article (JAGS); Gelman et al.
    (2013), BDA3 section 13.3 (Laplace approximation) and section 10.3 (grid draws).
    """
    if not s.positive:
        raise AnalysisError(
            f"condition {s.condition!r} has latencies <= 0; the gamma model needs positive "
            "values (use --bayes-model hierarchical)"
        )
    n = float(s.n.sum())
    if n < 3:
        raise AnalysisError(f"condition {s.condition!r} has fewer than 3 transactions")
    sy, sly = float(s.sum.sum()), float(s.sum_log.sum())
    mean = sy / n
    sd0 = math.sqrt(max((float(s.sum_sq.sum()) - n * mean * mean) / (n - 1), mean * mean * 1e-8))
    sd0 = min(sd0, 0.5 * prior.sd_max)

    def logpost(x: np.ndarray) -> np.ndarray:
        return gamma_log_posterior(x[0], x[1], n=n, sum_y=sy, sum_log_y=sly, prior=prior)

    def neg(x: np.ndarray) -> float:
        return -float(logpost(np.asarray(x, dtype=np.float64)))

    mode, hess = _gamma_mode(neg, np.array([math.log(mean), math.log(sd0)]), s.condition)
    vals, vecs = np.linalg.eigh(hess)
    if not np.all(vals > 0):
        raise AnalysisError(
            f"the gamma model's posterior of {s.condition!r} has no clear mode; check the "
            "prior (--prior-sd-max) or use --bayes-model hierarchical"
        )
    scale = vecs / np.sqrt(vals)[None, :]
    for _ in range(EDGE_WIDENINGS + 1):
        u = np.linspace(-width, width, grid_points + 1)
        mid = 0.5 * (u[1:] + u[:-1])
        du = u[1] - u[0]
        g1, g2 = np.meshgrid(mid, mid, indexing="ij")
        pts = mode[:, None] + scale @ np.vstack([g1.ravel(), g2.ravel()])
        logp = logpost(pts).reshape(grid_points, grid_points)
        peak = float(logp.max())
        # Beyond sd_max the density is exactly 0, so that part of an edge is closed anyway.
        edge = max(
            float(logp[0].max()), float(logp[-1].max()), float(logp[:, 0].max()),
            float(logp[:, -1].max()),
        )  # fmt: skip
        if edge - peak < math.log(EDGE_TOL):
            break
        width *= EDGE_GROWTH
    else:
        raise AnalysisError(
            f"the gamma model's posterior of {s.condition!r} has tails too heavy to integrate "
            f"on a grid (only {int(n)} transactions); run more transactions or use "
            "--bayes-model hierarchical"
        )
    p = np.exp(logp.ravel() - peak)
    p /= p.sum()
    cell = rng.choice(p.size, size=n_draws, p=p)
    jitter = (rng.random((2, n_draws)) - 0.5) * du
    z = np.vstack([g1.ravel()[cell], g2.ravel()[cell]]) + jitter
    x = mode[:, None] + scale @ z
    return np.asarray(np.exp(x[0]))


#: Gamma grid: the density on the box edges must be below this fraction of the peak.
EDGE_TOL = 1e-12
#: Gamma grid: how often, and by how much, the box may grow before giving up.
EDGE_WIDENINGS = 6
EDGE_GROWTH = 1.6
#: Gamma mode: largest acceptable gradient norm of the negative log posterior at the mode
#: (in units of log mean and log sd, where the curvature is at least of order 1).
MODE_GRADIENT_TOL = 1e-3


def _gamma_mode(
    neg: Callable[[np.ndarray], float], start: np.ndarray, condition: str
) -> tuple[np.ndarray, np.ndarray]:
    """Mode and Hessian of the negative log posterior.

    BFGS's own success flag is not trusted: on a million transactions it reports "precision
    loss" because the objective is of order 1e6 while the mode is already exact to its last
    digits. The gradient at the mode, by central differences, is checked instead.
    """
    # Imported here: scipy.optimize costs about half a second of start-up, and only the gamma
    # model needs it (docs/architecture.md "What compare imports").
    from scipy import optimize

    # The line search may step where the posterior is 0 (past the uniform prior's bound): the
    # objective is inf there, and SciPy's finite differences warn on inf - inf. The search
    # backs off by itself and the mode is checked below, so the warning says nothing to a user.
    with np.errstate(invalid="ignore", over="ignore"):
        res = optimize.minimize(neg, start, method="BFGS")
    mode = np.asarray(res.x, dtype=np.float64)
    # Hessian by central differences (BFGS's inverse-Hessian estimate is too rough for sizing).
    h = 1e-4
    eye = np.eye(2) * h
    hess = np.empty((2, 2))
    grad = np.empty(2)
    for i in range(2):
        grad[i] = (neg(mode + eye[i]) - neg(mode - eye[i])) / (2 * h)
        for j in range(2):
            ei, ej = eye[i], eye[j]
            hess[i, j] = (
                neg(mode + ei + ej)
                - neg(mode + ei - ej)
                - neg(mode - ei + ej)
                + neg(mode - ei - ej)
            ) / (4 * h * h)
    # Relative to the curvature: a Newton step of grad / hess must be far below one sd.
    step = np.abs(grad) / np.sqrt(np.maximum(np.abs(np.diag(hess)), 1e-300))
    if not (np.all(np.isfinite(grad)) and float(step.max()) < MODE_GRADIENT_TOL):
        raise AnalysisError(
            f"the gamma model's posterior mode of {condition!r} was not found (gradient "
            f"{np.linalg.norm(grad):.2g}); check the prior (--prior-mean, --prior-sd-max) or "
            "use --bayes-model hierarchical"
        )
    return mode, hess


def cell_means_draws(
    y: np.ndarray, cell: np.ndarray, n_cells: int, *, n_draws: int, rng: np.random.Generator
) -> np.ndarray:
    """Exact draws of the cell means of a normal linear model with a common variance.

    Flat prior on the cell means and ``p(sigma^2) ∝ 1/sigma^2``: ``sigma^2 | y`` is scaled
    inverse-chi^2 with ``N - C`` degrees of freedom, each cell mean given sigma is
    ``Normal(ybar_c, sigma^2 / n_c)``. A full factorial model with every interaction in
    effect coding is this model reparametrized, so its main effects and interactions are
    linear contrasts of these draws.

    Returns
    -------
    numpy.ndarray of shape (n_draws, n_cells)

    References
    ----------
    Gelman et al. (2013), BDA3 section 14.2.
    """
    counts = np.bincount(cell, minlength=n_cells).astype(np.float64)
    if np.any(counts == 0):
        raise AnalysisError("a factorial cell has no samples")
    df = y.size - n_cells
    if df < 1:
        raise AnalysisError(
            "the factorial model needs more samples than conditions (at least 2 in one cell)"
        )
    means = np.bincount(cell, y, n_cells) / counts
    s2 = float(((y - means[cell]) ** 2).sum()) / df
    sigma2 = df * s2 / rng.chisquare(df, n_draws)
    z = rng.standard_normal((n_draws, n_cells))
    return np.asarray(means[None, :] + np.sqrt(sigma2[:, None] / counts[None, :]) * z)
