"""Comparators (ReRo, Narcissus, MMC, Kaissis) and the f-DP bridge (BWC notes §2, §6.2, §6.5,
§6.8).  Spec values are DERIVED; each is also recomputed here from an independent closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from dpaudit import EpsDeltaDP, GaussianDP, LaplaceDP, risk

DELTA = 1e-5

# BWC notes §6.2: (eps, prior, ReRo, Narcissus, Kaissis[EXT]) -- 5 decimals printed
FIG1_CMP = [
    (1.0, 0.01, 0.02718, 0.02719, 0.02718), (1.0, 1 / 3, 0.90609, 0.90610, 0.75475),
    (1.0, 0.5, 1.0, 1.0, 0.81606), (1.0, 0.9, 1.0, 1.0, 0.96321),
    (2.0, 0.1, 0.73891, 0.73892, 0.73891), (2.0, 0.2, 1.0, 1.0, 0.89173),
    (4.0, 0.001, 0.05460, 0.05461, 0.05460), (4.0, 0.05, 1.0, 1.0, 0.98260),
    (4.0, 0.99, 1.0, 1.0, 0.99982),
]


@pytest.mark.parametrize(("eps", "p", "rero", "narc", "kais"), FIG1_CMP)
def test_figure1_comparators(eps: float, p: float, rero: float, narc: float,
                             kais: float) -> None:
    assert risk.rero_bound(p, eps) == pytest.approx(rero, abs=6e-6)
    assert risk.narcissus_bound(p, eps, DELTA) == pytest.approx(narc, abs=6e-6)
    assert risk.kaissis_bound(p, EpsDeltaDP(eps, 0.0)) == pytest.approx(kais, abs=6e-6)
    # independent closed forms
    assert risk.rero_bound(p, eps) == pytest.approx(min(1.0, math.exp(eps) * p), rel=1e-13)
    k_ref = min(1.0, math.exp(eps) * p, 1 - math.exp(-eps) * (1 - p))
    assert risk.kaissis_bound(p, EpsDeltaDP(eps, 0.0)) == pytest.approx(k_ref, rel=1e-12)
    # ours is never above Narcissus (Beyond Worst Case §4.2)
    assert risk.single_target_bound(p, eps, DELTA, theorem="cor3.4") <= \
        risk.narcissus_bound(p, eps, DELTA)


def test_rero_approximate_variant() -> None:
    assert risk.rero_bound(0.01, 1.0, 1e-3) == pytest.approx(math.e * 0.01 + 1e-3)


def test_narcissus_printed_form_is_not_a_bound() -> None:
    # BWC notes §1.9 / §8.2: the printed e^eps / (e^eps + 1/p) + delta lies below the prior at
    # eps = 0 (impossible for a valid bound) and below the correct beta + delta everywhere.
    p = np.array([0.01, 0.1, 0.5, 0.9])
    printed = risk.narcissus_printed_form(p, 0.0, 0.0)
    assert np.all(printed < p)
    np.testing.assert_allclose(printed, p / (1 + p), rtol=1e-13)
    for eps in (0.5, 2.0):
        assert np.all(risk.narcissus_printed_form(p, eps, DELTA) <
                      risk.single_target_bound(p, eps, DELTA, theorem="cor3.4"))


# BWC notes §6.2 MMC points: K, then (eps=1 f_{eps,0}, f_{eps,delta}), eps=2 (...), eps=4 (...)
MMC = [
    (2, 0.731059, 0.731061, 0.880797, 0.880798, 0.982014, 0.982014),
    (3, 0.576117, 0.576121, 0.786986, 0.786988, 0.964663, 0.964664),
    (10, 0.231969, 0.231977, 0.450853, 0.450859, 0.858486, 0.858488),
    (100, 0.026724, 0.026733, 0.069453, 0.069462, 0.355461, 0.355467),
    (1000, 0.002714, 0.002724, 0.007342, 0.007352, 0.051821, 0.051830),
]


@pytest.mark.parametrize("row", MMC)
def test_mmc_points(row: tuple) -> None:
    k, *vals = row
    for i, eps in enumerate((1.0, 2.0, 4.0)):
        pure, approx = vals[2 * i], vals[2 * i + 1]
        got_pure = risk.mmc_bound(k, epsilon=eps)
        got_approx = risk.mmc_bound(k, EpsDeltaDP(eps, DELTA))
        # 6 decimals printed
        assert got_pure == pytest.approx(pure, abs=1.1e-6)
        assert got_approx == pytest.approx(approx, abs=1.1e-6)
        # closed forms of BWC notes §2.2 (independent of the bisection)
        b = math.exp(eps) / (math.exp(eps) + k - 1)
        assert got_pure == pytest.approx(b, rel=1e-12)
        assert got_approx == pytest.approx((math.exp(eps) + (k - 1) * DELTA) /
                                           (math.exp(eps) + k - 1), rel=1e-12)
        # equals ours at p = 1/K (pure) and Thm 3.5 at n = 1 (approx)
        assert got_approx == pytest.approx(risk.single_target_bound(1 / k, eps, DELTA),
                                           rel=1e-12)


# BWC notes §6.5 (Fig. 3): eps, mu, ours uniform beta(0.1)+(1-beta)delta, MMC G_mu K=10,
# MMC f_{eps,delta} K=10, Zipf-10 password beta(0.37311)+(1-beta)delta  (4 decimals)
FIG3 = [
    (0.25, 0.0753, 0.1249, 0.1123, 0.1249, 0.4332), (0.5, 0.1422, 0.1548, 0.1241, 0.1548, 0.4953),
    (1, 0.2681, 0.2320, 0.1481, 0.2320, 0.6180), (2, 0.5016, 0.4509, 0.1990, 0.4509, 0.8147),
    (4, 0.9249, 0.8585, 0.3080, 0.8585, 0.9701), (8, 1.6660, 0.9970, 0.5207, 0.9970, 0.9994),
    (10, 2.0004, 0.9996, 0.6121, 0.9996, 0.9999), (16, 2.9055, 1.0000, 0.8094, 1.0000, 1.0000),
]


@pytest.mark.parametrize("row", FIG3)
def test_figure3_columns(row: tuple) -> None:
    eps, mu, ours, mmc_g, mmc_f, zipf10 = row
    m = risk.gdp_mu(eps, DELTA)
    assert m == pytest.approx(mu, abs=6e-5)
    assert GaussianDP(m).delta(eps) == pytest.approx(DELTA, rel=1e-8)
    assert risk.single_target_bound(0.1, eps, DELTA) == pytest.approx(ours, abs=6e-5)
    assert risk.mmc_bound(10, GaussianDP(m)) == pytest.approx(mmc_g, abs=6e-5)
    assert risk.mmc_bound(10, EpsDeltaDP(eps, DELTA)) == pytest.approx(mmc_f, abs=6e-5)
    p10 = risk.ZipfPrior(1.1, 10).max()
    assert risk.single_target_bound(p10, eps, DELTA) == pytest.approx(zipf10, abs=6e-5)


def test_mmc_gaussian_fixed_point_independent() -> None:
    # p = 1 - G_mu((1 - p)/(K - 1)) solved by scipy brentq on the explicit Gaussian formula
    from scipy.optimize import brentq
    mu, k = 0.9249, 10

    def g(p: float) -> float:
        a = (1 - p) / (k - 1)
        return p - (1 - norm.cdf(norm.ppf(1 - a) - mu))

    assert risk.mmc_bound(k, GaussianDP(mu)) == pytest.approx(brentq(g, 1 / k, 1 - 1e-12),
                                                              abs=1e-10)


def test_gdp_mu_table_6_8() -> None:
    # BWC notes §6.8 (5 decimals)
    ref = {0.25: 0.07527, 0.5: 0.14221, 1: 0.26805, 2: 0.50155, 3: 0.71912, 4: 0.92493,
           5: 1.12124, 8: 1.66603, 10: 2.00045, 16: 2.90548}
    for eps, mu in ref.items():
        assert risk.gdp_mu(eps, DELTA) == pytest.approx(mu, abs=6e-6)
    # round trip through the curve conversion
    assert GaussianDP(risk.gdp_mu(3.0, 1e-6)).epsilon(1e-6) == pytest.approx(3.0, rel=1e-8)


def test_bounds_from_curves() -> None:
    priors = np.full(100, 0.56)
    mu = risk.gdp_mu(1.0, DELTA)
    curve = GaussianDP(mu)
    # a single-delta grid reproduces the (eps, delta) bound exactly
    b1 = risk.thm35_bound_from_curve(priors, curve, 85, deltas=[DELTA])
    assert b1 == pytest.approx(risk.thm35_bound(priors, 1.0, DELTA, 85), rel=1e-7)
    # minimising over a grid can only tighten it, and every grid point is itself valid
    b = risk.thm35_bound_from_curve(priors, curve, 85)
    assert b <= b1
    d = 1e-3
    assert b <= risk.thm35_bound(priors, curve.epsilon(d), d, 85) + 1e-15
    tb = risk.thm35_tail_from_curve(priors, curve, DELTA)
    assert tb.epsilon == pytest.approx(1.0, rel=1e-8) and tb.v_ub(0.95) == 84
    s = risk.single_target_bound_from_curve(0.1, curve, deltas=[DELTA])
    assert s == pytest.approx(risk.single_target_bound(0.1, 1.0, DELTA), rel=1e-7)
    # pure DP from a Laplace curve; refused for a Gaussian curve
    assert risk.pure_tail_from_curve([0.3, 0.3], LaplaceDP(1.0)).sf(1) == pytest.approx(
        1 - (1 - risk.beta(0.3, 1.0)) ** 2)
    with pytest.raises(ValueError, match="pure DP"):
        risk.pure_tail_from_curve([0.3], curve)
    assert risk.curve_epsilon(curve, DELTA) == pytest.approx(1.0, rel=1e-8)


def test_comparator_bad_input() -> None:
    with pytest.raises(ValueError, match="k must"):
        risk.mmc_bound(1, epsilon=1.0)
    with pytest.raises(ValueError, match="curve"):
        risk.mmc_bound(10, curve="gdp")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="epsilon"):
        risk.rero_bound(0.1, -1.0)
    with pytest.raises(ValueError, match="kappa"):
        risk.rero_bound(1.5, 1.0)
    with pytest.raises(ValueError, match="delta"):
        risk.narcissus_bound(0.1, 1.0, 1.0)
    with pytest.raises(ValueError, match="r must"):
        risk.steinke_membership_bound(10, 11, 5, 1.0, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        risk.gdp_mu(1.0, 0.0)
    with pytest.raises(ValueError, match="curve"):
        risk.thm35_tail_from_curve([0.5], 3.0, DELTA)  # type: ignore[arg-type]
