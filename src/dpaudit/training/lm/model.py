"""The language models of LM audits: GPT-2-style causal transformers built from a config.

Nothing is downloaded: :func:`make_lm` builds ``transformers.GPT2LMHeadModel`` from a
``GPT2Config`` (CPU-tiny default: vocabulary 256 bytes + reserved tokens, 2 layers, width 64,
2 heads; dropout off).  Input and output embeddings are *untied*: with tied weights the row of
a token no text produces still moves (the softmax pushes every output row), so its input row
would not be silent.  ``n_positions`` is twice the training length: the position rows beyond
the training length get no real gradient either (a second silent tensor for spread canaries).

Opacus computes per-sample gradients of ``Conv1D`` (GPT-2's linear layers) through its
``torch.func`` fallback, which needs every input batched: :func:`position_ids` passes the
positions expanded to the batch (without them the per-sample code stacks a (1, L) tensor
with (B, L) ones and fails).

* :func:`pretrain` -- non-private pre-training (AdamW) on the public part, cached per
  (corpus, shape, steps, seed): the same public model for every audit seed;
* :func:`add_lora` -- LoRA adapters (``peft``) on ``c_attn``, the base frozen, the input
  embedding trainable (new tokens need trained rows);
* :func:`sequence_losses` -- mean next-token loss of each sequence on masked positions.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from dpaudit.validation import check_count, check_positive

__all__ = ["LMShape", "make_lm", "position_ids", "lm_loss", "sequence_losses", "pretrain",
           "add_lora", "next_token_accuracy", "input_embedding", "output_embedding",
           "init_new_tokens"]


@dataclass(frozen=True)
class LMShape:
    """Size of a GPT-2-style model: vocabulary, context, width, layers, heads."""

    vocab: int
    positions: int
    width: int = 64
    layers: int = 2
    heads: int = 2

    def __post_init__(self) -> None:
        check_count("vocab", self.vocab, minimum=2)
        check_count("positions", self.positions, minimum=2)
        check_count("width", self.width, minimum=2)
        check_count("layers", self.layers, minimum=1)
        check_count("heads", self.heads, minimum=1)
        if self.width % self.heads:
            raise ValueError(f"width must be a multiple of heads ({self.heads}); "
                             f"got {self.width}")


def make_lm(shape: LMShape, *, seed: int) -> nn.Module:
    """A freshly initialised ``GPT2LMHeadModel`` (untied embeddings, no dropout), seeded."""
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    cfg = GPT2Config(vocab_size=shape.vocab, n_positions=shape.positions, n_embd=shape.width,
                     n_layer=shape.layers, n_head=shape.heads, tie_word_embeddings=False,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=None,
                     eos_token_id=None, pad_token_id=None, use_cache=False)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(check_count("seed", seed))
        model = GPT2LMHeadModel(cfg)
    return model


def _base(model: nn.Module) -> nn.Module:
    """The underlying GPT2LMHeadModel of a (peft-wrapped / Opacus-wrapped) model."""
    m = getattr(model, "_module", model)
    get = getattr(m, "get_base_model", None)
    return get() if get is not None else m


def input_embedding(model: nn.Module) -> nn.Parameter:
    """The input embedding matrix (vocabulary x width) of the underlying model."""
    base: Any = _base(model)
    return base.get_input_embeddings().weight


def output_embedding(model: nn.Module) -> nn.Parameter:
    """The LM head's matrix (vocabulary x width) of the underlying model."""
    base: Any = _base(model)
    return base.get_output_embeddings().weight


def position_ids(ids: torch.Tensor) -> torch.Tensor:
    """Positions 0..L-1 expanded to the batch (B, L) (see module docstring)."""
    b, n = ids.shape
    return torch.arange(n, device=ids.device).unsqueeze(0).expand(b, n)


