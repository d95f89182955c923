"""Canaries for auditing real DP-SGD training: gradient (white box) and input (black box).

Gradient canaries -- Dirac canaries (Bits Transmission §6.4 after Nasr et al. 2023; Tight One-Run
§6.2 and
App. A; BT notes §6.4, TOR notes §3.4).  Canary i owns one model coordinate c(i) (one
coordinate per canary, the "memoryless" arrangement).  Its per-example gradient is
``scale * C * e_{c(i)}``: zero everywhere except on its own coordinate, with norm at or above
the clip norm C, so that correct per-example clipping reduces it to exactly ``C e_{c(i)}``.
The one-run game's inclusion design: canary i is in the training set iff its secret bit
b_i = 1 (bits i.i.d. uniform), and an included canary is sampled at each step with the same
Poisson rate q as every real example.  Its gradient row is appended to Opacus's per-sample
gradients (``p.grad_sample``) *before* Opacus clips and noises them, so the clipping, noise
and scaling applied to the canaries are Opacus's own (:class:`GradientCanaries.attach`
wraps the optimizer's ``clip_and_accumulate`` and chains its ``step_hook``).

Placement.  Real data also moves coordinate c(i), which adds adversary-unknown randomness to
the canary's observations and makes a real audit less tight than the simulator (Bits Transmission
§3.5).  :func:`choose_coordinates` therefore measures every coordinate's real-gradient
activity on a warm-up pass -- the mean over the training set of the squared *clipped*
per-example gradient at the initial model -- and gives the canaries the n least active
coordinates (ties broken by a seeded random priority).  On digits this first picks the
first-layer weights fed by the three pixels that are zero in every image (exactly zero real
gradient, at every step, since the input is zero), then weights fed by pixels that are
almost always zero.  For the default MLP (256 hidden units) that is 768 exactly-silent
coordinates, then about 1,500 more whose pixel is non-zero in at most 0.5% of the images.

Input canaries (black box): real-looking digits with a wrong label (``"flip"``: a training
image with label y + k mod 10, k uniform in 1..9), a random label (``"random_label"``), or an
out-of-distribution image (``"ood"``: uniform random pixels, random label).  Canary i joins the
training set iff b_i = 1 and is then sampled by Opacus's Poisson sampler like any example.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from dpaudit.training.models import count_coordinates, trainable_parameters
from dpaudit.training.scores import lr_step_scores
from dpaudit.validation import check_choice, check_count, check_positive, check_probability

__all__ = ["coordinate_activity", "choose_coordinates", "GradientCanaries", "InputCanaries",
           "make_input_canaries", "INPUT_CANARY_KINDS", "draw_bits"]

INPUT_CANARY_KINDS = ("flip", "random_label", "ood")


def draw_bits(n: int, rng: np.random.Generator) -> np.ndarray:
    """The one-run game's secret bits: n i.i.d. uniform bits (Bits Transmission Alg. 2)."""
    return rng.integers(0, 2, size=check_count("canaries", n, minimum=2)).astype(bool)


