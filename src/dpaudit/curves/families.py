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

Which family is valid (DESIGN.md; Tight One-Run, Theorem 1).  A family is a null hypothesis, not a
fit.  Rejecting the member theta proves "the mechanism is not f_theta-DP"; a verdict "violates
the claim" is valid only when every mechanism meeting the claim as stated is f_theta-DP for
every rejected theta above the claim, i.e. when those members are dominated by the claim.

* An (eps, delta) claim: the default family ``"eps_delta"`` at the claim's delta.  f_{eps,delta}
  is the trade-off function of (eps, delta)-DP itself (Kairouz et al.; Dong, Roth, Su 2022),
  so every (eps, delta)-DP mechanism is f_{eps,delta}-DP whatever its shape, and the member at
  the claimed eps is the claim.  This is the null under which Tight One-Run (Xiang et al., *Tight
  Privacy Audit in One Run*, §6.2, Fig. 7) is tight for (eps, delta)-DP mechanisms.
* A claim stated as a curve (mu-GDP, a Laplace curve, a DP-SGD curve from the accountant): that
  curve's own family, monotone so that every member at or above the claim is dominated by it
  (:func:`claim_family`; the DP-SGD family is :func:`dpaudit.curves.accounting.dpsgd_family`).
* Any other family on a user's scores is an assumption about the mechanism's shape:
  :attr:`Family.assumption` says which (e.g. "the mechanism is μ-GDP"), every estimator copies
  it into :attr:`dpaudit.results.AuditResult.assumption`, and the verdict and the report say
  "assuming ...".  A mechanism that meets an (eps, delta) claim need not be mu-GDP for the mu
  of the same eps(delta): for pure-DP mechanisms (randomized response, Laplace) the GDP
  null's verdict at eps = 1 reports eps >= 4 to 5.

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

import dataclasses
import functools
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

__all__ = ["Family", "resolve_family", "claim_family", "is_eps_delta", "FAMILY_NAMES",
           "DEFAULT_FAMILY", "GDP_ASSUMPTION"]

FAMILY_NAMES = ("gdp", "laplace", "eps_delta", "subsampled_gaussian")
#: the default null of every f-DP estimator and entry point on users' scores: valid for every
#: mechanism meeting an (eps, delta) claim at the estimator's delta (module docstring).
DEFAULT_FAMILY = "eps_delta"
#: what the GDP null assumes when the claim is stated as (eps, delta).
GDP_ASSUMPTION = "the mechanism is μ-GDP"


@dataclass(frozen=True)
class Family:
    """theta -> Curve, monotone (theta up = less private), searched on [lo, hi].

    ``assumption``: None when a rejection is valid for every mechanism meeting the claim the
    family stands for ("eps_delta": an (eps, delta) claim; :func:`claim_family`: the claimed
    curve); otherwise the clause a verdict is conditioned on ("the mechanism is μ-GDP")."""

    name: str
    build: Callable[[float], Curve]
    lo: float
    hi: float
    param_name: str = "theta"
    assumption: str | None = None

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
            return Family("gdp", GaussianDP, 0.01, 32.0, "mu", GDP_ASSUMPTION)
        if key == "laplace":
            return Family("laplace", LaplaceDP, 0.001, 60.0, "eps",
                          "the mechanism's trade-off curve is a Laplace curve")
        if key in ("eps_delta", "epsdelta", "approx_dp"):
            # a partial (not a lambda): picklable for worker processes, and recognisable by
            # the estimators' closed forms (f_{eps,delta} is piecewise linear)
            return Family(f"eps_delta(delta={delta:g})",
                          functools.partial(EpsDeltaDP, delta=delta), 0.0, 60.0, "eps")
        if key in ("subsampled_gaussian", "sgm"):
            raise ValueError("family 'subsampled_gaussian' needs a sampling rate: pass "
                             "('subsampled_gaussian', q) with q in (0, 1]")
    if isinstance(family, (tuple, list)) and len(family) == 2 and isinstance(family[0], str):
        key = family[0].lower().replace("-", "_")
        if key in ("subsampled_gaussian", "sgm"):
            q = check_probability("family: q (subsampled_gaussian sampling rate)",
                                  family[1], open_low=True)
            return Family(f"subsampled_gaussian(q={q:g})",
                          functools.partial(SubsampledGaussianDP, q=q), 0.01, 32.0, "mu",
                          f"the mechanism's trade-off curve is a subsampled Gaussian at "
                          f"q = {q:g}")
    if callable(family):
        label = getattr(family, "__name__", "callable")
        return Family(f"callable:{label}", family, 0.001, 60.0, "theta",
                      f"the mechanism's trade-off curve is in the family callable:{label}")
    raise ValueError(
        f"family must be one of 'gdp', 'laplace', 'eps_delta', ('subsampled_gaussian', q), "
        f"a Family, or a callable theta -> Curve; got {family!r}")


def is_eps_delta(fam: Family) -> float | None:
    """The null delta when ``fam`` is the (eps, delta) family of :func:`resolve_family`
    (theta = eps, members EpsDeltaDP(theta, delta)), else None."""
    b = fam.build
    if isinstance(b, functools.partial) and b.func is EpsDeltaDP and not b.args \
            and set(b.keywords) == {"delta"}:
        return float(b.keywords["delta"])
    return None


def claim_family(family: Any, delta: float = 0.0) -> Family:
    """``family`` resolved as the family of a claim stated as one of its curves.

    For an entry point whose claim IS a curve of the family (``dpaudit simulate``: the
    simulated mechanism's claimed curve; ``train-audit``: the DP-SGD curve), a rejected member
    above the claim is dominated by the claimed curve (the named families are monotone: larger
    theta = pointwise smaller trade-off function), so the verdict is valid without an
    assumption: the returned Family has ``assumption = None``.  On a user's own scores with an
    (eps, delta) claim use :func:`resolve_family`, which keeps the assumption.
    """
    return dataclasses.replace(resolve_family(family, delta), assumption=None)
