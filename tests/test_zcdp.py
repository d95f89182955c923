"""The rho-zCDP trade-off curve against closed forms: the Gaussian mechanism (exactly
mu^2/2-zCDP) lies inside it, its delta(eps) lies between the Gaussian's and the conversion of
Canonne, Kamath and Steinke (2020, Proposition 12), and the Bernoulli Renyi divergences match
their closed forms."""

import math

import numpy as np
import pytest
from scipy import optimize

from dpaudit.curves import GaussianDP, gdp_delta
from dpaudit.curves.zcdp import ZCDP, bernoulli_renyi, zcdp_rho, zcdp_rho_bound


def test_bernoulli_renyi_order_two_closed_form():
    # D_2(Ber(p) || Ber(q)) = log(p^2 / q + (1 - p)^2 / (1 - q)) (chi-square + 1)
    for p, q in [(0.7, 0.3), (0.01, 0.2), (0.5, 0.5), (0.999, 0.9)]:
        expect = math.log(p * p / q + (1 - p) ** 2 / (1 - q))
        assert bernoulli_renyi(2.0, p, q) == pytest.approx(expect, rel=1e-12, abs=1e-15)
    assert bernoulli_renyi(2.0, 0.3, 0.0) == math.inf
    assert bernoulli_renyi(2.0, 0.0, 0.3) == pytest.approx(-math.log(0.7))


def test_randomized_response_rho_between_kl_and_the_pure_dp_conversion():
    # eps-RR is eps^2/2-zCDP (Bun-Steinke Prop. 1.4) and its KL is eps tanh(eps/2) <= rho*;
    # for RR the supremum over orders is the KL (lambda -> 1), which the grid reaches at
    # lambda = 1 + 1e-4: within a relative 1e-3 below
    for eps in (0.1, 0.5, 1.0, 3.0):
        p = 1 / (1 + math.exp(-eps))
        r = float(zcdp_rho(p, 1 - p))
        assert eps * math.tanh(eps / 2) * (1 - 1e-3) <= r <= eps * eps / 2


def test_box_touching_the_diagonal_rejects_nothing():
    assert zcdp_rho_bound(0.4, 0.6, 0.45, 0.5) == 0.0
    # above the diagonal the corner (fpr_hi, tpr_lo) decides
    assert zcdp_rho_bound(0.8, 0.9, 0.1, 0.2) == pytest.approx(float(zcdp_rho(0.8, 0.2)))
    assert zcdp_rho_bound(0.1, 0.2, 0.8, 0.9) == pytest.approx(float(zcdp_rho(0.8, 0.2)))


@pytest.mark.slow
@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_gaussian_mechanism_lies_inside_the_curve(mu):
    # N(0,1) vs N(mu,1) is exactly mu^2/2-zCDP, so its trade-off is >= f_rho everywhere
    a = np.concatenate([np.geomspace(1e-10, 0.5, 40), np.linspace(0.5, 1, 11)])
    f = ZCDP(mu * mu / 2).tradeoff(a)
    g = GaussianDP(mu).tradeoff(a)
    assert np.all(f <= g + 1e-9)
    assert ZCDP(mu * mu / 2).tradeoff(0.0) == 1.0 and f[-1] == 0.0
    # the curve is convex (the region is: revealed mixtures of rho-zCDP mechanisms)
    lin = np.linspace(0, 1, 201)
    fl = ZCDP(mu * mu / 2).tradeoff(lin)
    assert np.all(np.diff(fl, 2) >= -1e-9)


def _cks_delta(rho: float, eps: float) -> float:
    """Canonne-Kamath-Steinke 2020 Prop. 12: delta = inf_l exp((l-1)(l rho - eps)) / (l-1)
    * (1 - 1/l)^l, minimised independently with SciPy."""
    def log_d(l):
        return (l - 1) * (l * rho - eps) - math.log(l - 1) + l * math.log1p(-1 / l)
    r = optimize.minimize_scalar(log_d, bounds=(1 + 1e-9, 1e4), method="bounded",
                                 options={"xatol": 1e-10})
    return math.exp(r.fun)


@pytest.mark.slow
@pytest.mark.parametrize("rho", [0.05, 0.5, 2.0])
def test_delta_between_gaussian_and_the_cks_conversion(rho):
    c = ZCDP(rho)
    for eps in (0.5, 1.0, 3.0):
        d = c.delta(eps)
        assert gdp_delta(math.sqrt(2 * rho), eps) <= d * (1 + 1e-6) + 1e-12
        assert d <= _cks_delta(rho, eps) * (1 + 1e-6)
    # and epsilon(delta) below the classical rho + 2 sqrt(rho log(1/delta))
    assert c.epsilon(1e-5) < rho + 2 * math.sqrt(rho * math.log(1e5))


@pytest.mark.slow
def test_boundary_point_is_on_the_curve():
    # (q, p) with rho*(q, p) = r lies on f_r: f_r(q) = 1 - p
    q, p = 0.05, 0.4
    r = float(zcdp_rho(p, q))
    assert ZCDP(r).tradeoff(q) == pytest.approx(1 - p, abs=1e-6)


def test_bad_rho():
    with pytest.raises(ValueError, match="rho"):
        ZCDP(0.0)
