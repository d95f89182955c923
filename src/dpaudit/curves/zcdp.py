"""The trade-off curve every rho-zCDP mechanism satisfies, and the rho of a Bernoulli pair.

rho-zCDP (Bun and Steinke, "Concentrated Differential Privacy: Simplifications, Extensions,
and Lower Bounds", TCC 2016, Definition 1.1): for neighbours x ~ x' and every Renyi order
lambda > 1, D_lambda(M(x) || M(x')) <= rho lambda.

**The exact region.**  A test (an output set S) turns M(x), M(x') into Bernoulli(q),
Bernoulli(p) with q = P(M(x) in S), p = P(M(x') in S); by the data-processing inequality of
Renyi divergence (van Erven and Harremoes 2014, Theorem 9) the pair (q, p) satisfies, for
every lambda > 1,

    D_lambda(Ber(p) || Ber(q)) <= rho lambda   and   D_lambda(Ber(q) || Ber(p)) <= rho lambda,
    D_lambda(Ber(p) || Ber(q)) = log(p^l q^(1-l) + (1-p)^l (1-q)^(1-l)) / (l - 1).

Conversely every (q, p) meeting these constraints is attained: the mechanism releasing one
bit, Ber(q) on x and Ber(p) on x', is itself rho-zCDP.  So the set of (type-I error, power)
pairs of rho-zCDP mechanisms is exactly this region (it is convex: a revealed coin flip
between two rho-zCDP mechanisms is rho-zCDP, Renyi divergence of a mixture with a revealed
component being the log-mean of exp((l-1) D)), and its lower boundary is the trade-off curve

    f_rho(alpha) = 1 - max{p >= alpha : rho*(alpha, p) <= rho},
    rho*(q, p) = sup_{l > 1} max(D_l(Ber(p) || Ber(q)), D_l(Ber(q) || Ber(p))) / l,

the f-DP form of the binary-channel characterisation (Balle, Barthe, Gaboardi, Hsu and Sato,
"Hypothesis Testing Interpretations and Renyi Differential Privacy", AISTATS 2020, Section 4;
Zhu, Dong and Wang, "Optimal Accounting of Differential Privacy via Characteristic
Function", AISTATS 2022, Section 3 for f-DP of Renyi constraints).  It is tighter than every
(epsilon, delta) conversion of rho-zCDP (rho + 2 sqrt(rho log(1/delta)), Bun-Steinke
Proposition 1.3; Canonne, Kamath and Steinke 2020, Proposition 12) because it keeps the whole
constraint set instead of one order.

**Numerics.**  The supremum over lambda is taken on a fixed grid (``LAMBDAS``: 1 + 1e-4 up to
1e4, 300 log-spaced), refined on 40 orders around the best grid point.  Dropping orders can
only enlarge the region, so ``rho*`` on the grid is <= the true value and f_rho on the grid
is <= the true curve: an audit with it never over-claims.  An audit of an output set with
Clopper-Pearson box [q_lo, q_hi] x [p_lo, p_hi] above the diagonal is inconsistent with
rho-zCDP iff its corner (q_hi, p_lo) is (the divergences between Bernoullis grow with |p - q|
on each side of the diagonal), so the bound is ``rho_lb = rho*(q_hi, p_lo)``
(:func:`zcdp_rho_bound`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dpaudit.curves.base import Curve, as_alpha
from dpaudit.validation import check_delta, check_nonnegative, check_positive

__all__ = ["ZCDP", "LAMBDAS", "bernoulli_renyi", "zcdp_rho", "zcdp_rho_bound"]

LAMBDAS = 1.0 + np.geomspace(1e-4, 1e4, 300)


def _xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x log y with 0 log 0 = 0 and x log 0 = -inf for x > 0 (x >= 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = x * np.log(y)
    return np.where(x == 0, 0.0, out)


def bernoulli_renyi(lam: Any, p: Any, q: Any) -> np.ndarray:
    """D_lambda(Ber(p) || Ber(q)) for lambda > 1 (broadcast), in log space; +inf when p puts
    mass where q has none."""
    lam, p, q = (np.asarray(v, dtype=float) for v in (lam, p, q))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a = _xlogy(lam, p) + _xlogy(1.0 - lam, q) * (p > 0)
        b = _xlogy(lam, 1.0 - p) + _xlogy(1.0 - lam, 1.0 - q) * (p < 1)
        a = np.where((p > 0) & (q == 0), np.inf, np.where(p == 0, -np.inf, a))
        b = np.where((p < 1) & (q == 1), np.inf, np.where(p == 1, -np.inf, b))
        d = np.logaddexp(a, b) / (lam - 1.0)
    return np.maximum(d, 0.0)


def _rho_at(lam: np.ndarray, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    return np.maximum(bernoulli_renyi(lam, p, q), bernoulli_renyi(lam, q, p)) / lam


def zcdp_rho(p: Any, q: Any) -> np.ndarray:
    """rho*(q, p): the smallest rho for which Ber(q) vs Ber(p) is rho-zCDP (both directions):
    the maximum of D_l / l over the order grid ``LAMBDAS``, then over 40 orders between the
    best grid point's neighbours.  A maximum over orders is <= the supremum (valid)."""
    p, q = np.broadcast_arrays(np.asarray(p, dtype=float), np.asarray(q, dtype=float))
    lam = LAMBDAS.reshape((-1,) + (1,) * p.ndim)
    d = _rho_at(lam, p, q)
    best = d.max(axis=0)
    i = d.argmax(axis=0)
    lo = LAMBDAS[np.maximum(i - 1, 0)]
    hi = LAMBDAS[np.minimum(i + 1, LAMBDAS.size - 1)]
    t = np.linspace(0.0, 1.0, 40).reshape((-1,) + (1,) * p.ndim)
    fine = _rho_at(lo + t * (hi - lo), p, q).max(axis=0)
    return np.maximum(best, fine)


