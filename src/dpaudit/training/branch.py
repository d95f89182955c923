"""A canary branch: silent coordinates added to any model, for gradient canaries.

Real data moving a canary's coordinate adds noise the audit cannot remove ("Privacy Audit as
Bits Transmission" §3.5): on a dense model -- a CNN, an embedding classifier, a transformer,
a tabular MLP -- every coordinate is moved by real data and a one-run audit collapses towards
0.  :class:`CanaryBranch` wraps the user's model (before ``make_private``, so that the
optimizer holds the new parameters) and adds a block of parameters whose real-data gradient
is exactly zero at every step::

    out = model(*args) + gate * branch(1)        gate = 0 (a buffer), branch(1) of shape (B, 1)

with ``branch`` = Linear(1, width) -> ReLU -> Linear(width, 1, bias=False): three tensors,
``canary_branch.0.weight`` (width x 1), ``canary_branch.0.bias`` (width, a 1-D tensor named
like a bias) and ``canary_branch.2.weight`` (1 x width).  Since ``gate`` is 0:

* the outputs are the model's, bit for bit (``out + 0`` is ``out``), at every step, whatever
  the noise does to the branch's parameters;
* the gradient reaching the branch is ``0 * d loss / d out = 0``, so every per-example
  gradient of its parameters -- Opacus's ``GradSampleModule`` included, which multiplies the
  (zero) backpropagated gradient by the layer's activations -- is exactly 0.

:func:`dpaudit.training.GradientCanaries.for_model` measures that (zero activity) and plants
its canaries there, each spread canary over the three branch tensors (two coordinates each;
:mod:`dpaudit.canaries.plan`): correct clipping reads exactly C per sampled step, clipping
each tensor on its own reads sqrt(3) C, and a loop that clips the weights (``ndim >= 2``, or
by name) but sums the biases unclipped leaves the canaries' bias part at its planted size --
every spread canary has two of its six parts on ``canary_branch.0.bias``, so it reads about
1000 / 3 C instead of C.  The branch is registered before the model, so its tensors come
first among the silent ones.

Size: the default spread canaries use about 2 coordinates per canary in each of the three
tensors, and the sentinels a few more, so ``width = 3 * canaries`` (9,000 coordinates for
1,000 canaries; per-example gradients of 3 width floats per example).

:class:`dpaudit.training.ReservedModel` is the other design: its branch is silent because
real data carries 0 on reserved *input* features, which canary examples
(:class:`~dpaudit.training.ExampleCanaries`) can set; it needs a flat-input model.  The canary
branch needs nothing of the model but a tensor output with the batch first, and serves
planted gradient canaries only.
"""

from __future__ import annotations

import torch
from torch import nn

from dpaudit.training.common import BRANCH_WIDTH_PER_CANARY  # shared with the JAX path
from dpaudit.validation import check_count

__all__ = ["CanaryBranch", "with_canary_branch", "needs_canary_branch",
           "canary_branch_if_needed", "BRANCH_WIDTH_PER_CANARY"]


