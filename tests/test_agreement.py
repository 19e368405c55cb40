"""One verdict (issue #16): when the classical verdict and the Bayesian decision disagree, every
format says so in one sentence and none states a bet the other does not support."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wannabet.analysis.agreement import bayes_verdict, disagreement
from wannabet.testing.cli import wannabet, wannabet_ok

#: five samples a condition whose classical verdict is "faster" (Welch t, p = 0.021, CI
#: [-36.5, -4.9]%) while the default hierarchical model's 95% HDI still reaches into the ROPE
SPLIT_CSV = """condition,ms
base,10.7156
base,11.7860
base,10.6832
base,7.7056
base,11.9850
new,8.2004
new,6.7363
new,8.4244
new,8.0673
new,7.9544
"""


def comparison(verdict: str, decision: str, p_faster: float = 0.944) -> dict[str, Any]:
    """The issue's case: classical p = 0.032, CI [-54.4, -7.7]%; HDI [-62.6, +6.9]%."""
    return {
        "condition": "new",
        "baseline": "old",
        "verdict": verdict,
        "p_adjusted": 0.032,
        "ci_pct": [-54.4, -7.7],
        "bayes": {
            "rope_decision": decision,
            "hdi_pct": [-62.6, 6.9],
            "p_faster": p_faster,
            "hdi_prob": 0.95,
        },
    }


def test_the_issues_case_is_one_sentence_naming_the_more_conservative_analysis() -> None:
    text = disagreement(comparison("faster", "undecided"), alpha=0.05, rope_pct=2.0)
    assert text is not None
    assert "classical test says faster (p=0.032, 95% CI -54.4% to -7.7%)" in text
    assert "Bayesian estimate says not yet decided (95% HDI -62.6% to +6.9%" in text
    assert "P(faster) = 0.944" in text
    assert "the Bayesian analysis is the more conservative here" in text
    assert "no bet yet" in text and "more samples" in text
    assert text.count(". ") == 0  # one sentence


@pytest.mark.parametrize(
    ("verdict", "decision", "p_faster", "expected"),
    [
        ("faster", "credible-difference", 0.99, None),
        ("slower", "credible-difference", 0.01, None),
        ("no-difference", "practically-equivalent", 0.5, None),
        ("inconclusive", "undecided", 0.8, None),
        ("inconclusive", "credible-difference", 0.99, "the classical analysis is the more"),
        ("no-difference", "undecided", 0.6, "the Bayesian analysis is the more"),
        ("faster", "credible-difference", 0.01, "contradict each other"),
        ("faster", "practically-equivalent", 0.6, "contradict each other"),
    ],
)
def test_agreement_and_each_kind_of_disagreement(
    verdict: str, decision: str, p_faster: float, expected: str | None
) -> None:
    c = comparison(verdict, decision, p_faster)
    text = disagreement(c, alpha=0.05, rope_pct=2.0)
    if expected is None:
        assert text is None
        assert bayes_verdict(c["bayes"]) == verdict
    else:
        assert text is not None and expected in text
    assert disagreement({**c, "bayes": None}, alpha=0.05, rope_pct=2.0) is None


@pytest.fixture(scope="module")
def split_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An imported run on which the two analyses disagree."""
    root = tmp_path_factory.mktemp("split")
    (root / "d.csv").write_text(SPLIT_CSV)
    results = root / "r.duckdb"
    wannabet_ok(
        "import", "csv", str(root / "d.csv"), "--condition", "condition", "--value", "ms",
        "--results", str(results),
    )  # fmt: skip
    return results


def test_a_run_where_they_disagree_says_so_in_every_format(split_run: Path, tmp_path: Path) -> None:
    base = ("compare", "--results", str(split_run), "--baseline", "base", "--bayes")
    doc = json.loads(wannabet_ok(*base, "--format", "json"))
    (c,) = doc["comparisons"]
    assert c["verdict"] == "faster" and c["bayes"]["rope_decision"] == "undecided"
    sentence = c["disagreement"]
    assert sentence and "the Bayesian analysis is the more conservative here" in sentence
    table = " ".join(wannabet_ok(*base).split())
    assert "The analyses disagree: no bet" in table
    assert "faster (Bayes: undecided)" in table
    markdown = wannabet_ok(*base, "--format", "markdown")
    assert "**faster** (Bayes: undecided)" in markdown and sentence in markdown
    out = tmp_path / "r.html"
    proc = wannabet("report", "--results", str(split_run), "--bayes", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    assert "you can bet on it" not in html
    assert "the Bayesian analysis is the more conservative here" in html
    assert "(Bayes disagrees)" in html
    # Without the Bayesian analysis the classical verdict stands alone, and says so.
    plain = json.loads(wannabet_ok("compare", "--results", str(split_run), "--format", "json"))
    assert "disagreement" not in plain["comparisons"][0]
