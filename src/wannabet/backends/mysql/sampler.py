"""MySQL and MariaDB statistics around each sample, read through the engine's connections.

What one sample gets (deltas between a snapshot right before and right after it):

- ``SHOW GLOBAL STATUS``: the counters (commits, rollbacks, rows read and changed, buffer pool
  reads and requests, redo writes and fsyncs, data read and written, temporary tables, lock
  waits) as deltas (``status``); the other values (threads running, pages dirty) as read after
  the sample (``levels``);
- ``performance_schema`` wait events (``events_waits_summary_global_by_event_name``): the time
  every thread of the server spent waiting on each event, from the server's own timers (not
  sampled), ``idle`` excluded. The table I/O and table lock events are kept apart
  (``handler_s``), not summed into ``wait_s``: they time the storage engine's row calls, CPU
  included, around the file waits a call causes (which are events of their own); and the
  statements that took the most time (``events_statements_summary_by_digest``; MariaDB leaves
  executions of prepared statements out of it, so with the ``prepared`` protocol the list may be
  empty). With ``performance_schema`` off (MariaDB's default) both are absent and a warning
  says how to turn it on; a user without SELECT on a summary table goes without what it gives,
  keeps the rest, and a warning names the table and the GRANT;
- server CPU time of the server process from ``/proc`` (psutil), when the server runs on this
  machine: its pid file names the process, whose start time must match the server's uptime;
  otherwise it is unknown (``None``), never guessed.

Commits cross-check. ``Com_commit`` counts the COMMIT statements the server ran; the engine
counts the ones that succeeded. Autocommit statements are not counted by either (MySQL keeps no
count of them). The snapshots' own statements commit nothing, so the two agree exactly unless
another client commits on the same server meanwhile.

A counter that went backwards (``FLUSH STATUS``, ``TRUNCATE`` of a summary table, a restart
that ``Uptime`` shows) makes the sample's statistics invalid rather than wrong.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import psutil  # type: ignore[import-untyped]

from wannabet.backends.mysql.url import host_port
from wannabet.engine.base import Engine, SampleResult
from wannabet.errors import ProfileError, QueryError, TargetError
from wannabet.samplers.base import Interrupted, Section, StatsWarning, delta, never
from wannabet.samplers.perf import ProfiledProcesses
from wannabet.samplers.process import allowed_cores
from wannabet.targets import Target, redact

if TYPE_CHECKING:
    from wannabet.samplers.base import Sampler
    from wannabet.samplers.options import StatsOptions

_LOOPBACK = {"localhost", "127.0.0.1", "::1"}
#: the longest a statistics query may wait for the server
QUERY_TIMEOUT_S = 10.0
_STATEMENTS_KEPT = 10
#: the server process found by its pid file must have started within this of now − Uptime
_START_TIME_TOLERANCE_S = 3.0
#: performance_schema timers count picoseconds
_PS_PER_S = 1e12
#: ``SHOW GLOBAL STATUS`` counters: they only grow until a FLUSH STATUS or a restart, so a delta
#: is the sample's and one that went backwards marks a reset. Every other numeric value is a level
#: (threads running, pages dirty, a maximum, an average) and is kept as read after the sample.
COUNTER_PREFIXES = (
    "Com_",
    "Handler_",
    "Innodb_rows_",
    "Innodb_data_read",
    "Innodb_data_written",
    "Innodb_data_fsyncs",
    "Innodb_buffer_pool_read_requests",
    "Innodb_buffer_pool_reads",
    "Innodb_buffer_pool_write_requests",
    "Innodb_buffer_pool_pages_flushed",
    "Innodb_log_write",
    "Innodb_log_waits",
    "Innodb_os_log_written",
    "Innodb_os_log_fsyncs",
    "Innodb_pages_",
    "Innodb_row_lock_waits",
    "Innodb_row_lock_time",
    "Innodb_deadlocks",
    "Innodb_dblwr_",
    "Bytes_",
    "Questions",
    "Queries",
    "Connections",
    "Aborted_",
    "Created_tmp_",
    "Select_",
    "Sort_",
    "Table_locks_",
    "Opened_",
    "Slow_queries",
)
_LEVEL_SUFFIXES = ("_max", "_avg", "_current_waits", "_pending")


def is_counter(name: str) -> bool:
    """Whether a status value is a counter (see :data:`COUNTER_PREFIXES`)."""
    return name.startswith(COUNTER_PREFIXES) and not name.endswith(_LEVEL_SUFFIXES)


_WAITS_SQL = (
    "SELECT EVENT_NAME, COUNT_STAR, SUM_TIMER_WAIT"
    " FROM performance_schema.events_waits_summary_global_by_event_name"
    " WHERE COUNT_STAR > 0 AND EVENT_NAME <> 'idle'"
)
_DIGESTS_SQL = (
    "SELECT COALESCE(SCHEMA_NAME, ''), DIGEST, COUNT_STAR, SUM_TIMER_WAIT, SUM_ROWS_EXAMINED,"
    " SUM_ROWS_SENT, LEFT(DIGEST_TEXT, 200)"
    " FROM performance_schema.events_statements_summary_by_digest WHERE DIGEST IS NOT NULL"
)
#: the performance_schema reads of a snapshot: (key, what they give, table, query)
_PS_READS = (
    ("waits", "wait events", "events_waits_summary_global_by_event_name", _WAITS_SQL),
    ("digests", "statement digests", "events_statements_summary_by_digest", _DIGESTS_SQL),
)
#: the server's "access denied" errors: to a table, a column, a database
_DENIED = ("1142", "1143", "1044")


def samplers_for(
    target: Target, engine: Engine, options: StatsOptions
) -> tuple[list[Sampler], list[StatsWarning]]:
    """The server's statistics sampler, or a warning that says why there is none."""
    try:
        sampler = MySQLSampler(target, engine, server_cores=options.server_cores)
    except TargetError as exc:
        message = redact(str(exc).strip().splitlines()[0], target.password)
        return [], [StatsWarning(MySQLSampler.name, message)]
    return [sampler], []


