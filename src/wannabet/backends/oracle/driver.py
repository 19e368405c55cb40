"""How the DB-API engine drives Oracle: python-oracledb in thin mode.

Sessions run in autocommit mode, as on every other target, so a statement outside BEGIN …
COMMIT commits at once. Oracle has no BEGIN statement (a transaction starts with the first DML),
so ``BEGIN`` / ``START TRANSACTION`` in a script turns autocommit off until the script's COMMIT
or ROLLBACK, which become the driver's ``commit()`` and ``rollback()``.
"""

from __future__ import annotations

from typing import Any

from wannabet.backends.oracle.url import connect_args
from wannabet.engine.dbapi import Driver
from wannabet.errors import MissingExtra
from wannabet.targets import Target

#: Oracle's error codes by the status they mean
_STATUS = {
    "ORA-00060": "deadlock",  # deadlock detected while waiting for resource
    "ORA-08177": "serialization",  # can't serialize access for this transaction
    "ORA-00054": "lock",  # resource busy and acquire with NOWAIT or timeout expired
    "ORA-30006": "lock",  # resource busy; acquire with WAIT timeout expired
    "ORA-00001": "constraint",  # unique constraint violated
    "ORA-01400": "constraint",  # cannot insert NULL
    "ORA-02290": "constraint",  # check constraint violated
    "ORA-02291": "constraint",  # integrity constraint violated - parent key not found
    "ORA-02292": "constraint",  # integrity constraint violated - child record found
    "ORA-03113": "connection",  # end-of-file on communication channel
    "ORA-03114": "connection",  # not connected to ORACLE
    "ORA-03135": "connection",  # connection lost contact
}


def classify(exc: BaseException) -> tuple[str, str | None]:
    """(status, code): the code is Oracle's (``ORA-00060``) or the driver's (``DPY-6005``);
    the driver's own connection failures (DPY-1xxx, DPY-4011, DPY-6xxx) are connection errors."""
    error = exc.args[0] if exc.args else None
    code = getattr(error, "full_code", None) or None
    if code is None:
        return "error", None
    if code in _STATUS:
        return _STATUS[code], code
    if code.startswith(("DPY-1", "DPY-6")) or code == "DPY-4011":
        return "connection", code
    return "error", code


def _oracledb() -> Any:
    try:
        import oracledb
    except ImportError:
        raise MissingExtra("an Oracle target", "oracle", "python-oracledb") from None
    return oracledb


def connect(target: Target) -> Any:
    conn = _oracledb().connect(**connect_args(target), tcp_connect_timeout=10)
    conn.autocommit = True
    return conn


def driver(target: Target) -> Driver:
    # Looked for here, before any session or sampler connects: a missing driver is the
    # missing extra (exit code 7), not a failure to connect.
    _oracledb()
    return Driver(
        module="oracledb",
        connect=lambda: connect(target),
        paramstyle="named",
        classify=classify,
        cancel=lambda conn, cursor: conn.cancel(),
        transaction_sql=False,
    )
