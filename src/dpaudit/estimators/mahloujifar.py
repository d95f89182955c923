"""f-DP one-run audit of Mahloujifar, Melis and Chaudhuri, *Auditing f-Differential Privacy in
One Run* (ICML 2025, arXiv:2410.22235) -- a baseline of Tight One-Run (TOR notes §5.2).

Observation: m canaries, c' guesses (the rest abstained), c of them correct.  For a
symmetric trade-off function f let B^{-1}(y) = f(1 - y) (the inverse of the blow-up
1 - f; for mu-GDP B^{-1}(y) = Phi(Phi^{-1}(y) - mu)).  With tau = 1 - confidence their
"audit with cap" recursion (membership guesses, alphabet size k = 2) is

    h[c] = tau (c' - c) / m,   r[c] = tau c / m
    for i = c-1, ..., 0:
        h[i] = max(h[i+1], B^{-1}(r[i+1]))
        r[i] = min(1, r[i+1] + (i / (c' - i)) (h[i] - h[i+1]))
    "M is f-DP" is rejected iff r[0] + h[0] > c' / m.

Once h stops changing it never changes again (nor does r), so the recursion of a candidate
ends early.  The recursion is sequential in i, so it is vectorised *per step* across many
candidate parameters: the lower bound (largest rejected theta of the family, then epsilon at
delta) is found by a k-ary search that evaluates a grid of ``grid_points`` candidates per
pass and zooms into the bracket where rejection stops (the predicate is monotone: a less
private f gives a smaller B^{-1}).  Meta's PrivacyGuard scans a fixed sigma grid instead;
the k-ary search returns the same parameter to within ``tol`` (the grid answer is a
slightly smaller bound).

Many observations at once (:func:`mahloujifar_many`, e.g. the guess-count grid of
``audit_one_run``): the k-ary searches of all observations run together
(:func:`dpaudit.search.largest_rejected_grid`) and each pass steps the recursion once for all
(observation, candidate) pairs.  Two exact shortcuts keep the steps few: r and h never
decrease, so a candidate whose r + h already exceeds c'/m is rejected at once; and only the
first non-rejected candidate of a pass matters, so candidates above a known non-rejected one
are dropped.  Every candidate that matters runs the same floating-point operations as the
one-candidate recursion, so the search takes the same decisions and returns the same
parameter bit for bit (the scalar :func:`mahloujifar` is this path with one observation).

Asymmetric curves: the recursion needs a symmetric f.  For the ordered sub-sampled Gaussian
pair the symmetrised envelope C_q(G_mu) = (min{f_q, f_q^{-1}})** of Dong, Roth and Su is
used (a weaker, valid null); other asymmetric curves are refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
from scipy import special

from dpaudit.curves.base import Curve
from dpaudit.curves.eps_delta import EpsDeltaDP
from dpaudit.curves.families import DEFAULT_FAMILY, Family, is_eps_delta, resolve_family
from dpaudit.curves.gaussian import GaussianDP
from dpaudit.curves.laplace import LaplaceDP
from dpaudit.curves.subsampled import SubsampledGaussianDP, sgm_tradeoff
from dpaudit.results import AuditResult
from dpaudit.search import largest_rejected_grid
from dpaudit.validation import (
    check_confidence,
    check_count,
    check_delta,
    check_nested_count_arrays,
    check_nested_counts,
    check_positive,
)

__all__ = ["mahloujifar", "mahloujifar_many", "mahloujifar_reject", "inverse_blowup"]


def _symmetric(curve: Curve) -> Curve:
    if curve.symmetric:
        return curve
    if isinstance(curve, SubsampledGaussianDP):
        return SubsampledGaussianDP(curve.mu, curve.q, symmetrized=True)
    raise ValueError(f"mahloujifar needs a symmetric trade-off curve; {curve!r} is not "
                     "symmetric (use family=('subsampled_gaussian', q), which is symmetrised, "
                     "or a symmetric family)")


def inverse_blowup(curve: Curve, y: Any) -> np.ndarray:
    """B^{-1}(y) = f(1 - y) for a symmetric curve (Phi(Phi^{-1}(y) - mu) for GDP, computed
    without forming 1 - y)."""
    c = _symmetric(curve)
    y = np.clip(np.asarray(y, dtype=float), 0.0, 1.0)
    if isinstance(c, GaussianDP):
        return special.ndtr(special.ndtri(y) - c.mu)
    return c.tradeoff(1.0 - y)


def _binv_many(curves: Sequence[Curve]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """B^{-1} for many candidate curves at once: fn(y, idx) evaluates curve idx[j] at y[j]."""
    sym = [_symmetric(c) for c in curves]
    if all(isinstance(c, GaussianDP) for c in sym):
        mus = np.array([cast(GaussianDP, c).mu for c in sym])
        return lambda y, idx: special.ndtr(special.ndtri(np.clip(y, 0.0, 1.0)) - mus[idx])

    ss = [c for c in sym if isinstance(c, SubsampledGaussianDP)]
    if len(ss) == len(sym) and all(c.symmetrized for c in ss) and len({c.q for c in ss}) == 1:
        mus_s = np.array([c.mu for c in ss])
        q = ss[0].q
        return lambda y, idx: sgm_tradeoff(mus_s[idx], q, 1.0 - np.clip(y, 0.0, 1.0),
                                           symmetrized=True)

    def fn(y: np.ndarray, idx: np.ndarray) -> np.ndarray:
        # one vectorised call per candidate curve (not per entry: the symmetrised subsampled
        # Gaussian inverts f_q by bisection, ~60 evaluations per call)
        out = np.empty(len(y))
        for k in np.unique(idx):
            sel = idx == k
            out[sel] = inverse_blowup(sym[int(k)], np.asarray(y)[sel])
        return out
    return fn


def _gap(curves: Sequence[Curve], m: int, guesses: int, correct: int, tau: float
         ) -> np.ndarray:
    """r[0] + h[0] - c'/m for every candidate curve (> 0 means "reject")."""
    k = len(curves)
    binv = _binv_many(curves)
    r = np.full(k, tau * correct / m)
    h = np.full(k, tau * (guesses - correct) / m)
    active = np.arange(k)
    for i in range(correct - 1, -1, -1):
        if active.size == 0:
            break
        ra, ha = r[active], h[active]
        h_new = np.maximum(ha, binv(ra, active))
        r[active] = np.minimum(ra + (i / (guesses - i)) * (h_new - ha), 1.0)
        h[active] = h_new
        active = active[h_new > ha]
    return r + h - guesses / m


