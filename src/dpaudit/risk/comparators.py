"""Prior bounds that Beyond Worst Case compares against (BWC notes §2, Fig. 1 and Fig. 3).

* ReRo, Balle-Cherubin-Hayes 2022 Cor. 3 (Beyond Worst Case §4.3):  min(1, e^eps kappa) for pure DP,
  [EXT] e^eps kappa + delta for approximate DP, kappa = the prior success of the *heaviest* item.
* Narcissus resiliency, Cohen et al. 2025 Thm F.1 (Beyond Worst Case §4.2): min(1, e^eps p + delta).
  Beyond Worst Case §4.2 states its own bound as "e^eps / (e^eps + 1/p) + delta"; that is a typo
  (BWC notes §1.9, §8.2): the correct form is e^eps / (e^eps - 1 + 1/p) + delta = beta + delta, and
  the printed form is *not* a valid bound (at eps = 0 it is below the prior).  The printed form
  is exposed only as :func:`narcissus_printed_form` so the discrepancy can be shown.
* MMC, Mahloujifar-Melis-Chaudhuri "Auditing f-DP in one run" (Beyond Worst Case §4.1, §4.4): single
canary
  drawn uniformly from K candidates, exact index match.  The paper does not print MMC's formula
  (BWC notes §8.13); the pairwise f-DP + Jensen bound of BWC notes §2.2 is implemented:
      p_MMC(K, f) = sup{p in [1/K, 1] : p <= 1 - f((1 - p) / (K - 1))}
  which equals beta(1/K, eps) for f_{eps,0} and beta + (1 - beta) delta for f_{eps,delta}.
* Steinke-Nasr-Jagielski membership special case (Beyond Worst Case §3.3, BWC notes §6.7 C): p_i =
1/2 on the
  r non-abstained guesses, 0 on the other m - r; Thm 3.5 with delta_multiplier 2 reproduces
  their reference code (2 m delta), multiplier 1 is Beyond Worst Case's n delta.
* [EXT] Kaissis et al. 2023: ReRo of an f-DP mechanism <= 1 - f(kappa) (not in Beyond Worst Case's
plots).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from dpaudit.curves import Curve, EpsDeltaDP
from dpaudit.risk.bounds import thm35_bound
from dpaudit.risk.flipping import check_epsilon, check_prior_array
from dpaudit.search import invert_decreasing
from dpaudit.validation import check_count, check_counts_le, check_delta

__all__ = [
    "rero_bound",
    "narcissus_bound",
    "narcissus_printed_form",
    "mmc_bound",
    "steinke_membership_bound",
    "kaissis_bound",
]


def _prior(p: ArrayLike, name: str) -> np.ndarray | float:
    arr = check_prior_array(p, name, min_size=0) if np.ndim(p) else \
        check_prior_array([p], name)[0]
    return arr


def _out(x: np.ndarray) -> np.ndarray | float:
    return x if np.ndim(x) else float(x)


def rero_bound(kappa: ArrayLike, epsilon: ArrayLike, delta: ArrayLike = 0.0) -> np.ndarray | float:
    """ReRo (Balle et al. 2022, Cor. 3; Beyond Worst Case eq. (1)): min(1, e^eps kappa + delta).

    kappa = sup_z Pr_{X ~ D}[L(X, z) = 1], the prior success of the heaviest item.  delta = 0 is
    the paper's pure-DP form; delta > 0 is the approximate-DP variant [EXT].  Vectorised.
    """
    k = _prior(kappa, "kappa")
    e = np.asarray(check_epsilon(epsilon), dtype=float)
    d = check_delta(delta)
    with np.errstate(over="ignore"):
        out = np.minimum(1.0, np.exp(e) * k + d)
    return _out(out)


def narcissus_bound(prior: ArrayLike, epsilon: ArrayLike, delta: ArrayLike = 0.0
                    ) -> np.ndarray | float:
    """Narcissus resiliency bound of (eps, delta)-DP (Cohen et al. Thm F.1; Beyond Worst Case §4.2):
    min(1, e^eps p + delta).  It is the same expression as ReRo's with the target's prior p in
    the place of kappa, so it is computed by :func:`rero_bound`.  Vectorised."""
    return rero_bound(_prior(prior, "prior"), epsilon, delta)


def narcissus_printed_form(prior: ArrayLike, epsilon: ArrayLike, delta: ArrayLike = 0.0
                           ) -> np.ndarray | float:
    """The formula *as printed* in Beyond Worst Case §4.2 for the paper's own bound:
    e^eps / (e^eps + 1/p) + delta.  A typo (missing "- 1"): NOT a valid bound -- at eps = 0 it
    gives p / (1 + p) + delta < p.  Kept only to document the erratum (BWC notes §8.2); use
    :func:`dpaudit.risk.bounds.single_target_bound` (theorem="cor3.4") for the correct value."""
    p = np.asarray(_prior(prior, "prior"), dtype=float)
    e = np.asarray(check_epsilon(epsilon), dtype=float)
    d = check_delta(delta)
    with np.errstate(divide="ignore"):
        out = 1.0 / (1.0 + np.exp(-e) / p) + d
    return _out(np.where(p > 0, out, d))


def mmc_bound(k: ArrayLike, curve: Curve | None = None, *, epsilon: float | None = None,
              delta: float = 0.0) -> np.ndarray | float:
    """MMC single-canary bound for a uniform prior over K candidates (BWC notes §2.2):

        p_MMC(K, f) = sup{p in [1/K, 1] : p <= 1 - f((1 - p) / (K - 1))}

    found by vectorised bisection (g(p) = p - 1 + f((1-p)/(K-1)) is increasing in p and negative
    below 1/K).  Give either a trade-off ``curve`` (e.g. ``GaussianDP(mu)``) or ``epsilon`` (and
    ``delta``) for f_{eps,delta}.

    Args:
      k: number of candidates K >= 2 (integer; vectorised).
    """
    if curve is None:
        if epsilon is None:
            raise ValueError("mmc_bound needs a curve or an epsilon")
        curve = EpsDeltaDP(float(check_epsilon(epsilon)), check_delta(delta))
    if not isinstance(curve, Curve):
        raise ValueError(f"curve must be a dpaudit Curve, got {type(curve).__name__}")
    kk = np.asarray(k, dtype=float)
    flat = np.atleast_1d(kk).reshape(-1)
    for x in flat:
        check_count("k", x, minimum=2)

    def neg_g(p: np.ndarray) -> np.ndarray:
        f = curve.tradeoff((1.0 - p) / (flat - 1.0))
        return -(p - 1.0 + f)

    root = np.asarray(invert_decreasing(neg_g, np.zeros(flat.shape), 0.0, 1.0, iters=64))
    out = np.clip(np.maximum(root, 1.0 / flat), 0.0, 1.0).reshape(kk.shape)
    return _out(out)


def steinke_membership_bound(m: int, r: int, v: ArrayLike, epsilon: float, delta: float, *,
                             delta_multiplier: float = 1.0) -> np.ndarray | float:
    """Steinke-Nasr-Jagielski one-run MI audit as a special case of Thm 3.5 (Beyond Worst Case
    §3.3):
    m canaries with Bernoulli(1/2) membership, r guesses made (p_i = 1/2), m - r abstentions
    (p_i = 0), so sum S ~ Binomial(r, 1 / (1 + e^-eps)).  Returns Pr[#correct >= v] bound.

    ``delta_multiplier=2`` reproduces Steinke et al.'s code (alpha * delta * 2m); 1 is the
    paper's n delta (BWC notes §6.7 C).
    """
    m = check_count("m", m, minimum=1)
    r = check_count("r", r, minimum=0)
    check_counts_le("r", r, "m", m)
    priors = np.zeros(m)
    priors[:r] = 0.5
    return thm35_bound(priors, epsilon, delta, v, delta_multiplier=delta_multiplier)


def kaissis_bound(kappa: ArrayLike, curve: Curve) -> np.ndarray | float:
    """[EXT] Kaissis et al. 2023 ReRo bound of an f-DP mechanism: 1 - f(kappa).  For f_{eps,0}
    this is min{1, e^eps kappa, 1 - e^-eps (1 - kappa)} (BWC notes §2.4).
    Not plotted in Beyond Worst Case."""
    if not isinstance(curve, Curve):
        raise ValueError(f"curve must be a dpaudit Curve, got {type(curve).__name__}")
    k = np.asarray(_prior(kappa, "kappa"), dtype=float)
    out = np.clip(1.0 - curve.tradeoff(k), 0.0, 1.0)
    return _out(out if k.ndim else np.asarray(out).reshape(()))
