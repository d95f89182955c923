"""Device and dtype placement of the canaries' tensors (dpaudit.training.canaries).

The canaries' own tensors are made on the CPU from NumPy and meet the model's parameters and
gradients wherever those live; every crossing goes through ``_on`` / ``_numpy``.  No GPU runs
here: these tests pin the helpers on the CPU and run the planting and reading paths (sparse:
Opacus's stock clipping; dense: an optimizer with its own clipping) on a float64 model, where
a tensor left in the wrong dtype fails just as a tensor left on the wrong device does on CUDA.
"""

from __future__ import annotations

import numpy as np
import pytest

from needs import need

pytestmark = [pytest.mark.slow, pytest.mark.torch,  # torch + Opacus import (seconds)
              pytest.mark.usefixtures("one_thread")]


@pytest.fixture(autouse=True, scope="module")
def _frameworks() -> None:
    global torch, nn
    torch = need("torch")
    need("opacus")
    from torch import nn


def test_on_moves_only_what_it_must() -> None:
    from dpaudit.training.canaries import _model_device, _numpy, _on, _PerDevice

    t = torch.arange(4, dtype=torch.float64)
    like = torch.zeros(2, dtype=torch.float32)
    assert _on(t, like) is t                              # same device: no copy, no cast
    c = _on(t, like, cast=True)
    assert c.dtype == torch.float32 and c.tolist() == [0.0, 1.0, 2.0, 3.0]
    g = torch.tensor([0.5, -1.25], requires_grad=True) * 2
    a = _numpy(g)                                         # detached, float64, on the CPU
    assert a.dtype == np.float64 and a.tolist() == [1.0, -2.5]
    idx = _PerDevice(torch.tensor([2, 0]))
    assert idx.on(torch.device("cpu")) is idx.cpu        # cached, never copied on the CPU
    assert _model_device(nn.Linear(2, 2)) == torch.device("cpu")
    assert _model_device(nn.ReLU()) == torch.device("cpu")  # no parameter: the CPU


def _float64_run(dense: bool) -> tuple[object, np.ndarray, float]:
    """Dirac canaries on the first-layer weights fed by two always-zero inputs of a float64
    MLP, sigma = 0, one empty Poisson batch among the steps; returns the canaries, the
    expected summed readings (the canaries' own Poisson draws replayed) and lr C / B."""
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    from dpaudit.randomness import stream
    from dpaudit.training.canaries import GradientCanaries
    from dpaudit.training.flaws import PerTensorClippingOptimizer
    from dpaudit.training.trainer import dp_steps

    gen = torch.Generator().manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 3)).double()
    x = torch.randn(40, 8, generator=gen, dtype=torch.float64)
    x[:, :2] = 0.0                                        # weights W[:, 0:2] never move
    y = torch.randint(0, 3, (40,), generator=gen)
    coords = np.array([r * 8 + c for r in range(4) for c in (0, 1)])
    bits = np.array([True, False] * 4)
    params = [p for p in model.parameters()]
    q, lr, clip, unit, seed = 0.5, 0.1, 1.0, 10, 3
    planter = GradientCanaries(params, coords, bits, sampling_rate=q, max_grad_norm=clip,
                               seed=seed)
    gsm = GradSampleModule(model, loss_reduction="mean")
    cls = PerTensorClippingOptimizer if dense else DPOptimizer
    opt = cls(torch.optim.SGD(params, lr=lr), noise_multiplier=0.0, max_grad_norm=clip,
              expected_batch_size=unit, loss_reduction="mean")
    planter.attach(opt)
    batches = [(x[:10], y[:10]), (x[:0], y[:0]), (x[10:25], y[10:25]), (x[25:], y[25:])]

    def backward(batch: tuple) -> None:
        nn.functional.cross_entropy(gsm(batch[0]), batch[1]).backward()

    sizes, _ = dp_steps(batches, len(batches), backward, opt, gsm, params)
    assert sizes == [10, 0, 15, 15]
    assert all(p.dtype == torch.float64 for p in model.parameters())
    draws = stream(seed, "canary_sampling")
    expected = sum((draws.random(bits.size) < q) & bits for _ in batches).astype(float)
    return planter, expected, lr * clip / unit


@pytest.mark.parametrize("dense", [False, True], ids=["stock_clipping", "own_clipping"])
def test_float64_model_plants_and_reads_exactly(dense: bool) -> None:
    """sigma = 0 and silent coordinates: each sampled canary reads C (1 in units of C) up to
    Opacus's 1e-6 in the clip factor, 1000 C * C / (1000 C + 1e-6); a member never sampled
    reads 0 and a non-member always 0 -- on a float64 model, empty batch included."""
    planter, expected, step = _float64_run(dense)
    assert expected[1::2].sum() == 0 and expected.sum() > 0
    np.testing.assert_allclose(planter.sum, expected, rtol=1e-8, atol=1e-12)
    # the last iterate: theta_0 - theta_T = lr C / B x the summed readings (plain SGD)
    np.testing.assert_allclose(planter.last_iterate_scores(), step * expected, rtol=1e-8,
                               atol=1e-12)
    assert planter.steps == 4


