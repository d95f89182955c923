"""The user's own model and loop: steps without noise, accountants that cannot answer,
optimizers that skip their noise, and stock layers (transformer with dropout, EmbeddingBag,
LayerNorm / GroupNorm, tied weights) -- reported, never crashed."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

from needs import need

pytestmark = [pytest.mark.slow, pytest.mark.torch, pytest.mark.usefixtures("one_thread")]


@pytest.fixture(autouse=True, scope="module")
def _frameworks() -> None:
    """torch, Opacus and the cases (tests/own_model_cases.py): imported when a test of this
    module runs, not when the suite is collected (the names are this module's globals)."""
    global torch, nn, PrivacyEngine, DPOptimizer, ModuleValidator, DataLoader, TensorDataset
    global GradientCanaries, audit_training
    global V, _SkipEveryOther, _private, _train, _digits, _Encoder, _Bag, _GroupNorm, _Tied
    need("torch")
    need("opacus")
    import own_model_cases as C

    torch = C.torch
    nn = C.nn
    PrivacyEngine = C.PrivacyEngine
    DPOptimizer = C.DPOptimizer
    ModuleValidator = C.ModuleValidator
    DataLoader = C.DataLoader
    TensorDataset = C.TensorDataset
    GradientCanaries = C.GradientCanaries
    audit_training = C.audit_training
    V = C.V
    _SkipEveryOther = C._SkipEveryOther
    _private = C._private
    _train = C._train
    _digits = C._digits
    _Encoder = C._Encoder
    _Bag = C._Bag
    _GroupNorm = C._GroupNorm
    _Tied = C._Tied


@pytest.mark.parametrize(("low", "note"), [(0.0, "steps without noise"),
                                           (0.01, "PRV accountant cannot answer")])
def test_steps_without_noise_are_reported_never_raised(low: float, note: str) -> None:
    x, y = _digits()
    model, opt, loader, engine = _private(
        nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)), x, y)
    c = GradientCanaries.for_model(model, x, y, 100, sampling_rate=0.05, max_grad_norm=1.0)
    c.attach(opt)
    steps = _train(model, opt, loader, 1, sigma_at=lambda t: low if t % 2 else 1.0)
    # the facts are readable after the loop cleared the per-sample gradients (Opacus's
    # accumulated_iterations raises there)
    opt.zero_grad(set_to_none=True)
    assert c.facts(len(x)).expected_batch_size == opt.expected_batch_size
    start = time.process_time()
    a = audit_training(c.bits, c.white_box_scores(), noise_multiplier=1.0, sampling_rate=0.05,
                       steps=c.steps, facts=c.facts(len(x)), max_grad_norm=1.0,
                       accountant=engine)
    assert time.process_time() - start < 30   # the 0.01 case asks PRV for no 68 GiB grid
    assert c.steps == steps == 20
    bad = {ch.name: ch for ch in a.checks if not ch.ok}
    want = ("ran without noise (sigma = 0)" if low == 0
            else "ran with less noise than the claim")
    assert f"steps 2, 4, 6, 8, 10, 12, 14, 16, ... (10 steps) {want}" in (
        bad["noise_multiplier"].message)
    assert bad["noise_multiplier"].weaker
    assert a.weaker_run == [bad["noise_multiplier"].message, bad["released_noise"].message]
    # a run that did less than its claim is a violation, whatever the statistics say
    assert a.violation and a.to_audit().falsified_by == tuple(a.weaker_run)
    # the released noise, read on the canaries' coordinates, names the same steps
    assert bad["released_noise"].message.count("10 step(s) released less noise") == 1
    assert a.accountant_epsilon is None and note in a.accountant_note
    assert np.isfinite(c.white_box_scores()).all()


def test_an_optimizer_that_skips_its_noise_is_caught_on_those_steps() -> None:
    x, y = _digits()
    flawed = []
    for cls in (DPOptimizer, _SkipEveryOther):
        model, opt, loader, _ = _private(
            nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)), x, y)
        opt.__class__ = cls
        c = GradientCanaries.for_model(model, x, y, 100, sampling_rate=0.05,
                                       max_grad_norm=1.0)
        c.attach(opt)
        _SkipEveryOther.calls = 0
        _train(model, opt, loader, 2)
        a = audit_training(c.bits, c.white_box_scores(), noise_multiplier=1.0,
                           sampling_rate=0.05, steps=c.steps, facts=c.facts(len(x)),
                           max_grad_norm=1.0)
        flawed.append({ch.name: ch for ch in a.checks})
    assert flawed[0]["released_noise"].ok                   # the correct optimizer
    assert flawed[0]["noise_multiplier"].ok and flawed[1]["noise_multiplier"].ok
    skip = flawed[1]["released_noise"]                       # sigma attribute intact
    assert not skip.ok and skip.weaker
    assert "20 step(s) released less noise" in skip.message and "steps 2, 4, 6" in skip.message


