"""Anytime-valid sequential audit (estimators/sequential.py): the e-process against a direct
per-trial evaluation of its Eq. 2, power on a flawed mechanism, and Monte Carlo coverage on
correct mechanisms (the probability of ever claiming a violation, over all looks)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpaudit as da
from dpaudit.estimators.sequential import (
    SequentialOptions,
    _plan,
    block_starts,
    first_crossing,
    sequential_audit,
)


def _gauss(n: int, mu: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    b = rng.random(n) < 0.5
    return b, rng.standard_normal(n) + mu * b


def _rr(n: int, eps: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    b = rng.random(n) < 0.5
    keep = rng.random(n) < math.exp(eps) / (1 + math.exp(eps))
    return b, np.where(keep, b, ~b).astype(float)


def _naive_log_e(bit, score, eps, delta, opts):
    """Trial-by-trial product of Eq. 2 for both sides, mixed by Eq. 4 (plan from _plan)."""
    p = math.exp(eps) / (1 + math.exp(eps))
    dp = delta / (2 * (1 + math.exp(eps)))
    starts = block_starts(score.size, opts)
    hi = lo = 0.0
    path = []
    plan = (math.inf, 0.0, -math.inf, 0.0)
    for t in range(score.size):
        if t in set(starts.tolist()) and t > 0:
            plan = _plan(bit[:t], score[:t], p, dp, opts)
        th, lh, tl, ll = plan
        for side, tau, lam in (("hi", th, lh), ("lo", tl, ll)):
            ins = score[t] >= tau if side == "hi" else score[t] <= tau
            win = bit[t] if side == "hi" else not bit[t]
            f = (1 + lam * (1 - p - dp)) if ins and win else \
                (1 - lam * (p + dp)) if ins else (1 - lam * dp)
            if side == "hi":
                hi += math.log(f)
            else:
                lo += math.log(f)
        path.append(np.logaddexp(hi, lo) - math.log(2))
    return np.array(path)


def test_e_process_matches_direct_evaluation() -> None:
    rng = np.random.default_rng(1)
    b, s = _gauss(400, 1.5, rng)
    opts = SequentialOptions()
    path = _naive_log_e(b, s, 0.5, 1e-3, opts)
    res = sequential_audit(b, s, 0.5, delta=1e-3, confidence=0.95, stop=False)
    assert math.isclose(math.log(res.e_value), path[-1], rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(math.log(res.max_e_value), path.max(), rel_tol=1e-9, abs_tol=1e-9)
    hit = np.flatnonzero(path >= math.log(20))
    assert first_crossing(b, s, 0.5, 1e-3, 0.95) == (hit[0] + 1 if hit.size else None)


def test_monitor_increments_equal_one_pass_bit_for_bit() -> None:
    """The engine's incremental stopping rule (SequentialMonitor) fed in random increments
    gives exactly first_crossing on the whole prefix, and the walker's e-process after many
    increments equals the one-pass e-process bit for bit (left-to-right running sums)."""
    from dpaudit.estimators.sequential import SequentialMonitor, _run, _Walker

    rng = np.random.default_rng(8)
    opts = SequentialOptions()
    for mu, n in ((2.0, 3000), (0.2, 4000)):
        b, s = _gauss(n, mu, rng)
        s[rng.random(n) < 0.05] = math.nan  # failed trials
        cuts = np.sort(rng.choice(np.arange(1, n), size=40, replace=False))
        mon = SequentialMonitor(1.0, 1e-5, 0.95, opts)
        got = [mon.update(b[:c], s[:c]) for c in (*cuts.tolist(), n)]
        want = first_crossing(b, s, 1.0, 1e-5, 0.95, opts)
        assert got[-1] == want
        assert all(g is None or g == want for g in got)  # never a different stop
        grid = np.linspace(0.0, 4.0, 9)
        w = _Walker(grid, 2, 1e-5, 0.05, opts)
        for c in (*cuts.tolist(), n):
            w.advance(b[:c], s[:c])
        run_max, final, first, _ = _run(b, s, grid, 2, 1e-5, 0.05, opts)
        np.testing.assert_array_equal(w.final, final)
        np.testing.assert_array_equal(w.run_max, run_max)
        assert w.first == first
    assert want is None and got[0] is None  # 0.2-GDP is (0.73, 1e-5)-DP: no stop
    with pytest.raises(ValueError, match="extend"):
        mon.update(b[:10], s[:10])


def test_failed_trials_pay_the_off_set_factor() -> None:
    """Failed trials stay in the sequence with the third line of Eq. 2 on both sides (NaN
    score in the direct evaluation: outside every set), and the plan ignores them."""
    rng = np.random.default_rng(5)
    b, s = _gauss(500, 1.5, rng)
    failed = rng.random(500) < 0.1
    s_nan = np.where(failed, math.nan, s)
    path = _naive_log_e(b, s_nan, 0.5, 1e-2, SequentialOptions())
    res = sequential_audit(np.where(failed, 7, b), np.where(failed, math.inf, s), 0.5,
                           delta=1e-2, stop=False, failed=failed)  # failed entries ignored
    assert res.n == 500
    assert math.isclose(math.log(res.e_value), path[-1], rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(math.log(res.max_e_value), path.max(), rel_tol=1e-9, abs_tol=1e-9)
    hit = np.flatnonzero(path >= math.log(20))
    assert first_crossing(b, s_nan, 0.5, 1e-2, 0.95) == (hit[0] + 1 if hit.size else None)
    with pytest.raises(ValueError, match="failed"):
        sequential_audit(b, s, 0.5, failed=failed[:10])


def test_failure_as_output_keeps_eq3_skipping_would_not() -> None:
    """Exact conditional means of F (Eq. 3) for a mechanism with outputs {A, B, failure} that
    is tightly (0, 0.2)-DP *with failure as an output*: P1 = (.3, .4, .3), P0 = (.1, .4, .5),
    S = {A} (score 1 >= tau = 1), lambda = 0.5.  Keeping failed trials (off-S factor):
    E[F] = 1 + lambda (P1(S) - P0(S) - delta) / 4 = 1 exactly.  Skipping them (conditioning on
    success) makes the bit unfair and E[F] = 1 + lambda (P(S, b=1 | ok) - p P(S | ok) -
    delta') = 1 + 0.5 (0.25 - 1/6 - 0.05) > 1: an over-claim, the reason failures are kept."""
    from dpaudit.estimators.sequential import _log_factors

    eps, delta, lam = np.array([0.0]), 0.2, 0.5
    outs = [(1, 1.0, 0.3), (1, 0.0, 0.4), (1, math.nan, 0.3),
            (0, 1.0, 0.1), (0, 0.0, 0.4), (0, math.nan, 0.5)]
    bit = np.array([o[0] for o in outs], bool)
    score = np.array([o[1] for o in outs])
    w = np.array([o[2] for o in outs]) / 2
    f = np.exp(_log_factors(bit, score, 1.0, lam, "hi", eps, delta, 0.9)[:, 0])
    assert math.isclose(float(w @ f), 1.0, rel_tol=0, abs_tol=1e-12)
    ok = ~np.isnan(score)
    skipped = float(w[ok] @ f[ok] / w[ok].sum())
    assert math.isclose(skipped, 1 + 0.5 * (0.25 - 1 / 6 - 0.05), rel_tol=1e-12)
    assert skipped > 1.016


@pytest.mark.slow
def test_flawed_mechanism_detected_early_and_bound_consistent() -> None:
    rng = np.random.default_rng(2)
    stops = []
    for _ in range(20):
        b, s = _gauss(5000, 2.0, rng)  # mu = 2 GDP, claimed (1, 1e-5)-DP: false
        r = sequential_audit(b, s, 1.0, delta=1e-5, confidence=0.95)
        assert r.rejected and r.n == r.stopping_trial and r.e_value >= 20
        assert r.epsilon_lower >= 1.0 and r.p_value <= 0.05
        stops.append(r.stopping_trial)
    assert np.median(stops) < 300
    res = r.to_audit_result()
    assert res.method == "sequential" and res.details["stopping_trial"] == r.stopping_trial


def test_no_bet_without_signal() -> None:
    # a mechanism that ignores the bit: the plan never finds growth, so K stays at 1
    rng = np.random.default_rng(3)
    b = rng.random(3000) < 0.5
    s = rng.standard_normal(3000)
    r = sequential_audit(b, s, 1.0, stop=False)
    assert not r.rejected and r.max_e_value < 20 and r.epsilon_lower < 1.0


@pytest.mark.slow
def test_coverage_ever_rejects_at_most_alpha() -> None:
    """P(the audit ever claims a violation, over all looks t <= 2,000) <= alpha = 0.05 on
    correct mechanisms whose claim is tight: randomised response (exactly eps-DP, the test
    martingale case) and the Gaussian count at its exact (eps, delta) (GaussianDP(1)).
    R = 300 seeded replicates each: binomial sd at 0.05 is 0.0126, so the tolerance 0.05 + 3 sd
    = 0.088 fails a valid procedure with probability < 0.2%.  The same replicates check the
    anytime-valid lower bound: P(bound > true epsilon) <= alpha."""
    R, n, alpha = 300, 2000, 0.05
    tol = alpha + 3 * math.sqrt(alpha * (1 - alpha) / R)
    opts = SequentialOptions(grid_points=41)
    rng = np.random.default_rng(2026)
    claim_g = da.GaussianDP(1.0).epsilon(1e-5)
    rej_rr = rej_g = over = 0
    for _ in range(R):
        b, s = _rr(n, 1.0, rng)
        rej_rr += first_crossing(b, s, 1.0, 0.0, 0.95) is not None
        over += sequential_audit(b, s, 3.0, 0.0, 0.95, stop=False, options=opts,
                                 epsilon_max=4.0).epsilon_lower > 1.0
        b, s = _gauss(n, 1.0, rng)
        rej_g += first_crossing(b, s, claim_g, 1e-5, 0.95) is not None
    assert rej_rr / R <= tol
    assert rej_g / R <= tol
    assert over / R <= tol


def test_sequential_bad_input() -> None:
    with pytest.raises(ValueError, match="claimed_epsilon"):
        sequential_audit([0, 1], [0.0, 1.0], -1.0)
    with pytest.raises(ValueError, match="confidence"):
        sequential_audit([0, 1], [0.0, 1.0], 1.0, confidence=1.5)
    with pytest.raises(ValueError, match="delta"):
        sequential_audit([0, 1], [0.0, 1.0], 1.0, delta=1.0)
    with pytest.raises(ValueError, match="score"):
        sequential_audit([0, 1], [0.0, math.nan], 1.0)
    with pytest.raises(ValueError, match="growth"):
        SequentialOptions(growth=1.0)
    with pytest.raises(ValueError, match="max_bet"):
        SequentialOptions(max_bet=1.0)
