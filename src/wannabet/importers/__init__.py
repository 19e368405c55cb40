"""Importers: foreign result files → runs in the store, analysed like native runs.

One module per format; each reads its files (DuckDB for the large ones), builds one
:class:`~wannabet.store.ImportBatch` and writes it in one store transaction. See
``docs/importers.md``.
"""

from wannabet.importers._common import ConditionRule
from wannabet.importers.benchbase import import_benchbase
from wannabet.importers.csv import import_csv
from wannabet.importers.fio import import_fio
from wannabet.importers.hammerdb import import_hammerdb
from wannabet.importers.hyperfine import import_hyperfine
from wannabet.importers.pgbench import import_pgbench, parse_summary
from wannabet.importers.swingbench import import_swingbench
from wannabet.importers.sysbench import import_sysbench
from wannabet.importers.ycsb import import_ycsb

__all__ = [
    "ConditionRule",
    "import_benchbase",
    "import_csv",
    "import_fio",
    "import_hammerdb",
    "import_hyperfine",
    "import_pgbench",
    "import_swingbench",
    "import_sysbench",
    "import_ycsb",
    "parse_summary",
]
