"""``dpaudit risk``: what an (epsilon, delta) guarantee means for n targets (Beyond Worst Case).

    dpaudit risk --epsilon 4 --delta 1e-5 --prior 0.1 --targets 100 [--confidence 0.95] [--json]
    dpaudit risk --epsilon 1 --delta 1e-5 --prior-file priors.csv

Prints, for an attacker whose best a-priori guess succeeds with probability ``prior`` on each
target (or per-person priors from ``--prior-file``):

* the per-target success bound (Thm 3.5 at n = 1: beta + (1 - beta) delta);
* v_UB: with probability >= confidence at most v_UB of the n targets are attacked successfully
  (Thm 3.5 over n targets, BWC notes §1.8(e));
* the bits leaked per person except with probability 1 - confidence (Beyond Worst Case §3.2; a
pure-DP
  statement in epsilon);
* the advantage bound (Cor 3.4, Beyond Worst Case §5.3) and eps_protect (smallest epsilon with
advantage
  <= tau).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import typer
from rich.table import Table

from dpaudit.cli.common import app, console, fmt_number, print_json
from dpaudit.risk.flipping import check_epsilon, check_prior_scalar
from dpaudit.risk.priors import load_priors
from dpaudit.risk.summary import risk_summary
from dpaudit.validation import check_confidence, check_count, check_delta


@app.command("risk")
def risk_command(
    epsilon: float = typer.Option(..., "--epsilon", help="Privacy parameter epsilon (>= 0)."),
    delta: float = typer.Option(0.0, "--delta", help="delta of (epsilon, delta)-DP, in [0, 1)."),
    prior: float | None = typer.Option(
        None, "--prior", help="Prior success probability of the best guess, in (0, 1)."),
    targets: float | None = typer.Option(
        None, "--targets", help="Number of target people n, a whole number >= 1 (1e7 is "
                                "accepted; default: 1, or the number of entries of "
                                "--prior-file)."),
    confidence: float = typer.Option(0.95, "--confidence",
                                     help="Probability that v_UB holds, in (0, 1)."),
    prior_file: Path | None = typer.Option(
        None, "--prior-file", help="Per-person priors: one number per line (or a CSV column)."),
    tau: float = typer.Option(0.05, "--tau", help="Advantage threshold for eps_protect."),
    delta_multiplier: float = typer.Option(
        1.0, "--delta-multiplier", help="m in the m*n*delta term (1 = paper, 2 = Steinke code)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Bound how many of n targets any attacker can reconstruct under (epsilon, delta)-DP."""
    eps = check_epsilon(epsilon)
    if not isinstance(eps, float) or not math.isfinite(eps):
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    d = check_delta(delta)
    c = check_confidence(confidence)
    if prior_file is not None and prior is not None:
        raise ValueError("prior: give either --prior or --prior-file, not both")
    if prior_file is not None:
        priors = load_priors(prior_file)
        if targets is not None:
            n = check_count("targets", targets, minimum=1)
            if n != priors.size:
                raise ValueError(f"targets ({n}) must equal the number of priors in "
                                 f"--prior-file ({priors.size})")
    elif prior is not None:
        p = check_prior_scalar(prior, "prior")
        n = check_count("targets", 1 if targets is None else targets, minimum=1)
        priors = np.full(n, p)
    else:
        raise ValueError("prior: one of --prior or --prior-file is required")
    out = risk_summary(eps, d, priors, confidence=c, tau=tau, delta_multiplier=delta_multiplier)
    if as_json:
        print_json(out)
        return
    det = out["details"]
    n = out["targets"]
    table = Table(title=f"Attack risk under ({eps:g}, {d:g})-DP, {n} target(s)")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_column("meaning")
    pdesc = f"{out['params']['prior']:g}" if out["params"]["prior"] is not None else \
        f"max {out['params']['prior_max']:.4g}, mean {out['params']['prior_mean']:.4g}"
    table.add_row("prior", pdesc, "best a-priori guess succeeds with this probability")
    table.add_row("success bound", fmt_number(out["success_bound"]),
                  "per-target attack success <= this (Thm 3.5, n = 1)")
    table.add_row("expected successes", fmt_number(det["expected_successes_bound"]),
                  f"vs {fmt_number(det['expected_successes_prior'])} from the prior alone")
    table.add_row(f"v_UB ({100 * c:g}%)", f"{out['v_ub']} / {n}",
                  f"at most this many targets attacked, with prob. >= {c:g} (Thm 3.5)")
    table.add_row("leaked bits", fmt_number(out["leaked_bits"]),
                  f"bits per person leaked except with prob. {1 - c:.3g} (pure-eps statement)")
    table.add_row("advantage", fmt_number(out["advantage"]),
                  "(posterior - prior)/(1 - prior) bound (Cor 3.4)")
    table.add_row(f"epsilon_protect (tau={tau:g})", fmt_number(out["epsilon_protect"]),
                  "largest-risk person: smallest eps with advantage <= tau")
    console.print(table)
