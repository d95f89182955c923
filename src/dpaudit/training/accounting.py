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
from typing import Any

from dpaudit.curves import dpsgd_curve
from dpaudit.curves.calibration import dpsgd_noise_multiplier
from dpaudit.validation import check_count, check_delta, check_positive, check_probability

__all__ = ["opacus_epsilon", "claimed_epsilon", "sigma_for_epsilon", "accountant_epsilon",
           "PRV_MAX_POINTS"]

#: the largest discretisation (points of the privacy-loss grid) for which Opacus's PRV
#: accountant is asked: 2^25 points, 256 MiB per float64 array (it holds several)
PRV_MAX_POINTS = 2 ** 25


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


def accountant_epsilon(accountant: Any, delta: float) -> tuple[float | None, str | None]:
    """The user's accountant's epsilon at ``delta``, or None and the reason it cannot answer.

    ``accountant`` is an Opacus ``PrivacyEngine`` or accountant (``get_epsilon``).  It is
    asked only where it can answer: a history with a step of sigma <= 0 (a step without
    noise: its epsilon is infinite for delta < q) is not asked; Opacus's PRV accountant
    (Gopi, Lee, Wutschitz 2021) is asked only when its discretisation
    (``PRVAccountant._get_domain``: mesh eps_error / sqrt(T log(12 / delta_error) / 2) on a
    domain that widens as sigma falls) has at most :data:`PRV_MAX_POINTS` points -- a step
    with sigma = 0.01 asks for tens of GiB; any other failure of the accountant is reported,
    never raised (the audit goes on)."""
    acc = getattr(accountant, "accountant", accountant)  # PrivacyEngine -> accountant
    if not hasattr(acc, "get_epsilon"):
        raise ValueError("accountant must be an Opacus PrivacyEngine or accountant (with "
                         "get_epsilon)")
    history = list(getattr(acc, "history", []) or [])
    sigmas = [float(h[0]) for h in history if isinstance(h, tuple) and len(h) == 3]
    if any(not s > 0 for s in sigmas):
        return None, ("the accountant was not asked: its history has steps without noise "
                      "(sigma = 0), whose epsilon is infinite")
    name = getattr(acc, "mechanism", lambda: "")()
    if name == "prv" and history:
        points = _prv_points(acc, delta)
        if points is None or points > PRV_MAX_POINTS:
            size = ("" if points is None else
                    f" ({points:,} points, {points * 8 / 2**30:.1f} GiB per array)")
            return None, (f"Opacus's PRV accountant cannot answer for this history (smallest "
                          f"sigma {min(sigmas):g}): its discretisation is too large{size}; "
                          "an RDP accountant (PrivacyEngine(accountant='rdp')) can")
    try:
        return float(acc.get_epsilon(delta=delta)), None
    except (Exception, MemoryError) as err:  # noqa: BLE001 -- the audit must go on
        return None, f"the accountant failed: {type(err).__name__}: {err}"[:300]


def _prv_points(acc: Any, delta: float) -> int | None:
    """Points of the PRV accountant's discretisation at its default errors (as
    ``PRVAccountant.get_epsilon`` sets them), or None if it cannot be computed."""
    try:
        from opacus.accountants.analysis.prv import PoissonSubsampledGaussianPRV

        prvs = [PoissonSubsampledGaussianPRV(q, s) for s, q, _ in acc.history]
        domain = acc._get_domain(prvs=prvs, num_self_compositions=[t for _, _, t in acc.history],
                                 eps_error=0.01, delta_error=delta / 1000)
        return int(domain.size)
    except Exception:  # noqa: BLE001 -- a domain that cannot even be sized
        return None
