"""One-run audit of Steinke, Nasr and Jagielski, *Privacy Auditing with One (1) Training Run*
(NeurIPS 2023, arXiv:2305.08846) -- the baseline of Bits Transmission and Tight One-Run (TOR notes
§5.1,
BT notes §7.1).

Game: m canaries, each included with probability 1/2; after one run the auditor guesses
"included" for the k+ highest scores and "excluded" for the k- lowest and abstains on the
rest; r = k+ + k- guesses, v of them correct.  Under (eps, delta)-DP (their Theorem 5.2 /
Corollary 5.4 and the p-value code of their Appendix D):

    q      = e^eps / (1 + e^eps)
    beta   = P[Binomial(r, q) >= v]
    alpha  = max_{i=1..v} (1/i) P[v - i <= Binomial(r, q) < v]
           = max_{i=1..v} (1/i) sum_{j=1..i} pmf(v - j; r, q)
    p(eps) = min(1, beta + 2 m delta alpha)

and the bound is the largest eps with p(eps) < 1 - confidence, found by growing an upper
bracket by +1 (capped at ``eps_cap``) and root finding on log p - log(1 - confidence) inside
the last unit bracket (shared helpers :func:`dpaudit.search.largest_rejected_root` /
``largest_rejected_roots``).  The 2 m delta term makes the bound collapse to 0 for large
m delta (Tight One-Run §6.2, Fig. 7).

Evaluation (issue 14): :func:`steinke_many` computes the bounds of many observations (the
guess-count grid of ``audit_one_run``) together, every p-value of a search step in one
vectorised evaluation; :func:`steinke` is its one-observation case.  alpha is the maximum of
the window average over the window's left end k = v - i, which is quasi-concave in k
(:func:`_alpha`): it is located on a short window of consecutive k with O(1) binomial
CDF/SF evaluations, not by summing all O(sqrt r) pmf terms.

``variant="port"`` reproduces the Tight One-Run authors' comparison port (their
``compare/RESULTS.txt``; TOR notes §4.3, §5.1), whose window is shifted by one:
alpha = max_i (1/i) (CDF(v) - CDF(v - i)) = max_i (1/i) sum_{j=0..i-1} pmf(v - j).  It is
offered only to reproduce their numbers; the original is the published statistic.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from scipy import special
from scipy.special import _ufuncs as _scipy_ufuncs

from dpaudit.results import AuditResult
from dpaudit.search import largest_rejected_roots
from dpaudit.validation import (
    check_choice,
    check_confidence,
    check_delta,
    check_nested_count_arrays,
    check_nested_counts,
    check_positive,
)

__all__ = ["steinke", "steinke_many", "steinke_p_value", "STEINKE_VARIANTS"]

STEINKE_VARIANTS = ("original", "port")


def _check_counts(m: Any, guesses: Any, correct: Any) -> tuple[int, int, int]:
    return check_nested_counts(m=m, guesses=guesses, correct=correct)  # type: ignore[return-value]


def _logpmf(k: Any, r: Any, q: Any) -> Any:
    """log pmf of Binomial(r, q) at k: the formula of ``scipy.stats.binom.logpmf``
    (gammaln(r+1) - gammaln(k+1) - gammaln(r-k+1) + xlogy(k, q) + xlog1py(r-k, -q)) without
    its per-call argument handling (this is called in tight loops); broadcasts."""
    k = np.asarray(k, dtype=float)
    r = np.asarray(r, dtype=float)
    combiln = special.gammaln(r + 1.0) - (special.gammaln(k + 1) + special.gammaln(r - k + 1))
    return combiln + special.xlogy(k, q) + special.xlog1py(r - k, -q)


# The binomial SF/CDF behind ``scipy.stats.binom`` (Boost's incomplete beta: relative accuracy
# ~1e-15 also for r ~ 1e7, where Cephes' ``bdtr``/``bdtrc`` lose up to ~1e-10), called as
# ufuncs without ``scipy.stats``' per-call argument handling.  They are private SciPy names:
# when absent, the public Cephes ufuncs are used.
_BOOST_SF = getattr(_scipy_ufuncs, "_binom_sf", None)
_BOOST_CDF = getattr(_scipy_ufuncs, "_binom_cdf", None)


def _sf(k: np.ndarray, r: np.ndarray, q: np.ndarray) -> np.ndarray:
    """P[Binomial(r, q) > k] for whole-number arrays k >= 0 (what ``stats.binom.sf`` gives)."""
    if _BOOST_SF is not None:
        return _BOOST_SF(k, r, q)
    return special.bdtrc(k.astype(np.int64), r.astype(np.int64), q)  # pragma: no cover


def _cdf(k: np.ndarray, r: np.ndarray, q: np.ndarray) -> np.ndarray:
    """P[Binomial(r, q) <= k] for whole-number arrays k >= 0 (``stats.binom.cdf``)."""
    if _BOOST_CDF is not None:
        return _BOOST_CDF(k, r, q)
    return special.bdtr(k.astype(np.int64), r.astype(np.int64), q)  # pragma: no cover


#: half-width of the first window searched for the maximising k of alpha (cold start)
_HALF = 24


@functools.cache
def _normal_argmax_table() -> tuple[np.ndarray, np.ndarray]:
    """z*(zt): the maximiser of (Phi(zt) - Phi(z)) / (zt - z) over z < zt (the normal
    approximation of alpha's window, in standard units), on a grid of zt > 0, by bisection
    on phi(z)(zt - z) = Phi(zt) - Phi(z).  Only a starting guess for the exact search."""
    zt = np.concatenate([np.linspace(1e-3, 10.0, 400), np.geomspace(10.0, 1e7, 400)[1:]])
    a, b = np.full(zt.shape, -60.0), np.zeros_like(zt)
    for _ in range(80):
        z = 0.5 * (a + b)
        g = np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) * (zt - z) - (
            special.ndtr(zt) - special.ndtr(z))
        a, b = np.where(g < 0, z, a), np.where(g < 0, b, z)
    return zt, 0.5 * (a + b)


def _alpha(r: np.ndarray, top: np.ndarray, q: np.ndarray, s_top: np.ndarray,
           hint: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """alpha = max_{0 <= k <= top} W(k) / (top - k + 1), W(k) = P[k <= Binomial(r, q) <= top]
    (the window sums of the module docstring with k = v - i; top = v - 1, or v for the port),
    for arrays of (r, top, q); ``s_top`` = P[X > top].  Returns (alpha, maximising k).

    The window average is quasi-concave in k (the pmf is unimodal: walking left from top, the
    average grows while the next pmf exceeds it, and once a pmf falls below the average --
    necessarily left of the mode -- every later one does too), so a local maximum is the
    maximum.  It is found on a window of consecutive k around a guess (``hint``, or the
    normal approximation; entries of ``hint`` < 0 = no hint), moved until the maximum is
    inside it: W at the window's top end
    from the binomial CDF/SF (the one farther from cancellation), the rest by adding pmf
    terms.  O(1) CDF evaluations per point instead of O(sqrt r) pmf terms; exact (it is the
    same maximum), up to rounding.
    """
    n = r.size
    mean = r * q
    sd = np.sqrt(r * q * (1 - q))
    mode = np.minimum(r, np.floor((r + 1) * q))
    zt_tab, z_tab = _normal_argmax_table()
    zt = (top + 0.5 - mean) / np.maximum(sd, 1e-300)
    z = np.interp(zt, zt_tab, z_tab, left=0.0, right=z_tab[-1])
    guess = np.where(top <= mode, top, np.floor(mean + sd * z))
    half = np.full(n, _HALF)
    if hint is not None:
        # a warm start (>= 0) replaces the normal-approximation guess, with a narrower window
        warm = hint >= 0
        guess = np.where(warm, hint, guess)
        half[warm] = 8
    guess = np.clip(guess, 0, top)
    kb = np.maximum(guess - half, 0)
    kt = np.minimum(kb + 2 * half, top)
    kb = np.maximum(kt - 2 * half, 0)
    # top at or left of the mode: the pmf rises up to top, so k = top (alpha = pmf(top))
    rising = top <= mode
    kb[rising] = top[rising]
    kt[rising] = top[rising]
    alpha = np.zeros(n)
    kstar = np.zeros(n)
    todo = np.arange(n)
    while todo.size:
        rr, tt, qq, kb_, kt_ = r[todo], top[todo], q[todo], kb[todo], kt[todo]
        w = int((kt_ - kb_).max()) + 1
        ks = kb_[:, None] + np.arange(w)[None, :]
        valid = ks <= kt_[:, None]
        ks = np.minimum(ks, kt_[:, None])
        # W(kt) = P[kt <= X <= top]
        km1 = kt_ - 1
        wt = np.empty(todo.size)
        right = km1 >= mean[todo]
        if right.any():
            wt[right] = _sf(km1[right], rr[right], qq[right]) - s_top[todo][right]
        left = ~right
        if left.any():
            fk = np.where(km1[left] >= 0,
                          _cdf(np.maximum(km1[left], 0), rr[left], qq[left]), 0.0)
            above = tt[left] >= mean[todo][left]
            f_top = np.where(above, 1.0 - s_top[todo][left],
                             _cdf(tt[left], rr[left], qq[left]))
            wt[left] = f_top - fk
        pmf = np.exp(_logpmf(ks, rr[:, None], qq[:, None]))
        pmf = np.where(valid & (ks < kt_[:, None]), pmf, 0.0)
        # W(k) = W(kt) + sum_{k <= j < kt} pmf(j)
        tail = np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1]
        avg = np.where(valid, (wt[:, None] + tail) / (tt[:, None] - ks + 1), -np.inf)
        j = np.argmax(avg, axis=1)
        karg = ks[np.arange(todo.size), j]
        best = avg[np.arange(todo.size), j]
        # settled: the maximum is inside the window (or at an end of [0, top]).  Averages
        # that all underflow to 0 mean a window deep in the right tail (left of the mode
        # W(k) >= P[mode <= X <= top] > 0): walk down towards the mode.
        fixed = rising[todo]
        under = ~(best > 0) & (kb_ > 0) & ~fixed
        go_up = (karg >= kt_) & (kt_ < tt) & ~fixed & ~under
        go_down = ((karg <= kb_) & (kb_ > 0) & ~go_up & ~fixed) | under
        ok = ~(go_up | go_down)
        alpha[todo[ok]] = np.maximum(best[ok], 0.0)
        kstar[todo[ok]] = karg[ok]
        # move the window past the edge where the maximum sat, 4x wider
        h2 = half[todo] * 4
        nb = np.where(go_up, kt_ - 1, np.maximum(kb_ + 1 - 2 * h2, 0))
        nt = np.where(go_up, np.minimum(kt_ - 1 + 2 * h2, tt), kb_ + 1)
        nb = np.where(go_up, np.maximum(np.minimum(nb, nt - 2 * h2), 0), nb)
        kb[todo], kt[todo], half[todo] = nb, nt, h2
        todo = todo[~ok]
    return alpha, kstar


def _p_values(m: int, r: np.ndarray, v: np.ndarray, eps: np.ndarray, delta: float,
              variant: str, hint: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """p(eps) of the module docstring for arrays of (r, v, eps) (same m, delta, variant),
    evaluated for all entries at once.  Returns (p, maximising k of alpha) (k is a warm
    start for the next call at a nearby eps; -1 where alpha was not needed)."""
    r = np.asarray(r, dtype=float)
    v = np.asarray(v, dtype=float)
    eps = np.asarray(eps, dtype=float)
    p = np.ones(r.size)
    kstar = np.full(r.size, -1.0)
    pos = v > 0
    if not pos.any():
        return p, kstar
    rr, vv = r[pos], v[pos]
    q = special.expit(eps[pos])
    beta = _sf(vv - 1, rr, q)
    pp = beta.copy()
    if delta > 0.0:
        need = beta < 1.0
        if need.any():
            top = vv[need] - 1 if variant == "original" else vv[need]
            s_top = beta[need] if variant == "original" else _sf(top, rr[need], q[need])
            h = None if hint is None else hint[pos][need]
            alpha, ks = _alpha(rr[need], top, q[need], s_top, h)
            pp[need] = beta[need] + 2.0 * m * delta * alpha
            kk = np.full(rr.size, -1.0)
            kk[need] = ks
            kstar[pos] = kk
    p[pos] = np.minimum(1.0, pp)
    return p, kstar


def steinke_p_value(m: int, guesses: int, correct: int, eps: float, delta: float = 1e-5,
                    variant: str = "original") -> float:
    """p-value of "the mechanism is (eps, delta)-DP" given ``correct`` of ``guesses`` right
    among ``m`` canaries (Steinke et al. 2023, Cor. 5.4 / Appendix D; module docstring)."""
    m, r, v = _check_counts(m, guesses, correct)
    eps = float(eps)
    if not (eps >= 0 and math.isfinite(eps)):
        raise ValueError(f"eps must be finite and >= 0, got {eps!r}")
    delta = check_delta(delta)
    check_choice("variant", variant, STEINKE_VARIANTS)
    return float(_p_values(m, np.array([r]), np.array([v]), np.array([eps]), delta,
                           variant)[0][0])


#: integer epsilons tried per pass while growing the search bracket
_GROW = 4


def steinke_many(m: int, guesses: Any, correct: Any, delta: float = 1e-5,
                 confidence: float = 0.95, variant: str = "original", *, tol: float = 1e-6,
                 eps_cap: float = 200.0) -> list[AuditResult]:
    """:func:`steinke` for many observations (guesses[i], correct[i]) of the same ``m``
    canaries at once -- e.g. the guess-count grid of ``audit_one_run``.

    Returns one AuditResult per observation with the fields of :func:`steinke`.  The search
    is the same for every observation -- the bracket grown by +1 from eps = 1 while rejected
    (capped at ``eps_cap``), then Chandrupatla root finding on log p - log(1 - confidence)
    inside the last unit bracket -- but every step evaluates the p-values of all
    observations together (the integers of the bracket growth ``_GROW`` at a time), and the
    root finding runs on all brackets at once
    (:func:`dpaudit.search.largest_rejected_roots`, the vectorised
    :func:`dpaudit.search.largest_rejected_root`).  Contract: the returned epsilon is an
    actually rejected point within tol * max(1, eps) below the boundary.
    """
    m, g_arr, c_arr = check_nested_count_arrays("m", m, "guesses", guesses, "correct", correct)
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    check_choice("variant", variant, STEINKE_VARIANTS)
    tol = check_positive("tol", tol, upper=0.1)
    eps_cap = check_positive("eps_cap", eps_cap)
    sig = 1.0 - confidence
    log_sig = math.log(sig)
    n = g_arr.size
    r_f, v_f = g_arr.astype(float), c_arr.astype(float)
    cache: list[dict[float, float]] = [{} for _ in range(n)]
    last_k = np.full(n, -1.0)
    last_q = np.full(n, 0.5)

    def pvals(eps: np.ndarray, idx: np.ndarray) -> np.ndarray:
        eps = np.asarray(eps, dtype=float)
        out = np.empty(eps.size)
        miss = []
        for j, (e, i) in enumerate(zip(eps.tolist(), idx.tolist(), strict=True)):
            hit = cache[i].get(e)
            if hit is None:
                miss.append(j)
            else:
                out[j] = hit
        if miss:
            mj = np.array(miss)
            e_m, i_m = eps[mj], idx[mj]
            q_m = special.expit(e_m)
            # warm start: the last maximiser of this observation, at the same standardised
            # position (k - mean) / sd under the new q
            lq = last_q[i_m]
            z = (last_k[i_m] - r_f[i_m] * lq) / np.sqrt(r_f[i_m] * lq * (1 - lq))
            hint = np.where(last_k[i_m] >= 0,
                            np.round(r_f[i_m] * q_m + z * np.sqrt(r_f[i_m] * q_m * (1 - q_m))),
                            -1.0)
            pv, ks = _p_values(m, r_f[i_m], v_f[i_m], e_m, delta, variant, hint)
            out[mj] = pv
            for e, i, pvi in zip(e_m.tolist(), i_m.tolist(), pv.tolist(), strict=True):
                cache[i][e] = pvi
            # (a maximiser at top -- the pmf still rising there -- says nothing about the next)
            top_m = v_f[i_m] - (1 if variant == "original" else 0)
            upd = (ks >= 0) & (ks < top_m)
            last_k[i_m[upd]], last_q[i_m[upd]] = ks[upd], q_m[upd]
        return out

    def margin(eps: np.ndarray, idx: np.ndarray) -> np.ndarray:
        # eps is rejected iff p(eps) < sig (strict, their convention): margin < 0
        p = pvals(eps, idx)
        with np.errstate(divide="ignore"):
            d = np.where(p <= 0, -np.inf, np.log(np.where(p > 0, p, 1.0)) - log_sig)
        return np.where(d == 0, 1e-300, d)

    # their bracket: eps_max = 1, grown by +1 while still rejected (capped): hi runs through
    # h_j = min(j, eps_cap), j = 1, 2, ..., and stops at the first h_j that reaches the cap or
    # is not rejected; lo = h_{j-1} (h_0 = 0).  _GROW consecutive j per pass.
    lo, hi = np.zeros(n), np.zeros(n)
    growing = np.arange(n)
    j0 = 1
    while growing.size:
        js = np.arange(j0, j0 + _GROW, dtype=float)
        cand = np.minimum(js, eps_cap)
        at_cap = cand >= eps_cap
        stop = np.broadcast_to(at_cap, (growing.size, _GROW)).copy()
        cols = np.flatnonzero(~at_cap)
        if cols.size:
            e = np.broadcast_to(cand[cols], (growing.size, cols.size))
            rows = np.broadcast_to(growing[:, None], e.shape)
            stop[:, cols] = (margin(e.reshape(-1), rows.reshape(-1)) >= 0).reshape(e.shape)
        ended = stop.any(axis=1)
        k = np.argmax(stop, axis=1)[ended]
        g_end = growing[ended]
        hi[g_end] = cand[k]
        lo[g_end] = np.where(j0 + k - 1 >= 1, np.minimum(j0 + k - 1.0, eps_cap), 0.0)
        growing = growing[~ended]
        j0 += _GROW
    res = largest_rejected_roots(margin, lo, hi, tol=tol)
    out = []
    idx_all = np.arange(n)
    eps_out = np.array([0.0 if rs.nothing_rejected else rs.theta for rs in res])
    p_out = pvals(eps_out, idx_all)
    for i, rs in enumerate(res):
        r, v = int(g_arr[i]), int(c_arr[i])
        eps = float(eps_out[i])
        hit = rs.hit_ceiling and hi[i] >= eps_cap
        out.append(AuditResult(
            epsilon=eps, delta=delta, confidence=confidence, method="steinke",
            params={"eps": eps}, p_value=float(p_out[i]),
            settings={"m": m, "guesses": r, "correct": v, "delta": delta,
                      "confidence": confidence, "variant": variant, "tol": tol,
                      "eps_cap": eps_cap},
            details={"hit_ceiling": bool(hit), "nothing_rejected": rs.nothing_rejected,
                     "accuracy": v / r if r else math.nan}))
    return out


def steinke(m: int, guesses: int, correct: int, delta: float = 1e-5,
            confidence: float = 0.95, variant: str = "original", *, tol: float = 1e-6,
            eps_cap: float = 200.0) -> AuditResult:
    """Steinke-Nasr-Jagielski one-run epsilon lower bound at ``delta``.

    Args:
      m: number of canaries (each included with probability 1/2).
      guesses: number of non-abstained guesses r = k+ + k- (0 <= r <= m).
      correct: number of correct guesses v (0 <= v <= r).
      delta: delta of the (eps, delta)-DP null (enters through the 2 m delta term).
      confidence: probability that the bound holds; eps is rejected iff
        p(eps) < 1 - confidence (their convention).
      variant: "original" (published statistic) or "port" (Tight One-Run authors' port).
      tol: relative tolerance of the root finding on eps.
      eps_cap: largest eps searched; ``details["hit_ceiling"]`` is set when reached.

    This is :func:`steinke_many` with one observation (one implementation).
    """
    m, r, v = _check_counts(m, guesses, correct)
    return steinke_many(m, [r], [v], delta, confidence, variant, tol=tol,
                        eps_cap=eps_cap)[0]
