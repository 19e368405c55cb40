"""A blocking call that the caller can stop waiting for.

Some calls cannot be cut from outside once they block: a driver's read on a frozen server whose
kernel keeps the connection alive, ``ray.init`` on an address that accepts and then answers
nothing, a connect past which Ctrl-C should not wait. :func:`call_abandonable` runs such a call
on a daemon thread of its own and waits for it until it returns, a deadline passes, or the caller
says to stop; the call is then left to end on its own, and whatever it returns late is handed to
``discard`` (a connection to close), so nothing is leaked and nothing is returned twice.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Literal, TypeVar

_T = TypeVar("_T")

_POLL_S = 0.1


class Abandoned(Exception):
    """The caller stopped waiting: ``why`` is ``"deadline"`` or ``"stopped"``."""

    def __init__(self, why: Literal["deadline", "stopped"], waited_s: float) -> None:
        super().__init__(f"abandoned ({why}) after {waited_s:.1f} s")
        self.why: Literal["deadline", "stopped"] = why
        self.waited_s = waited_s


def call_abandonable(
    call: Callable[[], _T],
    *,
    name: str,
    deadline_s: float | None = None,
    stop: Callable[[], bool] | None = None,
    discard: Callable[[_T], None] | None = None,
    poll_s: float = _POLL_S,
) -> _T:
    """``call()`` on a daemon thread named ``name``; its result, or the exception it raised
    (re-raised here, on the caller's thread).

    Raises :class:`Abandoned` once ``deadline_s`` has passed (``why="deadline"``) or when
    ``stop()``, asked every ``poll_s``, says so (``why="stopped"``). A result the call gives
    after that goes to ``discard``; an exception it raises after that is dropped.
    """
    began = time.monotonic()
    lock = threading.Lock()
    done = threading.Event()
    outcome: list[tuple[bool, object]] = []  # [(True, result)] or [(False, exception)]
    abandoned = False

    def work() -> None:
        try:
            got: tuple[bool, object] = (True, call())
        except BaseException as exc:  # handed to the caller's thread
            got = (False, exc)
        with lock:
            if abandoned:
                if got[0] and discard is not None:
                    with contextlib.suppress(Exception):
                        discard(got[1])  # type: ignore[arg-type]
                return
            outcome.append(got)
            done.set()

    threading.Thread(target=work, name=name, daemon=True).start()
    while True:
        waited = time.monotonic() - began
        wait_s = poll_s if stop is not None else None
        if deadline_s is not None:
            left = deadline_s - waited
            wait_s = left if wait_s is None else min(wait_s, left)
        if done.wait(max(wait_s, 0.0) if wait_s is not None else None):
            break
        waited = time.monotonic() - began
        why: Literal["deadline", "stopped"] | None = None
        if deadline_s is not None and waited >= deadline_s:
            why = "deadline"
        elif stop is not None and stop():
            why = "stopped"
        if why is not None:
            with lock:
                if not done.is_set():
                    abandoned = True
                    raise Abandoned(why, waited)
            break
    ok, value = outcome[0]
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]
