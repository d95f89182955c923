"""Confidence intervals for the mean mu_1 of an XBern sample (Pillutla et al., §3.3 and App. C).

Each interval bounds mu_1 = E[m_1] from n i.i.d. XBern_K trials given through the empirical
moments mu_hat_1..mu_hat_order (see :mod:`dpaudit.stats.xbern`).  All solutions are closed-form
quadratic roots, vectorised over any leading batch axes of ``mu_hat`` (many thresholds,
repetitions or datasets at once).

Paper convention (used by :func:`xbern_bounds`): ``beta`` is the failure probability of *each*
one-sided bound; inside an order-l algorithm it is split over the l-th order pieces exactly as
in Pillutla et al. Algorithms 2-7 (beta for order 1, beta/2 for order 2, beta/4 for order 4).
Library convention (used by :func:`xbern_interval`, like :mod:`dpaudit.stats.binomial`):
``confidence`` and ``side``; a one-sided bound runs the algorithm with beta = 1 - confidence, a
two-sided interval with beta = (1 - confidence)/2 per side.  The joint two-sided coverage is
then 1 - C beta >= confidence with C = 2, 3/2, 5/4 for orders 1, 2, 4 (Pillutla et al.,
Propositions 7-9 and 11, whose printed "<=" are typos for ">=", LiDP notes §7.1).

Bernstein (non-asymptotic; App. C.1, Algorithms 2-4).  With L the log term, a = 2L/n and
b_L = 2L/(3n), and V(x) a variance bound quadratic in the unknown mean x:

    LOWER = inf{x in [0, mu_hat] : mu_hat - x <= sqrt(a max(V(x), 0)) + b_L}
    UPPER = sup{x in [mu_hat, 1] : x - mu_hat <= sqrt(a max(V(x), 0)) + b_L}.

With c = mu_hat - b_L (u = mu_hat + b_L) and q(x) = (x - c)^2 - a V(x), every x >= c
(x <= u) satisfies the inequality, and below c (above u) the feasible set is {q <= 0} =
[r_1, r_2]; hence LOWER = clip(min(c, r_1), 0, 1) and UPPER = clip(max(u, r_2), 0, 1) (c, u
themselves when q has no real root).  This is the paper's "unique solution in [0, mu_hat] if it
exists, else 0" and needs no bisection fallback (LiDP notes §2.5 suggests one; the closed form
covers the pathological cases and is tested against bisection).

* order 1: L = log(1/beta), V = x(1 - x).
* order 2: L = log(2/beta); mu2_bar = UPPER(mu_hat_2, x(1-x)); V = x/K - x^2 + mu2_bar, as
  printed in Algorithm 3 (without the (K-1)/K factor of Eq. 17: valid and slightly looser;
  ``tight_k_factor=True`` uses ((K-1)/K) mu2_bar, which is exactly Eq. 17).
* order 4: L = log(4/beta); mu3_bar, mu4_bar = UPPER(., x(1-x)); mu2_bar = UPPER(mu_hat_2,
  sigma_2^2(x, mu3_bar, mu4_bar)) with Eq. 18; then as order 2 (Algorithm 4).

Wilson (asymptotic, CLT; App. C.2, Algorithms 5-7), n (x - mu_hat)^2 = Z^2 V(x):

* order 1: Z = Z_beta, V = x(1-x): (n+Z^2)x^2 - (2n mu_hat_1 + Z^2)x + n mu_hat_1^2 = 0.
* order 2: Z = Z_{beta/2}; mu2_bar = Wilson upper root for mu_hat_2;
  (n+Z^2)x^2 - (2n mu_hat_1 + Z^2/K)x + n mu_hat_1^2 - ((K-1)/K) Z^2 mu2_bar = 0.
* order 4: Z = Z_{beta/4}; mu3_bar, mu4_bar Wilson upper roots; mu2_bar = larger root of
  (n + 2Z^2(2K-3)/(K(K-1)))x^2 - (2n mu_hat_2 + 2Z^2/(K(K-1)))x + n mu_hat_2^2 - c Z^2 = 0,
  c = (K-2)(K-3)/(K(K-1)) (mu4_bar - mu3_bar^2) + 4(K-2)/(K(K-1)) mu3_bar, exactly as printed
  in Algorithm 7 (default; it matches the authors' code).  ``exact_eq18=True`` uses Eq. 18
  instead: (n+Z^2)x^2 - (2n mu_hat_2 + 2Z^2/(K(K-1)))x + n mu_hat_2^2
  - Z^2 [4(K-2) mu3_bar + (K-2)(K-3) mu4_bar]/(K(K-1)) = 0 (LiDP notes §7.3).  A negative
  discriminant of the mu2_bar quadratic gives mu2_bar = 1 (conservative; LiDP notes §2.6).

Roots are clipped to [0, 1].  ``worst_case_clip=True`` (reference code, non-vectorised
version; LiDP notes §7.16) intersects each Wilson bound with mu_hat -+ Z sqrt(0.25/n).

Bernoulli baselines (K = 1 or the first canary only; LiDP notes §2.7): Clopper-Pearson, Jeffreys
and Wilson come from :mod:`dpaudit.stats.binomial`; Bernstein is Algorithm 2 with K = 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from dpaudit.stats import binomial
from dpaudit.stats.xbern import empirical_moments, xbern_counts
from dpaudit.validation import (
    check_choice,
    check_confidence,
    check_count,
    check_probability,
)

__all__ = [
    "XBERN_METHODS",
    "XBERN_ORDERS",
    "BERNOULLI_METHODS",
    "SIDES",
    "xbern_bounds",
    "xbern_interval",
    "xbern_interval_from_counts",
    "xbern_interval_from_moments",
    "bernoulli_interval",
    "bernstein_lower",
    "bernstein_upper",
]

XBERN_METHODS = ("wilson", "bernstein")
XBERN_ORDERS = (1, 2, 4)
BERNOULLI_METHODS = ("clopper_pearson", "jeffreys", "wilson", "bernstein")
SIDES = ("two-sided", "lower", "upper")


# --------------------------------------------------------------------------- quadratic roots

def _roots(a2: Any, a1: Any, a0: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Roots r1 <= r2 of a2 x^2 + a1 x + a0 (a2 > 0), and a mask of real roots.

    Uses the cancellation-free form q = -(a1 + sign(a1) sqrt(disc))/2, r = {q/a2, a0/q}.
    """
    a2, a1, a0 = np.broadcast_arrays(np.asarray(a2, float), np.asarray(a1, float),
                                     np.asarray(a0, float))
    disc = a1 * a1 - 4 * a2 * a0
    real = disc >= 0
    sq = np.sqrt(np.where(real, disc, 0.0))
    sgn = np.where(a1 >= 0, 1.0, -1.0)
    q = -0.5 * (a1 + sgn * sq)
    with np.errstate(divide="ignore", invalid="ignore"):
        ra = q / a2
        rb = np.where(q != 0, a0 / np.where(q != 0, q, 1.0), ra)
    r1 = np.minimum(ra, rb)
    r2 = np.maximum(ra, rb)
    return r1, r2, real


