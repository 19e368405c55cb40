"""Statistical analysis of performance experiments: pure functions over arrays.

The layer depends only on NumPy and SciPy, does no I/O and draws nothing. Functions take arrays
(or :class:`Observations`) and return frozen result objects; :func:`compare` is the entry point
that turns the measurements of several conditions into verdicts. ``docs/statistics.md``
explains every method and the JSON contract of :meth:`Comparison.to_dict`.

Modules
-------
observations   the input type and :class:`AnalysisError`
descriptive    mean, SD, median, MAD, percentiles, CVs, skewness, normality test
clt            confidence and prediction intervals, "wanna bet" ranges
dependence     autocorrelation, effective sample size, batch means, cluster-robust means
tests          Welch t, Mann-Whitney U, Kruskal-Wallis, ANOVA, Welch ANOVA, Holm
effects        bootstrap intervals of % change, Hodges-Lehmann, Cliff's delta
consistency    deviation from the median, breakdowns, outliers, warm-up, multimodality
diagnostics    typed warnings with advice
compare        the orchestration producing the verdict
profiles       which frames of CPU profiles grew or shrank, judged per sample (Welch + Holm)
bayes          posterior of the change, HDI, ROPE decision, factorial effects (exact draws;
               the student-t model runs NumPyro, imported only when used)

Every name is loaded from its module on first access (module ``__getattr__``): a command that
needs one submodule does not pay for importing the others (SciPy's statistics, the Bayesian
modules).
"""

import sys
import types
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bayes import (
        BayesAnalysis,
        BayesCondition,
        BayesEffect,
        BayesOptions,
        BayesPair,
        GammaPrior,
        SampleStats,
        bayes_analysis,
        hdi,
        rope_decision,
    )
    from .clt import (
        CLTSummary,
        Interval,
        WithinRange,
        bet_sentence,
        clt_summary,
        mean_interval,
        prediction_interval,
        sd_range,
        share_within,
    )
    from .compare import (
        Comparison,
        ConditionSummary,
        Level,
        Metric,
        PairwiseComparison,
        Verdict,
        compare,
        verdict,
    )
    from .consistency import (
        Consistency,
        GroupConsistency,
        LevelConsistency,
        Multimodality,
        Outliers,
        WarmUp,
        breakdown,
        consistency,
        detect_warmup,
        deviation_from_median,
        modified_z_scores,
        multimodality,
        share_beyond,
    )
    from .dependence import (
        ClusterMean,
        Groups,
        autocorrelation,
        batch_means,
        cluster_mean,
        effective_sample_size,
        group_codes,
        lag1_autocorrelation,
    )
    from .descriptive import Descriptive, Normality, describe, normality, skewness
    from .diagnostics import Diagnostic, environment_diagnostic, environment_differences
    from .effects import (
        Clustered,
        RelativeChange,
        bootstrap_relative_change,
        cliffs_delta,
        cluster_bootstrap_relative_change,
        hodges_lehmann,
        relative_change_pct,
    )
    from .observations import AnalysisError, Moments, Observations
    from .tests import (
        TestResult,
        cluster_welch_anova,
        cluster_welch_t,
        holm,
        kruskal_wallis,
        mann_whitney,
        min_mann_whitney_p,
        one_way_anova,
        two_sample_test,
        u_null_distribution,
        welch_anova,
        welch_t,
    )

__all__ = [
    "AnalysisError",
    "BayesAnalysis",
    "BayesCondition",
    "BayesEffect",
    "BayesOptions",
    "BayesPair",
    "CLTSummary",
    "ClusterMean",
    "Clustered",
    "Comparison",
    "ConditionSummary",
    "Consistency",
    "Descriptive",
    "Diagnostic",
    "GammaPrior",
    "GroupConsistency",
    "Groups",
    "Interval",
    "Level",
    "LevelConsistency",
    "Metric",
    "Moments",
    "Multimodality",
    "Normality",
    "Observations",
    "Outliers",
    "PairwiseComparison",
    "RelativeChange",
    "SampleStats",
    "TestResult",
    "Verdict",
    "WarmUp",
    "WithinRange",
    "autocorrelation",
    "batch_means",
    "bayes_analysis",
    "bet_sentence",
    "bootstrap_relative_change",
    "breakdown",
    "cliffs_delta",
    "clt_summary",
    "cluster_bootstrap_relative_change",
    "cluster_mean",
    "cluster_welch_anova",
    "cluster_welch_t",
    "compare",
    "consistency",
    "describe",
    "detect_warmup",
    "deviation_from_median",
    "effective_sample_size",
    "environment_diagnostic",
    "environment_differences",
    "group_codes",
    "hdi",
    "hodges_lehmann",
    "holm",
    "kruskal_wallis",
    "lag1_autocorrelation",
    "mann_whitney",
    "mean_interval",
    "min_mann_whitney_p",
    "modified_z_scores",
    "multimodality",
    "normality",
    "one_way_anova",
    "prediction_interval",
    "relative_change_pct",
    "rope_decision",
    "sd_range",
    "share_beyond",
    "share_within",
    "skewness",
    "two_sample_test",
    "u_null_distribution",
    "verdict",
    "welch_anova",
    "welch_t",
]

