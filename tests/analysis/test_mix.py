"""Multimodality that knows the mix: two unimodal types make a bimodal condition, and the
warning says the modes are the types; a type with two modes of its own keeps the warning."""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from wannabet.analysis import Observations, compare, histogram
from wannabet.analysis.mix import explain_bimodality, mix_modality


def ns(ms: np.ndarray) -> histogram.Histogram:
    return histogram.from_values(np.round(ms * 1e6).astype(np.int64))


def workload(rng: np.random.Generator, *, split_update: bool):
    lookup = 0.2 * np.exp(0.15 * rng.standard_normal(4000))
    update = 2.0 * np.exp(0.15 * rng.standard_normal(4000))
    if split_update:  # half of the updates take a second, slower path
        update[::2] *= 4
    values = np.concatenate([lookup, update])
    order = rng.permutation(values.size)
    obs = Observations("c", values[order], np.repeat(np.arange(20), values.size // 20))
    return obs, {"lookup": ns(lookup), "update": ns(update)}


def summary(obs: Observations):
    other = Observations("d", obs.values * 1.01, obs.sample)
    (c, _) = compare([obs, other], level="transaction", n_boot=200).conditions
    return c


def test_modes_that_are_the_types_become_a_note():
    obs, per_type = workload(np.random.default_rng(1), split_update=False)
    c = summary(obs)
    assert "bimodal" in [d.code for d in c.diagnostics]
    mix = mix_modality("c", per_type, seed=3)
    assert mix.multimodal_types == () and set(mix.tested) == {"lookup", "update"}
    assert abs(mix.medians_ms["update"] / mix.medians_ms["lookup"] - 10) < 0.5
    codes = [d.code for d in explain_bimodality(c, mix).diagnostics]
    assert "bimodal" not in codes and codes.count("bimodal-mix") == 1
    note = next(d for d in explain_bimodality(c, mix).diagnostics if d.code == "bimodal-mix")
    assert re.search(r"transaction types \(lookup near 0\.19\d* ms, update near 2\.0", note.message)
    assert "--txn" in note.advice


def test_a_type_with_modes_of_its_own_keeps_the_warning_and_is_named():
    obs, per_type = workload(np.random.default_rng(2), split_update=True)
    c = summary(obs)
    mix = mix_modality("c", per_type, seed=3)
    assert mix.multimodal_types == ("update",)
    explained = explain_bimodality(c, mix)
    kept = [d for d in explained.diagnostics if d.code == "bimodal"]
    assert kept and all("type 'update' has more than one mode" in d.message for d in kept)
    assert "bimodal-mix" not in [d.code for d in explained.diagnostics]
    # Two such types: both named, in one sentence that reads.
    both = explain_bimodality(c, dataclasses.replace(mix, multimodal_types=("update", "lookup")))
    [d] = [d for d in both.diagnostics if d.code == "bimodal"][:1]
    assert "on their own, types 'update' and 'lookup' each have more than one mode" in d.message
    assert "look at the latencies of 'update' and 'lookup'" in d.advice


def test_one_type_or_no_warning_changes_nothing():
    obs, per_type = workload(np.random.default_rng(1), split_update=False)
    c = summary(obs)
    only = mix_modality("c", {"lookup": per_type["lookup"]}, seed=0)
    assert explain_bimodality(c, only) is c
    calm = summary(
        Observations(
            "c",
            np.exp(0.1 * np.random.default_rng(4).standard_normal(2000)),
            np.repeat(np.arange(20), 100),
        )
    )
    assert explain_bimodality(calm, mix_modality("c", per_type, seed=0)) is calm
