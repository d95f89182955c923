"""Fully connected character n-gram language models, trained many at once (torch.func).

The model of Beyond Worst Case §5.2 (after Stock et al. 2022): Pr[c_n | c_1..c_{n-1}] is a fully
connected network on the one-hot encoding of the n - 1 context characters,

    h = tanh(W1 onehot(c_1..c_{n-1}) + b1),   logits = W2 h + b2,

so W1 has one column per (position, character).  :class:`CharMLP` is that network as an
``nn.Module`` (so Opacus can wrap it); :func:`stack_models` builds M independently initialised
copies whose parameters are stacked along a leading model axis, and :func:`dpsgd_train` trains
all M copies at once with DP-SGD (Abadi et al. 2016), vectorised over models and examples
(explicit per-example back-propagation; no Python loop over models):

    g_{m,i} = grad_theta loss(theta_m; x_i, y_{m,i})          (every example i, model m)
    g~_m    = (sum_i g_{m,i} min(1, C / ||g_{m,i}||_2) + N(0, sigma^2 C^2 I) * mask) / B
    theta_m <- theta_m - lr g~_m

(full batch, B examples per model; ``mask`` restricts training to a subset of parameters, the
"lazy" training of the paper: parameters outside the mask are never updated, receive no noise
and are data independent, so releasing them costs no privacy).  ``test_papers_charlm.py`` checks the
clipped update against Opacus' ``DPOptimizer`` on a small case.

:func:`train_public` trains one model without DP (Adam, cross-entropy) -- the "public" model
that measures the PII prior (:mod:`dpaudit.papers.casestudies.pii`).

This module imports torch; nothing outside :mod:`dpaudit.training` does.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from functools import reduce

import numpy as np
import torch
from torch import nn

from dpaudit.validation import check_count, check_nonnegative, check_positive

__all__ = [
    "CharMLP", "DPSGDOptions", "stack_models", "batched_logits", "dpsgd_train",
    "train_public", "onehot_contexts",
]

Params = dict[str, torch.Tensor]


class CharMLP(nn.Module):
    """One-hidden-layer fully connected n-gram model on one-hot contexts.

    Args:
      context: n - 1 context characters; vocab: input alphabet size; out: output classes
      (the next character); hidden: width of the tanh layer.
    """

    def __init__(self, context: int, vocab: int, out: int, hidden: int = 32) -> None:
        super().__init__()
        self.context, self.vocab = int(context), int(vocab)
        self.fc1 = nn.Linear(self.context * self.vocab, int(hidden))
        self.fc2 = nn.Linear(int(hidden), int(out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.tanh(self.fc1(x)))


def onehot_contexts(codes: np.ndarray, vocab: int) -> torch.Tensor:
    """(N, context) integer codes -> (N, context * vocab) float one-hot rows."""
    c = torch.as_tensor(np.asarray(codes, dtype=np.int64))
    oh = torch.nn.functional.one_hot(c, int(vocab)).to(torch.float32)
    return oh.reshape(c.shape[0], -1)


def stack_models(n_models: int, context: int, vocab: int, out: int, *, hidden: int = 32,
                 seed: int = 0, out_bias: torch.Tensor | None = None) -> tuple[CharMLP, Params]:
    """M independently initialised :class:`CharMLP` (PyTorch default init, seeded), stacked.

    ``out_bias``: optional (M, out) or (out,) initial output bias (e.g. log prior: the model
    starts from the public model's prediction).  Returns the template module (on the "meta"
    device) and the stacked parameters {name: (M, ...)}.
    """
    m = check_count("n_models", n_models, minimum=1)
    gen = torch.Generator().manual_seed(int(seed))
    template = CharMLP(context, vocab, out, hidden)
    params: Params = {}
    for name, p in template.named_parameters():
        layer = template.fc1 if name.startswith("fc1") else template.fc2
        fan_in = layer.in_features
        bound = 1.0 / np.sqrt(fan_in)  # nn.Linear's default U(-1/sqrt(fan_in), +)
        params[name] = (torch.rand((m, *p.shape), generator=gen) * 2 - 1) * bound
    if out_bias is not None:
        params["fc2.bias"] = torch.as_tensor(out_bias, dtype=torch.float32).expand(
            m, template.fc2.out_features).clone()
    return template.to("meta"), params


def _forward(params: Params, x: torch.Tensor) -> torch.Tensor:
    """Batched forward of M stacked models: params (M, ...), x (N, D) -> logits (M, N, out)."""
    h = torch.tanh(torch.einsum("mhd,nd->mnh", params["fc1.weight"], x)
                   + params["fc1.bias"][:, None])
    return torch.einsum("moh,mnh->mno", params["fc2.weight"], h) + params["fc2.bias"][:, None]


def batched_logits(template: CharMLP, params: Params, x: torch.Tensor) -> torch.Tensor:
    """Logits of every model on every input: params (M, ...), x (N, D) -> (M, N, out).

    Equal to ``functional_call(template, params[m], (x,))`` for every m (tested)."""
    del template  # the architecture is CharMLP's; kept for a uniform signature
    return _forward(params, x)


@dataclass(frozen=True)
class DPSGDOptions:
    """Full-batch DP-SGD settings: clip norm C, noise multiplier sigma (std sigma*C on the
    clipped sum), learning rate and number of steps."""

    clip: float = 1.0
    noise_multiplier: float = 1.0
    learning_rate: float = 1.0
    steps: int = 1

    def __post_init__(self) -> None:
        check_positive("clip", self.clip)
        check_nonnegative("noise_multiplier", self.noise_multiplier)
        check_positive("learning_rate", self.learning_rate)
        check_count("steps", self.steps, minimum=1)


def _per_example_grads(params: Params, x: torch.Tensor, y: torch.Tensor) -> Params:
    """Per-(model, example) gradients {name: (M, B, ...)} of the cross-entropy, by explicit
    back-propagation through the two layers (vectorised over models and examples):

        d2 = softmax(logits) - onehot(y)          grad b2 = d2,  grad W2 = d2 h^T
        d1 = (W2^T d2) * (1 - h^2)                grad b1 = d1,  grad W1 = d1 x^T

    (the per-sample gradients Opacus' hooks compute; checked against Opacus in the tests)."""
    w1, b1, w2, b2 = (params[k] for k in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"))
    h = torch.tanh(torch.einsum("mhd,nd->mnh", w1, x) + b1[:, None])       # (M, B, H)
    logits = torch.einsum("moh,mnh->mno", w2, h) + b2[:, None]             # (M, B, O)
    d2 = torch.softmax(logits, -1)
    d2 = d2 - torch.nn.functional.one_hot(y, d2.shape[-1]).to(d2.dtype)
    d1 = torch.einsum("moh,mno->mnh", w2, d2) * (1 - h * h)
    return {"fc1.weight": d1[..., :, None] * x[None, :, None, :],
            "fc1.bias": d1,
            "fc2.weight": d2[..., :, None] * h[..., None, :],
            "fc2.bias": d2}


def dpsgd_train(template: CharMLP | None, params: Params, x: torch.Tensor, y: torch.Tensor,
                options: DPSGDOptions, *, seed: int = 0,
                mask: Params | None = None) -> Params:
    """Train M models at once with full-batch DP-SGD (see the module docstring).

    Args:
      params: stacked parameters {name: (M, ...)} (not modified).
      x: (B, D) inputs shared by every model; y: (M, B) integer labels, one row per model.
      mask: optional {name: tensor broadcastable to the parameter (without the model axis)}
        of 0/1: the trained ("lazy") parameters; ``None`` trains every parameter.
    Returns the trained stacked parameters.
    """
    y = torch.as_tensor(y, dtype=torch.int64)
    if y.ndim != 2 or y.shape[1] != x.shape[0]:
        raise ValueError("y must have shape (n_models, batch) matching x's batch")
    gen = torch.Generator().manual_seed(int(seed))
    del template  # CharMLP architecture (see _forward)
    p = {k: v.clone() for k, v in params.items()}
    c, s, b = float(options.clip), float(options.noise_multiplier), x.shape[0]
    for _ in range(options.steps):
        g = _per_example_grads(p, x, y)  # {name: (M, B, ...)}
        if mask is not None:
            g = {k: v * mask[k] for k, v in g.items()}
        sq = reduce(operator.add, (v.flatten(2).pow(2).sum(-1) for v in g.values()))  # (M, B)
        scale = torch.clamp(c / (sq.sqrt() + 1e-12), max=1.0)
        for k, v in g.items():
            summed = (v * scale.reshape(*scale.shape, *([1] * (v.ndim - 2)))).sum(1)
            if s > 0:
                noise = torch.randn(summed.shape, generator=gen) * (s * c)
                if mask is not None:
                    noise = noise * mask[k]
                summed = summed + noise
            p[k] = p[k] - options.learning_rate * summed / b
    return p


def train_public(model: CharMLP, x: torch.Tensor, y: torch.Tensor, *, epochs: int = 3,
                 batch_size: int = 256, learning_rate: float = 3e-3, seed: int = 0) -> CharMLP:
    """Non-private training (Adam on cross-entropy, shuffled mini-batches); returns ``model``."""
    check_count("epochs", epochs, minimum=1)
    check_count("batch_size", batch_size, minimum=1)
    gen = torch.Generator().manual_seed(int(seed))
    opt = torch.optim.Adam(model.parameters(), lr=float(learning_rate))
    n = x.shape[0]
    for _ in range(epochs):
        order = torch.randperm(n, generator=gen)
        for i in range(0, n, batch_size):
            idx = order[i:i + batch_size]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
    return model


# ---------------------------------------------------------------------------------------------
# Beyond Worst Case §5.2: many lazily trained models on one canary each
# ---------------------------------------------------------------------------------------------

def train_canary_models(prefix: np.ndarray, secrets: np.ndarray, log_prior: np.ndarray,
                        options: DPSGDOptions, *, vocab: int = 10, hidden: int = 32,
                        init: str = "prior", seed: int = 0) -> np.ndarray:
    """Train M models, model m with DP-SGD on its single canary ``prefix + secrets[m]``.

    The context (``prefix``, n - 1 characters) is the same for every model; the label is the
    model's secret (the n-th character).  Training is lazy (Beyond Worst Case §5.2, after Stock et
    al.):
    only the parameters the fixed context reaches are trained and noised -- the W1 columns of
    the context's one-hot entries, b1, W2, b2.  ``init="prior"`` starts every model at its
    public prior (b2 = log prior, W2 = 0: the untrained model predicts exactly the prior, the
    "public" knowledge of the adversary); ``init="random"`` is PyTorch's default.

    Returns the final logits over the ``vocab`` next characters, shape (M, vocab).
    """
    if init not in ("prior", "random"):
        raise ValueError(f"init must be one of prior, random; got {init!r}")
    pre = np.asarray(prefix, dtype=np.int64)
    sec = np.asarray(secrets, dtype=np.int64)
    m, n_ctx = sec.shape[0], pre.shape[0]
    lp = torch.as_tensor(np.broadcast_to(np.asarray(log_prior, dtype=np.float32),
                                         (m, vocab)).copy())
    # Lazy training: of W1 only the n_ctx columns of the context's one-hot entries are ever
    # multiplied by a non-zero input, so the model is materialised on those columns only
    # (input = ones(n_ctx)); they are initialised as in the full network (fan-in
    # n_ctx * vocab), the other columns are never trained, noised or used.
    _, params = stack_models(m, n_ctx, vocab, vocab, hidden=hidden, seed=seed,
                             out_bias=lp if init == "prior" else None)
    params["fc1.weight"] = params["fc1.weight"][:, :, :n_ctx].contiguous()
    if init == "prior":
        params["fc2.weight"] = torch.zeros_like(params["fc2.weight"])
    x = torch.ones((1, n_ctx))
    trained = dpsgd_train(None, params, x, torch.as_tensor(sec)[:, None], options,
                          seed=seed + 1)
    with torch.no_grad():
        return _forward(trained, x)[:, 0].numpy().astype(float)


def fit_char_lm(contexts: np.ndarray, targets: np.ndarray, *, vocab: int, hidden: int = 128,
                epochs: int = 3, batch_size: int = 256, learning_rate: float = 3e-3,
                seed: int = 0) -> CharMLP:
    """Non-private character n-gram network fitted to (context codes (N, n-1), next code (N,))."""
    torch.manual_seed(int(seed))
    c = np.asarray(contexts, dtype=np.int64)
    model = CharMLP(c.shape[1], vocab, vocab, hidden)
    return train_public(model, onehot_contexts(c, vocab),
                        torch.as_tensor(np.asarray(targets, dtype=np.int64)), epochs=epochs,
                        batch_size=batch_size, learning_rate=learning_rate, seed=seed)


def next_char_logprob(model: CharMLP, contexts: np.ndarray, targets: np.ndarray, *,
                      chunk: int = 65536) -> np.ndarray:
    """log P(targets[i] | contexts[i]) under ``model``, shape (N,) (float64)."""
    c = np.asarray(contexts, dtype=np.int64)
    t = torch.as_tensor(np.asarray(targets, dtype=np.int64))
    out = np.empty(c.shape[0])
    with torch.no_grad():
        for i in range(0, c.shape[0], chunk):
            lp = torch.log_softmax(model(onehot_contexts(c[i:i + chunk], model.vocab)), -1)
            out[i:i + chunk] = lp.gather(1, t[i:i + chunk, None])[:, 0].double().numpy()
    return out
