"""Noise calibration (dpaudit.curves.calibration): one implementation, checked against the
closed-form Gaussian profile and the PLD accountant it inverts."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from dpaudit.curves import dpsgd_curve
from dpaudit.curves.calibration import dpsgd_noise_multiplier, gdp_mu


def test_gdp_mu_inverts_the_closed_form_profile():
    mu = gdp_mu(1.0, 1e-5)
    assert mu == pytest.approx(0.26805, abs=5e-6)  # "Beyond the Worst Case" check value
    # Dong, Roth, Su Cor. 2.13 evaluated independently
    delta = norm.cdf(-1.0 / mu + mu / 2) - math.e * norm.cdf(-1.0 / mu - mu / 2)
    assert delta == pytest.approx(1e-5, rel=1e-9)


def test_gaussian_mechanism_noise_is_the_gdp_answer_made_pessimistic():
    s = dpsgd_noise_multiplier(1.0, 1e-5)  # sampling rate 1, one step
    # the PLD grid (1e-3) is pessimistic: never less noise than the exact 1 / mu
    assert 1.0 / gdp_mu(1.0, 1e-5) <= s <= 1.01 / gdp_mu(1.0, 1e-5)
    assert dpsgd_curve(s, 1.0, 1, value_discretization_interval=1e-3).epsilon(1e-5) == \
        pytest.approx(1.0, abs=1e-4)


def test_dpsgd_noise_hits_the_target_under_the_accountant():
    s = dpsgd_noise_multiplier(4.0, 1e-5, 0.5, 4)
    assert dpsgd_curve(s, 0.5, 4, value_discretization_interval=1e-3).epsilon(1e-5) == \
        pytest.approx(4.0, abs=1e-3)
    # and at the accountant's default (finer) grid, within its discretisation
    assert dpsgd_curve(s, 0.5, 4).epsilon(1e-5) == pytest.approx(4.0, rel=0.01)


@pytest.mark.parametrize("kwargs, name", [({"epsilon": 0.0, "delta": 1e-5}, "epsilon"),
                                          ({"epsilon": 1.0, "delta": 0.0}, "delta"),
                                          ({"epsilon": 1.0, "delta": 1e-5,
                                            "sampling_rate": 0.0}, "sampling_rate")])
def test_bad_input_names_the_argument(kwargs, name):
    with pytest.raises(ValueError, match=name):
        dpsgd_noise_multiplier(**kwargs)
