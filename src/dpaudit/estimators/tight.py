"""Tight one-run audit with abstention (Tight One-Run: Xiang, Wang, Xiao, Tian, Wang,
*Tight Privacy Audit in One Run*, arXiv:2509.08704).

Observation: n secret bits, one run, the r highest-scoring guesses released, u of them wrong
(Def. 6, Eqs. 7-11).  Null "M is f_theta-DP" for a family theta -> f_theta (larger theta =
less private).  By Theorem 1 its p-value is P_{A*}[T <= u], the probability of at most u
errors among the top r of n independent f_theta channels read by the optimal decoder
(Eqs. 17-19); it depends on (n, r, u, f_theta) only.  The lower bound is the largest theta
rejected at level 1 - confidence ("reject iff p-value <= alpha", Tight One-Run §5.4), converted to
epsilon at the requested delta with the family's curve (Algorithm 2).

Modes of the p-value (TOR notes §7.1):

* ``"exact"`` (default): the cut-mixture law
  E_{V~Beta(r+1, n-r)}[BinCDF(u; r, gamma_bar(V))], BinCDF(u; n, e*) when r = n
  (:func:`dpaudit.stats.order_statistics.log_tail_probability`).  This is the form of the
  authors' released code and reproduces their recorded numbers.  For (eps, delta)-DP (the
  default family, :func:`log_tail_probabilities_eps_delta`) and mu-GDP the score profile is in
  closed form
  (:class:`dpaudit.stats.order_statistics.GaussianProfile`), so the p-value is exact to
  rounding; other curves use the conservative lower-envelope grid profile, which never
  understates the exact p-value.  (Until issue 14's second round mu-GDP used the grid profile
  too; its p-values were larger by the grid's ~3e-6 relative error, and the bounds are now
  higher by at most ~1e-6 relative, see tests/test_regression_pins.py.)
* ``"paper"``: Theorem 3 marginals p_i (Eq. 25) + the Chernoff bound of Proposition 1
  (Eq. 26), as written.  Theorem 3 treats the released error bits as independent, which they
  are not (they share the order statistics); the independent Poisson-binomial is slightly
  anti-conservative, but the Chernoff bound on top of it was conservative in every case
  checked (TOR notes §0.3, §4.7), so this mode gives valid but looser bounds.
* ``"hoeffding"``: the same p_i with Hoeffding's bound exp(-2 (sum p_i - u)^2 / r)
  (Tight One-Run §5.3).

Deviation from the paper, in both bound modes: the p-value is max(bound, exact tail).  At u = 0
the Chernoff bound has no slack (it equals prod(1 - p_i), the independent Poisson-binomial's
P[T = 0]), and the positive association of the released errors makes the true P[T = 0] larger:
``mode="paper"`` as written reported a *larger* epsilon than ``"exact"`` there (e.g. n = 1000,
r = 100, u = 0: 6.8136 against 6.7960), i.e. it over-claimed.  Flooring by the exact tail keeps
both modes valid and never tighter than ``"exact"`` (tests/test_tight_large.py).

Paper-mode cost is O(r * 257) per p-value (vectorised), i.e. seconds for r ~ 1e5; r above
:data:`PAPER_MAX_R` is refused with a clear error (the r marginals alone would need r * 8 bytes and
the time grows linearly) -- use ``mode="exact"``, which is O(1) in r.

Counts of any size are exact in ``"exact"`` mode: the binomial CDF switches from scipy's ``bdtr``
(C ints) to the incomplete beta function at r = 2^31.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from dpaudit.curves.base import Curve
from dpaudit.curves.families import DEFAULT_FAMILY, is_eps_delta, resolve_family
from dpaudit.curves.gaussian import GaussianDP
from dpaudit.results import AuditResult
from dpaudit.search import SearchResult, largest_rejected_root, largest_rejected_roots
from dpaudit.stats.order_statistics import (
    _log_cut_mixture,
    chernoff_tail,
    hoeffding_tail,
    log_binom_cdf,
    log_tail_probabilities_gdp,
    log_tail_probability,
    order_statistic_error_probs,
    score_profile,
)
from dpaudit.validation import (
    check_choice,
    check_confidence,
    check_delta,
    check_nested_count_arrays,
    check_nested_counts,
    check_positive,
    check_real_array,
)

__all__ = ["tight", "tight_many", "tight_p_value", "log_tail_probabilities_eps_delta",
           "TIGHT_MODES", "PAPER_MAX_R"]

TIGHT_MODES = ("exact", "paper", "hoeffding")
#: largest r accepted by the "paper" and "hoeffding" modes (O(r) memory, O(257 r) time).
PAPER_MAX_R = 10**7


def _check_counts(n: Any, r: Any, u: Any) -> tuple[int, int, int]:
    return check_nested_counts(n=n, r=r, u=u)  # type: ignore[return-value]


def _check_mode(mode: Any, r: int) -> str:
    check_choice("mode", mode, TIGHT_MODES)
    if mode != "exact" and r > PAPER_MAX_R:
        raise ValueError(f"mode={mode!r} evaluates one marginal per released guess and accepts "
                         f"r <= {PAPER_MAX_R:.0e}, got r = {r}; use mode='exact' (same validity, "
                         f"tighter, constant cost in r)")
    return mode


#: profile resolution of the p-value (score_profile's default) and of the coarse surrogate
#: that only locates the search bracket (see ``tight``).
_PROFILE_POINTS = 20000
_COARSE_POINTS = 2000
#: relative half-width of the bracket around the surrogate's root.
_BRACKET = 2e-3


def _log_p_value(curve: Curve, n: int, r: int, u: int, mode: str,
                 points: int = _PROFILE_POINTS, quad: int = 1025) -> float:
    """log of the p-value (-inf when it underflows to 0).  In ``"exact"`` mode mu-GDP uses
    its closed-form profile (:class:`dpaudit.stats.order_statistics.GaussianProfile`), other
    curves the ``points``-point lower-envelope profile."""
    if u >= r:
        return 0.0
    if mode == "exact":
        return float(min(0.0, log_tail_probability(curve, n, r, u, quad_points=quad,
                                                   profile_points=points)))
    # the paper's bounds keep the grid (lower-envelope) profile for every curve
    prof = score_profile(curve, points=points)
    p = order_statistic_error_probs(prof, n, r)
    pv = chernoff_tail(p, u) if mode == "paper" else hoeffding_tail(p, u)
    log_pv = math.log(pv) if pv > 0 else -math.inf
    # Theorem 3's independent marginals are anti-conservative (the released errors are
    # positively associated through the shared order statistics); where the bound on top of
    # them has no slack -- Chernoff at u = 0 is prod(1 - p_i) exactly -- it falls below the
    # exact tail.  The exact tail is a valid p-value, so the larger of the two is too, and it
    # keeps these modes looser than "exact", as documented.
    exact = log_tail_probability(curve if r == n else prof, n, r, u)
    return float(min(0.0, max(log_pv, exact)))


def _p_value(curve: Curve, n: int, r: int, u: int, mode: str) -> float:
    return float(min(1.0, math.exp(_log_p_value(curve, n, r, u, mode))))


def _search(margin: Any, fam: Any, n: int, r: int, u: int, mode: str, log_alpha: float,
            tol: float) -> SearchResult:
    """The largest rejected theta of ``margin`` (dpaudit.search.largest_rejected_root).

    When the p-value needs a score profile (r < n or the paper modes), each evaluation builds
    one (20,000 grid points).  The boundary is first located on a cheap surrogate (a 2,000-point
    profile and 257 quadrature nodes): theta_0.  Then the exact margin is evaluated at theta_0
    and one Newton step with the surrogate's slope predicts the exact boundary theta_1; the
    exact margin at theta_1 -+ 0.4 tol max(1, theta_1) usually brackets it already, which is
    the answer (a bracket of width <= tol, 3 exact evaluations).  Otherwise the search goes on
    inside theta_0 (1 -+ 2e-3), or on the whole range.  The result is always the rejected end
    of a bracket of the exact margin, so the surrogate only saves work: it cannot change the
    answer beyond ``tol``.
    """
    if (mode == "exact" and (r == n or fam.build is GaussianDP)) or u >= r:
        # no profile to build (r = n, or mu-GDP's closed form): the exact margin is cheap
        return largest_rejected_root(margin, fam.lo, fam.hi, tol=tol)

    seen: dict[float, float] = {}

    def coarse(t: float) -> float:
        if t not in seen:
            seen[t] = _log_p_value(fam.curve(t), n, r, u, mode, _COARSE_POINTS, 257) - log_alpha
        return seen[t]

    guess = largest_rejected_root(coarse, fam.lo, fam.hi, tol=max(tol, 1e-5))
    if not (guess.nothing_rejected or guess.hit_ceiling):
        t0 = guess.theta
        m0 = margin(t0)
        step = 1e-3 * max(1.0, t0)
        slope = (coarse(min(t0 + step, fam.hi)) - coarse(t0)) / (min(t0 + step, fam.hi) - t0)
        if math.isfinite(m0) and slope > 0:
            t1 = t0 - m0 / slope
            half = 0.4 * tol * max(1.0, abs(t1))
            a, b = max(fam.lo, t1 - half), min(fam.hi, t1 + half)
            if a < b:
                ma, mb = margin(a), margin(b)
                if ma <= 0 < mb:
                    return SearchResult(theta=a, nothing_rejected=False, hit_ceiling=False)
                # the surrogate's slope missed (large r: steep, curved margin): one secant
                # step on the exact margin through theta_0 and the nearer end, then the same
                # +-0.4 tol bracket.
                tn, mn = (a, ma) if mb <= 0 else (b, mb)
                if math.isfinite(mn) and mn != m0 and tn != t0:
                    t2 = tn - mn * (tn - t0) / (mn - m0)
                    half = 0.4 * tol * max(1.0, abs(t2))
                    a2, b2 = max(fam.lo, t2 - half), min(fam.hi, t2 + half)
                    if a2 < b2 and margin(a2) <= 0 < margin(b2):
                        return SearchResult(theta=a2, nothing_rejected=False, hit_ceiling=False)
        a = max(fam.lo, t0 * (1 - _BRACKET))
        b = min(fam.hi, t0 * (1 + _BRACKET))
        if a < b and margin(a) <= 0 < margin(b):
            return largest_rejected_root(margin, a, b, tol=tol)
    return largest_rejected_root(margin, fam.lo, fam.hi, tol=tol)


def tight_p_value(curve: Curve, n: int, r: int, u: int, mode: str = "exact") -> float:
    """p-value of the null "the mechanism is ``curve``-DP" after observing u wrong guesses
    among the r released (top-scoring) of n guesses: P_{A*}[T <= u] (Tight One-Run Thm. 1,
    Eqs. 17-19; TOR notes §2.9 for ``mode="exact"``, §2.8 for ``"paper"``/``"hoeffding"``).

    With r = n and ``mode="exact"`` this is BinCDF(u; n, e*), e* = ``curve.bit_error()``.
    Works for every Curve, including the asymmetric ordered sub-sampled Gaussian pair.
    Returns 0 (never NaN) when the probability underflows.
    """
    if not isinstance(curve, Curve):
        raise ValueError(f"curve must be a dpaudit Curve, got {type(curve).__name__}")
    n, r, u = _check_counts(n, r, u)
    _check_mode(mode, r)
    return _p_value(curve, n, r, u, mode)


def tight(n: int, r: int, u: int, family: Any = DEFAULT_FAMILY, delta: float = 1e-5,
          confidence: float = 0.95, mode: str = "exact", *, tol: float = 1e-6
          ) -> AuditResult:
    """Epsilon lower bound of the tight one-run audit (Tight One-Run §5.4; TOR notes §2.11).

    Args:
      n: number of secret bits / canaries (>= 1).
      r: number of released guesses (the r highest scores), 0 <= r <= n.
      u: number of wrong guesses among them, 0 <= u <= r.
      family: null family: "eps_delta" (the default; null delta = ``delta``), valid for every
        mechanism meeting an (eps, delta) claim (Tight One-Run §6.2: the audit is tight for
        (eps, delta)-DP under this null); "gdp", "laplace", ("subsampled_gaussian", q), a
        callable theta -> Curve, or a Family assume the mechanism's shape, recorded in
        ``AuditResult.assumption`` (:mod:`dpaudit.curves.families`).
      delta: delta at which the bound is reported (Algorithm 2 conversion).
      confidence: probability that the bound holds; the null f_theta is rejected iff its
        p-value is <= 1 - confidence.
      mode: "exact" (default), "paper" (Theorem 3 + Proposition 1) or "hoeffding".
      tol: relative tolerance of the search over theta.

    Returns:
      AuditResult with ``params = {param_name: theta_hat}`` (theta_hat = 0 and epsilon = 0
      when even the most private family member is not rejected), ``p_value`` = p-value at
      theta_hat, and ``details["hit_ceiling"]`` when the top of the family range is rejected
      (the bound is then epsilon at that ceiling).
    """
    n, r, u = _check_counts(n, r, u)
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    _check_mode(mode, r)
    tol = check_positive("tol", tol, upper=0.1)
    fam = resolve_family(family, delta)
    tail = _closed_form_tail(fam) if mode == "exact" else None
    if tail is not None:
        return _tight_batched(fam, n, [r], [u], delta, confidence, tol, tail)[0]
    return _tight_one(fam, n, r, u, delta, confidence, mode, tol)


def _tight_one(fam: Any, n: int, r: int, u: int, delta: float, confidence: float, mode: str,
               tol: float) -> AuditResult:
    """:func:`tight` on validated arguments."""
    log_alpha = math.log(1.0 - confidence)
    cache: dict[float, float] = {}

    def log_pval(theta: float) -> float:
        if theta not in cache:
            cache[theta] = _log_p_value(fam.curve(theta), n, r, u, mode)
        return cache[theta]

    # reject iff p <= alpha, i.e. log p - log alpha <= 0: a continuous, non-decreasing margin
    # in theta, so the boundary is found by bracketing root finding (same tolerance contract
    # as bisection; dpaudit.search.largest_rejected_root).
    res = _search(lambda t: log_pval(t) - log_alpha, fam, n, r, u, mode, log_alpha, tol)
    return _result(fam, n, r, u, delta, confidence, mode, tol, res,
                   log_pval(fam.lo if res.nothing_rejected else res.theta), len(cache))


def _result(fam: Any, n: int, r: int, u: int, delta: float, confidence: float, mode: str,
            tol: float, res: SearchResult, log_p_at: float, evaluations: int) -> AuditResult:
    """The AuditResult of one search outcome (``log_p_at``: log p-value at the reported
    theta, or at the family floor when nothing is rejected)."""
    p_at = float(min(1.0, math.exp(log_p_at)))
    if res.nothing_rejected:
        theta, eps = 0.0, 0.0
    else:
        theta = res.theta
        eps = fam.epsilon(theta, delta)
    e_star = fam.curve(res.theta).bit_error()
    return AuditResult(
        epsilon=float(eps), delta=delta, confidence=confidence, method="tight",
        params={fam.param_name: float(theta)}, p_value=p_at,
        settings={"n": n, "r": r, "u": u, "family": fam.name, "mode": mode,
                  "delta": delta, "confidence": confidence, "tol": tol},
        details={"hit_ceiling": res.hit_ceiling, "nothing_rejected": res.nothing_rejected,
                 "search_range": [fam.lo, fam.hi], "bit_error_at_theta": float(e_star),
                 "accuracy": (r - u) / r if r else math.nan,
                 "p_value_evaluations": evaluations},
        assumption=fam.assumption)


def tight_many(n: int, r: Any, u: Any, family: Any = DEFAULT_FAMILY, delta: float = 1e-5,
               confidence: float = 0.95, mode: str = "exact", *, tol: float = 1e-6
               ) -> list[AuditResult]:
    """:func:`tight` at several observations (r_i, u_i) of the same n: one result per point,
    each the one :func:`tight` returns for it alone (same theta, epsilon and p-value; a
    one-run audit evaluates a grid of guess counts, see
    :func:`dpaudit.estimators.one_run.audit_one_run`).

    For mu-GDP and (eps, delta) in ``"exact"`` mode the points are searched together: each
    root-finding iteration evaluates the closed-form p-values of every unfinished point in one
    pass (:func:`dpaudit.stats.order_statistics.log_tail_probabilities_gdp`,
    :func:`log_tail_probabilities_eps_delta`, :func:`dpaudit.search.largest_rejected_roots`).
    Other families and modes run point by point.
    """
    n, rs, us = check_nested_count_arrays("n", n, "r", r, "u", u)
    pts = list(zip(rs.tolist(), us.tolist(), strict=True))
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    for a, _ in pts:
        _check_mode(mode, a)
    tol = check_positive("tol", tol, upper=0.1)
    fam = resolve_family(family, delta)
    tail = _closed_form_tail(fam) if mode == "exact" else None
    if tail is not None:
        return _tight_batched(fam, n, [a for a, _ in pts], [b for _, b in pts], delta,
                              confidence, tol, tail)
    return [_tight_one(fam, n, a, b, delta, confidence, mode, tol) for a, b in pts]


#: quadrature nodes of the pilot search of :func:`_tight_batched` (the final bracket is always
#: checked with the full 1025-node rule).
_PILOT_QUAD = 65
#: points of the pilot's first grid over the family range.
_PILOT_GRID = 24


def log_tail_probabilities_eps_delta(eps: Any, n: int, r: Any, u: Any, *, delta: float,
                                     quad_points: int = 1025) -> np.ndarray:
    """log P_{A*}[T <= u_i] for the (eps_i, delta)-DP null, vectorised over rows i (the
    exact tail of :func:`dpaudit.stats.order_statistics.log_tail_probability` with the
    profile in closed form).

    The pair of f_{eps,delta} (Tight One-Run Def. 9; TOR notes §2.10: four atoms) puts mixture mass
    delta on |L| = inf (error gamma = 0) and 1 - delta on |L| = eps (gamma_eps = 1/(1 + e^eps)),
    ties broken by an error-independent random priority (Eq. 20).  So the error mass of the
    top v of the mixture is H(v) = gamma_eps max(0, v - delta) and the mean error above the
    cut is gamma_bar(v) = gamma_eps max(0, v - delta) / v; with r = n, BinCDF(u; n, e*),
    e* = (1 - delta) / (1 + e^eps).  ``eps`` broadcasts against the counts ``r``, ``u``.
    """
    n, r_arr, u_arr = check_nested_count_arrays("n", n, "r", r, "u", u)
    e = check_real_array("eps", eps)
    if not (np.isfinite(e).all() and (e >= 0).all()):
        raise ValueError("eps must be finite and >= 0")
    return _log_tail_eps_delta(e, n, r_arr, u_arr, check_delta(delta), quad_points)


def _log_tail_eps_delta(eps: Any, n: int, r: Any, u: Any, delta: float,
                        quad_points: int = 1025) -> np.ndarray:
    """:func:`log_tail_probabilities_eps_delta` on validated arguments."""
    eps, r, u = np.broadcast_arrays(np.asarray(eps, dtype=float), np.asarray(r, dtype=np.int64),
                                    np.asarray(u, dtype=np.int64))
    shape = eps.shape
    eps, r, u = eps.reshape(-1), r.reshape(-1), u.reshape(-1)
    g_eps = special.expit(-eps)  # 1 / (1 + e^eps), stable
    out = np.zeros(eps.size)
    full = (r == n) & (u < r)
    if full.any():
        out[full] = log_binom_cdf(u[full], n, (1.0 - delta) * g_eps[full])
    part = (r < n) & (u < r)
    if part.any():
        g = g_eps[part][:, None]
        out[part] = _log_cut_mixture(
            lambda v: g * np.maximum(v - delta, 0.0) / np.maximum(v, 1e-300), n, r[part],
            u[part], quad_points)
    return out.reshape(shape)


def _closed_form_tail(fam: Any) -> Any:
    """The batched closed-form exact tail ``(theta, n, r, u, quad_points) -> log p`` of the
    family, or None when the family needs a numeric score profile."""
    if fam.build is GaussianDP:
        return log_tail_probabilities_gdp
    d0 = is_eps_delta(fam)
    if d0 is not None:
        def tail(theta: Any, n: int, r: Any, u: Any, *, quad_points: int = 1025
                 ) -> np.ndarray:
            return _log_tail_eps_delta(theta, n, r, u, d0, quad_points)
        return tail
    return None


def _tight_batched(fam: Any, n: int, r: list[int], u: list[int], delta: float,
                   confidence: float, tol: float, log_tail: Any) -> list[AuditResult]:
    """The exact-mode search for a family with a closed-form tail ``log_tail`` (mu-GDP,
    (eps, delta)), for several points (r_i, u_i) at once.

    The p-value is analytic in theta (closed-form profile), so its Beta expectation is
    integrated to near machine precision by the trapezoid rule on far fewer nodes than the
    1025 of the exact rule (65 nodes give the same boundary to ~1e-14 relative on the one-run
    grids of n = 1e3 ... 1e7).  The boundary is therefore located on that 65-node pilot
    (:func:`dpaudit.search.largest_rejected_roots`, all points together), and the answer is
    certified with the exact rule: the pilot's rejected end a and b = a + tol max(1, a) are
    evaluated exactly, and when the exact margin is <= 0 at a and > 0 at b, a is returned (an
    exactly rejected theta with a non-rejected one within tol: the contract of
    :func:`dpaudit.search.largest_rejected_root`).  Pilot "nothing rejected" / "ceiling"
    answers are re-checked exactly at the range ends.  Points where the check fails are
    searched again with the exact rule alone, so the pilot only saves work: it cannot move an
    answer beyond ``tol``.
    """
    k = len(r)
    r_arr, u_arr = np.asarray(r, dtype=np.int64), np.asarray(u, dtype=np.int64)
    log_alpha = math.log(1.0 - confidence)
    evals = np.zeros(k, dtype=np.int64)

    def margin_exact(theta: np.ndarray, idx: np.ndarray) -> np.ndarray:
        np.add.at(evals, idx, 1)
        return log_tail(theta, n, r_arr[idx], u_arr[idx]) - log_alpha

    def margin_pilot(theta: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return (log_tail(theta, n, r_arr[idx], u_arr[idx], quad_points=_PILOT_QUAD)
                - log_alpha)

    lo, hi = np.full(k, fam.lo), np.full(k, fam.hi)
    # pilot bracket: the pilot margin on a geometric grid of the family range (one pass for
    # all points), then root finding inside the last rejected cell
    grid = np.geomspace(fam.lo, fam.hi, _PILOT_GRID) if fam.lo > 0 else \
        np.linspace(fam.lo, fam.hi, _PILOT_GRID)
    g = margin_pilot(np.tile(grid, k), np.repeat(np.arange(k), grid.size)).reshape(k, -1)
    g = np.maximum.accumulate(g, axis=1)  # monotone in theta (guards rounding)
    cell = np.clip((g <= 0).sum(axis=1) - 1, 0, grid.size - 2)
    rows = np.arange(k)
    c_lo, c_hi = grid[cell], grid[cell + 1]
    pilot = largest_rejected_roots(margin_pilot, c_lo, c_hi, tol=tol,
                                   ends=(g[rows, cell], g[rows, cell + 1]))
    for i in range(k):  # the cell search cannot see the range ends
        if not g[i, 0] <= 0:
            pilot[i] = SearchResult(theta=fam.lo, nothing_rejected=True, hit_ceiling=False)
        elif g[i, -1] <= 0:
            pilot[i] = SearchResult(theta=fam.hi, nothing_rejected=False, hit_ceiling=True)
    a = np.array([fam.lo if p.nothing_rejected else p.theta for p in pilot])
    b = np.array([fam.hi if p.hit_ceiling else min(p.theta + tol * max(1.0, p.theta), fam.hi)
                  for p in pilot])
    inner = np.array([not (p.nothing_rejected or p.hit_ceiling) for p in pilot])
    # exact margins: at a for every point (the reported theta, or the floor), at b for the
    # interior answers
    idx = np.concatenate([np.arange(k), np.flatnonzero(inner)])
    vals = margin_exact(np.concatenate([a, b[inner]]), idx)
    m_a = vals[:k]
    m_b = np.full(k, np.nan)
    m_b[inner] = vals[k:]
    found: list[SearchResult | None] = [None] * k
    for i, p in enumerate(pilot):
        if p.nothing_rejected and m_a[i] > 0:
            found[i] = p
        elif p.hit_ceiling and m_a[i] <= 0:
            found[i] = p
        elif inner[i] and m_a[i] <= 0 < m_b[i] and a[i] > fam.lo:
            found[i] = SearchResult(theta=float(a[i]), nothing_rejected=False,
                                    hit_ceiling=False)
    redo = [i for i in range(k) if found[i] is None]
    if redo:
        ri = np.asarray(redo)
        again = largest_rejected_roots(lambda t, j: margin_exact(t, ri[j]), lo[ri], hi[ri],
                                       tol=tol)
        for i, res in zip(redo, again, strict=True):
            found[i] = res
    done = [f for f in found if f is not None]
    log_p = np.minimum(m_a + log_alpha, 0.0)  # log p at a (the answer) ...
    if redo:  # ... except where the exact search replaced it
        ri = np.asarray(redo)
        at = np.array([fam.lo if done[i].nothing_rejected else done[i].theta for i in redo])
        log_p[ri] = np.minimum(log_tail(at, n, r_arr[ri], u_arr[ri]), 0.0)
    return [_result(fam, n, int(ri_), int(ui_), delta, confidence, "exact", tol, f,
                    float(lp), int(e))
            for ri_, ui_, f, lp, e in zip(r_arr, u_arr, done, log_p, evals, strict=True)]
