"""Simulated mechanisms (each declaring its true privacy curve), the DP-SGD white-box simulator,
deliberately flawed implementations and the Sparse Vector Technique variants."""

from dpaudit.mechanisms.base import SimulatedMechanism, as_rng, draw_bits
from dpaudit.mechanisms.dpsgd import DPSGDSimulator, last_iterate_curve, reused_noise_curve
from dpaudit.mechanisms.flawed import (
    FLAWS,
    WrongSensitivityMechanism,
    backprop_clipping_dpsgd,
    reused_noise_dpsgd,
)
from dpaudit.mechanisms.simple import (
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
    SubsampledGaussianMechanism,
)
from dpaudit.mechanisms.svt import SVT_VARIANTS, SparseVector, svt_audit

__all__ = [
    "SimulatedMechanism", "as_rng", "draw_bits", "GaussianMechanism", "LaplaceMechanism",
    "RandomizedResponse", "SubsampledGaussianMechanism", "DPSGDSimulator", "last_iterate_curve",
    "reused_noise_curve", "WrongSensitivityMechanism", "backprop_clipping_dpsgd",
    "reused_noise_dpsgd", "FLAWS", "SparseVector", "SVT_VARIANTS", "svt_audit",
]
