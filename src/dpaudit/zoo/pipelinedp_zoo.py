"""PipelineDP (pure Python on top of PyDP's noise): ``DPEngine.aggregate`` on the local backend,
one public partition, audited black-box.

Noise is drawn by PyDP's compiled mechanisms (``randomness="library"``).  Claims: epsilon-DP
for one privacy unit (add/remove) with max_partitions_contributed =
max_contributions_per_partition = 1, values clamped to [min_value, max_value].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.zoo.entry import Pair, ZooEntry

__all__ = ["entries"]

LIB = "pipeline-dp"
A = "add_remove"


def _pid(r: Any) -> Any:
    return r[0]


def _partition(r: Any) -> int:
    return 0


def _value(r: Any) -> float:
    return r[1]


@dataclass(frozen=True)
class Aggregate:
    """One DPEngine.aggregate call with ``metric`` over records (privacy id, value)."""

    metric: str
    epsilon: float
    bounds: tuple[float, float] = (0.0, 10.0)

    def __call__(self, data: Any, rng: np.random.Generator) -> float:
        import pipeline_dp

        records = [(i, float(v)) for i, v in enumerate(data)]
        ba = pipeline_dp.NaiveBudgetAccountant(total_epsilon=self.epsilon, total_delta=0.0)
        engine = pipeline_dp.DPEngine(ba, pipeline_dp.LocalBackend())
        params = pipeline_dp.AggregateParams(
            noise_kind=pipeline_dp.NoiseKind.LAPLACE,
            metrics=[getattr(pipeline_dp.Metrics, self.metric)],
            max_partitions_contributed=1, max_contributions_per_partition=1,
            min_value=self.bounds[0], max_value=self.bounds[1])
        ext = pipeline_dp.DataExtractors(privacy_id_extractor=_pid,
                                         partition_extractor=_partition,
                                         value_extractor=_value)
        res = engine.aggregate(records, params, ext, public_partitions=[0])
        ba.compute_budgets()
        out = list(res)
        return float(getattr(out[0][1], self.metric.lower()))


def entries() -> list[ZooEntry]:
    eps = 1.0
    pairs = (Pair("[0] vs [0, 10]", (0.0,), (0.0, 10.0), A),
             Pair("[5] vs [5, 1e9] (beyond the bound)", (5.0,), (5.0, 1e9), A),
             Pair("[0, 0] vs [0, 0, 10]", (0.0, 0.0), (0.0, 0.0, 10.0), A))
    kw = {"randomness": "library", "adjacency": A, "trials_scale": 0.5}
    return [
        ZooEntry("pipeline-dp/COUNT", LIB, Aggregate("COUNT", eps), eps, 0.0, pairs,
                 "DPEngine.aggregate COUNT, public partition", **kw),
        ZooEntry("pipeline-dp/SUM", LIB, Aggregate("SUM", eps), eps, 0.0, pairs,
                 "DPEngine.aggregate SUM, bounds [0, 10], public partition", **kw),
        ZooEntry("pipeline-dp/MEAN", LIB, Aggregate("MEAN", eps), eps, 0.0, pairs,
                 "DPEngine.aggregate MEAN, bounds [0, 10], public partition", **kw),
        ZooEntry("pipeline-dp/VARIANCE", LIB, Aggregate("VARIANCE", eps), eps, 0.0, pairs,
                 "DPEngine.aggregate VARIANCE, bounds [0, 10], public partition", **kw),
    ]
