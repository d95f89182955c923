"""What a zoo audit could have detected: the power behind a "no violation found" row.

A zoo entry's final audit is the Clopper-Pearson bound of the (epsilon, delta) privacy region
at one threshold fixed in advance (:mod:`dpaudit.zoo.audit`; Hypothesis Interpretation,
Eqs. 13-16).  With n runs on each data set (the final audit draws a secret bit per trial, so
about half of its trials run on each side: :func:`dpaudit.zoo.audit.audit_entry` passes
n = trials // 2) and confidence c, two violations of an (epsilon, delta) claim are the
extreme shapes a bug takes, and each has a smallest size the audit detects:

* **an output set of mass p under one data set and 0 under the other** (a precision or
  control-flow leak: ``P0(S) - e^eps P1(S) = p > delta`` breaks the claim for every eps).
  At its expected counts (round(p n) hits, 0 false hits) the bound is
  ``log((CP_lo(p) - delta) / CP_hi(0))``; :func:`detectable_mass` is the smallest p for which
  it exceeds the claim.
* **randomized response at epsilon' > epsilon** (the privacy loss concentrated on one output
  set: P(S) = e^eps' / (1 + e^eps') vs 1 / (1 + e^eps'), the easiest epsilon' to detect of
  all eps'-DP mechanisms, Kairouz, Oh and Viswanath 2015, Theorem 2.1);
  :func:`detectable_epsilon` is the smallest epsilon' whose bound at its expected counts
  exceeds the claim.

Both are "detected at the expected counts", i.e. in about half of the audits of such a bug;
a bug whose loss is spread over many outputs (Laplace-shaped) needs more.  They depend only
on (n, confidence, claim), never on the observed outputs, so a "no violation found" row can
state them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.curves.zcdp import zcdp_rho_bound
from dpaudit.estimators.multi_run import epsilon_from_rates
from dpaudit.search import largest_rejected
from dpaudit.stats.binomial import clopper_pearson
from dpaudit.validation import (
    check_choice,
    check_confidence,
    check_count,
    check_delta,
    check_nonnegative,
)

__all__ = ["Power", "box_bound", "bound_at_counts", "detectable_mass", "detectable_epsilon",
           "power"]

_EPS_CEILING = 40.0
CURRENCIES = ("epsilon", "rho")


def _check(trials: Any, confidence: Any, epsilon: Any, delta: Any, currency: Any
           ) -> tuple[int, float, float, float]:
    check_choice("currency", currency, CURRENCIES)
    return (check_count("trials", trials, minimum=1), check_confidence(confidence),
            check_nonnegative("epsilon", epsilon), check_delta(delta))


def box_bound(tp: Any, n1: int, fp: Any, n0: int, *, delta: float, confidence: float,
              currency: str = "epsilon") -> np.ndarray:
    """The bound of the Clopper-Pearson box of (FPR, TPR) at one threshold, each rate's
    interval at 1 - (1 - confidence) / 2 (as :func:`dpaudit.estimators.multi_run`): epsilon
    (Hypothesis Interpretation Eqs. 13-16) or rho (:func:`zcdp_rho_bound`)."""
    fail = 1 - confidence
    tpr_lo, tpr_hi = clopper_pearson(tp, n1, 1 - fail / 2, "two-sided")
    fpr_lo, fpr_hi = clopper_pearson(fp, n0, 1 - fail / 2, "two-sided")
    if currency == "rho":
        return zcdp_rho_bound(tpr_lo, tpr_hi, fpr_lo, fpr_hi)
    return epsilon_from_rates(tpr_lo, tpr_hi, fpr_lo, fpr_hi, delta=delta)


def bound_at_counts(hits: int, trials: int, false_hits: int, *, delta: float,
                    confidence: float, currency: str = "epsilon") -> float:
    """The zoo's final bound for ``hits`` of ``trials`` runs on D1 and ``false_hits`` of
    ``trials`` on D0 in the output set (:func:`box_bound`)."""
    return float(box_bound(hits, trials, false_hits, trials, delta=delta,
                           confidence=confidence, currency=currency))


def detectable_mass(trials: int, confidence: float, epsilon: float, delta: float,
                    currency: str = "epsilon") -> float:
    """Smallest p (a multiple of 1 / trials) such that round(p n) hits against 0 false hits
    put the bound above ``epsilon``; ``inf`` when even p = 1 does not."""
    n, confidence, epsilon, delta = _check(trials, confidence, epsilon, delta, currency)
    if bound_at_counts(n, n, 0, delta=delta, confidence=confidence,
                       currency=currency) <= epsilon:
        return math.inf
    lo, hi = 0, n  # invariant: lo hits do not detect, hi hits do
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if bound_at_counts(mid, n, 0, delta=delta, confidence=confidence,
                           currency=currency) > epsilon:
            hi = mid
        else:
            lo = mid
    return hi / n


def detectable_epsilon(trials: int, confidence: float, epsilon: float, delta: float,
                       currency: str = "epsilon") -> float:
    """Smallest epsilon' (to 0.01) such that randomized response at epsilon', at its expected
    counts, puts the bound above ``epsilon``; ``inf`` above 40."""
    n, confidence, epsilon, delta = _check(trials, confidence, epsilon, delta, currency)

    def undetected(e: float) -> bool:
        p = 1.0 / (1.0 + math.exp(-e))
        hits, false_hits = round(p * n), round((1.0 - p) * n)
        return bound_at_counts(hits, n, false_hits, delta=delta, confidence=confidence,
                               currency=currency) <= epsilon

    if undetected(_EPS_CEILING):
        return math.inf
    res = largest_rejected(undetected, epsilon, _EPS_CEILING, tol=0.01)
    return res.theta + 0.01


@dataclass(frozen=True)
class Power:
    """The two detectable sizes of a row (module docstring)."""

    mass: float
    epsilon: float

    def describe(self) -> str:
        m = "never" if math.isinf(self.mass) else f"mass >= {self.mass:.3g}"
        e = "never" if math.isinf(self.epsilon) else f"RR eps' >= {self.epsilon:.3g}"
        return f"{m}; {e}"


def power(trials: int, confidence: float, epsilon: float, delta: float,
          currency: str = "epsilon") -> Power:
    """Both detectable sizes for one row's (trials, confidence, tested claim); for a rho-zCDP
    claim (``currency="rho"``) ``epsilon`` is the tested rho and the bound is on rho."""
    return Power(detectable_mass(trials, confidence, epsilon, delta, currency),
                 detectable_epsilon(trials, confidence, epsilon, delta, currency))
