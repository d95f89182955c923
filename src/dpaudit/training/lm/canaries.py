"""Canaries for language-model fine-tuning: reserved-token gradient canaries and canary sequences.

White box (gradient canaries on reserved-token rows).  Reserved tokens are new tokens that no
training text contains.  With untied embeddings, the input-embedding row of such a token gets
exactly zero gradient from every real example (the row is only read when the token is an
input), and so do the position rows beyond the training length: *silent* coordinates.  The
canaries of the one-run game (Steinke, Nasr and Jagielski 2023, Alg. 1; Dirac canaries, "Privacy
Audit as Bits Transmission" §6.4) are planted there through the project's canary core
(:func:`dpaudit.canaries.plan_gradient_canaries`, planted into Opacus by
:class:`dpaudit.training.canaries.GradientCanaries`): every reading is then the canary plus
the DP noise, nothing else -- the simulator's game on a real transformer.  Shapes: ``"dirac"``
(one coordinate each) or ``"tensors"`` (one coordinate in the reserved embedding rows and one in
the unused position rows, same amplitude 1 after correct clipping, sqrt(2) C under per-layer
clipping, which it exposes).  For adapter (LoRA) fine-tuning the reserved rows stay trainable
(new tokens need learnt rows) and carry the canaries; the LoRA factors have no silent
coordinate (their gradients depend on every example).

Black box (canary sequences, final model only).  Canary i is a token sequence, a held-out
text prefix followed by a *secret* of ``secret_length`` tokens; it joins the fine-tuning data
iff its secret bit is 1.  Its score is the loss drop on the secret,
loss_reference(secret | prefix) - loss_final(secret | prefix), the reference being the
pre-trained model (:func:`dpaudit.canaries.black_box_scores`).  Designs compared:

* ``"new_token"`` -- the secret repeats canary i's own reserved token (Panda et al.,
  "Privacy Auditing of Large Language Models", ICLR 2025, §3.1: new-token canaries; the
  reference model has never seen the token, so the loss drop of a member is large);
* ``"rare_token"`` -- the secret is drawn from the byte tokens least frequent in the
  fine-tuning data (Panda et al. §3.1's in-vocabulary rare-token variant), shared by canaries;
* ``"random"`` -- the secret is uniform printable bytes (the classical random canary, Carlini
  et al. 2019, "The Secret Sharer").

Any score of the final model gives a valid one-run audit: the bits are random and independent
of everything else (Steinke et al. 2023, Thm 3.1); the designs differ only in power.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from dpaudit.canaries import CanaryPlan, Layout, draw_bits, plan_gradient_canaries
from dpaudit.canaries.scores import black_box_scores
from dpaudit.training.choices import LM_SEQUENCE_KINDS as SEQUENCE_KINDS
from dpaudit.training.choices import LM_SHAPES
from dpaudit.training.lm.corpus import BASE_VOCAB
from dpaudit.training.lm.model import input_embedding, sequence_losses
from dpaudit.validation import check_choice, check_count

__all__ = ["SEQUENCE_KINDS", "LM_SHAPES", "silent_activity", "reserved_token_plan",
           "reserved_token_canaries",
           "SequenceCanaries", "make_sequence_canaries", "sequence_scores",
           "add_canary_tokens", "insert_canaries", "exposure"]

_PRINTABLE = np.arange(32, 127)


def _rows_mask(p: nn.Parameter, rows: np.ndarray) -> np.ndarray:
    m = np.zeros(p.shape[0], dtype=bool)
    m[rows] = True
    return np.repeat(m, int(np.prod(p.shape[1:])))


def silent_activity(params: list[nn.Parameter], model: nn.Module, token_ids: np.ndarray, *,
                    unused_positions: np.ndarray | None = None) -> np.ndarray:
    """Activity of every trainable coordinate for the canary plan: 0 on the reserved tokens'
    input-embedding rows (``token_ids``) and on the unused position rows, 1 elsewhere.  Zero
    by construction (no real example contains the token or reaches the position; checked by
    ``tests/test_training_lm.py`` on Opacus's per-sample gradients)."""
    wte = input_embedding(model)
    base = getattr(getattr(model, "_module", model), "get_base_model", lambda: model)()
    wpe = getattr(getattr(base, "transformer", None), "wpe", None)
    parts = []
    for p in params:
        if p is wte:
            parts.append(np.where(_rows_mask(p, np.asarray(token_ids)), 0.0, 1.0))
        elif wpe is not None and p is wpe.weight and unused_positions is not None:
            parts.append(np.where(_rows_mask(p, np.asarray(unused_positions)), 0.0, 1.0))
        else:
            parts.append(np.ones(p.numel()))
    return np.concatenate(parts)


def reserved_token_plan(params: list[nn.Parameter], model: nn.Module, token_ids: np.ndarray,
                        n: int, *, sampling_rate: float, rng: np.random.Generator,
                        shapes: str = "dirac", unused_positions: np.ndarray | None = None,
                        scale: float = 1000.0, sentinel: float = 0.0) -> CanaryPlan:
    """n gradient canaries on silent coordinates (module docstring), planned by the canary
    core; ``sentinel`` > 0 moves that share of each onto a coordinate of another tensor
    (:func:`dpaudit.canaries.with_sentinels`; off by default here: every other tensor of a
    language model is busy, :class:`~dpaudit.training.lm.LMConfig`); raises ValueError when
    there are fewer silent coordinates than the shape needs."""
    check_choice("shapes", shapes, LM_SHAPES)
    act = silent_activity(params, model, token_ids, unused_positions=unused_positions)
    silent = int(np.count_nonzero(act == 0))
    need = n * (2 if shapes == "tensors" else 1)
    if need > silent:
        per = "2 per canary for shapes tensors" if shapes == "tensors" else "1 each"
        raise ValueError(f"canaries must fit the {silent} silent coordinates (reserved-token "
                         f"rows and unused positions; {per}); got {n}: reserve more tokens")
    layout = Layout.from_sizes([p.numel() for p in params])
    return plan_gradient_canaries(layout, act, n, sampling_rate=sampling_rate, rng=rng,
                                  shapes=shapes, scale=scale, spread=1, per_tensor=1,
                                  sentinel=sentinel)


def reserved_token_canaries(model: nn.Module, token_ids: np.ndarray, n: int, *,
                            sampling_rate: float, max_grad_norm: float, seed: int = 0,
                            shapes: str = "dirac", unused_positions: np.ndarray | None = None,
                            scale: float = 1000.0, sentinel: float = 0.0) -> Any:
    """n white-box canaries on the reserved tokens' rows of ``model`` (a user's Hugging Face
    model or ours), ready to ``attach`` to an Opacus ``DPOptimizer``: a
    :class:`dpaudit.training.canaries.GradientCanaries` with the plan of
    :func:`reserved_token_plan` (bits and placement from ``seed``, purpose "lm_canaries").
    Call before or after ``make_private`` (the parameters are the same tensors)."""
    from dpaudit.randomness import seed_sequence
    from dpaudit.training.canaries import GradientCanaries
    from dpaudit.training.models import trainable_parameters

    params = trainable_parameters(model)
    rng = np.random.default_rng(seed_sequence(seed, "lm_canaries"))
    plan = reserved_token_plan(params, model, token_ids, n, sampling_rate=sampling_rate,
                               rng=rng, shapes=shapes, unused_positions=unused_positions,
                               scale=scale, sentinel=sentinel)
    return GradientCanaries(params, sampling_rate=sampling_rate, max_grad_norm=max_grad_norm,
                            scale=scale, seed=seed, plan=plan)


@dataclass(frozen=True, eq=False)
class SequenceCanaries:
    """Canary sequences: ``ids`` (n, L) tokens, ``secret`` (n, L) the scored positions,
    ``bits`` (n,) secret bits, ``kind`` the design."""

    ids: torch.Tensor
    secret: torch.Tensor
    bits: np.ndarray
    kind: str

    @property
    def n(self) -> int:
        return int(self.bits.size)

    def included(self) -> torch.Tensor:
        """The member sequences (bit 1), to insert into the training data."""
        return self.ids[torch.from_numpy(self.bits).to(self.ids.device)]


def make_sequence_canaries(kind: str, n: int, prefixes: np.ndarray, *,
                           rng: np.random.Generator, secret_length: int = 4,
                           reserved_tokens: np.ndarray | None = None,
                           byte_counts: np.ndarray | None = None) -> SequenceCanaries:
    """n canary sequences of design ``kind`` (module docstring): row i = the first
    L - ``secret_length`` tokens of a random row of ``prefixes`` (n_pool, L) + the secret.
    ``new_token`` needs ``reserved_tokens`` (one per canary), ``rare_token`` the fine-tuning
    data's ``byte_counts``."""
    check_choice("sequence_kind", kind, SEQUENCE_KINDS)
    n = check_count("canaries", n, minimum=2)
    pool = np.asarray(prefixes)
    length = pool.shape[1]
    k = check_count("secret_length", secret_length, minimum=1)
    if k >= length:
        raise ValueError(f"secret_length must be below the sequence length {length}; got {k}")
    bits = draw_bits(n, rng)
    ids = pool[rng.integers(0, pool.shape[0], size=n)].copy()
    if kind == "new_token_key":
        if reserved_tokens is None or len(reserved_tokens) < n:
            raise ValueError(f"new_token canaries need one reserved token each ({n}); got "
                             f"{0 if reserved_tokens is None else len(reserved_tokens)}")
        ids[:] = pool[rng.integers(0, pool.shape[0])]        # one shared text
        ids[:, :k] = np.asarray(reserved_tokens)[:n, None]   # keyed by the canary's token
        mask = np.zeros(ids.shape, dtype=bool)
        mask[:, k:] = True
        return SequenceCanaries(torch.from_numpy(ids), torch.from_numpy(mask), bits, kind)
    if kind == "new_token":
        if reserved_tokens is None or len(reserved_tokens) < n:
            raise ValueError(f"new_token canaries need one reserved token each ({n}); got "
                             f"{0 if reserved_tokens is None else len(reserved_tokens)}")
        ids[:] = pool[rng.integers(0, pool.shape[0])]        # one shared prefix
        secret = np.repeat(np.asarray(reserved_tokens)[:n, None], k, axis=1)
    elif kind == "rare_token":
        if byte_counts is None:
            raise ValueError("rare_token canaries need the fine-tuning data's byte_counts")
        order = np.lexsort((rng.random(BASE_VOCAB), np.asarray(byte_counts)))
        rare = order[:16]
        secret = rare[rng.integers(0, rare.size, size=(n, k))]
    else:
        secret = _PRINTABLE[rng.integers(0, _PRINTABLE.size, size=(n, k))]
    ids[:, length - k:] = secret
    mask = np.zeros(ids.shape, dtype=bool)
    mask[:, length - k:] = True
    return SequenceCanaries(torch.from_numpy(ids), torch.from_numpy(mask), bits, kind)


def sequence_scores(reference: nn.Module, final: nn.Module,
                    canaries: SequenceCanaries) -> np.ndarray:
    """Loss drop of each canary's secret from the reference to the final model (higher =
    more likely a member)."""
    dev = next(final.parameters()).device
    ids, mask = canaries.ids.to(dev), canaries.secret
    return black_box_scores(sequence_losses(reference, ids, mask),
                            sequence_losses(final, ids, mask))


def exposure(member: np.ndarray, score: np.ndarray) -> dict[str, float]:
    """Measured canary exposure (Carlini et al. 2019, "The Secret Sharer", §4): for a member
    canary, log2(m + 1) - log2(rank), its rank among the m non-member canaries' scores (1 =
    above them all); the median and maximum over members, in bits.  An empirical measure of
    memorisation, not a bound."""
    b = np.asarray(member, dtype=bool)
    s = np.asarray(score, dtype=float)
    ref = np.sort(s[~b])
    m = ref.size
    if m == 0 or not b.any():
        return {"median_bits": float("nan"), "max_bits": float("nan"), "references": m}
    rank = 1 + m - np.searchsorted(ref, s[b], side="left")
    exp = np.log2(m + 1) - np.log2(rank)
    return {"median_bits": float(np.median(exp)), "max_bits": float(exp.max()),
            "references": int(m)}


# -- own-loop API: a user's Hugging Face model and tokenizer ---------------------------------
def add_canary_tokens(model: Any, tokenizer: Any, n: int, *, prefix: str = "<dpaudit_canary_"
                      ) -> np.ndarray:
    """Add n reserved tokens to ``tokenizer`` (special tokens, never split or produced by
    real text) and resize ``model``'s embeddings; return their ids.  Unties nothing: with tied
    input/output embeddings the rows are not silent (the softmax moves them), which keeps the
    audit valid but weaker -- untie them (``tie_word_embeddings=False``) for a tight audit."""
    n = check_count("n", n, minimum=1)
    names = [f"{prefix}{i}>" for i in range(n)]
    added = tokenizer.add_tokens(names, special_tokens=True)
    if added != n:
        raise ValueError(f"tokenizer already holds canary tokens named {prefix}...; use "
                         f"another prefix")
    model.resize_token_embeddings(len(tokenizer))
    return np.asarray(tokenizer.convert_tokens_to_ids(names), dtype=np.int64)


def insert_canaries(dataset: torch.Tensor, canaries: SequenceCanaries) -> torch.Tensor:
    """The training token sequences with the member canaries appended (rows of equal
    length; shuffle or Poisson-sample as usual)."""
    if dataset.ndim != 2 or dataset.shape[1] != canaries.ids.shape[1]:
        raise ValueError(f"dataset must be (n, {canaries.ids.shape[1]}) token sequences like "
                         f"the canaries; got {tuple(dataset.shape)}")
    return torch.cat([dataset, canaries.included().to(device=dataset.device,
                                                       dtype=dataset.dtype)])
