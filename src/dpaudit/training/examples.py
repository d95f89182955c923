"""Canary *examples* that travel through the user's real pipeline (PyTorch + Opacus).

The canaries are training examples (:mod:`dpaudit.canaries.examples`): the user appends the
included ones (bit 1) to the training set, so their own ``DataLoader`` / Opacus Poisson
sampler samples them, their model computes the loss, and Opacus clips, sums, noises and
normalises their gradients with everybody else's.  Sampling, batching and normalisation bugs
therefore reach the canaries (planted :class:`~dpaudit.training.canaries.GradientCanaries`
never see them).

Reserved coordinates: canary i's input is ``value`` on reserved feature r(i) and 0 elsewhere;
real data carries 0 on every reserved feature.  The weight tensor W that reads the reserved
features (``ReservedModel.branch[0].weight``, shape (width, reserved), or the first layer's
columns of reserved features in any flat-input model) receives on column r(i) the gradient of
canary i and of nothing else.  With more canaries than reserved features (``pattern="signs"``,
:mod:`dpaudit.canaries.examples`) canary i's input is ``value * u_i``, u_i a random unit sign
vector, and "column r(i)" below reads W along u_i (W u_i); real data still moves no
coordinate of W, the other canaries enter with weight u_i . u_j.

White-box score.  At each step the released noisy update's column r(i) (times Opacus's
divisor, over C) is read along the unit direction of canary i's own gradient on that column
at the current parameters theta_t (one batched gradient of the summed canary losses: column
r(i) of it is canary i's alone).  theta_t is a function of the earlier releases, so the
direction is valid post-processing; a non-member's reading is exactly N(0, sigma^2).
Readings accumulate in :class:`dpaudit.canaries.WhiteBoxAccumulator` (amplitude 1: a sampled
canary's reading is at most C, and is C when its gradient lies on its column).
Last iterate: theta_0 - theta_T on column r(i) along the direction at theta_T.  Black box:
the canary's loss before minus after training.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from dpaudit.canaries import (
    ReservedPlan,
    RunFacts,
    WhiteBoxAccumulator,
    black_box_scores,
    plan_reserved_examples,
    unit_rows,
)
from dpaudit.randomness import stream
from dpaudit.training.canaries import (
    _batch_unit,
    _clip_norms,
    _hook_free_copy,
    _numpy,
    _on,
    hook_dp_optimizer,
)
from dpaudit.validation import check_count, check_positive

__all__ = ["ExampleCanaries", "TokenCanaries", "reserve_token_rows"]


class ExampleCanaries:
    """Canary examples on the reserved input features of a flat-input model.

    Args:
      model: the user's model (before or after ``make_private``).
      weight: the parameter reading the reserved features: shape (width, reserved) with
        column j fed by reserved feature j only (``ReservedModel.branch[0].weight``).
      plan: the canaries (:func:`dpaudit.canaries.plan_reserved_examples`).
      in_features: number of real features (the reserved ones follow them).
      max_grad_norm: the clip norm C.
    """

    def __init__(self, model: nn.Module, weight: nn.Parameter, plan: ReservedPlan, *,
                 in_features: int, max_grad_norm: float) -> None:
        if weight.ndim != 2 or weight.shape[1] != plan.reserved:
            raise ValueError(f"weight must have shape (width, {plan.reserved}) (one column "
                             f"per reserved feature); got {tuple(weight.shape)}")
        self.plan = plan
        self.bits = plan.bits
        self.n = plan.n
        self.in_features = check_count("in_features", in_features, minimum=1)
        self.clip = check_positive("max_grad_norm", max_grad_norm)
        self.weight = weight
        inner = getattr(model, "_module", model)
        names = [k for k, v in inner.named_parameters() if v is weight]
        if not names:
            raise ValueError("weight must be a parameter of model")
        self._inner, self._wname = inner, names[0]
        self._copy = _hook_free_copy(model)
        self._one_hot = plan.pattern == "one_hot"
        self._units = torch.from_numpy(plan.units())  # (n, reserved) unit patterns u_i
        self._layer = self._wname.rpartition(".")[0]
        if not self._one_hot and not (
                self._wname.endswith(".weight")
                and isinstance(self._copy.get_submodule(self._layer), nn.Linear)):
            raise ValueError("pattern 'signs' needs weight to be the weight of an nn.Linear "
                             "layer reading the reserved features (as ReservedModel's "
                             "branch[0])")
        self.x, self.y = self._inputs()
        self._xy_dev: tuple[torch.Tensor, torch.Tensor] | None = None
        self._acc = WhiteBoxAccumulator(self.n, sampling_rate=plan.sampling_rate)
        self._theta0 = self._columns(weight.detach())
        self._optimizer: object | None = None
        self._batch_sizes: list[int] = []
        self._sigmas: list[float] = []
        self._noise_ss: list[float] = []
        self._noise_k = 0
        self._clips: list[float] = []
        self._pending = False

    @classmethod
    def for_model(cls, model: nn.Module, n: int, *, sampling_rate: float,
                  max_grad_norm: float, num_classes: int, seed: int = 0,
                  value: float = 10.0, pattern: str | None = None) -> ExampleCanaries:
        """n canary examples for a :class:`~dpaudit.training.models.ReservedModel` (reads
        ``branch[0].weight``), bits and labels drawn from ``seed``.  ``pattern``: "one_hot"
        or "signs" (:data:`dpaudit.canaries.RESERVED_PATTERNS`); default one_hot when n is at
        most the model's reserved features, signs above."""
        inner: Any = getattr(model, "_module", model)  # unwrap Opacus's GradSampleModule
        branch = getattr(inner, "branch", None)
        if branch is None:
            raise ValueError("model must be a ReservedModel (make_model(..., reserved=R)) or "
                             "use ExampleCanaries(model, weight, plan, ...) directly")
        w = branch[0].weight
        if pattern is None:
            pattern = "one_hot" if n <= w.shape[1] else "signs"
        plan = plan_reserved_examples(
            n, reserved=w.shape[1], num_classes=num_classes, sampling_rate=sampling_rate,
            rng=stream(seed, "example_canaries"), value=value, pattern=pattern)
        return cls(model, w, plan, in_features=inner.in_features, max_grad_norm=max_grad_norm)

    # -- the examples ----------------------------------------------------------------------
    def _inputs(self) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.zeros((self.n, self.in_features + self.plan.reserved))
        if self._one_hot:
            x[torch.arange(self.n),
              self.in_features + torch.from_numpy(self.plan.reserved_index)] = self.plan.value
        else:
            x[:, self.in_features:] = self.plan.value * self._units
        return x, torch.from_numpy(self.plan.labels)

    def _on_model(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The canary examples on the reserved weight's device (the model's), for the
        readings and scores; ``x`` / ``y`` / :meth:`included` stay on the CPU, like the
        data sets they are appended to."""
        dev = self.weight.device
        if self._xy_dev is None or self._xy_dev[0].device != dev:
            self._xy_dev = (self.x.to(dev), self.y.to(dev))
        return self._xy_dev

    def included(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The canary examples to append to the training set (bit 1)."""
        keep = torch.from_numpy(self.plan.included)
        return self.x[keep], self.y[keep]

    # -- readings --------------------------------------------------------------------------
    def _columns(self, w: torch.Tensor) -> np.ndarray:
        """(n, width): column r(i) of a (width, reserved) tensor for each canary (``signs``:
        the tensor read along u_i, W u_i)."""
        if not self._one_hot:
            return _numpy(_on(self._units, w, cast=True) @ w.T)
        return _numpy(w[:, _on(torch.from_numpy(self.plan.reserved_index), w)].T)

    def directions(self) -> np.ndarray:
        """(n, width) unit directions: canary i's loss gradient on its column at the current
        parameters (one gradient of the summed canary losses; ``signs``: the gradient of
        canary i's loss on the reserved layer's output, delta_i, since canary i's gradient on
        W is value * delta_i u_i^T)."""
        from torch.func import functional_call, grad

        if not self._one_hot:
            return unit_rows(self._output_gradients())
        params = {k: v.detach() for k, v in self._inner.named_parameters()}
        w0 = params.pop(self._wname)
        x, y = self._on_model()

        def loss(w: torch.Tensor) -> torch.Tensor:
            out = functional_call(self._copy, {**params, self._wname: w}, (x,))
            return F.cross_entropy(out, y, reduction="sum")

        with torch.no_grad():
            g = grad(loss)(w0)
        return unit_rows(self._columns(g))

    def _output_gradients(self) -> np.ndarray:
        """(n, width): delta_i, the gradient of canary i's loss on the reserved Linear layer's
        output at the current parameters (a zero tensor added to that output by a forward
        hook on the hook-free copy; row i of the summed losses' gradient is canary i's own,
        since each output row depends on its own example only)."""
        from torch.func import functional_call

        params = {k: v.detach() for k, v in self._inner.named_parameters()}
        x, y = self._on_model()
        z = torch.zeros((self.n, self.weight.shape[0]), dtype=self.weight.dtype,
                        device=self.weight.device, requires_grad=True)
        handle = self._copy.get_submodule(self._layer).register_forward_hook(
            lambda _m, _i, out: out + z)
        try:
            with torch.enable_grad():
                out = functional_call(self._copy, params, (x,))
                (g,) = torch.autograd.grad(F.cross_entropy(out, y, reduction="sum"), z)
        finally:
            handle.remove()
        return _numpy(g)

    def attach(self, optimizer: object) -> ExampleCanaries:
        """Record every released step of ``optimizer`` (an Opacus DPOptimizer): chains its
        ``step_hook`` (reads the noisy update before the parameters move) and notes each
        batch's size for the claim checks.  The training loop does not change."""
        from opacus.optimizers import DPOptimizer

        if not isinstance(optimizer, DPOptimizer):
            raise ValueError("optimizer must be an Opacus DPOptimizer (from "
                             "PrivacyEngine.make_private or opacus.optimizers)")
        if self._optimizer is not None:
            raise ValueError("these canaries are already attached to an optimizer")
        if not any(p is self.weight for p in optimizer.params):
            raise ValueError("the reserved weight must be trained by the DP optimizer")
        self._optimizer = optimizer
        hook_dp_optimizer(optimizer, self, lambda original_clip: original_clip())
        return self

    def _record(self, opt: object) -> None:
        grad = self.weight.grad
        assert grad is not None  # the hook runs after backward
        released = self._columns(grad) * (_batch_unit(opt) / self.clip)
        y = np.einsum("ij,ij->i", self.directions(), released)
        sigma = float(opt.noise_multiplier)
        self._acc.add(y, sigma)
        self._sigmas.append(sigma)
        # the released-noise check (dpaudit.canaries.noise): every coordinate of the
        # canaries' columns, each column read by one canary only (signs: every column of W,
        # which no real example moves)
        distinct = (_numpy(grad) * (_batch_unit(opt) / self.clip) if not self._one_hot
                    else released[np.unique(self.plan.reserved_index, return_index=True)[1]])
        self._noise_ss.append(float(np.square(distinct).sum()))
        self._noise_k = int(distinct.size)
        self._clips.extend(_clip_norms(opt))

    # -- scores ----------------------------------------------------------------------------
    @property
    def steps(self) -> int:
        return self._acc.steps

    def white_box_scores(self, kind: str = "lr") -> np.ndarray:
        """:meth:`dpaudit.canaries.WhiteBoxAccumulator.scores` ("lr" or "sum")."""
        return self._acc.scores(kind)

    def last_iterate_scores(self) -> np.ndarray:
        """theta_0 - theta_T on column r(i), read along the direction at theta_T."""
        moved = self._theta0 - self._columns(self.weight.detach())
        return np.einsum("ij,ij->i", self.directions(), moved)

    def black_box_scores(self, model_before: nn.Module | Callable[..., torch.Tensor],
                         model_after: nn.Module | Callable[..., torch.Tensor]) -> np.ndarray:
        """Canary loss under ``model_before`` minus under ``model_after``."""
        return _loss_drop(model_before, model_after, *self._on_model())

    def facts(self, dataset_size: int | None = None) -> RunFacts:
        """What the attached optimizer did (see :meth:`GradientCanaries.facts`); batch sizes
        count the canary examples the user's sampler drew."""
        opt = self._optimizer
        red = "mean" if opt is None else getattr(opt, "loss_reduction", "mean")
        return RunFacts(steps=self.steps, noise_multipliers=tuple(dict.fromkeys(self._sigmas)),
                        max_grad_norms=tuple(dict.fromkeys(self._clips)),
                        batch_sizes=np.asarray(self._batch_sizes, dtype=np.int64),
                        expected_batch_size=None if opt is None or red != "mean"
                        else _batch_unit(opt),
                        dataset_size=dataset_size, loss_reduction=red,
                        step_noise_multipliers=np.asarray(self._sigmas, dtype=float),
                        noise_sum_squares=np.asarray(self._noise_ss, dtype=float),
                        noise_coordinates=self._noise_k, noise_unit=self.clip)


