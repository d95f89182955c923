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

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("one_thread")]


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
