"""Claimed privacy of a DP-SGD run from (noise multiplier, sampling rate, steps).

Two accountants, both reported: Opacus's own (``PRVAccountant``, its default in
``PrivacyEngine``; Gopi, Lee, Wutschitz 2021) and dpaudit's ``dpsgd_curve`` (dp_accounting's
PLD, add/remove adjacency), which is the curve the audit's verdict is compared with.  Both
compose T Poisson-subsampled Gaussian steps; they agree to within their discretisation
(tested).  Both are memoised on their (hashable) arguments: composing a thousand steps takes
seconds, and audits of many seeds share the claim.
"""

from __future__ import annotations

from functools import lru_cache

from dpaudit.curves import dpsgd_curve
from dpaudit.curves.calibration import dpsgd_noise_multiplier
from dpaudit.validation import check_count, check_delta, check_positive, check_probability

__all__ = ["opacus_epsilon", "claimed_epsilon", "sigma_for_epsilon"]


@lru_cache(maxsize=64)
def opacus_epsilon(noise_multiplier: float, sampling_rate: float, steps: int, delta: float,
                   accountant: str = "prv") -> float:
    """epsilon at ``delta`` from Opacus's accountant ("prv", "rdp" or "gdp") after ``steps``
    steps at (sigma, q)."""
    from opacus.accountants import create_accountant

    sigma = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sampling_rate", sampling_rate, open_low=True)
    t = check_count("steps", steps, minimum=1)
    acc = create_accountant(accountant)
    acc.history = [(sigma, q, t)]
    return float(acc.get_epsilon(delta=check_delta(delta)))


@lru_cache(maxsize=64)
def claimed_epsilon(noise_multiplier: float, sampling_rate: float, steps: int,
                    delta: float) -> float:
    """epsilon at ``delta`` of ``dpsgd_curve(sigma, q, T)`` (the verdict's reference)."""
    return dpsgd_curve(noise_multiplier, sampling_rate, steps).epsilon(check_delta(delta))


@lru_cache(maxsize=64)
def sigma_for_epsilon(epsilon: float, sampling_rate: float, steps: int, delta: float = 1e-5,
                      *, xtol: float = 1e-3) -> float:
    """The noise multiplier sigma with ``dpsgd_curve(sigma, q, T).epsilon(delta) = epsilon``
    (:func:`dpaudit.curves.calibration.dpsgd_noise_multiplier` on a coarser PLD grid, 1e-3;
    the claim of the resulting sigma is then recomputed exactly by the audit), rounded to 4
    decimals."""
    return round(dpsgd_noise_multiplier(epsilon, delta, sampling_rate, steps, xtol=xtol,
                                        rtol=1e-4), 4)
