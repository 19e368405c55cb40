"""``wannabet compare`` as a library call: stored runs in, the JSON contract out.

One run compares its own conditions. Several runs compare all their conditions together, each
labelled ``RUN:condition``, and the environments the runs were recorded in are compared too:
a different host, server version or setting is often the real explanation of a difference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from wannabet.analysis import Comparison, compare
from wannabet.analysis.bayes import BayesOptions, bayes_analysis, require_extra
from wannabet.datasets import load_observations
from wannabet.errors import AnalysisError, SpecError
from wannabet.spec import parse_bayes_settings
from wannabet.store import RunInfo, Store
from wannabet.sufficient import load_sample_stats


def compare_runs(
    store: Store,
    run_ids: Sequence[int] = (),
    *,
    baseline: str | None = None,
    metric: Literal["latency", "throughput"] = "latency",
    level: Literal["sample", "transaction"] = "sample",
    alpha: float = 0.05,
    rope_pct: float = 2.0,
    seed: int = 0,
    include_warmup: bool = False,
    bayes: BayesOptions | None = None,
) -> dict[str, Any]:
    """The comparison document (see ``docs/statistics.md``) for one or more stored runs.

    With ``bayes``, each comparison gains a ``"bayes"`` entry and the document a top-level
    ``"bayes"`` block (posteriors of the means, factorial effects, diagnostics).
    """
    result, runs = analyze_runs(
        store,
        run_ids,
        baseline=baseline,
        metric=metric,
        level=level,
        alpha=alpha,
        rope_pct=rope_pct,
        seed=seed,
        include_warmup=include_warmup,
        bayes=bayes,
    )
    doc = result.to_dict()
    described = [_describe(info) for info in runs]
    doc["run"] = described if len(runs) > 1 else described[0]
    return doc


def analyze_runs(
    store: Store,
    run_ids: Sequence[int] = (),
    *,
    baseline: str | None = None,
    metric: Literal["latency", "throughput"] = "latency",
    level: Literal["sample", "transaction"] = "sample",
    alpha: float = 0.05,
    rope_pct: float = 2.0,
    seed: int = 0,
    include_warmup: bool = False,
    bayes: BayesOptions | None = None,
) -> tuple[Comparison, list[RunInfo]]:
    """Like :func:`compare_runs`, but the result objects: the :class:`Comparison` (with its
    ``bayes`` analysis and posterior draws when asked) and the runs it covers."""
    if bayes is not None:
        require_extra(bayes.model)
    runs = [store.run(r) for r in dict.fromkeys(run_ids)] or [store.run()]
    several = len(runs) > 1
    groups = []
    environments: dict[str, Mapping[str, str]] = {}
    excluded: list[tuple[str, str]] = []
    why = "no successful transaction" if metric == "latency" else "no sample with a throughput"
    for info in runs:
        found = load_observations(
            store, info, metric=metric, include_warmup=include_warmup, skip_empty=True
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
    labels = [g.condition for g in groups]
    if baseline is not None and baseline in dict(excluded):
        raise SpecError(
            f"the baseline {baseline!r} has {why} to compare with; choose another --baseline",
            key="--baseline",
            file="command line",
        )
    if not groups:
        raise AnalysisError(
            f"no condition has a value to compare ({why} in any of them); see `wannabet summary`"
            " for the errors"
        )
    if baseline is not None and baseline not in labels:
        where = "these runs" if several else f"run {runs[0].run_id}"
        raise SpecError(
            f"no condition {baseline!r} in {where}; conditions: {', '.join(labels)}",
            key="--baseline",
            file="command line",
        )
    result = compare(
        groups,
        baseline=baseline,
        metric=metric,
        level=level,
        alpha=alpha,
        rope_pct=rope_pct,
        seed=seed,
        unit="ms" if metric == "latency" else "tps",
        environments=environments or None,
    )
    if excluded:
        result = dataclasses.replace(result, excluded=tuple(excluded))
    if bayes is not None:
        suff = []
        for info in runs:
            for st in load_sample_stats(store, info, metric=metric, include_warmup=include_warmup):
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
    file, overridden by every argument that is not None, then the built-in defaults."""
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


def _describe(info: RunInfo) -> dict[str, Any]:
    return {k: v for k, v in info.to_dict().items() if k not in ("settings", "environment")}
