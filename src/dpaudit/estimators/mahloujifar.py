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

Under the (eps, delta) null (the default) a third shortcut decides a candidate without running
its remaining steps: B^{-1} is piecewise linear there, so the increments of r follow
D_{s+1} = q_s D_s with known ratios q_s = e^-eps i_s / (c' - i_s), and
:func:`_settle_linear` bounds the final r + h of the floating-point recursion from above and
below (rounding included).  Near the search's answer the recursion otherwise creeps on for
tens of thousands of steps of rounding-sized increments (~22,000 at 10^6 canaries) after its
outcome is settled; the bounds decide only when the outcome is proven, so the decisions and
the result stay bit for bit those of the full recursion.

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
    check_nonnegative,
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
#: decide (eps, delta) candidates analytically once their outcome is proven
#: (:func:`_settle_linear`); False runs every step (the reference, for tests and benchmarks)
_SETTLE = True
#: the step count of the first such check (then at doubling counts)
_SETTLE_FIRST = 64


#: B^{-1} of many candidates: ``bind(sel)`` -> ``fn(y)`` evaluating candidate sel[j] at y[j]
Bind = Callable[[np.ndarray], Callable[[np.ndarray], np.ndarray]]
#: the linear piece of B^{-1} per candidate (:func:`_linear_piece`): slope, y_hi, y_lo
Linear = tuple[np.ndarray, np.ndarray, float]


def _binv_family(fam: Family, thetas: np.ndarray) -> tuple[Bind, Linear | None]:
    """B^{-1} of the family members ``thetas`` (one per candidate), as ``bind(sel)`` ->
    ``fn(y)`` evaluating candidate sel[j] at y[j].  For y in [0, 1] each entry is the same
    floating-point value as :func:`_binv_many` on the candidates' curves (the named families
    use the same formulas with per-candidate parameters; any other family builds its curves
    and uses :func:`_binv_many` itself).  Second: for the (eps, delta) family the linear
    piece the recursion runs on (:func:`_linear_piece`), else None."""
    build = fam.build
    if build is GaussianDP:
        mus = np.asarray(thetas, dtype=float)  # = GaussianDP(t).mu (t > 0: float(t))
        if mus.size and not mus.min() > 0:
            raise ValueError(f"mu must be finite and in (0, inf), got {float(mus.min())!r}")

        def bind_gdp(sel: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
            mu = mus[sel]
            return lambda y: special.ndtr(special.ndtri(y) - mu)
        return bind_gdp, None
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
        return bind_laplace, None
    d0 = is_eps_delta(fam)
    if d0 is not None:
        # EpsDeltaDP.tradeoff at alpha = 1 - y, per candidate (same scalars as there):
        # f(a) = max{0, 1 - d - e^eps a, e^-eps (1 - d - a)}
        epsd = _eps_values(thetas)             # = EpsDeltaDP(t, d0).eps
        ex_d = np.array([math.exp(e) for e in epsd])
        emx_d = np.array([math.exp(-e) for e in epsd])

        def bind_eps_delta(sel: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
            e1, e2 = ex_d[sel], emx_d[sel]

            def fn(y: np.ndarray) -> np.ndarray:
                a = np.clip(1.0 - y, 0.0, 1.0)
                return np.maximum(0.0, np.maximum(1 - d0 - e1 * a, e2 * (1 - d0 - a)))
            return fn
        return bind_eps_delta, _linear_piece(ex_d, emx_d, d0)
    curves = [_symmetric(fam.curve(float(t))) for t in thetas.tolist()]
    sgm = [c for c in curves if isinstance(c, SubsampledGaussianDP)]
    if len(sgm) == len(curves) and len({(c.q, c.symmetrized) for c in sgm}) == 1:
        mus_s = np.array([c.mu for c in sgm])
        q, sym = sgm[0].q, sgm[0].symmetrized

        def bind_sgm(sel: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
            mu = mus_s[sel]
            return lambda y: sgm_tradeoff(mu, q, 1.0 - y, symmetrized=sym)
        return bind_sgm, None
    verts = [getattr(c, "vertices", None) for c in curves]
    if all(v is not None for v in verts):
        return _bind_vertices(cast(list[tuple[np.ndarray, np.ndarray]], verts)), None
    many = _binv_many(curves)

    def bind_any(sel: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        return lambda y: many(y, sel)
    return bind_any, None


def _bind_vertices(verts: list[tuple[np.ndarray, np.ndarray]]) -> Bind:
    """``bind`` for piecewise-linear members (``ProfileCurve``, e.g. the DP-SGD family's):
    candidate sel[j] at y[j] is ``np.interp(1 - y[j], x, y)`` on its vertices -- the same call,
    on the same clipped values, as its ``tradeoff`` through :func:`inverse_blowup` -- with the
    entries grouped by candidate once per ``bind`` instead of once per evaluation."""
    def bind_vertices(sel: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        order = np.argsort(sel, kind="stable")
        s = sel[order]
        starts = np.flatnonzero(np.concatenate([[True], s[1:] != s[:-1]]))
        groups = [(order[a:b], verts[int(s[a])])
                  for a, b in zip(starts.tolist(), [*starts[1:].tolist(), s.size], strict=True)]

        def fn(y: np.ndarray) -> np.ndarray:
            a = np.asarray(y, dtype=float)
            if np.isnan(a).any():
                raise ValueError("alpha must not contain NaN")
            a = np.clip(1.0 - np.clip(a, 0.0, 1.0), 0.0, 1.0)
            out = np.empty(a.size)
            for idx, (xs, ys) in groups:
                out[idx] = np.interp(a[idx], xs, ys)
            return out
        return fn
    return bind_vertices


def _eps_values(thetas: np.ndarray) -> list[float]:
    """``[EpsDeltaDP(t, d).eps for t in thetas]`` (the check of every candidate, vectorised:
    finite and >= 0, as floats)."""
    t = np.asarray(thetas, dtype=float)
    if t.size and not (np.isfinite(t).all() and t.min() >= 0):
        return [check_nonnegative("eps", x) for x in thetas.tolist()]   # raises
    return t.tolist()


#: unit roundoff of float64 (2^-53)
_U = 2.0 ** -53
#: blocks of steps per candidate examined by :func:`_settle_linear` (past them a geometric
#: tail), and the largest block
_BLOCK_LEN_MAX = 64
#: the most steps examined (the rest: a geometric tail)
_WINDOW_MAX = 1 << 16
#: the window ends once every candidate's products P_j have peaked and fallen below e^this
_LOG_NEGLIGIBLE = -30.0
#: the most (candidate, block) entries of one array of :func:`_settle_row` (memory ~ 16 MB each)
_CHUNK = 1 << 21
#: windows up to this many steps are examined step by step at once (no blocks)
_EXACT_ONLY = 2048
#: distance kept from the kink of f_{eps, delta} (the recursion must stay on its e^-eps piece)
_KINK_MARGIN = 1e-9


def _linear_piece(e1: np.ndarray, e2: np.ndarray, d0: float) -> Linear:
    """For the (eps, delta) family (candidates' e^eps ``e1`` and e^-eps ``e2``, null delta
    ``d0``): per candidate the slope a = e^-eps of the piece of B^{-1} the recursion runs on,
    the largest y kept on that piece (``y_hi``), and the smallest (``y_lo``).

    B^{-1}(y) = f(1 - y) = max{0, 1 - d - e^eps (1 - y), e^-eps (y - d)} is convex and
    piecewise linear: slope 0 below y = d, e^-eps up to the kink y* = 1 - (1 - d)(1 - e^-eps)
    / (e^eps - e^-eps) (>= 1/2), e^eps above it.  ``y_hi = y* - 1e-9``: there the two pieces
    differ by at least (e^eps - e^-eps) 1e-9, far more than the rounding of either (a candidate
    with 0 < e^eps - e^-eps < 1e-5 gets no shortcut; at eps = 0 the pieces coincide and
    ``y_hi = 1 - 1e-9``, below the cap r <= 1)."""
    spread = e1 - e2
    with np.errstate(divide="ignore", invalid="ignore"):
        kink = 1.0 - (1.0 - d0) * (1.0 - e2) / spread
    y_hi = np.where(spread == 0, 1.0, np.where(spread >= 1e-5, kink, -np.inf)) - _KINK_MARGIN
    return e2, y_hi, d0 + _KINK_MARGIN


def _geometric(x: np.ndarray, n: int, start: int, upper: bool) -> np.ndarray:
    """An upper (``upper``) or lower bound on sum_{k=start}^{start+n-1} x^k, x >= 0, start in
    {0, 1}: the closed form (1 - x^n) / (1 - x) x^start, relative rounding error
    <= 4u / |1 - x| < 5e-11 (inside the callers' 1e-9 slack), and n times the largest
    (smallest) term where |1 - x| < 1e-5."""
    if n == 1:
        return x if start else np.ones_like(x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        closed = (1 - x ** n) / (1 - x) * (x if start else 1.0)
        near = n * (np.maximum(x, 1.0) if upper else np.minimum(x, 1.0)) ** (n - 1 + start)
    return np.where(np.abs(x - 1) < 1e-5, near, closed)


def _log_weights(i_next: float, cp: float, a_max: float) -> tuple[np.ndarray, np.ndarray]:
    """log w_{t+j} (j = 0 .. W; -inf once no step is left) and log prod_{l<j} w_{t+l}
    (j = 0 .. W) over the window W of one observation: the steps until the largest
    candidate's products P_j (every candidate's P_j is smaller: a <= a_max) have passed
    their peak (q < 1) and fallen below e^_LOG_NEGLIGIBLE, at most _WINDOW_MAX steps (the
    rest is the geometric tail of :func:`_settle_row`)."""
    n_left = i_next + 1
    w_len = int(min(n_left, 1024))
    la = math.log(a_max)
    while True:
        ii = i_next - np.arange(w_len + 1, dtype=float)
        with np.errstate(divide="ignore"):
            log_w = np.where(ii >= 0, np.log(np.maximum(ii, 0.0)) - np.log(cp - ii), -np.inf)
        log_prod = np.concatenate([[0.0], np.cumsum(log_w[:-1])])
        log_p = np.arange(w_len + 1) * la + log_prod
        past = np.flatnonzero((la + log_w < 0) & (log_p < _LOG_NEGLIGIBLE))
        if past.size or w_len >= min(n_left, _WINDOW_MAX):
            end = int(past[0]) if past.size else w_len
            return log_w[:end + 1], log_prod[:end + 1]
        w_len = int(min(4 * w_len, n_left, _WINDOW_MAX))


def _settle_linear(r_prev: np.ndarray, r: np.ndarray, h: np.ndarray, gm: np.ndarray,
                   a: np.ndarray, y_hi: np.ndarray, y_lo: float, i_next: np.ndarray,
                   cp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decide, without running them, the remaining steps of candidates whose recursion runs on
    the linear piece B^{-1}(y) = a (y - d) (the (eps, delta) null, a = e^-eps: the default).

    Returns ``(rejected, accepted)``: the final r[0] + h[0] - c'/m of the *floating-point*
    recursion (:func:`_reject_prefix`) is proven > 0, resp. < 0; neither for an undecided
    candidate (it is stepped on).  Inputs: the state after step t, r_t = ``r``, r_{t-1} =
    ``r_prev``, h_t = ``h`` = B^{-1}(r_{t-1}) (h changed at step t), the index ``i_next`` =
    c - 1 - t of the next step and N = i_next + 1 steps left.

    On the linear piece the recursion is h_{s+1} = a (r_s - d) and, with D_s = r_s - r_{s-1},
    D_{s+1} = w_s (h_{s+1} - h_s) = q_s D_s, q_s = a w_s, w_s = i_s / (c' - i_s): the
    increments are a geometric-like sequence whose ratios q_s decrease as i_s decreases.  In
    floating point (unit roundoff u = 2^-53) one step from the computed state satisfies
    (B^{-1} is computed to within 2.01 a u on this piece, within 3.1 u on either piece; the
    weight, difference, product and sum each round once; r <= 1):

        q_s (1 - 4u) D_s - e'_s  <=  D_{s+1}  <=  q_s (1 + 4u) D_s + e_s,
        e_s = (9 q_s + 2) u,  e'_s = 1.01 (6.2 w_s + 2) u,
        max(0, a D_s - 6.2 u)  <=  h_{s+1} - h_s  <=  a D_s + 8 a u,

    unless h stops changing (D = 0 from then on; the lower bound allows it: it needs
    a D_s <= 6.2 u, where the lower bound is already <= 0).  The lower bounds hold past the
    kink too (B^{-1} is convex with slope >= a above d), the upper ones only on the piece.
    With P_j = prod_{l<j} q_{t+l} and q decreasing, prod_{k=l}^{j-1} q_{t+k} <= P_{j-l}, so

        D_{t+j} <= P_j D_t + e_t C_{j-1},   D_{t+j} >= P_j D_t - e'_t C_{j-1},
        C_{j-1} = sum_{l<j} P_l,

    (the lower one while it stays positive).  The sums run over a window of W steps
    (:func:`_log_weights`: until every candidate's P_j has peaked and fallen below e^-30, at
    most 2^16 steps); past it the ratios are <= q_W, a geometric tail when q_W < 1.  In the
    window P_j is exact at the start j0 of each block of L steps (log P = j log a + log prod w,
    the product summed once per observation) and within a block q_{t+j0}^{j-j0} >= P_j /
    P_{j0} >= q_{t+j1-1}^{j-j0} (q decreasing); L is chosen per observation so that q changes
    by under ~1% within a block, and the candidates the blocks leave undecided are bounded
    again step by step (L = 1).  The sums bound the growth of r (S) and of r + h
    ((1 + a) S + a D_t + 8 a u N); the lower sum runs over the blocks where every term is
    provably positive.  The upper bound also needs r_{t-1} > d (``y_lo``) and r_t + S <
    ``y_hi`` (on the piece); a window whose products exceed e^60 is undecided.  A slack of
    1e-8 on the logarithms, 1e-9 on the sums and 1e-12 on the gap covers the rounding of this
    computation.  The decision is therefore the one the recursion (Mahloujifar et al.'s, as
    in TOR notes §5.2) would take run to the end, so the search and its result are unchanged
    bit for bit (``tests/test_mahloujifar.py`` checks this against the plain recursion).
    """
    rejected = np.zeros(r.size, dtype=bool)
    accepted = np.zeros(r.size, dtype=bool)
    keys, inv = np.unique(np.stack([i_next, cp]), axis=1, return_inverse=True)
    for g in range(keys.shape[1]):   # one pass per observation (row of the grid), not per canary
        sel = np.flatnonzero(inv.reshape(-1) == g)
        i_g, cp_g = float(keys[0, g]), float(keys[1, g])
        log_w, log_prod = _log_weights(i_g, cp_g, float(a[sel].max()))
        size = 1
        if log_w.size > _EXACT_ONLY:
            kappa = 1 / max(i_g, 1.0) + 1 / (cp_g - i_g)   # ~ the decrease of log q per step
            size = int(np.clip(math.sqrt(0.01 / kappa), 1, _BLOCK_LEN_MAX))
        for length in (size, 1) if size > 1 else (size,):
            # candidates in chunks: a (candidates x blocks) array stays under _CHUNK entries
            per = max(1, _CHUNK // -(-(log_w.size - 1) // length))
            for lo in range(0, sel.size, per):
                part = sel[lo:lo + per]
                rej, acc = _settle_row(r_prev[part], r[part], h[part], gm[part], a[part],
                                       y_hi[part], y_lo, i_g, cp_g, log_w, log_prod, length)
                rejected[part], accepted[part] = rej, acc
            sel = sel[~(rejected[sel] | accepted[sel])]
            if not sel.size:
                break
    return rejected, accepted


def _settle_row(r_prev: np.ndarray, r: np.ndarray, h: np.ndarray, gm: np.ndarray,
                a: np.ndarray, y_hi: np.ndarray, y_lo: float, i_next: float, cp: float,
                log_w: np.ndarray, log_prod: np.ndarray, size: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_settle_linear` for candidates of one observation (same i_next and c'), over
    the window of :func:`_log_weights` (``log_w``, ``log_prod``) in blocks of ``size`` steps."""
    n_left = i_next + 1
    nb = -(-(log_w.size - 1) // size)
    w_len = nb * size                                   # whole blocks (may pass the window)
    if w_len + 1 > log_w.size:                          # extend: the last block's weights
        ii = i_next - np.arange(log_w.size, w_len + 1, dtype=float)
        with np.errstate(divide="ignore"):
            more = np.where(ii >= 0, np.log(np.maximum(ii, 0.0)) - np.log(cp - ii), -np.inf)
        log_prod = np.concatenate([log_prod, log_prod[-1] + log_w[-1]
                                   + np.concatenate([[0.0], np.cumsum(more[:-1])])])
        log_w = np.concatenate([log_w, more])
    log_a = np.log(a)[:, None]
    j0 = np.arange(nb) * size
    j1 = j0 + size
    # per candidate and block: log P_{j0}, the ratios at the block's first and last step
    log_p0 = j0 * log_a + log_prod[j0]
    q_first = np.exp(log_a + log_w[j0])
    q_last = np.exp(log_a + log_w[j1 - 1])
    q_hi = q_first * (1 + 1e-9)
    q_lo = q_last * (1 - 1e-9)
    # the largest log P_j of each block; a block past e^60 is not used (and its values are
    # clamped to stay finite: q > 1 at a block means every earlier q > 1, so log P_{j0} >= 0
    # and a block within e^60 has q^L <= e^60, unchanged by the clamps)
    with np.errstate(divide="ignore"):
        peak = log_p0 + size * np.maximum(np.log(q_hi), 0.0)
    small = peak <= 60.0
    finite = small.all(axis=1)
    p0_hi = np.exp(np.minimum(log_p0 + 1e-8, 60.0))
    p0_lo = np.exp(np.minimum(log_p0 - 1e-8, 60.0))
    q_hi = np.minimum(q_hi, math.exp(60.0 / size))
    q_lo = np.minimum(q_lo, math.exp(60.0 / size))
    sum_hi = p0_hi * _geometric(q_hi, size, 1, True)         # >= sum of P_j over the block
    cum_hi = np.cumsum(sum_hi, axis=1)
    total = cum_hi[:, -1]                               # >= P_1 + ... + P_W
    d = r - r_prev
    d_hi, d_lo = d * (1 + 2 * _U), d * (1 - 2 * _U)
    q0 = a * math.exp(log_w[0])
    w0 = math.exp(log_w[0])
    e_hi = (9 * q0 + 2) * _U
    e_lo = (6.2 * w0 + 2) * 1.01 * _U
    s_win = d_hi * total + e_hi * w_len * (1 + total)
    # the tail past the window: the ratio at step t + W bounds every later one
    rest = n_left - w_len
    if rest > 0:
        q_w = a * math.exp(log_w[w_len]) * (1 + 1e-9)
        p_w = np.exp(np.minimum(log_a[:, 0] * w_len + log_prod[w_len] + 1e-8, 60.0))
        u_w = p_w * d_hi + e_hi * (1 + total)
        with np.errstate(divide="ignore", invalid="ignore"):
            tail = (u_w * q_w + rest * e_hi) / (1 - q_w)
        fits = finite & (q_w < 1)
    else:
        tail = np.zeros_like(r)
        fits = finite
    s = (s_win + np.where(fits, tail, 0.0)) * (1 + 1e-9) + 1e-15
    gap = (r + h) - gm
    on_piece = fits & (r_prev > y_lo) & (r + s < y_hi)
    growth = ((1 + a) * s + a * d_hi + 8 * a * _U * n_left) * (1 + 1e-9)
    accepted = on_piece & (gap + growth < -1e-12)
    # lower bound over the leading blocks whose every term is provably positive (a partial sum
    # of increments is a lower bound: r never decreases); a capped r = 1 rejects anyway
    # (r + h > 1 >= c'/m)
    err_blk = e_lo * size * (1 + cum_hi)                # >= sum of e' C_{j-1} over the block
    first = p0_lo * np.minimum(q_lo, 1.0) ** size * d_lo[:, None]
    ok_blk = (first > e_lo * (1 + cum_hi)) & small
    prefix = np.cumprod(ok_blk, axis=1, dtype=bool) & (r_prev > y_lo)[:, None]
    base = d_lo[:, None] * p0_lo
    low_r = np.where(prefix, base * _geometric(q_lo, size, 1, False) - err_blk, 0.0)
    low_h = np.where(prefix, base * _geometric(q_lo, size, 0, False) - err_blk, 0.0)
    n_low = prefix.sum(axis=1) * size
    low = low_r.sum(axis=1) + a * low_h.sum(axis=1) - 6.2 * _U * n_low
    rejected = gap + low * (1 - 1e-9) > 1e-12
    return rejected, accepted


def _reject_prefix(bind: Bind,
                   row: np.ndarray, col: np.ndarray, n_rows: int, m: np.ndarray,
                   cp: np.ndarray, c: np.ndarray, tau: float,
                   linear: Linear | None = None) -> np.ndarray:
    """"reject" (r[0] + h[0] > c'/m) for candidates (``row``, ``col``): observation
    ``row[j]`` (counts m, cp, c indexed by row) against candidate ``j`` of the bound B^{-1}.

    Exact up to and including the first non-rejected column of each row (the contract of
    :func:`dpaudit.search.largest_rejected_grid`); later columns may be reported False
    unevaluated.  The recursion is stepped for all candidates at once, each with its own
    index i = c - 1 - t, in the floating-point operations of :func:`_gap`; a candidate
    leaves when h stops changing or i reaches 0 (its final r + h is then decided), when
    r + h - c'/m > 0 already (r and h never decrease, so the final value is larger), or when
    a column to its left in the same row is known not to be rejected.  With ``linear``
    (:func:`_linear_piece`: the (eps, delta) null) a candidate also leaves when
    :func:`_settle_linear` proves its final decision from its current state: without it the
    recursion creeps on for up to ~c' / 20 steps of rounding-sized increments near the
    search's answer (22,000 steps at 10^6 canaries) after its decision is long settled.
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
    r_prev = r
    if linear is not None:
        slope_a, y_hi_a, y_lo = linear[0], linear[1], linear[2]
    first_false = np.full(n_rows, np.iinfo(np.int64).max)
    next_settle = _SETTLE_FIRST
    changed = np.ones(k, dtype=bool)
    binv = None
    t = 0
    while True:
        # finished: h stopped changing, or i went down to 0 (c = 0: nothing to run)
        fin = ~changed | (steps_a <= t)
        rejected = (r + h) - gm_a > 0
        done = fin | rejected
        if linear is not None and t >= next_settle:
            # a few checks, at doubling step counts: short recursions end on their own
            next_settle = 2 * t
            live = ~done
            if live.any():
                lv = np.flatnonzero(live)
                rej_s, acc_s = _settle_linear(r_prev[lv], r[lv], h[lv], gm_a[lv],
                                              slope_a[lv], y_hi_a[lv], y_lo, cm1_a[lv] - t,
                                              cp_a[lv])
                rejected[lv[rej_s]] = True
                fin[lv[acc_s]] = True
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
            if linear is not None:
                r_prev, slope_a, y_hi_a = r_prev[keep], slope_a[keep], y_hi_a[keep]
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
            if s == nb - 1:
                changed = hn > h
                r_prev = r
            r = np.minimum(r + w[s] * (hn - h), 1.0)
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
        bind, linear = _binv_family(fam, thetas.reshape(-1))
        row = np.repeat(rows, w)
        col = np.tile(np.arange(w), k)
        rej = _reject_prefix(bind, row, col, n, m_arr, g_arr, c_arr, tau,
                             linear if _SETTLE else None)
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
