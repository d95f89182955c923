"""``dpaudit report RESULT.json [--scores SCORES] [--out PATH] [--format html|png]``.

Builds the audit card from a saved ``--json`` output of any audit command.  With the scores
file (columns member,score) the card also shows the ROC, AUROC / TPR-at-low-FPR intervals and
the observed privacy-region points.  A JSON object whose values are themselves ``--json``
outputs (as ``dpaudit demo --json`` prints) gives one card per audit.
"""

from __future__ import annotations

import math
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


#: e^epsilon must be finite for the card's risk translation (inf itself is allowed)
MAX_FINITE_EPSILON = 700.0


def check_payload(payload: Mapping[str, Any], source: str) -> None:
    """The shape of a saved ``--json`` result: each result's ``settings``, ``details`` and
    ``params`` are objects, ``epsilon`` and ``claimed_epsilon`` are inf or at most 700 (e^eps
    is used by the card), and the counts of members / non-members are >= 1 when present."""
    rs = payload.get("results") if "results" in payload else [payload]
    for i, r in enumerate(rs if isinstance(rs, list) else []):
        if not isinstance(r, Mapping):
            continue  # the report model names this case
        for key in ("settings", "details", "params"):
            if key in r and r[key] is not None and not isinstance(r[key], Mapping):
                raise ValueError(f"{source}: results[{i}].{key} must be a JSON object, got "
                                 f"{type(r[key]).__name__}")
        st = r.get("settings") or {}
        for key in ("n_members", "n_nonmembers"):
            v = st.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"{source}: results[{i}].settings.{key} must be an integer "
                                 f">= 1, got {v!r}")
        _check_eps(r.get("epsilon"), f"{source}: results[{i}].epsilon")
    _check_eps(payload.get("claimed_epsilon"), f"{source}: claimed_epsilon")


def _check_eps(v: Any, name: str) -> None:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and \
            v > MAX_FINITE_EPSILON:
        raise ValueError(f"{name} must be in [0, {MAX_FINITE_EPSILON:g}] or inf, got {v!r}")


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
    from dpaudit.output import check_output_target

    path = out if out is not None else result.with_suffix(f".{report_format}")
    check_output_target(path, result, scores, what="report")  # before any work
    audits = _audits(_read_json(result))
    obs = None
    inputs = [hash_file(result)]
    if scores is not None:
        from dpaudit.io import load_scores

        if len(audits) > 1:
            raise ValueError("--scores applies to a single audit; RESULT holds "
                             f"{len(audits)} audits")
        obs = load_scores(scores, allow_duplicates=True)  # the audit decided; this renders it
        inputs.append(hash_file(scores))
    for name, payload in audits:
        check_payload(payload, name or str(result))
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
        own = payload.get("scores")  # train-audit --json carries its per-canary scores
        if obs is None and isinstance(own, Mapping) and {"member", "score"} <= set(own):
            from dpaudit.observations import MembershipObservations

            pobs: MembershipObservations | None = MembershipObservations.from_arrays(
                own["member"], own["score"])
        else:
            pobs = obs
        try:
            models.append(build_report(payload, observations=pobs, title=t,
                                       risk_prior=risk_prior, provenance=prov))
        except (TypeError, AttributeError, OverflowError, ZeroDivisionError, IndexError) as e:
            # a hand-edited or foreign payload the checks above did not anticipate
            raise ValueError(f"RESULT {result.name}: malformed --json payload "
                             f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})"
                             ) from None
    check_output_target(path, result, scores, what="report")
    written = write_report(path, models, fmt=report_format, page_title=title)
    typer.echo(f"report written: {written}")
