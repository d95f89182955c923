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

``method="auto"`` uses ``"dp"`` up to :data:`DP_MAX_N` targets and ``"fft"`` above, except that
equal probabilities (a single prior) above DP_MAX_N give the binomial pmf in closed form.  From
2^16 targets on, the FFT keeps every partial product on its significant support only (mass
outside < 1e-39 by Bernstein's inequality): 1e7 heterogeneous targets in seconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import fft as sfft
from scipy import special

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
#: above this many targets the FFT products are kept on their significant support only.
_WINDOW_MIN_N = 1 << 16
#: targets per exactly multiplied block of the windowed FFT.
_BLOCK = 256
#: blocks multiplied out at once (bounds the memory of the exact stage).
_CHUNK_BLOCKS = 2048


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


def _pair_products(polys: np.ndarray, direct_max: int = _DIRECT_MAX_LEN) -> np.ndarray:
    """Products of consecutive row pairs: (2k, L) coefficient rows -> (k, 2L) rows."""
    a, b = polys[0::2], polys[1::2]
    length = a.shape[1]  # both factors have this length; the product has 2 * length - 1
    if length <= direct_max:
        prod = np.zeros((a.shape[0], 2 * length))
        for s in range(length):  # loop over coefficient shifts (<= 64), not over targets
            prod[:, s:s + length] += a[:, s:s + 1] * b
        return prod
    size = 2 * length
    spec = sfft.rfft(polys, size, axis=1)  # both factors in one batched transform
    return sfft.irfft(spec[0::2] * spec[1::2], size, axis=1)


def _pmf_fft(p: np.ndarray) -> np.ndarray:
    n = p.size
    if n == 0:
        return np.ones(1)
    if n > _WINDOW_MIN_N:
        return _pmf_fft_windowed(p)
    m = 1 << int(np.ceil(np.log2(max(n, 1))))
    # Level 0: m polynomials of length 2 ((1 - p) + p x), padded with the identity (1 + 0 x).
    polys = np.zeros((m, 2))
    polys[:, 0] = 1.0
    polys[:n, 0] = 1.0 - p
    polys[:n, 1] = p
    while polys.shape[0] > 1:
        polys = _pair_products(polys)
    pmf = polys[0, :n + 1]
    pmf = np.clip(pmf, 0.0, None)
    return pmf / pmf.sum()


def _window(mean: np.ndarray, var: np.ndarray, degree: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] (inclusive) of each partial sum's significant support: mean -+ (12 sd + 60).

    Bernstein's inequality bounds the mass outside by 2 exp(-t^2 / (2 (var + t / 3))) with
    t = 12 sd + 60, i.e. below e^-89 ~ 1e-39 per block whatever sd: far below the FFT's own
    absolute round-off (1e-16), so dropping it cannot be seen in any tail value."""
    t = 12.0 * np.sqrt(var) + 60.0
    lo = np.maximum(np.floor(mean - t), 0).astype(np.int64)
    hi = np.minimum(np.ceil(mean + t), degree).astype(np.int64)
    return lo, hi


def _trim(polys: np.ndarray, off: np.ndarray, mean: np.ndarray, var: np.ndarray,
          degree: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cut each row (offset ``off``) to its significant support (:func:`_window`), all rows
    to the widest window; returns the rows and their new offsets."""
    lo, hi = _window(mean, var, degree)
    lo = np.clip(lo - off, 0, polys.shape[1] - 1)
    hi = np.clip(hi - off, lo, polys.shape[1] - 1)
    w = int((hi - lo).max()) + 1
    idx = np.minimum(lo[:, None] + np.arange(w)[None, :], polys.shape[1] - 1)
    out = np.take_along_axis(polys, idx, axis=1)
    out[lo[:, None] + np.arange(w)[None, :] > hi[:, None]] = 0.0
    return out, off + lo


def _pmf_fft_windowed(p: np.ndarray) -> np.ndarray:
    """The divide and conquer of :func:`_pmf_fft` for many targets, keeping each partial
    product only on its significant support (:func:`_window`).

    Blocks of :data:`_BLOCK` targets are multiplied out exactly (as in ``_pmf_fft``, a chunk of
    blocks at a time to bound memory); from there each partial product is a window (offset,
    coefficients) whose width grows like the partial sum's standard deviation, not like its
    number of targets, so 1e7 targets cost seconds and a few hundred MB instead of a minute and
    ~3 GB.  (Direct convolution only up to length 8 here: for millions of short rows the
    batched FFT is cheaper.)"""
    n = p.size
    nb = -(-n // _BLOCK)
    pp = np.zeros(nb * _BLOCK)
    pp[:n] = p
    blocks = pp.reshape(nb, _BLOCK)
    mean = blocks.sum(axis=1)
    var = (blocks * (1 - blocks)).sum(axis=1)
    degree = np.full(nb, _BLOCK, dtype=np.int64)
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    for c in range(0, nb, _CHUNK_BLOCKS):
        sl = slice(c, min(c + _CHUNK_BLOCKS, nb))
        q = blocks[sl].reshape(-1)
        polys = np.empty((q.size, 2))
        polys[:, 0] = 1.0 - q
        polys[:, 1] = q
        while polys.shape[1] < 2 * _BLOCK:
            polys = _pair_products(polys, 8)
        parts.append(_trim(polys, np.zeros(polys.shape[0], dtype=np.int64), mean[sl], var[sl],
                           degree[sl]))
    width = max(x.shape[1] for x, _ in parts)
    polys = np.concatenate([np.pad(x, ((0, 0), (0, width - x.shape[1]))) for x, _ in parts])
    off = np.concatenate([o for _, o in parts])
    while polys.shape[0] > 1:
        if polys.shape[0] % 2:  # pad with the identity polynomial (1 + 0 x), offset 0
            polys = np.vstack([polys, np.eye(1, polys.shape[1])])
            off = np.append(off, 0)
            mean, var = np.append(mean, 0.0), np.append(var, 0.0)
            degree = np.append(degree, 0)
        polys = _pair_products(polys)
        off = off[0::2] + off[1::2]
        mean, var = mean[0::2] + mean[1::2], var[0::2] + var[1::2]
        degree = degree[0::2] + degree[1::2]
        polys, off = _trim(polys, off, mean, var, degree)
    pmf = np.zeros(n + 1)
    o = int(off[0])
    w = min(polys.shape[1], n + 1 - o)
    pmf[o:o + w] = polys[0, :w]
    pmf = np.clip(pmf, 0.0, None)
    return pmf / pmf.sum()


def _binomial_pmf(n: int, q: float) -> np.ndarray:
    """Pr[Binomial(n, q) = s], s = 0..n, from the log pmf (the Poisson-binomial with equal
    probabilities: closed form, O(n), accurate relative to each entry)."""
    k = np.arange(n + 1, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        logpmf = (special.gammaln(n + 1.0) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
                  + special.xlogy(k, q) + special.xlog1py(n - k, -q))
    return np.exp(logpmf)


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
        if p.size > DP_MAX_N and p.min() == p.max():
            return _binomial_pmf(p.size, float(p[0]))  # one prior: a binomial, closed form
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
