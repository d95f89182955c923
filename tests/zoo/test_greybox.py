"""Grey-box recorder and replay on mechanisms written for the test (exact expectations)."""

import math
import random

import numpy as np
import pytest

from dpaudit.greybox import Primitive, Recorder, replay
from dpaudit.greybox.replay import implied_epsilon


class AddNoise:
    """An additive Laplace primitive: value + Lap(sensitivity / epsilon)."""

    def __init__(self, epsilon: float, sensitivity: float, rng: np.random.RandomState):
        self.epsilon, self.sensitivity, self.rng = epsilon, sensitivity, rng

    def randomise(self, value: float) -> float:
        return value + self.rng.laplace(0.0, self.sensitivity / self.epsilon)


def _read(obj, args, kwargs):
    return {"value": args[0], "sensitivity": obj.sensitivity, "epsilon": obj.epsilon}


PRIM = (Primitive("test.AddNoise.randomise", f"{__name__}.AddNoise", "randomise", _read),)


def clamped_sum(data, seed):
    """Correct: clamp to [0, 1], sensitivity 1."""
    rs = np.random.RandomState(seed)
    return AddNoise(1.0, 1.0, rs).randomise(float(np.clip(data, 0, 1).sum()))


def unclamped_sum(data, seed):
    """Flawed: sensitivity 1 declared, values not clamped."""
    rs = np.random.RandomState(seed)
    return AddNoise(1.0, 1.0, rs).randomise(float(np.sum(data)))


def split_budget(data, seed):
    """Flawed: two releases at epsilon 1 each, claimed 1 in total."""
    rs = np.random.RandomState(seed)
    s = float(np.clip(data, 0, 1).sum())
    return AddNoise(1.0, 1.0, rs).randomise(s), AddNoise(1.0, 1.0, rs).randomise(len(data))


def data_dependent_loop(data, seed):
    """Flawed: the number of noisy releases depends on the data."""
    rs = np.random.RandomState(seed)
    return [AddNoise(1.0, 1.0, rs).randomise(0.0) for _ in range(int(sum(data) > 0) + 1)]


def test_correct_mechanism_has_no_finding():
    findings, t0, t1 = replay(clamped_sum, [0.2, 5.0], [0.2, 5.0, 7.0], PRIM,
                              claimed_epsilon=1.0)
    assert findings == []
    assert [c.inputs["value"] for c in t0.calls] == [1.2]
    assert [c.inputs["value"] for c in t1.calls] == [2.2]
    assert implied_epsilon(t0, t1) == pytest.approx(1.0, rel=1e-15)  # 2.2 - 1.2 in floats


def test_sensitivity_falsification_names_the_call_site():
    findings, _, _ = replay(unclamped_sum, [0.5], [0.5, 3.0], PRIM)
    (f,) = findings
    assert f.kind == "sensitivity" and f.measured == 3.0 and f.declared == 1.0
    assert f.epsilon_implied == 3.0
    assert f.site.endswith("test_greybox.py:" + str(unclamped_sum.__code__.co_firstlineno + 3))


def test_composition_exceeding_the_claim():
    findings, t0, t1 = replay(split_budget, [0.5], [0.5, 1.0], PRIM, claimed_epsilon=1.0)
    assert [f.kind for f in findings] == ["composition"]
    assert findings[0].measured == 2.0 and implied_epsilon(t0, t1) == 2.0


def test_control_flow_difference():
    findings, t0, t1 = replay(data_dependent_loop, [0.0], [0.0, 1.0], PRIM)
    assert findings[0].kind == "control_flow" and findings[0].index == 1
    assert (len(t0.calls), len(t1.calls)) == (1, 2)


def test_identical_randomness_and_restoration():
    def draw(data, seed):
        return random.random() + float(np.random.random())  # noqa: NPY002

    _, t0, t1 = replay(draw, [0], [1], PRIM)
    assert t0.output == t1.output
    assert [c.primitive for c in t0.all_calls] == ["random.random", "numpy.random.random"]
    original = AddNoise.randomise
    with Recorder(PRIM):
        assert AddNoise.randomise is not original
    assert AddNoise.randomise is original and random.random.__module__ != __name__
    assert math.isfinite(t0.output)