def _flat_per_example_grads(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                            chunk: int = 512) -> torch.Tensor:
    """Per-example gradients of the cross-entropy, flattened in trainable-parameter order,
    computed chunk by chunk with ``torch.func`` (N x d)."""
    from torch.func import functional_call, grad, vmap

    named = {k: v.detach() for k, v in model.named_parameters() if v.requires_grad}
    frozen = {k: v.detach() for k, v in model.named_parameters() if not v.requires_grad}

    def loss(p: dict[str, torch.Tensor], xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
        out = functional_call(model, {**p, **frozen}, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    per_ex = vmap(grad(loss), in_dims=(None, 0, 0))
    rows = []
    for s in range(0, x.shape[0], chunk):
        g = per_ex(named, x[s:s + chunk], y[s:s + chunk])
        rows.append(torch.cat([g[k].reshape(g[k].shape[0], -1) for k in named], dim=1))
    return torch.cat(rows)


def coordinate_activity(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                        max_grad_norm: float, *, probes: int = 4,
                        seed: int = 0) -> np.ndarray:
    """Real-gradient activity of every trainable coordinate: mean_i (CLP_C(grad_i))_c^2,
    clipped as DP-SGD clips, summed over ``probes`` parameter settings -- the model itself and
    ``probes - 1`` copies whose parameters are perturbed by Gaussian noise (std that of each
    tensor's std).  The probes tell coordinates that no example can move (a weight fed by an
    always-zero pixel) from coordinates that are silent only by accident of the
    initialisation (the weights of a hidden unit no example activates yet, which noisy
    training can revive)."""
    check_positive("max_grad_norm", max_grad_norm)
    probes = check_count("probes", probes, minimum=1)
    gen = torch.Generator().manual_seed(check_count("seed", seed))
    return _activity(_hook_free_copy(model), x, y, max_grad_norm, probes, gen)


def _hook_free_copy(model: nn.Module) -> nn.Module:
    """A copy of the model (unwrapped from Opacus's GradSampleModule, if ``make_private``
    already wrapped it) without module hooks, for side computations with ``torch.func``."""
    inner = getattr(model, "_module", model)
    dup = copy.deepcopy(inner)
    for m in dup.modules():
        for hooks in (m._forward_hooks, m._forward_pre_hooks, m._backward_hooks,
                      m._backward_pre_hooks):
            hooks.clear()
    for p in dup.parameters():
        for attr in ("grad_sample", "_forward_counter", "_current_grad_sample"):
            if hasattr(p, attr):
                delattr(p, attr)
    return dup


def _activity(model: nn.Module, x: torch.Tensor, y: torch.Tensor, max_grad_norm: float,
              probes: int, gen: torch.Generator) -> np.ndarray:
    total: np.ndarray | None = None
    for k in range(probes):
        m = model
        if k > 0:
            m = copy.deepcopy(model)
            with torch.no_grad():
                for p in m.parameters():
                    std = float(p.std()) if p.numel() > 1 else float(p.abs().mean())
                    p.add_(torch.randn(p.shape, generator=gen) * (std or 1.0))
        with torch.no_grad():
            g = _flat_per_example_grads(m, x, y)
            g = g * (max_grad_norm / (g.norm(dim=1, keepdim=True) + 1e-6)).clamp(max=1.0)
            act = g.pow(2).mean(dim=0).double().numpy()
        total = act if total is None else total + act
    assert total is not None
    return total


def choose_coordinates(model: nn.Module, x: torch.Tensor, y: torch.Tensor, n: int, *,
                       max_grad_norm: float, rng: np.random.Generator) -> np.ndarray:
    """The n least active trainable coordinates (see module docstring), in random order."""
    d = count_coordinates(model)
    n = check_count("canaries", n, minimum=1)
    if d == 0:
        raise ValueError("model has no trainable parameters (requires_grad) to plant "
                         "gradient canaries in")
    if n > d:
        raise ValueError(f"canaries must be at most the model's {d} trainable coordinates "
                         f"for gradient (white-box) canaries, one coordinate each; got {n}")
    act = coordinate_activity(model, x, y, max_grad_norm)
    order = np.lexsort((rng.random(d), act))  # activity first, random priority on ties
    chosen = order[:n]
    return chosen[rng.permutation(n)].astype(np.int64)


@dataclass(frozen=True)
class _Index:
    param: np.ndarray   # canary -> index of its parameter tensor
    local: np.ndarray   # canary -> flat offset inside that tensor


class GradientCanaries:
    """Dirac gradient canaries planted into an Opacus ``DPOptimizer`` (see module docstring).

    Args:
      params: the model's trainable parameters (coordinate space; see
        :func:`dpaudit.training.models.trainable_parameters`).
      coordinates: canary i's flat coordinate c(i) in that space (distinct).
      bits: canary i's secret bit (included iff True).
      sampling_rate: Poisson rate q at which an included canary is sampled each step.
      max_grad_norm: the clip norm C (the observation unit).
      scale: canary gradient norm in units of C (>= 1; correct clipping brings it to C, a
        clipping bug that lets examples contribute more shows up as a larger step).
      seed: randomness of the canaries' own Poisson sampling.

    After :meth:`attach`, every optimizer step records, per canary, the released noisy
    update on its coordinate in canary units, y_{t,i} = <g~_t, e_{c(i)}> / C with
    g~_t the noisy clipped gradient *sum* (Opacus's ``p.grad`` times the expected batch size
    under ``loss_reduction="mean"``): y = b S + sigma Z (+ real-data background), the
    observation of BT notes §6.4.  Only the sufficient statistics are kept (sum and the
    likelihood-ratio sum), never the T x n transcript.
    """

    def __init__(self, params: Sequence[nn.Parameter], coordinates: np.ndarray,
                 bits: np.ndarray, *, sampling_rate: float, max_grad_norm: float,
                 scale: float = 1000.0, seed: int = 0) -> None:
        self.params = list(params)
        sizes = np.array([p.numel() for p in self.params], dtype=np.int64)
        d = int(sizes.sum())
        c = np.asarray(coordinates, dtype=np.int64)
        b = np.asarray(bits, dtype=bool)
        if c.ndim != 1 or c.shape != b.shape:
            raise ValueError("coordinates and bits must be 1-d arrays of the same length")
        if c.size and (c.min() < 0 or c.max() >= d):
            raise ValueError(f"coordinates must be in [0, {d}) (the trainable coordinates)")
        if np.unique(c).size != c.size:
            raise ValueError("coordinates must be distinct (one coordinate per canary)")
        self.coordinates, self.bits = c, b
        self.q = check_probability("sampling_rate", sampling_rate, open_low=True)
        self.clip = check_positive("max_grad_norm", max_grad_norm)
        self.scale = float(scale)
        if not self.scale >= 1.0:
            raise ValueError(f"scale must be >= 1 (canary gradient at or above the clip "
                             f"norm); got {scale!r}")
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        pidx = np.searchsorted(np.cumsum(sizes), c, side="right")
        self._index = _Index(pidx, c - starts[pidx])
        self._rng = np.random.default_rng(np.random.SeedSequence([check_count("seed", seed),
                                                                   0xCA7]))
        self.n = c.size
        self.steps = 0
        self.sum = np.zeros(self.n)
        self.lr_sum = np.zeros(self.n)
        self._theta0 = self._gather(lambda p: p.detach())
        self._pending = False
        self._optimizer = None

    @classmethod
    def for_model(cls, model: nn.Module, x: torch.Tensor, y: torch.Tensor, n: int, *,
                  sampling_rate: float, max_grad_norm: float, seed: int = 0,
                  scale: float = 1000.0) -> GradientCanaries:
        """n canaries for ``model``: least-active coordinates measured on (x, y) (see
        :func:`choose_coordinates`), i.i.d. uniform secret bits, all drawn from ``seed``.
        Call before ``make_private`` or after (the parameters are the same tensors)."""
        ss = np.random.SeedSequence([check_count("seed", seed), 0xB175]).spawn(2)
        coords = choose_coordinates(model, x, y, n, max_grad_norm=max_grad_norm,
                                    rng=np.random.default_rng(ss[0]))
        bits = draw_bits(n, np.random.default_rng(ss[1]))
        return cls(trainable_parameters(model), coords, bits, sampling_rate=sampling_rate,
                   max_grad_norm=max_grad_norm, scale=scale, seed=seed)

    # -- coordinate helpers ------------------------------------------------------------------
    def _gather(self, get: Callable[[nn.Parameter], torch.Tensor | None]) -> np.ndarray:
        flat = torch.cat([(get(p) if get(p) is not None else torch.zeros_like(p)).reshape(-1)
                          for p in self.params])
        return flat[torch.from_numpy(self.coordinates)].double().numpy()

    # -- Opacus integration --------------------------------------------------------------------
    def attach(self, optimizer: object) -> GradientCanaries:
        """Plant into ``optimizer`` (an Opacus DPOptimizer, e.g. from ``make_private``).

        Wraps ``optimizer.clip_and_accumulate`` (canary rows are appended to ``p.grad_sample``
        of the optimizer's parameters just before Opacus clips them; for trainable model
        parameters the optimizer does not manage -- a bypassing parameter group -- the canary
        gradient is added to ``p.grad`` the way backpropagation would add an example's
        gradient) and chains ``optimizer.step_hook`` to record the released update.  Works
        with a user's own training loop: nothing else changes.
        """
        from opacus.optimizers import DPOptimizer

        if not isinstance(optimizer, DPOptimizer):
            raise ValueError("optimizer must be an Opacus DPOptimizer (from "
                             "PrivacyEngine.make_private or opacus.optimizers)")
        if self._optimizer is not None:
            raise ValueError("these canaries are already attached to an optimizer")
        self._optimizer = optimizer
        dp_ids = {id(p) for p in optimizer.params}
        self._dp = np.array([id(p) in dp_ids for p in self.params])
        original_clip = optimizer.clip_and_accumulate
        previous_hook = optimizer.step_hook

        def clip_and_accumulate() -> None:
            if not self._pending:
                self._plant(optimizer)
                self._pending = True
            original_clip()

        def step_hook(opt: DPOptimizer) -> None:
            self._record(opt)
            self._pending = False
            if previous_hook is not None:
                previous_hook(opt)

        optimizer.clip_and_accumulate = clip_and_accumulate  # type: ignore[method-assign]
        optimizer.step_hook = step_hook
        return self

    def _batch_unit(self, opt: object) -> float:
        """Divisor Opacus applies to the clipped sum (expected batch size for "mean")."""
        if getattr(opt, "loss_reduction", "mean") == "mean":
            return float(opt.expected_batch_size * max(1, opt.accumulated_iterations))
        return 1.0

    def _plant(self, opt: object) -> None:
        sampled = self._rng.random(self.n) < self.q
        active = np.flatnonzero(sampled & self.bits)
        k = active.size
        g = self.scale * self.clip
        pidx, local = self._index.param[active], self._index.local[active]
        rows_of = np.arange(k)
        for j, p in enumerate(self.params):
            sel = pidx == j
            if self._dp[j]:
                flat = opt._get_flat_grad_sample(p)
                rows = torch.zeros((k, p.numel()), dtype=flat.dtype, device=flat.device)
                if sel.any():
                    rows[torch.from_numpy(rows_of[sel]), torch.from_numpy(local[sel])] = g
                p.grad_sample = torch.cat([flat, rows.view(k, *p.shape)], dim=0)
            elif sel.any():
                # a trainable parameter outside the DP optimizer: the canary example's
                # gradient reaches it unclipped and without noise, as backprop would put it.
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                upd = torch.zeros(p.numel(), dtype=p.dtype)
                upd[torch.from_numpy(local[sel])] = g / self._batch_unit(opt)
                p.grad.add_(upd.view_as(p))

    def _record(self, opt: object) -> None:
        y = self._gather(lambda p: p.grad) * (self._batch_unit(opt) / self.clip)
        self.sum += y
        self.lr_sum += lr_step_scores(y, self.q, float(opt.noise_multiplier))
        self.steps += 1

    # -- scores --------------------------------------------------------------------------------
    def white_box_scores(self, kind: str = "lr") -> np.ndarray:
        """Scores from every released step (higher = bit 1):

        * ``"sum"``: s_i = sum_t y_{t,i} - qT/2 (BT notes §6.4's default; decoder threshold 0);
        * ``"lr"``: s_i = sum_t log(1 - q + q exp((y_{t,i} - 1/2) / sigma^2)), the optimal
          likelihood-ratio score when real data leaves the coordinate alone (the simulator's
          ``score="lr"``).
        """
        check_choice("score", kind, ("sum", "lr"))
        if self.steps == 0:
            raise ValueError("no optimizer step was recorded (attach before training)")
        if kind == "lr":
            return self.lr_sum.copy()
        return self.sum - self.q * self.steps / 2

    def last_iterate_scores(self) -> np.ndarray:
        """theta_0 - theta_T on each canary's coordinate (only the final model is released);
        for SGD this is lr/|B| C times the summed released updates."""
        return self._theta0 - self._gather(lambda p: p.detach())


@dataclass(frozen=True, eq=False)
class InputCanaries:
    """Input canaries: examples ``x`` (n, ...), labels ``y`` (n,), secret bits, kind."""

    x: torch.Tensor
    y: torch.Tensor
    bits: np.ndarray
    kind: str

    @property
    def n(self) -> int:
        return int(self.bits.size)

    def included(self) -> tuple[torch.Tensor, torch.Tensor]:
        keep = torch.from_numpy(self.bits)
        return self.x[keep], self.y[keep]


def make_input_canaries(x_pool: torch.Tensor, y_pool: torch.Tensor, n: int, *, kind: str,
                        rng: np.random.Generator, num_classes: int = 10) -> InputCanaries:
    """n input canaries drawn from ``x_pool`` (real images) or generated (``"ood"``), with
    their secret bits (see module docstring)."""
    check_choice("canary kind", kind, INPUT_CANARY_KINDS)
    n = check_count("canaries", n, minimum=2)
    bits = draw_bits(n, rng)
    idx = rng.integers(0, x_pool.shape[0], size=n)
    if kind == "ood":
        x = torch.from_numpy(rng.random((n, *x_pool.shape[1:])).astype(np.float32))
    else:
        x = x_pool[torch.from_numpy(idx)].clone()
    if kind == "flip":
        y = (y_pool[torch.from_numpy(idx)] + torch.from_numpy(rng.integers(1, num_classes,
                                                                          size=n))) % num_classes
    else:
        y = torch.from_numpy(rng.integers(0, num_classes, size=n))
    return InputCanaries(x, y.long(), bits, kind)
