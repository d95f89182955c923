"""Canaries for auditing real DP-SGD training: gradient (white box) and input (black box).

Gradient canaries -- Dirac canaries (Bits Transmission §6.4 after Nasr et al. 2023; Tight One-Run
§6.2 and
App. A; BT notes §6.4, TOR notes §3.4).  Canary i owns one model coordinate c(i) (one
coordinate per canary, the "memoryless" arrangement).  Its per-example gradient is
``scale * C * e_{c(i)}``: zero everywhere except on its own coordinate, with norm at or above
the clip norm C, so that correct per-example clipping reduces it to exactly ``C e_{c(i)}``.
The one-run game's inclusion design: canary i is in the training set iff its secret bit
b_i = 1 (bits i.i.d. uniform), and an included canary is sampled at each step with the same
Poisson rate q as every real example.  The clipping, noise and scaling applied to the
canaries are Opacus's own (:class:`GradientCanaries.attach` wraps the optimizer's
``clip_and_accumulate`` and chains its ``step_hook``): under Opacus's stock clipping the
canary's gradient is clipped by Opacus's rule and added to the clipped sum at its few
coordinates (sparse, no row of full parameter size); an optimizer with its own clipping code
gets the canary's gradient row appended to ``p.grad_sample`` before it clips.

Placement.  Real data also moves coordinate c(i), which adds adversary-unknown randomness to
the canary's observations and makes a real audit less tight than the simulator (Bits Transmission
§3.5).  :func:`choose_coordinates` therefore measures every coordinate's real-gradient
activity on a warm-up pass -- the mean over training examples of the squared *clipped*
per-example gradient at the initial model and three perturbed copies, on a seeded sample
of 512 examples split between them (:func:`coordinate_activity`) -- and gives the canaries
the n least active coordinates (ties broken by a seeded random priority).  On digits
this first picks the first-layer weights fed by the three pixels that are zero in every
image (exactly zero real gradient, at every step, since the input is zero), then weights
fed by pixels that are almost always zero.  For the default MLP (256 hidden units) that is
768 exactly-silent coordinates, then about 1,500 more whose pixel is non-zero in at most
0.5% of the images.

Input canaries (black box): real-looking digits with a wrong label (``"flip"``: a training
image with label y + k mod 10, k uniform in 1..9), a random label (``"random_label"``), or an
out-of-distribution image (``"ood"``: uniform random pixels, random label).  Canary i joins the
training set iff b_i = 1 and is then sampled by Opacus's Poisson sampler like any example.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from dpaudit.canaries import (
    DEFAULT_SHAPES,
    CanaryPlan,
    Layout,
    RunFacts,
    dirac_plan,
    draw_bits,
    last_iterate_scores,
    least_active,
    plan_gradient_canaries,
)
from dpaudit.canaries.plan import SENTINEL
from dpaudit.canaries.reader import ReleaseReader
from dpaudit.randomness import seed_sequence, stream
from dpaudit.training.common import INPUT_KINDS
from dpaudit.training.linear_activity import clipped_square_sums
from dpaudit.training.models import count_coordinates, trainable_parameters
from dpaudit.validation import check_choice, check_count, check_positive, check_probability

__all__ = ["coordinate_activity", "choose_coordinates", "ACTIVITY_EXAMPLES", "GradientCanaries",
           "InputCanaries", "make_input_canaries", "INPUT_CANARY_KINDS", "draw_bits"]

INPUT_CANARY_KINDS = INPUT_KINDS


# -- devices: the canaries' own tensors are made on the CPU (from NumPy) and meet the model's
# parameters and gradients wherever those live (CPU, CUDA, MPS); every crossing goes through
# these helpers, so that a CPU run computes exactly what it computed before.
def _on(t: torch.Tensor, like: torch.Tensor, *, cast: bool = False) -> torch.Tensor:
    """``t`` on the device of ``like`` (and in its dtype when ``cast``, cast before the move:
    the canaries' float64 values never reach a device without float64, such as MPS); ``t``
    itself when it is there already (no copy, as on a CPU-only run)."""
    return (t.to(like.dtype) if cast else t).to(like.device)


def _numpy(t: torch.Tensor) -> np.ndarray:
    """A tensor's values as a float64 NumPy array, from any device (moved to the CPU first:
    a CUDA tensor has no ``.numpy()``, and MPS has no float64)."""
    return t.detach().cpu().double().numpy()


def _model_device(model: nn.Module) -> torch.device:
    """The device of ``model``'s first parameter (the CPU for a model without one)."""
    p = next(iter(model.parameters()), None)
    return torch.device("cpu") if p is None else p.device


class _PerDevice:
    """An index tensor made once on the CPU and copied once to each device that asks for it
    (the per-tensor index caches of :class:`GradientCanaries`)."""

    __slots__ = ("_by", "cpu_numpy")

    def __init__(self, t: torch.Tensor) -> None:
        self._by = {t.device: t}
        self.cpu_numpy = t.cpu().numpy()

    @property
    def cpu(self) -> torch.Tensor:
        return self._by[torch.device("cpu")]

    def on(self, device: torch.device) -> torch.Tensor:
        t = self._by.get(device)
        if t is None:
            t = self._by[device] = self.cpu.to(device)
        return t


def _fast_cpu(v: torch.Tensor) -> bool:
    """True when NumPy can work on ``v``'s own memory: a CPU float32/float64 tensor that
    autograd does not track (a fraction of torch's per-call cost, which a step hook pays
    once per parameter tensor every step)."""
    return (v.is_cpu and v.dtype in (torch.float32, torch.float64) and not v.requires_grad
            and v.layout == torch.strided)


