"""The released-noise check (dpaudit.canaries.noise): thresholds, false alarms, power."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit.canaries import Claim, RunFacts, check_claim
from dpaudit.canaries.noise import (
    NOISE_ALPHA,
    check_released_noise,
    distinct_mask,
    format_steps,
    noise_sum_squares,
)


def _sum_squares(rng: np.random.Generator, steps: int, k: int, sigma: np.ndarray | float,
                 background: float = 0.0) -> np.ndarray:
    """S_t of ``steps`` releases: k coordinates, a fixed background plus N(0, sigma_t^2)."""
    s = np.broadcast_to(np.asarray(sigma, dtype=float), (steps,))
    m = background * np.sin(np.arange(k))                      # a fixed, non-zero mean
    v = m + s[:, None] * rng.standard_normal((steps, k))
    return (v * v).sum(axis=1)


def test_threshold_is_the_chi_square_quantile_bonferroni_over_steps() -> None:
    r = check_released_noise(np.full(300, 6000.0), 6000, 1.0)
    # independent computation: chi2_k^{-1}(alpha / (T + 1)) / k at k = 6000, T = 300
    assert r.threshold == pytest.approx(stats.chi2.ppf(1e-6 / 301, 6000) / 6000, rel=1e-12)
    assert 0.89 < r.threshold < 0.91   # a 10% shortfall of the variance is seen per step
    assert r.ok and r.low_steps == () and not r.total_low
    assert np.allclose(r.sigma_estimates, 1.0)


def test_sum_squares_use_each_distinct_coordinate_once() -> None:
    coords = np.array([[4, 4, 7], [9, 2, 2]])
    mask = distinct_mask(coords)
    assert mask.tolist() == [[True, False, True], [True, True, False]]
    vals = np.array([[1.0, 1.0, 2.0], [3.0, 0.5, 0.5]])
    assert noise_sum_squares(vals, mask) == pytest.approx(1 + 4 + 9 + 0.25)
    # the flat indices of the mask (the step hook's form): the same values, the same sum
    assert noise_sum_squares(vals, np.flatnonzero(mask)) == noise_sum_squares(vals, mask)


@pytest.mark.slow
def test_false_alarm_rate_on_runs_that_meet_the_claim_is_at_most_alpha() -> None:
    # At a large alpha the rate is measurable: T = 10 steps, k = 40 coordinates, the
    # union bound over 11 tests at alpha = 0.2 gives at most 0.2 (about 0.18 when the noise
    # is exactly the claim's: the 11 tests are nearly independent, 1 - (1 - 0.2/11)^11).
    rng = np.random.default_rng(11)
    runs = 1500
    alarms = sum(not check_released_noise(_sum_squares(rng, 10, 40, 1.0), 40, 1.0,
                                          alpha=0.2).ok for _ in range(runs))
    lo, hi = stats.binom.interval(1 - 1e-6, runs, 1 - (1 - 0.2 / 11) ** 11)
    assert lo <= alarms <= hi    # exact calibration at sigma = the claim
    # more noise than the claim, or real-data background, only lowers the rate
    alarms_bg = sum(not check_released_noise(_sum_squares(rng, 10, 40, 1.0, background=0.5),
                                             40, 1.0, alpha=0.2).ok for _ in range(runs))
    alarms_more = sum(not check_released_noise(_sum_squares(rng, 10, 40, 1.2), 40, 1.0,
                                               alpha=0.2).ok for _ in range(runs))
    assert alarms_bg < lo and alarms_more < lo


@pytest.mark.slow
def test_no_false_alarm_at_the_default_alpha_in_many_seeds() -> None:
    # 1,000 correct runs at the train-audit scale (T = 300, k = 6,000): none flagged
    # (each with probability below 1e-6).
    for seed in range(1000):
        rng = np.random.default_rng(seed)
        s = stats.chi2.rvs(6000, size=300, random_state=rng)   # S_t / sigma^2 exactly
        assert check_released_noise(s * 1.3 ** 2, 6000, 1.3).ok


def test_skipped_scaled_and_zeroed_noise_are_named_by_step() -> None:
    rng = np.random.default_rng(0)
    sigma = np.where(np.arange(60) % 2 == 1, 0.0, 1.0)        # add_noise skipped every 2nd
    r = check_released_noise(_sum_squares(rng, 60, 1500, sigma, background=0.05), 1500, 1.0)
    assert not r.ok and r.low_steps == tuple(range(2, 61, 2))
    assert "steps 2, 4, 6" in r.message(1.0) and "30 step(s)" in r.message(1.0)
    scaled = check_released_noise(_sum_squares(rng, 60, 1500, 0.8), 1500, 1.0)
    assert len(scaled.low_steps) == 60                        # sigma / 1.25 on every step
    slight = check_released_noise(_sum_squares(rng, 300, 6000, 0.98), 6000, 1.0)
    assert slight.total_low and not slight.ok                 # 2% less noise, whole run


def test_claim_check_reports_steps_without_noise_as_a_weaker_run() -> None:
    rng = np.random.default_rng(3)
    per_step = np.where(np.arange(20) % 5 == 4, 0.0, 1.0)
    facts = RunFacts(steps=20, noise_multipliers=(1.0, 0.0), max_grad_norms=(1.0,),
                     step_noise_multipliers=per_step,
                     noise_sum_squares=_sum_squares(rng, 20, 500, per_step), noise_coordinates=500,
                     noise_unit=1.0)
    checks = check_claim(Claim(1.0, 0.05, 20, 1.0), facts)
    bad = {c.name: c for c in checks if not c.ok}
    assert set(bad) == {"noise_multiplier", "released_noise"}
    assert "steps 5, 10, 15, 20 ran without noise" in bad["noise_multiplier"].message
    assert bad["noise_multiplier"].weaker and bad["released_noise"].weaker
    assert checks[0].name == "noise_multiplier"               # deterministic before statistical
    # a claim for a smaller sigma than the run used is no error; more steps than claimed are
    ok = check_claim(Claim(1.0, 0.05, 20, 1.0), RunFacts(
        steps=20, step_noise_multipliers=np.full(20, 1.0),
        noise_sum_squares=_sum_squares(rng, 20, 500, 1.0), noise_coordinates=500))
    assert all(c.ok for c in ok) and {c.name for c in ok} >= {"released_noise"}
    more = check_claim(Claim(1.0, 0.05, 10, 1.0), RunFacts(steps=20))
    assert more[0].name == "steps" and more[0].weaker


def test_the_readings_unit_follows_the_claims_clip_norm() -> None:
    # readings in units of the canaries' C = 1; the claim's C = 2: the noise sigma * 2 per
    # coordinate is what the claim needs, i.e. sigma in units of the claim's C
    rng = np.random.default_rng(5)
    ss = _sum_squares(rng, 30, 800, 1.0)                      # noise std 1 = 0.5 claim-C
    facts = RunFacts(steps=30, noise_sum_squares=ss, noise_coordinates=800, noise_unit=1.0)
    low = {c.name: c for c in check_claim(Claim(1.0, 0.05, 30, 2.0), facts)}
    assert not low["released_noise"].ok
    assert {c.name: c for c in check_claim(Claim(1.0, 0.05, 30, 1.0), facts)}[
        "released_noise"].ok


def test_bad_input_names_the_argument() -> None:
    with pytest.raises(ValueError, match="sum_squares"):
        check_released_noise(np.array([]), 10, 1.0)
    with pytest.raises(ValueError, match="sum_squares"):
        check_released_noise(np.array([-1.0]), 10, 1.0)
    with pytest.raises(ValueError, match="coordinates"):
        check_released_noise(np.ones(3), 0, 1.0)
    with pytest.raises(ValueError, match="noise_multiplier"):
        check_released_noise(np.ones(3), 10, 0.0)
    assert NOISE_ALPHA == 1e-6
    assert format_steps([3]) == "step 3"


def test_release_reader_feeds_the_scores_and_the_noise_check() -> None:
    # a hand-written loop (any framework): released sums / C at every coordinate, the
    # noise skipped on every second step; the planted canaries' contributions only add
    from dpaudit.canaries import Layout, ReleaseReader, plan_gradient_canaries, sample_steps

    rng = np.random.default_rng(4)
    lay = Layout.from_sizes([600, 20, 300, 10])
    act = np.r_[np.zeros(600), np.ones(20), np.zeros(300), np.ones(10)]
    plan = plan_gradient_canaries(lay, act, 100, sampling_rate=0.1, rng=rng)
    reader = ReleaseReader(plan, max_grad_norm=1.0)
    unit = plan.plant_values / np.linalg.norm(plan.plant_values, axis=1, keepdims=True)
    flats = []
    for t in range(40):
        flat = rng.normal(size=lay.dimension) * (1.0 if t % 2 == 0 else 0.0)
        for i in np.flatnonzero(sample_steps(plan.bits, 0.1, rng)[0]):
            np.add.at(flat, plan.plant_coords[i], unit[i])     # clipped canary: C along u_i
        flats.append(flat)
        reader.add_flat(flat, 1.0)
    # the readings are the plan's (the white-box scores), the noise record the sums of
    # squares at the distinct read coordinates but the sentinels (weight 0.03)
    ys = np.array([plan.read_flat(f) for f in flats])
    assert np.allclose(reader.accumulator.sum, ys.sum(axis=0))
    rec = reader.noise_record()
    coords = np.unique(plan.read_coords[~np.isclose(np.abs(plan.read_weights), 0.03)])
    assert rec["noise_coordinates"] == coords.size
    assert np.allclose(rec["noise_sum_squares"], [(f[coords] ** 2).sum() for f in flats])
    checks = {c.name: c for c in check_claim(Claim(1.0, 0.1, 40, 1.0),
                                             RunFacts(steps=40, **rec))}
    assert checks["noise_multiplier"].ok                      # sigma attribute intact
    assert not checks["released_noise"].ok
    assert "20 step(s)" in checks["released_noise"].message and "steps 2, 4, 6" in (
        checks["released_noise"].message)
