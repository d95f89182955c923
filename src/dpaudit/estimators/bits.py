"""Privacy audit as bits transmission (Bits Transmission: Xiang, Wang & Wang; BT notes).

The audit sends n uniform secret bits through "canaries -> mechanism -> decoder" and counts the
wrong guesses; every bit is decoded (no abstention).  If the mechanism is f-DP, each bit is a
binary channel whose (FPR alpha, FNR beta) satisfy beta >= f(alpha) (Bits Transmission Property 1
and
Corollary 1), so its error probability has a floor, and (Theorem 4) the error count
stochastically dominates Binomial(n, floor).  An upper confidence bound ``p_up`` on the error
rate that falls *below* the floor of a family member f_theta rejects "M is f_theta-DP"; the
largest rejected theta, converted to epsilon at ``delta`` (Algorithm 4), is the lower bound
(Algorithm 5).

Error floors (``floor=``):

* ``"information"`` -- the paper's floor (Theorem 3, Eq. 19):
  ``p_f^e = h^{-1}(1 - u_f(1/2))`` with ``u_f(p) = max_x F_f(x, p)`` (Theorem 2, Eqs. 17-18) and
  ``F_f(x, p) = h(p f(x) + (1-p)(1-x)) - p h(f(x)) - (1-p) h(1-x)`` (entropies base 2).
* ``"bayes"`` (default) -- the Bayes error ``e*(f) = min_x (x + f(x)) / 2`` = ``curve.bit_error()``.
  Every bit's error is ``(alpha + beta)/2 >= (alpha + f(alpha))/2 >= e*`` directly, so this floor
  is valid too; it is never smaller than ``p_f^e`` (a binary symmetric channel with crossover e*
  has mutual information 1 - h(e*) <= u_f(1/2)), and for every symmetric family of the paper
  (GDP, (eps, delta), Laplace) the two coincide (BT notes §3.10; checked in tests/test_bits.py).
  With it the test "Binomial(n, e*) tail <= 1 - confidence" is exactly Tight One-Run's special case
  r = n (TOR notes §5.3), whose Theorem 1 makes it valid for *any* decoder, even with
  interference between bits; the paper's Theorem 4 needs independent bit errors.
  It is also cheaper (closed form for the built-in families).

Upper confidence bounds on the error rate (``ci=``), k = errors:

* ``"clopper_pearson"`` (default) -- one-sided Clopper-Pearson, ``BetaInv(confidence; k+1, n-k)``,
  i.e. ``sup{p : P[Bin(n, p) <= k] >= 1 - confidence}``.  This is the rigorous form of the paper's
  "Advanced CI" (BT notes §3.8, "aci_exact"; also accepted under that name).  Valid.
* ``"hoeffding"`` -- ``k/n + sqrt(ln(1/(1 - confidence)) / (2n))`` (Eq. 24; Algorithm 5 line 2
  writes it without the ``k/n +``, a typo, BT notes §10.1).  Valid, loose.
* ``"aci"`` -- Algorithm 3 of the paper *literally* (bisection from [0.001, 1/2], tolerance 1e-4 on
  |p - (e_bar + v(p))|, ``binom.ppf`` quantiles, an iteration guard of 200 returning ``p_l``).
  **Coverage caveat (BT notes §3.8, §10.3, Table H):** the loop stops at the first midpoint of
  the level set {p : F^{-1}(1-gamma; n, p) = k}, not at its right end, so the bound can be
  anti-conservative: exact coverage 0.836 < 0.95 at n = 100, p = 0.0179; and the 0.001 floor caps
  the reportable epsilon.  Provided for reproducing the paper's figures only; do not use it to
  claim a violation.

Preconditions (not checkable from counts): bits are uniform (prior 1/2) and every bit is decoded.
What is tested is the error floor; converting the fitted family member to epsilon assumes the
mechanism's curve lies in the family (the paper's reading, BT notes §3.10 "why the family
matters").  ``family="eps_delta"`` needs no such assumption: (1 - delta)/(1 + e^eps) <= p_up is
implied by (eps, delta)-DP itself.  (With ``delta=0`` a GDP fit therefore reports eps = inf.)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize, special, stats

from dpaudit.curves import Curve, resolve_family
from dpaudit.curves.families import DEFAULT_FAMILY, Family
from dpaudit.results import AuditResult
from dpaudit.search import largest_rejected
from dpaudit.stats.binomial import clopper_pearson, hoeffding
from dpaudit.validation import (
    check_choice,
    check_confidence,
    check_count,
    check_counts_le,
    check_delta,
    check_probability,
)

__all__ = [
    "bits",
    "CI_METHODS",
    "FLOORS",
    "binary_entropy",
    "binary_entropy_inv",
    "mutual_information",
    "mi_bound",
    "information_error_floor",
    "error_floor",
    "hoeffding_radius",
    "aci_literal",
    "aci_radius",
    "error_rate_upper",
    "epsilon_from_error_rate",
    "gdp_mu_from_error",
    "eps_delta_eps_from_error",
    "laplace_eps_from_error",
]

CI_METHODS = ("clopper_pearson", "hoeffding", "aci")
FLOORS = ("bayes", "information")
_CI_ALIASES = {"aci_exact": "clopper_pearson", "cp": "clopper_pearson", "aci_literal": "aci"}

_LN2 = math.log(2.0)
# x grid for u_f: log-spaced down to 1e-300 (the maximiser of F_f can be astronomically small
# for nearly non-private curves, BT notes §3.9) plus a linear grid on [0, 1].
_X_GRID = np.unique(np.concatenate([np.logspace(-300, -1, 1500), np.linspace(0.0, 1.0, 1001)]))


# ---------------------------------------------------------------------------------------------
# Information-theoretic quantities (Bits Transmission §3.2, Eqs. 15-19)
# ---------------------------------------------------------------------------------------------

def binary_entropy(x: Any) -> np.ndarray | float:
    """h(x) = -x log2 x - (1-x) log2(1-x), h(0) = h(1) = 0 (Eq. 15), vectorised.

    ``(1-x) log(1-x)`` is evaluated as ``xlog1py(1-x, -x)`` so h stays accurate for tiny x.
    """
    a = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
    out = -(special.xlogy(a, a) + special.xlog1py(1.0 - a, -a)) / _LN2
    out = np.clip(out, 0.0, 1.0)
    return out if out.ndim else float(out)


def binary_entropy_inv(y: Any, iters: int = 200) -> np.ndarray | float:
    """h^{-1}: [0, 1] -> [0, 1/2], inverse of the left half of h (Eq. 16), by bisection."""
    t = np.clip(np.asarray(y, dtype=float), 0.0, 1.0)
    lo = np.zeros(t.shape)
    hi = np.full(t.shape, 0.5)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        below = binary_entropy(mid) < t
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    out = 0.5 * (lo + hi)
    out = np.where(t >= 1.0, 0.5, np.where(t <= 0.0, 0.0, out))
    return out if out.ndim else float(out)


def mutual_information(curve: Curve, x: Any, prior: float = 0.5) -> np.ndarray | float:
    """F_f(x, p) = h(p f(x) + (1-p)(1-x)) - p h(f(x)) - (1-p) h(1-x) (Theorem 2, Eq. 18).

    The mutual information (bits) between a Bernoulli(p) bit and its guess when the channel has
    FPR x and FNR f(x).  Evaluated through complements (h(t) = h(1-t), with 1 - f = power) so it
    stays accurate when x is tiny: F = h(p(1-f) + (1-p)x) - p h(1-f) - (1-p) h(x).
    """
    p = check_probability("prior", prior)
    a = np.clip(np.asarray(x, dtype=float), 0.0, 1.0)
    power = np.clip(np.asarray(curve.power(a), dtype=float), 0.0, 1.0)
    out = (binary_entropy(p * power + (1 - p) * a) - p * binary_entropy(power)
           - (1 - p) * binary_entropy(a))
    out = np.asarray(out, dtype=float)
    return out if out.ndim else float(out)


def mi_bound(curve: Curve, prior: float = 0.5) -> float:
    """u_f(p) = max_{x in [0,1]} F_f(x, p) (Theorem 2, Eq. 17): the most information (bits) an
    f-DP channel can carry about one Bernoulli(p) bit.

    Dense grid (log-spaced to 1e-300 plus linear) and a bounded Brent refinement in log x around
    the best grid point (BT notes §3.12).
    """
    p = check_probability("prior", prior)
    vals = np.asarray(mutual_information(curve, _X_GRID, p))
    i = int(np.argmax(vals))
    best = float(vals[i])
    lo = _X_GRID[max(i - 1, 0)]
    hi = _X_GRID[min(i + 1, _X_GRID.size - 1)]
    if hi > lo and lo > 0:
        res = optimize.minimize_scalar(
            lambda t: -float(mutual_information(curve, math.exp(t), p)),
            bounds=(math.log(lo), math.log(hi)), method="bounded", options={"xatol": 1e-12})
        best = max(best, -float(res.fun))
    elif hi > lo:
        res = optimize.minimize_scalar(lambda t: -float(mutual_information(curve, t, p)),
                                       bounds=(lo, hi), method="bounded",
                                       options={"xatol": 1e-15})
        best = max(best, -float(res.fun))
    return float(min(max(best, 0.0), 1.0))


def information_error_floor(curve: Curve) -> float:
    """p_f^e = h^{-1}(1 - u_f(1/2)) (Theorem 3, Eq. 19): the paper's per-bit error floor."""
    return float(binary_entropy_inv(1.0 - mi_bound(curve, 0.5)))


