"""Multimodality that knows the mix: are the modes of a condition just its transaction types?

A workload of fast lookups and slow updates has two modes in its latency distribution, and
Silverman's test on all transactions together rightly finds them; but "find what splits the
runs into two groups" is then bad advice, because the split is the workload's own. Testing each
transaction type on its own first tells the two cases apart: when no type is multimodal on its
own, the modes are the types (:func:`explain_bimodality` says so instead of warning); when one
is, that type is what to look at.

Each type's latencies come from its histogram (the condition's merged histogram of the type):
Silverman's test runs on at most 1,000 evenly spaced order statistics anyway
(:func:`wannabet.analysis.consistency.multimodality`), and the histogram gives those within half
a bin (0.4 %). Pure NumPy, no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from . import histogram
from .compare import ConditionSummary, _seed_for
from .consistency import multimodality
from .diagnostics import Diagnostic

__all__ = ["MixModality", "explain_bimodality", "mix_modality"]

#: order statistics of a type's histogram handed to Silverman's test
POINTS = 1000
#: fewer transactions of a type than this are not tested on their own
MIN_TRANSACTIONS = 20


@dataclass(frozen=True, slots=True)
class MixModality:
    """Silverman's test per transaction type of one condition.

    Attributes
    ----------
    condition : str
    multimodal_types : tuple of str
        Types whose own latencies have more than one mode.
    tested : tuple of str
        Types with enough transactions to be tested.
    medians_ms : mapping of str to float
        Median latency of each tested type.
    """

    condition: str
    multimodal_types: tuple[str, ...]
    tested: tuple[str, ...]
    medians_ms: Mapping[str, float]


def mix_modality(
    condition: str,
    per_type: Mapping[str, histogram.Histogram],
    *,
    seed: int = 0,
) -> MixModality:
    """Test each transaction type's latencies of ``condition`` for more than one mode.

    Parameters
    ----------
    condition : str
        Label.
    per_type : mapping of str to Histogram
        The condition's latency histogram of each type (ns).
    seed : int
        Seed of Silverman's bootstrap (the stream is keyed by the condition's label).
    """
    rng = _seed_for(seed, condition, "mix")
    multi, tested, medians = [], [], {}
    for name, h in per_type.items():
        if histogram.count(h) < MIN_TRANSACTIONS:
            continue
        points = histogram.quantiles(h, np.linspace(0, 1, POINTS)) / 1e6
        tested.append(name)
        medians[name] = histogram.quantile(h, 0.5) / 1e6
        if multimodality(points, rng=rng, sorted_x=points).multimodal:
            multi.append(name)
    return MixModality(condition, tuple(multi), tuple(tested), medians)


def explain_bimodality(summary: ConditionSummary, mix: MixModality) -> ConditionSummary:
    """``summary`` with its ``bimodal`` diagnostic explained by the mix of transaction types.

    When every type was tested and none is multimodal on its own, the warning becomes the
    ``bimodal-mix`` note (the modes are the types, with their medians); when some types are,
    the warning names them. Unchanged without a ``bimodal`` diagnostic or with fewer than two
    tested types.
    """

    def of_transactions(d: Diagnostic) -> bool:
        # Sample means can be multimodal whatever the mix (every sample has the same mix):
        # only a multimodality of the transactions is the types'.
        transactions = summary.level == "transaction" or "the transactions of" in d.message
        return d.code == "bimodal" and transactions

    if len(mix.tested) < 2 or not any(of_transactions(d) for d in summary.diagnostics):
        return summary
    medians = ", ".join(f"{t} near {m:.4g} ms" for t, m in mix.medians_ms.items())
    out: list[Diagnostic] = []
    for d in summary.diagnostics:
        if not of_transactions(d):
            out.append(d)
        elif any(o.code == "bimodal-mix" for o in out):
            continue  # once is enough
        elif not mix.multimodal_types:
            out.append(
                Diagnostic(
                    "bimodal-mix",
                    f"the several modes of {summary.condition!r} are its transaction types"
                    f" ({medians}); each type on its own has one mode",
                    "judge each type on its own: wannabet compare --txn NAME",
                )
            )
        else:
            names = [repr(t) for t in mix.multimodal_types]
            types = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
            own = (
                f"on its own, type {types} has"
                if len(names) == 1
                else f"on their own, types {types} each have"
            )
            out.append(
                dataclasses.replace(
                    d,
                    message=f"{d.message}; {own} more than one mode",
                    advice=f"look at the latencies of {types} (wannabet compare --txn NAME"
                    " --stat p99); " + d.advice,
                )
            )
    return dataclasses.replace(summary, diagnostics=tuple(out))
