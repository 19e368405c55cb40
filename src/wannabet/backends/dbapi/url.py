"""Generic DB-API target URLs: ``dbapi://<module>?<keyword>=<value>&...``."""

from __future__ import annotations

import re
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


def password(url: str) -> str | None:
    """The ``password`` keyword, if the URL carries one."""
    return dict(parse_qsl(urlsplit(url).query)).get("password") or None
