"""Black-box wrappers of the project's simulated mechanisms for the assert_dp tests: the
secret is one canary bit, D0 = [0] and D1 = [1], and the output is the simulator's channel
output for that bit (dpaudit.mechanisms: run() and score())."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class SimulatorMechanism:
    sim: Any

    def __call__(self, dataset: np.ndarray, rng: np.random.Generator) -> Any:
        return self.sim.run(dataset, rng)


@dataclass(frozen=True)
class OneBitNeighbours:
    def __call__(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(1, dtype=bool), np.ones(1, dtype=bool)


@dataclass(frozen=True)
class SimulatorScore:
    sim: Any

    def __call__(self, output: Any) -> float:
        return float(self.sim.score(output)[0])


def blackbox(sim: Any) -> tuple[SimulatorMechanism, OneBitNeighbours, SimulatorScore]:
    return SimulatorMechanism(sim), OneBitNeighbours(), SimulatorScore(sim)
