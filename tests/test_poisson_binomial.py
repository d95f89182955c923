"""Poisson-binomial pmf/tails: exact DP, log-space DP and FFT divide-and-conquer, cross-checked
against brute-force enumeration, the binomial special case (scipy) and each other."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.stats import (
    poisson_binomial_logpmf,
    poisson_binomial_pmf,
    poisson_binomial_quantile,
    poisson_binomial_sf,
    poisson_binomial_tail,
)


def _brute_pmf(p: np.ndarray) -> np.ndarray:
    n = p.size
    out = np.zeros(n + 1)
    for bits in itertools.product([0, 1], repeat=n):
        b = np.array(bits)
        out[b.sum()] += np.prod(np.where(b == 1, p, 1 - p))
    return out


@pytest.mark.parametrize("method", ["dp", "log", "fft"])
def test_pmf_matches_enumeration(method: str) -> None:
    p = np.random.default_rng(1).uniform(0, 1, 11)
    # 2^11 subsets enumerated directly; every method is exact up to rounding (1e-14 absolute).
    np.testing.assert_allclose(poisson_binomial_pmf(p, method=method), _brute_pmf(p),
                               atol=1e-14, rtol=0)


def test_binomial_special_case_matches_scipy() -> None:
    n, q = 1000, 0.3
    ref = stats.binom.pmf(np.arange(n + 1), n, q)
    for method in ("dp", "fft"):
        got = poisson_binomial_pmf(np.full(n, q), method=method)
        bulk = ref > 1e-10
        # DP: relative accuracy in the bulk; FFT: absolute round-off ~1e-15 of the mode.
        np.testing.assert_allclose(got[bulk], ref[bulk], rtol=1e-9 if method == "dp" else 1e-4)
        assert np.max(np.abs(got - ref)) < 1e-14
    tail = poisson_binomial_tail(np.full(n, q))
    np.testing.assert_allclose(tail[1:n + 1], stats.binom.sf(np.arange(n), n, q), atol=1e-13)
    assert tail[0] == 1.0 and tail[-1] == 0.0


def test_methods_cross_check_large_n() -> None:
    p = np.random.default_rng(2).beta(0.5, 2.0, 4000)
    dp = poisson_binomial_pmf(p, method="dp")
    fft = poisson_binomial_pmf(p, method="fft")
    lg = poisson_binomial_pmf(p, method="log")
    assert np.max(np.abs(dp - fft)) < 1e-13
    assert np.max(np.abs(dp - lg)) < 1e-13
    np.testing.assert_allclose(poisson_binomial_tail(p, method="fft"),
                               poisson_binomial_tail(p, method="dp"), atol=1e-12)


def test_fft_moments_for_1e5_targets() -> None:
    p = np.random.default_rng(3).uniform(0.0, 1.0, 100_000)
    pmf = poisson_binomial_pmf(p)  # auto -> fft
    s = np.arange(pmf.size)
    mean = float((s * pmf).sum())
    var = float(((s - mean) ** 2 * pmf).sum())
    assert mean == pytest.approx(p.sum(), rel=1e-10)
    assert var == pytest.approx((p * (1 - p)).sum(), rel=1e-8)
    assert pmf.min() >= 0 and pmf.sum() == pytest.approx(1.0, abs=1e-12)


def test_logpmf_extreme_tail() -> None:
    # all 300 successes with p = 1e-5: probability 1e-1500 underflows everything but log space.
    p = np.full(300, 1e-5)
    lp = poisson_binomial_logpmf(p)
    assert lp[300] == pytest.approx(300 * math.log(1e-5), rel=1e-12)
    assert lp[0] == pytest.approx(300 * math.log1p(-1e-5), rel=1e-12)
    ref = stats.binom.logpmf(np.arange(301), 300, 1e-5)
    np.testing.assert_allclose(lp, ref, rtol=1e-9)


def test_logpmf_degenerate_probabilities() -> None:
    lp = poisson_binomial_logpmf([0.0, 1.0, 1.0])
    assert np.isneginf(lp[0]) and np.isneginf(lp[1]) and np.isneginf(lp[3])
    assert lp[2] == 0.0


def test_sf_and_quantile() -> None:
    p = np.full(50, 0.4)
    assert poisson_binomial_sf(p, 0) == 1.0
    assert poisson_binomial_sf(p, -3.5) == 1.0
    assert poisson_binomial_sf(p, 51) == 0.0
    assert poisson_binomial_sf(p, 25) == pytest.approx(stats.binom.sf(24, 50, 0.4), abs=1e-14)
    # real v rounds up: Pr[S >= 24.2] = Pr[S >= 25]
    assert poisson_binomial_sf(p, 24.2) == poisson_binomial_sf(p, 25)
    qs = [0.05, 0.5, 0.95]
    np.testing.assert_array_equal(poisson_binomial_quantile(p, qs), stats.binom.ppf(qs, 50, 0.4))
    assert poisson_binomial_pmf([]).tolist() == [1.0]


@pytest.mark.parametrize("bad", [[0.5, 1.2], [-0.1], [np.nan]])
def test_bad_probabilities(bad: list[float]) -> None:
    with pytest.raises(ValueError, match="probs"):
        poisson_binomial_pmf(bad)


def test_bad_method_and_quantile() -> None:
    with pytest.raises(ValueError, match="method"):
        poisson_binomial_pmf([0.5], method="magic")
    with pytest.raises(ValueError, match="q must"):
        poisson_binomial_quantile([0.5], 1.0)
