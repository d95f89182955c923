"""Risk translation for the audit card (Beyond Worst Case): what an epsilon means for an attacker.

For one target and one guess, an (eps, delta)-DP mechanism bounds the success probability of
ANY attack whose a-priori success is p by (Beyond Worst Case Thm 3.5 at n = v = 1, BWC notes
§1.8(a))

    B(p; eps, delta) = beta(p, eps) + (1 - beta(p, eps)) delta,
    beta(p, eps) = e^eps p / (e^eps p + 1 - p)                        (Thm 3.2),

computed by :func:`dpaudit.risk.bounds.single_target_bound` (``theorem="thm3.5"``).  Two priors
are stated: reconstruction of a secret with prior success ``prior`` (e.g. 1/100 for one of
100 equally likely values), and membership inference with the balanced prior 1/2.

Reading: at the claimed epsilon, B is what the claim promises (no attack does better).  The
audit's lower bound eps_lb says the true epsilon is at least eps_lb, and B is increasing in
eps, so B(p; eps_lb, delta) is a floor on any promise an (eps, delta) analysis of this
mechanism can make: no valid (eps, delta) guarantee bounds the attacker below it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpaudit.risk.bounds import single_target_bound
from dpaudit.risk.flipping import check_prior_scalar

__all__ = ["RiskRow", "RiskTranslation", "risk_translation", "MEMBERSHIP_PRIOR"]

MEMBERSHIP_PRIOR = 0.5
_THEOREM = "thm3.5"


@dataclass(frozen=True)
class RiskRow:
    """Success bounds at one epsilon."""

    label: str
    epsilon: float
    reconstruction: float
    membership: float


@dataclass(frozen=True)
class RiskTranslation:
    """Rows for the claimed / measured (/ true) epsilon and bound-vs-prior curves."""

    prior: float
    delta: float
    theorem: str
    rows: tuple[RiskRow, ...]
    priors: np.ndarray
    curves: tuple[tuple[str, np.ndarray], ...]


def _bound(p: float | np.ndarray, eps: float, delta: float) -> float | np.ndarray:
    return single_target_bound(p, eps if math.isfinite(eps) else math.inf, delta,
                               theorem=_THEOREM)


def risk_translation(claimed: float | None, measured: float, delta: float, *,
                     prior: float = 0.01, true_epsilon: float | None = None,
                     points: int = 80) -> RiskTranslation:
    """Bounds on reconstruction (prior ``prior``) and membership (prior 1/2) success at the
    claimed epsilon, the measured lower bound and (when known) the true epsilon, plus the
    bound as a function of the prior on a log grid [1e-6, 0.5] for the plot."""
    prior = check_prior_scalar(prior, "risk prior")
    if not 0.0 < prior < 1.0:
        raise ValueError(f"risk prior must be in (0, 1), got {prior!r}")
    grid = np.geomspace(1e-6, 0.5, points)
    entries = []
    if claimed is not None:
        entries.append(("claimed", float(claimed)))
    if math.isfinite(measured):  # only a lower bound valid for the run as it happened
        entries.append(("measured lower bound", float(measured)))
    if true_epsilon is not None:
        entries.append(("true", float(true_epsilon)))
    rows = tuple(RiskRow(label, eps, float(_bound(prior, eps, delta)),
                         float(_bound(MEMBERSHIP_PRIOR, eps, delta))) for label, eps in entries)
    curves = tuple((label, np.asarray(_bound(grid, eps, delta), dtype=float))
                   for label, eps in entries)
    return RiskTranslation(prior=prior, delta=float(delta), theorem=_THEOREM, rows=rows,
                           priors=grid, curves=curves)
