"""``dpaudit bound lifted X.npz``: Lifted-DP audit (Pillutla et al.) from saved test matrices.

The ``.npz`` file holds arrays ``x`` (trials x K, 0/1 tests of the inserted canaries) and ``y``
(trials x K, 0/1 tests of fresh canaries on the null models).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from dpaudit.cli.common import (
    bound_app,
    check_claimed_epsilon,
    given_options,
    json_payload,
    print_results,
)
from dpaudit.cli.report_options import format_option, maybe_write_report, report_option
from dpaudit.estimators.lifted import lifted
from dpaudit.io import load_lifted


@bound_app.command("lifted")
def lifted_cmd(
    ctx: typer.Context,
    path: Path = typer.Argument(..., help=".npz file with 0/1 arrays x and y (trials x K)."),
    delta: float = typer.Option(1e-5, "--delta", help="delta of the (eps, delta) statement."),
    confidence: float = typer.Option(0.95, "--confidence", help="Probability the bound holds."),
    interval: str = typer.Option("wilson", "--interval",
                                 help="wilson | bernstein | clopper_pearson | jeffreys."),
    order: int = typer.Option(2, "--order", help="Interval order 1, 2 or 4 (wilson/bernstein)."),
    symmetric: bool = typer.Option(False, "--symmetric",
                                   help="Also test the swapped direction (beta/4 per bound)."),
    exact_eq18: bool = typer.Option(False, "--exact-eq18",
                                    help="4th-order Wilson with the exact Eq. 18 variance."),
    claimed_epsilon: float | None = typer.Option(None, "--claimed-epsilon",
                                                 help="Claimed epsilon to test."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    report: Path | None = report_option(),
    report_format: str = format_option(),
) -> None:
    """LiDP audit with K random canaries per trial and XBern confidence intervals (Pillutla et
    al.)."""
    claimed_epsilon = check_claimed_epsilon(claimed_epsilon)
    if interval in ("clopper_pearson", "jeffreys") and "order" in given_options(ctx):
        raise ValueError(f"--order is not used by --interval {interval} (it bounds one canary "
                         "per trial); orders 1, 2, 4 are for wilson and bernstein")
    if exact_eq18 and (interval != "wilson" or order != 4):
        raise ValueError("--exact-eq18 applies to --interval wilson --order 4 only")
    obs = load_lifted(path)
    x, y = obs.x, obs.y
    opts: dict[str, Any] = {"exact_eq18": True} if exact_eq18 else {}
    r = lifted(x, y, delta=delta, confidence=confidence, interval=interval, order=order,
               symmetric=symmetric, **opts)
    d = r.details
    extra = {"trials": r.settings["n_x"], "canaries_per_trial": r.settings["k"],
             "tpr_lower": d["tpr_lower"], "fpr_upper": d["fpr_upper"],
             "epsilon_raw": d["epsilon_raw"]}
    print_results(r, as_json=as_json, claimed_epsilon=claimed_epsilon,
                  title=f"Lifted-DP audit of {path.name} ({interval}-{r.settings['order']})",
                  extra=None if as_json else extra)
    maybe_write_report(report, report_format, json_payload(r, claimed_epsilon=claimed_epsilon),
                       inputs=[path], title=f"Lifted-DP audit of {path.name}")
