"""What an (epsilon, delta) guarantee means for n targets: the numbers ``dpaudit risk`` prints.

:func:`risk_summary` gathers, for per-target priors, the bounds of Swanberg et al., "Beyond the
Worst Case: Extending Differential Privacy Guarantees to Realistic Adversaries"
(:mod:`dpaudit.risk.bounds`): the per-target success bound (Thm 3.5 at n = 1), v_UB over n
targets (Thm 3.5), the bits leaked per person (§3.2), the advantage bound (Cor 3.4) and
eps_protect.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpaudit.risk.bounds import (
    advantage,
    epsilon_protect,
    leaked_bits,
    single_target_from_beta,
    thm35_tail,
)
from dpaudit.risk.flipping import beta

__all__ = ["risk_summary"]


def risk_summary(epsilon: float, delta: float, priors: np.ndarray, *, confidence: float = 0.95,
                 tau: float = 0.05, delta_multiplier: float = 1.0) -> dict[str, Any]:
    """The numbers ``dpaudit risk`` prints, as a JSON-friendly dict (keys mirror AuditResult:
    epsilon, delta, confidence, method, params, settings, details)."""
    n = int(priors.size)
    tb = thm35_tail(priors, epsilon, delta, delta_multiplier=delta_multiplier)
    vub = int(tb.v_ub(confidence))
    p_value = float(tb.sf(vub + 1))
    del tb  # 1e7 targets: every n-array is dropped as soon as its summaries are taken
    homogeneous = bool(np.all(priors == priors[0]))
    # One prior (``--prior --targets n``): the per-target quantities are the same for every
    # target, so they are computed on a short array of that prior and only the sums and means
    # see n copies (same values bit for bit: same elementwise operations, same reductions).
    few = np.full(min(n, 64), priors[0]) if homogeneous else priors

    def spread(x: np.ndarray) -> np.ndarray:
        return np.full(n, x[0]) if homogeneous and x.size else x

    def mean_max(x: np.ndarray) -> tuple[float, float]:
        x = spread(x)
        return float(x.mean()), float(x.max())

    b = np.atleast_1d(beta(few, epsilon))  # shared by the single-target bounds
    success_mean, success_max = mean_max(single_target_from_beta(b, delta, "thm3.5"))
    expected_bound = float(spread(b).sum())
    post_cor34 = single_target_from_beta(b, delta, "cor3.4")
    del b
    inner = (few > 0) & (few < 1)
    sel = slice(None) if inner.all() else inner  # a view when every prior is in (0, 1)
    if inner.any():
        adv_mean, adv_max = mean_max(np.atleast_1d(advantage(post_cor34[sel], few[sel])))
    else:
        adv_mean, adv_max = mean_max(np.zeros(1))
    del post_cor34
    eps_prot = np.atleast_1d(epsilon_protect(few[sel], tau, delta)) if inner.any() \
        else np.array([math.nan])
    eps_prot_min = float(np.nanmin(eps_prot)) if np.isfinite(eps_prot).any() else None
    del eps_prot, inner
    bits = leaked_bits(epsilon, 1.0 - confidence)
    details = {
        "success_bound_mean": success_mean,
        "expected_successes_bound": expected_bound,
        "expected_successes_prior": float(priors.sum()),
        "v_ub_fraction": vub / n,
        "p_value_at_v_ub_plus_1": p_value,
        "advantage_max": adv_max,
        "advantage_mean": adv_mean,
        "epsilon_protect_min": eps_prot_min,
        "prior_bits": float(-math.log2(priors.max())) if priors.max() > 0 else None,
    }
    return {
        "epsilon": float(epsilon),
        "delta": float(delta),
        "confidence": float(confidence),
        "method": "risk_thm3.5",
        "success_bound": success_max,
        "v_ub": vub,
        "targets": n,
        "leaked_bits": float(bits),
        "advantage": adv_max,
        "epsilon_protect": details["epsilon_protect_min"],
        "params": {"prior": float(priors[0]) if homogeneous else None,
                   "prior_max": float(priors.max()), "prior_mean": float(priors.mean())},
        "settings": {"epsilon": float(epsilon), "delta": float(delta), "targets": n,
                     "confidence": float(confidence), "tau": float(tau),
                     "delta_multiplier": float(delta_multiplier),
                     "homogeneous": homogeneous},
        "details": details,
    }
