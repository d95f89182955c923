"""audit_one_run: the side-by-side one-run driver (grid, Bonferroni correction, tie-breaking)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpaudit as da
from dpaudit import estimators as E
from dpaudit.curves import GaussianDP
from dpaudit.estimators.one_run import audit_one_run, default_grid, guess_counts

TRUE_EPS_MU1 = 4.3772  # GaussianDP(1).epsilon(1e-5), BT notes Table B
HAVE_MAHLOUJIFAR = hasattr(E, "mahloujifar")


def gaussian_run(mu: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One run of the Gaussian mechanism on one-hot canaries: canary i (coordinate i) is
    included iff b_i = 1; the release is sum_i b_i e_i + N(0, sigma^2 I), sigma = 1/mu; the
    score of canary i is coordinate i of the release."""
    rng = np.random.default_rng(seed)
    b = rng.integers(0, 2, n)
    return b, b + rng.standard_normal(n) / mu


@pytest.fixture(scope="module")
def side_by_side():
    b, y = gaussian_run(1.0, 20000, seed=3)
    methods = ("tight", "bits", "steinke") + (("mahloujifar",) if HAVE_MAHLOUJIFAR else ())
    return b, y, {r.method: r for r in audit_one_run(b, y, methods=methods, family="gdp")}


# ---------------------------------------------------------------------------------------------
# guess counting and the grid
# ---------------------------------------------------------------------------------------------

def test_guess_counts_match_bruteforce():
    rng = np.random.default_rng(7)
    b = rng.integers(0, 2, 300)
    s = b + rng.standard_normal(300)
    grid = [(1, 1), (10, 5), (0, 40), (150, 150), (299, 1)]
    c = guess_counts(b, s, grid)
    order = np.argsort(s)  # continuous scores: no ties
    for i, (kp, km) in enumerate(grid):
        top, low = order[len(s) - kp:], order[:km]
        wrong = int((b[top] == 0).sum() + (b[low] == 1).sum())
        assert c["wrong"][i] == wrong and c["guesses"][i] == kp + km
        assert c["correct"][i] == kp + km - wrong


def test_ties_are_broken_independently_of_input_order():
    # members listed first, all scores equal: breaking ties by position would guess the top
    # 500 "perfectly"; a random priority gives a hypergeometric count (mean 250, sd ~9.7).
    b = np.r_[np.ones(1000, int), np.zeros(1000, int)]
    c = guess_counts(b, np.zeros(2000), [(500, 0), (0, 500)])
    assert 200 < c["wrong"][0] < 300 and 200 < c["wrong"][1] < 300


def test_default_grid():
    assert default_grid(1000) == [(5, 5), (10, 10), (25, 25), (50, 50), (125, 125), (250, 250),
                                  (500, 500)]
    # r = floor(f n + 1/2) < 2 is dropped; odd r gives k_plus = k_minus + 1
    assert default_grid(50) == [(2, 1), (3, 2), (7, 6), (13, 12), (25, 25)]
    with pytest.raises(ValueError, match="fractions"):
        default_grid(100, [0.0, 0.5])
    with pytest.raises(ValueError, match="grid point"):
        default_grid(10, [0.01])


# ---------------------------------------------------------------------------------------------
# side by side on a seeded Gaussian simulation
# ---------------------------------------------------------------------------------------------

def test_exported_names():
    assert da.audit_one_run is audit_one_run and E.audit_one_run is audit_one_run


