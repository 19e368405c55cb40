"""Bayesian estimation: exact draws against SciPy references and NumPyro NUTS, calibration of
the HDI on sample-structured data with known truth, A-vs-A decisions, the reference article's
qualitative result, and factorial effects."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from wannabet.analysis import AnalysisError, Observations
from wannabet.analysis.bayes import (
    BayesOptions,
    SampleStats,
    _convergence,
    bayes_analysis,
    hdi,
    require_extra,
    rope_decision,
)
from wannabet.analysis.bayes_models import (
    GammaPrior,
    cell_means_draws,
    gamma_draws,
    hierarchical_draws,
    lognormal_draws,
    sample_level_values,
)
from wannabet.cache import cache_dir
from wannabet.errors import MissingExtra
from wannabet.testing.ci import require_module

from .simulate import SHAPES, simulate


def within_tolerance(rate: float, target: float, n: int) -> bool:
    # two-sided binomial tolerance: 3 standard errors (about 1 in 370 by chance)
    return abs(rate - target) <= 3 * math.sqrt(target * (1 - target) / n)


def stats_of(label: str, y: np.ndarray, per_sample: int) -> SampleStats:
    sample = np.arange(y.size) // per_sample
    return SampleStats.from_observations(Observations(label, y, sample))


# --- building blocks against SciPy -------------------------------------------------------------


def test_hdi_of_known_distributions() -> None:
    rng = np.random.default_rng(1)
    lo, hi = hdi(rng.standard_normal(200_000), 0.95)
    assert lo == pytest.approx(-1.96, abs=0.03) and hi == pytest.approx(1.96, abs=0.03)
    # Skewed: the HDI of Exp(1) starts at 0 and ends at -log(0.05), unlike the central interval.
    lo, hi = hdi(rng.exponential(size=200_000), 0.95)
    assert lo == pytest.approx(0.0, abs=0.01) and hi == pytest.approx(-math.log(0.05), abs=0.05)


@pytest.mark.parametrize(
    ("interval", "expected"),
    [
        ((2.5, 7.0), "credible-difference"),
        ((-9.0, -2.1), "credible-difference"),
        ((-1.5, 1.9), "practically-equivalent"),
        ((-2.0, 2.0), "practically-equivalent"),
        ((-1.0, 3.0), "undecided"),
        ((-5.0, 5.0), "undecided"),
    ],
)
def test_rope_decision(interval: tuple[float, float], expected: str) -> None:
    assert rope_decision(interval, 2.0) == expected


def test_sufficient_statistics_from_observations() -> None:
    rng = np.random.default_rng(2)
    y = rng.gamma(4.0, 2.0, 600)
    s = stats_of("A", y, 200)
    assert s.k == 3 and s.total == 600
    np.testing.assert_allclose(s.sum, y.reshape(3, 200).sum(axis=1))
    np.testing.assert_allclose(s.sum_log_sq, (np.log(y) ** 2).reshape(3, 200).sum(axis=1))
    logm, v = sample_level_values(s)
    blocks = y.reshape(3, 200)
    np.testing.assert_allclose(logm, np.log(blocks.mean(axis=1)))
    np.testing.assert_allclose(v, blocks.var(axis=1, ddof=1) / (200 * blocks.mean(axis=1) ** 2))


def test_lognormal_posterior_is_the_scipy_t_distribution() -> None:
    rng = np.random.default_rng(3)
    y = rng.lognormal(1.0, 0.6, 40)
    s = stats_of("A", y, 10)
    _, m, sigma2 = lognormal_draws(s, n_draws=40_000, rng=np.random.default_rng(4))
    ly = np.log(y)
    ref_m = stats.t(df=39, loc=ly.mean(), scale=ly.std(ddof=1) / math.sqrt(40))
    assert stats.kstest(m, ref_m.cdf).pvalue > 0.001
    ref_s2 = stats.invgamma(a=39 / 2, scale=39 * ly.var(ddof=1) / 2)  # scaled inv-chi^2
    assert stats.kstest(sigma2, ref_s2.cdf).pvalue > 0.001


def test_hierarchical_draws_match_numerical_integration() -> None:
    rng = np.random.default_rng(5)
    logm = rng.normal(0.3, 0.08, 8)
    v = rng.uniform(0.0005, 0.003, 8)
    mu, _ = hierarchical_draws(logm, v, tau_max=1.0, n_draws=40_000, rng=np.random.default_rng(6))

    # Reference: the joint posterior of (mu, tau), evaluated with SciPy's normal density on a
    # dense rectangular grid and integrated by the trapezoid rule (no conditional formulas).
    m = np.linspace(-0.2, 0.8, 1201)
    t = np.linspace(0.0, 1.0, 2001)
    logp = stats.norm.logpdf(
        logm[None, None, :], m[:, None, None], np.sqrt(t[None, :, None] ** 2 + v)
    ).sum(axis=2)
    dens = np.exp(logp - logp.max())
    marginal = integrate.trapezoid(dens, t, axis=1)
    z = integrate.trapezoid(marginal, m)
    mean = integrate.trapezoid(m * marginal, m) / z
    sd = math.sqrt(integrate.trapezoid((m - mean) ** 2 * marginal, m) / z)
    se = sd / math.sqrt(mu.size)
    assert abs(mu.mean() - mean) < 4 * se
    assert mu.std() == pytest.approx(sd, rel=0.03)
    # The whole shape, tails included: KS test against the integrated marginal CDF.
    cdf = integrate.cumulative_trapezoid(marginal, m, initial=0.0) / z
    assert stats.kstest(mu, lambda x: np.interp(x, m, cdf)).pvalue > 0.001


def test_factorial_contrasts_are_scipy_t_distributions() -> None:
    rng = np.random.default_rng(7)
    cell = np.repeat(np.arange(4), [5, 6, 7, 8])
    y = rng.normal(0.0, 0.1, cell.size) + np.array([0.0, 0.2, -0.1, 0.3])[cell]
    draws = cell_means_draws(y, cell, 4, n_draws=40_000, rng=np.random.default_rng(8))
    c = np.array([-0.5, 0.5, -0.5, 0.5])  # a main effect in a 2 x 2 design
    counts = np.bincount(cell)
    means = np.bincount(cell, y) / counts
    df = y.size - 4
    s2 = ((y - means[cell]) ** 2).sum() / df
    ref = stats.t(df=df, loc=c @ means, scale=math.sqrt(s2 * (c**2 / counts).sum()))
    assert stats.kstest(draws @ c, ref.cdf).pvalue > 0.001


# --- the gamma model: sufficient statistics against NUTS on the full data -----------------------


def test_gamma_from_sufficient_statistics_matches_nuts_on_the_full_data() -> None:
    from wannabet.analysis.bayes_nuts import gamma_nuts_full_data

    rng = np.random.default_rng(9)
    a = rng.gamma(5.0, 2.0, 120)
    b = rng.gamma(5.0, 2.2, 120)
    pooled = float(np.concatenate([a, b]).mean())
    prior = GammaPrior(pooled, 1.0, 100 * float(np.concatenate([a, b]).std()))
    exact = [
        gamma_draws(stats_of(lbl, y, 40), prior, n_draws=40_000, rng=np.random.default_rng(i))
        for i, (lbl, y) in enumerate((("A", a), ("B", b)))
    ]
    nuts = gamma_nuts_full_data([a, b], [prior, prior], draws=1000, warmup=500, seed=3)
    from arviz_stats.base import array_stats

    for i in range(2):
        ref = nuts[:, :, i]
        ess = float(array_stats.ess(ref, chain_axis=0, draw_axis=1, method="mean"))
        mc_se = math.hypot(ref.std() / math.sqrt(ess), exact[i].std() / math.sqrt(exact[i].size))
        assert abs(exact[i].mean() - ref.mean()) < 4 * mc_se
        assert exact[i].std() == pytest.approx(ref.std(), rel=0.08)
    diff_exact = exact[1] - exact[0]
    diff_nuts = nuts[:, :, 1] - nuts[:, :, 0]
    for q in (0.025, 0.5, 0.975):
        se = math.hypot(quantile_mcse(diff_nuts, q), quantile_mcse(diff_exact.reshape(4, -1), q))
        assert abs(np.quantile(diff_exact, q) - np.quantile(diff_nuts, q)) < 4 * se, q


def quantile_mcse(chains: np.ndarray, q: float) -> float:
    """Monte Carlo standard error of a quantile, from the ESS of the indicator (ArviZ)."""
    from arviz_stats.base import array_stats

    return float(array_stats.mcse(chains, chain_axis=0, draw_axis=1, method="quantile", prob=q))


def gamma_reference(
    y: np.ndarray, prior: GammaPrior, points: int = 3001
) -> tuple[np.ndarray, np.ndarray]:
    """Marginal CDF of the mean in the gamma model by brute force: the plain density of (m, s)
    (likelihood, gamma prior on m, flat prior on s; no reparametrization, so no Jacobian) on a
    dense rectangular grid, integrated over s by the trapezoid rule."""
    centre = max(prior.prior_mean, float(y.mean()))
    m = np.geomspace(1e-6 * centre, 40 * centre, points)
    sd = np.geomspace(1e-2 * float(y.std()), prior.sd_max, points)
    a = (m[:, None] / sd[None, :]) ** 2
    b = m[:, None] / sd[None, :] ** 2
    logp = y.size * (a * np.log(b) - special.gammaln(a)) + (a - 1) * np.log(y).sum() - b * y.sum()
    logp += stats.gamma.logpdf(m, prior.shape, scale=1 / prior.rate)[:, None]
    dens = np.exp(logp - logp.max())
    # The box must hold the whole posterior (the upper sd edge is the prior's bound).
    assert max(dens[0].max(), dens[-1].max(), dens[:, 0].max()) < 1e-12
    marginal = integrate.trapezoid(dens, sd, axis=1)
    cdf = integrate.cumulative_trapezoid(marginal, m, initial=0.0)
    return m, cdf / cdf[-1]


@pytest.mark.parametrize(
    ("n", "prior_scale", "prior_cv"),
    [(8, 2.5, 0.2), (3, 1.0, 1.0), (4, 1.0, 1.0)],
    ids=["prior-sensitive", "n3-heavy-tails", "n4-heavy-tails"],
)
def test_gamma_draws_match_brute_force_integration(
    n: int, prior_scale: float, prior_cv: float
) -> None:
    # Few transactions: the posterior is curved and heavy-tailed in (log m, log s), and with a
    # tight prior away from the data it is prior-sensitive, so a wrong prior term, a wrong
    # Jacobian or a grid that cuts the tails shows in the quantiles.
    rng = np.random.default_rng(100 + n)
    y = rng.gamma(4.0, 2.5, n)
    prior = GammaPrior(prior_scale * float(y.mean()), prior_cv, 100 * float(y.std()))
    draws = gamma_draws(stats_of("A", y, n), prior, n_draws=40_000, rng=np.random.default_rng(n))
    m, cdf = gamma_reference(y, prior)
    chains = draws.reshape(4, -1)
    for q in (0.025, 0.25, 0.5, 0.75, 0.975):
        ref = float(np.interp(q, cdf, m))
        assert abs(np.quantile(draws, q) - ref) < 4 * quantile_mcse(chains, q), (q, ref)


def test_the_reference_articles_result_on_a_synthetic_analog() -> None:
    # Response times of a few dozen test runs per condition, gamma distributed; the encrypted
    # condition is slightly slower on average, but not credibly so: the HDI includes 0.
    rng = np.random.default_rng(2019)
    none = rng.gamma(16.0, 20.0 / 16.0, 40)
    tde = rng.gamma(16.0, 20.6 / 16.0, 40)
    observed = tde.mean() - none.mean()
    res = bayes_analysis(
        [stats_of("none", none, 10), stats_of("tde", tde, 10)],
        options=BayesOptions(model="gamma"),
        rope_pct=0.0,
    )
    draws = res.conditions[1].draws_ms - res.conditions[0].draws_ms
    lo, hi = hdi(draws, 0.95)
    assert lo < 0 < hi
    # A broad prior: the posterior of the difference centres on the observed difference.
    assert abs(draws.mean() - observed) < 0.25 * draws.std()
    assert res.pair("tde").rope_decision == "undecided"
    assert res.pair("tde").hdi_pct[0] < 0 < res.pair("tde").hdi_pct[1]


# --- calibration on sample-structured data --------------------------------------------------------

N_DATASETS = 240
TRUE_SHIFT = 1.04


@pytest.fixture(scope="module")
def calibration() -> list[dict[str, tuple[float, float] | str]]:
    rng = np.random.default_rng(20261122)
    rows = []
    for i in range(N_DATASETS):
        kw = dict(shape=SHAPES[i % 3], ragged=(i // 3) % 2 == 1)
        a = SampleStats.from_observations(simulate(rng, "A", **kw))
        b = SampleStats.from_observations(simulate(rng, "B", **kw))
        c = SampleStats.from_observations(simulate(rng, "C", shift=TRUE_SHIFT, **kw))
        opts = BayesOptions(draws=4000, seed=i, rope_pct=0.0)
        res = bayes_analysis([a, b, c], options=opts)
        iid = bayes_analysis([a, b], options=BayesOptions(model="lognormal", draws=4000, seed=i))
        rows.append(
            {
                "aa": res.pair("B").rope_decision,
                "shift": res.pair("C").hdi_pct,
                "iid": iid.pair("B").hdi_pct,
                "iid_warned": str(any(d.code == "iid-overconfident" for d in iid.diagnostics)),
            }
        )
    return rows


def test_hdi_covers_the_true_change_at_its_nominal_rate(calibration) -> None:
    truth = 100 * (TRUE_SHIFT - 1)
    covered = sum(r["shift"][0] <= truth <= r["shift"][1] for r in calibration)
    rate = covered / len(calibration)
    print(f"coverage of the true +{truth:.0f}%: {rate:.3f}")
    assert within_tolerance(rate, 0.95, len(calibration))


def test_a_vs_a_is_rarely_a_credible_difference(calibration) -> None:
    hits = sum(r["aa"] == "credible-difference" for r in calibration)
    rate = hits / len(calibration)
    print(f"A-vs-A credible-difference rate: {rate:.3f}")
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / len(calibration))


def test_iid_transaction_model_is_overconfident_and_says_so(calibration) -> None:
    # The same A-vs-A data under a model that counts transactions as independent: the HDI
    # misses 0 far more often than 5%, and the diagnostic warns on almost every dataset.
    misses = sum(not (r["iid"][0] <= 0 <= r["iid"][1]) for r in calibration) / len(calibration)
    warned = sum(r["iid_warned"] == "True" for r in calibration) / len(calibration)
    print(f"iid lognormal: HDI misses 0 in {misses:.3f}, warned in {warned:.3f}")
    assert misses > 0.3
    assert warned > 0.9


# --- the analysis as a whole ---------------------------------------------------------------------


def test_order_of_conditions_does_not_change_results() -> None:
    rng = np.random.default_rng(11)
    a = SampleStats.from_observations(simulate(rng, "A"))
    b = SampleStats.from_observations(simulate(rng, "B", shift=1.05))
    c = SampleStats.from_observations(simulate(rng, "C"))
    one = bayes_analysis([a, b, c], options=BayesOptions(draws=2000))
    two = bayes_analysis([a, c, b], options=BayesOptions(draws=2000))
    assert one.pair("B").hdi_pct == two.pair("B").hdi_pct
    assert one.pair("C").mean_pct == two.pair("C").mean_pct


def test_throughput_faster_means_higher() -> None:
    rng = np.random.default_rng(12)
    tps_a = rng.normal(1000, 20, 30)
    tps_b = rng.normal(1100, 20, 30)

    def per_sample(label: str, x: np.ndarray) -> SampleStats:
        return SampleStats(label, np.ones_like(x), x, x * x, np.log(x), np.log(x) ** 2)

    res = bayes_analysis([per_sample("A", tps_a), per_sample("B", tps_b)], metric="throughput")
    pair = res.pair("B")
    assert pair.p_faster > 0.99 and pair.faster_means == "higher"
    observed = 100 * (tps_b.mean() / tps_a.mean() - 1)
    assert pair.hdi_pct[0] < observed < pair.hdi_pct[1]
    with pytest.raises(AnalysisError, match="one value per sample"):
        bayes_analysis(
            [per_sample("A", tps_a), per_sample("B", tps_b)],
            metric="throughput",
            options=BayesOptions(model="gamma"),
        )


@pytest.mark.parametrize("model", ["gamma", "lognormal"])
def test_transactions_each_in_a_sample_of_their_own_are_transactions(model: str) -> None:
    """An import without --sample puts each transaction in a sample of its own: the models of
    single transactions take them, with the same posterior as one sample holding them all, and
    a note in case the values were per-sample means."""
    rng = np.random.default_rng(13)
    a, b = rng.gamma(4.0, 0.25, 40), rng.gamma(4.0, 0.3, 40)
    options = BayesOptions(model=model)
    alone = bayes_analysis([stats_of("A", a, 1), stats_of("B", b, 1)], options=options)
    pooled = bayes_analysis([stats_of("A", a, 40), stats_of("B", b, 40)], options=options)
    # The same draws: the sums differ in their last bits only (another order of addition).
    assert alone.pair("B").hdi_pct == pytest.approx(pooled.pair("B").hdi_pct, rel=1e-6)
    assert alone.pair("B").mean_pct == pytest.approx(pooled.pair("B").mean_pct, rel=1e-6)
    [note] = [d for d in alone.diagnostics if d.code == "one-value-samples"]
    assert "'A', 'B'" in note.message and "hierarchical" in note.advice
    assert not [d for d in pooled.diagnostics if d.code == "one-value-samples"]


def test_the_gamma_model_fits_without_a_warning_from_scipys_line_search() -> None:
    """Recorded sufficient statistics of a SQLite run (about 32,000 transactions of ~0.12 ms
    per condition) on which the mode search stepped past the prior's bound and SciPy printed
    "invalid value encountered in subtract" to the user's terminal twice."""
    import warnings

    recorded = {
        "n=2000": [
            [6387.0, 6550.0, 10509.0, 10093.0],
            [998.205394, 998.0320049999999, 998.5292929999999, 998.181695],
            [622.400082401668, 598.243590579203, 416.666611517895, 405.322642274467],
            [-40575.6042627198, -41672.69992221128, -73015.10726043994, -69087.56041801516],
            [332752.1082947751, 342587.44812583487, 629770.8398417648, 593577.067366261],
        ],
        "n=3000": [
            [8184.0, 7654.0, 7627.0, 7871.0],
            [999.11261, 999.25001, 998.830173, 998.78338],
            [498.220770494934, 566.757181327164, 562.785630147375, 524.938446195178],
            [-56768.03496531466, -52794.31094414733, -52480.81935075202, -54189.10494258001],
            [497917.14684071974, 460467.2784323007, 458803.38394410285, 474506.5782214826],
        ],
    }
    groups = [SampleStats(c, *(np.asarray(a) for a in arrays)) for c, arrays in recorded.items()]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = bayes_analysis(groups, options=BayesOptions(model="gamma"))
    # The posterior means sit at the data's means (32,000 transactions: the prior is nothing).
    for c, arrays in recorded.items():
        mean = sum(arrays[1]) / sum(arrays[0])
        [posterior] = [b for b in result.conditions if b.name == c]
        assert posterior.mean_ms == pytest.approx(mean, rel=0.01)