def _loss_drop(model_before: nn.Module | Callable[..., torch.Tensor],
               model_after: nn.Module | Callable[..., torch.Tensor], x: torch.Tensor,
               y: torch.Tensor) -> np.ndarray:
    """The black-box score of canary examples (x, y): cross-entropy under ``model_before``
    minus under ``model_after`` (:func:`dpaudit.canaries.black_box_scores`); only the two
    models' outputs on the canaries are read."""
    with torch.no_grad():
        before = F.cross_entropy(model_before(x), y, reduction="none")
        after = F.cross_entropy(model_after(x), y, reduction="none")
    return black_box_scores(_numpy(before), _numpy(after))


def reserve_token_rows(embedding: nn.Embedding | nn.EmbeddingBag, reserved: int
                       ) -> np.ndarray:
    """Append ``reserved`` rows to ``embedding``'s table, in place, and return their token
    ids (``num_embeddings`` .. ``num_embeddings + reserved - 1``): tokens no real example
    contains, so their rows get exactly zero gradient from real data -- the token-model
    counterpart of :func:`dpaudit.training.reserve_features`.  The new rows start at the
    mean of the existing rows (as :func:`dpaudit.training.lm.model.init_new_tokens` does for
    a language model's new tokens: the canaries' rows are exchangeable before training).
    Call it before the optimizer and ``make_private`` see the parameters (the weight is
    replaced by a larger one).  A Hugging Face model with a tokenizer:
    :func:`dpaudit.training.lm.add_canary_tokens`."""
    if not isinstance(embedding, (nn.Embedding, nn.EmbeddingBag)):
        raise ValueError(f"embedding must be an nn.Embedding or nn.EmbeddingBag; got "
                         f"{type(embedding).__name__}")
    reserved = check_count("reserved", reserved, minimum=1)
    w = embedding.weight
    with torch.no_grad():
        rows = w.mean(dim=0, keepdim=True).expand(reserved, -1)
        new = torch.cat([w.detach(), rows]).to(w.dtype)
    embedding.weight = nn.Parameter(new, requires_grad=w.requires_grad)
    first = embedding.num_embeddings
    embedding.num_embeddings = first + reserved
    return np.arange(first, first + reserved, dtype=np.int64)