class MySQLSampler:
    """Statistics of a MySQL or MariaDB server around each sample (see the module docstring)."""

    name = "mysql"

    def __init__(self, target: Target, engine: Engine, *, server_cores: int | None = None) -> None:
        self._target = target
        self._engine = engine
        self.notes: list[StatsWarning] = []
        self.version = self._one("SELECT VERSION()") or ""
        self._ps = self._one("SELECT @@performance_schema") in ("1", "ON")
        #: the performance_schema reads (keys of _PS_READS) this user may make
        self._reads: tuple[str, ...] = ()
        if not self._ps:
            self.notes.append(
                StatsWarning(
                    self.name,
                    "performance_schema is off: no wait events or statement digests; set"
                    " performance_schema=ON in the server's configuration (needs a restart)",
                )
            )
        else:
            self._reads = self._readable()
        self._process = self._find_server()
        self._cores = server_cores
        if self._cores is None and self._process is not None:
            self._cores = allowed_cores()
        self._before: dict[str, Any] = {}

    def _readable(self) -> tuple[str, ...]:
        """The performance_schema reads this user is allowed; a note for the others, which
        leave the rest of the statistics (``SHOW GLOBAL STATUS`` needs no privilege) whole."""
        allowed: list[str] = []
        denied: list[tuple[str, str, str]] = []
        for key, what, table, sql in _PS_READS:
            try:
                self._rows(f"{sql} LIMIT 0")
            except QueryError as exc:
                if exc.code not in _DENIED:
                    raise
                denied.append((what, table, str(exc).strip().splitlines()[0]))
            else:
                allowed.append(key)
        if denied:
            user, _, host = (self._one("SELECT CURRENT_USER()") or "").rpartition("@")
            account = f"'{user}'@'{host}'"
            self.notes.append(
                StatsWarning(
                    self.name,
                    f"{' and '.join(w for w, _, _ in denied)} left out: {account} lacks the"
                    f" SELECT privilege on"
                    f" {', '.join(f'performance_schema.{t}' for _, t, _ in denied)}"
                    f" ({denied[0][2]}); the status counters and server CPU are kept; to have"
                    f" them, run as an administrator: GRANT SELECT ON performance_schema.* TO"
                    f" {account}",
                )
            )
        return tuple(allowed)

    def _rows(self, sql: str) -> list[tuple[str | None, ...]]:
        # A server that stops answering must not hold the sample's end.
        return self._engine.query(self._target, sql, timeout_s=QUERY_TIMEOUT_S)

    def _one(self, sql: str) -> str | None:
        rows = self._rows(sql)
        return rows[0][0] if rows and rows[0] else None

    def _find_server(self) -> psutil.Process | None:
        """The server's process, if it demonstrably runs on this machine."""
        found = server_process(self._target, self._engine)
        if isinstance(found, str):
            self.notes.append(StatsWarning(self.name, f"server CPU is unknown: {found}"))
            return None
        return found

    def _server_cpu_s(self) -> float | None:
        if self._process is None:
            return None
        try:
            t = self._process.cpu_times()
        except psutil.Error:
            return None
        return float(t.user + t.system)

    def _snapshot(self) -> dict[str, Any]:
        status: dict[str, float] = {}
        for name, value in self._rows("SHOW GLOBAL STATUS"):
            try:
                number = float(value or "")
            except ValueError:
                continue
            status[str(name)] = int(number) if number.is_integer() else number
        snap: dict[str, Any] = {"status": status, "cpu_s": self._server_cpu_s()}
        if "waits" in self._reads:
            snap["waits"] = {
                str(e): (int(n or 0), int(t or 0)) for e, n, t in self._rows(_WAITS_SQL)
            }
        if "digests" in self._reads:
            snap["digests"] = {
                (str(s), str(d)): (int(n or 0), int(t or 0), int(ex or 0), int(se or 0), text)
                for s, d, n, t, ex, se, text in self._rows(_DIGESTS_SQL)
            }
        return snap

    def start(self, interrupted: Interrupted = never) -> None:
        self._before = self._snapshot()

    def abandon(self) -> None:
        self._before = {}

    def stop(self, result: SampleResult, interrupted: Interrupted = never) -> Section:
        after = self._snapshot()
        before = self._before
        invalid: list[str] = []
        values: dict[str, Any] = {"server_version": self.version}
        b_status, a_status = before.get("status", {}), after["status"]
        counters = [k for k in a_status if is_counter(k)]
        status, negative = delta(b_status, a_status, counters)
        restarted = a_status.get("Uptime", 0) < b_status.get("Uptime", 0)
        if negative or restarted:
            shown = ", ".join(negative[:3]) or "Uptime"
            invalid.append(f"status counters went backwards ({shown}): a FLUSH STATUS or restart")
        elif flushed(b_status, a_status):
            invalid.append("status counters were reset during the sample (FLUSH STATUS)")
        values["status"] = status
        values["levels"] = {k: v for k, v in sorted(a_status.items()) if not is_counter(k)}
        cpu_before, cpu_after = before.get("cpu_s"), after["cpu_s"]
        values["cpu_s"] = (
            cpu_after - cpu_before if cpu_before is not None and cpu_after is not None else None
        )
        values["cores"] = self._cores
        if "waits" in before:
            waits = _wait_deltas(before["waits"], after["waits"])
            if waits is None:
                invalid.append("performance_schema wait summaries were truncated during the sample")
            else:
                values["waits"] = waits
        if "digests" in before:
            values["statements"] = _digest_deltas(before["digests"], after["digests"])
        values["server_commits"] = status.get("Com_commit") if not invalid else None
        values["engine_commits"] = result.counters.get("server_commits")
        values["commits_check_reliable"] = not invalid
        return Section(self.name, values, tuple(invalid), tuple(self.notes))

    def close(self) -> None:
        self._before = {}