def error_floor(curve: Curve, floor: str = "bayes") -> float:
    """Per-bit error floor of an f-DP channel for a uniform bit.

    ``"bayes"``: e*(f) = ``curve.bit_error()``.  ``"information"``: Theorem 3's p_f^e, capped
    at e* -- mathematically p_f^e <= e*, and the cap guards against round-off in 1 - u_f when
    u_f is within 1e-16 of 1 (it can only make the floor smaller, i.e. the test more
    conservative).
    """
    check_choice("floor", floor, FLOORS)
    e_star = float(curve.bit_error())
    if floor == "bayes":
        return e_star
    return min(information_error_floor(curve), e_star)


# ---------------------------------------------------------------------------------------------
# Upper confidence bounds on the error rate (Bits Transmission §3.3, Eqs. 21-24, Algorithm 3)
# ---------------------------------------------------------------------------------------------

def hoeffding_radius(n: int, confidence: float) -> float:
    """v = sqrt(ln(1/(1 - gamma)) / (2n)) (Eq. 24, natural log; BT notes §3.7)."""
    n = check_count("n", n, minimum=1)
    gamma = check_confidence(confidence)
    return math.sqrt(math.log(1.0 / (1.0 - gamma)) / (2.0 * n))


def aci_radius(p: Any, n: int, confidence: float) -> np.ndarray | float:
    """v(p, n, gamma) = p - F^{-1}(1 - gamma; n, p)/n of Algorithm 3 (BT notes §3.8, Fig. 4).

    F^{-1} is the Binomial(n, p) quantile (``binom.ppf``); vectorised over ``p``.
    """
    n = check_count("n", n, minimum=1)
    gamma = check_confidence(confidence)
    pp = np.asarray(p, dtype=float)
    out = pp - stats.binom.ppf(1 - gamma, n, pp) / n
    return out if np.ndim(out) else float(out)


