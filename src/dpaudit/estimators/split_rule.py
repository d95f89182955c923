"""The rule combining the bounds of S threshold splits of a multi-run audit, validly.

The single "split" strategy of :func:`dpaudit.estimators.multi_run` chooses the threshold on a
seeded random half of the trials and bounds epsilon on the other half: exactly valid, but the
result depends on the luck of one split ("p-value lottery").  Here S splits (seeded, S small)
are made and their bounds combined so that the combination stays valid at ``confidence``
whatever the dependence between the splits (they reuse the same trials):

* ``combine="median"`` -- the quantile rule of Meinshausen, Meier & Buehlmann (2009), "P-values
  for high-dimensional regression", JASA 104(488), §2.2 and Theorem 3.1 with gamma = 1/2: for
  per-split p-values P_s, Q = min(1, 2 median_s P_s) is a valid p-value.  Proof (finite S, any
  dependence): by Markov's inequality P[#{s : P_s <= alpha/2} >= S/2] <= E[#{...}] / (S/2)
  <= (S alpha/2) / (S/2) = alpha.  In bound form: every split's bound is computed at
  confidence 1 - alpha/2 (the factor 2) and the reported bound is the ceil(S/2)-th largest of
  them (at least half the splits reach it).  Each split's test family "eps <= eps0" is
  monotone in eps0, so the p-value rule and the bound rule coincide;
* ``combine="bonferroni"`` -- every split's bound at confidence 1 - alpha/S, the largest
  reported (union bound over the S splits).

The median rule pays a factor 2 on alpha and gains robustness (the report is a typical split,
not the luckiest); Bonferroni pays a factor S and reports the best split.  With S = 1 both
reduce to the single split.
"""

from __future__ import annotations

import math

import numpy as np

from dpaudit.results import AuditResult
from dpaudit.validation import check_choice, check_count

__all__ = ["SPLIT_COMBINE", "per_split_confidence", "combine_splits"]

SPLIT_COMBINE = ("median", "bonferroni")


def per_split_confidence(confidence: float, combine: str, n_splits: int) -> float:
    """Confidence of each split's bound: 1 - alpha/2 (median), 1 - alpha/S (Bonferroni);
    ``confidence`` itself for S = 1."""
    how = check_choice("combine", combine, SPLIT_COMBINE)
    s_count = check_count("n_splits", n_splits, minimum=1)
    if s_count == 1:
        return confidence
    alpha = 1.0 - confidence
    return 1.0 - (alpha / 2 if how == "median" else alpha / s_count)


def combine_splits(rows: list[AuditResult], *, delta: float, confidence: float, combine: str,
                   per: float, seed: int, seeds: list[int]) -> AuditResult:
    """The reported bound of S per-split results (each at confidence ``per``): the
    ceil(S/2)-th largest (median rule) or the largest (Bonferroni); ``details`` keep every
    split's bound and chosen threshold."""
    s_count = len(rows)
    eps = np.array([r.epsilon for r in rows])
    order = np.argsort(-eps, kind="stable")
    if combine == "median" and s_count > 1:
        pick = int(order[math.ceil(s_count / 2) - 1])   # ceil(S/2)-th largest
    else:
        pick = int(order[0])
    chosen = rows[pick]
    settings = {**dict(chosen.settings), "threshold": "multi_split", "n_splits": s_count,
                "combine": combine, "per_split_confidence": per, "seed": seed,
                "split_seeds": seeds}
    details = {**dict(chosen.details), "split_epsilons": eps.tolist(),
               "split_thresholds": [r.details.get("threshold") for r in rows],
               "reported_split": pick}
    return AuditResult(epsilon=float(chosen.epsilon), delta=delta, confidence=confidence,
                       method=chosen.method, params=dict(chosen.params), p_value=None,
                       settings=settings, details=details)