def test_student_t_model_agrees_with_the_hierarchical_model() -> None:
    rng = np.random.default_rng(13)
    a = SampleStats.from_observations(simulate(rng, "A", n_samples=30))
    b = SampleStats.from_observations(simulate(rng, "B", n_samples=30, shift=1.1))
    t = bayes_analysis(
        [a, b], options=BayesOptions(model="student-t", nuts_warmup=500, nuts_draws=1000)
    )
    h = bayes_analysis([a, b])
    pt, ph = t.pair("B"), h.pair("B")
    assert pt.rhat_max is not None and pt.rhat_max < 1.01
    assert pt.ess_min is not None and pt.ess_min > 400
    assert pt.mean_pct == pytest.approx(ph.mean_pct, abs=1.0)
    width_t = pt.hdi_pct[1] - pt.hdi_pct[0]
    width_h = ph.hdi_pct[1] - ph.hdi_pct[0]
    assert width_t == pytest.approx(width_h, rel=0.25), (pt.hdi_pct, ph.hdi_pct)
    assert not [d for d in t.diagnostics if d.code == "mcmc-convergence"]
    # Far too few draws: the ESS falls below 400 and the analysis says so, with advice.
    short = bayes_analysis(
        [a, b], options=BayesOptions(model="student-t", nuts_warmup=30, nuts_draws=40)
    )
    (warning,) = [d for d in short.diagnostics if d.code == "mcmc-convergence"]
    assert "more draws" in warning.advice


