"""The power of a zoo row (dpaudit.zoo.power) against an independent computation with SciPy's
beta quantiles, and the rho currency of the zCDP rows."""

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.curves.zcdp import zcdp_rho
from dpaudit.zoo.power import box_bound, detectable_epsilon, detectable_mass, power


def _independent_mass(n: int, confidence: float, eps: float, delta: float) -> float:
    """Smallest k / n with log((CP_lo(k) - delta) / CP_hi(0)) > eps, each Clopper-Pearson
    bound one-sided at (1 - confidence) / 4 (two-sided intervals at 1 - (1 - c) / 2)."""
    tail = (1 - confidence) / 4
    hi0 = 1 - tail ** (1 / n)
    k = np.arange(1, n + 1)
    lo = stats.beta.ppf(tail, k, n - k + 1)
    ok = np.log(np.maximum(lo - delta, 1e-300) / hi0) > eps
    return float(k[np.argmax(ok)] / n) if ok.any() else math.inf


@pytest.mark.parametrize("n,conf,eps,delta", [(4000, 1 - 0.01 / 48, 1.0, 0.0),
                                              (4000, 1 - 0.01 / 48, 1.0, 1e-3),
                                              (500, 0.99, 2.0, 0.0),
                                              (120, 0.9998, 1.0, 1e-15)])
def test_detectable_mass_matches_scipy(n, conf, eps, delta):
    assert detectable_mass(n, conf, eps, delta) == _independent_mass(n, conf, eps, delta)


def test_nothing_is_detectable_when_the_ceiling_is_below_the_claim():
    # 2000 runs at confidence 0.9998: TPR 1, FPR 0 gives log(0.99955 / 0.0049) = 5.3 < 20
    assert math.isinf(detectable_mass(2000, 0.9998, 20.0, 0.0))
    assert math.isinf(detectable_epsilon(2000, 0.9998, 20.0, 0.0))
    assert power(2000, 0.9998, 20.0, 0.0).describe() == "never; never"


def test_detectable_epsilon_shrinks_with_trials():
    e = [detectable_epsilon(n, 0.999, 1.0, 0.0) for n in (500, 4000, 60000)]
    assert e[0] > e[1] > e[2] > 1.0
    # at its detectable eps' randomized response's bound is above the claim, just below not
    n = 4000
    for e_rr, above in ((e[1], True), (e[1] - 0.02, False)):
        p = 1 / (1 + math.exp(-e_rr))
        b = float(box_bound(round(p * n), n, round((1 - p) * n), n, delta=0.0,
                            confidence=0.999))
        assert (b > 1.0) == above


def test_rho_currency_bound_is_the_corner_rho():
    # the rho bound of a box is rho* of the corner (FPR_hi, TPR_lo), from SciPy's quantiles
    n, tp, fp, conf = 1000, 900, 300, 0.99
    tail = (1 - conf) / 4
    tpr_lo = stats.beta.ppf(tail, tp, n - tp + 1)
    fpr_hi = stats.beta.isf(tail, fp + 1, n - fp)
    got = float(box_bound(tp, n, fp, n, delta=0.0, confidence=conf, currency="rho"))
    assert got == pytest.approx(float(zcdp_rho(tpr_lo, fpr_hi)), rel=1e-9)
    assert math.isinf(detectable_mass(100, 0.99, 50.0, 0.0, currency="rho"))
