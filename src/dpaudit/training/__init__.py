"""Audit real DP-SGD training (PyTorch + Opacus) in one run: white box, last iterate, black box.

The only package of dpaudit that imports torch; it needs the extra
``pip install 'dpaudit[torch]'`` (torch, opacus, scikit-learn) and says so when missing.
Importing the package itself does not import torch: each public name is loaded on first use
(module ``__getattr__``), so a sibling ``dpaudit.training.jax`` can live without torch.  The
framework-neutral canary core (plan, scores, claim checks) is :mod:`dpaudit.canaries`.

Public API (stable; other modules such as the case studies build on it):

* data:      :class:`Dataset`, :func:`load_digits_data` (scikit-learn's digits, nothing
  downloaded);
* models:    :data:`MODELS`, :func:`make_model` ("mlp", "cnn", "logreg"),
  :func:`trainable_parameters`, :func:`count_coordinates`, :func:`accuracy`;
  :class:`CanaryBranch` / :func:`with_canary_branch` (silent coordinates added to any
  model for gradient canaries: wrap before ``make_private``), :func:`canary_branch_if_needed`
  / :func:`needs_canary_branch` (wrap only a model short of silent coordinates);
* canaries:  :class:`GradientCanaries` (Dirac gradient canaries planted into an Opacus
  ``DPOptimizer``: ``GradientCanaries.for_model(...).attach(optimizer)``, then
  ``white_box_scores()`` / ``last_iterate_scores()``), :func:`choose_coordinates`,
  :func:`coordinate_activity`, :class:`InputCanaries`, :func:`make_input_canaries`,
  :func:`draw_bits`;
* scores:    :func:`lr_step_scores`, :func:`loss_drop_scores` (black box);
* flaws:     :data:`FLAWS`, :func:`optimizer_class` (flawed ``DPOptimizer`` subclasses);
* accounting: :func:`opacus_epsilon`, :func:`claimed_epsilon`, :func:`sigma_for_epsilon`;
* training:  :class:`TrainingConfig`, :class:`TrainingRun`, :func:`train_with_canaries`;
* audit:     :func:`audit_training` (bits + scores of one run -> every one-run method and the
  verdict), :func:`train_audit`, :func:`train_audit_dict` (the ``train-audit --json``
  document), :func:`simulator_reference`; every audit returns the one
  :class:`dpaudit.outcome.Audit` (``TrainAudit`` is its former name, an alias), its facts
  :class:`~dpaudit.training.facts.TrainingFacts`.

See docs/training.md for a runnable example on a user's own model and training loop.
"""

import importlib
from typing import Any

from dpaudit.training._deps import EXTRA_HINT, MissingExtraError, require_torch

#: public name -> submodule that defines it (loaded, with torch, on first use)
_NAMES = {
    "claimed_epsilon": "accounting", "opacus_epsilon": "accounting",
    "sigma_for_epsilon": "accounting",
    "TrainAudit": "audit", "audit_training": "audit", "simulator_reference": "audit",
    "train_audit": "audit", "train_audit_dict": "audit",
    "INPUT_CANARY_KINDS": "canaries", "GradientCanaries": "canaries",
    "InputCanaries": "canaries", "choose_coordinates": "canaries",
    "coordinate_activity": "canaries", "draw_bits": "canaries",
    "make_input_canaries": "canaries",
    "Dataset": "data", "load_digits_data": "data", "load_data": "data",
    "DATASETS": "data", "reserve_features": "data",
    "ExampleCanaries": "examples", "TokenCanaries": "examples",
    "reserve_token_rows": "examples", "ReservedModel": "models",
    "CanaryBranch": "branch", "with_canary_branch": "branch",
    "needs_canary_branch": "branch", "canary_branch_if_needed": "branch",
    "FLAWS": "flaws", "optimizer_class": "flaws",
    "MODELS": "models", "accuracy": "models", "count_coordinates": "models",
    "make_model": "models", "trainable_parameters": "models",
    "loss_drop_scores": "scores", "lr_step_scores": "scores",
    "CANARY_TYPES": "trainer", "THREATS": "trainer", "TrainingConfig": "trainer",
    "TrainingRun": "trainer", "train_with_canaries": "trainer",
}


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'dpaudit.training' has no attribute {name!r}")
    require_torch()
    value = getattr(importlib.import_module(f"dpaudit.training.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_NAMES])


__all__ = ["EXTRA_HINT", "MissingExtraError", "require_torch", *_NAMES]