def test_non_finite_draws_or_diagnostics_count_as_not_converged() -> None:
    rng = np.random.default_rng(14)
    good = rng.standard_normal((4, 1000))
    broken = good.copy()
    broken[2, 10] = np.nan
    for chains in ([good, broken], [broken, good]):
        rhat, ess = _convergence(chains)
        assert rhat == math.inf and ess == 0.0
    # Chains that disagree: a finite but large R-hat, whatever the order.
    stuck = good + np.arange(4)[:, None]
    assert _convergence([good, stuck])[0] == _convergence([stuck, good])[0] > 1.01


def test_factorial_effects_recover_known_main_effects_and_interaction() -> None:
    rng = np.random.default_rng(15)
    # log mean = 0.10 * [B] + 0.20 * [C] + 0.05 * [B and C]
    groups = []
    for lb in ("a1", "a2"):
        for lc in ("c1", "c2"):
            shift = math.exp(0.10 * (lb == "a2") + 0.20 * (lc == "c2") + 0.05 * (lb + lc == "a2c2"))
            obs = simulate(rng, f"{lb}/{lc}", n_samples=30, shift=shift, between_sd=0.02)
            groups.append(SampleStats.from_observations(obs, {"A": lb, "C": lc}))
    res = bayes_analysis(groups, options=BayesOptions(draws=8000))
    terms = {e.term: e for e in res.effects}
    expected = {
        "A: a2 vs a1": 100 * math.expm1(0.10 + 0.05 / 2),
        "C: c2 vs c1": 100 * math.expm1(0.20 + 0.05 / 2),
        "A × C: (a2 vs a1) × (c2 vs c1)": 100 * math.expm1(0.05),
    }
    assert set(terms) == set(expected)
    for term, truth in expected.items():
        lo, hi = terms[term].hdi_pct
        assert lo <= truth <= hi, (term, truth, lo, hi)
    assert terms["C: c2 vs c1"].hdi_pct[0] > terms["A: a2 vs a1"].hdi_pct[1] - 5


