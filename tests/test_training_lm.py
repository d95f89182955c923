"""DP fine-tuning audits of a language model (dpaudit.training.lm), on a CPU-tiny GPT-2.

Real training throughout (Opacus, transformers, peft); every run is a few steps on the
project's synthetic corpus, so the file takes seconds per run.  Validity is checked on correct
runs (no violation, no configuration error), power on flaws with a deterministic signature
(parameters outside the DP optimizer receive the canary's unclipped gradient; skipped noise
leaves a silent row exactly noiseless)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from needs import need

pytestmark = [pytest.mark.slow, pytest.mark.torch]


@pytest.fixture(autouse=True, scope="module")
def _frameworks() -> None:
    """torch, transformers, peft, Opacus and dpaudit.training.lm: imported when a test of this
    module runs, not when the suite is collected (the names are this module's globals)."""
    global torch, LMConfig, train_audit_lm, exposure, make_sequence_canaries, silent_activity
    global BASE_VOCAB, corpus_split, LMShape, add_lora, lm_loss, make_lm
    need("transformers")
    need("peft")
    need("opacus")
    torch = need("torch")
    from dpaudit.training.lm import LMConfig, train_audit_lm
    from dpaudit.training.lm.canaries import exposure, make_sequence_canaries, silent_activity
    from dpaudit.training.lm.corpus import BASE_VOCAB, corpus_split
    from dpaudit.training.lm.model import LMShape, add_lora, lm_loss, make_lm


TINY = dict(data="synthetic", pretrain_steps=5, steps=8, sampling_rate=0.05, canaries=200,
            noise_multiplier=1.0, learning_rate=0.2)


@pytest.fixture(scope="module")
def runs() -> dict:
    torch.set_num_threads(1)
    out = {}
    for name, kw in {"correct": {}, "outside": {"flawed": "embedding_outside_dp",
                                                "sampling_rate": 0.1, "steps": 10},
                     "skipped": {"flawed": "skipped_noise"},
                     "head": {"flawed": "head_outside_dp"},
                     "lora": {"finetune": "lora", "canaries": 100}}.items():
        out[name] = train_audit_lm(LMConfig(**{**TINY, **kw}))
    return out


@pytest.mark.slow
def test_reserved_rows_and_unused_positions_get_no_real_gradient():
    # Opacus's own per-sample gradients on real fine-tuning text: exactly zero on the rows
    # the plan calls silent, non-zero on the ordinary token rows
    from opacus import GradSampleModule

    shape = LMShape(vocab=BASE_VOCAB + 8, positions=32, width=16, layers=1, heads=2)
    model = make_lm(shape, seed=0)
    x = torch.from_numpy(np.array(corpus_split("synthetic", 16).finetune[:12]))
    gsm = GradSampleModule(model, loss_reduction="mean")
    lm_loss(gsm, x).backward()
    wte = model.transformer.wte.weight.grad_sample
    wpe = model.transformer.wpe.weight.grad_sample
    assert torch.count_nonzero(wte[:, BASE_VOCAB:]) == 0
    assert torch.count_nonzero(wpe[:, 16:]) == 0
    assert torch.count_nonzero(wte[:, :BASE_VOCAB]) > 0 and torch.count_nonzero(wpe[:, :16]) > 0
    params = [p for p in model.parameters() if p.requires_grad]
    act = silent_activity(params, model, np.arange(BASE_VOCAB, BASE_VOCAB + 8),
                          unused_positions=np.arange(16, 32))
    assert int((act == 0).sum()) == 8 * 16 + 16 * 16


@pytest.mark.slow
def test_correct_full_fine_tuning_is_not_flagged(runs):
    a = runs["correct"]
    assert not a.violation and a.configuration_errors == []
    assert a.results[0].epsilon <= a.claimed_epsilon
    assert a.run.lm["reserved_tokens"] == 64 and a.run.lm["shape"]["vocab"] == 320


@pytest.mark.slow
def test_embedding_outside_the_dp_optimizer_is_caught(runs):
    a = runs["outside"]
    # the canaries on the embedding rows are trained without clipping or noise: each sampled
    # step reads exactly 1000 C (scale), an LR score near 1000 / sigma^2; about 2/3 of the
    # canaries sit on those rows (the rest on unused positions) and a member is sampled
    # w.p. 1 - 0.9^10 = 0.65
    s = a.observations.score[a.observations.member]
    assert (s > 900).mean() > 0.25 and (a.observations.score[~a.observations.member] < 50).all()
    assert a.violation and a.results[0].epsilon > a.claimed_epsilon
    assert any("noise measured" in m for m in a.configuration_errors)


@pytest.mark.slow
def test_skipped_noise_is_measured_on_the_probe_row(runs):
    a = runs["skipped"]
    (msg,) = [m for m in a.configuration_errors if "noise measured" in m]
    # noise skipped on every 4th of 8 steps: steps 4 and 8
    assert "at 2 of 8 steps (first at step 4;" in msg


@pytest.mark.slow
def test_lm_head_outside_the_dp_optimizer_shows_no_noise(runs):
    # the head's probe row carries only the (tiny) real gradient: below any chi^2 floor
    a = runs["head"]
    assert any("noise measured" in m and "at 8 of 8 steps" in m for m in a.configuration_errors)


@pytest.mark.slow
def test_lora_fine_tuning_trains_adapters_and_new_token_rows(runs):
    a = runs["lora"]
    assert not a.violation and a.configuration_errors == []
    lm = a.run.lm
    # LoRA rank 4 on c_attn (64 -> 192) in 2 layers, plus the input embedding (320 x 64)
    assert lm["trainable_parameters"] == 2 * (4 * 64 + 192 * 4) + 320 * 64
    model = add_lora(make_lm(LMShape(vocab=300, positions=16, width=16, layers=1), seed=0), 2)
    names = {n for n, p in model.named_parameters() if p.requires_grad}
    assert names == {"base_model.model.transformer.wte.weight",
                     "base_model.model.transformer.h.0.attn.c_attn.lora_A.default.weight",
                     "base_model.model.transformer.h.0.attn.c_attn.lora_B.default.weight"}


def test_sequence_canary_designs():
    split = corpus_split("synthetic", 16)
    rng = np.random.default_rng(0)
    new = make_sequence_canaries("new_token", 40, split.heldout, rng=rng, secret_length=3,
                                 reserved_tokens=np.arange(300, 340))
    ids = new.ids.numpy()
    assert ids.shape == (40, 16) and new.secret.sum() == 40 * 3
    assert (ids[:, -3:] == np.arange(300, 340)[:, None]).all() and (ids[:, :-3] < 256).all()
    assert new.included().shape[0] == int(new.bits.sum())
    rare = make_sequence_canaries("rare_token", 40, split.heldout, rng=rng,
                                  byte_counts=split.byte_counts)
    rarest = np.sort(split.byte_counts)[15]
    assert (split.byte_counts[rare.ids.numpy()[:, -4:]] <= rarest).all()
    rand = make_sequence_canaries("random", 40, split.heldout, rng=rng)
    assert ((rand.ids[:, -4:] >= 32) & (rand.ids[:, -4:] < 127)).all()
    with pytest.raises(ValueError, match="new_token canaries need one reserved token"):
        make_sequence_canaries("new_token", 40, split.heldout, rng=rng,
                               reserved_tokens=np.arange(300, 310))
    with pytest.raises(ValueError, match="sequence_kind"):
        make_sequence_canaries("secret", 40, split.heldout, rng=rng)


def test_exposure_by_hand():
    # members 5.0 (above all 3 non-members: rank 1) and 1.5 (rank 3 of 3):
    # exposure log2(4) - log2(1) = 2 and log2(4) - log2(3)
    e = exposure(np.array([1, 0, 1, 0, 0]), np.array([5.0, 1.0, 1.5, 2.0, 3.0]))
    assert e["max_bits"] == pytest.approx(2.0)
    assert e["median_bits"] == pytest.approx((2.0 + 2 - math.log2(3)) / 2)


@pytest.mark.parametrize("kw, name", [({"finetune": "qlora"}, "finetune"),
                                      ({"sequence_kind": "secret"}, "sequence_kind"),
                                      ({"shapes": "tensors", "finetune": "lora"}, "shapes"),
                                      ({"flawed": "mean_noise"}, "flawed"),
                                      ({"secret_length": 40}, "secret_length"),
                                      ({"hidden": 30, "heads": 4}, "width")])
def test_bad_config(kw, name):
    with pytest.raises(ValueError, match=name):
        LMConfig(**kw)


@pytest.mark.slow
def test_cli_black_box_json_report_and_scores(tmp_path, capsys):
    from dpaudit.cli import main
    from dpaudit.risk.bounds import single_target_bound

    card, scores = tmp_path / "card.html", tmp_path / "s.csv"
    rc = main(["train-audit", "--model", "lm", "--threat", "black_box", "--data", "synthetic",
               "--canaries", "40", "--steps", "4", "--pretrain-steps", "5",
               "--sampling-rate", "0.05", "--json", "--report", str(card),
               "--save-scores", str(scores)])
    doc = json.loads(capsys.readouterr().out)
    assert rc in (0, None)
    assert doc["threat"] == "black_box" and doc["lm"]["canary_design"] == "new_token sequences"
    assert doc["violation"] is False and doc["configuration_errors"] == []
    risk = doc["extraction_risk"]
    # Beyond Worst Case Thm 3.2/3.5 by hand: beta = e^eps p / (e^eps p + 1 - p)
    p, e, d = 1 / 63, doc["claimed_epsilon"], 1e-5   # 63 canary tokens + 1 probe row
    b = math.exp(e) * p / (math.exp(e) * p + 1 - p)
    assert risk["prior"] == pytest.approx(p)
    assert risk["success_bound"] == pytest.approx(b + (1 - b) * d, rel=1e-9)
    assert risk["success_bound"] == pytest.approx(single_target_bound(p, e, d))
    assert doc["extraction_risk_bound"] == risk["success_bound"]
    lines = scores.read_text().splitlines()
    assert lines[0] == "member,score" and len(lines) == 41
    assert "extraction_risk_bound" in card.read_text(encoding="utf-8")


@pytest.mark.slow
def test_cli_lm_options_rejected_elsewhere(capsys):
    from dpaudit.cli import main

    assert main(["train-audit", "--model", "mlp", "--finetune", "lora"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "--finetune" in err[0]
    assert main(["train-audit", "--model", "lm", "--finetune", "qlora"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "finetune" in err[0]
