"""The self-contained HTML report (``wannabet report``), drawn from gathered data.

:func:`wannabet.reports.gather_report` compares stored runs exactly as ``wannabet compare`` does
and reduces their transactions in DuckDB to bins, quantiles and per-sample points;
:func:`render_report` turns that into charts and one HTML file that opens offline.
"""

from wannabet.render.report.build import Report, render_report, verdict_sentence

__all__ = ["Report", "render_report", "verdict_sentence"]
