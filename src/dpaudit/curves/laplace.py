"""The Laplace trade-off function (Tight One-Run Eq. 5, TOR notes §1.4): pure epsilon-DP."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpaudit.curves.base import Curve, as_alpha
from dpaudit.validation import check_delta, check_nonnegative, check_positive

__all__ = ["LaplaceDP"]


class LaplaceDP(Curve):
    """T(Lap(0,1), Lap(eps,1)):

    f(alpha) = 1 - e^eps alpha           for alpha < e^-eps / 2,
             = e^-eps / (4 alpha)        for e^-eps / 2 <= alpha <= 1/2,
             = e^-eps (1 - alpha)        for alpha > 1/2.
    """

    symmetric = True

    def __init__(self, eps: float) -> None:
        self.eps = check_positive("eps", eps)

    @property
    def params(self) -> Mapping[str, float]:
        return {"eps": self.eps}

    def tradeoff(self, alpha: Any) -> np.ndarray:
        a = as_alpha(alpha)
        e = self.eps
        lo = math.exp(-e) / 2
        with np.errstate(divide="ignore", over="ignore"):
            mid = math.exp(-e) / (4 * np.where(a > 0, a, 1.0))
            # e^eps alpha in log space: e^eps overflows for eps > 709 (alpha < e^-eps / 2 here)
            steep = 1 - np.exp(e + np.log(a))
        return np.where(a <= lo, steep, np.where(a <= 0.5, mid, math.exp(-e) * (1 - a)))

    def delta(self, epsilon: float) -> float:
        """delta(eps) = max(0, 1 - e^{(eps - eps0)/2}) (TOR notes §2.12)."""
        epsilon = check_nonnegative("epsilon", epsilon)
        return float(max(0.0, -math.expm1(min((epsilon - self.eps) / 2, 0.0))))

    def epsilon(self, delta: float) -> float:
        """Inverse of :meth:`delta`: eps0 + 2 log(1 - delta), floored at 0."""
        delta = check_delta(delta)
        return float(max(0.0, self.eps + 2 * math.log1p(-delta)))

    def bit_error(self) -> float:
        """e* = e^{-eps/2} / 2."""
        return 0.5 * math.exp(-self.eps / 2)
