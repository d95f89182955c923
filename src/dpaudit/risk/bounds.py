"""Attack-success bounds for many targets (Beyond Worst Case §3, Thm 3.2, Thm 3.3, Cor 3.4, Thm
3.5).

All bounds are *tail bounds* B(v) >= Pr[L(X, A(a)) >= v] on the number L of successfully attacked
targets out of n, returned as a :class:`TailBound` holding B(v) for v = 0..n+1.  With
T(v) = Pr[sum_i S_i >= v], S_i ~ Bernoulli(beta(p_i, eps)) independent (a Poisson-binomial, see
:mod:`dpaudit.stats.poisson_binomial`):

* Thm 3.2 (pure eps-DP, conditional on the output; BWC notes §1.4):  B(v) = T(v), with p_i the
  prior success of the actual attempt z = A(a).
* Thm 3.3 (building block; BWC notes §1.5):  Pr[F + sum S_i >= v] = sum_j q_j T(v - j) for a
  randomized F in {0..n} with E[F] = n delta (:func:`thm33_tail`).
* Cor 3.4 (probability over data and mechanism; BWC notes §1.6):
  B(v) = min(1, E_{X, a}[T_{p(A(a))}(v)] + m n delta), estimated by Monte Carlo over fresh runs
  (:func:`cor34_tail` from sampled priors, :func:`cor34_monte_carlo` from a simulator), with the
  Monte Carlo standard error reported (the paper gives none).
* Thm 3.5 (attack-independent, one run; BWC notes §1.7):
  B(v) = min(1, T*(v) + alpha(v) m n delta),  alpha(v) = max_{1<=j<=n} (T*(v-j) - T*(v)) / j,
  T*(u) = 1 for u <= 0, with p*_i the a-priori best-guess success of target i.

m is ``delta_multiplier``: 1 is the paper's n delta (default); 2 reproduces the 2 m delta of
Steinke et al.'s reference code (BWC notes §1.7 factor-of-2 note, §8.4).

Decision (BWC notes §8.3): App. B prints alpha with a misplaced parenthesis,
"(1/j) Pr[S* >= v - j] - gamma"; the theorem statement's (T(v - j) - T(v)) / j is used.  It is the
exact optimum of the LP of App. B whenever m n delta <= 1 (the worst F puts mass m n delta / j on
one j), which ``tests/test_risk_bounds.py`` checks with ``scipy.optimize.linprog``.

The high-probability count bound (BWC notes §1.8(e)):  v_UB(c) = min{v in 0..n : B(v+1) <= 1 - c}.
With probability >= c at most v_UB(c) targets are attacked successfully.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from dpaudit.risk.flipping import (
    beta,
    beta_of_checked,
    check_epsilon,
    check_prior_array,
    check_prior_scalar,
)
from dpaudit.stats.poisson_binomial import _tail_at, poisson_binomial_tail
from dpaudit.validation import (
    check_choice,
    check_confidence,
    check_count,
    check_delta,
    check_probability,
    check_real_array,
)

__all__ = [
    "THEOREMS",
    "TailBound",
    "pure_tail",
    "alpha_term",
    "thm33_tail",
    "thm35_tail",
    "thm35_bound",
    "thm35_v_ub",
    "cor34_tail",
    "cor34_monte_carlo",
    "v_ub",
    "single_target_bound",
    "advantage",
    "advantage_bound",
    "epsilon_protect",
    "epsilon_for_posterior",
    "leaked_bits",
    "leak_probability",
    "epsilon_for_leak",
]

#: names of the bounds accepted by ``theorem=`` arguments.
THEOREMS = ("thm3.2", "cor3.4", "thm3.5")

#: above this n the full Thm 3.5 curve uses the O(n log n) vectorised tangent search instead of
#: the blocked O(n^2) vectorised maximisation (cross-checked in the tests).
_BRUTE_MAX_N = 3000


def _check_multiplier(m: Any) -> float:
    try:
        v = float(m)
    except (TypeError, ValueError):
        raise ValueError(f"delta_multiplier must be a number >= 0, got {m!r}") from None
    if not (0 <= v < math.inf):
        raise ValueError(f"delta_multiplier must be finite and >= 0, got {m!r}")
    return v


def _scalar_epsilon(epsilon: ArrayLike) -> float:
    e = check_epsilon(epsilon)
    if not isinstance(e, float):
        raise ValueError(f"epsilon must be a single number >= 0, got {epsilon!r}")
    return e


@dataclass(frozen=True)
class TailBound:
    """A tail bound B(v) >= Pr[#successes >= v], for v = 0..n+1 (B(0) = 1, B(n+1) = 0).

    Attributes:
      tail: the array B(0..n+1), non-increasing.
      theorem: "thm3.2" | "cor3.4" | "thm3.5" | "thm3.3".
      epsilon, delta, delta_multiplier: the guarantee and the delta-term multiplier used.
      n: number of targets.
      expected: sum_i beta_i (mean of the dominating Poisson-binomial; for Cor 3.4 averaged over
        the Monte Carlo runs).
      stderr: Monte Carlo standard error of B(v) (Cor 3.4 only), else None.
      settings: every input needed to reproduce the bound.
    """

    tail: np.ndarray
    theorem: str
    epsilon: float
    delta: float
    n: int
    expected: float
    delta_multiplier: float = 1.0
    stderr: np.ndarray | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)

    def sf(self, v: ArrayLike) -> np.ndarray | float:
        """B(v) at (vectorised, real) v: 1 for v <= 0, 0 for v > n."""
        return _tail_at(self.tail, v)

    def p_value(self, observed: ArrayLike) -> np.ndarray | float:
        """Auditing mode: B(v_obs), the probability of at least ``observed`` successes under the
        claimed guarantee.  A small value refutes the claim (BWC notes §7.5)."""
        return self.sf(observed)

    def v_ub(self, confidence: ArrayLike) -> np.ndarray | int:
        """v_UB(c) = min{v in 0..n : B(v+1) <= 1 - c} (BWC notes §1.8(e)), vectorised over c."""
        return v_ub(self.tail, confidence)

    def to_dict(self) -> dict[str, Any]:
        return {
            "theorem": self.theorem, "epsilon": self.epsilon, "delta": self.delta,
            "delta_multiplier": self.delta_multiplier, "n": self.n,
            "expected": self.expected, "tail": self.tail.tolist(),
            "stderr": None if self.stderr is None else self.stderr.tolist(),
            "settings": dict(self.settings),
        }


def v_ub(tail: ArrayLike, confidence: ArrayLike) -> np.ndarray | int:
    """v_UB(c) = min{v in 0..n : B(v+1) <= 1 - c} for a tail array B(0..n+1).

    At confidence c, the number of successful attacks is at most v_UB(c) (BWC notes §1.8(e);
    the paper's 5%/50%/95% error bars are c = 0.05/0.5/0.95).  Vectorised over c.
    """
    b = np.asarray(tail, dtype=float)
    c = np.asarray(confidence, dtype=float)
    for ci in np.atleast_1d(c):
        check_confidence(ci)
    # B is non-increasing: count the v in 1..n+1 with B(v) > 1 - c; v_UB is that count.
    # Compare with a relative slack of 1e-12 so that B = 1 - c computed in floating point
    # counts as "<=".
    thresh = (1.0 - c) * (1 + 1e-12)
    desc = -b[1:]  # non-decreasing
    out = np.searchsorted(desc, -thresh, side="left")
    return out if np.ndim(out) else int(out)


def pure_tail(priors: ArrayLike, epsilon: ArrayLike, *, method: str = "auto") -> TailBound:
    """Thm 3.2 (pure eps-DP): B(v) = Pr[sum_i Bern(beta(p_i, eps)) >= v], v = 0..n+1.

    Conditional on any output a, the number of targets for which the attempt z = A(a) succeeds
    is dominated by this Poisson-binomial (Beyond Worst Case Thm 3.2, BWC notes §1.4).

    Args:
      priors: p_i(z) = Pr_{X ~ D_i}[l_i(X, z) = 1] for each target, in [0, 1] (0 = abstain).
      epsilon: the pure-DP epsilon (>= 0; inf gives beta_i = 1 wherever p_i > 0).
      method: Poisson-binomial method ("auto", "dp", "log", "fft").
    """
    p = check_prior_array(priors, "priors")
    eps = _scalar_epsilon(epsilon)
    b = beta_of_checked(p, eps)
    tail = poisson_binomial_tail(b, method=method)
    return TailBound(tail=tail, theorem="thm3.2", epsilon=eps, delta=0.0, n=p.size,
                     expected=float(b.sum()), delta_multiplier=0.0,
                     settings={"n": p.size, "epsilon": eps, "method": method})


def _alpha_at(tail: np.ndarray, vs: np.ndarray) -> np.ndarray:
    """alpha(v) = max_{1 <= j <= n} (T(v-j) - T(v)) / j for integer v in 1..n (vectorised per
    v; O(n) each).  T(u) = 1 for u <= 0, so among j >= v only j = v matters."""
    out = np.zeros(vs.shape, dtype=float)
    for k, v in enumerate(vs):  # loop over the requested v, not over targets
        j = np.arange(1, v + 1)
        out[k] = float(np.max((tail[v - j] - tail[v]) / j))
    return out


def _alpha_all_brute(tail: np.ndarray) -> np.ndarray:
    """alpha(v) for v = 0..n+1 by blocked vectorised maximisation (O(n^2))."""
    n = tail.size - 2
    alpha = np.zeros(n + 2)
    block = max(1, 4_000_000 // max(n, 1))
    j = np.arange(1, n + 1, dtype=float)
    for start in range(1, n + 1, block):
        vs = np.arange(start, min(start + block, n + 1))
        u = vs[:, None] - j[None, :].astype(np.int64)  # u = v - j
        valid = u >= 0
        tu = np.where(valid, tail[np.clip(u, 0, None)], -np.inf)
        alpha[vs] = np.max((tu - tail[vs][:, None]) / j[None, :], axis=1)
    return alpha


def _bisect_peak(tail: np.ndarray, v: np.ndarray, lo: np.ndarray, hi: np.ndarray
                 ) -> np.ndarray:
    """For each query v, the first u in [lo, hi] with s(u) >= s(u + 1), where
    s(u) = (T(u) - T(v)) / (v - u) (unimodal there): bisection on s(u) < s(u + 1), all v at
    once, on compacted arrays; ``lo`` is overwritten with the answer and returned."""
    act = np.flatnonzero(lo < hi)  # the v still searching
    a, b, vv = lo[act], hi[act], v[act]
    tv = tail[vv]
    while a.size:
        live = a < b
        if not live.all():
            keep = np.flatnonzero(live)
            lo[act] = a
            act, a, b, vv, tv = act[keep], a[keep], b[keep], vv[keep], tv[keep]
            if not a.size:
                break
        mid = (a + b) >> 1
        d = vv - mid
        # s(mid) < s(mid + 1), cross-multiplied (both denominators are > 0)
        up = (tail[mid] - tv) * (d - 1) < (tail[mid + 1] - tv) * d
        np.copyto(a, mid + 1, where=up)
        np.copyto(b, mid, where=~up)
    return lo


def _pmf_mode(tail: np.ndarray, chunk: int) -> int:
    """First argmax of pmf(k) = T(k) - T(k + 1), k = 0..n, in chunks (no n-array)."""
    best, mode = -np.inf, 0
    for start in range(0, tail.size - 1, chunk):
        seg = tail[start:start + chunk + 1]
        pmf = seg[:-1] - seg[1:]
        k = int(np.argmax(pmf))
        if pmf[k] > best:  # strict: the first maximum wins, as in np.argmax
            best, mode = pmf[k], start + k
    return mode


def _alpha_all_tangent(tail: np.ndarray, chunk: int = 1 << 20, stride: int = 256
                       ) -> np.ndarray:
    """alpha(v) for v = 0..n+1, vectorised over v (O(n log n), no Python loop over v).

    alpha(v) is the largest slope (T(u) - T(v)) / (v - u) from the query point (v, T(v)) to a
    point u < v.  The Poisson-binomial pmf is log-concave, hence unimodal with mode M, so T is
    concave on [0, M] and convex after it; T is constant on [1, u0] (T(1) = 1 up to rounding:
    below the windowed FFT's support the summed pmf may round to 1 - 2^-52), where the slope
    has the same numerator and so is largest at u = min(u0, v - 1).  On the convex part the
    slope grows as u moves left (the mean of a decreasing pmf over [u, v)), so the maximiser
    is u = 0 or lies in [u0, min(v - 1, M)], where T is concave and the slope is unimodal in u:
    it is found by a bisection on s(u) < s(u + 1), all v at once (chunks of ``chunk`` values of
    v).  The ends 0, u0 and v - 1 are also compared, which guards against round-off plateaus.
    (Taking u0 as the end of the run T = 1.0 exactly, as before, made every v below the
    window bisect over [0, v - 1]: 3.2 M needless 22-step searches at 1e7 targets.)

    Where T(v) = 0 (v >= v_z > M: the upper tail underflowed, most of the range for large n)
    the maximiser u*(v) of T(u) / (v - u) is non-increasing in v: at an interior maximum
    -T'(u) / T(u) = 1 / (v - u), whose left side increases with u on the concave part, so a
    larger v needs a smaller u.  There the bisection runs on every ``stride``-th v over the full
    range, and every other v searches only between the answers of its two neighbouring
    samples (a few steps instead of log2 M; same answers, tests/test_risk_bounds.py)."""
    n = tail.size - 2
    alpha = np.zeros(n + 2)
    if n < 1:
        return alpha
    mode = _pmf_mode(tail, chunk)
    # T is constant on [1, u0] (below the FFT window the summed pmf is a constant that may
    # round to 1 - 2^-52 rather than 1): there the numerator T(u) - T(v) is the same, so the
    # largest u wins; u = 0 (T(0) = 1) is compared separately.
    u0 = int(np.searchsorted(-tail[1: n + 1], -tail[1], side="right"))
    # first v with T(v) <= 0 (T is non-increasing and >= 0), n + 1 if none
    vz = max(int(np.searchsorted(-tail[: n + 1], 0.0, side="left")), mode + 2)

    def slope(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return (tail[u] - tail[v]) / (v - u)

    def finish(v: np.ndarray, lo: np.ndarray) -> None:
        best = np.maximum(slope(lo, v), slope(v - 1, v))
        best = np.maximum(best, slope(np.zeros_like(v), v))
        alpha[v] = np.maximum(best, slope(np.minimum(u0, v - 1), v))

    for start in range(1, min(vz, n + 1), chunk):
        v = np.arange(start, min(start + chunk, vz, n + 1), dtype=np.int64)
        hi = np.minimum(v - 1, mode)
        lo = np.minimum(np.full(v.shape, u0, dtype=np.int64), v - 1)
        finish(v, _bisect_peak(tail, v, lo, np.maximum(hi, lo)))
    if vz <= n:
        vs = np.unique(np.concatenate([np.arange(vz, n + 1, stride), [n]])).astype(np.int64)
        us = _bisect_peak(tail, vs, np.full(vs.shape, min(u0, mode), dtype=np.int64),
                          np.full(vs.shape, mode, dtype=np.int64))
        finish(vs, us.copy())
        for start in range(vz, n + 1, chunk):
            v = np.arange(start, min(start + chunk, n + 1), dtype=np.int64)
            j = np.searchsorted(vs, v)  # vs[j - 1] < v <= vs[j]
            lo = us[j]  # fancy indexing: a copy
            hi = np.maximum(us[np.maximum(j - 1, 0)], lo)
            finish(v, _bisect_peak(tail, v, lo, hi))
    return alpha


def alpha_term(tail: ArrayLike, v: ArrayLike | None = None) -> np.ndarray:
    """alpha(v) of Thm 3.5: max_{1<=j<=n} (T(v-j) - T(v)) / j with T(u) = 1 for u <= 0.

    Args:
      tail: T(0..n+1) (e.g. ``pure_tail(...).tail``).
      v: integer v values (default: all v = 0..n+1; alpha = 0 at v <= 0 and v > n, where the
        bound is 1 and 0 respectively).
    """
    t = np.asarray(tail, dtype=float)
    n = t.size - 2
    if v is None:
        return _alpha_all_brute(t) if n <= _BRUTE_MAX_N else _alpha_all_tangent(t)
    vv = np.asarray(v)
    flat = np.atleast_1d(vv).astype(np.int64)
    inside = (flat >= 1) & (flat <= n)
    out = np.zeros(flat.shape, dtype=float)
    out[inside] = _alpha_at(t, flat[inside])
    return out.reshape(vv.shape)


def _thm35_from_tail(t: np.ndarray, n: int, delta: float, mult: float,
                     alpha: np.ndarray) -> np.ndarray:
    """B = min(1, T + alpha m n delta) with B(0) = 1, B(n + 1) = 0, computed in ``alpha``'s
    array (overwritten): the same floating-point operations, one n-array fewer at 1e7."""
    b = alpha
    b *= mult
    b *= n
    b *= delta
    b += t
    np.minimum(b, 1.0, out=b)
    b[0] = 1.0
    b[-1] = 0.0
    # B is non-increasing whenever m n delta <= 1 (it is then the LP optimum); otherwise the
    # running minimum is still a valid bound (Pr[L >= v] <= Pr[L >= u] <= B(u) for u <= v).
    return np.minimum.accumulate(b, out=b)


def thm35_tail(priors: ArrayLike, epsilon: ArrayLike, delta: ArrayLike, *,
               delta_multiplier: float = 1.0, method: str = "auto") -> TailBound:
    """Thm 3.5 (approximate DP, attack-independent, one run): the full curve B(v), v = 0..n+1.

        B(v) = min(1, T*(v) + alpha(v) * m * n * delta),
        T*(v) = Pr[sum_i Bern(beta(p*_i, eps)) >= v],
        alpha(v) = max_{1<=j<=n} (T*(v-j) - T*(v)) / j        (Beyond Worst Case Thm 3.5, BWC notes
        §1.7)

    Args:
      priors: p*_i = max_z Pr_{X ~ D_i}[l_i(X, z) = 1], the a-priori best-guess success of each
        target (see :mod:`dpaudit.risk.priors`), in [0, 1].
      epsilon: the (eps, delta)-DP guarantee's eps (>= 0).
      delta: its delta (in [0, 1)).
      delta_multiplier: m (1 = paper; 2 = Steinke et al.'s code).
      method: Poisson-binomial method.
    """
    p = check_prior_array(priors, "priors")
    eps = _scalar_epsilon(epsilon)
    d = check_delta(delta)
    m = _check_multiplier(delta_multiplier)
    b = beta_of_checked(p, eps)
    expected = float(b.sum())
    n = p.size
    del p  # the caller's priors may still be alive; our validated copy is not needed
    t = poisson_binomial_tail(b, method=method)
    del b
    alpha = alpha_term(t) if d > 0 and m > 0 else np.zeros(n + 2)
    tail = _thm35_from_tail(t, n, d, m, alpha)
    return TailBound(tail=tail, theorem="thm3.5", epsilon=eps, delta=d, n=n,
                     expected=expected, delta_multiplier=m,
                     settings={"n": n, "epsilon": eps, "delta": d, "delta_multiplier": m,
                               "method": method})


def thm35_bound(priors: ArrayLike, epsilon: ArrayLike, delta: ArrayLike, v: ArrayLike, *,
                delta_multiplier: float = 1.0, method: str = "auto") -> np.ndarray | float:
    """Thm 3.5 bound B(v) at the requested v only (O(n) per v; fast for n = 1e5 targets).

    Same formula as :func:`thm35_tail`; evaluated pointwise without the monotone envelope (the
    two agree whenever m n delta <= 1).
    """
    p = check_prior_array(priors, "priors")
    eps = _scalar_epsilon(epsilon)
    d = check_delta(delta)
    m = _check_multiplier(delta_multiplier)
    t = poisson_binomial_tail(beta_of_checked(p, eps), method=method)
    vv = np.asarray(v, dtype=float)
    if np.isnan(vv).any():
        raise ValueError("v must not contain NaN")
    iv = np.ceil(vv).astype(np.int64)
    tv = np.asarray(_tail_at(t, iv))
    out = np.minimum(1.0, tv + alpha_term(t, iv) * m * p.size * d)
    out = np.where(iv <= 0, 1.0, np.where(iv > p.size, 0.0, out))
    return out if out.ndim else float(out)


def thm35_v_ub(priors: ArrayLike, epsilon: ArrayLike, delta: ArrayLike, confidence: ArrayLike, *,
               delta_multiplier: float = 1.0, method: str = "auto") -> np.ndarray | int:
    """v_UB(c) under Thm 3.5 without building the whole curve: binary search over v with the
    pointwise bound (O(n log n) per confidence), for very many targets (1e6 and more).

    Valid because B(v) is non-increasing when m n delta <= 1 (it is then the LP optimum of
    App. B); for m n delta > 1 the full monotone envelope of :func:`thm35_tail` is used.
    Equals ``thm35_tail(...).v_ub(confidence)``.
    """
    p = check_prior_array(priors, "priors")
    eps = _scalar_epsilon(epsilon)
    d = check_delta(delta)
    m = _check_multiplier(delta_multiplier)
    cs = np.asarray(confidence, dtype=float)
    for ci in np.atleast_1d(cs):
        check_confidence(ci)
    n = p.size
    if m * n * d > 1:
        return thm35_tail(p, eps, d, delta_multiplier=m, method=method).v_ub(confidence)
    t = poisson_binomial_tail(beta_of_checked(p, eps), method=method)

    def bound(u: int) -> float:
        if u <= 0:
            return 1.0
        if u > n:
            return 0.0
        return min(1.0, float(t[u]) + float(alpha_term(t, u)) * m * n * d)

    out = []
    for c in np.atleast_1d(cs):
        thresh = (1.0 - c) * (1 + 1e-12)
        lo, hi = 0, n  # invariant: answer in [lo, hi]; B(hi + 1) <= thresh always holds
        while lo < hi:
            mid = (lo + hi) // 2
            if bound(mid + 1) <= thresh:
                hi = mid
            else:
                lo = mid + 1
        out.append(lo)
    res = np.asarray(out, dtype=np.int64).reshape(cs.shape)
    return res if res.ndim else int(res)


def thm33_tail(priors: ArrayLike, epsilon: ArrayLike, f_pmf: ArrayLike, *,
               method: str = "auto") -> np.ndarray:
    """Thm 3.3 building block: Pr[F + sum_i S_i >= v] for v = 0..n+1, F independent of the S_i.

    F is the randomized function of the output in Thm 3.3 (BWC notes §1.5), given by its pmf
    q_0..q_n over {0..n}; the theorem requires E[F] <= n delta, which the caller chooses
    (Cor 3.4 and Thm 3.5 are the paper's computable instantiations).  Returns
    sum_j q_j T(v - j) with T(u) = 1 for u <= 0.
    """
    p = check_prior_array(priors, "priors")
    eps = _scalar_epsilon(epsilon)
    q = check_prior_array(f_pmf, "f_pmf")
    n = p.size
    if q.size > n + 1:
        raise ValueError(f"f_pmf must have at most n + 1 = {n + 1} entries, got {q.size}")
    if abs(q.sum() - 1.0) > 1e-9:
        raise ValueError(f"f_pmf must sum to 1, got {q.sum()!r}")
    t = poisson_binomial_tail(beta_of_checked(p, eps), method=method)
    v = np.arange(n + 2)
    out = np.zeros(n + 2)
    for j, qj in enumerate(q):  # loop over the support of F
        if qj > 0:
            out += qj * np.asarray(_tail_at(t, v - j))
    out[-1] = 0.0  # L <= n
    return np.minimum(out, 1.0)


def cor34_tail(prior_samples: ArrayLike, epsilon: ArrayLike, delta: ArrayLike, *,
               delta_multiplier: float = 1.0, method: str = "auto") -> TailBound:
    """Cor 3.4 (approximate DP, probability over data and mechanism) from R Monte Carlo runs.

        B(v) = min(1, (1/R) sum_r T_r(v) + m n delta),
        T_r(v) = Pr[sum_i Bern(beta(p_i^(r), eps)) >= v],         (Beyond Worst Case Cor 3.4, BWC
        notes §1.6)

    where p_i^(r) = Pr_{X' ~ D_i}[l_i(X', A(a_r)) = 1] is the prior success of the attempt made
    in run r (fresh data X ~ D, a_r ~ M(X)).  ``stderr`` holds the Monte Carlo standard error
    of the average (not part of the paper, which attaches no interval to the average).

    Args:
      prior_samples: array (R, n) (or (R,) for a single target) of p_i^(r), in [0, 1].
      epsilon: as in :func:`thm35_tail`.
      delta: as in :func:`thm35_tail`.
      delta_multiplier: as in :func:`thm35_tail`.
    """
    arr = np.asarray(prior_samples, dtype=float)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"prior_samples must have shape (runs, n), got {np.shape(prior_samples)}")
    check_prior_array(arr.reshape(-1), "prior_samples")
    eps = _scalar_epsilon(epsilon)
    d = check_delta(delta)
    m = _check_multiplier(delta_multiplier)
    runs, n = arr.shape
    betas = np.asarray(beta(arr, eps)).reshape(runs, n)
    if n == 1:
        b1 = betas[:, 0]
        tails = np.stack([np.ones(runs), b1, np.zeros(runs)], axis=1)
    else:
        tails = np.stack([poisson_binomial_tail(row, method=method) for row in betas])
    mean = tails.mean(axis=0)
    se = tails.std(axis=0, ddof=1) / math.sqrt(runs) if runs > 1 else np.zeros(n + 2)
    tail = np.minimum(1.0, mean + m * n * d)
    tail[0] = 1.0
    tail[-1] = 0.0
    return TailBound(tail=tail, theorem="cor3.4", epsilon=eps, delta=d, n=n,
                     expected=float(betas.sum(axis=1).mean()), delta_multiplier=m, stderr=se,
                     settings={"n": n, "runs": runs, "epsilon": eps, "delta": d,
                               "delta_multiplier": m, "method": method})


def cor34_monte_carlo(simulate: Callable[[np.random.Generator], Any], epsilon: ArrayLike,
                      delta: ArrayLike,
                      *, runs: int = 1000, seed: int | None = None,
                      rng: np.random.Generator | None = None, delta_multiplier: float = 1.0,
                      method: str = "auto") -> TailBound:
    """Cor 3.4 by Monte Carlo over fresh data and mechanism runs (BWC notes §1.6 algorithm).

    Args:
      simulate: ``simulate(rng) -> p`` runs one attack game (sample X ~ D, a ~ M(X),
        z = A(a)) and returns the n prior success probabilities p_i(z) of the attempt.
      runs: number R of independent runs (>= 1).
      seed: randomness (explicit; ``rng`` wins if both are given).
      rng: a generator, used instead of ``seed`` when given.
    """
    runs = check_count("runs", runs, minimum=1)
    gen = rng if rng is not None else np.random.default_rng(seed)
    samples = np.stack([np.atleast_1d(np.asarray(simulate(gen), dtype=float))
                        for _ in range(runs)])
    out = cor34_tail(samples, epsilon, delta, delta_multiplier=delta_multiplier, method=method)
    settings = dict(out.settings)
    settings["seed"] = seed
    return TailBound(tail=out.tail, theorem=out.theorem, epsilon=out.epsilon, delta=out.delta,
                     n=out.n, expected=out.expected, delta_multiplier=out.delta_multiplier,
                     stderr=out.stderr, settings=settings)


# --------------------------------------------------------------------------------------------
# Single target (n = 1, k = 1, v = 1) closed forms and derived quantities (BWC notes §1.8)
# --------------------------------------------------------------------------------------------

def single_target_bound(prior: ArrayLike, epsilon: ArrayLike, delta: ArrayLike = 0.0, *,
                        theorem: str = "thm3.5") -> np.ndarray | float:
    """Posterior success bound for one target and one guess (BWC notes §1.8(a)), vectorised:

    * "thm3.2": beta(p, eps)                      (pure DP; delta ignored)
    * "cor3.4": min(1, beta(p, eps) + delta)
    * "thm3.5": beta + (1 - beta) delta           (alpha = 1 - beta at n = v = 1)
    """
    check_choice("theorem", theorem, THEOREMS)
    p = check_prior_array(prior, "prior", min_size=0) if np.ndim(prior) else \
        check_prior_array([prior], "prior")[0]
    d = check_delta(delta)
    out = single_target_from_beta(np.asarray(beta(p, epsilon)), d, theorem)
    return out if out.ndim else float(out)


def single_target_from_beta(b: np.ndarray, delta: float, theorem: str) -> np.ndarray:
    """:func:`single_target_bound` from beta(p, eps) already computed (e.g. shared by several
    bounds on 1e7 targets): b, min(1, b + delta) or b + (1 - b) delta."""
    if theorem == "thm3.2":
        return b
    if theorem == "cor3.4":
        return np.minimum(1.0, b + delta)
    return b + (1.0 - b) * delta


def advantage(posterior: ArrayLike, prior: ArrayLike) -> np.ndarray | float:
    """Generalised advantage (posterior - prior) / (1 - prior) (Beyond Worst Case §5.3, Cherubin
    2017)."""
    post = np.asarray(posterior, dtype=float)
    p = check_prior_array(prior, "prior", open_interval=True, min_size=0) if np.ndim(prior) \
        else check_prior_scalar(prior)
    if np.isnan(post).any() or (post < 0).any() or (post > 1).any():
        raise ValueError(f"posterior must be in [0, 1], got {posterior!r}")
    out = (post - p) / (1.0 - np.asarray(p))
    return out if np.ndim(out) else float(out)


def advantage_bound(prior: ArrayLike, epsilon: ArrayLike, delta: ArrayLike = 0.0, *,
                    theorem: str = "cor3.4") -> np.ndarray | float:
    """Upper bound on the advantage of any attack on one target: Adv of
    :func:`single_target_bound` (the paper's Fig. 2(a) uses Cor 3.4 with delta = 1e-5)."""
    p = check_prior_array(prior, "prior", open_interval=True, min_size=0) if np.ndim(prior) \
        else check_prior_scalar(prior)
    post = single_target_bound(p, epsilon, delta, theorem=theorem)
    return advantage(post, p)


def _logit(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x) - np.log1p(-x)


def epsilon_protect(prior: ArrayLike, tau: float = 0.05, delta: ArrayLike = 0.0, *,
                    theorem: str = "cor3.4") -> np.ndarray | float:
    """Smallest epsilon with advantage bound <= tau (Beyond Worst Case §5.3; closed form BWC notes
    §1.8(d)).

        post* = p + tau (1 - p);   b = post* - delta (Cor 3.4) | (post* - delta)/(1 - delta)
        (Thm 3.5) | post* (pure);   eps_protect = logit(b) - logit(p)

    Exact because beta is logistic in epsilon.  When b < p no epsilon achieves Adv <= tau (the
    delta term alone exceeds tau); NaN is returned there (BWC notes §1.8(d) prints "0", which would
    wrongly suggest that eps = 0 protects; this follows the formula's meaning instead).
    """
    check_choice("theorem", theorem, THEOREMS)
    p = check_prior_array(prior, "prior", open_interval=True, min_size=0) if np.ndim(prior) \
        else check_prior_scalar(prior)
    t = check_probability("tau", tau)
    if not (0.0 < t < 1.0):
        raise ValueError(f"tau must be in (0, 1), got {tau!r}")
    d = check_delta(delta)
    scalar = np.ndim(p) == 0
    pa = np.atleast_1d(np.asarray(p, dtype=float))
    # In place (a few n-arrays at 1e7 priors), the same operations as
    # where(b < p, nan, max(0, logit(clip(b, 1e-300, 1)) - logit(p))), b = p + t (1 - p) - ...
    b = 1.0 - pa
    b *= t
    b += pa
    if theorem in ("cor3.4", "thm3.5"):
        b -= d
    if theorem == "thm3.5":
        b /= 1.0 - d
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = np.clip(b, 1e-300, 1.0)
        tmp = np.negative(eps)
        np.log1p(tmp, out=tmp)
        np.log(eps, out=eps)
        eps -= tmp  # logit(clip(b))
        np.negative(pa, out=tmp)
        np.log1p(tmp, out=tmp)
        lp = np.log(pa)
        lp -= tmp  # logit(p)
        eps -= lp
        del tmp, lp
        np.maximum(0.0, eps, out=eps)
    np.copyto(eps, np.nan, where=b < pa)
    return float(eps[0]) if scalar else eps


def epsilon_for_posterior(prior: ArrayLike, posterior: ArrayLike) -> np.ndarray | float:
    """The epsilon at which beta(prior, eps) = posterior: logit(posterior) - logit(prior)."""
    p = np.asarray(check_prior_array(prior, "prior", open_interval=True, min_size=0))
    q = np.asarray(check_prior_array(posterior, "posterior", open_interval=True, min_size=0))
    out = np.maximum(0.0, _logit(q) - _logit(p))
    return out.reshape(np.broadcast_shapes(np.shape(prior), np.shape(posterior))) \
        if out.size != 1 else float(out.reshape(-1)[0])


def leaked_bits(epsilon: ArrayLike, alpha: ArrayLike) -> np.ndarray | float:
    """Bits an eps-DP mechanism leaks about one person, except with probability alpha:
    log2(e^eps (1/alpha - 1) + 1) (Beyond Worst Case §3.2 "Estimating bit leakage"), vectorised."""
    e = check_epsilon(epsilon)
    a = check_real_array("alpha", alpha)
    if np.isnan(a).any() or (a <= 0).any() or (a >= 1).any():
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    out = np.logaddexp(np.asarray(e) + np.log1p(-a) - np.log(a), 0.0) / math.log(2)
    return out if np.ndim(out) else float(out)


def leak_probability(bits: ArrayLike, epsilon: ArrayLike) -> np.ndarray | float:
    """Probability that an eps-DP mechanism reveals d uniform bits: e^eps / (e^eps - 1 + 2^d)
    = beta(2^-d, eps) (Beyond Worst Case §3.2), vectorised; computed from logit(2^-d) so that d =
    100
    bits stays accurate."""
    d = np.asarray(bits, dtype=float)
    if np.isnan(d).any() or (d < 0).any():
        raise ValueError(f"bits must be >= 0, got {bits!r}")
    e = check_epsilon(epsilon)
    # logit(2^-d) = -log(2^d - 1) = -(d ln 2 + log1p(-2^-d))
    with np.errstate(divide="ignore"):
        lg = -(d * math.log(2) + np.log1p(-np.exp2(-d)))
    out = np.where(d == 0, 1.0, expit(np.asarray(e) + lg))
    return out if np.ndim(out) else float(out)


def epsilon_for_leak(bits: ArrayLike, alpha: ArrayLike) -> np.ndarray | float:
    """The epsilon at which the probability of leaking d uniform bits reaches alpha:
    ln((2^d - 1) alpha / (1 - alpha)) (inverse of :func:`leak_probability`), floored at 0."""
    d = np.asarray(bits, dtype=float)
    if np.isnan(d).any() or (d <= 0).any():
        raise ValueError(f"bits must be > 0, got {bits!r}")
    a = np.asarray(alpha, dtype=float)
    if np.isnan(a).any() or (a <= 0).any() or (a >= 1).any():
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    log_2d_minus_1 = d * math.log(2) + np.log1p(-np.exp2(-d))
    out = np.maximum(0.0, log_2d_minus_1 + np.log(a) - np.log1p(-a))
    return out if np.ndim(out) else float(out)
