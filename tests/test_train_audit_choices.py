"""``train-audit`` refuses an invalid choice before torch, Opacus or JAX is imported (one
``error:`` line, exit 2), in a fresh interpreter so nothing was imported before."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dpaudit.training.choices import check_train_audit

_PROBE = """
import sys
from dpaudit.cli import main
rc = main(["train-audit", *sys.argv[1:]])
heavy = sorted(m for m in ("torch", "opacus", "jax", "jax_privacy") if m in sys.modules)
print("rc", rc, "heavy", heavy)
"""


@pytest.mark.slow
@pytest.mark.parametrize("args,name", [
    (["--model", "nan"], "model"),
    (["--flawed", "nope"], "flawed"),
    (["--framework", "jax", "--flawed", "lowered_sigma"], "flawed"),  # an Opacus-only flaw
    (["--framework", "jax", "--model", "cnn"], "model"),
    (["--framework", "tf"], "framework"),
    (["--data", "mnist"], "data"),
    (["--shapes", "round"], "shapes"),
    (["--threat", "grey_box"], "threat"),
])
def test_invalid_choice_refused_before_the_framework_import(args: list[str], name: str) -> None:
    r = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True,
                       timeout=120)
    assert r.stdout.strip().splitlines()[-1] == "rc 2 heavy []", r.stdout + r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {name} must be"), r.stderr


def test_valid_choices_pass() -> None:
    for fw, flaw in (("opacus", "too_few_steps"), ("jax", "strategy_mismatch")):
        check_train_audit(framework=fw, mechanism="dpsgd", model="mlp", canary="gradient",
                          threat=None, flawed=flaw, score="lr", input_kind="flip",
                          data="digits", shapes="dirac")
