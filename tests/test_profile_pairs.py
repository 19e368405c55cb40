"""``compare --profile --pairs``: which pairs of conditions the profile comparison judges, on a
results file written through the store with seeded profiles (the profiling itself is tested
live in ``tests/report/test_profiles_report.py``), and the options that do not apply refused."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from wannabet.api import Results
from wannabet.errors import SpecError
from wannabet.profiling import run_profiles
from wannabet.store import ConditionRow, SampleRow, Store
from wannabet.testing.cli import one_line_error, wannabet_in_process
from wannabet.testing.stored import committed_columns

LABELS = ("a", "b", "c", "d")
#: the share of the stack samples in the frame `hot` per condition: b and c alike, far above a;
#: d has no profile at all
HOT = {"a": 0.05, "b": 0.40, "c": 0.40}
SAMPLES = 6


def profiled_run(path: Path, settings: dict[str, Any] | None = None) -> Store:
    store = Store(path)
    run_id = store.create_run(
        name="profiles",
        kind="run",
        seed=1,
        target="sqlite:///x.db",
        settings={"sessions": 1, **(settings or {})},
        environment={},
        conditions=[ConditionRow(i, label, {}) for i, label in enumerate(LABELS)],
        transaction_types=[("t", 1, "SELECT 1;")],
    )
    rng = np.random.default_rng(41)
    t0 = 1_700_000_000_000_000_000
    sample_id = 0
    for position in range(SAMPLES):
        for cond, label in enumerate(LABELS):
            n = 20
            start = t0 + sample_id * 10**9 + np.arange(n, dtype=np.int64) * 1_000_000
            cols = committed_columns(start, start + 500_000)
            stacks: list[tuple[str, int]] = []
            if label in HOT:
                # 2,000 stack samples, the hot frame's share varying a little between samples.
                hot = int(rng.binomial(2000, HOT[label]))
                stacks = [("main;work;hot", hot), ("main;work;cold", 2000 - hot)]
            row = SampleRow(sample_id, cond, 0, position, t0, t0, t0 + 10**9, 0.0)
            store.add_sample(run_id, row, cols, stacks=stacks)
            sample_id += 1
    store.finish_run(run_id, "complete")
    return store


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pairs") / "r.duckdb"
    profiled_run(path)
    return path


def judged(results: Path, *args: str) -> tuple[str, list[tuple[str, str, str]]]:
    done = wannabet_in_process("compare", "-r", str(results), "--profile", "-f", "json", *args)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    return doc["pairs"], [
        (d["baseline"], d["condition"], d["decided"].get("hot", "undecided"))
        for d in doc["differences"]
    ]


def test_each_against_the_baseline_by_default(results: Path) -> None:
    # d has no profile: it takes no part, as before --pairs existed.
    assert judged(results) == ("baseline", [("a", "b", "grew"), ("a", "c", "grew")])
    assert judged(results, "--baseline", "b") == (
        "baseline",
        [("b", "a", "shrank"), ("b", "c", "undecided")],
    )


def test_every_pair_and_each_against_the_one_before(results: Path) -> None:
    assert judged(results, "--pairs", "all") == (
        "all",
        [("a", "b", "grew"), ("a", "c", "grew"), ("b", "c", "undecided")],
    )
    # Holm's family is every frame of every pair, not each pair's frames alone.
    done = wannabet_in_process(
        "compare", "-r", str(results), "--profile", "-f", "json", "--pairs", "all"
    )
    differences = json.loads(done.stdout)["differences"]
    family = sum(d["n_tested"] for d in differences)
    assert family > max(d["n_tested"] for d in differences)
    assert [d["n_family"] for d in differences] == [family] * 3
    assert judged(results, "--pairs", "successive") == (
        "successive",
        [("a", "b", "grew"), ("b", "c", "undecided")],
    )


def test_the_table_names_each_pair(results: Path) -> None:
    done = wannabet_in_process("compare", "-r", str(results), "--profile", "--pairs", "all")
    assert done.returncode == 0, done.stderr
    for title in ("b against a", "c against a", "c against b"):
        assert title in done.stdout, done.stdout
    assert "frames of all pairs" in " ".join(done.stdout.split()), done.stdout
    # The same tables in Markdown: a heading and a pipe table per pair, the same verdicts.
    done = wannabet_in_process(
        "compare", "-r", str(results), "--profile", "--pairs", "all", "-f", "markdown"
    )
    assert done.returncode == 0, done.stderr
    for title in ("b against a", "c against a", "c against b"):
        assert f"### CPU profile: {title}" in done.stdout, done.stdout
    rows = [line for line in done.stdout.splitlines() if line.startswith("| hot ")]
    assert [row.split("|")[-2].strip() for row in rows] == ["grew", "grew", "undecided"]
    assert "─" not in done.stdout  # no box drawing


def test_the_report_and_the_api_follow_the_same_pairs(results: Path) -> None:
    store = Store(results, read_only=True)
    found = run_profiles(store, store.run().run_id, pairs="successive")
    assert found is not None
    assert [(d.baseline, d.label) for d in found.differences] == [("a", "b"), ("b", "c")]
    assert found.to_dict()["pairs"] == "successive"


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--stat", "p99"),
        ("--txn", "t"),
        ("--bayes", None),
        ("--rope", "5%"),
        ("--level", "transaction"),
    ],
)
def test_options_of_the_latency_comparison_are_refused(
    results: Path, option: str, value: str | None
) -> None:
    args = [option] if value is None else [option, value]
    done = wannabet_in_process("compare", "-r", str(results), "--profile", *args)
    line = one_line_error(done, 2)
    assert option in line and "--profile" in line, line


def test_a_run_that_stopped_when_decided_is_judged_at_its_own_alpha(tmp_path: Path) -> None:
    """As plain ``compare``: left out, alpha is the one the run stopped by (its ``[sampling]
    alpha``), not 0.05; ``--alpha`` still wins."""
    path = tmp_path / "r.duckdb"
    rule = {"max_samples": SAMPLES, "alpha": 0.01, "rope_pct": 2.0, "stopped": "decided"}
    profiled_run(path, {"until_decided": rule})

    def alphas(*args: str) -> set[float]:
        done = wannabet_in_process("compare", "-r", str(path), "--profile", "-f", "json", *args)
        assert done.returncode == 0, done.stderr
        return {d["alpha"] for d in json.loads(done.stdout)["differences"]}

    assert alphas() == {0.01}
    assert alphas("--alpha", "0.2") == {0.2}
    plain = wannabet_in_process("compare", "-r", str(path), "-f", "json")
    assert json.loads(plain.stdout)["alpha"] == 0.01
    # The library call resolves it the same way.
    found = Results(path).profiles()
    assert {d.comparison.alpha for d in found.differences} == {0.01}
    # A run that did not stop when decided: 0.05.
    fixed = Results(results_of(tmp_path)).profiles()
    assert {d.comparison.alpha for d in fixed.differences} == {0.05}


def results_of(tmp_path: Path) -> Path:
    path = tmp_path / "fixed.duckdb"
    profiled_run(path)
    return path


def test_options_of_the_latency_comparison_are_refused_by_the_library(results: Path) -> None:
    """``Results.profiles`` takes compare's options and refuses those that do not apply, as
    the command line does, naming them all in the flags' order."""
    with pytest.raises(SpecError) as refused:
        Results(results).profiles(stat="p99", rope="5%", seed=3)
    assert str(refused.value) == (
        "command line: --rope: does not apply to --profile, which compares the profiles' frames"
        " over the samples; drop --rope and --seed and --stat"
    )
    # Left at their defaults they are not given.
    assert Results(results).profiles(metric="latency", seed=0, txn=(), bayes=False).pairs == (
        "baseline"
    )
    with pytest.raises(TypeError, match="colour"):
        Results(results).profiles(colour="red")


