"""Hockey-stick (density-estimation) one-run auditor: closed forms, exactness of the
order-statistic bounds, and Monte Carlo false-claim rates (model-free, so every scenario is
"under its model" as long as canaries are independent)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.curves import GaussianDP, LaplaceDP
from dpaudit.estimators.hockey_stick import (
    hockey_stick,
    hockey_stick_histogram,
    order_statistic_grid,
)

DELTA = 1e-5


def test_grid_is_geometric_from_both_ends():
    k = order_statistic_grid(100, 2.0)
    # tail counts 1, 2, 4, 8, 16, 32 from each end (the median is 50.5 -> up to 50)
    assert k.tolist() == [1, 2, 4, 8, 16, 32, 69, 85, 93, 97, 99, 100]


def test_separated_scores_give_the_closed_form_ceiling():
    # every in-score above every out-score: the bound pairs the top out-statistic
    # (0 successes: P_hi = 1 - fail^(1/n0)) with the lowest in-statistic (Q_lo = fail^(1/n1))
    n0 = n1 = 50
    member = np.r_[np.zeros(n0, bool), np.ones(n1, bool)]
    score = np.r_[np.linspace(0, 1, n0), np.linspace(2, 3, n1)]
    res = hockey_stick(member, score, DELTA, 0.95)
    fail = 0.05 / (order_statistic_grid(n0).size + order_statistic_grid(n1).size)
    p_hi = 1 - fail ** (1 / n0)
    q_lo = fail ** (1 / n1)
    expected = math.log((q_lo - DELTA) / p_hi)
    assert res.epsilon == pytest.approx(expected, rel=1e-9)
    assert res.details["best_possible_epsilon"] == pytest.approx(expected, rel=1e-9)
    assert res.guarantee == "finite-sample"


def test_identical_samples_give_zero():
    member = np.arange(400) % 2 == 0
    score = np.repeat(np.arange(200.0), 2)      # each value once in each class
    assert hockey_stick(member, score, DELTA).epsilon == 0.0


def test_histogram_is_labelled_asymptotic_and_converges():
    rng = np.random.default_rng(1)
    n = 400_000
    b = rng.random(n) < 0.5
    s = rng.standard_normal(n) + 1.0 * b
    res = hockey_stick_histogram(b, s, delta=0.01, bins=200)
    assert res.guarantee == "asymptotic" and math.isnan(res.confidence)
    # plug-in of a 200-bin histogram of 4e5 draws vs the exact 1-GDP value
    assert res.epsilon == pytest.approx(GaussianDP(1.0).epsilon(0.01), rel=0.1)


@pytest.mark.parametrize("kwargs, needle", [
    (dict(delta=1.5), "delta"), (dict(confidence=1.0), "confidence"),
    (dict(grid_ratio=1.0), "grid_ratio"), (dict(grid_ratio="2"), "grid_ratio"),
])
def test_bad_input(kwargs, needle):
    m = np.arange(20) % 2
    with pytest.raises(ValueError, match=needle):
        hockey_stick(m, m * 1.0, **kwargs)


def test_bad_input_histogram_and_classes():
    m = np.arange(20) % 2
    with pytest.raises(ValueError, match="bins"):
        hockey_stick_histogram(m, m * 1.0, bins=1)
    with pytest.raises(ValueError, match="member"):
        hockey_stick(np.ones(10), np.arange(10.0))


def _overclaims(draw, true_eps, n, trials, seed):
    bad = 0
    for t in range(trials):
        rng = np.random.default_rng([seed, t])
        b = rng.random(n) < 0.5
        bad += hockey_stick(b, draw(b, rng), DELTA, 0.95).epsilon > true_eps
    return bad


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gauss", "laplace", "rr_ties", "few"])
def test_false_claim_rate(name):
    """P[bound > true eps] <= 5%: Binomial(300, 0.05) exceeds 27 with probability < 1e-4, so
    an estimator at its nominal level fails this test essentially never."""
    cases = {
        "gauss": (lambda b, r: r.standard_normal(b.size) + 2.0 * b,
                  GaussianDP(2.0).epsilon(DELTA), 1000),
        "laplace": (lambda b, r: r.laplace(size=b.size) + 1.0 * b,
                    LaplaceDP(1.0).epsilon(DELTA), 1000),
        # randomised response with eps0 = 1.5: heavy ties (two values), true eps = 1.5
        "rr_ties": (lambda b, r: (r.random(b.size) < np.where(b, 1, math.exp(-1.5))
                                  / (1 + math.exp(-1.5))).astype(float), 1.5, 2000),
        "few": (lambda b, r: r.standard_normal(b.size) + 3.0 * b,
                GaussianDP(3.0).epsilon(DELTA), 60),
    }
    draw, true_eps, n = cases[name]
    assert _overclaims(draw, true_eps, n, 300, 7) <= 27


# ---------------------------------------------------------------- side by side (audit_one_run)
def _obs():
    rng = np.random.default_rng(4)
    b = rng.random(600) < 0.5
    return b, rng.standard_normal(600) + 2.0 * b


def test_one_run_rows_equal_the_estimators_at_their_share_of_the_confidence():
    from dpaudit import audit_one_run
    from dpaudit.estimators.gaussian_pair import gaussian_pair, gaussian_pair_fit

    b, s = _obs()
    rows = audit_one_run(b, s, methods=("tight", "hockey_stick", "gaussian_pair_equal",
                                        "gaussian_pair_fit"), simultaneous=True)
    assert [r.method for r in rows] == ["tight", "hockey_stick", "gaussian_pair_equal",
                                        "gaussian_pair_fit"]
    # Bonferroni over the three rows with a finite-sample guarantee: 0.05 / 3 each
    conf = 1 - 0.05 / 3
    assert rows[1].epsilon == hockey_stick(b, s, 1e-5, conf).epsilon
    assert rows[2].epsilon == gaussian_pair(b, s, 1e-5, conf, variances="equal").epsilon
    assert rows[3].epsilon == gaussian_pair_fit(b, s, 1e-5).epsilon
    assert [r.guarantee for r in rows] == ["finite-sample"] * 3 + ["asymptotic"]
    assert rows[1].confidence == 0.95 and rows[1].settings["per_test_confidence"] == conf


def test_asymptotic_rows_never_decide_unless_asked():
    from dpaudit import audit_one_run
    from dpaudit.estimators.verdict import verdict_from_results

    b, s = _obs()
    with pytest.raises(ValueError, match="finite-sample"):
        audit_one_run(b, s, methods=("gaussian_pair_fit", "tight"))
    rows = audit_one_run(b, s, methods=("gaussian_pair_fit", "tight"), allow_asymptotic=True)
    with pytest.raises(ValueError, match="finite-sample"):
        verdict_from_results(rows, 1.0)
    # Bonferroni: the asymptotic row (10.3 here, above every bound) is left out
    rows = audit_one_run(b, s, methods=("hockey_stick", "hockey_stick_histogram"),
                         simultaneous=True)
    # hockey_stick is a bound only for independent canary scores: it decides only when asked
    with pytest.raises(ValueError, match="no row may decide"):
        verdict_from_results(rows, 3.0, rule="bonferroni")
    ind = ("independent_scores",)
    v = verdict_from_results(rows, 3.0, rule="bonferroni", assume=ind)
    assert v.basis.method == "hockey_stick" and v.methods == ("hockey_stick",)
    assert rows[1].epsilon > 3.0 and not v.violation
    assert v.assumption is not None and "independent" in v.assumption
    v2 = verdict_from_results(rows, 3.0, rule="bonferroni", allow_asymptotic=True, assume=ind)
    assert v2.basis.method == "hockey_stick_histogram" and v2.violation


def test_cli_distribution_rows(tmp_path, capsys):
    import json

    from dpaudit.cli import main

    b, s = _obs()
    f = tmp_path / "scores.csv"
    f.write_text("member,score\n" + "".join(f"{int(x)},{float(y)!r}\n" for x, y in zip(b, s,
                                                                             strict=True)))
    assert main(["one-run", str(f), "--distribution", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    got = {r["method"]: (r["guarantee"], r["confidence"]) for r in rows}
    assert got["hockey_stick"] == ("finite-sample", 0.95)
    assert got["gaussian_pair_fit"] == ("asymptotic", None)
    assert main(["one-run", str(f), "--methods", "hockey_stick_histogram"]) == 2
    assert capsys.readouterr().err.startswith("error:")


def test_tied_scores_give_no_evidence_not_a_crash() -> None:
    # every in-score ties with the out-scores (one out-score far above): no grid threshold has
    # an in-score beyond it in either tail, so there is no evidence and the bound is 0
    member = np.r_[np.ones(50, bool), np.zeros(50, bool)]
    for score in (np.zeros(100), np.r_[np.zeros(99), 1e300]):
        r = hockey_stick(member, score)
        assert r.epsilon == 0.0
        assert r.details["direction"].startswith("none")
