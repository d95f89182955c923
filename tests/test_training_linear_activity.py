"""The placement's clipped squared gradients of a Linear stack from one matrix product per
layer (``dpaudit.training.linear_activity``): the per-example values, computed
independently here with ``torch.func``; every model the factorisation does not cover
declined (None), so the per-example path runs."""

from __future__ import annotations

import numpy as np
import pytest

from needs import need

pytestmark = [pytest.mark.torch]


@pytest.fixture(autouse=True, scope="module")
def _frameworks() -> None:
    global torch, nn, F
    torch = need("torch")
    need("opacus")
    from torch import nn as _nn
    from torch.nn import functional as _F

    nn, F = _nn, _F
    torch.set_num_threads(1)


def _reference(model, x, y, clip: float) -> np.ndarray:  # type: ignore[no-untyped-def]
    """sum_i (f_i g_i)^2 from per-example gradients (vmap of grad), f_i = min(1, C/(|g_i|+1e-6))."""
    from torch.func import functional_call, grad, vmap

    names = [k for k, v in model.named_parameters() if v.requires_grad]
    train = {k: v.detach().double() for k, v in model.named_parameters() if v.requires_grad}
    frozen = {k: v.detach().double() for k, v in model.named_parameters()
              if not v.requires_grad}

    def loss(p, xi, yi):  # type: ignore[no-untyped-def]
        out = functional_call(model, {**p, **frozen}, (xi.unsqueeze(0),))
        return F.cross_entropy(out, yi.unsqueeze(0))

    g = vmap(grad(loss), in_dims=(None, 0, 0))(train, x.double(), y)
    rows = torch.cat([g[k].reshape(x.shape[0], -1) for k in names], dim=1)
    f = (clip / (rows.norm(dim=1, keepdim=True) + 1e-6)).clamp(max=1.0)
    return ((rows * f) ** 2).sum(dim=0).numpy()


def _data(n: int = 96, d: int = 12, k: int = 4):  # type: ignore[no-untyped-def]
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(n, d, generator=gen)
    x[:, 3] = 0.0                               # a feature no example uses: silent weights
    return x, torch.randint(0, k, (n,), generator=gen)


@pytest.mark.parametrize("clip", [0.05, 1.0, 1e3])
def test_linear_stack_matches_per_example_gradients(clip: float) -> None:
    from dpaudit.training.linear_activity import clipped_square_sums

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.Tanh(), nn.Linear(16, 8), nn.ReLU(),
                          nn.Linear(8, 4))
    model[2].bias.requires_grad_(False)         # a frozen bias: left out of the norms
    x, y = _data()
    got = clipped_square_sums(model, x, y, clip, chunk=40)   # three chunks
    want = _reference(model, x, y, clip)
    assert got is not None and got.shape == want.shape
    # float32 sums of 96 examples against float64: about 1e-7 relative here (1.2e-7 on the
    # digits MLP at these C); 2e-5 leaves room for another BLAS's summation order
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-12 * want.max())
    silent = np.zeros(want.size, dtype=bool)
    silent[np.arange(16) * 12 + 3] = True       # W1[:, 3]
    assert (got[silent] == 0).all() and (got[~silent & (want > 0)] > 0).all()
    if clip == 0.05:                            # every example clipped: sum_i f_i^2 |g_i|^2
        assert got.sum() == pytest.approx(x.shape[0] * clip ** 2, rel=1e-4)