def test_a_profiled_run_that_kept_no_profile_says_why(tmp_path: Path) -> None:
    """Not "run it with --profile": it was, and the profiler's warning says what happened."""
    store = Store(tmp_path / "r.duckdb")
    run_id = store.create_run(
        name="lost",
        kind="run",
        seed=1,
        target="sqlite:///x.db",
        settings={"sessions": 1},
        environment={},
        conditions=[ConditionRow(0, "a", {}), ConditionRow(1, "b", {})],
        transaction_types=[("t", 1, "SELECT 1;")],
    )
    t0 = 1_700_000_000_000_000_000
    lost = "profile: the server (postgres 12345) is gone: process no longer exists"
    for sample_id in range(4):
        start = t0 + sample_id * 10**9 + np.arange(5, dtype=np.int64) * 1_000_000
        stats = {"valid": True, "warnings": [lost]}
        row = SampleRow(sample_id, sample_id % 2, 0, sample_id // 2, t0, t0, t0 + 10**9, 0.0)
        store.add_sample(
            run_id,
            dataclasses.replace(row, stats=stats),
            committed_columns(start, start + 500_000),
        )
    store.finish_run(run_id, "complete")
    done = wannabet_in_process("compare", "-r", str(tmp_path / "r.duckdb"), "--profile")
    line = one_line_error(done, 5)
    assert "was profiled, but no sample's profile was recorded" in line, line
    assert "postgres 12345) is gone" in line and "--profile" not in line, line
