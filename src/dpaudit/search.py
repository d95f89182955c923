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

__all__ = ["SearchResult", "largest_rejected", "largest_rejected_root",
           "largest_rejected_roots", "largest_rejected_batched", "largest_rejected_grid",
           "chandrupatla", "solve_monotone", "invert_decreasing"]


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
    (TOR notes §2.11 returns the midpoint; returning the rejected end is the conservative
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


def chandrupatla(f: Callable[[np.ndarray, np.ndarray], np.ndarray], a: np.ndarray,
                 b: np.ndarray, fa: np.ndarray, fb: np.ndarray, *, xatol: float,
                 xrtol: float, maxiter: int = 1000) -> dict[str, np.ndarray]:
    """Chandrupatla's bracketing root finder (Chandrupatla 1997, Adv. Eng. Softw. 28(3)) on
    many brackets [a_i, b_i] at once, with f(a) = fa and f(b) = fb already known.

    The same iteration, tolerances and termination as SciPy's
    ``optimize.elementwise.find_root`` with ``fatol = frtol = 0`` (transcribed from
    ``scipy.optimize._chandrupatla``, SciPy 1.17): element i follows exactly the iterates
    find_root would give it, but an iteration costs tens of microseconds instead of the
    ~0.2 ms of SciPy's general elementwise machinery.  ``f(x, idx)`` evaluates the elements
    ``idx`` (indices into a, b) at ``x``.  Returns arrays ``xl, xr, fl, fr`` (final bracket,
    xl <= xr), ``x, f_x`` (the end with the smaller |f|; NaN when the bracket lost its sign
    change) and ``status`` (0 converged, -1 sign error, -3 non-finite, 1 max iterations).
    """
    x1 = np.array(a, dtype=float).reshape(-1)
    x2 = np.array(b, dtype=float).reshape(-1)
    f1 = np.array(fa, dtype=float).reshape(-1)
    f2 = np.array(fb, dtype=float).reshape(-1)
    n = x1.size
    res = {k: np.full(n, np.nan) for k in ("xl", "xr", "fl", "fr", "x", "f_x")}
    res["status"] = np.ones(n, dtype=np.int64)
    idx = np.arange(n)
    t: np.ndarray | float = 0.5
    x3 = f3 = dx = tol = np.zeros(0)

    def check() -> np.ndarray:
        nonlocal dx, tol
        i = np.abs(f1) < np.abs(f2)
        xmin, fmin = np.where(i, x1, x2), np.where(i, f1, f2)
        stop = np.abs(fmin) <= 0.0
        status = np.where(stop, 0, 1)
        bad = (np.sign(f1) == np.sign(f2)) & ~stop
        xmin[bad], fmin[bad], status[bad] = np.nan, np.nan, -1
        stop |= bad
        bad = (~(np.isfinite(x1) & np.isfinite(x2)) | (np.isnan(f1) & np.isnan(f2))) & ~stop
        xmin[bad], fmin[bad], status[bad] = np.nan, np.nan, -3
        stop |= bad
        dx = np.abs(x2 - x1)
        tol = np.abs(xmin) * xrtol + xatol
        conv = (dx < tol) & ~stop
        status[conv] = 0
        stop |= conv
        if stop.any():
            k = idx[stop]
            lo_first = x1[stop] < x2[stop]
            res["xl"][k] = np.where(lo_first, x1[stop], x2[stop])
            res["xr"][k] = np.where(lo_first, x2[stop], x1[stop])
            res["fl"][k] = np.where(lo_first, f1[stop], f2[stop])
            res["fr"][k] = np.where(lo_first, f2[stop], f1[stop])
            res["x"][k], res["f_x"][k], res["status"][k] = xmin[stop], fmin[stop], \
                status[stop]
        return stop

    dx = tol = np.zeros(0)
    stop = check()
    for _ in range(maxiter):
        keep = ~stop
        if not keep.any():
            break
        idx, x1, x2, f1, f2 = idx[keep], x1[keep], x2[keep], f1[keep], f2[keep]
        dx, tol = dx[keep], tol[keep]
        if not isinstance(t, float):
            t = t[keep]
            x3, f3 = x3[keep], f3[keep]
            t = np.clip(t, 0.5 * tol / dx, 1 - 0.5 * tol / dx)
        x = x1 + t * (x2 - x1)
        fx = np.asarray(f(x, idx), dtype=float)
        x3, f3 = x2.copy(), f2.copy()
        j = np.sign(fx) == np.sign(f1)
        nj = ~j
        x3[j], f3[j] = x1[j], f1[j]
        x2[nj], f2[nj] = x1[nj], f1[nj]
        x1, f1 = x, fx
        stop = check()
        with np.errstate(divide="ignore", invalid="ignore"):
            xi1 = (x1 - x2) / (x3 - x2)
            phi1 = (f1 - f2) / (f3 - f2)
            alpha = (x3 - x1) / (x2 - x1)
            j = ((1 - np.sqrt(1 - xi1)) < phi1) & (phi1 < np.sqrt(xi1))
            f1j, f2j, f3j, alphaj = f1[j], f2[j], f3[j], alpha[j]
            t_arr = np.full_like(alpha, 0.5)
            t_arr[j] = (f1j / (f1j - f2j) * f3j / (f3j - f2j)
                        - alphaj * f1j / (f3j - f1j) * f2j / (f2j - f3j))
            t = t_arr
    return res


def largest_rejected_root(margin: Callable[[float], float], lo: float, hi: float, *,
                          tol: float = 1e-6, floor: float = -1e6) -> SearchResult:
    """Largest theta in [lo, hi] with ``margin(theta) <= 0`` ("rejected"), for a margin that
    is continuous and non-decreasing in theta (e.g. log p-value(theta) - log alpha).

    Same contract as :func:`largest_rejected` for the predicate ``margin <= 0`` -- the
    returned theta is the rejected end of a final bracket of width <= tol * max(1, |theta|),
    so it is never above the true boundary and at most that far below it -- but the bracket
    is shrunk with Chandrupatla's method (the iteration of SciPy's ``find_root``, run by
    :func:`chandrupatla`), which uses the size of the margin and needs ~8 evaluations where
    bisection needs ~25.  A margin of -inf (e.g. a p-value that underflows to 0) is read as
    ``floor``.  One problem of :func:`largest_rejected_roots`.
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

        # Chandrupatla: SciPy find_root's iteration (same iterates), without its overhead
        res = chandrupatla(f, a, b, ga, gb, xatol=0.5 * tol, xrtol=0.5 * tol)
        xl, xr, fl, fr = res["xl"], res["xr"], res["fl"], res["fr"]
        xs, fs = res["x"], res["f_x"]
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


def _linspace_rows(a: np.ndarray, b: np.ndarray, points: int) -> np.ndarray:
    """Row i = ``np.linspace(a[i], b[i], points)``, bit for bit (the same arithmetic as
    NumPy's scalar-endpoint linspace: k * ((b - a) / (points - 1)) + a, last entry = b)."""
    step = (b - a) / (points - 1)
    y = np.arange(points, dtype=float)[None, :] * step[:, None] + a[:, None]
    y[:, -1] = b
    return y


def largest_rejected_grid(reject_rows: Callable[[np.ndarray, np.ndarray], np.ndarray],
                          lo: float, hi: float, tol: float, points: int, size: int
                          ) -> tuple[list[SearchResult], np.ndarray]:
    """:func:`largest_rejected_batched` for ``size`` independent predicates at once (one row
    each: e.g. one observation per row), sharing [lo, hi], ``tol`` and ``points``.

    ``reject_rows(rows, thetas)`` gets the row indices (int array, length k) and a (k, c)
    array of candidates, ascending along each row, and returns a (k, c) bool array that must
    be exact at every column up to and including the first False of each row; the entries
    after a row's first False are ignored (a predicate may skip them and report False).  Only
    the first non-rejected candidate of a pass decides the next bracket, so this is all the
    k-ary search uses, and every row follows exactly the grids, bracket and result of
    :func:`largest_rejected_batched` on its own predicate (same conventions: the rejected
    end is returned; ``nothing_rejected`` when ``lo`` is not rejected, ``hit_ceiling`` when
    ``hi`` is).  The first pass asks for ``hi`` alone before the rest of the grid.

    Returns the results (row order) and the number of candidates each row's search
    examined, counted as :func:`largest_rejected_batched` counts them.
    """
    if size == 0:
        return [], np.zeros(0, dtype=np.int64)
    rows = np.arange(size)
    grid = _linspace_rows(np.full(size, float(lo)), np.full(size, float(hi)), points)
    top = np.asarray(reject_rows(rows, grid[:, -1:]), dtype=bool).reshape(size)
    rej = np.asarray(reject_rows(rows, grid[:, :-1]), dtype=bool).reshape(size, points - 1)
    evals = np.full(size, points, dtype=np.int64)
    out: list[SearchResult | None] = [None] * size
    for i in np.flatnonzero(~rej[:, 0]):
        out[i] = SearchResult(theta=float(lo), nothing_rejected=True, hit_ceiling=False)
    ceiling = rej[:, 0] & top
    for i in np.flatnonzero(ceiling):
        out[i] = SearchResult(theta=float(hi), nothing_rejected=False, hit_ceiling=True)
    keep = rej[:, 0] & ~top
    act, grid = rows[keep], grid[keep]
    rej = np.concatenate([rej[keep], np.zeros((act.size, 1), dtype=bool)], axis=1)
    while act.size:
        j = np.argmin(rej, axis=1) - 1       # last rejected before the first non-rejected
        k = np.arange(act.size)
        a, b = grid[k, j], grid[k, j + 1]
        done = b - a <= tol * np.maximum(1.0, np.abs(a))
        for i, t in zip(act[done].tolist(), a[done].tolist(), strict=True):
            out[i] = SearchResult(theta=t, nothing_rejected=False, hit_ceiling=False)
        act, a, b = act[~done], a[~done], b[~done]
        if not act.size:
            break
        grid = _linspace_rows(a, b, points)
        inner = np.asarray(reject_rows(act, grid[:, 1:-1]), dtype=bool)
        evals[act] += points - 2
        rej = np.concatenate([np.ones((act.size, 1), dtype=bool),
                              inner.reshape(act.size, points - 2),
                              np.zeros((act.size, 1), dtype=bool)], axis=1)
    return [r for r in out if r is not None], evals


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
