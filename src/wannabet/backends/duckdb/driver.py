"""How the DB-API engine drives DuckDB: its Python package, in this process.

Every session is a connection of its own (``duckdb.connect`` on the same file shares one
database instance inside a process), in autocommit mode as DuckDB's connections are. DuckDB
releases the GIL while it executes, so sessions and DuckDB's own worker threads run in parallel.
"""

from __future__ import annotations

from typing import Any

from wannabet.backends.duckdb.url import config
from wannabet.engine.dbapi import Driver
from wannabet.targets import Target

#: DuckDB's exception classes by the status they mean (a write-write conflict between
#: concurrent transactions is DuckDB's serialization failure, and retrying it is the fix)
_STATUS = {
    "TransactionException": "serialization",
    "ConstraintException": "constraint",
    "IntegrityError": "constraint",
    "ConnectionException": "connection",
    "InterruptException": "error",
}


def classify(exc: BaseException) -> tuple[str, str | None]:
    """(status, code): the code is DuckDB's exception class, the status the first class in its
    hierarchy that :data:`_STATUS` names."""
    for cls in type(exc).__mro__:
        if cls.__name__ in _STATUS:
            return _STATUS[cls.__name__], type(exc).__name__
    return "error", type(exc).__name__


def connect(target: Target) -> Any:
    import duckdb

    assert target.path is not None
    options: dict[str, Any] = dict(config(target))
    return duckdb.connect(str(target.path), config=options)


def driver(target: Target) -> Driver:
    import duckdb

    return Driver(
        module="duckdb",
        connect=lambda: connect(target),
        paramstyle=duckdb.paramstyle,
        classify=classify,
        # The statements run on the session's cursor, which DuckDB makes a connection of its
        # own: the connection's interrupt() does not reach them.
        cancel=lambda conn, cursor: cursor.interrupt(),
        savepoints=False,
    )
