"""Importers: foreign result files → runs in the store, analysed like native runs."""

from wannabet.importers.csv import import_csv

__all__ = ["import_csv"]
