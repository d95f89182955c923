"""Audit DP fine-tuning of language models (PyTorch + Opacus + transformers, optional peft).

Needs ``pip install 'dpaudit[lm]'``.  A GPT-2-style causal transformer built from a config
(nothing downloaded), pre-trained non-privately on public offline text and DP fine-tuned
(full or LoRA) with canaries; see docs/llm.md.

* :mod:`.corpus` -- offline text as byte tokens, reserved tokens from 256 on;
* :mod:`.model` -- :func:`make_lm`, :func:`pretrain`, :func:`add_lora`, losses;
* :mod:`.canaries` -- reserved-token gradient canaries (white box), canary sequences (black
  box: new-token, rare-token, random), the own-loop API (:func:`add_canary_tokens`,
  :func:`make_sequence_canaries`, :func:`insert_canaries`, :func:`sequence_scores`);
* :mod:`.flaws` -- DP fine-tuning mistakes and the noise probe;
* :mod:`.trainer` -- :class:`LMConfig`, :func:`train_lm_with_canaries`;
* :mod:`.audit` -- :func:`train_audit_lm`, :func:`lm_audit_dict` (``train-audit --model lm``).
"""

from dpaudit.training._deps import require_torch

require_torch()
try:
    import transformers  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the installed extras
    raise ImportError("auditing language models needs the 'lm' extra: pip install "
                      "'dpaudit[lm]' (transformers, peft)") from e

from dpaudit.training.lm.audit import lm_audit_dict, train_audit_lm  # noqa: E402
from dpaudit.training.lm.canaries import (  # noqa: E402
    SEQUENCE_KINDS,
    SequenceCanaries,
    add_canary_tokens,
    exposure,
    insert_canaries,
    make_sequence_canaries,
    reserved_token_canaries,
    reserved_token_plan,
    sequence_scores,
)
from dpaudit.training.lm.flaws import LM_FLAWS, NoiseProbe  # noqa: E402
from dpaudit.training.lm.model import LMShape, add_lora, make_lm, pretrain  # noqa: E402
from dpaudit.training.lm.trainer import LMConfig, LMRun, train_lm_with_canaries  # noqa: E402

__all__ = ["LMConfig", "LMRun", "train_lm_with_canaries", "train_audit_lm", "lm_audit_dict",
           "SEQUENCE_KINDS", "SequenceCanaries", "add_canary_tokens", "exposure",
           "insert_canaries", "make_sequence_canaries", "reserved_token_plan",
           "reserved_token_canaries",
           "sequence_scores", "LM_FLAWS", "NoiseProbe", "LMShape", "add_lora", "make_lm",
           "pretrain"]
