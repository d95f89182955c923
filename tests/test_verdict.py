"""The verdict rules (dpaudit.estimators.verdict) and multi-split thresholds
(dpaudit.estimators.multi_split): logic, and Monte Carlo P(false violation) <= alpha on
mechanisms that meet their claim."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

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
                            methods=("bits", "steinke"), delta=1e-5, family="gdp")
    assert all(r.settings["simultaneous"] for r in rs) and v.violation
    assert v.basis.epsilon == max(r.epsilon for r in rs)
    with pytest.raises(ValueError, match="sets simultaneous"):
        one_run_verdict(member, score, 1.0, simultaneous=True, family="gdp")


def _rr_trials(n, eps, rng):
    """n trials of eps-DP binary randomized response on the canary bit (the tight null)."""
    member = rng.random(n) < 0.5
    keep = rng.random(n) < math.exp(eps) / (1 + math.exp(eps))
    out = np.where(keep, member, ~member).astype(float)
    return member, out  # scores 0/1 (ties on purpose)


def _z_bounds(x, conf):
    """Exact one-sided lower bounds on a Gaussian mean (unit variance) from 4 overlapping
    halves of the sample: each is > the true mean with probability exactly 1 - conf."""
    n = x.size
    z = stats.norm.isf(1 - conf)
    parts = [x[: n // 2], x[n // 2:], x[n // 4: 3 * n // 4], x[::2]]
    return [p.mean() - z / math.sqrt(p.size) for p in parts]


@pytest.mark.slow
def test_verdict_rules_false_violation_rate_exact_tests():
    """Four exact tests of the same claim ("mean <= 1", true mean 1) on overlapping halves of
    one sample, 4000 replications.  Each row alone falsely rejects with probability exactly
    0.05, so the primary rule must be at 0.05 (sd 0.0034: band [0.04, 0.06]); the combined
    Bonferroni rule (rows at 1 - 0.05/4) must be <= 0.05 (we allow 0.055); the naive "best of
    four rows at 0.95" over-claims (measured 0.139; we require > 0.08) -- which is why the
    combined rule exists."""
    rng = np.random.default_rng(11)
    reps, k = 4000, 4
    prim = comb = naive = 0
    for _ in range(reps):
        x = rng.normal(1.0, 1.0, 64)
        at95 = [_r(b, f"m{i}", 0.95) for i, b in enumerate(_z_bounds(x, 0.95))]
        prim += verdict_from_results(at95, 1.0).violation
        naive += max(r.epsilon for r in at95) > 1.0
        sim = [_r(b, f"m{i}", 1 - 0.05 / k) for i, b in enumerate(_z_bounds(x, 1 - 0.05 / k))]
        comb += verdict_from_results(sim, 1.0, rule="bonferroni", confidence=0.95).violation
    assert 0.04 <= prim / reps <= 0.06, prim
    assert comb / reps <= 0.055, comb
    assert naive / reps > 0.08, naive


@pytest.mark.slow
def test_verdict_rules_on_real_audits_of_a_correct_mechanism():
    """eps = 1 randomized response (exactly eps-DP), 100 audits of 1000 trials, the family
    {multi_run bonferroni, multi_run split, multi_split median, multi_split bonferroni}:
    primary and combined rules falsely report a violation in <= 5% (sd 0.022; we allow 0.12).
    These audits are conservative (measured: 2% / 0% at alpha = 0.4), so this checks the
    plumbing on real results; the exact-test check above is the sharp one."""
    rng = np.random.default_rng(12)
    k, reps = 4, 100
    prim = comb = 0
    for _ in range(reps):
        m, s = _rr_trials(1000, 1.0, rng)
        seed = int(rng.integers(2**31))

        def family(conf, m=m, s=s, seed=seed):
            return [multi_run(m, s, confidence=conf),
                    multi_run(m, s, confidence=conf, threshold="split", seed=seed),
                    multi_split(m, s, confidence=conf, seed=seed, n_splits=4),
                    multi_split(m, s, confidence=conf, seed=seed, n_splits=4,
                                combine="bonferroni")]

        prim += verdict_from_results(family(0.95), 1.0).violation
        comb += verdict_from_results(family(1 - 0.05 / k), 1.0, rule="bonferroni",
                                     confidence=0.95).violation
    assert prim / reps <= 0.12 and comb / reps <= 0.12, (prim, comb)


@pytest.mark.slow
@pytest.mark.parametrize("combine", ["median", "bonferroni"])
def test_multi_split_is_valid(combine):
    """P[multi_split bound > eps] <= alpha on eps = 1 randomized response, at the sensitive
    level alpha = 0.4 (confidence 0.6): 200 audits of 1000 trials, 10 splits; sd <= 0.035,
    we allow 0.47 (+2 sd)."""
    rng = np.random.default_rng(13)
    over = 0
    for i in range(200):
        m, s = _rr_trials(1000, 1.0, rng)
        over += multi_split(m, s, confidence=0.6, seed=i, combine=combine).epsilon > 1.0
    assert over / 200 <= 0.47


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
