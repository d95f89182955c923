"""dpaudit.claim.Claim: the null family valid for each kind of claim, decided there only;
falsified_by: configuration errors that show the run did less than the claim."""

from __future__ import annotations

import pytest

from dpaudit.claim import Claim, falsified_by
from dpaudit.curves import GaussianDP, LaplaceDP
from dpaudit.curves.families import GDP_ASSUMPTION


def test_null_family_per_claim():
    assert Claim(1.0).null_family().name == "eps_delta(delta=1e-05)"
    assert Claim(1.0).null_family().assumption is None
    gdp = Claim(1.0, family="gdp")          # an assumption on an (eps, delta) claim
    assert gdp.null_family().assumption == GDP_ASSUMPTION
    assert gdp.assumptions == (GDP_ASSUMPTION,)
    c = Claim.gdp(1.0)                      # the claim IS mu-GDP: its family, no assumption
    assert c.epsilon == pytest.approx(4.3772, abs=1e-4)    # DESIGN.md's value
    assert c.null_family().name == "gdp" and c.null_family().assumption is None
    # any other curve (e.g. a zCDP / Renyi guarantee converted to a curve): eps_delta at its
    # epsilon, valid for it
    lap = Claim.from_curve(LaplaceDP(1.0), 1e-5)
    # the Laplace curve's epsilon at delta = 1e-5 is just below 1 (0.99998)
    assert lap.epsilon == pytest.approx(0.99998, abs=1e-6)
    assert lap.null_family().assumption is None
    assert lap.null_family().name.startswith("eps_delta")
    assert Claim(2.0, curve=GaussianDP(0.5)).curve is not None


def test_claim_validation():
    with pytest.raises(ValueError, match="claimed_epsilon"):
        Claim(-1.0)
    with pytest.raises(ValueError, match="claimed_epsilon"):
        Claim(float("nan"))
    with pytest.raises(ValueError, match="relation"):
        Claim(1.0, relation="swap")
    with pytest.raises(ValueError, match="assume"):
        Claim(1.0, assume=frozenset({"nope"}))
    with pytest.raises(ValueError, match="family"):
        Claim(1.0, family="gaussianish")


class _Check:
    def __init__(self, name, claimed, observed, ok=False):
        self.name, self.claimed, self.observed, self.ok = name, claimed, observed, ok
        self.message = f"{name}: claimed {claimed}, observed {observed}"


def test_falsified_by_direction():
    assert falsified_by([_Check("noise_multiplier", 1.0, [1.0, 0.5])]) \
        == ("noise_multiplier: claimed 1.0, observed [1.0, 0.5]",)
    assert falsified_by([_Check("steps", 100, 120)]) != ()
    assert falsified_by([_Check("sampling_rate", 0.05, 0.08)]) != ()
    # more privacy than claimed, a passing check, or a check with no direction: nothing
    assert falsified_by([_Check("steps", 100, 80), _Check("noise_multiplier", 1.0, [2.0]),
                         _Check("steps", 100, 120, ok=True),
                         _Check("max_grad_norm", 1.0, [2.0])]) == ()
