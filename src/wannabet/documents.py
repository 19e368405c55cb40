"""The comparison document: the JSON contract of ``wannabet compare`` as types.

:meth:`wannabet.analysis.Comparison.to_dict` builds it and :func:`wannabet.verdicts.compare_runs`
adds the ``run`` entry; every renderer reads it through these TypedDicts, so a key the
renderers rely on is checked by mypy against this one description (``docs/statistics.md``
documents it for readers; ``tests/test_verdicts.py`` checks that a real document has exactly
these keys).

Numbers that could not be computed (an interval from one value, a p-value of a test that did
not run) are ``None``: JSON has no NaN.
"""

# No ``from __future__ import annotations`` here: TypedDict reads NotRequired from the
# evaluated annotations, and a string would make every key required at run time.
from typing import Any, NotRequired, TypedDict

#: ``[low, high]``; both None when there was one value (no interval, not a zero-width one)
Pair = list[float | None]
#: a run as ``RunInfo.to_dict()`` describes it, without its settings and environment
RunDocument = dict[str, Any]


class DiagnosticDocument(TypedDict):
    code: str
    message: str
    advice: str


class NormalityDocument(TypedDict):
    test: str
    p: float | None


class WithinDocument(TypedDict):
    count: int
    n: int


class CltDocument(TypedDict):
    mean_ci95: Pair | None
    ci_method: str
    prediction90: Pair | None
    prediction95: Pair | None
    sd_range_1645: Pair | None
    sd_range_2: Pair | None
    within_sd_range_2: WithinDocument
    bet: str


class ConditionDocument(TypedDict):
    """One condition's summary (``conditions[]``)."""

    condition: str
    n: int
    n_samples: int
    n_transactions: int
    mean: float | None
    sd: float | None
    median: float | None
    mad: float | None
    p5: float | None
    p25: float | None
    p50: float | None
    p75: float | None
    p95: float | None
    p99: float | None
    min: float | None
    max: float | None
    cv: float | None
    robust_cv: float | None
    skewness: float | None
    normality: NormalityDocument
    clt: CltDocument
    autocorrelation_lag1: float | None
    ess: float | None
    #: run-order, per-session and per-period consistency (``Consistency.to_dict``)
    consistency: dict[str, Any]
    diagnostics: list[DiagnosticDocument]
    #: only with ``--txn``/``--stat``: the statistic of all the condition's transactions (ms, or
    #: TPS), where the other figures describe one value per sample
    stat_value: NotRequired[float | None]


class HodgesLehmannDocument(TypedDict):
    shift: float | None
    ci: Pair | None


class BayesPairDocument(TypedDict):
    """The ``bayes`` entry of one comparison."""

    model: str
    hdi_pct: Pair
    mean_pct: float | None
    p_faster: float | None
    rope_decision: str
    rhat_max: float | None
    ess_min: float | None
    hdi_prob: float
    rope_pct: float
    faster_means: str


class PairDocument(TypedDict):
    """One condition against the baseline (``comparisons[]``)."""

    condition: str
    baseline: str
    test: str
    p_value: float | None
    p_adjusted: float | None
    delta_pct: float | None
    ci_pct: Pair | None
    median_delta_pct: float | None
    median_ci_pct: Pair | None
    hodges_lehmann: HodgesLehmannDocument | None
    cliffs_delta: float | None
    verdict: str
    note: str
    summary: str
    #: only when the Bayesian analysis was asked for; None for a pair it did not cover
    bayes: NotRequired[BayesPairDocument | None]
    #: with ``bayes``: the sentence that replaces a bet when the two analyses disagree
    disagreement: NotRequired[str | None]
    #: on a run that stopped when decided: the fixed-sample verdict, which assumed a sample
    #: size fixed in advance (``verdict`` is then the anytime-valid sequence's)
    fixed_verdict: NotRequired[str]


class OmnibusDocument(TypedDict):
    test: str
    p: float | None


class ExcludedDocument(TypedDict):
    condition: str
    reason: str


class BayesConditionDocument(TypedDict):
    condition: str
    mean: float | None
    hdi: Pair


class BayesEffectDocument(TypedDict):
    term: str
    mean_pct: float | None
    hdi_pct: Pair


class BayesDocument(TypedDict):
    """The top-level ``bayes`` block."""

    model: str
    hdi_prob: float
    rope_pct: float
    conditions: list[BayesConditionDocument]
    effects: list[BayesEffectDocument]
    diagnostics: list[DiagnosticDocument]


class SequentialPairDocument(TypedDict):
    """One comparison's anytime-valid confidence sequence (``sequential.comparisons[]``)."""

    condition: str
    baseline: str
    blocks: int
    change_pct: float | None
    #: the interval of the change in %; None while the sequence excludes nothing yet
    low_pct: float | None
    high_pct: float | None
    state: str
    #: the level of this sequence: alpha over the comparisons (Bonferroni)
    alpha: float


class SequentialDocument(TypedDict):
    """How a run that stops when decided stopped, and its sequences at the end."""

    #: "decided", "max_samples", or "not finished" (interrupted or failed before its end)
    stopped: str
    blocks: int
    max_samples: int
    alpha: float
    rope_pct: float
    statistic: str
    #: the sentence that says how to read this run's fixed-sample figures
    note: str
    comparisons: list[SequentialPairDocument]


class ComparisonDocument(TypedDict):
    """The whole document ``wannabet compare --format json`` prints."""

    #: one run, or a list when several runs are compared together; None before it is set
    run: RunDocument | list[RunDocument] | None
    metric: str
    level: str
    unit: str
    alpha: float
    rope_pct: float
    conditions: list[ConditionDocument]
    omnibus: OmnibusDocument | None
    comparisons: list[PairDocument]
    excluded: list[ExcludedDocument]
    bayes: NotRequired[BayesDocument]
    #: only with ``--txn``/``--stat``: the transaction type judged (None: all types together)
    txn: NotRequired[str | None]
    #: only with ``--txn``/``--stat``: the statistic judged (mean, median, p90, ..., tps)
    stat: NotRequired[str]
    #: without ``--txn``/``--stat``, on one run of several transaction types, latency: each
    #: type's own comparison of its mean (the document ``--txn NAME --stat mean`` prints)
    types: NotRequired[list["ComparisonDocument"]]
    #: only with ``--pairs all|successive|within=FACTOR``: which pairs were compared (each pair's
    #: ``baseline`` is its reference); absent: each condition against the baseline
    pairs: NotRequired[str]
    #: only for a run that stopped when decided (``until_decided``): its sequences and how it
    #: stopped; each pair's ``verdict`` is then the sequence's, the fixed-sample one is kept
    #: as ``fixed_verdict``
    sequential: NotRequired[SequentialDocument]
    #: only for one run with open-loop conditions: per condition the rate asked for and
    #: reached, the schedule lag, and whether the rate was missed
    open_loop: NotRequired[list[dict[str, Any]]]
    #: only when a compared run has degraded samples: each one (run, sample number,
    #: condition, reason) and whether the analysis included it (``--include-degraded``)
    degraded: NotRequired[list[dict[str, Any]]]
