"""The canary branch (``dpaudit.training.CanaryBranch``): silent coordinates for the canaries
on models that have none -- outputs unchanged, per-sample gradients exactly zero under Opacus,
and unclipped biases read on its bias tensor."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from needs import need

pytestmark = [pytest.mark.slow, pytest.mark.torch, pytest.mark.usefixtures("one_thread")]


@pytest.fixture(autouse=True, scope="module")
def _frameworks() -> None:
    """torch, Opacus and the cases (tests/own_model_cases.py), imported when a test of this
    module runs (the names are this module's globals)."""
    global torch, nn, C
    need("torch")
    need("opacus")
    need("sklearn")
    import own_model_cases

    C = own_model_cases
    torch = C.torch
    nn = C.nn


KINDS = ("cnn", "text", "transformer", "tabular")


def _case(kind: str) -> tuple[Any, Any, Any]:
    """(model, x, y) of one of the four model kinds of studies/training_own_models.py."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    if kind == "cnn":
        x, y = C._digits()
        model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(288, 10))
        return model, x.reshape(-1, 1, 8, 8), y
    if kind == "tabular":
        from sklearn.datasets import load_breast_cancer

        xs, ys = load_breast_cancer(return_X_y=True)
        x = torch.tensor((xs - xs.mean(0)) / xs.std(0), dtype=torch.float32)
        return nn.Sequential(nn.Linear(30, 64), nn.ReLU(), nn.Linear(64, 2)), x, torch.tensor(ys)
    x = torch.randint(0, C.V, (200, 8), generator=g)
    y = torch.randint(0, 2, (200,), generator=g)
    return (C._Bag() if kind == "text" else C._Encoder()), x, y


@pytest.mark.parametrize("kind", KINDS)
def test_branch_leaves_outputs_and_gets_zero_per_sample_gradients(kind: str) -> None:
    from dpaudit.training import CanaryBranch, with_canary_branch

    inner, x, y = _case(kind)
    inner = C.ModuleValidator.fix(inner)
    model = with_canary_branch(inner, 50)
    assert isinstance(model, CanaryBranch) and C.ModuleValidator.validate(model) == []
    named = dict(model.named_parameters())
    branch = [p for k, p in named.items() if k.startswith("canary_branch.")]
    # three tensors (150 coordinates each), one of them a 1-d tensor named like a bias
    assert [k for k in named if k.startswith("canary_branch.")] == [
        "canary_branch.0.weight", "canary_branch.0.bias", "canary_branch.2.weight"]
    assert [p.numel() for p in branch] == [150, 150, 150] and named[
        "canary_branch.0.bias"].ndim == 1
    assert list(named)[:3] == ["canary_branch.0.weight", "canary_branch.0.bias",
                               "canary_branch.2.weight"]        # first: the plan's ballast
    before = [p.detach().clone() for p in branch]
    model, opt, loader, _ = C._private(model, x, y, batch=max(1, len(x) // 10))
    for step, (xb, yb) in enumerate(loader):
        if step == 3:
            break
        opt.zero_grad()
        nn.functional.cross_entropy(model(xb), yb).backward()
        # Opacus's per-sample gradients: exactly 0 on the branch, not on the model
        assert all(p.grad_sample.shape[0] == len(xb) and not p.grad_sample.any()
                   for p in branch)
        assert any(p.grad_sample.any() for p in inner.parameters())
        opt.step()
    # the noise moved the branch; the outputs are still the model's, bit for bit
    assert all(not torch.equal(a, p) for a, p in zip(before, branch, strict=True))
    model.eval()
    with torch.no_grad():
        assert torch.equal(model(x[:40]), inner(x[:40]))


def test_canaries_sit_on_the_branch_and_the_warning_names_it() -> None:
    from dpaudit.training import GradientCanaries, coordinate_activity, with_canary_branch

    inner, x, y = _case("tabular")
    with pytest.warns(UserWarning, match=r"CanaryBranch.*before make_private"):
        GradientCanaries.for_model(inner, x, y, 100, sampling_rate=0.05, max_grad_norm=1.0)
    model = with_canary_branch(inner, 100)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)   # no busy-coordinate warning
        c = GradientCanaries.for_model(model, x, y, 100, sampling_rate=0.05,
                                       max_grad_norm=1.0)
    act = coordinate_activity(model, x, y, 1.0)
    t = c.layout.tensor_of(c.plan.plant_coords[:, :-1])   # all but the sentinel slot
    assert (t <= 2).all() and (act[c.plan.plant_coords[:, :-1]] == 0).all()
    # every canary has two of its six parts on the branch's bias (read there or ballast)
    assert ((t == 1).sum(axis=1) == 2).all()


def _readings(model: Any, x: Any, y: Any, n: int, *, flaw: str | None,
              shapes: str, sentinel: float = 0.03) -> tuple[np.ndarray, np.ndarray, Any]:
    """Per-step readings (T, n), which canaries were planted at each step (T, n), and the
    canaries, of a run at noise 1e-4."""
    from dpaudit.training import GradientCanaries
    from dpaudit.training.flaws import optimizer_class

    torch.manual_seed(0)
    engine = C.PrivacyEngine()
    model, opt, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
        data_loader=C.DataLoader(C.TensorDataset(x, y), batch_size=len(x) // 20),
        noise_multiplier=1e-4, max_grad_norm=1.0)
    opt.__class__ = optimizer_class(flaw)
    c = GradientCanaries.for_model(model, x, y, n, sampling_rate=0.05, max_grad_norm=1.0,
                                   shapes=shapes, seed=3, sentinel=sentinel)
    ys: list[np.ndarray] = []
    planted: list[np.ndarray] = []
    draw, record = c._draw, c._record

    def _draw() -> np.ndarray:
        active = draw()
        planted.append(np.isin(np.arange(n), active))
        return active

    def _record(o: object) -> None:
        ys.append(c._gather(lambda p: p.grad) * (c._batch_unit(o) / c.clip))
        record(o)

    c._draw, c._record = _draw, _record   # type: ignore[method-assign]
    c.attach(opt)
    C._train(model, opt, loader, 3)
    return np.array(ys), np.array(planted), c


@pytest.mark.parametrize("flaw", [None, "unclipped_biases"])
@pytest.mark.parametrize("shapes", ["block", "mixed"])
def test_unclipped_biases_read_on_the_branch_bias(flaw: str | None, shapes: str) -> None:
    from dpaudit.training import with_canary_branch

    inner, x, y = _case("tabular")
    # "mixed": without sentinels (a spread canary's sentinel never shares a tensor with its
    # main parts, so it sits on the model's busy tensors, where real gradients would enter
    # the exact readings); "block": a canary's sentinel may sit on the branch's bias
    y_, planted, c = _readings(with_canary_branch(inner, 90), x, y, 90, flaw=flaw,
                               shapes=shapes, sentinel=0.0 if shapes == "mixed" else 0.03)
    t = c.layout.tensor_of(c.plan.read_coords)
    w = c.plan.read_weights
    exact = (t <= 2).all(axis=1)           # read on the branch only: no real gradient
    assert exact.sum() >= 20 and planted[:, exact].sum() >= 20
    # weights clipped to C (|u_w| C along the canary's unit direction u), the bias part
    # summed at its planted size 1000 |u_b| C: reading |u_w| + 1000 |u_b|^2 per sampled step
    ub2 = (w * w * (t == 1)).sum(axis=1)
    want = (np.sqrt(1 - ub2) + 1000 * ub2) if flaw else np.ones(c.n)
    got = y_[:, exact]
    assert np.abs(got - planted[:, exact] * want[exact]).max() < 1e-3   # noise 1e-4
    if shapes == "block":
        # the sentinel alone on the bias (share s = 0.03): sqrt(1 - s^2) + 1000 s^2 = 1.8996 C
        alone = exact & (t[:, 0] != 1) & (t[:, -1] == 1)
        assert alone.sum() >= 3 and planted[:, alone].any()
        assert np.allclose(want[alone], 1.8996 if flaw else 1.0, atol=1e-4)
    else:
        # every spread canary has two of its six parts on the bias: |u_b|^2 ~ 1/3
        assert np.median(want) == pytest.approx(1000 / 3 + np.sqrt(2 / 3) if flaw else 1.0,
                                                rel=0.01)


def test_branch_rejects_bad_input() -> None:
    from dpaudit.training import CanaryBranch

    with pytest.raises(ValueError, match="canaries"):
        CanaryBranch(nn.Linear(2, 2), 0)
    with pytest.raises(ValueError, match="width"):
        CanaryBranch(nn.Linear(2, 2), width=0)
    with pytest.raises(ValueError, match="model must be a torch.nn.Module"):
        CanaryBranch(object())  # type: ignore[arg-type]

    class Pair(nn.Module):
        def forward(self, x: Any) -> Any:
            return x, x

    with pytest.raises(ValueError, match="one tensor with the batch first"):
        CanaryBranch(Pair())(torch.zeros(2, 3))


def test_the_branch_is_made_where_the_model_lives() -> None:
    """A model already moved to a device or a dtype gets its branch there (the documented
    recipe wraps the user's model as it is; a CUDA model with a CPU branch would fail its
    first forward pass).  The meta device stands in for an accelerator here; the GPU run is
    in docs/training.md ("On an accelerator")."""
    from dpaudit.training import CanaryBranch

    wide = CanaryBranch(nn.Linear(4, 2).to(torch.float64), 5)
    assert {p.dtype for p in wide.parameters()} == {torch.float64}
    assert wide.gate.dtype == torch.float64
    x = torch.randn(3, 4, dtype=torch.float64)
    assert torch.equal(wide(x), wide.model(x))        # runs in float64, outputs unchanged
    meta = CanaryBranch(nn.Linear(4, 2, device="meta"), 5)
    assert {p.device.type for p in meta.parameters()} == {"meta"}
    assert meta.gate.device.type == "meta"
    assert meta(torch.empty(3, 4, device="meta")).shape == (3, 2)
    # a model without floating parameters: the CPU and torch's default dtype
    bare = CanaryBranch(nn.Identity(), 5)
    assert {(p.device.type, p.dtype) for p in bare.parameters()} == {("cpu", torch.float32)}


def test_train_audit_canary_branch_option(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from dpaudit.cli import main
    from dpaudit.training import TrainingConfig

    # the CLI's CNN wrapped in the branch by default (no coordinate of the CNN is silent:
    # fewer silent coordinates than canaries), spread canaries on its silent coordinates:
    # two of each canary's six parts on the branch's bias, which a loop leaving biases
    # unclipped reads at about 334 C per sampled step (12.5 against a claim of 2.24)
    rc = main(["train-audit", "--model", "cnn", "--canaries", "100",
               "--steps", "30", "--shapes", "mixed", "--flawed", "unclipped_biases",
               "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["canary_branch"] is True and out["violation"]
    assert out["results"][0]["epsilon"] > 5 * out["claimed_epsilon"]
    rc = main(["train-audit", "--canary", "input", "--canary-branch", "--steps", "5"])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: canary_branch applies to gradient canaries")
    with pytest.raises(ValueError, match="canary_branch"):
        TrainingConfig(canary="input", threat="black_box", canary_branch=True)


def test_the_branch_is_decided_by_the_models_silent_coordinates() -> None:
    # canary_branch=None: a branch exactly when the model has fewer silent coordinates (no
    # sampled example moves them) than canaries: the CNN has a few dozen (its filters see
    # almost every pixel); the digits MLP 64-256-10 has the weights of the always-0 pixels
    import numpy as np

    from dpaudit.training import (
        CanaryBranch,
        TrainingConfig,
        canary_branch_if_needed,
        needs_canary_branch,
    )
    from dpaudit.training.canaries import coordinate_activity
    from dpaudit.training.data import load_data
    from dpaudit.training.models import make_model
    from dpaudit.training.trainer import config_needs_canary_branch

    for kind in ("cnn", "mlp"):
        data = load_data("digits", 0, image=kind == "cnn")
        model = make_model(kind, seed=0, hidden=256, num_classes=10,
                           in_features=int(np.prod(data.input_shape)))
        x, y = data.x_train, data.y_train
        silent = int(np.count_nonzero(coordinate_activity(model, x, y, 1.0) == 0))
        assert (silent < 100) == (kind == "cnn") and silent < 2000
        for n in (100, silent, silent + 1):
            n = max(n, 1)
            assert needs_canary_branch(model, x, y, n) == (silent < n)
            assert config_needs_canary_branch(TrainingConfig(model=kind, canaries=n), model,
                                              x, y) == (silent < n)
            wrapped = canary_branch_if_needed(model, x, y, n)
            assert isinstance(wrapped, CanaryBranch) == (silent < n)
            assert (wrapped is model) == (silent >= n)
        # input canaries and the group outside the DP optimizer never get one
        assert not config_needs_canary_branch(
            TrainingConfig(model=kind, canary="input", threat="black_box", canaries=10_000,
                           input_kind="flip"), model, x, y)
    assert not config_needs_canary_branch(
        TrainingConfig(flawed="non_private_group", canaries=10_000), model, x, y)
    # more canaries than coordinates: always; bad counts are refused by name
    assert needs_canary_branch(model, x, y, sum(p.numel() for p in model.parameters()) + 1)
    with pytest.raises(ValueError, match="canaries"):
        needs_canary_branch(model, x, y, 0)
    with pytest.raises(ValueError, match="model must be a torch.nn.Module"):
        canary_branch_if_needed("model", x, y, 10)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no trainable parameters"):
        needs_canary_branch(nn.Sequential(nn.ReLU()), x, y, 10)
    # examples that are not the model's: an error naming x / y, never torch's traceback,
    # and no decision from NaN inputs or an empty set
    tiny = nn.Sequential(nn.Linear(4, 3))
    lab = torch.zeros(10, dtype=torch.long)
    for xb, yb, msg in ((torch.zeros(10, 5), lab, "batch of the model's inputs"),
                        (torch.zeros(10, 4), lab[:7], "same number >= 1 of examples"),
                        (torch.zeros(0, 4), lab[:0], "same number >= 1 of examples"),
                        (torch.full((10, 4), float("nan")), lab, "x must be finite"),
                        (np.zeros((10, 4)), lab, "torch tensors")):
        with pytest.raises(ValueError, match=msg):
            canary_branch_if_needed(tiny, xb, yb, 5)  # type: ignore[arg-type]


def test_the_placements_silence_check_skips_a_gated_off_branch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the branch's coordinates are silent by construction (gate 0: every per-example
    # gradient exactly 0), so the silence check -- a backward pass over every training
    # example at each probe -- runs only when some coordinate of the model itself is at 0;
    # the activity is the one the check would give, bit for bit (its moved values are 0 on
    # the branch), on a dense model (check skipped) and on one with silent weights (run)
    from opacus import GradSampleModule

    from dpaudit.training import CanaryBranch, with_canary_branch
    from dpaudit.training import canaries as module
    from dpaudit.training.canaries import silent_by_construction

    calls: list[int] = []
    moved = module._moved

    def counted(*a: Any, **k: Any) -> Any:
        calls.append(1)
        return moved(*a, **k)

    monkeypatch.setattr(module, "_moved", counted)
    cnn, x, y = _case("cnn")
    xs = torch.cat([torch.zeros(len(x), 1, 8, 2), x[..., 2:]], dim=-1)   # two blank columns
    for model, data, inner_silent in ((cnn, x, False),
                                      (nn.Sequential(nn.Flatten(), nn.Linear(64, 10)),
                                       (xs, y), True)):
        xx, yy = data if isinstance(data, tuple) else (data, y)
        wrapped = with_canary_branch(model, 50)
        known = silent_by_construction(wrapped)
        width = sum(p.numel() for p in wrapped.canary_branch.parameters())
        assert known is not None and known.sum() == width and known[:width].all()
        assert np.array_equal(silent_by_construction(GradSampleModule(
            with_canary_branch(model, 50))), known)
        calls.clear()
        act = module.coordinate_activity(wrapped, xx, yy, 1.0, examples=64)
        assert (len(calls) > 0) == inner_silent        # 4 probes when it runs
        assert (act[known] == 0).all() and ((act[~known] == 0).any() == inner_silent)
        monkeypatch.setattr(module, "silent_by_construction", lambda m: None)
        calls.clear()
        checked = module.coordinate_activity(wrapped, xx, yy, 1.0, examples=64)
        monkeypatch.undo()
        monkeypatch.setattr(module, "_moved", counted)
        assert len(calls) == 4 and np.array_equal(act, checked)
    assert silent_by_construction(cnn) is None
    opened = with_canary_branch(cnn, 10)
    opened.gate.fill_(1.0)
    assert isinstance(opened, CanaryBranch) and silent_by_construction(opened) is None


def test_the_branch_decision_stops_after_the_first_probe_when_it_can() -> None:
    # stop_below: the probes' zero count so far bounds the full measurement's from above,
    # so when it is already below the count asked about, they answer (the CNN: the first
    # probe; the sampled probes before the silence check); otherwise the full measurement,
    # bit for bit
    from dpaudit.training.canaries import coordinate_activity

    cnn, x, y = _case("cnn")
    full = coordinate_activity(cnn, x, y, 1.0, seed=3)
    early = coordinate_activity(cnn, x, y, 1.0, seed=3, stop_below=1000)
    assert not np.array_equal(early, full)                  # probe 0 alone
    assert (full == 0).sum() <= (early == 0).sum() < 1000
    blank = torch.cat([torch.zeros(len(x), 1, 8, 2), x[..., 2:]], dim=-1).reshape(len(x), -1)
    mlp = nn.Sequential(nn.Linear(64, 16), nn.ReLU(), nn.Linear(16, 10))
    full = coordinate_activity(mlp, blank, y, 1.0, seed=3)
    silent = int((full == 0).sum())
    assert silent >= 16 * 16                                 # the blank columns' weights
    for n in (silent, silent + 1, 10 * silent):
        got = coordinate_activity(mlp, blank, y, 1.0, seed=3, stop_below=n)
        assert ((got == 0).sum() < n) == (silent < n)
    assert np.array_equal(coordinate_activity(mlp, blank, y, 1.0, seed=3,
                                              stop_below=silent), full)
    with pytest.raises(ValueError, match="stop_below"):
        coordinate_activity(mlp, blank, y, 1.0, stop_below=0)