def aci_literal(errors: int, n: int, confidence: float, *, max_iter: int = 200) -> float:
    """Algorithm 3 ("Advanced CI") exactly as printed in the paper (BT notes §3.8).

    ``v(p) = p - F^{-1}(1 - gamma; n, p)/n`` with F^{-1} the Binomial quantile (``binom.ppf``);
    bisection for the self-consistent p = e_bar + v(p) on [0.001, 1/2] with tolerance 1e-4.
    Additions required to make it terminate: at most ``max_iter`` iterations, after which
    ``p_l`` is returned (BT notes §3.8: the 0.001 floor or the 1/2 ceiling).
    NOT a valid confidence bound in general -- see the module docstring.
    """
    n = check_count("n", n, minimum=1)
    k = check_count("errors", errors)
    check_counts_le("errors", k, "n", n)
    gamma = check_confidence(confidence)
    ebar = k / n
    p_l, p_r = 0.001, 0.5
    p = 0.5 * (p_l + p_r)
    v = float(aci_radius(p, n, gamma))
    it = 0
    while abs(p - (ebar + v)) > 1e-4:
        if it >= max_iter:
            return p_l
        if p > ebar + v:
            p_r = p
        else:
            p_l = p
        p = 0.5 * (p_l + p_r)
        v = float(aci_radius(p, n, gamma))
        it += 1
    return p


