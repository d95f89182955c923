"""The closed-form mu-GDP profile, the batched tight search and the batched root finder
(issue 14, second round): each checked against an independent computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize, special

from dpaudit import estimators as E
from dpaudit.curves import GaussianDP, resolve_family
from dpaudit.estimators.one_run import default_grid, guess_counts
from dpaudit.estimators.tight import _tight_one, tight_many
from dpaudit.search import largest_rejected_root, largest_rejected_roots
from dpaudit.stats.order_statistics import (
    GaussianProfile,
    log_tail_probabilities_gdp,
    log_tail_probability,
    score_profile,
)

MUS = (0.01, 0.3, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)


def _gbar_brentq(mu: float, v: float) -> float:
    """gamma_bar(v) for mu-GDP by Brent's method on v(c) = Phi(-mu/2-c) + Phi(mu/2-c)."""
    a = mu / 2

    def g(c: float) -> float:
        return float(np.logaddexp(special.log_ndtr(-a - c), special.log_ndtr(a - c))
                     - math.log(v))

    c = 0.0 if g(0.0) <= 0 else optimize.brentq(g, 0.0, 200.0, xtol=1e-300, rtol=1e-15)
    return math.exp(float(special.log_ndtr(-a - c)) - math.log(v))


@pytest.mark.parametrize("mu", MUS)
def test_closed_form_mean_error_matches_brent(mu):
    vs = np.concatenate([np.logspace(-290, -1, 30), np.linspace(0.1, 1.0, 30)])
    ours = GaussianProfile(mu).mean_error_above(vs)
    ref = np.array([_gbar_brentq(mu, float(v)) for v in vs])
    ok = ref > 1e-290  # below that both underflow
    np.testing.assert_allclose(ours[ok], ref[ok], rtol=1e-11)


@pytest.mark.slow
@pytest.mark.parametrize("mu", (0.3, 1.0, 2.0, 4.0))
def test_grid_profile_is_a_lower_envelope_of_the_closed_form(mu):
    """score_profile's lower envelope is a lower bound of H, hence of gamma_bar, and within
    its discretisation error (~3e-6 relative at 20,000 points) of the exact value."""
    v = np.linspace(1e-4, 1.0, 2001)
    exact = GaussianProfile(mu).mean_error_above(v)
    grid = score_profile(GaussianDP(mu)).mean_error_above(v)
    assert np.all(grid <= exact * (1 + 1e-12))
    np.testing.assert_allclose(grid, exact, rtol=1e-5)
    assert GaussianProfile(mu).bit_error == pytest.approx(GaussianDP(mu).bit_error(), rel=1e-15)
    # H(v) and gamma~(v): H is the integral of gamma~ over the top mass
    prof = GaussianProfile(mu)
    for top in (1e-3, 0.05, 0.3, 0.7, 1.0):
        h, _ = integrate.quad(lambda t: float(prof.gamma_at(t)), 0.0, top, epsabs=1e-13,
                              epsrel=1e-10, limit=200)
        assert float(prof.error_mass(top)) == pytest.approx(h, rel=1e-8, abs=1e-13)


@pytest.mark.slow
def test_tail_probability_against_monte_carlo_of_the_game():
    """P[T <= u] of the dominating game, simulated directly: n Gaussian channels with a
    uniform secret bit each, the MAP decoder's confidence |L| = mu |x - mu/2|, the r most
    confident guesses released, T = wrong ones.  No Beta/mixture identity is used."""
    mu, n, r, reps = 1.0, 200, 40, 20000
    rng = np.random.default_rng(7)
    bits = rng.random((reps, n)) < 0.5
    x = rng.standard_normal((reps, n)) + mu * bits
    conf = np.abs(x - mu / 2)
    top = np.argpartition(-conf, r - 1, axis=1)[:, :r]
    wrong = np.take_along_axis((x > mu / 2) != bits, top, axis=1).sum(axis=1)
    for u in (2, 5, 8):
        p_mc = float(np.mean(wrong <= u))
        se = math.sqrt(p_mc * (1 - p_mc) / reps)
        p = math.exp(log_tail_probability(GaussianDP(mu), n, r, u))
        assert abs(p - p_mc) <= 4 * se + 1e-4, (u, p, p_mc)


def test_batched_tail_equals_scalar_tail_bit_for_bit():
    rng = np.random.default_rng(3)
    for n in (2, 37, 1000, 10**5, 10**7):
        r = rng.integers(1, n + 1, size=9)
        u = np.array([rng.integers(0, k + 1) for k in r])
        mu = rng.uniform(0.05, 10.0, size=9)
        many = log_tail_probabilities_gdp(mu, n, r, u)
        one = [log_tail_probability(GaussianDP(m), n, int(a), int(b))
               for m, a, b in zip(mu, r, u, strict=True)]
        np.testing.assert_array_equal(many, np.array(one))