def _check_counts(m: Any, guesses: Any, correct: Any) -> tuple[int, int, int]:
    return check_nested_counts(m=m, guesses=guesses, correct=correct)  # type: ignore[return-value]


def mahloujifar_reject(curve: Curve, m: int, guesses: int, correct: int,
                       confidence: float = 0.95) -> bool:
    """True iff the observation rejects "M is ``curve``-DP" at the given confidence."""
    if not isinstance(curve, Curve):
        raise ValueError(f"curve must be a dpaudit Curve, got {type(curve).__name__}")
    m, cp, c = _check_counts(m, guesses, correct)
    tau = 1.0 - check_confidence(confidence)
    return bool(_gap([curve], m, cp, c, tau)[0] > 0)


#: recursion steps between checks for finished, rejected and dropped candidates (_BLOCK_MAX
#: once at most _FEW candidates are left)
_BLOCK = 8
_BLOCK_MAX = 32
_FEW = 32


def _binv_family(fam: Family, thetas: np.ndarray
                 ) -> Callable[[np.ndarray], Callable[[np.ndarray], np.ndarray]]:
    """B^{-1} of the family members ``thetas`` (one per candidate), as ``bind(sel)`` ->
    ``fn(y)`` evaluating candidate sel[j] at y[j].  For y in [0, 1] each entry is the same
    floating-point value as :func:`_binv_many` on the candidates' curves (the named families
    use the same formulas with per-candidate parameters; any other family builds its curves
    and uses :func:`_binv_many` itself)."""
    build = fam.build
    if build is GaussianDP:
        mus = np.asarray(thetas, dtype=float)  # = GaussianDP(t).mu (t > 0: float(t))
        if mus.size and not mus.min() > 0:
            raise ValueError(f"mu must be finite and in (0, inf), got {float(mus.min())!r}")

        def bind_gdp(sel: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
            mu = mus[sel]
            return lambda y: special.ndtr(special.ndtri(y) - mu)
        return bind_gdp
    if build is LaplaceDP:
        eps = [LaplaceDP(t).eps for t in thetas.tolist()]
        # LaplaceDP.tradeoff's scalars, per candidate (math.exp, as there)
        ex = np.array([math.exp(e) for e in eps])
        emx = np.array([math.exp(-e) for e in eps])

        def bind_laplace(sel: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
            e1, e2 = ex[sel], emx[sel]
            lo = e2 / 2

            def fn(y: np.ndarray) -> np.ndarray:
                a = np.clip(1.0 - y, 0.0, 1.0)
                with np.errstate(divide="ignore", over="ignore"):
                    mid = e2 / (4 * np.where(a > 0, a, 1.0))
                return np.where(a < lo, 1 - e1 * a, np.where(a <= 0.5, mid, e2 * (1 - a)))
            return fn
        return bind_laplace
    d0 = is_eps_delta(fam)
    if d0 is not None:
        # EpsDeltaDP.tradeoff at alpha = 1 - y, per candidate (same scalars as there):
        # f(a) = max{0, 1 - d - e^eps a, e^-eps (1 - d - a)}
        epsd = [EpsDeltaDP(t, d0).eps for t in thetas.tolist()]
        ex_d = np.array([math.exp(e) for e in epsd])
        emx_d = np.array([math.exp(-e) for e in epsd])

        def bind_eps_delta(sel: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
            e1, e2 = ex_d[sel], emx_d[sel]

            def fn(y: np.ndarray) -> np.ndarray:
                a = np.clip(1.0 - y, 0.0, 1.0)
                return np.maximum(0.0, np.maximum(1 - d0 - e1 * a, e2 * (1 - d0 - a)))
            return fn
        return bind_eps_delta
    curves = [_symmetric(fam.curve(float(t))) for t in thetas.tolist()]
    sgm = [c for c in curves if isinstance(c, SubsampledGaussianDP)]
    if len(sgm) == len(curves) and len({(c.q, c.symmetrized) for c in sgm}) == 1:
        mus_s = np.array([c.mu for c in sgm])
        q, sym = sgm[0].q, sgm[0].symmetrized

        def bind_sgm(sel: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
            mu = mus_s[sel]
            return lambda y: sgm_tradeoff(mu, q, 1.0 - y, symmetrized=sym)
        return bind_sgm
    many = _binv_many(curves)

    def bind_any(sel: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        return lambda y: many(y, sel)
    return bind_any


def _reject_prefix(bind: Callable[[np.ndarray], Callable[[np.ndarray], np.ndarray]],
                   row: np.ndarray, col: np.ndarray, n_rows: int, m: np.ndarray,
                   cp: np.ndarray, c: np.ndarray, tau: float) -> np.ndarray:
    """"reject" (r[0] + h[0] > c'/m) for candidates (``row``, ``col``): observation
    ``row[j]`` (counts m, cp, c indexed by row) against candidate ``j`` of the bound B^{-1}.

    Exact up to and including the first non-rejected column of each row (the contract of
    :func:`dpaudit.search.largest_rejected_grid`); later columns may be reported False
    unevaluated.  The recursion is stepped for all candidates at once, each with its own
    index i = c - 1 - t, in the floating-point operations of :func:`_gap`; a candidate
    leaves when h stops changing or i reaches 0 (its final r + h is then decided), when
    r + h - c'/m > 0 already (r and h never decrease, so the final value is larger), or when
    a column to its left in the same row is known not to be rejected.
    """
    k = row.size
    out = np.zeros(k, dtype=bool)
    sel = np.arange(k)
    # per-candidate arrays, compacted together whenever candidates leave
    row_a, col_a = row, col
    cp_a = cp.astype(float)[row]
    cm1_a = (c - 1).astype(float)[row]
    gm_a = (cp / m)[row]
    steps_a = c[row]                         # the recursion runs i = c-1, ..., 0
    r = (tau * c / m)[row]
    h = (tau * (cp - c) / m)[row]
    first_false = np.full(n_rows, np.iinfo(np.int64).max)
    changed = np.ones(k, dtype=bool)
    binv = None
    t = 0
    while True:
        # finished: h stopped changing, or i went down to 0 (c = 0: nothing to run)
        fin = ~changed | (steps_a <= t)
        rejected = (r + h) - gm_a > 0
        done = fin | rejected
        if done.any():
            out[sel[done]] = rejected[done]
            nf = fin & ~rejected
            if nf.any():
                np.minimum.at(first_false, row_a[nf], col_a[nf])
            keep = ~done & (col_a < first_false[row_a])
        else:
            keep = col_a < first_false[row_a]
        if binv is None or not keep.all():
            sel, r, h = sel[keep], r[keep], h[keep]
            row_a, col_a, cp_a, cm1_a = row_a[keep], col_a[keep], cp_a[keep], cm1_a[keep]
            gm_a, steps_a = gm_a[keep], steps_a[keep]
            if not sel.size:
                return out
            binv = bind(sel)
        # few candidates left: steps are cheap per candidate, checks are not
        block = _BLOCK if sel.size > _FEW else _BLOCK_MAX
        nb = min(block, int(steps_a.min()) - t)
        # the weights i / (c' - i) of the block's steps, i = c - 1 - t (same division)
        i = cm1_a[None, :] - np.arange(t, t + nb, dtype=float)[:, None]
        w = i / (cp_a[None, :] - i)
        for s in range(nb):
            hn = np.maximum(h, binv(r))
            r = np.minimum(r + w[s] * (hn - h), 1.0)
            if s == nb - 1:
                changed = hn > h
            h = hn
        t += nb


def mahloujifar_many(m: int, guesses: Any, correct: Any, delta: float = 1e-5,
                     confidence: float = 0.95, family: Any = DEFAULT_FAMILY, *, tol: float = 1e-6,
                     grid_points: int | None = None) -> list[AuditResult]:
    """:func:`mahloujifar` for many observations (guesses[i], correct[i]) of the same ``m``
    canaries at once -- e.g. the guess-count grid of ``audit_one_run``.

    Returns one AuditResult per observation, each identical to
    ``mahloujifar(m, guesses[i], correct[i], delta, confidence, family, tol=tol,
    grid_points=grid_points)`` (same search grids, same parameter, same fields); the
    searches and the recursion steps are shared across observations (module docstring).
    """
    m, g_arr, c_arr = check_nested_count_arrays("m", m, "guesses", guesses, "correct", correct)
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    tol = check_positive("tol", tol, upper=0.1)
    fam = resolve_family(family, delta)
    tau = 1.0 - confidence
    if grid_points is None:
        fast = fam.build is GaussianDP or is_eps_delta(fam) is not None
        grid_points = 33 if fast else 9
    grid_points = check_count("grid_points", grid_points, minimum=3)
    n = g_arr.size
    m_arr = np.full(n, m, dtype=np.int64)

    def reject_rows(rows: np.ndarray, thetas: np.ndarray) -> np.ndarray:
        k, w = thetas.shape
        bind = _binv_family(fam, thetas.reshape(-1))
        row = np.repeat(rows, w)
        col = np.tile(np.arange(w), k)
        rej = _reject_prefix(bind, row, col, n, m_arr, g_arr, c_arr, tau)
        return rej.reshape(k, w)

    searches, evals = largest_rejected_grid(reject_rows, fam.lo, fam.hi, tol, grid_points, n)
    out = []
    for res, ev, cp, c in zip(searches, evals.tolist(), g_arr.tolist(), c_arr.tolist(),
                              strict=True):
        if res.nothing_rejected:
            theta, eps = 0.0, 0.0
        else:
            theta = res.theta
            eps = fam.epsilon(theta, delta)
        out.append(AuditResult(
            epsilon=float(eps), delta=delta, confidence=confidence, method="mahloujifar",
            params={fam.param_name: float(theta)}, p_value=None,
            settings={"m": m, "guesses": cp, "correct": c, "family": fam.name,
                      "delta": delta, "confidence": confidence, "tol": tol,
                      "grid_points": grid_points},
            details={"hit_ceiling": res.hit_ceiling, "nothing_rejected": res.nothing_rejected,
                     "search_range": [fam.lo, fam.hi], "candidates_evaluated": ev,
                     "accuracy": c / cp if cp else math.nan},
            assumption=fam.assumption))
    return out


def mahloujifar(m: int, guesses: int, correct: int, delta: float = 1e-5,
                confidence: float = 0.95, family: Any = DEFAULT_FAMILY, *, tol: float = 1e-6,
                grid_points: int | None = None) -> AuditResult:
    """Mahloujifar-Melis-Chaudhuri f-DP one-run epsilon lower bound.

    Args:
      m: number of canaries.
      guesses: number of guesses c' (abstentions excluded), 0 <= c' <= m.
      correct: number of correct guesses c, 0 <= c <= c'.
      delta: delta at which epsilon is reported (conversion of the fitted curve).
      confidence: probability that the bound holds (tau = 1 - confidence).
      family: null family (default "eps_delta" at ``delta``: valid for every mechanism meeting
        an (eps, delta) claim; any other family is an assumption, recorded in
        ``AuditResult.assumption``); see :mod:`dpaudit.curves.families`.
      tol: relative tolerance of the search over the family parameter.
      grid_points: candidates per search pass (default 33 for GDP and (eps, delta), whose
        inverse blow-ups are vectorised over candidates, 9 otherwise).

    This is :func:`mahloujifar_many` with one observation (one implementation).
    """
    m, cp, c = _check_counts(m, guesses, correct)
    return mahloujifar_many(m, [cp], [c], delta, confidence, family, tol=tol,
                            grid_points=grid_points)[0]
