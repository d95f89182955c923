"""``train-audit`` refuses an invalid choice before torch, Opacus or JAX is imported (one
``error:`` line, exit 2): the cases run in turn in one fresh interpreter, which imported
nothing before (one interpreter start instead of one per case)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dpaudit.training.choices import check_train_audit

_PROBE = """
import json, sys
from dpaudit.cli import main
for args in json.loads(sys.argv[1]):
    rc = main(["train-audit", *args])
    heavy = sorted(m for m in ("torch", "opacus", "jax", "jax_privacy") if m in sys.modules)
    print("rc", rc, "heavy", heavy)
    sys.stderr.write("--- end of case\\n")
"""


_CASES = [
    (["--model", "nan"], "model"),
    (["--flawed", "nope"], "flawed"),
    (["--framework", "jax", "--flawed", "lowered_sigma"], "flawed"),  # an Opacus-only flaw
    (["--framework", "jax", "--model", "cnn"], "model"),
    (["--framework", "tf"], "framework"),
    (["--data", "mnist"], "data"),
    (["--shapes", "round"], "shapes"),
    (["--threat", "grey_box"], "threat"),
    (["--model", "lm", "--finetune", "bogus"], "finetune"),
    (["--model", "lm", "--sequence-kind", "bogus"], "sequence_kind"),
    (["--model", "lm", "--device", "tpu"], "device"),
    (["--model", "lm", "--flawed", "mean_noise"], "flawed"),  # an Opacus flaw, not the LM's
]


@pytest.mark.slow
def test_invalid_choice_refused_before_the_framework_import() -> None:
    # one fresh interpreter for every case, in turn: a case that imported a framework would
    # show it in its own line (and every later one), so each line names the first culprit
    r = subprocess.run([sys.executable, "-c", _PROBE, json.dumps([a for a, _ in _CASES])],
                       capture_output=True, text=True, timeout=300)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("rc ")]
    errs = r.stderr.split("--- end of case\n")
    assert len(lines) == len(_CASES), r.stdout + r.stderr
    for (args, name), line, err in zip(_CASES, lines, errs[:-1], strict=True):
        assert line == "rc 2 heavy []", (args, line, err)
        errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
        assert len(errors) == 1 and errors[0].startswith(f"error: {name} must be"), (args, err)


@pytest.mark.slow
@pytest.mark.torch
def test_lm_choices_are_the_configs_own() -> None:
    """The LM's choices checked before the import are the ones its config and modules use."""
    from dpaudit.training import choices

    pytest.importorskip("torch")
    from dpaudit.training.lm import canaries, corpus, trainer

    assert trainer.FINETUNES == choices.LM_FINETUNES == ("full", "lora")
    assert canaries.SEQUENCE_KINDS == choices.LM_SEQUENCE_KINDS
    assert canaries.LM_SHAPES == choices.LM_SHAPES and corpus.CORPORA == choices.LM_CORPORA
    from dpaudit.training.lm import flaws

    assert flaws.LM_FLAWS == choices.LM_FLAWS
    # the config accepts every listed value and refuses an unlisted one with the same message
    from dpaudit.training.lm import LMConfig

    for v in choices.LM_FINETUNES:
        LMConfig(finetune=v)
    for v in choices.LM_SEQUENCE_KINDS:
        LMConfig(sequence_kind=v)
    for kw in ({"finetune": "bogus"}, {"sequence_kind": "bogus"}, {"flawed": "mean_noise"}):
        with pytest.raises(ValueError) as early:
            choices.check_lm_choices(**{"finetune": None, "sequence_kind": None,
                                        "device": None, **kw})
        with pytest.raises(ValueError) as late:
            LMConfig(**kw)
        assert str(early.value) == str(late.value)
    choices.check_lm_choices(finetune="lora", sequence_kind="random", device="cuda:1")
    with pytest.raises(ValueError, match="sequence_kind must be one of"):
        choices.check_lm_choices(finetune=None, sequence_kind="x", device=None)


def test_valid_choices_pass() -> None:
    for fw, flaw in (("opacus", "too_few_steps"), ("jax", "strategy_mismatch")):
        check_train_audit(framework=fw, mechanism="dpsgd", model="mlp", canary="gradient",
                          threat=None, flawed=flaw, score="lr", input_kind="flip",
                          data="digits", shapes="dirac")