class CanaryBranch(nn.Module):
    """``model`` plus a gated-off branch of silent coordinates (see the module docstring).

    Args:
      model: the user's model; it must return one tensor with the batch first (logits).
      canaries: the number of gradient canaries the branch is sized for.
      width: the branch's width (default ``3 * canaries``).
    """

    gate: torch.Tensor

    def __init__(self, model: nn.Module, canaries: int = 1000, *,
                 width: int | None = None) -> None:
        super().__init__()
        if not isinstance(model, nn.Module):
            raise ValueError(f"model must be a torch.nn.Module; got {type(model).__name__}")
        canaries = check_count("canaries", canaries, minimum=1)
        width = check_count("width", BRANCH_WIDTH_PER_CANARY * canaries if width is None
                            else width, minimum=1)
        # made where the model's parameters live, in their floating dtype: a model already
        # on an accelerator (or in float64) gets its branch there, so the wrapped model
        # runs without a further .to() (the CPU and float32 for a model without one)
        first = next((p for p in model.parameters() if p.is_floating_point()), None)
        where = ({} if first is None else {"device": first.device, "dtype": first.dtype})
        # registered first: the branch's tensors lead the model's parameters
        self.canary_branch = nn.Sequential(nn.Linear(1, width, **where), nn.ReLU(),
                                           nn.Linear(width, 1, bias=False, **where))
        self.model = model
        self.register_buffer("gate", torch.zeros((), **where), persistent=False)

    def silent_parameters(self) -> list[nn.Parameter]:
        """The parameters no example can move whatever the data: the branch's, while the
        gate is 0 (their per-example gradients are exactly 0; the placement's silence check
        skips them, :func:`dpaudit.training.canaries.silent_by_construction`)."""
        return list(self.canary_branch.parameters()) if float(self.gate) == 0.0 else []

    def forward(self, *args: object, **kwargs: object) -> torch.Tensor:
        out = self.model(*args, **kwargs)
        if not isinstance(out, torch.Tensor) or out.ndim == 0:
            raise ValueError("CanaryBranch needs a model that returns one tensor with the "
                             f"batch first (logits); got {type(out).__name__}"
                             + (" of 0 dimensions" if isinstance(out, torch.Tensor) else ""))
        ones = torch.ones((out.shape[0], 1), dtype=out.dtype, device=out.device)
        side = self.canary_branch(ones).view(out.shape[0], *([1] * (out.ndim - 1)))
        return out + self.gate.to(out.dtype) * side


def with_canary_branch(model: nn.Module, canaries: int = 1000, *,
                       width: int | None = None) -> CanaryBranch:
    """``model`` wrapped in a :class:`CanaryBranch` sized for ``canaries`` gradient canaries:
    call it before ``PrivacyEngine.make_private`` and train the returned module."""
    return CanaryBranch(model, canaries, width=width)


def needs_canary_branch(model: nn.Module, x: torch.Tensor, y: torch.Tensor, canaries: int, *,
                        max_grad_norm: float = 1.0, seed: int = 0) -> bool:
    """Whether ``canaries`` gradient canaries need a branch on ``model``: True when the model
    has fewer silent coordinates than canaries -- coordinates no sampled training example
    moves under the probes of :func:`~dpaudit.training.canaries.coordinate_activity` (the
    model and three noisy copies) -- or fewer coordinates in all.  Only on a silent
    coordinate does a canary read its own contribution plus the noise and nothing else (a
    correct run's bound is then distributed as the DP-SGD simulator's); on coordinates real
    data moves, the real gradients' drift adds up over the steps and is not removed
    (docs/training.md, "A canary branch for dense models": on four dense models the branch
    took per-tensor clipping from 4-9 of 10 seeds to 10 of 10, and the bound at 1,000
    canaries to 57-86% of the claim)."""
    from dpaudit.training.canaries import coordinate_activity
    from dpaudit.training.models import count_coordinates

    if not isinstance(model, nn.Module):
        raise ValueError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    canaries = check_count("canaries", canaries, minimum=1)
    d = count_coordinates(model)
    if d == 0:
        raise ValueError("model has no trainable parameters (requires_grad) to plant "
                         "gradient canaries in")
    if canaries > d:
        return True
    act = coordinate_activity(model, x, y, max_grad_norm, seed=seed, stop_below=canaries)
    return int((act == 0).sum()) < canaries


def canary_branch_if_needed(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                            canaries: int = 1000, *, max_grad_norm: float = 1.0,
                            seed: int = 0) -> nn.Module:
    """``model`` wrapped in a :class:`CanaryBranch` when :func:`needs_canary_branch` says so
    (a dense model), else ``model`` itself: call it before ``make_private`` and train what it
    returns; ``isinstance(result, CanaryBranch)`` tells which."""
    if needs_canary_branch(model, x, y, canaries, max_grad_norm=max_grad_norm, seed=seed):
        return CanaryBranch(model, canaries)
    return model
