"""Steinke-Nasr-Jagielski one-run baseline (TOR notes §5.1, BT notes §7.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit import estimators as E
from dpaudit.estimators.steinke import steinke_p_value


def _p_value_by_hand(m, r, v, eps, delta, shift=0):
    """Direct transcription of the statistic with scipy (independent of the module)."""
    q = math.exp(eps) / (1 + math.exp(eps))
    beta = stats.binom.sf(v - 1, r, q)
    pmf = {j: stats.binom.pmf(v - j + shift, r, q) for j in range(1, v + 1)}
    alpha = max(sum(pmf[j] for j in range(1, i + 1)) / i for i in range(1, v + 1))
    return min(1.0, beta + 2 * m * delta * alpha)


@pytest.mark.parametrize("m,r,v,eps,delta", [(1000, 100, 90, 1.5, 1e-5),
                                             (10000, 150, 128, 1.7, 1e-3),
                                             (200, 50, 30, 0.3, 1e-2), (50, 10, 10, 2.0, 0.0)])
def test_p_value_matches_formula(m, r, v, eps, delta):
    assert steinke_p_value(m, r, v, eps, delta) == pytest.approx(
        _p_value_by_hand(m, r, v, eps, delta), rel=1e-9, abs=1e-14)
    # the port's window is shifted by one: sum_{j=0..i-1} pmf(v - j)
    assert steinke_p_value(m, r, v, eps, delta, variant="port") == pytest.approx(
        _p_value_by_hand(m, r, v, eps, delta, shift=1), rel=1e-9, abs=1e-14)


# TOR notes §4.3 [REPO]: Gaussian mu = 0.5, Steinke column (the authors' port variant)
@pytest.mark.parametrize("n,r,u,ref", [
    (1000, 100, 26, 0.6519), (1000, 250, 75, 0.6124), (1000, 500, 172, 0.4866),
    (1000, 1000, 401, 0.2931), (10000, 1000, 259, 0.9277), (10000, 2500, 755, 0.7643),
    (10000, 5000, 1721, 0.5948), (10000, 10000, 4013, 0.3661), (100000, 10000, 2585, 1.0128),
    (100000, 25000, 7545, 0.8149), (100000, 50000, 17213, 0.6283),
    (100000, 100000, 40129, 0.3892), (1000, 100, 10, 1.6265), (10000, 2500, 364, 1.6736)])
def test_repo_table_port_variant(n, r, u, ref):
    res = E.steinke(m=n, guesses=r, correct=r - u, delta=1e-5, confidence=0.95, variant="port")
    assert res.epsilon == pytest.approx(ref, abs=2e-3)


# TOR notes §4.5 [RECOMPUTED] r-sweep, original formula, n = 10000, delta = 1e-5
@pytest.mark.parametrize("r,u,ref", [
    (20, 1, 1.0569), (50, 2, 1.8428), (100, 4, 2.2331), (200, 11, 2.2787), (500, 37, 2.2253),
    (1000, 97, 2.0464), (2500, 364, 1.6735), (5000, 1034, 1.2858), (7500, 1947, 1.0041),
    (10000, 3085, 0.7711)])
def test_r_sweep_original(r, u, ref):
    res = E.steinke(m=10000, guesses=r, correct=r - u)
    assert res.epsilon == pytest.approx(ref, abs=2e-3)
    assert res.method == "steinke" and res.params["eps"] == res.epsilon
    assert res.p_value < 0.05


def test_original_vs_port_values():
    # TOR notes §4.6: 1.62614 (original) and 1.62650 (port) for (1000, 100, 10)
    assert E.steinke(m=1000, guesses=100, correct=90).epsilon == pytest.approx(1.62614, abs=2e-4)
    assert E.steinke(m=1000, guesses=100, correct=90, variant="port").epsilon == pytest.approx(
        1.62650, abs=2e-4)


@pytest.mark.parametrize("delta,n,u,ref", [
    (1e-5, 100, 12, 1.4681), (1e-5, 1000, 119, 1.8384), (1e-5, 10000, 1192, 1.9485),
    (1e-3, 100, 12, 1.4239), (1e-3, 1000, 119, 1.7609), (1e-3, 10000, 1191, 1.7248),
    (1e-2, 100, 12, 0.3078), (1e-2, 1000, 118, 0.0872), (1e-2, 10000, 1180, 0.0)])
def test_randomized_response_large_delta(delta, n, u, ref):
    # TOR notes §4.5 RR table: the 2 m delta term collapses the bound for large m delta
    res = E.steinke(m=n, guesses=n, correct=n - u, delta=delta)
    assert res.epsilon == pytest.approx(ref, abs=2e-3)
    if ref == 0.0:
        assert res.details["nothing_rejected"]


def test_pure_dp_matches_binomial_inversion():
    # delta = 0: p = P[Bin(r, q) >= v]; the bound solves it = 0.05 in eps
    res = E.steinke(m=500, guesses=200, correct=170, delta=0.0)
    q = stats.beta.ppf(0.05, 170, 31)   # P[Bin(200, q) >= 170] = 0.05
    assert res.epsilon == pytest.approx(math.log(q / (1 - q)), abs=1e-5)


def test_guesses_from_scores_counts():
    truth = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    score = np.array([0.9, 0.1, 0.8, 0.2, 0.3, 0.05, 0.7, 0.6])
    # top 3: idx 0, 2, 6 (all members) -> 3 correct; bottom 2: idx 5, 1 (non-members) -> 2
    assert E.guesses_from_scores(truth, score, 3, 2) == (5, 5)
    # top 4 adds idx 7 (non-member, wrong); bottom 3 adds idx 3 (member, wrong)
    assert E.guesses_from_scores(truth, score, 4, 3) == (7, 5)
    g, c = E.guesses_from_scores(truth, score, np.array([0, 3, 4]), np.array([0, 2, 3]))
    assert g.tolist() == [0, 5, 7] and c.tolist() == [0, 5, 5]


def test_guesses_from_scores_sweep_matches_loop():
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 2, 400)
    score = truth + rng.standard_normal(400)
    ks = np.arange(0, 201, 25)
    g, c = E.guesses_from_scores(truth, score, ks, ks)
    order = np.argsort(score)
    for k, gk, ck in zip(ks, g, c, strict=True):
        low, high = order[:k], order[len(order) - k:] if k else order[:0]
        assert gk == 2 * k
        assert ck == int(truth[high].sum() + (1 - truth[low]).sum())


def test_guesses_from_scores_ties_do_not_leak_order():
    # all scores equal and members listed first: index-order tie-breaking would give 100/100
    truth = np.array([1] * 100 + [0] * 100)
    score = np.zeros(200)
    _, c = E.guesses_from_scores(truth, score, 100, 0, rng=3)
    assert 30 < c < 70     # hypergeometric mean 50, sd ~3.5


def test_bad_inputs():
    with pytest.raises(ValueError, match="m must"):
        E.steinke(m=0, guesses=0, correct=0)
    with pytest.raises(ValueError, match="guesses must be <= m"):
        E.steinke(m=10, guesses=11, correct=0)
    with pytest.raises(ValueError, match="correct must be <= guesses"):
        E.steinke(m=10, guesses=5, correct=6)
    with pytest.raises(ValueError, match="delta"):
        E.steinke(m=10, guesses=5, correct=5, delta=-0.1)
    with pytest.raises(ValueError, match="confidence"):
        E.steinke(m=10, guesses=5, correct=5, confidence=0.0)
    with pytest.raises(ValueError, match="variant"):
        E.steinke(m=10, guesses=5, correct=5, variant="fixed")
    with pytest.raises(ValueError, match="eps"):
        steinke_p_value(10, 5, 5, -1.0)
    with pytest.raises(ValueError, match="k_pos"):
        E.guesses_from_scores([0, 1], [0.1, 0.2], -1, 0)
    with pytest.raises(ValueError, match="k_pos \\+ k_neg"):
        E.guesses_from_scores([0, 1], [0.1, 0.2], 2, 1)
    with pytest.raises(ValueError, match="same length"):
        E.guesses_from_scores([0, 1, 1], [0.1, 0.2], 1, 1)
    with pytest.raises(ValueError, match="truth"):
        E.guesses_from_scores([0, 2], [0.1, 0.2], 1, 1)
    with pytest.raises(ValueError, match="score"):
        E.guesses_from_scores([0, 1], [0.1, np.nan], 1, 1)


@pytest.mark.slow
def test_coverage_laplace_and_gaussian_mechanisms():
    """Canaries included with prob. 1/2; y_i = theta * S_i + noise.  Laplace(1) noise gives
    (theta, 0)-DP (Steinke is tight for pure DP), Gaussian noise with theta = mu gives
    (eps_mu(1e-5), 1e-5)-DP.  The bound exceeds the true eps iff p(true eps) < 0.05, which is
    monotone in the number of correct guesses v: violation <=> v >= v_crit.  3000 seeded runs
    each; the violation probability is <= 0.05 by Steinke et al.'s theorem, estimate sd <=
    0.004, so we allow 0.05 + 3 sd.  A few runs also go through the full estimator."""
    m, k, reps = 1000, 100, 3000
    sd = math.sqrt(0.05 * 0.95 / reps)
    rng = np.random.default_rng(11)
    for noise, theta, true_eps, delta in [("laplace", 2.0, 2.0, 0.0),
                                          ("gauss", 1.0, 4.3772, 1e-5)]:
        s = rng.integers(0, 2, size=(reps, m))
        z = (rng.laplace(size=(reps, m)) if noise == "laplace"
             else rng.standard_normal((reps, m)))
        y = theta * s + z
        order = np.argsort(y, axis=1)
        st = np.take_along_axis(s, order, 1)
        v = st[:, m - k:].sum(axis=1) + (1 - st[:, :k]).sum(axis=1)
        crit = [vv for vv in range(0, 2 * k + 1)
                if steinke_p_value(m, 2 * k, vv, true_eps, delta) < 0.05]
        v_crit = min(crit) if crit else 2 * k + 1
        viol = float(np.mean(v >= v_crit))
        assert viol <= 0.05 + 3 * sd, (noise, viol)
        for j in range(2):
            res = E.steinke(m=m, guesses=2 * k, correct=int(v[j]), delta=delta)
            assert (res.epsilon > true_eps) == bool(v[j] >= v_crit)
            assert res.epsilon > 0.2 * true_eps  # loose for Gaussian (~30%), not trivial
