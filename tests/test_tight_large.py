"""Issue 15 items on the tight bound: counts beyond 2^31, paper mode at u = 0, paper-mode size.

Each of these failed on main before the fix: scipy's ``bdtr`` returned NaN from n = 2^31 on, the
p-value became a meaningless bound, the Laplace family reported eps ~ 60 (a false violation) and
the GDP family an unrelated conversion error; ``mode="paper"`` reported a *larger* epsilon than
``mode="exact"`` at u = 0 (it over-claimed); and paper mode at r ~ 2^31 tried to allocate
tens of GiB.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit import estimators as E
from dpaudit.curves import GaussianDP
from dpaudit.stats.order_statistics import log_binom_cdf

BIG = 2**31 + 10


@pytest.mark.parametrize("z", [-3.0, -1.0, 0.0, 2.0])
def test_log_binom_cdf_beyond_int32(z):
    # Near the mean the binomial CDF is the normal CDF to O(1/sqrt(n)) ~ 2e-5 (Berry-Esseen,
    # with the continuity correction much better); an independent check of the beta path.
    p = 0.3
    sd = math.sqrt(BIG * p * (1 - p))
    u = int(BIG * p + z * sd)
    want = stats.norm.logcdf((u + 0.5 - BIG * p) / sd)
    got = float(log_binom_cdf(u, BIG, p))
    assert math.isfinite(got)
    assert got == pytest.approx(want, abs=1e-4)


def test_log_binom_cdf_continuous_across_int32():
    # the same relative position just below and above 2^31 gives the same probability
    p = 0.3
    lo, hi = 2**31 - 1000, 2**31 + 1000
    a = float(log_binom_cdf(int(lo * p - 2 * math.sqrt(lo * p * (1 - p))), lo, p))
    b = float(log_binom_cdf(int(hi * p - 2 * math.sqrt(hi * p * (1 - p))), hi, p))
    assert a == pytest.approx(b, abs=2e-3)


@pytest.mark.parametrize("family", ["gdp", "laplace"])
def test_tight_beyond_int32_matches_just_below(family):
    u_frac = 0.3
    small = E.tight(n=BIG - 20, r=BIG - 20, u=int((BIG - 20) * u_frac), family=family)
    big = E.tight(n=BIG, r=BIG, u=int(BIG * u_frac), family=family)
    assert not big.details["hit_ceiling"]
    assert big.epsilon == pytest.approx(small.epsilon, rel=1e-5)
    # the truth: an error rate of 0.3 is e* of mu = 2 Phi^{-1}(0.7)-GDP; with 2^31 bits the
    # bound sits right at it (GaussianDP(1.0488).epsilon(1e-5) = 4.63).
    if family == "gdp":
        mu = 2 * stats.norm.ppf(0.7)
        assert big.params["mu"] == pytest.approx(mu, rel=1e-3)
        assert big.params["mu"] <= mu


def test_paper_mode_refuses_huge_r_clearly():
    with pytest.raises(ValueError, match="mode='paper'.*r <= .*use mode='exact'"):
        E.tight(n=BIG, r=BIG, u=BIG // 3, mode="paper", family="gdp")
    with pytest.raises(ValueError, match="mode='hoeffding'"):
        E.tight_p_value(GaussianDP(1.0), n=BIG, r=BIG, u=10, mode="hoeffding")


@pytest.mark.slow
@pytest.mark.parametrize("u", [0, 1, 3])
@pytest.mark.parametrize("n,r", [(1000, 100), (10000, 1000), (500, 500)])
def test_paper_and_hoeffding_never_tighter_than_exact(n, r, u):
    exact = E.tight(n=n, r=r, u=u, mode="exact", family="gdp").epsilon
    for mode in ("paper", "hoeffding"):
        got = E.tight(n=n, r=r, u=u, mode=mode, family="gdp").epsilon
        assert got <= exact + 1e-6 * max(1.0, exact)


def test_paper_mode_u0_is_the_exact_tail():
    # at u = 0 the Chernoff bound is prod(1 - p_i) < P[T = 0] (positive association), so the
    # floor by the exact tail is what is reported: the same bound as exact mode.
    a = E.tight(n=1000, r=100, u=0, mode="exact", family="gdp")
    b = E.tight(n=1000, r=100, u=0, mode="paper", family="gdp")
    assert b.params["mu"] == pytest.approx(a.params["mu"], abs=2e-6 * a.params["mu"])
    assert np.isclose(b.epsilon, a.epsilon, rtol=1e-5)
