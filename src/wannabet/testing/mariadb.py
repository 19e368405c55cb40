"""A throwaway MariaDB server: ``mariadb-install-db`` into a temporary directory, a free port on
127.0.0.1, a password user, stopped and deleted afterwards.

Debian's ``mariadb-server`` package is installed when it is missing and we are root (as for
PostgreSQL). Under root the server runs as the package's ``mysql`` user; otherwise as ourselves.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from wannabet.testing.packages import PackageUnavailable, apt_install
from wannabet.testing.postgres import (
    PostgresUnavailable,
    _free_port,
    install_postgres,
    make_server_certificate,
)


class MariaDBUnavailable(RuntimeError):
    """No MariaDB server binaries could be found or installed, or the server did not start."""


def _binary(*names: str) -> str | None:
    for name in names:
        for directory in (None, "/usr/sbin", "/usr/bin"):
            found = shutil.which(name, path=directory)
            if found:
                return found
    return None


def find_mariadb() -> tuple[str, str] | None:
    """The server (``mariadbd``) and ``mariadb-install-db``, or None when either is missing."""
    server = _binary("mariadbd", "mysqld")
    install = _binary("mariadb-install-db", "mysql_install_db")
    return (server, install) if server and install else None


class ThrowawayMariaDB:
    """Start with :meth:`start` (or ``with``), connect with :attr:`url`, stop with :meth:`stop`."""

    user = "wannabet"
    database = "wannabet"

    def __init__(
        self, *, install: bool = False, settings: dict[str, str] | None = None, tls: bool = False
    ) -> None:
        found = find_mariadb()
        if found is None and install:
            try:
                apt_install("mariadb-server")
            except PackageUnavailable as exc:
                raise MariaDBUnavailable(f"mariadb-server is missing: {exc}") from None
            found = find_mariadb()
        if found is None:
            raise MariaDBUnavailable("MariaDB server binaries (mariadbd, mariadb-install-db)")
        self.server, self.install_db = found
        self.password = secrets.token_urlsafe(12)
        self.port = 0
        # Small and quick to start; durable commits stay on (the default), as on a real server.
        self.settings = {
            "innodb_buffer_pool_size": "64M",
            "innodb_log_file_size": "48M",
            "max_connections": "100",
            "performance_schema": "ON",
        } | (settings or {})
        self.root = Path(tempfile.mkdtemp(prefix="wannabet-mariadb-"))
        self.data = self.root / "data"
        self.socket = self.root / "mysqld.sock"
        self.tmp = self.root / "tmp"
        self.log = self.root / "server.log"
        self._as = "mysql" if os.geteuid() == 0 and _user_exists("mysql") else None
        self._process: subprocess.Popen[bytes] | None = None
        #: serve TLS with a certificate for ``localhost`` and ``127.0.0.1`` signed by the CA in
        #: :attr:`ca_file` (made at start)
        self.tls = tls
        self._install = install
        self.ca_file = self.root / "ca.crt"

    @property
    def url(self) -> str:
        return f"mysql://{self.user}:{self.password}@127.0.0.1:{self.port}/{self.database}"

    def _user_args(self) -> list[str]:
        if os.geteuid() != 0:
            return []
        return [f"--user={self._as or 'root'}"]

    def start(self) -> ThrowawayMariaDB:
        # A temporary directory of its own: two servers bootstrapping at once (parallel test
        # workers) must not share /tmp's scratch files.
        self.tmp.mkdir()
        if self._as:
            info = pwd.getpwnam(self._as)
            for path in (self.root, self.tmp):
                os.chown(path, info.pw_uid, info.pw_gid)
        result = subprocess.run(
            [
                self.install_db,
                "--no-defaults",
                f"--datadir={self.data}",
                "--auth-root-authentication-method=socket",
                "--skip-test-db",
                f"--tmpdir={self.tmp}",
                *self._user_args(),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if result.returncode != 0:
            tail = (result.stderr or result.stdout).strip()[-400:]
            raise MariaDBUnavailable(f"mariadb-install-db failed: {tail}")
        if self.tls:
            self._set_up_tls()
        options = [f"--{k.replace('_', '-')}={v}" for k, v in self.settings.items()]
        for _attempt in range(5):
            self.port = _free_port()
            with self.log.open("ab") as log:
                self._process = subprocess.Popen(
                    [
                        self.server,
                        "--no-defaults",
                        f"--datadir={self.data}",
                        f"--socket={self.socket}",
                        f"--pid-file={self.root / 'mysqld.pid'}",
                        f"--port={self.port}",
                        "--bind-address=127.0.0.1",
                        "--skip-name-resolve",
                        f"--log-error={self.log}",
                        f"--tmpdir={self.tmp}",
                        *self._user_args(),
                        *options,
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            if self._wait_ready():
                self._create_user()
                return self
            self._terminate()
        tail = self.log.read_text(errors="replace")[-600:] if self.log.exists() else ""
        raise MariaDBUnavailable(f"MariaDB did not start: {tail.strip()}")

    def _set_up_tls(self) -> None:
        if shutil.which("openssl") is None:
            if not self._install:
                raise MariaDBUnavailable("openssl is needed to make the test certificates")
            install_postgres("openssl")
        try:
            cert, key = make_server_certificate(self.root / "certs", self.ca_file)
        except PostgresUnavailable as exc:
            raise MariaDBUnavailable(str(exc)) from None
        if self._as:
            info = pwd.getpwnam(self._as)
            for path in (cert.parent, cert, key, self.ca_file):
                os.chown(path, info.pw_uid, info.pw_gid)
        self.settings |= {"ssl_ca": str(self.ca_file), "ssl_cert": str(cert), "ssl_key": str(key)}

    def _wait_ready(self, timeout: float = 60) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                return False
            probe = self._client_as_root("SELECT 1", check=False)
            if probe.returncode == 0:
                return True
            time.sleep(0.2)
        return False

    def _create_user(self) -> None:
        self.sql_as_root(
            f"CREATE DATABASE {self.database};"
            f"CREATE USER '{self.user}'@'127.0.0.1' IDENTIFIED BY '{self.password}';"
            f"CREATE USER '{self.user}'@'localhost' IDENTIFIED BY '{self.password}';"
            f"GRANT ALL ON *.* TO '{self.user}'@'127.0.0.1' WITH GRANT OPTION;"
            f"GRANT ALL ON *.* TO '{self.user}'@'localhost' WITH GRANT OPTION;"
        )

    def _client_as_root(self, sql: str, *, check: bool) -> subprocess.CompletedProcess[str]:
        client = _binary("mariadb", "mysql") or "mariadb"
        # The root account authenticates by socket credentials: only the OS user that runs the
        # tests (root, or the one that made the data directory) can use it.
        user = "root" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        result = subprocess.run(
            [client, "--no-defaults", f"--socket={self.socket}", f"--user={user}", "-N", "-B"],
            input=sql,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if check and result.returncode != 0:
            raise MariaDBUnavailable(f"mariadb client failed: {result.stderr.strip()[-400:]}")
        return result

    def sql_as_root(self, sql: str) -> str:
        """Runs SQL as the server's superuser (socket authentication); returns its output."""
        return self._client_as_root(sql, check=True).stdout.strip()

    def _terminate(self) -> None:
        if self._process is None:
            return
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def stop(self) -> None:
        self._terminate()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ThrowawayMariaDB:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def env(self) -> dict[str, str]:
        """Environment for the mariadb client and sysbench pointing at this server."""
        return dict(os.environ, MYSQL_PWD=self.password)


def _user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True
