"""Oracle target URLs: ``oracle://user[:password]@host[:port]/service_name``.

The password comes from the URL or, better, ``ORACLE_PASSWORD`` (never stored or shown).
python-oracledb connects in thin mode: no Oracle client libraries are needed.
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlsplit

from wannabet.backends import backend_for
from wannabet.errors import SpecError
from wannabet.targets import Target, redact, url_password

KIND = "oracle"
DEFAULT_PORT = 1521
#: where a password comes from when the URL has none
PASSWORD_ENV = "ORACLE_PASSWORD"


def parse(url: str, key: str) -> Target:
    """An Oracle target: a user, a host and a service name.

    Raises
    ------
    SpecError
        Not ``oracle://user@host[:port]/service``.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise SpecError(f"{redact(url)!r} is not a valid Oracle URL ({exc})", key=key) from None
    service = parts.path.lstrip("/")
    if parts.scheme.lower() != KIND or not parts.hostname or not parts.username or not service:
        raise SpecError(
            f"{redact(url)!r} is not an Oracle URL; write oracle://user@host:1521/service_name"
            f" (the password in ${PASSWORD_ENV})",
            key=key,
        )
    if parts.query:
        raise SpecError(f"{redact(url)!r}: Oracle URLs take no options", key=key)
    del port
    return Target(backend_for(KIND), url=url)


def connect_args(target: Target) -> dict[str, str]:
    """``oracledb.connect`` keywords: user, password, dsn (``host:port/service``)."""
    parts = urlsplit(target.url)
    args = {
        "user": unquote(parts.username or ""),
        "dsn": f"{parts.hostname}:{parts.port or DEFAULT_PORT}/{parts.path.lstrip('/')}",
    }
    secret = password(target.url)
    if secret is not None:
        args["password"] = secret
    return args


def password(url: str) -> str | None:
    """The URL's password, else ``$ORACLE_PASSWORD``."""
    return url_password(url) or os.environ.get(PASSWORD_ENV) or None
