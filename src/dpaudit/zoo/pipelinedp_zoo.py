"""PipelineDP (pure Python on top of PyDP's noise): ``DPEngine.aggregate`` on the local backend,
one public partition, audited black-box.

Noise is drawn by PyDP's compiled mechanisms (``randomness="library"``).  Claims: epsilon-DP
for one privacy unit (add/remove) with max_partitions_contributed =
max_contributions_per_partition = 1, values clamped to [min_value, max_value].

VARIANCE with bounds [-a, a] (``VARIANCE-symmetric``): ``compute_dp_var`` splits epsilon in three
(count, normalised sum, normalised sum of squares).  The accumulator's sum of squares is
sum (x - m)^2 with m the middle of the bounds (``VarianceCombiner.create_accumulator``), each
term in [0, ((U - L) / 2)^2], but its noise is calibrated to |s_mid - s_min| of the interval of
the raw squares [s_min, s_max] = compute_squares_interval(L, U): for [-a, a] that is a^2 / 2,
while adding one record at a moves the sum by a^2.  The released (count, mean, variance)
determines the three noisy values (when the noisy count is >= 1), so adding one record at a
costs eps/3 + eps/3 + 2 eps/3 = 4 eps / 3.  The score :class:`JointTail` tests the event where
all three noisy values exceed their values on the larger data set; its likelihood ratio is
e^(4 eps / 3) (independent Laplace tails).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.zoo.entry import Cause, Coordinate, Pair, ZooEntry

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

        out = _aggregate(data, self.epsilon, self.bounds,
                         [getattr(pipeline_dp.Metrics, self.metric)])
        return float(getattr(out, self.metric.lower()))


@dataclass(frozen=True)
class VarianceParts:
    """One DPEngine.aggregate call with metrics VARIANCE, COUNT and MEAN (one Variance
    mechanism, one budget); output = (noisy count, mean, variance)."""

    epsilon: float
    bounds: tuple[float, float]

    def __call__(self, data: Any, rng: np.random.Generator) -> np.ndarray:
        import pipeline_dp

        m = pipeline_dp.Metrics
        out = _aggregate(data, self.epsilon, self.bounds, [m.VARIANCE, m.COUNT, m.MEAN])
        return np.array([out.count, out.mean, out.variance], dtype=float)


@dataclass(frozen=True)
class JointTail:
    """score = min(c - count, s1 / total - 1, s2 / squares - 1) on the noisy count c, normalised
    sum s1 and normalised sum of squares s2 recovered from (count, mean, variance):
    s1 = (mean - middle) max(1, c), s2 = (variance + (mean - middle)^2) max(1, c)
    (PipelineDP's ``compute_dp_var``; a post-processing of the output).  ``count``,
    ``total``, ``squares`` are the three exact values on the larger data set."""

    count: float
    total: float
    squares: float
    middle: float = 0.0

    def __call__(self, output: Any) -> float:
        c, mean, var = (float(v) for v in np.ravel(np.asarray(output, dtype=float))[:3])
        cc = max(1.0, c)
        s1 = (mean - self.middle) * cc
        s2 = (var + (mean - self.middle) ** 2) * cc
        v = min(c - self.count, s1 / self.total - 1.0, s2 / self.squares - 1.0)
        return v if np.isfinite(v) else -1.0e308

    def __str__(self) -> str:
        return (f"min(count - {self.count:g}, sum / {self.total:g} - 1, "
                f"sum of squares / {self.squares:g} - 1)")


_VAR_CAUSE = Cause(
    module="pipeline_dp.dp_computations",
    snippet="dp_count, normalized_sum_squares, squares_min_value, squares_max_value,",
    explanation="compute_dp_var noises the sum of (x - middle)^2 with linf sensitivity "
    "|s_mid - s_min| of compute_squares_interval(min_value, max_value), the interval of the "
    "raw squares: a^2 / 2 for bounds [-a, a], while one record moves that sum by a^2 "
    "(each term lies in [0, ((max - min) / 2)^2]); the release spends up to 4 eps / 3",
    reference="found by this audit (no report in OpenMined/PipelineDP's tracker as far as "
    "searched); introduced by PR #301 (commit 49be24b, Jul 2022: the accumulator started to "
    "sum normalised squares, the sensitivity stayed that of the raw squares); unchanged at "
    "the repository's HEAD (ec6e56e, Feb 2026)",
    known=False)


def entries() -> list[ZooEntry]:
    eps = 1.0
    pairs = (Pair("[0] vs [0, 10]", (0.0,), (0.0, 10.0), A),
             Pair("[5] vs [5, 1e9] (beyond the bound)", (5.0,), (5.0, 1e9), A),
             Pair("[0, 0] vs [0, 0, 10]", (0.0, 0.0), (0.0, 0.0, 10.0), A))
    kw: dict[str, Any] = {"randomness": "library", "adjacency": A, "trials_scale": 0.5}
    return [
        ZooEntry("pipeline-dp/COUNT", LIB, Aggregate("COUNT", eps), eps, 0.0, pairs,
                 "DPEngine.aggregate COUNT, public partition", **kw),
        ZooEntry("pipeline-dp/SUM", LIB, Aggregate("SUM", eps), eps, 0.0, pairs,
                 "DPEngine.aggregate SUM, bounds [0, 10], public partition", **kw),
        ZooEntry("pipeline-dp/MEAN", LIB, Aggregate("MEAN", eps), eps, 0.0, pairs,
                 "DPEngine.aggregate MEAN, bounds [0, 10], public partition", **kw),
        ZooEntry("pipeline-dp/VARIANCE", LIB, Aggregate("VARIANCE", eps), eps, 0.0, pairs,
                 "DPEngine.aggregate VARIANCE, bounds [0, 10], public partition", **kw),
        # 60000 final trials: the true loss is 4 for the claim 3, and the joint tail has
        # probability 1/8 on the larger data set, e^-4 / 8 on the smaller one.
        ZooEntry("pipeline-dp/VARIANCE-symmetric", LIB, VarianceParts(3.0, (-10.0, 10.0)), 3.0,
                 0.0, (Pair("[0] vs [0, 10]", (0.0,), (0.0, 10.0), A),),
                 "DPEngine.aggregate VARIANCE (+ COUNT, MEAN), bounds [-10, 10], epsilon 3, "
                 "public partition",
                 scores=(JointTail(2.0, 10.0, 100.0), Coordinate(2)), cause=_VAR_CAUSE,
                 randomness="library", adjacency=A, trials_scale=15.0),
        # The same release and score on bounds [0, 10], where the terms (x - 5)^2 <= 25 lie
        # within the declared 50: correct (a control for false violations).
        ZooEntry("pipeline-dp/VARIANCE-control", LIB, VarianceParts(3.0, (0.0, 10.0)), 3.0,
                 0.0, (Pair("[10] vs [10, 10]", (10.0,), (10.0, 10.0), A),),
                 "DPEngine.aggregate VARIANCE (+ COUNT, MEAN), bounds [0, 10], epsilon 3, "
                 "public partition (control)",
                 scores=(JointTail(2.0, 10.0, 50.0, 5.0), Coordinate(2)),
                 randomness="library", adjacency=A),
    ]


def _aggregate(data: Any, epsilon: float, bounds: tuple[float, float], metrics: list[Any]
               ) -> Any:
    """One ``DPEngine.aggregate`` call (Laplace noise, one record per privacy id, the one
    public partition 0, one budget of ``epsilon``): the partition's metrics tuple."""
    import pipeline_dp

    records = [(i, float(v)) for i, v in enumerate(data)]
    ba = pipeline_dp.NaiveBudgetAccountant(total_epsilon=epsilon, total_delta=0.0)
    engine = pipeline_dp.DPEngine(ba, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.LAPLACE, metrics=metrics,
        max_partitions_contributed=1, max_contributions_per_partition=1,
        min_value=bounds[0], max_value=bounds[1])
    ext = pipeline_dp.DataExtractors(privacy_id_extractor=_pid,
                                     partition_extractor=_partition,
                                     value_extractor=_value)
    res = engine.aggregate(records, params, ext, public_partitions=[0])
    ba.compute_budgets()
    return list(res)[0][1]
