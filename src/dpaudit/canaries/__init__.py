"""Framework-neutral canary core of DP-SGD audits (NumPy only; no torch, no jax).

Every integration (``dpaudit.training`` for PyTorch + Opacus, a JAX one) builds on these:

* :mod:`.layout` -- :class:`Layout`: the flat coordinate space of the trainable tensors;
* :mod:`.plan` -- :class:`CanaryPlan` (secret bits, read coordinates and weights, planted
  gradient, amplitude, shape), :func:`plan_gradient_canaries`, :func:`draw_bits` (the one
  of :mod:`dpaudit.randomness`),
  :func:`least_active`, :func:`sample_steps`, :func:`planted_amplitude`, :func:`dirac_plan`,
  :func:`with_sentinels`,
  :data:`SHAPES`, :data:`DEFAULT_SHAPES`;
* :mod:`.scores` -- each score once: :func:`lr_step_scores`, :class:`WhiteBoxAccumulator`
  (white box), :func:`last_iterate_scores`, :func:`black_box_scores`;
* :mod:`.claims` -- :class:`Claim`, :class:`RunFacts`, :func:`check_claim`: the claim against
  what the run did, before any statistics;
* :mod:`.noise` -- :func:`check_released_noise`: each released step's noise, read on the
  canaries' coordinates, against the claim's sigma C (steps named; false alarm < 1e-6);
* :mod:`.contribution` -- :func:`check_contribution`: the planted canaries' contributions
  against per-example clipping to C (batch-sum / averaged-gradient clipping; false alarm
  < 1e-6);
* :mod:`.reader` -- :class:`ReleaseReader`: one released step -> the white-box readings,
  the released-noise statistic and the contribution statistics (every integration reads
  through it);
* :mod:`.examples` -- canary *examples* on reserved input coordinates
  (:class:`ReservedPlan`, :func:`plan_reserved_examples`): canaries that travel through the
  user's own data loader, model, clipping, normalisation and noise.
"""

from dpaudit.canaries.claims import Claim, ClaimCheck, RunFacts, check_claim
from dpaudit.canaries.contribution import (
    CONTRIBUTION_ALPHA,
    ContributionReading,
    ContributionRecord,
    check_contribution,
)
from dpaudit.canaries.examples import (
    RESERVED_PATTERNS,
    ReservedPlan,
    plan_reserved_examples,
    unit_rows,
)
from dpaudit.canaries.layout import Layout
from dpaudit.canaries.noise import NOISE_ALPHA, NoiseReading, check_released_noise
from dpaudit.canaries.plan import (
    DEFAULT_SHAPES,
    SHAPES,
    CanaryPlan,
    dirac_plan,
    draw_bits,
    least_active,
    plan_gradient_canaries,
    planted_amplitude,
    sample_steps,
    with_sentinels,
)
from dpaudit.canaries.reader import ReleaseReader
from dpaudit.canaries.scores import (
    WHITE_BOX_KINDS,
    WhiteBoxAccumulator,
    black_box_scores,
    last_iterate_scores,
    lr_step_scores,
)

__all__ = [
    "Layout", "CanaryPlan", "plan_gradient_canaries", "draw_bits", "least_active",
    "sample_steps", "SHAPES", "DEFAULT_SHAPES", "planted_amplitude", "dirac_plan", "with_sentinels",
    "WHITE_BOX_KINDS", "lr_step_scores", "WhiteBoxAccumulator", "last_iterate_scores",
    "black_box_scores",
    "Claim", "RunFacts", "ClaimCheck", "check_claim",
    "ReservedPlan", "plan_reserved_examples", "unit_rows", "RESERVED_PATTERNS",
    "ReleaseReader", "check_released_noise", "NoiseReading", "NOISE_ALPHA",
    "check_contribution", "ContributionRecord", "ContributionReading", "CONTRIBUTION_ALPHA",
]