def test_pilot_quadrature_agrees_with_the_exact_rule():
    """Where a search boundary can lie (log p within 50 of 0), the pilot's 65-node rule and
    the exact 1025-node rule agree to ~1e-10 in log p on one-run grids; deep in the tail
    (log p ~ -1e4) the pilot is off in the fifth digit, which cannot move a sign.  The pilot
    only locates; the answer is certified with 1025 nodes."""
    checked = 0
    for n, mu in ((10**3, 1.0), (10**5, 2.0), (10**6, 0.5)):
        rng = np.random.default_rng(0)
        m = rng.random(n) < 0.5
        s = rng.standard_normal(n) + mu * m
        c = guess_counts(m, s, default_grid(n))
        for theta in (0.5, 1.0, 2.0, 4.0):
            a = log_tail_probabilities_gdp(theta, n, c["guesses"], c["wrong"])
            b = log_tail_probabilities_gdp(theta, n, c["guesses"], c["wrong"], quad_points=65)
            near = a > -50
            np.testing.assert_allclose(b[near], a[near], rtol=1e-9, atol=1e-12)
            np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-12)
            checked += int(near.sum())
    assert checked >= 30


@pytest.mark.parametrize("n,mu", [(200, 0.2), (10**3, 1.0), (10**4, 2.0), (10**5, 4.0),
                                  (10**6, 1.0)])
def test_tight_many_equals_tight_per_point(n, mu):
    rng = np.random.default_rng(0)
    m = rng.random(n) < 0.5
    s = rng.standard_normal(n) + mu * m
    c = guess_counts(m, s, default_grid(n))
    conf = 1 - 0.05 / c["guesses"].size
    many = tight_many(n, c["guesses"], c["wrong"], confidence=conf, family="gdp")
    one = [E.tight(n=n, r=int(r), u=int(u), confidence=conf, family="gdp")
           for r, u in zip(c["guesses"], c["wrong"], strict=True)]
    for a, b in zip(many, one, strict=True):
        assert a.params == b.params and a.epsilon == b.epsilon and a.p_value == b.p_value
        assert a.details == b.details and a.settings == b.settings


@pytest.mark.parametrize("n,r,u", [(1000, 100, 5), (1000, 100, 0), (1000, 1000, 250),
                                   (20000, 2000, 60), (10**6, 10**5, 2000), (50, 10, 10),
                                   (10, 10, 0), (10**7, 10**5, 200)])
def test_gdp_search_agrees_with_the_plain_exact_search(n, r, u):
    """The pilot-then-certify search returns the plain root search's answer on the exact
    margin to within tol (both are rejected ends of brackets of width <= tol), and its
    answer is certified: rejected exactly, with a non-rejected theta within tol above."""
    fam = resolve_family("gdp", 1e-5)
    fast = E.tight(n=n, r=r, u=u, family="gdp")
    plain = _tight_one(fam, n, r, u, 1e-5, 0.95, "exact", 1e-6)
    t_fast, t_plain = fast.params["mu"], plain.params["mu"]
    assert fast.details["nothing_rejected"] == plain.details["nothing_rejected"]
    assert fast.details["hit_ceiling"] == plain.details["hit_ceiling"]
    assert abs(t_fast - t_plain) <= 1e-6 * max(1.0, t_plain) * 1.0001
    if not (fast.details["nothing_rejected"] or fast.details["hit_ceiling"]):
        la = math.log(0.05)
        assert log_tail_probability(GaussianDP(t_fast), n, r, u) <= la
        up = t_fast + 1e-6 * max(1.0, t_fast)
        assert log_tail_probability(GaussianDP(up), n, r, u) > la


def test_largest_rejected_roots_equals_the_scalar_search():
    rng = np.random.default_rng(11)
    k = 40
    root = rng.uniform(-3, 5, size=k)
    scale = rng.uniform(0.1, 30, size=k)
    lo = np.full(k, -4.0)
    hi = np.full(k, 6.0)
    lo[:3] = root[:3] + 0.5     # nothing rejected
    hi[3:6] = root[3:6] - 0.5   # ceiling

    def margin(theta, idx):
        return np.sinh(scale[idx] * (theta - root[idx]))

    many = largest_rejected_roots(margin, lo, hi, tol=1e-8)
    for i in range(k):
        one = largest_rejected_root(lambda t, i=i: float(margin(np.array(t), i)),
                                    float(lo[i]), float(hi[i]), tol=1e-8)
        assert many[i] == one
        if not (one.nothing_rejected or one.hit_ceiling):
            assert one.theta <= root[i] < one.theta + 1e-8 * max(1.0, abs(one.theta))
    assert all(r.nothing_rejected for r in many[:3])
    assert all(r.hit_ceiling for r in many[3:6])
