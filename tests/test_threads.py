"""call_abandonable: a blocking call the caller can stop waiting for, without leaking what it
gives late."""

from __future__ import annotations

import threading
import time

import pytest

from wannabet.threads import Abandoned, call_abandonable


def test_the_calls_result_is_returned() -> None:
    assert call_abandonable(lambda: 42, name="t", deadline_s=5.0) == 42


def test_the_calls_exception_is_raised_on_the_callers_thread() -> None:
    def fail() -> None:
        raise ValueError("from the call")

    with pytest.raises(ValueError, match="from the call"):
        call_abandonable(fail, name="t", deadline_s=5.0)


def test_past_the_deadline_the_call_is_abandoned_and_its_late_result_discarded() -> None:
    release = threading.Event()
    discarded: list[str] = []
    went = threading.Event()

    def slow() -> str:
        release.wait(10)
        return "late connection"

    def discard(value: str) -> None:
        discarded.append(value)
        went.set()

    began = time.monotonic()
    with pytest.raises(Abandoned) as caught:
        call_abandonable(slow, name="t", deadline_s=0.3, discard=discard)
    assert caught.value.why == "deadline"
    assert 0.3 <= time.monotonic() - began < 5.0
    assert discarded == []
    release.set()
    assert went.wait(5)
    assert discarded == ["late connection"]


def test_stop_abandons_the_call_and_a_late_exception_is_dropped() -> None:
    release = threading.Event()
    asked: list[float] = []

    def slow() -> None:
        release.wait(10)
        raise RuntimeError("nobody hears this")

    def stop() -> bool:
        asked.append(time.monotonic())
        return len(asked) >= 3

    with pytest.raises(Abandoned) as caught:
        call_abandonable(slow, name="t", stop=stop, poll_s=0.05)
    assert caught.value.why == "stopped"
    assert len(asked) == 3
    release.set()


def test_a_call_that_ends_before_stop_is_asked_is_not_abandoned() -> None:
    assert call_abandonable(lambda: "quick", name="t", stop=lambda: True, poll_s=1.0) == "quick"
