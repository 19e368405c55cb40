"""What a run records about a MySQL or MariaDB server: its version and the settings that change
how a workload performs."""

from __future__ import annotations

from typing import Any

from wannabet.engine.base import Engine
from wannabet.targets import Target

#: server variables that change how a workload performs; recorded with every run
MYSQL_SETTINGS = (
    "innodb_flush_log_at_trx_commit",
    "sync_binlog",
    "log_bin",
    "innodb_buffer_pool_size",
    "innodb_log_file_size",
    "innodb_log_buffer_size",
    "innodb_flush_method",
    "innodb_doublewrite",
    "innodb_io_capacity",
    "innodb_file_per_table",
    "transaction_isolation",
    "tx_isolation",
    "binlog_format",
    "max_connections",
    "thread_handling",
    "performance_schema",
    "query_cache_type",
    "autocommit",
)


def probe(engine: Engine, target: Target) -> dict[str, Any]:
    """The server's version and :data:`MYSQL_SETTINGS`; also the connectivity check."""
    version = engine.query(target, "SELECT VERSION()")[0][0] or ""
    names = ", ".join(f"'{name}'" for name in MYSQL_SETTINGS)
    rows = engine.query(target, f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})")
    return {
        "server": "MariaDB" if "mariadb" in version.lower() else "MySQL",
        "server_version": version,
        "server_settings": {name: value for name, value in sorted(rows)},
    }