#: events that time the storage engine's handler calls (``wait/io/table/sql/handler``,
#: ``wait/lock/table/sql/handler``): CPU for rows in the buffer pool, and the time of any file
#: I/O wait the call causes, which is an event of its own. Summed with the others they would
#: count CPU as wait and file waits twice (a CPU-bound load showed more "wait" than CPU).
HANDLER_EVENTS = ("io/table/", "lock/table/")


def is_handler_event(event: str) -> bool:
    """Whether a wait event (its name without ``wait/``) times handler calls, not a wait."""
    return event.startswith(HANDLER_EVENTS)


def _wait_deltas(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]
) -> dict[str, Any] | None:
    """Wait time per event over the sample, most first; None when a summary went backwards.

    Every event is kept in ``events``; ``wait_s`` sums the waits, ``handler_s`` the handler
    calls' time (see :data:`HANDLER_EVENTS`).
    """
    events: list[dict[str, Any]] = []
    for name, (count, timer) in after.items():
        was_count, was_timer = before.get(name, (0, 0))
        dn, dt = count - was_count, timer - was_timer
        if dn < 0 or dt < 0:
            return None
        if dn == 0:
            continue
        event = name.removeprefix("wait/")
        kind = event.split("/", 1)[0]  # io, lock, synch
        events.append({"type": kind, "event": event, "count": dn, "wait_s": dt / _PS_PER_S})
    events.sort(key=lambda e: -e["wait_s"])
    return {
        "wait_s": sum(e["wait_s"] for e in events if not is_handler_event(e["event"])),
        "handler_s": sum(e["wait_s"] for e in events if is_handler_event(e["event"])),
        "events": events,
    }