def test_incomplete_factorial_gets_a_diagnostic_not_effects() -> None:
    rng = np.random.default_rng(16)
    groups = [
        SampleStats.from_observations(simulate(rng, name), levels)
        for name, levels in (
            ("x", {"A": "1", "B": "1"}),
            ("y", {"A": "2", "B": "1"}),
            ("z", {"A": "1", "B": "2"}),
        )
    ]
    res = bayes_analysis(groups, options=BayesOptions(draws=2000))
    assert res.effects == ()
    assert [d.code for d in res.diagnostics] == ["not-factorial"]


def test_bad_options_name_the_fix() -> None:
    with pytest.raises(AnalysisError, match="hierarchical"):
        BayesOptions(model="bayesian")  # type: ignore[arg-type]
    with pytest.raises(AnalysisError, match=r"0\.95"):
        BayesOptions(hdi_prob=1.5)
    rng = np.random.default_rng(17)
    one = SampleStats.from_observations(simulate(rng, "A", n_samples=1))
    two = SampleStats.from_observations(simulate(rng, "B", n_samples=1))
    with pytest.raises(AnalysisError, match="at least 2"):
        bayes_analysis([one, two])


def test_change_agrees_with_the_frequentist_sample_level_estimate() -> None:
    # compare() reports mean(sample means B) / mean(sample means A) - 1; the hierarchical model
    # exp(mu_B - mu_A) - 1 with mu the centre of the log sample means. With sample means that
    # vary by a few percent the two differ by about (sd_B^2 - sd_A^2) / 2: a hundredth of a %.
    from wannabet.analysis import compare

    rng = np.random.default_rng(18)
    for shift in (1.0, 1.03, 1.2):
        a = simulate(rng, "A", n_samples=30)
        b = simulate(rng, "B", n_samples=30, shift=shift)
        freq = compare([a, b], n_boot=200).comparisons[0].delta
        assert freq is not None
        pair = bayes_analysis(
            [SampleStats.from_observations(a), SampleStats.from_observations(b)]
        ).pair("B")
        assert pair.mean_pct == pytest.approx(freq.estimate, abs=0.25)
        width_f, width_b = freq.high - freq.low, pair.hdi_pct[1] - pair.hdi_pct[0]
        assert width_b == pytest.approx(width_f, rel=0.3)


