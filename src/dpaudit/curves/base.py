"""The Curve abstraction: a privacy guarantee as an f-DP trade-off function.

A trade-off function f = T(P, Q) maps a type-I error alpha to the smallest achievable
type-II error (Tight One-Run §2, Defs. 2 and 4; TOR notes §1.2).  Every curve offers

* ``tradeoff(alpha)``  -- vectorised f(alpha);
* ``delta(epsilon)``   -- the privacy profile delta_f(eps) = sup_alpha [1 - e^eps alpha - f(alpha)]
  (Algorithm 2 of Tight One-Run, TOR notes §2.12), maximised over both orders of the pair for
  asymmetric curves;
* ``epsilon(delta)``   -- inf{eps >= 0 : delta_f(eps) <= delta};
* ``bit_error()``      -- e*(f) = min_alpha (alpha + f(alpha)) / 2 = (1 - TV) / 2
  = (1 - delta_f(0)) / 2,
  the optimal error of a single uniformly-random bit sent through the channel (Lemma 2 / B.1
  of Tight One-Run; TOR notes §1.5).

Subclasses override the conversions with closed forms where they exist; the generic numeric
versions below are the single implementation used everywhere else (and are checked against
every closed form in the tests).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpaudit.search import solve_monotone
from dpaudit.validation import check_delta, check_nonnegative

__all__ = ["Curve", "LabelledCurve", "numeric_delta", "numeric_epsilon", "EPSILON_CEILING"]

#: epsilons above this are reported as +inf by the numeric conversion.
EPSILON_CEILING = 500.0

_LOG_ALPHA_GRID = np.linspace(math.log(1e-60), 0.0, 1201)


def _profile_objective(curve: Curve, eps: float, log_alpha: np.ndarray) -> np.ndarray:
    """max over the two orders of 1 - e^eps alpha - f(alpha) and 1 - alpha - e^eps f(alpha)."""
    alpha = np.exp(log_alpha)
    f = curve.tradeoff(alpha)
    power = curve.power(alpha)
    a = power - math.exp(eps) * alpha
    if curve.symmetric:
        return a
    b = (1.0 - alpha) - math.exp(eps) * f
    return np.maximum(a, b)


def numeric_delta(curve: Curve, epsilon: float) -> float:
    """delta_f(eps) by direct maximisation of the hockey-stick objective over alpha.

    The objective is concave in alpha (f is convex), hence unimodal: a log grid over
    [1e-60, 1] brackets the maximiser and a golden-section search in alpha (not log alpha, so
    the bracket shrinks to machine precision even at the kinks of piecewise-linear curves)
    refines it.
    """
    eps = float(epsilon)
    vals = _profile_objective(curve, eps, _LOG_ALPHA_GRID)
    i = int(np.argmax(vals))
    best = float(vals[i])
    a = math.exp(_LOG_ALPHA_GRID[i - 1]) if i > 0 else 0.0
    b = math.exp(_LOG_ALPHA_GRID[min(i + 1, len(_LOG_ALPHA_GRID) - 1)])
    # Zoom: 65 equispaced points per round, keep the two neighbours of the best one (the
    # maximiser of a concave function lies between them); each round shrinks by 32x.
    for _ in range(12):
        if b - a <= 1e-16 * max(b, 1e-300):
            break
        x = np.linspace(a, b, 65)
        with np.errstate(divide="ignore"):
            v = _profile_objective(curve, eps, np.log(np.maximum(x, 1e-320)))
        j = int(np.argmax(v))
        best = max(best, float(v[j]))
        a, b = x[max(j - 1, 0)], x[min(j + 1, 64)]
    # alpha = 0 end point (f(0) < 1 for curves with a delta atom).
    f0 = float(curve.tradeoff(np.array([0.0]))[0])
    best = max(best, 1.0 - f0)
    return float(min(max(best, 0.0), 1.0))


def numeric_epsilon(curve: Curve, delta: float, *, delta_fn: Any = None) -> float:
    """inf{eps >= 0 : delta_f(eps) <= delta}, by the shared monotone solver.

    Resolution: the numeric profile is accurate to ~1e-14 absolute, so delta below ~1e-12 (in
    particular delta = 0 for a curve that is not pure DP) cannot be resolved numerically; curves
    with closed forms (GaussianDP, LaplaceDP, EpsDeltaDP, ...) decide those cases exactly.
    """
    dfn = delta_fn if delta_fn is not None else (lambda e: numeric_delta(curve, e))
    # Floating-point slack: the profile is flat at delta on plateaus (pure DP at delta = 0,
    # (eps, delta0)-DP at delta = delta0); solving exactly there is ill-posed.
    target = delta * (1 + 1e-9) + 1e-14
    if dfn(0.0) <= target:
        return 0.0
    if dfn(EPSILON_CEILING) > target:
        return math.inf
    return solve_monotone(dfn, target, 0.0, EPSILON_CEILING, xtol=1e-10, expand=False)


class Curve(ABC):
    """An f-DP guarantee (a trade-off function) with its conversions."""

    #: True when f = f^{-1} (the pair can be swapped); asymmetric curves take the max over
    #: both orders in ``delta``/``epsilon``.
    symmetric: bool = True

    @abstractmethod
    def tradeoff(self, alpha: Any) -> np.ndarray:
        """f(alpha): the smallest type-II error at type-I error alpha (vectorised)."""

    def power(self, alpha: Any) -> np.ndarray:
        """1 - f(alpha); subclasses override it when it can be computed without cancellation."""
        return 1.0 - self.tradeoff(alpha)

    @property
    @abstractmethod
    def params(self) -> Mapping[str, float]:
        """The parameters that define the curve (for reports and JSON)."""

    @property
    def name(self) -> str:
        return type(self).__name__

    def delta(self, epsilon: float) -> float:
        """delta_f(epsilon) (both orders for asymmetric curves)."""
        return numeric_delta(self, check_nonnegative("epsilon", epsilon))

    def epsilon(self, delta: float) -> float:
        """Smallest epsilon >= 0 such that the curve implies (epsilon, delta)-DP (+inf if none)."""
        return numeric_epsilon(self, check_delta(delta), delta_fn=self.delta)

    def bit_error(self) -> float:
        """e*(f) = (1 - delta_f(0)) / 2: optimal error for one uniform bit (TOR notes §1.5)."""
        return 0.5 * (1.0 - self.delta(0.0))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v:g}" for k, v in self.params.items())
        return f"{self.name}({inner})"

    def to_dict(self) -> dict[str, Any]:
        return {"curve": self.name, **{k: float(v) for k, v in self.params.items()}}


class LabelledCurve(Curve):
    """A curve built from data (a PLD, a profile, a callable or a table) whose name and
    parameters are given at construction: ``self._label`` and ``self._params``."""

    _label: str
    _params: dict[str, float]

    @property
    def params(self) -> Mapping[str, float]:
        return self._params

    @property
    def name(self) -> str:
        return self._label


def as_alpha(alpha: Any) -> np.ndarray:
    """Type-I errors as a float array clipped to [0, 1]."""
    a = np.asarray(alpha, dtype=float)
    if a.size and np.isnan(a.min()):  # min propagates NaN: one pass, no boolean array
        raise ValueError("alpha must not contain NaN")
    return np.clip(a, 0.0, 1.0)
