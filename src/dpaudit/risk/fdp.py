"""Risk bounds from an f-DP curve (GaussianDP, LaplaceDP, dpsgd_curve, ...).

Beyond Worst Case's own bounds (Thm 3.2, Cor 3.4, Thm 3.5) are stated for (eps, delta)-DP only; the
paper
uses f-DP solely for the MMC comparator and for calibrating Gaussian noise (BWC notes §0, §2.2,
§2.3).  It gives no f-DP-native version of its bounds, so none is invented here.  What *is* valid
and implemented:

* a curve f implies (eps_f(delta), delta)-DP for every delta (``curve.epsilon(delta)``, the one
  conversion in :mod:`dpaudit.curves`), so every (eps, delta) bound applies at each delta;
* since each of those bounds holds, so does their minimum over a fixed grid of deltas chosen
  before seeing any data (``*_from_curve`` functions below);
* pure DP (Thm 3.2) applies when ``curve.epsilon(0)`` is finite (e.g. LaplaceDP).

:func:`gdp_mu` inverts the GDP privacy profile (mu for a given (eps, delta)), needed for the
MMC G_mu comparator of Fig. 3 and for the noisy-marginals calibration (BWC notes §2.3, §6.8).
The MMC bound itself, which uses the trade-off function directly, is in
:mod:`dpaudit.risk.comparators` (:func:`~dpaudit.risk.comparators.mmc_bound`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from dpaudit.curves import Curve
from dpaudit.curves.calibration import gdp_mu
from dpaudit.risk.bounds import (
    TailBound,
    pure_tail,
    single_target_bound,
    thm35_bound,
    thm35_tail,
)
from dpaudit.risk.flipping import check_prior_array
from dpaudit.validation import check_delta

__all__ = [
    "DEFAULT_DELTA_GRID",
    "gdp_mu",
    "curve_epsilon",
    "pure_tail_from_curve",
    "thm35_tail_from_curve",
    "thm35_bound_from_curve",
    "single_target_bound_from_curve",
]

#: default deltas over which the ``*_from_curve`` bounds are minimised.
DEFAULT_DELTA_GRID = tuple(float(x) for x in np.logspace(-12, -2, 21))


def _check_curve(curve: Any) -> Curve:
    if not isinstance(curve, Curve):
        raise ValueError(f"curve must be a dpaudit Curve (GaussianDP, LaplaceDP, ...), "
                         f"got {type(curve).__name__}")
    return curve


def curve_epsilon(curve: Curve, delta: float) -> float:
    """epsilon of the curve at delta (``curve.epsilon(delta)``), validated."""
    return float(_check_curve(curve).epsilon(check_delta(delta)))


def pure_tail_from_curve(priors: ArrayLike, curve: Curve, **kw: Any) -> TailBound:
    """Thm 3.2 with eps = curve.epsilon(0); raises ValueError if the curve is not pure DP."""
    eps = curve_epsilon(curve, 0.0)
    if not math.isfinite(eps):
        raise ValueError(f"curve {curve!r} is not pure DP (epsilon(0) = inf); use "
                         "thm35_tail_from_curve")
    return pure_tail(priors, eps, **kw)


def thm35_tail_from_curve(priors: ArrayLike, curve: Curve, delta: float, **kw: Any) -> TailBound:
    """Thm 3.5 curve B(v) at the curve's (eps(delta), delta) guarantee."""
    eps = curve_epsilon(curve, delta)
    return thm35_tail(priors, eps, delta, **kw)


def _grid(deltas: ArrayLike | None) -> np.ndarray:
    g = np.asarray(DEFAULT_DELTA_GRID if deltas is None else deltas, dtype=float).reshape(-1)
    if g.size == 0:
        raise ValueError("deltas must contain at least one value")
    for d in g:
        check_delta(d, "deltas")
    return g


def thm35_bound_from_curve(priors: ArrayLike, curve: Curve, v: ArrayLike, *,
                           deltas: ArrayLike | None = None,
                           **kw: Any) -> np.ndarray | float:
    """min over delta in ``deltas`` of the Thm 3.5 bound B(v) at (curve.epsilon(delta), delta).

    Valid because the curve implies every one of those guarantees and the grid is fixed in
    advance.  Vectorised over v.
    """
    _check_curve(curve)
    p = check_prior_array(priors, "priors")
    best: np.ndarray | None = None
    for d in _grid(deltas):
        eps = curve.epsilon(float(d))
        if not math.isfinite(eps):
            continue
        b = np.asarray(thm35_bound(p, eps, float(d), v, **kw), dtype=float)
        best = b if best is None else np.minimum(best, b)
    if best is None:
        best = np.ones(np.shape(v))
    return best if best.ndim else float(best)


def single_target_bound_from_curve(prior: ArrayLike, curve: Curve, *,
                                   deltas: ArrayLike | None = None,
                                   theorem: str = "thm3.5") -> np.ndarray | float:
    """One target, one guess: min over delta of beta(p, eps(delta)) + (1 - beta) delta
    (Thm 3.5 at n = 1; ``theorem="cor3.4"`` uses beta + delta).  Vectorised over the prior."""
    _check_curve(curve)
    best: np.ndarray | None = None
    for d in _grid(deltas):
        eps = curve.epsilon(float(d))
        if not math.isfinite(eps):
            continue
        b = np.asarray(single_target_bound(prior, eps, float(d), theorem=theorem))
        best = b if best is None else np.minimum(best, b)
    if best is None:
        best = np.ones(np.shape(prior))
    return best if best.ndim else float(best)
