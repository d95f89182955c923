"""f-DP one-run audit of Mahloujifar, Melis and Chaudhuri, *Auditing f-Differential Privacy in
One Run* (ICML 2025, arXiv:2410.22235) -- a baseline of seed 001 (spec/001 §5.2).

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

Asymmetric curves: the recursion needs a symmetric f.  For the ordered sub-sampled Gaussian
pair the symmetrised envelope C_q(G_mu) = (min{f_q, f_q^{-1}})** of Dong, Roth and Su is
used (a weaker, valid null); other asymmetric curves are refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import special

from dpaudit.curves.base import Curve
from dpaudit.curves.families import resolve_family
from dpaudit.curves.gaussian import GaussianDP
from dpaudit.curves.subsampled import SubsampledGaussianDP, sgm_tradeoff
from dpaudit.results import AuditResult
from dpaudit.search import largest_rejected_batched
from dpaudit.validation import (
    check_confidence,
    check_count,
    check_delta,
    check_nested_counts,
    check_positive,
)

__all__ = ["mahloujifar", "mahloujifar_reject", "inverse_blowup"]


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
        mus = np.array([c.mu for c in sym])
        return lambda y, idx: special.ndtr(special.ndtri(np.clip(y, 0.0, 1.0)) - mus[idx])

    if all(isinstance(c, SubsampledGaussianDP) and c.symmetrized for c in sym) and \
            len({c.q for c in sym}) == 1:
        mus_s = np.array([c.mu for c in sym])
        q = sym[0].q
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


def mahloujifar(m: int, guesses: int, correct: int, delta: float = 1e-5,
                confidence: float = 0.95, family: Any = "gdp", *, tol: float = 1e-6,
                grid_points: int | None = None) -> AuditResult:
    """Mahloujifar-Melis-Chaudhuri f-DP one-run epsilon lower bound.

    Args:
      m: number of canaries.
      guesses: number of guesses c' (abstentions excluded), 0 <= c' <= m.
      correct: number of correct guesses c, 0 <= c <= c'.
      delta: delta at which epsilon is reported (conversion of the fitted curve).
      confidence: probability that the bound holds (tau = 1 - confidence).
      family: null family (default "gdp"); see :func:`dpaudit.curves.resolve_family`.
      tol: relative tolerance of the search over the family parameter.
      grid_points: candidates per search pass (default 33 for GDP, 9 otherwise).
    """
    m, cp, c = _check_counts(m, guesses, correct)
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    tol = check_positive("tol", tol, upper=0.1)
    fam = resolve_family(family, delta)
    tau = 1.0 - confidence
    if grid_points is None:
        grid_points = 33 if fam.name == "gdp" else 9
    grid_points = check_count("grid_points", grid_points, minimum=3)

    def reject_many(thetas: np.ndarray) -> np.ndarray:
        return _gap([fam.curve(float(t)) for t in thetas], m, cp, c, tau) > 0

    res, evals = largest_rejected_batched(reject_many, fam.lo, fam.hi, tol, grid_points)
    if res.nothing_rejected:
        theta, eps = 0.0, 0.0
    else:
        theta = res.theta
        eps = fam.epsilon(theta, delta)
    return AuditResult(
        epsilon=float(eps), delta=delta, confidence=confidence, method="mahloujifar",
        params={fam.param_name: float(theta)}, p_value=None,
        settings={"m": m, "guesses": cp, "correct": c, "family": fam.name, "delta": delta,
                  "confidence": confidence, "tol": tol, "grid_points": grid_points},
        details={"hit_ceiling": res.hit_ceiling, "nothing_rejected": res.nothing_rejected,
                 "search_range": [fam.lo, fam.hi], "candidates_evaluated": evals,
                 "accuracy": c / cp if cp else math.nan})
