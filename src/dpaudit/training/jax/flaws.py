"""Flawed JAX DP training: mistakes made when wiring jax_privacy's components by hand.

Each flaw keeps the claim of the correct plan (its DP event) and changes one component:

* ``"mean_noise"`` (the Opacus path's flaw of the same name): noise calibrated for the *mean*
  gradient added to the clipped *sum* -- the privatiser is built with noise multiplier
  sigma / B (B the expected batch size) while the claim keeps sigma;
* ``"strategy_mismatch"``: the noise is generated with a strategy matrix other than the one
  accounted for.  With a DP-SGD claim (one band, i.i.d. noise) the privatiser of a
  :data:`MISMATCH_BANDS`-band BandMF strategy is used (the sampler stays DP-SGD's, so an
  example can join consecutive steps, whose whitened contributions add up: the noise is
  anti-correlated across steps and the running sum -- hence the last iterate -- is far less
  noisy than the claim assumes).  With a BandMF claim the reverse (noise generated for one
  band) is used; with the cyclic sampler kept, every eligible step still gets noise of std
  sigma per unit of sensitivity, which is what the amplified claim assumes, so that direction
  does not leak (measured in studies/training_jax.py);
* ``"unclipped_group"``: clipping skipped for one parameter group -- the first layer's
  per-example gradients are summed unclipped (the rest go through ``clipped_grad``), then the
  plan's noise is added to both; the run's facts declare that group's clip norm as infinite.

The flaws of the Opacus path and the ``torch.func`` loop (:mod:`dpaudit.training.flaws`,
``studies/training_own_models.py``), written into the jax_privacy loop.  The run's facts say
what such a loop believes it did (sigma and C as configured), except where the flaw *is* a
setting the loop reads (``zero_steps``):

* ``"skipped_noise"``: the privatiser's noise is dropped on every second step
  (0-based steps 1, 3, ...; :data:`SKIP_EVERY`) and the clipped sum released as it is,
  while the noise multiplier still says sigma -- seen only by the released noise;
* ``"zero_steps"``: the noise multiplier is set to 0 on every fourth step (steps 3, 7, ...;
  :data:`ZERO_EVERY`), and the facts say so (per-step sigma 0);
* ``"wrong_clip_noise"``: per-example gradients clipped to ``WRONG_CLIP_FACTOR`` C
  (``clipped_grad`` with ``l2_clip_norm`` = 10 C) while the noise is for C: an example moves
  the release by up to 10 C;
* ``"per_tensor_clipping"``: ``clipped_grad`` called once per parameter tensor, each tensor's
  per-example gradient clipped to C on its own: an example contributes up to C sqrt(L) with L
  tensors (2 C on the MLP's four);
* ``"unclipped_biases"``: the weights (the tensors of two or more dimensions, ``w1``, ``w2``)
  clipped together to C, the one-dimensional tensors (``b1``, ``b2``, and a canary branch's
  ``cb_b0``) summed unclipped.

What the canaries can see: the default white-box canaries are Dirac canaries on reserved rows
of ``w1`` (one tensor, a weight), so clipping that is per tensor or spares the biases leaves
them exactly as correct clipping does.  With a canary branch (``JaxTrainingConfig(
canary_branch=True)``: silent coordinates in three more tensors, one of them a bias) the
canaries are the core's spread canaries with sentinels, which read sqrt(3) C under per-tensor
clipping and far above C with unclipped biases (docs/training.md, "Your own models").
"""

from __future__ import annotations

from collections.abc import Mapping

from dpaudit.training.choices import JAX_FLAWS as FLAWS  # the one list
from dpaudit.training.common import (  # every framework's schedule and factor
    SKIP_EVERY,
    WRONG_CLIP_FACTOR,
    ZERO_EVERY,
    noise_added,
)

__all__ = ["FLAWS", "MISMATCH_BANDS", "UNCLIPPED_GROUP", "UNCLIPPED_FLAWS", "NOISE_FLAWS",
           "SKIP_EVERY", "ZERO_EVERY", "WRONG_CLIP_FACTOR", "noise_added", "unclipped_names"]

MISMATCH_BANDS = 16
UNCLIPPED_GROUP = ("w1",)
#: flaws that sum some parameters unclipped (:func:`unclipped_names`)
UNCLIPPED_FLAWS = ("unclipped_group", "unclipped_biases")
#: flaws that drop the noise of some steps
NOISE_FLAWS = ("skipped_noise", "zero_steps")


def unclipped_names(flaw: str | None, ndims: Mapping[str, int]) -> tuple[str, ...]:
    """The parameters ``flaw`` sums unclipped, given each parameter's number of dimensions:
    :data:`UNCLIPPED_GROUP` (``unclipped_group``), every one-dimensional tensor
    (``unclipped_biases``), none otherwise."""
    if flaw == "unclipped_group":
        return UNCLIPPED_GROUP
    if flaw == "unclipped_biases":
        return tuple(k for k, d in ndims.items() if d == 1)
    return ()
