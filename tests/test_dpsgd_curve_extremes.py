"""dpsgd_curve at extreme settings returns or refuses quickly (issue 15/14).

On main ``dpsgd_curve(1, 0.01, 1e9)`` did not return, and sigma = 0.05 took close to a minute for a
single step (a 1e-4 loss grid over a support ~700 wide).  No timing is asserted: the tests would
simply not finish on main.
"""

from __future__ import annotations

import pytest

from dpaudit.curves import GaussianDP, dpsgd_curve
from dpaudit.curves.accounting import MAX_PLD_POINTS, _loss_width


def test_billion_steps_refused_with_a_clear_error():
    with pytest.raises(ValueError, match=r"steps=1000000000 .*GDP mu of 415.*no meaningful"):
        dpsgd_curve(1.0, 0.01, 10**9)


def test_tiny_noise_many_steps_refused():
    with pytest.raises(ValueError, match="noise_multiplier=0.05"):
        dpsgd_curve(0.05, 0.01, 1000)


@pytest.mark.slow
def test_tiny_noise_single_step_is_the_gaussian_mechanism():
    # q = 1, one step: the Gaussian mechanism with sensitivity 1 and sigma = 0.05, i.e.
    # 20-GDP; the coarsened grid is pessimistic, so epsilon is at least the exact one and close.
    c = dpsgd_curve(0.05, 1.0, 1)
    exact = GaussianDP(20.0).epsilon(1e-5)
    assert exact <= c.epsilon(1e-5) <= exact * 1.001


def test_interval_is_unchanged_for_ordinary_settings():
    # the bounded grid only kicks in beyond MAX_PLD_POINTS points: sigma >= 0.6 keeps 1e-4
    for sigma in (0.6, 1.0, 1.1, 4.0):
        width, _ = _loss_width(sigma, 0.01, 1000)
        assert width / MAX_PLD_POINTS < 1e-4


@pytest.mark.parametrize("sigma", [1e-3, 1e-170, 1e-200])
def test_tiny_noise_is_refused_not_overflowed(sigma) -> None:
    """Issue 32: e^{1/sigma^2} overflowed (OverflowError) below sigma ~ 0.027, and sigma^2
    underflows to 0 below ~1e-162; the CLT estimate is now formed in log space and the
    composition is refused as beyond GDP mu = 100, naming the arguments."""
    from dpaudit.curves.accounting import dpsgd_curve

    with pytest.raises(ValueError, match="noise_multiplier"):
        dpsgd_curve(sigma, 1.0, 1)


def test_subsampled_gaussian_large_mu_in_log_space() -> None:
    """Issue 32: log_delta formed e^(eps + log(1 - q)) and overflowed at eps > 709; at large
    mu, eps(delta) ~ eps_G(delta / q) + log q (delta_q(eps) ~ q delta_G(eps - log q))."""
    import math

    from dpaudit.curves import GaussianDP, SubsampledGaussianDP

    c = SubsampledGaussianDP(40.0, 0.2)
    assert c.epsilon(1e-5) == pytest.approx(GaussianDP(40.0).epsilon(5e-5) + math.log(0.2),
                                            abs=1e-6)
    # far in the tail, no overflow: ~ log Phi(-(2000 - 800)/40) = log Phi(-30) ~ -454
    assert -470 < c.log_delta(2000.0) < -440
