"""Oracle's figures per sample, from the views the reference articles read.

- ``v$sysstat``: :data:`SYSSTAT` (consistent gets, physical reads and writes, redo size and
  writes, user commits and rollbacks, parse and execute counts);
- ``v$sys_time_model``: :data:`TIME_MODEL` (DB time, DB CPU, background CPU), microseconds;
- ``v$system_event``: every non-idle wait event's waits and ``time_waited_micro``;
- ``v$event_histogram``: the latency buckets of :data:`HISTOGRAM_EVENTS` (log file sync);
- ``v$instance``: the startup time, so a restart between snapshots invalidates the sample.

All are instance-wide counters since startup: the sample's figures are after − before. A counter
that went backwards or an instance that restarted leaves the sample without figures (marked
invalid), never with a partial one. A view the user may not read is found when the run starts
(:func:`check`): the run then records no Oracle figures and says which view and which grant,
rather than record some of them.

No Oracle server can run in the test suite: this module is tested against view contents in
Oracle's documented layout, held in SQLite, not against a live server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from wannabet.engine.base import SampleResult
from wannabet.errors import MissingExtra
from wannabet.samplers.base import Interrupted, Section, StatsWarning, delta, never

#: runs one statement, returns its rows
Query = Callable[[str], Sequence[Sequence[Any]]]

SYSSTAT = (
    "user commits",
    "user rollbacks",
    "user calls",
    "execute count",
    "parse count (total)",
    "parse count (hard)",
    "session logical reads",
    "consistent gets",
    "db block gets",
    "physical reads",
    "physical writes",
    "physical read total bytes",
    "physical write total bytes",
    "redo size",
    "redo writes",
    "redo synch writes",
    "CPU used by this session",
)
TIME_MODEL = ("DB time", "DB CPU", "background cpu time", "background elapsed time")
HISTOGRAM_EVENTS = ("log file sync", "log file parallel write")

VIEWS: dict[str, str] = {
    "v$sysstat": "SELECT name, value FROM v$sysstat WHERE name IN ({sysstat})",
    "v$sys_time_model": "SELECT stat_name, value FROM v$sys_time_model WHERE stat_name IN ({time})",
    "v$system_event": (
        "SELECT event, wait_class, total_waits, time_waited_micro FROM v$system_event"
        " WHERE wait_class <> 'Idle'"
    ),
    "v$event_histogram": (
        "SELECT event, wait_time_milli, wait_count FROM v$event_histogram WHERE event IN ({hist})"
    ),
    "v$instance": "SELECT startup_time FROM v$instance",
}
GRANT = (
    "grant SELECT_CATALOG_ROLE to the user (or SELECT on V_$SYSSTAT, V_$SYS_TIME_MODEL,"
    " V_$SYSTEM_EVENT, V_$EVENT_HISTOGRAM and V_$INSTANCE)"
)


#: the longest a statistics round trip may wait for the server, in ms
CALL_TIMEOUT_MS = 10_000


def _in(names: Sequence[str]) -> str:
    return ", ".join("'" + n.replace("'", "''") + "'" for n in names)


def sql(view: str) -> str:
    """The statement that reads ``view``."""
    return VIEWS[view].format(
        sysstat=_in(SYSSTAT), time=_in(TIME_MODEL), hist=_in(HISTOGRAM_EVENTS)
    )


def snapshot(query: Query) -> dict[str, Any]:
    """Every view's current contents, keyed for :func:`deltas`."""
    events = {
        str(event): (str(wclass), int(waits), int(micro))
        for event, wclass, waits, micro in query(sql("v$system_event"))
    }
    return {
        "sysstat": {str(n): int(v) for n, v in query(sql("v$sysstat"))},
        "time_model": {str(n): int(v) for n, v in query(sql("v$sys_time_model"))},
        "events": events,
        "histogram": {(str(e), int(ms)): int(n) for e, ms, n in query(sql("v$event_histogram"))},
        "startup": str(query(sql("v$instance"))[0][0]),
    }


