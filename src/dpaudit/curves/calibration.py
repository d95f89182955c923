"""Noise calibration: the noise that meets a target (epsilon, delta), the one implementation.

* :func:`gdp_mu` -- the mu of the Gaussian mechanism (mu-GDP) that is exactly
  (epsilon, delta)-DP: the closed-form privacy profile of Dong, Roth and Su, "Gaussian
  differential privacy" (JRSS B 2022), Cor. 2.13,
  delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), inverted in mu.  A Gaussian
  mechanism of L2 sensitivity Delta and noise std sigma is (Delta / sigma)-GDP, so
  sigma = Delta / gdp_mu(epsilon, delta).
* :func:`dpsgd_noise_multiplier` -- the noise multiplier sigma of DP-SGD (``steps``
  Poisson-subsampled Gaussian steps at ``sampling_rate``, add/remove adjacency) whose
  dp_accounting PLD accountant (:func:`dpaudit.curves.dpsgd_curve`) gives epsilon at delta.
  ``sampling_rate=1, steps=1`` is the Gaussian mechanism under the PLD accountant.

Both are roots of a monotone function found by the shared solver
(:func:`dpaudit.search.solve_monotone`, Brent's method).
"""

from __future__ import annotations

import math

from dpaudit.curves.accounting import dpsgd_curve
from dpaudit.curves.gaussian import gdp_delta
from dpaudit.search import solve_monotone
from dpaudit.validation import (
    check_count,
    check_delta,
    check_nonnegative,
    check_positive,
    check_probability,
)

__all__ = ["gdp_mu", "dpsgd_noise_multiplier"]


def gdp_mu(epsilon: float, delta: float) -> float:
    """The mu such that mu-GDP has delta(eps) = delta exactly (Dong-Roth-Su Cor. 2.13 inverted
    with the shared monotone solver).  E.g. (1, 1e-5) -> 0.26805."""
    try:
        e = check_nonnegative("epsilon", epsilon)
    except ValueError:
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}") from None
    d = check_delta(delta)
    if d == 0:
        raise ValueError("delta must be > 0 for a Gaussian guarantee (mu-GDP is never pure DP)")
    return solve_monotone(lambda mu: float(gdp_delta(mu, e)), d, 1e-8, 8.0 + 2.0 * e,
                          xtol=1e-13, max_hi=1e4)


def dpsgd_noise_multiplier(epsilon: float, delta: float, sampling_rate: float = 1.0,
                           steps: int = 1, *, xtol: float = 1e-5, rtol: float = 1e-6,
                           value_discretization_interval: float = 1e-3) -> float:
    """sigma with ``dpsgd_curve(sigma, q, T, value_discretization_interval).epsilon(delta)
    = epsilon``, by Brent's method in log sigma.

    The bracket starts at the Gaussian mechanism's closed form s0 = 1 / gdp_mu(epsilon, delta)
    scaled by q sqrt(T) (the central-limit rate of composed subsampled Gaussians), widened
    until it brackets the root; its lower end is raised while dp_accounting refuses the
    composition (GDP mu beyond ``MAX_COMPOSED_MU``).  The coarse PLD grid (1e-3) is
    pessimistic, so the returned sigma is never too small for the claim; recompute the claim
    of the chosen sigma with the default grid.
    """
    eps = check_positive("epsilon", epsilon)
    d = check_delta(delta)
    if d == 0:
        raise ValueError("delta must be > 0 for the Gaussian mechanism, got 0")
    q = check_probability("sampling_rate", sampling_rate, open_low=True)
    t = check_count("steps", steps, minimum=1)
    s0 = 1.0 / gdp_mu(eps, d)
    guess = s0 * (q * math.sqrt(t) if (q, t) != (1.0, 1) else 1.0)

    def neg_eps(log_s: float) -> float:  # decreasing in sigma: solve -eps(sigma) = -epsilon
        return -dpsgd_curve(math.exp(log_s), q, t,
                            value_discretization_interval=value_discretization_interval
                            ).epsilon(d)

    lo, hi = math.log(0.97 * guess), math.log(1.1 * guess)
    refused = False
    for _ in range(200):  # the lower end: a composition dp_accounting accepts, below the root
        try:
            if neg_eps(lo) <= -eps:
                break
        except ValueError:  # sigma too small for the accountant: move up
            refused = True
            lo += math.log(1.25)
            continue
        if refused:
            raise ValueError(f"epsilon = {eps!r} needs a noise multiplier below what the "
                             "accountant composes")
        lo -= math.log(2.0)
    hi = max(hi, lo + math.log(1.1 / 0.97))
    while neg_eps(hi) < -eps:
        lo, hi = hi, hi + math.log(2.0)
    return math.exp(solve_monotone(neg_eps, -eps, lo, hi, xtol=xtol, rtol=rtol,
                                   expand=False))