def test_zero_latencies_leave_only_the_sample_level_models() -> None:
    rng = np.random.default_rng(19)
    y = rng.gamma(4.0, 1.0, 400)
    y[::50] = 0.0  # a coarse timer rounds some transactions to 0 ms
    a = stats_of("A", y, 40)
    b = stats_of("B", rng.gamma(4.0, 1.0, 400), 40)
    assert not a.positive
    for model in ("gamma", "lognormal"):
        with pytest.raises(AnalysisError, match="hierarchical"):
            bayes_analysis([a, b], options=BayesOptions(model=model))
    pair = bayes_analysis([a, b]).pair("B")
    assert pair.hdi_pct[0] < pair.mean_pct < pair.hdi_pct[1]


def test_a_vs_b_does_not_depend_on_the_other_conditions() -> None:
    # Few samples: the prior bound of tau matters. It must come from each condition's own
    # data, so adding a wildly varying third condition changes nothing about A against B.
    rng = np.random.default_rng(20)
    a = SampleStats.from_observations(simulate(rng, "A", n_samples=3))
    b = SampleStats.from_observations(simulate(rng, "B", n_samples=3, shift=1.05))
    wild = SampleStats.from_observations(simulate(rng, "W", n_samples=3, between_sd=0.8))
    opts = BayesOptions(draws=4000)
    alone = bayes_analysis([a, b], options=opts).pair("B")
    crowded = bayes_analysis([a, b, wild], options=opts).pair("B")
    assert alone.hdi_pct == crowded.hdi_pct
    assert alone.mean_pct == crowded.mean_pct