class TokenCanaries:
    """Canary examples for embedding models on reserved token rows (black box).

    Canary i is the token sequence ``[t_i] * length`` of its own reserved token t_i (a token
    no real example contains: :func:`reserve_token_rows`) with a uniformly random label; the
    included ones (bit 1) join the user's training set and take the user's ``DataLoader``,
    Poisson sampler, model and Opacus clipping like any example.  An ``nn.Embedding`` /
    ``nn.EmbeddingBag`` row is read only by the examples containing its token, so row t_i
    gets canary i's gradient and nobody else's: real examples give it exactly zero, and
    canary i's gradient on the table is zero outside row t_i (tested on Opacus's
    per-sample gradients).  The other layers are shared, as every example's.

    The plan (bits, distinct token per canary, labels) is the canary core's
    :func:`dpaudit.canaries.plan_reserved_examples` (one-hot pattern over the reserved
    tokens: n <= reserved).  Score: :meth:`black_box_scores`, the canary's loss before
    minus after training -- any score of the final model gives a valid one-run audit
    (Steinke, Nasr and Jagielski 2023, Thm 3.1).
    """

    def __init__(self, plan: ReservedPlan, token_ids: np.ndarray, *, length: int) -> None:
        ids = np.asarray(token_ids, dtype=np.int64)
        if ids.ndim != 1 or ids.size != plan.reserved or np.unique(ids).size != ids.size:
            raise ValueError(f"token_ids must be the plan's {plan.reserved} distinct reserved "
                             f"token ids; got shape {ids.shape}")
        if plan.pattern != "one_hot":
            raise ValueError("token canaries take a one_hot plan (one reserved token each)")
        self.plan = plan
        self.bits = plan.bits
        self.n = plan.n
        self.length = check_count("length", length, minimum=1)
        self.tokens = ids[plan.reserved_index]          # t_i
        self.x = torch.from_numpy(np.repeat(self.tokens[:, None], self.length, axis=1))
        self.y = torch.from_numpy(plan.labels)

    @classmethod
    def for_tokens(cls, token_ids: np.ndarray, n: int, *, length: int, num_classes: int,
                   sampling_rate: float, seed: int = 0) -> TokenCanaries:
        """n canaries on the reserved ``token_ids`` (n <= len(token_ids)), bits, tokens and
        labels drawn from ``seed`` (purpose "example_canaries")."""
        ids = np.asarray(token_ids, dtype=np.int64)
        plan = plan_reserved_examples(n, reserved=int(ids.size), num_classes=num_classes,
                                      sampling_rate=sampling_rate,
                                      rng=stream(seed, "example_canaries"))
        return cls(plan, ids, length=length)

    def included(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The canary examples to append to the training set (bit 1): (tokens, labels)."""
        keep = torch.from_numpy(self.plan.included)
        return self.x[keep], self.y[keep]

    def black_box_scores(self, model_before: nn.Module | Callable[..., torch.Tensor],
                         model_after: nn.Module | Callable[..., torch.Tensor]) -> np.ndarray:
        """Canary loss under ``model_before`` minus under ``model_after`` (the canaries go to
        ``model_after``'s device)."""
        from dpaudit.training.canaries import _model_device

        dev = (_model_device(model_after) if isinstance(model_after, nn.Module)
               else torch.device("cpu"))
        return _loss_drop(model_before, model_after, self.x.to(dev), self.y.to(dev))