@pytest.mark.parametrize("name", ["_Encoder", "_Bag", "_GroupNorm", "_Tied"])
def test_stock_layers_work_with_for_model(name: str) -> None:
    cls = {"_Encoder": _Encoder, "_Bag": _Bag, "_GroupNorm": _GroupNorm,
           "_Tied": _Tied}[name]
    # a stock TransformerEncoderLayer with dropout after ModuleValidator.fix: the canaries
    # are placed on the model make_private returned (hooks attach once; per-example
    # gradients draw their own dropout masks), planted and read at every step; the
    # released noise matches the claim (no false configuration error)
    g = torch.Generator().manual_seed(1)
    x = torch.randint(0, V, (200, 8), generator=g)
    y = torch.randint(0, 2, (200,), generator=g)
    model, opt, loader, _ = _private(ModuleValidator.fix(cls()), x, y, batch=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # random tokens: real data moves every coordinate
        c = GradientCanaries.for_model(model, x, y, 20, sampling_rate=0.1, max_grad_norm=1.0)
    c.attach(opt)
    steps = _train(model, opt, loader, 2)
    a = audit_training(c.bits, c.white_box_scores(), noise_multiplier=1.0, sampling_rate=0.1,
                       steps=c.steps, facts=c.facts(len(x)), max_grad_norm=1.0)
    assert c.steps == steps == 20
    checks = {ch.name: ch for ch in a.checks}
    assert checks["released_noise"].ok and checks["noise_multiplier"].ok
    assert not a.violation


def test_busy_coordinate_warning_fires_exactly_when_real_data_moves_the_reads() -> None:
    from sklearn.datasets import load_breast_cancer

    from dpaudit.training import coordinate_activity, load_data, make_model
    from dpaudit.training.canaries import SHIFT_WARN, real_data_shift

    # digits with a reserved branch: the median canary reads silent coordinates only but for
    # its sentinel (weight 0.03, on a busy tensor by design): no warning, a shift of a few
    # thousandths of C
    d = load_data("digits", seed=0, reserved=16)
    reserved = make_model("mlp", hidden=32, in_features=64, reserved=16)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        c = GradientCanaries.for_model(reserved, d.x_train, d.y_train, 60, sampling_rate=0.05,
                                       max_grad_norm=1.0)
    act = coordinate_activity(reserved, d.x_train, d.y_train, 1.0)
    shift = real_data_shift(c.plan, act, 0.05 * len(d.x_train))
    assert np.median(shift) < 0.01 and SHIFT_WARN == 0.2
    # breast_cancer, a dense MLP 30-64-2: every coordinate is moved by real data (the
    # median shift is about 0.43 C per step at q = 0.05)
    x, y = load_breast_cancer(return_X_y=True)
    xt = torch.tensor((x - x.mean(0)) / x.std(0), dtype=torch.float32)
    torch.manual_seed(0)
    dense = nn.Sequential(nn.Linear(30, 64), nn.ReLU(), nn.Linear(64, 2))
    with pytest.warns(UserWarning, match=r"shift the median canary's reading by up to ~ 0\.4"):
        GradientCanaries.for_model(dense, xt, torch.tensor(y), 100, sampling_rate=0.05,
                                   max_grad_norm=1.0)


def test_batch_sum_and_averaged_gradient_clipping_are_reported() -> None:
    from dpaudit.training.flaws import optimizer_class

    x, y = _digits()
    found = {}
    for flaw in ("correct", "batch_sum_clipping", "averaged_clipping"):
        model, opt, loader, _ = _private(
            nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)), x, y)
        opt.__class__ = optimizer_class(None if flaw == "correct" else flaw)
        c = GradientCanaries.for_model(model, x, y, 200, sampling_rate=0.05,
                                       max_grad_norm=1.0)
        c.attach(opt)
        _train(model, opt, loader, 5)
        a = audit_training(c.bits, c.white_box_scores(), noise_multiplier=1.0,
                           sampling_rate=0.05, steps=c.steps, facts=c.facts(len(x)),
                           max_grad_norm=1.0)
        found[flaw] = ({ch.name: ch for ch in a.checks}["clipped_contribution"], a)
    ok, a = found["correct"]
    assert ok.ok and not a.violation and abs(ok.observed - 1) < 0.2
    # the batch's sum clipped to C: the planted canaries share C (about 1 / sqrt(k) each);
    # a configuration error that is not counted as a violation by itself
    low, a = found["batch_sum_clipping"]
    assert not low.ok and not low.weaker and low.observed < 0.6
    assert "not the claimed mechanism" in low.message and not a.weaker_run
    # the mean clipped to C and scaled to the sum: an example moves the release by B C
    high, a = found["averaged_clipping"]
    assert not high.ok and high.weaker and high.observed > 3 and a.violation


def test_own_torch_func_loop_clipping_flaws_are_reported() -> None:
    # the hand-written torch.func loop of studies/training_own_models.py (per-example
    # gradients by vmap, the clipping written out, ReleaseReader with the planted set) on
    # the dense breast_cancer MLP: correct / batch sum clipped / mean clipped
    import importlib.util
    import sys
    from pathlib import Path

    studies = Path(__file__).resolve().parents[1] / "studies"
    sys.path.insert(0, str(studies))
    try:
        spec = importlib.util.spec_from_file_location("own_models_study",
                                                      studies / "training_own_models.py")
        study = importlib.util.module_from_spec(spec)          # type: ignore[arg-type]
        spec.loader.exec_module(study)                          # type: ignore[union-attr]
    finally:
        sys.path.remove(str(studies))
    rows = {case: study.run_func("tabular", case, 0, canaries=200, epochs=5)
            for case in ("correct", "batch_sum_clipping", "averaged_clipping")}
    assert rows["correct"]["errors"] == [] and not rows["correct"]["violation"]
    assert abs(rows["correct"]["contribution"] - 1) < 0.2
    low = rows["batch_sum_clipping"]
    assert low["errors"] == ["clipped_contribution"] and not low["flagged"]
    assert low["contribution"] < 0.7
    high = rows["averaged_clipping"]
    assert "clipped_contribution" in high["weaker_errors"] and high["violation"]
