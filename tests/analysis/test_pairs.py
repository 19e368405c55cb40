"""``compare --pairs`` (issue #16, item 3): every pair of conditions, or each against the one
before it (successive states, as the seed 003 analysis compared them), with Holm's correction
over exactly the pairs compared; the p-values are SciPy's on the same sample means."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from wannabet.analysis import Observations, compare
from wannabet.analysis.compare import pairs_of
from wannabet.backends import parse_target
from wannabet.cli import app
from wannabet.engine import NativeEngine
from wannabet.errors import AnalysisError
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import Store


def holm(p: list[float]) -> list[float]:
    """Holm's step-down adjustment, written out: the reference for the library's."""
    order = np.argsort(p)
    m = len(p)
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def conditions() -> list[Observations]:
    rng = np.random.default_rng(16)
    means = {"a": 10.0, "b": 10.4, "c": 11.5, "d": 10.1}
    return [
        Observations(name, rng.normal(mu, 0.6, size=12), np.arange(12) + 12 * i)
        for i, (name, mu) in enumerate(means.items())
    ]


@pytest.mark.parametrize(
    ("pairs", "expected"),
    [
        ("all", [("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")]),
        ("successive", [("a", "b"), ("b", "c"), ("c", "d")]),
        ("baseline", [("a", "b"), ("a", "c"), ("a", "d")]),
    ],
)
def test_the_pairs_compared_and_their_holm_adjusted_p_values_match_scipy(
    pairs: str, expected: list[tuple[str, str]]
) -> None:
    groups = conditions()
    values = {g.condition: g.values for g in groups}
    result = compare(groups, pairs=pairs)  # type: ignore[arg-type]
    assert [(c.baseline, c.condition) for c in result.comparisons] == expected
    raw = []
    for c in result.comparisons:
        a, b = values[c.baseline], values[c.condition]
        if c.test.test.startswith("welch"):
            reference = stats.ttest_ind(a, b, equal_var=False).pvalue
        else:
            reference = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
        assert c.test.p_value == pytest.approx(reference, rel=1e-9)
        raw.append(float(reference))
    assert [c.p_adjusted for c in result.comparisons] == pytest.approx(holm(raw), rel=1e-9)
    assert result.to_dict().get("pairs") == (None if pairs == "baseline" else pairs)


def test_a_change_between_successive_states_is_judged_against_the_state_before() -> None:
    result = compare(conditions(), pairs="successive")
    verdicts = {(c.baseline, c.condition): c.verdict for c in result.comparisons}
    # c is slower than b, and d is faster than c, whatever each is against a.
    assert verdicts[("b", "c")] == "slower" and verdicts[("c", "d")] == "faster"


def test_an_unknown_choice_of_pairs_is_refused() -> None:
    with pytest.raises(AnalysisError, match="pairs='every'"):
        pairs_of(["a", "b"], "a", "every")


THREE_LEVELS = """\
name = "states"
[[workload.transactions]]
script = "SELECT {n};"
[[factors]]
name = "n"
levels = [1, 2, 3]
[sampling]
samples = 3
duration = "0.1s"
warmup = "0s"
"""


def test_every_output_format_carries_every_pair(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.duckdb")
    run_experiment(
        parse_experiment(THREE_LEVELS, file="s.toml"),
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=store,
        engine=NativeEngine(),
    )

    def compare_cli(*args: str) -> str:
        out = CliRunner().invoke(
            app, ["compare", "-r", str(store.path), "--pairs", "all", *args], terminal_width=200
        )
        assert out.exit_code == 0, out.output
        return out.stdout

    doc = json.loads(compare_cli("--format", "json"))
    assert doc["pairs"] == "all"
    assert [(c["baseline"], c["condition"]) for c in doc["comparisons"]] == [
        ("n=1", "n=2"),
        ("n=1", "n=3"),
        ("n=2", "n=3"),
    ]
    rows = list(csv.reader(io.StringIO(compare_cli("--format", "csv"))))[1:]
    assert [(r[0], r[1]) for r in rows] == [
        ("n=1", ""),
        ("n=2", "n=1"),
        ("n=3", "n=1"),
        ("n=3", "n=2"),
    ]
    assert "| n=3 | n=2 |" in " ".join(compare_cli("--format", "markdown").split())
    assert "Every pair" in compare_cli()
    refused = CliRunner().invoke(
        app, ["compare", "-r", str(store.path), "--pairs", "successive", "--bayes"]
    )
    assert refused.exit_code == 2 and "--pairs" in refused.output
