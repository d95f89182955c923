"""Bits-transmission audit (Bits Transmission): BT notes §9 Tables A-H, closed forms, each CI, bad
input.

Every DERIVED value of BT notes §9 is checked twice: against the number printed in the spec and
against an independent computation in this file (closed forms, SciPy Beta/Binomial functions,
direct summation), so a wrong spec value and a wrong implementation cannot agree by accident.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.special import ndtr, ndtri

from dpaudit import estimators as E
from dpaudit.curves import EpsDeltaDP, Family, GaussianDP, LaplaceDP, SubsampledGaussianDP
from dpaudit.estimators.bits import (
    aci_literal,
    binary_entropy,
    binary_entropy_inv,
    eps_delta_eps_from_error,
    epsilon_from_error_rate,
    error_floor,
    error_rate_upper,
    gdp_mu_from_error,
    hoeffding_radius,
    information_error_floor,
    laplace_eps_from_error,
    mi_bound,
    mutual_information,
)

D5 = 1e-5


# ---------------------------------------------------------------------------------------------
# Independent oracles (closed forms only; no dpaudit search or curve conversion code)
# ---------------------------------------------------------------------------------------------

def gdp_eps_oracle(mu: float, delta: float) -> float:
    """Root of Phi(-e/mu + mu/2) - e^e Phi(-e/mu - mu/2) = delta (Dong et al.), by brentq."""
    from scipy.optimize import brentq

    def g(e: float) -> float:
        return ndtr(-e / mu + mu / 2) - math.exp(e) * ndtr(-e / mu - mu / 2) - delta

    return 0.0 if g(0.0) <= 0 else brentq(g, 0.0, 400.0, xtol=1e-12)


def eps_from_p_oracle(p: float, family: str, delta: float = D5) -> float:
    """BT notes §3.10 closed-form inversions + §3.9 closed-form conversions."""
    if family == "gdp":
        return gdp_eps_oracle(-2 * ndtri(p), delta)
    if family == "eps_delta":
        return max(0.0, math.log((1 - delta) / p - 1))
    mu = -2 * math.log(2 * p)  # laplace: eps(delta) = mu + 2 ln(1 - delta)
    return max(0.0, mu + 2 * math.log1p(-delta))


def cp_upper_oracle(k: int, n: int, gamma: float) -> float:
    return 1.0 if k == n else float(stats.beta.ppf(gamma, k + 1, n - k))


# ---------------------------------------------------------------------------------------------
# Table A: from counts to bounds
# ---------------------------------------------------------------------------------------------

# n, k, Hoeffding p_up, ACI literal, ACI-exact (CP), eps GDP (H/ACI), eps (eps,d) (H/ACI),
# eps Laplace (H/ACI), mu_L (GDP, ACI literal)
TABLE_A = [
    (100, 30, 0.42239, 0.37525, 0.38422, 1.519, 2.611, 0.313, 0.510, 0.337, 0.574, 0.6360),
    (100, 15, 0.27239, 0.21931, 0.22154, 5.473, 7.328, 0.983, 1.270, 1.215, 1.648, 1.5490),
    (1000, 300, 0.33870, 0.32457, 0.32475, 3.542, 3.925, 0.669, 0.733, 0.779, 0.864, 0.9099),
    (1000, 159, 0.19770, 0.17838, 0.17926, 8.196, 9.044, 1.401, 1.527, 1.856, 2.061, 1.8431),
    (1000, 100, 0.13870, 0.11600, 0.11699, 11.074, 12.481, 1.826, 2.031, 2.565, 2.922, 2.3904),
    (1000, 18, 0.05670, 0.02634, 0.02658, 17.885, 23.363, 2.812, 3.610, 4.354, 5.887, 3.8751),
    (1000, 0, 0.03870, 0.00295, 0.00299, 20.647, 37.910, 3.212, 5.823, 5.117, 10.266, 5.5067),
    (10000, 3085, 0.32074, 0.31629, 0.31619, 4.032, 4.156, 0.750, 0.771, 0.888, 0.916, 0.9562),
    (10000, 1587, 0.17094, 0.16473, 0.16483, 9.392, 9.693, 1.579, 1.623, 2.147, 2.221, 1.9504),
    (10000, 180, 0.03024, 0.02025, 0.02034, 22.396, 25.186, 3.468, 3.879, 5.611, 6.413, 4.0973),
    (100000, 30854, 0.31241, 0.31093, 0.31095, 4.266, 4.309, 0.789, 0.796, 0.941, 0.950, 0.9865),
    (100000, 15866, 0.16253, 0.16059, 0.16057, 9.802, 9.899, 1.640, 1.654, 2.247, 2.271, 1.9841),
    (1000000, 308538, 0.30976, 0.30922, 0.30930, 4.342, 4.358, 0.801, 0.804, 0.958, 0.961,
     0.9961),
]


@pytest.mark.parametrize("row", TABLE_A, ids=[f"n{r[0]}-k{r[1]}" for r in TABLE_A])
def test_table_a_upper_bounds(row):
    n, k, hoef, aci, cp = row[:5]
    # spec values (5 decimals)
    assert error_rate_upper(n, k, 0.95, "hoeffding") == pytest.approx(hoef, abs=6e-6)
    assert error_rate_upper(n, k, 0.95, "aci") == pytest.approx(aci, abs=6e-6)
    assert error_rate_upper(n, k, 0.95, "clopper_pearson") == pytest.approx(cp, abs=6e-6)
    # independent: Hoeffding closed form, one-sided CP Beta quantile (BT notes §3.8)
    assert error_rate_upper(n, k, 0.95, "hoeffding") == pytest.approx(
        k / n + math.sqrt(math.log(20) / (2 * n)), rel=1e-12)
    assert error_rate_upper(n, k, 0.95) == pytest.approx(cp_upper_oracle(k, n, 0.95), rel=1e-9)
    # the alias used by the spec
    assert error_rate_upper(n, k, 0.95, "aci_exact") == error_rate_upper(n, k, 0.95)


@pytest.mark.parametrize("row", TABLE_A, ids=[f"n{r[0]}-k{r[1]}" for r in TABLE_A])
def test_table_a_epsilons(row):
    n, k = row[:2]
    expected = {"gdp": row[5:7], "eps_delta": row[7:9], "laplace": row[9:11]}
    for fam, (e_h, e_a) in expected.items():
        for ci, e_spec in (("hoeffding", e_h), ("aci", e_a)):
            res = E.bits(n=n, errors=k, family=fam, delta=D5, confidence=0.95, ci=ci)
            assert res.epsilon == pytest.approx(e_spec, abs=6e-4), (fam, ci)
            p_up = res.details["p_up"]
            assert res.epsilon == pytest.approx(eps_from_p_oracle(p_up, fam), abs=1e-6), (fam, ci)
    mu = E.bits(n=n, errors=k, family="gdp", ci="aci").params["mu"]
    assert mu == pytest.approx(row[11], abs=6e-5)
    assert mu == pytest.approx(gdp_mu_from_error(aci_literal(k, n, 0.95)), abs=1e-8)


def test_aci_literal_is_anticonservative_where_spec_says():
    # Table A, n=100, k=30: literal 0.37525 lies left of the rigorous 0.38422, i.e. a smaller
    # upper bound on the error and a larger epsilon than the valid CP bound.
    assert aci_literal(30, 100, 0.95) < error_rate_upper(100, 30, 0.95) - 0.008
    # Self-consistency of the literal fixed point: F^{-1}(1-gamma; n, p)/n == e_bar.
    p = aci_literal(300, 1000, 0.95)
    assert stats.binom.ppf(0.05, 1000, p) == 300
    # Floor at 0.001 (BT notes §3.8): k = 0 with a huge n is clamped.
    assert aci_literal(0, 10**6, 0.95) == pytest.approx(0.001)
    # e_bar >= 1/2: ends at the 1/2 ceiling; epsilon 0.
    assert aci_literal(60, 100, 0.95) == pytest.approx(0.5, abs=1e-3)
    assert E.bits(n=100, errors=60, ci="aci", family="gdp").epsilon == 0.0


# ---------------------------------------------------------------------------------------------
# Tables B and C: error floors, u_f(1/2), epsilons of the three families
# ---------------------------------------------------------------------------------------------

# mu, p_f^e, u (bits), eps(1e-5), eps(1e-6), eps of the same p under the (eps, 1e-5) family
TABLE_B = [
    (0.25, 0.450262, 0.007150, 0.9263, 1.0607, 0.1996),
    (0.5, 0.401294, 0.028298, 1.9931, 2.2541, 0.4001),
    (1, 0.308538, 0.108522, 4.3772, 4.8866, 0.8070),
    (1.5, 0.226627, 0.227914, 7.0514, 7.8066, 1.2274),
    (2, 0.158655, 0.368917, 9.9973, 10.9972, 1.6683),
    (2.5, 0.105650, 0.513347, 13.2067, 14.4508, 2.1360),
    (3, 0.066807, 0.646106, 16.6755, 18.1634, 2.6368),
    (4, 0.022750, 0.843385, 24.3816, 26.3570, 3.7602),
    (5, 0.006210, 0.945544, 33.1037, 35.5663, 5.0754),
    (6, 0.001350, 0.985185, 42.8360, 45.7859, 6.6064),
]


@pytest.mark.parametrize("mu,pfe,u,e5,e6,e_rr", TABLE_B)
def test_table_b_gdp(mu, pfe, u, e5, e6, e_rr):
    c = GaussianDP(mu)
    # closed form p_f^e(G_mu) = Phi(-mu/2) vs the generic Theorem-3 computation
    assert information_error_floor(c) == pytest.approx(ndtr(-mu / 2), rel=1e-7)
    assert information_error_floor(c) == pytest.approx(pfe, abs=6e-7)
    assert error_floor(c, "bayes") == pytest.approx(error_floor(c, "information"), rel=1e-7)
    # u_G(1/2) = 1 - h(Phi(-mu/2)) (BSC at the symmetric point) and the spec value
    assert mi_bound(c) == pytest.approx(1 - binary_entropy(ndtr(-mu / 2)), abs=1e-9)
    assert mi_bound(c) == pytest.approx(u, abs=6e-7)
    assert gdp_eps_oracle(mu, 1e-5) == pytest.approx(e5, abs=6e-5)
    assert gdp_eps_oracle(mu, 1e-6) == pytest.approx(e6, abs=6e-5)
    # Algorithm 5 lines 3-4 from p = p_f^e: GDP recovers mu's epsilon, (eps,d) family much less
    eps, theta = epsilon_from_error_rate(float(ndtr(-mu / 2)), "gdp", 1e-5)
    assert theta == pytest.approx(mu, abs=1e-8)
    assert eps == pytest.approx(e5, abs=6e-5)
    eps_rr, _ = epsilon_from_error_rate(float(ndtr(-mu / 2)), "eps_delta", 1e-5)
    assert eps_rr == pytest.approx(e_rr, abs=6e-5)
    assert eps_rr == pytest.approx(eps_delta_eps_from_error(ndtr(-mu / 2), 1e-5), abs=1e-8)


# eps, (eps,1e-5) p_f^e, u, Laplace p_f^e, u, Laplace eps at 1e-5
TABLE_C = [
    (0.25, 0.437819, 0.011185, 0.441248, 0.009983, 0.249980),
    (0.5, 0.377537, 0.043716, 0.389400, 0.035588, 0.499980),
    (1, 0.268939, 0.160062, 0.303265, 0.114754, 0.999980),
    (2, 0.119202, 0.472938, 0.183940, 0.311380, 1.999980),
    (4, 0.017986, 0.870022, 0.067668, 0.642841, 3.999980),
    (6, 0.002473, 0.975025, 0.024894, 0.831902, 5.999980),
    (8, 0.000335, 0.995646, 0.009158, 0.924843, 7.999980),
]


@pytest.mark.parametrize("eps,rr_p,rr_u,lap_p,lap_u,lap_eps", TABLE_C)
def test_table_c_rr_and_laplace(eps, rr_p, rr_u, lap_p, lap_u, lap_eps):
    rr, lap = EpsDeltaDP(eps, D5), LaplaceDP(eps)
    assert information_error_floor(rr) == pytest.approx((1 - D5) / (1 + math.exp(eps)), rel=1e-6)
    assert information_error_floor(rr) == pytest.approx(rr_p, abs=6e-7)
    assert mi_bound(rr) == pytest.approx(rr_u, abs=6e-7)
    assert information_error_floor(lap) == pytest.approx(math.exp(-eps / 2) / 2, rel=1e-6)
    assert information_error_floor(lap) == pytest.approx(lap_p, abs=6e-7)
    assert mi_bound(lap) == pytest.approx(lap_u, abs=6e-7)
    assert eps + 2 * math.log1p(-D5) == pytest.approx(lap_eps, abs=6e-7)
    # inversions
    assert epsilon_from_error_rate(rr.bit_error(), "eps_delta", D5)[0] == pytest.approx(eps, 1e-6)
    e_lap, th = epsilon_from_error_rate(lap.bit_error(), "laplace", D5)
    assert th == pytest.approx(laplace_eps_from_error(lap.bit_error()), rel=1e-7)
    assert e_lap == pytest.approx(lap_eps, abs=1e-6)


# ---------------------------------------------------------------------------------------------
# Table D: u_f(p) for several priors (symmetric in p <-> 1-p)
# ---------------------------------------------------------------------------------------------

PRIORS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5)
TABLE_D = [
    (GaussianDP(0.5), (0.00544, 0.01028, 0.01820, 0.02382, 0.02718, 0.02830)),
    (GaussianDP(1), (0.02157, 0.04044, 0.07077, 0.09190, 0.10439, 0.10852)),
    (GaussianDP(2), (0.08204, 0.14879, 0.24996, 0.31733, 0.35619, 0.36892)),
    (EpsDeltaDP(1, D5), (0.03141, 0.05909, 0.10387, 0.13527, 0.15389, 0.16006)),
    (EpsDeltaDP(2, D5), (0.10070, 0.18549, 0.31658, 0.40492, 0.45614, 0.47294)),
    (EpsDeltaDP(4, D5), (0.22155, 0.38304, 0.61301, 0.75993, 0.84304, 0.87002)),
    (LaplaceDP(1), (0.02243, 0.04224, 0.07434, 0.09691, 0.11031, 0.11475)),
]


def _mi_bruteforce(curve, prior):
    """Independent: MI of the (alpha, f(alpha)) channel from the joint table, on a fine grid."""
    a = np.concatenate([np.logspace(-12, -2, 4000), np.linspace(0, 1, 200001)])
    b = curve.tradeoff(a)
    joint = np.array([[(1 - prior) * (1 - a), (1 - prior) * a],      # B=0: guess 0 / 1
                      [prior * b, prior * (1 - b)]])                  # B=1: guess 0 / 1
    pb = joint.sum(axis=1, keepdims=True)
    pg = joint.sum(axis=0, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(joint > 0, joint * np.log2(joint / (pb * pg)), 0.0)
    return float(terms.sum(axis=(0, 1)).max())


@pytest.mark.parametrize("curve,values", TABLE_D, ids=[repr(c) for c, _ in TABLE_D])
def test_table_d_mi_bound(curve, values):
    for p, v in zip(PRIORS, values, strict=True):
        u = mi_bound(curve, p)
        assert u == pytest.approx(v, abs=6e-6)
        assert u == pytest.approx(mi_bound(curve, 1 - p), abs=1e-8)
        # the brute-force grid can only under-estimate the max (grid step 5e-6; at the kink of
        # the piecewise-linear (eps, delta) curves F has one-sided slopes up to ~5 bits per unit
        # alpha, so the grid max may be 2.5e-5 low)
        bf = _mi_bruteforce(curve, p)
        assert bf <= u + 1e-12 and bf == pytest.approx(u, abs=3e-5)


def test_mutual_information_bsc_identity():
    # At the symmetric point x* = f(x*) the channel is a BSC: F = 1 - h(x*) (Eq. 18, p = 1/2).
    c = GaussianDP(1.3)
    x = float(ndtr(-1.3 / 2))
    assert mutual_information(c, x) == pytest.approx(1 - binary_entropy(x), abs=1e-12)


def test_binary_entropy_and_inverse():
    assert binary_entropy(0.5) == pytest.approx(1.0)
    assert binary_entropy(0.0) == 0.0 and binary_entropy(1.0) == 0.0
    assert binary_entropy(0.11) == pytest.approx(
        -(0.11 * math.log2(0.11) + 0.89 * math.log2(0.89)), rel=1e-12)
    xs = np.array([1e-200, 1e-12, 1e-4, 0.05, 0.3, 0.4999])
    assert binary_entropy_inv(binary_entropy(xs)) == pytest.approx(xs, rel=1e-9)
    assert binary_entropy_inv(1.0) == 0.5


@pytest.mark.slow
def test_information_floor_below_bayes_for_asymmetric_curve():
    # p_f^e <= e* always; strictly for the (asymmetric) ordered subsampled Gaussian pair.
    c = SubsampledGaussianDP(1.0, 0.5)
    assert c.bit_error() == pytest.approx(0.404269, abs=1e-6)  # TOR notes §4.2
    assert information_error_floor(c) < c.bit_error() - 1e-3
    b = E.bits(n=1000, errors=300, family=("subsampled_gaussian", 0.5))
    i = E.bits(n=1000, errors=300, family=("subsampled_gaussian", 0.5), floor="information")
    assert b.epsilon > i.epsilon > 0


# ---------------------------------------------------------------------------------------------
# Table E (Steinke) and Table F (classical Eq. 4): verified independently here
# ---------------------------------------------------------------------------------------------

def _steinke_pvalue(eps, m, r, v, delta):
    q = 1 / (1 + math.exp(-eps))
    beta = stats.binom.sf(v - 1, r, q)
    j = np.arange(1, v + 1)
    alpha = float(np.max(np.cumsum(stats.binom.pmf(v - j, r, q)) / j)) if v > 0 else 0.0
    return min(1.0, beta + 2 * m * delta * alpha)


def _steinke_eps(m, r, v, delta):
    lo, hi = 0.0, 1.0
    while _steinke_pvalue(hi, m, r, v, delta) < 0.05:
        hi += 1
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _steinke_pvalue(mid, m, r, v, delta) < 0.05 else (lo, mid)
    return lo


TABLE_E = [(1000, 1000, 700, 0.7317, 0.7320), (1000, 200, 180, 1.7963, 1.7989),
           (1000, 100, 100, 3.4654, 3.4930), (10000, 10000, 6915, 0.7711, 0.7713),
           (10000, 1000, 900, 2.0152, 2.0212), (100000, 100000, 98200, 3.9565, 3.9600)]


@pytest.mark.slow
@pytest.mark.parametrize("m,r,v,e5,e0", TABLE_E)
def test_table_e_steinke_values(m, r, v, e5, e0):
    assert _steinke_eps(m, r, v, D5) == pytest.approx(e5, abs=2e-4)
    assert _steinke_eps(m, r, v, 0.0) == pytest.approx(e0, abs=2e-4)
    if hasattr(E, "steinke"):
        res = E.steinke(m=m, guesses=r, correct=v, delta=D5, confidence=0.95)
        assert res.epsilon == pytest.approx(e5, abs=2e-3)


TABLE_F = [(500, 50, 500, 60, 0.12971, 0.15175, 1.8779, 1.9220),
           (1000, 10, 1000, 300, 0.01831, 0.32946, 3.6004, 3.6876),
           (5000, 50, 5000, 2500, 0.01316, 0.51396, 3.6089, 3.6539),
           (500, 0, 500, 250, 0.00735, 0.54471, 4.1261, 4.3488)]


@pytest.mark.parametrize("n0,fp,n1,fn,a_r,b_r,e2,e1", TABLE_F)
def test_table_f_classical_eq4(n0, fp, n1, fn, a_r, b_r, e2, e1):
    def eq4(gamma_tail):
        a = cp_upper_oracle(fp, n0, 1 - gamma_tail)
        b = cp_upper_oracle(fn, n1, 1 - gamma_tail)
        return a, b, max(math.log((1 - D5 - a) / b), math.log((1 - D5 - b) / a), 0.0)

    a, b, eps2 = eq4(0.025)
    assert (a, b) == (pytest.approx(a_r, abs=6e-6), pytest.approx(b_r, abs=6e-6))
    assert eps2 == pytest.approx(e2, abs=6e-5)
    assert eq4(0.05)[2] == pytest.approx(e1, abs=6e-5)


# ---------------------------------------------------------------------------------------------
# Table G: the ACI illustration (GDP, n = 1000, e_bar = 0.3)
# ---------------------------------------------------------------------------------------------

TABLE_G = [(0.28, 0.0230, 5.232, 3.969), (0.30, 0.0240, 4.626, 3.941),
           (0.32, 0.0240, 4.052, 3.941), (0.324, 0.0240, 3.941, 3.941),
           (0.3245, 0.0245, 3.927, 3.927), (0.33, 0.0240, 3.777, 3.941),
           (0.36, 0.0250, 2.990, 3.913)]


@pytest.mark.parametrize("p,v,eps_p,eps_ev", TABLE_G)
def test_table_g_aci_illustration(p, v, eps_p, eps_ev):
    n, ebar = 1000, 0.3
    v_calc = p - stats.binom.ppf(0.05, n, p) / n
    assert v_calc == pytest.approx(v, abs=1e-9)
    assert epsilon_from_error_rate(p, "gdp", D5)[0] == pytest.approx(eps_p, abs=6e-4)
    assert epsilon_from_error_rate(ebar + v_calc, "gdp", D5)[0] == pytest.approx(eps_ev, abs=6e-4)
    assert eps_from_p_oracle(p, "gdp") == pytest.approx(eps_p, abs=6e-4)
    # "contradiction" iff eps(e_bar + v) < eps(p): exactly the points left of the fixed point
    assert (eps_ev < eps_p) == (p < 0.324)


# ---------------------------------------------------------------------------------------------
# Table H: exact coverage of each CI, by summing the Binomial pmf
# ---------------------------------------------------------------------------------------------

TABLE_H = [(0.3085, 100, 0.9470, 0.9676, 0.9973), (0.3085, 1000, 0.9506, 0.9506, 0.9965),
           (0.1587, 100, 0.9351, 0.9660, 1.0000), (0.1587, 1000, 0.9535, 0.9535, 0.9998),
           (0.0179, 100, 0.8357, 1.0000, 1.0000), (0.0179, 1000, 0.9442, 0.9692, 1.0000)]


def _exact_coverage(p_true, n, ci):
    ks = np.arange(n + 1)
    pmf = stats.binom.pmf(ks, n, p_true)
    keep = pmf > 1e-13
    ups = np.array([error_rate_upper(n, int(k), 0.95, ci) for k in ks[keep]])
    return float(pmf[keep][ups >= p_true].sum())


@pytest.mark.slow
@pytest.mark.parametrize("p_true,n,lit,exact,hoef", TABLE_H)
def test_table_h_exact_coverage(p_true, n, lit, exact, hoef):
    assert _exact_coverage(p_true, n, "aci") == pytest.approx(lit, abs=6e-5)
    cov_cp = _exact_coverage(p_true, n, "clopper_pearson")
    cov_h = _exact_coverage(p_true, n, "hoeffding")
    assert cov_cp == pytest.approx(exact, abs=6e-5)
    assert cov_h == pytest.approx(hoef, abs=6e-5)
    assert cov_cp >= 0.95 and cov_h >= 0.95  # the valid intervals always cover


# ---------------------------------------------------------------------------------------------
# Estimator behaviour
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n,v95,v99", [(100, 0.122387, 0.151743), (1000, 0.038702, 0.047985),
                                       (10**4, 0.012239, 0.015174),
                                       (10**5, 0.0038702, 0.0047985),
                                       (10**6, 0.0012239, 0.0015174)])
def test_hoeffding_radius(n, v95, v99):
    # BT notes §3.7 reference values, and the closed form sqrt(ln(1/(1-gamma))/(2n))
    assert hoeffding_radius(n, 0.95) == pytest.approx(v95, abs=6e-7)
    assert hoeffding_radius(n, 0.99) == pytest.approx(v99, abs=6e-7)
    assert hoeffding_radius(n, 0.99) == pytest.approx(math.sqrt(math.log(100) / (2 * n)),
                                                      rel=1e-12)


def test_bits_result_fields_and_pvalue_at_boundary():
    r = E.bits(n=10000, errors=3085, family="gdp", delta=1e-5, confidence=0.95)
    assert r.method == "bits" and r.delta == 1e-5 and r.confidence == 0.95
    assert r.settings["ci"] == "clopper_pearson" and r.settings["floor"] == "bayes"
    mu = r.params["mu"]
    # theta sits on the rejection boundary: P[Bin(n, Phi(-mu/2)) <= k] = 1 - confidence
    assert stats.binom.cdf(3085, 10000, ndtr(-mu / 2)) == pytest.approx(0.05, abs=1e-6)
    assert r.p_value == pytest.approx(0.05, abs=1e-6)
    assert r.epsilon == pytest.approx(GaussianDP(mu).epsilon(1e-5), rel=1e-12)
    assert r.epsilon < 4.3772  # below the true epsilon at the expected error count
    d = r.to_dict()
    assert d["params"]["mu"] == mu and d["details"]["p_up"] == pytest.approx(0.31619, abs=6e-6)


def test_bits_monotone_in_errors_and_confidence():
    eps = [E.bits(n=2000, errors=k, family="gdp").epsilon for k in (100, 300, 500, 700, 900)]
    assert all(a > b for a, b in zip(eps, eps[1:], strict=False))
    assert E.bits(n=2000, errors=500, confidence=0.99, family="gdp").epsilon < \
        E.bits(n=2000, errors=500, confidence=0.9, family="gdp").epsilon
    # delta only changes the conversion: same fitted mu, smaller epsilon at larger delta
    a = E.bits(n=2000, errors=500, delta=1e-6, family="gdp")
    b = E.bits(n=2000, errors=500, delta=1e-3, family="gdp")
    assert a.params["mu"] == b.params["mu"] and a.epsilon > b.epsilon


def test_bits_nothing_rejected_and_ceiling():
    r = E.bits(n=100, errors=48, family="gdp")
    assert r.epsilon == 0.0 and r.details["nothing_rejected"] and r.params["mu"] == 0.0
    small = Family("gdp<=2", GaussianDP, 0.01, 2.0, "mu")
    r = E.bits(n=10**5, errors=0, family=small)
    assert r.details["hit_ceiling"] and r.params["mu"] == 2.0
    assert r.epsilon == pytest.approx(GaussianDP(2.0).epsilon(1e-5))


def test_bits_callable_family_matches_builtin():
    r1 = E.bits(n=5000, errors=1100, family="gdp")
    r2 = E.bits(n=5000, errors=1100, family=lambda t: GaussianDP(t))
    assert r2.epsilon == pytest.approx(r1.epsilon, rel=1e-6)


@pytest.mark.parametrize("kwargs,name", [
    ({"n": 0, "errors": 0}, "n"),
    ({"n": 10, "errors": 11}, "errors"),
    ({"n": 10, "errors": -1}, "errors"),
    ({"n": 10.5, "errors": 1}, "n"),
    ({"n": 10, "errors": 1, "ci": "wald"}, "ci"),
    ({"n": 10, "errors": 1, "confidence": 1.0}, "confidence"),
    ({"n": 10, "errors": 1, "delta": 1.0}, "delta"),
    ({"n": 10, "errors": 1, "floor": "x"}, "floor"),
    ({"n": 10, "errors": 1, "family": "nope"}, "family"),
])
def test_bits_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        E.bits(**kwargs)


# ---------------------------------------------------------------------------------------------
# Monte Carlo coverage on a correct Gaussian mechanism (one run, one-hot canaries)
# ---------------------------------------------------------------------------------------------

def _simulate_errors(mu, n, reps, rng):
    """Gaussian mechanism: canary i is the one-hot e_i, included iff b_i = 1; the release is
    sum_i b_i e_i + N(0, sigma^2 I) with sigma = 1/mu; decoder b_hat_i = 1[y_i > 1/2]."""
    b = rng.integers(0, 2, size=(reps, n))
    y = b + rng.standard_normal((reps, n)) / mu
    return ((y > 0.5) != b).sum(axis=1)


@pytest.mark.slow
@pytest.mark.parametrize("mu", [1.0, 2.0])
def test_bits_monte_carlo_coverage(mu):
    rng = np.random.default_rng(1000 + int(10 * mu))
    n, reps, gamma = 1000, 3000, 0.95
    errors = _simulate_errors(mu, n, reps, rng)
    true_eps = GaussianDP(mu).epsilon(D5)
    for ci in ("clopper_pearson", "hoeffding", "aci"):
        # the bound depends on the data only through k: evaluate each distinct k once
        ks, inv = np.unique(errors, return_inverse=True)
        eps = np.array([E.bits(n=n, errors=int(k), ci=ci, confidence=gamma, family="gdp").epsilon
                        for k in ks])[inv]
        fail = float(np.mean(eps > true_eps))
        # exact failure probability of this CI at this mechanism (pmf summation)
        exact_fail = 1 - _exact_coverage(float(ndtr(-mu / 2)), n, ci)
        # Binomial MC error of a rate near 0.05 over 3000 reps: sd <= 0.004; 4 sd = 0.016.
        assert fail == pytest.approx(exact_fail, abs=0.016), ci
        if ci != "aci":
            assert fail <= (1 - gamma) + 0.016, ci
    # CP is not needlessly conservative on a tight mechanism (exact failure ~0.049 here)
    cp_fail = 1 - _exact_coverage(float(ndtr(-mu / 2)), n, "clopper_pearson")
    assert 0.03 < cp_fail <= 0.05