def _is_own(text: str | None) -> bool:
    """The snapshots' own statements and the driver's on connecting, not the workload's."""
    t = (text or "").upper()
    return (
        t.startswith(("SHOW GLOBAL STATUS", "SHOW SESSION STATUS", "SELECT VERSION", "SELECT @@"))
        or "PERFORMANCE_SCHEMA" in t
        or "INFORMATION_SCHEMA.GLOBAL_STATUS" in t
    )


def _digest_deltas(
    before: dict[tuple[str, str], tuple[Any, ...]], after: dict[tuple[str, str], tuple[Any, ...]]
) -> list[dict[str, Any]]:
    """The statements that took the most time over the sample; an entry evicted or truncated
    in between (a negative delta) is dropped rather than reported wrong."""
    out = []
    for key, (n, t, examined, sent, text) in after.items():
        was = before.get(key, (0, 0, 0, 0, text))
        d = (n - was[0], t - was[1], examined - was[2], sent - was[3])
        if d[0] <= 0 or min(d) < 0 or _is_own(text):
            continue
        out.append(
            {
                "schema": key[0],
                "digest": key[1],
                "calls": d[0],
                "total_exec_ms": d[1] / 1e9,
                "rows_examined": d[2],
                "rows_sent": d[3],
                "query": text,
            }
        )
    out.sort(key=lambda r: -float(r["total_exec_ms"]))
    return out[:_STATEMENTS_KEPT]


def flushed(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """Whether a ``FLUSH STATUS`` ran between two ``SHOW GLOBAL STATUS`` snapshots.

    A counter that was reset can have grown past its value before by the end of the sample, so
    its delta alone misses a reset early in the sample. ``Uptime − Uptime_since_flush_status``
    is the server's uptime at its last flush: both are whole seconds from the same clock read,
    so the difference is exact and moves only when a flush happens.
    """
    keys = ("Uptime", "Uptime_since_flush_status")
    if not all(k in before and k in after for k in keys):
        return False
    return int(after[keys[0]]) - int(after[keys[1]]) != int(before[keys[0]]) - int(before[keys[1]])


def server_process(target: Target, engine: Engine) -> psutil.Process | str:
    """The server's process if it demonstrably runs on this machine, else why not.

    The pid comes from ``@@pid_file``; the process must be ``mysqld`` or ``mariadbd`` and have
    started when the server says it did (a stale pid file, or one of a server in a container,
    names another process).
    """
    host, _ = host_port(target.url)
    if host.lower() not in _LOOPBACK:
        return "the server is not on this host"
    try:
        pid_file, uptime = engine.query(
            target,
            "SELECT @@pid_file, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS"
            " WHERE VARIABLE_NAME = 'UPTIME'",
            timeout_s=QUERY_TIMEOUT_S,
        )[0]
        with open(str(pid_file), encoding="ascii") as f:
            process = psutil.Process(int(f.read().strip()))
        if not any(n in process.name() for n in ("mysqld", "mariadbd")):
            raise psutil.NoSuchProcess(process.pid)
        started = time.time() - float(uptime or 0)
        if abs(process.create_time() - started) > _START_TIME_TOLERANCE_S:
            raise psutil.NoSuchProcess(process.pid)
        return process
    except (psutil.Error, OSError, ValueError, IndexError):
        return (
            "the server's process is not visible here (another host, container or namespace,"
            " or an unreadable pid file)"
        )


def profiled_processes(target: Target, engine: Engine) -> ProfiledProcesses:
    """The server process (all its threads), for ``perf``; ProfileError when not visible."""
    found = server_process(target, engine)
    if isinstance(found, str):
        raise ProfileError(
            f"profiles need the MySQL/MariaDB server's process, and {found}: run wannabet where"
            " the server runs, or without --profile / [profile] perf"
        )
    return ProfiledProcesses((found.pid,), f"the server ({found.name()} {found.pid})")
