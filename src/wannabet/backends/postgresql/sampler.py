"""PostgreSQL statistics around each sample, through two connections of their own.

What one sample gets (deltas between a snapshot right before and right after it):

- ``pg_stat_database`` of the target database: commits, rollbacks, blocks, tuples, temp files,
  deadlocks and the ``*_time`` columns;
- ``pg_stat_wal`` (records, full-page images, bytes, writes, syncs and their times),
  ``pg_stat_bgwriter``, and ``pg_stat_checkpointer`` / ``pg_stat_io`` where the version has them;
- ``pg_stat_statements`` (the statements that took the most time) when it is installed;
- per table and per index (``pg_stat_user_tables``/``_indexes`` with their ``pg_statio_``
  block counts): scans, rows inserted, updated (HOT among them) and deleted, blocks hit and
  read, and live and dead tuples after the sample, for the relations the sample used;
- wait events, sampled from ``pg_stat_activity`` every ``interval_s`` while the sample runs
  (the run's own sessions only, found by their ``application_name``): count × interval estimates
  the time the sessions spent waiting on each event. The polls run in the native engine
  (:class:`wannabet.engine.waits.WaitPoller`), on a thread and a connection of their own, so
  that no interpreter work is added to each poll;
- server CPU time of the whole postgres process tree from ``/proc`` (psutil), when the server
  runs on this machine; otherwise it is unknown (``None``), never guessed.

Commits cross-check. ``xact_commit`` counts every committed server transaction, including this
connection's own queries and one per autocommit statement, prepare or connection start-up.
Backends report their counters at most once a second while busy and always when they exit, so
the end snapshot first waits until the run's sessions have left ``pg_stat_activity`` (the engine
connects per sample), and both statistics connections force their own counters out
(``pg_stat_force_next_flush``) before each snapshot; their own transactions are then counted and
subtracted exactly.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import psutil  # type: ignore[import-untyped]

from wannabet.backends.postgresql.url import host_port
from wannabet.engine.base import Engine, SampleResult
from wannabet.engine.waits import WaitPoller
from wannabet.errors import ConnectError, ProfileError, TargetError
from wannabet.model import WAIT_INTERVAL_S
from wannabet.samplers.base import Interrupted, Sampler, Section, StatsWarning, delta, never
from wannabet.samplers.perf import ProfiledProcesses
from wannabet.samplers.process import allowed_cores
from wannabet.targets import Target, redact
from wannabet.threads import Abandoned, call_abandonable

if TYPE_CHECKING:
    from wannabet.samplers.options import StatsOptions

#: how long the snapshot waits for the run's sessions to exit and report their counters
BACKEND_EXIT_TIMEOUT_S = 10.0
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}
_STATEMENTS_KEPT = 10
#: no statistics query may hang a run: the server cancels one after this long
STATEMENT_TIMEOUT_MS = 5000
#: past the statement timeout, how long before the client gives up on a server that does not
#: answer at all (frozen: its statement_timeout cannot fire)
CLIENT_GRACE_S = 2.0
#: forces this backend's pending statistics out when it next goes idle; reading a catalog table
#: gives it a pending entry, so that transaction counts alone are not skipped (PostgreSQL 15+)
FLUSH_SQL = "SELECT count(pg_stat_force_next_flush()) FROM pg_database"
#: the postmaster found in /proc must have started within this of pg_postmaster_start_time()
_START_TIME_TOLERANCE_S = 2.0
#: how often a blocking call of the sampler looks whether Ctrl-C has been pressed
_INTERRUPT_POLL_S = 0.05
#: after Ctrl-C, how long a statistics query (or the end of the wait-event polls) may still
#: take before it is cut: a server that answers does so in milliseconds, and the finished
#: sample keeps its figures
_INTERRUPT_GRACE_S = 0.5
#: what Ctrl-C cutting a statistics call short says, in the sample's warning
_CUT = "cut short by the interrupt (Ctrl-C)"

_T = TypeVar("_T")


def engine_application_name(target: Target, default: str) -> str:
    """The application_name the engine's sessions use: the URL's, else the engine default."""
    query = parse_qs(urlsplit(target.url).query)
    names = query.get("application_name")
    return names[0] if names else default


def engine_host_port(target: Target) -> tuple[str, int]:
    """The host and port the engine connects to (see :func:`~.url.host_port`)."""
    return host_port(target.url)


def is_local_host(target: Target) -> bool:
    """True when the engine's host is a loopback address or a Unix-socket directory."""
    host, _ = engine_host_port(target)
    return host.lower() in _LOOPBACK or host.startswith("/")


