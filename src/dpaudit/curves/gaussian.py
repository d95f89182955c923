"""mu-Gaussian differential privacy (Dong, Roth, Su 2022; seed 001 Def. 5, spec/001 §1.4)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri

from dpaudit.curves.base import EPSILON_CEILING, Curve, as_alpha
from dpaudit.search import solve_monotone
from dpaudit.validation import check_delta, check_nonnegative, check_positive

__all__ = ["GaussianDP", "gdp_delta"]


def gdp_delta(mu: float, epsilon: float | np.ndarray) -> np.ndarray | float:
    """delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Dong et al. Cor. 2.13).

    The second term is evaluated as exp(eps + log Phi(.)) so it stays accurate for large eps.
    Valid for every real eps (negative eps is used by subsampled curves).
    """
    e = np.asarray(epsilon, dtype=float)
    d = ndtr(-e / mu + mu / 2) - np.exp(e + log_ndtr(-e / mu - mu / 2))
    d = np.clip(d, 0.0, 1.0)
    return d if d.ndim else float(d)


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
        return solve_monotone(lambda e: gdp_delta(self.mu, e), delta, 0.0, 4 * self.mu + 10,
                              xtol=1e-12, max_hi=EPSILON_CEILING)

    def bit_error(self) -> float:
        """e* = Phi(-mu/2)."""
        return float(ndtr(-self.mu / 2))