# -- an emulated second device -----------------------------------------------------------
# No GPU here, and PyTorch ships no test backend for a second device.  ``_emulation()``
# builds one from a wrapper tensor subclass: an ``Elsewhere`` tensor holds CPU values but
# reports device ``meta`` (so no CUDA code is reached); a dispatch mode runs every operation on
# the CPU values and refuses, as CUDA does, any operation that mixes an ``Elsewhere`` tensor
# with a CPU tensor that is not a scalar -- except integer / boolean *index* tensors of
# indexing and ``index_put_``, which PyTorch accepts on the CPU.  ``.to(device)`` to and from
# the emulated device moves values across; ``.numpy()`` of an ``Elsewhere`` tensor fails as
# it fails on a CUDA tensor.  This checks placement, not CUDA kernels.
def _emulation() -> tuple[type, type]:
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_map

    aten = torch.ops.aten
    dev = torch.device("meta")
    index_ops = {aten.index.Tensor, aten.index_put_.default, aten.index_put.default,
                 aten._index_put_impl_.default}

    class Elsewhere(torch.Tensor):
        inner: torch.Tensor

        @staticmethod
        def __new__(cls, inner: torch.Tensor) -> Elsewhere:
            return torch.Tensor._make_wrapper_subclass(  # type: ignore[attr-defined]
                cls, inner.shape, strides=inner.stride(), dtype=inner.dtype, device=dev,
                requires_grad=inner.requires_grad)

        def __init__(self, inner: torch.Tensor) -> None:
            self.inner = inner

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            with Emulated():
                return func(*args, **(kwargs or {}))

    class Emulated(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            kwargs = dict(kwargs or {})
            if func is aten._to_copy.default:
                (src,) = args
                target = kwargs.pop("device", None)
                out = func(src.inner if isinstance(src, Elsewhere) else src, **kwargs)
                there = (torch.device(target) == dev if target is not None
                         else isinstance(src, Elsewhere))
                return Elsewhere(out) if there else out
            tensors: list = []
            tree_map(lambda a: tensors.append(a) if isinstance(a, torch.Tensor) else None,
                     (args, kwargs))
            elsewhere = any(isinstance(a, Elsewhere) for a in tensors)
            if kwargs.get("device") is not None and torch.device(kwargs["device"]) == dev:
                kwargs["device"], elsewhere = torch.device("cpu"), True
            if elsewhere:
                for i, a in enumerate(tensors):
                    if isinstance(a, Elsewhere) or a.dim() == 0:
                        continue
                    if func in index_ops and i > 0 and not a.is_floating_point():
                        continue
                    raise RuntimeError(f"{func}: expected all tensors on one device, got "
                                       f"{dev} and cpu")
            inner_of: dict[int, torch.Tensor] = {}

            def unwrap(a: object) -> object:
                if isinstance(a, Elsewhere):
                    inner_of[id(a.inner)] = a
                    return a.inner
                return a

            out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs))
            if not elsewhere:
                return out

            def wrap(o: object) -> object:
                if not isinstance(o, torch.Tensor):
                    return o
                w = inner_of.get(id(o))               # an in-place op returns its input
                return w if w is not None else Elsewhere(o)

            return tree_map(wrap, out)

    return Elsewhere, Emulated


def test_emulation_refuses_what_cuda_refuses() -> None:
    elsewhere, emulated = _emulation()
    with emulated():
        a = elsewhere(torch.zeros(6))
        idx, v = torch.tensor([1, 2]), torch.tensor([1.0, 2.0])
        with pytest.raises(RuntimeError, match="one device"):
            a.index_add_(0, idx, v)                       # CPU index and values
        with pytest.raises(RuntimeError, match="one device"):
            a.index_put_((idx,), v, accumulate=True)      # CPU values
        with pytest.raises(RuntimeError, match="one device"):
            a.add_(torch.ones(6))
        with pytest.raises(RuntimeError, match="numpy"):
            a[idx].numpy()
        a.index_put_((idx,), v.to(a.device), accumulate=True)   # CPU index: accepted
        assert a.device == torch.device("meta") and float(a.sum()) == 3.0
        assert a.cpu().tolist() == [0.0, 1.0, 2.0, 0.0, 0.0, 0.0]


