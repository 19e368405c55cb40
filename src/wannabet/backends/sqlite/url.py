"""SQLite target URLs: ``sqlite:///relative.db`` (relative to the working directory) or
``sqlite:////absolute/path.db``; the engine gets the resolved absolute path."""

from __future__ import annotations

from pathlib import Path

from wannabet.backends import backend_for
from wannabet.errors import SpecError
from wannabet.targets import Target, redact

KIND = "sqlite"


def parse(url: str, key: str) -> Target:
    """A SQLite target: a file every session opens (never an in-memory database).

    Raises
    ------
    SpecError
        Not a ``sqlite:///`` URL, or an in-memory database.
    """
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
    try:
        path = Path(raw).expanduser().resolve()
    except ValueError as exc:  # a NUL in the path
        raise SpecError(
            f"{redact(url)!r} is not a valid SQLite URL ({exc}); write sqlite:///relative.db",
            key=key,
        ) from None
    return Target(backend_for(KIND), url=f"sqlite://{path}", path=path)


def password(url: str) -> str | None:
    """A SQLite file has no password."""
    return None
