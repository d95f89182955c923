"""``dpaudit report RESULT.json [--scores SCORES] [--out PATH] [--format html|png]``.

Builds the audit card from a saved ``--json`` output of any audit command.  With the scores
file (columns member,score) the card also shows the ROC, AUROC / TPR-at-low-FPR intervals and
the observed privacy-region points.  A JSON object whose values are themselves ``--json``
outputs (as ``dpaudit demo --json`` prints) gives one card per audit.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from dpaudit.cli.common import app
from dpaudit.cli.report_options import REPORT_PARAMS, current_context, format_option
from dpaudit.io import read_json
from dpaudit.report.model import build_report
from dpaudit.report.provenance import hash_file, make_provenance
from dpaudit.report.write import write_report


def _read_json(path: Path) -> Any:
    # size limit, regular files only, BOM, nesting depth: dpaudit.io.read_json
    return read_json(path, "RESULT")


def _audits(obj: Any) -> list[tuple[str | None, Mapping[str, Any]]]:
    """One (title, payload) per audit in a --json output."""
    if isinstance(obj, Mapping) and ("results" in obj or "epsilon" in obj):
        return [(None, obj)]
    if isinstance(obj, Mapping) and obj and all(isinstance(v, Mapping) and "results" in v
                                                for v in obj.values()):
        return [(str(k), v) for k, v in obj.items()]
    raise ValueError("RESULT must be the --json output of a dpaudit audit command (an object "
                     "with 'results'), or an object of such outputs")


@app.command("report")
def report_cmd(
    result: Path = typer.Argument(..., help="Saved --json output of an audit command."),
    scores: Path | None = typer.Option(None, "--scores", help="Scores file of the audit "
                                       "(member,score) for the ROC and privacy-region points."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Output file (default: RESULT "
                                    "with .html / .png)."),
    report_format: str = format_option(),
    title: str | None = typer.Option(None, "--title", help="Title of the card."),
    risk_prior: float = typer.Option(0.01, "--risk-prior", help="Prior success of "
                                     "reconstructing one target's secret, in (0, 1)."),
) -> None:
    """Build the self-contained HTML (or PNG) audit card from a saved --json result."""
    audits = _audits(_read_json(result))
    obs = None
    inputs = [hash_file(result)]
    if scores is not None:
        from dpaudit.io import load_scores

        if len(audits) > 1:
            raise ValueError("--scores applies to a single audit; RESULT holds "
                             f"{len(audits)} audits")
        obs = load_scores(scores)
        inputs.append(hash_file(scores))
    ctx = current_context()
    params = {f"report.{k}": v for k, v in ctx.params.items() if k not in REPORT_PARAMS}
    models = []
    for name, payload in audits:
        rs = payload.get("results") or [payload]
        basis = rs[0] if isinstance(rs, list) and rs and isinstance(rs[0], Mapping) else {}
        st = dict(basis.get("settings") or {}) if isinstance(basis, Mapping) else {}
        prov = make_provenance(command=ctx.command_path, inputs=inputs,
                               settings={**st, **params},
                               seed=st.get("seed", st.get("tie_break_seed")))
        t = title if title and len(audits) == 1 else (f"{title}: {name}" if title and name
                                                      else name)
        models.append(build_report(payload, observations=obs, title=t, risk_prior=risk_prior,
                                   provenance=prov))
    path = out if out is not None else result.with_suffix(f".{report_format}")
    written = write_report(path, models, fmt=report_format, page_title=title)
    typer.echo(f"report written: {written}")