def deltas(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The sample's figures, and why they cannot be trusted (empty: they can)."""
    if before["startup"] != after["startup"]:
        return {}, ["the instance restarted during the sample"]
    sysstat, back1 = delta(before["sysstat"], after["sysstat"])
    time_model, back2 = delta(before["time_model"], after["time_model"])
    events = []
    back3 = []
    for event, (wclass, waits, micro) in after["events"].items():
        # An event appears in v$system_event at its first wait since startup.
        _, waits0, micro0 = before["events"].get(event, (wclass, 0, 0))
        if waits < waits0 or micro < micro0:
            back3.append(event)
        elif waits > waits0:
            events.append(
                {"type": wclass, "event": event, "waits": waits - waits0,
                 "wait_s": (micro - micro0) / 1e6}
            )  # fmt: skip
    back3 += [e for e in before["events"] if e not in after["events"]]
    histogram: dict[str, list[list[int]]] = {}
    for (event, ms), n in sorted(after["histogram"].items()):
        d = n - before["histogram"].get((event, ms), 0)
        if d < 0:
            back3.append(f"{event} histogram")
        elif d:
            histogram.setdefault(event, []).append([ms, d])
    backwards = back1 + back2 + back3
    if backwards:
        return {}, [f"{', '.join(backwards)} went backwards (statistics reset?)"]
    events.sort(key=lambda e: -e["wait_s"])
    cpu_us = [time_model.get(k) for k in ("DB CPU", "background cpu time")]
    values: dict[str, Any] = {
        "sysstat": sysstat,
        "time_model": time_model,
        # The seed's CPU: foreground (DB CPU) and background processes, in seconds.
        "cpu_s": sum(cpu_us) / 1e6 if None not in cpu_us else None,  # type: ignore[arg-type]
        "db_time_s": time_model["DB time"] / 1e6 if "DB time" in time_model else None,
        "waits": {"wait_s": sum(e["wait_s"] for e in events), "events": events},
        "histograms": histogram,
        "server_commits": sysstat.get("user commits"),
    }
    return values, []


def check(query: Query) -> list[StatsWarning]:
    """Whether every view can be read; one warning naming the first one that cannot."""
    for view in VIEWS:
        try:
            query(sql(view))
        except Exception as exc:
            message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return [
                StatsWarning(
                    "oracle",
                    f"cannot read {view} ({message}); {GRANT}. No Oracle statistics are"
                    " recorded for this run",
                )
            ]
    return []


class OracleSampler:
    """Instance-wide Oracle statistics around each sample, on a connection of its own."""

    name = "oracle"

    def __init__(
        self, query: Query, close: Callable[[], None] = lambda: None, cores: int | None = None
    ) -> None:
        self._query = query
        self._close = close
        #: the server's cores, for utilization and the response-time curve
        self._cores = cores
        self._before: dict[str, Any] | None = None

    def start(self, interrupted: Interrupted = never) -> None:
        self._before = snapshot(self._query)

    def stop(self, result: SampleResult, interrupted: Interrupted = never) -> Section:
        if self._before is None:
            raise RuntimeError("stop() without start()")
        after = snapshot(self._query)
        values, invalid = deltas(self._before, after)
        if values:
            values["cores"] = self._cores
        self._before = None
        return Section(self.name, values, tuple(invalid))

    def close(self) -> None:
        self._close()


def cores(query: Query) -> int | None:
    """The server's CPUs (``v$osstat`` NUM_CPUS), None if that view cannot be read."""
    try:
        rows = query("SELECT value FROM v$osstat WHERE stat_name = 'NUM_CPUS'")
        return int(rows[0][0]) if rows else None
    except Exception:
        return None


def samplers_for(
    target: Any, server_cores: int | None = None
) -> tuple[list[OracleSampler], list[StatsWarning]]:
    """The Oracle sampler on its own connection, or a warning saying why there is none;
    ``server_cores`` (``[statistics] server_cores``) overrides ``v$osstat``."""
    from wannabet.backends.oracle.driver import connect

    try:
        conn = connect(target)
    except MissingExtra:
        # Not a statistics problem: the run cannot reach Oracle at all without the extra.
        raise
    except Exception as exc:
        return [], [StatsWarning("oracle", f"cannot connect for statistics: {exc}")]
    # Every round trip of the statistics connection gives up after this long (python-oracledb's
    # call timeout): a server that stops answering must not hold the sample's end.
    conn.call_timeout = CALL_TIMEOUT_MS
    cursor = conn.cursor()

    def query(statement: str) -> list[Any]:
        cursor.execute(statement)
        return list(cursor.fetchall())

    warnings = check(query)
    if warnings:
        conn.close()
        return [], warnings
    return [OracleSampler(query, conn.close, server_cores or cores(query))], []
