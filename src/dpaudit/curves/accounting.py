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


def dpsgd_curve(noise_multiplier: float, sampling_rate: float, steps: int, *,
                value_discretization_interval: float = 1e-4) -> PLDCurve:
    """The guarantee of DP-SGD: ``steps`` compositions of a Poisson-subsampled Gaussian with
    noise multiplier sigma (sensitivity 1) and sampling rate q, via dp_accounting's PLD."""
    sigma = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sampling_rate", sampling_rate, open_low=True)
    t = check_count("steps", steps, minimum=1)
    # imported lazily: dp_accounting pulls in scipy.signal and takes seconds to import,
    # which every CLI start-up would otherwise pay.
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    base = pld_lib.from_gaussian_mechanism(
        standard_deviation=sigma, sampling_prob=q,
        value_discretization_interval=value_discretization_interval)
    pld = base.self_compose(t) if t > 1 else base
    return PLDCurve(pld, {"noise_multiplier": sigma, "sampling_rate": q, "steps": float(t)},
                    label="DPSGDCurve")
