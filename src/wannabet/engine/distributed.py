"""Load generators on Ray: every sample run by several engines at once and merged into one.

:class:`DistributedEngine` is an :class:`~wannabet.engine.base.Engine`: the runner drives it as
it drives the native engine, so the design (randomized blocks, conditions, hooks, held sessions,
statistics samplers) stays central and runs once. Only ``run_sample`` is distributed:

1. the sample's sessions are split over the generators (Ray actors, one per node that offers
   the ``wannabet_generator`` resource, or as many as asked on a local cluster), each with its
   share of the sessions, of the arrival rate and of a transaction count, and its own seed;
2. every generator is sent the same start instant, a moment ahead, translated to its own clock
   by the offset measured just before (Cristian's method: the round trip with the shortest
   time, offset at its midpoint, uncertainty half its length), and sleeps until it;
3. each runs the native engine (or the DB-API one) for its sessions and returns its per-sample
   summaries and, when rows are recorded, its rows;
4. the coordinator shifts the rows' times onto its own clock, numbers the sessions one after
   another, merges the summaries exactly (:func:`wannabet.store.summaries.merge`) and returns
   one :class:`~wannabet.engine.base.SampleResult`, whose ``generators`` say who ran what.

A generator that dies or does not answer by the sample's deadline is counted as lost sessions,
so the sample is degraded and the run follows ``[sampling] on_degraded``; a lost generator is
started again (elsewhere, if Ray can) before the next sample. With ``on_error = "abort"`` a lost
generator is an error like any other, and the run stops, marked failed. Every wait has a deadline. A
sample whose generators started further apart than the tolerance is degraded too: its sessions
did not run together.

Ray is imported only here, and only when a distributed engine is made (``pip install
'wannabet[distributed]'``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import math
import os
import re
import socket
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from wannabet.engine.base import (
    DryCondition,
    DryRunResult,
    HeldConnection,
    Progress,
    SampleRequest,
    SampleResult,
)
from wannabet.engine.native import NativeEngine
from wannabet.errors import ConnectError, MissingExtra, TargetError
from wannabet.model import START_TOLERANCE_S
from wannabet.store.summaries import merge
from wannabet.targets import Target
from wannabet.threads import Abandoned, call_abandonable

__all__ = ["ClockOffset", "DistributedEngine", "GeneratorInfo", "split"]

#: the custom Ray resource a node offers once per generator it may host (``ray start
#: --resources '{"wannabet_generator": 1}'``); a local cluster made by wannabet offers it itself
GENERATOR_RESOURCE = "wannabet_generator"
#: how far ahead of now a sample's start instant is set: time for the request to reach every
#: generator (a Ray call takes about a millisecond here; a remote cluster, tens)
START_LEAD_S = 0.5
#: round trips per clock reading; the shortest is used
CLOCK_ROUNDS = 7
#: beyond the sample's own length (and deadline and grace), how long a generator may take to
#: answer before it counts as lost
ANSWER_MARGIN_S = 30.0
#: how long connecting to a Ray cluster may take (Ray itself retries for many minutes)
CONNECT_S = 30.0
#: how long starting the generators may take (a worker process per generator imports wannabet)
STARTUP_S = 120.0
#: how often, while a sample runs, the coordinator polls its generators and calls the progress
#: callback (where the runner stops a sample: Ctrl-C, the end of a [background] load)
PROGRESS_EVERY_S = 0.25
#: how long generators told to stop a sample may take to return before they are killed
STOP_GRACE_S = 5.0


@dataclass(frozen=True, slots=True)
class ClockOffset:
    """A generator's clock against the coordinator's: ``generator − coordinator``, and half the
    round trip it was measured over (the offset lies within ± that, whatever the path's
    asymmetry)."""

    offset_ns: int
    uncertainty_ns: int


@dataclass(frozen=True, slots=True)
class GeneratorInfo:
    """Where a generator runs."""

    index: int
    host: str
    node: str
    pid: int
    #: the generator process's niceness (0 unless it could not leave Ray's default of 15)
    niceness: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def split(total: int, parts: int) -> list[int]:
    """``total`` as ``parts`` near-equal whole shares, the larger ones first."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def clock_offset(readings: Sequence[tuple[int, int, int]]) -> ClockOffset:
    """Cristian's estimate from ``(sent, generator's clock, received)`` round trips, every time
    in ns: the round trip with the shortest time, the generator's reading taken at its midpoint.
    """
    if not readings:
        raise ValueError("a clock offset needs at least one round trip")
    sent, theirs, received = min(readings, key=lambda r: r[2] - r[0])
    half = (received - sent) // 2
    return ClockOffset(theirs - (sent + half), half)


