"""Deliberately flawed implementations, each with its claimed and its true guarantee.

=====================  ==========================================  =============================
flaw                   claimed                                     true
=====================  ==========================================  =============================
wrong_sensitivity      Gaussian: GaussianDP(mu) for sensitivity 1  GaussianDP(k mu): a record
                       Laplace:  LaplaceDP(eps)                    moves the query by k (e.g. a
                                                                   value clipped to [-1, 1] under
                                                                   replace-one, k = 2);
                                                                   LaplaceDP(k eps)
backprop_clipping      dpsgd_curve(sigma, q, T)                    dpsgd_curve(sigma/|B|, q, T)
(BT notes §6.5)        (clip per example, noise sigma C / |B|)     (clips grad/|B|, so one example
                                                                   moves the sum by C)
reused_noise           dpsgd_curve(sigma, q, T)                    reused_noise_curve: the bit is
                                                                   revealed w.p. 1-q^T-(1-q)^T
SVT Algs. 3-6          eps-DP                                      see dpaudit.mechanisms.svt
(Lyu, Su, Li 2017)
=====================  ==========================================  =============================

Each is detected by a one-run audit (the DP-SGD and sensitivity flaws, via
:meth:`SimulatedMechanism.simulate` and ``dpaudit.audit_one_run``) or a multi-run audit (SVT,
via :func:`dpaudit.mechanisms.svt.svt_audit`); see tests/test_flawed.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.curves import GaussianDP, LaplaceDP
from dpaudit.curves.base import Curve
from dpaudit.mechanisms.base import SimulatedMechanism
from dpaudit.mechanisms.dpsgd import DPSGDSimulator
from dpaudit.validation import check_choice, check_positive

__all__ = ["WrongSensitivityMechanism", "backprop_clipping_dpsgd", "reused_noise_dpsgd",
           "FLAWS"]

#: flaw names accepted by the CLI, with the mechanisms they apply to.
FLAWS: dict[str, tuple[str, ...]] = {
    "wrong_sensitivity": ("gaussian", "laplace"),
    "backprop_clipping": ("dpsgd",),
    "reused_noise": ("dpsgd",),
}


@dataclass(frozen=True, repr=False)
class WrongSensitivityMechanism(SimulatedMechanism):
    """Noise calibrated to sensitivity 1 while a record can move the query by ``sensitivity``.

    The canary is a record of maximal magnitude, so coordinate i of the output is
    y_i = k b_i + noise, with noise N(0, 1/mu^2) (Gaussian) or Lap(1/eps) (Laplace).  Claimed:
    GaussianDP(mu) / LaplaceDP(eps).  True: GaussianDP(k mu) / LaplaceDP(k eps).
    Decoder: y_i - k/2 (the MAP threshold).
    """

    noise: str = "gaussian"
    privacy: float = 1.0
    sensitivity: float = 2.0
    flaw = "wrong_sensitivity"

    def __post_init__(self) -> None:
        check_choice("noise", self.noise, ("gaussian", "laplace"))
        check_positive("privacy", self.privacy)
        check_positive("sensitivity", self.sensitivity)

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"{self.noise}[wrong_sensitivity]"

    @property
    def params(self) -> Mapping[str, Any]:
        key = "mu" if self.noise == "gaussian" else "eps"
        return {key: self.privacy, "sensitivity": self.sensitivity}

    def _curve(self, scale: float) -> Curve:
        p = self.privacy * scale
        return GaussianDP(p) if self.noise == "gaussian" else LaplaceDP(p)

    @property
    def claimed_curve(self) -> Curve:
        return self._curve(1.0)

    @property
    def curve(self) -> Curve:
        return self._curve(self.sensitivity)

    def run(self, bits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.noise == "gaussian":
            noise = rng.standard_normal(bits.size) / self.privacy
        else:
            noise = rng.laplace(0.0, 1.0 / self.privacy, bits.size)
        return self.sensitivity * bits.astype(float) + noise

    def score(self, output: np.ndarray) -> np.ndarray:
        return np.asarray(output, dtype=float) - self.sensitivity / 2


def backprop_clipping_dpsgd(noise_multiplier: float = 1.0, sampling_rate: float = 0.01,
                            steps: int = 1000, batch_size: int = 16, **kwargs: Any
                            ) -> DPSGDSimulator:
    """DP-SGD with the "backpropagation clipping" bug (BT notes §6.5): clips grad/|B| per
    example, so the true noise multiplier is sigma/|B| while sigma is claimed."""
    return DPSGDSimulator(noise_multiplier=noise_multiplier, sampling_rate=sampling_rate,
                          steps=steps, flaw="backprop_clipping", batch_size=batch_size, **kwargs)


def reused_noise_dpsgd(noise_multiplier: float = 1.0, sampling_rate: float = 0.01,
                       steps: int = 1000, **kwargs: Any) -> DPSGDSimulator:
    """DP-SGD whose noise generator is re-seeded identically at every step (same noise)."""
    return DPSGDSimulator(noise_multiplier=noise_multiplier, sampling_rate=sampling_rate,
                          steps=steps, flaw="reused_noise", **kwargs)
