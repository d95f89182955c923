"""Small models for CPU audits of DP-SGD on digits: ``mlp``, ``cnn``, ``logreg``.

All are made only of layers Opacus computes per-sample gradients for (Linear, Conv2d, ReLU,
no BatchNorm).  Sizes (trainable coordinates): logreg 650, mlp(hidden=256) 19,210,
cnn 5,146.
"""

from __future__ import annotations

import torch
from torch import nn

from dpaudit.validation import check_choice, check_count

__all__ = ["MODELS", "make_model", "trainable_parameters", "count_coordinates", "accuracy"]

MODELS = ("mlp", "cnn", "logreg")


def make_model(name: str, *, seed: int = 0, hidden: int = 256,
               num_classes: int = 10) -> nn.Module:
    """A freshly initialised model (seeded with ``torch.manual_seed``-free local generator).

    * ``mlp``: 64 -> hidden -> ReLU -> num_classes (flat inputs);
    * ``logreg``: 64 -> num_classes;
    * ``cnn``: Conv(1->16, 3x3, pad 1) ReLU MaxPool2 -> Conv(16->32, 3x3, pad 1) ReLU MaxPool2
      -> Linear(32*2*2 -> num_classes) (inputs of shape (1, 8, 8)).
    """
    check_choice("model", name, MODELS)
    hidden = check_count("hidden", hidden, minimum=1)
    seed = check_count("seed", seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if name == "logreg":
            return nn.Sequential(nn.Linear(64, num_classes))
        if name == "mlp":
            return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))
        return nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 2 * 2, num_classes))


def trainable_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The parameters that define the coordinate space: ``requires_grad`` ones, in
    ``model.parameters()`` order (flat coordinate c lives in the first parameter whose
    cumulative size exceeds c)."""
    return [p for p in model.parameters() if p.requires_grad]


def count_coordinates(model: nn.Module) -> int:
    return int(sum(p.numel() for p in trainable_parameters(model)))


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Top-1 accuracy (no grad)."""
    with torch.no_grad():
        return float((model(x).argmax(dim=1) == y).float().mean())
