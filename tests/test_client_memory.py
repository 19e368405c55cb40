"""What the client side of a sample costs (issue #14): bytes received from the server and the
process's peak resident memory, per sample."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from wannabet.backends import parse_target
from wannabet.engine import NativeEngine, SampleRequest, SampleResult, compile_program
from wannabet.engine.base import COLUMNS
from wannabet.samplers.process import ProcessSampler
from wannabet.spec import parse_experiment
from wannabet.testing import ThrowawayPostgres


def test_the_engine_counts_the_bytes_it_received(postgres: ThrowawayPostgres) -> None:
    spec = "name = 'e'\n[[workload.transactions]]\nscript = \"SELECT repeat('x', 100000);\"\n"
    target = parse_target(postgres.url)
    request = SampleRequest(
        program=compile_program(parse_experiment(spec, file="e").workload, "dollar"),
        sessions=1,
        session_sql=(),
        duration_ns=0,
        max_transactions=50,
        seed=1,
    )
    received = NativeEngine().run_sample(target, request).counters["bytes_received"]
    # 50 rows of 100,000 bytes, and a little protocol around each; nothing of the set-up.
    assert 50 * 100_000 <= received < 50 * 101_000


def test_the_peak_resident_memory_is_each_samples_own(tmp_path: Path) -> None:
    sampler = ProcessSampler()
    result = SampleResult(
        t0_ns=0, end_ns=1, columns={name: np.zeros(0, dtype=dtype) for name, dtype in COLUMNS}
    )
    sampler.start()
    block = bytearray(300 * 1024 * 1024)  # touched: zero-filled pages are resident
    block[::4096] = b"x" * len(block[::4096])
    del block
    big = sampler.stop(result).values["peak_rss_bytes"]
    sampler.start()
    small = sampler.stop(result).values["peak_rss_bytes"]
    assert big is not None and small is not None
    assert big - small > 250 * 1024 * 1024
