"""The models that need MCMC, run with NumPyro's NUTS in float64.

Imported only by ``compare --bayes --bayes-model student-t`` (and by the tests and the
benchmark that check the exact draws against NUTS), so that nothing else pays for importing
JAX. Float64 is switched on before any JAX array exists: in float32 the gamma model's
likelihood on a million transactions loses its curvature and the chains do not converge.

References
----------
Kruschke, J. K. (2013). Bayesian estimation supersedes the t test. Journal of Experimental
Psychology: General 142(2), 573-603 (the BEST model and its priors).
Hoffman, M. D. & Gelman, A. (2014). The No-U-Turn sampler. JMLR 15, 1593-1623.
Phan, D., Pradhan, N. & Jankowiak, M. (2019). Composable effects for flexible and accelerated
probabilistic programming in NumPyro. arXiv:1912.11554.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from wannabet.cache import private_cache_dir
from wannabet.errors import MissingExtra

from .bayes_models import GammaPrior

__all__ = ["MISSING_EXTRA", "gamma_nuts", "gamma_nuts_full_data", "student_t_nuts"]

#: what needs the ``bayes`` extra, as :class:`~wannabet.errors.MissingExtra` says it
MISSING_EXTRA = "the Bayesian analysis"


def _numpyro() -> Any:
    # Two cores are shared with the database under test: one host device, chains vectorized.
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
    try:
        jax: Any = importlib.import_module("jax")
        numpyro: Any = importlib.import_module("numpyro")
        importlib.import_module("numpyro.infer")
        importlib.import_module("numpyro.distributions")
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise MissingExtra(MISSING_EXTRA, "bayes", exc.name) from exc
    jax.config.update("jax_enable_x64", True)
    numpyro.enable_x64()
    _keep_compiled_programs(jax)
    return numpyro


#: the persistent compilation cache's limit; the four models' programs take a few MB each
_CACHE_MAX_BYTES = 256 * 2**20


def _keep_compiled_programs(jax: Any) -> None:
    # Compiling a model's NUTS program costs most of an analysis (about 6 of 9 s on two cores);
    # JAX's persistent cache keeps it for the next analysis of the same shapes. The data are
    # arguments of the program (``jit_model_args``), so another data set of the same shape
    # reuses it. A cache directory set by the user (JAX_COMPILATION_CACHE_DIR) wins.
    if jax.config.jax_compilation_cache_dir:
        return
    directory = private_cache_dir("jax")
    if directory is not None:
        jax.config.update("jax_compilation_cache_dir", str(directory))
        jax.config.update("jax_compilation_cache_max_size", _CACHE_MAX_BYTES)


def _run(
    model: Any, data: dict[str, Any], chains: int, warmup: int, draws: int, seed: int
) -> dict[str, np.ndarray]:
    """NUTS draws of ``model(**data)``; ``data`` are the compiled program's arguments."""
    numpyro = _numpyro()
    jax: Any = importlib.import_module("jax")
    mcmc = numpyro.infer.MCMC(
        numpyro.infer.NUTS(model),
        num_warmup=warmup,
        num_samples=draws,
        num_chains=chains,
        chain_method="vectorized",
        progress_bar=False,
        jit_model_args=True,
    )
    mcmc.run(jax.random.PRNGKey(seed), extra_fields=("diverging",), **data)
    samples = mcmc.get_samples(group_by_chain=True)
    out = {k: np.asarray(v, dtype=np.float64) for k, v in samples.items()}
    out["diverging"] = np.asarray(mcmc.get_extra_fields()["diverging"], dtype=np.float64)
    return out


