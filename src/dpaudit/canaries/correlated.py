"""White-box canary scores for correlated-noise training: BandMF / DP-FTRL (matrix factorisation).

The mechanism.  Matrix-factorisation DP training (DP-MF; DP-FTRL is the tree-aggregation case)
releases, on every coordinate, the T-vector of noisy clipped-gradient sums

    x = g + s_n C^{-1} z,        z ~ N(0, I_T),

where ``g_t`` is the sum of the clipped (unit-norm) per-example gradients at step t, ``C`` is the
lower-triangular *strategy* matrix and ``s_n`` the noise scale (Choquette-Choo, McMahan, Rush,
Thakurta, "Multi-Epoch Matrix Factorization Mechanisms for Private Machine Learning", ICML 2023,
§2 and eq. (1): ``x = A^{-1}(A G + B Z)`` with ``A = B C`` is ``G + C^{-1} Z``).  BandMF uses a
b-banded Toeplitz C with coefficients c_0..c_{b-1} (``C[t, t-j] = c_j`` for 0 <= j < b) and
*cyclic Poisson sampling*: the examples are split into b groups, group k is eligible only at the
steps t = k (mod b) and each eligible example joins with probability p (Choquette-Choo, McKenna,
McMahan, Rush, Thakurta, "(Amplified) Banded Matrix Factorization: A unified approach to private
training", NeurIPS 2023, §3 and Thm. 2).  jax_privacy's BandMF plan uses
``s_n = sigma * ||c||_2`` (sensitivity 1 after ``rescale_to_unit_norm``).

Whitening.  The auditor knows C, so it may apply it:

    w = C x = C g + s_n z,

white noise.  A canary of group k that joins at its eligible step t contributes the column
``C e_t`` = c placed on steps t..t+b-1; consecutive eligible steps are b apart, so these windows
are disjoint, and each window carries exactly one Bernoulli(p) participation.  Projecting the
window on c (the matched filter, a sufficient statistic for that window's participation):

    y_t = <c_W, w_W> / ||c_W||^2 = S_t + (sigma ||c|| / ||c_W||) Z_t,

where W is the window truncated at T (``c_W`` = the first min(b, T - t) coefficients).  Full
windows give y_t = S_t + sigma Z_t: each eligible step is one Poisson-subsampled Gaussian
mechanism with noise multiplier sigma, independent across steps -- the reduction behind the
amplified BandMF accounting (ceil(T/b) compositions of the subsampled Gaussian; Thm. 2 of the
NeurIPS 2023 paper, jax_privacy's ``amplified_bandmf_event``).  The score is the exact
log-likelihood ratio of the window statistics,

    s = sum_t log(1 - p + p exp((a y_t - a^2/2) / sigma_t^2)),     sigma_t = sigma ||c|| / ||c_W||,

(a the canary's amplitude, 1 for a Dirac canary): the DP-SGD white-box score of Nasr et al.
2023 / "Privacy Audit as Bits Transmission" §6.4 (:func:`dpaudit.canaries.scores.
lr_step_scores`, the one implementation) applied to the whitened windows.  For b = 1 (DP-SGD)
C = I and this is the DP-SGD score.  Auditing DP-FTRL through its released updates in one
run follows "Let's Ask Gauss" (arXiv 2606.12733), which evaluates DP-FTRL; the whitening is
the matched filter for the known correlation.

The naive per-step score ignores the correlation: it reads the raw x_t at the canary's eligible
steps as N(S_t, v_t) with v_t the marginal noise variance s_n^2 ||C^{-1}[t, :]||^2 and sums the
same per-step log-likelihood ratios.  Its noise is correlated across steps and larger per step
(||C^{-1}[t, :]|| >= 1/c_0 > 1 for the optimised strategies), so it loses power; both are
reported side by side by the JAX training audit.

Validity.  Which group a canary belongs to is fixed by the sampler's partition, drawn before
training and independent of the data; the amplified BandMF guarantee holds for every fixed
partition, so an auditor that knows it is within the claim.  The batches themselves (whether
the canary joined at step t) are *not* used: knowing them would remove the sampling
amplification the claim relies on.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpaudit.canaries.scores import lr_step_scores
from dpaudit.validation import (
    check_count,
    check_finite_array,
    check_finite_matrix,
    check_positive,
    check_probability,
)

__all__ = ["banded_toeplitz", "whiten", "window_statistics", "whitened_scores",
           "naive_step_scores", "marginal_noise_std"]


def _strategy(strategy: Any) -> np.ndarray:
    c = check_finite_array("strategy", strategy).astype(float)
    if c.ndim != 1 or c.size == 0:
        raise ValueError("strategy must be a non-empty 1-d array of Toeplitz coefficients "
                         "c_0..c_{b-1}")
    if not c[0] > 0:
        raise ValueError(f"strategy[0] must be > 0 (C must be invertible); got {c[0]!r}")
    return c


def banded_toeplitz(strategy: Any, steps: int) -> np.ndarray:
    """The T x T lower-triangular banded Toeplitz strategy matrix C[t, t-j] = c_j (j < b)."""
    c = _strategy(strategy)
    t = check_count("steps", steps, minimum=1)
    i, j = np.indices((t, t))
    lag = i - j
    ok = (lag >= 0) & (lag < c.size)
    return np.where(ok, c[np.clip(lag, 0, c.size - 1)], 0.0)


def whiten(x: Any, strategy: Any) -> np.ndarray:
    """w = C x for a (T, n) transcript x (one column per canary coordinate): a causal FIR
    filter with taps c, vectorised over steps and canaries (b passes, no T x T matrix)."""
    x = check_finite_matrix("transcript", x).astype(float)
    c = _strategy(strategy)
    w = c[0] * x
    for j in range(1, min(c.size, x.shape[0])):
        w[j:] += c[j] * x[:-j]
    return w


def window_statistics(w: Any, strategy: Any, groups: Any) -> tuple[np.ndarray, np.ndarray]:
    """Matched-filter statistics of every eligible step of every canary.

    ``w``: whitened (T, n) transcript; ``groups``: canary i's group k_i in [0, b) (eligible at
    steps k_i, k_i + b, ...).  Returns ``(y, scale)`` of shape (R, n), R = ceil(T / b):
    y[r, i] = <c_W, w[W, i]> / ||c_W||^2 for the window W starting at step k_i + r b, and
    scale[r, i] = ||c|| / ||c_W|| (the noise std in units of sigma; 1 for a full window,
    NaN where the window starts at or after T, whose y is 0 and carries no signal).
    """
    w = check_finite_matrix("whitened transcript", w).astype(float)
    c = _strategy(strategy)
    b = c.size
    t, n = w.shape
    k = np.asarray(groups)
    if k.shape != (n,) or not np.issubdtype(k.dtype, np.integer) or (k < 0).any() or (
            k >= b).any():
        raise ValueError(f"groups must be {n} integers in [0, {b}) (one per canary)")
    rounds = math.ceil(t / b)
    starts = k[None, :] + b * np.arange(rounds)[:, None]          # (R, n)
    y = np.zeros((rounds, n))
    energy = np.zeros((rounds, n))
    cols = np.arange(n)[None, :]
    for j in range(b):
        idx = starts + j
        inside = idx < t
        vals = np.where(inside, w[np.minimum(idx, t - 1), cols], 0.0)
        y += c[j] * vals
        energy += np.where(inside, c[j] ** 2, 0.0)
    live = energy > 0
    y = np.where(live, y / np.where(live, energy, 1.0), 0.0)
    scale = np.where(live, np.linalg.norm(c) / np.sqrt(np.where(live, energy, 1.0)), np.nan)
    return y, scale


def _lr(y: np.ndarray, scale: np.ndarray, p: float, sigma: float,
        amplitude: np.ndarray | float) -> np.ndarray:
    """Per-entry log-likelihood ratio of y ~ (1 - p) N(0, (sigma s)^2) + p N(a, (sigma s)^2)
    against N(0, (sigma s)^2) through ``lr_step_scores`` (y / s has noise sigma and signal
    a / s); 0 where the noise scale s is NaN (no window)."""
    live = np.isfinite(scale)
    s = np.where(live, scale, 1.0)
    out = lr_step_scores(y / s, p, sigma, np.asarray(amplitude, dtype=float) / s)
    return np.where(live, out, 0.0)


def whitened_scores(x: Any, strategy: Any, groups: Any, *, sampling_rate: float,
                    noise_multiplier: float, amplitude: Any = 1.0) -> np.ndarray:
    """Per-canary whitened log-likelihood-ratio score (module docstring): whiten the (T, n)
    released transcript (canary units) by C, read each eligible window with the matched
    filter, sum the windows' log-likelihood ratios.  b = 1 gives the DP-SGD white-box score."""
    p = check_probability("sampling_rate", sampling_rate, open_low=True)
    sigma = check_positive("noise_multiplier", noise_multiplier)
    y, scale = window_statistics(whiten(x, strategy), strategy, groups)
    return _lr(y, scale, p, sigma, amplitude).sum(axis=0)


