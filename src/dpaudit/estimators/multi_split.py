"""Multi-split threshold selection for the classical multi-run audit: S seeded splits of the
trials, each bounding epsilon on its own half with a threshold chosen on the other, combined
validly by the median rule or Bonferroni (:mod:`dpaudit.estimators.split_rule` states the rule
and its proof).  ``multi_run(..., threshold="multi_split")`` is the same audit with S = 10.
"""

from __future__ import annotations

from typing import Any

from dpaudit.estimators.multi_run import multi_run_splits
from dpaudit.estimators.split_rule import SPLIT_COMBINE
from dpaudit.results import AuditResult

__all__ = ["multi_split", "SPLIT_COMBINE"]


def multi_split(member: Any, score: Any, delta: float = 0.0, confidence: float = 0.95, *,
                n_splits: int = 10, combine: str = "median", split_fraction: float = 0.5,
                seed: int = 0, direction: str = "both", estimate: str = "eps_delta",
                max_thresholds: int = 1000) -> AuditResult:
    """Epsilon lower bound from S seeded splits of the trials, combined validly.

    Each split runs ``multi_run(..., threshold="split")`` with its own seed (the ``"split"``
    purpose of :mod:`dpaudit.randomness`) at the per-split confidence of the rule (median:
    1 - alpha/2; bonferroni: 1 - alpha/S).  ``details`` keep every split's bound and chosen
    threshold.
    """
    return multi_run_splits(member, score, delta, confidence, n_splits=n_splits,
                            combine=combine, split_fraction=split_fraction, seed=seed,
                            direction=direction, estimate=estimate,
                            max_thresholds=max_thresholds)
