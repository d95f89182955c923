"""Binomial confidence bounds against closed forms and SciPy's independent implementations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit.stats import clopper_pearson, hoeffding, jeffreys, wilson


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (17, 250), (249, 250), (1, 1)])
def test_clopper_pearson_matches_binomtest(k, n):
    lo, hi = clopper_pearson(k, n, 0.95)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert lo == pytest.approx(ci.low, abs=1e-10)
    assert hi == pytest.approx(ci.high, abs=1e-10)


def test_clopper_pearson_edge_cases_closed_form():
    n = 10
    lo, hi = clopper_pearson(0, n, 0.95)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / n), abs=1e-12)
    lo, hi = clopper_pearson(n, n, 0.95)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** (1 / n), abs=1e-12)
    # one-sided bounds spend the whole 5%
    _, up = clopper_pearson(0, n, 0.95, "upper")
    assert up == pytest.approx(1 - 0.05 ** (1 / n), abs=1e-12)
    low, one = clopper_pearson(n, n, 0.95, "lower")
    assert low == pytest.approx(0.05 ** (1 / n), abs=1e-12) and one == 1.0


def test_vectorised_shapes_and_values():
    k = np.array([0, 5, 10])
    lo, hi = clopper_pearson(k, 10, 0.9, "upper")
    assert lo.shape == (3,) and np.all(lo == 0)
    for i, kk in enumerate(k):
        assert hi[i] == pytest.approx(clopper_pearson(int(kk), 10, 0.9, "upper")[1])


@pytest.mark.parametrize("k,n", [(0, 20), (7, 20), (20, 20), (130, 1000)])
def test_wilson_matches_binomtest(k, n):
    lo, hi = wilson(k, n, 0.95)
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert lo == pytest.approx(ci.low, abs=1e-10)
    assert hi == pytest.approx(ci.high, abs=1e-10)


def test_jeffreys_and_hoeffding_closed_forms():
    lo, hi = jeffreys(7, 20, 0.95)
    assert lo == pytest.approx(stats.beta.ppf(0.025, 7.5, 13.5), abs=1e-12)
    assert hi == pytest.approx(stats.beta.ppf(0.975, 7.5, 13.5), abs=1e-12)
    assert jeffreys(0, 20, 0.95)[0] == 0.0 and jeffreys(20, 20, 0.95)[1] == 1.0
    lo, hi = hoeffding(50, 100, 0.95, "lower")
    assert lo == pytest.approx(0.5 - np.sqrt(np.log(1 / 0.05) / 200), abs=1e-12)
    assert hi == 1.0


@pytest.mark.slow
@pytest.mark.parametrize("method", [clopper_pearson, hoeffding])
def test_exact_methods_cover(method):
    """CP and Hoeffding are exact/conservative: coverage >= 95% for every p.

    20,000 seeded draws per p; the Monte Carlo standard error of a 95% rate is 0.0015, so a
    floor of 0.95 - 4.5 sd = 0.943 cannot be crossed by a valid method by chance.
    """
    rng = np.random.default_rng(12345)
    n = 40
    for p in (0.02, 0.3, 0.5, 0.93):
        k = rng.binomial(n, p, size=20_000)
        lo, hi = method(k, n, 0.95)
        assert np.mean((lo <= p) & (p <= hi)) >= 0.943


@pytest.mark.parametrize("args,match", [((11, 10), "k must be in"), ((-1, 10), "k must be in"),
                                        ((1, 0), "n must be"), ((1.5, 10), "whole")])
def test_bad_counts(args, match):
    with pytest.raises(ValueError, match=match):
        clopper_pearson(*args)


@pytest.mark.parametrize("conf", [0.0, 1.0, 1.5, float("nan")])
def test_bad_confidence(conf):
    with pytest.raises(ValueError, match="confidence"):
        wilson(1, 10, conf)
