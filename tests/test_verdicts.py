"""compare_runs: one run, several runs, and the environments they were recorded in."""

from __future__ import annotations

import json
import re
import textwrap
import types
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from wannabet.analysis.bayes import BayesOptions
from wannabet.backends import parse_target
from wannabet.documents import ComparisonDocument
from wannabet.engine import FakeEngine
from wannabet.errors import SpecError
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.verdicts import (
    ComparisonOptions,
    analyze_runs,
    compare_runs,
    comparison_documents,
    comparison_options,
    flatten_environment,
)

SPEC = textwrap.dedent(
    """\
    name = "v"
    [workload]
    sessions = 2
    [[workload.transactions]]
    script = "SELECT 1;"
    [sampling]
    samples = 8
    warmup = "0s"
    seed = 1
    """
)


def two_runs(tmp_path: Path) -> Store:
    store = Store(tmp_path / "r.duckdb")
    for _ in range(2):
        run_experiment(
            parse_experiment(SPEC, file="v.toml"),
            target=parse_target(f"sqlite:///{tmp_path}/t.db"),
            store=store,
            engine=FakeEngine(transactions_per_sample=100),
        )
    return store


def test_several_runs_are_compared_with_labelled_conditions(tmp_path: Path) -> None:
    store = two_runs(tmp_path)
    doc = compare_runs(store, [1, 2])
    assert [r["run_id"] for r in doc["run"]] == [1, 2]
    assert [c["condition"] for c in doc["conditions"]] == ["1:baseline", "2:baseline"]
    (cmp,) = doc["comparisons"]
    assert cmp["baseline"] == "1:baseline"
    codes = [d["code"] for c in doc["conditions"] for d in c["diagnostics"]]
    assert "environment-differs" not in codes


def test_runs_from_different_environments_are_flagged(tmp_path: Path) -> None:
    store = two_runs(tmp_path)
    with store.read() as con:
        env = json.loads(con.execute("SELECT environment FROM runs WHERE run_id = 2").fetchone()[0])
        env["server_version"] = "3.99.0"
        env["server_settings"]["journal_mode"] = "delete"
        con.execute("UPDATE runs SET environment = ? WHERE run_id = 2", [json.dumps(env)])
    doc = compare_runs(store, [1, 2], ComparisonOptions(baseline="1:baseline"))
    messages = [
        d["message"]
        for c in doc["conditions"]
        for d in c["diagnostics"]
        if d["code"] == "environment-differs"
    ]
    assert messages and "server_version" in messages[0]
    assert "server_settings.journal_mode" in messages[0]
    # Markdown, "for tickets", carries the same diagnostics as the terminal.
    from wannabet.render.markdown import comparison_markdown

    text = comparison_markdown(doc)
    assert "**Diagnostics**" in text
    lines = [ln for ln in text.splitlines() if "server_settings.journal_mode" in ln]
    assert lines and all(ln.startswith("- ") and " → " in ln for ln in lines)


def test_one_run_keeps_plain_labels_and_a_run_object(tmp_path: Path) -> None:
    store = two_runs(tmp_path)
    doc = compare_runs(store)
    assert doc["run"]["run_id"] == 2
    assert [c["condition"] for c in doc["conditions"]] == ["baseline"]
    with pytest.raises(SpecError, match="no condition 'nope' in run 2"):
        compare_runs(store, options=ComparisonOptions(baseline="nope"))


def test_flatten_environment() -> None:
    assert flatten_environment({"a": 1, "s": {"x": "on", "y": None}}) == {
        "a": "1",
        "s.x": "on",
        "s.y": "None",
    }


# query_only = ON makes every update fail: that condition has no response time at all.
ALL_FAIL = textwrap.dedent(
    """\
    name = "all-fail"
    [setup]
    sql = '''
    DROP TABLE IF EXISTS t;
    CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL);
    INSERT INTO t VALUES (1, 0);
    '''
    [workload]
    sessions = 1
    [[workload.transactions]]
    script = "UPDATE t SET v = v + 1 WHERE id = 1;"
    [[factors]]
    name = "query_only"
    levels = ["OFF", "ON", "0"]
    session_sql = "PRAGMA query_only = {level}"
    [sampling]
    samples = 3
    duration = "0.1s"
    warmup = "0s"
    seed = 2
    """
)


