"""Gaussian-pair one-run auditor ("Let's Ask Gauss"): the closed-form hockey-stick divergence
against GDP and numerical integration, the exact noncentral-t bound, and Monte Carlo
false-claim rates under the Gaussian model."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dpaudit.curves import GaussianDP
from dpaudit.estimators.gaussian_pair import (
    gaussian_hockey_stick_delta,
    gaussian_pair,
    gaussian_pair_epsilon,
    gaussian_pair_fit,
    gdp_mu_lower_bound,
)

DELTA = 1e-5


@pytest.mark.parametrize("mu, eps", [(0.5, 0.2), (1.0, 1.0), (2.0, 3.0), (3.0, 8.0)])
def test_equal_variances_is_gdp(mu, eps):
    # Dong, Roth & Su 2022, Cor. 2.13: delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)
    expected = (stats.norm.cdf(-eps / mu + mu / 2)
                - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2))
    got = float(gaussian_hockey_stick_delta(eps, 1.0, 2.0, 1.0 + 2.0 * mu, 2.0))
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-15)
    assert gaussian_pair_epsilon(DELTA, 0, 1, mu, 1) == pytest.approx(
        GaussianDP(mu).epsilon(DELTA), rel=1e-7)


@pytest.mark.parametrize("m0, s0, m1, s1, eps", [
    (0, 1, 2, 1.3, 1.0), (0, 1.5, 1, 1, 0.5), (0, 1, 3, 0.7, 2.0), (1, 2, -1, 3, 0.1)])
def test_unequal_variances_against_quadrature(m0, s0, m1, s1, eps):
    # integrate (q - e^eps p)_+ piecewise between its kinks (found on a fine grid), where the
    # integrand is smooth, so adaptive quadrature is accurate to ~1e-10
    def f(x):
        return stats.norm.pdf(x, m1, s1) - math.exp(eps) * stats.norm.pdf(x, m0, s0)
    grid = np.linspace(-60, 60, 240001)
    sign = np.sign(f(grid))
    cuts = [-60.0, *grid[1:][sign[1:] != sign[:-1]].tolist(), 60.0]
    expected = sum(max(0.0, integrate.quad(f, a, b, limit=200, epsabs=1e-13)[0])
                   for a, b in zip(cuts[:-1], cuts[1:], strict=True))
    assert float(gaussian_hockey_stick_delta(eps, m0, s0, m1, s1)) == pytest.approx(
        expected, rel=1e-6, abs=1e-12)


def test_fit_recovers_large_sample_value_and_is_asymptotic():
    rng = np.random.default_rng(3)
    n = 200_000
    b = rng.random(n) < 0.5
    s = rng.standard_normal(n) + 2.0 * b
    res = gaussian_pair_fit(b, s, DELTA)
    assert res.guarantee == "asymptotic" and math.isnan(res.confidence)
    # s.e. of the fitted mu ~ 0.0045 and of the SD ratio ~ 0.003 -> eps within a few %
    assert res.epsilon == pytest.approx(GaussianDP(2.0).epsilon(DELTA), rel=0.08)


def test_noncentral_t_bound_matches_normal_approximation():
    # large samples: T ~ N(lambda, 1 + lambda^2/(2 df)); the exact bound must agree with the
    # normal approximation of the pivot to a few parts in a thousand
    rng = np.random.default_rng(5)
    out, inn = rng.standard_normal(20000), rng.standard_normal(20000) + 1.5
    mu_lo, tstat = gdp_mu_lower_bound(out, inn, 0.95)
    scale = math.sqrt(2 / 20000)
    lam_hat = tstat
    approx = (lam_hat - 1.6448536 * math.sqrt(1 + lam_hat ** 2 / (2 * 39998))) * scale
    assert mu_lo == pytest.approx(approx, rel=2e-3)


def test_box_bound_is_below_the_fit():
    rng = np.random.default_rng(0)
    b = rng.random(1000) < 0.5
    s = rng.standard_normal(1000) + 2.0 * b
    lo = gaussian_pair(b, s, DELTA, 0.95)
    eq = gaussian_pair(b, s, DELTA, 0.95, variances="equal")
    fit = gaussian_pair_fit(b, s, DELTA)
    assert 0 < lo.epsilon < fit.epsilon and 0 < eq.epsilon < fit.epsilon
    assert lo.guarantee == eq.guarantee == "finite-sample"
    assert "Gaussian" in lo.assumption and "common variance" in eq.assumption


@pytest.mark.parametrize("kwargs, needle", [
    (dict(delta=-1.0), "delta"), (dict(confidence=0.0), "confidence"),
    (dict(variances="same"), "variances"), (dict(grid_points=1), "grid_points"),
])
def test_bad_input(kwargs, needle):
    m = np.arange(20) % 2
    with pytest.raises(ValueError, match=needle):
        gaussian_pair(m, m + np.arange(20) * 0.01, **kwargs)


def test_constant_class_is_rejected():
    m = np.arange(20) % 2
    with pytest.raises(ValueError, match="score"):
        gaussian_pair(m, m * 1.0)


@pytest.mark.slow
def test_noncentral_t_bound_is_exact():
    """The one-sided bound fails with probability exactly 1 - confidence: 2000 trials at
    0.9 give 200 +- 13.4 failures; accept [150, 250] (3.7 standard errors)."""
    fails = 0
    for t in range(2000):
        rng = np.random.default_rng([11, t])
        out, inn = rng.standard_normal(30), rng.standard_normal(40) * 1.0 + 1.2
        fails += gdp_mu_lower_bound(out, inn, 0.9)[0] > 1.2
    assert 150 <= fails <= 250


@pytest.mark.slow
@pytest.mark.parametrize("variances, params, n", [
    ("unequal", (0.0, 1.0, 2.0, 1.3), 1000), ("unequal", (0.0, 1.0, 3.0, 1.0), 100),
    ("equal", (0.0, 1.0, 2.0, 1.0), 1000), ("equal", (0.0, 2.0, 5.0, 2.0), 60)])
def test_false_claim_rate_under_the_model(variances, params, n):
    """Under the Gaussian model P[bound > true eps] <= 5%: at most 27 of 300 (Binomial(300,
    0.05) exceeds 27 with probability < 1e-4)."""
    m0, s0, m1, s1 = params
    true_eps = gaussian_pair_epsilon(DELTA, m0, s0, m1, s1)
    bad = 0
    for t in range(300):
        rng = np.random.default_rng([13, t])
        b = rng.random(n) < 0.5
        s = np.where(b, m1 + s1 * rng.standard_normal(n), m0 + s0 * rng.standard_normal(n))
        bad += gaussian_pair(b, s, DELTA, 0.95, variances=variances).epsilon > true_eps
    assert bad <= 27


def test_noncentral_t_quadrature_fallback(monkeypatch):
    # SciPy's noncentral t CDF returns NaN for some large (t, nc); the fallback integrates
    # its definition E_V[Phi(t sqrt(V/df) - nc)] and must match SciPy where SciPy works
    import dpaudit.estimators.gaussian_pair as gp

    cases = [(60.0, 1998, 57.789), (30.0, 998, 28.0), (2.0, 58, 1.5)]
    expected = [gp._nct_cdf(*c) for c in cases]

    class _NaN:
        @staticmethod
        def cdf(*_a):
            return math.nan

    monkeypatch.setattr(gp.stats, "nct", _NaN)
    for c, e in zip(cases, expected, strict=True):
        assert gp._nct_cdf(*c) == pytest.approx(e, abs=1e-9)


# ------------------------------------------- the unequal-variance row is an estimate, no verdict
# White-box DP-SGD likelihood-ratio scores (the project's simulator, Poisson-subsampled
# Gaussian, sigma = 0.7, q = 0.1, T = 50): a correct mechanism whose true epsilon(1e-5) is
# dpsgd_curve(0.7, 0.1, 50).epsilon(1e-5) = 10.71.  Its in-scores are a Binomial mixture with
# a heavier right tail than a Gaussian's; the unequal-variance box then over-claims.
_SIG, _Q, _T, _N = 0.7, 0.1, 50, 10_000


def _dpsgd_scores(seed):
    from dpaudit.mechanisms.base import as_rng
    from dpaudit.mechanisms.dpsgd import DPSGDSimulator

    mech = DPSGDSimulator(noise_multiplier=_SIG, sampling_rate=_Q, steps=_T, score_kind="lr")
    obs = mech.simulate(_N, as_rng(seed))
    return obs.member, obs.score


def _unequal_wins():
    """Gaussian data on which the unequal-variance row is far above every other row."""
    rng = np.random.default_rng(8)
    b = rng.random(4000) < 0.5
    return b, np.where(b, 2.0 + 1.4 * rng.standard_normal(4000), rng.standard_normal(4000))


def test_unequal_variances_is_an_estimate_never_a_verdict():
    from dpaudit import audit_one_run
    from dpaudit.estimators.verdict import verdict_from_results

    b, s = _unequal_wins()
    gp = gaussian_pair(b, s, DELTA, 0.95)
    assert gp.is_estimate and not gaussian_pair(b, s, DELTA, 0.95, variances="equal").is_estimate
    # never the primary row, with or without allow_asymptotic
    for flag in (False, True):
        with pytest.raises(ValueError, match="estimate"):
            audit_one_run(b, s, methods=("gaussian_pair", "tight"), allow_asymptotic=flag)
    rows = audit_one_run(b, s, methods=("hockey_stick", "gaussian_pair_equal",
                                        "gaussian_pair"), simultaneous=True)
    # the Bonferroni split is over the two rows that may decide: 0.05 / 2 each
    assert rows[1].epsilon == gaussian_pair(b, s, DELTA, 1 - 0.05 / 2,
                                            variances="equal").epsilon
    claim = 0.5 * (max(rows[0].epsilon, rows[1].epsilon) + rows[2].epsilon)
    assert rows[2].epsilon > claim > max(rows[0].epsilon, rows[1].epsilon)
    # the two deciding rows rest on named assumptions about the scores: asked for explicitly
    assume = ("independent_scores", "gaussian_scores")
    for flag in (False, True):
        v = verdict_from_results(rows, claim, rule="bonferroni", allow_asymptotic=flag,
                                 assume=assume)
        assert not v.violation and "gaussian_pair" not in v.methods
    with pytest.raises(ValueError, match="estimate"):
        verdict_from_results([rows[2], rows[0]], claim)


@pytest.mark.slow
def test_cli_prints_the_unequal_row_as_an_estimate(tmp_path, capsys):
    import json

    from dpaudit.cli import main

    b, s = _unequal_wins()
    f = tmp_path / "scores.csv"
    f.write_text("member,score\n" + "".join(f"{int(x)},{float(y)!r}\n"
                                            for x, y in zip(b, s, strict=True)))
    gp = gaussian_pair(b, s, DELTA, 1 - 0.05 / 6).epsilon   # 6 deciding rows of 9
    assert main(["one-run", str(f), "--distribution", "--simultaneous",
                 "--claimed-epsilon", f"{gp - 0.5:.3f}"]) == 0
    out = capsys.readouterr().out
    assert f"~ {gp:.4f}" in out and "no violation" in out
    assert "gaussian_pair is an estimate" in out
    assert main(["one-run", str(f), "--distribution", "--json"]) == 0
    row = {r["method"]: r for r in json.loads(capsys.readouterr().out)["results"]}
    assert row["gaussian_pair"]["details"]["estimate"] is True
    assert main(["one-run", str(f), "--methods", "gaussian_pair,tight"]) == 2
    assert capsys.readouterr().err.startswith("error:")


@pytest.mark.slow
def test_false_violations_on_dpsgd_scores_with_the_distribution_rows():
    """Correct DP-SGD (simulator) audited against its own epsilon by the Bonferroni verdict over
    every one-run row that may decide plus the Gaussian-pair estimate: P[false violation] <=
    5%, at most 8 of 40 (Binomial(40, 0.05) exceeds 8 with probability < 2e-4), while the
    unequal-variance estimate alone is above the true epsilon in nearly every trial."""
    from dpaudit.curves import dpsgd_curve
    from dpaudit.estimators.verdict import one_run_verdict

    true_eps = float(dpsgd_curve(_SIG, _Q, _T).epsilon(DELTA))
    assert true_eps == pytest.approx(10.71, abs=0.01)
    false_violations = over = 0
    for t in range(40):
        b, s = _dpsgd_scores(t)
        v, rows = one_run_verdict(b, s, true_eps, rule="bonferroni", methods=(
            "tight", "steinke", "hockey_stick", "gaussian_pair_equal", "gaussian_pair"))
        false_violations += v.violation
        over += rows[-1].epsilon > true_eps
    assert false_violations <= 8
    assert over >= 30   # the misspecification the estimate label is for


def test_scores_near_the_float_limit_give_the_same_bounds() -> None:
    """Issue 32: scores of magnitude ~1e300 overflowed the sample variance; every bound is
    invariant under a positive rescaling, so scaled scores give the same epsilon (power-of-two
    scale: exact) and the reported means/SDs scale with them."""
    from dpaudit.estimators.gaussian_pair import gaussian_pair, gaussian_pair_fit
    from dpaudit.estimators.hockey_stick import hockey_stick_histogram

    rng = np.random.default_rng(3)
    m = np.arange(400) % 2
    s = rng.normal(size=400) + 1.5 * m
    k = 2.0 ** 1000
    for fn in (gaussian_pair, gaussian_pair_fit,
               lambda a, b: gaussian_pair(a, b, variances="equal")):
        small, big = fn(m, s), fn(m, s * k)
        assert big.epsilon == pytest.approx(small.epsilon, rel=1e-12)
        for name, v in small.params.items():
            if name in ("mu_out", "mu_in", "sd_out", "sd_in"):
                assert big.params[name] == pytest.approx(v * k, rel=1e-12)
    assert hockey_stick_histogram(m, s * k).epsilon == hockey_stick_histogram(m, s).epsilon
    spread = np.where(m == 1, 1.7e308, -1.7e308) * rng.uniform(0.5, 1.0, 400)
    assert hockey_stick_histogram(m, spread).epsilon > 0
    assert gaussian_pair(m, spread).epsilon >= 0
