"""Conditions and the randomized-block run order."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from wannabet.design import conditions, schedule
from wannabet.model import Factor


def test_conditions_are_the_cartesian_product() -> None:
    factors = (
        Factor("encryption", ("none", "aes128", "aes256"), session_sql="SET enc = '{level}'"),
        Factor("aesni", ("on", "off"), system_sql="ALTER SYSTEM SET aesni = {level}"),
    )
    found = conditions(factors)
    assert [c.label for c in found] == [
        "encryption=none,aesni=on",
        "encryption=none,aesni=off",
        "encryption=aes128,aesni=on",
        "encryption=aes128,aesni=off",
        "encryption=aes256,aesni=on",
        "encryption=aes256,aesni=off",
    ]
    assert found[3].session_sql == ("SET enc = 'aes128'",)
    assert found[3].system_sql == ("ALTER SYSTEM SET aesni = off",)


def test_no_factors_means_one_baseline_condition() -> None:
    (only,) = conditions(())
    assert only.label == "baseline" and only.session_sql == ()


@given(st.integers(1, 6), st.integers(1, 12), st.integers(0, 2**31))
def test_randomized_blocks_run_every_condition_once_per_block(
    n: int, samples: int, seed: int
) -> None:
    plan = schedule(n, samples, "randomized-blocks", seed)
    assert len(plan) == n * samples
    assert [s.position for s in plan] == list(range(n * samples))
    for block in range(samples):
        in_block = [s.condition_index for s in plan if s.block == block]
        assert sorted(in_block) == list(range(n))
    assert plan == schedule(n, samples, "randomized-blocks", seed)


def test_randomized_blocks_actually_shuffle() -> None:
    plan = schedule(3, 30, "randomized-blocks", 1)
    first_in_block = Counter(s.condition_index for s in plan if s.position % 3 == 0)
    assert len(first_in_block) == 3  # every condition gets to go first sometimes
    assert schedule(3, 30, "randomized-blocks", 2) != plan


def test_blocks_and_sequential_orders() -> None:
    assert [s.condition_index for s in schedule(2, 2, "blocks", 0)] == [0, 1, 0, 1]
    assert [s.condition_index for s in schedule(2, 2, "sequential", 0)] == [0, 0, 1, 1]