def test_three_factor_design_reports_every_interaction_order() -> None:
    rng = np.random.default_rng(0)
    # log mean = 0.10 [a2] + 0.20 [c2] + 0.05 [e2] + 0.08 [a2 and c2 and e2]
    groups, cell_logm = [], {}
    for la in ("a1", "a2"):
        for lc in ("c1", "c2"):
            for le in ("e1", "e2"):
                on = (la == "a2", lc == "c2", le == "e2")
                log_shift = 0.10 * on[0] + 0.20 * on[1] + 0.05 * on[2] + 0.08 * all(on)
                obs = simulate(
                    rng, f"{la}/{lc}/{le}", n_samples=20, shift=math.exp(log_shift),
                    between_sd=0.02,
                )  # fmt: skip
                s = SampleStats.from_observations(obs, {"A": la, "C": lc, "E": le})
                groups.append(s)
                cell_logm[on] = float(sample_level_values(s)[0].mean())
    res = bayes_analysis(groups, options=BayesOptions(draws=8000))
    terms = {e.term: e for e in res.effects}

    def contrast(factors: tuple[int, ...]) -> float:
        # Alternating sum over the corners of the chosen factors, averaged over the others.
        total = 0.0
        for on, value in cell_logm.items():
            sign = math.prod(1 if on[i] else -1 for i in factors)
            total += sign * value / 2 ** (3 - len(factors))
        return total

    names = ("A", "C", "E")
    levels = ("(a2 vs a1)", "(c2 vs c1)", "(e2 vs e1)")
    expected = {
        "A: a2 vs a1": ((0,), 0.12),
        "C: c2 vs c1": ((1,), 0.22),
        "E: e2 vs e1": ((2,), 0.07),
    }
    for pair in ((0, 1), (0, 2), (1, 2), (0, 1, 2)):
        term = " × ".join(names[i] for i in pair) + ": " + " × ".join(levels[i] for i in pair)
        expected[term] = (pair, 0.08 if len(pair) == 3 else 0.04)
    assert set(terms) == set(expected)
    for term, (factors, truth) in expected.items():
        effect = terms[term]
        # Centre: the same contrast of the observed cell means (flat prior), up to MC error.
        log_draws = np.log1p(effect.draws_pct / 100)
        se = float(log_draws.std()) / math.sqrt(log_draws.size)
        assert abs(float(log_draws.mean()) - contrast(factors)) < 4 * se, term
        # The simulated truth (the three-way term carries the 0.08; a two-factor interaction
        # averages it over the third factor, so 0.04; main effects 0.02 on top of their own).
        lo, hi = effect.hdi_pct
        assert lo <= 100 * math.expm1(truth) <= hi, (term, truth, lo, hi)


