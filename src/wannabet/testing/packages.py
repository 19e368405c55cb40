"""Commands the tests run (fio, ...): found on PATH, or installed from Debian's packages.

A fresh machine lacks the tools whose output the importers are tested on. As root on a Debian
system, :func:`ensure_command` installs the package that provides a missing command (as
:func:`wannabet.testing.postgres.install_postgres` does for the servers); otherwise it says
what to install. Whether a missing tool skips or fails a test is the caller's choice
(:func:`wannabet.testing.ci.unavailable`: a failure in CI).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


class PackageUnavailable(RuntimeError):
    """A command is missing and its package could not be installed."""


def ensure_command(command: str, *, package: str | None = None, timeout_s: float = 900) -> str:
    """The path of ``command``; when it is missing and we are root with ``apt-get``, install
    Debian's ``package`` (default: the command's name) first.

    Several test processes may ask at once (pytest-xdist workers): they take turns on a lock
    file, and the one that comes second finds the command installed. Raises
    :class:`PackageUnavailable` with the reason and the package to install.
    """
    found = shutil.which(command)
    if found:
        return found
    package = package or command
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise PackageUnavailable(
            f"{command} is not on PATH; install the {package} package (apt-get install {package})"
        )
    lock = Path(tempfile.gettempdir()) / "wannabet-apt.lock"
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        found = shutil.which(command)
        if found:
            return found
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        steps = (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", package])
        for step in steps:
            try:
                result = subprocess.run(
                    step, capture_output=True, text=True, env=env, timeout=timeout_s, check=False
                )
            except subprocess.TimeoutExpired:
                raise PackageUnavailable(
                    f"{' '.join(step)} took longer than {timeout_s:g}s"
                ) from None
            if result.returncode != 0:
                tail = (result.stderr or result.stdout).strip().splitlines()[-1:]
                raise PackageUnavailable(f"{' '.join(step)} failed: {' '.join(tail)}")
    found = shutil.which(command)
    if not found:
        raise PackageUnavailable(f"the {package} package was installed, but has no {command}")
    return found
