"""One-parameter families of curves: the null hypotheses of every lower-bound search.

A family maps a parameter theta to a Curve, monotone in theta (larger theta = less private),
with a search range [lo, hi].  Estimators accept ``family`` as

* ``"gdp"``                 theta = mu           (GaussianDP(mu)),        range [0.01, 32]
* ``"laplace"``             theta = eps          (LaplaceDP(eps)),        range [0.001, 60]
* ``"eps_delta"``           theta = eps          (EpsDeltaDP(eps, delta), delta = estimator's),
                                                                          range [0, 60]
* ``("subsampled_gaussian", q)``  theta = mu     (SubsampledGaussianDP(mu, q)), range [0.01, 32]
* a callable ``theta -> Curve`` (monotone in theta), range [0.001, 60] unless a
  :class:`Family` with its own range is given.

Ranges follow TOR notes §2.11.

The one rule at the top of a range (every estimator, every family): when the search rejects even
the family's largest member theta_hi, the estimator reports ``epsilon = Family.epsilon(theta_hi,
delta)`` -- the epsilon of the ceiling member, a valid lower bound (the null theta_hi itself was
rejected, and every smaller theta is more private) -- with ``details["hit_ceiling"] = True``; the
CLI prints it as "at the family's ceiling".  It is never a made-up number, never +inf and never an
error: the closed-form conversions (GaussianDP, SubsampledGaussianDP in log space; LaplaceDP,
EpsDeltaDP exactly) are finite at every theta of the four named families' ranges, e.g.
GaussianDP(32).epsilon(1e-5) = 647.54.  The evidence may support more than the ceiling; a larger
range is a :class:`Family` with another ``hi``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpaudit.curves.base import Curve
from dpaudit.curves.eps_delta import EpsDeltaDP
from dpaudit.curves.gaussian import GaussianDP
from dpaudit.curves.laplace import LaplaceDP
from dpaudit.curves.subsampled import SubsampledGaussianDP
from dpaudit.validation import check_delta, check_probability

__all__ = ["Family", "resolve_family", "FAMILY_NAMES"]

FAMILY_NAMES = ("gdp", "laplace", "eps_delta", "subsampled_gaussian")


@dataclass(frozen=True)
class Family:
    """theta -> Curve, monotone (theta up = less private), searched on [lo, hi]."""

    name: str
    build: Callable[[float], Curve]
    lo: float
    hi: float
    param_name: str = "theta"

    def curve(self, theta: float) -> Curve:
        return self.build(theta)

    def epsilon(self, theta: float, delta: float) -> float:
        """epsilon at ``delta`` of the family member theta (Algorithm 2 of Tight One-Run).

        A family whose members state no finite epsilon at ``delta`` (GDP or the subsampled
        Gaussian at delta = 0) cannot turn a rejection into an epsilon bound: +inf would claim
        that no epsilon-DP guarantee holds, which the data do not show (a pure-DP Laplace
        mechanism would "violate" every claim).  That is a ValueError, not a number."""
        eps = self.curve(theta).epsilon(delta)
        if math.isinf(eps) and theta > 0:
            raise ValueError(f"delta = {delta:g}: the {self.name} family states no finite "
                             f"epsilon at this delta ({self.param_name} = {theta:g} -> inf); "
                             "use delta > 0, or family 'laplace' or 'eps_delta' for pure DP")
        return eps

    def ceiling_epsilon(self, delta: float) -> float:
        """epsilon of the top member theta_hi: the bound reported when a search hits the
        ceiling (see the module docstring)."""
        return self.epsilon(self.hi, delta)

    def describe(self) -> str:
        return self.name


def resolve_family(family: Any, delta: float = 0.0) -> Family:
    """Turn the user-facing ``family`` argument into a :class:`Family`.

    ``delta`` is the delta of the null curve for the "eps_delta" family.
    """
    delta = check_delta(delta)  # validated whatever the family (only eps_delta uses it)
    if isinstance(family, Family):
        return family
    if isinstance(family, str):
        key = family.lower().replace("-", "_")
        if key in ("gdp", "gaussian"):
            return Family("gdp", GaussianDP, 0.01, 32.0, "mu")
        if key == "laplace":
            return Family("laplace", LaplaceDP, 0.001, 60.0, "eps")
        if key in ("eps_delta", "epsdelta", "approx_dp"):
            d = check_delta(delta)
            return Family(f"eps_delta(delta={d:g})", lambda e: EpsDeltaDP(e, d), 0.0, 60.0,
                          "eps")
        if key in ("subsampled_gaussian", "sgm"):
            raise ValueError("family 'subsampled_gaussian' needs a sampling rate: pass "
                             "('subsampled_gaussian', q) with q in (0, 1]")
    if isinstance(family, (tuple, list)) and len(family) == 2 and isinstance(family[0], str):
        key = family[0].lower().replace("-", "_")
        if key in ("subsampled_gaussian", "sgm"):
            q = check_probability("family: q (subsampled_gaussian sampling rate)",
                                  family[1], open_low=True)
            return Family(f"subsampled_gaussian(q={q:g})",
                          lambda mu: SubsampledGaussianDP(mu, q), 0.01, 32.0, "mu")
    if callable(family):
        label = getattr(family, "__name__", "callable")
        return Family(f"callable:{label}", family, 0.001, 60.0, "theta")
    raise ValueError(
        f"family must be one of 'gdp', 'laplace', 'eps_delta', ('subsampled_gaussian', q), "
        f"a Family, or a callable theta -> Curve; got {family!r}")
