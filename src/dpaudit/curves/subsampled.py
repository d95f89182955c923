"""The Poisson-subsampled Gaussian (SGM) guarantee (Tight One-Run §6.3, TOR notes §1.4 and §3.6).

Ordered pair P = N(0,1), Q = (1-q) N(0,1) + q N(mu,1); its trade-off function is
    f_q(alpha) = q G_mu(alpha) + (1 - q)(1 - alpha).
Dong, Roth and Su's symmetrised guarantee C_q(G_mu) = (min{f_q, f_q^{-1}})** is available with
``symmetrized=True``; it is a weaker (more conservative) null than the ordered pair.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri

from dpaudit.curves.base import Curve, as_alpha
from dpaudit.curves.gaussian import GaussianDP, gdp_log_delta
from dpaudit.search import invert_decreasing, solve_monotone
from dpaudit.validation import check_delta, check_nonnegative, check_probability

__all__ = ["SubsampledGaussianDP", "sgm_tradeoff"]


def _fq(mu: np.ndarray, q: float, a: np.ndarray) -> np.ndarray:
    """f_q(alpha) = q G_mu(alpha) + (1 - q)(1 - alpha), elementwise in (mu, alpha)."""
    return q * ndtr(-ndtri(a) - mu) + (1 - q) * (1 - a)


def sgm_tradeoff(mu: Any, q: float, alpha: Any, *, symmetrized: bool = False) -> np.ndarray:
    """Trade-off of the subsampled Gaussian, vectorised over broadcast (mu, alpha) pairs, so
    that many candidate curves are evaluated in one call (the Mahloujifar recursion does).

    Symmetrised (Dong, Roth, Su 2022, App. of Thm 4.2 / Tight One-Run §6.3): with
    x* = Phi(-mu/2) where f_q'(x*) = -1,
    C_q(f)(x) = f_q(x) on [0, x*], x* + f_q(x*) - x on [x*, f_q(x*)], f_q^{-1}(x) after.
    """
    mu_b, a = np.broadcast_arrays(np.asarray(mu, dtype=float), as_alpha(alpha))
    mu_b = np.array(mu_b, dtype=float)
    a = np.array(a, dtype=float)
    if not symmetrized:
        return _fq(mu_b, q, a)
    xs = ndtr(-mu_b / 2)
    fxs = _fq(mu_b, q, xs)
    out = np.where(a <= xs, _fq(mu_b, q, a), xs + fxs - a)
    tail = a > fxs
    if tail.any():
        mt = mu_b[tail]
        out[tail] = invert_decreasing(lambda x: _fq(mt, q, x), a[tail])
    return out


class SubsampledGaussianDP(Curve):
    """Subsampled Gaussian with noise 1/mu and sampling rate q (q = 1 is GaussianDP(mu))."""

    def __init__(self, mu: float, q: float, *, symmetrized: bool = False) -> None:
        self._g = GaussianDP(mu)
        self.mu = self._g.mu
        self.q = check_probability("q", q, open_low=True)
        self.symmetrized = bool(symmetrized)
        # the symmetrised envelope is symmetric; the ordered pair is not (unless q = 1).
        self.symmetric = self.symmetrized or self.q == 1.0

    @property
    def params(self) -> Mapping[str, float]:
        return {"mu": self.mu, "q": self.q}

    @property
    def name(self) -> str:
        return "SubsampledGaussianDP" + ("[sym]" if self.symmetrized else "")

    def _fq(self, a: np.ndarray) -> np.ndarray:
        return self.q * self._g.tradeoff(a) + (1 - self.q) * (1 - a)

    def tradeoff(self, alpha: Any) -> np.ndarray:
        a = as_alpha(alpha)
        out = sgm_tradeoff(self.mu, self.q, a, symmetrized=self.symmetrized)
        return out if a.ndim else out[()]

    def power(self, alpha: Any) -> np.ndarray:
        if self.symmetrized:
            return 1.0 - self.tradeoff(alpha)
        a = as_alpha(alpha)
        return self.q * self._g.power(a) + (1 - self.q) * a

    def delta(self, epsilon: float) -> float:
        """Closed form, max over both orders of the pair (TOR notes §2.12):

        H_{e^eps}(Q||P) = q * delta_G(log(1 + (e^eps - 1)/q)),
        H_{e^eps}(P||Q) = c * delta_G(log(e^eps q / c)),  c = 1 - e^eps (1 - q)  (0 if c <= 0).
        The symmetrised envelope has the same profile (conjugate of a convex envelope of a
        minimum is the maximum of the conjugates).
        """
        eps = check_nonnegative("epsilon", epsilon)
        return float(math.exp(self.log_delta(eps)))

    def log_delta(self, eps: float) -> float:
        """log of :meth:`delta`, in log space so that large eps neither overflows e^eps nor
        underflows: log(1 + (e^eps - 1)/q) = eps + log1p((q - 1) e^-eps) - log q."""
        q, mu = self.q, self.mu
        # log(1 - (1 - q) e^-eps) = log(q e^-eps + (1 - e^-eps)), a log-sum of two terms:
        # exact also for tiny q at eps = 0 (where 1 - (1 - q) rounds to 0)
        a = math.log(q) - eps
        b = math.log(-math.expm1(-eps)) if eps > 0 else -math.inf
        top = max(a, b)
        shift = eps + top + math.log1p(math.exp(min(a, b) - top)) - math.log(q)
        l1 = math.log(q) + float(gdp_log_delta(mu, shift))
        # c = 1 - e^eps (1 - q) > 0 only for eps < -log(1 - q): e^eps is never formed beyond
        t = eps + math.log1p(-q) if q < 1 else math.inf
        c = -math.expm1(t) if t < 0 else 0.0
        if c > 0:
            l2 = math.log(c) + float(gdp_log_delta(mu, eps + math.log(q) - math.log(c)))
            return max(l1, l2)
        return l1

    def epsilon(self, delta: float) -> float:
        """Smallest eps with delta(eps) <= delta, solved in log space on [0, eps_G] where
        eps_G = GaussianDP(mu).epsilon(delta) (subsampling only helps: delta_q <= delta_G), so
        no artificial ceiling is needed at the top of the family range."""
        delta = check_delta(delta)
        if delta == 0.0:
            return math.inf  # a Gaussian component is never pure DP
        target = math.log(delta)
        if self.log_delta(0.0) <= target:
            return 0.0
        hi = self._g.epsilon(delta) + 1.0
        if not math.isfinite(hi):  # beyond the float range (mu > ~1e154)
            return math.inf
        return solve_monotone(self.log_delta, target, 0.0, hi, xtol=1e-10, max_hi=1e300)