def test_bits_row_is_the_bits_estimator_on_the_median_split(side_by_side):
    b, y, res = side_by_side
    n = b.size
    order = np.argsort(y)
    errors = int((b[order[n // 2:]] == 0).sum() + (b[order[:n // 2]] == 1).sum())
    r = res["bits"]
    assert r.settings["wrong"] == errors and r.settings["grid_size"] == 1
    assert r.settings["per_test_confidence"] == 0.95  # one test: no correction needed
    assert r.epsilon == E.bits(n=n, errors=errors, family="gdp", delta=1e-5).epsilon


def test_grid_rows_are_bonferroni_corrected(side_by_side):
    b, y, res = side_by_side
    t = res["tight"]
    g = t.settings["grid_size"]
    assert g == 7 and t.settings["correction"] == "bonferroni"
    assert t.settings["per_test_confidence"] == pytest.approx(1 - 0.05 / 7)
    assert t.confidence == 0.95
    # reported = max over the grid of bounds at the corrected level
    assert t.epsilon == max(t.details["grid_epsilons"])
    n, r, u = b.size, t.settings["guesses"], t.settings["wrong"]
    again = E.tight(n=n, r=r, u=u, family="gdp", delta=1e-5, confidence=1 - 0.05 / 7)
    assert again.epsilon == pytest.approx(t.epsilon, rel=1e-12)
    # the uncorrected bound at the same point is larger: the correction is really applied
    naive = E.tight(n=n, r=r, u=u, family="gdp", delta=1e-5, confidence=0.95)
    assert naive.epsilon > t.epsilon + 0.02
    # Bonferroni-adjusted p-value of the chosen point
    assert t.p_value == pytest.approx(min(1.0, g * t.details["unadjusted_p_value"]))
    s = res["steinke"]
    assert s.settings["per_test_confidence"] == pytest.approx(1 - 0.05 / 7)
    assert s.epsilon == max(s.details["grid_epsilons"])


def test_side_by_side_values_are_consistent(side_by_side):
    b, y, res = side_by_side
    eps = {m: r.epsilon for m, r in res.items()}
    # validity at this seed: every bound is below the true epsilon
    assert all(0 < e < TRUE_EPS_MU1 for e in eps.values()), eps
    # the two f-DP audits with the matching (GDP) family are nearly tight at n = 20000 ...
    assert eps["bits"] > 0.9 * TRUE_EPS_MU1 and eps["tight"] > 0.9 * TRUE_EPS_MU1
    # ... while Steinke's (eps, delta) null is far from it (BT notes Table 2: ~2.4-2.7)
    assert 1.5 < eps["steinke"] < 0.75 * TRUE_EPS_MU1
    assert eps["tight"] > eps["steinke"]
    if HAVE_MAHLOUJIFAR:
        assert eps["steinke"] <= eps["mahloujifar"] * 1.05 and eps["mahloujifar"] < eps["tight"]
    # same observations: all rows report the same n and use the same grid
    assert {r.settings["n"] for r in res.values()} == {b.size}
    assert res["tight"].settings["grid"] == res["steinke"].settings["grid"]


def test_simultaneous_splits_across_methods():
    b, y = gaussian_run(1.0, 3000, seed=11)
    res = audit_one_run(b, y, methods=("bits", "steinke"), simultaneous=True, family="gdp")
    assert res[0].settings["per_test_confidence"] == pytest.approx(1 - 0.05 / 2)
    assert res[1].settings["per_test_confidence"] == pytest.approx(1 - 0.05 / (2 * 7))
    plain = audit_one_run(b, y, methods=("bits",), family="gdp")
    assert res[0].epsilon < plain[0].epsilon


def test_bits_threshold_decoder_and_explicit_grid():
    b, y = gaussian_run(2.0, 4000, seed=5)
    r = audit_one_run(b, y, methods=("bits",), bits_threshold=0.5, family="gdp")[0]
    errors = int(((y > 0.5) != b.astype(bool)).sum())
    assert r.settings["wrong"] == errors and r.settings["decoder"] == "score > 0.5"
    assert r.epsilon == E.bits(n=4000, errors=errors, family="gdp").epsilon
    s = audit_one_run(b, y, methods=("steinke",), grid=[(100, 100), (400, 0)], family="gdp")[0]
    assert s.settings["grid_size"] == 2
    assert s.settings["per_test_confidence"] == pytest.approx(1 - 0.05 / 2)


def test_process_pool_gives_identical_results():
    b, y = gaussian_run(1.0, 2000, seed=2)
    a = audit_one_run(b, y, methods=("bits", "steinke"), n_jobs=1, family="gdp")
    p = audit_one_run(b, y, methods=("bits", "steinke"), n_jobs=2, family="gdp")
    assert [r.to_dict() for r in a] == [r.to_dict() for r in p]


def test_unbalanced_bits_warn():
    rng = np.random.default_rng(0)
    b = (rng.random(2000) < 0.8).astype(int)
    with pytest.warns(UserWarning, match="unbalanced"):
        audit_one_run(b, b + rng.standard_normal(2000), methods=("bits",), family="gdp")


@pytest.mark.parametrize("kwargs,match", [
    ({"member": [0, 1, 2, 1], "score": [0.1, 0.2, 0.3, 0.4]}, "member"),
    ({"member": [0, 1, 1, 0], "score": [0.1, np.nan, 0.3, 0.4]}, "score"),
    ({"member": [0, 1, 1], "score": [0.1, 0.2, 0.3, 0.4]}, "same length"),
    ({"member": [1, 1, 1, 1], "score": [0.1, 0.2, 0.3, 0.4]}, "both 0 and 1"),
    ({"methods": ("bits", "magic")}, "methods"),
    ({"methods": ("bits", "bits")}, "repeat"),
    ({"methods": ()}, "methods"),
    ({"grid": [(3, 3)]}, "grid"),
    ({"grid": [(1.5, 1)]}, "grid"),
    ({"family": "nope"}, "family"),
    ({"confidence": 1.5}, "confidence"),
    ({"delta": -0.1}, "delta"),
    ({"bits_ci": "wald"}, "ci"),
    ({"n_jobs": 0}, "n_jobs"),
])
def test_bad_input(kwargs, match):
    args = {"member": [0, 1, 1, 0], "score": [0.1, 0.2, 0.3, 0.4], "methods": ("bits",)}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        audit_one_run(**args)


# ---------------------------------------------------------------------------------------------
# Monte Carlo: coverage of the grid selection on a correct Gaussian mechanism
# ---------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_grid_selection_coverage_monte_carlo():
    """Over-claim rate of "best of the grid" for the tight method on a correct mechanism.

    The reported bound exceeds the true mu (hence the true epsilon) iff the true null
    GaussianDP(1) is rejected at some grid point, i.e. min_g p_g <= (1 - gamma)/G (the p-value
    is monotone in theta, and the bound is the largest rejected theta).  That event is computed
    exactly per repetition from the driver's own guess counts and E.tight_p_value on the true
    curve (cached per distinct (r, u)); the equivalence with E.tight is checked on the extreme
    repetition.  Without the correction (level 1 - gamma per point) the same data over-claim
    more often, which shows the correction is needed.
    """
    mu, n, reps, alpha = 1.0, 1000, 2000, 0.05
    grid = default_grid(n)
    g = len(grid)
    curve = GaussianDP(mu)
    rng = np.random.default_rng(20240601)
    cache: dict[tuple[int, int], float] = {}
    min_p = np.empty(reps)
    point_at_min = []
    for i in range(reps):
        b = rng.integers(0, 2, n)
        y = b + rng.standard_normal(n) / mu
        c = guess_counts(b, y, grid, seed=i)
        ps = []
        for r, u in zip(c["guesses"].tolist(), c["wrong"].tolist(), strict=True):
            if (r, u) not in cache:
                cache[(r, u)] = E.tight_p_value(curve, n=n, r=r, u=u)
            ps.append(cache[(r, u)])
        j = int(np.argmin(ps))
        min_p[i] = ps[j]
        point_at_min.append((int(c["guesses"][j]), int(c["wrong"][j])))
    fail_corrected = float(np.mean(min_p <= alpha / g))
    fail_naive = float(np.mean(min_p <= alpha))
    # sd of a rate near 0.05 over 2000 reps is 0.0049; allow 3 sd above the nominal level.
    # (Observed with this seed: 0.016 corrected -- Bonferroni is conservative because the grid
    # points are positively correlated -- against ~0.13 uncorrected.)
    assert fail_corrected <= alpha + 0.015
    assert fail_naive > alpha + 0.03
    # the rejection event is the bound exceeding the truth: check at the most extreme rep
    r, u = point_at_min[int(np.argmin(min_p))]
    res = E.tight(n=n, r=r, u=u, family="gdp", delta=1e-5, confidence=1 - alpha / g)
    assert (res.params["mu"] >= mu) == (min_p.min() <= alpha / g)
    assert math.isfinite(res.epsilon)
