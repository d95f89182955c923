"""``dpaudit.training.common``: the one home of what the Opacus and JAX training paths share.

Checked: both frameworks' configs take the shared settings (same fields, defaults, checks and
``to_dict`` keys as before they shared them), the audit outcome's verdict properties on real
results (epsilon lower bound > claim <=> violation), and the digits split against
scikit-learn's own split.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from dpaudit.canaries import ClaimCheck
from dpaudit.outcome import Audit
from dpaudit.results import AuditResult
from dpaudit.training.common import (
    INPUT_KINDS,
    TrainingSettings,
    load_digits_split,
)
from dpaudit.training.facts import TrainingFacts
from needs import need

SHARED = {"canary": "gradient", "threat": "white_box", "canaries": 1000,
          "noise_multiplier": 1.0, "sampling_rate": 0.05, "steps": 300, "max_grad_norm": 1.0,
          "learning_rate": 2.0, "flawed": None, "seed": 0, "hidden": 256, "score": "lr",
          "input_kind": "reserved", "canary_scale": 1000.0, "sentinel": 0.03}


@pytest.mark.slow
def test_common_imports_neither_torch_nor_jax() -> None:
    import subprocess

    code = ("import sys, dpaudit.training.common; "
            "print(sorted(m for m in ('torch', 'jax', 'opacus') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_shared_defaults_and_checks() -> None:
    assert TrainingSettings().to_dict() == SHARED
    with pytest.raises(ValueError, match="canaries"):
        TrainingSettings(canaries=1)
    with pytest.raises(ValueError, match="threat 'black_box' needs canary 'input'"):
        TrainingSettings(threat="black_box")
    with pytest.raises(ValueError, match="canary_scale must be >= 1"):
        TrainingSettings(canary_scale=0.5)
    with pytest.raises(ValueError, match="flawed"):  # the base knows no flaw
        TrainingSettings(flawed="mean_noise")


@pytest.mark.slow  # imports torch (seconds)
@pytest.mark.torch
def test_opacus_config_keeps_its_keys_and_checks() -> None:
    need("torch")
    from dpaudit.training.flaws import FLAWS
    from dpaudit.training.trainer import TrainingConfig

    d = TrainingConfig().to_dict()
    assert d == {**SHARED, "model": "mlp", "threads": 1, "data": "digits", "reserved": 0,
                 "shapes": "dirac", "claimed_steps": None, "canary_branch": None}
    assert TrainingConfig.FLAWS == FLAWS and "backprop_clipping" in FLAWS
    assert TrainingConfig(flawed="backprop_clipping").flawed == "backprop_clipping"
    with pytest.raises(ValueError, match="flawed"):
        TrainingConfig(flawed="strategy_mismatch")  # a JAX flaw
    with pytest.raises(ValueError, match="model"):
        TrainingConfig(model="resnet")
    with pytest.raises(ValueError, match="noise_multiplier"):
        TrainingConfig(noise_multiplier=0.0)


@pytest.mark.slow  # imports JAX (seconds)
@pytest.mark.jax
def test_jax_config_keeps_its_keys_and_checks() -> None:
    need("jax_privacy")
    from dpaudit.training.jax import FLAWS, JaxTrainingConfig

    d = JaxTrainingConfig().to_dict()
    assert d == {**SHARED, "input_kind": "flip", "mechanism": "dpsgd", "bands": 4,
                 "canary_branch": False}
    assert JaxTrainingConfig(flawed="strategy_mismatch").flawed == "strategy_mismatch"
    assert JaxTrainingConfig.FLAWS == FLAWS
    with pytest.raises(ValueError, match="flawed"):
        JaxTrainingConfig(flawed="backprop_clipping")  # an Opacus flaw
    with pytest.raises(ValueError, match=r"bands must be in \[2, steps=3\]"):
        JaxTrainingConfig(mechanism="bandmf", bands=4, steps=3)
    with pytest.raises(ValueError, match="sampling_rate"):
        JaxTrainingConfig(sampling_rate=0.0)
    assert INPUT_KINDS == ("reserved", "flip", "random_label", "ood")
    with pytest.raises(ValueError, match="input_kind must be flip, random_label or ood"):
        JaxTrainingConfig(canary="input", threat="black_box", input_kind="reserved")
    # the canary branch is for gradient canaries, and a flag
    with pytest.raises(ValueError, match="canary_branch applies to gradient canaries"):
        JaxTrainingConfig(canary="input", threat="black_box", canary_branch=True)
    with pytest.raises(ValueError, match="canary_branch must be True or False"):
        JaxTrainingConfig(canary_branch=1)  # type: ignore[arg-type]


def _outcome(rows: list[AuditResult], claimed: float, checks: list[ClaimCheck]) -> Audit:
    """A training audit's outcome: the one Audit with TrainingFacts (as every framework)."""
    from dpaudit.claim import falsified_by

    facts = TrainingFacts("own", "white_box", 1e-5, 0.95, checks=tuple(checks))
    return Audit.of(rows, claimed, falsified_by=falsified_by(checks), facts=facts)


