"""Flawed DP-SGD training: mistakes Opacus users make, each detectable in one run.

Each flaw is an Opacus ``DPOptimizer`` subclass (Opacus's own clipping and noise code runs;
only the mistake is added) or, for ``"non_private_group"``, a training set-up:

* ``"backprop_clipping"`` (Bits Transmission §6.5, after Tramer et al. 2022 [38]): the per-example
  gradients of the *mean* loss, grad_i / |B|, are clipped, while the noise stays calibrated for
  the averaged gradient's sensitivity C/|B|.  Released (Opacus's ``p.grad``)
      p = sum_i CLP_C(grad_i / |B|) + N(0, (sigma C / |B|)^2),
  so an example contributes up to C instead of C/|B|: the true noise multiplier is sigma/|B|.
  (Implemented by scaling ``p.grad_sample`` by 1/|B| before Opacus clips it and the clipped
  sum by |B| after, so that Opacus's noise and division by |B| then give p.)
* ``"mean_noise"``: noise calibrated for the *mean* gradient while Opacus adds it to the
  *sum* -- std sigma C / |B| instead of sigma C (a hand-rolled ``add_noise``); the true noise
  multiplier is again sigma/|B|.
* ``"non_private_group"``: part of the model (the hidden layer) is trained on the same
  private batches by an ordinary optimizer, and only the output layer by the DP optimizer --
  the split suggested for a *public* backbone in Opacus issue #615, applied to private data.
  Those parameters bypass clipping and noise altogether.

All flaws leave the accountant's epsilon unchanged (it only sees the claimed sigma, q, T).
Flaws need no Poisson gradient accumulation (Opacus forbids it with Poisson sampling anyway).
"""

from __future__ import annotations

from opacus.optimizers import DPOptimizer

__all__ = ["FLAWS", "BackpropClippingOptimizer", "MeanNoiseOptimizer", "optimizer_class"]

FLAWS = ("backprop_clipping", "mean_noise", "non_private_group")


class BackpropClippingOptimizer(DPOptimizer):
    """Clips grad_i / |B| instead of grad_i, noise still for sensitivity C/|B| (see module)."""

    def clip_and_accumulate(self) -> None:
        b = float(self.expected_batch_size)
        for p in self.params:
            p.grad_sample = self._get_flat_grad_sample(p) / b
        super().clip_and_accumulate()
        for p in self.params:
            p.summed_grad.mul_(b)


class MeanNoiseOptimizer(DPOptimizer):
    """Adds noise of std sigma C / |B| to the clipped *sum* (see module)."""

    def add_noise(self) -> None:
        claimed = self.noise_multiplier
        self.noise_multiplier = claimed / float(self.expected_batch_size)
        try:
            super().add_noise()
        finally:
            self.noise_multiplier = claimed


def optimizer_class(flaw: str | None) -> type[DPOptimizer]:
    """The DPOptimizer class for ``flaw`` (None or a set-up flaw: Opacus's own)."""
    if flaw == "backprop_clipping":
        return BackpropClippingOptimizer
    if flaw == "mean_noise":
        return MeanNoiseOptimizer
    return DPOptimizer
