"""Order statistics of the optimal one-run audit: score profiles and the exact error tail.

Tight One-Run (Xiang, Wang, Xiao, Tian, Wang, *Tight Privacy Audit in One Run*), Theorem 1 and
Section 5.3: if a mechanism is f-DP, the number T of wrong guesses among the r
highest-scoring of n guesses is stochastically no smaller than under the dominating game
A* of n independent f-DP channels read by the optimal (MAP) decoder, whose score is the
absolute privacy loss |L| and whose conditional error given the score is
gamma = 1 / (1 + e^{|L|})  (Eq. 16).  The p-value of "M is f-DP" is therefore
P_{A*}[T <= u], a function of (n, r, u, f) only (TOR notes §2.6).

Coordinates used here ("top mass" v in [0, 1], the complement of the paper's quantile w):
rank the outcomes of the mixture (P + Q) / 2 from the most to the least confident, i.e. by
increasing gamma.  H(v) = error mass of the top v of mixture mass (H(1) = e*), a convex
piecewise-linear function whose slope gamma~(v) is the conditional error at top mass v;
gamma_bar(v) = H(v) / v is the mean error of the top v (TOR notes §2.6, with w = 1 - v).

Exact tail (TOR notes §2.9, the authors' released form).  The top-mass coordinate of the
highest *discarded* guess is V = 1 - W ~ Beta(r + 1, n - r); given V = v the r released
guesses are i.i.d. uniform in the top v, so their errors are i.i.d. Bernoulli(gamma_bar(v)):

    P[T <= u] = E_{V ~ Beta(r+1, n-r)} [ BinCDF(u; r, gamma_bar(V)) ],   r < n,
    P[T <= u] = BinCDF(u; n, e*),                                          r = n.

No independence assumption is made.  (Theorem 3 of the paper treats the released error bits
as independent Bernoulli(p_i); that Poisson-binomial is slightly anti-conservative and is
offered here only through the paper's own Chernoff (Prop. 1) and Hoeffding bounds, which
are conservative -- TOR notes §0.3 and §4.7.)

The score profile is built from the trade-off function alone (``curve.tradeoff`` and
``curve.power``), so it works for every :class:`~dpaudit.curves.Curve`, symmetric or not:
on a grid of type-I errors alpha, the likelihood-ratio test region {L >= t} has P-mass alpha
and Q-mass 1 - f(alpha) (Def. 9 of the paper: the base pair P = U[0,1], Q with CDF f(1-x)).
Each grid cell is one "outcome" (P-mass d_alpha, Q-mass d_power).  Two readings:

* ``envelope="chord"``: the cells as outcomes (a garbling of the true pair; its H is an
  upper bound of the true H, i.e. slightly *anti*-conservative);
* ``envelope="lower"`` (default): within each cell the true slope lies between the chord
  slopes of the neighbouring cells (convexity), so splitting the cell into two sub-cells with
  those slopes gives a lower bound of H, hence of gamma_bar, hence an *upper* bound of the
  p-value: the computed p-value is never smaller than the exact one, up to floating point.

Atoms of |L| (Laplace, (eps, delta)-DP, randomized response) are linear pieces of f and are
represented exactly; the known kinks of the built-in curves are added to the grid, and ties
inside an atom are broken by an error-independent random priority, which makes H linear
there (TOR notes §2.6, Eq. 20 reading).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from dpaudit.curves.base import Curve
from dpaudit.curves.eps_delta import EpsDeltaDP
from dpaudit.curves.gaussian import GaussianDP
from dpaudit.curves.laplace import LaplaceDP
from dpaudit.curves.subsampled import SubsampledGaussianDP
from dpaudit.search import solve_monotone
from dpaudit.validation import check_choice, check_count, check_nested_counts

__all__ = [
    "ScoreProfile",
    "GaussianProfile",
    "as_profile",
    "score_profile",
    "profile_from_pair",
    "log_binom_cdf",
    "tail_probability",
    "log_tail_probability",
    "log_tail_probabilities_gdp",
    "expected_errors",
    "order_statistic_error_probs",
    "chernoff_tail",
    "hoeffding_tail",
    "simulate_errors",
    "ENVELOPES",
]

ENVELOPES = ("lower", "chord")

#: smallest type-I error on the normal-quantile grid (ndtr(-37.5) ~ 4.6e-308).
_Z_MIN = -37.5
#: ``scipy.special.bdtr`` converts its counts to C ints (NaN from 2^31 on).
_BDTR_MAX_N = 2**31 - 1
#: tail probability left out of the Beta(r+1, n-r) integration range (each side).
_BETA_TAIL = 1e-25


# --------------------------------------------------------------------------------------------
# The score profile
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreProfile:
    """The law of the optimal decoder's conditional error under the mixture (P + Q) / 2.

    ``gamma[k]`` is the conditional error of piece k and ``mass[k]`` its mixture mass; pieces
    are sorted by increasing gamma (most confident first).  ``edges`` (length K + 1) are the
    cumulative top masses and ``h_edges`` the cumulative error masses, so that
    H(v) = h_edges[j] + gamma[j] (v - edges[j]) on piece j (TOR notes §2.10; exact inside atoms).
    """

    gamma: np.ndarray
    mass: np.ndarray
    edges: np.ndarray
    h_edges: np.ndarray

    @property
    def bit_error(self) -> float:
        """e* = integral of gamma~ = H(1) (TOR notes §1.5)."""
        return float(self.h_edges[-1])

    def _locate(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v = np.clip(np.asarray(v, dtype=float), 0.0, self.edges[-1])
        j = np.clip(np.searchsorted(self.edges, v, side="right") - 1, 0, self.gamma.size - 1)
        return v, j

    def error_mass(self, v: Any) -> np.ndarray:
        """H(v): error mass of the top v of mixture mass (v in [0, 1])."""
        v, j = self._locate(v)
        return self.h_edges[j] + self.gamma[j] * (v - self.edges[j])

    def mean_error_above(self, v: Any) -> np.ndarray:
        """gamma_bar(v) = H(v) / v, the error rate of a guess drawn uniformly from the top v.

        Computed at query time from H (never stored per node: it is 0/0 at v = 0;
        TOR notes §2.10); the limit v -> 0 is the smallest gamma.
        """
        v_in = np.asarray(v, dtype=float)
        v, j = self._locate(v_in)
        h = self.h_edges[j] + self.gamma[j] * (v - self.edges[j])
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where(v > 0, h / np.where(v > 0, v, 1.0), self.gamma[0])
        return np.clip(out, 0.0, 0.5)

    def gamma_at(self, v: Any) -> np.ndarray:
        """gamma~(v): conditional error of the guess at top mass v (the slope of H)."""
        _, j = self._locate(v)
        return self.gamma[j]


@dataclass(frozen=True)
class GaussianProfile:
    """The score profile of mu-GDP in closed form (no grid, no envelope).

    For P = N(0, 1), Q = N(mu, 1) the privacy loss is L = mu (x - mu/2), so the top v of
    mixture mass is the two-sided region |x - mu/2| >= c with

        v(c) = Phi(-mu/2 - c) + Phi(mu/2 - c),     H(v) = Phi(-mu/2 - c)

    (each side's error mass is half the other hypothesis' mass there, and both halves equal
    Phi(-mu/2 - c) / 2), gamma~(v) = 1 / (1 + e^{mu c}) (Eq. 16 at |L| = mu c) and
    gamma_bar(v) = H(v) / v.  c(v) is found by Newton's method on log v(c), a decreasing
    function; from the start c0 = max(0, mu/2 - Phi^{-1}(v)), where log v(c0) >= log v, the
    iterates pass the root once and then decrease to it monotonically (log v(c) is concave
    there), so a fixed number of steps reaches double precision.

    Same interface as :class:`ScoreProfile` for the queries the tail computations make
    (``error_mass``, ``mean_error_above``, ``gamma_at``, ``bit_error``); the grid profile of
    :func:`score_profile` is a lower envelope of this one (its gamma_bar is smaller by about
    3e-6 relative at 20,000 points), so p-values computed from it are slightly larger.
    Arrays of ``mu`` broadcast against ``v``.
    """

    mu: Any

    def _cut(self, v: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(c, log v, log H) at top masses v (v clipped to [1e-300, 1])."""
        a = 0.5 * np.asarray(self.mu, dtype=float)
        v = np.clip(np.asarray(v, dtype=float), 1e-300, 1.0)
        a, v = np.broadcast_arrays(a, v)
        lv = np.log(v)
        c = np.maximum(a - special.ndtri(v), 0.0)
        # Newton on log v(c) - log v.  Above 1e-200 the Gaussian tails and densities are
        # normal doubles, so v(c) and its slope are formed directly; below, in log space.
        fast = v >= 1e-200
        if fast.all():
            # each entry stops at its own first step below 1e-15 (relative), so an entry's
            # result does not depend on the other entries of the batch
            active = np.ones(c.shape, dtype=bool)
            for _ in range(_GDP_NEWTON_STEPS):
                vc = special.ndtr(-a - c) + special.ndtr(a - c)
                slope = (np.exp(-0.5 * (a + c) ** 2) + np.exp(-0.5 * (a - c) ** 2)) \
                    * _INV_SQRT_2PI / vc
                step = np.where(active, (np.log(vc) - lv) / slope, 0.0)
                c = np.maximum(c + step, 0.0)
                active &= np.abs(step) > 1e-15 * np.maximum(c, 1.0)
                if not active.any():
                    break
        else:
            for _ in range(_GDP_NEWTON_STEPS):
                lf = np.logaddexp(special.log_ndtr(-a - c), special.log_ndtr(a - c))
                # d log v / dc = -(phi(a + c) + phi(a - c)) / v, in log space
                ld = (np.logaddexp(-0.5 * (a + c) ** 2, -0.5 * (a - c) ** 2)
                      - _LOG_SQRT_2PI - lf)
                c = np.maximum(c + (lf - lv) * np.exp(-ld), 0.0)
        return c, lv, special.log_ndtr(-a - c)

    @property
    def bit_error(self) -> float:
        """e* = Phi(-mu/2) = H(1)."""
        return float(special.ndtr(-0.5 * float(self.mu)))

    def error_mass(self, v: Any) -> np.ndarray:
        """H(v) = Phi(-mu/2 - c(v))."""
        return np.exp(self._cut(v)[2])

    def mean_error_above(self, v: Any) -> np.ndarray:
        """gamma_bar(v) = H(v) / v (the limit at v -> 0 is 0)."""
        _, lv, lh = self._cut(v)
        return np.clip(np.exp(lh - lv), 0.0, 0.5)

    def gamma_at(self, v: Any) -> np.ndarray:
        """gamma~(v) = 1 / (1 + e^{mu c(v)})."""
        c = self._cut(v)[0]
        return special.expit(-np.asarray(self.mu, dtype=float) * c)


