"""MySQL and MariaDB target URLs, read as the mysql client reads its options.

``mysql://user:password@host:port/dbname`` (or ``mariadb://``; port 3306 unless given). A URL
without a password takes ``MYSQL_PWD`` from the environment or, as the client does, the
``password`` of the ``[client]`` group (and ``[client-server]``, ``[client-mariadb]``, ``[mysql]``)
of the option file: ``MYSQL_OPTION_FILE`` when set, else ``~/.my.cnf``. A URL without a user
takes the option file's ``user``, else the OS account, as the client does. TLS keys follow the
client: ``ssl-mode=DISABLED|PREFERRED|REQUIRED|VERIFY_CA|VERIFY_IDENTITY`` (PREFERRED by default)
and ``ssl-ca=/path/ca.pem``; ``connect-timeout`` is in seconds (10 by default, 0: no limit).
"""

from __future__ import annotations

import configparser
import os
import pwd
import stat
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from wannabet.backends import backend_for
from wannabet.errors import SpecError
from wannabet.targets import Target, redact

KIND = "mysql"
DEFAULT_PORT = 3306
#: option-file groups the mysql and mariadb clients read, later ones overriding earlier ones
_GROUPS = ("client", "client-server", "client-mariadb", "mysql")
_SSL_MODES = ("DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY")
_KNOWN_KEYS = ("ssl-mode", "ssl-ca", "connect-timeout")


def parse(url: str, key: str) -> Target:
    """A MySQL or MariaDB target: the URL checked, with a user and a password when one is found.

    Raises
    ------
    SpecError
        The URL is malformed, names no host, an unknown key or ssl-mode, or the option file
        that holds its password may be read by others.
    """
    example = "write mysql://user@host:3306/dbname"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise SpecError(f"{redact(url)!r} is not a valid URL ({exc}); {example}", key=key) from None
    if parts.netloc.count("@") > 1:
        raise SpecError(
            "the user name or password in the MySQL URL contains a raw '@'; write it as %40,"
            " or leave the password out of the URL and set MYSQL_PWD",
            key=key,
        )
    if not parts.hostname:
        raise SpecError(f"{redact(url)!r} names no host; {example}", key=key)
    for pair in filter(None, parts.query.split("&")):
        name, _, value = pair.partition("=")
        name = name.replace("_", "-").lower()
        if name not in _KNOWN_KEYS:
            raise SpecError(
                f"unknown key {name!r} in the MySQL URL; it takes {', '.join(_KNOWN_KEYS)}",
                key=key,
            )
        if name == "ssl-mode" and unquote(value).upper().replace("-", "_") not in _SSL_MODES:
            raise SpecError(
                f"ssl-mode={unquote(value)} is not one of {', '.join(_SSL_MODES)}", key=key
            )
    options = _option_file(key)
    user = unquote(parts.username or "") or options.get("user") or _os_user()
    password = None if parts.password is not None else os.environ.get("MYSQL_PWD")
    if parts.password is None and password is None:
        password = options.get("password")
    netloc = quote(user, safe="")
    if parts.password is not None:
        netloc += f":{parts.password}"
    elif password:
        netloc += f":{quote(password, safe='')}"
    host = parts.hostname
    if ":" in host:  # IPv6
        host = f"[{host}]"
    netloc += f"@{host}:{port or DEFAULT_PORT}"
    return Target(backend_for(KIND), url=urlunsplit(parts._replace(netloc=netloc)))


def host_port(url: str) -> tuple[str, int]:
    """The server's host and port."""
    parts = urlsplit(url)
    return parts.hostname or "", parts.port or DEFAULT_PORT


def _os_user() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return os.environ.get("USER", "")


def _option_file(key: str) -> dict[str, str]:
    """``user`` and ``password`` of the client groups of the option file, if any.

    The mysql client ignores a world-writable option file; here a file that group or others
    may read and that holds a password is an error, so the password is not silently used.
    """
    try:
        path = Path(os.environ.get("MYSQL_OPTION_FILE") or Path.home() / ".my.cnf")
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            return {}
        text = path.read_text(encoding="utf-8", errors="replace")
    except (OSError, RuntimeError):  # RuntimeError: no home directory to look in
        return {}
    parser = configparser.ConfigParser(
        allow_no_value=True, strict=False, interpolation=None, comment_prefixes=("#", ";")
    )
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as exc:
        raise SpecError(f"cannot read the option file {path}: {exc}", key=key) from None
    found: dict[str, str] = {}
    for group in _GROUPS:
        if parser.has_section(group):
            for name in ("user", "password"):
                value = parser.get(group, name, fallback=None)
                if value is not None:
                    found[name] = value.strip().strip("'\"")
    if "password" in found and info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SpecError(
            f"the option file {path} holds a password and may be read by group or others;"
            f" run: chmod 600 {path}",
            key=key,
        )
    return found
