"""One DuckDB file holds every run: its design, samples and transactions.

See ``docs/results-schema.md`` for the tables and :mod:`wannabet.store.schema` for migrations.
This package owns the results schema: every SQL statement over the results tables is here, the
writers and run-level readers in :mod:`~wannabet.store.store`, the analyses' and the report's
read queries in :mod:`~wannabet.store.queries`, and the latency formula in
:data:`~wannabet.store.schema.LATENCY_MS`.
"""

from wannabet.store.store import (
    DEFAULT_RESULTS,
    SCHEDULE_KEY,
    ConditionRow,
    ConditionSummary,
    RunInfo,
    SampleRow,
    Store,
)

__all__ = [
    "DEFAULT_RESULTS",
    "SCHEDULE_KEY",
    "ConditionRow",
    "ConditionSummary",
    "RunInfo",
    "SampleRow",
    "Store",
]