def marginal_noise_std(strategy: Any, steps: int) -> np.ndarray:
    """||C^{-1}[t, :]|| * ||c|| for t < T: the per-step noise std in units of sigma."""
    c = _strategy(strategy)
    cinv = np.linalg.inv(banded_toeplitz(c, steps))
    return np.linalg.norm(cinv, axis=1) * np.linalg.norm(c)


def naive_step_scores(x: Any, strategy: Any, groups: Any, *, sampling_rate: float,
                      noise_multiplier: float, amplitude: Any = 1.0) -> np.ndarray:
    """The naive per-step score: the raw released x_t at the canary's eligible steps, each read
    as N(S_t, sigma^2 v_t) with v_t the marginal variance (correlation ignored), summed."""
    p = check_probability("sampling_rate", sampling_rate, open_low=True)
    sigma = check_positive("noise_multiplier", noise_multiplier)
    x = check_finite_matrix("transcript", x).astype(float)
    c = _strategy(strategy)
    t, n = x.shape
    k = np.asarray(groups)
    if k.shape != (n,) or not np.issubdtype(k.dtype, np.integer) or (k < 0).any() or (
            k >= c.size).any():
        raise ValueError(f"groups must be {n} integers in [0, {c.size}) (one per canary)")
    eligible = (np.arange(t)[:, None] % c.size) == k[None, :]
    scale = marginal_noise_std(c, t)[:, None] * np.ones((1, n))
    return _lr(x, np.where(eligible, scale, np.nan), p, sigma, amplitude).sum(axis=0)
