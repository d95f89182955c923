"""DP-SGD guarantees from dp_accounting's privacy-loss-distribution (PLD) accountant.

``dpsgd_curve(noise_multiplier, sampling_rate, steps)`` composes ``steps`` Poisson-subsampled
Gaussian mechanisms (add/remove adjacency) with dp_accounting's PLD and exposes the result as
a Curve.  The privacy profile delta(eps) and epsilon(delta) are dp_accounting's own; the
trade-off function is recovered from the profile as
    f(alpha) = sup_{eps >= 0} max{0, 1 - delta(eps) - e^eps alpha, e^-eps (1 - delta(eps) - alpha)}
(Dong, Roth, Su 2022, Prop. 2.12), evaluated on a grid of eps.  A finite grid can only lower
f, i.e. the curve is never more private than the accountant says.

``dpsgd_family(noise_multiplier, sampling_rate, steps, delta)`` is the null family of a claim
stated as a DP-SGD curve (``dpaudit train-audit``, ``dpaudit simulate dpsgd``): DP-SGD curves
over the noise multiplier at fixed (q, T), from the PLD accountant on a grid of noise
multipliers, combined conservatively into a monotone family whose members at or above the
claim are dominated by the claimed curve (:class:`DPSGDFamily`).  The mu-GDP family is not
valid for such a claim: a DP-SGD curve and the mu-GDP curve of the same eps(delta) cross, so
"not mu-GDP" does not imply "not as private as the accountant says".
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from dpaudit.curves.base import LabelledCurve, as_alpha
from dpaudit.validation import (
    check_count,
    check_delta,
    check_finite_array,
    check_nonnegative,
    check_positive,
    check_probability,
    check_same_length,
)

__all__ = ["PLDCurve", "dpsgd_curve", "ProfileCurve", "DPSGDFamily", "dpsgd_family",
           "DPSGD_FAMILY_FACTORS"]


class PLDCurve(LabelledCurve):
    """A curve backed by a dp_accounting ``PrivacyLossDistribution``."""

    symmetric = True

    def __init__(self, pld: Any, params: Mapping[str, float], label: str = "PLDCurve") -> None:
        self.pld = pld
        self._params = dict(params)
        self._label = label

    def delta(self, epsilon: float) -> float:
        eps = check_nonnegative("epsilon", epsilon)
        return float(min(1.0, max(0.0, self.pld.get_delta_for_epsilon(eps))))

    def epsilon(self, delta: float) -> float:
        delta = check_delta(delta)
        if delta == 0.0 and self.delta(1e3) > 0:
            return math.inf
        return float(max(0.0, self.pld.get_epsilon_for_delta(delta)))

    @cached_property
    def _profile(self) -> tuple[np.ndarray, np.ndarray]:
        hi = 1.0
        while self.delta(hi) > 1e-14 and hi < 400:
            hi *= 1.5
        eps = np.concatenate([np.linspace(0.0, hi, 1500), [hi * 1.5, hi * 3]])
        deltas = np.asarray(self.pld.get_delta_for_epsilon(eps), dtype=float)
        return eps, np.clip(deltas, 0.0, 1.0)

    def tradeoff(self, alpha: Any) -> np.ndarray:
        a = as_alpha(alpha)
        eps, deltas = self._profile
        a2 = a.reshape(-1, 1)
        lines = np.maximum(1 - deltas - np.exp(eps) * a2, np.exp(-eps) * (1 - deltas - a2))
        return np.maximum(lines.max(axis=1), 0.0).reshape(a.shape)


#: most points of one discretised step's privacy-loss support (the interval is coarsened above).
MAX_PLD_POINTS = 300_000
#: composed guarantees beyond this (CLT) GDP mu are refused: epsilon(1e-5) would be above
#: ~5000, i.e. no privacy, and the composed loss support would need millions of points.
MAX_COMPOSED_MU = 100.0


def _loss_width(sigma: float, q: float, steps: int) -> tuple[float, float]:
    """(support width of the privacy loss to discretise, estimated GDP mu of the composition).

    One Gaussian step with sensitivity 1 has loss (2x - 1) / (2 sigma^2) on |x| <~ 8 sigma:
    width (16 sigma + 1) / sigma^2; subsampling only shrinks it.  The composition's mu is
    estimated by the DP-SGD central limit theorem, mu ~ q sqrt(T (e^{1/sigma^2} - 1)) (Bu, Dong,
    Long, Su 2020), capped by sqrt(T) / sigma (no subsampling); its loss spans ~mu^2/2 + 16 mu.
    """
    s2 = sigma * sigma
    inv = 1.0 / s2 if s2 > 0 else math.inf
    single = (16.0 * sigma + 1.0) * inv
    # in log space: e^{1/sigma^2} overflows for sigma < ~0.027 (log(e^x - 1) = x + log1p(-e^-x))
    log_expm1 = math.log(math.expm1(inv)) if inv < 30 else inv + math.log1p(-math.exp(-inv))
    log_clt = math.log(q) + 0.5 * math.log(steps) + 0.5 * log_expm1
    log_cap = 0.5 * math.log(steps) - math.log(sigma)
    mu = math.exp(min(log_clt, log_cap))
    return max(single, 0.5 * mu * mu + 16.0 * mu), mu


def dpsgd_curve(noise_multiplier: float, sampling_rate: float, steps: int, *,
                value_discretization_interval: float = 1e-4) -> PLDCurve:
    """The guarantee of DP-SGD: ``steps`` compositions of a Poisson-subsampled Gaussian with
    noise multiplier sigma (sensitivity 1) and sampling rate q, via dp_accounting's PLD.

    The discretisation is bounded so that extreme settings return (or fail) in seconds: the
    interval is ``value_discretization_interval`` unless the privacy-loss support would need
    more than :data:`MAX_PLD_POINTS` points, in which case it is coarsened to width /
    MAX_PLD_POINTS (dp_accounting's pessimistic discretisation: a coarser grid only makes the
    curve less private, never more).  Settings whose composition is beyond GDP mu =
    :data:`MAX_COMPOSED_MU` (epsilon in the thousands) are refused with a ValueError.
    Known limit: with a tiny sampling rate and more than ~1e7 steps dp_accounting's own
    composition takes minutes (its sparse loss representation).
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sampling_rate", sampling_rate, open_low=True)
    t = check_count("steps", steps, minimum=1)
    vdi = check_positive("value_discretization_interval", value_discretization_interval)
    width, mu = _loss_width(sigma, q, t)
    if mu > MAX_COMPOSED_MU:
        raise ValueError(
            f"dpsgd_curve: noise_multiplier={sigma:g}, sampling_rate={q:g}, steps={t} compose to "
            f"an estimated GDP mu of {mu:.3g} (> {MAX_COMPOSED_MU:g}; epsilon at delta = 1e-5 "
            f"would be in the thousands): no meaningful guarantee, and its privacy-loss "
            f"distribution cannot be discretised in bounded time; use more noise, a lower "
            f"sampling_rate or fewer steps")
    vdi = max(vdi, width / MAX_PLD_POINTS)
    # imported lazily: dp_accounting pulls in scipy.signal and takes seconds to import,
    # which every CLI start-up would otherwise pay.  gaussian_pld is dp_accounting's
    # from_gaussian_mechanism with its grid of deltas computed at once (same PMF).
    from dpaudit.curves.pld_gaussian import gaussian_pld, self_compose

    base = gaussian_pld(sigma, q, vdi)
    pld = self_compose(base, t) if t > 1 else base
    return PLDCurve(pld, {"noise_multiplier": sigma, "sampling_rate": q, "steps": float(t)},
                    label="DPSGDCurve")


