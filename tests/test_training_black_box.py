"""The black box at its default (reserved canary examples), sign-pattern canary examples
(more canaries than reserved features) and token canaries for embedding models.

Validity over more seeds: studies/black_box_default.py (docs/training.md, "The black box");
the one-run estimators' false-violation Monte Carlo tests hold for any score of the final
model (tests/test_one_run*.py, tests/test_tight*.py) -- the bits are independent of it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from dpaudit.canaries import plan_reserved_examples
from dpaudit.cli import main
from needs import need

pytestmark = [pytest.mark.torch]


@pytest.fixture(autouse=True, scope="module")
def _frameworks() -> None:
    """torch, Opacus and dpaudit.training, imported when a test of this module runs."""
    global torch, nn, ExampleCanaries, TokenCanaries, make_model, reserve_token_rows
    global TrainingConfig, train_audit
    torch = need("torch")
    need("opacus")
    need("sklearn")
    from torch import nn

    from dpaudit.training import (
        ExampleCanaries,
        TokenCanaries,
        TrainingConfig,
        make_model,
        reserve_token_rows,
        train_audit,
    )
    torch.set_num_threads(1)


def test_sign_plan_takes_more_canaries_than_reserved_features() -> None:
    p = plan_reserved_examples(500, reserved=16, num_classes=10, sampling_rate=0.1,
                               rng=np.random.default_rng(0), pattern="signs")
    u = p.units()
    assert u.shape == (500, 16) and np.allclose(np.linalg.norm(u, axis=1), 1.0)
    assert set(np.unique(u * 4).tolist()) == {-1.0, 1.0}          # +-1 / sqrt(16)
    # pairwise inner products: mean 0, variance 1 / R (the interference of the design)
    g = u @ u.T
    off = g[~np.eye(500, dtype=bool)]
    assert abs(off.mean()) < 0.01 and off.var() == pytest.approx(1 / 16, rel=0.05)
    with pytest.raises(ValueError, match="pattern 'signs'"):
        plan_reserved_examples(500, reserved=16, num_classes=10, sampling_rate=0.1,
                               rng=np.random.default_rng(0))


def test_sign_examples_move_only_the_reserved_layer_along_their_pattern() -> None:
    # W (branch[0].weight, width x R) gets exactly zero gradient from real data (reserved
    # inputs 0) and canary i's gradient on W is rank one, delta_i u_i^T; the reading
    # direction of the library (one batched pass) is canary i's own delta_i, computed
    # here canary by canary with autograd.
    torch.manual_seed(0)
    m = make_model("mlp", hidden=8, in_features=64, reserved=16)
    can = ExampleCanaries.for_model(m, 50, sampling_rate=0.1, max_grad_norm=1.0,
                                    num_classes=10, seed=1)
    assert can.plan.pattern == "signs" and can.x.shape == (50, 80)
    assert torch.allclose(can.x[:, 64:].norm(dim=1), torch.full((50,), 10.0))
    w = m.branch[0].weight
    real = torch.rand(20, 64)
    nn.functional.cross_entropy(m(torch.cat([real, torch.zeros(20, 16)], dim=1)),
                                torch.arange(20) % 10).backward()
    assert float(w.grad.abs().max()) == 0.0
    u = can.plan.units()
    d = can.directions()
    for i in range(5):
        m.zero_grad()
        nn.functional.cross_entropy(m(can.x[i:i + 1]), can.y[i:i + 1]).backward()
        g = w.grad.double().numpy()
        own = g @ u[i]
        assert np.abs(g - np.outer(own, u[i])).max() < 1e-6
        assert np.allclose(own / np.linalg.norm(own), d[i], atol=1e-5)


@pytest.mark.slow
def test_token_canaries_move_only_their_rows_under_opacus() -> None:
    # the EmbeddingBag text model of the own-model cases, its data through make_private's
    # loader: per-sample gradients on the embedding table (Opacus's) are exactly zero on
    # the reserved rows for real examples, and a canary's are zero outside its own row.
    sys.path.insert(0, str(Path(__file__).parent))
    from own_model_cases import V, _Bag, _private

    torch.manual_seed(0)
    m = _Bag()
    ids = reserve_token_rows(m.emb, 8)
    assert ids.tolist() == list(range(V, V + 8)) and m.emb.weight.shape == (V + 8, 16)
    can = TokenCanaries.for_tokens(ids, 8, length=6, num_classes=2, sampling_rate=0.1)
    assert set(can.tokens.tolist()) <= set(ids.tolist()) and can.x.shape == (8, 6)
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, V, (200, 6), generator=gen)
    y = (x < V // 2).float().mean(1).gt(0.5).long()
    xc, yc = can.included()
    model, opt, loader, _ = _private(m, torch.cat([x, xc]), torch.cat([y, yc]))
    opt.zero_grad()
    nn.functional.cross_entropy(model(torch.cat([x[:5], can.x])),
                                torch.cat([y[:5], can.y])).backward()
    gs = m.emb.weight.grad_sample                                   # (13, V + 8, 16)
    assert float(gs[:5][:, ids].abs().max()) == 0.0
    for i in range(can.n):
        moved = (gs[5 + i].abs().sum(1) > 0).nonzero().flatten().tolist()
        assert moved == [int(can.tokens[i])]
    with pytest.raises(ValueError, match="embedding"):
        reserve_token_rows(nn.Linear(2, 2), 3)                       # type: ignore[arg-type]


@pytest.mark.slow
def test_black_box_default_runs_end_to_end(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["train-audit", "--threat", "black_box", "--canaries", "400", "--reserved",
                 "64", "--steps", "60", "--hidden", "32", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["canary"] == "input" and out["threat"] == "black_box"
    assert out["settings"]["input_kind"] == "reserved" and out["canaries"] == 400
    assert out["training"]["reserved"] == 64                        # 400 > 64: signs
    # a correct run: no violation and no check showing a weaker run (the trainer's
    # int(N q) divisor may be reported as Opacus's normalisation finding at some N)
    assert not out["violation"] and not any(c["weaker"] for c in out["claim_checks"])
    assert out["training"]["test_accuracy"] > 0.5


@pytest.mark.slow
def test_black_box_default_does_not_flag_correct_runs() -> None:
    # a few seeds of correct training at a small setting (more: the study); and the old
    # spelling (flipped labels) still runs
    for seed in range(3):
        a = train_audit(TrainingConfig(canary="input", threat="black_box", canaries=400,
                                       hidden=32, steps=60, seed=seed))
        assert a.run is not None and a.run.config.input_kind == "reserved"
        assert not a.violation and a.results[0].epsilon <= a.claimed_epsilon
    flip = train_audit(TrainingConfig(canary="input", threat="black_box", input_kind="flip",
                                      canaries=100, hidden=32, steps=40))
    assert not flip.violation


@pytest.mark.slow
def test_reserved_input_canaries_are_refused_where_they_cannot_run(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="reserved features"):
        TrainingConfig(canary="input", threat="black_box", model="cnn",
                       input_kind="reserved")
    assert main(["train-audit", "--framework", "jax", "--threat", "black_box",
                 "--input-kind", "reserved", "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "input_kind" in err[0]
