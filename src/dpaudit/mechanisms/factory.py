"""Simulated mechanisms by name: the factory behind ``dpaudit simulate MECHANISM [--flawed F]``.

``build_mechanism("gaussian", None, mu=1.0, ...)`` returns the simulator of
:mod:`dpaudit.mechanisms` named by the command line (and its flawed variant, see
:data:`dpaudit.mechanisms.flawed.FLAWS`).  The Sparse Vector Technique (``"svt"``) is audited by
:func:`dpaudit.mechanisms.svt.svt_audit` and has no one-run simulator here.
"""

from __future__ import annotations

from dpaudit.mechanisms.base import SimulatedMechanism
from dpaudit.mechanisms.dpsgd import DPSGDSimulator
from dpaudit.mechanisms.flawed import FLAWS, WrongSensitivityMechanism
from dpaudit.mechanisms.simple import (
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
    SubsampledGaussianMechanism,
)
from dpaudit.validation import check_choice

__all__ = ["MECHANISM_NAMES", "build_mechanism"]

MECHANISM_NAMES = ("gaussian", "laplace", "rr", "subsampled_gaussian", "dpsgd", "svt")


def build_mechanism(name: str, flawed: str | None, *, mu: float, eps: float, rr_delta: float,
                    q: float, sensitivity: float, noise_multiplier: float,
                    sampling_rate: float, steps: int, batch_size: int, threat: str,
                    score: str) -> SimulatedMechanism:
    """The simulator named ``name`` (optionally with flaw ``flawed``); ValueError otherwise."""
    check_choice("MECHANISM", name, MECHANISM_NAMES)
    if flawed is not None:
        allowed = [f for f, ms in FLAWS.items() if name in ms]
        if flawed not in allowed:
            raise ValueError(f"--flawed for {name} must be one of "
                             f"{', '.join(allowed) or '(none)'}; got {flawed!r}")
    if flawed == "wrong_sensitivity":
        return WrongSensitivityMechanism(name, mu if name == "gaussian" else eps, sensitivity)
    if name == "gaussian":
        return GaussianMechanism(mu)
    if name == "laplace":
        return LaplaceMechanism(eps)
    if name == "rr":
        return RandomizedResponse(eps, rr_delta)
    if name == "subsampled_gaussian":
        return SubsampledGaussianMechanism(mu, q)
    if threat == "last_iterate":
        score = "sum"
    return DPSGDSimulator(noise_multiplier=noise_multiplier, sampling_rate=sampling_rate,
                          steps=steps, threat=threat, score_kind=score, flaw=flawed,
                          batch_size=batch_size if flawed == "backprop_clipping" else 1)
