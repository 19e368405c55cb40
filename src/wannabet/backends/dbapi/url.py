"""Generic DB-API target URLs: ``dbapi://<module>?<keyword>=<value>&...``."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from wannabet.backends import backend_for
from wannabet.errors import SpecError
from wannabet.targets import Target, redact

KIND = "dbapi"

_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def parse(url: str, key: str) -> Target:
    """A target reached through the DB-API module the URL names.

    Raises
    ------
    SpecError
        No module name, or a keyword without a value.
    """
    parts = urlsplit(url)
    module = parts.netloc
    if parts.scheme.lower() != KIND or not _MODULE.match(module) or parts.path not in ("", "/"):
        raise SpecError(
            f"{redact(url)!r} is not a DB-API URL; write dbapi://<module>?<keyword>=<value>,"
            " e.g. dbapi://sqlite3?database=bench.db",
            key=key,
        )
    try:
        pairs = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError as exc:
        raise SpecError(f"{redact(url)!r}: {exc}", key=key) from None
    if any(not k for k, _ in pairs):
        raise SpecError(f"{redact(url)!r}: a connect keyword has no name", key=key)
    return Target(backend_for(KIND), url=url)


def module_of(target: Target) -> str:
    return urlsplit(target.url).netloc


def keywords(target: Target) -> dict[str, str | int]:
    """The connect() keywords; digits become ints (ports, timeouts)."""
    return {k: int(v) if v.isdigit() else v for k, v in parse_qsl(urlsplit(target.url).query)}


def database_file(target: Target) -> Path | None:
    """The ``database`` keyword as a file (sqlite3's and duckdb's ``connect(database=...)``,
    relative to the working directory); None without one or for an in-memory database. Another
    module's database of that name is a file only if it names one here, which a run compares
    with its results file and nothing else."""
    name = dict(parse_qsl(urlsplit(target.url).query)).get("database")
    if not name or name == ":memory:":
        return None
    return Path(name).expanduser()


def password(url: str) -> str | None:
    """The password the URL carries: its ``password`` keyword, or one inside a keyword's
    value, as ``password=...`` of a libpq conninfo or ``user:password@`` of a URL (the
    documented ``conninfo=`` form), so that it is scrubbed wherever the URL is shown."""
    from wannabet.targets import url_password

    found = None
    for key, value in parse_qsl(urlsplit(url).query):
        if key.lower() in ("password", "passwd", "pwd"):
            found = value
        else:
            m = _CONNINFO_PASSWORD.search(value)
            found = found or (m and (m[1] if m[1] is not None else m[2])) or url_password(value)
        if found:
            return found
    return None


#: ``password=secret`` or ``password='se cret'`` in a libpq-style conninfo string
_CONNINFO_PASSWORD = re.compile(r"\bpassword\s*=\s*(?:'([^']*)'|(\S+))", re.I)
