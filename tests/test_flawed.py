"""Flawed implementations are detected (lower bound above the claim) and correct ones are not.

Every case is a fixed-seed audit at confidence 0.95.  For the correct mechanisms the estimators'
validity guarantees P[bound > true eps] <= 5% per audit; the fixed seeds below make the tests
deterministic.  For the flawed mechanisms the margin is large: the true epsilon is several
times the claim (wrong sensitivity: x2 or x3; backprop clipping: noise / |B|; reused noise and
SVT algs 3, 5, 6: infinite; SVT alg 4 with c = 10: 15.25 vs 1).
"""

from __future__ import annotations

import pytest

from dpaudit.estimators.multi_run import multi_run
from dpaudit.games.audit import demo_dpsgd, one_run_audit
from dpaudit.mechanisms import (
    DPSGDSimulator,
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
    SubsampledGaussianMechanism,
    WrongSensitivityMechanism,
    backprop_clipping_dpsgd,
    reused_noise_dpsgd,
)
from dpaudit.mechanisms.svt import SparseVector, svt_audit

FAST = ("bits", "steinke")
DPSGD = {"noise_multiplier": 1.0, "sampling_rate": 0.05, "steps": 200}

FLAWED = {
    "wrong_sensitivity_gaussian": WrongSensitivityMechanism("gaussian", 0.5, 2.0),
    "wrong_sensitivity_laplace": WrongSensitivityMechanism("laplace", 1.0, 3.0),
    "backprop_clipping": backprop_clipping_dpsgd(**DPSGD, batch_size=8, score_kind="lr"),
    "reused_noise": reused_noise_dpsgd(**DPSGD),
}
CORRECT = {
    "gaussian": GaussianMechanism(0.5),
    "laplace": LaplaceMechanism(1.0),
    "rr": RandomizedResponse(1.0, 1e-5),
    "subsampled_gaussian": SubsampledGaussianMechanism(2.0, 0.5),
    "dpsgd_white_box": DPSGDSimulator(**DPSGD, score_kind="lr"),
}


#: the costly cases (seconds of CPU each: DP-SGD simulations) run with the slow tests
SLOW_CASES = ("backprop_clipping", "reused_noise", "dpsgd_white_box")


def _params(cases: dict) -> list:
    return [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_CASES else n
            for n in sorted(cases)]


@pytest.mark.parametrize("name", _params(FLAWED))
def test_flawed_one_run_detected(name: str) -> None:
    mech = FLAWED[name]
    rep = one_run_audit(mech, 5000, seed=1, methods=FAST)
    bits = rep.results[0]
    assert bits.method == "bits"
    assert bits.epsilon > rep.claimed_epsilon, (name, bits.epsilon, rep.claimed_epsilon)
    assert rep.violation


@pytest.mark.parametrize("name", _params(CORRECT))
def test_correct_one_run_not_detected(name: str) -> None:
    mech = CORRECT[name]
    rep = one_run_audit(mech, 5000, seed=1, methods=FAST)
    assert not rep.violation, [(r.method, r.epsilon) for r in rep.results]
    # the true eps of a correct mechanism is its claim; the audit is also non-trivial
    assert max(r.epsilon for r in rep) > 0.3 * rep.claimed_epsilon


def test_all_methods_side_by_side() -> None:
    bad = one_run_audit(FLAWED["wrong_sensitivity_gaussian"], 1000, seed=2)
    good = one_run_audit(CORRECT["gaussian"], 1000, seed=2)
    assert {r.method for r in bad.results} == {r.method for r in good.results}
    assert bad.violation and not good.violation
    assert all(r.epsilon <= good.claimed_epsilon for r in good.results)


@pytest.mark.slow
@pytest.mark.parametrize("variant,trials", [("alg3", 200_000), ("alg4", 20_000),
                                            ("alg5", 20_000), ("alg6", 20_000)])
def test_flawed_svt_detected(variant: str, trials: int) -> None:
    obs = svt_audit(variant, trials, 5, epsilon=1.0)
    r = multi_run(obs.member, obs.score, delta=0.0, confidence=0.95)
    claimed = SparseVector(variant, epsilon=1.0).claimed_epsilon
    assert r.epsilon > claimed, (variant, r.epsilon)
    if variant == "alg4":  # valid: below Lyu et al.'s true (1 + 6c) eps / 4 = 15.25
        assert r.epsilon <= SparseVector("alg4", epsilon=1.0, cutoff=10).true_epsilon


@pytest.mark.slow
@pytest.mark.parametrize("construction,trials", [("alternating", 20_000), ("probe", 200_000)])
def test_correct_svt_not_detected(construction: str, trials: int) -> None:
    obs = svt_audit("alg1", trials, 5, epsilon=1.0, construction=construction)
    r = multi_run(obs.member, obs.score, delta=0.0, confidence=0.95)
    assert r.epsilon <= 1.0


@pytest.mark.slow
def test_demo_dpsgd_catches_flaw_in_one_run() -> None:
    claimed, good = demo_dpsgd(False, 0)
    claimed2, bad = demo_dpsgd(True, 0)
    assert claimed == pytest.approx(claimed2) == pytest.approx(1.83, abs=0.01)
    assert max(r.epsilon for r in good) <= claimed
    assert max(r.epsilon for r in bad) > claimed
