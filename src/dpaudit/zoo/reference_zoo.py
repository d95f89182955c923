"""dpaudit's own simulators as zoo entries: known-correct mechanisms whose claim is their exact
guarantee (the false-violation rate of the zoo's procedure is measured on them, and on the
libraries' correct mechanisms, in tests/zoo/test_false_violations.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.mechanisms.simple import LaplaceMechanism, RandomizedResponse
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
    ]
