"""Monte Carlo coverage of every XBern interval on correlated XBern data (LiDP notes §5.5-5.6).

Data model (LiDP notes §4.3.7): per trial p ~ Beta(a, b), then K i.i.d. Bernoulli(p) tests.
This is an exchangeable XBern with mu_l = E[p^l]; mu_1 = a / (a + b) is known exactly, and
the Beta(0.5, 4.5) mixture is strongly correlated (Var(m_1) is 6 times its independent value).

Tolerance: with R repetitions the empirical failure rate of a bound whose true failure rate is
beta has standard error sqrt(beta (1 - beta) / R); we allow 3 standard errors (R = 2000,
beta = 0.05: 0.0146).  The Bernstein intervals are finite-sample valid (Props. 7-9).  The Wilson
intervals are asymptotic (Prop. 11): they are checked at n = 1000 where the CLT error of a mean
of [0, 1] variables is well inside that tolerance.  All seeds are fixed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.stats.intervals_xbern import bernoulli_interval, xbern_interval_from_counts

R = 2000
BETA = 0.05
TOL = 3 * math.sqrt(BETA * (1 - BETA) / R)

SETTINGS = {  # name: (a, b) of the Beta mixture; None = fixed p (independent canaries)
    "independent p=0.1": None,
    "weak Beta(2,18)": (2.0, 18.0),
    "strong Beta(0.5,4.5)": (0.5, 4.5),
}
INTERVALS = [("bernstein", 1), ("bernstein", 2), ("bernstein", 4), ("wilson", 1),
             ("wilson", 2), ("wilson", 4)]


def _counts(setting: str, n: int, k: int, seed: int) -> tuple[np.ndarray, float]:
    rng = np.random.default_rng(seed)
    ab = SETTINGS[setting]
    if ab is None:
        p = np.full((R, n), 0.1)
        mu1 = 0.1
    else:
        p = rng.beta(ab[0], ab[1], size=(R, n))
        mu1 = ab[0] / (ab[0] + ab[1])
    return rng.binomial(k, p), mu1


@pytest.mark.slow
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_xbern_intervals_cover_on_correlated_data(setting: str) -> None:
    k = 16
    for n, methods in ((200, [m for m in INTERVALS if m[0] == "bernstein"]),
                       (1000, INTERVALS)):
        s, mu1 = _counts(setting, n, k, seed=n + len(setting))
        for method, order in methods:
            for extra in ({}, {"exact_eq18": True}) if (method, order) == ("wilson", 4) \
                    else ({},):
                lo, _ = xbern_interval_from_counts(s, k, 1 - BETA, "lower", method, order,
                                                   **extra)
                _, hi = xbern_interval_from_counts(s, k, 1 - BETA, "upper", method, order,
                                                   **extra)
                fail_lo = float(np.mean(mu1 < lo))
                fail_hi = float(np.mean(mu1 > hi))
                assert fail_lo <= BETA + TOL, (setting, n, method, order, extra, fail_lo)
                assert fail_hi <= BETA + TOL, (setting, n, method, order, extra, fail_hi)
                # two-sided at the same confidence: joint coverage >= confidence
                lo2, hi2 = xbern_interval_from_counts(s, k, 1 - BETA, "two-sided", method,
                                                      order, **extra)
                cover = float(np.mean((lo2 <= mu1) & (mu1 <= hi2)))
                assert cover >= 1 - BETA - TOL, (setting, n, method, order, extra, cover)


@pytest.mark.slow
def test_higher_order_wilson_adapts_to_correlation() -> None:
    # LiDP notes §4.3.7: the W2/W1 width ratio grows with the correlation (n=200, K=16)
    ratios = []
    for setting in SETTINGS:
        s, _ = _counts(setting, 200, 16, seed=7)
        lo1, hi1 = xbern_interval_from_counts(s[:400], 16, 0.95, "two-sided", "wilson", 1)
        lo2, hi2 = xbern_interval_from_counts(s[:400], 16, 0.95, "two-sided", "wilson", 2)
        ratios.append(float(np.mean(hi2 - lo2) / np.mean(hi1 - lo1)))
    assert ratios[0] < ratios[1] < ratios[2]
    # spec's table: 0.0473/0.0700, 0.0521/0.0703, 0.0613/0.0700 (one-sided beta = 0.05 each)
    assert ratios == pytest.approx([0.0473 / 0.0700, 0.0521 / 0.0703, 0.0613 / 0.0700],
                                   abs=0.03)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["clopper_pearson", "jeffreys", "wilson", "bernstein"])
def test_bernoulli_baselines_cover(method: str) -> None:
    rng = np.random.default_rng(42)
    n, p = 1000, 0.1
    k = rng.binomial(n, p, size=R)
    lo, _ = bernoulli_interval(k, n, 1 - BETA, "lower", method)
    _, hi = bernoulli_interval(k, n, 1 - BETA, "upper", method)
    assert float(np.mean(p < lo)) <= BETA + TOL
    assert float(np.mean(p > hi)) <= BETA + TOL
