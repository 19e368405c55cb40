"""A throwaway PostgreSQL server: initdb into a temporary directory, a free port on 127.0.0.1,
password authentication, stopped and deleted afterwards.

PostgreSQL refuses to run as root, so under root the server runs as an unprivileged system user
(``postgres`` when the Debian package created it, otherwise ``wannabet-pg``, created on demand).
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from .packages import PackageUnavailable, apt_install


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL server binaries could be found or installed."""


def find_postgres_bindir() -> Path | None:
    """Where ``initdb`` and ``pg_ctl`` live: $WANNABET_PG_BINDIR, pg_config, or Debian's layout."""
    candidates: list[str] = []
    if os.environ.get("WANNABET_PG_BINDIR"):
        candidates.append(os.environ["WANNABET_PG_BINDIR"])
    if shutil.which("pg_config"):
        try:
            out = subprocess.run(
                ["pg_config", "--bindir"], capture_output=True, text=True, check=True, timeout=10
            )
            candidates.append(out.stdout.strip())
        except (subprocess.SubprocessError, OSError):
            pass
    candidates += sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), reverse=True
    )
    for candidate in candidates:
        if (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    return None


def install_postgres(package: str = "postgresql") -> None:
    """Install a Debian package (root only), for the test suite on a fresh machine."""
    try:
        apt_install(package)
    except PackageUnavailable as exc:
        raise PostgresUnavailable(f"{package} is missing: {exc}") from None


#: a new P-256 key, unencrypted, for ``openssl req``
_EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


def _openssl(cwd: Path, *steps: list[str]) -> None:
    for step in steps:
        result = subprocess.run(
            ["openssl", *step], cwd=cwd, capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            raise PostgresUnavailable(f"openssl failed: {result.stderr.strip()[-400:]}")


def make_server_certificate(work: Path, ca_file: Path) -> tuple[Path, Path]:
    """A throwaway CA (written to ``ca_file``) and a server certificate from it for
    ``localhost`` and ``127.0.0.1``; returns the certificate and its key, made in ``work``."""
    work.mkdir(exist_ok=True)
    (work / "ext.cnf").write_text(
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n"
    )
    ca = str(ca_file)
    days, localhost = ("-days", "2"), ("-subj", "/CN=localhost")
    steps = [
        ["req", "-x509", *_EC_KEY, "-keyout", "ca.key", "-out", ca, *days, "-subj", "/CN=CA"],
        ["req", *_EC_KEY, "-keyout", "server.key", "-out", "server.csr", *localhost],
        [
            *("x509", "-req", "-in", "server.csr", "-CA", ca, "-CAkey", "ca.key"),
            *("-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "ext.cnf"),
        ],
    ]
    _openssl(work, *steps)
    return work / "server.crt", work / "server.key"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server_user() -> str | None:
    """The user to run the server as, or None to run as ourselves."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "wannabet-pg"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "wannabet-pg"],
        check=True,
        capture_output=True,
    )
    return "wannabet-pg"


class ThrowawayPostgres:
    """Start with :meth:`start` (or ``with``), connect with :attr:`url`, stop with :meth:`stop`."""

    user = "wannabet"
    database = "postgres"
    #: with ``tls=True``: the role that logs in by client certificate only (``cert`` in
    #: pg_hba.conf); :meth:`client_certificate` makes one for it
    cert_user = "wannabet_cert"

    def __init__(
        self,
        *,
        install: bool = False,
        settings: dict[str, str] | None = None,
        tls: bool = False,
    ) -> None:
        self._install = install
        bindir = find_postgres_bindir()
        if bindir is None and install:
            install_postgres()
            bindir = find_postgres_bindir()
        if bindir is None:
            raise PostgresUnavailable("PostgreSQL server binaries (initdb, pg_ctl) not found")
        self.bindir = bindir
        self.password = secrets.token_urlsafe(12)
        self.port = 0
        self.settings = {"fsync": "on", "max_connections": "50"} | (settings or {})
        self.root = Path(tempfile.mkdtemp(prefix="wannabet-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._as = _server_user()
        #: with ``tls=True``: the server accepts TCP clients over TLS only, with a certificate
        #: for ``localhost`` and ``127.0.0.1`` signed by the CA in :attr:`ca_file`
        self.tls = tls
        self.ca_file = self.root / "ca.crt"

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}:{self.password}@127.0.0.1:{self.port}/{self.database}"

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if self._as:
            cmd = ["runuser", "-u", self._as, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)

    def start(self) -> ThrowawayPostgres:
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        if self._as:
            uid = pwd.getpwnam(self._as).pw_uid
            for path in (self.root, pwfile):
                os.chown(path, uid, -1)
        os.chmod(self.root, 0o700)
        result = self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            self.user,
            "--auth=scram-sha-256",
            f"--pwfile={pwfile}",
            "-E",
            "UTF8",
            "--no-sync",
        )
        pwfile.unlink()
        if result.returncode != 0:
            raise PostgresUnavailable(f"initdb failed: {result.stderr.strip()[-400:]}")
        if self.tls:
            self._set_up_tls()
        for _attempt in range(5):
            self.port = _free_port()
            result = self._pg_ctl_start()
            if result.returncode == 0:
                if self.tls:  # a superuser, so it can run what the password user runs
                    self.psql(f"CREATE ROLE {self.cert_user} LOGIN SUPERUSER")
                return self
            time.sleep(0.2)
        log = self.log.read_text()[-600:] if self.log.exists() else result.stderr
        raise PostgresUnavailable(f"PostgreSQL did not start: {log.strip()}")

    def _pg_ctl_start(self) -> subprocess.CompletedProcess[str]:
        options = " ".join(f"-c {k}={v}" for k, v in self.settings.items())
        return self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-w",
            "-t",
            "60",
            "-o",
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 {options}",
            "start",
        )

    def crash(self) -> None:
        """Stop the server as a crash would (``pg_ctl stop -m immediate``: every backend is
        killed, no checkpoint); :meth:`start_again` brings it back on the same port."""
        result = self._run(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"
        )
        if result.returncode != 0:
            raise PostgresUnavailable(f"pg_ctl stop failed: {result.stderr.strip()[-400:]}")

    def start_again(self) -> None:
        """Start the server after :meth:`crash` (it recovers from its log), same port."""
        result = self._pg_ctl_start()
        if result.returncode != 0:
            log = self.log.read_text()[-600:] if self.log.exists() else result.stderr
            raise PostgresUnavailable(f"PostgreSQL did not start again: {log.strip()}")

    def _set_up_tls(self) -> None:
        """A throwaway CA, a server certificate from it, and TLS-only TCP access."""
        if shutil.which("openssl") is None:
            if not self._install:
                raise PostgresUnavailable("openssl is needed to make the test certificates")
            install_postgres("openssl")
        cert, key = make_server_certificate(self.root / "certs", self.ca_file)
        self._install_certificate(cert, key)
        shutil.copyfile(self.ca_file, self.data / "ca.crt")
        hba = self.data / "pg_hba.conf"
        hba.write_text(
            "local all all scram-sha-256\n"
            f"hostssl all {self.cert_user} 127.0.0.1/32 cert\n"
            "hostssl all all 127.0.0.1/32 scram-sha-256\n"
            "hostnossl all all 127.0.0.1/32 reject\n"
        )
        self.settings |= {
            "ssl": "on",
            "ssl_cert_file": "server.crt",
            "ssl_key_file": "server.key",
            "ssl_ca_file": "ca.crt",  # the CA of client certificates
        }

    def client_certificate(self, directory: Path, user: str | None = None) -> tuple[Path, Path]:
        """A client certificate for ``user`` (default :attr:`cert_user`) from this server's CA,
        and its key (mode 0600), written to ``directory``."""
        user = user or self.cert_user
        cert, key, csr = (directory / f"{user}.{ext}" for ext in ("crt", "key", "csr"))
        work = self.root / "certs"
        _openssl(
            work,
            ["req", *_EC_KEY, "-keyout", str(key), "-out", str(csr), "-subj", f"/CN={user}"],
            [
                *("x509", "-req", "-in", str(csr), "-CA", str(self.ca_file), "-CAkey", "ca.key"),
                *("-CAcreateserial", "-out", str(cert), "-days", "2"),
            ],
        )
        key.chmod(0o600)
        return cert, key

    def _install_certificate(self, cert: Path, key: Path) -> None:
        for source, name in ((cert, "server.crt"), (key, "server.key")):
            target = self.data / name
            shutil.copyfile(source, target)
            target.chmod(0o600)
            if self._as:
                os.chown(target, pwd.getpwnam(self._as).pw_uid, -1)

    def revocation_list(self, path: Path, *, revoke_server: bool) -> Path:
        """A certificate revocation list (PEM) from this server's CA, written to ``path``,
        revoking the server's certificate or nothing."""
        work = Path(tempfile.mkdtemp(dir=self.root / "certs"))
        (work / "index.txt").write_text("")
        (work / "crlnumber").write_text("01\n")
        # A crlnumber makes a version 2 list with its number, as RFC 5280 asks (webpki too).
        (work / "ca.cnf").write_text(
            "[ca]\ndefault_ca = throwaway\n[throwaway]\ndatabase = index.txt\n"
            "crlnumber = crlnumber\ndefault_md = sha256\ndefault_crl_days = 2\n"
        )
        ca = ["-config", "ca.cnf", "-keyfile", "../ca.key", "-cert", str(self.ca_file)]
        steps = [["ca", *ca, "-gencrl", "-out", str(path)]]
        if revoke_server:
            steps.insert(0, ["ca", *ca, "-revoke", "../server.crt"])
        _openssl(work, *steps)
        return path

    def use_certificate(self, cert: Path, key: Path) -> None:
        """Serve another certificate from now on (a TLS server: the server reloads it)."""
        self._install_certificate(cert, key)
        self.psql("SELECT pg_reload_conf()")
        time.sleep(0.5)  # the postmaster reloads on SIGHUP, asynchronously

    def stop(self) -> None:
        if self.data.exists():
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ThrowawayPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def env(self) -> dict[str, str]:
        """Environment for libpq tools (pgbench, psql) pointing at this server."""
        return dict(
            os.environ,
            PGHOST="127.0.0.1",
            PGPORT=str(self.port),
            PGUSER=self.user,
            PGPASSWORD=self.password,
            PGDATABASE=self.database,
        )

    def psql(self, sql: str) -> str:
        result = subprocess.run(
            [str(self.bindir / "psql"), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql],
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"psql failed: {result.stderr.strip()}")
        return result.stdout.strip()