def _step_three_times(emulate: bool, variant: str) -> tuple[np.ndarray, np.ndarray, list]:
    """Gradient canaries on a two-tensor float64 model whose per-sample gradients are given
    (no model, no autograd): three optimizer steps, sigma = 0; the model's tensors on the CPU
    or on the emulated device.  ``variant``: Opacus's stock clipping (sparse planting), an
    optimizer with its own clipping (dense rows), or the bias outside the DP optimizer
    (the canary's gradient bypasses it)."""
    from opacus.optimizers import DPOptimizer

    from dpaudit.training.canaries import GradientCanaries
    from dpaudit.training.flaws import PerTensorClippingOptimizer

    elsewhere, emulated = _emulation()
    gen = torch.Generator().manual_seed(1)
    base = [torch.randn(4, 3, generator=gen, dtype=torch.float64),
            torch.randn(3, generator=gen, dtype=torch.float64)]
    grads = [[torch.randn(5, *b.shape, generator=gen, dtype=torch.float64) for b in base]
             for _ in range(3)]
    put = elsewhere if emulate else (lambda t: t)
    with emulated() if emulate else torch.no_grad():
        params = [put(b.clone().requires_grad_()) for b in base]
        planter = GradientCanaries(params, np.array([0, 5, 13, 2]),
                                   np.array([True, True, False, True]), sampling_rate=0.7,
                                   max_grad_norm=1.0, seed=2)
        dp = params[:1] if variant == "bypass" else params
        cls = PerTensorClippingOptimizer if variant == "own_clipping" else DPOptimizer
        opt = cls(torch.optim.SGD(dp, lr=0.1), noise_multiplier=0.0, max_grad_norm=1.0,
                  expected_batch_size=5, loss_reduction="mean")
        planter.attach(opt)
        for g in grads:
            for p, gp in zip(dp, g, strict=False):
                p.grad_sample = put(gp.clone())
            opt.step()
            for p in dp:
                p.grad_sample = p.summed_grad = None
        last = planter.last_iterate_scores()
        out = [p.cpu().detach().clone() for p in params]
        out += [p.grad.cpu().clone() for p in params if p.grad is not None]
    return planter.sum, last, out


@pytest.mark.parametrize("variant", ["stock_clipping", "own_clipping", "bypass"])
def test_emulated_device_plants_and_reads_as_on_the_cpu(variant: str) -> None:
    """The same steps with the model's tensors on the emulated device: every canary tensor
    meets them there (else the emulation raises), and the readings, the last-iterate scores,
    the parameters and gradients are bit for bit the CPU run's."""
    cpu = _step_three_times(False, variant)
    moved = _step_three_times(True, variant)
    assert np.abs(cpu[0]).sum() > 0                 # the canaries were read
    np.testing.assert_array_equal(moved[0], cpu[0])
    np.testing.assert_array_equal(moved[1], cpu[1])
    assert len(moved[2]) == len(cpu[2])
    for a, b in zip(moved[2], cpu[2], strict=True):
        assert torch.equal(a, b)


def test_input_canaries_follow_the_pool_device() -> None:
    from dpaudit.training.canaries import make_input_canaries

    elsewhere, emulated = _emulation()
    gen = torch.Generator().manual_seed(0)
    x, y = torch.rand(30, 4, generator=gen), torch.randint(0, 10, (30,), generator=gen)
    for kind in ("flip", "random_label", "ood"):
        cpu = make_input_canaries(x, y, 8, kind=kind, rng=np.random.default_rng(5))
        with emulated():
            moved = make_input_canaries(elsewhere(x), elsewhere(y), 8, kind=kind,
                                        rng=np.random.default_rng(5))
            assert moved.x.device == moved.y.device == torch.device("meta")
            xin, yin = moved.included()
            got = [moved.x.cpu(), moved.y.cpu(), xin.cpu(), yin.cpu()]
        want = [cpu.x, cpu.y, *cpu.included()]
        for a, b in zip(got, want, strict=True):
            assert torch.equal(a, b)


def test_train_audit_device_option(capsys: pytest.CaptureFixture[str]) -> None:
    """``--device`` is an option of ``--model lm`` only; a device this machine lacks, or a
    name that is no device, is one error line before any training."""
    from dpaudit.cli import main

    assert main(["train-audit", "--model", "mlp", "--device", "cpu"]) == 2
    assert "--device apply to --model lm only" in capsys.readouterr().err
    assert main(["train-audit", "--model", "lm", "--device", "gpu"]) == 2
    assert "device" in capsys.readouterr().err
    if not torch.cuda.is_available():
        assert main(["train-audit", "--model", "lm", "--device", "cuda"]) == 2
        err = capsys.readouterr().err
        assert "device must be available on this machine; got 'cuda'" in err
