"""Mahloujifar-Melis-Chaudhuri f-DP one-run baseline (TOR notes §5.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from dpaudit import estimators as E
from dpaudit.curves import GaussianDP, LaplaceDP, NumericCurve
from dpaudit.estimators.mahloujifar import inverse_blowup, mahloujifar_reject


def _reject_by_hand(mu, m, cp, c, tau=0.05):
    """Scalar transcription of the recursion (no early exit), independent of the module."""
    h = tau * (cp - c) / m
    r = tau * c / m
    for i in range(c - 1, -1, -1):
        h_new = max(h, float(special.ndtr(special.ndtri(r) - mu)))
        r = min(r + i / (cp - i) * (h_new - h), 1.0)
        h = h_new
    return r + h > cp / m


@pytest.mark.parametrize("mu,m,cp,c", [(0.5, 1000, 100, 90), (0.8, 1000, 100, 90),
                                       (0.6, 10000, 2500, 2136), (1.5, 500, 500, 400),
                                       (0.01, 100, 10, 10), (3.0, 100, 10, 10)])
def test_reject_matches_scalar_recursion(mu, m, cp, c):
    assert mahloujifar_reject(GaussianDP(mu), m, cp, c) == _reject_by_hand(mu, m, cp, c)


# TOR notes §4.5 [RECOMPUTED] r-sweep with bisection on mu, Gaussian mu=1, n = 10000
@pytest.mark.parametrize("r,u,ref", [
    (20, 1, 1.3157), (50, 2, 2.2438), (100, 4, 2.7943), (200, 11, 2.9357), (500, 37, 2.9966),
    (1000, 97, 2.8480), (2500, 364, 2.4735), (5000, 1034, 2.0242), (7500, 1947, 1.6488),
    (10000, 3085, 1.3058)])
def test_r_sweep_bisection(r, u, ref):
    res = E.mahloujifar(m=10000, guesses=r, correct=r - u, delta=1e-5, confidence=0.95,
                        family="gdp")
    assert res.epsilon == pytest.approx(ref, abs=2e-3)
    assert res.method == "mahloujifar"
    assert res.epsilon == pytest.approx(GaussianDP(res.params["mu"]).epsilon(1e-5))
    assert res.epsilon < 4.3772
    # paper's ordering (Fig. 12): Steinke < Mahloujifar on the same observation
    assert res.epsilon > E.steinke(m=10000, guesses=r, correct=r - u).epsilon


@pytest.mark.parametrize("n,r,u,ref", [(1000, 100, 10, 2.4543), (1000, 250, 36, 2.4054),
                                       (1000, 500, 103, 2.0145), (1000, 1000, 309, 1.2944),
                                       (10000, 2500, 364, 2.4710)])
def test_privacyguard_sigma_grid_values(n, r, u, ref):
    """TOR notes §4.5 column computed on PrivacyGuard's grid sigma_j = 0.001 + 0.01 j: the
    grid answer is the first grid sigma at or above 1/mu_hat (our continuous fit)."""
    mu_hat = E.mahloujifar(m=n, guesses=r, correct=r - u, family="gdp").params["mu"]
    j = math.ceil((1 / mu_hat - 0.001) / 0.01 - 1e-9)
    mu_grid = 1 / (0.001 + 0.01 * j)
    assert mahloujifar_reject(GaussianDP(mu_grid), n, r, r - u)
    assert GaussianDP(mu_grid).epsilon(1e-5) == pytest.approx(ref, abs=2e-3)


def test_inverse_blowup_is_f_of_one_minus_y():
    y = np.array([1e-6, 0.01, 0.3, 0.9])
    g = GaussianDP(1.3)
    assert np.allclose(inverse_blowup(g, y), g.tradeoff(1 - y), rtol=1e-9)
    lap = LaplaceDP(1.0)
    assert np.allclose(inverse_blowup(lap, y), lap.tradeoff(1 - y))


@pytest.mark.slow
def test_other_families():
    lap = E.mahloujifar(m=1000, guesses=200, correct=180, family="laplace", delta=0.0)
    gdp = E.mahloujifar(m=1000, guesses=200, correct=180, family="gdp")
    assert 0 < lap.epsilon and lap.params["eps"] == pytest.approx(lap.epsilon, abs=1e-6)
    assert mahloujifar_reject(LaplaceDP(lap.params["eps"]), 1000, 200, 180)
    assert not mahloujifar_reject(LaplaceDP(lap.params["eps"] * 1.001), 1000, 200, 180)
    # the asymmetric sub-sampled Gaussian pair is replaced by its symmetrised envelope
    sgm = E.mahloujifar(m=1000, guesses=40, correct=38, family=("subsampled_gaussian", 0.5))
    gdp = E.mahloujifar(m=1000, guesses=40, correct=38, family="gdp")
    assert sgm.params["mu"] > gdp.params["mu"]   # a weaker curve per unit mu needs larger mu
    with pytest.raises(ValueError, match="symmetric"):
        mahloujifar_reject(NumericCurve(lambda a: 1 - a, symmetric=False), 100, 10, 9)


def test_nothing_rejected_and_bad_inputs():
    res = E.mahloujifar(m=1000, guesses=100, correct=50, family="gdp")
    assert res.epsilon == 0.0 and res.details["nothing_rejected"]
    assert E.mahloujifar(m=10, guesses=0, correct=0, family="gdp").epsilon == 0.0
    with pytest.raises(ValueError, match="m must"):
        E.mahloujifar(m=0, guesses=0, correct=0, family="gdp")
    with pytest.raises(ValueError, match="guesses must be <= m"):
        E.mahloujifar(m=10, guesses=11, correct=0, family="gdp")
    with pytest.raises(ValueError, match="correct must be <= guesses"):
        E.mahloujifar(m=10, guesses=5, correct=6, family="gdp")
    with pytest.raises(ValueError, match="delta"):
        E.mahloujifar(m=10, guesses=5, correct=5, delta=1.5, family="gdp")
    with pytest.raises(ValueError, match="confidence"):
        E.mahloujifar(m=10, guesses=5, correct=5, confidence=1, family="gdp")
    with pytest.raises(ValueError, match="family"):
        E.mahloujifar(m=10, guesses=5, correct=5, family="renyi")
    with pytest.raises(ValueError, match="curve"):
        mahloujifar_reject("gdp", 10, 5, 5)


@pytest.mark.slow
def test_coverage_gaussian_mechanism():
    """y_i = mu S_i + N(0, 1) (mu-GDP per canary), k+ = k- = 100 of m = 1000.  The bound
    exceeds the true mu iff GaussianDP(mu) itself is rejected, which is monotone in the number
    of correct guesses c: violation <=> c >= c_crit.  4000 seeded runs; the violation
    probability is <= 0.05 by their theorem, estimate sd <= 0.0035, allow 0.05 + 3 sd."""
    mu, m, k, reps = 1.0, 1000, 100, 4000
    curve = GaussianDP(mu)
    crit = [c for c in range(0, 2 * k + 1) if mahloujifar_reject(curve, m, 2 * k, c)]
    c_crit = min(crit) if crit else 2 * k + 1
    rng = np.random.default_rng(7)
    s = rng.integers(0, 2, size=(reps, m))
    y = mu * s + rng.standard_normal((reps, m))
    st = np.take_along_axis(s, np.argsort(y, axis=1), 1)
    c = st[:, m - k:].sum(axis=1) + (1 - st[:, :k]).sum(axis=1)
    viol = float(np.mean(c >= c_crit))
    assert viol <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)
    for j in range(2):
        res = E.mahloujifar(m=m, guesses=2 * k, correct=int(c[j]), family="gdp")
        assert (res.params["mu"] > mu) == bool(c[j] >= c_crit)
