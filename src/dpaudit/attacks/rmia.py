"""RMIA, the Robust Membership Inference Attack (Zarifzadeh, Liu, Mao, Shokri 2024,
"Low-cost high-power membership inference attacks", ICML, §3, Eqs. 3-4).

The likelihood ratio of the target model theta at candidate x against a population sample z,

    LR_theta(x, z) = [Pr(x | theta) / Pr(x)] / [Pr(z | theta) / Pr(z)],

where Pr(x | theta) is theta's probability of x's true label (softmax, see
:func:`dpaudit.attacks.true_class_probability`) and Pr(x) = E_theta' Pr(x | theta') its average
over reference models theta'.  The score is the fraction of population samples that x
dominates by a factor gamma:

    Score(x; theta) = Pr_{z ~ population}[ LR_theta(x, z) >= gamma ]            (Eq. 4)

(the paper's test; privacy_meter's implementation uses the strict "> gamma", which differs
only on ties).

* **online**: the reference models include models trained on x (about half IN, half OUT), and
  Pr(x) is the plain average over all of them;
* **offline** (reference models never trained on the candidates; §3 "offline" and Appendix):
  Pr(x)_IN is not observed and is approximated linearly from the OUT average,
  Pr(x) = (Pr(x)_OUT + Pr(x)_IN) / 2 ~= ((1 + a) Pr(x)_OUT + (1 - a)) / 2 with a in [0, 1]
  (a = 1: the OUT average itself).  The same estimate of Pr(.) is applied to the population
  samples z (they are OUT for every model).  The paper tunes a on a reference model used as
  a target; here a is the caller's choice (``offline_a``), fixed before scoring.

Inputs are precomputed probabilities (no training).  Vectorised: the z-ratios are sorted
once and each x is placed by binary search, O((n_x + n_z) log n_z).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpaudit.validation import check_binary_array, check_positive, check_probability

__all__ = ["rmia_scores", "rmia_ratio"]


def _probs(name: str, p: Any, ndim: int) -> np.ndarray:
    a = np.asarray(p, dtype=float)
    if a.ndim != ndim or a.size == 0:
        shape = "(n,)" if ndim == 1 else "(reference models, n)"
        raise ValueError(f"{name} must be a non-empty array of shape {shape}, got {a.shape}")
    if not np.isfinite(a).all() or (a < 0).any() or (a > 1).any():
        raise ValueError(f"{name} must hold probabilities in [0, 1]")
    return a


def _marginal(ref: np.ndarray, offline_a: float | None, member: np.ndarray | None
              ) -> np.ndarray:
    """Pr(.) per column: plain mean (online) or the offline linear approximation."""
    if offline_a is None:
        return ref.mean(axis=0)
    if member is not None:
        out = ~member
        cnt = out.sum(axis=0)
        if (cnt < 1).any():
            j = int(np.flatnonzero(cnt < 1)[0])
            raise ValueError(f"offline RMIA: candidate {j} has no OUT reference model")
        mean_out = (ref * out).sum(axis=0) / cnt
    else:
        mean_out = ref.mean(axis=0)
    return ((1 + offline_a) * mean_out + (1 - offline_a)) / 2


def rmia_ratio(target_prob: Any, ref_prob: Any, *, offline_a: float | None = None,
               ref_member: Any | None = None) -> np.ndarray:
    """Pr(. | theta) / Pr(.) per sample (the two factors of LR_theta(x, z))."""
    t = _probs("target_prob", target_prob, 1)
    r = _probs("ref_prob", ref_prob, 2)
    if r.shape[1] != t.size:
        raise ValueError(f"ref_prob must have {t.size} columns (one per sample), got "
                         f"{r.shape[1]}")
    a = None if offline_a is None else check_probability("offline_a", offline_a)
    mem = None
    if ref_member is not None:
        mem = check_binary_array("ref_member", np.asarray(ref_member).reshape(-1)).reshape(
            np.shape(ref_member))
        if mem.shape != r.shape:
            raise ValueError(f"ref_member must have the shape of ref_prob {r.shape}")
        if a is None:
            raise ValueError("ref_member is used only by offline RMIA (give offline_a)")
    marg = _marginal(r, a, mem)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(marg > 0, t / np.where(marg > 0, marg, 1.0), np.inf)
    return np.where((t == 0) & (marg == 0), 1.0, ratio)


def rmia_scores(target_prob_x: Any, ref_prob_x: Any, target_prob_z: Any, ref_prob_z: Any, *,
                gamma: float = 1.0, offline_a: float | None = None,
                ref_member_x: Any | None = None) -> np.ndarray:
    """RMIA score of each candidate x: the fraction of population z with LR(x, z) >= gamma.

    Args:
      target_prob_x: (n_x,) Pr(x | theta) of the target model.
      ref_prob_x: (refs, n_x) Pr(x | theta') of the reference models.
      target_prob_z: (n_z,) Pr(z | theta) for population samples (non-members).
      ref_prob_z: (refs, n_z) Pr(z | theta') for the same samples.
      gamma: the likelihood-ratio threshold (paper: gamma >= 1; default 1).
      offline_a: None = online; a in [0, 1] = offline approximation of Pr(x).
      ref_member_x: (refs, n_x) 0/1, which reference models trained on x (offline: those are
        left out of the OUT average); None = all OUT.
    """
    g = check_positive("gamma", gamma)
    rx = rmia_ratio(target_prob_x, ref_prob_x, offline_a=offline_a, ref_member=ref_member_x)
    rz = np.sort(rmia_ratio(target_prob_z, ref_prob_z, offline_a=offline_a))
    # LR(x, z) = rx / rz >= g  <=>  rz <= rx / g   (rz > 0; rz = 0 makes LR infinite)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = np.where(np.isinf(rx), np.inf, rx / g)
    return np.searchsorted(rz, bound, side="right") / rz.size