class _Stopped(Exception):
    """Raised from a generator's progress call when the coordinator stops its sample."""


class _Generator:
    """The Ray actor: one engine on one node. Made remote by :class:`DistributedEngine`.

    Several calls may run at once (a measured sample, a ``[background]`` one, clock readings,
    the coordinator's progress polls and stops): the sample's token names which one a stop or
    a poll is about.
    """

    def __init__(self, index: int) -> None:
        self._index = index
        self._engine = NativeEngine()
        # Ray starts its workers at niceness 15 (RAY_worker_niceness): a generator on a busy
        # node would lose the CPU to anything else there. As root it takes the default back.
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, 0, 0)
        self._niceness = os.getpriority(os.PRIO_PROCESS, 0)
        self._stops: set[int] = set()
        self._latest: dict[int, tuple[int, int, float, float]] = {}

    def describe(self) -> dict[str, Any]:
        import ray

        return GeneratorInfo(
            self._index,
            socket.gethostname(),
            ray.get_runtime_context().get_node_id(),
            os.getpid(),
            self._niceness,
        ).to_dict()

    def clock(self) -> int:
        return time.time_ns()

    def stop(self, token: int) -> None:
        """Stop sample ``token`` at its next progress tick (its sessions' statements are
        cancelled, as for Ctrl-C on one host); it returns no result."""
        self._stops.add(token)

    def latest(self, token: int) -> tuple[int, int, float, float] | None:
        """Sample ``token``'s last progress: committed, failed, seconds, p99 (ms)."""
        return self._latest.get(token)

    def run_sample(
        self, target: Target, request: SampleRequest, start_at_ns: int, token: int = 0
    ) -> tuple[int, SampleResult | None]:
        def progress(ok: int, errors: int, elapsed_s: float, p99_ms: float) -> None:
            self._latest[token] = (ok, errors, elapsed_s, p99_ms)
            if token in self._stops:
                raise _Stopped

        try:
            # Sleep until the start instant on this generator's clock; the last stretch
            # spins, as a sleep may overshoot by a scheduler tick.
            while (left := start_at_ns - time.time_ns()) > 2_000_000:
                if token in self._stops:
                    return time.time_ns(), None
                time.sleep(min(left - 1_000_000, 100_000_000) / 1e9)
            while time.time_ns() < start_at_ns:
                pass
            started = time.time_ns()
            try:
                return started, self._engine.run_sample(target, request, progress)
            except _Stopped:
                return started, None
        finally:
            self._stops.discard(token)
            self._latest.pop(token, None)


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise MissingExtra("running on several load generators", "distributed", "ray") from None
    return ray


