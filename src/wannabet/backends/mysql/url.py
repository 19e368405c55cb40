"""MySQL and MariaDB target URLs, read as the mysql client reads its options.

``mysql://user:password@host:port/dbname`` (or ``mariadb://``; port 3306 unless given). A URL
without a password takes ``MYSQL_PWD`` from the environment or, as the client does, the
``password`` of the ``[client]`` group (and ``[client-server]``, ``[client-mariadb]``, ``[mysql]``)
of the option file: ``MYSQL_OPTION_FILE`` when set, else ``~/.my.cnf``, read with the client's
syntax (see ``_option_file``). A URL without a user
takes the option file's ``user``, else the OS account, as the client does. TLS keys follow the
client: ``ssl-mode=DISABLED|PREFERRED|REQUIRED|VERIFY_CA|VERIFY_IDENTITY`` (PREFERRED by default)
and ``ssl-ca=/path/ca.pem``; ``connect-timeout`` is in seconds (10 by default, 0: no limit).
"""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import dataclass
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
#: escape sequences of option values; another character after a backslash keeps both
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "r": "\r", "s": " ", '"': '"', "'": "'", "\\": "\\"}
#: how deep !include may nest (MySQL's limit), so that files including each other end
_MAX_INCLUDE_DEPTH = 10


def parse(url: str, key: str) -> Target:
    """A MySQL or MariaDB target: the URL checked, with a user and a password when one is found.

    Raises
    ------
    SpecError
        The URL is malformed, names no host, an unknown key or ssl-mode, the option file is
        malformed, or the password would come from an option file anyone may write to.
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
    user = unquote(parts.username or "") or options.found.get("user") or _os_user()
    password = None if parts.password is not None else os.environ.get("MYSQL_PWD")
    if parts.password is None and password is None:
        password = options.found.get("password")
        if password is None and options.ignored_password is not None:
            # The client would connect without it and fail with a bare "Access denied".
            where = options.ignored_password
            raise SpecError(
                f"the option file {where} holds a password but anyone may write to it, so the"
                f" mysql client ignores it and so does wannabet; run: chmod o-w {where}",
                key=key,
            )
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


@dataclass(frozen=True, slots=True)
class _Options:
    """``user`` and ``password`` of the client groups of the option files, as the client takes
    them, and the world-writable file whose password the client would ignore, if any."""

    found: dict[str, str]
    ignored_password: Path | None = None


def _option_file(key: str) -> _Options:
    """The option file (``MYSQL_OPTION_FILE``, else ``~/.my.cnf``) read as the mysql client
    (MariaDB Connector/C's ``my_default.c``, MySQL's ``my_default.cc``) reads it.

    ``#`` and ``;`` lines are comments; ``#`` outside quotes ends a value; a value wholly in
    '' or "" loses its quotes; ``\\b \\t \\n \\r \\s \\" \\' \\\\`` are backspace, tab,
    newline, carriage return, space, quotes and backslash; group and option names take any
    case. ``!include FILE`` reads FILE if it exists and ``!includedir DIR`` its ``*.cnf`` files
    in name order, paths as written (relative ones from the working directory), at that point.
    A world-writable file is ignored, as the client ignores it.
    """
    try:
        path = Path(os.environ.get("MYSQL_OPTION_FILE") or Path.home() / ".my.cnf")
    except RuntimeError:  # no home directory to look in
        return _Options({})
    found: dict[str, str] = {}
    ignored: list[Path] = []
    _read_option_file(path, found, ignored, key, depth=0)
    return _Options(found, ignored[-1] if ignored else None)


def _read_option_file(
    path: Path, found: dict[str, str], ignored: list[Path], key: str, *, depth: int
) -> None:
    """Adds the client groups' ``user`` and ``password`` of ``path`` (and the files it
    includes) to ``found``, later ones overriding earlier ones; a world-writable file that
    holds a password goes to ``ignored`` instead."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            return
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return  # a missing file, included or not, is skipped as the client skips it
    writable = bool(info.st_mode & stat.S_IWOTH)
    group: str | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("!"):
            if writable:
                continue
            directive, _, arg = line.replace("\t", " ").partition(" ")
            arg = arg.strip()
            if directive not in ("!include", "!includedir") or not arg:
                continue  # the client skips another ! line too
            if depth >= _MAX_INCLUDE_DEPTH:
                raise SpecError(
                    f"{path}:{lineno}: option files include each other more than"
                    f" {_MAX_INCLUDE_DEPTH} deep; remove the loop",
                    key=key,
                )
            if directive == "!include":
                _read_option_file(Path(arg), found, ignored, key, depth=depth + 1)
                continue
            try:
                names = sorted(p.name for p in Path(arg).iterdir() if p.name.endswith(".cnf"))
            except OSError as exc:
                # The client stops on it too ("Can't read dir of ...").
                raise SpecError(
                    f"{path}:{lineno}: cannot read the directory {arg} of !includedir"
                    f" ({exc.strerror}); create it or remove the line",
                    key=key,
                ) from None
            for name in names:
                _read_option_file(Path(arg) / name, found, ignored, key, depth=depth + 1)
            continue
        line = _end_comment(line).strip()
        if line.startswith("["):
            if not line.endswith("]"):
                raise SpecError(
                    f"{path}:{lineno}: a group line {line!r} needs a closing ]", key=key
                )
            group = line[1:-1].strip().lower()
            continue
        if not line:
            continue
        if group is None:
            raise SpecError(
                f"{path}:{lineno}: an option before any [group]; put it under [client]",
                key=key,
            )
        name, eq, value = line.partition("=")
        name = name.strip().lower().replace("_", "-")
        if group not in _GROUPS or name not in ("user", "password") or not eq:
            continue
        if writable:
            if name == "password":
                ignored.append(path)
            continue
        found[name] = _option_value(value.strip())


def _end_comment(line: str) -> str:
    """``line`` up to a ``#`` outside quotes (a backslash escapes a quote inside them)."""
    quote, escape = "", False
    for i, c in enumerate(line):
        if c in "'\"" and not escape:
            if not quote:
                quote = c
            elif quote == c:
                quote = ""
        if not quote and c == "#":
            return line[:i]
        escape = bool(quote) and c == "\\" and not escape
    return line


def _option_value(value: str) -> str:
    """A value as the client takes it: the quotes around all of it dropped, escapes read."""
    if len(value) > 1 and value[0] in "'\"" and value[-1] == value[0]:
        value = value[1:-1]
    out: list[str] = []
    i = 0
    while i < len(value):
        c = value[i]
        if c == "\\" and i + 1 < len(value):
            i += 1
            out.append(_ESCAPES.get(value[i], "\\" + value[i]))
        else:
            out.append(c)
        i += 1
    return "".join(out)