#: Newton steps of :class:`GaussianProfile` (converged to ~1e-16 after 5 from its start).
_GDP_NEWTON_STEPS = 8
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2 * math.pi)


def _finish_profile(gamma: np.ndarray, mass: np.ndarray, err: np.ndarray) -> ScoreProfile:
    keep = mass > 0
    gamma, mass, err = gamma[keep], mass[keep], err[keep]
    order = np.argsort(gamma, kind="stable")
    gamma, mass, err = gamma[order], mass[order], err[order]
    total = mass.sum()
    if not (total > 0 and math.isfinite(total)):
        raise ValueError("the score profile has no mass (invalid curve or pair)")
    mass = mass / total
    err = err / total
    edges = np.concatenate([[0.0], np.cumsum(mass)])
    h_edges = np.concatenate([[0.0], np.cumsum(err)])
    return ScoreProfile(gamma=np.clip(gamma, 0.0, 0.5), mass=mass, edges=edges,
                        h_edges=h_edges)


def profile_from_pair(log_lr: Any, mass: Any) -> ScoreProfile:
    """Profile of a discretised pair (TOR notes §2.10): outcomes j with log dQ/dP = log_lr[j]
    (+-inf allowed) and mixture probability mass[j] (normalised here).

    gamma_j = 1 / (1 + e^{|log_lr_j|}), evaluated as exp(-s - log1p(e^-s)) (Eq. 16).
    """
    ll = np.asarray(log_lr, dtype=float).reshape(-1)
    m = np.asarray(mass, dtype=float).reshape(-1)
    if ll.shape != m.shape:
        raise ValueError(f"log_lr and mass must have the same length, got {ll.size} and "
                         f"{m.size}")
    if np.isnan(ll).any() or not np.isfinite(m).all() or (m < 0).any():
        raise ValueError("log_lr must not be NaN and mass must be finite and >= 0")
    s = np.abs(ll)
    with np.errstate(over="ignore"):
        gamma = np.where(np.isinf(s), 0.0, np.exp(-s - np.log1p(np.exp(-s))))
    return _finish_profile(gamma, m, gamma * m)


