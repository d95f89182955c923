"""Mistakes people make when fine-tuning language models with DP, each caught by the LM audit.

* ``"embedding_outside_dp"`` -- the input embedding (where the newly added tokens' rows live)
  is trained by an ordinary optimizer beside the DP optimizer (a common way to "just learn
  the new tokens"): its gradients are neither clipped nor noised.
* ``"head_outside_dp"`` -- the LM head (output embedding) is trained by an ordinary optimizer
  (a non-private head on a DP body).
* ``"skipped_noise"`` -- the noise is skipped on every :data:`SKIP_EVERY`-th step (a
  hand-written ``add_noise`` with a schedule bug, or noise turned off "for warm-up"); the
  optimizer's ``noise_multiplier`` still says sigma.
* ``"per_layer_clipping"`` -- every parameter tensor clipped to C on its own (a per-layer
  budget of C each instead of C / sqrt(L)): an example contributes up to C sqrt(L)
  (:class:`dpaudit.training.flaws.PerTensorClippingOptimizer`, the one implementation).
* ``"wrong_epochs"`` -- the claim is for T / :data:`STEP_UNDERCOUNT` steps (a claim for one
  epoch after five).
* ``"wrong_sampling_rate"`` -- the claim's sampling rate is q / :data:`RATE_OVERCOUNT`:
  computed from the number of *sequences* while the loader samples whole documents of
  RATE_OVERCOUNT sequences (the per-sequence rate is q).

What catches what (docs/llm.md): the white-box canaries on reserved rows see the first
(unclipped, noiseless readings) and per-layer clipping (``shapes="tensors"``); the noise probe
(:class:`NoiseProbe`) measures the noise actually added on a reserved token's rows of the input
embedding and of the LM head at every step (it sees the head outside DP); the claim
checks (:func:`dpaudit.canaries.check_claim`) compare steps and batch sizes with the claim.
"""

from __future__ import annotations

import numpy as np
from opacus.optimizers import DPOptimizer
from opacus.optimizers.optimizer import _mark_as_processed

from dpaudit.canaries.claims import ClaimCheck
from dpaudit.training.choices import LM_FLAWS
from dpaudit.training.flaws import PerTensorClippingOptimizer, optimizer_class

__all__ = ["LM_FLAWS", "SKIP_EVERY", "STEP_UNDERCOUNT", "RATE_OVERCOUNT",
           "SkippedNoiseOptimizer", "lm_optimizer_class", "NoiseProbe"]

SKIP_EVERY = 4
STEP_UNDERCOUNT = 5
RATE_OVERCOUNT = 4
#: probability that the noise probe flags a correct run (Bonferroni over steps)
PROBE_ALPHA = 1e-6


class SkippedNoiseOptimizer(DPOptimizer):
    """Adds no noise on every SKIP_EVERY-th step (see module docstring)."""

    _noise_calls = 0

    def add_noise(self) -> None:
        self._noise_calls += 1
        if self._noise_calls % SKIP_EVERY:
            super().add_noise()
            return
        for p in self.params:
            p.grad = p.summed_grad.view_as(p).clone()
            _mark_as_processed(p.summed_grad)


def lm_optimizer_class(flaw: str | None) -> type[DPOptimizer]:
    """The DPOptimizer class of an LM flaw (Opacus's own for set-up and claim flaws)."""
    if flaw == "skipped_noise":
        return SkippedNoiseOptimizer
    if flaw == "per_layer_clipping":
        return PerTensorClippingOptimizer
    return optimizer_class(None)


class NoiseProbe:
    """The noise actually added, measured at every step on silent or nearly silent rows: the
    row of a reserved token that no example and no canary uses, in each probed parameter
    (the input embedding, where no real gradient reaches it, and the LM head, where the
    softmax adds a small real gradient).

    On such a row the released clipped sum is y_t = g_t + sigma Z (in units of C: p.grad * B /
    C), with g_t the real gradient (0 on the input row), so S_t = |y_t|^2 / sigma^2 is
    chi^2_k under the claim, or noncentral chi^2_k -- stochastically larger -- when g_t != 0.
    A step is flagged when S_t falls below the chi^2_k quantile at PROBE_ALPHA / (T m)
    (Bonferroni over the T planned steps and m probed rows): a correct run is flagged with
    probability at most PROBE_ALPHA.  A parameter trained outside the DP optimizer shows its
    bare real gradient there (no noise: flagged); a skipped noise step shows 0.  A
    configuration error like the claim checks, never an epsilon bound.
    """

    def __init__(self, params: list, row: int, *, steps: int) -> None:
        self.params = [p for p in params if getattr(p, "requires_grad", False)]
        self.row = int(row)
        self.steps = max(1, int(steps))
        self.ratios: list[list[float]] = []

    def attach(self, optimizer: DPOptimizer) -> NoiseProbe:
        previous = optimizer.step_hook

        def hook(opt: DPOptimizer) -> None:
            try:
                self._record(opt)
            except Exception:  # noqa: BLE001 -- never stop the user's training
                pass
            if previous is not None:
                previous(opt)

        optimizer.step_hook = hook
        return self

    def _record(self, opt: DPOptimizer) -> None:
        unit = float(opt.expected_batch_size) if opt.loss_reduction == "mean" else 1.0
        sigma = max(float(opt.noise_multiplier), 1e-300)
        row = []
        for p in self.params:
            g = p.grad
            if g is None:
                row.append(0.0)
                continue
            y = g[self.row].detach().double().cpu().numpy() * unit / float(opt.max_grad_norm)
            row.append(float(np.sum(y * y)) / sigma ** 2)
        self.ratios.append(row)

    def check(self) -> ClaimCheck:
        """The claim check: every step's measured noise consistent with sigma."""
        from scipy.stats import chi2

        if not self.params or not self.ratios:
            return ClaimCheck("noise_measured", True, 1.0, None, "no step to measure")
        m = len(self.params)
        k = np.array([int(np.prod(p.shape[1:])) for p in self.params])
        floor = chi2.ppf(PROBE_ALPHA / (self.steps * m), k)
        r = np.asarray(self.ratios)                                  # (steps, m)
        low_steps = np.flatnonzero((r < floor).any(axis=1))
        rel = float(np.sqrt(np.maximum(r, 0.0) / k).min())
        msg = (f"noise measured on silent rows was below the claim's noise multiplier at "
               f"{low_steps.size} of {r.shape[0]} steps (first at step "
               f"{int(low_steps[0]) + 1 if low_steps.size else 0}; smallest measured/claimed "
               f"noise {rel:.3g}): noise skipped or lowered, or a parameter outside the DP "
               f"optimizer" if low_steps.size
               else "noise measured on silent rows matches the claim at every step")
        return ClaimCheck("noise_measured", low_steps.size == 0, 1.0, rel, msg)
