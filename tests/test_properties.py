"""Hypothesis property tests for every estimator (issue 15).

For tight, bits, steinke, mahloujifar, multi_run / multi_run_counts, lifted and audit_one_run:

* monotone in the evidence: more correct (fewer wrong) guesses never lower the bound, a higher
  confidence never raises it;
* never above the true epsilon of a correct mechanism at its *typical* outcome: with the error
  count at (or, to be safe, just above) its expectation, the lower bound at 95% must lie below the
  true epsilon.  (The frequency statement -- P[bound > true] <= 5% -- is the Monte Carlo coverage
  tests' job, ``tests/test_*coverage*``; here the bound must hold at the median outcome, which a
  correct 95% bound always does);
* invariant to the order of the inputs (canaries, trials).

Examples are kept small (max_examples ~ 20-30, deadline=None) so the file runs in seconds.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import ndtr

from dpaudit import estimators as E
from dpaudit.curves import GaussianDP, LaplaceDP

FAST = settings(max_examples=25, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])
SLOWER = settings(max_examples=8, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow])
DELTA = 1e-5
EPS_TOL = 1e-9  # float slack when comparing two bounds computed by the same search


# ------------------------------------------------------------------------ monotone in evidence
@pytest.mark.slow
@FAST
@given(n=st.integers(200, 3000), frac=st.floats(0.05, 1.0), acc=st.floats(0.5, 1.0),
       extra=st.integers(1, 20))
def test_tight_monotone_in_wrong_guesses(n, frac, acc, extra):
    r = max(1, int(frac * n))
    u = min(r, int((1 - acc) * r))
    u2 = min(r, u + extra)
    a = E.tight(n=n, r=r, u=u, delta=DELTA, family="gdp").epsilon
    b = E.tight(n=n, r=r, u=u2, delta=DELTA, family="gdp").epsilon
    assert b <= a + EPS_TOL


@FAST
@given(n=st.integers(100, 20_000), rate=st.floats(0.0, 0.6), extra=st.integers(1, 50),
       family=st.sampled_from(["gdp", "laplace", "eps_delta"]))
def test_bits_monotone_in_errors(n, rate, extra, family):
    e = int(rate * n)
    a = E.bits(n=n, errors=e, family=family, delta=DELTA).epsilon
    b = E.bits(n=n, errors=min(n, e + extra), family=family, delta=DELTA).epsilon
    assert b <= a + EPS_TOL


@pytest.mark.slow
@FAST
@given(m=st.integers(100, 20_000), gfrac=st.floats(0.01, 1.0), acc=st.floats(0.3, 1.0),
       extra=st.integers(1, 30))
def test_steinke_and_mahloujifar_monotone_in_correct(m, gfrac, acc, extra):
    g = max(1, int(gfrac * m))
    c = int(acc * g)
    c2 = min(g, c + extra)
    for est in (E.steinke, E.mahloujifar):
        a = est(m=m, guesses=g, correct=c, delta=DELTA).epsilon
        b = est(m=m, guesses=g, correct=c2, delta=DELTA).epsilon
        assert b >= a - EPS_TOL, est.__name__


@FAST
@given(tp=st.integers(0, 500), fn=st.integers(0, 500), fp=st.integers(0, 500),
       tn=st.integers(0, 500), k=st.integers(1, 50))
def test_multi_run_counts_monotone(tp, fn, fp, tn, k):
    if tp + fn == 0 or fp + tn == 0:
        return
    # one-sided test (direction="positive"): with "both" the reversed test also counts, and
    # an always-wrong attack is evidence too
    base = E.multi_run_counts(tp=tp, fn=fn, fp=fp, tn=tn, delta=DELTA,
                              direction="positive").epsilon
    # moving k misses to hits (and k false alarms to correct rejections) is stronger evidence
    k1, k2 = min(k, fn), min(k, fp)
    better = E.multi_run_counts(tp=tp + k1, fn=fn - k1, fp=fp - k2, tn=tn + k2,
                                delta=DELTA, direction="positive").epsilon
    assert better >= base - EPS_TOL


@FAST
@given(seed=st.integers(0, 10_000), trials=st.integers(30, 300), k=st.sampled_from([1, 2, 4]),
       p1=st.floats(0.3, 0.9), p0=st.floats(0.05, 0.5))
def test_lifted_monotone_in_hits(seed, trials, k, p1, p0):
    rng = np.random.default_rng(seed)
    x = (rng.random((trials, k)) < p1).astype(int)
    y = (rng.random((trials, k)) < p0).astype(int)
    order = min(k, 2)
    a = E.lifted(x, y, delta=DELTA, order=order).epsilon
    # turn one miss of the inserted canaries into a hit: the TPR bound cannot drop
    zeros = np.argwhere(x == 0)
    if zeros.size:
        x2 = x.copy()
        x2[tuple(zeros[0])] = 1
        assert E.lifted(x2, y, delta=DELTA, order=order).epsilon >= a - EPS_TOL


@pytest.mark.slow
@FAST
@given(n=st.integers(200, 5000), mu=st.floats(0.2, 3.0),
       c1=st.sampled_from([0.8, 0.9, 0.95]), dc=st.sampled_from([0.04, 0.049]))
def test_higher_confidence_never_raises_the_bound(n, mu, c1, dc):
    e = int(math.ceil(n * ndtr(-mu / 2)))
    c2 = c1 + dc
    assert E.bits(n=n, errors=e, confidence=c2, family="gdp").epsilon <= \
        E.bits(n=n, errors=e, confidence=c1, family="gdp").epsilon + EPS_TOL
    g = max(1, n // 4)
    c = int(g * ndtr(mu / 2))
    assert E.steinke(m=n, guesses=g, correct=c, confidence=c2).epsilon <= \
        E.steinke(m=n, guesses=g, correct=c, confidence=c1).epsilon + EPS_TOL


# ------------------------------------------------------ below the true epsilon at typical data
@FAST
@given(n=st.integers(500, 50_000), mu=st.floats(0.3, 4.0))
def test_bits_below_true_epsilon_at_expected_errors(n, mu):
    # a mu-GDP mechanism decodes each bit with error >= Phi(-mu/2); expected errors at least that
    errors = min(n, int(math.ceil(n * ndtr(-mu / 2))))
    r = E.bits(n=n, errors=errors, family="gdp", delta=DELTA, confidence=0.95)
    assert r.epsilon <= GaussianDP(mu).epsilon(DELTA) + 1e-6


@SLOWER
@given(n=st.integers(500, 5000), mu=st.floats(0.3, 3.0), frac=st.sampled_from([0.1, 0.5, 1.0]))
def test_tight_below_true_epsilon_at_expected_errors(n, mu, frac):
    # top-r guesses of the optimal (likelihood-ratio) attack on a mu-GDP mechanism: with r = n
    # every bit is guessed and the error rate is Phi(-mu/2); fewer released guesses err less,
    # so the all-guesses rate is used for r = n only and the exact top-r rate otherwise.
    r = max(1, int(frac * n))
    if r == n:
        u = int(math.ceil(n * ndtr(-mu / 2)))
    else:
        # score = bit * mu + N(0,1), guess 1 for the top r/2 and 0 for the bottom r/2:
        # the error of a guess in the top tail t = Phi^{-1}(1 - r/(2n)) mixture
        from scipy.stats import norm

        t = norm.isf(r / (2 * n), loc=mu / 2)  # threshold of the upper r/2n quantile
        p_wrong = 0.5 * norm.sf(t) / (0.5 * norm.sf(t) + 0.5 * norm.sf(t - mu))
        u = int(math.ceil(r * p_wrong))
    res = E.tight(n=n, r=r, u=min(u, r), family="gdp", delta=DELTA, confidence=0.95)
    assert res.epsilon <= GaussianDP(mu).epsilon(DELTA) + 1e-6


@FAST
@given(m=st.integers(500, 50_000), eps=st.floats(0.1, 4.0), gfrac=st.floats(0.05, 1.0))
def test_steinke_below_true_epsilon_at_expected_correct(m, eps, gfrac):
    # randomised response with epsilon: each guess is right with probability e^eps/(1+e^eps)
    g = max(1, int(gfrac * m))
    c = int(math.floor(g * math.exp(eps) / (1 + math.exp(eps))))
    res = E.steinke(m=m, guesses=g, correct=c, delta=0.0, confidence=0.95)
    assert res.epsilon <= LaplaceDP(eps).epsilon(0.0) + 1e-6


@pytest.mark.slow
@FAST
@given(m=st.integers(500, 20_000), mu=st.floats(0.3, 3.0), gfrac=st.floats(0.05, 1.0))
def test_mahloujifar_below_true_epsilon_at_expected_correct(m, mu, gfrac):
    g = max(1, int(gfrac * m))
    c = int(math.floor(g * ndtr(mu / 2)))  # the best single-bit accuracy of mu-GDP
    res = E.mahloujifar(m=m, guesses=g, correct=c, family="gdp", delta=DELTA)
    assert res.epsilon <= GaussianDP(mu).epsilon(DELTA) + 1e-6


@FAST
@given(n=st.integers(200, 20_000), mu=st.floats(0.3, 3.0))
def test_multi_run_counts_below_true_epsilon_at_expected_rates(n, mu):
    # threshold mu/2 on a mu-GDP score: FNR = FPR = Phi(-mu/2)
    p = ndtr(-mu / 2)
    fn = int(math.ceil(n * p))
    fp = int(math.ceil(n * p))
    res = E.multi_run_counts(tp=n - fn, fn=fn, fp=fp, tn=n - fp, delta=DELTA)
    assert res.epsilon <= GaussianDP(mu).epsilon(DELTA) + 1e-6


# ------------------------------------------------------------------------ order invariance
@SLOWER
@given(seed=st.integers(0, 10_000), n=st.integers(200, 1500), mu=st.floats(0.5, 3.0))
def test_one_run_and_multi_run_invariant_to_order(seed, n, mu):
    rng = np.random.default_rng(seed)
    member = rng.random(n) < 0.5
    score = member * mu + rng.normal(size=n)  # continuous: no ties
    perm = rng.permutation(n)
    a = E.audit_one_run(member, score, methods=("bits", "steinke"), fractions=(0.1, 1.0),
                        family="gdp")
    b = E.audit_one_run(member[perm], score[perm], methods=("bits", "steinke"),
                        fractions=(0.1, 1.0), family="gdp")
    assert [r.epsilon for r in a] == [r.epsilon for r in b]
    assert E.multi_run(member, score, delta=DELTA).epsilon == \
        E.multi_run(member[perm], score[perm], delta=DELTA).epsilon


@FAST
@given(seed=st.integers(0, 10_000), trials=st.integers(20, 200), k=st.sampled_from([1, 2, 4]))
def test_lifted_invariant_to_trial_order(seed, trials, k):
    rng = np.random.default_rng(seed)
    x = (rng.random((trials, k)) < 0.7).astype(int)
    y = (rng.random((trials, k)) < 0.3).astype(int)
    px, py = rng.permutation(trials), rng.permutation(trials)
    order = min(k, 2)
    a = E.lifted(x, y, delta=DELTA, order=order)
    b = E.lifted(x[px], y[py], delta=DELTA, order=order)
    assert a.epsilon == b.epsilon