def samplers_for(
    target: Target, engine: Engine, options: StatsOptions
) -> tuple[list[Sampler], list[StatsWarning]]:
    """The server's statistics sampler, or a warning that says why there is none.

    The sampler finds the run's sessions by their ``application_name``, so an engine that does
    not name them gets none; a sampler that cannot be set up (no permission, psycopg missing)
    becomes a warning stored with every sample, and the run goes on without it.
    """
    default_name = getattr(engine, "application_name", None)
    if default_name is None:
        warning = "this engine does not name its sessions; no server statistics"
        return [], [StatsWarning(PostgresSampler.name, warning)]
    try:
        sampler = PostgresSampler(
            target,
            application_name=engine_application_name(target, str(default_name)),
            interval_s=options.wait_interval_s,
            server_cores=options.server_cores,
        )
    except Exception as exc:
        message = redact(str(exc).strip().splitlines()[0], target.password)
        return [], [StatsWarning(PostgresSampler.name, message)]
    return [sampler], []


class PostgresSampler:
    """Statistics of a PostgreSQL server around each sample (see the module docstring)."""

    name = "postgres"

    def __init__(
        self,
        target: Target,
        *,
        application_name: str,
        interval_s: float = WAIT_INTERVAL_S,
        server_cores: int | None = None,
    ) -> None:
        import psycopg

        self._target = target
        self._app = application_name
        self._interval = interval_s
        self._remote_cores = server_cores
        self.notes: list[StatsWarning] = []
        self._errors: tuple[type[BaseException], ...] = (psycopg.Error,)
        # Set by start() and stop(): what lets a blocking call give up on Ctrl-C.
        self._interrupted: Interrupted = never
        self._conn = self._connect()
        self._waits: Any = None
        try:
            self._setup()
        except BaseException:
            self._close_connections()  # no connection left behind by a failed set-up
            raise
        self._before: dict[str, Any] = {}
        self._polling = False
        self._disabled: set[str] = set()
        self._foreign: set[int] = set()

    def _connect(self) -> Any:
        import psycopg

        host, port = engine_host_port(self._target)

        def connect() -> Any:
            return psycopg.connect(
                self._target.url,
                host=host,
                port=port,
                autocommit=True,
                application_name=f"{self._app}-stats",
                connect_timeout=10,
                # Nothing may hang a run: the server cancels a slow statistics query, and a
                # dead server or network is noticed within seconds, not the kernel's minutes.
                options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
                keepalives=1,
                keepalives_idle=5,
                keepalives_interval=2,
                keepalives_count=3,
                tcp_user_timeout=10000,
                # No implicit prepares: each would be one more uncounted transaction.
                prepare_threshold=None,
            )

        try:
            return self._interruptible(
                connect, lambda conn: conn.close(), "opening a statistics connection"
            )
        except psycopg.Error as exc:
            raise ConnectError(self._scrub(f"cannot open a statistics connection: {exc}")) from None

    def _setup(self) -> None:
        self.notes = []  # found again by this set-up: a reconnect must not repeat them
        self._own_commits = 0
        self.version = int(self._one("SELECT current_setting('server_version_num')::int"))
        self._own_pid = int(self._one("SELECT pg_backend_pid()"))
        self._can_flush = self.version >= 150000
        self._postmaster = self._find_postmaster()
        self.local = self._postmaster is not None
        # --server-cores wins: it is the user's statement about the server.
        self.cores: int | None = (
            self._remote_cores
            if self._remote_cores is not None
            else (allowed_cores() if self.local else None)
        )
        self._statements = self._has_statements()
        self._waits = self._open_poller()

    def _open_poller(self) -> WaitPoller:
        """The wait-event poller's own connection, its start-up and prepare already reported
        (so that its only transactions inside a sample are its polls and one flush)."""
        poller = None
        try:
            poller = self._interruptible(
                lambda: WaitPoller(
                    self._target.url, self._app, self._interval, STATEMENT_TIMEOUT_MS / 1000
                ),
                lambda late: late.close(),
                "opening the wait-event connection",
            )
            if self._can_flush:
                poller.query(FLUSH_SQL)
        except TargetError as exc:
            if poller is not None:
                poller.close()
            raise ConnectError(
                self._scrub(f"cannot open the wait-event connection: {_first(exc)}")
            ) from None
        self._poller_failed = False  # a new connection: the old one's failure is behind it
        return poller

    def _reconnect_if_lost(self) -> None:
        """A server restart, an administrator or ``idle_session_timeout`` kills connections:
        open new ones, once per sample. Nothing watches an idle connection, so each is probed;
        the poller's probe also reports its counters, so none are pending in the sample."""
        if not self._conn.closed:
            try:
                self._one("SELECT 1")
            except self._errors:
                pass
            else:
                if self._poller_usable():
                    return
                try:
                    self._waits.close()
                    self._waits = self._open_poller()
                    return
                except ConnectError:
                    pass  # the server may be gone too: start over below
        self._close_connections()
        self._conn = self._connect()
        self._setup()
        self._disabled = set()

    def _interruptible(
        self,
        call: Callable[[], _T],
        discard: Callable[[_T], None],
        what: str,
        grace_s: float = 0.0,
    ) -> _T:
        """``call()`` on a thread of its own, so that Ctrl-C does not wait for it: a frozen
        server accepts the TCP connection and then answers nothing, and the connect timeout
        is seconds (psycopg's ``connect_timeout``, the engine's), as is the end of a wait-event
        poll. On Ctrl-C, once the call has had ``grace_s``, ConnectError is raised; the call is
        left to end on its own, and what it gives then is handed to ``discard``."""
        if not grace_s and self._interrupted():
            raise ConnectError(f"{what} was {_CUT}")
        began = time.monotonic()
        try:
            return call_abandonable(
                call,
                name="wannabet-stats-call",
                stop=lambda: time.monotonic() - began >= grace_s and self._interrupted(),
                discard=discard,
                poll_s=_INTERRUPT_POLL_S,
            )
        except Abandoned:
            raise ConnectError(f"{what} was {_CUT}") from None

    def _poller_usable(self) -> bool:
        if self._waits is None or self._poller_failed or self._waits.closed:
            return False
        try:
            self._waits.query(FLUSH_SQL if self._can_flush else "SELECT 1")
        except TargetError:
            return False
        return True

    def _close_connections(self) -> None:
        try:
            if self._waits is not None:
                self._waits.close()
                self._waits = None
        finally:
            self._conn.close()

    # -- helpers ---------------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        return redact(text, self._target.password)

    @contextmanager
    def _bounded(self) -> Iterator[None]:
        """A frozen server answers no statement_timeout and its kernel keeps the connection
        alive: past the timeout and a grace, or :data:`_INTERRUPT_GRACE_S` into the query once
        Ctrl-C is pressed, shut the socket down, which ends the blocked read with an error (a
        reconnect follows at the next sample)."""
        fd = self._conn.pgconn.socket
        finished = threading.Event()
        by_interrupt = threading.Event()
        began = time.monotonic()
        deadline = began + STATEMENT_TIMEOUT_MS / 1000 + CLIENT_GRACE_S

        def watch() -> None:
            while not finished.wait(_INTERRUPT_POLL_S):
                now = time.monotonic()
                interrupted = now - began > _INTERRUPT_GRACE_S and self._interrupted()
                if interrupted or now > deadline:
                    if interrupted:
                        by_interrupt.set()
                    with contextlib.suppress(OSError):
                        sock = socket.socket(fileno=os.dup(fd))
                        try:
                            sock.shutdown(socket.SHUT_RDWR)
                        finally:
                            sock.close()
                    return

        watcher = threading.Thread(target=watch, name="wannabet-stats-watch", daemon=True)
        watcher.start()
        try:
            yield
        except self._errors:
            if by_interrupt.is_set():
                raise ConnectError(f"a statistics query was {_CUT}") from None
            raise
        finally:
            finished.set()
            watcher.join()

    def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """One statement = one server transaction on this connection; count the ones that
        commit, so they can be taken out of the server's commit delta."""
        with self._bounded(), self._conn.cursor() as cur:
            cur.execute(sql, params, prepare=False)
            rows = cur.fetchall() if cur.description else []
        self._own_commits += 1
        return rows

    def _one(self, sql: str) -> Any:
        return self._rows(sql)[0][0]

    def _dicts(self, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        with self._bounded(), self._conn.cursor() as cur:
            cur.execute(sql, params, prepare=False)
            names = [d.name for d in cur.description or []]
            rows = cur.fetchall()
        self._own_commits += 1
        return [{k: _plain(v) for k, v in zip(names, r, strict=True)} for r in rows]

    def _find_postmaster(self) -> psutil.Process | None:
        """The server's postmaster, if the server demonstrably runs on this machine."""
        if not is_local_host(self._target):
            self.notes.append(
                StatsWarning(self.name, "server CPU is unknown: the server is not on this host")
            )
            return None
        try:
            backend = psutil.Process(self._own_pid)
            parent = backend.parent()
            if parent is None or "postgres" not in " ".join(parent.cmdline() or [parent.name()]):
                raise psutil.NoSuchProcess(self._own_pid)
            if "postgres" not in backend.name() and "postgres" not in parent.name():
                raise psutil.NoSuchProcess(self._own_pid)
            # A pid seen here could belong to another server on this host (a container with
            # its own pid space, another port): its start time must be the server's.
            started = float(self._one("SELECT extract(epoch FROM pg_postmaster_start_time())"))
            if abs(parent.create_time() - started) > _START_TIME_TOLERANCE_S:
                raise psutil.NoSuchProcess(parent.pid)
            return parent
        except (psutil.Error, OSError):
            self.notes.append(
                StatsWarning(
                    self.name,
                    "server CPU is unknown: the server's processes are not visible here"
                    " (another host, container or namespace)",
                )
            )
            return None

    def _has_statements(self) -> bool:
        try:
            return bool(
                self._one("SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'")
            )
        except self._errors:
            return False

    def _server_cpu(self) -> dict[str, float] | None:
        """CPU seconds of the whole server process tree, and of the statistics connections'
        backends (this one's and the wait poller's).

        Live processes are summed directly; children that exited were added by the kernel to
        the postmaster's children times when it reaped them. The parent's figures are read
        first, so a child reaped between the two reads is missed rather than counted twice.
        """
        pm = self._postmaster
        if pm is None:
            return None
        mine = {self._own_pid, self._waits.backend_pid}
        for _ in range(5):
            own: dict[int, float] = {}
            # Scanning /proc takes milliseconds; a child reaped meanwhile moves its CPU into the
            # parent's children times. Reading the parent before and after the scan and
            # retrying when those changed counts every child exactly once.
            t = pm.cpu_times()
            total = 0.0
            for child in pm.children():
                try:
                    ct = child.cpu_times()
                except psutil.Error:
                    continue
                # A live child's own reaped children (parallel workers are the postmaster's,
                # but extensions may fork) are in its children times.
                total += ct.user + ct.system + ct.children_user + ct.children_system
                if child.pid in mine:
                    own[child.pid] = ct.user + ct.system
            t2 = pm.cpu_times()
            if (t2.children_user, t2.children_system) == (t.children_user, t.children_system):
                break
        total += t2.user + t2.system + t2.children_user + t2.children_system
        return {"server_cpu_s": total, "stats_backends_cpu_s": own, "postmaster_pid": pm.pid}

    def _wait_for_sessions(self, seen: set[int]) -> bool:
        """Wait until the run's sessions have exited and so reported their counters.

        A backend leaves pg_stat_activity before it flushes its statistics on exit, so an
        empty pg_stat_activity is not enough: on a local server we also wait until every
        backend process seen (``seen``) has ended. A remote server gets a short grace period
        instead, and the docs say the check is then slightly racy.
        """
        deadline = time.monotonic() + BACKEND_EXIT_TIMEOUT_S
        while True:
            pids = {int(r[0]) for r in self._rows(self._app_pids_sql())} - self._foreign
            seen |= pids
            if not pids:
                break
            if time.monotonic() > deadline or self._interrupted():
                return False
            time.sleep(0.01)
        if self._postmaster is None:
            time.sleep(0.2)
            return True
        while any(_running(pid) for pid in seen):
            if time.monotonic() > deadline or self._interrupted():
                return False
            time.sleep(0.005)
        return True

    def _app_pids_sql(self) -> str:
        # The name is this process's own (wannabet-<pid>) or the user's URL parameter,
        # quoted as a literal.
        return (
            "SELECT pid FROM pg_stat_activity WHERE application_name = "
            + _literal(self._app)
            + " AND pid <> pg_backend_pid()"
        )

    def _snapshot(self) -> dict[str, Any]:
        """Everything cumulative, pg_stat_database first (see the module docstring)."""
        snap: dict[str, Any] = {"_own_commits_before": self._own_commits}
        if self._can_flush:
            # A backend with nothing but transaction counts pending skips the flush, forced
            # or not (read-only queries on functions such as pg_stat_activity leave only
            # those): reading a catalog table gives it a pending entry, so the counts go too.
            self._one("SELECT count(pg_stat_force_next_flush()) FROM pg_database")
            snap["_own_commits_before"] = self._own_commits
        # Reading the views inside one snapshot per statement; each is its own transaction.
        snap["database"] = self._dicts(
            "SELECT *, pg_postmaster_start_time() AS _postmaster_start"
            " FROM pg_stat_database WHERE datname = current_database()"
        )[0]
        for name, sql in self._views():
            if name in self._disabled:
                continue
            try:
                snap[name] = self._read_view(name, sql)
            except self._errors as exc:
                self._disabled.add(name)
                self.notes.append(
                    StatsWarning(self.name, self._scrub(f"{name} is not available: {_first(exc)}"))
                )
        cpu = self._server_cpu()
        if cpu is not None:
            snap["cpu"] = cpu
        snap["_time"] = time.monotonic()
        return snap

    def _views(self) -> list[tuple[str, str]]:
        views = [("wal", "SELECT * FROM pg_stat_wal")] if self.version >= 140000 else []
        views.append(("bgwriter", "SELECT * FROM pg_stat_bgwriter"))
        if self.version >= 170000:
            views.append(("checkpointer", "SELECT * FROM pg_stat_checkpointer"))
        if self.version >= 160000:
            views.append(
                (
                    "io",
                    "SELECT backend_type, sum(reads) AS reads, sum(writes) AS writes,"
                    " sum(extends) AS extends, sum(fsyncs) AS fsyncs,"
                    " sum(read_time) AS read_time, sum(write_time) AS write_time,"
                    " sum(fsync_time) AS fsync_time FROM pg_stat_io GROUP BY backend_type",
                )
            )
        # Autovacuum's jobs in this database, system catalogs and tables the workload never
        # touched included: each commits in pg_stat_database like a client, so a commits check
        # that counts them must be able to say they ran (the per-table figures below keep only
        # the workload's user tables). Per table, not summed: a table dropped during the sample
        # must not take its earlier jobs out of the count.
        views.append(
            (
                "autovacuum",
                "SELECT relid::bigint AS relid, autovacuum_count + autoanalyze_count AS jobs"
                " FROM pg_stat_all_tables WHERE autovacuum_count + autoanalyze_count > 0",
            )
        )
        # Per table and per index, user relations only; kept in stop() for those the sample
        # touched. A gauge (live and dead tuples) is read after the sample, not as a delta.
        views.append(
            (
                "tables",
                "SELECT t.relid::regclass::text AS relation, t.seq_scan, t.seq_tup_read,"
                " coalesce(t.idx_scan, 0) AS idx_scan, coalesce(t.idx_tup_fetch, 0)"
                " AS idx_tup_fetch, t.n_tup_ins, t.n_tup_upd, t.n_tup_hot_upd, t.n_tup_del,"
                " t.n_live_tup, t.n_dead_tup, coalesce(s.heap_blks_read, 0) AS heap_blks_read,"
                " coalesce(s.heap_blks_hit, 0) AS heap_blks_hit,"
                " coalesce(s.idx_blks_read, 0) AS idx_blks_read,"
                " coalesce(s.idx_blks_hit, 0) AS idx_blks_hit,"
                " t.autovacuum_count, t.autoanalyze_count"
                " FROM pg_stat_user_tables t JOIN pg_statio_user_tables s USING (relid)",
            )
        )
        views.append(
            (
                "indexes",
                "SELECT i.indexrelid::regclass::text AS relation,"
                " i.relid::regclass::text AS table_name, i.idx_scan, i.idx_tup_read,"
                " i.idx_tup_fetch, coalesce(s.idx_blks_read, 0) AS idx_blks_read,"
                " coalesce(s.idx_blks_hit, 0) AS idx_blks_hit"
                " FROM pg_stat_user_indexes i JOIN pg_statio_user_indexes s USING (indexrelid)",
            )
        )
        if self._statements:
            # Without the texts (showtext := false reads no query file); summed over the
            # users and nesting levels a query id has, for this database and user only. The
            # texts of the few statements kept are read once, in stop().
            views.append(
                (
                    "statements",
                    "SELECT queryid::text AS queryid, sum(calls) AS calls,"
                    " sum(total_exec_time) AS total_exec_time, sum(rows) AS rows,"
                    " sum(shared_blks_hit) AS shared_blks_hit,"
                    " sum(shared_blks_read) AS shared_blks_read"
                    " FROM pg_stat_statements(false) WHERE dbid = (SELECT oid FROM pg_database"
                    " WHERE datname = current_database()) AND userid = (SELECT oid FROM"
                    " pg_roles WHERE rolname = current_user) GROUP BY queryid",
                )
            )
        return views

    def _read_view(self, name: str, sql: str) -> Any:
        rows = self._dicts(sql)
        if name == "io":
            return {
                r["backend_type"]: {k: _num(v) for k, v in r.items() if k != "backend_type"}
                for r in rows
            }
        if name == "statements":
            return {r["queryid"]: r for r in rows}
        if name in ("tables", "indexes"):
            return {r["relation"]: r for r in rows}
        if name == "autovacuum":
            return {int(r["relid"]): int(r["jobs"]) for r in rows}
        return rows[0] if rows else {}

    # -- the protocol ----------------------------------------------------------------------

    def start(self, interrupted: Interrupted = never) -> None:
        self._interrupted = interrupted
        self._reconnect_if_lost()
        # Sessions of the previous step (setup SQL, system SQL) must have reported their
        # counters before the "before" snapshot, or they would land in this sample.
        self._foreign = set()
        self._sessions_gone_before = self._wait_for_sessions(set())
        # Sessions of another client that shares the application_name (a URL parameter) and
        # are still here are not the run's: their pids are left out of the wait sampling.
        self._foreign = {int(r[0]) for r in self._rows(self._app_pids_sql())}
        self._before = self._snapshot()
        self._waits.start(sorted(self._foreign))
        self._polling = True

    def _end_poller(self) -> dict[str, Any] | None:
        """Stop the polls (the thread ends within one poll, which the statement timeout
        bounds) and push the poller's counters out before the closing snapshot."""
        if not self._polling:
            return None
        try:
            # The polling thread ends after its poll in flight, which a frozen server holds
            # to the poll's timeout.
            counts: dict[str, Any] = dict(
                self._interruptible(
                    self._waits.stop,
                    lambda late: None,
                    "the end of the wait-event polls",
                    _INTERRUPT_GRACE_S,
                )
            )
        except ConnectError:
            self._polling = False
            self._poller_failed = True  # reopened by the next start()
            raise
        self._polling = False
        # Each poll is one committed transaction of the poller's; a failed one is not.
        self._own_commits += counts["polls"]
        counts["flushed"] = False
        if counts["error"] is None and self._can_flush:
            try:
                self._waits.query(FLUSH_SQL)
                self._own_commits += 1
                counts["flushed"] = True
            except TargetError as exc:
                counts["error"] = _first(exc)
        if counts["error"] is not None:
            # Reopened by the next start(); closed only then, so that its backend is still
            # there for the closing snapshot's CPU reading.
            self._poller_failed = True
        return counts

    def abandon(self) -> None:
        self._end_poller()

    def stop(self, result: SampleResult, interrupted: Interrupted = never) -> Section:
        self._interrupted = interrupted
        counts = self._end_poller()
        waits = _wait_summary(counts, self._interval) if counts is not None else {}
        sessions_gone = self._wait_for_sessions(set(counts["pids"]) if counts else set())
        after = self._snapshot()
        before = self._before
        invalid: list[str] = []
        warnings: list[StatsWarning] = []
        values: dict[str, Any] = {"server_version_num": self.version}

        db_before, db_after = before["database"], after["database"]
        if db_before.get("stats_reset") != db_after.get("stats_reset"):
            invalid.append("pg_stat_database was reset during the sample")
        if db_before.get("_postmaster_start") != db_after.get("_postmaster_start"):
            invalid.append("the server restarted during the sample")
        # numbackends is a gauge, not a counter (a client leaving is no reset); datid an oid.
        counters = [k for k in db_after if k not in ("datid", "numbackends")]
        db, negative = delta(db_before, db_after, counters)
        if negative:
            invalid.append(f"pg_stat_database counters went backwards ({', '.join(negative)})")
        values["database"] = db if not invalid else {}

        if "autovacuum" in before and "autovacuum" in after:
            values["autovacuum"] = {
                "jobs": autovacuum_jobs(before["autovacuum"], after["autovacuum"])
            }
        for name in ("wal", "bgwriter", "checkpointer"):
            if name in before and name in after:
                if before[name].get("stats_reset") != after[name].get("stats_reset"):
                    invalid.append(f"pg_stat_{name} was reset during the sample")
                    continue
                d, negative = delta(before[name], after[name])
                if negative:
                    invalid.append(f"pg_stat_{name} counters went backwards")
                    continue
                values[name] = d
        if "io" in before and "io" in after:
            io: dict[str, Any] = {}
            for backend_type, figures in after["io"].items():
                d, negative = delta(before["io"].get(backend_type, {}), figures)
                if negative:
                    invalid.append("pg_stat_io counters went backwards")
                    break
                io[backend_type] = d
            else:
                values["io"] = io
        for name in ("tables", "indexes"):
            if name in before and name in after:
                values[name] = _relation_deltas(before[name], after[name])
        if "statements" in before and "statements" in after:
            values["statements"] = self._with_texts(
                _statement_deltas(before["statements"], after["statements"])
            )

        # Server CPU; the statistics connection's own backend is taken out.
        if "cpu" in before and "cpu" in after:
            cb, ca = before["cpu"], after["cpu"]
            if cb["postmaster_pid"] != ca["postmaster_pid"]:
                invalid.append("the server restarted during the sample")
                values["cpu_s"] = None
            else:
                total = ca["server_cpu_s"] - cb["server_cpu_s"]
                own = _own_cpu(cb["stats_backends_cpu_s"], ca["stats_backends_cpu_s"])
                values["cpu_s"] = max(total - own, 0.0) if total >= 0 else None
                values["stats_backend_cpu_s"] = own
        else:
            values["cpu_s"] = None
        values["cores"] = self.cores
        values["local"] = self.local

        # Commits: the server's delta without this connection's own transactions.
        own = after["_own_commits_before"] - before["_own_commits_before"]
        values["own_commits"] = own
        if "xact_commit" in values["database"]:
            values["server_commits"] = values["database"]["xact_commit"] - own
        else:
            values["server_commits"] = None
        values["engine_commits"] = result.counters.get("server_commits")
        if not (sessions_gone and self._sessions_gone_before):
            warnings.append(
                StatsWarning(
                    self.name,
                    "the run's sessions did not exit within"
                    f" {BACKEND_EXIT_TIMEOUT_S:.0f}s; their last counters may be missing",
                )
            )
            values["commits_check_reliable"] = False
        else:
            # Without the poller's flush its polls may reach the server's counters late.
            values["commits_check_reliable"] = self._can_flush and bool(
                counts is None or counts["flushed"]
            )
        if waits.get("error"):
            # A partial count would understate the waits: report none rather than too few.
            warnings.append(
                StatsWarning(
                    self.name, self._scrub(f"wait-event sampling stopped: {waits['error']}")
                )
            )
            waits["wait_s"] = None
            waits["active_s"] = None
            waits["on_cpu_s"] = None
            waits["events"] = []
            waits["polls"] = 0
        values["waits"] = waits
        values["elapsed_s"] = after["_time"] - before["_time"]
        if invalid:
            values["cpu_s"] = None
            values["database"] = {}
            values["server_commits"] = None
        return Section(self.name, values, tuple(invalid), (*self.notes, *warnings))

    def _with_texts(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The kept statements' texts, read once for the few that are kept."""
        if not rows:
            return rows
        try:
            texts = dict(
                self._rows(
                    "SELECT DISTINCT ON (queryid) queryid::text, left(query, 200)"
                    " FROM pg_stat_statements WHERE queryid::text = ANY(%s)",
                    ([r["queryid"] for r in rows],),
                )
            )
        except self._errors:
            texts = {}
        return [{**r, "query": texts.get(r["queryid"])} for r in rows]

    def close(self) -> None:
        self._polling = False
        self._close_connections()


def _own_cpu(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU the statistics backends used between two readings. A backend that exited in
    between (killed, or a restart) is missing from ``after``: its CPU since ``before`` went to
    the postmaster's reaped-children times and cannot be told apart, so it counts as the
    server's; the lifetime CPU it had before is not counted twice."""
    return sum(max(after[pid] - cpu, 0.0) for pid, cpu in before.items() if pid in after)


def _wait_summary(counts: dict[str, Any], target_interval_s: float) -> dict[str, Any]:
    """The poller's counts as time: each count stands for one measured mean interval."""
    polls = counts["polls"]
    step = counts["elapsed_s"] / polls if polls else 0.0
    events = [
        {"type": t, "event": e, "count": n, "wait_s": n * step} for t, e, n in counts["events"]
    ]
    return {
        "polls": polls,
        "interval_s": step,
        "target_interval_s": target_interval_s,
        "wait_s": sum(ev["wait_s"] for ev in events),
        "active_s": counts["active"] * step,
        "on_cpu_s": counts["on_cpu"] * step,
        "mean_sessions": counts["sessions"] / polls if polls else 0.0,
        "max_sessions": counts["max_sessions"],
        "poller_cpu_s": counts["cpu_s"],
        "events": events,
        "error": counts["error"],
    }


def autovacuum_jobs(before: Mapping[int, int], after: Mapping[int, int]) -> int:
    """Autovacuum and autoanalyze runs between two readings of ``relid -> jobs so far``: a
    table new since ``before`` counts from 0; one dropped (or its counters reset) in between
    is left out rather than taking its earlier jobs off the count."""
    return sum(max(n - before.get(relid, 0), 0) for relid, n in after.items())


#: per-relation figures that are gauges: kept as read after the sample, not as deltas
_GAUGES = ("n_live_tup", "n_dead_tup")
#: the figures that say a relation was used at all during the sample (by the workload, or by
#: autovacuum: background work inside the measured window)
_ACTIVITY = (
    "seq_scan",
    "idx_scan",
    "n_tup_ins",
    "n_tup_upd",
    "n_tup_del",
    "idx_tup_read",
    "autovacuum_count",
    "autoanalyze_count",
)


def _relation_deltas(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """Each relation the sample used (scanned or wrote), its counters as deltas and its gauges
    as read after; most active first. A relation created during the sample counts from zero;
    one whose counters went backwards (dropped and recreated, a reset) is left out."""
    out = []
    for relation, now in after.items():
        was = before.get(relation, {})
        counters = [k for k in now if k not in ("relation", "table_name", *_GAUGES)]
        d, negative = delta({k: was.get(k, 0) for k in counters}, now, counters)
        if negative or not any(d.get(k) for k in _ACTIVITY):
            continue
        row: dict[str, Any] = {"relation": relation, **{k: _num(v) for k, v in d.items()}}
        if "table_name" in now:
            row["table"] = now["table_name"]
        row.update({k: _num(now[k]) for k in _GAUGES if k in now})
        out.append(row)
    out.sort(key=lambda r: -sum(r.get(k) or 0 for k in _ACTIVITY))
    return out


def _statement_deltas(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """Per query id, after − before; an entry evicted or reset in between (a negative delta)
    is dropped rather than reported wrong."""
    out = []
    for qid, row in after.items():
        old = before.get(qid, {})
        d = {
            "queryid": qid,
            "calls": row["calls"] - old.get("calls", 0),
            "total_exec_ms": row["total_exec_time"] - old.get("total_exec_time", 0.0),
            "rows": row["rows"] - old.get("rows", 0),
            "shared_blks_hit": row["shared_blks_hit"] - old.get("shared_blks_hit", 0),
            "shared_blks_read": row["shared_blks_read"] - old.get("shared_blks_read", 0),
        }
        if d["calls"] <= 0 or any(v < 0 for k, v in d.items() if k != "queryid"):
            continue
        out.append(d)
    out.sort(key=lambda r: -r["total_exec_ms"])
    return out[:_STATEMENTS_KEPT]


def _plain(v: Any) -> Any:
    """numeric columns (wal_bytes, sums) arrive as Decimal: make them plain numbers."""
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    return v


def _num(v: Any) -> Any:
    try:
        return float(v) if v is not None else None
    except (TypeError, ValueError):
        return v


def _running(pid: int) -> bool:
    """True while a process exists and has not exited (a zombie has exited)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _first(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def profiled_processes(target: Target, engine: Engine) -> ProfiledProcesses:
    """The server's postmaster and the processes under it, for ``perf``; ProfileError when
    the server does not demonstrably run on this machine.

    The postmaster is the ``postgres`` process without a ``postgres`` parent whose start time
    is ``pg_postmaster_start_time()``; its pid file in ``data_directory`` settles it when
    several match and the setting is readable (a superuser, ``pg_read_all_settings``).
    """
    if not is_local_host(target):
        raise ProfileError(
            "profiles need the PostgreSQL server on this host, and the target is not: run"
            " wannabet where the server runs, or without --profile / [profile] perf"
        )
    rows = engine.query(
        target,
        "SELECT extract(epoch FROM pg_postmaster_start_time()),"
        " CASE WHEN pg_has_role('pg_read_all_settings', 'member')"
        " THEN current_setting('data_directory') END",
        timeout_s=STATEMENT_TIMEOUT_MS / 1000,
    )
    started, data_directory = float(rows[0][0] or 0), rows[0][1]
    found: list[int] = []
    if data_directory:
        pid_file = os.path.join(data_directory, "postmaster.pid")
        with contextlib.suppress(OSError, ValueError), open(pid_file, encoding="ascii") as f:
            found = [int(f.readline().strip())]
    if not found:
        for process in psutil.process_iter(["name", "create_time", "ppid"]):
            with contextlib.suppress(psutil.Error):
                if process.info["name"] not in ("postgres", "postmaster"):
                    continue
                parent = psutil.Process(process.info["ppid"]) if process.info["ppid"] else None
                if parent is not None and parent.name() in ("postgres", "postmaster"):
                    continue
                if abs(process.info["create_time"] - started) <= _START_TIME_TOLERANCE_S:
                    found.append(process.pid)
    try:
        if len(found) != 1:
            raise psutil.NoSuchProcess(0)
        postmaster = psutil.Process(found[0])
        if abs(postmaster.create_time() - started) > _START_TIME_TOLERANCE_S:
            raise psutil.NoSuchProcess(postmaster.pid)
    except psutil.Error:
        raise ProfileError(
            "profiles need the PostgreSQL server's processes, and they are not visible here"
            " (another host, container or namespace"
            + (", or several servers started at the same time" if len(found) > 1 else "")
            + "): run wannabet where the server runs, or without --profile / [profile] perf"
        ) from None
    return ProfiledProcesses(
        (postmaster.pid,),
        f"the PostgreSQL server (postmaster {postmaster.pid} and its processes)",
        children=True,
    )
