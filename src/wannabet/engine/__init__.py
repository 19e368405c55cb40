"""The engine contract: run one sample of a workload and hand back columns.

An engine opens ``sessions`` connections, each on its own OS thread, runs the workload for a
duration or a number of transactions, and returns one row per transaction as columnar arrays:
``session, txn_type, intended_start_ns, start_ns, end_ns, status, error_code, retries``. Times are
wall-clock nanoseconds derived from one monotonic clock anchored once per sample.

:class:`NativeEngine` (Rust, ``wannabet._engine``) is the real one; :class:`FakeEngine` stands in
for it in tests of the runner's logic, never as proof that a database feature works.
"""

from __future__ import annotations

from wannabet.engine.base import (
    Engine,
    Progress,
    SampleRequest,
    SampleResult,
)
from wannabet.engine.fake import FakeEngine
from wannabet.engine.native import NativeEngine
from wannabet.engine.program import Program, compile_program
from wannabet.model import STATUS_NAMES

__all__ = [
    "STATUS_NAMES",
    "Engine",
    "FakeEngine",
    "NativeEngine",
    "Program",
    "Progress",
    "SampleRequest",
    "SampleResult",
    "compile_program",
]
