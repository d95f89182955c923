"""``dpaudit risk``: what an (epsilon, delta) guarantee means for n targets (Beyond Worst Case).

    dpaudit risk --epsilon 4 --delta 1e-5 --prior 0.1 --targets 100 [--confidence 0.95] [--json]
    dpaudit risk --epsilon 1 --delta 1e-5 --prior-file priors.csv
    dpaudit risk --epsilon 0.5,1,2,4,8 --delta 1e-5 --prior 0.1 --targets 100     # a sweep
    dpaudit risk --epsilon 0.5:8:0.5 ...                                          # a range
    dpaudit risk --max-attacked 10 --targets 100 --prior 0.01 --delta 1e-5        # the inverse
    dpaudit risk --max-success 0.5 --prior 0.1 --delta 1e-5 [--report risk.html]

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

A sweep prints one row per epsilon (each row is the single-epsilon command's numbers); the
inverse questions print the largest epsilon exact to 4 decimals (:mod:`dpaudit.risk.inverse`);
``--report`` writes the risk card (:mod:`dpaudit.report.risk_card`).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import typer
from rich.table import Table

from dpaudit.cli.common import app, console, fmt_number, print_json
from dpaudit.risk.flipping import check_prior_scalar
from dpaudit.risk.priors import load_priors
from dpaudit.risk.summary import risk_summary
from dpaudit.risk.sweep import epsilon_grid, plain_sentence, risk_sweep
from dpaudit.validation import check_confidence, check_count, check_delta

#: arrays of n numbers the Thm 3.5 tail keeps at once (priors, beta, tail, alpha, spreads)
ARRAYS_PER_TARGET = 8


def check_targets_fit(n: int) -> None:
    """The Thm 3.5 tail over n targets is an O(n) computation on arrays of n + 2 numbers: refuse
    a count whose arrays cannot fit in half of this machine's memory, saying how many fit."""
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        phys = 1 << 34
    fit = int(phys // 2 // (8 * ARRAYS_PER_TARGET))
    if n > fit:
        raise ValueError(f"targets (--targets) must be at most {fit:,} on this machine (the "
                         f"Thm 3.5 tail keeps about {ARRAYS_PER_TARGET} arrays of n numbers); "
                         f"got {n:,}")


def _check_report_path(path: Path, *inputs: Path | None) -> None:
    from dpaudit.output import check_output_target

    check_output_target(path, *(i for i in inputs if i is not None), what="report")
    if path.suffix.lower() == ".png":
        raise ValueError(f"report: the risk card is HTML; got {path}")


@app.command("risk")
def risk_command(
    epsilon: str | None = typer.Option(
        None, "--epsilon", help="Privacy parameter epsilon (>= 0): one value, a list "
                                "0.5,1,2,4,8 or a range start:stop:step (a sweep)."),
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
    max_attacked: float | None = typer.Option(
        None, "--max-attacked", help="Inverse: the largest epsilon with v_UB <= K (a whole "
                                     "number below --targets)."),
    max_success: float | None = typer.Option(
        None, "--max-success", help="Inverse: the largest epsilon with per-target success "
                                    "bound <= s, in (0, 1)."),
    report: Path | None = typer.Option(
        None, "--report", help="Also write the risk card (self-contained HTML) to this file."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Bound how many of n targets any attacker can reconstruct under (epsilon, delta)-DP."""
    if epsilon is None and max_attacked is None and max_success is None:
        raise ValueError("epsilon: give --epsilon (a value, list or range), --max-attacked or "
                         "--max-success")
    grid = epsilon_grid(epsilon) if epsilon is not None else ()
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
        label = f"per-person priors from {prior_file.name}: max {priors.max():.4g}, " \
                f"mean {priors.mean():.4g}"
    elif prior is not None:
        p = check_prior_scalar(prior, "prior")
        n = check_count("targets", 1 if targets is None else targets, minimum=1)
        check_targets_fit(n)
        priors = np.full(n, p)
        label = f"prior {p:g} for every person"
    else:
        raise ValueError("prior: one of --prior or --prior-file is required")
    if report is not None:
        _check_report_path(report, prior_file)
    answers = []
    if max_attacked is not None:
        from dpaudit.risk.inverse import largest_epsilon_for_attacked

        k = check_count("max_attacked", max_attacked, minimum=0)
        answers.append(largest_epsilon_for_attacked(priors, d, k, confidence=c,
                                                    delta_multiplier=delta_multiplier))
    if max_success is not None:
        from dpaudit.risk.inverse import largest_epsilon_for_success

        answers.append(largest_epsilon_for_success(priors, d, max_success))
    rows = risk_sweep(grid, d, priors, confidence=c, tau=tau,
                      delta_multiplier=delta_multiplier)
    if report is not None:
        from dpaudit.report.risk_card import risk_card, write_risk_card

        card = risk_card(rows, priors, delta=d, confidence=c, prior_label=label,
                         answers=answers, tau=tau, delta_multiplier=delta_multiplier,
                         command="dpaudit risk")
        write_risk_card(report, card)
        if not as_json:
            print(f"report written: {report}", file=sys.stderr)
    if len(rows) == 1 and not answers:
        _print_single(rows[0], c, tau, as_json)
        return
    if as_json:
        print_json({"method": "risk_sweep", "delta": d, "confidence": c,
                    "targets": int(priors.size), "epsilons": list(grid), "rows": rows,
                    "inverse": [a.to_dict() for a in answers],
                    "sentences": [a.sentence() for a in answers]})
        return
    if rows:
        _print_sweep(rows, d, c, tau)
    for a in answers:
        console.print(a.sentence(), soft_wrap=True)
        if a.question == "max_attacked":
            r = risk_summary(a.epsilon, d, priors, confidence=c, tau=tau,
                             delta_multiplier=delta_multiplier)
            console.print(plain_sentence(a.epsilon, r["v_ub"], r["targets"], c,
                                         r["success_bound"], float(priors.max())),
                          soft_wrap=True)


def _print_sweep(rows: list[dict], d: float, c: float, tau: float) -> None:
    n = rows[0]["targets"]
    table = Table(title=f"Attack risk against epsilon (delta {d:g}), {n} target(s)")
    table.caption = (f"success: per-target bound (Thm 3.5, n = 1); expected: successes "
                     f"bound; v_UB: at most this many attacked with prob. >= {c:g}; bits: "
                     f"leaked per person; adv.: advantage (Cor 3.4); eps_protect: tau = "
                     f"{tau:g}")
    for head in ("eps", "success", "expected", f"v_UB {100 * c:g}%", "bits", "adv.",
                 "eps_protect"):
        table.add_column(head, justify="right", no_wrap=True)
    for r in rows:
        table.add_row(f"{r['epsilon']:g}", fmt_number(r["success_bound"]),
                      fmt_number(r["details"]["expected_successes_bound"]),
                      f"{r['v_ub']} / {n}", fmt_number(r["leaked_bits"]),
                      fmt_number(r["advantage"]), fmt_number(r["epsilon_protect"]))
    console.print(table)
    console.print(f"prior alone: {fmt_number(rows[0]['details']['expected_successes_prior'])} "
                  f"expected successes; best guess right with probability "
                  f"{rows[0]['params']['prior_max']:.4g}", soft_wrap=True)


def _print_single(out: dict, c: float, tau: float, as_json: bool) -> None:
    if as_json:
        print_json(out)
        return
    eps, d = out["epsilon"], out["delta"]
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
    console.print(plain_sentence(eps, out["v_ub"], n, c, out["success_bound"],
                                 out["params"]["prior_max"]), soft_wrap=True)
