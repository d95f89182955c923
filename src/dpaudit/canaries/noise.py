"""Per-step check of the released noise, read on the canaries' own coordinates.

Why.  The claim of a DP-SGD run is T steps of the subsampled Gaussian with noise standard
deviation sigma C on every coordinate of the released (clipped, summed) gradient (Abadi et
al. 2016, Algorithm 1).  The attribute ``noise_multiplier`` of an optimizer says what the
code *meant* to add; the released update says what it *did* add.  A ``DPOptimizer`` subclass
that skips ``add_noise`` on some steps, noise scaled or zeroed by hand, or a parameter group
trained outside the DP optimizer all leave the attribute intact and are invisible to the
deterministic claim checks (:mod:`.claims`).

What is read.  The canaries' read coordinates (:class:`~dpaudit.canaries.plan.CanaryPlan`)
are coordinates of the released noisy sum; an integration records, per step t, their values
in units of the clip norm C (the white-box readings before they are projected on each
canary's direction) and keeps only their sum of squares S_t over k distinct coordinates.
At a step whose noise has standard deviation s C per coordinate,

    value_c / C = m_c + s Z_c,   Z_c i.i.d. N(0, 1), independent of m_c,

where m_c (the canaries' clipped contributions plus real data's gradient) is fixed given
everything released before the step and the step's sampling.  Conditionally on m, S_t / s^2
is non-central chi-square with k degrees of freedom, which is stochastically larger than the
central chi^2_k (the non-central chi-square is increasing in its non-centrality).  Hence,
whatever the data, the canaries and the model do, a run that adds at least the claimed noise
sigma C at step t has

    P(S_t < sigma^2 chi2_k^{-1}(a)) <= a,

and the same holds for the total sum_t S_t with kT degrees of freedom (the steps' noises are
independent).  A step is reported when S_t falls below sigma^2 chi2_k^{-1}(alpha / (T + 1));
the run as a whole when sum_t S_t falls below sigma^2 chi2_{kT}^{-1}(alpha / (T + 1)).  By
the union bound over the T + 1 tests a run that meets the claim is reported with probability
at most alpha (default 1e-6, :data:`NOISE_ALPHA`): a false alarm is rarer than one run in a
million, whatever the model.  Real-data gradient on a read coordinate only raises S_t: it
costs power (a dense model), never validity.

Each step's noise standard deviation is estimated as sqrt(S_t / k) C (an over-estimate when
real data moves the read coordinates); it is an estimate, printed as one.

The check is framework-neutral: the PyTorch integration
(:class:`dpaudit.training.GradientCanaries`), a ``torch.func`` loop and the JAX loop record
S_t the same way and call :func:`check_released_noise`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from dpaudit.validation import (
    check_count,
    check_finite_array,
    check_positive,
    check_probability,
)

__all__ = ["NOISE_ALPHA", "NoiseReading", "check_released_noise", "noise_sum_squares",
           "distinct_mask", "format_steps", "noise_sums_squares"]

#: false-alarm probability of the released-noise check on a run that meets the claim
NOISE_ALPHA = 1e-6


@dataclass(frozen=True)
class NoiseReading:
    """Outcome of :func:`check_released_noise`.

    Attributes:
      ok: False when some step (or the run) shows less noise than the claim.
      low_steps: 1-based numbers of the steps whose noise fell below the claim.
      total_low: the whole run's noise is below the claim (sum over steps).
      threshold: the per-step threshold of S_t / (k sigma^2), i.e. chi2_k^{-1}(a) / k.
      sigma_estimates: (T,) each step's estimated noise multiplier sqrt(S_t / k) (estimate).
      coordinates: k, read coordinates per step.
      alpha: the false-alarm probability on a run that meets the claim.
    """

    ok: bool
    low_steps: tuple[int, ...]
    total_low: bool
    threshold: float
    sigma_estimates: np.ndarray
    coordinates: int
    alpha: float

    def message(self, noise_multiplier: float) -> str:
        """The finding in words (one sentence)."""
        est = self.sigma_estimates
        head = (f"released noise: read on {self.coordinates} canary coordinates at each of "
                f"{est.size} steps, the noise multiplier is ~ {np.median(est):.3g} "
                f"(estimate, median over steps) against the claim's {noise_multiplier:g}")
        if self.ok:
            return head
        if self.low_steps:
            low = np.asarray(self.low_steps) - 1
            worst = float(est[low].min())
            return (head + f"; {len(self.low_steps)} step(s) released less noise than the "
                    f"claim ({format_steps(self.low_steps)}; the smallest ~ {worst:.3g}, "
                    f"estimate) -- false-alarm probability below {self.alpha:g} on a run "
                    "that adds the claimed noise")
        return (head + "; the run as a whole released less noise than the claim "
                f"(false-alarm probability below {self.alpha:g})")


def format_steps(steps: tuple[int, ...] | list[int], limit: int = 8) -> str:
    """"step 2, 4, 6, ... (150 of them)": the first ``limit`` step numbers."""
    s = list(steps)
    shown = ", ".join(str(k) for k in s[:limit])
    more = f", ... ({len(s)} steps)" if len(s) > limit else ""
    return ("step " if len(s) == 1 else "steps ") + shown + more


def distinct_mask(coords: np.ndarray) -> np.ndarray:
    """Boolean mask (same shape as ``coords``) of the first occurrence of each coordinate
    (row-major): the distinct coordinates whose values are i.i.d. noise."""
    flat = np.asarray(coords).ravel()
    _, first = np.unique(flat, return_index=True)
    mask = np.zeros(flat.size, dtype=bool)
    mask[first] = True
    return mask.reshape(np.shape(coords))


def noise_sum_squares(values: np.ndarray, mask: np.ndarray) -> float:
    """S_t: the sum of squares of one step's read values (units of C) at the distinct
    coordinates selected by ``mask`` (a boolean mask of ``values``' shape, or the flat
    indices ``np.flatnonzero(mask)``: the same values in the same order, a cheaper gather
    for a step hook)."""
    m = np.asarray(mask)
    flat = np.flatnonzero(m) if m.dtype == bool else m
    return float(noise_sums_squares(np.asarray(values, dtype=float)[None], flat)[0])


def noise_sums_squares(values: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """(B,) S_t of B steps at once: ``values`` (B, n, k), ``flat`` the flat indices of the
    distinct coordinates (:func:`noise_sum_squares` per step, one vectorised call)."""
    v = np.asarray(values, dtype=float)
    v = v.reshape(v.shape[0], -1)[:, np.asarray(flat)]
    return np.einsum("bj,bj->b", v, v)


def check_released_noise(sum_squares: np.ndarray, coordinates: int, noise_multiplier: float,
                         *, alpha: float = NOISE_ALPHA) -> NoiseReading:
    """Compare each step's released noise with the claim's sigma (module docstring).

    Args:
      sum_squares: (T,) S_t, the sum of squares of step t's values at the k read
        coordinates, in units of the claim's clip norm C.
      coordinates: k, distinct read coordinates per step (the degrees of freedom).
      noise_multiplier: the claim's sigma.
      alpha: false-alarm probability on a run that meets the claim (union bound over the T
        per-step tests and the total).
    """
    s = check_finite_array("sum_squares", sum_squares)
    if np.any(s < 0):
        raise ValueError("sum_squares must be finite and >= 0 (sums of squares, one per step)")
    k = check_count("coordinates", coordinates, minimum=1)
    sigma = check_positive("noise_multiplier", noise_multiplier)
    alpha = check_probability("alpha", alpha, open_low=True)
    t = s.size
    a = alpha / (t + 1)
    q_step = float(stats.chi2.ppf(a, k))
    q_total = float(stats.chi2.ppf(a, k * t))
    low = np.flatnonzero(s < sigma * sigma * q_step) + 1
    total_low = bool(s.sum() < sigma * sigma * q_total)
    est = np.sqrt(s / k)
    return NoiseReading(ok=bool(low.size == 0 and not total_low),
                        low_steps=tuple(int(v) for v in low), total_low=total_low,
                        threshold=q_step / k, sigma_estimates=est, coordinates=k,
                        alpha=float(alpha))