def test_exact_models_need_nothing_of_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("jax", "numpyro", "arviz_stats") else real(name, *a),
    )
    for model in ("hierarchical", "gamma", "lognormal"):
        require_extra(model)
    with pytest.raises(
        MissingExtra, match=r"missing: arviz_stats, jax, numpyro.*wannabet\[bayes\]"
    ):
        require_extra("student-t")


@pytest.mark.parametrize("model", ["hierarchical", "gamma", "lognormal"])
def test_exact_draws_are_independent(model: str) -> None:
    # Why the exact models report no R-hat or ESS: their draws are independent by construction.
    # Checked here once, with ArviZ-stats, instead of in every run: split into 4 chains, the
    # change and both means have R-hat ~ 1 and an ESS near the number of draws.
    arviz = require_module("arviz_stats.base", "bayes").array_stats
    rng = np.random.default_rng(21)
    a = SampleStats.from_observations(simulate(rng, "A", n_samples=20))
    b = SampleStats.from_observations(simulate(rng, "B", n_samples=20, shift=1.05))
    result = bayes_analysis([a, b], options=BayesOptions(model=model))
    pair = result.pair("B")
    assert pair.rhat_max is None and pair.ess_min is None
    for draws in (pair.draws_pct, result.conditions[0].draws_ms, result.conditions[1].draws_ms):
        chains = np.asarray(draws, dtype=np.float64).ravel()
        chains = chains[: chains.size - chains.size % 4].reshape(4, -1)
        assert float(arviz.rhat(chains, chain_axis=0, draw_axis=1)) < 1.005
        ess = float(arviz.ess(chains, chain_axis=0, draw_axis=1, method="bulk"))
        assert ess > 0.8 * chains.size, (model, ess, chains.size)


