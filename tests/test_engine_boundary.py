"""The Python↔Rust boundary: the stub of ``wannabet._engine`` matches the module, and every
table both languages hold is the same on both sides (the Rust side exports its own)."""

from __future__ import annotations

import ast
import dataclasses
import math
from pathlib import Path
from typing import get_args

import numpy as np
import pytest

from wannabet import _engine
from wannabet.engine import STATUS_NAMES
from wannabet.engine.native import _NativeRequest
from wannabet.model import OnError
from wannabet.script import (
    FUNCTION_ALIASES,
    FUNCTIONS,
    SEEDED_FUNCTIONS,
    ScriptError,
    parse_script,
)
from wannabet.store.summaries import BIN_COLUMNS, MOMENT_COLUMNS, STATUS_COLUMNS

STUB = Path(_engine.__file__).with_name("_engine.pyi")

#: base classes of the stub's declarations that exist only for the type checker
_TYPING_ONLY = {"TypedDict", "Protocol"}


def _stub_names() -> tuple[set[str], set[str]]:
    """(names the module must define, names that exist only in the stub)"""
    tree = ast.parse(STUB.read_text())
    runtime: set[str] = set()
    typing_only: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
            (typing_only if bases & _TYPING_ONLY else runtime).add(node.name)
        elif isinstance(node, ast.FunctionDef):
            runtime.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            runtime.add(node.target.id)
        elif isinstance(node, ast.Assign):  # a type alias
            typing_only.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return runtime, typing_only


def test_the_stub_declares_exactly_what_the_module_exports() -> None:
    runtime, typing_only = _stub_names()
    public = {name for name in dir(_engine) if not name.startswith("_")}
    assert public == runtime
    assert not typing_only & public


def test_the_stub_declares_every_method_of_the_wait_poller() -> None:
    tree = ast.parse(STUB.read_text())
    (poller,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "WaitPoller")
    declared = {n.name for n in poller.body if isinstance(n, ast.FunctionDef)} - {"__init__"}
    public = {name for name in vars(_engine.WaitPoller) if not name.startswith("_")}
    assert public == declared


def test_the_stub_declares_the_attributes_of_the_engine_errors() -> None:
    tree = ast.parse(STUB.read_text())
    for cls in (_engine.EngineError, _engine.QueryError):
        (node,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls.__name__)
        declared = {
            n.target.id
            for n in node.body
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
        }
        # The engine sets every attribute to None on the class, so instances always have them.
        assert declared == {k for k, v in vars(cls).items() if v is None and not k.startswith("_")}


def test_status_names_match_the_engine() -> None:
    assert STATUS_NAMES == _engine.STATUS_NAMES


def test_script_functions_match_the_engine() -> None:
    # What the engine takes once the parser has resolved aliases and added default seeds.
    compiled = {
        FUNCTION_ALIASES.get(name, name): (
            (SEEDED_FUNCTIONS[name], SEEDED_FUNCTIONS[name]) if name in SEEDED_FUNCTIONS else arity
        )
        for name, arity in FUNCTIONS.items()
    }
    assert compiled == _engine.SCRIPT_FUNCTIONS


def test_on_error_values_match_the_engine() -> None:
    assert get_args(OnError) == _engine.ON_ERROR


def _accepts(call: str) -> bool:
    """Whether the script parser takes the call's constant parameter."""
    try:
        parse_script(f"\\set x {call}\nSELECT 1;\n")
    except ScriptError as exc:
        if "parameter" not in str(exc):
            raise
        return False
    return True


def test_the_zipfian_parameter_bounds_match_the_engine() -> None:
    low, high = _engine.ZIPFIAN_PARAMETER_RANGE
    assert _accepts(f"random_zipfian(1, 10, {low!r})")
    assert _accepts(f"random_zipfian(1, 10, {high!r})")
    assert not _accepts(f"random_zipfian(1, 10, {math.nextafter(low, 0)!r})")
    assert not _accepts(f"random_zipfian(1, 10, {math.nextafter(high, math.inf)!r})")


def test_the_gaussian_parameter_bound_matches_the_engine() -> None:
    low = _engine.GAUSSIAN_MIN_PARAMETER
    assert _accepts(f"random_gaussian(1, 10, {low!r})")
    assert not _accepts(f"random_gaussian(1, 10, {math.nextafter(low, 0)!r})")


def _stub_class(name: str) -> ast.ClassDef:
    tree = ast.parse(STUB.read_text())
    (node,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    return node


def test_the_request_carries_exactly_what_the_engine_reads() -> None:
    read = [n.name for n in _stub_class("SampleCall").body if isinstance(n, ast.FunctionDef)]
    assert read == [f.name for f in dataclasses.fields(_NativeRequest)]


@pytest.mark.parametrize(
    ("typed_dict", "columns"),
    [("Moments", MOMENT_COLUMNS), ("Statuses", STATUS_COLUMNS), ("Bins", BIN_COLUMNS)],
)
def test_the_summaries_the_engine_returns_have_the_stores_columns(
    typed_dict: str, columns: tuple[tuple[str, type], ...]
) -> None:
    declared = []
    for n in _stub_class(typed_dict).body:
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            # NDArray[np.<dtype>]
            assert isinstance(n.annotation, ast.Subscript)
            assert isinstance(n.annotation.slice, ast.Attribute)
            declared.append((n.target.id, getattr(np, n.annotation.slice.attr)))
    assert declared == list(columns)
