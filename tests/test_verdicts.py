"""compare_runs: one run, several runs, and the environments they were recorded in."""

from __future__ import annotations

import json
import textwrap
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from wannabet.analysis.bayes import BayesOptions
from wannabet.backends import parse_target
from wannabet.documents import ComparisonDocument
from wannabet.engine import FakeEngine
from wannabet.errors import SpecError
from wannabet.runner import run_experiment
from wannabet.spec import parse_experiment
from wannabet.store import Store
from wannabet.verdicts import compare_runs, flatten_environment

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
    doc = compare_runs(store, [1, 2], baseline="1:baseline")
    messages = [
        d["message"]
        for c in doc["conditions"]
        for d in c["diagnostics"]
        if d["code"] == "environment-differs"
    ]
    assert messages and "server_version" in messages[0]
    assert "server_settings.journal_mode" in messages[0]


def test_one_run_keeps_plain_labels_and_a_run_object(tmp_path: Path) -> None:
    store = two_runs(tmp_path)
    doc = compare_runs(store)
    assert doc["run"]["run_id"] == 2
    assert [c["condition"] for c in doc["conditions"]] == ["baseline"]
    with pytest.raises(SpecError, match="no condition 'nope' in run 2"):
        compare_runs(store, baseline="nope")


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
        compare_runs(store, baseline="query_only=ON")


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
    if bayes:
        pytest.importorskip("arviz_stats")
    options = BayesOptions(model="gamma", seed=1) if bayes else None
    for runs in ([1], [1, 2]):
        doc = compare_runs(store, runs, bayes=options)
        assert ("bayes" in doc) is bayes
        _conforms(doc, ComparisonDocument, "doc")
