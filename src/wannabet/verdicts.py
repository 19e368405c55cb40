"""``wannabet compare`` as a library call: stored runs in, the JSON contract out.

One run compares its own conditions. Several runs compare all their conditions together, each
labelled ``RUN:condition``, and the environments the runs were recorded in are compared too:
a different host, server version or setting is often the real explanation of a difference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from wannabet.analysis import Comparison, Observations, compare
from wannabet.analysis.bayes import BayesOptions, bayes_analysis, require_extra
from wannabet.analysis.compare import PAIRS, Pairs, check_pairs
from wannabet.analysis.mix import explain_bimodality, mix_modality
from wannabet.analysis.sequential import sequential_comparisons
from wannabet.analysis.statistic import STATS, compare_statistic, sample_values
from wannabet.analysis.unit_of_work import IO_STAT_PREFIX, WORK_STATS, is_work_stat
from wannabet.datasets import (
    block_means,
    load_condition_samples,
    load_observations,
    load_type_histograms,
    open_loop,
    transaction_type_id,
    transaction_type_names,
)
from wannabet.documents import ComparisonDocument, RunDocument, SequentialPairDocument
from wannabet.errors import AnalysisError, SpecError, WannabetError
from wannabet.model import DEFAULT_ALPHA, DEFAULT_ROPE_PCT
from wannabet.spec import parse_bayes_settings
from wannabet.store import RunInfo, Store
from wannabet.sufficient import load_sample_stats

Metric = Literal["latency", "throughput"]
#: ``auto``: latency, unless every run holds only aggregates (then throughput)
MetricChoice = Literal["auto", "latency", "throughput"]


@dataclass(frozen=True, slots=True)
class ComparisonOptions:
    """How runs are compared: the options ``compare``, ``report`` and ``summary`` share.

    ``metric="auto"`` compares latency when the runs hold per-transaction latencies and
    throughput when they hold only aggregates (Swingbench, sysbench, aggregated pgbench logs).
    """

    baseline: str | None = None
    metric: MetricChoice = "auto"
    level: Literal["sample", "transaction"] = "sample"
    alpha: float = DEFAULT_ALPHA
    rope_pct: float = DEFAULT_ROPE_PCT
    seed: int = 0
    include_warmup: bool = False
    bayes: BayesOptions | None = None  # adds the Bayesian analysis (needs the bayes extra)
    #: transaction types to judge, each on its own (``--txn``); empty: all types together
    txn: tuple[str, ...] = ()
    #: the statistic judged (``--stat``); None: the mean of all types, as before the option
    stat: str | None = None
    #: which pairs of conditions are compared (``--pairs``)
    pairs: Pairs = "baseline"

    @property
    def by_statistic(self) -> bool:
        """Whether ``--txn`` or ``--stat`` asked for the per-type, per-statistic comparison."""
        return bool(self.txn) or self.stat is not None


def comparison_options(
    store: Store,
    run_ids: Sequence[int] = (),
    *,
    baseline: str | None = None,
    metric: MetricChoice = "auto",
    level: Literal["sample", "transaction"] = "sample",
    alpha: float | None = None,
    rope: str | None = None,
    seed: int = 0,
    include_warmup: bool = False,
    bayes: bool = False,
    bayes_model: str | None = None,
    hdi_prob: float | None = None,
    prior_cv: float | None = None,
    prior_mean: float | None = None,
    prior_sd_max: float | None = None,
    txn: Sequence[str] = (),
    stat: str | None = None,
    pairs: str = "baseline",
) -> ComparisonOptions:
    """The options of a comparison as the command line gives them, merged and checked.

    ``rope`` is a percentage as written (``"2%"``, ``"0.5"``). Not given, ``alpha`` and
    ``rope`` are those a run that stopped when decided stopped by (its file's ``[sampling]``),
    so that its verdicts are the ones it stopped on; else :data:`~wannabet.model.DEFAULT_ALPHA`
    and :data:`~wannabet.model.DEFAULT_ROPE_PCT`. With ``bayes``, the Bayesian
    options are :func:`bayes_options`: the experiment file's ``[bayes]`` table of the (first)
    run, overridden by the arguments given. ``txn`` (transaction type names, each judged on
    its own) and ``stat`` (one of ``mean, median, p90, p95, p99, p99.9, tps``) choose the
    per-type, per-statistic comparison; ``stat`` decides the metric then (``tps`` is
    throughput, the others latency).
    """
    if stat is not None and stat not in STATS and not is_work_stat(stat):
        raise SpecError(
            f"{stat!r} is not a statistic; use one of {', '.join(STATS + WORK_STATS)} or"
            " io:COUNTER (an I/O counter of summary's unit of work, e.g. io:blks_read)",
            key="--stat",
            file="command line",
        )
    if stat is not None and is_work_stat(stat) and level == "transaction":
        raise SpecError(
            f"--stat {stat} is a figure per sample (the server's time over the sample's commits),"
            " with no value per transaction; drop --level transaction",
            key="--level",
            file="command line",
        )
    check_pairs_option(pairs)
    if bayes and pairs != "baseline":
        raise SpecError(
            "the Bayesian analysis compares each condition with the baseline; drop --bayes, or"
            " --pairs",
            key="--bayes",
            file="command line",
        )
    if bayes and (txn or stat not in (None, "mean")):
        raise SpecError(
            "the Bayesian analysis judges the mean of all transaction types; drop --bayes, or"
            " --txn and --stat",
            key="--bayes",
            file="command line",
        )
    rule = _stopping_rule(store, run_ids)
    alpha = resolve_alpha(store, run_ids, alpha)
    rope_pct = (
        float(rule.get("rope_pct", DEFAULT_ROPE_PCT))
        if rope is None
        else parse_percent(rope, "--rope")
    )
    if stat is not None:
        # The per-statistic comparison takes its metric from the statistic (result too).
        metric = "throughput" if stat == "tps" else "latency"
    bayes_settings = None
    if bayes:
        bayes_settings = bayes_options(
            store,
            run_ids,
            model=bayes_model,
            hdi_prob=hdi_prob,
            prior_cv=prior_cv,
            prior_mean=prior_mean,
            prior_sd_max=prior_sd_max,
            seed=seed,
        )
    return ComparisonOptions(
        baseline=baseline,
        metric=metric,
        level=level,
        alpha=alpha,
        rope_pct=rope_pct,
        seed=seed,
        include_warmup=include_warmup,
        bayes=bayes_settings,
        txn=tuple(dict.fromkeys(txn)),
        stat=stat,
        pairs=pairs,
    )


def resolve_alpha(store: Store, run_ids: Sequence[int], alpha: float | None) -> float:
    """``alpha`` as given, else the one a single run that stopped when decided stopped by (its
    file's ``[sampling] alpha``), else :data:`DEFAULT_ALPHA`: every verdict of a run (latency,
    profiles) at the level it was decided at."""
    if alpha is not None:
        return alpha
    return float(_stopping_rule(store, run_ids).get("alpha", DEFAULT_ALPHA))


#: compare's options that do not apply to ``compare --profile`` (it judges the profiles' frames
#: over the samples), in the order they are named: each one's flag and the values that mean
#: "not given" (the library's defaults and the command line's)
_NOT_FOR_PROFILES: dict[str, tuple[str, tuple[Any, ...]]] = {
    "metric": ("--metric", (None, "auto", "latency")),
    "level": ("--level", (None, "sample")),
    "rope": ("--rope", (None,)),
    "seed": ("--seed", (None, 0)),
    "include_warmup": ("--include-warmup", (None, False)),
    "bayes": ("--bayes", (None, False)),
    "bayes_model": ("--bayes-model", (None,)),
    "hdi_prob": ("--hdi", (None,)),
    "prior_cv": ("--prior-cv", (None,)),
    "prior_mean": ("--prior-mean", (None,)),
    "prior_sd_max": ("--prior-sd-max", (None,)),
    "txn": ("--txn", (None, (), [])),
    "stat": ("--stat", (None,)),
}


def check_profile_options(**options: Any) -> None:
    """Refuse the options of the latency comparison given to the profile comparison, which
    would silently ignore them (SpecError naming every one); TypeError for a name that is not
    one of compare's options."""
    unknown = sorted(set(options) - set(_NOT_FOR_PROFILES))
    if unknown:
        raise TypeError(f"unexpected option {unknown[0]!r} of the profile comparison")
    ignored = [
        flag
        for key, (flag, not_given) in _NOT_FOR_PROFILES.items()
        if key in options and options[key] not in not_given
    ]
    if ignored:
        raise SpecError(
            "does not apply to --profile, which compares the profiles' frames over the"
            f" samples; drop {' and '.join(ignored)}",
            key=ignored[0],
            file="command line",
        )


def _stopping_rule(store: Store, run_ids: Sequence[int]) -> Mapping[str, Any]:
    """The rule a single run that stopped when decided stopped by; empty for any other."""
    if len(run_ids) > 1:
        return {}
    try:
        run = store.run(run_ids[0] if run_ids else None)
    except WannabetError:
        return {}  # no such run: the comparison itself says so
    return run.until_decided or {}


def parse_percent(value: str, option: str) -> float:
    """``"2%"`` or ``"2"`` → 2.0; ``option`` names the setting in the error."""
    text = value.strip().removesuffix("%")
    try:
        pct = float(text)
    except ValueError:
        raise SpecError(
            f"{value!r} is not a percentage; write e.g. 2% or 0.5%", key=option, file="command line"
        ) from None
    if pct < 0:
        raise SpecError("must not be negative", key=option, file="command line")
    return pct


def resolve_metric(metric: MetricChoice, runs: Sequence[RunInfo]) -> Metric:
    """``metric``, with ``auto`` decided by what ``runs`` hold."""
    if metric != "auto":
        return metric
    return "throughput" if all(r.aggregates_only for r in runs) else "latency"


def runs_of(store: Store, run_ids: Sequence[int] = ()) -> list[RunInfo]:
    """The runs ``run_ids`` names, each once in the order given; the latest when empty."""
    return [store.run(r) for r in dict.fromkeys(run_ids)] or [store.run()]


def analyze(
    store: Store, run_ids: Sequence[int], options: ComparisonOptions
) -> tuple[Comparison, list[RunInfo]]:
    """The comparison ``options`` ask for and the runs it covers: :func:`analyze_runs`, or with
    ``--txn``/``--stat`` (:attr:`ComparisonOptions.by_statistic`) the comparison of the first
    type named (all types when none is), see :func:`analyze_statistics` for all of them.
    """
    if options.by_statistic:
        return analyze_statistics(store, run_ids, options)[0]
    return analyze_runs(store, run_ids, options)


def comparison_documents(
    store: Store, run_ids: Sequence[int], options: ComparisonOptions
) -> list[ComparisonDocument]:
    """The comparison documents made with ``options``: one per ``--txn`` type, else one.

    Without ``--txn``/``--stat``, a latency comparison of one run with several transaction
    types gains ``types``: each type's comparison of its mean, so a change in one type shows
    even when the mix hides it.
    """
    if options.by_statistic:
        docs = []
        for result, runs in analyze_statistics(store, run_ids, options):
            docs.append(document(result, runs))
            add_sequences(store, runs, docs[-1])
        stat = options.stat or "mean"
        if not options.txn and not is_work_stat(stat):
            # All types together were judged: each type's own verdict on the statistic too.
            _add_types(store, run_ids, runs_of(store, run_ids), options, docs[0], stat)
        return docs
    result, runs = analyze(store, run_ids, options)
    doc = document(result, runs)
    add_sequences(store, runs, doc)
    add_open_loop(store, runs, doc)
    add_degraded(store, runs, doc)
    if result.metric == "latency":
        _add_types(store, run_ids, runs, options, doc, "mean")
    return [doc]


def _add_types(
    store: Store,
    run_ids: Sequence[int],
    runs: Sequence[RunInfo],
    options: ComparisonOptions,
    doc: ComparisonDocument,
    stat: str,
) -> None:
    """On one run with several transaction types: ``types``, each type's comparison of
    ``stat``, so a change in one type shows even when the mix hides it. A type no condition
    has a value of (no success, no recorded result) is left out."""
    if len(runs) != 1:
        return
    names = list(transaction_type_names(store, runs[0]).values())
    if len(names) < 2:
        return
    doc["types"] = []
    for name in names:
        per_type = dataclasses.replace(options, txn=(name,), stat=stat, bayes=None)
        try:
            [(r, rs)] = analyze_statistics(store, run_ids, per_type)
        except (AnalysisError, SpecError):  # e.g. the baseline has no success of this type
            continue
        doc["types"].append(document(r, rs))
        add_sequences(store, rs, doc["types"][-1])


def add_open_loop(store: Store, runs: Sequence[RunInfo], doc: ComparisonDocument) -> None:
    """On one run with open-loop conditions: the rate each asked for and reached, and its
    schedule lag (a condition whose target could not keep up was measured at a lower load)."""
    if len(runs) == 1:
        found = open_loop(store, runs[0])
        if found:
            doc["open_loop"] = [o.to_dict() for o in found]


def add_degraded(store: Store, runs: Sequence[RunInfo], doc: ComparisonDocument) -> None:
    """The compared runs' degraded samples, which the analysis left out unless the store was
    opened to include them: a reader must know what the verdict stands on."""
    found = degraded_documents(store, runs)
    if found:
        doc["degraded"] = found


def degraded_documents(store: Store, runs: Sequence[RunInfo]) -> list[dict[str, Any]]:
    """Every degraded sample of ``runs``, as the documents list them."""
    return [
        {
            "run": run.run_id,
            # Named as every output names a sample: its number within its condition, and block.
            "sample": d.number,
            "block": d.block + 1,
            "condition": d.condition,
            "reason": d.reason,
            "included": store.include_degraded,
        }
        for run in runs
        for d in store.degraded_samples(run.run_id)
    ]


#: a sequence's state in the words of a verdict
_SEQUENCE_VERDICT = {
    "faster": "faster",
    "slower": "slower",
    "no-difference": "no-difference",
    "undecided": "inconclusive",
}


def add_sequences(store: Store, runs: Sequence[RunInfo], doc: ComparisonDocument) -> None:
    """On a run that stopped when decided: its anytime-valid sequences and how it stopped.

    Its sample size was chosen by looking at the data, so the fixed-sample p-values and
    intervals are optimistic. When the document judges what the rule judged (the mean latency),
    each pair's verdict becomes its sequence's and the fixed-sample one is kept as
    ``fixed_verdict``. A sequence covers at every block at once, so its interval stays valid
    at the block the run stopped at, and at any alpha or ROPE asked for afterwards.
    """
    if len(runs) != 1 or runs[0].until_decided is None or not doc["comparisons"]:
        return
    info = runs[0]
    rule = info.until_decided or {}
    pairs = [(p["condition"], p["baseline"]) for p in doc["comparisons"]]
    sequences = sequential_comparisons(
        block_means(store, info),
        pairs=pairs,
        alpha=doc["alpha"],
        rope_pct=doc["rope_pct"],
    )
    judged = doc["metric"] == "latency" and doc.get("stat", "mean") == "mean" and not doc.get("txn")
    stopped = str(rule.get("stopped", "not finished"))
    blocks = int(rule.get("blocks", max((s.blocks for s in sequences), default=0)))
    how = {
        "decided": f"stopped after {blocks} blocks because every comparison was decided",
        "max_samples": f"took its most samples ({blocks} blocks) without deciding every comparison",
    }.get(stopped, f"did not finish (it ended after {blocks} blocks)")
    if judged:
        note = (
            f"This run {how}: its sample size was not fixed in advance, so the verdicts are"
            " those of the anytime-valid confidence sequences, and the fixed-sample tests and"
            " intervals are descriptive only."
        )
        m = len(sequences)
        for pair, seq in zip(doc["comparisons"], sequences, strict=True):
            fixed = pair["verdict"]
            pair["fixed_verdict"] = fixed
            pair["verdict"] = _SEQUENCE_VERDICT[seq.state]
            pair["note"] = (
                f"{seq.state}: the anytime-valid interval after {seq.blocks} blocks is"
                f" {seq.describe().rsplit('%', 1)[0]}% (alpha {doc['alpha']:g} over"
                f" {m} comparison{'s' if m != 1 else ''}); the fixed-sample test said {fixed}"
            )
    else:
        note = (
            f"This run {how}, judged on the mean latency: its sample size was not fixed in"
            " advance, so the fixed-sample tests and intervals of this statistic are descriptive"
            " only, not a verdict."
        )
        for pair in doc["comparisons"]:
            pair["fixed_verdict"] = pair["verdict"]
            pair["verdict"] = "inconclusive"
    doc["sequential"] = {
        "stopped": stopped,
        "blocks": blocks,
        "max_samples": int(rule.get("max_samples", 0)),
        "alpha": doc["alpha"],
        "rope_pct": doc["rope_pct"],
        "statistic": "mean latency per sample",
        "note": note,
        "comparisons": [cast(SequentialPairDocument, s.to_dict()) for s in sequences],
    }


def check_pairs_option(pairs: str) -> None:
    """``--pairs`` as given: one of the choices, or SpecError naming them."""
    try:
        check_pairs(pairs)
    except AnalysisError:
        raise SpecError(
            f"{pairs!r} is not a choice of pairs; use one of {', '.join(PAIRS)}",
            key="--pairs",
            file="command line",
        ) from None


def condition_levels(
    store: Store, runs: Sequence[RunInfo], pairs: str
) -> dict[str, dict[str, str]] | None:
    """With ``--pairs within=FACTOR``, each condition's factor levels, under the label the
    comparison gives it (``run:label`` with several runs, where the run counts as one more
    factor held fixed): what the pairs are made by. A FACTOR no condition has is refused
    (SpecError). None for the other choices of pairs, which need no levels."""
    factor = check_pairs(pairs)
    if factor is None:
        return None
    several = len(runs) > 1
    out: dict[str, dict[str, str]] = {}
    for info in runs:
        prefix = f"{info.run_id}:" if several else ""
        for c in store.conditions(info.run_id):
            levels = {str(k): str(v) for k, v in c.levels.items()}
            if several:
                levels["(run)"] = str(info.run_id)
            out[prefix + c.label] = levels
    if not any(factor in lv for lv in out.values()):
        known = sorted({f for lv in out.values() for f in lv if f != "(run)"})
        raise SpecError(
            f"no factor {factor!r} in {'these runs' if several else f'run {runs[0].run_id}'}; "
            + (f"its factors: {', '.join(known)}" if known else "it has no factors"),
            key="--pairs",
            file="command line",
        )
    return out


def analyze_statistics(
    store: Store, run_ids: Sequence[int], options: ComparisonOptions
) -> list[tuple[Comparison, list[RunInfo]]]:
    """One comparison of ``options.stat`` (default the mean) per ``options.txn`` type (all
    types together when none is named), from the runs' per-sample summaries.

    Each condition is summarised by one value of the statistic per sample; the sample level
    judges those, the transaction level the statistic of all transactions with samples as
    clusters (:func:`wannabet.analysis.statistic.compare_statistic`).
    """
    stat = options.stat or "mean"
    runs = runs_of(store, run_ids)
    if is_work_stat(stat):
        return [
            _work_comparison(store, runs, options, stat, name) for name in options.txn or (None,)
        ]
    several = len(runs) > 1
    levels = condition_levels(store, runs, options.pairs)
    out = []
    for name in options.txn or (None,):
        groups = []
        environments: dict[str, Mapping[str, str]] = {}
        excluded: list[tuple[str, str]] = []
        what = "all types" if name is None else repr(name)
        why = f"no sample with a {stat} of {what}"
        for info in runs:
            type_id = None if name is None else transaction_type_id(store, info, name)
            prefix = f"{info.run_id}:" if several else ""
            for g in load_condition_samples(
                store, info, stat=stat, txn_type=type_id, include_warmup=options.include_warmup
            ):
                label = prefix + g.condition
                if sample_values(g, stat)[1].size == 0:
                    excluded.append((label, why))
                    continue
                if several:
                    g = dataclasses.replace(g, condition=label)
                    environments[label] = flatten_environment(info.environment or {})
                groups.append(g)
        baseline = options.baseline
        _check_baseline(baseline, [g.condition for g in groups], excluded, why, runs)
        result = compare_statistic(
            groups,
            stat=stat,
            level=options.level,
            baseline=baseline,
            alpha=options.alpha,
            rope_pct=options.rope_pct,
            seed=options.seed,
            environments=environments or None,
            pairs=options.pairs,
            levels=levels,
        )
        result = dataclasses.replace(result, txn=name, excluded=tuple(excluded))
        out.append((result, runs))
    return out


#: how each unit-of-work figure is named in messages
_WORK_NAMES = {"cpu": "server CPU", "wait": "wait", "response": "response time (CPU + wait)"}


def _work_name(stat: str) -> str:
    """``server CPU``; an I/O counter by its own name (``blks_read``)."""
    return _WORK_NAMES.get(stat) or stat.removeprefix(IO_STAT_PREFIX)


def _work_comparison(
    store: Store, runs: list[RunInfo], options: ComparisonOptions, stat: str, name: str | None
) -> tuple[Comparison, list[RunInfo]]:
    """``compare --stat cpu|wait|response|io:COUNTER``: each sample's unit-of-work figure per
    unit (a commit, or a transaction of the type ``name``): ms for the times, the counter's
    own unit for an I/O counter; judged over the samples as any per-sample statistic is:
    lower or higher, not faster or slower."""
    from wannabet.work import work_observations

    unit = name or "commit"
    several = len(runs) > 1
    groups: list[Observations] = []
    means: dict[str, float] = {}
    environments: dict[str, Mapping[str, str]] = {}
    excluded: list[tuple[str, str]] = []
    why = f"no sample with a {_work_name(stat)} figure per {unit}"
    for info in runs:
        prefix = f"{info.run_id}:" if several else ""
        found, found_means = work_observations(store, info, stat, unit)
        labels = {o.condition for o in found}
        excluded += [
            (prefix + c.label, why) for c in store.conditions(info.run_id) if c.label not in labels
        ]
        for obs in found:
            label = prefix + obs.condition
            groups.append(dataclasses.replace(obs, condition=label))
            means[label] = found_means[obs.condition]
            if several:
                environments[label] = flatten_environment(info.environment or {})
    if not groups:
        raise AnalysisError(
            f"{why} in {'these runs' if several else f'run {runs[0].run_id}'}: it needs the"
            " run's statistics (a run without --no-stats, on a server whose CPU or wait"
            " wannabet can read; see wannabet summary)"
        )
    _check_baseline(options.baseline, [g.condition for g in groups], excluded, why, runs)
    result = compare(
        groups,
        baseline=options.baseline,
        metric="cost",
        level="sample",
        alpha=options.alpha,
        rope_pct=options.rope_pct,
        seed=options.seed,
        # A time in ms per unit; a counter in its own unit (blocks, bytes, syncs) per unit.
        unit=f"{_work_name(stat) if stat.startswith(IO_STAT_PREFIX) else 'ms'}/{unit}",
        environments=environments or None,
        pairs=options.pairs,
        levels=condition_levels(store, runs, options.pairs),
        values_name=f"samples' {_work_name(stat)} per {unit}",
    )
    result = dataclasses.replace(
        result, stat=stat, stat_values=means, txn=name, excluded=tuple(excluded)
    )
    return result, runs


def document(result: Comparison, runs: Sequence[RunInfo]) -> ComparisonDocument:
    """``result`` as the JSON contract, with the runs it covers as its ``run`` entry."""
    # Comparison.to_dict builds exactly this shape; tests/test_verdicts.py checks the keys.
    doc = cast(ComparisonDocument, result.to_dict())
    described = [_describe(info) for info in runs]
    doc["run"] = described if len(runs) > 1 else described[0]
    return doc


def compare_runs(
    store: Store, run_ids: Sequence[int] = (), options: ComparisonOptions | None = None
) -> ComparisonDocument:
    """The comparison document (see ``docs/statistics.md``) for one or more stored runs, made
    with ``options`` (default: :class:`ComparisonOptions`' defaults), as :func:`analyze`
    judges them.

    With ``options.bayes``, each comparison gains a ``"bayes"`` entry and the document a
    top-level ``"bayes"`` block (posteriors of the means, factorial effects, diagnostics).
    ``compare`` itself adds the per-type, open-loop, degraded and sequential sections
    (:func:`comparison_documents`).
    """
    return document(*analyze(store, run_ids, options or ComparisonOptions()))


def analyze_runs(
    store: Store, run_ids: Sequence[int], options: ComparisonOptions
) -> tuple[Comparison, list[RunInfo]]:
    """The comparison of all transaction types together, by latency or throughput
    (``options.metric``, ``auto`` decided by what the runs hold), as result objects: the
    :class:`Comparison` (with its ``bayes`` analysis and posterior draws when asked) and the
    runs it covers. ``--txn``/``--stat`` options are :func:`analyze`'s."""
    if options.by_statistic:
        raise ValueError("analyze_runs judges all types together; use analyze for txn or stat")
    runs = runs_of(store, run_ids)
    metric = resolve_metric(options.metric, runs)
    baseline, include_warmup, seed = options.baseline, options.include_warmup, options.seed
    bayes, rope_pct, pairs = options.bayes, options.rope_pct, options.pairs
    if bayes is not None:
        require_extra(bayes.model)
    several = len(runs) > 1
    groups = []
    environments: dict[str, Mapping[str, str]] = {}
    excluded: list[tuple[str, str]] = []
    why = "no successful transaction" if metric == "latency" else "no sample with a throughput"
    for info in runs:
        found = load_observations(
            store,
            info,
            metric=metric,
            include_warmup=include_warmup,
            skip_empty=True,
            seed=seed,
        )
        present = {g.condition for g in found}
        prefix = f"{info.run_id}:" if several else ""
        excluded += [
            (prefix + c.label, why) for c in store.conditions(info.run_id) if c.label not in present
        ]
        for g in found:
            if several:
                g = dataclasses.replace(g, condition=f"{info.run_id}:{g.condition}")
                environments[g.condition] = flatten_environment(info.environment or {})
            groups.append(g)
    _check_baseline(baseline, [g.condition for g in groups], excluded, why, runs)
    result = compare(
        groups,
        baseline=baseline,
        metric=metric,
        level=options.level,
        alpha=options.alpha,
        rope_pct=rope_pct,
        seed=seed,
        unit="ms" if metric == "latency" else "tps",
        environments=environments or None,
        pairs=pairs,
        levels=condition_levels(store, runs, pairs),
    )
    if excluded:
        result = dataclasses.replace(result, excluded=tuple(excluded))
    if metric == "latency":
        result = _explain_modes_by_types(store, runs, result, include_warmup, seed)
    if bayes is not None:
        suff = []
        for info in runs:
            for st in load_sample_stats(
                store, info, metric=metric, include_warmup=include_warmup, skip_empty=True
            ):
                if (f"{info.run_id}:" if several else "") + st.condition in dict(excluded):
                    continue
                if several:
                    # Factor levels of different runs are not one design: no effects.
                    st = dataclasses.replace(
                        st, condition=f"{info.run_id}:{st.condition}", levels={}
                    )
                suff.append(st)
        analysis = bayes_analysis(
            suff, baseline=result.baseline, metric=metric, options=bayes, rope_pct=rope_pct
        )
        result = dataclasses.replace(result, bayes=analysis)
    return result, runs


def _explain_modes_by_types(
    store: Store,
    runs: Sequence[RunInfo],
    result: Comparison,
    include_warmup: bool,
    seed: int,
) -> Comparison:
    """Tell a multimodal mix of transaction types from a multimodal type (issue #13): each
    type is tested on its own, and a ``bimodal`` warning whose modes are just the types becomes
    a ``bimodal-mix`` note (:func:`wannabet.analysis.mix.explain_bimodality`)."""
    if not any(d.code == "bimodal" for c in result.conditions for d in c.diagnostics):
        return result
    several = len(runs) > 1
    per_type: dict[str, Any] = {}
    for info in runs:
        for label, hists in load_type_histograms(
            store, info, include_warmup=include_warmup
        ).items():
            per_type[f"{info.run_id}:{label}" if several else label] = hists
    if not per_type:
        return result
    conditions = []
    for c in result.conditions:
        of_condition = per_type.get(c.condition)
        if of_condition and any(d.code == "bimodal" for d in c.diagnostics):
            mix = mix_modality(c.condition, of_condition, seed=seed)
            c = explain_bimodality(c, mix)
        conditions.append(c)
    return dataclasses.replace(result, conditions=tuple(conditions))


def bayes_options(
    store: Store,
    run_ids: Sequence[int] = (),
    *,
    model: str | None = None,
    hdi_prob: float | None = None,
    prior_cv: float | None = None,
    prior_mean: float | None = None,
    prior_sd_max: float | None = None,
    seed: int = 0,
) -> BayesOptions:
    """Options of ``compare --bayes``: the ``[bayes]`` table of the (first) run's experiment
    file, overridden by every argument that is not None, then the built-in defaults.

    A prior given here must be positive (checked before the file is read, and named by its
    command-line option).
    """
    for flag, value in (
        ("--prior-cv", prior_cv),
        ("--prior-mean", prior_mean),
        ("--prior-sd-max", prior_sd_max),
    ):
        if value is not None and not value > 0:
            raise SpecError("must be a positive number", key=flag, file="command line")
    run = store.run(run_ids[0] if run_ids else None)
    spec = store.run_spec(run.run_id)
    from_file: dict[str, Any] = {}
    if spec is not None and spec.spec_text:
        from_file = parse_bayes_settings(spec.spec_text, file=spec.source or f"run {run.run_id}")
    given = {
        "model": model,
        "hdi": hdi_prob,
        "prior_cv": prior_cv,
        "prior_mean": prior_mean,
        "prior_sd_max": prior_sd_max,
    }
    merged = {**from_file, **{k: v for k, v in given.items() if v is not None}}
    kwargs: dict[str, Any] = {"seed": seed}
    if "hdi" in merged:
        kwargs["hdi_prob"] = merged.pop("hdi")
    kwargs.update(merged)
    return BayesOptions(**kwargs)


def flatten_environment(environment: Mapping[str, Any]) -> dict[str, str]:
    """``{"server_settings": {"fsync": "on"}}`` → ``{"server_settings.fsync": "on"}``."""
    flat: dict[str, str] = {}
    for key, value in environment.items():
        if isinstance(value, Mapping):
            for inner, v in flatten_environment(value).items():
                flat[f"{key}.{inner}"] = v
        else:
            flat[key] = str(value)
    return flat


def _describe(info: RunInfo) -> RunDocument:
    return {k: v for k, v in info.to_dict().items() if k not in ("settings", "environment")}


def _check_baseline(
    baseline: str | None,
    labels: Sequence[str],
    excluded: Sequence[tuple[str, str]],
    why: str,
    runs: Sequence[RunInfo],
) -> None:
    """Refuse, with one line, a comparison that has nothing to compare or a baseline that is
    excluded (``why``: what it lacks) or not among the compared ``labels``."""
    if baseline is not None and baseline in dict(excluded):
        raise SpecError(
            f"the baseline {baseline!r} has {why} to compare with; choose another --baseline",
            key="--baseline",
            file="command line",
        )
    if not labels:
        raise AnalysisError(
            f"no condition has a value to compare ({why} in any of them); see `wannabet summary`"
            " for the errors"
        )
    if baseline is not None and baseline not in labels:
        where = "these runs" if len(runs) > 1 else f"run {runs[0].run_id}"
        raise SpecError(
            f"no condition {baseline!r} in {where}; conditions: {', '.join(labels)}",
            key="--baseline",
            file="command line",
        )
