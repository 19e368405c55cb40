"""Debian packages the tests need (the servers, fio, perf, Chromium): installed when missing.

A fresh machine lacks the servers and the tools whose output the importers are tested on. As
root on a Debian system, :func:`apt_install` installs them; otherwise it says what to install.
Whether a missing tool skips or fails a test is the caller's choice
(:func:`wannabet.testing.ci.unavailable`: a failure in CI).

Every installation goes through one lock file, so that two test processes (pytest-xdist
workers) never run ``apt-get`` at once (dpkg refuses a second one): the one that comes second
finds the package installed. :func:`install_in_background` takes the same lock for a whole
suite's packages at the start of a session, so that the workers wait for one ``apt-get`` run
instead of each running its own ``update`` and ``install`` in turn.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

#: the longest one apt-get step may take (an update on a slow mirror, a large install)
_STEP_TIMEOUT_S = 900.0

#: apt-get waits this long for a dpkg lock another program holds, instead of failing at once
_DPKG_LOCK_WAIT_S = 300


class PackageUnavailable(RuntimeError):
    """A command or package is missing and could not be installed."""


def _lock_path() -> Path:
    return Path(tempfile.gettempdir()) / "wannabet-apt.lock"


def _can_install() -> bool:
    return os.geteuid() == 0 and shutil.which("apt-get") is not None


def missing_packages(packages: Sequence[str]) -> list[str]:
    """The packages of ``packages`` that dpkg does not list as installed."""
    if not shutil.which("dpkg-query"):
        return list(packages)
    missing = []
    for package in packages:
        result = subprocess.run(
            ["dpkg-query", "-W", "-f=${db:Status-Status}", package],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0 or result.stdout.strip() != "installed":
            missing.append(package)
    return missing


def _apt_steps(packages: Sequence[str]) -> list[list[str]]:
    wait = f"DPkg::Lock::Timeout={_DPKG_LOCK_WAIT_S}"
    return [
        ["apt-get", "update", "-q", "-o", wait],
        ["apt-get", "install", "-y", "-q", "-o", wait, *packages],
    ]


def _apt_env() -> dict[str, str]:
    return dict(os.environ, DEBIAN_FRONTEND="noninteractive")


def apt_install(*packages: str, timeout_s: float = _STEP_TIMEOUT_S) -> None:
    """Install Debian's ``packages`` that are missing (root with ``apt-get`` only).

    Raises :class:`PackageUnavailable` naming the packages to install by hand when this
    process cannot, or with apt-get's last line when it fails.
    """
    if not missing_packages(packages):
        return
    if not _can_install():
        names = " ".join(packages)
        raise PackageUnavailable(f"install the {names} package (apt-get install {names})")
    with _lock_path().open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        missing = missing_packages(packages)  # the lock's previous holder may have installed them
        if not missing:
            return
        for step in _apt_steps(missing):
            try:
                result = subprocess.run(
                    step,
                    capture_output=True,
                    text=True,
                    env=_apt_env(),
                    timeout=timeout_s,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                raise PackageUnavailable(
                    f"{' '.join(step)} took longer than {timeout_s:g}s"
                ) from None
            if result.returncode != 0:
                tail = (result.stderr or result.stdout).strip().splitlines()[-1:]
                raise PackageUnavailable(f"{' '.join(step)} failed: {' '.join(tail)}")


def install_in_background(packages: Sequence[str], log: Path) -> subprocess.Popen[bytes] | None:
    """Start installing the missing ones of ``packages`` in a child process that holds the
    install lock until it ends; None when nothing is missing or this process cannot install.

    :func:`apt_install` and :func:`ensure_command` called meanwhile wait for the lock and then
    find the packages there. A failure is only written to ``log``: whoever needs a package then
    tries again and reports the error where it matters.
    """
    missing = missing_packages(packages) if _can_install() else []
    if not missing:
        return None
    handle = _lock_path().open("w")
    try:
        # Taken here and held by the child through the inherited descriptor, so that no
        # worker started after this call can take the lock before the child runs.
        fcntl.flock(handle, fcntl.LOCK_EX)
        # Bounded as apt_install's steps are: the workers wait on the lock for as long.
        limit = ["timeout", f"{_STEP_TIMEOUT_S:g}"] if shutil.which("timeout") else []
        script = " && ".join(shlex.join([*limit, *step]) for step in _apt_steps(missing))
        with log.open("wb") as out:
            return subprocess.Popen(
                ["sh", "-c", script],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=_apt_env(),
                pass_fds=(handle.fileno(),),
                start_new_session=True,
            )
    finally:
        handle.close()  # the child's copy keeps the lock


def ensure_command(
    command: str, *, package: str | None = None, timeout_s: float = _STEP_TIMEOUT_S
) -> str:
    """The path of ``command``; when it is missing, install Debian's ``package`` (default: the
    command's name) first, as :func:`apt_install` does.

    Raises :class:`PackageUnavailable` with the reason and the package to install.
    """
    found = shutil.which(command)
    if found:
        return found
    package = package or command
    try:
        apt_install(package, timeout_s=timeout_s)
    except PackageUnavailable as exc:
        raise PackageUnavailable(f"{command} is not on PATH; {exc}") from None
    found = shutil.which(command)
    if not found:
        raise PackageUnavailable(f"the {package} package was installed, but has no {command}")
    return found
