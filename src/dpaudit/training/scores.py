"""Canary scores of one training run (higher = more likely that the canary was included).

The scores are implemented once, framework-neutrally, in :mod:`dpaudit.canaries.scores`;
this module re-exports ``lr_step_scores`` and computes the black-box losses with torch.

* white box, per released step (Bits Transmission §6.4 / Tight One-Run App. A): with
  y_t = b S_t + sigma Z_t the canary-coordinate observation in units of C, the optimal
  likelihood-ratio score of a step is log(1 - q + q exp((y_t - 1/2) / sigma^2))
  (:func:`lr_step_scores`; summed over steps by
  :meth:`~dpaudit.training.canaries.GradientCanaries.white_box_scores`, which also offers the
  sum score sum_t y_t - qT/2);
* last iterate: theta_0 - theta_T on the canary coordinate
  (:meth:`~dpaudit.training.canaries.GradientCanaries.last_iterate_scores`);
* black box: the canary's loss under the initial model minus under the final model
  (:func:`loss_drop_scores`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from dpaudit.canaries.scores import black_box_scores, lr_step_scores

if TYPE_CHECKING:
    from dpaudit.training.canaries import InputCanaries

__all__ = ["lr_step_scores", "loss_drop_scores"]


def loss_drop_scores(model_before: nn.Module, model_after: nn.Module,
                     canaries: InputCanaries) -> np.ndarray:
    """Black-box score: per-canary cross-entropy under the initial model minus under the final
    model (higher = the model learnt the canary's label = more likely a member)."""
    from dpaudit.training.canaries import _model_device, _numpy

    dev = _model_device(model_after)  # the canaries go where the model is
    x, y = canaries.x.to(dev), canaries.y.to(dev)
    with torch.no_grad():
        before = F.cross_entropy(model_before(x), y, reduction="none")
        after = F.cross_entropy(model_after(x), y, reduction="none")
    return black_box_scores(_numpy(before), _numpy(after))
