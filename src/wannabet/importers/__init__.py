"""Importers: foreign result files → runs in the store, analysed like native runs.

One module per format; each reads its files (DuckDB for the large ones), builds one
:class:`~wannabet.store.ImportBatch` and writes it in one store transaction. See
``docs/importers.md``.
"""

from wannabet.importers._common import ConditionRule
from wannabet.importers.csv import import_csv
from wannabet.importers.hyperfine import import_hyperfine
from wannabet.importers.pgbench import import_pgbench, parse_summary
from wannabet.importers.swingbench import import_swingbench
from wannabet.importers.sysbench import import_sysbench

__all__ = [
    "ConditionRule",
    "import_csv",
    "import_hyperfine",
    "import_pgbench",
    "import_swingbench",
    "import_sysbench",
    "parse_summary",
]
