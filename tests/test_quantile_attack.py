"""Quantile-regression membership scores (Bertran et al., NeurIPS 2023): pinball loss by hand,
calibration of the fitted quantile on fresh non-members, and the gain over a global
threshold on examples of unequal difficulty (against the analytic AUROC of both tests)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.attacks.quantile import (
    QuantileOptions,
    fit_quantile_model,
    pinball_loss,
    quantile_membership_scores,
)
from needs import need


@pytest.fixture(autouse=True, scope="module")
def _frameworks() -> None:
    """scikit-learn: imported when a test of this module runs, not when the suite is collected."""
    need("sklearn")


def test_pinball_loss_by_hand():
    # a = 0.9: residuals 1 -> 0.9, -2 -> 0.2, 0 -> 0; mean = 1.1 / 3
    assert pinball_loss([1.0, -2.0, 0.0], [0.0, 0.0, 0.0], 0.9) == pytest.approx(1.1 / 3)


def _population(n, rng, shift=0.0):
    """Difficulty d(x) = 3 x_0 varies across examples; statistic = d + N(0, 1) (+ shift)."""
    x = rng.uniform(-1, 1, size=(n, 3))
    return x, 3.0 * x[:, 0] + rng.standard_normal(n) + shift


def _auc(pos, neg):
    return stats.mannwhitneyu(pos, neg).statistic / (pos.size * neg.size)


@pytest.mark.slow
def test_calibrated_on_fresh_non_members():
    rng = np.random.default_rng(0)
    xp, sp = _population(2000, rng)
    model = fit_quantile_model(xp, sp, QuantileOptions(quantile=0.9, max_iter=60, seed=0))
    xf, sf = _population(20000, rng)
    # P[s > q_0.9(x)] = 0.1 for every x; fitted model: within 0.025 of it (2e4 fresh draws,
    # s.e. 0.002, plus the regressor's error from 2000 public examples)
    assert np.mean(model.score(xf, sf) > 0) == pytest.approx(0.1, abs=0.025)


@pytest.mark.slow
@pytest.mark.parametrize("standardize", [False, True])
def test_beats_a_global_threshold_by_the_analytic_margin(standardize):
    rng = np.random.default_rng(1)
    xp, sp = _population(2000, rng)
    xo, so = _population(3000, rng)             # audited non-members
    xi, si = _population(3000, rng, shift=1.0)  # audited members (statistic shifted by 1)
    q = quantile_membership_scores(xp, sp, np.vstack([xo, xi]), np.r_[so, si],
                                   QuantileOptions(quantile=0.9, standardize=standardize,
                                                   max_iter=60))
    auc_q = _auc(q[3000:], q[:3000])
    auc_raw = _auc(si, so)
    # analytic: raw statistic N(0, 3 + 1) vs N(1, 4) -> Phi(1 / sqrt(8)); difficulty removed
    # (oracle): N(0, 1) vs N(1, 1) -> Phi(1 / sqrt(2))
    assert auc_raw == pytest.approx(stats.norm.cdf(1 / math.sqrt(8)), abs=0.02)
    assert auc_q == pytest.approx(stats.norm.cdf(1 / math.sqrt(2)), abs=0.03)


@pytest.mark.parametrize("kwargs, needle", [
    (dict(quantile=1.0), "quantile"), (dict(quantile=0.0), "quantile"),
    (dict(quantile=0.3, standardize=True), "quantile"), (dict(max_iter=0), "max_iter"),
    (dict(standardize=1), "standardize"), (dict(seed=-1), "seed"),
])
def test_bad_options(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        QuantileOptions(**kwargs)


def test_bad_arrays():
    rng = np.random.default_rng(2)
    x, s = _population(50, rng)
    with pytest.raises(ValueError, match="public_scores"):
        fit_quantile_model(x, s[:-1])
    with pytest.raises(ValueError, match="public_scores"):
        fit_quantile_model(x[:10], s[:10])
    with pytest.raises(ValueError, match="features"):
        fit_quantile_model(np.c_[x[:, :2], np.full(50, np.nan)], s)
    model = fit_quantile_model(x, s, QuantileOptions(max_iter=5))
    with pytest.raises(ValueError, match="features"):
        model.score(x[:, :2], s)
    with pytest.raises(ValueError, match="scores"):
        model.score(x, s[:-1])
