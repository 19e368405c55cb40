"""A throwaway Ray cluster of several nodes on 127.0.0.1, for the distributed tests and benchmarks.

Each node is a ``ray start --block`` process of its own (the head, then ``--address`` nodes),
offering one ``wannabet_generator`` slot and one CPU, so that two generators land on two nodes.
``--block`` keeps every node in a process this object owns: :meth:`stop` ends exactly this
cluster's nodes (``ray stop`` would end every Ray process of the user). Token authentication,
Ray's default for a cluster started with ``ray start``, stays on, with a token made for this
cluster (``RAY_AUTH_MODE=token`` and ``RAY_AUTH_TOKEN`` for the nodes, and for this process,
where the driver runs): nothing depends on the user's ``~/.ray``.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

__all__ = ["LocalRayCluster", "RayUnavailable"]

#: the resource every node offers once (``wannabet.engine.distributed.GENERATOR_RESOURCE``)
_RESOURCES = '{"wannabet_generator": 1}'


class RayUnavailable(RuntimeError):
    """Ray is not installed, or its nodes did not start."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _ray_command() -> str | None:
    """The ``ray`` command of this Python's installation (pip puts it beside the interpreter,
    which need not be on PATH), else the one on PATH."""
    beside = Path(sys.executable).with_name("ray")
    return str(beside) if beside.exists() else shutil.which("ray")


#: Ray's switch (``ray_constants.ENABLE_RAY_CLUSTER``) that keeps ``127.0.0.1`` as the node
#: address of a driver; named for Windows and macOS, where it is off by default.
_LOOPBACK_DRIVERS = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


class LocalRayCluster:
    """``nodes`` Ray nodes on this machine; :attr:`address` is for ``ray.init`` and
    ``--ray-address``."""

    def __init__(self, nodes: int = 2, *, startup_s: float = 120.0) -> None:
        self.nodes = nodes
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self._startup_s = startup_s
        self._dir = Path(tempfile.mkdtemp(prefix="wannabet-ray-"))
        self._procs: list[subprocess.Popen[bytes]] = []
        # A token of this cluster's own, so that nothing depends on the user's ~/.ray.
        self.token = secrets.token_hex(32)
        self._auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": self.token}
        self._env = {**os.environ, **self._auth, "RAY_USAGE_STATS_ENABLED": "0"}
        # A worker node refuses to start with the drivers' loopback switch below.
        self._env.pop(_LOOPBACK_DRIVERS, None)

    def _start_node(self, head: bool) -> None:
        ray = _ray_command()
        if ray is None:
            raise RayUnavailable(
                "the ray command is not installed: pip install 'wannabet[distributed]'"
            )
        where = (
            [
                "--head",
                "--port",
                str(self.port),
                "--include-dashboard=false",
                "--temp-dir",
                str(self._dir),
            ]
            if head
            else ["--address", self.address]
        )
        # The node's output goes to a log file; the child keeps its own handle of it.
        with open(self._dir / f"node-{len(self._procs)}.log", "wb") as log:
            self._procs.append(
                subprocess.Popen(
                    [
                        ray,
                        "start",
                        "--block",
                        *where,
                        "--node-ip-address",
                        "127.0.0.1",
                        "--num-cpus",
                        "1",
                        "--resources",
                        _RESOURCES,
                        "--disable-usage-stats",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=self._env,
                    start_new_session=True,
                )
            )

    def start(self) -> LocalRayCluster:
        os.environ.update(self._auth)  # the driver in this process
        # Drivers (this process and the `wannabet run` it starts) reach the nodes on 127.0.0.1,
        # where the nodes registered and where the suite keeps its traffic: Ray rewrites a
        # loopback address to the machine's outward address (found by routing towards the
        # internet) unless it believes clusters are off.
        os.environ[_LOOPBACK_DRIVERS] = "0"
        if importlib.util.find_spec("ray") is None:  # the driver side is needed here too
            raise RayUnavailable("ray is not installed: pip install 'wannabet[distributed]'")
        self._start_node(head=True)
        self._wait_for(1)
        for _ in range(self.nodes - 1):
            self._start_node(head=False)
        self._wait_for(self.nodes)
        return self

    def _wait_for(self, nodes: int) -> None:
        """Until the first ``nodes`` nodes say they started (``ray start`` prints "Ray runtime
        started" once its node has joined the cluster)."""
        deadline = time.monotonic() + self._startup_s
        while time.monotonic() < deadline:
            for proc in self._procs:
                if proc.poll() is not None:
                    logs = self._logs()
                    self.stop()
                    raise RayUnavailable(f"a Ray node exited at start: {logs}")
            files = [self._dir / f"node-{i}.log" for i in range(nodes)]
            if all("Ray runtime started" in f.read_text(errors="replace") for f in files):
                return
            time.sleep(0.2)
        logs = self._logs()
        self.stop()
        raise RayUnavailable(f"{nodes} Ray node(s) did not come up: {logs}")

    def processes(self) -> list[int]:
        """The pids of every process of this cluster (its nodes' daemons and workers)."""
        import psutil  # type: ignore[import-untyped]

        pids: list[int] = []
        for proc in self._procs:
            try:
                node = psutil.Process(proc.pid)
                pids.append(node.pid)
                pids.extend(p.pid for p in node.children(recursive=True))
            except psutil.Error:
                continue
        return pids

    def _logs(self) -> str:
        texts = [p.read_text(errors="replace")[-400:] for p in sorted(self._dir.glob("node-*.log"))]
        return " | ".join(texts)

    def stop(self) -> None:
        # The worker nodes first, the head last; SIGINT (Ctrl-C) makes `ray start --block` stop its
        # node's processes.
        for proc in reversed(self._procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
        for proc in reversed(self._procs):
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self._procs = []
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> LocalRayCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
