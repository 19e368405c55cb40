"""One verdict: whether the classical verdict and the Bayesian decision on a comparison agree,
and one sentence that says so honestly when they do not.

The classical verdict (``faster``, ``slower``, ``no-difference``, ``inconclusive``) comes from a
test and a confidence interval at ``alpha``; the Bayesian decision (``credible-difference``,
``practically-equivalent``, ``undecided``) from the HDI of the change against the same ROPE. They
answer one question with two models and can disagree near a threshold: one significant at
p = 0.03 while the other's HDI still touches the ROPE. Then no output may state a bet the other
does not support. :func:`disagreement` gives the sentence every format shows instead: what each
says, which is the more conservative here (the one that has not decided), and what settles it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .tests import p_text

__all__ = ["bayes_verdict", "disagreement"]


def bayes_verdict(pair: Mapping[str, Any]) -> str:
    """The Bayesian decision in the classical verdict's words: a credible difference is
    ``faster`` or ``slower`` by where most of the posterior lies."""
    decision = pair["rope_decision"]
    if decision == "credible-difference":
        p = pair.get("p_faster")
        return "faster" if p is not None and p >= 0.5 else "slower"
    return "no-difference" if decision == "practically-equivalent" else "inconclusive"


def _pct(x: float | None) -> str:
    return "?" if x is None else f"{x:+.1f}%"


def _says(verdict: str, rope_pct: float) -> str:
    return {
        "faster": "faster",
        "slower": "slower",
        "no-difference": f"the same within ±{rope_pct:g}%",
        "inconclusive": "not yet decided",
    }[verdict]


def disagreement(comparison: Mapping[str, Any], alpha: float, rope_pct: float) -> str | None:
    """None when the comparison's classical verdict and its Bayesian decision agree (or there
    is no Bayesian decision); otherwise the one sentence that replaces any bet on it.

    ``comparison`` is a comparison of the JSON contract with its ``bayes`` entry.
    """
    pair = comparison.get("bayes")
    if not pair:
        return None
    classical, bayesian = comparison["verdict"], bayes_verdict(pair)
    if classical == bayesian:
        return None
    name, base = comparison["condition"], comparison["baseline"]
    ci = comparison.get("ci_pct") or [None, None]
    hdi = pair.get("hdi_pct") or [None, None]
    level = f"{100 * (1 - alpha):g}%"
    hdi_level = f"{100 * float(pair.get('hdi_prob', 0.95)):g}%"
    p = comparison.get("p_adjusted")
    p_shown = p_text(p)
    pf = pair.get("p_faster")
    pf_text = "" if pf is None else f", P(faster) = {pf:.3f}"
    head = (
        f"{name} against {base}: the classical test says {_says(classical, rope_pct)}"
        f" ({p_shown}, {level} CI {_pct(ci[0])} to {_pct(ci[1])}) but the Bayesian estimate says"
        f" {_says(bayesian, rope_pct)} ({hdi_level} HDI {_pct(hdi[0])} to {_pct(hdi[1])}{pf_text})"
    )
    if "inconclusive" in (classical, bayesian):
        cautious = "Bayesian" if bayesian == "inconclusive" else "classical"
        why = (
            "its interval still reaches into the ROPE"
            if cautious == "Bayesian"
            else "its test or interval does not yet clear the threshold"
        )
        return (
            f"{head}; the {cautious} analysis is the more conservative here ({why}), so there"
            " is no bet yet: more samples per condition will narrow both intervals and settle it."
        )
    return (
        f"{head}; the two analyses contradict each other, so do not bet on either: check the"
        " diagnostics (outliers, drift, a bimodal condition) and run more samples."
    )
