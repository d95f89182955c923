"""Exchangeable-Bernoulli (XBern) statistics for Lifted-DP audits (Pillutla et al., §3.3, App. C).

A LiDP trial yields a binary vector x in {0,1}^K (one test per random canary).  With i.i.d.
canaries and rejection sets that depend only on their own canary, x is *exchangeable*: its law
is XBern_K(mu_1, ..., mu_K), with mu_l = E[x_1 x_2 ... x_l] (Pillutla et al., Definition 5).

Everything depends on a trial only through its count s = sum_j x_j:

* per-trial moment estimators (Pillutla et al., Eq. 13 and Proposition 6, Eq. 14)

      m_l = (1 / C(K, l)) sum_{j_1 < ... < j_l} x_{j_1} ... x_{j_l} = C(s, l) / C(K, l),
      m_{l+1} = m_l (K m_1 - l) / (K - l)                           (recurrence, Eq. 14);

* empirical moments mu_hat_l = (1/n) sum_i m_l^(i) (unbiased for mu_l);
* exact variances (Eq. 17, Eq. 18, and the general order obtained by counting pairs of
  l-subsets by the size j of their intersection, LiDP notes §2.3):

      Var(m_1) = mu_1 / K - mu_1^2 + ((K - 1) / K) mu_2                          (Eq. 17)
      Var(m_2) = 2 mu_2 / (K(K-1)) - mu_2^2 + 4 (K-2) mu_3 / (K(K-1))
                 + (K-2)(K-3) mu_4 / (K(K-1))                                     (Eq. 18)
      E[m_l^2] = sum_{j=0..l} C(l, j) C(K-l, l-j) / C(K, l) * mu_{2l-j}          (general)

For threshold sweeps, :func:`moments_at_thresholds` computes mu_hat_l(tau) for a whole grid of
thresholds from raw scores with one global sort (no loop over trials, canaries or thresholds).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from dpaudit.validation import check_binary_array, check_choice, check_count, check_finite_matrix

__all__ = [
    "xbern_counts",
    "moments_closed_form",
    "moments_recurrence",
    "per_trial_moments",
    "empirical_moments",
    "moments_at_thresholds",
    "counts_at_threshold",
    "var_m1",
    "var_m2",
    "var_moment",
    "correlation_diagnostics",
    "DIRECTIONS",
]

DIRECTIONS = ("greater", "less")


def xbern_counts(x: ArrayLike) -> tuple[np.ndarray, int]:
    """Per-trial counts s_i = sum_j x_ij of an (n, K) 0/1 matrix; returns ``(s, K)``.

    A 1-D array is read as n trials with K = 1.
    """
    arr = np.asarray(x)
    if arr.ndim == 1:
        arr = arr.reshape(-1, 1)
    xb = check_binary_array("x", arr, ndim=2)
    return xb.sum(axis=1, dtype=np.int64), int(xb.shape[1])


def _check_counts(counts: ArrayLike, k: ArrayLike) -> tuple[np.ndarray, int]:
    kk = check_count("k", k, minimum=1)
    s = np.asarray(counts)
    try:
        sf = s.astype(float)
    except (TypeError, ValueError):
        raise ValueError("counts must be an array of whole numbers in [0, k]") from None
    if sf.size == 0:
        raise ValueError("counts must have at least 1 entry, got 0")
    if not np.isfinite(sf).all() or (sf != np.round(sf)).any() or (sf < 0).any() \
            or (sf > kk).any():
        raise ValueError(f"counts must be whole numbers in [0, k={kk}]")
    return sf, kk


def moments_closed_form(counts: ArrayLike, k: int, order: int) -> np.ndarray:
    """Per-trial m_l = C(s, l) / C(K, l) for l = 1..order; shape ``counts.shape + (order,)``.

    Closed form equal to Eq. 14 of Pillutla et al. (LiDP notes §2.2, DERIVED); uses
    ``scipy.special.comb`` (0 when l > s).
    """
    s, kk = _check_counts(counts, k)
    order = check_count("order", order, minimum=1)
    if order > kk:
        raise ValueError(f"order must be <= k ({kk}), got {order}")
    ls = np.arange(1, order + 1, dtype=float)
    return special.comb(s[..., None], ls) / special.comb(kk, ls)


def moments_recurrence(counts: ArrayLike, k: int, order: int) -> np.ndarray:
    """Per-trial m_l via Pillutla et al. Proposition 6 (Eq. 14): m_{l+1} = m_l (K m_1 - l)/(K - l).

    Shape ``counts.shape + (order,)``; O(order) vectorised passes.
    """
    s, kk = _check_counts(counts, k)
    order = check_count("order", order, minimum=1)
    if order > kk:
        raise ValueError(f"order must be <= k ({kk}), got {order}")
    out = np.empty(s.shape + (order,))
    out[..., 0] = s / kk
    for ell in range(1, order):  # loop over the moment order only (<= 4 in practice)
        out[..., ell] = out[..., ell - 1] * (s - ell) / (kk - ell)
    return out


per_trial_moments = moments_recurrence


def empirical_moments(counts: ArrayLike, k: int, order: int, axis: int = -1) -> np.ndarray:
    """mu_hat_l = mean over trials of m_l^(i), l = 1..order (Pillutla et al., Eq. 5 and Alg. 3-7).

    ``counts`` may carry leading batch axes; trials are along ``axis``.  The result has the
    trial axis removed and a trailing axis of length ``order``.
    """
    s = np.moveaxis(np.asarray(counts), axis, -1)
    return moments_recurrence(s, k, order).mean(axis=-2)


def counts_at_threshold(scores: ArrayLike, threshold: float, direction: str = "greater"
                        ) -> np.ndarray:
    """0/1 test outcomes of a score matrix: ``score >= tau`` ("greater") or ``<= tau``."""
    check_choice("direction", direction, DIRECTIONS)
    sc = np.asarray(scores, dtype=float)
    return sc >= threshold if direction == "greater" else sc <= threshold


def moments_at_thresholds(scores: ArrayLike, thresholds: ArrayLike, order: int,
                          direction: str = "greater") -> np.ndarray:
    """mu_hat_l(tau) for every threshold tau of a grid, from an (n, K) score matrix.

    The test outcome is x_ij(tau) = 1[score_ij >= tau] ("greater") or 1[score_ij <= tau]
    ("less").  Sort-based identity (no loop over trials or thresholds): rank the K scores of
    each trial from the most to the least "member-like" (r = 1, ..., K); lowering tau past the
    score of rank r raises that trial's count from r - 1 to r and C(s, l) by C(r - 1, l - 1), so

        mu_hat_l(tau) = (1 / (n C(K, l))) sum_{i, j : x_ij(tau) = 1} C(r_ij - 1, l - 1).

    One global sort of the n K scores with cumulative sums of these weights then answers every
    threshold by binary search: O(nK log(nK) + G log(nK)) for G thresholds.

    Returns an array of shape ``(G, order)``.
    """
    check_choice("direction", direction, DIRECTIONS)
    sc = check_finite_matrix("scores", scores)
    tau = np.atleast_1d(np.asarray(thresholds, dtype=float))
    if np.isnan(tau).any():
        raise ValueError("thresholds must not be NaN")
    n, kk = sc.shape
    order = check_count("order", order, minimum=1)
    if order > kk:
        raise ValueError(f"order must be <= K ({kk}), got {order}")
    if direction == "less":
        sc, tau = -sc, -tau
    # rank within trial: descending, r = 1..K
    srt = -np.sort(-sc, axis=1)
    ls = np.arange(1, order + 1, dtype=float)
    r = np.arange(1, kk + 1, dtype=float)
    w = special.comb(r[:, None] - 1, ls[None, :] - 1) / special.comb(kk, ls)[None, :]  # (K, L)
    flat = srt.reshape(-1)
    wflat = np.broadcast_to(w, (n, kk, order)).reshape(-1, order)
    idx = np.argsort(flat)  # order among ties is irrelevant: all tied scores count together
    vals = flat[idx]
    csum = np.concatenate([np.zeros((1, order)), np.cumsum(wflat[idx][::-1], axis=0)])
    # number of scores >= tau, counted from the top of the ascending sort
    n_ge = vals.size - np.searchsorted(vals, tau, side="left")
    return csum[n_ge] / n


def var_m1(mu1: Any, mu2: Any, k: int) -> np.ndarray:
    """Var(m_1) = mu_1/K - mu_1^2 + ((K-1)/K) mu_2 (Pillutla et al., Eq. 17)."""
    mu1 = np.asarray(mu1, dtype=float)
    mu2 = np.asarray(mu2, dtype=float)
    return mu1 / k - mu1**2 + (k - 1) / k * mu2


def var_m2(mu2: Any, mu3: Any, mu4: Any, k: int) -> np.ndarray:
    """Var(m_2) = sigma_2^2(mu_2, mu_3, mu_4) of Pillutla et al., Eq. 18 (K >= 2; terms vanish for
    K = 2, 3 as their coefficients do)."""
    if k < 2:
        raise ValueError(f"k must be >= 2 for Var(m_2), got {k}")
    mu2 = np.asarray(mu2, dtype=float)
    mu3 = np.asarray(mu3, dtype=float)
    mu4 = np.asarray(mu4, dtype=float)
    kk1 = k * (k - 1)
    return (2 * mu2 / kk1 - mu2**2 + 4 * (k - 2) * mu3 / kk1
            + (k - 2) * (k - 3) * mu4 / kk1)


def var_moment(mu: ArrayLike, ell: int, k: int) -> np.ndarray:
    """Exact Var(m_l) for any order l (LiDP notes §2.3, DERIVED; the paper's "apply recursively").

    ``mu`` holds mu_1..mu_{2l} on its last axis (entries beyond K are ignored: their
    coefficients C(K - l, l - j) vanish).  E[m_l^2] = sum_j C(l,j) C(K-l,l-j)/C(K,l) mu_{2l-j}.
    """
    ell = check_count("ell", ell, minimum=1)
    if ell > k:
        raise ValueError(f"ell must be <= k ({k}), got {ell}")
    m = np.asarray(mu, dtype=float)
    need = min(2 * ell, k)
    if m.shape[-1] < need:
        raise ValueError(f"mu must hold at least {need} moments on its last axis")
    j = np.arange(0, ell + 1)
    coef = special.comb(ell, j) * special.comb(k - ell, ell - j) / special.comb(k, ell)
    idx = 2 * ell - j  # moment order used by each term
    ok = coef > 0
    second = sum(coef[t] * m[..., idx[t] - 1] for t in np.flatnonzero(ok))
    return second - m[..., ell - 1] ** 2


def correlation_diagnostics(mu_hat: ArrayLike) -> dict[str, np.ndarray]:
    """Correlation diagnostics reported by Pillutla et al. (§4, Fig. 4): |mu2 - mu1^2|,
    |mu4 - mu2^2| and (reference code) mu3 - mu2^2, from moments mu_hat on the last axis."""
    m = np.asarray(mu_hat, dtype=float)
    out: dict[str, np.ndarray] = {}
    if m.shape[-1] >= 2:
        out["mu2_minus_mu1sq"] = np.abs(m[..., 1] - m[..., 0] ** 2)
    if m.shape[-1] >= 3:
        out["mu3_minus_mu2sq"] = m[..., 2] - m[..., 1] ** 2
    if m.shape[-1] >= 4:
        out["mu4_minus_mu2sq"] = np.abs(m[..., 3] - m[..., 1] ** 2)
    return out
