"""Lifted-DP (LiDP) audit: epsilon lower bound from K random canaries per trial (Pillutla et al.).

Observations (Pillutla et al., Algorithm 1): ``x`` is an (n, K) 0/1 matrix, row i holding the tests
1[theta_1 in R_k] of the K canaries inserted into the i-th model (trained on D_1 = D + K
canaries); ``y`` is an (n', m) 0/1 matrix holding the tests of m fresh canaries on the i-th null
model (trained on D_0 = D + K - 1 canaries; m = K as in the reference code).  Because canaries
are i.i.d. and each rejection set depends only on its own canary, rows of x and y are
exchangeable Bernoulli (XBern) vectors, and (Eq. 4, via Theorem 3: LiDP <=> DP)

    mu_1(x) <= e^eps mu_1(y) + delta      whenever the mechanism is (eps, delta)-DP.

The estimator (Algorithm 1, lines 7-8) bounds the TPR-like mean from below and the FPR-like
mean from above, each with failure probability beta/2 (beta = 1 - confidence), and returns

    eps_hat = log((p1_lower - delta) / p0_upper),      P(eps < eps_hat) <= beta.

``AuditResult.epsilon`` is max(0, eps_hat) (0 = "no lower bound"); the raw value, which may be
negative or -inf when p1_lower <= delta, is ``details["epsilon_raw"]`` (LiDP notes §2.1).

Options:

* ``interval``: "wilson" (asymptotic; the paper's experiments) or "bernstein" (finite-sample),
  each of ``order`` 1, 2 or 4 (Pillutla et al., App. C); or the Bernoulli baselines
  "clopper_pearson" / "jeffreys", which use only the first canary of each trial (as the
  reference code does; LiDP notes §2.7), i.e. the classical one-canary-per-run audit.
* ``symmetric=True``: also test the swapped DP condition eps >= log((TNR - delta)/FNR) with
  TNR, FNR bounded on the complemented vectors 1 - y, 1 - x (never as 1 - a bound on mu_1:
  the complement's higher moments differ), report the larger bound, and split beta/4 per
  bound to keep the guarantee (LiDP notes §2.1).  Complement moments are exact linear maps of
  the moments: m_l(1 - x) = sum_j (-1)^j C(l, j) m_j(x).
* ``neighbourhood="replace_one"``: Pillutla et al. App. B.2 (Eq. 12): y holds fresh canaries tested
on
  the *same* D_1 model; the formula is identical, the bound is then on epsilon under the
  replace-one neighbourhood.  The value is recorded in ``settings``.

Threshold tuning (Pillutla et al. App. E.1; LiDP notes §2.9): :func:`lifted_tuned` chooses
tau* = argmax_tau eps_hat(tau) on *tuning* trials over a grid (reference: 500 points between
min of the 10% and max of the 90% quantiles of the pooled tuning scores), and reports
eps_hat(tau*) on *fresh* trials, which keeps the guarantee.  Selecting tau on the evaluation
trials would void it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from dpaudit.observations import LiftedObservations
from dpaudit.results import AuditResult
from dpaudit.stats.intervals_xbern import XBERN_ORDERS, bernoulli_interval, xbern_bounds
from dpaudit.stats.xbern import (
    DIRECTIONS,
    correlation_diagnostics,
    empirical_moments,
    moments_at_thresholds,
)
from dpaudit.validation import (
    check_choice,
    check_confidence,
    check_count,
    check_delta,
    check_finite_matrix,
)

__all__ = [
    "LIFTED_INTERVALS",
    "NEIGHBOURHOODS",
    "lifted",
    "lifted_from_scores",
    "lifted_tuned",
    "lifted_epsilon_curve",
    "epsilon_from_bounds",
    "threshold_grid",
    "complement_moments",
    "group_privacy_target",
    "trials_to_reach",
]

LIFTED_INTERVALS = ("wilson", "bernstein", "clopper_pearson", "jeffreys")
NEIGHBOURHOODS = ("add_remove", "replace_one")


def epsilon_from_bounds(p1_lower: Any, p0_upper: Any, delta: float) -> np.ndarray:
    """eps_hat = log((p1_lower - delta) / p0_upper) (Pillutla et al., Algorithm 1 line 8),
    vectorised.

    -inf where p1_lower <= delta (no evidence), +inf where p0_upper = 0 < p1_lower - delta.
    """
    p1 = np.asarray(p1_lower, dtype=float)
    p0 = np.asarray(p0_upper, dtype=float)
    num = p1 - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(num > 0, np.log(np.where(num > 0, num, 1.0)) - np.log(p0), -np.inf)
    return out


def complement_moments(mu: Any) -> np.ndarray:
    """Moments of the complemented vector 1 - x: mu_l(1-x) = sum_{j=0..l} (-1)^j C(l,j) mu_j
    (mu_0 = 1), exact by inclusion-exclusion; ``mu`` holds mu_1..mu_L on its last axis."""
    m = np.asarray(mu, dtype=float)
    L = m.shape[-1]
    full = np.concatenate([np.ones(m.shape[:-1] + (1,)), m], axis=-1)
    out = np.empty_like(m)
    for ell in range(1, L + 1):  # loop over the moment order only
        j = np.arange(ell + 1)
        coef = (-1.0) ** j * special.comb(ell, j)
        out[..., ell - 1] = full[..., : ell + 1] @ coef
    return np.clip(out, 0.0, 1.0)


def _order_for(interval: str, order: int, k: int) -> int:
    if interval in ("clopper_pearson", "jeffreys"):
        return 1
    if isinstance(order, bool) or order not in XBERN_ORDERS:
        raise ValueError(f"order must be one of 1, 2, 4; got {order!r}")
    if order > k:
        raise ValueError(f"order must be <= K (canaries per trial, {k}); got order {order}. "
                         "Use order=1 for K < 2, or order <= 2 for K < 4")
    return int(order)


def _bounds(mu_x: np.ndarray, n_x: int, mu_y: np.ndarray, n_y: int, k: int, beta: float,
            interval: str, order: int, options: dict[str, bool]) -> tuple[np.ndarray,
                                                                           np.ndarray]:
    """(lower bound on mu_1(x), upper bound on mu_1(y)), each failing w.p. <= beta."""
    if interval in ("clopper_pearson", "jeffreys"):
        conf = 1.0 - beta
        sx = np.rint(mu_x[..., 0] * n_x)
        sy = np.rint(mu_y[..., 0] * n_y)
        lo, _ = bernoulli_interval(sx, n_x, conf, "lower", interval)
        _, hi = bernoulli_interval(sy, n_y, conf, "upper", interval)
        return np.asarray(lo, float), np.asarray(hi, float)
    lo, _ = xbern_bounds(mu_x, n_x, k, beta, method=interval, order=order, **options)
    _, hi = xbern_bounds(mu_y, n_y, k, beta, method=interval, order=order, **options)
    return np.asarray(lo, float), np.asarray(hi, float)


def _epsilon_from_moments(mu_x: np.ndarray, n_x: int, mu_y: np.ndarray, n_y: int, k: int,
                          delta: float, confidence: float, interval: str, order: int,
                          symmetric: bool, options: dict[str, bool]) -> dict[str, np.ndarray]:
    beta = 1.0 - confidence
    each = beta / 4 if symmetric else beta / 2
    p1, p0 = _bounds(mu_x, n_x, mu_y, n_y, k, each, interval, order, options)
    eps = epsilon_from_bounds(p1, p0, delta)
    out = {"epsilon_raw": eps, "tpr_lower": p1, "fpr_upper": p0,
           "epsilon_forward": eps}
    if symmetric:
        tnr, fnr = _bounds(complement_moments(mu_y), n_y, complement_moments(mu_x), n_x, k,
                           each, interval, order, options)
        eps_b = epsilon_from_bounds(tnr, fnr, delta)
        out.update(tnr_lower=tnr, fnr_upper=fnr, epsilon_backward=eps_b,
                   epsilon_raw=np.maximum(eps, eps_b))
    return out


def _check_common(delta: float, confidence: float, interval: str, neighbourhood: str,
                  options: dict[str, Any]) -> tuple[float, float]:
    d = check_delta(delta)
    c = check_confidence(confidence)
    check_choice("interval", interval, LIFTED_INTERVALS)
    check_choice("neighbourhood", neighbourhood, NEIGHBOURHOODS)
    for key in options:
        if key not in ("exact_eq18", "tight_k_factor", "worst_case_clip"):
            raise ValueError(f"unknown option {key!r}; options are exact_eq18, tight_k_factor, "
                             "worst_case_clip")
    return d, c


def _result(vals: dict[str, Any], *, delta: float, confidence: float, settings: dict[str, Any],
            details: dict[str, Any]) -> AuditResult:
    raw = float(np.asarray(vals["epsilon_raw"]))
    eps = raw if (math.isfinite(raw) and raw > 0) or raw == math.inf else 0.0
    det = {key: float(np.asarray(v)) for key, v in vals.items()}
    det.update(details)
    return AuditResult(epsilon=eps, delta=delta, confidence=confidence, method="lifted",
                       params={}, p_value=None, settings=settings, details=det)


def lifted(x: Any, y: Any, delta: float = 1e-5, confidence: float = 0.95,
           interval: str = "wilson", order: int = 2, *, symmetric: bool = False,
           neighbourhood: str = "add_remove", **options: bool) -> AuditResult:
    """LiDP epsilon lower bound from trial-by-canary test matrices (Pillutla et al., Algorithm 1).

    Args:
      x: (n, K) 0/1 tests of the K inserted canaries on the models trained with them.
      y: (n', K) 0/1 tests of fresh canaries on the null models (K - 1 canaries; or, with
        ``neighbourhood="replace_one"``, on the same D_1 models).
      delta: delta of the (eps, delta) statement, in [0, 1) (paper: 1e-5).
      confidence: probability that the bound holds (1 - beta); beta/2 per side.
      interval: "wilson" | "bernstein" | "clopper_pearson" | "jeffreys".
      order: 1, 2 or 4 for wilson/bernstein (default 2: the paper's recommendation).
      symmetric: also test the swapped direction (beta/4 per bound) and report the max.
      neighbourhood: "add_remove" (Eq. 4) or "replace_one" (Eq. 12).
      **options: exact_eq18, tight_k_factor, worst_case_clip (see
        :func:`dpaudit.stats.intervals_xbern.xbern_bounds`).

    Returns:
      AuditResult with ``epsilon = max(0, eps_hat)``; ``details`` holds the raw eps_hat, the
      TPR lower / FPR upper bounds, the empirical moments and correlation diagnostics.
    """
    d, c = _check_common(delta, confidence, interval, neighbourhood, options)
    obs = LiftedObservations.from_arrays(x, y)
    k = obs.k
    o = _order_for(interval, order, k)
    xs = obs.x[:, :1] if interval in ("clopper_pearson", "jeffreys") else obs.x
    ys = obs.y[:, :1] if interval in ("clopper_pearson", "jeffreys") else obs.y
    kk = xs.shape[1]
    sx = xs.sum(axis=1)
    sy = ys.sum(axis=1)
    mo = min(4, kk) if symmetric else o
    mo = max(mo, o)
    mu_x = empirical_moments(sx, kk, mo)
    mu_y = empirical_moments(sy, kk, mo)
    vals = _epsilon_from_moments(mu_x, len(sx), mu_y, len(sy), kk, d, c, interval, o, symmetric,
                                 dict(options))
    n_x, n_y = obs.x.shape[0], obs.y.shape[0]
    settings = {"interval": interval, "order": o, "k": k, "n_x": n_x, "n_y": n_y,
                "symmetric": symmetric, "neighbourhood": neighbourhood,
                "delta": d, "confidence": c, **{key: bool(v) for key, v in options.items()}}
    details: dict[str, Any] = {"tpr_hat": float(mu_x[0]), "fpr_hat": float(mu_y[0]),
                               "moments_x": mu_x.tolist(), "moments_y": mu_y.tolist()}
    if interval in ("clopper_pearson", "jeffreys") and k > 1:
        details["note"] = "Bernoulli baseline: only the first canary of each trial is used"
    for key, v in correlation_diagnostics(empirical_moments(obs.x.sum(axis=1), k,
                                                            min(4, k))).items():
        details[f"x_{key}"] = float(v)
    return _result(vals, delta=d, confidence=c, settings=settings, details=details)


def threshold_grid(x_scores: Any, y_scores: Any, size: int = 500,
                   grid_range: str = "quantile") -> np.ndarray:
    """Threshold grid of the reference code (LiDP notes §2.9): ``size`` points linearly spaced
    from min(q_10%(x), q_10%(y)) to max(q_90%(x), q_90%(y)) of the pooled tuning scores
    ("quantile"), or from the smallest to the largest pooled score ("full").

    The quantile grid caps the achievable eps_hat (LiDP notes §4.3.1) but is needed to match the
    paper's numbers; "full" is the method-neutral choice.
    """
    size = check_count("size", size, minimum=1)
    check_choice("grid_range", grid_range, ("quantile", "full"))
    xs = np.asarray(x_scores, dtype=float).reshape(-1)
    ys = np.asarray(y_scores, dtype=float).reshape(-1)
    if xs.size == 0 or ys.size == 0 or not (np.isfinite(xs).all() and np.isfinite(ys).all()):
        raise ValueError("x_scores and y_scores must be non-empty and finite")
    if grid_range == "quantile":
        lo = min(np.quantile(xs, 0.1), np.quantile(ys, 0.1))
        hi = max(np.quantile(xs, 0.9), np.quantile(ys, 0.9))
    else:
        lo = min(xs.min(), ys.min())
        hi = max(xs.max(), ys.max())
    return np.linspace(lo, hi, size)


def lifted_epsilon_curve(x_scores: Any, y_scores: Any, thresholds: Any, delta: float = 1e-5,
                         confidence: float = 0.95, interval: str = "wilson", order: int = 2,
                         *, direction: str = "greater", symmetric: bool = False,
                         **options: bool) -> dict[str, np.ndarray]:
    """eps_hat(tau) for every threshold of a grid, fully vectorised (sort-based moments, see
    :func:`dpaudit.stats.xbern.moments_at_thresholds`).  The test is "member" iff
    score >= tau (``direction="greater"``) or score <= tau ("less").

    Returns a dict of arrays over the grid: epsilon_raw, tpr_lower, fpr_upper (and the
    backward-direction entries when ``symmetric``).
    """
    d, c = _check_common(delta, confidence, interval, "add_remove", options)
    check_choice("direction", direction, DIRECTIONS)
    xs = check_finite_matrix("x_scores", x_scores)
    ys = check_finite_matrix("y_scores", y_scores)
    if xs.shape[1] != ys.shape[1]:
        raise ValueError(f"x_scores and y_scores must have the same number of canaries per "
                         f"trial (K); got {xs.shape[1]} and {ys.shape[1]}")
    if interval in ("clopper_pearson", "jeffreys"):
        xs, ys = xs[:, :1], ys[:, :1]
    k = xs.shape[1]
    o = _order_for(interval, order, k)
    mo = max(o, min(4, k)) if symmetric else o
    mu_x = moments_at_thresholds(xs, thresholds, mo, direction)
    mu_y = moments_at_thresholds(ys, thresholds, mo, direction)
    return _epsilon_from_moments(mu_x, xs.shape[0], mu_y, ys.shape[0], k, d, c, interval, o,
                                 symmetric, dict(options))


def lifted_from_scores(x_scores: Any, y_scores: Any, threshold: float, delta: float = 1e-5,
                       confidence: float = 0.95, interval: str = "wilson", order: int = 2, *,
                       direction: str = "greater", **kwargs: Any) -> AuditResult:
    """:func:`lifted` on the tests 1[score >= threshold] (or <= for ``direction="less"``).

    The threshold must not have been chosen on these scores (use :func:`lifted_tuned`).
    """
    check_choice("direction", direction, DIRECTIONS)
    xs = check_finite_matrix("x_scores", x_scores)
    ys = check_finite_matrix("y_scores", y_scores)
    t = float(threshold)
    if math.isnan(t):
        raise ValueError("threshold must be a real number, got NaN")
    x = xs >= t if direction == "greater" else xs <= t
    y = ys >= t if direction == "greater" else ys <= t
    r = lifted(x, y, delta, confidence, interval, order, **kwargs)
    det = dict(r.details)
    det["threshold"] = t
    st = dict(r.settings)
    st["direction"] = direction
    return AuditResult(epsilon=r.epsilon, delta=r.delta, confidence=r.confidence,
                       method=r.method, params=r.params, p_value=r.p_value, settings=st,
                       details=det)


def lifted_tuned(tune_x_scores: Any, tune_y_scores: Any, x_scores: Any, y_scores: Any,
                 delta: float = 1e-5, confidence: float = 0.95, interval: str = "wilson",
                 order: int = 2, *, direction: str = "greater", grid: Any = 500,
                 grid_range: str = "quantile", **kwargs: Any) -> AuditResult:
    """Threshold-tuning protocol of Pillutla et al. App. E.1: pick tau* = argmax eps_hat(tau) over a
    grid on the tuning trials, report :func:`lifted` at tau* on the fresh trials.

    ``grid``: number of grid points (see :func:`threshold_grid`) or an explicit array of
    thresholds.  ``details`` records tau* and the tuning-set eps_hat(tau*).
    """
    tx = check_finite_matrix("tune_x_scores", tune_x_scores)
    ty = check_finite_matrix("tune_y_scores", tune_y_scores)
    if np.ndim(grid) == 0:
        taus = threshold_grid(tx, ty, int(check_count("grid", grid, minimum=1)), grid_range)
    else:
        taus = np.asarray(grid, dtype=float).reshape(-1)
        if taus.size == 0 or not np.isfinite(taus).all():
            raise ValueError("grid must be a positive count or a non-empty finite array")
    opts = {k: v for k, v in kwargs.items() if k in ("exact_eq18", "tight_k_factor",
                                                       "worst_case_clip", "symmetric")}
    curve = lifted_epsilon_curve(tx, ty, taus, delta, confidence, interval, order,
                                 direction=direction, **opts)
    eps_t = curve["epsilon_raw"]
    best = int(np.argmax(np.where(np.isnan(eps_t), -np.inf, eps_t)))
    tau = float(taus[best])
    r = lifted_from_scores(x_scores, y_scores, tau, delta, confidence, interval, order,
                           direction=direction, **kwargs)
    det = dict(r.details)
    det["tuning_epsilon"] = float(eps_t[best])
    st = dict(r.settings)
    st.update(grid_size=int(taus.size), grid_range=grid_range if np.ndim(grid) == 0
              else "explicit", n_tune_x=int(tx.shape[0]), n_tune_y=int(ty.shape[0]))
    return AuditResult(epsilon=r.epsilon, delta=r.delta, confidence=r.confidence,
                       method=r.method, params=r.params, p_value=r.p_value, settings=st,
                       details=det)


def group_privacy_target(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """(K eps, (e^{K eps} - 1)/(e^eps - 1) delta): what a deterministic K-canary test audits
    (group privacy; Pillutla et al. §3.2, LiDP notes §1.6)."""
    kk = check_count("k", k, minimum=1)
    if epsilon <= 0:
        return 0.0, kk * float(delta)
    return kk * epsilon, float(np.expm1(kk * epsilon) / np.expm1(epsilon) * delta)


def trials_to_reach(n_values: Any, eps_values: Any, target: float,
                    space: str = "linear") -> float:
    """n* with eps_hat(n*) = target by linear interpolation/extrapolation of eps_hat(n) in n
    ("linear", default) or in log n ("log") (Pillutla et al. Table 1 protocol; the paper does not
    say
    which, LiDP notes §7.18).  Uses the two bracketing points, or the two nearest end points for
    extrapolation.  Returns nan when eps_hat does not change between them."""
    check_choice("space", space, ("linear", "log"))
    n = np.asarray(n_values, dtype=float)
    e = np.asarray(eps_values, dtype=float)
    if n.ndim != 1 or n.size < 2 or n.shape != e.shape:
        raise ValueError("n_values and eps_values must be 1-D arrays of equal length >= 2")
    order = np.argsort(n)
    n, e = n[order], e[order]
    t = np.log(n) if space == "log" else n
    above = np.flatnonzero(e >= target)
    if above.size and above[0] > 0:
        i = above[0] - 1
    elif above.size:
        i = 0
    else:
        i = n.size - 2
    j = i + 1
    if e[j] == e[i]:
        return math.nan
    ts = t[i] + (target - e[i]) * (t[j] - t[i]) / (e[j] - e[i])
    return float(np.exp(ts) if space == "log" else ts)
