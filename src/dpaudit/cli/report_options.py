"""CLI helpers: ``--report PATH`` / ``--format html|png`` on any command in two lines.

    from dpaudit.cli.report_options import format_option, maybe_write_report, report_option
    ...
    report: Path | None = report_option(),
    report_format: str = format_option(),
    ...
    maybe_write_report(report, report_format, payload, observations=obs, inputs=[scores])

Every parameter of the running command (the click context) is recorded as a setting, the
command path as the command, and the run time is measured from the moment the options were
parsed.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dpaudit.report.write import FORMATS, write_report
from dpaudit.validation import check_choice

__all__ = ["report_option", "format_option", "maybe_write_report", "current_context",
           "REPORT_PARAMS"]

#: parameter names of the two options (left out of the recorded settings).
REPORT_PARAMS = ("report", "report_format")

_started: list[float] = []


def _mark_start(value: Any) -> Any:
    _started.append(time.perf_counter())
    return value


def _check_format(value: str) -> str:
    return check_choice("--format", value, FORMATS)


def report_option() -> Any:
    """``--report PATH``: also write the audit card (HTML, or PNG with --format png)."""
    import typer

    return typer.Option(None, "--report", callback=_mark_start,
                        help="Also write the audit card to this file (self-contained HTML; "
                             "PNG with --format png).")


def format_option() -> Any:
    """``--format html|png`` (alias ``--report-format``) of the ``--report`` file."""
    import typer

    return typer.Option("html", "--format", "--report-format", callback=_check_format,
                        help="Format of the --report file: html or png.")


def current_context() -> Any:
    """The running command's click context (typer >= 0.20 vendors click as typer._click;
    older typer uses click itself), or None outside a command."""
    for mod in ("typer._click.globals", "click.globals"):
        try:
            getter = __import__(mod, fromlist=["get_current_context"]).get_current_context
        except ImportError:
            continue
        ctx = getter(silent=True)
        if ctx is not None:
            return ctx
    return None


def _typed(name: str) -> bool:
    """Whether option ``name`` was typed on the command line of the running command."""
    ctx = current_context()
    if ctx is None:
        return False
    try:
        source = ctx.get_parameter_source(name)
    except (AttributeError, KeyError):
        return False
    return getattr(source, "name", "") == "COMMANDLINE"


def _context() -> tuple[str | None, dict[str, Any]]:
    ctx = current_context()
    if ctx is None:
        return None, {}
    params = {k: v for k, v in ctx.params.items() if k not in REPORT_PARAMS}
    return ctx.command_path, params


def maybe_write_report(path: str | Path | None, fmt: str, payload: Any, *,
                       observations: Any = None, inputs: Sequence[Any] = (),
                       title: str | None = None, settings: Mapping[str, Any] | None = None,
                       notes: Sequence[str] = (), quiet: bool = False) -> Path | None:
    """Write the report when ``path`` is given (no-op otherwise); returns the path.

    ``payload`` is the command's ``--json`` dict (or a list of ReportModel).  The path is
    announced on stderr, so ``--json`` output on stdout stays machine-readable.
    """
    if path is None:
        if _typed("report_format"):
            raise ValueError("--format applies to the --report file; give --report PATH")
        return None
    from dpaudit.io import check_output_path

    check_output_path(path, *(Path(i) for i in inputs if isinstance(i, (str, os.PathLike))),
                      what="report")
    command, params = _context()
    st = {**params, **(settings or {})}
    run = time.perf_counter() - _started[-1] if _started else None
    kw: dict[str, Any] = {}
    if isinstance(payload, Mapping):
        kw = {"observations": observations, "inputs": inputs, "settings": st,
              "command": command, "run_seconds": run, "notes": notes, "title": title}
    out = write_report(path, payload, fmt=fmt, **kw)
    if not quiet:
        print(f"report written: {out}", file=sys.stderr)
    return out
