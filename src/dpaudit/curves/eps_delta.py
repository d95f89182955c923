"""(epsilon, delta)-DP as a trade-off function (Kairouz et al.; Tight One-Run §1.1, TOR notes
§1.2)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpaudit.curves.base import Curve, as_alpha
from dpaudit.validation import check_delta, check_nonnegative

__all__ = ["EpsDeltaDP"]


class EpsDeltaDP(Curve):
    """f_{eps,delta}(alpha) = max{0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha)}."""

    symmetric = True

    def __init__(self, eps: float, delta: float = 0.0) -> None:
        self.eps = check_nonnegative("eps", eps)
        self.delta0 = check_delta(delta)

    @property
    def params(self) -> Mapping[str, float]:
        return {"eps": self.eps, "delta": self.delta0}

    def tradeoff(self, alpha: Any) -> np.ndarray:
        a = as_alpha(alpha)
        e, d = self.eps, self.delta0
        return np.maximum(0.0, np.maximum(1 - d - math.exp(e) * a, math.exp(-e) * (1 - d - a)))

    def delta(self, epsilon: float) -> float:
        """The hockey-stick profile of the piecewise-linear curve: the supremum of
        1 - e^eps alpha - f(alpha) is reached at a kink, alpha in {0, alpha*, 1 - delta0}
        with alpha* = (1 - delta0) / (1 + e^eps0)."""
        epsilon = check_nonnegative("epsilon", epsilon)
        d0, e0 = self.delta0, self.eps
        a_star = (1 - d0) / (1 + math.exp(e0))
        cands = (d0, 1 - (1 + math.exp(epsilon)) * a_star, 1 - math.exp(epsilon) * (1 - d0))
        return float(min(1.0, max(0.0, *cands)))

    def epsilon(self, delta: float) -> float:
        """Inverse of :meth:`delta`; +inf when delta < delta0."""
        delta = check_delta(delta)
        d0, e0 = self.delta0, self.eps
        if delta < d0:
            return math.inf
        # each candidate term of delta(eps) solved for eps, then the largest one binds.
        t2 = (1 - delta) * (1 + math.exp(e0)) / (1 - d0) - 1
        e2 = math.log(t2) if t2 > 0 else 0.0
        e3 = math.log((1 - delta) / (1 - d0)) if delta < 1 else 0.0
        return float(max(0.0, e2, e3))

    def bit_error(self) -> float:
        """e* = (1 - delta) / (1 + e^eps)."""
        return (1 - self.delta0) / (1 + math.exp(self.eps))
