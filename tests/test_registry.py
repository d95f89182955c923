"""The estimator registry (dpaudit.registry) and its one calling convention
(dpaudit.estimators.dispatch.bound): names, guarantee kinds, unknown names refused."""

from __future__ import annotations

import pytest

from dpaudit import estimators as E
from dpaudit import registry
from dpaudit.estimators.one_run import DISTRIBUTION_METHODS, ONE_RUN_METHODS
from dpaudit.results import AuditResult
from dpaudit.verdict import verdict_from_results


def test_every_one_run_method_is_registered_with_its_guarantee():
    assert ONE_RUN_METHODS == ("tight", "bits", "steinke", "mahloujifar")
    assert all(registry.get(m).guarantee == registry.ANY_MECHANISM for m in ONE_RUN_METHODS)
    kinds = {m: registry.get(m).guarantee for m in DISTRIBUTION_METHODS}
    assert kinds == {"hockey_stick": registry.UNDER_ASSUMPTION,
                     "gaussian_pair_equal": registry.UNDER_ASSUMPTION,
                     "gaussian_pair": registry.ESTIMATE, "gaussian_pair_fit": registry.ESTIMATE,
                     "hockey_stick_histogram": registry.ESTIMATE}
    assert registry.get("multi_run_gdp").guarantee == registry.ESTIMATE
    with pytest.raises(ValueError, match="method must be one of"):
        registry.get("tihgt")


def test_cli_bound_commands_are_registered():
    from dpaudit.cli.bound import BOUND_METHODS

    assert {b.name for b in BOUND_METHODS} <= set(registry.ESTIMATORS)


@pytest.mark.parametrize("method, old, new", [
    ("tight", dict(n=1000, r=100, u=3), dict(canaries=1000, guesses=100, wrong=3)),
    ("steinke", dict(m=1000, guesses=100, correct=97), dict(canaries=1000, guesses=100,
                                                           wrong=3)),
    ("mahloujifar", dict(m=1000, guesses=100, correct=97), dict(canaries=1000, guesses=100,
                                                               wrong=3)),
    ("bits", dict(n=1000, errors=300), dict(canaries=1000, wrong=300)),
])
def test_one_calling_convention_same_numbers_as_the_functions(method, old, new):
    fn = getattr(E, method)
    assert E.bound(method, **new).epsilon == fn(**old).epsilon
    assert E.bound(method, **old).epsilon == fn(**old).epsilon   # old spellings accepted


def test_bound_refuses_unknown_and_misfit_methods():
    with pytest.raises(ValueError, match="method must be one of"):
        E.bound("nope", canaries=10, guesses=2, wrong=0)   # never a silent Mahloujifar
    with pytest.raises(ValueError, match="not guess counts"):
        E.bound("multi_run", canaries=10, guesses=2, wrong=0)
    with pytest.raises(ValueError, match="guesses"):
        E.bound("tight", canaries=10, guesses=20, wrong=0)
    with pytest.raises(ValueError, match="exactly one of wrong and correct"):
        E.bound("tight", canaries=10, guesses=2)
    with pytest.raises(ValueError, match="once"):
        E.bound("tight", canaries=10, n=10, guesses=2, wrong=0)


def _row(method, eps, **kw):
    return AuditResult(epsilon=eps, delta=1e-5, confidence=0.95, method=method, **kw)


def test_rows_decide_only_when_their_assumption_was_asked_for():
    eq = _row("gaussian_pair_equal", 3.0, assumption=registry.ASSUMPTIONS["gaussian_scores"],
              settings={"simultaneous": True})
    tight = _row("tight", 0.5, settings={"simultaneous": True})
    v = verdict_from_results([tight, eq], 1.0, rule="bonferroni")
    assert not v.violation and v.methods == ("tight",)
    v = verdict_from_results([tight, eq], 1.0, rule="bonferroni", assume=("gaussian_scores",))
    assert v.violation and v.basis is eq and v.message().startswith("assuming in/out")
    with pytest.raises(ValueError, match="--assume gaussian_scores"):
        verdict_from_results([eq, tight], 1.0)
    with pytest.raises(ValueError, match="assume must name"):
        verdict_from_results([tight], 1.0, assume=("gdp_scores",))
    # a user's own method with an assumption of its own never counts as any-mechanism
    own = _row("my_method", 5.0, assumption="scores are Gaussian")
    assert registry.guarantee_kind(own) == registry.UNDER_ASSUMPTION
    assert registry.row_kind(_row("tight", 1.0, settings={"family": "dpsgd(sigma=1)"})) \
        == "curve"


def test_dpsgd_curve_rows_are_never_worded_as_bounds():
    from dpaudit.verdict import verdict_sentence

    fam = {"family": "dpsgd(sigma=1, q=0.05, T=300)"}
    assert registry.epsilon_cell(_row("tight", 49.48, settings=fam), "49.48") \
        == "fails DP-SGD curve at 49.48"
    assert registry.epsilon_cell(_row("tight", 0.0, settings=fam), "0") \
        == "rejects no DP-SGD member"
    assert registry.epsilon_cell(_row("steinke", 0.5), "0.5") == ">= 0.5"
    v = verdict_sentence(49.48, 3.5, curve="DP-SGD", sigma=0.36, confidence=0.95)
    assert v.startswith("violation: the run fails the claimed DP-SGD curve at sigma = 0.36")
    assert "epsilon >=" not in v
    assert verdict_sentence(0.0, 3.5, curve="DP-SGD").endswith("no member rejected)")
