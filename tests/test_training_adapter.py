"""One training audit for every framework (``dpaudit.training.adapter``): a minimal NumPy
DP-SGD "trainer" audited through the trainer-adapter interface (``LoopCanaries``: plant after
clipping, read the released step), the same one result as Opacus and JAX (``TrainAudit``,
``TrainingFacts``), the released-noise check catching a loop that adds less noise than it
claims, and the adapters of the framework runs satisfying the interface."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.canaries import RunFacts, dirac_plan
from dpaudit.outcome import Audit
from dpaudit.training.adapter import (
    LoopCanaries,
    OpacusAdapter,
    RunAdapter,
    TrainerAdapter,
    audit_adapter,
)
from dpaudit.training.facts import TrainingFacts

D, N_REAL, CANARIES, C = 240, 400, 200, 1.0
SIGMA, Q, STEPS = 1.0, 0.5, 20


def _numpy_dpsgd(seed: int, *, true_sigma: float = SIGMA) -> LoopCanaries:
    """Linear regression trained by DP-SGD in NumPy: Poisson batches, per-example clipping
    to C, the canaries planted into the clipped sum, Gaussian noise of ``true_sigma`` C, the
    released sum read (the loop tells the canaries it used ``SIGMA``, the claim's)."""
    rng = np.random.default_rng(seed)
    bits = rng.random(CANARIES) < 0.5
    # canaries on the last 200 coordinates, which the real data leaves at zero
    plan = dirac_plan(np.arange(D - CANARIES, D), bits, sampling_rate=Q)
    can = LoopCanaries(plan, dimension=D, max_grad_norm=C, seed=seed)
    x = np.zeros((N_REAL, D))
    x[:, :D - CANARIES] = rng.normal(size=(N_REAL, D - CANARIES))
    y = x @ rng.normal(size=D) + rng.normal(size=N_REAL)
    theta = np.zeros(D)
    for _ in range(STEPS):
        batch = rng.random(N_REAL) < Q
        g = (x[batch] @ theta - y[batch])[:, None] * x[batch]          # per-example grads
        norm = np.linalg.norm(g, axis=1, keepdims=True)
        clipped = (g * np.minimum(1.0, C / np.maximum(norm, 1e-12))).sum(axis=0)
        released = can.plant(clipped) + rng.normal(scale=true_sigma * C, size=D)
        can.release(released, noise_multiplier=SIGMA, batch_size=int(batch.sum()))
        theta -= 0.1 * released / (Q * N_REAL)
    return can


@pytest.mark.slow
def test_a_numpy_trainer_is_audited_through_the_adapter() -> None:
    can = _numpy_dpsgd(0)
    assert isinstance(can, TrainerAdapter) and can.steps == STEPS
    audit = audit_adapter(can, noise_multiplier=SIGMA, sampling_rate=Q, steps=STEPS,
                          max_grad_norm=C, dataset_size=N_REAL)
    # the one result of every training audit, its facts the one TrainingFacts
    assert isinstance(audit, Audit) and isinstance(audit.facts, TrainingFacts)
    assert audit.facts.framework == "own" and audit.threat == "white_box"
    assert audit.claim is not None and audit.claim.dpsgd is not None
    assert audit.settings["family"] == "dpsgd"          # the claim's family, no assumption
    assert audit.configuration_errors == [] and audit.violation is False
    # the released-noise record and the step facts reached the claim check
    facts = audit.run_facts
    assert isinstance(facts, RunFacts) and facts.steps == STEPS
    assert facts.noise_coordinates == CANARIES and facts.noise_sum_squares.shape == (STEPS,)
    doc = audit.to_dict()
    assert doc["violation"] is False and doc["claim_checks"] and doc["scores"]["member"]
    # a correct run's noise statistic: chi-square with 200 degrees of freedom per step, plus
    # the sampled canaries' own readings (1 each): its mean is near 200 + q * |included|
    expected = CANARIES + Q * can.bits.sum()
    assert abs(facts.noise_sum_squares.mean() - expected) < 4 * np.sqrt(2 * CANARIES / STEPS) \
        + 0.1 * expected


@pytest.mark.slow
def test_a_loop_adding_less_noise_than_it_claims_is_a_violation() -> None:
    can = _numpy_dpsgd(1, true_sigma=0.3)
    audit = audit_adapter(can, noise_multiplier=SIGMA, sampling_rate=Q, steps=STEPS,
                          max_grad_norm=C)
    assert audit.violation is True
    assert audit.falsified_by and any("noise" in f for f in audit.falsified_by)
    assert audit.to_dict()["violation"] is True


@pytest.mark.slow
def test_claim_check_against_the_loops_facts() -> None:
    can = _numpy_dpsgd(2)
    # a claim of more steps than the loop ran is a configuration error, not a falsification
    audit = audit_adapter(can, noise_multiplier=SIGMA, sampling_rate=Q, steps=STEPS + 5,
                          max_grad_norm=C, methods=("tight",))
    assert any("steps" in e for e in audit.configuration_errors)


@pytest.mark.slow
def test_correct_numpy_loops_rarely_violate() -> None:
    """Monte Carlo false-violation rate of the adapter's verdict (its primary row, ``tight``
    under the claim's DP-SGD family) on correct runs: each verdict is valid at 95%, so 12
    runs give >= 3 false violations with probability < 0.02 at the limit."""
    false = sum(bool(audit_adapter(_numpy_dpsgd(100 + s), noise_multiplier=SIGMA,
                                   sampling_rate=Q, steps=STEPS, max_grad_norm=C,
                                   methods=("tight",)).violation)
                for s in range(12))
    assert false <= 2


def test_adapters_of_framework_runs() -> None:
    class _Run:  # the fields a finished framework run carries
        class config:  # noqa: N801
            threat = "white_box"
        member = np.array([1, 0, 1, 0])
        score = np.array([3.0, 0.0, 2.0, 1.0])
        facts = None

    ra = RunAdapter(_Run(), "jax")
    assert isinstance(ra, TrainerAdapter) and ra.framework == "jax"
    assert ra.bits.tolist() == [True, False, True, False]
    with pytest.raises(ValueError, match="threat"):
        ra.scores("last_iterate")

    class _Canaries:  # GradientCanaries' reading methods
        bits = np.array([True, False])

        def white_box_scores(self, kind: str = "lr") -> np.ndarray:
            return np.array([1.0, 0.0]) if kind == "lr" else np.array([2.0, 0.0])

        def last_iterate_scores(self) -> np.ndarray:
            return np.array([5.0, 4.0])

        def facts(self, dataset_size: int | None = None) -> None:
            return None

    oa = OpacusAdapter(_Canaries())
    assert isinstance(oa, TrainerAdapter) and oa.framework == "opacus"
    assert oa.scores("white_box", "sum").tolist() == [2.0, 0.0]
    assert oa.scores("last_iterate").tolist() == [5.0, 4.0]
    with pytest.raises(ValueError, match="threat"):
        oa.scores("black_box")
    with pytest.raises(ValueError, match="adapter"):
        audit_adapter(object(), noise_multiplier=1.0, sampling_rate=0.1,  # type: ignore[arg-type]
                      steps=10)


def test_loop_canaries_reject_bad_input() -> None:
    plan = dirac_plan(np.arange(3), np.array([True, False, True]), sampling_rate=0.5)
    with pytest.raises(ValueError, match="dimension"):
        LoopCanaries(plan, dimension=2, max_grad_norm=1.0)
    can = LoopCanaries(plan, dimension=5, max_grad_norm=1.0)
    with pytest.raises(ValueError, match="clipped_sum"):
        can.plant(np.zeros(4))
    with pytest.raises(ValueError, match="released"):
        can.release(np.zeros((5, 1)), noise_multiplier=1.0, batch_size=3)
    with pytest.raises(ValueError, match="threat"):
        can.scores("last_iterate")