def test_outcome_verdict_properties() -> None:
    rows = [AuditResult(epsilon=1.25, delta=1e-5, confidence=0.95, method="tight"),
            AuditResult(epsilon=3.0, delta=1e-5, confidence=0.95, method="steinke")]
    ok = ClaimCheck("steps", True, 100, 100, "steps: claim 100, run 100")
    bad = ClaimCheck("noise_multiplier", False, 1.0, 0.25, "noise multiplier: claim 1, run 0.25")
    a = _outcome(rows, 1.0, [bad, ok])
    assert a.verdict_result is rows[0]          # the first row, not the largest
    assert a.violation is True                  # 1.25 > 1.0
    assert _outcome(rows, 1.25, []).violation is False   # equal to the claim: no violation
    # less noise than claimed falsifies the claim whatever the statistics (a violation)
    assert _outcome(rows, 1.25, [bad]).violation is True
    more = ClaimCheck("noise_multiplier", False, 1.0, 4.0, "noise multiplier: claim 1, run 4")
    assert _outcome(rows, 1.25, [more]).violation is False   # more noise: not a violation
    # the facts read through the Audit (the former outcome classes' attributes)
    assert a.configuration_errors == ["noise multiplier: claim 1, run 0.25"]
    assert a.checks == a.claim_checks == (bad, ok) and a.threat == "white_box"
    assert a.weaker_run == ["noise multiplier: claim 1, run 0.25"]
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        _ = a.nonsense


def test_training_facts_reject_an_unknown_framework() -> None:
    with pytest.raises(ValueError, match="framework"):
        TrainingFacts("tensorflow", "white_box", 1e-5, 0.95)  # type: ignore[arg-type]


def test_digits_split_is_sklearns() -> None:
    need("sklearn")
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    xtr, ytr, xte, yte = load_digits_split(3, test_fraction=0.2)
    x, y = load_digits(return_X_y=True)
    a, b, c, d = train_test_split(x, y, test_size=0.2, random_state=3, stratify=y)
    assert xtr.dtype == np.float32 and xtr.shape == (1437, 64) and xte.shape == (360, 64)
    np.testing.assert_array_equal(xtr, (a / 16.0).astype(np.float32))
    np.testing.assert_array_equal(ytr, c)
    np.testing.assert_array_equal(yte, d)
    assert float(xtr.max()) == 1.0 and float(xtr.min()) == 0.0


def test_the_noise_flaws_skip_the_same_steps_in_every_framework() -> None:
    """``noise_added`` is the one schedule (steps 1, 3, ... without noise under
    ``skipped_noise``; 3, 7, ... under ``zero_steps``), and Opacus's ``SkippedNoiseOptimizer``
    follows it: on the steps it skips, the released gradient is the clipped sum itself."""
    from dpaudit.training.common import noise_added

    steps = range(8)
    assert [noise_added("skipped_noise", t) for t in steps] == [True, False] * 4
    assert [noise_added("zero_steps", t) for t in steps] == [True, True, True, False] * 2
    assert all(noise_added(None, t) and noise_added("mean_noise", t) for t in steps)
    torch = need("torch")
    need("opacus")
    from dpaudit.training.flaws import SkippedNoiseOptimizer

    p = torch.nn.Parameter(torch.zeros(50))
    opt = SkippedNoiseOptimizer(torch.optim.SGD([p], lr=1.0), noise_multiplier=1.0,
                                max_grad_norm=1.0, expected_batch_size=1)
    noisy = []
    for _ in steps:
        p.summed_grad = torch.ones(50)
        opt.add_noise()
        noisy.append(bool((p.grad != 1.0).any()))
    assert noisy == [noise_added("skipped_noise", t) for t in steps]
