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
bayes          posterior of the change, HDI, ROPE decision, factorial effects (exact draws;
               the student-t model runs NumPyro, imported only when used)

The Bayesian names are loaded on first access (module ``__getattr__``): commands that never
estimate a posterior do not pay for importing the Bayesian modules.
"""

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

_LAZY = frozenset(
    {
        "BayesAnalysis",
        "BayesCondition",
        "BayesEffect",
        "BayesOptions",
        "BayesPair",
        "GammaPrior",
        "SampleStats",
        "bayes_analysis",
        "hdi",
        "rope_decision",
    }
)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import bayes

        return getattr(bayes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
