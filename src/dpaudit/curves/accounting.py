"""DP-SGD guarantees from dp_accounting's privacy-loss-distribution (PLD) accountant.

``dpsgd_curve(noise_multiplier, sampling_rate, steps)`` composes ``steps`` Poisson-subsampled
Gaussian mechanisms (add/remove adjacency) with dp_accounting's PLD and exposes the result as
a Curve.  The privacy profile delta(eps) and epsilon(delta) are dp_accounting's own; the
trade-off function is recovered from the profile as
    f(alpha) = sup_{eps >= 0} max{0, 1 - delta(eps) - e^eps alpha, e^-eps (1 - delta(eps) - alpha)}
(Dong, Roth, Su 2022, Prop. 2.12), evaluated on a grid of eps.  A finite grid can only lower
f, i.e. the curve is never more private than the accountant says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import cached_property
from typing import Any

import numpy as np

from dpaudit.curves.base import Curve, as_alpha
from dpaudit.validation import (
    check_count,
    check_delta,
    check_nonnegative,
    check_positive,
    check_probability,
)

__all__ = ["PLDCurve", "dpsgd_curve"]


class PLDCurve(Curve):
    """A curve backed by a dp_accounting ``PrivacyLossDistribution``."""

    symmetric = True

    def __init__(self, pld: Any, params: Mapping[str, float], label: str = "PLDCurve") -> None:
        self.pld = pld
        self._params = dict(params)
        self._label = label

    @property
    def params(self) -> Mapping[str, float]:
        return self._params

    @property
    def name(self) -> str:
        return self._label

    def delta(self, epsilon: float) -> float:
        eps = check_nonnegative("epsilon", epsilon)
        return float(min(1.0, max(0.0, self.pld.get_delta_for_epsilon(eps))))

    def epsilon(self, delta: float) -> float:
        delta = check_delta(delta)
        if delta == 0.0 and self.delta(1e3) > 0:
            return math.inf
        return float(max(0.0, self.pld.get_epsilon_for_delta(delta)))

    @cached_property
    def _profile(self) -> tuple[np.ndarray, np.ndarray]:
        hi = 1.0
        while self.delta(hi) > 1e-14 and hi < 400:
            hi *= 1.5
        eps = np.concatenate([np.linspace(0.0, hi, 1500), [hi * 1.5, hi * 3]])
        deltas = np.asarray(self.pld.get_delta_for_epsilon(eps), dtype=float)
        return eps, np.clip(deltas, 0.0, 1.0)

    def tradeoff(self, alpha: Any) -> np.ndarray:
        a = as_alpha(alpha)
        eps, deltas = self._profile
        a2 = a.reshape(-1, 1)
        lines = np.maximum(1 - deltas - np.exp(eps) * a2, np.exp(-eps) * (1 - deltas - a2))
        return np.maximum(lines.max(axis=1), 0.0).reshape(a.shape)


#: most points of one discretised step's privacy-loss support (the interval is coarsened above).
MAX_PLD_POINTS = 300_000
#: composed guarantees beyond this (CLT) GDP mu are refused: epsilon(1e-5) would be above
#: ~5000, i.e. no privacy, and the composed loss support would need millions of points.
MAX_COMPOSED_MU = 100.0


def _loss_width(sigma: float, q: float, steps: int) -> tuple[float, float]:
    """(support width of the privacy loss to discretise, estimated GDP mu of the composition).

    One Gaussian step with sensitivity 1 has loss (2x - 1) / (2 sigma^2) on |x| <~ 8 sigma:
    width (16 sigma + 1) / sigma^2; subsampling only shrinks it.  The composition's mu is
    estimated by the DP-SGD central limit theorem, mu ~ q sqrt(T (e^{1/sigma^2} - 1)) (Bu, Dong,
    Long, Su 2020), capped by sqrt(T) / sigma (no subsampling); its loss spans ~mu^2/2 + 16 mu.
    """
    single = (16.0 * sigma + 1.0) / sigma**2
    inv = 1.0 / sigma**2
    clt = q * math.sqrt(steps) * (math.exp(0.5 * inv) if inv > 700 else math.sqrt(math.expm1(inv)))
    mu = min(clt, math.sqrt(steps) / sigma)
    return max(single, 0.5 * mu * mu + 16.0 * mu), mu


def dpsgd_curve(noise_multiplier: float, sampling_rate: float, steps: int, *,
                value_discretization_interval: float = 1e-4) -> PLDCurve:
    """The guarantee of DP-SGD: ``steps`` compositions of a Poisson-subsampled Gaussian with
    noise multiplier sigma (sensitivity 1) and sampling rate q, via dp_accounting's PLD.

    The discretisation is bounded so that extreme settings return (or fail) in seconds: the
    interval is ``value_discretization_interval`` unless the privacy-loss support would need
    more than :data:`MAX_PLD_POINTS` points, in which case it is coarsened to width /
    MAX_PLD_POINTS (dp_accounting's pessimistic discretisation: a coarser grid only makes the
    curve less private, never more).  Settings whose composition is beyond GDP mu =
    :data:`MAX_COMPOSED_MU` (epsilon in the thousands) are refused with a ValueError.
    Known limit: with a tiny sampling rate and more than ~1e7 steps dp_accounting's own
    composition takes minutes (its sparse loss representation).
    """
    sigma = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sampling_rate", sampling_rate, open_low=True)
    t = check_count("steps", steps, minimum=1)
    vdi = check_positive("value_discretization_interval", value_discretization_interval)
    width, mu = _loss_width(sigma, q, t)
    if mu > MAX_COMPOSED_MU:
        raise ValueError(
            f"dpsgd_curve: noise_multiplier={sigma:g}, sampling_rate={q:g}, steps={t} compose to "
            f"an estimated GDP mu of {mu:.3g} (> {MAX_COMPOSED_MU:g}; epsilon at delta = 1e-5 "
            f"would be in the thousands): no meaningful guarantee, and its privacy-loss "
            f"distribution cannot be discretised in bounded time; use more noise, a lower "
            f"sampling_rate or fewer steps")
    vdi = max(vdi, width / MAX_PLD_POINTS)
    # imported lazily: dp_accounting pulls in scipy.signal and takes seconds to import,
    # which every CLI start-up would otherwise pay.
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    base = pld_lib.from_gaussian_mechanism(
        standard_deviation=sigma, sampling_prob=q, value_discretization_interval=vdi)
    pld = base.self_compose(t) if t > 1 else base
    return PLDCurve(pld, {"noise_multiplier": sigma, "sampling_rate": q, "steps": float(t)},
                    label="DPSGDCurve")
