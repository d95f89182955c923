"""Batched character n-gram DP-SGD (dpaudit.papers.charlm) against Opacus and closed forms."""

from __future__ import annotations

import numpy as np
import pytest

from needs import need

pytestmark = [pytest.mark.slow, pytest.mark.torch]  # real training / paper reproductions


@pytest.fixture(autouse=True, scope="module")
def _frameworks() -> None:
    """torch, Opacus and dpaudit.papers.charlm: imported when a test of this module runs, not
    when the suite is collected (the names are this module's globals)."""
    global torch, opacus, CharMLP, DPSGDOptions, batched_logits, dpsgd_train, onehot_contexts
    global stack_models
    torch = need("torch")
    opacus = need("opacus")
    from dpaudit.papers.charlm import (
        CharMLP,
        DPSGDOptions,
        batched_logits,
        dpsgd_train,
        onehot_contexts,
        stack_models,
    )
    torch.set_num_threads(1)


def _opacus_step(model: CharMLP, x: torch.Tensor, y: torch.Tensor, clip: float, lr: float,
                 steps: int) -> CharMLP:
    from opacus import PrivacyEngine

    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y),
                                         batch_size=x.shape[0])
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    engine = PrivacyEngine()
    model, opt, loader = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                             noise_multiplier=0.0, max_grad_norm=clip,
                                             poisson_sampling=False)
    for _ in range(steps):
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    return model


def test_clipped_updates_match_opacus() -> None:
    """Per-example clipping + averaging of the vmapped trainer equals Opacus' DPOptimizer
    (noise 0, so the comparison is exact up to float32 rounding); the clip norm 0.05 is far
    below the gradient norms, so clipping is active for every example."""
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 10, size=(6, 8))
    x = onehot_contexts(codes, 10)
    y = torch.as_tensor(rng.integers(0, 10, size=6))
    template, params = stack_models(1, 8, 10, 10, hidden=16, seed=3)
    ref = CharMLP(8, 10, 10, hidden=16)
    with torch.no_grad():
        for name, p in ref.named_parameters():
            p.copy_(params[name][0])
    ref = _opacus_step(ref, x, y, clip=0.05, lr=0.5, steps=3)
    ours = dpsgd_train(template, params, x, y[None], DPSGDOptions(
        clip=0.05, noise_multiplier=0.0, learning_rate=0.5, steps=3))
    ref_params = dict(ref._module.named_parameters())
    moved = 0.0
    for name, p in ours.items():
        np.testing.assert_allclose(p[0].numpy(), ref_params[name].detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
        moved += float((p[0] - params[name][0]).abs().max())
    assert moved > 1e-3  # the step did something


def test_noise_has_the_calibrated_std_and_respects_the_mask() -> None:
    """With lr 1 and one example the update is g~ = clip(g) + N(0, (sigma C)^2): the empirical
    std of (update - clipped gradient) over 400 models x 330 parameters is sigma C within 2%
    (132,000 draws: relative s.e. of a std ~ 0.2%); masked parameters never move."""
    m = 400
    x = onehot_contexts(np.arange(8)[None] % 10, 10)
    template, params = stack_models(m, 8, 10, 10, hidden=10, seed=1)
    y = torch.zeros((m, 1), dtype=torch.int64)
    mask = {k: torch.ones(v.shape[1:]) for k, v in params.items()}
    mask["fc2.bias"] = torch.zeros(10)
    clean = dpsgd_train(template, params, x, y, DPSGDOptions(clip=1.0, noise_multiplier=0.0),
                        mask=mask)
    noisy = dpsgd_train(template, params, x, y, DPSGDOptions(clip=1.0, noise_multiplier=2.0),
                        seed=5, mask=mask)
    diffs = torch.cat([(noisy[k] - clean[k]).flatten() for k in ("fc1.bias", "fc2.weight")])
    assert float(diffs.std()) == pytest.approx(2.0, rel=0.02)
    assert torch.equal(noisy["fc2.bias"], params["fc2.bias"])
    # models are independent: different initialisations give different logits
    out = batched_logits(template, noisy, x)
    assert out.shape == (m, 1, 10) and float(out[:, 0].std(0).min()) > 0


def test_bad_options_name_the_argument() -> None:
    with pytest.raises(ValueError, match="clip"):
        DPSGDOptions(clip=0.0)
    with pytest.raises(ValueError, match="steps"):
        DPSGDOptions(steps=0)
    template, params = stack_models(2, 8, 10, 10, hidden=4)
    with pytest.raises(ValueError, match="y must"):
        dpsgd_train(template, params, onehot_contexts(np.zeros((1, 8), int), 10),
                    torch.zeros(3, dtype=torch.int64), DPSGDOptions())
