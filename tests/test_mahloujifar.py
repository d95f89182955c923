"""Mahloujifar-Melis-Chaudhuri f-DP one-run baseline (TOR notes §5.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from dpaudit import estimators as E
from dpaudit.curves import GaussianDP, LaplaceDP, NumericCurve
from dpaudit.estimators.mahloujifar import inverse_blowup, mahloujifar_reject


def _reject_by_hand(mu, m, cp, c, tau=0.05):
    """Scalar transcription of the recursion (no early exit), independent of the module."""
    h = tau * (cp - c) / m
    r = tau * c / m
    for i in range(c - 1, -1, -1):
        h_new = max(h, float(special.ndtr(special.ndtri(r) - mu)))
        r = min(r + i / (cp - i) * (h_new - h), 1.0)
        h = h_new
    return r + h > cp / m


@pytest.mark.parametrize("mu,m,cp,c", [(0.5, 1000, 100, 90), (0.8, 1000, 100, 90),
                                       (0.6, 10000, 2500, 2136), (1.5, 500, 500, 400),
                                       (0.01, 100, 10, 10), (3.0, 100, 10, 10)])
def test_reject_matches_scalar_recursion(mu, m, cp, c):
    assert mahloujifar_reject(GaussianDP(mu), m, cp, c) == _reject_by_hand(mu, m, cp, c)


# TOR notes §4.5 [RECOMPUTED] r-sweep with bisection on mu, Gaussian mu=1, n = 10000
@pytest.mark.parametrize("r,u,ref", [
    (20, 1, 1.3157), (50, 2, 2.2438), (100, 4, 2.7943), (200, 11, 2.9357), (500, 37, 2.9966),
    (1000, 97, 2.8480), (2500, 364, 2.4735), (5000, 1034, 2.0242), (7500, 1947, 1.6488),
    (10000, 3085, 1.3058)])
def test_r_sweep_bisection(r, u, ref):
    res = E.mahloujifar(m=10000, guesses=r, correct=r - u, delta=1e-5, confidence=0.95,
                        family="gdp")
    assert res.epsilon == pytest.approx(ref, abs=2e-3)
    assert res.method == "mahloujifar"
    assert res.epsilon == pytest.approx(GaussianDP(res.params["mu"]).epsilon(1e-5))
    assert res.epsilon < 4.3772
    # paper's ordering (Fig. 12): Steinke < Mahloujifar on the same observation
    assert res.epsilon > E.steinke(m=10000, guesses=r, correct=r - u).epsilon


@pytest.mark.parametrize("n,r,u,ref", [(1000, 100, 10, 2.4543), (1000, 250, 36, 2.4054),
                                       (1000, 500, 103, 2.0145), (1000, 1000, 309, 1.2944),
                                       (10000, 2500, 364, 2.4710)])
def test_privacyguard_sigma_grid_values(n, r, u, ref):
    """TOR notes §4.5 column computed on PrivacyGuard's grid sigma_j = 0.001 + 0.01 j: the
    grid answer is the first grid sigma at or above 1/mu_hat (our continuous fit)."""
    mu_hat = E.mahloujifar(m=n, guesses=r, correct=r - u, family="gdp").params["mu"]
    j = math.ceil((1 / mu_hat - 0.001) / 0.01 - 1e-9)
    mu_grid = 1 / (0.001 + 0.01 * j)
    assert mahloujifar_reject(GaussianDP(mu_grid), n, r, r - u)
    assert GaussianDP(mu_grid).epsilon(1e-5) == pytest.approx(ref, abs=2e-3)


def test_inverse_blowup_is_f_of_one_minus_y():
    y = np.array([1e-6, 0.01, 0.3, 0.9])
    g = GaussianDP(1.3)
    assert np.allclose(inverse_blowup(g, y), g.tradeoff(1 - y), rtol=1e-9)
    lap = LaplaceDP(1.0)
    assert np.allclose(inverse_blowup(lap, y), lap.tradeoff(1 - y))


@pytest.mark.slow
def test_other_families():
    lap = E.mahloujifar(m=1000, guesses=200, correct=180, family="laplace", delta=0.0)
    gdp = E.mahloujifar(m=1000, guesses=200, correct=180, family="gdp")
    assert 0 < lap.epsilon and lap.params["eps"] == pytest.approx(lap.epsilon, abs=1e-6)
    assert mahloujifar_reject(LaplaceDP(lap.params["eps"]), 1000, 200, 180)
    assert not mahloujifar_reject(LaplaceDP(lap.params["eps"] * 1.001), 1000, 200, 180)
    # the asymmetric sub-sampled Gaussian pair is replaced by its symmetrised envelope
    sgm = E.mahloujifar(m=1000, guesses=40, correct=38, family=("subsampled_gaussian", 0.5))
    gdp = E.mahloujifar(m=1000, guesses=40, correct=38, family="gdp")
    assert sgm.params["mu"] > gdp.params["mu"]   # a weaker curve per unit mu needs larger mu
    with pytest.raises(ValueError, match="symmetric"):
        mahloujifar_reject(NumericCurve(lambda a: 1 - a, symmetric=False), 100, 10, 9)


def test_nothing_rejected_and_bad_inputs():
    res = E.mahloujifar(m=1000, guesses=100, correct=50, family="gdp")
    assert res.epsilon == 0.0 and res.details["nothing_rejected"]
    assert E.mahloujifar(m=10, guesses=0, correct=0, family="gdp").epsilon == 0.0
    with pytest.raises(ValueError, match="m must"):
        E.mahloujifar(m=0, guesses=0, correct=0, family="gdp")
    with pytest.raises(ValueError, match="guesses must be <= m"):
        E.mahloujifar(m=10, guesses=11, correct=0, family="gdp")
    with pytest.raises(ValueError, match="correct must be <= guesses"):
        E.mahloujifar(m=10, guesses=5, correct=6, family="gdp")
    with pytest.raises(ValueError, match="delta"):
        E.mahloujifar(m=10, guesses=5, correct=5, delta=1.5, family="gdp")
    with pytest.raises(ValueError, match="confidence"):
        E.mahloujifar(m=10, guesses=5, correct=5, confidence=1, family="gdp")
    with pytest.raises(ValueError, match="family"):
        E.mahloujifar(m=10, guesses=5, correct=5, family="renyi")
    with pytest.raises(ValueError, match="curve"):
        mahloujifar_reject("gdp", 10, 5, 5)


@pytest.mark.slow
def test_coverage_gaussian_mechanism():
    """y_i = mu S_i + N(0, 1) (mu-GDP per canary), k+ = k- = 100 of m = 1000.  The bound
    exceeds the true mu iff GaussianDP(mu) itself is rejected, which is monotone in the number
    of correct guesses c: violation <=> c >= c_crit.  4000 seeded runs; the violation
    probability is <= 0.05 by their theorem, estimate sd <= 0.0035, allow 0.05 + 3 sd."""
    mu, m, k, reps = 1.0, 1000, 100, 4000
    curve = GaussianDP(mu)
    crit = [c for c in range(0, 2 * k + 1) if mahloujifar_reject(curve, m, 2 * k, c)]
    c_crit = min(crit) if crit else 2 * k + 1
    rng = np.random.default_rng(7)
    s = rng.integers(0, 2, size=(reps, m))
    y = mu * s + rng.standard_normal((reps, m))
    st = np.take_along_axis(s, np.argsort(y, axis=1), 1)
    c = st[:, m - k:].sum(axis=1) + (1 - st[:, :k]).sum(axis=1)
    viol = float(np.mean(c >= c_crit))
    assert viol <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / reps)
    for j in range(2):
        res = E.mahloujifar(m=m, guesses=2 * k, correct=int(c[j]), family="gdp")
        assert (res.params["mu"] > mu) == bool(c[j] >= c_crit)


# --- the default (eps, delta) null: recursions decided analytically (_settle_linear) ----------

def _eps_delta_run(eps, d0, m, cp, c, tau, stop_after=None):
    """Scalar transcription of the module's floating-point recursion under f_{eps, d0}
    (B^{-1}(y) = max{0, 1 - d0 - e^eps (1 - y), e^-eps (1 - d0 - (1 - y))}), stopped when h
    stops changing (it never changes again) or after ``stop_after`` steps.  Returns
    (r_prev, r, h, steps, final r + h - c'/m)."""
    e1, e2 = math.exp(eps), math.exp(-eps)
    r, h = tau * c / m, tau * (cp - c) / m
    r_prev, t = r, 0
    for i in range(c - 1, -1, -1):
        if stop_after is not None and t == stop_after:
            break
        a = min(max(1.0 - r, 0.0), 1.0)
        hn = max(h, max(0.0, max(1 - d0 - e1 * a, e2 * (1 - d0 - a))))
        r_prev, r = r, min(r + (i / (cp - i)) * (hn - h), 1.0)
        t += 1
        changed, h = hn > h, hn
        if not changed:
            break
    return r_prev, r, h, t, (r + h) - cp / m


def _module():
    import importlib
    return importlib.import_module("dpaudit.estimators.mahloujifar")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_settle_linear_agrees_with_the_full_recursion(seed):
    """Every decision of the analytic shortcut is the one the step-by-step recursion reaches
    (states after 8 to 64 steps, observations up to 1e5 canaries, eps near the boundary where
    the recursion runs longest), and it decides most of them (not a vacuous test)."""
    mod = _module()
    rng = np.random.default_rng(seed)
    decided = agree = total = 0
    for _ in range(40):
        m = int(10 ** rng.uniform(3, 5))
        cp = int(rng.integers(m // 10, m + 1))
        c = int(round(cp * rng.uniform(0.6, 0.99)))
        d0, tau = float(rng.choice([0.0, 1e-5, 1e-3])), float(rng.choice([0.05, 0.007]))
        # near the critical eps: e^-eps (r0 - d0) ~ h0 (the recursion starts moving)
        r0, h0 = tau * c / m, tau * (cp - c) / m
        if h0 <= 0 or r0 <= d0:
            continue
        eps = max(0.0, math.log((r0 - d0) / h0) * rng.uniform(0.9, 1.0))
        t = int(rng.integers(8, 65))
        r_prev, r, h, steps, _ = _eps_delta_run(eps, d0, m, cp, c, tau, stop_after=t)
        if steps < t or not r + h - cp / m <= 0:
            continue                      # finished or rejected already: nothing to settle
        final = _eps_delta_run(eps, d0, m, cp, c, tau)[4]
        e1, e2 = np.array([math.exp(eps)]), np.array([math.exp(-eps)])
        slope, y_hi, y_lo = mod._linear_piece(e1, e2, d0)
        rej, acc = mod._settle_linear(np.array([r_prev]), np.array([r]), np.array([h]),
                                      np.array([cp / m]), slope, y_hi, y_lo,
                                      np.array([float(c - 1 - t)]), np.array([float(cp)]))
        total += 1
        if rej[0] or acc[0]:
            decided += 1
            agree += bool(rej[0]) == (final > 0)
    assert total >= 15
    assert agree == decided
    assert decided >= 0.8 * total


def _reject_grid(mod, m, cp, c, thetas, tau, settle):
    fam = mod.resolve_family("eps_delta", 1e-5)
    bind, linear = mod._binv_family(fam, thetas)
    k = thetas.size
    return mod._reject_prefix(bind, np.zeros(k, dtype=np.int64), np.arange(k), 1,
                              np.array([m]), np.array([cp]), np.array([c]), tau,
                              linear if settle else None)


@pytest.mark.parametrize("m,cp,c", [(10**4, 2000, 1500), (3 * 10**4, 3 * 10**4, 20700),
                                    (3 * 10**4, 15000, 11900), (10**4, 100, 97),
                                    (10**4, 10**4, 10**4), (10**3, 10, 0)])
def test_settle_keeps_every_decision_of_the_search(m, cp, c):
    """_reject_prefix with the shortcut returns the decisions of the plain recursion up to and
    including the first non-rejected candidate (the contract the k-ary search relies on), on
    a fine grid around the search's answer."""
    mod = _module()
    res = E.mahloujifar(m=m, guesses=cp, correct=c, delta=1e-5, confidence=0.95)
    eps = res.params["eps"]
    for thetas in (np.linspace(max(0.0, eps - 1e-3), eps + 1e-3, 33),
                   np.linspace(0.0, 60.0, 33)):
        fast = _reject_grid(mod, m, cp, c, thetas, 0.05, True)
        slow = _reject_grid(mod, m, cp, c, thetas, 0.05, False)
        first = int(np.argmin(slow)) if not slow.all() else thetas.size - 1
        assert np.array_equal(fast[:first + 1], slow[:first + 1])


def _scores(n, seed, ties):
    rng = np.random.default_rng(seed)
    member = rng.random(n) < 0.5
    score = member * rng.uniform(0.5, 2.0) + rng.standard_normal(n)
    return member, (np.round(score, 1) if ties else score)


@pytest.mark.parametrize("n,seed,ties", [(1000, 0, False), (2000, 1, True)])
def test_default_results_identical_to_the_full_recursion(monkeypatch, n, seed, ties):
    """audit_one_run's Mahloujifar rows at the default null are the same, field for field,
    with and without the analytic shortcut (several seeds and sizes, tied scores included)."""
    from dpaudit.estimators.one_run import audit_one_run
    mod = _module()
    member, score = _scores(n, seed, ties)
    fast = audit_one_run(member, score, methods=("mahloujifar",))[0].to_dict()
    monkeypatch.setattr(mod, "_SETTLE", False)
    slow = audit_one_run(member, score, methods=("mahloujifar",))[0].to_dict()
    assert fast == slow


@pytest.mark.slow
@pytest.mark.parametrize("n,seed,ties", [(10**4, 2, False), (10**4, 3, True),
                                         (10**5, 0, False), (10**5, 1, True),
                                         (3 * 10**5, 2, False)])
def test_default_results_identical_to_the_full_recursion_large(monkeypatch, n, seed, ties):
    test_default_results_identical_to_the_full_recursion(monkeypatch, n, seed, ties)


@pytest.mark.slow
def test_profile_members_bind_equals_the_per_curve_inverse_blowup() -> None:
    """The DP-SGD family's members (piecewise linear, ``ProfileCurve``) are evaluated by one
    ``np.interp`` per candidate on its vertices; the values are the generic path's
    (``_binv_many``: ``inverse_blowup`` curve by curve) to the last bit."""
    from dpaudit.curves import dpsgd_family
    from dpaudit.estimators.mahloujifar import _binv_family, _binv_many

    fam = dpsgd_family(1.0, 0.05, 50, 1e-5)
    thetas = np.linspace(fam.lo, fam.hi, 9)
    bind, linear = _binv_family(fam, thetas)
    assert linear is None
    rng = np.random.default_rng(0)
    sel = rng.integers(0, thetas.size, 400)
    y = np.concatenate([[0.0, 1.0, 1e-300], rng.uniform(-0.1, 1.1, 397)])
    ref = _binv_many([fam.curve(float(t)) for t in thetas])(y, sel)
    assert np.array_equal(bind(sel)(y), ref)