# --------------------------------------------------------------------------- Bernstein core

def bernstein_lower(mu_hat: Any, n: Any, log_term: Any, v2: Any, v1: Any, v0: Any) -> np.ndarray:
    """LOWER(mu_hat, V) for V(x) = v2 x^2 + v1 x + v0 (v2 <= 0), Bernstein with log term L.

    inf{x in [0, mu_hat] : mu_hat - x <= sqrt((2L/n) max(V(x), 0)) + 2L/(3n)} in closed form
    (module docstring); vectorised by broadcasting.
    """
    mu_hat = np.asarray(mu_hat, float)
    a = 2.0 * np.asarray(log_term, float) / n
    c = mu_hat - a / 3.0
    r1, _, real = _roots(1.0 - a * v2, -(2 * c + a * v1), c * c - a * v0)
    lo = np.where(real, np.minimum(c, r1), c)
    return np.clip(lo, 0.0, 1.0)


def bernstein_upper(mu_hat: Any, n: Any, log_term: Any, v2: Any, v1: Any, v0: Any) -> np.ndarray:
    """UPPER(mu_hat, V): sup{x in [mu_hat, 1] : x - mu_hat <= sqrt(a max(V,0)) + b_L}."""
    mu_hat = np.asarray(mu_hat, float)
    a = 2.0 * np.asarray(log_term, float) / n
    u = mu_hat + a / 3.0
    _, r2, real = _roots(1.0 - a * v2, -(2 * u + a * v1), u * u - a * v0)
    hi = np.where(real, np.maximum(u, r2), u)
    return np.clip(hi, 0.0, 1.0)


def _bernstein(mu: np.ndarray, n: np.ndarray | float, k: int, beta: float, order: int,
               tight_k_factor: bool) -> tuple[np.ndarray, np.ndarray]:
    m1 = mu[..., 0]
    if order == 1:
        L = np.log(1.0 / beta)
        return (bernstein_lower(m1, n, L, -1.0, 1.0, 0.0),
                bernstein_upper(m1, n, L, -1.0, 1.0, 0.0))
    if order == 2:
        L = np.log(2.0 / beta)
        mu2_bar = bernstein_upper(mu[..., 1], n, L, -1.0, 1.0, 0.0)
    else:  # order 4 (Algorithm 4)
        L = np.log(4.0 / beta)
        mu3_bar = bernstein_upper(mu[..., 2], n, L, -1.0, 1.0, 0.0)
        mu4_bar = bernstein_upper(mu[..., 3], n, L, -1.0, 1.0, 0.0)
        kk1 = k * (k - 1)
        cprime = (4 * (k - 2) * mu3_bar + (k - 2) * (k - 3) * mu4_bar) / kk1
        mu2_bar = bernstein_upper(mu[..., 1], n, L, -1.0, 2.0 / kk1, cprime)
    v0 = (k - 1) / k * mu2_bar if tight_k_factor else mu2_bar
    return (bernstein_lower(m1, n, L, -1.0, 1.0 / k, v0),
            bernstein_upper(m1, n, L, -1.0, 1.0 / k, v0))


