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
  plan's noise is added to both.
"""

from __future__ import annotations

from dpaudit.training.choices import JAX_FLAWS as FLAWS  # the one list

__all__ = ["FLAWS", "MISMATCH_BANDS", "UNCLIPPED_GROUP"]

MISMATCH_BANDS = 16
UNCLIPPED_GROUP = ("w1",)
