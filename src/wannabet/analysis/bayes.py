"""Bayesian estimation of the change: posterior, highest density interval, ROPE decision.

:func:`bayes_analysis` takes per-sample sufficient statistics (:class:`SampleStats`, computed
once, in DuckDB for stored runs) and returns a frozen :class:`BayesAnalysis`: the posterior of
every condition's mean, of each condition's relative change against the baseline with its HDI,
P(faster) and the ROPE decision, factorial main effects and interactions, and diagnostics.

Models (``BayesOptions.model``):

* ``hierarchical`` (default, sample level): ``log(sample mean) ~ Normal(mu_c, tau_c^2 + v_s)``
  with the within-sample variance ``v_s`` known; exact draws (BDA3 section 5.4). A million
  transactions in 30 samples carry the information of about 30 samples.
* ``gamma`` (the reference article's model, transactions iid): gamma likelihood by mean and
  sd, gamma prior on the mean centred on the pooled mean, uniform prior on the sd; grid draws.
* ``lognormal`` (transactions iid): conjugate draws; the mean is ``exp(m + sigma^2 / 2)``.
* ``student-t`` (Kruschke's BEST on log sample means): NumPyro NUTS, 4 chains, float64.

The transaction-level models assume independent transactions; when the sample means vary
more than that allows, an ``iid-overconfident`` diagnostic says by how much.

Nothing in this module imports JAX; only ``student-t`` does, lazily. ArviZ-stats (HDI, R-hat,
ESS) is imported on the first call.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from wannabet.errors import MissingExtra

from .bayes_models import (
    GammaPrior,
    SampleStats,
    cell_means_draws,
    gamma_draws,
    hierarchical_draws,
    lognormal_draws,
    sample_level_values,
)
from .bayes_nuts import MISSING_EXTRA
from .diagnostics import Diagnostic
from .distributions import f_sf
from .observations import AnalysisError

__all__ = [
    "MODELS",
    "BayesAnalysis",
    "BayesCondition",
    "BayesEffect",
    "BayesModel",
    "BayesOptions",
    "BayesPair",
    "GammaPrior",
    "SampleStats",
    "bayes_analysis",
    "hdi",
    "require_extra",
    "rope_decision",
]

BayesModel = Literal["hierarchical", "gamma", "lognormal", "student-t"]
MODELS: tuple[str, ...] = ("hierarchical", "gamma", "lognormal", "student-t")
RopeDecision = Literal["credible-difference", "practically-equivalent", "undecided"]

#: A one-dimensional array of draws is split into this many chains for R-hat and ESS.
CHAINS = 4
#: Thresholds of Vehtari et al. (2021).
RHAT_MAX = 1.01
ESS_MIN = 400.0
#: Design effect above which an iid transaction-level model gets the overconfidence warning.
OVERDISPERSION = 2.0


def _f(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


@dataclass(frozen=True, slots=True)
class BayesOptions:
    """What to estimate and how.

    Attributes
    ----------
    model : {"hierarchical", "gamma", "lognormal", "student-t"}
    hdi_prob : float
        Probability mass of the highest density interval (0.95).
    rope_pct : float or None
        Half-width of the region of practical equivalence in %; None: the comparison's ROPE.
    draws : int
        Posterior draws per quantity (exact models; independent draws).
    seed : int
    prior_cv : float
        Gamma model: coefficient of variation of the gamma prior on each mean (1.0: broad).
    prior_mean : float or None
        Gamma model: prior mean of every condition's mean; None: the pooled mean of all
        transactions, as in the reference article.
    prior_sd_max : float or None
        Gamma model: upper bound of the uniform prior on each sd (in the data's unit); None:
        100 times the pooled sd.
    nuts_warmup, nuts_draws : int
        Student-t model: warm-up and kept draws per chain (4 chains).
    """

    model: BayesModel = "hierarchical"
    hdi_prob: float = 0.95
    rope_pct: float | None = None
    draws: int = 20_000
    seed: int = 0
    prior_cv: float = 1.0
    prior_mean: float | None = None
    prior_sd_max: float | None = None
    nuts_warmup: int = 1000
    nuts_draws: int = 2500

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise AnalysisError(f"bayes model {self.model!r}; use one of {', '.join(MODELS)}")
        if not (0.5 <= self.hdi_prob < 1):
            raise AnalysisError(f"hdi_prob={self.hdi_prob!r}; use a value in [0.5, 1), e.g. 0.95")
        if self.rope_pct is not None and not (math.isfinite(self.rope_pct) and self.rope_pct >= 0):
            raise AnalysisError(f"rope_pct={self.rope_pct!r} must be a percentage >= 0, e.g. 2")
        if self.draws < 4 * 250:
            raise AnalysisError(f"draws={self.draws!r}; use at least 1000 (default 20000)")
        if not (math.isfinite(self.prior_cv) and self.prior_cv > 0):
            raise AnalysisError(f"prior_cv={self.prior_cv!r} must be > 0, e.g. 1.0")
        for name in ("prior_mean", "prior_sd_max"):
            x = getattr(self, name)
            if x is not None and not (math.isfinite(x) and x > 0):
                raise AnalysisError(f"{name}={x!r} must be a positive number")


@dataclass(frozen=True)
class BayesCondition:
    """Posterior of one condition's mean (in the data's unit, e.g. ms)."""

    name: str
    mean_ms: float
    hdi_ms: tuple[float, float]
    draws_ms: np.ndarray = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (draws left out)."""
        return {
            "condition": self.name,
            "mean": _f(self.mean_ms),
            "hdi": [_f(self.hdi_ms[0]), _f(self.hdi_ms[1])],
        }


