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

* ``"per_tensor_clipping"``: each parameter tensor of a per-example gradient is clipped to C
  on its own (a hand-written mistake, or a per-layer clipping budget of C each instead of
  C / sqrt(L)): an example contributes up to C sqrt(L) with L tensors.
* ``"batch_sum_clipping"``: the *sum* of the batch's gradients is clipped to C instead of each
  example's gradient.  One example's influence is not bounded by C in general (its worst
  case needs a batch whose other gradients cancel it), but a single large example is still
  cut to C: one-run canaries see no more than correct clipping (docs/training.md).
  Seen by the contribution check (:mod:`dpaudit.canaries.contribution`): k canaries planted
  in one step share C, each contributing about C / sqrt(k) instead of C (a configuration
  error: the run is not the claimed mechanism).
* ``"averaged_clipping"``: the batch's *mean* gradient is clipped to C (what
  ``torch.nn.utils.clip_grad_norm_(model.parameters(), C)`` after an ordinary
  ``loss.mean().backward()`` does) and the noise is calibrated for the mean,
  N(0, (sigma C / B)^2) with B the expected batch size.  In the units of the sum (times B)
  the release is B clip_C(sum_i g_i / |b|) + N(0, sigma^2 C^2) with |b| the batch's size:
  one example moves it by up to B C instead of C.  Seen by the contribution check (planted
  canaries contribute far more than C: the sensitivity is exceeded) and by the audit.
