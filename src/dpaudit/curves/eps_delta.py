"""(epsilon, delta)-DP as a trade-off function (Kairouz et al.; Tight One-Run §1.1, TOR notes
§1.2)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.special import expit

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
        with np.errstate(divide="ignore", over="ignore"):  # e^eps alpha in log space
            steep = 1 - d - np.exp(e + np.log(a))
        return np.maximum(0.0, np.maximum(steep, math.exp(-e) * (1 - d - a)))

    def delta(self, epsilon: float) -> float:
        """The hockey-stick profile of the piecewise-linear curve: the supremum of
        1 - e^eps alpha - f(alpha) is reached at a kink, alpha in {0, alpha*, 1 - delta0}
        with alpha* = (1 - delta0) / (1 + e^eps0)."""
        epsilon = check_nonnegative("epsilon", epsilon)
        d0, e0 = self.delta0, self.eps
        # a* and e^eps a* in log space: a* underflows for eps0 > ~745, e^eps overflows > 709
        log_a = math.log1p(-d0) - float(np.logaddexp(0.0, e0))
        a_star = math.exp(log_a)
        cands = (d0, 1 - a_star - _exp(epsilon + log_a),
                 1 - _exp(epsilon + math.log1p(-d0)))
        return float(min(1.0, max(0.0, *cands)))

    def epsilon(self, delta: float) -> float:
        """Inverse of :meth:`delta`; +inf when delta < delta0."""
        delta = check_delta(delta)
        d0, e0 = self.delta0, self.eps
        if delta < d0:
            return math.inf
        # each candidate term of delta(eps) solved for eps, then the largest one binds:
        # e2 = log t2, t2 = A (1 + e^eps0) / B - 1 (A = 1 - delta, B = 1 - delta0), in log
        # space: log(A e^eps0 + A - B) - log B = eps0 + log A + log1p((A - B) e^-eps0 / A) - log B
        big, small = 1 - delta, 1 - d0
        r = (big - small) * math.exp(-e0) / big if big > 0 else -math.inf
        e2 = e0 + math.log(big) + math.log1p(r) - math.log(small) if r > -1 else 0.0
        e3 = math.log((1 - delta) / (1 - d0)) if delta < 1 else 0.0
        return float(max(0.0, e2, e3))

    def bit_error(self) -> float:
        """e* = (1 - delta) / (1 + e^eps)."""
        return (1 - self.delta0) * float(expit(-self.eps))


def _exp(z: float) -> float:
    """e^z, inf instead of OverflowError."""
    return math.exp(z) if z < 709.0 else math.inf
