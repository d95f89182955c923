"""LiRA, the Likelihood Ratio Attack (Carlini, Chien, Nasr, Song, Terzis, Tramer 2022,
"Membership inference attacks from first principles", IEEE S&P, §IV, Algorithm 1).

For a candidate example x, shadow models trained with x (IN) and without x (OUT) give the
distributions of the logit-scaled confidence phi = log(p / (1 - p)) of x's true class
(:func:`dpaudit.attacks.scaled_logit`); LiRA fits a Gaussian to each, per example:

* **online** (§IV-C, Algorithm 1): score = log N(phi_target; mu_in, s_in^2)
  - log N(phi_target; mu_out, s_out^2), the log-likelihood ratio of the two fits (the
  Neyman-Pearson test between them);
* **offline** (§IV-D): only OUT models; score = log Phi((phi_target - mu_out) / s_out), the
  log of the one-sided p-value 1 - Pr[Z > phi_target] of the paper, Z ~ N(mu_out, s_out^2)
  (log-space for low FPR);
* **fixed variance** (§IV-C, "we ... estimate a global variance"): with few shadow models the
  per-example variances are noisy; ``fix_variance=True`` pools one IN and one OUT variance
  across examples.

Inputs are precomputed statistics (no training): ``shadow_stat`` and ``shadow_member`` are
(shadow runs, examples) matrices, ``target_stat`` is (examples,) or (targets, examples).
:func:`lira_scores` scores EVERY run of a shadow layout leave-one-out (each run in turn is the
target, the others its shadow models), vectorised, the evaluation protocol of §V.  Multiple
queries per example (augmentations, §IV-E) are averaged by the caller (mean of the
log-likelihood ratios over queries, Algorithm 1 line 16 uses their mean) -- not done here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from dpaudit.validation import check_binary_array

__all__ = ["lira_online", "lira_offline", "lira_scores", "MIN_STD"]

#: floor on fitted standard deviations (a constant statistic across shadows is degenerate).
MIN_STD = 1e-6


def _shadow(shadow_stat: Any, shadow_member: Any) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(shadow_stat, dtype=float)
    if s.ndim != 2 or s.size == 0:
        raise ValueError(f"shadow_stat must be a non-empty (shadow runs, examples) matrix, got "
                         f"shape {s.shape}")
    if not np.isfinite(s).all():
        raise ValueError("shadow_stat must be finite (no NaN/inf)")
    m = check_binary_array("shadow_member", np.asarray(shadow_member).reshape(-1)).reshape(
        np.shape(shadow_member))
    if m.shape != s.shape:
        raise ValueError(f"shadow_member must have the shape of shadow_stat {s.shape}, got "
                         f"{m.shape}")
    return s, m


def _target(target_stat: Any, examples: int) -> np.ndarray:
    t = np.asarray(target_stat, dtype=float)
    if t.shape[-1:] != (examples,) or t.ndim > 2:
        raise ValueError(f"target_stat must have shape (examples,) or (targets, examples) "
                         f"with examples = {examples}, got {t.shape}")
    if not np.isfinite(t).all():
        raise ValueError("target_stat must be finite (no NaN/inf)")
    return t


def _fit(s: np.ndarray, w: np.ndarray, fix_variance: bool, which: str
         ) -> tuple[np.ndarray, np.ndarray]:
    """Per-example mean and std of s over the runs where w is True (weights 0/1)."""
    cnt = w.sum(axis=0)
    if (cnt < 1).any():
        j = int(np.flatnonzero(cnt < 1)[0])
        raise ValueError(f"example {j} has no {which} shadow run; every example needs at "
                         f"least one (two for a per-example variance)")
    mu = (s * w).sum(axis=0) / cnt
    dev2 = ((s - mu) ** 2 * w).sum(axis=0)
    if fix_variance:
        var = np.full(mu.shape, dev2.sum() / max(int(cnt.sum()) - cnt.size, 1))
    else:
        if (cnt < 2).any():
            j = int(np.flatnonzero(cnt < 2)[0])
            raise ValueError(f"example {j} has fewer than 2 {which} shadow runs: use "
                             f"fix_variance=True (a global variance) or more shadow models")
        var = dev2 / (cnt - 1)
    return mu, np.maximum(np.sqrt(var), MIN_STD)


def lira_online(target_stat: Any, shadow_stat: Any, shadow_member: Any, *,
                fix_variance: bool = False) -> np.ndarray:
    """Online LiRA score (log-likelihood ratio IN vs OUT Gaussian fits), per example."""
    s, m = _shadow(shadow_stat, shadow_member)
    t = _target(target_stat, s.shape[1])
    mu_in, sd_in = _fit(s, m, fix_variance, "IN")
    mu_out, sd_out = _fit(s, ~m, fix_variance, "OUT")
    return (stats.norm.logpdf(t, mu_in, sd_in) - stats.norm.logpdf(t, mu_out, sd_out))


def lira_offline(target_stat: Any, shadow_stat: Any, shadow_member: Any | None = None, *,
                 fix_variance: bool = False) -> np.ndarray:
    """Offline LiRA score log Phi((phi - mu_out) / s_out), per example.

    ``shadow_member`` marks the IN runs to leave out; ``None`` = every shadow run is OUT (the
    offline setting proper: reference models trained without the candidates)."""
    if shadow_member is None:
        shadow_member = np.zeros(np.shape(shadow_stat), dtype=bool)
    s, m = _shadow(shadow_stat, shadow_member)
    t = _target(target_stat, s.shape[1])
    mu_out, sd_out = _fit(s, ~m, fix_variance, "OUT")
    return stats.norm.logcdf((t - mu_out) / sd_out)


def lira_scores(stat: Any, member: Any, *, online: bool = True,
                fix_variance: bool = False) -> np.ndarray:
    """Leave-one-out LiRA over a shadow layout: score[r, j] uses the runs other than r.

    ``stat`` and ``member`` are (runs, examples).  Vectorised: the IN/OUT sums and sums of
    squares are computed once and run r's own contribution is subtracted (no loop over runs).
    """
    s, m = _shadow(stat, member)
    runs = s.shape[0]
    if runs < 2:
        raise ValueError("lira_scores needs at least 2 runs (one target, one shadow)")

    def loo_fit(w: np.ndarray, which: str) -> tuple[np.ndarray, np.ndarray]:
        wf = w.astype(float)
        cnt = wf.sum(axis=0) - wf                        # (runs, examples): without run r
        s1 = (s * wf).sum(axis=0) - s * wf
        s2 = (s * s * wf).sum(axis=0) - s * s * wf
        if (cnt < 1).any():
            j = int(np.argwhere(cnt < 1)[0][1])
            raise ValueError(f"example {j} has no {which} run once the target is left out")
        mu = s1 / cnt
        dev2 = np.maximum(s2 - cnt * mu * mu, 0.0)
        if fix_variance:
            var = dev2.sum(axis=1, keepdims=True) / np.maximum(
                cnt.sum(axis=1, keepdims=True) - cnt.shape[1], 1)
            var = np.broadcast_to(var, mu.shape)
        else:
            if (cnt < 2).any():
                j = int(np.argwhere(cnt < 2)[0][1])
                raise ValueError(f"example {j} has fewer than 2 {which} runs once the target "
                                 f"is left out: use fix_variance=True or more runs")
            var = dev2 / (cnt - 1)
        return mu, np.maximum(np.sqrt(var), MIN_STD)

    mu_out, sd_out = loo_fit(~m, "OUT")
    if not online:
        return stats.norm.logcdf((s - mu_out) / sd_out)
    mu_in, sd_in = loo_fit(m, "IN")
    return stats.norm.logpdf(s, mu_in, sd_in) - stats.norm.logpdf(s, mu_out, sd_out)
