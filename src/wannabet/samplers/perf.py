"""CPU profiles of the server, one per sample: ``perf record`` on its processes, folded by inferno.

With ``[profile] perf = true`` (or ``run --profile``) every sample gets a profile: ``perf record
-e cpu-clock -F <frequency> -g`` attached to the server's processes from right before the
sample until right after it, read back with ``perf script`` and folded into ``(stack, weight)``
pairs by :func:`wannabet.engine.flame.fold_perf`. The pairs are stored per sample in the
``profiles`` table; the section ``profile`` of ``samples.stats`` keeps the totals.

* ``cpu-clock`` is a software event: it works in virtual machines and containers, where the
  hardware cycle counters usually do not.
* Which processes: the backend says (:attr:`wannabet.backends.Backend.profiled`). For a
  PostgreSQL server it is the postmaster and every process under it, listed afresh at each
  sample, and perf's inheritance adds the backends forked during the sample; for MySQL and
  MariaDB the server process (its threads are included); for SQLite and DuckDB, which run inside
  the engine, this process.
* Whether perf may: :func:`check_profiling` records a tenth of a second of the server with the
  run's own options before the run starts, so a missing ``perf``, a
  ``kernel.perf_event_paranoid`` that forbids it or a server that is not on this host stops the
  run at once with one line (:class:`~wannabet.errors.ProfileError`), never in its middle. A
  sample whose profile fails later (the server restarted) gets an invalid ``profile`` section
  and a warning, like any sampler.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import psutil  # type: ignore[import-untyped]

from wannabet.engine.base import Engine, SampleResult
from wannabet.engine.flame import fold_perf
from wannabet.errors import ProfileError
from wannabet.samplers.base import Interrupted, Section, StatsWarning, never

__all__ = ["PerfSampler", "ProfiledProcesses", "check_profiling", "perf_path"]

#: the longest ``perf record`` may take to attach (about 0.3 s here), and to write its file
#: after SIGINT
_ATTACH_S = 5.0
_FINISH_S = 30.0
#: the longest ``perf script`` may take to read one sample's profile
_SCRIPT_S = 120.0
#: how long :func:`check_profiling` records
_CHECK_S = 0.1
#: attempts to attach: a process listed may end before perf attaches to it
_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class ProfiledProcesses:
    """The processes a profile covers: ``roots``, and with ``children`` every process under
    them at each sample (a PostgreSQL server's backends come and go)."""

    roots: tuple[int, ...]
    #: for messages: "the PostgreSQL server (postmaster 1234 and its processes)"
    description: str
    children: bool = False
    #: finds the server's processes again when a root is gone: a server restarted between
    #: samples (a hook, a setting that needs a restart) runs under a new pid. None: a root
    #: that is gone stays an error (this process)
    locate: Callable[[], ProfiledProcesses] | None = field(default=None, compare=False)

    def pids(self) -> list[int]:
        """The pids to attach to now; a root that is gone raises ProfileError."""
        pids: list[int] = []
        for root in self.roots:
            try:
                process = psutil.Process(root)
                # A server that exited but was not reaped (its parent is an init that does
                # not reap, as in many containers) is gone too: perf cannot attach to it.
                if process.status() == psutil.STATUS_ZOMBIE:
                    raise psutil.ZombieProcess(root)
                pids.append(root)
                if self.children:
                    pids.extend(p.pid for p in process.children(recursive=True) if _alive(p))
            except psutil.Error as exc:
                raise ProfileError(f"{self.description} is gone: {exc}") from None
        return sorted(set(pids))


def _alive(process: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return bool(process.status() != psutil.STATUS_ZOMBIE)
    return False


def perf_path() -> str:
    """The ``perf`` command, or ProfileError saying how to get it."""
    found = shutil.which("perf")
    if found is None:
        raise ProfileError(
            "profiles need the perf command, which is not on PATH: install it (Debian:"
            " apt-get install linux-perf; Fedora/RHEL: dnf install perf), or run without"
            " --profile / [profile] perf"
        )
    return found


def _record_command(perf: str, pids: Sequence[int], frequency_hz: int, output: Path) -> list[str]:
    return [
        perf,
        "record",
        "-e",
        "cpu-clock",
        "-F",
        str(frequency_hz),
        "-g",
        "-p",
        ",".join(str(p) for p in pids),
        "-o",
        str(output),
        # No BPF side band: perf would wait up to a second for its thread when it stops, and
        # wannabet profiles no BPF programs.
        "--no-bpf-event",
    ]


#: words of the line in perf's complaint that says why (the lines after it are advice)
_REASON_WORDS = (
    "access to",
    "paranoid",
    "permission",
    "not permitted",
    "no such",
    "error",
)


def _perf_reason(stderr: str) -> str:
    """The line of perf's complaint that says why, without its long advice.

    A bare heading (perf prints ``Error:`` on a line of its own before the reason) says
    nothing: only lines of more than one word are taken."""
    lines = [line.strip().rstrip(".:") for line in stderr.splitlines()]
    lines = [line for line in lines if len(line.split()) > 1]
    for line in lines:
        low = line.lower()
        if any(w in low for w in _REASON_WORDS):
            return line
    return lines[0] if lines else "perf failed without a message"


def check_profiling(processes: ProfiledProcesses, frequency_hz: int) -> None:
    """Record :data:`_CHECK_S` of ``processes`` as the run will; ProfileError with perf's reason
    and the fix when that fails."""
    perf = perf_path()
    reason, stderr = "", ""
    for _ in range(_ATTEMPTS):
        pids = processes.pids()
        with tempfile.TemporaryDirectory(prefix="wannabet-perf-") as tmp:
            output = Path(tmp) / "check.data"
            command = [
                *_record_command(perf, pids, frequency_hz, output),
                "--",
                "sleep",
                str(_CHECK_S),
            ]
            try:
                done = subprocess.run(command, capture_output=True, text=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise ProfileError(f"perf cannot profile {processes.description}: {exc}") from None
            if done.returncode == 0 and output.exists():
                return
            stderr = done.stderr
            reason = _perf_reason(stderr)
            if not _vanished(stderr):
                break
    fix = (
        "run as root, or allow it with sysctl kernel.perf_event_paranoid=-1"
        if "paranoid" in stderr or "ermission" in stderr
        else "check that perf works here: perf record -e cpu-clock -g -- sleep 1"
    )
    raise ProfileError(
        f"perf cannot profile {processes.description} ({reason}); {fix},"
        " or run without --profile / [profile] perf"
    )


def _vanished(stderr: str) -> bool:
    """perf refused a process that ended between being listed and being attached to (a
    backend that exits), or stopped without saying why: worth another try with a fresh list."""
    return "no such process" in stderr.lower() or not stderr.strip()


_SAMPLES = re.compile(r"\((\d+) samples\)")
_LOST = re.compile(r"lost (\d+) chunks", re.IGNORECASE)


class _Vanished(Exception):
    """perf refused to attach because a listed process ended first (see :func:`_vanished`)."""


class PerfSampler:
    """``perf record`` around each sample; the section ``profile`` and its folded stacks."""

    name = "profile"

    def __init__(self, processes: ProfiledProcesses, frequency_hz: int) -> None:
        self._perf = perf_path()
        self._processes = processes
        self._frequency_hz = frequency_hz
        self._dir = Path(tempfile.mkdtemp(prefix="wannabet-perf-"))
        self._record: subprocess.Popen[bytes] | None = None
        self._control: int | None = None
        self._pids: list[int] = []

    @property
    def _output(self) -> Path:
        return self._dir / "sample.data"

    def start(self, interrupted: Interrupted = never) -> None:
        for attempt in range(_ATTEMPTS):
            try:
                self._start(interrupted)
                return
            except _Vanished:
                if attempt == _ATTEMPTS - 1:
                    raise RuntimeError(
                        "perf record could not attach: the server's processes kept changing"
                    ) from None

    def _start(self, interrupted: Interrupted) -> None:
        self.abandon()
        try:
            self._pids = self._processes.pids()
        except ProfileError:
            locate = self._processes.locate
            if locate is None:
                raise
            # The server restarted since the last sample: profile the one running now (and
            # find it again after its next restart).
            self._processes = replace(locate(), locate=locate)
            self._pids = self._processes.pids()
        self._output.unlink(missing_ok=True)
        command = _record_command(self._perf, self._pids, self._frequency_hz, self._output)
        # perf starts with its events off (-D -1) and turns them on when told through its
        # control pipe, answering "ack" once they are: only then has it attached to every
        # thread and learned their names, so the sample starts after its profile does.
        control_r, control_w = os.pipe()
        ack_r, ack_w = os.pipe()
        try:
            self._record = subprocess.Popen(
                [*command, "-D", "-1", "--control", f"fd:{control_r},{ack_w}"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(control_r, ack_w),
                # Its own process group: a Ctrl-C in the terminal is the run's to handle;
                # the sampler stops perf after the sample's rows are safe.
                start_new_session=True,
            )
        finally:
            os.close(control_r)
            os.close(ack_w)
        try:
            os.write(control_w, b"enable\n")
            deadline = time.monotonic() + _ATTACH_S
            while not interrupted():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"perf record did not start within {_ATTACH_S:g} s")
                ready, _, _ = select.select([ack_r], [], [], min(left, 0.1))
                if ready:
                    if os.read(ack_r, 64).startswith(b"ack"):
                        return
                    break  # end of file: perf exited
            stderr = b""
            if not interrupted():
                # The ack pipe closed: perf is exiting; its complaint is on stderr.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._record.wait(timeout=_FINISH_S)
            if self._record.poll() is not None and self._record.stderr is not None:
                stderr = self._record.stderr.read()
            self.abandon()
            if not interrupted():
                text = stderr.decode(errors="replace")
                if _vanished(text):
                    raise _Vanished
                raise RuntimeError(f"perf record stopped at once: {_perf_reason(text)}")
        except OSError as exc:
            self.abandon()
            raise RuntimeError(f"perf record stopped at once: {exc}") from None
        finally:
            os.close(ack_r)
            if self._record is None:
                os.close(control_w)
            else:
                # Kept open while perf runs: at the end of its control pipe perf gives up
                # without writing its file's header.
                self._control = control_w

    def stop(self, result: SampleResult, interrupted: Interrupted = never) -> Section:
        record, self._record = self._record, None
        if record is None:
            return Section(self.name, {}, ("perf record was not running",))
        record.send_signal(signal.SIGINT)
        try:
            _, err = record.communicate(timeout=_FINISH_S)
        except subprocess.TimeoutExpired:
            record.kill()
            record.communicate()
            return Section(self.name, {}, ("perf record did not finish writing its profile",))
        finally:
            self._close_control()
        stderr = err.decode(errors="replace")
        if not self._output.exists():
            return Section(self.name, {}, (f"perf record failed: {_perf_reason(stderr)}",))
        script = subprocess.run(
            [self._perf, "script", "-i", str(self._output)],
            capture_output=True,
            timeout=_SCRIPT_S,
            check=False,
        )
        self._output.unlink(missing_ok=True)
        if script.returncode != 0:
            reason = _perf_reason(script.stderr.decode(errors="replace"))
            return Section(self.name, {}, (f"perf script failed: {reason}",))
        stacks = tuple(fold_perf(script.stdout))
        weight = sum(n for _, n in stacks)
        found = _SAMPLES.search(stderr)
        warnings: list[StatsWarning] = []
        lost = _LOST.search(stderr)
        if lost:
            warnings.append(
                StatsWarning(
                    self.name,
                    f"perf lost {lost.group(1)} chunks of stack samples; a lower"
                    " [profile] frequency loses fewer",
                )
            )
        values = {
            "event": "cpu-clock",
            "frequency_hz": self._frequency_hz,
            "processes": len(self._pids),
            "stack_samples": int(found.group(1)) if found else (0 if not stacks else None),
            "stacks": len(stacks),
            # cpu-clock's period is in nanoseconds: the weights add up to the CPU time seen.
            "cpu_s": weight / 1e9,
        }
        return Section(self.name, values, warnings=tuple(warnings), stacks=stacks)

    def abandon(self) -> None:
        """Stop a running ``perf record`` without reading what it wrote."""
        record, self._record = self._record, None
        if record is not None:
            with contextlib.suppress(OSError):
                record.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                record.communicate(timeout=_FINISH_S)
        self._close_control()
        self._output.unlink(missing_ok=True)

    def _close_control(self) -> None:
        control, self._control = self._control, None
        if control is not None:
            with contextlib.suppress(OSError):
                os.close(control)

    def close(self) -> None:
        self.abandon()
        shutil.rmtree(self._dir, ignore_errors=True)


def this_process(what: str, engine: Engine) -> ProfiledProcesses:
    """The processes of a database that runs inside the engine: this one, every thread.
    ProfileError when the sessions run elsewhere (load generators): this process would show
    the coordinator waiting, not the database working."""
    if not engine.sessions_here:
        raise ProfileError(
            f"profiles of {what} targets are not available with load generators: {what} runs"
            " inside the generators' processes, which perf here does not record; run without"
            " --generators (or [distributed]) to profile it, or without --profile"
        )
    return ProfiledProcesses((os.getpid(),), f"this process ({what} runs in the engine's threads)")