#: where each exported name lives; a name is imported from its module on first access, so
#: importing one submodule (``analysis.histogram``, say) does not import SciPy's statistics
_WHERE = {
    "AnalysisError": "observations",
    "BayesAnalysis": "bayes",
    "BayesCondition": "bayes",
    "BayesEffect": "bayes",
    "BayesOptions": "bayes",
    "BayesPair": "bayes",
    "CLTSummary": "clt",
    "ClusterMean": "dependence",
    "Clustered": "effects",
    "Comparison": "compare",
    "ConditionSummary": "compare",
    "Consistency": "consistency",
    "Descriptive": "descriptive",
    "Diagnostic": "diagnostics",
    "GammaPrior": "bayes",
    "GroupConsistency": "consistency",
    "Groups": "dependence",
    "Interval": "clt",
    "Level": "compare",
    "LevelConsistency": "consistency",
    "Metric": "compare",
    "Moments": "observations",
    "Multimodality": "consistency",
    "Normality": "descriptive",
    "Observations": "observations",
    "Outliers": "consistency",
    "PairwiseComparison": "compare",
    "RelativeChange": "effects",
    "SampleStats": "bayes",
    "TestResult": "tests",
    "Verdict": "compare",
    "WarmUp": "consistency",
    "WithinRange": "clt",
    "autocorrelation": "dependence",
    "batch_means": "dependence",
    "bayes_analysis": "bayes",
    "bet_sentence": "clt",
    "bootstrap_relative_change": "effects",
    "breakdown": "consistency",
    "cliffs_delta": "effects",
    "clt_summary": "clt",
    "cluster_bootstrap_relative_change": "effects",
    "cluster_mean": "dependence",
    "cluster_welch_anova": "tests",
    "cluster_welch_t": "tests",
    "compare": "compare",
    "consistency": "consistency",
    "describe": "descriptive",
    "detect_warmup": "consistency",
    "deviation_from_median": "consistency",
    "effective_sample_size": "dependence",
    "environment_diagnostic": "diagnostics",
    "environment_differences": "diagnostics",
    "group_codes": "dependence",
    "hdi": "bayes",
    "hodges_lehmann": "effects",
    "holm": "tests",
    "kruskal_wallis": "tests",
    "lag1_autocorrelation": "dependence",
    "mann_whitney": "tests",
    "mean_interval": "clt",
    "min_mann_whitney_p": "tests",
    "modified_z_scores": "consistency",
    "multimodality": "consistency",
    "normality": "descriptive",
    "one_way_anova": "tests",
    "prediction_interval": "clt",
    "relative_change_pct": "effects",
    "rope_decision": "bayes",
    "sd_range": "clt",
    "share_beyond": "consistency",
    "share_within": "clt",
    "skewness": "descriptive",
    "two_sample_test": "tests",
    "u_null_distribution": "tests",
    "verdict": "compare",
    "welch_anova": "tests",
    "welch_t": "tests",
}


#: exported functions that share their name with their submodule (``compare.compare``)
_SHADOWED = frozenset(n for n, m in _WHERE.items() if n == m)


class _Package(types.ModuleType):
    """This package, keeping ``analysis.compare`` and ``analysis.consistency`` the functions:
    importing a submodule binds it on its package under its name, which would replace the
    function of the same name once anything imported ``wannabet.analysis.compare``. The
    submodules stay in ``sys.modules``, where ``from .compare import X`` finds them."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