# --------------------------------------------------------------------------- Wilson core

def _wilson_roots(mu_hat: np.ndarray, n: np.ndarray | float, z2: float
                  ) -> tuple[np.ndarray, np.ndarray]:
    r1, r2, _ = _roots(n + z2, -(2 * n * mu_hat + z2), n * mu_hat * mu_hat)
    return r1, r2


def _wilson(mu: np.ndarray, n: np.ndarray | float, k: int, beta: float, order: int,
            exact_eq18: bool, worst_case_clip: bool) -> tuple[np.ndarray, np.ndarray]:
    m1 = mu[..., 0]
    if order == 1:
        z = stats.norm.isf(beta)
        lo, hi = _wilson_roots(m1, n, z * z)
    else:
        z = stats.norm.isf(beta / order)
        z2 = z * z
        if order == 2:
            mu2_bar = _wilson_roots(mu[..., 1], n, z2)[1]
        else:
            mu3_bar = np.clip(_wilson_roots(mu[..., 2], n, z2)[1], 0.0, 1.0)
            mu4_bar = np.clip(_wilson_roots(mu[..., 3], n, z2)[1], 0.0, 1.0)
            kk1 = k * (k - 1)
            m2 = mu[..., 1]
            if exact_eq18:
                a2 = n + z2
                cc = (4 * (k - 2) * mu3_bar + (k - 2) * (k - 3) * mu4_bar) / kk1
            else:  # Algorithm 7 exactly as printed
                a2 = n + 2 * z2 * (2 * k - 3) / kk1
                cc = ((k - 2) * (k - 3) / kk1 * (mu4_bar - mu3_bar**2)
                      + 4 * (k - 2) / kk1 * mu3_bar)
            _, r2, real = _roots(a2, -(2 * n * m2 + 2 * z2 / kk1), n * m2 * m2 - cc * z2)
            mu2_bar = np.where(real, r2, 1.0)
        mu2_bar = np.clip(mu2_bar, 0.0, 1.0)
        lo, hi, real1 = _roots(n + z2, -(2 * n * m1 + z2 / k),
                               n * m1 * m1 - (k - 1) / k * z2 * mu2_bar)
        # the discriminant is provably >= 0 (LiDP notes §2.6); guard against round-off anyway
        lo = np.where(real1, lo, 0.0)
        hi = np.where(real1, hi, 1.0)
    if worst_case_clip:
        w = z * np.sqrt(0.25 / n)
        lo = np.maximum(lo, m1 - w)
        hi = np.minimum(hi, m1 + w)
    return np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)


# --------------------------------------------------------------------------- public API

def _check_order(order: Any, k: int) -> int:
    if isinstance(order, bool) or order not in XBERN_ORDERS:
        raise ValueError(f"order must be one of 1, 2, 4; got {order!r}")
    if order > k:
        raise ValueError(f"order must be <= K (number of canaries per trial, {k}); got "
                         f"order {order}")
    return int(order)


