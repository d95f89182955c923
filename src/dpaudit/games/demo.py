"""The data of ``dpaudit demo``: a multi-run audit of a Gaussian sum query calibrated to a claim
(correct, or with its noise too small), and the sizes of the real-training part.

The one-run DP-SGD part is :func:`dpaudit.games.audit.demo_dpsgd_run`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpaudit.curves.calibration import gdp_mu
from dpaudit.estimators.multi_run import multi_run
from dpaudit.results import AuditResult

__all__ = ["gaussian_mu_for_epsilon", "multi_run_demo_data", "multi_run_demo", "TRAINING_DEMO"]


def gaussian_mu_for_epsilon(epsilon: float, delta: float) -> float:
    """mu of the Gaussian mechanism that is exactly (epsilon, delta)-DP
    (:func:`dpaudit.curves.calibration.gdp_mu`)."""
    return gdp_mu(epsilon, delta)


def multi_run_demo_data(claimed_epsilon: float = 2.0, delta: float = 1e-5,
                        trials: int = 100_000, noise_scale_bug: float = 1.0, seed: int = 0
                        ) -> tuple[float, np.ndarray, np.ndarray]:
    """(mu, member, score) of :func:`multi_run_demo`."""
    mu = gaussian_mu_for_epsilon(claimed_epsilon, delta)
    rng = np.random.default_rng(seed)
    member = rng.random(trials) < 0.5
    score = member * 1.0 + rng.normal(0.0, noise_scale_bug / mu, trials)
    return mu, member, score


def multi_run_demo(claimed_epsilon: float = 2.0, delta: float = 1e-5, trials: int = 100_000,
                   noise_scale_bug: float = 1.0, seed: int = 0) -> tuple[float, AuditResult]:
    """Multi-run audit of a Gaussian sum query (sensitivity 1) calibrated to the claim.

    ``noise_scale_bug`` < 1 simulates noise calibrated to a too-small sensitivity: the
    effective mu is mu_claimed / noise_scale_bug.  Each trial trains on D0 or D1 (one fair
    coin per trial) and the attacker scores the released value itself.
    """
    mu, member, score = multi_run_demo_data(claimed_epsilon, delta, trials, noise_scale_bug,
                                            seed)
    return mu, multi_run(member, score, delta=delta, confidence=0.95)


#: the real-training part of the demo (about 15 s per run on a free core).
TRAINING_DEMO: dict[str, Any] = {"canaries": 300, "hidden": 128, "steps": 150,
                                 "sampling_rate": 0.05, "noise_multiplier": 1.0}
