"""The suite's package installer: one apt-get at a time, the background run holding the lock.

apt-get itself is replaced by a short shell command here (installing needs root and the
network); what is checked is the lock that keeps two installers apart, which dpkg requires.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import pytest

from wannabet.testing import packages
from wannabet.testing.packages import PackageUnavailable, apt_install, ensure_command


def _lock_is_free(path: Path) -> bool:
    with path.open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


@pytest.fixture
def fake_apt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A lock file of this test's own, installing as root, and "apt-get" a command that
    sleeps and then adds a line to a mark file."""
    lock = tmp_path / "apt.lock"
    mark = tmp_path / "installed"
    monkeypatch.setattr(packages, "_lock_path", lambda: lock)
    monkeypatch.setattr(packages, "_can_install", lambda: True)
    monkeypatch.setattr(packages, "missing_packages", lambda p: [] if mark.exists() else list(p))
    step = ["sh", "-c", f"sleep 1 && echo installed >> {mark}"]
    monkeypatch.setattr(packages, "_apt_steps", lambda missing: [step])
    return lock


def test_the_background_install_holds_the_lock_until_it_ends(fake_apt: Path, tmp_path: Path):
    child = packages.install_in_background(["some-package"], tmp_path / "apt.log")
    assert child is not None
    # Held from the moment the call returns, by the child alone (this process closed its copy).
    assert not _lock_is_free(fake_apt)
    # A fixture asking meanwhile waits, then finds the package installed and runs nothing.
    apt_install("some-package")
    # The lock goes when the child's descriptors close, a moment before the kernel reports it
    # ended: wait for that rather than poll (a poll here raced and left the child unreaped).
    assert child.wait(timeout=60) == 0
    # apt-get ran once: the fixture's call did not run it again.
    assert (tmp_path / "installed").read_text().splitlines() == ["installed"]
    assert _lock_is_free(fake_apt)


def test_nothing_starts_when_nothing_is_missing(fake_apt: Path, tmp_path: Path):
    (tmp_path / "installed").touch()
    assert packages.install_in_background(["some-package"], tmp_path / "apt.log") is None
    assert _lock_is_free(fake_apt)


def test_a_failed_install_names_the_step(fake_apt: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(
        packages, "_apt_steps", lambda missing: [["sh", "-c", "echo E: nope >&2; exit 100"]]
    )
    with pytest.raises(PackageUnavailable, match=r"failed: E: nope"):
        apt_install("some-package")
    assert _lock_is_free(fake_apt)


def test_ensure_command_finds_or_explains(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ensure_command("sh") == shutil.which("sh")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(PackageUnavailable, match=r"install the wb-nope package"):
        ensure_command("wb-no-such-command", package="wb-nope")


def test_dpkg_tells_installed_from_missing() -> None:
    if not shutil.which("dpkg-query"):
        pytest.skip("not a Debian system")
    assert packages.missing_packages(["dpkg", "wb-no-such-package"]) == ["wb-no-such-package"]
