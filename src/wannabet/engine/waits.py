"""The native wait-event poller (``_engine.WaitPoller``) behind a typed wrapper.

The PostgreSQL sampler samples ``pg_stat_activity`` from a thread and a connection of the
engine's own, so that no interpreter work is added to each poll. This wrapper is the only way in:
it names the arguments and results, and turns the engine's exceptions into
:class:`~wannabet.errors.ConnectError` / :class:`~wannabet.errors.QueryError` (with the engine's
``code``) through :func:`wannabet.engine.native.translated`, the one mapping, so no sampler
imports ``_engine`` or catches its classes. Messages are passed on as
the engine wrote them; the caller scrubs them with its target's password.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from wannabet import _engine
from wannabet.engine.native import translated

if TYPE_CHECKING:
    from wannabet._engine import WaitCounts

__all__ = ["WaitPoller"]


class WaitPoller:
    """Wait-event sampling of the sessions named ``application_name``, on its own connection.

    Connects to ``url`` as ``<application_name>-waits``; ``timeout_s`` bounds every statement,
    on the server and in the engine. :meth:`start` before a sample, :meth:`stop` after it.

    Raises
    ------
    ConnectError
        The poller cannot connect.
    QueryError
        Any other failure of the engine (a statement, a poller that is busy or closed).
    WannabetError
        The engine refused the arguments: ``interval_s`` or ``timeout_s`` is not a positive
        number, or the target is no PostgreSQL server.
    """

    def __init__(
        self, url: str, application_name: str, interval_s: float, timeout_s: float
    ) -> None:
        with translated(what="wait poller"):
            self._poller = _engine.WaitPoller(url, application_name, interval_s, timeout_s)

    @property
    def backend_pid(self) -> int:
        """The server process of the poller's connection."""
        with translated(what="wait poller"):
            return int(self._poller.backend_pid)

    @property
    def closed(self) -> bool:
        """True once closed, or when a call found the connection dead."""
        with translated(what="wait poller"):
            return bool(self._poller.closed)

    def query(self, sql: str) -> list[list[str | None]]:
        """Run ``sql`` on the poller's connection between samples; rows as text."""
        with translated(what="wait poller"):
            return [list(row) for row in self._poller.query(sql)]

    def start(self, foreign: Sequence[int] = ()) -> None:
        """Start polling; sessions whose pid is in ``foreign`` belong to another client with
        the same application name and are left out."""
        with translated(what="wait poller"):
            self._poller.start(list(foreign))

    def stop(self) -> WaitCounts:
        """Stop polling and return what the polls saw."""
        with translated(what="wait poller"):
            return self._poller.stop()

    def close(self) -> None:
        """Stop polling if it runs and close the connection."""
        with translated(what="wait poller"):
            self._poller.close()
