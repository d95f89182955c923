"""Monte Carlo checks of Beyond Worst Case's bounds on mechanisms with known privacy (slow-marked,
seeded).

* Prop. B.1: k-ary randomized response with a near-uniform prior and the Bayes attacker meets
  Thm 3.2 *exactly*: conditional on the outputs, the success count is Poisson-binomial(beta_i).
* Thm 3.5 (and Cor 3.4) hold on an (eps, delta)-DP mechanism whose delta part is real: with
  probability delta the data are released in the clear, otherwise eps-RR is applied per record.
  The pure bound (delta ignored) is violated there, so the test has power.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit import risk
from dpaudit.stats import clopper_pearson

pytestmark = pytest.mark.slow

PRIOR = np.array([0.3, 0.25, 0.2, 0.15, 0.1])  # max/min = 3 <= e^eps for eps >= ln 3


def _rr(x: np.ndarray, eps: float, m: int, rng: np.random.Generator) -> np.ndarray:
    """k-ary randomized response: keep w.p. e^eps/(e^eps - 1 + m), else a uniform other value."""
    keep = rng.random(x.shape) < math.exp(eps) / (math.exp(eps) - 1 + m)
    other = (x + rng.integers(1, m, size=x.shape)) % m
    return np.where(keep, x, other)


def _pb_tails_batched(b: np.ndarray) -> np.ndarray:
    """Independent Poisson-binomial tails, one row per trial: DP vectorised over trials."""
    r, n = b.shape
    pmf = np.zeros((r, n + 1))
    pmf[:, 0] = 1.0
    for i in range(n):
        pmf[:, 1:] = pmf[:, 1:] * (1 - b[:, i:i + 1]) + pmf[:, :-1] * b[:, i:i + 1]
        pmf[:, 0] *= 1 - b[:, i]
    return np.concatenate([np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1], np.zeros((r, 1))], axis=1)


def test_prop_b1_randomized_response_meets_thm32_exactly() -> None:
    eps, m, n, trials = 1.2, PRIOR.size, 40, 20_000
    assert PRIOR.max() <= math.exp(eps) * PRIOR.min()  # the condition of Prop. B.1
    rng = np.random.default_rng(20250708)
    x = rng.choice(m, size=(trials, n), p=PRIOR)
    a = _rr(x, eps, m, rng)
    # Bayes attacker: under the condition, argmax_b Pr[X = b | RR = a] = a
    post = PRIOR[:, None] * np.where(np.eye(m, dtype=bool), math.exp(eps), 1.0)
    assert np.all(np.argmax(post, axis=0) == np.arange(m))
    z = a
    success = (x == z)
    beta_i = risk.beta(PRIOR[z], eps)  # p_i(z) = D(z_i)

    # (1) per output value: Pr[X = a | RR = a] = beta(D(a), eps).  ~160k samples per value;
    # 5 standard errors per comparison (5 comparisons) -> false-failure rate < 3e-6.
    for v in range(m):
        mask = z == v
        emp = success[mask].mean()
        b = float(risk.beta(PRIOR[v], eps))
        assert abs(emp - b) < 5 * math.sqrt(b * (1 - b) / mask.sum())

    # (2) the count L = sum_i success_i given the outputs is exactly PoissonBinomial(beta_i):
    # E[L - sum beta] = 0 and Var(L - sum beta) = E[sum beta (1 - beta)].
    count = success.sum(axis=1)
    resid = count - beta_i.sum(axis=1)
    var = (beta_i * (1 - beta_i)).sum(axis=1)
    zstat = resid.sum() / math.sqrt(var.sum())
    assert abs(zstat) < 4.5  # N(0,1) under exactness
    # variance ratio: sd of the ratio estimate is about sqrt(2 / trials) = 0.01 -> 5 sd
    assert (resid ** 2).sum() / var.sum() == pytest.approx(1.0, abs=0.05)

    # (3) tails: empirical Pr[L >= v] equals the average Thm 3.2 bound E[T_a(v)] (attained).
    tails = _pb_tails_batched(beta_i)
    for v in range(22, 34, 2):
        emp = (count >= v).mean()
        bound = tails[:, v].mean()
        se = math.sqrt(bound * (1 - bound) / trials)
        assert abs(emp - bound) < 4.5 * se + 1e-4
    # and the library's Thm 3.2 agrees with the batched oracle on a trial
    np.testing.assert_allclose(risk.pure_tail(PRIOR[z[0]], eps).tail, tails[0], atol=1e-13)


def test_thm35_and_cor34_hold_on_eps_delta_mechanism() -> None:
    eps, delta, m, n, trials = 1.2, 0.01, PRIOR.size, 20, 200_000
    rng = np.random.default_rng(7)
    x = rng.choice(m, size=(trials, n), p=PRIOR)
    clear = rng.random(trials) < delta  # the delta part: release the data verbatim
    a = np.where(clear[:, None], x, _rr(x, eps, m, rng))
    z = a  # exact when in the clear; Bayes-optimal RR attacker otherwise
    count = (x == z).sum(axis=1)

    tb35 = risk.thm35_tail(np.full(n, PRIOR.max()), eps, delta)  # p*_i = max_z D(z)
    pure = risk.pure_tail(np.full(n, PRIOR.max()), eps)
    cor = risk.cor34_tail(PRIOR[z[:5000]], eps, delta)  # Cor 3.4 from 5000 runs' attempts
    # Validity: the true tail must not exceed the bound.  Compare the bound with a one-sided
    # Clopper-Pearson *lower* confidence bound of the empirical tail at level 1 - 1e-6/(n+1),
    # so a correct bound fails this test with probability < 1e-6 (union over the n + 1 v's).
    # Cor 3.4's bound is itself a Monte Carlo average (5000 runs); its standard error is added.
    ks = np.array([(count >= v).sum() for v in range(1, n + 1)])
    lo, _ = clopper_pearson(ks, trials, 1 - 1e-6 / (n + 1), side="lower")
    v = np.arange(1, n + 1)
    assert np.all(lo <= tb35.sf(v))
    assert np.all(lo <= cor.sf(v) + 5 * cor.stderr[1:n + 1])
    # Power: the delta mass is visible -- at v = n the empirical tail (about delta) is far above
    # the pure bound beta^n, and Thm 3.5's alpha term is what covers it.
    emp_n = (count >= n).mean()
    assert lo[-1] > pure.sf(n) * 100
    assert tb35.sf(n) >= emp_n * 0.9
    # and Thm 3.5 is not vacuous in the bulk
    assert tb35.v_ub(0.95) < n