def xbern_bounds(mu_hat: Any, n: Any, k: Any, beta: float, *, method: str = "wilson",
                 order: int = 2, exact_eq18: bool = False, tight_k_factor: bool = False,
                 worst_case_clip: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """One-sided lower and upper bounds on mu_1, each failing with probability <= beta
    (paper convention; Pillutla et al. Algorithms 2-7).

    Args:
      mu_hat: empirical moments mu_hat_1..mu_hat_order on the last axis (extra entries are
        ignored); leading axes are batch axes.
      n: number of trials (scalar or broadcastable to the batch shape).
      k: canaries per trial K (order <= K).
      beta: failure probability per one-sided bound, in (0, 1).
      method: "wilson" (asymptotic; the paper's experiments) or "bernstein" (finite-sample).
      order: 1, 2 or 4.
      exact_eq18: Wilson-4 with the exact Eq. 18 variance instead of Algorithm 7 as printed.
      tight_k_factor: Bernstein-2/4 with the (K-1)/K factor of Eq. 17.
      worst_case_clip: intersect Wilson bounds with the worst-case-variance bound.
    """
    check_choice("method", method, XBERN_METHODS)
    kk = check_count("k", k, minimum=1)
    o = _check_order(order, kk)
    b = check_probability("beta", beta, open_low=True, open_high=True)
    mu = np.asarray(mu_hat, dtype=float)
    if mu.ndim == 0:
        mu = mu[None]
    if mu.shape[-1] < o:
        raise ValueError(f"mu_hat must hold at least {o} moments on its last axis, got "
                         f"{mu.shape[-1]}")
    if np.isnan(mu).any() or (mu < -1e-12).any() or (mu > 1 + 1e-12).any():
        raise ValueError("mu_hat must contain moments in [0, 1]")
    nn = np.asarray(n, dtype=float)
    if np.isnan(nn).any() or (nn < 1).any():
        raise ValueError(f"n must be >= 1, got {n!r}")
    if method == "bernstein":
        lo, hi = _bernstein(mu, nn, kk, b, o, tight_k_factor)
    else:
        lo, hi = _wilson(mu, nn, kk, b, o, exact_eq18, worst_case_clip)
    if lo.ndim == 0:
        return lo[()], hi[()]
    return lo, hi


def _side_beta(confidence: float, side: str) -> float:
    check_confidence(confidence)
    check_choice("side", side, SIDES)
    a = 1.0 - confidence
    return a / 2 if side == "two-sided" else a


def _finish(lo: Any, hi: Any, side: str) -> tuple[Any, Any]:
    if side == "upper":
        lo = np.zeros_like(lo)
    elif side == "lower":
        hi = np.ones_like(hi)
    lo, hi = np.asarray(lo), np.asarray(hi)
    if lo.ndim == 0:
        return lo[()], hi[()]
    return lo, hi


def xbern_interval_from_moments(mu_hat: Any, n: Any, k: Any, confidence: float = 0.95,
                                side: str = "two-sided", method: str = "wilson",
                                order: int = 2, **options: bool) -> tuple[Any, Any]:
    """Interval for mu_1 from empirical moments (library convention: confidence + side).

    ``options``: exact_eq18, tight_k_factor, worst_case_clip (see :func:`xbern_bounds`).
    The unbounded side is 0 (lower) or 1 (upper).
    """
    beta = _side_beta(confidence, side)
    lo, hi = xbern_bounds(mu_hat, n, k, beta, method=method, order=order, **options)
    return _finish(lo, hi, side)


def xbern_interval_from_counts(counts: Any, k: Any, confidence: float = 0.95,
                               side: str = "two-sided", method: str = "wilson", order: int = 2,
                               **options: bool) -> tuple[Any, Any]:
    """Interval for mu_1 from per-trial counts s_i (trials on the last axis; leading axes are
    batch axes, giving one interval each)."""
    kk = check_count("k", k, minimum=1)
    _check_order(order, kk)
    s = np.asarray(counts)
    mu = empirical_moments(s, kk, order)
    return xbern_interval_from_moments(mu, s.shape[-1], kk, confidence, side, method, order,
                                       **options)


def xbern_interval(x: Any, confidence: float = 0.95, side: str = "two-sided",
                   method: str = "wilson", order: int = 2, **options: bool) -> tuple[Any, Any]:
    """Interval for mu_1 from an (n, K) 0/1 matrix of XBern trials (Pillutla et al., App. C)."""
    s, kk = xbern_counts(x)
    return xbern_interval_from_counts(s, kk, confidence, side, method, order, **options)


def bernoulli_interval(k: Any, n: Any, confidence: float = 0.95, side: str = "two-sided",
                       method: str = "clopper_pearson") -> tuple[Any, Any]:
    """Bernoulli baselines for k successes in n trials (LiDP notes §2.7; vectorised).

    "clopper_pearson", "jeffreys" and "wilson" delegate to :mod:`dpaudit.stats.binomial`;
    "bernstein" is Pillutla et al. Algorithm 2 with K = 1 (L = log(1/beta), V = x(1-x)).
    """
    check_choice("method", method, BERNOULLI_METHODS)
    if method != "bernstein":
        return binomial.binomial_interval(k, n, confidence, side, method)
    beta = _side_beta(confidence, side)
    kk = np.asarray(k, dtype=float)
    nn = np.asarray(n, dtype=float)
    if np.isnan(kk).any() or np.isnan(nn).any() or (nn < 1).any() or (kk < 0).any() \
            or (kk > nn).any() or (kk != np.round(kk)).any() or (nn != np.round(nn)).any():
        raise ValueError("k and n must be whole numbers with 0 <= k <= n and n >= 1")
    p = kk / nn
    L = np.log(1.0 / beta)
    lo = bernstein_lower(p, nn, L, -1.0, 1.0, 0.0)
    hi = bernstein_upper(p, nn, L, -1.0, 1.0, 0.0)
    return _finish(lo, hi, side)
