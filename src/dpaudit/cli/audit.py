"""``dpaudit audit SCORES``: classical multi-run audit of a membership-score file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer

from dpaudit.cli.common import app, check_claimed_epsilon, json_payload, print_results
from dpaudit.cli.report_options import format_option, maybe_write_report, report_option
from dpaudit.cli.table_options import (
    aggregate_option,
    allow_duplicates_option,
    group_col_option,
    load_table,
    member_col_option,
    metric_intervals,
    score_col_option,
)
from dpaudit.games.audit import audit_multi_run


def _threshold(text: str) -> str | float:
    if text in ("bonferroni", "split", "multi_split"):
        return text
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"--threshold must be 'bonferroni', 'split', 'multi_split' or a number; "
                         f"got {text!r}") from None


@app.command("audit")
def audit_cmd(
    scores: Path = typer.Argument(..., help="CSV (columns member,score), Parquet, .npz or "
                                            ".json."),
    delta: float = typer.Option(1e-5, "--delta", help="delta of the claimed guarantee."),
    confidence: float = typer.Option(0.95, "--confidence", help="Probability the bound holds."),
    claimed_epsilon: float | None = typer.Option(None, "--claimed-epsilon",
                                                 help="Claimed epsilon to test."),
    threshold: str = typer.Option("bonferroni", "--threshold",
                                  help="'bonferroni', 'split', 'multi_split' (10 seeded "
                                       "splits, median rule) or a number."),
    direction: str = typer.Option("both", "--direction", help="'both' or 'positive'."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the 'split' strategy "
                                    "(default 0; only with --threshold split / multi_split)."),
    grid: str | None = typer.Option(None, "--grid", help="Thresholds of --threshold bonferroni: "
                                    "'geometric' (default; pooled-score ranks 1, 2, 3, 5, 8, "
                                    "... from both ends plus 30 quantiles) or 'quantiles' (1000 "
                                    "pooled-score quantiles, the grid before)."),
    member_col: str = member_col_option(),
    score_col: str = score_col_option(),
    group_col: str | None = group_col_option(),
    aggregate: str | None = aggregate_option(),
    allow_duplicates: bool = allow_duplicates_option(),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    report: Path | None = report_option(),
    report_format: str = format_option(),
) -> None:
    """Multi-run audit (Hypothesis Interpretation, Clopper-Pearson): epsilon lower bound + GDP-based
    estimate."""
    obs = load_table(scores, member_col, score_col, group_col, aggregate, allow_duplicates)
    th = _threshold(threshold)
    if seed is not None and th not in ("split", "multi_split"):
        raise ValueError("--seed is only used by --threshold split or multi_split")
    seed = 0 if seed is None else seed
    if grid is not None and th != "bonferroni":
        raise ValueError("--grid is only used by --threshold bonferroni")
    grid = "geometric" if grid is None else grid
    claimed_epsilon = check_claimed_epsilon(claimed_epsilon)
    # the rows and the verdict, computed once (dpaudit.games.audit.audit_multi_run -> Audit)
    audit = audit_multi_run(obs.member, obs.score, claimed_epsilon=claimed_epsilon,
                            delta=delta, confidence=confidence, threshold=th,
                            direction=direction, seed=seed, grid=grid)
    results = list(audit.results)
    d = results[0].details
    extra = {"trials": obs.n, "members": obs.n_members, "auroc": d["auroc"],
             "tpr_at_fpr_0.01": d["tpr_at_fpr_0.01"],
             **metric_intervals(obs.member, obs.score, confidence)}
    audit = dataclasses.replace(audit, extra=extra)
    print_results(audit, as_json=as_json, title=f"Multi-run audit of {scores.name}")
    maybe_write_report(report, report_format, json_payload(audit), observations=obs,
                       inputs=[scores], title=f"Multi-run audit of {scores.name}")
