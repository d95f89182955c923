"""The one shared monotone root-finding helper.

Every lower-bound search in dpaudit (f-DP family fits, epsilon/delta conversion, epsilon
bisection of the Steinke baseline, ...) goes through these functions, so that tolerances,
bracketing and the ceiling/floor conventions are defined once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import optimize
from scipy.optimize import elementwise as _elementwise

__all__ = ["SearchResult", "largest_rejected", "largest_rejected_root",
           "largest_rejected_roots", "largest_rejected_batched", "solve_monotone",
           "invert_decreasing"]


@dataclass(frozen=True)
class SearchResult:
    """Outcome of :func:`largest_rejected`.

    ``theta`` is the largest parameter for which ``reject(theta)`` holds (to ``tol``), or
    ``lo`` with ``nothing_rejected=True``, or ``hi`` with ``hit_ceiling=True``.
    """

    theta: float
    nothing_rejected: bool
    hit_ceiling: bool


def largest_rejected(reject: Callable[[float], bool], lo: float, hi: float, *,
                     tol: float = 1e-6, max_iter: int = 200) -> SearchResult:
    """Largest theta in [lo, hi] with ``reject(theta)`` true, for a predicate that is true on
    an initial segment (the null "M is f_theta-DP" becomes harder to reject as theta grows).

    Bisection keeps the invariant reject(lo) and not reject(hi); the returned theta is the
    rejected end ``lo`` so the reported bound is always backed by an actual rejection
    (spec/001 §2.11 returns the midpoint; returning the rejected end is the conservative
    choice and differs by at most ``tol``).
    """
    if not reject(lo):
        return SearchResult(theta=lo, nothing_rejected=True, hit_ceiling=False)
    if reject(hi):
        return SearchResult(theta=hi, nothing_rejected=False, hit_ceiling=True)
    a, b = lo, hi
    for _ in range(max_iter):
        if b - a <= tol * max(1.0, abs(a)):
            break
        mid = 0.5 * (a + b)
        if reject(mid):
            a = mid
        else:
            b = mid
    return SearchResult(theta=a, nothing_rejected=False, hit_ceiling=False)


def largest_rejected_root(margin: Callable[[float], float], lo: float, hi: float, *,
                          tol: float = 1e-6, floor: float = -1e6) -> SearchResult:
    """Largest theta in [lo, hi] with ``margin(theta) <= 0`` ("rejected"), for a margin that
    is continuous and non-decreasing in theta (e.g. log p-value(theta) - log alpha).

    Same contract as :func:`largest_rejected` for the predicate ``margin <= 0`` -- the
    returned theta is the rejected end of a final bracket of width <= tol * max(1, |theta|),
    so it is never above the true boundary and at most that far below it -- but the bracket
    is shrunk with Chandrupatla's method (SciPy's ``optimize.elementwise.find_root``), which
    uses the size of the margin and needs ~8 evaluations where bisection needs ~25.  A
    margin of -inf (e.g. a p-value that underflows to 0) is read as ``floor``.  One problem
    of :func:`largest_rejected_roots`.
    """
    def many(theta: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return np.array([float(margin(float(x))) for x in np.reshape(theta, -1)])

    return largest_rejected_roots(many, np.array([lo]), np.array([hi]), tol=tol,
                                  floor=floor)[0]


def largest_rejected_roots(margin: Callable[[np.ndarray, np.ndarray], np.ndarray],
                           lo: np.ndarray, hi: np.ndarray, *, tol: float = 1e-6,
                           floor: float = -1e6,
                           ends: tuple[np.ndarray, np.ndarray] | None = None
                           ) -> list[SearchResult]:
    """:func:`largest_rejected_root` for many independent problems at once.

    ``margin(theta, idx)`` returns the margins of problems ``idx`` (an integer array) at
    ``theta`` (same shape); each problem i has its own bracket [lo[i], hi[i]].  Every problem
    gets exactly the result :func:`largest_rejected_root` gives it alone (same end checks,
    same Chandrupatla iterates -- SciPy's ``find_root`` is elementwise -- same choice of the
    rejected end), but each iteration evaluates the margin once for all unfinished problems,
    so a margin that is cheaper in bulk (e.g. one NumPy pass over a matrix) pays off.
    ``ends``: the margins at ``lo`` and ``hi`` when the caller already has them.
    """
    lo = np.asarray(lo, dtype=float).reshape(-1)
    hi = np.asarray(hi, dtype=float).reshape(-1)
    k = lo.size

    def g(theta: np.ndarray, idx: np.ndarray) -> np.ndarray:
        v = np.asarray(margin(theta, idx), dtype=float)
        if np.isnan(v).any():
            bad = float(np.asarray(theta)[np.isnan(v)][0])
            raise FloatingPointError(f"the search margin is NaN at {bad!r}")
        return np.clip(v, floor, -floor)

    if ends is not None:
        g_lo = np.clip(np.asarray(ends[0], dtype=float).reshape(-1), floor, -floor)
        g_hi = np.clip(np.asarray(ends[1], dtype=float).reshape(-1), floor, -floor)
    else:
        g_lo = g(lo, np.arange(k))
        g_hi = np.full(k, np.inf)
        low_rejected = np.flatnonzero(g_lo <= 0)  # the ceiling matters only for these
        if low_rejected.size:
            g_hi[low_rejected] = g(hi[low_rejected], low_rejected)
    out: list[SearchResult | None] = [None] * k
    todo = []
    for i in range(k):
        if not g_lo[i] <= 0:
            out[i] = SearchResult(theta=float(lo[i]), nothing_rejected=True, hit_ceiling=False)
        elif g_hi[i] <= 0:
            out[i] = SearchResult(theta=float(hi[i]), nothing_rejected=False, hit_ceiling=True)
        elif g_lo[i] == 0:
            out[i] = SearchResult(theta=float(lo[i]), nothing_rejected=False, hit_ceiling=False)
        else:
            todo.append(i)
    if todo:
        t = np.asarray(todo)
        a, b, ga, gb = lo[t], hi[t], g_lo[t], g_hi[t]

        def f(x: np.ndarray, j: np.ndarray) -> np.ndarray:
            j = np.broadcast_to(j, np.shape(x)).astype(np.int64)
            x = np.asarray(x, dtype=float)
            val = np.empty(x.shape)
            at_a, at_b = x == a[j], x == b[j]
            val[at_a], val[at_b] = ga[j][at_a], gb[j][at_b]
            rest = ~(at_a | at_b)
            if rest.any():
                val[rest] = g(x[rest], t[j[rest]])
            return val

        res = _elementwise.find_root(
            f, (a, b), args=(np.arange(t.size),),
            tolerances={"xatol": 0.5 * tol, "xrtol": 0.5 * tol, "fatol": 0.0, "frtol": 0.0})
        xl, xr = (np.asarray(v, dtype=float).reshape(-1) for v in res.bracket)
        fl, fr = (np.asarray(v, dtype=float).reshape(-1) for v in res.f_bracket)
        xs = np.asarray(res.x, dtype=float).reshape(-1)
        fs = np.asarray(res.f_x, dtype=float).reshape(-1)
        for j, i in enumerate(todo):
            pick = float(lo[i])
            for cand, fc in ((xr[j], fr[j]), (xs[j], fs[j]), (xl[j], fl[j])):
                if fc <= 0 and lo[i] <= cand <= hi[i]:
                    pick = float(cand)
                    break
            out[i] = SearchResult(theta=pick, nothing_rejected=False, hit_ceiling=False)
    return [r for r in out if r is not None]


def largest_rejected_batched(reject_many: Callable[[np.ndarray], np.ndarray], lo: float,
                             hi: float, tol: float, points: int) -> tuple[SearchResult, int]:
    """Largest theta in [lo, hi] with reject(theta), for a predicate true on an initial
    segment, by repeated grids of ``points`` candidates (the k-ary analogue of
    :func:`largest_rejected`, same conventions: the rejected end is returned), for predicates
    that are cheaper evaluated on many candidates at once.  Returns the result and the number
    of candidates evaluated."""
    grid = np.linspace(lo, hi, points)
    rej = reject_many(grid)
    evals = points
    if not rej[0]:
        return SearchResult(theta=lo, nothing_rejected=True, hit_ceiling=False), evals
    if rej[-1]:
        return SearchResult(theta=hi, nothing_rejected=False, hit_ceiling=True), evals
    while True:
        j = int(np.argmin(rej)) - 1      # last rejected before the first non-rejected
        a, b = float(grid[j]), float(grid[j + 1])
        if b - a <= tol * max(1.0, abs(a)):
            return SearchResult(theta=a, nothing_rejected=False, hit_ceiling=False), evals
        grid = np.linspace(a, b, points)
        inner = reject_many(grid[1:-1])
        evals += points - 2
        rej = np.concatenate([[True], inner, [False]])


def solve_monotone(fn: Callable[[float], float], target: float, lo: float, hi: float, *,
                   xtol: float = 1e-12, rtol: float = 1e-12, expand: bool = True,
                   max_hi: float = 1e6) -> float:
    """Solve fn(x) = target for a monotone fn on [lo, hi] with Brent's method.

    If the target is not bracketed and ``expand`` is set, ``hi`` is doubled (up to ``max_hi``).
    Returns ``lo`` if fn(lo) is already on the far side of the target in the direction fn
    moves (i.e. the solution set starts at ``lo``); raises ValueError if no bracket exists.
    """
    g_lo = fn(lo) - target
    if g_lo == 0:
        return lo
    g_hi = fn(hi) - target
    while g_lo * g_hi > 0 and expand and hi < max_hi:
        lo, g_lo = hi, g_hi
        hi = min(2 * hi if hi > 0 else 1.0, max_hi)
        g_hi = fn(hi) - target
    if g_lo * g_hi > 0:
        raise ValueError(f"target {target!r} is not reached on [{lo}, {hi}]")
    if g_hi == 0:
        return hi
    return float(optimize.brentq(lambda x: fn(x) - target, lo, hi, xtol=xtol, rtol=rtol,
                                 maxiter=500))


def invert_decreasing(fn: Callable[[np.ndarray], np.ndarray], y: np.ndarray | float,
                      lo: float = 0.0, hi: float = 1.0, iters: int = 60) -> np.ndarray:
    """Vectorised bisection: x in [lo, hi] with fn(x) = y for a non-increasing fn.

    Returns the smallest x (to 2^-iters of the interval) with fn(x) <= y, which is the
    generalised inverse used for trade-off functions (f^{-1}(y) = inf{x : f(x) <= y}).
    """
    y = np.asarray(y, dtype=float)
    a = np.full(y.shape, lo, dtype=float)
    b = np.full(y.shape, hi, dtype=float)
    for _ in range(iters):
        mid = 0.5 * (a + b)
        below = fn(mid) <= y
        b = np.where(below, mid, b)
        a = np.where(below, a, mid)
    return b if b.ndim else b[()]


def log_grid(lo: float, hi: float, num: int) -> np.ndarray:
    """Log-spaced grid including both ends (helper for numeric sweeps)."""
    return np.exp(np.linspace(math.log(lo), math.log(hi), num))
