"""One entry point: ``write_report(path, report)`` writes an HTML (or PNG) audit card."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dpaudit.output import writable_target, write_bytes
from dpaudit.report.model import ReportModel, build_report
from dpaudit.validation import check_choice

__all__ = ["write_report", "FORMATS", "as_models"]

FORMATS = ("html", "png")


def as_models(report: Any, **build_kwargs: Any) -> list[ReportModel]:
    """A ReportModel, a sequence of them, an :class:`dpaudit.outcome.Audit` (its ``to_dict()``
    and observations) or a ``--json`` payload (built with ``build_kwargs``, see
    :func:`dpaudit.report.build_report`) as a list of models."""
    from dpaudit.outcome import Audit

    if isinstance(report, ReportModel):
        return [report]
    if isinstance(report, Audit):
        kw = dict(build_kwargs)
        if report.observations is not None:
            kw.setdefault("observations", report.observations)
        if report.settings:
            kw.setdefault("settings", dict(report.settings))
        return [build_report(report.to_dict(), **kw)]
    if isinstance(report, Mapping):
        return [build_report(report, **build_kwargs)]
    if isinstance(report, Sequence) and report and all(isinstance(m, ReportModel)
                                                         for m in report):
        return list(report)
    raise ValueError("report must be a ReportModel, a non-empty list of ReportModel, an Audit "
                     "or a --json payload (dict with 'results')")


def write_report(path: str | Path, report: Any, *, fmt: str | None = None,
                 page_title: str | None = None, dpi: int = 110, **build_kwargs: Any) -> Path:
    """Write the audit card(s) to ``path`` and return the path (atomically, and only onto a
    regular file or a new path: :mod:`dpaudit.output`).

    Args:
      path: output file.
      report: a :class:`ReportModel`, a list of them (one card each, e.g. the demo), an
        :class:`dpaudit.outcome.Audit`, or a ``--json`` payload dict, built with
        ``build_kwargs`` (observations=, inputs=, settings=, run_seconds=, risk_prior=, ...).
      fmt: "html" (self-contained, interactive) or "png" (static); default from the suffix
        of ``path`` (".png" -> png, otherwise html).
      dpi: resolution of the PNG.
      page_title: heading of the page (default: the card's title; with several cards
        "dpaudit report: N audits").
    """
    p = Path(path)
    if fmt is None:
        fmt = "png" if p.suffix.lower() == ".png" else "html"
    check_choice("format", fmt, FORMATS)
    writable_target(p, what="report")  # a device, FIFO or directory: refused before rendering
    models = as_models(report, **build_kwargs)
    if fmt == "png":
        from dpaudit.report.png import render_png

        render_png(models, p, dpi=dpi)  # written through dpaudit.output.atomic_output
        return p
    from dpaudit.report.html import render_html

    write_bytes(p, render_html(models, title=page_title).encode("utf-8"), what="report")
    return p
