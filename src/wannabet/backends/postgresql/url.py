"""PostgreSQL target URLs, read as libpq reads them.

``postgresql://user:password@host:port/dbname`` (or ``postgres://``). A URL without a password
takes ``PGPASSWORD`` from the environment or, as libpq does, the first matching line of the
password file (``PGPASSFILE``, else ``~/.pgpass``), so passwords can stay out of experiment files
and command lines. libpq's TLS environment variables are written into the URL, and the one server
it names is put where libpq and the engine both read it.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from wannabet.backends import backend_for
from wannabet.errors import SpecError
from wannabet.targets import Target, redact

KIND = "postgresql"

#: socket directories libpq treats as "localhost" in the password file (upstream and Debian)
_DEFAULT_SOCKET_DIRS = frozenset({"/tmp", "/var/run/postgresql", "/run/postgresql"})
#: libpq's environment variables for TLS, written into the URL so that the engine and the
#: statistics connections (libpq) use the same settings (and the engine refuses the ones it
#: cannot honour rather than ignore them)
_TLS_ENV = (
    ("sslmode", "PGSSLMODE"),
    ("sslrootcert", "PGSSLROOTCERT"),
    ("sslcert", "PGSSLCERT"),
    ("sslkey", "PGSSLKEY"),
    ("sslcrl", "PGSSLCRL"),
    ("sslcrldir", "PGSSLCRLDIR"),
)


def parse(url: str, key: str) -> Target:
    """A PostgreSQL target: the URL checked, with TLS settings, one server and a password.

    Raises
    ------
    SpecError
        The URL is malformed, names no host or several, or the password file is unsafe.
    """
    try:
        return _parse(url, key)
    except ValueError as exc:  # urlsplit: a malformed host, e.g. an unclosed [
        raise SpecError(
            f"{redact(url)!r} is not a valid URL ({exc}); write postgresql://user@host:5432/dbname",
            key=key,
        ) from None


def _parse(url: str, key: str) -> Target:
    parts = urlsplit(url)
    if parts.netloc.count("@") > 1:
        # Never echo this URL: where its password ends is exactly what is unclear.
        raise SpecError(
            "the user name or password in the PostgreSQL URL contains a raw '@'; write it"
            " as %40, or leave the password out of the URL and set PGPASSWORD",
            key=key,
        )
    if not parts.hostname and "host=" not in parts.query:
        raise SpecError(
            f"{redact(url)!r} names no host; write postgresql://user@host:5432/dbname", key=key
        )
    present = _params(parts.query)
    extra = [
        f"{name}={quote(os.environ[var], safe='/')}"
        for name, var in _TLS_ENV
        if name not in present and os.environ.get(var)
    ]
    if extra:
        query = "&".join([parts.query, *extra] if parts.query else extra)
        url = urlunsplit(parts._replace(query=query))
        parts = urlsplit(url)
    url = _one_server(url, key)
    parts = urlsplit(url)
    if parts.password is None:
        password = os.environ.get("PGPASSWORD") or _password_from_file(url, key)
        if password:
            user = parts.username or ""
            netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@"
            netloc += parts.netloc.rsplit("@", 1)[-1]
            url = urlunsplit(parts._replace(netloc=netloc))
    return Target(backend_for(KIND), url=url)


def _password_from_file(url: str, key: str) -> str | None:
    """The password libpq would take from the password file for this URL, if any.

    Lines are ``host:port:database:user:password``; ``*`` matches anything, ``\\:`` and
    ``\\\\`` are a literal colon and backslash, ``#`` starts a comment. Host names compare as
    written; the default socket directory matches ``localhost``, another one its own path.
    libpq ignores a file that group or others may read; here that is an error when the file
    holds the matching line, since the connection would otherwise fail with a bare "password
    authentication failed".
    """
    try:
        path = Path(os.environ.get("PGPASSFILE") or Path.home() / ".pgpass")
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
    except (OSError, RuntimeError):  # RuntimeError: no home directory to look in
        return None
    parts = urlsplit(url)
    query = {k: v[-1] for k, v in _params(parts.query).items()}
    host, port_number = host_port(url)
    if host in _DEFAULT_SOCKET_DIRS:
        host = "localhost"
    port = str(port_number)
    user = (
        query.get("user")
        or unquote(parts.username or "")
        or os.environ.get("PGUSER")
        or pwd.getpwuid(os.geteuid()).pw_name  # as libpq and the engine: not $USER
    )
    database = (
        query.get("dbname")
        or unquote(parts.path.lstrip("/"))
        or os.environ.get("PGDATABASE")
        or user
    )
    wanted = (host, port, database, user)
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = _pgpass_fields(line)
        if len(fields) < 5:
            continue
        if all(f == "*" or f == w for f, w in zip(fields[:4], wanted, strict=True)):
            if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
                raise SpecError(
                    f"the password file {path} may be read by group or others, so libpq"
                    f" and wannabet do not use it; run: chmod 600 {path}",
                    key=key,
                )
            return fields[4]
    return None


def _one_server(url: str, key: str) -> str:
    """The URL with its one server named where libpq and the engine both read it.

    libpq lets a ``host`` or ``port`` parameter replace the host or port before the path;
    tokio-postgres would instead try the parameter's host after the other one, and take the
    port before the path. So when a parameter is given, host and port both move into the
    parameters (``postgresql://u@/db?host=...&port=...``), which both read alike. Several
    hosts (libpq's failover lists) are refused: a measurement needs one server, and the
    statistics connections must reach the same one as the workload.
    """
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    pairs = [p for p in parts.query.split("&") if p]
    params = _params(parts.query)

    def named(name: str) -> list[str]:
        return params.get(name, [])

    several = "," in hostport or any(
        len(named(n)) > 1 or any("," in v for v in named(n)) for n in ("host", "hostaddr", "port")
    )
    if several:
        raise SpecError(
            "the PostgreSQL URL names several hosts or ports; wannabet measures one server:"
            " name one host and one port",
            key=key,
        )
    host, port = _netloc_host_port(parts.netloc)
    host = next(iter(named("host")), host)
    port = next(iter(named("port")), port)
    if port and not port.isdigit():
        raise SpecError(f"port {port!r} is not a number; write e.g. :5432", key=key)
    if not named("host") and not named("port"):
        return url
    kept = [p for p in pairs if p.partition("=")[0] not in ("host", "port")]
    kept += [f"host={quote(host, safe='/:')}"] if host else []
    kept += [f"port={port}"] if port else []
    fragment = f"#{parts.fragment}" if parts.fragment else ""
    return f"{parts.scheme}://{userinfo}{at}{parts.path}?{'&'.join(kept)}{fragment}"


def host_port(url: str) -> tuple[str, int]:
    """The host and port the engine connects to: the URL's ``host``/``port`` parameters, else
    those before the path (the host as written, which the password file compares), else TCP
    ``localhost:5432`` (after :func:`parse_target`, only one of the two is there).

    The engine ignores PGHOST and PGPORT, so this does too; the statistics connections are
    given these explicitly, and the password file is searched for them, so that everything
    reaches (and logs in to) the same server as the workload.
    """
    parts = urlsplit(url)
    query = _params(parts.query)
    netloc_host, netloc_port = _netloc_host_port(parts.netloc)
    host = (query.get("host") or [""])[-1] or netloc_host or "localhost"
    try:
        port = int((query.get("port") or [""])[-1] or netloc_port or 5432)
    except ValueError:
        port = 5432
    return host, port


def _params(query: str) -> dict[str, list[str]]:
    """A URL's parameters as libpq and the engine read them: ``%XX`` decoded, ``+`` kept."""
    out: dict[str, list[str]] = {}
    for pair in query.split("&"):
        if pair:
            name, _, value = pair.partition("=")
            out.setdefault(unquote(name), []).append(unquote(value))
    return out


def _netloc_host_port(netloc: str) -> tuple[str, str]:
    """The host (as written: ``urlsplit`` lowercases it, libpq compares it as written) and the
    port text before the path; ``[...]`` around an IPv6 address removed, ``%XX`` decoded."""
    hostport = netloc.rpartition("@")[2]
    if hostport.startswith("["):
        host, _, rest = hostport[1:].partition("]")
        port = rest.removeprefix(":")
    else:
        host, _, port = hostport.partition(":")
    return unquote(host), unquote(port)


def _pgpass_fields(line: str) -> list[str]:
    """A password-file line split at unescaped colons, escapes undone."""
    fields: list[str] = []
    current: list[str] = []
    escaped = False
    for ch in line:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ":":
            fields.append("".join(current))
            current = []
            if len(fields) == 5:
                return fields  # libpq: the password ends at the next unescaped colon
        else:
            current.append(ch)
    fields.append("".join(current))
    return fields