def zcdp_rho_bound(tpr_lo: Any, tpr_hi: Any, fpr_lo: Any, fpr_hi: Any) -> np.ndarray:
    """Largest rho rejected by a confidence box on (FPR, TPR): rho* of the box's corner
    nearest the diagonal (0 when the box meets the diagonal)."""
    tpr_lo, tpr_hi, fpr_lo, fpr_hi = (np.asarray(v, dtype=float)
                                      for v in (tpr_lo, tpr_hi, fpr_lo, fpr_hi))
    above = np.where(tpr_lo > fpr_hi, zcdp_rho(tpr_lo, fpr_hi), 0.0)
    below = np.where(fpr_lo > tpr_hi, zcdp_rho(fpr_lo, tpr_hi), 0.0)
    return np.maximum(above, below)


class ZCDP(Curve):
    """f_rho: the trade-off curve satisfied by every rho-zCDP mechanism (module docstring).

    ``tradeoff`` bisects, for each alpha, the largest power p with rho*(alpha, p) <= rho
    (42 halvings: p to 2e-13)."""

    symmetric = True

    def __init__(self, rho: float) -> None:
        self.rho = check_positive("rho", rho)
        self._grid: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def params(self) -> Mapping[str, float]:
        return {"rho": self.rho}

    def tradeoff(self, alpha: Any) -> np.ndarray:
        a = as_alpha(alpha)
        lo, hi = a.astype(float).copy(), np.ones_like(a, dtype=float)
        ok_hi = zcdp_rho(hi, a) <= self.rho
        for _ in range(42):
            mid = (lo + hi) / 2
            ok = zcdp_rho(mid, a) <= self.rho
            lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
        return 1.0 - np.where(ok_hi, 1.0, lo)

    def _frontier(self) -> tuple[np.ndarray, np.ndarray]:
        """(alpha grid, f_rho on it), computed once: 400 log-spaced points from 1e-16 to 1/2
        and 100 linear ones to 1."""
        if self._grid is None:
            a = np.unique(np.concatenate([np.geomspace(1e-16, 0.5, 400),
                                          np.linspace(0.5, 1.0, 100)]))
            self._grid = (a, self.tradeoff(a))
        return self._grid

    def delta(self, epsilon: float) -> float:
        """delta(eps) = sup_alpha 1 - f_rho(alpha) - e^eps alpha, maximised on the frontier
        grid (a grid maximum is <= the supremum: never above the true delta)."""
        epsilon = check_nonnegative("epsilon", epsilon)
        a, f = self._frontier()
        with np.errstate(over="ignore"):
            gain = 1.0 - f - np.exp(epsilon) * a
        return float(max(0.0, gain.max()))

    def epsilon(self, delta: float) -> float:
        """Smallest eps with delta(eps) <= delta (bisection on the grid's delta(eps))."""
        delta = check_delta(delta)
        lo, hi = 0.0, 1.0
        while self.delta(hi) > delta:
            lo, hi = hi, 2.0 * hi
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if self.delta(mid) > delta else (lo, mid)
        return hi
