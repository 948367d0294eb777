"""Figures and reports of railgauge fits.

:mod:`railgauge.report.plots` draws the figures (matplotlib, Agg canvas) and
:mod:`railgauge.report.html` writes the self-contained ``report.html`` and the plain-text table.
"""

from railgauge.report.html import format_table, write_report
from railgauge.report.plots import format_bytes, plot_gap, plot_prtt, plot_residuals

__all__ = [
    "format_bytes",
    "format_table",
    "plot_gap",
    "plot_prtt",
    "plot_residuals",
    "write_report",
]