def student_t_nuts(
    groups: Sequence[np.ndarray],
    *,
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 2500,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Kruschke's BEST on each condition's log sample means, with NUTS.

    ``y ~ StudentT(nu, mu_c, sigma_c)``, ``mu_c ~ Normal(mean(y), (1000 sd(y))^2)``,
    ``sigma_c ~ Uniform(sd(y) / 1000, sd(y) * 1000)``, ``nu - 1 ~ Exponential(1/29)``, with
    mean and sd of all values pooled, as in Kruschke (2013).

    Returns
    -------
    (mu, nu, divergences)
        ``mu`` of shape (chains, draws, conditions); ``nu`` of shape (chains, draws); the
        number of divergent transitions among the kept draws (any is a warning sign).
    """
    numpyro = _numpyro()
    dist = numpyro.distributions
    jnp: Any = importlib.import_module("jax.numpy")

    y = np.concatenate(groups)
    idx = np.concatenate([np.full(g.size, i) for i, g in enumerate(groups)])
    center, spread = float(y.mean()), float(y.std(ddof=1)) if y.size > 1 else 1.0
    spread = spread if spread > 0 else 1e-6
    k = len(groups)

    def model(y: Any, idx: Any, center: Any, spread: Any) -> None:
        with numpyro.plate("c", k):
            mu = numpyro.sample("mu", dist.Normal(center, 1000 * spread))
            sigma = numpyro.sample("sigma", dist.Uniform(spread / 1000, spread * 1000))
        nu = 1 + numpyro.sample("nu_minus_one", dist.Exponential(1 / 29))
        numpyro.sample("y", dist.StudentT(nu, mu[idx], sigma[idx]), obs=y)

    data = {"y": y, "idx": idx, "center": center, "spread": spread}
    arrays = {name: jnp.asarray(value) for name, value in data.items()}
    out = _run(model, arrays, chains, warmup, draws, seed)
    return out["mu"], out["nu_minus_one"] + 1, int(out["diverging"].sum())


def gamma_nuts(
    n: Sequence[float],
    sum_y: Sequence[float],
    sum_log_y: Sequence[float],
    priors: Sequence[GammaPrior],
    *,
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 3000,
    seed: int = 0,
) -> np.ndarray:
    """The reference article's gamma model on sufficient statistics, with NUTS.

    Same likelihood and priors as :func:`wannabet.analysis.bayes_models.gamma_draws`; used as
    the reference the exact draws are checked and timed against.

    Returns
    -------
    numpy.ndarray
        Draws of the means, shape (chains, draws, conditions).
    """
    numpyro = _numpyro()
    dist = numpyro.distributions
    jnp: Any = importlib.import_module("jax.numpy")
    gammaln = importlib.import_module("jax.scipy.special").gammaln

    shape = jnp.asarray([p.shape for p in priors])
    rate = jnp.asarray([p.rate for p in priors])
    sd_max = jnp.asarray([p.sd_max for p in priors])
    k = len(priors)

    def model(n: Any, sy: Any, sly: Any, shape: Any, rate: Any, sd_max: Any) -> None:
        with numpyro.plate("c", k):
            m = numpyro.sample("m", dist.Gamma(shape, rate))
            sd = numpyro.sample("sd", dist.Uniform(0.0, sd_max))
        a = (m / sd) ** 2
        b = m / sd**2
        numpyro.factor("y", jnp.sum(n * (a * jnp.log(b) - gammaln(a)) + (a - 1) * sly - b * sy))

    sums = {"n": n, "sy": sum_y, "sly": sum_log_y}
    data = {name: jnp.asarray(value, dtype=jnp.float64) for name, value in sums.items()}
    priors_data = {"shape": shape, "rate": rate, "sd_max": sd_max}
    out = _run(model, data | priors_data, chains, warmup, draws, seed)
    return out["m"]


def gamma_nuts_full_data(
    groups: Sequence[np.ndarray],
    priors: Sequence[GammaPrior],
    *,
    chains: int = 4,
    warmup: int = 1000,
    draws: int = 2000,
    seed: int = 0,
) -> np.ndarray:
    """The gamma model fitted on every transaction (``y[i] ~ Gamma``), as JAGS does.

    For tests on small data: it must agree with the sufficient-statistics draws.
    """
    numpyro = _numpyro()
    dist = numpyro.distributions
    jnp: Any = importlib.import_module("jax.numpy")

    y = jnp.asarray(np.concatenate(groups))
    idx = np.concatenate([np.full(g.size, i) for i, g in enumerate(groups)])
    shape = jnp.asarray([p.shape for p in priors])
    rate = jnp.asarray([p.rate for p in priors])
    sd_max = jnp.asarray([p.sd_max for p in priors])
    k = len(priors)

    def model(y: Any, idx: Any, shape: Any, rate: Any, sd_max: Any) -> None:
        with numpyro.plate("c", k):
            m = numpyro.sample("m", dist.Gamma(shape, rate))
            sd = numpyro.sample("sd", dist.Uniform(0.0, sd_max))
        a = (m / sd) ** 2
        b = m / sd**2
        numpyro.sample("y", dist.Gamma(a[idx], b[idx]), obs=y)

    data = {"y": y, "idx": jnp.asarray(idx), "shape": shape, "rate": rate, "sd_max": sd_max}
    return _run(model, data, chains, warmup, draws, seed)["m"]
