"""Real JAX training audited through jax_privacy's own components (DP-SGD and BandMF).

Values checked against independent computations: the claim of the plan's DP event equals
dpaudit's ``dpsgd_curve`` of the same composition; released canary readings have exactly
the claimed noise and unit amplitude (so the canaries were clipped by ``clipped_grad`` and
noised by the plan's privatiser); BandMF readings whiten to the stated scale; flawed runs are
flagged and correct runs are not (small versions of studies/training_jax.py).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from doc_commands import documented_output
from dpaudit.canaries import correlated as K
from dpaudit.cli import main
from dpaudit.curves import dpsgd_curve
from dpaudit.estimators.verdict import verdict_sentence
from needs import need

pytestmark = [pytest.mark.jax, pytest.mark.slow]  # imports JAX and jax_privacy (seconds)


@pytest.fixture(autouse=True, scope="module")
def _frameworks() -> None:
    """jax_privacy (JAX) and dpaudit.training.jax: imported when a test of this module runs,
    not when the suite is collected (the names are this module's globals)."""
    global JaxTrainingConfig, audit_scores, event_epsilon, make_plan, strategy_for, train_audit_jax
    global train_jax_with_canaries
    need("jax_privacy")
    from dpaudit.training.jax import (
        JaxTrainingConfig,
        audit_scores,
        event_epsilon,
        make_plan,
        strategy_for,
        train_audit_jax,
        train_jax_with_canaries,
    )


SMALL = {"hidden": 16, "canaries": 200, "steps": 40}
#: shared by most tests so that the compiled step is reused (claim: DP-SGD 0.87, BandMF 4
#: bands 0.44 at delta = 1e-5)
FLAWED = dict(noise_multiplier=3.0, sampling_rate=0.1, **SMALL)


@pytest.mark.slow
@pytest.mark.parametrize("bands, steps", [(1, 50), (4, 50)])
def test_claim_is_the_plans_event_and_matches_dpsgd_curve(bands: int, steps: int) -> None:
    plan = make_plan(strategy_for(steps, bands, optimizer_steps=20), noise_multiplier=1.2,
                     sampling_rate=0.1, steps=steps, noise_seed=0)
    rounds = math.ceil(steps / bands)
    want = dpsgd_curve(1.2, 0.1, rounds).epsilon(1e-5)
    assert event_epsilon(plan.dp_event, 1e-5) == pytest.approx(want, rel=1e-3)
    a = audit_scores(np.arange(10) % 2, np.arange(10.0), noise_multiplier=1.2,
                     sampling_rate=0.1, steps=steps, bands=bands, methods=("steinke",))
    assert a.claimed_epsilon == pytest.approx(want, rel=1e-3)


@pytest.mark.slow
def test_privatiser_update_does_not_depend_on_the_plans_seed() -> None:
    """The compiled step is shared across seeds: jax_privacy's streaming privatiser keeps its
    key in the state, so plan(seed 0).update == plan(seed 5).update on seed 5's state."""
    import jax.numpy as jnp

    c = strategy_for(20, 4, optimizer_steps=20)
    a = make_plan(c, noise_multiplier=1.0, sampling_rate=0.1, steps=20, noise_seed=5)
    b = make_plan(c, noise_multiplier=1.0, sampling_rate=0.1, steps=20, noise_seed=0)
    g = {"w": jnp.ones((3, 2))}
    state_a = a.noise_addition_transform.init(g)
    state_b = state_a
    for _ in range(3):
        xa, state_a = a.noise_addition_transform.update(g, state_a)
        xb, state_b = b.noise_addition_transform.update(g, state_b)
        np.testing.assert_array_equal(np.asarray(xa["w"]), np.asarray(xb["w"]))


@pytest.mark.slow
def test_dpsgd_readings_have_the_claimed_noise_and_unit_amplitude() -> None:
    """Correct DP-SGD, sigma = 2, q = 0.3: a non-member's reading is N(0, 4) at every step; a
    member's is S + N(0, 4) with S ~ Bernoulli(0.3) (clipped to amplitude 1, not the planted
    1000).  Tolerances: 5 standard errors over ~8,000 readings each."""
    run = train_jax_with_canaries(JaxTrainingConfig(
        noise_multiplier=2.0, sampling_rate=0.3, seed=1, **{**SMALL, "canaries": 400}))
    x = run.transcript
    out, inn = x[:, ~run.member].ravel(), x[:, run.member].ravel()
    assert abs(out.mean()) < 5 * 2 / math.sqrt(out.size)
    assert abs(out.var() / 4 - 1) < 5 * math.sqrt(2 / out.size)
    assert abs(inn.mean() - 0.3) < 5 * math.sqrt((4 + 0.21) / inn.size)


@pytest.mark.slow
def test_bandmf_readings_whiten_to_the_stated_scale() -> None:
    """Correct BandMF (4 bands): the whitened window statistic of a non-member is
    N(0, (sigma * scale)^2) and a member's window mean is p."""
    cfg = JaxTrainingConfig(mechanism="bandmf", bands=4, noise_multiplier=1.5,
                            sampling_rate=0.5, seed=2, **{**SMALL, "canaries": 400})
    run = train_jax_with_canaries(cfg)
    y, scale = K.window_statistics(K.whiten(run.transcript, run.strategy), run.strategy,
                                   run.groups)
    z = y / (1.5 * scale)
    live = np.isfinite(scale)
    out = z[:, ~run.member][live[:, ~run.member]]
    assert abs(out.var() - 1) < 5 * math.sqrt(2 / out.size)
    full = live & (scale == 1.0)
    inn = y[:, run.member][full[:, run.member]]
    assert abs(inn.mean() - 0.5) < 5 * math.sqrt((1.5 ** 2 + 0.25) / inn.size)
    assert set(np.unique(run.groups)) == {0, 1, 2, 3}


@pytest.mark.slow
def test_strategy_mismatch_makes_the_running_sum_less_noisy_than_claimed() -> None:
    """DP-SGD claim, 16-band noise: the noise of the sum of the released readings (what the
    last iterate accumulates) has std sigma ||c|| ||1^T C^{-1}|| instead of sigma sqrt(T)."""
    cfg = JaxTrainingConfig(flawed="strategy_mismatch", seed=3, **FLAWED)
    run = train_jax_with_canaries(cfg)
    from dpaudit.training.jax.audit import run_claim_checks

    failed = [c.name for c in run_claim_checks(run) if not c.ok]
    assert failed == ["noise_strategy"]
    sums = run.transcript[:, ~run.member].sum(axis=0)
    c = strategy_for(cfg.steps, 16)
    cinv = np.linalg.inv(K.banded_toeplitz(c, cfg.steps))
    want = 3.0 * np.linalg.norm(c) * np.linalg.norm(cinv.sum(axis=0))
    assert want < 0.5 * 3.0 * math.sqrt(cfg.steps)
    assert abs(sums.std() / want - 1) < 5 / math.sqrt(2 * sums.size)


@pytest.mark.slow
@pytest.mark.parametrize("flaw, mechanism", [("mean_noise", "dpsgd"),
                                             ("unclipped_group", "dpsgd"),
                                             ("mean_noise", "bandmf")])
def test_flaw_is_detected(flaw: str, mechanism: str) -> None:
    a = train_audit_jax(JaxTrainingConfig(flawed=flaw, mechanism=mechanism, seed=0, **FLAWED))
    assert a.violation, (a.verdict_result.epsilon, a.claimed_epsilon)
    # and, before any statistics, the claim check names what the run did differently
    word = {"mean_noise": "noise multiplier", "unclipped_group": "clip norm"}[flaw]
    assert word in a.configuration_errors[0]
    # plain DP-SGD's released noise, read on the canaries' coordinates, confirms a noise
    # flaw on every step (not applied to BandMF's correlated noise)
    noise = [c for c in a.checks if c.name == "released_noise"]
    if mechanism == "dpsgd":
        assert noise[0].ok is (flaw != "mean_noise")
        assert flaw != "mean_noise" or f"{a.run.steps} step(s) released less" in noise[0].message
    else:
        assert noise == []
    # plain DP-SGD: the canaries planted in the unclipped group contribute ~ 1000 C (the
    # contribution check, dpaudit.canaries.contribution), and the noise flaw is read too
    assert len(a.configuration_errors) == 1 + (mechanism == "dpsgd")
    # less noise than claimed, or an example moving the release by more than C, falsifies
    # the claim by itself (a violation in every framework); a clip-norm mismatch alone is
    # reported but decides nothing by itself
    falsified = a.to_audit().falsified_by
    assert falsified, falsified
    if flaw == "unclipped_group":
        assert [f.split(":")[0] for f in falsified] == ["clipped contribution"]


@pytest.mark.slow
@pytest.mark.parametrize("mechanism, threat", [("dpsgd", "white_box"),
                                               ("dpsgd", "last_iterate"),
                                               ("bandmf", "white_box"),
                                               ("dpsgd", "black_box")])
def test_correct_training_is_never_flagged(mechanism: str, threat: str) -> None:
    """Monte Carlo false-violation check of the default path, 3 seeds per configuration (the
    benchmark runs 20): the verdict's null (the claim's DP-SGD family) is valid for
    the claim, so a violation has probability <= 5% per run."""
    canary = "input" if threat == "black_box" else "gradient"
    flagged = []
    for seed in range(3):
        a = train_audit_jax(JaxTrainingConfig(mechanism=mechanism, threat=threat,
                                              canary=canary, seed=seed, **FLAWED))
        assert a.configuration_errors == [], a.configuration_errors
        flagged.append((seed, a.violation, a.verdict_result.epsilon, a.claimed_epsilon))
    # each run is a level-0.05 test of a true null (the claim's own DP-SGD curve, tight in the
    # middle of the trade-off): 2 or more violations of 3 has probability <= 0.0073
    # (black box, seed 1 is one such 5% event: 39 of 50 guesses right, Bonferroni-adjusted
    # p ~ 0.04; 1 of seeds 0-11)
    assert sum(v for _, v, _, _ in flagged) <= 1, flagged


@pytest.mark.slow
def test_cli_json(tmp_path) -> None:
    # the line of docs/training_jax.md, run as written (the docs test leaves it to this test)
    out = json.loads(documented_output("docs/training_jax.md",
                                       "dpaudit train-audit --framework", tmp_path))
    for key in ("results", "claimed_epsilon", "violation", "verdict", "verdict_method",
                "training", "family", "scores_compared"):
        assert key in out
    assert out["framework"] == "jax" and out["mechanism"] == "bandmf"
    # the claim's own DP-SGD family, as on the Opacus path (dpaudit.claim.Claim)
    assert out["family"] == "dpsgd" and out["verdict_assumption"] is None
    assert out["training"]["rounds"] == 10
    assert out["claimed_epsilon"] == pytest.approx(
        dpsgd_curve(3.0, 0.1, 10).epsilon(1e-5), rel=1e-3)
    assert set(out["scores_compared"]) == {"whitened", "naive", "sum"}
    # the typed outcome's verdict (one wording, shared with every other audit kind)
    basis = out["results"][0]
    assert out["verdict_method"] == basis["method"] and out["verdict_rule"] == "primary"
    assert out["violation"] == (basis["epsilon"] > out["claimed_epsilon"])
    assert out["verdict"].startswith(verdict_sentence(
        basis["epsilon"], out["claimed_epsilon"], None, confidence=0.95, curve="DP-SGD"))
    assert out["verdict"].endswith(f"the run's own epsilon >= "
                                   f"{out['any_mechanism_epsilon']:.4f} (valid for any "
                                   f"mechanism)")
    assert out["verdict_guarantee"].startswith("P[false violation] <= 0.05")


@pytest.mark.parametrize("argv, needle", [
    (["--framework", "tensorflow"], "framework"),
    (["--mechanism", "bogus"], "mechanism"),
    (["--mechanism", "bandmf"], "framework 'jax'"),
    (["--framework", "jax", "--model", "cnn"], "model"),
    (["--framework", "jax", "--mechanism", "bandmf", "--bands", "1"], "bands"),
    (["--framework", "jax", "--flawed", "backprop_clipping"], "flawed"),
])
def test_cli_bad_input(argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["train-audit", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("error:") and needle in err[0]