def _canonical_ci(ci: str) -> str:
    key = _CI_ALIASES.get(ci, ci) if isinstance(ci, str) else ci
    return check_choice("ci", key, CI_METHODS)


def error_rate_upper(n: int, errors: int, confidence: float = 0.95,
                     ci: str = "clopper_pearson") -> float:
    """Upper confidence bound p_up on the bit-error floor from k = ``errors`` out of ``n``.

    Eq. 23: the interval [0, e_bar + v] covers the floor with probability >= ``confidence``
    (for the valid ``ci`` choices).  See the module docstring for the three methods.
    """
    n = check_count("n", n, minimum=1)
    k = check_count("errors", errors)
    check_counts_le("errors", k, "n", n)
    gamma = check_confidence(confidence)
    ci = _canonical_ci(ci)
    if ci == "clopper_pearson":
        return float(clopper_pearson(k, n, gamma, side="upper")[1])
    if ci == "hoeffding":
        return float(hoeffding(k, n, gamma, side="upper")[1])
    return float(aci_literal(k, n, gamma))


# ---------------------------------------------------------------------------------------------
# Closed-form inversions of the error floor (BT notes §3.10; used as test oracles)
# ---------------------------------------------------------------------------------------------

def gdp_mu_from_error(p: Any) -> np.ndarray | float:
    """GDP: p_f^e(G_mu) = Phi(-mu/2)  =>  mu = -2 Phi^{-1}(p)."""
    out = -2.0 * special.ndtri(np.asarray(p, dtype=float))
    return out if np.ndim(out) else float(out)


def eps_delta_eps_from_error(p: Any, delta: float) -> np.ndarray | float:
    """(eps, delta): p_f^e = (1 - delta)/(1 + e^eps)  =>  eps = ln((1 - delta)/p - 1)."""
    out = np.log((1.0 - delta) / np.asarray(p, dtype=float) - 1.0)
    return out if np.ndim(out) else float(out)


def laplace_eps_from_error(p: Any) -> np.ndarray | float:
    """Laplace: p_f^e(T_mu) = e^{-mu/2}/2  =>  mu = -2 ln(2p)."""
    out = -2.0 * np.log(2.0 * np.asarray(p, dtype=float))
    return out if np.ndim(out) else float(out)


# ---------------------------------------------------------------------------------------------
# The lower-bound search and the estimator (Algorithm 5)
# ---------------------------------------------------------------------------------------------

def _fit(fam: Family, p_up: float, floor: str, tol: float) -> tuple[float, bool, bool]:
    """Largest theta whose error floor exceeds p_up (the null f_theta is rejected there)."""
    result = largest_rejected(lambda t: p_up < error_floor(fam.curve(t), floor),
                              fam.lo, fam.hi, tol=tol)
    return result.theta, result.nothing_rejected, result.hit_ceiling


def epsilon_from_error_rate(p_up: float, family: Any = DEFAULT_FAMILY, delta: float = 1e-5, *,
                            floor: str = "bayes", tol: float = 1e-10) -> tuple[float, float]:
    """(epsilon at ``delta``, theta) of the family member whose error floor equals ``p_up``.

    "Compute f s.t. h(p_up) = 1 - u_f(1/2)" then Algorithm 4 (Algorithm 5 lines 3-4), via the
    shared bisection :func:`dpaudit.search.largest_rejected`.  (0, 0) when even the most private
    member of the family has a floor <= p_up.
    """
    p_up = check_probability("p_up", p_up)
    delta = check_delta(delta)
    fam = resolve_family(family, delta)
    theta, nothing, _ = _fit(fam, p_up, check_choice("floor", floor, FLOORS), tol)
    if nothing:
        return 0.0, 0.0
    return float(fam.epsilon(theta, delta)), float(theta)


