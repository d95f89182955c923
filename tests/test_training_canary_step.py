"""The step hook of :class:`dpaudit.training.GradientCanaries` against a direct reference.

The hook adds the sampled canaries' clipped gradients to Opacus's clipped sum sparsely,
tensor by tensor, and reads the released step at the canaries' read coordinates through one
gather per tensor.  Here the same three steps are recomputed densely in float64 from first
principles: per-example clipping of the given per-sample gradients (Opacus's rule
``g * min(1, C / (|g| + 1e-6))``), the canaries' own Poisson draws replayed from their seed
and their planted vectors clipped the same way, summed, divided by the expected batch size;
sigma = 0.  The plan spreads every canary over several tensors and has more cells than the
model has coordinates, so canaries share coordinates (the sums at a shared coordinate
accumulate) and every tensor holds read coordinates.
"""

from __future__ import annotations

import numpy as np
import pytest

from needs import need

pytestmark = [pytest.mark.slow, pytest.mark.torch,  # torch + Opacus import (seconds)
              pytest.mark.usefixtures("one_thread")]


@pytest.mark.parametrize("tensor_path", ["numpy", "torch"])
@pytest.mark.parametrize("block", [1, 2, 32])
def test_step_hook_plants_and_reads_as_a_dense_reference(block: int, tensor_path: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """``block``: the steps whose coins are drawn, and whose readings are handed to the
    reader, at once (STEP_BLOCK): one step, a block boundary inside the run, one partial
    block read when the results are asked for.  ``tensor_path``: NumPy on the tensors'
    memory (the CPU's float32 / float64), or the path of tensors NumPy cannot read (another
    device, another dtype): planting by ``index_add_``, reads by ``index_select`` held until
    the block is handed to the reader (``_fill_deferred``)."""
    torch = need("torch")
    need("opacus")
    from opacus.optimizers import DPOptimizer

    from dpaudit.canaries import Layout, plan_gradient_canaries
    from dpaudit.randomness import stream
    from dpaudit.training import canaries as module
    from dpaudit.training.canaries import GradientCanaries

    monkeypatch.setattr(module, "STEP_BLOCK", block)
    if tensor_path == "torch":
        monkeypatch.setattr(module, "_fast_cpu", lambda v: False)

    shapes = [(4, 3), (3,), (2, 4), (2,)]          # 12 + 3 + 8 + 2 = 25 coordinates
    sizes = [int(np.prod(s)) for s in shapes]
    q, clip, unit, seed, rows = 0.6, 1.0, 4, 5, 4
    rng = np.random.default_rng(0)
    plan = plan_gradient_canaries(Layout.from_sizes(sizes), np.zeros(sum(sizes)), 6,
                                  sampling_rate=q, rng=rng)
    used = plan.plant_coords[plan.plant_values != 0]
    assert np.unique(used).size < used.size        # canaries share coordinates
    assert len(np.unique(Layout.from_sizes(sizes).tensor_of(plan.read_coords))) == 4

    gen = torch.Generator().manual_seed(1)
    params = [torch.zeros(s, requires_grad=True) for s in shapes]
    grads = [[torch.randn(rows, *s, generator=gen) for s in shapes] for _ in range(3)]
    planter = GradientCanaries(params, sampling_rate=q, max_grad_norm=clip, seed=seed,
                               plan=plan)
    assert planter._block == block
    opt = DPOptimizer(torch.optim.SGD(params, lr=0.1), noise_multiplier=0.0,
                      max_grad_norm=clip, expected_batch_size=unit, loss_reduction="mean")
    planter.attach(opt)
    released = []
    clips = [clip, clip / 2, clip]     # C changed within a block: its planting is made again
    for g, c in zip(grads, clips, strict=True):
        opt.max_grad_norm = c
        for p, gp in zip(params, g, strict=True):
            p.grad_sample = gp.clone()
        opt.step()
        # the block's planting (arranged for all its steps at once) is this step's alone
        row = planter._coin_row - 1
        one = planter._cells(planter._drawn, np.array([0, planter._drawn.size]), c)[0]
        block = planter._cells(planter._block_active, planter._starts, c)[row]
        assert [cell[0] for cell in one] == [cell[0] for cell in block] and one
        for (_, la, va, ca, da), (_, lb, vb, cb, db) in zip(one, block, strict=True):
            assert da is None and db is None        # on the CPU: no device copies
            np.testing.assert_array_equal(la, lb)
            np.testing.assert_array_equal(va, vb)
            # rounded once to the parameters' float32
            np.testing.assert_array_equal(ca, va.astype(np.float32))
            np.testing.assert_array_equal(ca, cb)
        released.append(torch.cat([p.grad.reshape(-1) for p in params]).double().numpy())
        # the batched read of the hook equals a direct gather of the released step
        np.testing.assert_array_equal(planter._gather_read(lambda p: p.grad),
                                      released[-1][plan.read_coords])
        if tensor_path == "torch" and planter._unread:   # held, not yet brought over
            assert len(planter._deferred) == len(planter._unread)
        for p in params:
            p.grad_sample = p.summed_grad = None
        assert planter.steps == len(released)

    # the reference, densely in float64
    draws = stream(seed, "canary_sampling")
    d = sum(sizes)
    expected_sum = np.zeros(plan.n)
    for g, got, c in zip(grads, released, clips, strict=True):
        flat = np.concatenate([x.reshape(rows, -1).double().numpy() for x in g], axis=1)
        norms = np.linalg.norm(flat, axis=1)
        total = (flat * np.minimum(1.0, c / (norms + 1e-6))[:, None]).sum(axis=0)
        for i in np.flatnonzero((draws.random(plan.n) < q) & plan.bits):
            v = np.zeros(d)
            np.add.at(v, plan.plant_coords[i], plan.plant_values[i] * clip)
            total += v * min(1.0, c / (np.linalg.norm(v) + 1e-6))
        np.testing.assert_allclose(got, total / unit, rtol=1e-5, atol=1e-6)
        expected_sum += plan.read_flat(total) / clip
    np.testing.assert_allclose(planter.sum, expected_sum, rtol=1e-5, atol=1e-5)
    assert planter.steps == 3 and np.abs(expected_sum[plan.bits]).sum() > 1.0