def _known_kinks(curve: Curve) -> list[float]:
    """Type-I errors where a built-in curve is not differentiable (ends of its atoms)."""
    if isinstance(curve, LaplaceDP):
        return [0.5 * math.exp(-curve.eps), 0.5]
    if isinstance(curve, EpsDeltaDP):
        a_star = (1 - curve.delta0) / (1 + math.exp(curve.eps))
        return [a_star, 1 - curve.delta0]
    if isinstance(curve, SubsampledGaussianDP) and curve.symmetrized:
        xs = float(special.ndtr(-curve.mu / 2))
        return [xs, float(curve.tradeoff(np.array(xs)))]
    return []


def _alpha_star(curve: Curve) -> float:
    """The type-I error where the slope of f is -1 (the split between the two guesses)."""
    if isinstance(curve, GaussianDP):
        return float(special.ndtr(-curve.mu / 2))  # f(a) = a at Phi^{-1}(a) = -mu/2
    if curve.symmetric:
        # fixed point f(a) = a of a symmetric trade-off function.
        g = lambda a: float(curve.tradeoff(np.array([a]))[0]) - a  # noqa: E731
        if g(0.0) <= 0:
            return 0.0
        return solve_monotone(g, 0.0, 0.0, 0.5, xtol=1e-15, rtol=1e-14, expand=False)
    # general convex f: minimiser of a + f(a) (grid, then bounded Brent).
    grid = np.concatenate([[0.0], special.ndtr(np.linspace(-9, 9, 2001)), [1.0]])
    vals = grid + curve.tradeoff(grid)
    i = int(np.argmin(vals))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    if hi <= lo:
        return float(grid[i])
    res = optimize.minimize_scalar(lambda a: a + float(curve.tradeoff(np.array([a]))[0]),
                                   bounds=(lo, hi), method="bounded",
                                   options={"xatol": 1e-14})
    return float(res.x) if res.fun <= vals[i] else float(grid[i])


