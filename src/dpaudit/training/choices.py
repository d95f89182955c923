"""The choices of an audited training run, importable without torch, Opacus or JAX.

The one home of every named option of ``dpaudit train-audit`` (models, flaws, data sets,
canary shapes, mechanisms, frameworks); the modules that implement them
(``training.models``, ``training.flaws``, ``training.trainer``, ``training.data``,
``training.jax.flaws``, ``training.jax.plan``) re-export them.  :func:`check_train_audit`
validates a command line against them BEFORE anything heavy is imported, so an invalid choice
is one ``error:`` line in well under a second, not after the 10-20 s torch import.
"""

from __future__ import annotations

from dpaudit.validation import check_choice

__all__ = ["FRAMEWORKS", "MODELS", "JAX_MODELS", "FLAWS", "JAX_FLAWS", "DATASETS",
           "SHAPE_SETS", "MECHANISMS", "LM_FINETUNES", "LM_SEQUENCE_KINDS", "LM_CORPORA",
           "LM_SHAPES", "LM_FLAWS", "check_train_audit", "check_lm_choices"]

FRAMEWORKS = ("opacus", "jax")
#: Opacus models (``training.models.make_model``)
MODELS = ("mlp", "cnn", "logreg")
#: the JAX path trains the digits MLP with reserved inputs
JAX_MODELS = ("mlp",)
#: Opacus flaws (``training.flaws``)
FLAWS = ("backprop_clipping", "mean_noise", "non_private_group", "per_tensor_clipping",
         "batch_sum_clipping", "averaged_clipping", "wrong_clip_noise", "lowered_sigma",
         "too_few_steps", "unclipped_biases", "skipped_noise")
#: jax_privacy flaws (``training.jax.flaws``)
JAX_FLAWS = ("mean_noise", "strategy_mismatch", "unclipped_group", "skipped_noise",
             "zero_steps", "wrong_clip_noise", "per_tensor_clipping", "unclipped_biases")
DATASETS = ("digits", "breast_cancer", "wine")
#: gradient-canary shape sets (``training.trainer``)
SHAPE_SETS = ("dirac", "mixed", "tensors", "block")
#: DP-SGD or BandMF (correlated noise; ``training.jax.plan``)
MECHANISMS = ("dpsgd", "bandmf")
#: ``--model lm`` (``training.lm``): full fine-tuning or LoRA adapters
LM_FINETUNES = ("full", "lora")
#: the LM's canary sequences (``training.lm.canaries``)
LM_SEQUENCE_KINDS = ("new_token", "new_token_key", "rare_token", "random")
#: the LM's corpora (``training.lm.corpus``)
LM_CORPORA = ("pydoc", "synthetic")
#: the LM's white-box canary shapes (``training.lm.canaries``)
LM_SHAPES = ("dirac", "tensors")
#: ``--model lm`` flaws (``training.lm.flaws``)
LM_FLAWS = ("embedding_outside_dp", "head_outside_dp", "skipped_noise", "per_layer_clipping",
            "wrong_epochs", "wrong_sampling_rate")


def check_train_audit(*, framework: str, mechanism: str, model: str, canary: str,
                      threat: str | None, flawed: str | None, score: str, input_kind: str,
                      data: str, shapes: str) -> None:
    """ValueError naming the first invalid choice of a ``train-audit`` command line (the
    same messages as the configs' own checks, which still run after the import)."""
    from dpaudit.training.common import CANARY_TYPES, INPUT_KINDS, SCORE_KINDS, THREATS

    check_choice("framework", framework, FRAMEWORKS)
    check_choice("mechanism", mechanism, MECHANISMS)
    jax = framework == "jax"
    if jax and model not in JAX_MODELS:
        raise ValueError(f"model must be 'mlp' with framework 'jax' (the digits MLP with "
                         f"reserved inputs); got {model!r}")
    check_choice("model", model, MODELS + ("lm",))  # lm: dpaudit.training.lm checks its own
    check_choice("canary", canary, CANARY_TYPES)
    if threat is not None:
        check_choice("threat", threat, THREATS)
    if flawed is not None:
        check_choice("flawed", flawed, JAX_FLAWS if jax else FLAWS)
    check_choice("score", score, SCORE_KINDS)
    check_choice("input_kind", input_kind, INPUT_KINDS)
    check_choice("data", data, DATASETS)
    check_choice("shapes", shapes, SHAPE_SETS)


def check_lm_choices(*, finetune: str | None, sequence_kind: str | None,
                     device: str | None, flawed: str | None = None) -> None:
    """ValueError naming the first invalid ``--model lm`` choice (None = not given), before
    torch and transformers are imported (:class:`dpaudit.training.lm.LMConfig` checks the
    same again)."""
    if finetune is not None:
        check_choice("finetune", finetune, LM_FINETUNES)
    if sequence_kind is not None:
        check_choice("sequence_kind", sequence_kind, LM_SEQUENCE_KINDS)
    if device is not None:
        check_choice("device", device.split(":")[0], ("cpu", "cuda", "mps"))
    if flawed is not None:
        check_choice("flawed", flawed, LM_FLAWS)
