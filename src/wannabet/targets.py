"""Target URLs: which database to drive, and how to show it without its password.

``sqlite:///relative.db`` (relative to the working directory), ``sqlite:////absolute/path.db``,
and ``postgresql://user:password@host:port/dbname`` (or ``postgres://``). A PostgreSQL URL without
a password takes ``PGPASSWORD`` from the environment, so passwords can stay out of files.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from wannabet.errors import SpecError

Kind = Literal["sqlite", "postgresql"]

# user:password@host: the password runs to the LAST "@" before a host without one, so a raw "@"
# in a password is scrubbed too (over-redacting is the safe direction).
_PASSWORD_IN_URL = re.compile(r"(://[^:/@\s]*:)(\S*)(@[^@\s]*)")
_PASSWORD_KV = re.compile(r"(password\s*=\s*)('[^']*'|\S+)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Target:
    kind: Kind
    url: str  # what the engine connects to; may hold a password: never print it
    path: Path | None = None  # SQLite only

    @property
    def display(self) -> str:
        """The URL with any password replaced by ``***``."""
        if self.path is not None:
            return f"sqlite:///{self.path}"
        return redact(self.url)

    @property
    def placeholder_style(self) -> Literal["dollar", "qmark"]:
        return "dollar" if self.kind == "postgresql" else "qmark"

    @property
    def password(self) -> str | None:
        if self.kind != "postgresql":
            return None
        m = _PASSWORD_IN_URL.search(self.url)
        return unquote(m.group(2)) if m and m.group(2) else None


def parse_target(url: str, *, key: str = "target") -> Target:
    """Validate a target URL and resolve what it leaves implicit."""
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme == "sqlite":
        if not url.lower().startswith("sqlite:///"):
            raise SpecError(
                f"{redact(url)!r} is not a SQLite URL; write sqlite:///relative.db or"
                " sqlite:////absolute/path.db",
                key=key,
            )
        raw = url[len("sqlite:///") :]
        if raw in ("", ":memory:"):
            raise SpecError(
                "an in-memory SQLite database is private to one connection, so sessions"
                " would not share it; name a file: sqlite:///bench.db",
                key=key,
            )
        path = Path(raw).expanduser().resolve()
        return Target(kind="sqlite", url=f"sqlite://{path}", path=path)
    if scheme in ("postgresql", "postgres"):
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
        if parts.password is None and os.environ.get("PGPASSWORD"):
            user = parts.username or ""
            netloc = f"{quote(user, safe='')}:{quote(os.environ['PGPASSWORD'], safe='')}@"
            netloc += parts.netloc.rsplit("@", 1)[-1]
            url = urlunsplit(parts._replace(netloc=netloc))
        return Target(kind="postgresql", url=url)
    raise SpecError(
        f"unsupported target {redact(url)!r}; use sqlite:///file.db or"
        " postgresql://user@host/dbname",
        key=key,
    )


def redact(text: str, *secrets: str | None) -> str:
    """Replace passwords in URLs, ``password=`` pairs and the given secrets with ``***``."""
    out = _PASSWORD_IN_URL.sub(r"\1***\3", text)
    out = _PASSWORD_KV.sub(r"\1***", out)
    for secret in secrets:
        if secret:
            out = out.replace(secret, "***")
            encoded = quote(secret, safe="")
            if encoded != secret:
                out = out.replace(encoded, "***")
    return out