def test_gamma_mode_on_a_million_transactions() -> None:
    # A million log-normal transactions, as sufficient statistics. On these data SciPy's BFGS
    # ends with "precision loss" (success False: the objective is of order 1e6) while its mode
    # is right; the mode is accepted on its gradient, and the posterior sits on the sample
    # mean with the iid standard error.
    rng = np.random.default_rng(1)
    y = rng.lognormal(1.0, 0.5, 1_000_000)
    s = stats_of("A", y, 100_000)
    prior = GammaPrior(float(y.mean()), 1.0, 100 * float(y.std()))
    draws = gamma_draws(s, prior, n_draws=20_000, rng=np.random.default_rng(24))
    se = float(y.std()) / 1000
    assert abs(draws.mean() - y.mean()) < 0.5 * se
    assert draws.std() == pytest.approx(se, rel=0.1)


def test_student_t_reports_divergent_transitions() -> None:
    from wannabet.analysis.bayes_nuts import student_t_nuts

    # Three samples per condition and a short warm-up: NUTS diverges on the funnel of the
    # scale; the analysis must say how often, with advice, as NumPyro counted it.
    rng = np.random.default_rng(13)
    a = SampleStats.from_observations(simulate(rng, "A", n_samples=3))
    b = SampleStats.from_observations(simulate(rng, "B", n_samples=3, shift=1.1))
    logm = [sample_level_values(s)[0] for s in (a, b)]
    # The compiled program is kept in wannabet's cache (the session's, see conftest.py) and
    # serves other data of the same shape: the calls below compile nothing new.
    other = [values + 0.25 for values in logm]
    student_t_nuts(other, warmup=30, draws=40, seed=1)
    programs = sorted(p.name for p in (cache_dir() / "jax").iterdir())
    assert programs
    _, _, divergent = student_t_nuts(logm, warmup=30, draws=40, seed=0)
    assert divergent > 0
    res = bayes_analysis(
        [a, b], options=BayesOptions(model="student-t", nuts_warmup=30, nuts_draws=40)
    )
    (warning,) = [d for d in res.diagnostics if d.code == "mcmc-divergences"]
    assert warning.message.startswith(f"{divergent} of 160 NUTS transitions")
    assert "hierarchical" in warning.advice
    assert sorted(p.name for p in (cache_dir() / "jax").iterdir()) == programs