# --------------------------------------------------------------------------------------------
# A curve from a privacy profile, and the DP-SGD null family
# --------------------------------------------------------------------------------------------


def _upper_envelope(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (x, y) on [0, 1] of x -> max_j (a_j - b_j x) (b_j >= 0), x increasing.

    Convex-hull trick: lines by slope -b ascending (steepest first; equal slopes keep the
    largest intercept); a line k between its neighbours i (steeper) and j (flatter) is dropped
    when j overtakes i no later than k does, i.e. k is nowhere strictly on top of i and j,
    hence nowhere strictly on top of all lines.  Every such line is dropped at once, and the
    pass repeats on the survivors until none is dropped (a handful of vectorised passes on a
    privacy profile, whose lines are nearly all on the envelope): a chain of lines by slope
    in which every consecutive triple keeps its middle line is the envelope (the sequential
    stack's envelope; a line tied with it to rounding may be kept or dropped, which moves no
    value: tested to 1e-15).  The envelope is convex and piecewise linear, so it
    equals the linear interpolation of its vertices exactly.
    """
    order = np.lexsort((-a, -b))  # b descending, then a descending
    a, b = a[order], b[order]
    keep = np.concatenate([[True], b[1:] != b[:-1]])
    a, b = a[keep], b[keep]
    h = np.arange(a.size)
    while h.size >= 3:
        i, k, j = h[:-2], h[1:-1], h[2:]
        # x where j overtakes i <= x where k overtakes i: k is never on top
        drop = (a[i] - a[j]) * (b[i] - b[k]) <= (a[i] - a[k]) * (b[i] - b[j])
        if not drop.any():
            break
        h = np.concatenate([h[:1], k[~drop], h[-1:]])
    ha, hb = a[h], b[h]
    xs = (ha[:-1] - ha[1:]) / (hb[:-1] - hb[1:])
    xs = np.concatenate([[0.0], xs[(xs > 0) & (xs < 1)], [1.0]])
    ys = np.max(ha[None, :] - hb[None, :] * xs[:, None], axis=1)
    return xs, np.clip(ys, 0.0, 1.0)


class ProfileCurve(LabelledCurve):
    """The guarantee "(eps_i, delta_i)-DP for every i": f = max_i f_{eps_i, delta_i}.

    Each (eps_i, delta_i) contributes the two lines of f_{eps,delta}(alpha) = max{0,
    1 - delta - e^eps alpha, e^-eps (1 - delta - alpha)} (Kairouz et al.; Tight One-Run §2.1), and a
    mechanism that is (eps_i, delta_i)-DP for all i is f-DP for their maximum (Dong, Roth, Su
    2022, Prop. 2.12).  f is convex and piecewise linear; its vertices are computed once, so
    ``tradeoff`` is an exact interpolation, and the conversions are exact: the hockey-stick
    objective 1 - e^eps alpha - f(alpha) is concave and maximal at a vertex (x_k, y_k), so
    delta_f(eps) = max_k (1 - y_k - e^eps x_k) and
    eps_f(delta) = max(0, max_k log((1 - y_k - delta) / x_k)) over the vertices with
    1 - y_k > delta (+inf if such a vertex has x_k = 0).
    """

    symmetric = True

    def __init__(self, eps: Any, deltas: Any, *, label: str = "ProfileCurve",
                 params: Mapping[str, float] | None = None) -> None:
        e = check_finite_array("eps", eps)
        d = check_finite_array("deltas", deltas)
        check_same_length(eps=e, deltas=d)
        if (e < 0).any():
            raise ValueError(f"eps must be >= 0, got {float(e.min())!r}")
        if (d < 0).any() or (d > 1).any():
            raise ValueError("deltas must be in [0, 1]")
        ee = np.exp(e)
        a = np.concatenate([1.0 - d, (1.0 - d) / ee, [0.0]])
        b = np.concatenate([ee, 1.0 / ee, [0.0]])
        self._x, self._y = _upper_envelope(a, b)
        self._eps, self._deltas = e, d
        self._label = label
        self._params = dict(params or {"lines": float(e.size)})

    @property
    def vertices(self) -> tuple[np.ndarray, np.ndarray]:
        """(x, y): the envelope's vertices, x increasing from 0 to 1; ``tradeoff`` is
        ``np.interp(alpha, x, y)``."""
        return self._x, self._y

    def tradeoff(self, alpha: Any) -> np.ndarray:
        return np.interp(as_alpha(alpha), self._x, self._y)

    def delta(self, epsilon: float) -> float:
        eps = check_nonnegative("epsilon", epsilon)
        with np.errstate(over="ignore"):
            v = 1.0 - self._y - math.exp(min(eps, 700.0)) * self._x
        return float(min(1.0, max(0.0, float(v.max()))))

    def epsilon(self, delta: float) -> float:
        """Exact from the vertices; never above min{eps_i : delta_i <= delta} (the curve
        states each of its lines; the min guards the vertices' rounding at huge e^eps)."""
        delta = check_delta(delta)
        stated = self._eps[self._deltas <= delta]
        cap = float(stated.min()) if stated.size else math.inf
        live = 1.0 - self._y > delta * (1 + 1e-12) + 1e-15
        if not live.any():
            return 0.0
        if (self._x[live] <= 0).any():
            return cap
        return min(cap, float(max(0.0, float(np.max(np.log((1.0 - self._y[live] - delta)
                                                             / self._x[live]))))))

    def bit_error(self) -> float:
        return float(0.5 * np.min(self._x + self._y))


#: noise-multiplier factors of the DP-SGD family's nodes: sigma_k = sigma_claim / factor
#: (factor > 1 = less noise = less private).  The claim is the node of factor 1.  The nodes
#: below the claim (down to sigma / 0.15) let weak evidence (a black-box score, a claim of
#: epsilon ~ 1) reject a member instead of reading 0 (studies/tightness.py ``extra``:
#: median white box at epsilon 1 24% -> 49% of the claim, black box 0 -> 9-11%).
DPSGD_FAMILY_FACTORS = (0.15, 0.25, 0.35, 0.5, 0.7, 0.85, 1.0, 1.15, 1.35, 1.6, 2.0, 2.6, 3.5, 5.0,
                        8.0)
#: PLD discretisation of the family's nodes (coarser than the accountant's 1e-4, hence
#: pessimistic: each node is a little less private than its exact DP-SGD curve).
DPSGD_FAMILY_VDI = 2e-3
#: nodes whose eps at delta exceeds this are dropped (no audit resolves more).
DPSGD_FAMILY_MAX_EPS = 100.0
#: eps grid points of each node's privacy profile.
DPSGD_FAMILY_EPS_POINTS = 240


def _pmf_deltas(pmf: Any, eps: np.ndarray) -> np.ndarray:
    """delta(eps_i) of one dp_accounting PMF (one adjacency) on a sorted grid, at once.

    delta(eps) = m_inf + sum_{l_j > eps} p_j - e^eps sum_{l_j > eps} p_j e^{-l_j}: the
    formula of dp_accounting's ``_get_delta_for_epsilon_vectorized``, whose Python loop
    accumulates both sums from the largest loss down; the suffix sums here are the same
    sequential sums (``np.cumsum`` of the reversed terms), read where the grid needs them.
    A PMF of another layout (sparse) is asked through its own method.
    """
    probs = getattr(pmf, "_probs", None)
    lower = getattr(pmf, "_lower_loss", None)
    if not isinstance(probs, np.ndarray) or lower is None:
        return np.asarray(pmf.get_delta_for_epsilon(eps), dtype=float)
    losses = (np.arange(probs.size) + lower) * pmf._discretization
    upper = np.cumsum(np.concatenate([[pmf._infinity_mass], probs[::-1]]))
    lower_mass = np.cumsum(np.concatenate([[0.0], (probs * np.exp(-losses))[::-1]]))
    above = probs.size - np.searchsorted(losses, eps, side="right")  # losses > eps
    with np.errstate(over="ignore", invalid="ignore"):
        out = upper[above] - np.exp(eps) * lower_mass[above]
    return np.where(np.isposinf(eps), pmf._infinity_mass, out)


def _profile_deltas(pld: Any, eps: np.ndarray) -> np.ndarray:
    """``pld.get_delta_for_epsilon(eps)`` for a sorted grid (the larger of the two
    adjacencies' deltas, as dp_accounting), without its per-point Python loop."""
    remove = _pmf_deltas(pld._pmf_remove, eps)
    if getattr(pld, "_symmetric", False):
        return remove
    return np.maximum(remove, _pmf_deltas(pld._pmf_add, eps))


def _pmf_epsilon(pmf: Any, delta: float) -> float:
    """The smallest eps >= 0 with delta(eps) <= ``delta`` for one dp_accounting PMF.

    dp_accounting's ``_get_epsilon_for_delta`` walks the losses from the largest down,
    accumulating U = m_inf + sum p_j and L = sum p_j e^{-l_j}, and stops at the first loss
    l_k <= log((U - delta) / L) (then eps = log((U - delta) / L), or 0 when U <= L + delta);
    here the running sums are ``np.cumsum`` (the same sequential sums, its losses the same
    repeated subtraction) and the stopping index is found at once.  The exponentials are
    NumPy's rather than ``math.exp``, so the result may differ from dp_accounting's in the
    last bits (tested to 1e-12); it is used for the family's node labels, never for the
    claim's own epsilon (``PLDCurve.epsilon``, dp_accounting's).
    """
    probs = getattr(pmf, "_probs", None)
    lower = getattr(pmf, "_lower_loss", None)
    if not isinstance(probs, np.ndarray) or lower is None or probs.size == 0:
        return float(pmf.get_epsilon_for_delta(delta))
    inf_mass = float(pmf._infinity_mass)
    if inf_mass > delta:
        return math.inf
    n, disc = probs.size, pmf._discretization
    losses = np.cumsum(np.concatenate([[(lower + n - 1) * disc], np.full(n - 1, -disc)]))
    p = probs[::-1]
    upper = np.cumsum(np.concatenate([[inf_mass], p]))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        low = np.cumsum(np.concatenate([[0.0], np.exp(-losses) * p]))
        ub, lb = upper[:-1], low[:-1]
        stop = (ub > delta) & (lb > 0) & (np.log((ub - delta) / np.where(lb > 0, lb, 1.0))
                                          >= losses)
    ret = (upper[1:] >= delta) & (low[1:] == 0)
    kb = int(np.argmax(stop)) if stop.any() else n
    kr = int(np.argmax(ret)) if ret.any() else n
    if kr < kb:
        return max(0.0, float(losses[kr]))
    u, v = float(upper[kb]), float(low[kb])
    if u <= v + delta:
        return 0.0
    return math.log((u - delta) / v)


def _pld_epsilon(pld: Any, delta: float) -> float:
    """``pld.get_epsilon_for_delta(delta)`` (the larger of the two adjacencies' epsilons)
    without its Python loop (:func:`_pmf_epsilon`)."""
    eps = _pmf_epsilon(pld._pmf_remove, delta)
    if getattr(pld, "_symmetric", False):
        return eps
    return max(eps, _pmf_epsilon(pld._pmf_add, delta))


@functools.lru_cache(maxsize=64)
def _node(sigma: float, q: float, steps: int, delta: float, vdi: float
          ) -> tuple[Any, float] | None:
    """(PLD, eps at delta) of one node, or None when the setting is beyond the accountant's
    range (composition above :data:`MAX_COMPOSED_MU`)."""
    try:
        c = dpsgd_curve(sigma, q, steps, value_discretization_interval=vdi)
    except ValueError:
        return None
    return c.pld, max(0.0, _pld_epsilon(c.pld, delta))


#: most members a :class:`DPSGDFamily` keeps built
MEMBER_CACHE = 4096


@dataclass(frozen=True, eq=False)
class DPSGDFamily:
    """theta = eps at ``delta`` -> the member curve (a :class:`ProfileCurve`); picklable.

    Nodes k = 0..K (increasing theta_k = eps_k): rows ``profiles[k]`` = delta_k(eps_i) on the
    shared grid ``eps_grid``.  The member at theta in [theta_k, theta_{k+1}] is the profile
    (1 - t) profiles[k] + t profiles[k+1], t = (theta - theta_k) / (theta_{k+1} - theta_k),
    together with the line (theta, delta): "(eps_i, delta_theta(eps_i))-DP for all i, and
    (theta, delta)-DP".  See :func:`dpsgd_family` for why this is monotone and valid.
    """

    eps_grid: np.ndarray
    profiles: np.ndarray
    thetas: np.ndarray
    delta: float
    label: str = "dpsgd"
    #: members already built, by theta (the estimators' searches revisit thetas: a third to
    #: a half of the calls of one audit); not pickled, at most MEMBER_CACHE entries
    _members: dict[float, ProfileCurve] = field(default_factory=dict, init=False,
                                                repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_members"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, v)

    def __call__(self, theta: float) -> ProfileCurve:
        th = float(theta)
        hit = self._members.get(th)
        if hit is None:
            hit = self._member(th)
            if len(self._members) < MEMBER_CACHE:
                self._members[th] = hit
        return hit

    def _member(self, th: float) -> ProfileCurve:
        k = int(np.clip(np.searchsorted(self.thetas, th, side="right") - 1, 0,
                        self.thetas.size - 2))
        lo, hi = self.thetas[k], self.thetas[k + 1]
        t = 1.0 if hi <= lo else float(np.clip((th - lo) / (hi - lo), 0.0, 1.0))
        prof = (1.0 - t) * self.profiles[k] + t * self.profiles[k + 1]
        return ProfileCurve(np.concatenate([self.eps_grid, [max(th, 0.0)]]),
                            np.concatenate([prof, [self.delta]]), label="DPSGDFamilyMember",
                            params={"eps": th})


def dpsgd_family(noise_multiplier: float, sampling_rate: float, steps: int, delta: float, *,
                 claimed_epsilon: float | None = None,
                 factors: Sequence[float] = DPSGD_FAMILY_FACTORS,
                 value_discretization_interval: float = DPSGD_FAMILY_VDI,
                 eps_points: int = DPSGD_FAMILY_EPS_POINTS) -> Any:
    """The null family of the claim "this is DP-SGD with (sigma, q, T)": a
    :class:`~dpaudit.curves.families.Family` with theta = eps at ``delta``.

    Construction (computed once per audit; the family and its nodes are cached per
    process):

    1. Nodes sigma_k = sigma / factor_k, each composed with dp_accounting's PLD at the coarse
       interval ``value_discretization_interval`` (pessimistic, so every node's profile is
       >= its exact DP-SGD profile); nodes beyond the accountant's range are skipped.  The
       claim node (factor 1) gets theta_c = ``claimed_epsilon`` (default: the accountant's
       eps of ``dpsgd_curve(sigma, q, T)`` at delta, the number a verdict compares with).
    2. Profiles delta_k(eps_i) on a shared eps grid; made monotone in k by a running maximum
       above the claim node and a running minimum below it (so the claim node keeps its own
       profile), and the node epsilons likewise.
    3. Members in between: the interpolated profile plus the line (theta, delta)
       (:class:`DPSGDFamily`); members are pointwise non-increasing in theta (both ingredients
       only weaken as theta grows).

    Validity (Tight One-Run Thm. 1): a mechanism meeting the claim is (eps, delta_c(eps))-DP for
    every eps, with delta_c the accountant's (pessimistic) profile, and (theta_c, delta)-DP.
    Every member at theta >= theta_c has a profile >= the claim node's coarse profile >=
    delta_c on the grid and the line (theta, delta) with theta >= theta_c, so it is dominated
    by the claim: rejecting it is evidence against the claim.  The member's epsilon at delta
    is <= theta (its own line), so a bound above the claimed epsilon rejects a member above
    the claim.  The price against the GDP null (an assumption for this claim) is a finite
    profile grid and the coarse discretisation: studies/default_null.py (part C) measures it.
    """
    # validated (and normalised to plain floats / ints) before the cache: True == 1 hashes
    # alike, so a cached call must never stand in for an argument the checks refuse
    sigma = float(check_positive("noise_multiplier", noise_multiplier))
    q = float(check_probability("sampling_rate", sampling_rate, open_low=True))
    t = int(check_count("steps", steps, minimum=1))
    delta = float(check_delta(delta))
    vdi = float(check_positive("value_discretization_interval",
                               value_discretization_interval))
    eps_points = int(check_count("eps_points", eps_points, minimum=16))
    fs = tuple(float(check_positive("factors", f)) for f in factors)
    if claimed_epsilon is not None:
        claimed_epsilon = float(check_nonnegative("claimed_epsilon", claimed_epsilon))
    return _dpsgd_family(sigma, q, t, delta, claimed_epsilon, fs, vdi, eps_points)


@functools.lru_cache(maxsize=16)
def _dpsgd_family(noise_multiplier: float, sampling_rate: float, steps: int, delta: float,
                  claimed_epsilon: float | None, factors: tuple[float, ...],
                  value_discretization_interval: float, eps_points: int) -> Any:
    """The uncached :func:`dpsgd_family`."""
    from dpaudit.curves.families import Family

    sigma = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sampling_rate", sampling_rate, open_low=True)
    t = check_count("steps", steps, minimum=1)
    delta = check_delta(delta)
    if delta <= 0:
        raise ValueError("delta must be > 0 for the DP-SGD family (DP-SGD has no finite "
                         "epsilon at delta = 0)")
    vdi = check_positive("value_discretization_interval", value_discretization_interval)
    eps_points = check_count("eps_points", eps_points, minimum=16)
    fs = sorted({float(check_positive("factors", f)) for f in factors} | {1.0})
    if claimed_epsilon is None:
        claimed_epsilon = dpsgd_curve(sigma, q, t).epsilon(delta)
    claimed_epsilon = check_nonnegative("claimed_epsilon", claimed_epsilon)
    # nodes beyond DPSGD_FAMILY_MAX_EPS add nothing an audit can resolve (the family's ceiling
    # is then the last node below it); above the claim the factors are visited in increasing
    # order and the first node beyond it ends the list (eps grows as the noise falls, so the
    # later ones would be dropped too; they are the costliest to compose)
    nodes: list[tuple[float, tuple[Any, float]]] = []
    for f in fs:
        nd = _node(sigma / f, q, t, delta, vdi)
        if nd is None or not math.isfinite(nd[1]) or (f > 1.0 and nd[1] > DPSGD_FAMILY_MAX_EPS):
            if f > 1.0:
                break
            continue
        nodes.append((f, nd))
    if not any(f == 1.0 for f, _ in nodes):
        raise ValueError(f"dpsgd_family: the claim (noise_multiplier={sigma:g}, "
                         f"sampling_rate={q:g}, steps={t}) is beyond the accountant's range")
    c = next(i for i, (f, _) in enumerate(nodes) if f == 1.0)
    eps_nodes = np.array([nd[1] for _, nd in nodes])
    eps_nodes[c] = claimed_epsilon
    top = float(eps_nodes.max())
    grid = np.unique(np.concatenate([np.linspace(0.0, 1.5 * top + 1.0, eps_points),
                                     eps_nodes]))
    with np.errstate(all="ignore"):
        raw = [_profile_deltas(nd[0], grid) for _, nd in nodes]
    # dp_accounting returns NaN where e^eps overflows against an empty mass (inf * 0); a NaN
    # is read as delta = 1 (no constraint: the conservative reading for a null)
    prof = np.clip(np.nan_to_num(np.array(raw), nan=1.0), 0.0, 1.0)
    # at and above the claim, 1e-12 of slack absorbs the floating-point rounding of the
    # coarse-vs-fine comparison (coarse >= fine holds exactly in real arithmetic; measured
    # rounding ~1e-13)
    prof[c:] = np.minimum(prof[c:] + 1e-12, 1.0)
    for k in range(c + 1, len(nodes)):           # above the claim: running maximum
        prof[k] = np.maximum(prof[k], prof[k - 1])
        eps_nodes[k] = max(eps_nodes[k], eps_nodes[k - 1])
    for k in range(c - 1, -1, -1):               # below the claim: running minimum
        prof[k] = np.minimum(prof[k], prof[k + 1])
        eps_nodes[k] = min(eps_nodes[k], eps_nodes[k + 1])
    # strictly increasing thetas: of equal neighbours keep the one nearer the claim
    keep = np.ones(len(nodes), dtype=bool)
    for k in range(len(nodes)):
        if k < c:
            keep[k] = eps_nodes[k] < eps_nodes[k + 1] - 1e-12
        elif k > c:
            keep[k] = eps_nodes[k] > eps_nodes[k - 1] + 1e-12
    thetas, prof = eps_nodes[keep], prof[keep]
    if thetas.size < 2:
        raise ValueError("dpsgd_family: fewer than two distinct nodes; pass other factors")
    label = f"dpsgd(sigma={sigma:g}, q={q:g}, T={t})"
    build = DPSGDFamily(grid, prof, thetas, delta, label)
    return Family(label, build, float(thetas[0]), float(thetas[-1]), "eps",
                  f"the mechanism's trade-off curve is a DP-SGD curve at q = {q:g}, T = {t}")