def test_a_condition_without_one_success_is_left_out_and_named(tmp_path: Path) -> None:
    from wannabet.engine.native import NativeEngine

    store = Store(tmp_path / "r.duckdb")
    run_experiment(
        parse_experiment(ALL_FAIL, file="all-fail.toml"),
        target=parse_target(f"sqlite:///{tmp_path}/t.db"),
        store=store,
        engine=NativeEngine(),
    )
    doc = compare_runs(store)
    assert doc["excluded"] == [
        {"condition": "query_only=ON", "reason": "no successful transaction"}
    ]
    assert [c["condition"] for c in doc["conditions"]] == ["query_only=OFF", "query_only=0"]
    assert [c["condition"] for c in doc["comparisons"]] == ["query_only=0"]
    json.dumps(doc, allow_nan=False)
    with pytest.raises(SpecError, match="baseline 'query_only=ON' has no successful"):
        compare_runs(store, options=ComparisonOptions(baseline="query_only=ON"))
    # The Bayesian estimates leave out the same condition rather than refuse the run.
    from wannabet.analysis.bayes import BayesOptions

    doc = compare_runs(store, options=ComparisonOptions(bayes=BayesOptions()))
    assert [c["condition"] for c in doc["comparisons"]] == ["query_only=0"]
    assert "bayes" in doc["comparisons"][0]
    assert doc["excluded"] == [
        {"condition": "query_only=ON", "reason": "no successful transaction"}
    ]


def _conforms(value: Any, hint: Any, where: str) -> None:
    """``value`` has the shape ``hint`` (a TypedDict, list or union of them) describes: every
    required key, no key the type does not name."""
    if typing.is_typeddict(hint):
        assert isinstance(value, dict), where
        hints = typing.get_type_hints(hint)
        missing = hint.__required_keys__ - value.keys()
        unknown = value.keys() - hints.keys()
        assert not missing and not unknown, f"{where}: missing {missing}, unknown {unknown}"
        for key, item in value.items():
            _conforms(item, hints[key], f"{where}.{key}")
        return
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            assert type(None) in args, f"{where}: None"
            return
        chosen = (
            [a for a in args if typing.get_origin(a) is list]
            if isinstance(value, list)
            else [a for a in args if a is not type(None) and typing.get_origin(a) is not list]
        )
        assert chosen, f"{where}: {type(value).__name__} not allowed"
        _conforms(value, chosen[0], where)
    elif origin is list:
        assert isinstance(value, list), where
        for i, item in enumerate(value):
            _conforms(item, args[0], f"{where}[{i}]")


@pytest.mark.parametrize("bayes", [False, True], ids=["plain", "bayes"])
def test_the_document_has_exactly_the_typed_keys(tmp_path: Path, bayes: bool) -> None:
    store = two_runs(tmp_path)
    options = BayesOptions(model="gamma", seed=1) if bayes else None
    for runs in ([1], [1, 2]):
        doc = compare_runs(store, runs, ComparisonOptions(bayes=options))
        assert ("bayes" in doc) is bayes
        _conforms(doc, ComparisonDocument, "doc")


# -- per-type, per-statistic verdicts (compare --txn/--stat, issue #13) ------------------------


