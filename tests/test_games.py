"""Audit games: regulations R1/R2 of Bits Transmission Def. 5 (BT notes §2.1), one-run (Algorithm 2)
and multi-run (Algorithm 1) channels, adjacencies, and the parallel black-box driver."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtr

from dpaudit.estimators.multi_run import multi_run
from dpaudit.games import (
    NULL,
    BlackBoxAudit,
    CanaryGenerator,
    partition_runs,
    run_trials,
    transmit,
)
from dpaudit.games.examples import gaussian_count_audit, svt_blackbox_audit
from dpaudit.mechanisms.svt import svt_audit

Z = 4.5  # binomial tolerance: two-sided false alarm 7e-6 per check


def onehot_sum(sigma: float, n: int):
    """Summation of one-hot records (record = canary index) plus N(0, sigma^2 I_n)."""

    def mech(dataset, rng):
        y = np.zeros(n)
        for rec in dataset:
            y[rec["index"]] += rec["value"]
        return y + sigma * rng.standard_normal(n)

    return mech


def coordinate_decoder(output, canaries):
    return np.asarray(output)[canaries] - 0.5


def test_partition_enforces_r1() -> None:
    assert [p.tolist() for p in partition_runs("multi", 3)] == [[0], [1], [2]]
    assert partition_runs("one", 3)[0].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="R1: canary 1 appears in 2 runs"):
        partition_runs([[0, 1], [1, 2]], 3)
    with pytest.raises(ValueError, match="R1: canary 2 is in no run"):
        partition_runs([[0, 1]], 3)
    with pytest.raises(ValueError, match="runs must contain canary indices"):
        partition_runs([[0, 1, 5]], 3)
    with pytest.raises(ValueError, match="runs must be"):
        partition_runs("all", 3)


def test_one_run_generic_game_matches_gaussian_bit_error() -> None:
    n, mu = 4000, 1.0
    gen = CanaryGenerator([{"index": i, "value": 1.0} for i in range(n)])
    assert gen.adjacency == "add_remove" and gen.record(0, False) is NULL
    tr = transmit(gen, onehot_sum(1 / mu, n), coordinate_decoder, 7, runs="one")
    e = float(ndtr(-mu / 2))
    assert abs(tr.errors / n - e) <= Z * math.sqrt(e * (1 - e) / n)
    obs = tr.observations
    assert obs.n == n and np.array_equal(obs.member, tr.bits)


def test_multi_run_calls_mechanism_once_per_canary_with_only_its_record() -> None:
    n = 12
    seen: list[list] = []

    def mech(dataset, rng):
        seen.append(list(dataset))
        return float(len([r for r in dataset if r != "base"])) + 0.1 * rng.standard_normal()

    gen = CanaryGenerator([f"c{i}" for i in range(n)], alternatives=None)
    bits = np.array([1, 0] * 6)
    tr = transmit(gen, mech, lambda out, idx: np.array([out - 0.5]), 3, bits=bits,
                  runs="multi", base_dataset=["base"])
    assert len(seen) == n
    for i, d in enumerate(seen):
        assert d[0] == "base"
        assert d[1:] == ([f"c{i}"] if bits[i] else [])  # R1: only its own canary, nulls dropped
    assert tr.errors == 0


def test_replace_one_adjacency_and_decoder_checks() -> None:
    gen = CanaryGenerator(["a1", "b1"], alternatives=["a0", "b0"])
    assert gen.adjacency == "replace_one"
    assert gen.dataset(np.array([True, False]), [0, 1]) == ["a1", "b0"]
    calls = []

    def decoder(out, idx):
        calls.append((out, idx.tolist()))  # R2: the decoder gets the output and indices only
        return np.ones(idx.size)

    transmit(gen, lambda d, rng: tuple(d), decoder, 0, bits=[1, 0])
    assert calls == [(("a1", "b0"), [0, 1])]
    with pytest.raises(ValueError, match="one score per canary"):
        transmit(gen, lambda d, rng: 0.0, lambda out, idx: [1.0], 0, bits=[1, 0])
    with pytest.raises(ValueError, match="finite"):
        transmit(gen, lambda d, rng: 0.0, lambda out, idx: [np.inf, 0.0], 0, bits=[1, 0])
    with pytest.raises(ValueError, match="bits must have one entry per canary"):
        transmit(gen, lambda d, rng: 0.0, lambda out, idx: [0.0, 0.0], 0, bits=[1, 0, 1])
    with pytest.raises(ValueError, match="alternatives must have one record per canary"):
        CanaryGenerator(["a"], alternatives=["x", "y"])
    with pytest.raises(ValueError, match="canaries"):
        CanaryGenerator([])


@pytest.mark.slow
def test_parallel_driver_reproducible_across_worker_counts() -> None:
    audit = gaussian_count_audit(sigma=1.0)
    a = run_trials(audit, 3000, seed=11, workers=1, progress=False)
    b = run_trials(audit, 3000, seed=11, workers=2, progress=False)
    c = run_trials(audit, 3000, seed=11, workers=2, chunk_size=77, progress=False)
    for o in (b, c):
        np.testing.assert_array_equal(a.member, o.member)
        np.testing.assert_array_equal(a.score, o.score)
    d = run_trials(audit, 3000, seed=12, workers=1, progress=False)
    assert not np.array_equal(a.score, d.score)
    # the Gaussian count is 1-GDP: MAP error Phi(-1/2) (binomial tolerance Z sd)
    err = np.mean((a.score > 0) != a.member)
    e = float(ndtr(-0.5))
    assert abs(err - e) <= Z * math.sqrt(e * (1 - e) / 3000)


def test_blackbox_bad_input() -> None:
    audit = BlackBoxAudit(lambda d, rng: 0.0, lambda rng: ([], [1]), lambda out: out)
    with pytest.raises(ValueError, match="picklable"):
        run_trials(audit, 10, seed=0, workers=2, progress=False)
    obs = run_trials(audit, 10, seed=0, workers=1, progress=False)  # in-process is fine
    assert obs.n == 10
    with pytest.raises(ValueError, match="neighbours"):
        run_trials(BlackBoxAudit(lambda d, rng: 0.0, lambda rng: [1], float), 4, seed=0,
                   workers=1, progress=False)
    with pytest.raises(ValueError, match="non-finite"):
        run_trials(BlackBoxAudit(lambda d, rng: math.nan, lambda rng: ([], [1]), float), 4,
                   seed=0, workers=1, progress=False)
    with pytest.raises(ValueError, match="trials"):
        run_trials(audit, 1, seed=0, workers=1)
    with pytest.raises(ValueError, match="workers"):
        run_trials(audit, 10, seed=0, workers=0)
    with pytest.raises(ValueError, match="mechanism must be callable"):
        BlackBoxAudit(1, lambda rng: ([], []), float)
    with pytest.raises(ValueError, match="adjacency"):
        BlackBoxAudit(float, float, float, adjacency="swap")


@pytest.mark.slow
def test_blackbox_svt_equals_vectorised_game_in_law() -> None:
    # same game, trial-by-trial through the driver: detection of alg5 in both
    obs = run_trials(svt_blackbox_audit("alg5", queries=60), 4000, seed=3, workers=2,
                     progress=False)
    r = multi_run(obs.member, obs.score, delta=0.0, confidence=0.95)
    assert r.epsilon > 1.0
    vec = svt_audit("alg5", 4000, 3, queries=60)
    r2 = multi_run(vec.member, vec.score, delta=0.0, confidence=0.95)
    assert r2.epsilon > 1.0
