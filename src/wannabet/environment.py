"""What the run ran on: client machine, tool versions, and the target server's version and settings.

Recorded with every run so that ``compare`` and reports can show when two runs differ in
environment, which is often the real explanation of a difference.
"""

from __future__ import annotations

import os
import platform
import socket
from typing import Any

from wannabet.engine.base import Engine
from wannabet.targets import Target
from wannabet.version import tool_version


def client_environment() -> dict[str, Any]:
    return {
        "host": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
        "memory_gb": _memory_gb(),
        "python": platform.python_version(),
        "wannabet": tool_version(),
    }


def server_environment(engine: Engine, target: Target) -> dict[str, Any]:
    """Ask the target for its version and settings (its backend's probe); this is also the
    connectivity check."""
    return target.backend.probe(engine, target)


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gb() -> float | None:
    try:
        pages = os.sysconf("SC_PHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return round(pages * size / 2**30, 1)