class DistributedEngine:
    """An engine whose samples run on ``generators`` Ray actors (see the module docstring).

    ``address`` is a Ray cluster's (``ray.init(address=...)``: ``"auto"``, ``"ray://host:10001"``,
    ``"host:6379"``); None starts a local cluster with ``generators`` generator slots. Set-up,
    hooks, queries and held sessions run here, on a local engine.
    """

    sessions_here = False  # they run in the generators' processes

    def __init__(
        self,
        generators: int,
        address: str | None = None,
        *,
        start_tolerance_s: float = START_TOLERANCE_S,
    ) -> None:
        if generators < 1:
            raise ValueError(f"generators must be at least 1, got {generators}")
        self._ray = _ray()
        self._local = NativeEngine()
        self._count = generators
        self._tolerance_ns = int(start_tolerance_s * 1e9)
        self._owns_cluster = False
        self._tokens = itertools.count(1)  # names each sample to its generators
        if not self._ray.is_initialized():
            if address is None:
                self._ray.init(
                    num_cpus=max(generators, os.cpu_count() or 1),
                    resources={GENERATOR_RESOURCE: generators},
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            else:
                self._connect(address)
            self._owns_cluster = True
        available = self._ray.cluster_resources().get(GENERATOR_RESOURCE, 0)
        if available < generators:
            self.close()
            raise TargetError(
                f"the Ray cluster offers {available:g} generator slot(s) and the run asks for"
                f" {generators}: start its nodes with ray start --resources"
                f" '{{\"{GENERATOR_RESOURCE}\": 1}}', or ask for fewer generators"
            )
        self._actors: list[Any] = [self._start(i) for i in range(generators)]
        self.infos: list[GeneratorInfo] = [
            GeneratorInfo(**d)
            for d in self._get([a.describe.remote() for a in self._actors], STARTUP_S)
        ]
        self.clocks: list[ClockOffset] = [self.measure_clock(i) for i in range(generators)]

    def _connect(self, address: str) -> None:
        """``ray.init(address)`` within :data:`CONNECT_S`, or one line naming ``address``.

        Ray retries an address that does not answer for many minutes, and its error names the
        address as it rewrote it (a loopback one as the host's): the head's port is tried
        first, and ``ray.init`` runs on a thread that is given up on at the deadline.
        """
        where = _host_port(address)
        fix = (
            "check --ray-address (or [distributed] address): the head node's host:6379,"
            " ray://host:10001 or auto, and that the cluster runs (ray status there)"
        )
        if where is not None:
            try:
                socket.create_connection(where, timeout=min(CONNECT_S, 10.0)).close()
            except OSError as exc:
                raise ConnectError(
                    f"cannot reach the Ray cluster at {address}"
                    f" ({exc.strerror or type(exc).__name__}); {fix}"
                ) from None
        # On a thread of its own, ray.init leaves SIGTERM alone and says so on stderr: the
        # runner handles SIGTERM itself (the run ends interrupted, its samples kept), so the
        # warning is not the user's concern.
        worker_log = logging.getLogger("ray._private.worker")
        quiet = _WithoutMessage("SIGTERM handler is not set")
        worker_log.addFilter(quiet)
        try:
            call_abandonable(
                lambda: self._ray.init(
                    address=address, log_to_driver=False, configure_logging=False
                ),
                name="wannabet-ray-init",
                deadline_s=CONNECT_S,
            )
        except Abandoned:
            raise ConnectError(
                f"the Ray cluster at {address} did not answer within {CONNECT_S:g} s; {fix}"
            ) from None
        except Exception as exc:
            raise ConnectError(
                f"cannot connect to the Ray cluster at {address} ({_first_line(exc)}); {fix}"
            ) from None
        finally:
            worker_log.removeFilter(quiet)

    # -- the engine contract, central parts ------------------------------------------------------

    @property
    def version(self) -> str:
        return self._local.version

    @property
    def application_name(self) -> str:
        return self._local.application_name

    def execute(self, target: Target, sql: str) -> None:
        self._local.execute(target, sql)

    def execute_many(self, target: Target, statements: list[str]) -> None:
        self._local.execute_many(target, statements)

    def query(
        self, target: Target, sql: str, *, timeout_s: float | None = None
    ) -> list[tuple[str | None, ...]]:
        return self._local.query(target, sql, timeout_s=timeout_s)

    def hold(self, target: Target) -> HeldConnection:
        return self._local.hold(target)

    def dry_run(
        self, target: Target, setup: list[str], conditions: list[DryCondition]
    ) -> DryRunResult:
        return self._local.dry_run(target, setup, conditions)

    # -- the generators --------------------------------------------------------------------------

    def _start(self, index: int) -> Any:
        remote = self._ray.remote(_Generator).options(
            resources={GENERATOR_RESOURCE: 1},
            num_cpus=0,
            max_restarts=0,
            # A clock reading, a progress poll or a stop may come while a sample runs, and a
            # [background] sample runs beside the measured one.
            max_concurrency=8,
            # The coordinator's session name, so that statistics taken here find every
            # generator's sessions (PostgreSQL's application_name).
            runtime_env={"env_vars": {"WANNABET_APPLICATION_NAME": self.application_name}},
        )
        return remote.remote(index)

    def _get(self, refs: list[Any], timeout_s: float) -> list[Any]:
        try:
            return list(self._ray.get(refs, timeout=timeout_s))
        except self._ray.exceptions.GetTimeoutError:
            raise TargetError(
                f"the load generators did not answer within {timeout_s:g} s; check the Ray"
                " cluster (ray status)"
            ) from None
        except self._ray.exceptions.RayError as exc:
            raise TargetError(
                f"a load generator could not start ({_cause(exc)}); every node of the Ray"
                f" cluster needs wannabet {self.version} installed with its engine"
            ) from None

    def measure_clock(self, index: int, rounds: int = CLOCK_ROUNDS) -> ClockOffset:
        """Generator ``index``'s clock offset, from ``rounds`` round trips."""
        actor = self._actors[index]
        readings = []
        for _ in range(rounds):
            sent = time.time_ns()
            theirs = self._ray.get(actor.clock.remote(), timeout=10.0)
            readings.append((sent, int(theirs), time.time_ns()))
        return clock_offset(readings)

    def environment(self) -> list[dict[str, Any]]:
        """Every generator's host and clock, for the run's environment."""
        return [
            {**info.to_dict(), "offset_ns": c.offset_ns, "uncertainty_ns": c.uncertainty_ns}
            for info, c in zip(self.infos, self.clocks, strict=True)
        ]

    def _revive(self, index: int) -> None:
        """Start generator ``index`` again after it was lost (its node may be gone: Ray places
        the new one wherever a slot is free)."""
        with contextlib.suppress(Exception):  # already dead
            self._ray.kill(self._actors[index], no_restart=True)
        self._actors[index] = self._start(index)
        (info,) = self._get([self._actors[index].describe.remote()], STARTUP_S)
        self.infos[index] = GeneratorInfo(**info)

    # -- a sample ----------------------------------------------------------------------------------

    def run_sample(
        self, target: Target, request: SampleRequest, progress: Progress | None = None
    ) -> SampleResult:
        plan = _parts(request, self._count)
        # A generator that does not answer its clock reading (even once started again) is
        # not sent the sample: its sessions count as lost.
        unreachable: dict[int, str] = {}
        for part in plan:
            i = part.generator
            try:
                self.clocks[i] = self.measure_clock(i)
            except Exception:
                try:
                    self._revive(i)
                    self.clocks[i] = self.measure_clock(i)
                except Exception as exc:
                    unreachable[i] = f"unreachable before the sample ({_first_line(exc)})"
        start_at = time.time_ns() + int(START_LEAD_S * 1e9)
        token = next(self._tokens)
        refs: list[tuple[int, int, int, Any]] = []  # generator, first session, sessions, ref
        parts: list[tuple[int, int, int, int | None, SampleResult | None, str | None]] = []
        for part in plan:
            i, first, k = part.generator, part.first, part.request.sessions
            if i in unreachable:
                parts.append((i, first, k, None, None, unreachable[i]))
                continue
            ref = self._actors[i].run_sample.remote(
                target, part.request, start_at + self.clocks[i].offset_ns, token
            )
            refs.append((i, first, k, ref))
        length_ns = max(request.duration_ns, request.deadline_ns) + request.grace_ns
        timeout = START_LEAD_S + length_ns / 1e9 + ANSWER_MARGIN_S
        if request.duration_ns == 0 and request.deadline_ns == 0:
            timeout = math.inf  # a transaction count without a deadline: as long as it takes
        waiting = [r for *_, r in refs]
        done: list[Any] = []
        ends = time.monotonic() + timeout
        polls: dict[int, Any] = {}  # generator: its pending progress poll
        latest: dict[int, tuple[int, int, float, float]] = {}
        try:
            # Short waits, so that Ctrl-C (Python's signal handler) is seen at once, and a
            # progress call every tick: the runner stops a sample by raising from it.
            while waiting and time.monotonic() < ends:
                ready, waiting = self._ray.wait(
                    waiting,
                    num_returns=len(waiting),
                    timeout=min(PROGRESS_EVERY_S, ends - time.monotonic()),
                )
                done.extend(ready)
                if progress is not None and waiting:
                    self._poll(refs, token, polls, latest)
                    progress(*_summed(latest.values()))
        except BaseException:
            # The sample is dropped (Ctrl-C, or the end of a [background] load): stop its
            # generators where they are.
            self._stop(refs, token, [r for r in waiting if r not in done])
            raise
        for i, first_session, k, ref in refs:
            if ref not in done:
                # Killed and started again below: a generator that hangs must not hold the run.
                parts.append((i, first_session, k, None, None, "did not answer by the deadline"))
                continue
            try:
                started, result = self._ray.get(ref)
                if result is None:
                    raise TargetError("stopped before the end of the sample")
            except self._ray.exceptions.RayTaskError as exc:
                cause = exc.as_instanceof_cause()
                if isinstance(cause, TargetError):
                    raise cause from None  # the database's error: as from a local engine
                parts.append((i, first_session, k, None, None, _first_line(exc)))
            except Exception as exc:
                parts.append((i, first_session, k, None, None, _first_line(exc)))
            else:
                parts.append((i, first_session, k, int(started), result, None))
        parts.sort(key=lambda p: p[0])
        lost = [(i, error) for i, _, _, _, result, error in parts if result is None]
        if lost and request.on_error == "abort":
            # The workload stops at its first error; a lost generator is one.
            i, error = lost[0]
            raise TargetError(f"generator {i} on {self.infos[i].host} was lost: {error}")
        merged = self._merged(parts, start_at, request)
        for i, _, _, _, result, _ in parts:
            if result is None and i not in unreachable:
                with contextlib.suppress(Exception):  # the next sample tries again
                    self._revive(i)
        if progress is not None:
            ok = merged.summaries.statuses
            committed = int(ok["count"][(ok["status"] == 0) & ~ok["warmup"]].sum())
            progress(committed, 0, (merged.end_ns - merged.t0_ns) / 1e9, 0.0)
        return merged

    def _poll(
        self,
        refs: Sequence[tuple[int, int, int, Any]],
        token: int,
        polls: dict[int, Any],
        latest: dict[int, tuple[int, int, float, float]],
    ) -> None:
        """Collect the generators' progress polls that have answered into ``latest`` and send
        new ones; never waits (a generator slow to answer keeps its last counts)."""
        if polls:
            ready, _ = self._ray.wait(list(polls.values()), num_returns=len(polls), timeout=0)
            for i, ref in list(polls.items()):
                if ref in ready:
                    del polls[i]
                    with contextlib.suppress(Exception):  # a lost generator: counted later
                        if (got := self._ray.get(ref)) is not None:
                            latest[i] = got
        for i, *_ in refs:
            if i not in polls:
                polls[i] = self._actors[i].latest.remote(token)

    def _stop(
        self, refs: Sequence[tuple[int, int, int, Any]], token: int, running: list[Any]
    ) -> None:
        """Stop sample ``token`` on its generators: each cancels its sessions' statements and
        returns; one that has not within :data:`STOP_GRACE_S` (or on a second Ctrl-C) is killed,
        and started again before its next sample."""
        for i, *_ in refs:
            with contextlib.suppress(Exception):
                self._actors[i].stop.remote(token)
        try:
            ends = time.monotonic() + STOP_GRACE_S
            while running and time.monotonic() < ends:
                _, running = self._ray.wait(
                    running, num_returns=len(running), timeout=min(0.2, ends - time.monotonic())
                )
        except KeyboardInterrupt:
            pass
        for i, _, _, ref in refs:
            if ref in running:
                with contextlib.suppress(Exception):
                    self._ray.kill(self._actors[i], no_restart=True)

    def _merged(
        self,
        parts: Sequence[tuple[int, int, int, int | None, SampleResult | None, str | None]],
        start_at: int,
        request: SampleRequest,
    ) -> SampleResult:
        results: list[SampleResult] = []
        shifted: list[dict[str, np.ndarray]] = []
        codes: list[str] = []
        messages: dict[str, str] = {}
        generators: list[dict[str, Any]] = []
        lost = stuck = reconnects = 0
        overran = False
        cpu: list[int] = []
        counters: dict[str, int] = {}
        starts: list[int] = []
        for i, first, k, started, result, error in parts:
            info, clock = self.infos[i], self.clocks[i]
            entry: dict[str, Any] = {
                "generator": i,
                "host": info.host,
                "node": info.node,
                "sessions": [first, first + k - 1],
                "offset_ns": clock.offset_ns,
                "uncertainty_ns": clock.uncertainty_ns,
            }
            if result is None or started is None:
                lost += k
                entry["lost"] = error
                messages[f"generator {i}"] = f"generator {i} on {info.host} was lost: {error}"
                generators.append(entry)
                continue
            # The generator's clock onto the coordinator's.
            offset = clock.offset_ns
            start = started - offset
            starts.append(start)
            entry["start_ns"] = start
            entry["start_lag_ns"] = start - start_at
            ok = result.summaries.statuses
            entry["committed"] = int(ok["count"][(ok["status"] == 0) & ~ok["warmup"]].sum())
            generators.append(entry)
            columns = {name: np.asarray(values) for name, values in result.columns.items()}
            for name in ("intended_start_ns", "start_ns", "end_ns"):
                columns[name] = columns[name].astype(np.int64) - offset
            columns["session"] = columns["session"].astype(np.int32) + first
            # Each generator numbers its error codes; the merged result numbers them afresh.
            remap = np.asarray(
                [_code_index(codes, c) for c in result.error_codes] or [0], dtype=np.int32
            )
            code = columns["error_code"].astype(np.int32)
            columns["error_code"] = np.where(code < 0, code, remap[np.maximum(code, 0)])
            shifted.append(columns)
            results.append(
                dataclasses.replace(
                    result, t0_ns=result.t0_ns - offset, end_ns=result.end_ns - offset
                )
            )
            messages.update(result.error_messages)
            lost += result.sessions_lost
            stuck += result.sessions_stuck
            reconnects += result.reconnects
            overran = overran or result.overran
            cpu.extend(result.session_cpu_ns)
            for key, value in result.counters.items():
                counters[key] = counters.get(key, 0) + int(value)
        if not results:
            raise TargetError(
                "every load generator was lost: "
                + "; ".join(messages.values())
                + "; check the Ray cluster (ray status)"
            )
        # Beyond the tolerance the runner marks the sample degraded: its sessions did not run
        # together (wannabet.runner.degraded_reason).
        skew = max(starts) - min(starts)
        columns = {name: np.concatenate([c[name] for c in shifted]) for name in shifted[0]}
        order = np.argsort(columns["start_ns"], kind="stable")
        columns = {name: values[order] for name, values in columns.items()}
        return SampleResult(
            t0_ns=min(r.t0_ns for r in results),
            end_ns=max(r.end_ns for r in results),
            columns=columns,
            summaries=merge([r.summaries for r in results]),
            error_codes=tuple(codes),
            error_messages=messages,
            sessions_lost=lost,
            sessions_stuck=stuck,
            reconnects=reconnects,
            overran=overran,
            session_cpu_ns=tuple(cpu),
            counters=counters,
            generators=tuple(generators),
            start_skew_ns=skew,
            start_tolerance_ns=self._tolerance_ns,
        )

    def close(self) -> None:
        """Stop the generators, and the local cluster if this engine started it."""
        for actor in getattr(self, "_actors", []):
            with contextlib.suppress(Exception):
                self._ray.kill(actor, no_restart=True)
        self._actors = []
        if self._owns_cluster and self._ray.is_initialized():
            self._ray.shutdown()
        self._owns_cluster = False


@dataclass(frozen=True, slots=True)
class _Part:
    """What generator ``generator`` runs of a sample."""

    generator: int
    #: the sample's number of its first session
    first: int
    request: SampleRequest


def _parts(request: SampleRequest, generators: int) -> list[_Part]:
    """``request`` split over ``generators``: each its near-equal share of the sessions (numbered
    on from the generators before it), of the arrival rate, of a transaction count and of the
    stored rows, and a seed of its own.

    A generator whose share of the sessions, or of a transaction count, is 0 runs nothing and
    is left out: 0 means "no limit" to an engine, so it would run for ever (or, with a
    duration, for the whole of it), and the sample would hold more transactions than asked.
    A generator whose share of ``max_rows`` is 0 keeps no rows (``record = 0``); its
    transactions are still summarised.
    """
    shares = split(request.sessions, generators)
    if request.max_transactions > 0:
        counts = _apportioned(request.max_transactions, shares)
        # Sessions without a transaction to run are dropped, as the local engine's sessions
        # beyond a count run nothing; the shares of the rest stay as they were.
        shares = [k if c > 0 else 0 for k, c in zip(shares, counts, strict=True)]
    else:
        counts = [0] * generators
    rows = _apportioned(request.max_rows, shares)
    running = sum(shares)
    parts: list[_Part] = []
    first = 0
    for i, k in enumerate(shares):
        if k == 0:
            continue
        record = request.record if request.max_rows == 0 or rows[i] > 0 else 0.0
        part = dataclasses.replace(
            request,
            sessions=k,
            # :client_id goes on from the generators before (the script sees the session's
            # number in the sample, as the stored rows do)
            first_session=request.first_session + first,
            seed=(request.seed + 1_000_003 * i) % (2**63),
            rate=request.rate * k / running,
            max_transactions=counts[i],
            max_rows=rows[i],
            record=record,
        )
        parts.append(_Part(i, first, part))
        first += k
    return parts


def _apportioned(total: int, weights: Sequence[int]) -> list[int]:
    """``total`` split in proportion to ``weights``, in whole numbers that add up to it (the
    largest remainders get the units left over); 0 stays 0 everywhere."""
    whole = sum(weights)
    if total <= 0 or whole <= 0:
        return [0] * len(weights)
    exact = [total * w / whole for w in weights]
    out = [math.floor(x) for x in exact]
    for i in sorted(range(len(out)), key=lambda i: out[i] - exact[i])[: total - sum(out)]:
        out[i] += 1
    return out


def _summed(
    progress: Iterable[tuple[int, int, float, float]],
) -> tuple[int, int, float, float]:
    """The generators' progress as one: their committed and failed transactions summed, the
    longest time, and the highest p99 (an upper bound of the sample's: the generators'
    histograms are merged only at the end). Zeros before any has reported."""
    ok = errors = 0
    elapsed = p99 = 0.0
    for o, e, t, p in progress:
        ok, errors, elapsed, p99 = ok + o, errors + e, max(elapsed, t), max(p99, p)
    return ok, errors, elapsed, p99


def _host_port(address: str) -> tuple[str, int] | None:
    """The host and port a Ray address connects to first (None for ``auto``, which finds
    the cluster this host is in)."""
    m = re.fullmatch(r"(?:ray://)?\[?([^\]/]+?)\]?:(\d+)/?", address.strip())
    return (m.group(1), int(m.group(2))) if m else None


def _code_index(codes: list[str], code: str) -> int:
    if code not in codes:
        codes.append(code)
    return codes.index(code)


def _cause(exc: BaseException) -> str:
    """The last line of a Ray error that names an exception (Ray wraps the worker's traceback)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    named = [ln for ln in lines if re.match(r"^[A-Za-z_.]+(Error|Exception): ", ln)]
    return (named[-1] if named else _first_line(exc))[:300]


class _WithoutMessage(logging.Filter):
    """Drops the log records whose message starts with ``prefix``."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self._prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self._prefix)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