* ``"wrong_clip_noise"``: per-example gradients are clipped to 10 C while the noise is for C
  (the optimizer's ``max_grad_norm`` still says C): the true noise multiplier is sigma / 10.
* ``"lowered_sigma"``: the noise multiplier is lowered to sigma / 4 after the optimizer is
  built (``optimizer.noise_multiplier = ...`` after ``make_private``); the claim still says
  sigma.
* ``"too_few_steps"``: the claim is for T / 5 steps after T steps of training.
* ``"unclipped_biases"``: the clip norm is computed over the weight matrices only and the
  one-dimensional tensors (biases, normalisation scales) are summed unclipped -- a
  hand-written loop that "clips the weights": an example's bias gradient is unbounded.
  Seen by the canaries' sentinels (:mod:`dpaudit.canaries.plan`).
* ``"skipped_noise"``: ``add_noise`` skipped on every second step while the optimizer's
  ``noise_multiplier`` still says sigma (a subclass that "saves time"): half the steps are
  released without noise.  Seen by the released-noise check (:mod:`dpaudit.canaries.noise`)
  on the skipped steps, by number.

All flaws leave the accountant's epsilon unchanged (it only sees the claimed sigma, q, T).
Flaws need no Poisson gradient accumulation (Opacus forbids it with Poisson sampling anyway).
"""

from __future__ import annotations

import torch
from opacus.optimizers import DPOptimizer
from opacus.optimizers.optimizer import _mark_as_processed

from dpaudit.training.choices import FLAWS  # the one list (torch-free)
from dpaudit.training.common import (  # shared with the JAX path
    WRONG_CLIP_FACTOR,
    noise_added,
)

__all__ = ["FLAWS", "BackpropClippingOptimizer", "MeanNoiseOptimizer",
           "PerTensorClippingOptimizer", "BatchSumClippingOptimizer", "AveragedClippingOptimizer",
           "WrongClipNoiseOptimizer", "UnclippedBiasesOptimizer", "SkippedNoiseOptimizer",
           "optimizer_class", "LOWERED_SIGMA_FACTOR",
           "STEP_UNDERCOUNT", "WRONG_CLIP_FACTOR"]

LOWERED_SIGMA_FACTOR = 4.0
STEP_UNDERCOUNT = 5


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

    noise_multiplier: float

    def add_noise(self) -> None:
        claimed = self.noise_multiplier
        self.noise_multiplier = claimed / float(self.expected_batch_size)
        try:
            super().add_noise()
        finally:
            self.noise_multiplier = claimed


class PerTensorClippingOptimizer(DPOptimizer):
    """Clips each parameter tensor of each per-example gradient to C separately."""

    def clip_and_accumulate(self) -> None:
        c = float(self.max_grad_norm)
        for p in self.params:
            g = self._get_flat_grad_sample(p).to(p.dtype)
            norms = g.reshape(len(g), -1).norm(2, dim=-1)
            factor = (c / (norms + 1e-6)).clamp(max=1.0)
            grad = torch.einsum("i,i...", factor, g)
            p.summed_grad = grad if p.summed_grad is None else p.summed_grad + grad
            _mark_as_processed(p.grad_sample)


class BatchSumClippingOptimizer(DPOptimizer):
    """Clips the batch's summed gradient (all tensors together) to C, not each example's."""

    def clip_and_accumulate(self) -> None:
        sums = [self._get_flat_grad_sample(p).to(p.dtype).sum(dim=0) for p in self.params]
        norm = torch.sqrt(sum((s * s).sum() for s in sums))
        factor = (float(self.max_grad_norm) / (norm + 1e-6)).clamp(max=1.0)
        for p, s in zip(self.params, sums, strict=True):
            p.summed_grad = s * factor if p.summed_grad is None else p.summed_grad + s * factor
            _mark_as_processed(p.grad_sample)


class AveragedClippingOptimizer(DPOptimizer):
    """Clips the batch's mean gradient to C, released as B times it (see module)."""

    def clip_and_accumulate(self) -> None:
        rows = self._get_flat_grad_sample(self.params[0]).shape[0]
        means = [self._get_flat_grad_sample(p).to(p.dtype).sum(dim=0) / max(rows, 1)
                 for p in self.params]
        norm = torch.sqrt(sum((m * m).sum() for m in means))
        factor = (float(self.max_grad_norm) / (norm + 1e-6)).clamp(max=1.0)
        b = float(self.expected_batch_size)
        for p, m in zip(self.params, means, strict=True):
            g = m * factor * b
            p.summed_grad = g if p.summed_grad is None else p.summed_grad + g
            _mark_as_processed(p.grad_sample)


class WrongClipNoiseOptimizer(DPOptimizer):
    """Clips to WRONG_CLIP_FACTOR x C while the noise is for C."""

    max_grad_norm: float

    def clip_and_accumulate(self) -> None:
        claimed = self.max_grad_norm
        self.max_grad_norm = claimed * WRONG_CLIP_FACTOR
        try:
            super().clip_and_accumulate()
        finally:
            self.max_grad_norm = claimed


class UnclippedBiasesOptimizer(DPOptimizer):
    """Clips the per-example gradient of the weight matrices (ndim >= 2) to C; the 1-d
    tensors (biases, norms) are summed unclipped."""

    def clip_and_accumulate(self) -> None:
        c = float(self.max_grad_norm)
        weights = [p for p in self.params if p.ndim >= 2]
        gs = {id(p): self._get_flat_grad_sample(p).to(p.dtype) for p in self.params}
        norms = torch.stack([gs[id(p)].reshape(len(gs[id(p)]), -1).norm(2, dim=-1)
                             for p in weights], dim=1).norm(2, dim=1) if weights else None
        factor = None if norms is None else (c / (norms + 1e-6)).clamp(max=1.0)
        for p in self.params:
            g = gs[id(p)]
            grad = (g.sum(dim=0) if p.ndim < 2 or factor is None
                    else torch.einsum("i,i...", factor, g))
            p.summed_grad = grad if p.summed_grad is None else p.summed_grad + grad
            _mark_as_processed(p.grad_sample)


class SkippedNoiseOptimizer(DPOptimizer):
    """Skips ``add_noise`` on every second step (``noise_multiplier`` unchanged; the schedule
    of :func:`dpaudit.training.common.noise_added`)."""

    def add_noise(self) -> None:
        step = getattr(self, "_noise_calls", 0)
        self._noise_calls = step + 1
        if noise_added("skipped_noise", step):
            super().add_noise()
            return
        for p in self.params:  # DPOptimizer.add_noise without the noise
            p.grad = p.summed_grad.view_as(p)
            _mark_as_processed(p.summed_grad)


_CLASSES: dict[str, type[DPOptimizer]] = {
    "backprop_clipping": BackpropClippingOptimizer,
    "mean_noise": MeanNoiseOptimizer,
    "per_tensor_clipping": PerTensorClippingOptimizer,
    "batch_sum_clipping": BatchSumClippingOptimizer,
    "averaged_clipping": AveragedClippingOptimizer,
    "wrong_clip_noise": WrongClipNoiseOptimizer,
    "unclipped_biases": UnclippedBiasesOptimizer,
    "skipped_noise": SkippedNoiseOptimizer,
}


def optimizer_class(flaw: str | None) -> type[DPOptimizer]:
    """The DPOptimizer class for ``flaw`` (None or a set-up flaw: Opacus's own)."""
    return _CLASSES.get(flaw or "", DPOptimizer)
