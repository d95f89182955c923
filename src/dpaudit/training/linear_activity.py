"""Clipped squared per-example gradients of a model of ``nn.Linear`` layers, without forming
the per-example gradients.

For a linear layer z = W a + b applied once to an example's input a (a vector), the
example's gradient is dL/dW = delta a^T and dL/db = delta, with delta = dL/dz (the
per-example factorisation behind Opacus's ``Linear`` rule and Goodfellow's 2015 note on
per-example gradients; "ghost clipping", Li et al., "Large Language Models Can Be Strong
Differentially Private Learners", ICLR 2022, §4, computes the norms from it).  So, per
example i,

    |g_i|^2 = sum over layers (|delta_i|^2 |a_i|^2 + |delta_i|^2 [bias]),

and with the clipping factor f_i = min(1, C / (|g_i| + 1e-6)) (Opacus's rule), the sum over
examples of the squared clipped gradient's coordinates is

    sum_i f_i^2 (delta_ij a_ik)^2 = ((f^2 delta^2)^T a^2)_jk    (weights),
    sum_i f_i^2 delta_ij^2                                         (biases):

one matrix product per layer instead of one gradient row of the model's size per example.
:func:`coordinate_activity` (``dpaudit.training.canaries``) sums these over its probes; the
values are those of its per-example path up to float rounding (tested).

Only models the factorisation covers exactly take this path: every trainable parameter is
the weight or bias of an ``nn.Linear`` that the forward calls once, on a 2-D input (batch,
features); anything else -- convolutions, norms, embeddings, a layer on a sequence (3-D
input: the gradient sums over positions), a layer called twice (shared weights) -- returns
None and the caller forms per-example gradients.  A parameter used outside its layer (a tied
weight read by ``F.linear`` elsewhere) is caught by comparing the first chunk's summed
gradient with the one the factorisation implies, and also returns None.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


def _linear_owners(model: nn.Module,
                   params: list[nn.Parameter]) -> list[tuple[nn.Linear, str]] | None:
    """(layer, "weight" | "bias") of each trainable parameter in order, or None when one is
    not a Linear layer's own weight or bias (or is shared between layers)."""
    owner: dict[int, tuple[nn.Linear, str]] = {}
    for m in model.modules():
        for name, p in m.named_parameters(recurse=False):
            if not p.requires_grad:
                continue
            if not isinstance(m, nn.Linear) or id(p) in owner:
                return None
            owner[id(p)] = (m, name)
    if any(id(p) not in owner for p in params):
        return None
    return [owner[id(p)] for p in params]


#: activations held per layer at once (examples x features): 2^22 floats, as the per-example
#: path's chunks (``dpaudit.training.canaries._CHUNK_FLOATS``)
_CHUNK_FLOATS = 1 << 22


def clipped_square_sums(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                        max_grad_norm: float, chunk: int | None = None, *,
                        check_shared: bool = True) -> np.ndarray | None:
    """(d,) sum over the examples of (x, y) of the squared coordinates of each example's
    cross-entropy gradient clipped to ``max_grad_norm`` (Opacus's rule), in
    trainable-parameter order; None when ``model`` is not a stack of Linear layers the
    factorisation covers (module docstring).  ``chunk`` examples at a time (default: as many
    as keep each layer's inputs and outputs within 2^22 floats, 16 to 4,096).
    ``check_shared``: compare the batch's summed gradient with the factorisation's on the
    first chunk (a weight read outside its layer); a caller that already checked the same
    model's structure (the placement's later probes, copies of the first) may skip it."""
    params = [p for p in model.parameters() if p.requires_grad]
    owners = _linear_owners(model, params)
    if not params or owners is None:
        return None
    layers = list(dict.fromkeys(m for m, _ in owners))
    if chunk is None:
        widest = max(max(m.in_features, m.out_features) for m in layers)
        chunk = max(16, min(4096, _CHUNK_FLOATS // max(1, widest)))
    has = {(id(m), name) for m, name in owners}
    totals = [torch.zeros(p.shape, dtype=torch.float64) for p in params]
    seen: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = {id(m): [] for m in layers}

    def keep(m: nn.Module, inp: tuple[torch.Tensor, ...], out: torch.Tensor) -> None:
        seen[id(m)].append((inp[0], out))

    for s in range(0, int(x.shape[0]), chunk):
        for v in seen.values():
            v.clear()
        handles = [m.register_forward_hook(keep) for m in layers]
        try:
            loss = F.cross_entropy(model(x[s:s + chunk]), y[s:s + chunk], reduction="sum")
        except Exception:  # noqa: BLE001 -- the per-example path tries, and reports
            return None
        finally:
            for h in handles:
                h.remove()
        if any(len(v) != 1 or v[0][0].ndim != 2 or not v[0][1].requires_grad
               for v in seen.values()):
            return None                  # a layer called twice, on a sequence, or no-grad
        outs = [seen[id(m)][0][1] for m in layers]
        check = check_shared and s == 0
        try:
            grads = torch.autograd.grad(loss, outs + (params if check else []),
                                        allow_unused=True)
        except Exception:  # noqa: BLE001 -- as above
            return None
        deltas = {id(m): g for m, g in zip(layers, grads[:len(layers)], strict=True)}
        sq = torch.zeros(outs[0].shape[0], dtype=outs[0].dtype, device=outs[0].device)
        for m in layers:
            a, d = seen[id(m)][0][0].detach(), deltas[id(m)]
            if d is None:
                continue
            d2 = d.pow(2).sum(dim=1)
            if (id(m), "weight") in has:
                sq += d2 * a.pow(2).sum(dim=1)
            if (id(m), "bias") in has:
                sq += d2
        f2 = (max_grad_norm / (sq.sqrt() + 1e-6)).clamp(max=1.0).pow(2)
        for j, (m, name) in enumerate(owners):
            a, d = seen[id(m)][0][0].detach(), deltas[id(m)]
            g = grads[len(layers) + j] if check else None
            if d is None:
                if g is not None and bool(g.abs().max() > 0):
                    return None          # a gradient that reaches p outside its layer
                continue
            if check:
                # autograd forms the same products: equal bit for bit on the CPU (the digits
                # MLP, a 64-2048-2048-10 MLP), float32 rounding of another summation order
                # elsewhere (~1e-6); a weight read outside its layer adds a term of the
                # gradient's own size, far outside rtol 1e-4
                implied = d.T @ a if name == "weight" else d.sum(dim=0)
                if g is None or not torch.allclose(
                        g, implied, rtol=1e-4, atol=1e-6 * float(implied.abs().max()) + 1e-30):
                    return None          # p is also used outside its layer (a tied weight)
            wd = d.pow(2) * f2[:, None]
            part = wd.T @ a.pow(2) if name == "weight" else wd.sum(dim=0)
            totals[j] += part.detach().to(device="cpu", dtype=torch.float64)
    return np.concatenate([t.reshape(-1).numpy() for t in totals])