def _sorted_pairs(m: np.ndarray, e: np.ndarray) -> bool:
    """True iff the points are already in (m, e) lexicographic order (then the stable
    lexsort is the identity and is skipped)."""
    dm = m[1:] - m[:-1]
    return bool(np.all((dm > 0) | ((dm == 0) & (e[1:] >= e[:-1]))))


def _sorted_unique(x: np.ndarray) -> np.ndarray:
    """``np.unique(x)`` for an array that is sorted up to a few appended values: a stable
    sort (linear on sorted runs) and a neighbour comparison, same result."""
    x = np.sort(x, kind="stable")
    if x.size < 2:
        return x
    keep = np.empty(x.size, dtype=bool)
    keep[0] = True
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def _lower_hull(m: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices of the lower convex hull of points (m, e) sorted by m.

    The points lie on a convex function up to floating-point error (e.g. power = 1 - f
    computed with cancellation at tiny alpha); a middle point on or above the segment joining
    its two neighbours is never a hull vertex, so all such points are dropped at once and the
    pass is repeated until none is left (vectorised).
    """
    if m.size > 1 and not _sorted_pairs(m, e):
        order = np.lexsort((e, m))
        m, e = m[order], e[order]
    while m.size > 2:
        dm1, de1 = m[1:-1] - m[:-2], e[1:-1] - e[:-2]
        dm2, de2 = m[2:] - m[1:-1], e[2:] - e[1:-1]
        keep_mid = dm1 * de2 - de1 * dm2 > 0
        if keep_mid.all():
            break
        keep = np.concatenate([[True], keep_mid, [True]])
        m, e = m[keep], e[keep]
    return m, e


def _side_pieces(m: np.ndarray, e: np.ndarray, envelope: str
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(gamma, mass, err) of one side from its cumulative points (mixture mass, error mass),
    starting at (0, 0), most confident first.

    The points are first reduced to their lower convex hull (exact points of the convex H of
    this side); the hull cells are the "chord" pieces.  With ``envelope="lower"`` each cell is
    split into two sub-cells whose slopes are the neighbouring chord slopes: by convexity the
    true H lies above both supporting lines, so this is a lower bound of H.
    """
    m, e = _lower_hull(np.asarray(m, dtype=float), np.asarray(e, dtype=float))
    mass = np.diff(m)
    errm = np.maximum(np.diff(e), 0.0)
    keep = mass > 0
    mass, errm = mass[keep], errm[keep]
    slope = np.clip(errm / mass, 0.0, 0.5)
    errm = slope * mass
    if envelope == "chord" or slope.size == 0:
        return slope, mass, errm
    prev = np.concatenate([[0.0], slope[:-1]])
    nxt = np.concatenate([slope[1:], [0.5]])
    width = nxt - prev
    lin = ~(width > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(lin, mass, (nxt * mass - errm) / np.where(lin, 1.0, width))
    a = np.clip(a, 0.0, mass)
    g = np.concatenate([np.where(lin, slope, prev), nxt])
    ms = np.concatenate([a, mass - a])
    return g, ms, g * ms


def score_profile(curve: Curve, *, points: int = 20000, envelope: str = "lower"
                  ) -> ScoreProfile:
    """The score profile of the optimal decoder for the trade-off function of ``curve``.

    "Guess 1" side: the likelihood-ratio region of type-I error alpha in [0, alpha*] has
    mixture mass (alpha + 1 - f(alpha)) / 2 and error mass alpha / 2; alpha* (slope -1) is the
    MAP split, and alpha = 0 carries the Q-atom 1 - f(0) at L = +inf (gamma = 0, e.g. the
    delta of (eps, delta)-DP).  "Guess 0" side: the region alpha' in [alpha*, 1] read from
    alpha' = 1 has mixture mass (1 - alpha' + f(alpha')) / 2 and error mass f(alpha') / 2; for
    symmetric curves it is the mirror image of the first side.  Both sides together have
    mass 1 and error (alpha* + f(alpha*)) / 2 = e*.

    Grid: alpha = Phi(z), z piecewise uniform on [-37.5, -15] (1/8 of ``points``) and
    [-15, Phi^{-1}(alpha*)] (7/8), plus
    alpha*, 0 and the curve's known kinks (so atoms are exact); the asymmetric "guess 0" side
    uses 1 - alpha = Phi(-z), z up to 8.2.  See the module docstring for ``envelope``.
    """
    check_choice("envelope", envelope, ENVELOPES)
    points = check_count("points", points, minimum=16)
    a_star = min(max(_alpha_star(curve), 0.0), 1.0)
    kinks = [k for k in _known_kinks(curve) if 0.0 < k < 1.0]
    if 0 < a_star < 1:
        z_star = max(float(special.ndtri(a_star)), _Z_MIN)
    else:
        z_star = _Z_MIN
    # 1/8 of the nodes on the far tail z < -15 (top mass below ~1e-50 for mu <= 30),
    # 7/8 where audits live.
    z_mid = min(-15.0, z_star)
    zs = np.concatenate([np.linspace(_Z_MIN, z_mid, points // 8),
                         np.linspace(z_mid, z_star, points - points // 8)])
    up = np.concatenate([[0.0], special.ndtr(zs),
                         [k for k in kinks if k < a_star], [a_star]])
    up = _sorted_unique(np.clip(up, 0.0, a_star))
    pw = np.maximum.accumulate(np.clip(curve.power(up), 0.0, 1.0))
    m1 = np.concatenate([[0.0], (up + pw) / 2])
    e1 = np.concatenate([[0.0], up / 2])
    g1, ms1, er1 = _side_pieces(m1, e1, envelope)
    if curve.symmetric:
        return _finish_profile(g1, 2 * ms1, 2 * er1)
    z_lo = min(max(z_star, -8.2), 8.2)
    comp = np.concatenate([special.ndtr(-np.linspace(z_lo, 8.2, max(points // 2, 16))),
                           [1.0 - k for k in kinks if k > a_star], [1.0 - a_star], [0.0]])
    comp = _sorted_unique(np.clip(comp, 0.0, 1.0 - a_star))
    f_lo = np.clip(curve.tradeoff(1.0 - comp), 0.0, 1.0)
    f_lo = np.maximum.accumulate(f_lo)  # f(1 - comp) is non-decreasing in comp
    m2 = np.concatenate([[0.0], (comp + f_lo) / 2])
    e2 = np.concatenate([[0.0], f_lo / 2])
    g2, ms2, er2 = _side_pieces(m2, e2, envelope)
    return _finish_profile(np.concatenate([g1, g2]), np.concatenate([ms1, ms2]),
                           np.concatenate([er1, er2]))


# --------------------------------------------------------------------------------------------
# Binomial tails in log space
# --------------------------------------------------------------------------------------------


def log_binom_cdf(u: Any, r: Any, p: Any) -> np.ndarray:
    """log P[Binomial(r, p) <= u], vectorised, finite down to ~1e-300 and -inf only when
    the probability is exactly 0 (p = 1, u < r).

    Uses scipy's ``bdtr`` (``betaincc`` from r = 2^31 on, where ``bdtr``'s C ints
    overflow); where it underflows (below 1e-280) the lower tail is bounded by
    pmf(u) / (1 - t), t = u (1 - p) / ((r - u + 1) p) the pmf ratio at u (an upper bound,
    tight in the deep tail).
    """
    u, r, p = np.broadcast_arrays(np.asarray(u, dtype=float), np.asarray(r, dtype=float),
                                  np.asarray(p, dtype=float))
    p = np.clip(p, 0.0, 1.0)
    out = np.zeros(u.shape)
    full = u >= r
    zero_p = p <= 0
    one_p = (p >= 1) & ~full
    mid = ~(full | zero_p | one_p)
    if mid.any():
        um, rm, pm = u[mid], r[mid], p[mid]
        um = np.floor(um)
        if rm.max() < _BDTR_MAX_N:
            c = special.bdtr(um.astype(np.int64), rm.astype(np.int64), pm)
        else:
            # bdtr takes C ints: it returns NaN from n = 2^31 on.  The same probability is the
            # regularised incomplete beta I_{1-p}(r - u, u + 1) = betaincc(u + 1, r - u, p),
            # with real arguments.
            c = special.betaincc(um + 1, rm - um, pm)
            if np.isnan(c).any():  # pragma: no cover - never seen; refuse rather than guess
                raise FloatingPointError("binomial CDF is NaN")
        with np.errstate(divide="ignore"):
            val = np.log(c)
        tiny = ~(c > 1e-280)
        if tiny.any():
            ut, rt, pt = um[tiny], rm[tiny], pm[tiny]
            logpmf = (special.gammaln(rt + 1) - special.gammaln(ut + 1)
                      - special.gammaln(rt - ut + 1) + special.xlogy(ut, pt)
                      + special.xlog1py(rt - ut, -pt))
            t = ut * (1 - pt) / ((rt - ut + 1) * pt)
            val[tiny] = np.where(t < 1, logpmf - np.log1p(-np.minimum(t, 1 - 1e-16)),
                                 logpmf + np.log(ut + 1))
        out[mid] = np.minimum(val, 0.0)
    out[one_p] = -np.inf
    return out if out.ndim else out[()]


def _log_beta_pdf(v: np.ndarray, a: float, b: float) -> np.ndarray:
    return (special.xlogy(a - 1, v) + special.xlog1py(b - 1, -v) - special.betaln(a, b))


@functools.lru_cache(maxsize=64)
def _beta_grid(a: float, b: float, points: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Quadrature nodes for E_{V ~ Beta(a, b)}: (x, v(x), log v'(x)) with x uniform on [0, 1].

    v covers all but 2 * 1e-25 of the mass.  The nodes depend on (a, b, points) only, so they
    are cached (a search over a family evaluates the same Beta law many times).  For a
    skewed Beta (a < 30, few released guesses)
    v = lo + (hi - lo) x^2, which makes the integrand vanish smoothly at the left end so the
    trapezoid rule in x keeps its high order (Euler-Maclaurin); otherwise v is linear in x.
    """
    lo = float(stats.beta.ppf(_BETA_TAIL, a, b))
    hi = float(stats.beta.isf(_BETA_TAIL, a, b))
    if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):  # pragma: no cover
        mean = a / (a + b)
        sd = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
        lo, hi = max(mean - 18 * sd, 0.0), min(mean + 18 * sd, 1.0)
    lo, hi = max(lo, 0.0), min(hi, 1.0)
    x = np.linspace(0.0, 1.0, points)
    if a < 30:
        v = lo + (hi - lo) * x * x
        with np.errstate(divide="ignore"):
            logjac = np.log(2 * (hi - lo) * x)
    else:
        v = lo + (hi - lo) * x
        logjac = np.full(points, math.log(hi - lo))
    for arr in (x, v, logjac):  # cached: shared by every call with the same (a, b, points)
        arr.setflags(write=False)
    return x, v, logjac


@functools.lru_cache(maxsize=64)
def _beta_nodes(a: float, b: float, points: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, v, log Beta(a, b) density at v + log v'(x)): the quadrature nodes of
    :func:`_beta_grid` and their log weights (theta-independent, cached)."""
    x, v, logjac = _beta_grid(a, b, points)
    lb = _log_beta_pdf(v, a, b) + logjac
    lb.setflags(write=False)
    return x, v, lb


def _check_nru(n: Any, r: Any, u: Any) -> tuple[int, int, int]:
    return check_nested_counts(n=n, r=r, u=u)  # type: ignore[return-value]


def as_profile(source: Curve | ScoreProfile | GaussianProfile, envelope: str,
                points: int) -> ScoreProfile | GaussianProfile:
    """The profile of ``source``: itself if it is one; mu-GDP with the (default) lower
    envelope in closed form (:class:`GaussianProfile`, exact, so no envelope is needed);
    other curves through :func:`score_profile`."""
    if isinstance(source, (ScoreProfile, GaussianProfile)):
        return source
    if isinstance(source, GaussianDP) and envelope == "lower":
        return GaussianProfile(source.mu)
    if isinstance(source, Curve):
        return score_profile(source, points=points, envelope=envelope)
    raise ValueError(f"expected a Curve or ScoreProfile, got {type(source).__name__}")


def log_tail_probability(source: Curve | ScoreProfile | GaussianProfile, n: int, r: int,
                         u: int, *, quad_points: int = 1025, envelope: str = "lower",
                         profile_points: int = 20000) -> float:
    """log P_{A*}[T <= u] by the exact cut mixture (Tight One-Run §5.3; TOR notes §2.9).

    ``source`` is a Curve (its profile is built with :func:`score_profile`; mu-GDP with the
    default lower envelope uses the closed form :class:`GaussianProfile`) or a profile.  For
    r = n the result is log BinCDF(u; n, e*) with e* = ``curve.bit_error()`` (closed form for
    the built-in curves).  Otherwise the Beta(r + 1, n - r) expectation is a log-space
    trapezoid rule on ``quad_points`` points covering all but 2e-25 of the Beta mass (see
    :func:`_beta_grid`), self-normalised by the same rule applied to the Beta density.  A
    complete underflow gives -inf (probability 0), never NaN.
    """
    n, r, u = _check_nru(n, r, u)
    if u >= r:
        return 0.0
    if r == n:
        e_star = (source.bit_error() if isinstance(source, Curve) else source.bit_error)
        return float(log_binom_cdf(u, n, e_star))
    prof = as_profile(source, envelope, profile_points)
    return float(_log_cut_mixture(prof.mean_error_above, n, np.array([r]), np.array([u]),
                                  quad_points)[0])


def _log_cut_mixture(mean_error: Any, n: int, r: np.ndarray, u: np.ndarray,
                     quad_points: int) -> np.ndarray:
    """log E_{V ~ Beta(r_i + 1, n - r_i)}[BinCDF(u_i; r_i, gamma_bar_i(V))] for rows i with
    0 <= u_i < r_i < n (TOR notes §2.9): each row on its own cached Beta nodes (the same
    x grid), ``mean_error(V)`` called once on the (rows, nodes) matrix of live nodes' top
    masses (row i of the matrix belongs to row i of the problem), a log-space trapezoid
    rule per row, self-normalised by the rule on the Beta density.  -inf on underflow."""
    rows = r.size
    x = None
    v = np.empty((rows, quad_points))
    lb = np.empty((rows, quad_points))
    for i in range(rows):  # one cached node set per row (at most a handful of rows)
        x, v[i], lb[i] = _beta_nodes(float(r[i]) + 1.0, float(n - r[i]), quad_points)
    # nodes whose Beta weight is below e^-745 of the row's peak cannot contribute.
    live = lb > np.max(lb, axis=1, keepdims=True) - 745.0
    li = np.full(v.shape, -np.inf)
    gbar = mean_error(np.where(live, v, 0.5))
    rr = np.broadcast_to(r[:, None], v.shape)
    uu = np.broadcast_to(u[:, None], v.shape)
    li[live] = lb[live] + log_binom_cdf(uu[live], rr[live], gbar[live])
    if np.isnan(li).any():
        raise FloatingPointError("NaN in the tail integrand")
    assert x is not None  # rows >= 1
    num = _log_trapz_rows(li, x)
    den = _log_trapz_rows(lb, x)
    with np.errstate(invalid="ignore"):
        out = np.where(num == -np.inf, -np.inf, np.minimum(num - den, 0.0))
    return out


def _log_trapz_rows(logf: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log of the trapezoid integral of exp(logf) along each row (same x), with a
    log-sum-exp shift per row."""
    m = np.max(logf, axis=1)
    if not np.all(np.isfinite(m) | (m == -np.inf)):
        raise FloatingPointError(f"non-finite integrand maximum {m!r}")
    shift = np.where(np.isfinite(m), m, 0.0)
    val = _trapz(np.exp(logf - shift[:, None]), x, axis=1)
    with np.errstate(divide="ignore"):
        return np.where((val > 0) & np.isfinite(m), shift + np.log(val), -np.inf)


def log_tail_probabilities_gdp(mu: Any, n: int, r: Any, u: Any, *,
                               quad_points: int = 1025) -> np.ndarray:
    """log P_{A*}[T <= u_i] for mu_i-GDP, vectorised over rows i (the batched form of
    :func:`log_tail_probability` with :class:`GaussianProfile`; same numbers).

    ``mu``, ``r``, ``u`` broadcast to one shape; counts must satisfy 0 <= u <= r <= n (not
    re-validated: callers validate once).  Rows with u >= r give 0, rows with r = n give
    log BinCDF(u; n, Phi(-mu/2)).
    """
    mu, r, u = np.broadcast_arrays(np.asarray(mu, dtype=float), np.asarray(r, dtype=np.int64),
                                   np.asarray(u, dtype=np.int64))
    shape = mu.shape
    mu, r, u = mu.reshape(-1), r.reshape(-1), u.reshape(-1)
    out = np.zeros(mu.size)
    full = (r == n) & (u < r)
    if full.any():
        out[full] = log_binom_cdf(u[full], n, special.ndtr(-0.5 * mu[full]))
    part = (r < n) & (u < r)
    if part.any():
        m = mu[part][:, None]
        out[part] = _log_cut_mixture(lambda v: GaussianProfile(m).mean_error_above(v), n,
                                     r[part], u[part], quad_points)
    return out.reshape(shape)


def tail_probability(source: Curve | ScoreProfile, n: int, r: int, u: int, *,
                     quad_points: int = 1025, envelope: str = "lower",
                     profile_points: int = 20000) -> float:
    """P_{A*}[T <= u] (exact cut mixture, TOR notes §2.9), in [0, 1]; 0 on underflow."""
    return float(min(1.0, math.exp(log_tail_probability(
        source, n, r, u, quad_points=quad_points, envelope=envelope,
        profile_points=profile_points))))


def expected_errors(source: Curve | ScoreProfile, n: int, r: int, *,
                    quad_points: int = 1025, envelope: str = "lower",
                    profile_points: int = 20000) -> float:
    """E[T] = r E_V[gamma_bar(V)], V ~ Beta(r + 1, n - r); n e* when r = n (TOR notes §7.9)."""
    n, r, _ = _check_nru(n, r, 0)
    if r == 0:
        return 0.0
    if r == n:
        e_star = (source.bit_error() if isinstance(source, Curve) else source.bit_error)
        return float(n * e_star)
    prof = as_profile(source, envelope, profile_points)
    a, b = r + 1.0, float(n - r)
    x, v, lw = _beta_nodes(a, b, quad_points)
    w = np.exp(lw - np.max(lw))
    return float(r * _trapz(w * prof.mean_error_above(v), x) / _trapz(w, x))


def _trapz(y: np.ndarray, x: np.ndarray, axis: int = -1) -> np.ndarray:
    fn = getattr(np, "trapezoid", None) or getattr(np, "trapz")  # noqa: B009 - NumPy 1.x
    return fn(y, x, axis=axis)


# --------------------------------------------------------------------------------------------
# Paper mode: Theorem 3 marginals + Proposition 1 (Chernoff) / Hoeffding
# --------------------------------------------------------------------------------------------


def order_statistic_error_probs(source: Curve | ScoreProfile, n: int, r: int, *,
                                points: int = 257, chunk: int = 2048,
                                envelope: str = "lower",
                                profile_points: int = 20000) -> np.ndarray:
    """Theorem 3 / Eq. (25): p_i = E[gamma~(W_(n-r+i))], i = 1..r, the marginal error
    probability of the i-th lowest released score.

    In top-mass coordinates V_i = 1 - W_(n-r+i) ~ Beta(r - i + 1, n - r + i).  Each
    expectation is a self-normalised trapezoid rule on ``points`` nodes over mean +- 14 sd
    (clipped to [0, 1]; nodes clustered at v = 0 for a < 30), vectorised over i in chunks.
    Cost O(r * points).
    Check: sum_i p_i = E[T] (TOR notes §2.8).
    """
    n, r, _ = _check_nru(n, r, 0)
    if r == 0:
        return np.zeros(0)
    prof = as_profile(source, envelope, profile_points)
    i = np.arange(1, r + 1, dtype=float)
    a_all = r - i + 1
    b_all = n - r + i
    out = np.empty(r)
    x = np.linspace(0.0, 1.0, points)
    for s in range(0, r, chunk):
        a = a_all[s:s + chunk, None]
        b = b_all[s:s + chunk, None]
        mean = a / (a + b)
        sd = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
        lo = np.maximum(mean - 14 * sd, 0.0)
        hi = np.minimum(mean + 14 * sd, 1.0)
        # skewed rows (a < 30): v = lo + (hi - lo) x^4 clusters nodes at the top of the
        # ranking, where gamma~ has an infinite slope (e.g. GDP: gamma~(v) ~ v^c, c < 1).
        skew = a < 30
        v = lo + (hi - lo) * np.where(skew, x[None, :] ** 4, x[None, :])
        with np.errstate(divide="ignore"):
            logjac = np.where(skew, np.log(4 * x[None, :] ** 3), 0.0)
        lb = special.xlogy(a - 1, v) + special.xlog1py(b - 1, -v) + logjac
        w = np.exp(lb - lb.max(axis=1, keepdims=True))
        g = prof.gamma_at(v)
        out[s:s + chunk] = np.sum(w * g, axis=1) / np.sum(w, axis=1)
    return out


def chernoff_tail(p: Any, u: int) -> float:
    """Proposition 1 (Eq. 26): P[sum e_i <= u] <= min_{lam > 0} exp(g(lam)) for independent
    e_i ~ Bernoulli(p_i), g(lam) = lam u + sum_i log(1 - p_i + p_i e^{-lam}).

    g is convex (Eq. 35); its minimiser solves g'(lam) = u - sum_i p_i e^{-lam} /
    (1 - p_i + p_i e^{-lam}) = 0 (shared monotone solver).  Returns 1 if u >= sum p_i and
    prod(1 - p_i) if u = 0 (the lam -> inf limit).
    """
    p = np.clip(np.asarray(p, dtype=float).reshape(-1), 0.0, 1.0)
    u = check_count("u", u)
    if u >= p.sum():
        return 1.0
    if u == 0:
        return float(math.exp(np.sum(np.log1p(-np.minimum(p, 1.0)))))

    def g(lam: float) -> float:
        return lam * u + float(np.sum(np.log1p(p * math.expm1(-lam))))

    def dg(lam: float) -> float:
        e = math.exp(-lam)
        return u - float(np.sum(p * e / (1 - p + p * e)))

    lam = solve_monotone(dg, 0.0, 0.0, 1.0, xtol=1e-13, max_hi=1e4)
    return float(min(1.0, math.exp(g(lam))))


def hoeffding_tail(p: Any, u: int) -> float:
    """Hoeffding (Tight One-Run §5.3): P[sum e_i <= u] <= exp(-2 (sum p_i - u)^2 / r), u < sum
    p_i."""
    p = np.clip(np.asarray(p, dtype=float).reshape(-1), 0.0, 1.0)
    u = check_count("u", u)
    mu = float(p.sum())
    if p.size == 0 or u >= mu:
        return 1.0
    return float(math.exp(-2.0 * (mu - u) ** 2 / p.size))


# --------------------------------------------------------------------------------------------
# Monte Carlo validator (TOR notes §2.13)
# --------------------------------------------------------------------------------------------


def simulate_errors(source: Curve | ScoreProfile, n: int, r: int, reps: int,
                    rng: np.random.Generator | int, *, envelope: str = "chord",
                    profile_points: int = 20000, batch: int = 2000) -> np.ndarray:
    """Monte Carlo draws of T under the dominating game A* (TOR notes §2.13).

    Per repetition: n i.i.d. uniform top-mass quantiles, keep the r smallest (the r most
    confident guesses, np.partition), map each to gamma~ and flip Bernoulli(gamma~) coins.
    Uses no Beta/mixture identity, so it checks :func:`tail_probability` independently.
    """
    n, r, _ = _check_nru(n, r, 0)
    reps = check_count("reps", reps, minimum=1)
    gen = np.random.default_rng(rng)
    prof = as_profile(source, envelope, profile_points)
    out = np.empty(reps, dtype=np.int64)
    rows = max(1, min(batch, 10_000_000 // max(n, 1)))
    for s in range(0, reps, rows):
        k = min(rows, reps - s)
        t = gen.random((k, n))
        if r < n:
            t = np.partition(t, r - 1, axis=1)[:, :r] if r > 0 else t[:, :0]
        g = prof.gamma_at(t)
        out[s:s + k] = (gen.random(g.shape) < g).sum(axis=1)
    return out
