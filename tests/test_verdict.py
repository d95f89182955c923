"""The verdict rules (dpaudit.estimators.verdict) and multi-split thresholds
(dpaudit.estimators.multi_split): logic, and Monte Carlo P(false violation) <= alpha on
mechanisms that meet their claim."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.estimators.multi_run import multi_run
from dpaudit.estimators.multi_split import multi_split
from dpaudit.estimators.verdict import one_run_verdict, verdict_from_results
from dpaudit.results import AuditResult


def _r(eps, method, conf=0.95, simultaneous=None):
    st = {} if simultaneous is None else {"simultaneous": simultaneous}
    return AuditResult(epsilon=eps, delta=0.0, confidence=conf, method=method, settings=st)


def test_primary_rule_uses_the_first_row_only():
    rs = [_r(0.8, "tight"), _r(1.4, "bits")]
    v = verdict_from_results(rs, 1.0)
    assert not v.violation and v.basis.method == "tight" and v.rule == "primary"
    assert "P[false violation] <= 0.05" in v.guarantee
    assert v.message().startswith("no violation detected")


def test_bonferroni_rule_needs_simultaneous_rows():
    rows = [_r(0.8, "tight"), _r(1.4, "bits")]
    with pytest.raises(ValueError, match="simultaneous=True"):
        verdict_from_results(rows, 1.0, rule="bonferroni")
    sim = [_r(0.8, "tight", simultaneous=True), _r(1.4, "bits", simultaneous=True)]
    v = verdict_from_results(sim, 1.0, rule="bonferroni")
    assert v.violation and v.basis.method == "bits"
    assert v.per_method_confidence == pytest.approx(0.975)
    assert v.message().startswith("violation: epsilon >= 1.4000 > claimed 1 at confidence 0.95")
    # rows each at 1 - 0.05/2 are a valid family at 0.95, but only when asked at 0.95
    with pytest.raises(ValueError, match="each at >= 0.9875"):
        verdict_from_results([_r(0.8, "a", 0.975), _r(1.4, "b", 0.975)], 1.0,
                             rule="bonferroni")
    v3 = verdict_from_results([_r(0.8, "a", 0.975), _r(1.4, "b", 0.975)], 1.0,
                              rule="bonferroni", confidence=0.95)
    assert v3.violation and v3.confidence == pytest.approx(0.95)
    d = v3.to_dict()
    assert d["verdict_rule"] == "bonferroni" and d["verdict_method"] == "b"
    with pytest.raises(ValueError, match="rule must be one of"):
        verdict_from_results(rows, 1.0, rule="best")
    with pytest.raises(ValueError, match="claimed_epsilon"):
        verdict_from_results(rows, -1.0)


def test_one_run_verdict_runs_simultaneous_for_bonferroni():
    rng = np.random.default_rng(0)
    member = rng.random(2000) < 0.5
    score = member + rng.normal(0, 0.3, 2000)  # a leaky mechanism (mu ~ 3.3)
    v, rs = one_run_verdict(member, score, 1.0, rule="bonferroni",
                            methods=("bits", "steinke"), delta=1e-5)
    assert all(r.settings["simultaneous"] for r in rs) and v.violation
    assert v.basis.epsilon == max(r.epsilon for r in rs)
    with pytest.raises(ValueError, match="sets simultaneous"):
        one_run_verdict(member, score, 1.0, simultaneous=True)


def _rr_trials(n, eps, rng):
    """n trials of eps-DP binary randomized response on the canary bit (the tight null)."""
    member = rng.random(n) < 0.5
    keep = rng.random(n) < math.exp(eps) / (1 + math.exp(eps))
    out = np.where(keep, member, ~member).astype(float)
    return member, out + rng.normal(0, 1e-9, n) * 0  # scores 0/1 (ties on purpose)


@pytest.mark.slow
def test_verdict_rules_false_violation_rate_on_a_correct_mechanism():
    """eps = 1 randomized response (exactly eps-DP, the tightest mechanism for its claim),
    400 audits of 4000 trials.  The family: multi_run with 'bonferroni' and 'split'
    thresholds and multi_split with the median and bonferroni rules.  Primary rule (first
    row at 0.95) and combined Bonferroni rule (each row at 1 - 0.05/4) must each falsely
    report a violation in <= 5% of audits (sd 0.011; we allow 0.07).  The naive "best of the
    four rows each at 0.95" is recorded for contrast, without a bound."""
    rng = np.random.default_rng(11)
    k, reps = 4, 400
    prim = comb = naive = 0
    for _ in range(reps):
        m, s = _rr_trials(4000, 1.0, rng)
        seed = int(rng.integers(2**31))

        def family(conf):
            return [multi_run(m, s, confidence=conf),
                    multi_run(m, s, confidence=conf, threshold="split", seed=seed),
                    multi_split(m, s, confidence=conf, seed=seed, n_splits=5),
                    multi_split(m, s, confidence=conf, seed=seed, n_splits=5,
                                combine="bonferroni")]

        at95 = family(0.95)
        prim += verdict_from_results(at95, 1.0).violation
        naive += max(r.epsilon for r in at95) > 1.0
        sim = family(1 - 0.05 / k)
        comb += verdict_from_results(sim, 1.0, rule="bonferroni", confidence=0.95).violation
    print(f"false violations of {reps}: primary {prim}, bonferroni {comb}, naive max {naive}")
    assert prim / reps <= 0.07 and comb / reps <= 0.07, (prim, comb, naive)


@pytest.mark.slow
@pytest.mark.parametrize("combine", ["median", "bonferroni"])
def test_multi_split_is_valid(combine):
    """P[multi_split bound > eps] <= 0.05 on eps = 1 randomized response (2000 trials, 10
    splits, 500 audits; sd 0.01; we allow 0.07)."""
    rng = np.random.default_rng(12)
    over = 0
    for i in range(500):
        m, s = _rr_trials(2000, 1.0, rng)
        over += multi_split(m, s, confidence=0.95, seed=i, combine=combine).epsilon > 1.0
    assert over / 500 <= 0.07


def test_multi_split_rule_picks_the_right_order_statistic():
    rng = np.random.default_rng(13)
    member = rng.random(3000) < 0.5
    score = member * 1.5 + rng.normal(size=3000)
    med = multi_split(member, score, confidence=0.9, n_splits=6, seed=3)
    eps = np.array(med.details["split_epsilons"])
    assert med.epsilon == np.sort(eps)[::-1][2]          # ceil(6/2) = 3rd largest
    assert med.settings["per_split_confidence"] == pytest.approx(0.95)   # alpha/2
    # each split equals multi_run('split') at the per-split confidence with its derived seed
    sd = med.settings["split_seeds"][0]
    want = multi_run(member, score, confidence=0.95, threshold="split", seed=sd).epsilon
    assert eps[0] == want
    bon = multi_split(member, score, confidence=0.9, n_splits=6, seed=3, combine="bonferroni")
    assert bon.settings["per_split_confidence"] == pytest.approx(1 - 0.1 / 6)
    assert bon.epsilon == max(bon.details["split_epsilons"])
    via_hook = multi_run(member, score, confidence=0.9, threshold="multi_split", seed=3)
    assert via_hook.settings["n_splits"] == 10 and via_hook.settings["combine"] == "median"
    with pytest.raises(ValueError, match="combine must be one of"):
        multi_split(member, score, combine="mean")
    with pytest.raises(ValueError, match="n_splits"):
        multi_split(member, score, n_splits=0)