class _ReadIndex:
    """The canaries' distinct read coordinates grouped by parameter tensor, once: tensor
    j's values fill the slice [a, b) of a buffer of distinct coordinates (one gather per
    tensor, none per canary; a coordinate several canaries read is gathered once), and one
    take puts the buffer in the plan's (n, k) order.  On the CPU the gather is NumPy's on
    the tensor's memory; on another device ``index_select`` there and one transfer per
    device for all its tensors."""

    def __init__(self, layout: Layout, distinct: np.ndarray, inverse: np.ndarray,
                 shape: tuple[int, ...]) -> None:
        """``distinct``: the distinct read coordinates, ascending (so grouped by tensor);
        ``inverse``: the plan's (n, k) coordinates as indices into it, row-major
        (:attr:`dpaudit.canaries.ReleaseReader.distinct` and ``inverse``)."""
        t, loc = layout.split(np.asarray(distinct, dtype=np.int64))
        js, starts = np.unique(t, return_index=True)
        ends = np.append(starts[1:], t.size)
        self.groups = [(int(j), int(a), int(b), _PerDevice(torch.from_numpy(loc[a:b].copy())))
                       for j, a, b in zip(js, starts, ends, strict=True)]
        self.unsort = np.asarray(inverse).reshape(-1)
        self.shape = shape
        self.size = int(t.size)

    def gather(self, params: Sequence[nn.Parameter],
               get: Callable[[nn.Parameter], torch.Tensor | None]) -> np.ndarray:
        """(n, k) float64 values of ``get(p)`` at the read coordinates (0 where None)."""
        buf = np.empty(self.size)
        self.gather_into(buf, params, get)
        return self.arrange(buf)

    def arrange(self, buf: np.ndarray) -> np.ndarray:
        """The plan's (..., n, k) order of buffers of the distinct coordinates (..., size)."""
        return np.take(buf, self.unsort, axis=-1, mode="clip").reshape(*buf.shape[:-1],
                                                                         *self.shape)

    def gather_into(self, buf: np.ndarray, params: Sequence[nn.Parameter],
                    get: Callable[[nn.Parameter], torch.Tensor | None],
                    defer: list[tuple[int, int, torch.Tensor]] | None = None) -> None:
        """Write the values of ``get(p)`` at the distinct read coordinates into ``buf``
        (size,), by tensor (0 where None): the step hook's read, one gather per tensor.
        Values that live elsewhere than NumPy can read (another device) are gathered there;
        with ``defer`` the gathered copies are appended to it as (a, b, tensor) instead of
        being brought to the host now (:func:`_fill_deferred` brings a block's at once: no
        wait for the device at every step)."""
        elsewhere: dict[torch.device, list[tuple[int, int, torch.Tensor]]] = {}
        for j, a, b, local in self.groups:          # tensors, not canaries
            v = get(params[j])
            if v is None:
                buf[a:b] = 0.0
            elif _fast_cpu(v):
                buf[a:b] = v.numpy().ravel()[local.cpu_numpy]
            else:
                flat = v.detach().reshape(-1)
                part = (a, b, flat.index_select(0, local.on(flat.device)))
                if defer is not None:
                    defer.append(part)
                else:
                    elsewhere.setdefault(flat.device, []).append(part)
        for parts in elsewhere.values():            # one transfer per device
            _fill_deferred([(buf, parts)])


def _fill_deferred(rows: Sequence[tuple[np.ndarray, Sequence[tuple[int, int, torch.Tensor]]]]
                   ) -> None:
    """Write gathered device values into their host buffers: ``rows`` of (buffer, its parts
    (a, b, values)); one transfer per device for all of them, made float64 on the host
    (:func:`_numpy`)."""
    by_device: dict[torch.device, list[tuple[np.ndarray, int, int, torch.Tensor]]] = {}
    for buf, parts in rows:
        for a, b, t in parts:
            by_device.setdefault(t.device, []).append((buf, a, b, t))
    for items in by_device.values():
        vals = _numpy(torch.cat([t.reshape(-1) for *_, t in items]))
        at = 0
        for buf, a, b, _ in items:
            buf[a:b] = vals[at:at + b - a]
            at += b - a


def _cat_rows(parts: list[torch.Tensor], reuse: list[torch.Tensor] | None) -> torch.Tensor:
    """``torch.cat(parts, dim=1)``, written into ``reuse[0]`` (rows of the same width,
    dtype and device) when it is large enough, so that successive probes fill the same
    memory instead of fresh pages; the first result is kept there."""
    n, width = parts[0].shape[0], sum(t.shape[1] for t in parts)
    buf = reuse[0] if reuse else None
    if (buf is not None and buf.shape[0] >= n and buf.shape[1] == width
            and buf.dtype == parts[0].dtype and buf.device == parts[0].device):
        return torch.cat(parts, dim=1, out=buf[:n])
    rows = torch.cat(parts, dim=1)
    if reuse is not None and not reuse:
        reuse.append(rows)
    return rows


def _flat_per_example_grads(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                            chunk: int | None = None,
                            reuse: list[torch.Tensor] | None = None) -> Iterator[torch.Tensor]:
    """Per-example gradients of the cross-entropy, flattened in trainable-parameter order,
    computed chunk by chunk with Opacus's ``GradSampleModule`` (the per-sample gradient code
    the training itself runs, so the placement initialises no further machinery and its
    memory stays below a training step's: ``chunk`` examples at a time, 16 by default;
    :func:`coordinate_activity` takes as many as fit in 2^22 floats, at least 16; ``reuse``:
    a list that keeps one row buffer for successive calls, :func:`_cat_rows`).
    ``model`` gets Opacus's hooks (pass a copy); a model Opacus cannot wrap, or whose
    per-sample rule fails on the first chunk (an ``EmbeddingBag`` called without offsets),
    falls back to ``torch.func``."""
    from opacus import GradSampleModule

    params = trainable_parameters(model)
    chunk = chunk or 16
    try:
        gsm = GradSampleModule(model, loss_reduction="sum")
    except Exception:  # noqa: BLE001 -- a layer Opacus has no per-sample rule for
        yield from _flat_per_example_grads_func(model, x, y, chunk)
        return
    fallback = False
    try:
        for s in range(0, x.shape[0], chunk):
            for p in params:
                p.grad_sample = None
                p.grad = None
            try:
                with warnings.catch_warnings():  # the first layer's inputs need no gradient
                    warnings.filterwarnings("ignore", message="Full backward hook is firing",
                                            category=UserWarning)
                    F.cross_entropy(gsm(x[s:s + chunk]), y[s:s + chunk],
                                    reduction="sum").backward()
                parts = [p.grad_sample.reshape(p.grad_sample.shape[0], -1) for p in params]
                rows = _cat_rows(parts, reuse)
            except Exception:  # noqa: BLE001 -- a per-sample rule that fails on this call
                if s:
                    raise
                fallback = True
                break
            yield rows
    finally:
        for p in params:
            p.grad_sample = None
            p.grad = None
        gsm._close()
    if fallback:
        yield from _flat_per_example_grads_func(model, x, y, chunk)


