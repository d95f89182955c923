"""The DP-SGD simulator's "sum" statistic is drawn in closed form (issue 14): Binomial(T, q) * bit
+ N(0, T (sigma^2 + bg^2)) per canary instead of T Bernoulli/Gaussian steps.  The random stream
changed, so the pinned check is on the law: exact first two moments per class and a
two-sample KS test against the step-by-step simulation (kept for the "lr" score and the
reused-noise flaw, whose statistics need the steps).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpaudit.mechanisms.dpsgd import DPSGDSimulator


def _stepwise_sum(sim: DPSGDSimulator, bits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Reference: the T-step simulation of the sum (what run() did before)."""
    n, q = bits.size, sim.sampling_rate
    total = np.zeros(n)
    for _ in range(sim.steps):
        y = ((rng.random(n) < q) & bits).astype(float)
        y += sim.noise_multiplier * rng.standard_normal(n)
        y += sim.background_std * rng.standard_normal(n)
        total += y
    return total


@pytest.mark.parametrize("threat", ["white_box", "last_iterate"])
def test_sum_has_the_stepwise_law(threat):
    sim = DPSGDSimulator(noise_multiplier=0.8, sampling_rate=0.1, steps=40,
                         background_std=0.5, threat=threat)
    n = 20000
    bits = np.zeros(n, dtype=bool)
    bits[: n // 2] = True
    fast = sim.run(bits, np.random.default_rng(0))["sum"]
    slow = _stepwise_sum(sim, bits, np.random.default_rng(1))
    var_noise = sim.steps * (0.8**2 + 0.5**2)
    for cls, extra_mean, extra_var in ((True, 4.0, 40 * 0.1 * 0.9), (False, 0.0, 0.0)):
        f = fast[bits == cls]
        # exact moments: mean T q bit, variance T q (1 - q) bit + T (sigma^2 + bg^2); 4-sigma
        # tolerance on the sample mean and variance of 10,000 draws.
        sd = np.sqrt(var_noise + extra_var)
        assert abs(f.mean() - extra_mean) < 4 * sd / np.sqrt(f.size)
        assert abs(f.var() / (var_noise + extra_var) - 1) < 4 * np.sqrt(2 / f.size)
        # same law as the step-by-step simulation (KS, p > 1e-3 at a fixed seed)
        assert stats.ks_2samp(f, slow[bits == cls]).pvalue > 1e-3


def test_lr_score_still_uses_the_steps():
    sim = DPSGDSimulator(noise_multiplier=1.0, sampling_rate=0.2, steps=10, score_kind="lr")
    out = sim.run(np.array([True, False] * 50), np.random.default_rng(0))
    assert set(out) == {"sum", "lr"}