def mixed_run(path: Path, *, samples: int = 12, seed: int = 3, slow_share: float = 0.04) -> Store:
    """A run of a mixed workload: ``lookup`` unchanged, ``update``'s slow tail 1.8x slower in
    ``after`` (its p99 worse, its median not), as in the fillfactor experiment of #13."""
    from wannabet.store import ConditionRow, SampleRow

    store = Store(path / "mixed.duckdb")
    run_id = store.create_run(
        name="mixed",
        kind="run",
        conditions=[ConditionRow(0, "before", {}), ConditionRow(1, "after", {})],
        transaction_types=[("lookup", 1, "SELECT 1;"), ("update", 1, "UPDATE t SET x = 1;")],
    )
    rng = np.random.default_rng(seed)
    t0 = 1_000_000_000_000
    for position in range(2 * samples):
        cond = position % 2
        n = 2000
        txn = rng.integers(0, 2, n).astype(np.int16)
        effect = rng.normal(0, 0.03)
        slow = rng.random(n) < slow_share
        tail = 1.8 if cond == 1 else 1.0
        base = np.where(txn == 0, 0.2, 1.0)  # ms: lookups fast, updates slow
        ms = (
            base
            * np.exp(effect + 0.3 * rng.standard_normal(n))
            * np.where(slow, 5 * np.where(txn == 1, tail, 1.0), 1.0)
        )
        lat = np.round(ms * 1e6).astype(np.int64)
        start = t0 + np.sort(rng.integers(0, 2_000_000_000, n))
        sample = SampleRow(position, cond, position, position, t0, t0, t0 + 2_000_000_000, 0.0)
        store.add_sample(
            run_id,
            sample,
            {
                "session": np.arange(n) % 2,
                "txn_type": txn,
                "intended_start_ns": start,
                "start_ns": start,
                "end_ns": start + lat,
                "status": np.zeros(n, np.int8),
                "error_code": np.full(n, -1, np.int32),
                "retries": np.zeros(n, np.int32),
            },
        )
        t0 += 3_000_000_000
    store.finish_run(run_id, "complete")
    return store


@pytest.mark.parametrize("level", ["sample", "transaction"])
def test_a_worse_update_p99_is_found_per_type(tmp_path: Path, level: str) -> None:
    store = mixed_run(tmp_path)
    options = ComparisonOptions(level=level, txn=("update", "lookup"), stat="p99")
    update, lookup = comparison_documents(store, [], options)
    assert (update["txn"], update["stat"], lookup["txn"]) == ("update", "p99", "lookup")
    assert update["comparisons"][0]["verdict"] == "slower"
    assert update["comparisons"][0]["delta_pct"] > 20
    assert lookup["comparisons"][0]["verdict"] != "slower"
    # The median of updates hardly moves: the slow tail is 4% of them.
    median = comparison_documents(
        store, [], ComparisonOptions(level=level, txn=("update",), stat="median")
    )[0]
    assert median["comparisons"][0]["verdict"] != "slower"
    for doc in (update, lookup, median):
        _conforms(doc, ComparisonDocument, "doc")


def test_a_statistic_of_all_types_comes_with_each_types_own(tmp_path: Path) -> None:
    """``compare --stat p99`` without ``--txn``: all types together and each type too, each
    type's document the one ``--txn NAME --stat p99`` gives, in every format."""
    from wannabet.render.compare import compare_csv, compare_table
    from wannabet.render.markdown import comparison_markdown

    store = mixed_run(tmp_path)
    [doc] = comparison_documents(store, [], ComparisonOptions(stat="p99"))
    assert doc["stat"] == "p99" and doc["txn"] is None
    types = {str(t["txn"]): t for t in doc["types"]}
    assert sorted(types) == ["lookup", "update"]
    for name, t in types.items():
        [alone] = comparison_documents(store, [], ComparisonOptions(txn=(name,), stat="p99"))
        assert t == alone
        _conforms(t, ComparisonDocument, "types[]")
    assert types["update"]["comparisons"][0]["verdict"] == "slower"
    assert types["lookup"]["comparisons"][0]["verdict"] != "slower"
    assert "Per transaction type (p99 of the type)" in comparison_markdown(doc)
    assert "Δ p99" in comparison_markdown(doc)
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(compare_csv(doc))))
    # The rows of all types together, then each type's, with the type named.
    assert [r["txn"] for r in rows] == ["all", "all", "lookup", "lookup", "update", "update"]
    assert {r["stat"] for r in rows} == {"p99"}
    from rich.console import Console

    console = Console(width=200, record=True, color_system=None)
    console.print(compare_table(doc))
    assert "Per transaction type (p99 of the type)" in console.export_text()
    # A named type is judged alone, without the others.
    [alone] = comparison_documents(store, [], ComparisonOptions(txn=("update",), stat="p99"))
    assert "types" not in alone