def bits(n: int, errors: int, family: Any = DEFAULT_FAMILY, delta: float = 1e-5,
         confidence: float = 0.95, ci: str = "clopper_pearson", *, floor: str = "bayes",
         tol: float = 1e-10) -> AuditResult:
    """Epsilon lower bound from ``errors`` wrong guesses out of ``n`` fully decoded uniform bits.

    Algorithm 5 of Bits Transmission: p_up = upper confidence bound on the error rate (``ci``);
    reject
    the family member f_theta when p_up < floor(f_theta) (Theorems 3-4); the bound is the largest
    rejected theta, converted to epsilon at ``delta`` (Algorithm 4 = ``Curve.epsilon``).

    Args:
      n: number of bits (canaries), every one decoded (no abstention).
      errors: number of wrong guesses k (0 <= k <= n).
      family: null family ("eps_delta" by default, whose null delta is ``delta``: valid for
        every mechanism meeting an (eps, delta) claim; "gdp", "laplace",
        ("subsampled_gaussian", q), a callable theta -> Curve or a Family assume the
        mechanism's shape, recorded in ``AuditResult.assumption``; see
        :mod:`dpaudit.curves.families`).  The paper uses GDP for the Gaussian mechanism,
        (eps, delta) for randomized response and Laplace for the Laplace mechanism: families
        matching the simulated mechanism's claimed curve.
      delta: delta at which epsilon is reported (also the null delta of "eps_delta").
      confidence: probability that the bound holds.
      ci: "clopper_pearson" (default, valid; alias "aci_exact"), "hoeffding" (valid) or "aci"
        (the paper's literal Algorithm 3; may under-cover, see the module docstring).
      floor: "bayes" (default, e*) or "information" (the paper's p_f^e); identical for the
        built-in symmetric families.
      tol: relative bisection tolerance on theta.

    Returns an :class:`AuditResult` with method "bits", params {param_name: theta}, the p-value
    of the rejected null at theta (Binomial tail for clopper_pearson, Hoeffding tail for
    hoeffding, None for aci), and details p_up, error_rate, error_floor at theta.
    """
    n = check_count("n", n, minimum=1)
    k = check_count("errors", errors)
    check_counts_le("errors", k, "n", n)
    delta = check_delta(delta)
    gamma = check_confidence(confidence)
    ci = _canonical_ci(ci)
    floor = check_choice("floor", floor, FLOORS)
    fam = resolve_family(family, delta)
    p_up = error_rate_upper(n, k, gamma, ci)
    theta, nothing, ceiling = _fit(fam, p_up, floor, tol)
    ebar = k / n
    floor_at = error_floor(fam.curve(theta), floor)
    if ci == "clopper_pearson":
        p_value: float | None = float(stats.binom.cdf(k, n, floor_at))
    elif ci == "hoeffding":
        p_value = float(math.exp(-2 * n * (floor_at - ebar) ** 2)) if ebar < floor_at else 1.0
    else:
        p_value = None
    eps = 0.0 if nothing else float(fam.epsilon(theta, delta))
    return AuditResult(
        epsilon=eps, delta=delta, confidence=gamma, method="bits",
        params={fam.param_name: 0.0 if nothing else float(theta)},
        p_value=p_value,
        settings={"n": n, "errors": k, "family": fam.name, "ci": ci, "floor": floor,
                  "delta": delta, "confidence": gamma},
        details={"error_rate": ebar, "p_up": p_up, "error_floor_at_theta": floor_at,
                 "nothing_rejected": nothing, "hit_ceiling": ceiling,
                 "ci_valid": ci != "aci"},
        assumption=fam.assumption,
    )
