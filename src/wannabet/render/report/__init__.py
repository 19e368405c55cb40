"""The self-contained HTML report (``wannabet report``).

:func:`build_report` compares stored runs exactly as ``wannabet compare`` does
(:func:`wannabet.verdicts.compare_runs`), reduces their transactions in DuckDB to bins,
quantiles and per-sample points, and renders one HTML file that opens offline.
"""

from wannabet.render.report.build import (
    Report,
    ReportOptions,
    ResponseCurve,
    UnitOfWork,
    UnitOfWorkRow,
    build_report,
    verdict_sentence,
)

__all__ = [
    "Report",
    "ReportOptions",
    "ResponseCurve",
    "UnitOfWork",
    "UnitOfWorkRow",
    "build_report",
    "verdict_sentence",
]
