"""mu-Gaussian differential privacy (Dong, Roth, Su 2022; Tight One-Run Def. 5, TOR notes §1.4)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri

from dpaudit.curves.base import Curve, as_alpha
from dpaudit.search import solve_monotone
from dpaudit.validation import check_delta, check_nonnegative, check_positive

__all__ = ["GaussianDP", "gdp_delta", "gdp_log_delta", "gdp_epsilon"]


def gdp_log_delta(mu: float, epsilon: float | np.ndarray) -> np.ndarray | float:
    """log delta(eps) of mu-GDP, in log space (Dong et al. Cor. 2.13):

        delta(eps) = Phi(a) - e^eps Phi(b),  a = -eps/mu + mu/2,  b = -eps/mu - mu/2,
        log delta  = log Phi(a) + log(1 - exp(eps + log Phi(b) - log Phi(a))).

    Accurate for every mu and eps (no overflow of e^eps, no cancellation of two tiny terms),
    which is what makes ``GaussianDP(mu).epsilon`` work at the top of the GDP family (mu = 32,
    eps ~ 650) and beyond.  Valid for every real eps (negative eps: subsampled curves).
    """
    e = np.asarray(epsilon, dtype=float)
    la = log_ndtr(-e / mu + mu / 2)
    x = np.minimum(e + log_ndtr(-e / mu - mu / 2) - la, 0.0)
    with np.errstate(divide="ignore"):
        # log(1 - e^x) for x <= 0, accurate on both sides of -log 2
        l1m = np.where(x > -math.log(2), np.log(-np.expm1(x)), np.log1p(-np.exp(x)))
    out = np.minimum(la + l1m, 0.0)
    return out if out.ndim else float(out)


def gdp_delta(mu: float, epsilon: float | np.ndarray) -> np.ndarray | float:
    """delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Dong et al. Cor. 2.13),
    computed as exp(:func:`gdp_log_delta`).  Valid for every real eps."""
    d = np.exp(np.asarray(gdp_log_delta(mu, epsilon), dtype=float))
    return d if d.ndim else float(d)


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest eps >= 0 with delta_mu(eps) <= delta, solved in log space (0 < delta < 1).

    Bracket: eps_hi = mu^2/2 + mu z + 1 with z = Phi^{-1}(1 - delta) satisfies
    delta_mu(eps_hi) <= Phi(-z - 1/mu) <= delta, so no artificial ceiling is needed.
    """
    target = math.log(delta)
    if gdp_log_delta(mu, 0.0) <= target:
        return 0.0
    z = max(float(-ndtri(delta)), 0.0)
    hi = mu * mu / 2 + mu * z + 1.0
    if not math.isfinite(hi):  # mu > ~1e154: eps is beyond the float range
        return math.inf
    return solve_monotone(lambda e: float(gdp_log_delta(mu, e)), target, 0.0, hi, xtol=1e-12,
                          max_hi=1e300)


class GaussianDP(Curve):
    """G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu) = T(N(0,1), N(mu,1)).

    The Gaussian mechanism with sensitivity 1 and noise sigma is (1/sigma)-GDP.
    """

    symmetric = True

    def __init__(self, mu: float) -> None:
        self.mu = check_positive("mu", mu)

    @property
    def params(self) -> Mapping[str, float]:
        return {"mu": self.mu}

    def tradeoff(self, alpha: Any) -> np.ndarray:
        a = as_alpha(alpha)
        # Phi^{-1}(1 - a) = -Phi^{-1}(a) avoids cancellation for tiny alpha.
        return ndtr(-ndtri(a) - self.mu)

    def power(self, alpha: Any) -> np.ndarray:
        a = as_alpha(alpha)
        return ndtr(ndtri(a) + self.mu)

    def delta(self, epsilon: float) -> float:
        return float(gdp_delta(self.mu, check_nonnegative("epsilon", epsilon)))

    def epsilon(self, delta: float) -> float:
        delta = check_delta(delta)
        if self.delta(0.0) <= delta:
            return 0.0
        if delta == 0.0:
            return math.inf
        return gdp_epsilon(self.mu, delta)

    def bit_error(self) -> float:
        """e* = Phi(-mu/2)."""
        return float(ndtr(-self.mu / 2))
