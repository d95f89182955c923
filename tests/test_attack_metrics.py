"""Attack metrics with intervals (dpaudit.stats.attack_metrics): point values against
brute-force definitions, and Monte Carlo coverage on Gaussian scores whose AUROC and TPR at a
fixed FPR are known in closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.stats.attack_metrics import (
    attack_metrics,
    auroc,
    auroc_interval,
    rates_at_threshold,
    tpr_at_fpr,
    tpr_at_fpr_interval,
)


def _pairwise(x, y):
    psi = (x[:, None] > y[None, :]) + 0.5 * (x[:, None] == y[None, :])
    return psi


def test_auroc_and_delong_equal_their_pairwise_definitions():
    rng = np.random.default_rng(0)
    x = np.round(rng.normal(0.5, 1, 37), 1)   # rounding makes ties
    y = np.round(rng.normal(0.0, 1, 53), 1)
    member = np.r_[np.ones(37, bool), np.zeros(53, bool)]
    s = np.r_[x, y]
    psi = _pairwise(x, y)
    a = psi.mean()
    assert auroc(member, s) == pytest.approx(a, rel=1e-12)
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    se = math.sqrt(v10.var(ddof=1) / 37 + v01.var(ddof=1) / 53)
    z = stats.norm.isf(0.025)
    ci = auroc_interval(member, s, 0.95, "delong")
    assert ci.low == pytest.approx(a - z * se, rel=1e-10)
    assert ci.high == pytest.approx(a + z * se, rel=1e-10)


def test_hanley_mcneil_formula():
    """Hanley & McNeil (1982) Eq. 2 by hand for A = 0.8, m = 50, n = 70."""
    rng = np.random.default_rng(1)
    member = np.r_[np.ones(50, bool), np.zeros(70, bool)]
    s = np.r_[rng.normal(1.2, 1, 50), rng.normal(0, 1, 70)]
    a = auroc(member, s)
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    se = math.sqrt((a * (1 - a) + 49 * (q1 - a * a) + 69 * (q2 - a * a)) / (50 * 70))
    ci = auroc_interval(member, s, 0.9, "hanley_mcneil")
    assert ci.high - ci.low == pytest.approx(2 * stats.norm.isf(0.05) * se, rel=1e-10)


def test_tpr_at_fpr_is_the_best_threshold_under_the_fpr_cap():
    member = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], bool)
    s = np.array([9, 7, 5, 3, 8, 6, 4, 2, 1, 0, -1, -2, -3, -4], float)
    # FPR <= 0.1: at most one of 10 non-members above: threshold just above 6 -> TPR 2/4
    assert tpr_at_fpr(member, s, 0.1) == 0.5
    assert tpr_at_fpr(member, s, 0.0) == 0.25       # above 8: only the 9
    assert tpr_at_fpr(member, s, 0.2) == 0.75       # above 4
    # brute force over all thresholds score >= t
    for f in (0.0, 0.1, 0.15, 0.3, 1.0):
        best = 0.0
        for t in np.r_[np.unique(s), np.inf]:
            fpr = np.mean(s[~member] >= t)
            if fpr <= f + 1e-12:
                best = max(best, np.mean(s[member] >= t))
        assert tpr_at_fpr(member, s, f) == best


def test_rates_at_fixed_threshold_are_clopper_pearson():
    member = np.r_[np.ones(40, bool), np.zeros(60, bool)]
    s = np.r_[np.arange(40) / 40, np.arange(60) / 60 - 0.5]
    out = rates_at_threshold(member, s, 0.25, 0.95)
    tp, fp = int(np.sum(s[:40] >= 0.25)), int(np.sum(s[40:] >= 0.25))
    lo = stats.beta.ppf(0.025, tp, 40 - tp + 1)
    hi = stats.beta.ppf(0.975, fp + 1, 60 - fp)
    assert out["tpr"].estimate == tp / 40 and out["tpr"].low == pytest.approx(lo)
    assert out["fpr"].estimate == fp / 60 and out["fpr"].high == pytest.approx(hi)


@pytest.mark.parametrize("kw, msg", [
    (dict(method="wald"), "method"),
    (dict(confidence=1.0), "confidence"),
])
def test_bad_arguments(kw, msg):
    with pytest.raises(ValueError, match=msg):
        auroc_interval([1, 0], [1.0, 0.0], **kw)
    with pytest.raises(ValueError, match="both 0 and 1"):
        auroc([1, 1], [1.0, 0.0])
    with pytest.raises(ValueError, match="fpr"):
        tpr_at_fpr([1, 0], [1.0, 0.0], 1.5)


def test_attack_metrics_dict_is_json_ready():
    rng = np.random.default_rng(2)
    member = rng.random(400) < 0.5
    s = rng.normal(size=400) + member
    d = attack_metrics(member, s, fprs=(0.05,), n_resamples=200)
    assert d["auroc"]["low"] < d["auroc"]["estimate"] < d["auroc"]["high"]
    assert d["auroc"]["estimate"] == pytest.approx(auroc(member, s))
    assert d["tpr_at_fpr_0.05"]["method"] == "bca"
    assert d["tpr_at_fpr_0.05"]["estimate"] == tpr_at_fpr(member, s, 0.05)


def _coverage(reps, n, d, fn, truth, seed):
    rng = np.random.default_rng(seed)
    member = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    hits = 0
    for _ in range(reps):
        s = np.r_[rng.normal(d, 1, n), rng.normal(0, 1, n)]
        ci = fn(member, s)
        hits += ci.low <= truth <= ci.high
    return hits / reps


@pytest.mark.slow
@pytest.mark.parametrize("method", ["delong", "hanley_mcneil"])
def test_auroc_normal_intervals_cover(method):
    """Members N(1, 1), non-members N(0, 1): AUROC = Phi(1/sqrt 2) = 0.7602.  1000 reps of
    n = 100 + 100; the coverage estimate has sd 0.007, so [0.93, 0.97] is +-3 sd around the
    nominal 0.95 (both normal intervals are asymptotically exact; Hanley-McNeil's variance
    is an approximation that is close for Gaussian scores at this AUROC)."""
    truth = stats.norm.cdf(1 / math.sqrt(2))
    cov = _coverage(1000, 100, 1.0, lambda m, s: auroc_interval(m, s, 0.95, method), truth, 7)
    assert 0.93 <= cov <= 0.97, cov


@pytest.mark.slow
def test_auroc_bca_covers():
    """BCa (scipy.stats.bootstrap, 499 stratified resamples) on 200 reps of n = 50 + 50:
    coverage sd 0.015; BCa is second-order accurate but slightly liberal at small n, so the
    band is [0.90, 0.99]."""
    truth = stats.norm.cdf(1 / math.sqrt(2))
    cov = _coverage(200, 50, 1.0, lambda m, s: auroc_interval(
        m, s, 0.95, "bca", n_resamples=499, seed=0), truth, 8)
    assert 0.90 <= cov <= 0.99, cov


@pytest.mark.slow
@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_tpr_at_fpr_bootstrap_covers(method):
    """TPR at FPR 0.1 with the threshold re-chosen on the data: the population value is
    P[N(1,1) > Phi^{-1}(0.9)] = 0.3891.  200 reps, n = 200 + 200, 499 resamples; coverage
    sd 0.015; the statistic is a step function of an order statistic, so the bootstrap is
    rougher than for the AUROC: band [0.88, 0.99] (BCa and the percentile interval the CLI
    uses above 5,000 observations)."""
    truth = stats.norm.sf(stats.norm.isf(0.1) - 1.0)
    cov = _coverage(200, 200, 1.0, lambda m, s: tpr_at_fpr_interval(
        m, s, 0.1, 0.95, n_resamples=499, seed=0, method=method), truth, 9)
    assert 0.88 <= cov <= 0.99, cov


@pytest.mark.slow
def test_fixed_threshold_clopper_pearson_covers():
    """Exact interval: coverage >= 0.95 for every n (Clopper-Pearson is conservative).
    2000 reps, n = 50 + 50, threshold 1.0 fixed in advance: TPR = 0.5, FPR = 0.1587; the
    estimate's sd is 0.005, so >= 0.94 allows 2 sd."""
    rng = np.random.default_rng(10)
    member = np.r_[np.ones(50, bool), np.zeros(50, bool)]
    tpr, fpr = 0.5, stats.norm.sf(1.0)
    hit_t = hit_f = 0
    for _ in range(2000):
        s = np.r_[rng.normal(1, 1, 50), rng.normal(0, 1, 50)]
        r = rates_at_threshold(member, s, 1.0, 0.95)
        hit_t += r["tpr"].low <= tpr <= r["tpr"].high
        hit_f += r["fpr"].low <= fpr <= r["fpr"].high
    assert hit_t / 2000 >= 0.94 and hit_f / 2000 >= 0.94


def test_delong_agrees_with_the_report_summary():
    """Two DeLong implementations exist (report/summaries.py for the audit card, this module
    for results); until one delegates to the other they must agree."""
    from dpaudit.report.summaries import card_auroc as card_interval

    rng = np.random.default_rng(3)
    member = rng.random(3000) < 0.4
    s = np.round(rng.normal(size=3000) + 0.7 * member, 1)     # ties
    a = auroc_interval(member, s, 0.9, "delong")
    est, lo, hi = card_interval(member, s, 0.9)
    assert (a.estimate, a.low, a.high) == pytest.approx((est, lo, hi), rel=1e-10)
