"""jax_privacy execution plans for the audited run, and the claim from their DP event.

Both mechanisms are built with jax_privacy's own ``BandMFExecutionPlanConfig`` (module
``jax_privacy.experimental.execution_plan``), configured by the noise multiplier:

* ``"dpsgd"``  -- ``strategy = [1]`` (one band): Poisson sampling at rate q every step, i.i.d.
  Gaussian noise of std sigma (per unit-norm clipped gradient); the plan's DP event is
  jax_privacy's ``dpsgd_event`` (T Poisson-subsampled Gaussians, Abadi et al. 2016);
* ``"bandmf"`` -- a b-banded Toeplitz strategy optimised by jax_privacy
  (``toeplitz.optimize_banded_toeplitz``, RMSE on the prefix-sum workload), cyclic Poisson
  sampling over b groups, correlated noise ``sigma ||c|| C^{-1} z``; the plan's DP event is
  ``amplified_bandmf_event``: ceil(T / b) Poisson-subsampled Gaussians ("(Amplified) Banded
  Matrix Factorization", Choquette-Choo et al., NeurIPS 2023, Thm. 2).

The claim.  The plan's ``dp_event`` is composed by dp_accounting's PLD accountant under the
plan's neighbouring relation (jax_privacy's default, ``REPLACE_SPECIAL``: zero-out adjacency, an
example replaced by one whose gradient is zero).  The one-run game matches it: a canary whose
secret bit is 0 stays in the data set (so the sampler is unchanged) with a zero gradient.  The
same epsilon is recomputed by dpaudit's ``dpsgd_curve(sigma, q, rounds)`` (add/remove
adjacency; for Poisson subsampling both relations give the same privacy-loss distribution) and
reported beside it, a check of jax_privacy's accounting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from dpaudit.training.choices import MECHANISMS  # the one list (torch-free)
from dpaudit.validation import check_count, check_delta, check_positive, check_probability

__all__ = ["MECHANISMS", "PlanSpec", "strategy_for", "make_plan", "event_epsilon",
           "claim_rounds"]



@dataclass(frozen=True)
class PlanSpec:
    """What defines the privatised run: mechanism, noise multiplier, sampling probability
    (per eligible step), steps, bands (1 for DP-SGD)."""

    mechanism: str
    noise_multiplier: float
    sampling_rate: float
    steps: int
    bands: int = 1

    @property
    def rounds(self) -> int:
        """Compositions in the claim: ceil(T / b) eligible steps per example."""
        return claim_rounds(self.steps, self.bands)


def claim_rounds(steps: int, bands: int) -> int:
    return math.ceil(check_count("steps", steps, minimum=1) / check_count("bands", bands,
                                                                           minimum=1))


@lru_cache(maxsize=32)
def _optimised(steps: int, bands: int, optimizer_steps: int) -> tuple[float, ...]:
    from jax_privacy.matrix_factorization import toeplitz

    c = np.asarray(toeplitz.optimize_banded_toeplitz(n=steps, bands=bands,
                                                     max_optimizer_steps=optimizer_steps),
                   dtype=np.float64)
    return tuple(float(v) for v in c)


def strategy_for(steps: int, bands: int, *, optimizer_steps: int = 100) -> np.ndarray:
    """The b-band Toeplitz strategy coefficients jax_privacy optimises for T steps ([1.0] for
    one band), memoised (the optimisation takes seconds)."""
    steps = check_count("steps", steps, minimum=1)
    bands = check_count("bands", bands, minimum=1)
    if bands > steps:
        raise ValueError(f"bands must be in [1, steps={steps}]; got {bands}")
    if bands == 1:
        return np.ones(1)
    return np.array(_optimised(steps, bands, check_count("optimizer_steps", optimizer_steps,
                                                          minimum=1)))


def make_plan(strategy: Any, *, noise_multiplier: float, sampling_rate: float, steps: int,
              noise_seed: int, clip_norm: float = 1.0) -> Any:
    """jax_privacy's ``DPExecutionPlan`` for this strategy (``BandMFExecutionPlanConfig``
    configured by ``noise_multiplier``; per-example clipping at ``clip_norm`` rescaled to unit
    norm, so released sums are in canary units)."""
    from jax_privacy.experimental.execution_plan import BandMFExecutionPlanConfig

    config = BandMFExecutionPlanConfig(
        iterations=check_count("steps", steps, minimum=1),
        strategy=np.asarray(strategy, dtype=np.float64),
        epsilon=None, delta=None,
        noise_multiplier=check_positive("noise_multiplier", noise_multiplier),
        sampling_prob=check_probability("sampling_rate", sampling_rate, open_low=True),
        l2_clip_norm=check_positive("max_grad_norm", clip_norm),
        rescale_to_unit_norm=True, noise_seed=int(noise_seed))
    return config.plan


def event_epsilon(event: Any, delta: float) -> float:
    """epsilon at delta of a dp_accounting DpEvent, PLD accountant, zero-out adjacency (the
    relation of jax_privacy's plans)."""
    import dp_accounting

    acc = dp_accounting.pld.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_SPECIAL)
    return float(acc.compose(event).get_epsilon(check_delta(delta)))
