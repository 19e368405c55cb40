"""One DuckDB file holds every run: its design, samples and transactions.

See ``docs/results-schema.md`` for the tables and :mod:`wannabet.store.schema` for migrations.
"""

from wannabet.store.store import (
    DEFAULT_RESULTS,
    ConditionRow,
    ConditionSummary,
    RunInfo,
    SampleRow,
    Store,
)

__all__ = [
    "DEFAULT_RESULTS",
    "ConditionRow",
    "ConditionSummary",
    "RunInfo",
    "SampleRow",
    "Store",
]