def _flat_per_example_grads_func(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                                 chunk: int) -> Iterator[torch.Tensor]:
    """The same with ``torch.func`` (vmap of grad), for models Opacus cannot wrap."""
    from torch.func import functional_call, grad, vmap

    named = {k: v.detach() for k, v in model.named_parameters() if v.requires_grad}
    frozen = {k: v.detach() for k, v in model.named_parameters() if not v.requires_grad}

    def loss(p: dict[str, torch.Tensor], xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
        out = functional_call(model, {**p, **frozen}, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    # randomness="different": each example draws its own dropout mask, as in training
    per_ex = vmap(grad(loss), in_dims=(None, 0, 0), randomness="different")
    for s in range(0, x.shape[0], chunk):
        g = per_ex(named, x[s:s + chunk], y[s:s + chunk])
        yield torch.cat([g[k].reshape(g[k].shape[0], -1) for k in named], dim=1)


#: default number of per-example gradients the placement measures (all probes together):
#: a seeded sample of the training set, the probes on disjoint parts of it (None: every
#: probe on every example).  ``studies/placement_subsample.py`` measures what it finds.
ACTIVITY_EXAMPLES = 512

#: the silence check of a sampled placement covers this many times ``examples``
#: (:func:`coordinate_activity`)
CHECK_FACTOR = 8

#: steps whose canary coins are drawn at once, and whose readings the step hook hands to
#: the reader together (:meth:`GradientCanaries._flush`)
STEP_BLOCK = 32

#: per-example gradient rows held at once by the placement (chunks of at least 16
#: examples): 2^22 floats (16 MiB), under one training step's per-sample gradients
_CHUNK_FLOATS = 1 << 22


def silent_by_construction(model: nn.Module) -> np.ndarray | None:
    """Over ``model``'s trainable coordinates (:func:`~dpaudit.training.models.
    trainable_parameters` order), True on those no example can move whatever the data, as
    the model declares them: a module with a ``silent_parameters()`` method (a
    :class:`~dpaudit.training.CanaryBranch` while its gate is 0: its branch), also through
    Opacus's ``GradSampleModule`` (``_module``).  None when the model declares none."""
    inner = getattr(model, "_module", model)
    declare = getattr(inner, "silent_parameters", None)
    silent = {id(p) for p in declare()} if callable(declare) else set()
    if not silent:
        return None
    return np.concatenate([np.full(p.numel(), id(p) in silent)
                           for p in trainable_parameters(inner)])


def _check_examples(x: torch.Tensor, y: torch.Tensor) -> None:
    """ValueError unless ``x`` and ``y`` are tensors of the same length >= 1, ``x`` finite."""
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise ValueError(f"x and y must be torch tensors; got {type(x).__name__} and "
                         f"{type(y).__name__}")
    if x.ndim == 0 or y.ndim == 0 or x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ValueError(f"x and y must hold the same number >= 1 of examples (first "
                         f"dimension); got shapes {tuple(x.shape)} and {tuple(y.shape)}")
    if x.is_floating_point() and not bool(torch.isfinite(x).all()):
        raise ValueError("x must be finite (no NaN or infinity)")


def coordinate_activity(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                        max_grad_norm: float, *, probes: int = 4, seed: int = 0,
                        examples: int | None = ACTIVITY_EXAMPLES,
                        stop_below: int | None = None) -> np.ndarray:
    """Real-gradient activity of every trainable coordinate: sum over ``probes`` parameter
    settings k of mean_{i in S_k} (CLP_C(grad_i))_c^2, clipped as DP-SGD clips -- the model
    itself and ``probes - 1`` copies whose parameters are perturbed by Gaussian noise (std
    that of each tensor's std).  The probes tell coordinates that no example can move (a
    weight fed by an always-zero pixel) from coordinates that are silent only by accident of
    the initialisation (the weights of a hidden unit no example activates yet, which noisy
    training can revive).

    ``stop_below``: a question about the count of silent coordinates only (is it below
    ``stop_below``?, :func:`~dpaudit.training.needs_canary_branch`): as soon as the probes
    measured so far leave fewer than ``stop_below`` coordinates at 0, their summed activity
    is returned -- the full measurement can only leave fewer (a coordinate at 0 in the sum
    is at 0 in every probe, and the silence check only lifts coordinates from 0), so the
    answer is the same: on a dense model after the first probe, and without the silence
    check whenever the sampled probes already answer.  Otherwise the full measurement.

    ``examples`` bounds the per-example gradients measured, all probes together (the cost):
    when ``probes * len(x)`` exceeds it, a seeded random sample of ``examples`` training
    examples (all of them if fewer, then cycled) is split between the probes, so probe k
    measures its own part S_k and the probes together see ``min(examples, len(x))``
    distinct examples; otherwise, and with ``examples=None``, every S_k is the whole set.
    A sampled measurement adds a *silence check*: at every probe's parameters one plain backward
    pass of a Gaussian-weighted loss over ``CHECK_FACTOR * examples`` examples (all of them if
    fewer; :func:`_moved`) finds, with probability 1, every coordinate one of those examples
    moves; a coordinate the sample saw silent but the check did not gets an activity above 0 and
    below every measured one (a sample that leaves no coordinate at 0, as on a dense model,
    skips the check: it could change nothing).  So the silent set (activity 0) is the full
    measurement's whenever ``len(x) <= CHECK_FACTOR * examples`` (4,096 by default); on a larger
    set a coordinate moved by a share p of the examples passes for silent with probability
    (1 - p)^4096.  A coordinate taken for silent costs power (its drift), never validity: the
    placement is fixed before the secret bits are drawn and independently of them.  Dropout in
    the probes draws from a generator seeded by ``seed`` (the caller's torch generator is left
    as it was), so the activity is a function of (model, data, seed)."""
    check_positive("max_grad_norm", max_grad_norm)
    probes = check_count("probes", probes, minimum=1)
    seed = check_count("seed", seed)
    if examples is not None:
        examples = check_count("examples", examples, minimum=1)
    if stop_below is not None:
        stop_below = check_count("stop_below", stop_below, minimum=1)
    _check_examples(x, y)
    gen = torch.Generator().manual_seed(seed)
    dev = _model_device(model)  # the data goes where the model is
    rng = stream(seed, "activity_probes")
    parts = _probe_examples(int(x.shape[0]), probes, examples, rng)
    x, y = x.to(dev), y.to(dev)
    with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []):
        torch.manual_seed(int(rng.integers(2 ** 62)))
        check = None
        if parts is not None:
            assert examples is not None
            n = int(x.shape[0])
            size = CHECK_FACTOR * examples
            check = np.sort(rng.permutation(n)[:size]) if size < n else np.arange(n)
        try:
            act, moved = _activity(_hook_free_copy(model), x, y, max_grad_norm, probes, gen,
                                   parts, check, rng, silent_by_construction(model),
                                   stop_below)
        except RuntimeError as e:  # the model's forward or the loss refused x / y
            raise ValueError(f"x and y must be a batch of the model's inputs and class "
                             f"labels (the model's forward or the cross-entropy loss "
                             f"raised: {str(e).splitlines()[0]})") from e
    _rank_missed(act, moved)
    return act


def _moved(model: nn.Module, x: torch.Tensor, y: torch.Tensor, idx: np.ndarray,
           rng: np.random.Generator) -> np.ndarray:
    """G_c^2 with G = sum_{i in idx} w_i grad_i (w_i i.i.d. N(0, 1)) at the model's
    parameters: one plain backward pass per chunk, no per-example gradients.  G_c = 0 if
    no example of ``idx`` moves coordinate c, and G_c != 0 with probability 1 otherwise (a
    Gaussian combination of numbers not all 0), so the pass finds every coordinate those
    examples move, at about the cost of ``len(idx) / batch`` plain training batches."""
    w = torch.from_numpy(rng.standard_normal(idx.size))
    params = trainable_parameters(model)
    total = [torch.zeros_like(p) for p in params]
    with torch.enable_grad():
        for s in range(0, idx.size, 512):
            i = _on(torch.from_numpy(idx[s:s + 512]), x)
            loss = F.cross_entropy(model(x[i]), y[_on(i, y)], reduction="none")
            grads = torch.autograd.grad((loss * _on(w[s:s + 512], loss, cast=True)).sum(),
                                        params, allow_unused=True)
            for acc, g in zip(total, grads, strict=True):
                if g is not None:
                    acc.add_(g.detach())
    return np.concatenate([_numpy(g.reshape(-1)) ** 2 for g in total]) if total else \
        np.zeros(0)


def _rank_missed(act: np.ndarray, moved: np.ndarray) -> None:
    """Coordinates the sampled activity ``act`` saw silent that some example moves
    (``moved`` > 0): given an activity above 0 (silent ones stay first) and below every
    measured one, in order of ``moved`` -- in place."""
    missed = (act == 0) & (moved > 0)
    if missed.any():
        seen = act[act > 0]
        floor = 1e-6 * (seen.min() if seen.size else 1.0)
        act[missed] = floor * (1 + moved[missed] / moved[missed].max()) / 2


def _probe_examples(size: int, probes: int, examples: int | None,
                    rng: np.random.Generator) -> list[np.ndarray] | None:
    """The examples each probe measures: None (every probe, every example) when the budget
    allows it, else ``examples`` indices of a random permutation of the training set (cycled
    when the set is smaller) cut into ``probes`` near-equal parts."""
    if examples is None or probes * size <= examples or size == 0:
        return None
    order = rng.permutation(size)
    take = order[np.arange(max(examples, probes)) % size]
    return [np.sort(part) for part in np.array_split(take, probes)]


_OPACUS_MODULE_ATTRS = ("autograd_grad_sample_hooks", "ft_compute_sample_grad", "activations",
                        "max_batch_len")


def _hook_free_copy(model: nn.Module) -> nn.Module:
    """A copy of the model (unwrapped from Opacus's GradSampleModule, if ``make_private``
    already wrapped it) without module hooks, for side computations with ``torch.func``."""
    inner = getattr(model, "_module", model)
    dup = copy.deepcopy(inner)
    for m in dup.modules():
        for hooks in (m._forward_hooks, m._forward_pre_hooks, m._backward_hooks,
                      m._backward_pre_hooks):
            hooks.clear()
        # Opacus's bookkeeping, copied with the module: without this a second
        # GradSampleModule refuses the copy ("Trying to add hooks twice to the same model")
        for attr in _OPACUS_MODULE_ATTRS:
            if attr in m.__dict__:
                delattr(m, attr)
    for p in dup.parameters():
        for attr in ("grad_sample", "_forward_counter", "_current_grad_sample"):
            if hasattr(p, attr):
                delattr(p, attr)
    return dup


def _activity(model: nn.Module, x: torch.Tensor, y: torch.Tensor, max_grad_norm: float,
              probes: int, gen: torch.Generator, parts: list[np.ndarray] | None = None,
              check: np.ndarray | None = None,
              rng: np.random.Generator | None = None,
              known: np.ndarray | None = None,
              stop_below: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(activity, moved): the probes' summed activity (:func:`coordinate_activity`), probe
    k on ``parts[k]`` (None: every example), and the summed :func:`_moved` of every probe's
    parameters on the examples ``check`` -- run only when the activity leaves a coordinate
    at 0 other than those ``known`` silent by construction (a gated-off canary branch,
    :func:`silent_by_construction`: its moved values are exactly
    0, so the check changes nothing there; a dense model, or a dense model in a branch,
    skips it); zeros otherwise.  ``stop_below``: the probes' sum so far (and zeros) as soon
    as it leaves fewer coordinates at 0 (:func:`coordinate_activity`)."""
    total: np.ndarray | None = None
    moved = np.zeros(count_coordinates(model))
    chunk = max(16, _CHUNK_FLOATS // max(1, count_coordinates(model)))
    reuse: list[torch.Tensor] = []     # the probes' per-example rows, one buffer for all
    states = []
    # the probes' copies, kept for the silence check when they are small (else drawn again)
    kept: list[nn.Module] | None = (
        [] if probes * count_coordinates(model) <= _CHUNK_FLOATS else None)
    factorised = False                 # probe 0 took the factorised path (the others follow)
    for k in range(probes):
        states.append(gen.get_state())
        m = _probe(model, k, gen)   # each probe wrapped by Opacus on its own copy
        if kept is not None:
            kept.append(m)
        xk, yk = x, y
        if parts is not None:
            idx = _on(torch.from_numpy(parts[k]), x)
            xk, yk = x[idx], y[_on(idx, y)]
        with torch.enable_grad():
            # a stack of Linear layers: the sums from one matrix product per layer
            act = (clipped_square_sums(m, xk, yk, max_grad_norm, check_shared=k == 0)
                   if k == 0 or factorised else None)
            factorised = act is not None
            if act is None:
                act = np.zeros(count_coordinates(m))
                for g in _flat_per_example_grads(m, xk, yk, chunk, reuse):
                    g = g.detach()
                    g.mul_((max_grad_norm / (g.norm(dim=1, keepdim=True) + 1e-6))
                           .clamp(max=1.0))
                    act += _numpy(g.pow_(2).sum(dim=0))
        act /= max(1, xk.shape[0])
        total = act if total is None else total + act
        if stop_below is not None and np.count_nonzero(total == 0) < stop_below:
            return total, moved
    assert total is not None
    unknown = total if known is None or known.size != total.size else total[~known]
    if check is not None and (unknown == 0).any():
        assert rng is not None
        after = gen.get_state()
        for k in range(probes):      # the same probes (kept, or again from their states)
            if kept is None:
                gen.set_state(states[k])
            m = _probe(model, k, gen) if kept is None else kept[k]
            moved += _moved(m, x, y, check, rng)
        gen.set_state(after)
    return total, moved


def _probe(model: nn.Module, k: int, gen: torch.Generator) -> nn.Module:
    """Probe k's copy of ``model``: the model itself (k = 0) or its parameters plus Gaussian
    noise of each tensor's std, drawn from ``gen``."""
    m = copy.deepcopy(model)
    if k > 0:
        with torch.no_grad():
            for p in m.parameters():
                std = float(p.std()) if p.numel() > 1 else float(p.abs().mean())
                # drawn on the CPU (the same probes on every device), added on p's
                p.add_(_on(torch.randn(p.shape, generator=gen) * (std or 1.0), p))
    return m


#: the busy-coordinate warning: the median canary's reading shifted by real data by more
#: than this (units of C per step; the noise's standard deviation is sigma C)
SHIFT_WARN = 0.2


def real_data_shift(plan: CanaryPlan, activity: np.ndarray, batch_size: float,
                    probes: int = 4) -> np.ndarray:
    """Upper estimate of how far real data moves each canary's reading per step, in units of
    C: B sum_j |w_ij| sqrt(a(c_ij) / probes), with a the summed activity of
    :func:`coordinate_activity` (mean squared clipped per-example gradient over ``probes``
    parameter settings) and B the expected batch size.  By Cauchy-Schwarz |E g_c| <=
    sqrt(E g_c^2), so B examples' gradients, when they agree in sign (a coherent drift,
    which adds up over steps while the noise does not), shift the reading by at most this.
    An estimate for the warning only; the audit's validity never rests on it."""
    w = np.abs(np.asarray(plan.read_weights, dtype=float))
    a = np.asarray(activity, dtype=float)[plan.read_coords]
    return batch_size * (w * np.sqrt(a / probes)).sum(axis=1)


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
    return least_active(act, n, rng)


#: one tensor's sparse planting at one step (:meth:`GradientCanaries._cells`)
_Cell = tuple[int, np.ndarray, np.ndarray, "np.ndarray | None",
              "tuple[torch.Tensor, torch.Tensor] | None"]


class GradientCanaries:
    """Planted gradient canaries in an Opacus ``DPOptimizer`` (see module docstring).

    The idealised canary: the auditor writes each sampled canary's per-example gradient
    straight into Opacus's per-sample gradients, with its own Poisson coin, so the canaries
    are blind to the user's data loader, sampler, batch sizes and normalisation (use
    :class:`~dpaudit.training.examples.ExampleCanaries` to audit those).  The plan -- bits,
    shapes, planted and read coordinates -- is :class:`dpaudit.canaries.CanaryPlan`; the
    scores are :mod:`dpaudit.canaries.scores`'.

    Args:
      params: the model's trainable parameters (coordinate space; see
        :func:`dpaudit.training.models.trainable_parameters`).
      coordinates: Dirac canaries: canary i's flat coordinate c(i) (distinct); or None with
        ``plan``.
      bits: canary i's secret bit (included iff True); or None with ``plan``.
      sampling_rate: Poisson rate q at which an included canary is sampled each step.
      max_grad_norm: the clip norm C (the observation unit).
      scale: Dirac canaries' gradient norm in units of C (>= 1).
      seed: randomness of the canaries' own Poisson sampling.
      plan: a :class:`~dpaudit.canaries.CanaryPlan` (any shapes) instead of coordinates/bits.

    After :meth:`attach`, every optimizer step records, per canary, the released update's
    reading in canary units, y_{t,i} = <g~_t, w_i> / C with g~_t the noisy clipped gradient
    *sum* (Opacus's ``p.grad`` times the expected batch size under ``loss_reduction="mean"``)
    -- only sufficient statistics (:class:`~dpaudit.canaries.WhiteBoxAccumulator`) -- and the
    run's facts for the claim checks (:meth:`facts`).
    """

    def __init__(self, params: Sequence[nn.Parameter], coordinates: np.ndarray | None = None,
                 bits: np.ndarray | None = None, *, sampling_rate: float,
                 max_grad_norm: float, scale: float = 1000.0, seed: int = 0,
                 plan: CanaryPlan | None = None) -> None:
        self.params = list(params)
        self.layout = Layout.from_sizes([p.numel() for p in self.params])
        q = check_probability("sampling_rate", sampling_rate, open_low=True)
        if plan is None:
            if coordinates is None or bits is None:
                raise ValueError("give coordinates and bits, or a plan")
            plan = dirac_plan(coordinates, bits, sampling_rate=q, scale=scale)
        elif coordinates is not None or bits is not None:
            raise ValueError("give coordinates and bits, or a plan, not both")
        self.layout.tensor_of(plan.plant_coords)  # range check
        self.layout.tensor_of(plan.read_coords)
        self.plan = plan
        self.bits = plan.bits
        self.coordinates = plan.read_coords[:, 0]
        self.q = q
        self.clip = check_positive("max_grad_norm", max_grad_norm)
        self.scale = float(scale)
        self._rng = stream(seed, "canary_sampling")
        self.n = plan.n
        self._reader = ReleaseReader(plan, max_grad_norm=self.clip, sampling_rate=q,
                                     layout=self.layout)
        self._acc = self._reader.accumulator
        self._reads = _ReadIndex(self.layout, self._reader.distinct, self._reader.inverse,
                                 plan.read_coords.shape)
        self._theta0 = self._gather_read(lambda p: p.detach())
        self._plant_t, self._plant_local = self.layout.split(plan.plant_coords)
        self._merged = _merge_repeats(plan.plant_coords, plan.plant_values) * self.clip
        self._norms = np.zeros(self.n)      # the planted vectors' norms (set by attach)
        # steps drawn or read at once (STEP_BLOCK, fewer for many canaries: 8 MiB a block)
        self._block = max(1, min(STEP_BLOCK, (1 << 20) // max(1, plan.read_coords.size,
                                                              self.n)))
        self._coins = np.zeros((0, self.n), dtype=bool)
        self._coin_row = 0
        # the coin block's sampled canaries, row r's at [_starts[r], _starts[r + 1])
        self._block_active = np.zeros(0, dtype=np.int64)
        self._starts: list[int] = [0]
        self._drawn = np.zeros(0, dtype=np.int64)    # the array the last _draw returned
        # the block's sparse planting (:meth:`_cells`), made at the first step that plants,
        # for the clip norm it was made with
        self._cells_block: list[list[_Cell]] | None = None
        self._cells_clip = float("nan")
        # the unread steps' read values, tensor-ordered (:class:`_ReadIndex`), with their
        # unit factor, sigma and planted canaries
        self._read_buf = np.empty((self._block, self._reads.size))
        # reads gathered on another device and not yet brought over: (buffer row, parts)
        self._deferred: list[tuple[np.ndarray, list[tuple[int, int, torch.Tensor]]]] = []
        self._unread: list[tuple[float, float, np.ndarray]] = []
        self._sparse = False
        self._active = np.zeros(0, dtype=np.int64)   # the canaries planted at this step
        self._pending = False
        self._optimizer: object | None = None
        self._batch_sizes: list[int] = []
        self._sigmas: list[float] = []
        self._clips: list[float] = []

    @classmethod
    def for_model(cls, model: nn.Module, x: torch.Tensor, y: torch.Tensor, n: int, *,
                  sampling_rate: float, max_grad_norm: float, seed: int = 0,
                  scale: float = 1000.0, shapes: Mapping[str, float] | str = DEFAULT_SHAPES,
                  spread: int = 5, per_tensor: int = 2,
                  rho: float | None = None, sentinel: float = SENTINEL,
                  activity_examples: int | None = ACTIVITY_EXAMPLES) -> GradientCanaries:
        """n canaries for ``model``, read on its least active coordinates measured on (x, y)
        (:func:`coordinate_activity` on a seeded sample of ``activity_examples`` per-example
        gradients; None: the four probes on every example, the full measurement at about
        ``4 / sampling_rate`` batches of per-example gradients), i.i.d. uniform secret bits,
        all drawn from ``seed``.

        The default ``shapes`` mix Dirac canaries (tightest) with canaries spread over
        several tensors and several coordinates of one tensor (they expose per-tensor
        clipping and wrong norms; :mod:`dpaudit.canaries.plan`); each spread canary also
        holds a small ``sentinel`` share on a coordinate of a tensor its main part does not
        use, spread over every trainable tensor, biases and norms included (it sees
        unclipped biases and per-tensor clipping).
        Warns, with the remedy, when real data moves the read coordinates.  Call before
        ``make_private`` or after (the parameters are the same tensors)."""
        rng = np.random.default_rng(seed_sequence(seed, "input_canaries"))
        params = trainable_parameters(model)
        if not params:
            raise ValueError("model has no trainable parameters (requires_grad) to plant "
                             "gradient canaries in")
        act = coordinate_activity(model, x, y, max_grad_norm, seed=seed,
                                  examples=activity_examples)
        plan = plan_gradient_canaries(Layout.from_sizes([p.numel() for p in params]), act, n,
                                      sampling_rate=sampling_rate, rng=rng, shapes=shapes,
                                      scale=scale, spread=spread, per_tensor=per_tensor,
                                      rho=rho, sentinel=sentinel)
        shift = float(np.median(real_data_shift(plan, act, sampling_rate * x.shape[0])))
        if shift > SHIFT_WARN:
            warnings.warn(
                f"the canaries are read on coordinates that real data moves: per step real "
                f"gradients shift the median canary's reading by up to ~ {shift:.3g} C "
                f"(estimate; the noise has standard deviation sigma C), a drift that adds up "
                f"over steps and that the audit cannot remove, so the bound falls towards 0 "
                f"(dense models: {int(np.count_nonzero(act == 0))} coordinates here are "
                f"untouched by every example).  Remedy: wrap the model in a CanaryBranch "
                f"before make_private (dpaudit.training.with_canary_branch(model, n), or "
                f"canary_branch_if_needed(model, x, y, n), which wraps only a model short "
                f"of silent coordinates: coordinates no example moves), reserve input "
                f"features that real data leaves at 0 (ReservedModel, ExampleCanaries; "
                f"docs/training.md), use fewer canaries, or rank the coordinates on every "
                f"example (activity_examples=None: more power on a dense model, for about "
                f"4 / sampling_rate batches of per-example gradients).", UserWarning,
                stacklevel=2)
        return cls(params, sampling_rate=sampling_rate, max_grad_norm=max_grad_norm,
                   scale=scale, seed=seed, plan=plan)

    # -- coordinate helpers ------------------------------------------------------------------
    def _gather_read(self, get: Callable[[nn.Parameter], torch.Tensor | None]) -> np.ndarray:
        """(n, k) values at the canaries' read coordinates (zeros where ``get`` is None)."""
        return self._reads.gather(self.params, get)

    def _gather(self, get: Callable[[nn.Parameter], torch.Tensor | None]) -> np.ndarray:
        """(n,) readings of a parameter-shaped quantity (``get(p)``) along each canary's read
        direction."""
        return self.plan.read(self._gather_read(get))

    # -- Opacus integration --------------------------------------------------------------------
    def attach(self, optimizer: object) -> GradientCanaries:
        """Plant into ``optimizer`` (an Opacus DPOptimizer, e.g. from ``make_private``).

        Wraps ``optimizer.clip_and_accumulate`` (Opacus's stock clipping: the canaries'
        clipped gradients are added sparsely after it, :meth:`_add_clipped`; an overridden
        ``clip_and_accumulate``: canary rows are appended to ``p.grad_sample`` of the
        optimizer's parameters just before it clips them, :meth:`_plant`; for trainable model
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
        self._sparse = _stock_clipping(optimizer)
        self._all_dp = bool(self._dp[self._plant_t.ravel()].all())
        # |v| of each planted vector over the optimizer's tensors (its clipping norm)
        sq = self._merged * self._merged
        if not self._all_dp:
            sq = np.where(self._dp[self._plant_t], sq, 0.0)
        self._norms = np.sqrt(sq.sum(axis=1))

        def first_clip(original_clip: Callable[[], None]) -> None:
            active = self._draw()
            self._active = active
            if self._sparse and np.ndim(optimizer.max_grad_norm) == 0:
                original_clip()
                self._add_clipped(optimizer, active)
            else:
                self._plant(optimizer, active)
                original_clip()

        hook_dp_optimizer(optimizer, self, first_clip)
        return self

    def _batch_unit(self, opt: object) -> float:
        """Divisor Opacus applies to the clipped sum (expected batch size for "mean")."""
        return _batch_unit(opt)

    def _draw(self) -> np.ndarray:
        """This step's sampled included canaries (each included canary w.p. q).  The coins
        of the next :data:`STEP_BLOCK` steps are drawn at once: ``rng.random((B, n))`` is
        the stream of B successive ``rng.random(n)``, so the draws are those of one call
        per step (tested)."""
        if self._coin_row >= self._coins.shape[0]:
            self._coins = (self._rng.random((self._block, self.n)) < self.q) & self.bits
            self._coin_row = 0
            rows, self._block_active = np.nonzero(self._coins)
            self._starts = np.searchsorted(rows, np.arange(self._block + 1)).tolist()
            self._cells_block = None
        r = self._coin_row
        self._coin_row += 1
        self._drawn = self._block_active[self._starts[r]:self._starts[r + 1]]
        return self._drawn

    def _cells(self, active: np.ndarray, starts: Sequence[int],
               clip: float) -> list[list[_Cell]]:
        """The sparse planting of some steps (:meth:`_add_clipped`): step r planted the
        canaries ``active[starts[r]:starts[r + 1]]``; per step, per optimizer tensor that
        gets a cell, (tensor, local coordinates, clipped values in float64, the same
        rounded to the parameters' dtype or None), the cells in the order of the sampled
        canaries and their slots.  Each canary's clipped gradient is Opacus's rule
        ``v * min(1, clip / (|v| + 1e-6))``; the rounding to float32 (or float64), which
        :meth:`_add_clipped` would otherwise do per tensor and step, is done once for the
        block when the optimizer's tensors share that dtype."""
        factor = np.minimum(clip / (self._norms[active] + 1e-6), 1.0)
        vals = (self._merged[active] * factor[:, None]).ravel()
        m = self._plant_t.shape[1]
        step = np.repeat(np.arange(len(starts) - 1), np.diff(starts) * m)
        key = step * len(self.params) + self._plant_t[active].ravel()
        order = np.argsort(key, kind="stable")
        key, vals = key[order], vals[order]
        local = self._plant_local[active].ravel()[order]
        dtype = self._plant_dtype()
        cast = None if dtype is None else vals.astype(dtype)
        first = np.flatnonzero(np.diff(key, prepend=-1))   # key is sorted: its groups
        groups, ends = key[first], np.append(first[1:], key.size)
        out: list[list[_Cell]] = [[] for _ in starts[1:]]
        on_device = self._block_on_devices(local, vals)
        for g, a, b in zip(groups.tolist(), first.tolist(), ends.tolist(), strict=True):
            r, j = divmod(g, len(self.params))
            if self._dp[j]:
                pair = on_device.get(self.params[j].device)
                out[r].append((j, local[a:b], vals[a:b], None if cast is None else cast[a:b],
                               None if pair is None else (pair[0][a:b], pair[1][a:b])))
        return out

    def _block_on_devices(self, local: np.ndarray, vals: np.ndarray
                          ) -> dict[torch.device, tuple[torch.Tensor, torch.Tensor]]:
        """A block's planting indices and values copied once to each device other than the
        CPU that holds an optimizer tensor (values in that device's tensors' dtype when they
        share one, else float32): the steps then slice them there instead of copying each
        cell's to the device at every step."""
        devices: dict[torch.device, set[torch.dtype]] = {}
        for p, dp in zip(self.params, self._dp, strict=True):
            if dp and p.device.type != "cpu":
                devices.setdefault(p.device, set()).add(p.dtype)
        out = {}
        for dev, dtypes in devices.items():
            dtype = dtypes.pop() if len(dtypes) == 1 else torch.float32
            out[dev] = (torch.from_numpy(local).to(dev),
                        torch.from_numpy(vals).to(dtype).to(dev))
        return out

    def _plant_dtype(self) -> type | None:
        """The NumPy dtype the optimizer's tensors share, float32 or float64 (else None):
        :meth:`_cells` rounds a block's planted values to it once."""
        kinds = {p.dtype for p, dp in zip(self.params, self._dp, strict=True) if dp}
        return ({torch.float32: np.float32, torch.float64: np.float64}.get(kinds.pop())
                if len(kinds) == 1 else None)

    def _add_clipped(self, opt: object, active: np.ndarray) -> None:
        """Sparse planting for Opacus's stock clipping (:func:`_stock_clipping`): each
        sampled canary's clipped gradient, computed with Opacus's own rule
        ``v * min(1, C / (|v| + 1e-6))`` (``DPOptimizer.clip_and_accumulate``, C the
        optimizer's ``max_grad_norm`` at this step, |v| the L2 norm over the optimizer's
        tensors), is added to ``p.summed_grad`` at the canary's few coordinates -- the sum
        Opacus would form from dense canary rows, without rows of full parameter size
        (``benchmarks/training_overhead.py``).  The cells of a block of steps are arranged
        at once (:meth:`_cells`, made again if C changes), so a step adds one slice per
        tensor.  Coordinates on parameters outside the optimizer get the unclipped
        gradient, as in :meth:`_plant`."""
        clip = float(opt.max_grad_norm)
        if active is self._drawn:          # this step of the coin block
            if self._cells_block is None or clip != self._cells_clip:
                self._cells_block = self._cells(self._block_active, self._starts, clip)
                self._cells_clip = clip
            cells = self._cells_block[self._coin_row - 1]
        else:
            cells = self._cells(active, [0, active.size], clip)[0]
        for j, local, vals, cast, on_device in cells:            # tensors, not canaries
            p = self.params[j]
            sg = p.summed_grad
            if not sg.is_contiguous():
                sg = p.summed_grad = sg.contiguous()
            if _fast_cpu(sg):
                # NumPy's unbuffered add on the sum's memory, the values rounded to its dtype
                # first (once per block, :meth:`_cells`): index_add_'s sums, in its order
                # (canaries may share a coordinate)
                view = sg.numpy().reshape(-1)
                if cast is None or cast.dtype != view.dtype:
                    cast = vals.astype(view.dtype)
                np.add.at(view, local, cast)
                continue
            # index and values on the sum's device (index_add_ wants both there): the
            # block's copy there (:meth:`_block_on_devices`), else copied now
            if on_device is not None and on_device[0].device == sg.device:
                idx, v = on_device
                sg.view(-1).index_add_(0, idx, v if v.dtype == sg.dtype else v.to(sg.dtype))
                continue
            sg.view(-1).index_add_(0, _on(torch.from_numpy(local), sg),
                                   _on(torch.from_numpy(vals), sg, cast=True))
        if not self._all_dp:
            self._bypass(opt, self._plant_t[active], self._plant_local[active],
                         self.plan.plant_values[active] * self.clip)

    def _bypass(self, opt: object, t: np.ndarray, local: np.ndarray,
                vals: np.ndarray) -> None:
        """Trainable parameters outside the DP optimizer: the canary example's gradient
        reaches them unclipped and without noise, as backprop would put it."""
        for j in np.unique(t[~self._dp[t]]):
            p = self.params[j]
            sel = t == j
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            upd = torch.zeros(p.numel(), dtype=torch.float64)
            upd.index_put_((torch.from_numpy(local[sel]),),
                           torch.from_numpy(vals[sel]) / self._batch_unit(opt),
                           accumulate=True)
            p.grad.add_(_on(upd, p, cast=True).view_as(p))

    def _plant(self, opt: object, active: np.ndarray) -> None:
        """Dense planting for an optimizer with its own clipping (a ``DPOptimizer``
        subclass that overrides ``clip_and_accumulate``): one per-example gradient row per
        sampled canary appended to ``p.grad_sample``, so the optimizer's code clips it
        together with the real batch."""
        k = active.size
        coords = self.plan.plant_coords[active]
        vals = torch.from_numpy(self.plan.plant_values[active] * self.clip)
        t, local = self.layout.split(coords)
        rows_of = np.broadcast_to(np.arange(k)[:, None], coords.shape)
        for j, p in enumerate(self.params):
            sel = t == j
            if self._dp[j]:
                flat = opt._get_flat_grad_sample(p)
                rows = torch.zeros((k, p.numel()), dtype=flat.dtype, device=flat.device)
                if sel.any():
                    rows.index_put_((_on(torch.from_numpy(rows_of[sel]), rows),
                                     _on(torch.from_numpy(local[sel]), rows)),
                                    _on(vals[torch.from_numpy(sel)], rows, cast=True),
                                    accumulate=True)
                p.grad_sample = torch.cat([flat, rows.view(k, *p.shape)], dim=0)
        self._bypass(opt, t, local, self.plan.plant_values[active] * self.clip)

    def _record(self, opt: object) -> None:
        """The step hook's work: read the released step (never raises on a step with
        sigma = 0: it is scored and reported, :meth:`facts`).  The values are kept
        tensor-ordered, unscaled, until the block is handed to the reader."""
        defer: list[tuple[int, int, torch.Tensor]] = []
        row = self._read_buf[len(self._unread)]
        self._reads.gather_into(row, self.params, lambda p: p.grad, defer)
        if defer:                           # read on the device, brought over per block
            self._deferred.append((row, defer))
        sigma = float(opt.noise_multiplier)
        self._unread.append((self._batch_unit(opt) / self.clip, sigma, self._active))
        if len(self._unread) >= self._block:
            self._flush()
        self._active = np.zeros(0, dtype=np.int64)
        self._sigmas.append(sigma)
        self._clips.extend(_clip_norms(opt))

    def _flush(self) -> None:
        """Hand the recorded steps to the reader, in order, in one call
        (:meth:`ReleaseReader.add_steps`).  The step hook keeps up to :data:`STEP_BLOCK`
        steps' readings and hands them over together: the reader's statistics run once per
        block, vectorised over its steps and with warm caches, instead of between the
        training's own work (where each NumPy call costs several times more); every
        accessor of the results flushes first."""
        b = len(self._unread)
        if not b:
            return
        if self._deferred:
            _fill_deferred(self._deferred)
            self._deferred.clear()
        unit = np.array([u for u, _, _ in self._unread])
        planted = np.zeros((b, self.n), dtype=bool)
        actives = [a for _, _, a in self._unread]
        planted[np.repeat(np.arange(b), [a.size for a in actives]),
                np.concatenate(actives)] = True
        self._reader.add_distinct_steps(self._read_buf[:b], [s for _, s, _ in self._unread],
                                        planted, unit=unit)
        self._unread.clear()

    # -- what was recorded ---------------------------------------------------------------------
    @property
    def steps(self) -> int:
        return self._acc.steps + len(self._unread)

    @property
    def sum(self) -> np.ndarray:
        """sum_t y_{t,i}: the summed readings in units of C."""
        self._flush()
        return self._acc.sum

    @property
    def lr_sum(self) -> np.ndarray:
        self._flush()
        return self._acc.lr_sum

    def white_box_scores(self, kind: str = "lr") -> np.ndarray:
        """Scores from every released step (higher = bit 1), from
        :meth:`dpaudit.canaries.WhiteBoxAccumulator.scores`:

        * ``"lr"``: s_i = sum_t log(1 - q + q exp((a_i y_{t,i} - a_i^2/2) / sigma^2)), the
          optimal likelihood-ratio score when real data leaves the coordinate alone;
        * ``"sum"``: s_i = a_i sum_t y_{t,i} - q T a_i^2 / 2.
        """
        self._flush()
        return self._acc.scores(kind)

    def last_iterate_scores(self) -> np.ndarray:
        """Reading of theta_0 - theta_T (only the final model is released); for SGD this is
        lr/|B| C times the summed released readings."""
        return last_iterate_scores(self._theta0, self._gather_read(lambda p: p.detach()),
                                   self.plan.read_weights)

    def facts(self, dataset_size: int | None = None) -> RunFacts:
        """What the attached optimizer did (for :func:`dpaudit.canaries.check_claim`):
        steps, noise multipliers, clip norms, batch sizes (real examples, before the planted
        canaries), the normalisation divisor."""
        opt = self._optimizer
        red = "mean" if opt is None else getattr(opt, "loss_reduction", "mean")
        # the run's divisor is the optimizer's expected batch size ("mean"); not
        # ``_batch_unit``, whose accumulation count Opacus reads from the per-sample gradients
        # and which raises once ``zero_grad(set_to_none=True)`` has cleared them
        unit = (None if opt is None or red != "mean"
                else float(getattr(opt, "expected_batch_size", float("nan"))))
        return RunFacts(steps=self.steps,
                        noise_multipliers=tuple(dict.fromkeys(self._sigmas)),
                        max_grad_norms=tuple(dict.fromkeys(self._clips)),
                        batch_sizes=np.asarray(self._batch_sizes, dtype=np.int64),
                        expected_batch_size=unit,
                        dataset_size=dataset_size, loss_reduction=red,
                        **self.noise_record())

    def noise_record(self) -> dict[str, Any]:
        """The released-noise readings of the run so far, as :class:`RunFacts` fields
        (``noise_sum_squares``, ``noise_coordinates``, ``noise_unit``,
        ``step_noise_multipliers``; :class:`dpaudit.canaries.ReleaseReader`)."""
        self._flush()
        return self._reader.noise_record()


def _stock_clipping(opt: object) -> bool:
    """True when ``opt`` clips with Opacus's own flat per-example clipping: its
    ``clip_and_accumulate`` is ``DPOptimizer``'s, not overridden by a subclass or replaced on
    the instance.  Only then is the canaries' clipped gradient computed sparsely
    (:meth:`GradientCanaries._add_clipped`); any other clipping code receives dense rows."""
    from opacus.optimizers import DPOptimizer

    return getattr(opt.clip_and_accumulate, "__func__", None) is DPOptimizer.clip_and_accumulate


def _merge_repeats(coords: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Planted values with repeated coordinates of a row summed into the first slot (0 in
    the repeats): the values of the vector the integrations write (n, m)."""
    c = np.asarray(coords)
    v = np.asarray(values, dtype=float)
    same = c[:, :, None] == c[:, None, :]
    total = np.einsum("ijk,ik->ij", same, v)
    first = ~np.tril(same, k=-1).any(axis=2)
    return np.where(first, total, 0.0)


def _batch_unit(opt: object) -> float:
    """Divisor Opacus applies to the clipped sum (expected batch size for "mean")."""
    if getattr(opt, "loss_reduction", "mean") == "mean":
        return float(opt.expected_batch_size * max(1, opt.accumulated_iterations))
    return 1.0


def hook_dp_optimizer(optimizer: Any, canaries: Any,
                      first_clip: Callable[[Callable[[], None]], None]) -> None:
    """Wrap an Opacus ``DPOptimizer`` for canaries (``GradientCanaries``, ``ExampleCanaries``):
    at the first ``clip_and_accumulate`` of each step the batch size is recorded in
    ``canaries._batch_sizes`` and ``first_clip(original_clip)`` runs (it must call
    ``original_clip`` once); later calls of the step (gradient accumulation) clip only; the
    step hook calls ``canaries._record(opt)`` before any hook already set."""
    original_clip = optimizer.clip_and_accumulate
    previous_hook = optimizer.step_hook

    def clip_and_accumulate() -> None:
        if canaries._pending:
            original_clip()
            return
        canaries._batch_sizes.append(_batch_size(optimizer))
        canaries._pending = True
        first_clip(original_clip)

    def step_hook(opt: Any) -> None:
        canaries._record(opt)
        canaries._pending = False
        if previous_hook is not None:
            previous_hook(opt)

    optimizer.clip_and_accumulate = clip_and_accumulate
    optimizer.step_hook = step_hook


def _batch_size(opt: object) -> int:
    """Examples in the current batch (rows of the per-sample gradients)."""
    p = opt.params[0]
    return int(opt._get_flat_grad_sample(p).shape[0])


def _clip_norms(opt: object) -> list[float]:
    c = opt.max_grad_norm
    return [float(v) for v in c] if isinstance(c, (list, tuple)) else [float(c)]


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
        return self.x[_on(keep, self.x)], self.y[_on(keep, self.y)]


def make_input_canaries(x_pool: torch.Tensor, y_pool: torch.Tensor, n: int, *, kind: str,
                        rng: np.random.Generator, num_classes: int = 10) -> InputCanaries:
    """n input canaries drawn from ``x_pool`` (real images) or generated (``"ood"``), with
    their secret bits (see module docstring)."""
    check_choice("canary kind", kind, INPUT_CANARY_KINDS)
    n = check_count("canaries", n, minimum=2)
    bits = draw_bits(n, rng)
    idx = rng.integers(0, x_pool.shape[0], size=n)
    if kind == "ood":
        x = _on(torch.from_numpy(rng.random((n, *x_pool.shape[1:])).astype(np.float32)), x_pool)
    else:
        x = x_pool[_on(torch.from_numpy(idx), x_pool)].clone()
    if kind == "flip":
        shift = _on(torch.from_numpy(rng.integers(1, num_classes, size=n)), y_pool)
        y = (y_pool[_on(torch.from_numpy(idx), y_pool)] + shift) % num_classes
    else:
        y = _on(torch.from_numpy(rng.integers(0, num_classes, size=n)), y_pool)
    return InputCanaries(x, y.long(), bits, kind)
