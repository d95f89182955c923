"""The curator's inverse question: the largest epsilon that keeps attack risk below a limit.

Two questions, both answered on the bounds of Swanberg et al., "Beyond the Worst Case":

* :func:`largest_epsilon_for_attacked` -- the largest epsilon (at the given delta and
  confidence) with v_UB(epsilon) <= K: with probability >= confidence at most K of the n
  targets are attacked successfully (Thm 3.5 over n targets, v_UB = min{v : B(v + 1) <= 1 - c},
  computed by :func:`dpaudit.risk.bounds.thm35_v_ub`, equal to ``dpaudit risk``'s v_UB);
* :func:`largest_epsilon_for_success` -- the largest epsilon with per-target success bound
  max_i beta(p_i, eps) + (1 - beta) delta <= s (Thm 3.5 at n = 1, the command's "success
  bound").  In closed form eps* = logit((s - delta)/(1 - delta)) - logit(max_i p_i); the
  search below is checked against it in the tests.

Both measures are non-decreasing in epsilon (beta(p, eps) = sigmoid(eps + logit p) increases,
and the Poisson-binomial tail of Thm 3.5 with it); the answer is found by the library's one
monotone search, :func:`dpaudit.search.largest_rejected`, on the predicate
"measure(eps) <= limit", then *rounded down* to ``digits`` decimals and verified: the printed
epsilon meets the limit (the bound evaluated there) and the next printed value, one unit in
the last digit above, does not.  So the printed answer is exact to its printed digits.  When
no epsilon >= one unit in the last digit meets the limit (the prior alone already exceeds it)
a ValueError says so, with the measure at epsilon = 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dpaudit.risk.bounds import single_target_bound, thm35_v_ub
from dpaudit.risk.flipping import check_prior_array
from dpaudit.search import largest_rejected
from dpaudit.validation import (
    check_confidence,
    check_count,
    check_delta,
    check_positive,
    check_probability,
)

__all__ = ["InverseAnswer", "largest_epsilon_for_attacked", "largest_epsilon_for_success",
           "EPSILON_CEILING"]

#: the search looks no further than this epsilon (every bound is trivial long before).
EPSILON_CEILING = 1024.0


@dataclass(frozen=True)
class InverseAnswer:
    """The answer to "largest epsilon with measure <= limit", exact to ``digits`` decimals.

    Attributes:
      question: "max_attacked" (measure = v_UB at ``confidence``) or "max_success" (the
        per-target success bound).
      limit: K or s.
      epsilon: the answer, a multiple of 10^-digits; measure(epsilon) <= limit.
      epsilon_above: epsilon + 10^-digits, where measure > limit.
      value: measure(epsilon); value_above: measure(epsilon_above).
      baseline: measure at epsilon = 0 (what the prior alone allows).
      delta, confidence (None for max_success), targets, digits: the settings.
    """

    question: str
    limit: float
    epsilon: float
    epsilon_above: float
    value: float
    value_above: float
    baseline: float
    delta: float
    confidence: float | None
    targets: int
    digits: int

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "limit": self.limit, "epsilon": self.epsilon,
                "epsilon_above": self.epsilon_above, "value": self.value,
                "value_above": self.value_above, "baseline": self.baseline,
                "delta": self.delta, "confidence": self.confidence, "targets": self.targets,
                "digits": self.digits}

    def sentence(self) -> str:
        """The answer in words."""
        if self.question == "max_attacked":
            c = 100 * (self.confidence or 0.0)
            return (f"The largest epsilon at which, with {c:g}% "
                    f"confidence, at most {int(self.limit):,} of the {self.targets:,} people "
                    f"can be attacked successfully is {self.epsilon:.{self.digits}f} "
                    f"(delta = {self.delta:g}); at {self.epsilon_above:.{self.digits}f} the "
                    f"bound allows {int(self.value_above):,}.")
        return (f"The largest epsilon at which no attack on any one person succeeds with "
                f"probability above {self.limit:g} is {self.epsilon:.{self.digits}f} "
                f"(delta = {self.delta:g}); at {self.epsilon_above:.{self.digits}f} the bound "
                f"is {self.value_above:.6g}.")


def _answer(question: str, measure: Callable[[float], float], limit: float, what: str,
            digits: int, **settings: Any) -> InverseAnswer:
    digits = check_count("digits", digits, minimum=0)
    if digits > 10:
        raise ValueError(f"digits must be at most 10, got {digits}")
    unit = 10.0 ** -digits

    def ok(eps: float) -> bool:
        return measure(eps) <= limit

    baseline = measure(0.0)
    hi = 8.0
    while ok(hi) and hi < EPSILON_CEILING:
        hi *= 4
    res = largest_rejected(ok, 0.0, hi, tol=unit * 1e-3)
    if res.hit_ceiling:
        raise ValueError(f"{what}: every epsilon up to {EPSILON_CEILING:g} meets {limit:g}; "
                         f"the bound never exceeds it")
    k = math.floor(res.theta / unit + 1e-9) if not res.nothing_rejected else 0
    while ok((k + 1) * unit):          # the search's tolerance sits below one printed unit
        k += 1
    while k > 0 and not ok(k * unit):  # never print an epsilon that misses the limit
        k -= 1
    if k == 0:
        raise ValueError(
            f"{what}: no epsilon > 0 (to {digits} decimals) meets {limit:g}; the prior alone "
            f"(epsilon = 0) already gives {baseline:.6g}" + (
                f" and epsilon = {unit:g} gives {measure(unit):.6g}" if baseline <= limit
                else ""))
    eps, above = round(k * unit, digits), round((k + 1) * unit, digits)
    return InverseAnswer(question, float(limit), eps, above, float(measure(eps)),
                         float(measure(above)), float(baseline), digits=digits, **settings)


def largest_epsilon_for_attacked(priors: Any, delta: float, max_attacked: int, *,
                                 confidence: float = 0.95, delta_multiplier: float = 1.0,
                                 digits: int = 4) -> InverseAnswer:
    """Largest epsilon with v_UB(epsilon) <= ``max_attacked`` of n = len(priors) targets."""
    p = check_prior_array(priors, "priors")
    n = int(p.size)
    k = check_count("max_attacked", max_attacked, minimum=0)
    if k >= n:
        raise ValueError(f"max_attacked must be below the number of targets ({n}), got {k}: "
                         f"at most n people can be attacked at any epsilon")
    d = check_delta(delta)
    c = check_confidence(confidence)
    m = check_positive("delta_multiplier", delta_multiplier)
    return _answer("max_attacked",
                   lambda e: float(thm35_v_ub(p, e, d, c, delta_multiplier=m)), k,
                   "max_attacked", digits, delta=d, confidence=c, targets=n)


def largest_epsilon_for_success(priors: Any, delta: float, max_success: float, *,
                                digits: int = 4) -> InverseAnswer:
    """Largest epsilon with per-target success bound max_i beta + (1 - beta) delta <= s."""
    p = check_prior_array(priors, "priors")
    s = check_probability("max_success", max_success, open_low=True, open_high=True)
    d = check_delta(delta)
    top = float(p.max())
    return _answer("max_success",
                   lambda e: float(single_target_bound(top, e, d, theorem="thm3.5")), s,
                   "max_success", digits, delta=d, confidence=None,
                   targets=int(p.size))
