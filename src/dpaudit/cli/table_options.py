"""Column options shared by ``audit`` and ``one-run``: read CSV / Parquet / .npz / JSON tables
with named columns and optional per-user aggregation (:mod:`dpaudit.adapters.tables`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import typer

from dpaudit.observations import MembershipObservations

__all__ = ["member_col_option", "score_col_option", "group_col_option", "aggregate_option",
           "allow_duplicates_option", "load_table", "metric_intervals", "BCA_MAX_N",
           "BOOTSTRAP_MAX_N"]

#: the CLI's TPR-at-FPR interval: BCa up to BCA_MAX_N observations (its jackknife is
#: quadratic), the percentile bootstrap up to BOOTSTRAP_MAX_N, none above (2000 resamples).
BCA_MAX_N = 5_000
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


def allow_duplicates_option() -> Any:
    return typer.Option(False, "--allow-duplicates",
                        help="Audit a scores file although rows repeat (the file repeated "
                             "whole, or rows equal to full precision): only if they are "
                             "distinct canaries.")


def load_table(path: Path, member_col: str = "member", score_col: str = "score",
               group_col: str | None = None, aggregate: str | None = None,
               allow_duplicates: bool = False) -> MembershipObservations:
    """The observations of ``path``: the plain two-column reader for default columns (its
    checks and messages unchanged), the table adapters otherwise and for Parquet.  Repeated
    rows are refused unless ``allow_duplicates`` (:mod:`dpaudit.repeats`); a few repeated
    full-precision rows give a warning."""
    from dpaudit.io import load_scores

    plain = (member_col, score_col, group_col, aggregate) == ("member", "score", None, None)
    if plain and Path(path).suffix.lower() not in (".parquet", ".pq"):
        obs = load_scores(path, allow_duplicates=True)
    else:
        from dpaudit.adapters.tables import read_table

        obs = read_table(path, member_col=member_col, score_col=score_col,
                         group_col=group_col, aggregate=aggregate, allow_duplicates=True)
    from dpaudit.io import score_direction_warning
    from dpaudit.repeats import check_repeats, duplicate_warning

    rep = check_repeats(obs.member, obs.score, str(path), allow=allow_duplicates)
    dup = duplicate_warning(rep, str(path))
    if dup is not None:
        print(f"warning: {dup}", file=sys.stderr)
    msg = score_direction_warning(obs.member, obs.score, str(path))
    if msg is not None:  # sign-inverted scores: say so before the audit finds "no leak"
        print(f"warning: {msg}", file=sys.stderr)
    return obs


def metric_intervals(member: Any, score: Any, confidence: float) -> dict[str, Any]:
    """Attack-metric intervals for the CLI's ``extra`` block: AUROC with DeLong's interval and
    TPR at FPR 0.01 with the bootstrap (BCa up to BCA_MAX_N observations, percentile up to
    BOOTSTRAP_MAX_N, skipped with the reason above), two-sided at ``confidence``
    (:mod:`dpaudit.stats.attack_metrics`)."""
    from dpaudit.stats.attack_metrics import auroc_interval, tpr_at_fpr_interval

    a = auroc_interval(member, score, confidence, "delong")
    out: dict[str, Any] = {"auroc_ci": [a.low, a.high], "auroc_ci_method": "delong"}
    m = np.asarray(member, dtype=bool)
    smallest = int(min(m.sum(), m.size - m.sum()))
    if smallest < 2:
        out["tpr_at_fpr_0.01_ci"] = None
        out["tpr_at_fpr_0.01_ci_method"] = ("not computed: the bootstrap needs at least 2 "
                                            "members and 2 non-members")
    elif len(score) <= BOOTSTRAP_MAX_N:
        how = "bca" if len(score) <= BCA_MAX_N else "percentile"
        t = tpr_at_fpr_interval(member, score, 0.01, confidence, n_resamples=2000, seed=0,
                                method=how)
        d = t.to_dict()
        out["tpr_at_fpr_0.01_ci"] = [d["low"], d["high"]]
        out["tpr_at_fpr_0.01_ci_method"] = t.method + ", 2000 resamples, seed 0"
    else:
        out["tpr_at_fpr_0.01_ci"] = None
        out["tpr_at_fpr_0.01_ci_method"] = (f"not computed above {BOOTSTRAP_MAX_N} "
                                            f"observations (dpaudit.stats.attack_metrics)")
    return out
