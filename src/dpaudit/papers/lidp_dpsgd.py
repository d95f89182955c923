"""LiDP on real DP-SGD: many small networks trained at once, K randomised canaries each
(Pillutla et al. §3.2 and §5, LiDP notes §3).

Models (:class:`MLPSpec`): a linear (softmax regression) model and a ReLU MLP with two hidden
layers of 256 units, as in Pillutla et al. Table 1, on a shared base dataset D (scikit-learn digits
or
the generated Purchase-100-like data of :mod:`dpaudit.papers.casestudies.lidp_real`).

Training (:func:`train_many`): M independent DP-SGD runs at once (one per trial), each on
D plus its own K canaries, with Poisson sampling at rate q, per-example clipping to C and
Gaussian noise sigma C on the sum, averaged by the expected batch size (Abadi et al. 2016;
Opacus' convention).  Per-example gradients are never materialised: for a dense layer the
per-example gradient is delta_i a_i^T, whose norm is ||delta_i|| ||(a_i, 1)||, and the clipped
sum is sum_i s_i delta_i a_i^T, one batched matrix product ("ghost clipping", Goodfellow 2015;
Li et al. 2022).

Canaries (Pillutla et al. §5, App. D):

* ``"poison"`` (data poisoning, lifted ClipBKD): an example x = alpha v with v a uniformly
  random unit vector in the span of the p principal directions of smallest variance of the
  (centred) data matrix, and a fixed flipped label y*.  (Pillutla et al. Eq. 23 draws v among the p
  directions themselves, with replacement; with the 64 dimensions of digits p is small, K = 16
  canaries then often share a direction, and a fresh canary on a shared direction scores like
  an inserted one -- see docs/lidp_real.md.  A random direction of the span keeps canaries
  nearly orthogonal in expectation, Pillutla et al. §5's design criterion 2);
  inserted canaries are Poisson-sampled like every example.  Score: the gain in
  log-probability of y* at x from the initial to the final model (higher = member; the
  auditor seeds the initialisation, so subtracting the initial value removes the variation
  due to the random init; the reference code scores the final loss alone).
* ``"gradient"`` (random-gradient canaries): a vector c uniform on the sphere of radius C in
  parameter space, added to the clipped gradient sum whenever the canary is sampled.  Score:
  cos(c, theta_0 - theta_T) (gradient descent moves theta along -c).

Each trial yields K scores of inserted canaries and K scores of fresh canaries drawn from the
same law and scored on the same model (Pillutla et al.'s replace-one leave-one-out test).

Only this package imports torch.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import reduce

import numpy as np
import torch

from dpaudit.validation import check_choice, check_count, check_nonnegative, check_positive

__all__ = ["MLPSpec", "TrainSpec", "train_many", "CANARY_KINDS"]

CANARY_KINDS = ("poison", "gradient")


@dataclass(frozen=True)
class MLPSpec:
    """Layer widths, e.g. (64, 10) linear or (64, 256, 256, 10) MLP (ReLU between layers)."""

    widths: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.widths) < 2:
            raise ValueError("widths must list at least input and output sizes")
        for w in self.widths:
            check_count("widths", w, minimum=1)

    @property
    def n_params(self) -> int:
        return int(sum((a + 1) * b for a, b in zip(self.widths[:-1], self.widths[1:], strict=True)))


@dataclass(frozen=True)
class TrainSpec:
    """DP-SGD settings: sampling rate q, steps T, noise multiplier sigma, clip C, lr."""

    sampling_rate: float
    steps: int
    noise_multiplier: float
    clip: float = 1.0
    learning_rate: float = 0.5

    def __post_init__(self) -> None:
        if not 0 < self.sampling_rate <= 1:
            raise ValueError(f"sampling_rate must be in (0, 1], got {self.sampling_rate!r}")
        check_count("steps", self.steps, minimum=1)
        check_nonnegative("noise_multiplier", self.noise_multiplier)
        check_positive("clip", self.clip)
        check_positive("learning_rate", self.learning_rate)


def _init(spec: MLPSpec, m: int, gen: torch.Generator) -> list[tuple[torch.Tensor, ...]]:
    layers: list[tuple[torch.Tensor, ...]] = []
    for a, b in zip(spec.widths[:-1], spec.widths[1:], strict=True):
        bound = 1.0 / np.sqrt(a)  # nn.Linear's default
        w = (torch.rand((m, b, a), generator=gen) * 2 - 1) * bound
        bias = (torch.rand((m, b), generator=gen) * 2 - 1) * bound
        layers.append((w, bias))
    return layers


def _flat(layers: list[tuple[torch.Tensor, ...]]) -> torch.Tensor:
    return torch.cat([torch.cat([w.flatten(1), b], 1) for w, b in layers], 1)


def _forward(layers: list[tuple[torch.Tensor, ...]], x: torch.Tensor
             ) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """x (M, B, d) -> logits (M, B, out) and the inputs of every layer."""
    acts = [x]
    h = x
    for i, (w, b) in enumerate(layers):
        h = torch.einsum("mbi,moi->mbo", h, w) + b[:, None]
        if i < len(layers) - 1:
            h = torch.relu(h)
            acts.append(h)
    return h, acts


def _clipped_sum(layers: list[tuple[torch.Tensor, ...]], x: torch.Tensor, y: torch.Tensor,
                 mask: torch.Tensor, clip: float) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Sum over the sampled examples (mask) of the per-example cross-entropy gradients clipped
    to ``clip`` (ghost clipping: per-example norms from deltas and activations)."""
    logits, acts = _forward(layers, x)
    delta = torch.softmax(logits, -1)
    delta = delta - torch.nn.functional.one_hot(y, delta.shape[-1]).to(delta.dtype)
    deltas = [delta]
    for i in range(len(layers) - 1, 0, -1):
        w = layers[i][0]
        delta = torch.einsum("mbo,moi->mbi", delta, w) * (acts[i] > 0)
        deltas.insert(0, delta)
    sq = reduce(operator.add, (d.pow(2).sum(-1) * (a.pow(2).sum(-1) + 1.0)
                               for d, a in zip(deltas, acts, strict=True)))
    scale = torch.clamp(clip / (sq.sqrt() + 1e-12), max=1.0) * mask
    out = []
    for d, a in zip(deltas, acts, strict=True):
        sd = d * scale[..., None]
        out.append((torch.einsum("mbo,mbi->moi", sd, a), sd.sum(1)))
    return out


