"""dpaudit's own simulators as zoo entries: known-correct mechanisms whose claim is their exact
guarantee (the false-violation rate of the zoo's procedure is measured on them, and on the
libraries' correct mechanisms, in tests/zoo/test_false_violations.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.mechanisms.simple import GaussianMechanism, LaplaceMechanism, RandomizedResponse
from dpaudit.zoo.entry import Identity, Negate, Pair, ZooEntry

__all__ = ["entries", "SimulatorRun"]

LIB = "dpaudit"
V = "value_distance"


@dataclass(frozen=True)
class SimulatorRun:
    """One run of a dpaudit simulator on the one-bit data set ``bit`` (its canary present or
    not), output = the released coordinate (randomized response: its symbol)."""

    mechanism: Any

    def __call__(self, bit: Any, rng: np.random.Generator) -> float:
        return float(self.mechanism.run(np.array([int(bit)], dtype=np.int8), rng)[0])


def entries() -> list[ZooEntry]:
    pair = (Pair("canary out vs in", 0, 1, V),)
    return [
        ZooEntry("dpaudit/LaplaceMechanism", LIB, SimulatorRun(LaplaceMechanism(1.0)), 1.0, 0.0,
                 pair, "simulator: bit + Lap(1/eps), exactly 1-DP", adjacency=V),
        ZooEntry("dpaudit/RandomizedResponse", LIB, SimulatorRun(RandomizedResponse(1.0, 0.0)),
                 1.0, 0.0, pair, "simulator: randomized response, exactly 1-DP",
                 scores=(Identity(), Negate()), adjacency=V),
        # rho-zCDP claims (the controls of the zCDP rows): N(b, 1) is exactly 1/2-zCDP; eps-RR
        # is eps^2/2-zCDP (Bun and Steinke 2016, Proposition 1.4)
        ZooEntry("dpaudit/GaussianMechanism-zCDP", LIB, SimulatorRun(GaussianMechanism(1.0)),
                 0.5, 0.0, pair, "simulator: bit + N(0, 1), exactly 1/2-zCDP", adjacency=V,
                 rho=0.5),
        ZooEntry("dpaudit/RandomizedResponse-zCDP", LIB,
                 SimulatorRun(RandomizedResponse(1.0, 0.0)), 0.5, 0.0, pair,
                 "simulator: randomized response at eps = 1, claim 1/2-zCDP",
                 scores=(Identity(), Negate()), adjacency=V, rho=0.5),
    ]
