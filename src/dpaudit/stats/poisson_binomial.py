"""The Poisson-binomial distribution: S = sum_i Bernoulli(p_i), independent, heterogeneous p_i.

Used by the risk bounds of Beyond Worst Case (Thm 3.2 / Cor 3.4 / Thm 3.5 dominate the number of
successfully attacked targets by a Poisson-binomial with flipping probabilities beta_i; BWC notes
§1.4 and §1.10.1), for thousands to millions of targets.

Three computations of the pmf, cross-checked in ``tests/test_poisson_binomial.py``:

* ``"dp"``  -- the exact O(n^2) dynamic programme of BWC notes §1.10.1
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

import numpy as np
from numpy.typing import ArrayLike
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
#: blocks multiplied out at once (bounds the memory of the exact stage; arrays of a few MB).
_CHUNK_BLOCKS = 256


def _check_probs(probs: ArrayLike, name: str = "probs") -> np.ndarray:
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


def poisson_binomial_logpmf(probs: ArrayLike) -> np.ndarray:
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


def _conv_halves(polys: np.ndarray, direct_max: int = 8) -> np.ndarray:
    """Products polys[i] * polys[h + i], i < h = len // 2, of coefficient rows along the last
    axis (length w -> 2 w - 1), all pairs at once.

    Pairing the two contiguous halves (rather than rows 2i, 2i + 1) avoids strided copies.  Up
    to ``direct_max`` coefficients by direct convolution (exact products and sums); above, one
    batched real FFT of size N = next_fast_len(2 w - 2).  When N = 2 w - 2 (w = 2^k + 1, as
    in the exact stage) the circular convolution folds the top coefficient c_{2w-2} onto c_0;
    both are single products, a_0 b_0 and a_{w-1} b_{w-1}, and are set exactly."""
    h = polys.shape[0] // 2
    a, b = polys[:h], polys[h:2 * h]
    w = polys.shape[-1]
    length = 2 * w - 1
    if w <= direct_max:
        out = np.zeros(a.shape[:-1] + (length,))
        for s in range(w):  # loop over coefficient shifts (<= direct_max), not over targets
            out[..., s:s + w] += a[..., s:s + 1] * b
        return out
    size = sfft.next_fast_len(length - 1, real=True)
    spec = sfft.rfft(polys[:2 * h], size, axis=-1)  # both factors in one batched transform
    sa = spec[:h]
    sa *= spec[h:]
    prod = sfft.irfft(sa, size, axis=-1)
    if size >= length:
        return prod[..., :length]
    out = np.empty(a.shape[:-1] + (length,))
    out[..., :size] = prod
    out[..., 0] = a[..., 0] * b[..., 0]
    out[..., size] = a[..., -1] * b[..., -1]
    return out


def _reduce_windowed(polys: np.ndarray, off: np.ndarray, mean: np.ndarray, var: np.ndarray,
                     degree: np.ndarray) -> tuple[np.ndarray, int, float, float, int]:
    """Multiply windowed rows (offset ``off``, coefficients ``polys``) down to one, pairing
    halves and cutting every product to its significant support (:func:`_trim`); returns
    (coefficients, offset, mean, variance, degree) of the product."""
    while polys.shape[0] > 1:
        if polys.shape[0] % 2:  # pad with the identity polynomial (1 + 0 x), offset 0
            polys = np.vstack([polys, np.eye(1, polys.shape[1])])
            off = np.append(off, 0)
            mean, var = np.append(mean, 0.0), np.append(var, 0.0)
            degree = np.append(degree, 0)
        h = polys.shape[0] // 2
        polys = _conv_halves(polys, _DIRECT_MAX_LEN)
        off = off[:h] + off[h:]
        mean, var = mean[:h] + mean[h:], var[:h] + var[h:]
        degree = degree[:h] + degree[h:]
        polys, off = _trim(polys, off, mean, var, degree)
    return polys[0], int(off[0]), float(mean[0]), float(var[0]), int(degree[0])


def _pmf_fft_windowed(p: np.ndarray) -> np.ndarray:
    """The divide and conquer of :func:`_pmf_fft` for many targets, keeping each partial
    product only on its significant support (:func:`_window`).

    The targets are taken a chunk of :data:`_CHUNK_BLOCKS` blocks of :data:`_BLOCK` targets at
    a time (arrays of a few MB, so memory stays bounded and the work stays in cache).  In a
    chunk, each block is multiplied out exactly, its coefficient rows stored at their exact
    length (degree + 1) so that the FFT sizes are powers of two without a zero half
    (:func:`_conv_halves`); then the block products are cut to their significant support and
    multiplied down to one window per chunk (:func:`_reduce_windowed`), and finally the chunk
    windows are multiplied together the same way.  A window's width grows like the partial
    sum's standard deviation, not like its number of targets, so 1e7 targets cost about two
    seconds and tens of MB beyond the pmf, instead of a minute and ~3 GB unwindowed.  Same
    products as the previous pairwise version (kept in ``tests/test_risk_summary.py`` as
    the reference), in a different order: the two agree to FFT round-off."""
    n = p.size
    span = _CHUNK_BLOCKS * _BLOCK
    parts: list[tuple[np.ndarray, int, float, float, int]] = []
    for c in range(0, n, span):
        chunk = p[c:c + span]
        nb = -(-chunk.size // _BLOCK)
        if chunk.size < nb * _BLOCK:  # the last block: pad with p = 0 (the identity factor)
            chunk = np.concatenate([chunk, np.zeros(nb * _BLOCK - chunk.size)])
        blocks = chunk.reshape(nb, _BLOCK)
        mean = blocks.sum(axis=1)
        var = (blocks * (1 - blocks)).sum(axis=1)
        degree = np.full(nb, _BLOCK, dtype=np.int64)
        q = blocks.T  # (_BLOCK, nb): the k-th target of every block of the chunk
        polys = np.empty(q.shape + (2,))
        polys[..., 0] = 1.0 - q
        polys[..., 1] = q
        while polys.shape[0] > 1:  # _BLOCK is a power of two: halves pair up exactly
            polys = _conv_halves(polys)
        rows, off = _trim(polys[0], np.zeros(nb, dtype=np.int64), mean, var, degree)
        parts.append(_reduce_windowed(rows, off, mean, var, degree))
    width = max(x.size for x, *_ in parts)
    polys = np.stack([np.pad(x, (0, width - x.size)) for x, *_ in parts])
    row, o, _, _, _ = _reduce_windowed(
        polys, np.array([x[1] for x in parts], dtype=np.int64),
        np.array([x[2] for x in parts]), np.array([x[3] for x in parts]),
        np.array([x[4] for x in parts], dtype=np.int64))
    pmf = np.zeros(n + 1)
    w = min(row.size, n + 1 - o)
    pmf[o:o + w] = row[:w]
    np.clip(pmf, 0.0, None, out=pmf)
    pmf /= pmf.sum()
    return pmf


def _binomial_pmf(n: int, q: float) -> np.ndarray:
    """Pr[Binomial(n, q) = s], s = 0..n, from the log pmf (the Poisson-binomial with equal
    probabilities: closed form, O(n), accurate relative to each entry)."""
    k = np.arange(n + 1, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        # in place (three n-arrays at 1e7 instead of six), the same operations in the same
        # order as gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1) + xlogy(k, q)
        # + xlog1py(n - k, -q)
        out = k + 1
        special.gammaln(out, out=out)
        np.subtract(special.gammaln(n + 1.0), out, out=out)
        tmp = n - k
        tmp += 1
        special.gammaln(tmp, out=tmp)
        out -= tmp
        special.xlogy(k, q, out=tmp)
        out += tmp
        np.subtract(n, k, out=tmp)
        special.xlog1py(tmp, -q, out=tmp)
        out += tmp
        np.exp(out, out=out)
    return out


def poisson_binomial_pmf(probs: ArrayLike, *, method: str = "auto") -> np.ndarray:
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


def poisson_binomial_tail(probs: ArrayLike, *, method: str = "auto") -> np.ndarray:
    """T(v) = Pr[S >= v] for v = 0..n+1 (length n + 2; T(0) = 1, T(n+1) = 0).

    The reverse cumulative sum of the pmf (BWC notes §1.10.1), clipped to [0, 1] and made
    non-increasing so that rounding never produces a non-monotone tail.
    """
    pmf = poisson_binomial_pmf(probs, method=method)
    tail = np.empty(pmf.size + 1)
    np.cumsum(pmf[::-1], out=tail[-2::-1])  # in place: one n-array at 1e7 targets
    del pmf
    tail[-1] = 0.0
    tail[0] = 1.0
    np.clip(tail, 0.0, 1.0, out=tail)
    np.minimum.accumulate(tail, out=tail)
    return tail


def poisson_binomial_sf(probs: ArrayLike, v: ArrayLike, *, method: str = "auto"
                        ) -> np.ndarray | float:
    """Pr[S >= v] for (vectorised) real v: 1 for v <= 0 and 0 for v > n."""
    tail = poisson_binomial_tail(probs, method=method)
    return _tail_at(tail, v)


def _tail_at(tail: np.ndarray, v: ArrayLike) -> np.ndarray | float:
    """Evaluate a tail array T(0..n+1) at real v (T(v) = T(ceil v); 1 below 0, 0 above n)."""
    vv = np.asarray(v, dtype=float)
    if np.isnan(vv).any():
        raise ValueError("v must not contain NaN")
    idx = np.ceil(vv)
    n = tail.size - 2
    out = np.where(idx <= 0, 1.0, np.where(idx > n, 0.0,
                                           tail[np.clip(idx, 0, n + 1).astype(np.int64)]))
    return out if out.ndim else float(out)


def poisson_binomial_quantile(probs: ArrayLike, q: ArrayLike, *, method: str = "auto"
                              ) -> np.ndarray | int:
    """Smallest s in 0..n with Pr[S <= s] >= q (the q-quantile), vectorised over q in (0, 1)."""
    qq = np.asarray(q, dtype=float)
    if ((qq <= 0) | (qq >= 1) | np.isnan(qq)).any():
        raise ValueError(f"q must be in (0, 1), got {q!r}")
    cdf = np.cumsum(poisson_binomial_pmf(probs, method=method))
    s = np.searchsorted(cdf, qq * (1 - 1e-12), side="left")
    s = np.minimum(s, cdf.size - 1)
    return s if s.ndim else int(s)