def train_many(spec: MLPSpec, train: TrainSpec, features: np.ndarray, labels: np.ndarray, *,
               canary: str, k: int, poison_directions: np.ndarray | None = None,
               poison_alpha: float = 1.0, poison_label: int = 0, models: int,
               seed: int = 0, max_batch: int | None = None,
               eval_set: tuple[np.ndarray, np.ndarray] | None = None
               ) -> tuple[np.ndarray, ...]:
    """Train ``models`` DP-SGD runs, each with its own K inserted canaries; score the K inserted
    and K fresh canaries of every run.  Returns (x_scores (M, K), y_scores (M, K)), plus the
    accuracy of every model on ``eval_set`` = (features, labels) when given (Pillutla et al. Fig.
    12).
    """
    check_choice("canary", canary, CANARY_KINDS)
    k = check_count("k", k, minimum=1)
    m = check_count("models", models, minimum=1)
    gen = torch.Generator().manual_seed(int(seed))
    feats = torch.as_tensor(np.asarray(features, dtype=np.float32))
    labs = torch.as_tensor(np.asarray(labels, dtype=np.int64))
    n, d = feats.shape
    layers = _init(spec, m, gen)
    theta0 = _flat(layers)
    init_layers = layers
    p = theta0.shape[1]
    if canary == "poison":
        if poison_directions is None:
            raise ValueError("poison_directions must be given for canary='poison'")
        dirs = torch.as_tensor(np.asarray(poison_directions, dtype=np.float32))
        g = torch.randn((m, 2 * k, dirs.shape[0]), generator=gen)
        can_x = poison_alpha * (g / g.norm(dim=-1, keepdim=True)) @ dirs  # (M, 2K, d)
        can_y = torch.full((m, 2 * k), int(poison_label), dtype=torch.int64)
        all_x = torch.cat([feats.expand(m, n, d), can_x[:, :k]], 1)   # (M, N + K, d)
        all_y = torch.cat([labs.expand(m, n), can_y[:, :k]], 1)
        pool = n + k
    else:
        g = torch.randn((m, 2 * k, p), generator=gen)
        can_g = train.clip * g / g.norm(dim=-1, keepdim=True)          # (M, 2K, P)
        all_x, all_y, pool = feats.expand(m, n, d), labs.expand(m, n), n
    q, c, s = train.sampling_rate, train.clip, train.noise_multiplier
    expected = q * (n + k)
    bmax = max_batch or int(min(pool, np.ceil(q * pool + 6 * np.sqrt(q * pool) + 4)))
    for _ in range(train.steps):
        sampled = torch.rand((m, pool), generator=gen) < q
        # gather the sampled examples of every model, padded to bmax (mask = real example)
        order = torch.argsort((~sampled).to(torch.int8), dim=1, stable=True)[:, :bmax]
        mask = torch.gather(sampled, 1, order).to(torch.float32)
        xb = torch.gather(all_x, 1, order[..., None].expand(m, bmax, d))
        yb = torch.gather(all_y, 1, order)
        grads = _clipped_sum(layers, xb, yb, mask, c)
        flat = torch.cat([torch.cat([gw.flatten(1), gb], 1) for gw, gb in grads], 1)
        if canary == "gradient":
            use = (torch.rand((m, k), generator=gen) < q).to(torch.float32)
            flat = flat + torch.einsum("mk,mkp->mp", use, can_g[:, :k])
        flat = flat + torch.randn(flat.shape, generator=gen) * (s * c)
        step = train.learning_rate * flat / expected
        off = 0
        new: list[tuple[torch.Tensor, ...]] = []
        for w, b in layers:
            nw, nb = w.shape[1] * w.shape[2], b.shape[1]
            new.append((w - step[:, off:off + nw].reshape(w.shape),
                        b - step[:, off + nw:off + nw + nb]))
            off += nw + nb
        layers = new
    with torch.no_grad():
        if canary == "poison":
            logits, _ = _forward(layers, can_x)
            logits0, _ = _forward(init_layers, can_x)
            score = (torch.log_softmax(logits, -1) - torch.log_softmax(logits0, -1))[
                ..., int(poison_label)]                                      # (M, 2K)
        else:
            upd = theta0 - _flat(layers)
            score = torch.einsum("mkp,mp->mk", can_g, upd) / (
                can_g.norm(dim=-1) * upd.norm(dim=-1, keepdim=True) + 1e-12)
        sc = score.double().numpy()
        if eval_set is None:
            return sc[:, :k], sc[:, k:]
        ex = torch.as_tensor(np.asarray(eval_set[0], dtype=np.float32))
        ey = torch.as_tensor(np.asarray(eval_set[1], dtype=np.int64))
        pred = _forward(layers, ex.expand(m, *ex.shape))[0].argmax(-1)
        acc = (pred == ey).to(torch.float64).mean(1).numpy()
        return sc[:, :k], sc[:, k:], acc
