"""Each simulated mechanism's empirical behaviour matches its declared privacy curve.

Method: for a family of threshold tests "score > t" (the scores are likelihood ratios or
monotone transforms of them, so these are Neyman-Pearson tests), estimate the type-I error
alpha_hat = P[score > t | bit 0] and the type-II error beta_hat = P[score <= t | bit 1] from
one large seeded simulation and check that (alpha_hat, beta_hat) lies on the declared
trade-off curve f:  |beta_hat - f(alpha_hat)| <= Z * sd, where
    sd^2 = beta(1 - beta)/n1 + f'(alpha)^2 alpha(1 - alpha)/n0
is the delta-method standard deviation of beta_hat - f(alpha_hat) (binomial counts n0, n1).
Z = 4.5 gives a two-sided false-alarm probability of 7e-6 per comparison (about 1e-4 over the
whole file), so a failure means a real mismatch, not noise; the seeds are fixed anyway.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtr

import dpaudit as da
from dpaudit.mechanisms import (
    DPSGDSimulator,
    GaussianMechanism,
    LaplaceMechanism,
    RandomizedResponse,
    SubsampledGaussianMechanism,
    WrongSensitivityMechanism,
    backprop_clipping_dpsgd,
    last_iterate_curve,
    reused_noise_dpsgd,
)
from dpaudit.mechanisms.svt import SparseVector, svt_pair

Z = 4.5


def check_on_curve(obs: da.observations.MembershipObservations, curve: da.Curve,
                   thresholds: list[float], *, slack: float = 0.0,
                   tight: bool = True) -> list[tuple[float, float]]:
    """(alpha_hat, beta_hat) on the curve (tight) or at least never below it (valid)."""
    m = obs.member
    s = obs.score
    n0, n1 = int((~m).sum()), int(m.sum())
    pts = []
    for t in thresholds:
        a = float(np.mean(s[~m] > t))
        b = float(np.mean(s[m] <= t))
        h = 1e-4
        fa = float(curve.tradeoff(np.array([a]))[0])
        lo = float(curve.tradeoff(np.array([max(a - h, 0.0)]))[0])
        hi = float(curve.tradeoff(np.array([min(a + h, 1.0)]))[0])
        slope = (hi - lo) / (min(a + h, 1.0) - max(a - h, 0.0))
        sd = math.sqrt(b * (1 - b) / n1 + slope ** 2 * a * (1 - a) / n0 + 1e-12)
        assert b - fa >= -(Z * sd + slack), (t, a, b, fa, sd)
        if tight:
            assert b - fa <= Z * sd + slack, (t, a, b, fa, sd)
        pts.append((a, b))
    return pts


def test_gaussian_matches_gdp_and_bit_error() -> None:
    mech = GaussianMechanism(mu=1.5)
    obs = mech.simulate(200_000, 1)
    check_on_curve(obs, mech.curve, [-1.0, -0.5, 0.0, 0.5, 1.0])
    err = np.mean((obs.score > 0) != obs.member)
    e = float(ndtr(-1.5 / 2))  # Phi(-mu/2), BT notes §6.1
    assert mech.curve.bit_error() == pytest.approx(e)
    assert abs(err - e) <= Z * math.sqrt(e * (1 - e) / obs.n)


def test_laplace_matches_laplace_curve() -> None:
    mech = LaplaceMechanism(eps=2.0)
    obs = mech.simulate(200_000, 2)
    # thresholds inside [0, 1] on y (score = y - 1/2), where the LR test is a threshold test.
    check_on_curve(obs, mech.curve, [-0.4, -0.2, 0.0, 0.2, 0.4])
    e = math.exp(-1.0) / 2  # e^{-eps/2}/2, BT notes §6.3
    assert mech.curve.bit_error() == pytest.approx(e)
    err = np.mean((obs.score > 0) != obs.member)
    assert abs(err - e) <= Z * math.sqrt(e * (1 - e) / obs.n)


def test_randomized_response_is_exactly_eps_delta() -> None:
    eps, delta = 1.0, 0.05  # large delta (TOR notes §3.5) so the leak symbols are observed
    mech = RandomizedResponse(eps=eps, delta=delta)
    obs = mech.simulate(200_000, 3)
    pts = check_on_curve(obs, mech.curve, [-eps - 1, 0.0, eps + 1])
    a_star = (1 - delta) / (1 + math.exp(eps))
    # the three kinks of f_{eps,delta}: (delta, ...) (a*, a*) and (0, 1 - delta)
    assert pts[1][0] == pytest.approx(a_star, abs=Z * math.sqrt(a_star / 1e5))
    assert pts[2][1] == pytest.approx(1 - delta, abs=Z * math.sqrt(delta / 1e5))
    assert pts[2][0] == 0.0  # the leak symbol 3 never occurs for bit 0


def test_subsampled_gaussian_matches_ordered_pair() -> None:
    mech = SubsampledGaussianMechanism(mu=2.0, q=0.4)
    obs = mech.simulate(200_000, 4)
    check_on_curve(obs, mech.curve, [-0.3, -0.1, 0.0, 0.3, 1.0, 2.0])
    # MAP threshold is exact (TOR notes §3.6): L > 0 iff y > 1/2
    err = np.mean((obs.score > 0) != obs.member)
    e = mech.curve.bit_error()
    assert abs(err - e) <= Z * math.sqrt(e * (1 - e) / obs.n)


def test_wrong_sensitivity_true_curve() -> None:
    mech = WrongSensitivityMechanism(noise="gaussian", privacy=0.5, sensitivity=2.0)
    obs = mech.simulate(100_000, 5)
    check_on_curve(obs, mech.curve, [-0.5, 0.0, 0.5])
    assert mech.claimed_curve.params["mu"] == 0.5 and mech.curve.params["mu"] == 1.0
    lap = WrongSensitivityMechanism(noise="laplace", privacy=1.0, sensitivity=3.0)
    obs = lap.simulate(100_000, 6)
    check_on_curve(obs, lap.curve, [-0.5, 0.0, 0.5])
    assert lap.true_epsilon(0.0) == pytest.approx(3.0, rel=1e-3)


@pytest.mark.slow
def test_dpsgd_white_box_lr_matches_pld_curve() -> None:
    # q = 0.1, T = 100 (TOR notes §3.4-style white box); PLD curve from dp_accounting.
    mech = DPSGDSimulator(noise_multiplier=1.0, sampling_rate=0.1, steps=100, score_kind="lr")
    obs = mech.simulate(60_000, 7)
    # dpsgd_curve is the PLD curve of BOTH orders (add and remove), i.e. the symmetrised
    # envelope, which lies below the ordered pair's trade-off away from the diagonal: test
    # validity there (beta_hat >= f(alpha_hat)) and tightness through the order-free bit error
    # e* = (1 - TV)/2.  The PLD is pessimistic (discretised) to ~1e-3: slack 1e-3.
    check_on_curve(obs, mech.curve, [-1.0, 0.0, 1.0, 2.0], slack=1e-3, tight=False)
    e = mech.curve.bit_error()
    err = np.mean((obs.score > 0) != obs.member)
    assert abs(err - e) <= Z * math.sqrt(e * (1 - e) / obs.n) + 1e-3


def test_dpsgd_last_iterate_curve_exact() -> None:
    mech = DPSGDSimulator(noise_multiplier=1.0, sampling_rate=0.1, steps=50,
                          threat="last_iterate")
    obs = mech.simulate(60_000, 8)
    check_on_curve(obs, mech.curve, [-2.0, 0.0, 2.0, 4.0])
    # the summed score is weaker than the white-box optimum: curve above dpsgd_curve
    a = np.array([0.01, 0.1, 0.3])
    assert np.all(mech.curve.tradeoff(a) >= mech.claimed_curve.tradeoff(a) - 1e-6)
    # q = 1: the sum of T Gaussians is GDP with mu = sqrt(T)/sigma
    li = last_iterate_curve(2.0, 1.0, 16)
    np.testing.assert_allclose(li.tradeoff(a), da.GaussianDP(2.0).tradeoff(a), atol=1e-9)


def test_dpsgd_background_gradients_only_add_privacy() -> None:
    mech = DPSGDSimulator(noise_multiplier=1.0, sampling_rate=0.1, steps=50,
                          background_std=1.0, score_kind="lr")
    obs = mech.simulate(60_000, 9)
    e = mech.curve.bit_error()
    err = float(np.mean((obs.score > 0) != obs.member))
    # true noise is sqrt(2) sigma: error strictly above the claimed optimum
    assert err > e + Z * math.sqrt(e * (1 - e) / obs.n)


def test_backprop_clipping_true_noise_is_sigma_over_batch() -> None:
    mech = backprop_clipping_dpsgd(noise_multiplier=2.0, sampling_rate=0.1, steps=50,
                                   batch_size=2, score_kind="lr")
    ref = DPSGDSimulator(noise_multiplier=1.0, sampling_rate=0.1, steps=50, score_kind="lr")
    assert mech.effective_noise == 1.0
    obs = mech.simulate(60_000, 10)
    check_on_curve(obs, ref.curve, [-1.0, 0.0, 1.0], slack=1e-3, tight=False)
    e = ref.curve.bit_error()
    err = np.mean((obs.score > 0) != obs.member)
    assert abs(err - e) <= Z * math.sqrt(e * (1 - e) / obs.n) + 1e-3
    assert mech.claimed_epsilon(1e-5) < ref.claimed_epsilon(1e-5)


def test_reused_noise_reveals_bits() -> None:
    mech = reused_noise_dpsgd(noise_multiplier=1.0, sampling_rate=0.05, steps=40)
    obs = mech.simulate(50_000, 11)
    p_r = 1 - 0.05 ** 40 - 0.95 ** 40
    assert mech.curve.params["reveal_probability"] == pytest.approx(p_r)
    revealed = obs.score > 0.5
    assert not revealed[~obs.member].any()  # a bit-0 canary's coordinate never varies
    frac = revealed[obs.member].mean()
    assert abs(frac - p_r) <= Z * math.sqrt(p_r * (1 - p_r) / obs.member.sum())
    assert math.isinf(mech.true_epsilon(0.5 * p_r))
    check_on_curve(obs, mech.curve, [0.5])


def test_svt_alg1_output_semantics() -> None:
    a0, a1, thr = svt_pair("alternating", 6)
    np.testing.assert_array_equal(a1, [1, 0, 1, 0, 1, 0])
    np.testing.assert_array_equal(a0, 1 - a1)
    mech = SparseVector("alg1", epsilon=1.0, cutoff=2)
    out = mech.run(np.zeros((2000, 300)), 0.0, 12)
    # at most c top answers, and nothing is answered after the c-th
    assert out.top.sum(axis=1).max() == 2
    last = np.where(out.top.any(axis=1), out.top.shape[1] - 1 - out.top[:, ::-1].argmax(axis=1),
                    -1)
    for r in range(50):
        assert not out.answered[r, last[r] + 1:].any() or out.top[r].sum() < 2
    assert np.isnan(out.value).all()
    assert mech.query_scale == pytest.approx(8.0)  # 2 c Delta / eps2, eps2 = 1/2
    alg5 = SparseVector("alg5", epsilon=1.0, cutoff=2)
    assert alg5.query_scale == 0.0 and math.isinf(alg5.true_epsilon)
    assert SparseVector("alg4", epsilon=1.0, cutoff=2).true_epsilon == pytest.approx(13 / 4)


def test_svt_alg3_releases_noisy_values() -> None:
    out = SparseVector("alg3", epsilon=1.0, cutoff=1).run(np.zeros((500, 20)), 0.0, 13)
    assert (np.isfinite(out.value) == out.top).all()
    assert (out.value[out.top] >= -50).all()


@pytest.mark.parametrize("bad", [
    lambda: GaussianMechanism(mu=0.0),
    lambda: LaplaceMechanism(eps=-1.0),
    lambda: RandomizedResponse(eps=1.0, delta=1.0),
    lambda: SubsampledGaussianMechanism(mu=1.0, q=0.0),
    lambda: DPSGDSimulator(sampling_rate=1.5),
    lambda: DPSGDSimulator(threat="black_box"),
    lambda: DPSGDSimulator(threat="last_iterate", score_kind="lr"),
    lambda: DPSGDSimulator(flaw="typo"),
    lambda: DPSGDSimulator(steps=0),
    lambda: SparseVector("alg2"),
    lambda: GaussianMechanism().simulate(0, 1),
    lambda: GaussianMechanism().simulate(10, None),
])
def test_bad_input(bad) -> None:
    with pytest.raises(ValueError):
        bad()


def test_seeded_reproducibility() -> None:
    m = DPSGDSimulator(sampling_rate=0.1, steps=30, chunk_steps=7)
    a = m.simulate(500, 42)
    b = m.simulate(500, 42)
    np.testing.assert_array_equal(a.score, b.score)
    np.testing.assert_array_equal(a.member, b.member)
