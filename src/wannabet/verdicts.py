"""``wannabet compare`` as a library call: stored runs in, the JSON contract out.

One run compares its own conditions. Several runs compare all their conditions together, each
labelled ``RUN:condition``, and the environments the runs were recorded in are compared too:
a different host, server version or setting is often the real explanation of a difference.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from wannabet.analysis import compare
from wannabet.datasets import load_observations
from wannabet.errors import SpecError
from wannabet.store import RunInfo, Store


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
) -> dict[str, Any]:
    """The comparison document (see ``docs/statistics.md``) for one or more stored runs."""
    runs = [store.run(r) for r in dict.fromkeys(run_ids)] or [store.run()]
    several = len(runs) > 1
    groups = []
    environments: dict[str, Mapping[str, str]] = {}
    for info in runs:
        for g in load_observations(store, info, metric=metric, include_warmup=include_warmup):
            if several:
                g = dataclasses.replace(g, condition=f"{info.run_id}:{g.condition}")
                environments[g.condition] = flatten_environment(info.environment or {})
            groups.append(g)
    labels = [g.condition for g in groups]
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
    doc = result.to_dict()
    described = [_describe(info) for info in runs]
    doc["run"] = described if several else described[0]
    return doc


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
