"""The audit card: one self-contained HTML file per audit (plotly), PNG fallback.

    from dpaudit.report import write_report
    write_report("audit.html", payload, observations=(member, score))   # payload = --json dict

Modules: :mod:`~dpaudit.report.summaries` (ROC down-sampling, AUROC / TPR intervals,
privacy-region boxes), :mod:`~dpaudit.report.risk` (Beyond Worst Case translation),
:mod:`~dpaudit.report.provenance`, :mod:`~dpaudit.report.model` (the frozen report model),
:mod:`~dpaudit.report.figures` + :mod:`~dpaudit.report.html` (rendering),
:mod:`~dpaudit.report.png` (static fallback).  The ``--report`` option of every command is in
:mod:`dpaudit.cli.report_options`.
"""

from dpaudit.report.model import ReportModel, build_report
from dpaudit.report.provenance import Provenance, make_provenance
from dpaudit.report.write import FORMATS, write_report

__all__ = ["ReportModel", "build_report", "write_report", "Provenance", "make_provenance",
           "FORMATS"]