def test_the_default_comparison_is_unchanged_by_the_new_options(tmp_path: Path) -> None:
    store = mixed_run(tmp_path, samples=6)
    (doc,) = comparison_documents(store, [], ComparisonOptions())
    # With two transaction types the document gains each type's own comparison of its mean,
    # the very document --txn NAME --stat mean gives; the rest is unchanged.
    types = doc.pop("types")
    assert doc == compare_runs(store)
    assert "stat" not in doc and "txn" not in doc
    assert [t["txn"] for t in types] == ["lookup", "update"]
    for t in types:
        [alone] = comparison_documents(
            store, [], ComparisonOptions(txn=(str(t["txn"]),), stat="mean")
        )
        assert t == alone
        _conforms(t, ComparisonDocument, "types[]")
    by_stat = comparison_documents(store, [], ComparisonOptions(stat="mean"))[0]
    assert by_stat["stat"] == "mean" and by_stat["txn"] is None
    # The sample-level mean of all types is the same judgement either way.
    assert by_stat["comparisons"][0]["p_value"] == pytest.approx(doc["comparisons"][0]["p_value"])
    assert by_stat["comparisons"][0]["verdict"] == doc["comparisons"][0]["verdict"]


def test_an_unknown_type_or_statistic_is_one_line_naming_the_choices(tmp_path: Path) -> None:
    store = mixed_run(tmp_path, samples=3)
    with pytest.raises(SpecError, match="no transaction type 'insert'; its types: lookup, update"):
        comparison_documents(store, [], ComparisonOptions(txn=("insert",)))
    with pytest.raises(SpecError, match=r"use one of mean, median, p90, p95, p99, p99\.9, tps"):
        comparison_options(store, stat="p50")
    with pytest.raises(SpecError, match="drop --bayes"):
        comparison_options(store, stat="p99", bayes=True)


def test_modes_that_are_the_transaction_types_are_named_not_warned_about(tmp_path: Path) -> None:
    store = mixed_run(tmp_path, samples=10, slow_share=0.0)
    doc = compare_runs(store)
    codes = [d["code"] for c in doc["conditions"] for d in c["diagnostics"]]
    assert "bimodal" not in codes
    notes = [
        d["message"]
        for c in doc["conditions"]
        for d in c["diagnostics"]
        if d["code"] == "bimodal-mix"
    ]
    assert len(notes) == 2 and all(
        re.search(r"lookup near 0\.[12]\d* ms, update near (0\.9|1\.0)", m) for m in notes
    )


def test_per_type_tps_adds_up_and_the_mean_keeps_its_transaction_level_test(
    tmp_path: Path,
) -> None:
    store = mixed_run(tmp_path, samples=6)
    docs = comparison_documents(store, [], ComparisonOptions(txn=("lookup", "update"), stat="tps"))
    whole = comparison_documents(store, [], ComparisonOptions(stat="tps"))[0]
    for i, c in enumerate(whole["conditions"]):
        parts = sum(d["conditions"][i]["stat_value"] for d in docs)
        assert parts == pytest.approx(c["stat_value"], rel=1e-12)
    assert whole["metric"] == "throughput" and whole["unit"] == "tps"
    (mean,) = comparison_documents(
        store, [], ComparisonOptions(level="transaction", txn=("update",), stat="mean")
    )
    assert mean["level"] == "transaction"
    assert mean["comparisons"][0]["test"] == "cluster welch-t"
    assert mean["comparisons"][0]["ci_pct"][0] is not None


def test_compare_runs_takes_every_option_compare_takes(tmp_path: Path) -> None:
    """compare_runs is made with ComparisonOptions, so no option of compare is out of its
    reach (it had no ``pairs``, ``txn`` or ``stat`` when it spelled its options out)."""
    store = mixed_run(tmp_path, samples=6)
    chosen = ComparisonOptions(txn=("update",), stat="p99", pairs="successive", alpha=0.01)
    doc = compare_runs(store, options=chosen)
    assert (doc["stat"], doc["txn"], doc["pairs"], doc["alpha"]) == (
        "p99",
        "update",
        "successive",
        0.01,
    )
    # The very document compare --txn update --stat p99 --pairs successive prints.
    assert [doc] == comparison_documents(store, [], chosen)
    with pytest.raises(ValueError, match="use analyze"):
        analyze_runs(store, [], chosen)