def _logits(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    return model(input_ids=ids, position_ids=position_ids(ids)).logits


def lm_loss(model: nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy of a batch (B, L): the mean over examples of each
    example's mean over its L - 1 predictions (equal lengths), Opacus's ``"mean"`` reduction."""
    logits = _logits(model, ids)[:, :-1]
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


@torch.no_grad()
def sequence_losses(model: nn.Module, ids: torch.Tensor, mask: torch.Tensor | None = None, *,
                    batch: int = 256) -> np.ndarray:
    """Per sequence: the mean next-token loss over the positions where ``mask`` (B, L) is
    True (position j is the loss of predicting token j from tokens < j; position 0 is never
    scored); all positions when ``mask`` is None."""
    was = model.training
    model.eval()
    out = []
    for s in range(0, ids.shape[0], batch):
        x = ids[s:s + batch]
        logits = _logits(model, x)[:, :-1]
        nll = F.cross_entropy(logits.transpose(1, 2), x[:, 1:], reduction="none")
        m = (torch.ones_like(nll, dtype=torch.bool) if mask is None
             else mask[s:s + batch, 1:].to(nll.device))
        out.append(((nll * m).sum(1) / m.sum(1).clamp(min=1)).double().cpu().numpy())
    model.train(was)
    return np.concatenate(out) if out else np.zeros(0)


@torch.no_grad()
def next_token_accuracy(model: nn.Module, ids: torch.Tensor) -> float:
    """Top-1 next-token accuracy on held-out sequences."""
    was = model.training
    model.eval()
    acc = (_logits(model, ids)[:, :-1].argmax(-1) == ids[:, 1:]).double().mean()
    model.train(was)
    return float(acc)


@lru_cache(maxsize=4)
def _pretrained_state(shape: LMShape, corpus: str, length: int, steps: int, seed: int,
                      batch: int, lr: float, device: str) -> dict[str, torch.Tensor]:
    from dpaudit.training.lm.corpus import corpus_split

    model = make_lm(shape, seed=seed).to(device)
    data = torch.from_numpy(np.array(corpus_split(corpus, length).pretrain))
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, data.shape[0], (batch,), generator=gen)
        loss = lm_loss(model, data[idx].to(device))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def pretrain(shape: LMShape, corpus: str, length: int, *, steps: int, seed: int = 0,
             batch: int = 32, lr: float = 3e-3, device: str = "cpu") -> nn.Module:
    """The public model: ``steps`` AdamW steps on the pre-training part (no privacy; no
    reserved token occurs there).  Cached, so audits over many seeds share one model."""
    check_count("pretrain_steps", steps)
    check_positive("lr", lr)
    state = _pretrained_state(shape, corpus, length, steps, seed, batch, float(lr), device)
    model = make_lm(shape, seed=seed).to(device)
    model.load_state_dict(copy.deepcopy(state))
    return model


def add_lora(model: nn.Module, rank: int = 4) -> nn.Module:
    """LoRA adapters (peft) of rank ``rank`` on every ``c_attn`` (GPT-2's fused QKV, a
    ``Conv1D``: ``fan_in_fan_out=True``); the base model frozen except the input embedding
    (the reserved tokens' rows must be learnt; the usual ``modules_to_save`` of added tokens)."""
    from peft import LoraConfig, get_peft_model

    rank = check_count("lora_rank", rank, minimum=1)
    peft_model = get_peft_model(model, LoraConfig(r=rank, lora_alpha=2 * rank,
                                                  target_modules=["c_attn"], lora_dropout=0.0,
                                                  fan_in_fan_out=True))
    input_embedding(peft_model).requires_grad_(True)
    return peft_model


@torch.no_grad()
def init_new_tokens(model: nn.Module, token_ids: np.ndarray) -> None:
    """Set the rows of the new tokens ``token_ids`` in the input and output embeddings to the
    mean of the other rows (the usual initialisation of added tokens, e.g. transformers'
    ``mean_resizing``, without its random spread).  Identical rows make canaries keyed by
    different new tokens exchangeable before training, so that in the final model they
    differ only by what training -- the canary itself and the DP noise -- did to them."""
    for w in (input_embedding(model), output_embedding(model)):
        ids = torch.as_tensor(np.asarray(token_ids), dtype=torch.long, device=w.device)
        keep = torch.ones(w.shape[0], dtype=torch.bool, device=w.device)
        keep[ids] = False
        w[ids] = w[keep].mean(dim=0)
