"""DuckDB target URLs: ``duckdb:///relative.duckdb`` (relative to the working directory) or
``duckdb:////absolute/path.duckdb``, optionally with DuckDB configuration options as query
parameters (``duckdb:///bench.duckdb?threads=4&memory_limit=2GB``), given to every connection."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl

from wannabet.backends import backend_for
from wannabet.errors import SpecError
from wannabet.targets import Target, redact

KIND = "duckdb"


def parse(url: str, key: str) -> Target:
    """A DuckDB target: a database file every session opens (never an in-memory database).

    Raises
    ------
    SpecError
        Not a ``duckdb:///`` URL, an in-memory database, or a malformed option.
    """
    if not url.lower().startswith("duckdb:///"):
        raise SpecError(
            f"{redact(url)!r} is not a DuckDB URL; write duckdb:///relative.duckdb or"
            " duckdb:////absolute/path.duckdb",
            key=key,
        )
    raw, _, query = url[len("duckdb:///") :].partition("?")
    if raw in ("", ":memory:"):
        raise SpecError(
            "an in-memory DuckDB database lives and dies with one connection and is not"
            " seen by the set-up, the samplers or a second run; name a file:"
            " duckdb:///bench.duckdb",
            key=key,
        )
    try:
        options = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
        path = Path(raw).expanduser().resolve()
    except ValueError as exc:
        raise SpecError(
            f"{redact(url)!r} is not a valid DuckDB URL ({exc}); write"
            " duckdb:///file.duckdb?option=value",
            key=key,
        ) from None
    if any(not name or not value for name, value in options):
        raise SpecError(
            f"{redact(url)!r}: every DuckDB option needs a name and a value"
            " (duckdb:///file.duckdb?threads=4)",
            key=key,
        )
    suffix = f"?{query}" if query else ""
    return Target(backend_for(KIND), url=f"duckdb://{path}{suffix}", path=path)


def config(target: Target) -> dict[str, str]:
    """The DuckDB configuration options the URL carries."""
    _, _, query = target.url.partition("?")
    return dict(parse_qsl(query))


def password(url: str) -> str | None:
    """A DuckDB file has no password."""
    return None