@dataclass(frozen=True)
class BayesPair:
    """One condition against the baseline: the posterior of the relative change in %."""

    name: str
    baseline: str
    model: str
    hdi_pct: tuple[float, float]
    mean_pct: float
    p_faster: float
    rope_pct: float
    rope_decision: str
    rhat_max: float | None
    ess_min: float | None
    draws_pct: np.ndarray = field(repr=False)
    hdi_prob: float = 0.95
    faster_means: str = "lower"

    def to_dict(self) -> dict[str, Any]:
        """The ``"bayes"`` entry of a comparison in the JSON contract."""
        return {
            "model": self.model,
            "hdi_pct": [_f(self.hdi_pct[0]), _f(self.hdi_pct[1])],
            "mean_pct": _f(self.mean_pct),
            "p_faster": _f(self.p_faster),
            "rope_decision": self.rope_decision,
            "rhat_max": _f(self.rhat_max),
            "ess_min": _f(self.ess_min),
            "hdi_prob": float(self.hdi_prob),
            "rope_pct": float(self.rope_pct),
            "faster_means": self.faster_means,
        }


@dataclass(frozen=True)
class BayesEffect:
    """A factorial main effect or interaction, as a relative change of the mean in %."""

    term: str
    mean_pct: float
    hdi_pct: tuple[float, float]
    draws_pct: np.ndarray = field(repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (draws left out)."""
        return {
            "term": self.term,
            "mean_pct": _f(self.mean_pct),
            "hdi_pct": [_f(self.hdi_pct[0]), _f(self.hdi_pct[1])],
        }


@dataclass(frozen=True)
class BayesAnalysis:
    """Result of :func:`bayes_analysis`."""

    model: str
    hdi_prob: float
    rope_pct: float
    conditions: tuple[BayesCondition, ...]
    pairs: tuple[BayesPair, ...]
    effects: tuple[BayesEffect, ...]
    diagnostics: tuple[Diagnostic, ...]

    def pair(self, name: str) -> BayesPair:
        """The comparison of condition ``name`` against the baseline."""
        for p in self.pairs:
            if p.name == name:
                return p
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """Top-level ``"bayes"`` block of the JSON contract (pairs go into the comparisons)."""
        return {
            "model": self.model,
            "hdi_prob": float(self.hdi_prob),
            "rope_pct": float(self.rope_pct),
            "conditions": [c.to_dict() for c in self.conditions],
            "effects": [e.to_dict() for e in self.effects],
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


def _array_stats() -> Any:
    # Imported on first use, by the NUTS model only: it pulls in scipy.signal and scipy.stats,
    # over a second of start-up (docs/architecture.md "What compare imports"). Untyped: Any.
    return importlib.import_module("arviz_stats.base").array_stats


def hdi(draws: np.ndarray, prob: float = 0.95) -> tuple[float, float]:
    """Highest density interval: the narrowest interval holding ``prob`` of the draws.

    Of the sorted draws, the pair ``(x[i], x[i + k])`` with ``k = floor(prob * n)`` that is
    closest together: the same interval as ArviZ-stats' ``hdi`` (method "nearest"), which the
    suite checks, without importing it.

    References
    ----------
    Kruschke, J. K. (2015). Doing Bayesian Data Analysis, 2nd ed., section 25.2.3.
    """
    x = np.sort(np.asarray(draws, dtype=np.float64).ravel())
    k = int(np.floor(prob * x.size))
    if x.size - k < 1 or k < 0:
        raise AnalysisError(f"hdi() needs more draws than {x.size} for prob={prob}")
    widths = x[k:] - x[: x.size - k]
    i = int(np.argmin(widths))
    return float(x[i]), float(x[i + k])


def rope_decision(hdi_pct: tuple[float, float], rope_pct: float) -> RopeDecision:
    """Kruschke's decision rule on the HDI of the change and the ROPE ``± rope_pct``.

    ``credible-difference`` when the HDI lies wholly outside the ROPE, ``practically-
    equivalent`` when wholly inside, ``undecided`` otherwise.

    References
    ----------
    Kruschke, J. K. (2018). Rejecting or accepting parameter values in Bayesian estimation.
    Advances in Methods and Practices in Psychological Science 1(2), 270-280.
    """
    lo, hi = hdi_pct
    if lo > rope_pct or hi < -rope_pct:
        return "credible-difference"
    if lo >= -rope_pct and hi <= rope_pct:
        return "practically-equivalent"
    return "undecided"


def _convergence(chains: Sequence[np.ndarray]) -> tuple[float | None, float | None]:
    """Largest rank-normalized split R-hat and smallest bulk/tail ESS over the quantities.

    Anything not finite counts as failure, whatever its position: draws that are not finite
    give R-hat = inf and ESS = 0, and so does a NaN R-hat or ESS (``max`` and ``min`` over
    NaN depend on the order, and ``nan >= 1.01`` is False). Quantities that are constant
    (a condition against itself) are skipped; None when nothing is left.
    """
    array_stats = _array_stats()
    rhats, esss = [], []
    for x in chains:
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 1:
            x = x[: x.size - x.size % CHAINS].reshape(CHAINS, -1)
        if not np.all(np.isfinite(x)):
            rhats.append(math.inf)
            esss.append(0.0)
            continue
        if np.ptp(x) == 0:
            continue
        rhats.append(float(array_stats.rhat(x, chain_axis=0, draw_axis=1)))
        esss.append(float(array_stats.ess(x, chain_axis=0, draw_axis=1, method="bulk")))
        esss.append(float(array_stats.ess(x, chain_axis=0, draw_axis=1, method="tail", prob=0.05)))
    if not rhats:
        return None, None
    rhat = max((r if math.isfinite(r) else math.inf) for r in rhats)
    ess = min((e if math.isfinite(e) else 0.0) for e in esss)
    return rhat, ess


def _converged(rhat: float | None, ess: float | None) -> bool:
    """R-hat and ESS both known, finite and within the thresholds of Vehtari et al."""
    return (
        rhat is not None
        and ess is not None
        and math.isfinite(rhat)
        and math.isfinite(ess)
        and rhat < RHAT_MAX
        and ess >= ESS_MIN
    )


def _rng(seed: int, *labels: str) -> np.random.Generator:
    # Streams keyed by labels, not positions: reordering conditions changes no number.
    key = [int(seed)] + [zlib.crc32(lbl.encode("utf-8")) for lbl in labels]
    return np.random.default_rng(np.random.SeedSequence(key))


def _overdispersion(s: SampleStats) -> float | None:
    """ANOVA F of the sample means against the within-sample variance: about 1 when
    transactions are iid across samples, the factor by which an iid model understates the
    variance of the mean otherwise."""
    if s.k < 2 or np.all(s.n <= 1):
        return None
    mean_s = s.sum / s.n
    grand = float(s.sum.sum() / s.n.sum())
    within = float((s.sum_sq - s.n * mean_s**2).sum()) / max(float(s.n.sum()) - s.k, 1.0)
    if within <= 0:
        return None
    between = float((s.n * (mean_s - grand) ** 2).sum()) / (s.k - 1)
    return between / within


def _iid_diagnostics(groups: Sequence[SampleStats], model: str) -> list[Diagnostic]:
    out = []
    for s in groups:
        f = _overdispersion(s)
        if f is None or f <= OVERDISPERSION:
            continue
        p = float(f_sf(f, s.k - 1, float(s.n.sum()) - s.k))
        if p >= 0.001:
            continue
        out.append(
            Diagnostic(
                "iid-overconfident",
                f"the {s.k} sample means of {s.condition!r} vary {f:.0f} times more than "
                f"independent transactions allow (F={f:.1f}, p={p:.1e}); the {model} model "
                f"treats every transaction as independent, so its intervals are about "
                f"{math.sqrt(f):.0f}x too narrow",
                "use the default sample-level model (--bayes-model hierarchical), which "
                "counts samples, not transactions",
            )
        )
    return out


def _tau_max(logm: np.ndarray) -> float:
    """Upper bound of the uniform prior on tau for one condition.

    Ten times the spread of that condition's log sample means, at least 1 (sample means
    varying by a factor e): wide enough never to bind with 10+ samples, finite so that 2-4
    samples still give a proper posterior. Per condition, so that A against B does not
    depend on which other conditions are in the run.
    """
    return max(1.0, 10 * float(np.std(logm, ddof=1)))


def _condition_draws(
    groups: Sequence[SampleStats], metric: str, opts: BayesOptions
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[Diagnostic], bool]:
    """Per condition: draws of the mean and of the log-scale location used for changes.

    Returns (mean draws, log-location draws or chain-shaped NUTS draws, diagnostics, nuts).
    Each condition's posterior depends on its own data and the options only, except for the
    priors that are centred on the pooled data by design: the gamma model's (as in the
    reference article) and the student-t model's (as in BEST).
    """
    diags: list[Diagnostic] = []
    means: dict[str, np.ndarray] = {}
    logloc: dict[str, np.ndarray] = {}
    model = opts.model
    if model in ("gamma", "lognormal"):
        if metric != "latency":
            raise AnalysisError(
                f"the {model} model describes single transactions' latencies; throughput is"
                " one value per sample, so use --bayes-model hierarchical or student-t"
            )
        single = [s.condition for s in groups if np.all(s.n <= 1)]
        if single:
            # An import without --sample: each row is one transaction in a sample of its own,
            # which is what these models describe. The same shape holds per-sample means
            # imported one row per sample, which they would take for transactions: say so.
            diags.append(
                Diagnostic(
                    "one-value-samples",
                    f"every sample of {', '.join(repr(c) for c in single)} holds one value;"
                    f" the {model} model takes each as one transaction's latency",
                    "if the values are per-sample means (an import with --sample, one row per"
                    " sample), use --bayes-model hierarchical or student-t instead",
                )
            )
        diags += _iid_diagnostics(groups, model)
    if model == "hierarchical":
        for s in groups:
            logm, v = sample_level_values(s)
            if s.k < 2:
                raise AnalysisError(
                    f"condition {s.condition!r} has {s.k} sample; the sample-level model "
                    "needs at least 2 (better 30), or use --bayes-model gamma / lognormal"
                )
            tau_max = _tau_max(logm)
            mu, _ = hierarchical_draws(
                logm, v, tau_max=tau_max, n_draws=opts.draws, rng=_rng(opts.seed, s.condition)
            )
            logloc[s.condition] = mu
            means[s.condition] = np.exp(mu)
            if s.k < 5:
                diags.append(
                    Diagnostic(
                        "few-samples-bayes",
                        f"{s.condition!r} has {s.k} samples: the between-sample spread is "
                        "barely known, so its HDI is wide and leans on the prior bound of tau",
                        "run at least 10, better 30, samples per condition",
                    )
                )
    elif model == "lognormal":
        for s in groups:
            mean, _, _ = lognormal_draws(s, n_draws=opts.draws, rng=_rng(opts.seed, s.condition))
            means[s.condition] = mean
            logloc[s.condition] = np.log(mean)
    elif model == "gamma":
        n_all = float(sum(s.n.sum() for s in groups))
        pooled_mean = float(sum(s.sum.sum() for s in groups)) / n_all
        pooled_var = float(sum(s.sum_sq.sum() for s in groups)) / n_all - pooled_mean**2
        sd_max = opts.prior_sd_max or 100 * math.sqrt(max(pooled_var, pooled_mean**2 * 1e-8))
        prior = GammaPrior(opts.prior_mean or pooled_mean, opts.prior_cv, sd_max)
        for s in groups:
            m = gamma_draws(s, prior, n_draws=opts.draws, rng=_rng(opts.seed, s.condition))
            means[s.condition] = m
            logloc[s.condition] = np.log(m)
    else:
        from .bayes_nuts import student_t_nuts

        ls = [sample_level_values(s)[0] for s in groups]
        for s in groups:
            if s.k < 3:
                raise AnalysisError(
                    f"condition {s.condition!r} has {s.k} samples; the student-t model needs "
                    "at least 3 (better 30)"
                )
        mu, _, divergent = student_t_nuts(
            ls, warmup=opts.nuts_warmup, draws=opts.nuts_draws, seed=opts.seed
        )
        if divergent:
            diags.append(
                Diagnostic(
                    "mcmc-divergences",
                    f"{divergent} of {mu.shape[0] * mu.shape[1]} NUTS transitions of the "
                    "student-t model diverged; the posterior may be biased",
                    "use the exact default model (--bayes-model hierarchical); with few "
                    "samples per condition the student-t scale and tails are barely identified",
                )
            )
        for i, s in enumerate(groups):
            logloc[s.condition] = mu[:, :, i]
            means[s.condition] = np.exp(mu[:, :, i])
        return means, logloc, diags, True
    return means, logloc, diags, False


def _factorial(
    groups: Sequence[SampleStats], opts: BayesOptions
) -> tuple[tuple[BayesEffect, ...], list[Diagnostic]]:
    factors = [f for f in groups[0].levels if all(f in s.levels for s in groups)]
    if len(factors) < 2:
        return (), []
    levels = {f: list(dict.fromkeys(s.levels[f] for s in groups)) for f in factors}
    factors = [f for f in factors if len(levels[f]) >= 2]
    cells = [tuple(s.levels[f] for f in factors) for s in groups]
    full = list(itertools.product(*(levels[f] for f in factors)))
    if len(factors) < 2 or sorted(cells) != sorted(full):
        return (), [
            Diagnostic(
                "not-factorial",
                "the conditions do not form a full factorial design (each combination of "
                "levels exactly once), so no main effects or interactions are estimated",
                "run every combination of the factor levels",
            )
        ]
    ys, cs = [], []
    for i, s in enumerate(groups):
        logm, _ = sample_level_values(s)
        ys.append(logm)
        cs.append(np.full(logm.size, i))
    try:
        draws = cell_means_draws(
            np.concatenate(ys),
            np.concatenate(cs),
            len(groups),
            n_draws=opts.draws,
            rng=_rng(opts.seed, "factorial"),
        )
    except AnalysisError as exc:
        return (), [
            Diagnostic(
                "not-factorial", f"no factorial effects: {exc}", "run more samples per condition"
            )
        ]
    where = {f: np.array([c[j] for c in cells]) for j, f in enumerate(factors)}

    def avg(mask: np.ndarray) -> np.ndarray:
        return np.asarray(draws[:, mask].mean(axis=1))

    effects: list[BayesEffect] = []

    def add(term: str, log_draws: np.ndarray) -> None:
        pct = 100 * np.expm1(log_draws)
        centre = float(100 * np.expm1(log_draws.mean()))
        effects.append(BayesEffect(term, centre, hdi(pct, opts.hdi_prob), pct))

    # Every order the design has: main effects, two-factor, ..., all-factor interactions.
    # The contrast of a set of factors is the alternating sum over its 2^k corners (each
    # factor at the chosen level or at its first level), every corner averaged over the
    # factors outside the set; for one factor it is the main effect.
    for order in range(1, len(factors) + 1):
        for subset in itertools.combinations(factors, order):
            for chosen in itertools.product(*(levels[f][1:] for f in subset)):
                d = np.zeros(opts.draws)
                for corner in itertools.product((True, False), repeat=order):
                    mask = np.ones(len(cells), dtype=bool)
                    for f, lv, at in zip(subset, chosen, corner, strict=True):
                        mask &= where[f] == (lv if at else levels[f][0])
                    d = d + (-1) ** corner.count(False) * avg(mask)
                if order == 1:
                    term = f"{subset[0]}: {chosen[0]} vs {levels[subset[0]][0]}"
                else:
                    term = (
                        " × ".join(subset)
                        + ": "
                        + " × ".join(
                            f"({lv} vs {levels[f][0]})"
                            for f, lv in zip(subset, chosen, strict=True)
                        )
                    )
                add(term, d)
    return tuple(effects), []


def bayes_analysis(
    groups: Sequence[SampleStats],
    *,
    baseline: str | None = None,
    metric: Literal["latency", "throughput"] = "latency",
    options: BayesOptions | None = None,
    rope_pct: float = 2.0,
) -> BayesAnalysis:
    """Posterior of every condition's mean and of each condition's change against the baseline.

    Parameters
    ----------
    groups : sequence of SampleStats
        One per condition, with per-sample sufficient statistics (and factor levels for the
        factorial effects).
    baseline : str, optional
        Default the first condition.
    metric : {"latency", "throughput"}
        Latency: faster means a negative change. Throughput: a positive one.
    options : BayesOptions, optional
    rope_pct : float
        ROPE half-width in % when ``options.rope_pct`` is None.

    Returns
    -------
    BayesAnalysis

    Notes
    -----
    The relative change is ``mean_B / mean_A - 1`` of the model's condition means: for the
    sample-level models ``exp(mu_B - mu_A) - 1`` with ``mu`` the log-scale centre of the sample
    means. Point values (``mean_pct``, ``mean_ms``, effects) are taken at the posterior mean on
    the log scale, ``exp(E[log ratio]) - 1``: with few samples the posterior of a ratio has a
    long right tail that would drag its plain mean outside the HDI. ``p_faster`` is the
    posterior probability of a change in the faster direction. ``rhat_max`` and ``ess_min``
    cover the change and both condition means for the NUTS model; they are None for the exact
    models, whose draws are independent (there is no chain to converge).

    References
    ----------
    Kruschke, J. K. (2013). Bayesian estimation supersedes the t test. JEP: General 142(2).
    Kruschke, J. K. (2018). AMPPS 1(2), 270-280 (HDI + ROPE decision).
    Gelman, A. et al. (2013). Bayesian Data Analysis, 3rd ed., sections 3.2, 5.4 and 14.2.
    Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. & Bürkner, P.-C. (2021). Rank-
    normalization, folding, and localization: an improved R-hat. Bayesian Analysis 16(2).
    """
    opts = options or BayesOptions()
    require_extra(opts.model)
    if not groups:
        raise AnalysisError("bayes_analysis() got no conditions")
    labels = [s.condition for s in groups]
    if len(set(labels)) != len(labels):
        raise AnalysisError(f"condition labels must be unique; got {labels}")
    base = baseline if baseline is not None else labels[0]
    if base not in labels:
        raise AnalysisError(f"baseline={base!r} is not one of the conditions {labels}")
    rope = float(opts.rope_pct if opts.rope_pct is not None else rope_pct)
    means, logloc, diags, nuts = _condition_draws(groups, metric, opts)

    conditions = []
    for s in groups:
        d = means[s.condition].ravel()
        centre = float(np.exp(np.mean(np.log(d))))
        conditions.append(BayesCondition(s.condition, centre, hdi(d, opts.hdi_prob), d))

    pairs = []
    faster_means = "lower" if metric == "latency" else "higher"
    for s in groups:
        name = s.condition
        if name == base:
            continue
        log_ratio = logloc[name] - logloc[base]
        change = 100 * np.expm1(log_ratio)
        flat = change.ravel()
        iv = hdi(flat, opts.hdi_prob)
        p_faster = float(np.mean(flat < 0) if metric == "latency" else np.mean(flat > 0))
        # R-hat and ESS check MCMC; exact draws are independent by construction (the suite
        # checks that), so they have nothing to report and the checks' cost is not paid.
        rhat, ess = _convergence([change, logloc[name], logloc[base]]) if nuts else (None, None)
        pairs.append(
            BayesPair(
                name=name,
                baseline=base,
                model=opts.model,
                hdi_pct=iv,
                mean_pct=float(100 * np.expm1(log_ratio.mean())),
                p_faster=p_faster,
                rope_pct=rope,
                rope_decision=rope_decision(iv, rope),
                rhat_max=rhat,
                ess_min=ess,
                draws_pct=flat,
                hdi_prob=opts.hdi_prob,
                faster_means=faster_means,
            )
        )
        if nuts and not _converged(rhat, ess):
            diags.append(
                Diagnostic(
                    "mcmc-convergence",
                    f"MCMC for {name!r} vs {base!r} did not converge cleanly (R-hat "
                    f"{_show(rhat)} >= {RHAT_MAX} or ESS {_show(ess)} < {ESS_MIN:g})",
                    "rerun with more draws, or use the exact default model "
                    "(--bayes-model hierarchical)",
                )
            )
    effects, fdiags = _factorial(groups, opts)
    return BayesAnalysis(
        model=opts.model,
        hdi_prob=float(opts.hdi_prob),
        rope_pct=rope,
        conditions=tuple(conditions),
        pairs=tuple(pairs),
        effects=effects,
        diagnostics=tuple(diags + fdiags),
    )


def _show(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def require_extra(model: str = "hierarchical") -> None:
    """Raise :class:`~wannabet.errors.MissingExtra` with the install command when a
    dependency of ``model`` from the ``bayes`` extra is missing (checked without importing it).

    Only ``student-t`` (NUTS) needs the extra: JAX and NumPyro for the sampler, ArviZ-stats
    for R-hat and ESS. The exact models need nothing beyond NumPy.
    """
    needed = ["arviz_stats", "jax", "numpyro"] if model == "student-t" else []
    missing = [m for m in needed if importlib.util.find_spec(m) is None]
    if missing:
        raise MissingExtra(MISSING_EXTRA, "bayes", ", ".join(missing))
