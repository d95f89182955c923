"""Column options shared by ``audit`` and ``one-run``: read CSV / Parquet / .npz / JSON tables
with named columns and optional per-user aggregation (:mod:`dpaudit.adapters.tables`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from dpaudit.observations import MembershipObservations

__all__ = ["member_col_option", "score_col_option", "group_col_option", "aggregate_option",
           "load_table", "metric_intervals", "BOOTSTRAP_MAX_N"]

#: largest input for which the TPR-at-FPR bootstrap runs in the CLI (2000 resamples of n).
BOOTSTRAP_MAX_N = 50_000


def member_col_option() -> Any:
    return typer.Option("member", "--member-col",
                        help="Column of the 0/1 membership (or true/false).")


def score_col_option() -> Any:
    return typer.Option("score", "--score-col", help="Column of the score (higher = member).")


def group_col_option() -> Any:
    return typer.Option(None, "--group-col",
                        help="Column of a user id: one observation per user (user-level DP); "
                             "needs --aggregate.")


def aggregate_option() -> Any:
    return typer.Option(None, "--aggregate",
                        help="Per-user score with --group-col: max, mean or sum.")


def load_table(path: Path, member_col: str = "member", score_col: str = "score",
               group_col: str | None = None, aggregate: str | None = None
               ) -> MembershipObservations:
    """The observations of ``path``: the plain two-column reader for default columns (its
    checks and messages unchanged), the table adapters otherwise and for Parquet."""
    from dpaudit.io import load_scores

    plain = (member_col, score_col, group_col, aggregate) == ("member", "score", None, None)
    if plain and Path(path).suffix.lower() not in (".parquet", ".pq"):
        return load_scores(path)
    from dpaudit.adapters.tables import read_table

    return read_table(path, member_col=member_col, score_col=score_col, group_col=group_col,
                      aggregate=aggregate)


def metric_intervals(member: Any, score: Any, confidence: float) -> dict[str, Any]:
    """Attack-metric intervals for the CLI's ``extra`` block: AUROC with DeLong's interval and
    TPR at FPR 0.01 with the BCa bootstrap (skipped, with the reason, above BOOTSTRAP_MAX_N
    observations), both two-sided at ``confidence`` (:mod:`dpaudit.stats.attack_metrics`)."""
    from dpaudit.stats.attack_metrics import auroc_interval, tpr_at_fpr_interval

    a = auroc_interval(member, score, confidence, "delong")
    out: dict[str, Any] = {"auroc_ci": [a.low, a.high], "auroc_ci_method": "delong"}
    if len(score) <= BOOTSTRAP_MAX_N:
        t = tpr_at_fpr_interval(member, score, 0.01, confidence, n_resamples=2000, seed=0)
        d = t.to_dict()
        out["tpr_at_fpr_0.01_ci"] = [d["low"], d["high"]]
        out["tpr_at_fpr_0.01_ci_method"] = t.method + ", 2000 resamples, seed 0"
    else:
        out["tpr_at_fpr_0.01_ci"] = None
        out["tpr_at_fpr_0.01_ci_method"] = (f"not computed above {BOOTSTRAP_MAX_N} "
                                            f"observations (dpaudit.stats.attack_metrics)")
    return out
