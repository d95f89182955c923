"""The flipping probability beta(p, eps) and the single-target posterior bounds (Beyond Worst Case
§3.2).

Theorem 3.2 of Beyond Worst Case (Swanberg et al., "Beyond the Worst Case", arXiv 2507.08158v1): for
an
eps-DP mechanism and a product prior, the success indicator of target i, conditional on any
output and on the other targets, is dominated by Bernoulli(beta_i) with

    beta(p, eps) = e^eps / (e^eps - 1 + 1/p) = e^eps p / (1 + (e^eps - 1) p)
                 = sigmoid(eps + logit p)                       (BWC notes §1.3)

where p = Pr_{X ~ D_i}[l_i(X, z) = 1] is the prior success of the attempt z on a fresh sample of
person i.  It is the Bayes posterior when the prior log-odds are raised by exactly eps, and the
lower companion (App. B) is sigmoid(logit p - eps).

Decision (BWC notes §8.1): Thm 3.2 is stated for "(eps, delta)-DP" but its proof (App. B) is for
(eps, 0)-DP and beta uses only eps, so it is implemented as a pure-DP result; the delta-aware
versions are Cor. 3.4 and Thm. 3.5 in :mod:`dpaudit.risk.bounds`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from dpaudit.validation import check_finite_array, check_probability, check_real_array

__all__ = ["beta", "beta_of_checked", "posterior_lower", "check_prior_array", "check_prior_scalar",
           "check_epsilon"]


def check_epsilon(epsilon: ArrayLike, name: str = "epsilon") -> np.ndarray | float:
    """epsilon >= 0 (scalar or array; +inf allowed and means 'no privacy'; strings, booleans
    and complex numbers are rejected)."""
    e = check_real_array(name, epsilon)
    if np.isnan(e).any() or (e < 0).any():
        raise ValueError(f"{name} must be >= 0 (inf allowed), got {epsilon!r}")
    return e if e.ndim else float(e)


def check_prior_array(values: object, name: str = "priors", *, open_interval: bool = False,
                      min_size: int = 1) -> np.ndarray:
    """Per-target prior success probabilities as a 1-D float array.

    Accepted range [0, 1] (p_i = 0 encodes an abstention or an impossible guess, Beyond Worst Case
    §3.3; p_i = 1 a certain success), or (0, 1) with ``open_interval=True``.
    """
    arr = check_real_array(name, values)
    arr = arr.reshape(-1) if arr.ndim == 0 else arr
    arr = check_finite_array(name, arr, min_size=min_size)
    bad = (arr <= 0) | (arr >= 1) if open_interval else (arr < 0) | (arr > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        rng = "(0, 1)" if open_interval else "[0, 1]"
        raise ValueError(f"{name} must be in {rng}; entry {i} is {arr[i]!r}")
    return arr


def check_prior_scalar(value: ArrayLike, name: str = "prior") -> float:
    """A single prior success probability, in the open interval (0, 1)."""
    v = check_probability(name, value)
    if not (0.0 < v < 1.0):
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return v


def _check_p(p: ArrayLike) -> np.ndarray:
    """p of any shape, each entry in [0, 1]."""
    arr = check_real_array("p", p)
    bad = ~((arr >= 0) & (arr <= 1))
    if bad.any():
        v = arr.reshape(-1)[int(np.flatnonzero(bad.reshape(-1))[0])]
        raise ValueError(f"p must be in [0, 1]; got {v!r}")
    return arr


def _logit(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(p) - np.log1p(-p)


def beta(p: ArrayLike, epsilon: ArrayLike) -> np.ndarray | float:
    """Flipping probability beta(p, eps) = sigmoid(eps + logit p) (Beyond Worst Case Thm 3.2).

    Vectorised (NumPy broadcasting over p and epsilon).  Computed as
    ``expit(eps + log p - log1p(-p))``, stable for p down to 1e-300 and large eps; p = 0 -> 0,
    p = 1 -> 1, eps = inf -> 1 for p > 0 (BWC notes §1.3).

    Args:
      p: prior success probability/probabilities in [0, 1].
      epsilon: privacy parameter(s), >= 0 (inf allowed).
    """
    pp = _check_p(p)
    e = check_epsilon(epsilon)
    if isinstance(e, float) and pp.ndim == 1:
        return beta_of_checked(pp, e)
    pp_a, e_a = np.broadcast_arrays(np.asarray(pp, dtype=float), np.asarray(e, dtype=float))
    with np.errstate(invalid="ignore"):
        out = expit(e_a + _logit(pp_a))
    out = np.where(pp_a <= 0, 0.0, np.where(pp_a >= 1, 1.0, out))
    out = np.where(np.isinf(e_a) & (pp_a > 0), 1.0, out)
    return out if out.ndim else float(out)


def beta_of_checked(p: np.ndarray, epsilon: float) -> np.ndarray:
    """:func:`beta` for an already validated 1-D float array p in [0, 1] and one epsilon >= 0
    (e.g. from :func:`check_prior_array` and :func:`check_epsilon`): the same floating-point
    operations, expit(eps + (log p - log1p(-p))), done in place (two n-arrays instead of about
    eight; 1e7 targets), so the values are bitwise those of the broadcasting path."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(p)
        tmp = np.negative(p)
        out -= np.log1p(tmp, out=tmp)
        del tmp
        out += epsilon
        expit(out, out=out)
    np.copyto(out, 1.0, where=p >= 1)
    np.copyto(out, 0.0, where=p <= 0)
    if np.isinf(epsilon):
        np.copyto(out, 1.0, where=p > 0)
    return out


def posterior_lower(p: ArrayLike, epsilon: ArrayLike) -> np.ndarray | float:
    """Lower companion of beta: e^-eps / (e^-eps - 1 + 1/p) = sigmoid(logit p - eps)
    (Beyond Worst Case App. B, proof of Thm 3.2).  p = 0 -> 0, p = 1 -> 1, eps = inf -> 0 for p <
    1."""
    pp = _check_p(p)
    e = check_epsilon(epsilon)
    pp_a, e_a = np.broadcast_arrays(np.asarray(pp, dtype=float), np.asarray(e, dtype=float))
    with np.errstate(invalid="ignore"):
        out = expit(_logit(pp_a) - e_a)
    out = np.where(pp_a <= 0, 0.0, np.where(pp_a >= 1, 1.0, out))
    out = np.where(np.isinf(e_a) & (pp_a < 1), 0.0, out)
    return out if out.ndim else float(out)
