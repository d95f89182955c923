"""Audit real DP-SGD training (PyTorch + Opacus) in one run: white box, last iterate, black box.

The only package of dpaudit that imports torch; it needs the extra
``pip install 'dpaudit[torch]'`` (torch, opacus, scikit-learn) and says so when missing.

Public API (stable; other modules such as the case studies build on it):

* data:      :class:`Dataset`, :func:`load_digits_data` (scikit-learn's digits, nothing
  downloaded);
* models:    :data:`MODELS`, :func:`make_model` ("mlp", "cnn", "logreg"),
  :func:`trainable_parameters`, :func:`count_coordinates`, :func:`accuracy`;
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
  document), :func:`simulator_reference`, :class:`TrainAudit`.

See docs/training.md for a runnable example on a user's own model and training loop.
"""

from dpaudit.training._deps import EXTRA_HINT, MissingExtraError, require_torch

require_torch()

from dpaudit.training.accounting import (  # noqa: E402
    claimed_epsilon,
    opacus_epsilon,
    sigma_for_epsilon,
)
from dpaudit.training.audit import (  # noqa: E402
    TrainAudit,
    audit_training,
    simulator_reference,
    train_audit,
    train_audit_dict,
)
from dpaudit.training.canaries import (  # noqa: E402
    INPUT_CANARY_KINDS,
    GradientCanaries,
    InputCanaries,
    choose_coordinates,
    coordinate_activity,
    draw_bits,
    make_input_canaries,
)
from dpaudit.training.data import Dataset, load_digits_data  # noqa: E402
from dpaudit.training.flaws import FLAWS, optimizer_class  # noqa: E402
from dpaudit.training.models import (  # noqa: E402
    MODELS,
    accuracy,
    count_coordinates,
    make_model,
    trainable_parameters,
)
from dpaudit.training.scores import loss_drop_scores, lr_step_scores  # noqa: E402
from dpaudit.training.trainer import (  # noqa: E402
    CANARY_TYPES,
    THREATS,
    TrainingConfig,
    TrainingRun,
    train_with_canaries,
)

__all__ = [
    "EXTRA_HINT", "MissingExtraError", "require_torch",
    "Dataset", "load_digits_data",
    "MODELS", "make_model", "trainable_parameters", "count_coordinates", "accuracy",
    "GradientCanaries", "choose_coordinates", "coordinate_activity", "InputCanaries",
    "make_input_canaries", "draw_bits", "INPUT_CANARY_KINDS",
    "loss_drop_scores", "lr_step_scores",
    "FLAWS", "optimizer_class",
    "opacus_epsilon", "claimed_epsilon", "sigma_for_epsilon",
    "TrainingConfig", "TrainingRun", "train_with_canaries", "CANARY_TYPES", "THREATS",
    "TrainAudit", "audit_training", "train_audit", "train_audit_dict", "simulator_reference",
]
