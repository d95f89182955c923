"""Picklable audits for the trial-engine tests (imported by worker processes and by
subprocess drivers: keep it dependency-free beyond dpaudit)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.games.blackbox import BlackBoxAudit
from dpaudit.games.examples import CountNeighbours, GaussianCount, identity_score


@dataclass(frozen=True)
class SlowGaussianCount:
    """GaussianCount that sleeps ``pause`` seconds per run (stands in for training)."""

    sigma: float = 1.0
    pause: float = 0.002

    def __call__(self, dataset: Any, rng: np.random.Generator) -> float:
        time.sleep(self.pause)
        return float(len(dataset) + self.sigma * rng.standard_normal())


@dataclass(frozen=True)
class FlakyMechanism:
    """Raises when its first draw is below ``rate`` (deterministic per trial)."""

    rate: float = 0.05

    def __call__(self, dataset: Any, rng: np.random.Generator) -> float:
        u = rng.random()
        if u < self.rate:
            raise RuntimeError(f"simulated crash (u={u:.4f})")
        return float(len(dataset) + rng.standard_normal())


@dataclass(frozen=True)
class RandomizedResponse:
    """eps-DP randomised response on the canary bit: a tight null for coverage tests."""

    epsilon: float = 1.0

    def __call__(self, dataset: Any, rng: np.random.Generator) -> float:
        bit = float(len(dataset) > 0 and dataset[-1] == "canary")
        keep = rng.random() < np.exp(self.epsilon) / (1 + np.exp(self.epsilon))
        return bit if keep else 1.0 - bit


SLOW = BlackBoxAudit(SlowGaussianCount(1.0, 0.002), CountNeighbours(10), identity_score)
FLAKY = BlackBoxAudit(FlakyMechanism(0.05), CountNeighbours(10), identity_score)
FAST = BlackBoxAudit(GaussianCount(1.0), CountNeighbours(10), identity_score)
FLAWED = BlackBoxAudit(GaussianCount(0.5), CountNeighbours(10), identity_score)
RR = BlackBoxAudit(RandomizedResponse(1.0), CountNeighbours(3), identity_score)
SLOWER = BlackBoxAudit(SlowGaussianCount(1.0, 0.01), CountNeighbours(10), identity_score)
SLOWER_NO_PAUSE = BlackBoxAudit(SlowGaussianCount(1.0, 0.0), CountNeighbours(10), identity_score)
