"""Small models for CPU audits of DP-SGD on digits: ``mlp``, ``cnn``, ``logreg``.

All are made only of layers Opacus computes per-sample gradients for (Linear, Conv2d, ReLU,
no BatchNorm).  Sizes (trainable coordinates): logreg 650, mlp(hidden=256) 19,210,
cnn 5,146.
"""

from __future__ import annotations

import torch
from torch import nn

from dpaudit.training.choices import MODELS  # the one list (torch-free)
from dpaudit.validation import check_choice, check_count

__all__ = ["MODELS", "make_model", "trainable_parameters", "count_coordinates", "accuracy",
           "ReservedModel"]


class ReservedModel(nn.Module):
    """A model with reserved coordinates for canaries: ``main(x[:, :d]) + branch(x[:, d:])``.

    The last ``reserved`` input features are reserved: real data carries 0 there.  They feed
    a bias-free branch Linear(reserved, width) -> ReLU -> (Linear(width, width) -> ReLU) x
    (depth - 2) -> Linear(width, num_classes) whose output is added to the main model's.
    For real data the branch's input is 0, so its output is 0 (the predictions are the main
    model's, at every step, whatever the noise does to the branch) and every branch weight
    gets exactly zero real-data gradient: ``depth`` parameter tensors of silent coordinates.
    Canaries read there see only themselves and the noise -- in several tensors, so a canary
    spread over them exposes per-tensor clipping -- and a canary *example* carrying ``value``
    on reserved feature r moves the branch's first-layer column r and no other example does.
    Works around any flat-input main model (for images: give the head this side input).
    A model without a flat input, audited with planted canaries only:
    :class:`dpaudit.training.branch.CanaryBranch` (silent by a zero gate, not zero inputs).
    """

    def __init__(self, main: nn.Module, in_features: int, reserved: int, num_classes: int, *,
                 width: int = 16, depth: int = 3) -> None:
        super().__init__()
        self.in_features = check_count("in_features", in_features, minimum=1)
        self.reserved = check_count("reserved", reserved, minimum=1)
        width = check_count("width", width, minimum=1)
        depth = check_count("depth", depth, minimum=2)
        self.main = main
        layers: list[nn.Module] = [nn.Linear(reserved, width, bias=False)]
        for _ in range(depth - 2):
            layers += [nn.ReLU(), nn.Linear(width, width, bias=False)]
        layers += [nn.ReLU(), nn.Linear(width, num_classes, bias=False)]
        self.branch = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = self.in_features
        return self.main(x[:, :d]) + self.branch(x[:, d:])



def make_model(name: str, *, seed: int = 0, hidden: int = 256,
               num_classes: int = 10, in_features: int = 64, reserved: int = 0) -> nn.Module:
    """A freshly initialised model (seeded with ``torch.manual_seed``-free local generator).

    * ``mlp``: in_features (64) -> hidden -> ReLU -> num_classes (flat inputs);
    * ``logreg``: in_features -> num_classes;
    * ``cnn``: Conv(1->16, 3x3, pad 1) ReLU MaxPool2 -> Conv(16->32, 3x3, pad 1) ReLU MaxPool2
      -> Linear(32*2*2 -> num_classes) (inputs of shape (1, 8, 8)).

    ``reserved`` > 0 (flat models): ``in_features`` counts the real features only and the
    model is a :class:`ReservedModel` taking ``in_features + reserved`` inputs.
    """
    check_choice("model", name, MODELS)
    hidden = check_count("hidden", hidden, minimum=1)
    seed = check_count("seed", seed)
    in_features = check_count("in_features", in_features, minimum=1)
    reserved = check_count("reserved", reserved)
    if reserved and name == "cnn":
        raise ValueError("reserved features need a flat-input model ('mlp' or 'logreg')")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if reserved and name != "cnn":
            main = make_model(name, seed=seed, hidden=hidden, num_classes=num_classes,
                              in_features=in_features)
            return ReservedModel(main, in_features, reserved, num_classes)
        if name == "logreg":
            return nn.Sequential(nn.Linear(in_features, num_classes))
        if name == "mlp":
            return nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(),
                                 nn.Linear(hidden, num_classes))
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
