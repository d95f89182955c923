"""Confidence bounds for a binomial proportion k/n, vectorised over k and n.

All functions take the *confidence* (probability that the interval covers), with
``side`` in {"two-sided", "lower", "upper"}; a one-sided bound spends the whole
failure probability 1 - confidence on one side.  Each returns ``(lower, upper)`` arrays;
the side that is not bounded is 0 (lower) or 1 (upper).

* Clopper-Pearson: exact, via Beta quantiles (SciPy); k = 0 gives lower = 0, k = n gives
  upper = 1 exactly.
* Hoeffding: p_hat -+ sqrt(log(1/a) / (2n)), clipped to [0, 1].
* Wilson: score interval with z = Phi^{-1}(1 - a).
* Jeffreys: Beta(k + 1/2, n - k + 1/2) quantiles with the usual k = 0 / k = n conventions.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import special, stats

from dpaudit.validation import check_choice, check_confidence, check_real_array

__all__ = ["clopper_pearson", "hoeffding", "wilson", "jeffreys", "binomial_interval",
           "BINOMIAL_METHODS", "SIDES"]

SIDES = ("two-sided", "lower", "upper")
BINOMIAL_METHODS = ("clopper_pearson", "hoeffding", "wilson", "jeffreys")


def _prepare(k: ArrayLike, n: ArrayLike, confidence: float, side: str
             ) -> tuple[np.ndarray, np.ndarray, float]:
    check_confidence(confidence)
    check_choice("side", side, SIDES)
    k = check_real_array("k", k)
    n = check_real_array("n", n)
    if np.isnan(k).any() or np.isnan(n).any():
        raise ValueError("k and n must not be NaN")
    if not (np.isfinite(k).all() and np.isfinite(n).all()):
        raise ValueError("k and n must be finite whole numbers (n >= 1, 0 <= k <= n)")
    if (n < 1).any():
        raise ValueError("n must be >= 1")
    if (k < 0).any() or (k > n).any():
        raise ValueError("k must be in [0, n]")
    if (k != np.round(k)).any() or (n != np.round(n)).any():
        raise ValueError("k and n must be whole numbers")
    a = 1.0 - confidence
    tail = a / 2 if side == "two-sided" else a
    return k, n, tail


def _finish(lo: np.ndarray, hi: np.ndarray, side: str) -> tuple[np.ndarray, np.ndarray]:
    lo = np.clip(lo, 0.0, 1.0)
    hi = np.clip(hi, 0.0, 1.0)
    if side == "upper":
        lo = np.zeros_like(lo)
    elif side == "lower":
        hi = np.ones_like(hi)
    if lo.ndim == 0:
        return lo[()], hi[()]
    return lo, hi


def clopper_pearson(k: ArrayLike, n: ArrayLike, confidence: float = 0.95,
                    side: str = "two-sided") -> tuple[np.ndarray, np.ndarray]:
    """Exact Clopper-Pearson bounds: Beta(k, n-k+1) and Beta(k+1, n-k) quantiles."""
    k, n, t = _prepare(k, n, confidence, side)
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, special.betaincinv(np.maximum(k, 1e-300), n - k + 1, t), 0.0)
        hi = np.where(k < n, special.betaincinv(k + 1, np.maximum(n - k, 1e-300), 1 - t), 1.0)
    return _finish(lo, hi, side)


def hoeffding(k: ArrayLike, n: ArrayLike, confidence: float = 0.95,
              side: str = "two-sided") -> tuple[np.ndarray, np.ndarray]:
    """Hoeffding bounds p_hat -+ sqrt(log(1/t) / (2n))."""
    k, n, t = _prepare(k, n, confidence, side)
    p = k / n
    w = np.sqrt(np.log(1 / t) / (2 * n))
    return _finish(p - w, p + w, side)


def wilson(k: ArrayLike, n: ArrayLike, confidence: float = 0.95,
           side: str = "two-sided") -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)."""
    k, n, t = _prepare(k, n, confidence, side)
    z = stats.norm.isf(t)
    p = k / n
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    w = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return _finish(c - w, c + w, side)


def jeffreys(k: ArrayLike, n: ArrayLike, confidence: float = 0.95,
             side: str = "two-sided") -> tuple[np.ndarray, np.ndarray]:
    """Jeffreys interval: Beta(k+1/2, n-k+1/2) quantiles; lower = 0 at k = 0, upper = 1 at k = n."""
    k, n, t = _prepare(k, n, confidence, side)
    lo = np.where(k > 0, special.betaincinv(k + 0.5, n - k + 0.5, t), 0.0)
    hi = np.where(k < n, special.betaincinv(k + 0.5, n - k + 0.5, 1 - t), 1.0)
    return _finish(lo, hi, side)


_METHODS = {"clopper_pearson": clopper_pearson, "hoeffding": hoeffding, "wilson": wilson,
            "jeffreys": jeffreys}


def binomial_interval(k: ArrayLike, n: ArrayLike, confidence: float = 0.95, side: str = "two-sided",
                      method: str = "clopper_pearson") -> tuple[np.ndarray, np.ndarray]:
    """Dispatch to one of :data:`BINOMIAL_METHODS`."""
    check_choice("method", method, BINOMIAL_METHODS)
    return _METHODS[method](k, n, confidence, side)