def _uncovered(kind: str):  # type: ignore[no-untyped-def]
    """A model the factorisation does not cover (built once torch is imported)."""
    if kind == "layernorm":
        return nn.Sequential(nn.Linear(12, 8), nn.LayerNorm(8), nn.Linear(8, 4))
    if kind == "conv":
        return nn.Sequential(nn.Unflatten(1, (1, 12)), nn.Conv1d(1, 2, 3), nn.Flatten(),
                             nn.Linear(20, 4))

    class Twice(nn.Module):                     # one layer called twice
        def __init__(self) -> None:
            super().__init__()
            self.a, self.head = nn.Linear(12, 12), nn.Linear(12, 4)

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.head(torch.tanh(self.a(torch.tanh(self.a(x)))))

    class TiedOutside(nn.Module):               # a weight also read outside its layer
        def __init__(self) -> None:
            super().__init__()
            self.a, self.head = nn.Linear(12, 4), nn.Linear(4, 4)

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.head(self.a(x)) + F.linear(x, self.a.weight)

    class Sequence(nn.Module):                  # a layer on a (batch, positions, features)
        def __init__(self) -> None:
            super().__init__()
            self.a, self.head = nn.Linear(3, 4), nn.Linear(4, 4)

        def forward(self, x):  # type: ignore[no-untyped-def]
            return self.head(self.a(x.view(x.shape[0], 4, 3)).mean(dim=1))

    class FrozenPass(nn.Module):                # a layer run without autograd
        def __init__(self) -> None:
            super().__init__()
            self.a, self.head = nn.Linear(12, 8), nn.Linear(8, 4)

        def forward(self, x):  # type: ignore[no-untyped-def]
            with torch.no_grad():
                h = self.a(x)
            return self.head(h)

    return {"called_twice": Twice, "tied_outside": TiedOutside,
            "sequence_input": Sequence, "no_grad_layer": FrozenPass}[kind]()


@pytest.mark.parametrize("kind", ["layernorm", "conv", "called_twice", "tied_outside",
                                  "sequence_input", "no_grad_layer"])
def test_models_the_factorisation_does_not_cover_are_declined(kind: str) -> None:
    from dpaudit.training.linear_activity import clipped_square_sums

    torch.manual_seed(0)
    x, y = _data()
    model = _uncovered(kind)
    assert clipped_square_sums(model, x, y, 1.0) is None
    # and the caller's per-example path gives the placement its activity
    from dpaudit.training import coordinate_activity

    act = coordinate_activity(model, x, y, 1.0, examples=None)
    assert act.shape == (sum(p.numel() for p in model.parameters()),) and act.max() > 0


def test_a_forward_that_fails_is_reported_as_before() -> None:
    # the factorised path declines; the per-example path's error names x and y
    from dpaudit.training import coordinate_activity

    model = nn.Sequential(nn.Linear(12, 8), nn.ReLU(), nn.Linear(8, 4))
    x, y = _data()
    with pytest.raises(ValueError, match="x and y must be a batch of the model's inputs"):
        coordinate_activity(model, x[:, :5], y, 1.0)


def test_coordinate_activity_is_the_per_example_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    # the placement's activity with the factorised sums and with per-example gradients (the
    # factorisation declined): equal to float32 rounding, the same silent coordinates, and
    # the same canary coordinates
    from dpaudit.training import GradientCanaries, coordinate_activity
    from dpaudit.training import canaries as module

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 4))
    x, y = _data(n=400)
    fast = coordinate_activity(model, x, y, 1.0, examples=128, seed=2)
    plan_fast = GradientCanaries.for_model(model, x, y, 60, sampling_rate=0.05,
                                           max_grad_norm=1.0, seed=2, activity_examples=128,
                                           shapes="dirac").plan
    monkeypatch.setattr(module, "clipped_square_sums", lambda *a, **k: None)
    slow = coordinate_activity(model, x, y, 1.0, examples=128, seed=2)
    plan_slow = GradientCanaries.for_model(model, x, y, 60, sampling_rate=0.05,
                                           max_grad_norm=1.0, seed=2, activity_examples=128,
                                           shapes="dirac").plan
    # two float32 computations of the same sums (1.6-1.8e-7 apart on the digits MLP)
    np.testing.assert_allclose(fast, slow, rtol=1e-5, atol=1e-9 * slow.max())
    np.testing.assert_array_equal(fast == 0, slow == 0)
    assert (fast == 0).sum() >= 32              # W1[:, 3]
    np.testing.assert_array_equal(plan_fast.plant_coords, plan_slow.plant_coords)
