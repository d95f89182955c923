"""The Poisson-binomial distribution: S = sum_i Bernoulli(p_i), independent, heterogeneous p_i.

Used by the risk bounds of seed 003 (Thm 3.2 / Cor 3.4 / Thm 3.5 dominate the number of
successfully attacked targets by a Poisson-binomial with flipping probabilities beta_i; spec/003
§1.4 and §1.10.1), for thousands to millions of targets.

Three computations of the pmf, cross-checked in ``tests/test_poisson_binomial.py``:

* ``"dp"``  -- the exact O(n^2) dynamic programme of spec/003 §1.10.1
  (pmf_{k}(s) = pmf_{k-1}(s) (1 - p_k) + pmf_{k-1}(s - 1) p_k), vectorised over s.  All terms are
  non-negative, so it has no cancellation and is accurate to a few ulps *relative* to each entry.
* ``"log"`` -- the same recursion in log space (``logaddexp``), for extreme tails (entries below
  1e-300, e.g. 1e5 targets with tiny priors) via :func:`poisson_binomial_logpmf`.
* ``"fft"`` -- divide and conquer: the generating polynomial prod_i ((1 - p_i) + p_i x) is
  multiplied pairwise in a balanced tree, all pairs of a level at once with a batched real FFT
  (small levels by direct convolution).  O(n log^2 n); for n = 1e5 it takes well under a
  second.  FFT round-off is *absolute* (about 1e-15 times the largest coefficient), so entries
  far below that are noise; negatives are clipped to 0 and the vector is renormalised.  This is
  harmless for the risk bounds, whose relevant tail levels are >= 1e-12.

``method="auto"`` uses ``"dp"`` up to :data:`DP_MAX_N` targets and ``"fft"`` above.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import fft as sfft

from dpaudit.validation import check_choice, check_finite_array

__all__ = [
    "DP_MAX_N",
    "PB_METHODS",
    "poisson_binomial_pmf",
    "poisson_binomial_logpmf",
    "poisson_binomial_sf",
    "poisson_binomial_tail",
    "poisson_binomial_quantile",
]

#: largest n for which ``method="auto"`` uses the exact O(n^2) dynamic programme.
DP_MAX_N = 2000

PB_METHODS = ("auto", "dp", "log", "fft")

#: below this polynomial length, pairwise products use direct (exact) convolution.
_DIRECT_MAX_LEN = 64


def _check_probs(probs: Any, name: str = "probs") -> np.ndarray:
    p = check_finite_array(name, probs, min_size=0)
    if p.size and (p.min() < 0 or p.max() > 1):
        i = int(np.flatnonzero((p < 0) | (p > 1))[0])
        raise ValueError(f"{name} must be probabilities in [0, 1]; entry {i} is {p[i]!r}")
    return p


def _pmf_dp(p: np.ndarray) -> np.ndarray:
    n = p.size
    pmf = np.zeros(n + 1)
    pmf[0] = 1.0
    for k, b in enumerate(p):  # loop over targets; each step is vectorised over s = 0..k+1
        pmf[1:k + 2] = pmf[1:k + 2] * (1.0 - b) + pmf[0:k + 1] * b
        pmf[0] *= 1.0 - b
    return pmf


def poisson_binomial_logpmf(probs: Any) -> np.ndarray:
    """log Pr[S = s] for s = 0..n, by the dynamic programme in log space (exact, O(n^2)).

    Entries that are exactly zero (e.g. s > number of p_i > 0) are -inf.
    """
    p = _check_probs(probs)
    n = p.size
    with np.errstate(divide="ignore"):
        lq = np.log1p(-p)
        lp = np.log(p)
    out = np.full(n + 1, -np.inf)
    out[0] = 0.0
    for k in range(n):
        upd = np.logaddexp(out[1:k + 2] + lq[k], out[0:k + 1] + lp[k])
        out[1:k + 2] = upd
        out[0] += lq[k]
    return out


def _pmf_fft(p: np.ndarray) -> np.ndarray:
    n = p.size
    if n == 0:
        return np.ones(1)
    m = 1 << int(np.ceil(np.log2(max(n, 1))))
    # Level 0: m polynomials of length 2 ((1 - p) + p x), padded with the identity (1 + 0 x).
    polys = np.zeros((m, 2))
    polys[:, 0] = 1.0
    polys[:n, 0] = 1.0 - p
    polys[:n, 1] = p
    while polys.shape[0] > 1:
        a, b = polys[0::2], polys[1::2]
        length = a.shape[1]  # both factors have this length; the product has 2 * length - 1
        if length <= _DIRECT_MAX_LEN:
            prod = np.zeros((a.shape[0], 2 * length))
            for s in range(length):  # loop over coefficient shifts (<= 64), not over targets
                prod[:, s:s + length] += a[:, s:s + 1] * b
        else:
            size = 2 * length
            spec = sfft.rfft(polys, size, axis=1)  # both factors in one batched transform
            prod = sfft.irfft(spec[0::2] * spec[1::2], size, axis=1)
        polys = prod
    pmf = polys[0, :n + 1]
    pmf = np.clip(pmf, 0.0, None)
    return pmf / pmf.sum()


def poisson_binomial_pmf(probs: Any, *, method: str = "auto") -> np.ndarray:
    """Pr[S = s] for s = 0..n, S = sum of independent Bernoulli(probs[i]).

    Args:
      probs: the n success probabilities, each in [0, 1].
      method: "auto" (dp up to :data:`DP_MAX_N`, fft above), "dp", "log" (exp of the log-space
        DP) or "fft" (divide and conquer).  See the module docstring for accuracy.
    """
    check_choice("method", method, PB_METHODS)
    p = _check_probs(probs)
    if method == "auto":
        method = "dp" if p.size <= DP_MAX_N else "fft"
    if method == "dp":
        return _pmf_dp(p)
    if method == "log":
        return np.exp(poisson_binomial_logpmf(p))
    return _pmf_fft(p)


def poisson_binomial_tail(probs: Any, *, method: str = "auto") -> np.ndarray:
    """T(v) = Pr[S >= v] for v = 0..n+1 (length n + 2; T(0) = 1, T(n+1) = 0).

    The reverse cumulative sum of the pmf (spec/003 §1.10.1), clipped to [0, 1] and made
    non-increasing so that rounding never produces a non-monotone tail.
    """
    pmf = poisson_binomial_pmf(probs, method=method)
    tail = np.zeros(pmf.size + 1)
    tail[:-1] = np.cumsum(pmf[::-1])[::-1]
    tail[0] = 1.0
    tail = np.minimum.accumulate(np.clip(tail, 0.0, 1.0))
    return tail


def poisson_binomial_sf(probs: Any, v: Any, *, method: str = "auto") -> np.ndarray | float:
    """Pr[S >= v] for (vectorised) real v: 1 for v <= 0 and 0 for v > n."""
    tail = poisson_binomial_tail(probs, method=method)
    return _tail_at(tail, v)


def _tail_at(tail: np.ndarray, v: Any) -> np.ndarray | float:
    """Evaluate a tail array T(0..n+1) at real v (T(v) = T(ceil v); 1 below 0, 0 above n)."""
    vv = np.asarray(v, dtype=float)
    if np.isnan(vv).any():
        raise ValueError("v must not contain NaN")
    idx = np.ceil(vv)
    n = tail.size - 2
    out = np.where(idx <= 0, 1.0, np.where(idx > n, 0.0,
                                           tail[np.clip(idx, 0, n + 1).astype(np.int64)]))
    return out if out.ndim else float(out)


def poisson_binomial_quantile(probs: Any, q: Any, *, method: str = "auto") -> np.ndarray | int:
    """Smallest s in 0..n with Pr[S <= s] >= q (the q-quantile), vectorised over q in (0, 1)."""
    qq = np.asarray(q, dtype=float)
    if ((qq <= 0) | (qq >= 1) | np.isnan(qq)).any():
        raise ValueError(f"q must be in (0, 1), got {q!r}")
    cdf = np.cumsum(poisson_binomial_pmf(probs, method=method))
    s = np.searchsorted(cdf, qq * (1 - 1e-12), side="left")
    s = np.minimum(s, cdf.size - 1)
    return s if s.ndim else int(s)
