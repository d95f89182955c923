"""Batch one-run estimators (issue 14): ``steinke_many`` / ``mahloujifar_many`` against the
scalar functions, against independent references, and the vectorised search helpers against
the scalar ones they replace.

* Mahloujifar: the reference is the pre-batch algorithm itself -- the module's one-candidate
  recursion ``_gap`` (kept for :func:`mahloujifar_reject`) inside the scalar k-ary search
  :func:`dpaudit.search.largest_rejected_batched` -- and the batch path must reproduce it bit
  for bit (same grids, same parameter, same candidate count).
* Steinke: the reference is a direct transcription of the p-value with ``scipy.stats`` (every
  window summed, no support truncation); the returned epsilon must be rejected by it and the
  point tol * max(1, eps) above must not be (the search contract), and the batch entry of an
  observation equals its scalar result exactly.
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import elementwise

from dpaudit.curves import resolve_family
from dpaudit.search import (
    chandrupatla,
    largest_rejected_batched,
    largest_rejected_grid,
    largest_rejected_root,
    largest_rejected_roots,
)

ST = importlib.import_module("dpaudit.estimators.steinke")
MA = importlib.import_module("dpaudit.estimators.mahloujifar")


# --------------------------------------------------------------------------- search helpers

@pytest.mark.parametrize("seed", range(6))
def test_largest_rejected_grid_equals_scalar_search(seed):
    """Row-wise k-ary search = largest_rejected_batched per row, including predicates that
    are not monotone (the first non-rejected candidate decides) and rows that reject nothing
    or everything; the predicate may skip candidates after a row's first False."""
    rng = np.random.default_rng(seed)
    n = 9
    bounds = rng.uniform(-1, 11, n)
    bounds[0], bounds[1] = -5.0, 50.0             # nothing rejected / hit ceiling
    holes = rng.uniform(0, 10, n)                 # a spurious non-rejected point per row
    points = int(rng.choice([3, 5, 9, 33]))
    tol = float(rng.choice([1e-3, 1e-6, 1e-9]))

    def pred(i, t):
        t = np.asarray(t)
        return (t < bounds[i]) & ~((seed % 2 == 1) & (np.abs(t - holes[i]) < 0.3))

    def rows_fn(rows, th):
        out = np.array([pred(i, row) for i, row in zip(rows, th, strict=True)])
        # skip (report False) everything after each row's first False
        first = np.argmin(out, axis=1)
        has = ~out.all(axis=1)
        after = (np.arange(th.shape[1])[None, :] > first[:, None]) & has[:, None]
        return out & ~after

    res, evals = largest_rejected_grid(rows_fn, 0.0, 10.0, tol, points, n)
    for i in range(n):
        want, ev = largest_rejected_batched(lambda t, i=i: pred(i, t), 0.0, 10.0, tol, points)
        assert res[i] == want
        assert evals[i] == ev


@pytest.mark.parametrize("seed", range(4))
def test_chandrupatla_reproduces_scipy_find_root(seed):
    rng = np.random.default_rng(seed)
    n = 8
    c = rng.uniform(0.1, 4.5, n)
    p = rng.uniform(0.2, 3.0, n)
    lo, hi = np.zeros(n), rng.uniform(5, 10, n)

    def f(x, k):
        return np.log(np.abs(x) ** p[k] + 1e-3) - np.log(c[k])

    for tol in (1e-3, 1e-6, 1e-10):
        want = elementwise.find_root(lambda x, k: f(x, k.astype(int)), (lo, hi),
                                     args=(np.arange(n, dtype=float),),
                                     tolerances={"xatol": tol, "xrtol": tol, "fatol": 0.0,
                                                 "frtol": 0.0})
        got = chandrupatla(f, lo, hi, f(lo, np.arange(n)), f(hi, np.arange(n)), xatol=tol,
                           xrtol=tol)
        np.testing.assert_array_equal(got["xl"], want.bracket[0])
        np.testing.assert_array_equal(got["xr"], want.bracket[1])
        np.testing.assert_array_equal(got["x"], want.x)
        np.testing.assert_array_equal(got["f_x"], want.f_x)
        np.testing.assert_array_equal(got["fr"], want.f_bracket[1])


def test_largest_rejected_roots_equals_scalar():
    rng = np.random.default_rng(3)
    roots = np.concatenate([rng.uniform(0.1, 4.9, 6), [-1.0, 7.0, 0.0]])
    lo = np.zeros(roots.size)
    hi = np.full(roots.size, 5.0)

    def margin(x, k):
        return np.tanh(x - roots[k]) * 3

    got = largest_rejected_roots(margin, lo, hi, tol=1e-7)
    for i in range(roots.size):
        want = largest_rejected_root(lambda t, i=i: float(np.tanh(t - roots[i]) * 3), 0.0, 5.0,
                                     tol=1e-7)
        assert got[i] == want


# ----------------------------------------------------------------------------- Mahloujifar

def _mahloujifar_reference(m, cp, c, delta, confidence, family, tol=1e-6):
    """The pre-batch algorithm: one-candidate-set recursion per pass, scalar k-ary search."""
    fam = resolve_family(family, delta)
    tau = 1.0 - confidence
    points = 33 if fam.name == "gdp" else 9
    res, evals = largest_rejected_batched(
        lambda th: MA._gap([fam.curve(float(t)) for t in th], m, cp, c, tau) > 0,
        fam.lo, fam.hi, tol, points)
    theta = 0.0 if res.nothing_rejected else res.theta
    eps = 0.0 if res.nothing_rejected else fam.epsilon(theta, delta)
    return eps, theta, res, evals


def _mahloujifar_cases():
    rng = np.random.default_rng(20261123)
    cases = [(1, 1, 1), (1, 1, 0), (2, 2, 2), (5, 3, 0), (30, 30, 30), (30, 30, 15),
             (1000, 100, 90), (1000, 1000, 700), (10**7, 200, 200), (10**7, 1000, 990)]
    for _ in range(10):
        m = int(rng.choice([10, 100, 1000, 10**4, 10**5]))
        r = int(rng.integers(1, m + 1))
        v = int(rng.binomial(r, rng.uniform(0.5, 1.0)))
        cases.append((m, r, v))
    return cases


@pytest.mark.slow  # > 5 s: end-to-end or exhaustive; CI runs it
@pytest.mark.parametrize("family", ["gdp", "laplace", ("subsampled_gaussian", 0.3)])
def test_mahloujifar_many_equals_reference_bit_for_bit(family):
    cases = _mahloujifar_cases()
    if family != "gdp":  # the references of the other families are slow: smaller counts
        cases = [c for c in cases if c[1] <= (1000 if family == "laplace" else 200)]
    by_m: dict[int, list[tuple[int, int]]] = {}
    for m, r, v in cases:
        by_m.setdefault(m, []).append((r, v))
    for m, pts in by_m.items():
        for conf in ((0.95, 1 - 0.05 / 7) if family == "gdp" else (1 - 0.05 / 7,)):
            got = MA.mahloujifar_many(m, [r for r, _ in pts], [v for _, v in pts],
                                      delta=1e-5, confidence=conf, family=family)
            for (r, v), res in zip(pts, got, strict=True):
                eps, theta, sr, evals = _mahloujifar_reference(m, r, v, 1e-5, conf, family)
                assert res.epsilon == eps
                assert list(res.params.values()) == [theta]
                assert res.details["hit_ceiling"] == sr.hit_ceiling
                assert res.details["nothing_rejected"] == sr.nothing_rejected
                assert res.details["candidates_evaluated"] == evals
                one = MA.mahloujifar(m, r, v, delta=1e-5, confidence=conf, family=family)
                assert one.epsilon == res.epsilon and one.params == res.params
                assert one.settings == res.settings
                assert {k: x for k, x in one.details.items() if k != "accuracy"} == \
                    {k: x for k, x in res.details.items() if k != "accuracy"}


def test_mahloujifar_many_edge_flags():
    # nothing rejected (half right), a ceiling (a narrow family range), v = 0, r = m
    got = MA.mahloujifar_many(1000, [100, 1000, 10], [50, 1000, 0], confidence=0.95, family="gdp")
    assert got[0].details["nothing_rejected"] and got[0].epsilon == 0.0
    assert got[2].details["nothing_rejected"]
    assert got[1].epsilon > 0 and not got[1].details["hit_ceiling"]
    from dpaudit.curves import Family, GaussianDP
    narrow = Family("narrow", GaussianDP, 0.01, 0.5, "mu")
    top = MA.mahloujifar_many(1000, [1000, 100], [1000, 50], family=narrow)
    assert top[0].details["hit_ceiling"] and top[0].params["mu"] == 0.5
    assert top[1].details["nothing_rejected"]
    eps, _, sr, _ = _mahloujifar_reference(1000, 1000, 1000, 1e-5, 0.95, narrow)
    assert sr.hit_ceiling and top[0].epsilon == eps


def test_mahloujifar_many_validates():
    with pytest.raises(ValueError, match="correct"):
        MA.mahloujifar_many(100, [10, 20], [11, 5], family="gdp")
    with pytest.raises(ValueError, match="same length"):
        MA.mahloujifar_many(100, [10, 20], [5], family="gdp")
    with pytest.raises(ValueError, match="guesses"):
        MA.mahloujifar_many(100, [101], [5], family="gdp")


# --------------------------------------------------------------------------------- Steinke

def _p_reference(m, r, v, eps, delta, variant):
    """Direct transcription (scipy.stats, every window summed): module docstring."""
    if v == 0:
        return 1.0
    q = math.exp(eps) / (1 + math.exp(eps)) if eps < 700 else 1.0
    beta = float(stats.binom.sf(v - 1, r, q))
    if delta == 0:
        return min(1.0, beta)
    shift = 0 if variant == "original" else 1
    k = np.arange(v - 1 + shift, -1, -1)          # k = v - j, j = 1 - shift, 2 - shift, ...
    pmf = stats.binom.pmf(k, r, q)
    i = np.arange(1, k.size + 1)
    alpha = float(np.max(np.cumsum(pmf) / i))
    return min(1.0, beta + 2 * m * delta * alpha)


def _steinke_cases():
    rng = np.random.default_rng(7)
    cases = [(1, 1, 1), (1, 1, 0), (2, 2, 2), (5, 5, 0), (20, 20, 20), (1000, 100, 90),
             (1000, 1000, 700), (1000, 1000, 1000), (10000, 20, 19),
             (10**7, 10**5, 69_000), (10**7, 2000, 2000)]
    for _ in range(9):
        m = int(rng.choice([10, 300, 10**4, 10**5, 10**6]))
        r = int(rng.integers(1, min(m, 200_000) + 1))
        v = int(rng.binomial(r, rng.uniform(0.5, 1.0)))
        cases.append((m, r, v))
    return cases


@pytest.mark.parametrize("variant", ["original", "port"])
@pytest.mark.parametrize("delta", [1e-5, 0.0, 1e-3])
def test_steinke_many_contract_and_scalar_equality(variant, delta):
    conf = 1 - 0.05 / 7
    sig = 1 - conf
    tol = 1e-6
    cases = _steinke_cases()
    by_m: dict[int, list[tuple[int, int]]] = {}
    for m, r, v in cases:
        by_m.setdefault(m, []).append((r, v))
    for m, pts in by_m.items():
        got = ST.steinke_many(m, [r for r, _ in pts], [v for _, v in pts], delta=delta,
                              confidence=conf, variant=variant, tol=tol)
        for (r, v), res in zip(pts, got, strict=True):
            one = ST.steinke(m, r, v, delta=delta, confidence=conf, variant=variant, tol=tol)
            assert one.epsilon == res.epsilon and one.p_value == res.p_value
            assert one.settings == res.settings
            assert one.details["hit_ceiling"] == res.details["hit_ceiling"]
            assert one.details["nothing_rejected"] == res.details["nothing_rejected"]
            eps = res.epsilon
            if res.details["nothing_rejected"]:
                assert eps == 0.0 and _p_reference(m, r, v, 0.0, delta, variant) >= sig * (
                    1 - 1e-9)
                continue
            # the returned eps is rejected by the reference p-value ...
            p_ref = _p_reference(m, r, v, eps, delta, variant)
            assert p_ref < sig * (1 + 1e-9)
            assert res.p_value == pytest.approx(p_ref, rel=1e-8, abs=1e-300)
            # ... and the boundary is within tol * max(1, eps) above it
            if not res.details["hit_ceiling"]:
                above = eps + 1.01 * tol * max(1.0, eps)
                assert _p_reference(m, r, v, above, delta, variant) >= sig * (1 - 1e-9)


def test_steinke_many_ceiling_and_flags():
    got = ST.steinke_many(10**6, [1000, 1000, 10], [1000, 500, 0], delta=0.0, eps_cap=2.5)
    assert got[0].details["hit_ceiling"] and got[0].epsilon == 2.5
    assert got[1].details["nothing_rejected"] and got[1].epsilon == 0.0
    assert got[2].details["nothing_rejected"] and got[2].p_value == 1.0
    # eps_cap below 1: the first bracket is [0, cap]
    low = ST.steinke_many(1000, [1000], [1000], eps_cap=0.5)[0]
    assert low.details["hit_ceiling"] and low.epsilon == 0.5
    # large m delta: collapses to 0 (TOR notes §4.5 RR table, n = 10000, delta = 1e-2)
    assert ST.steinke_many(10000, [10000], [10000 - 1180], delta=1e-2)[0].epsilon == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3))
def test_alpha_window_maximum_equals_brute_force(seed):
    """alpha's maximum over every window = the short-window search, cold and with warm
    starts that are far off (the window must walk to the maximum)."""
    rng = np.random.default_rng(seed)
    r = rng.integers(1, 300_000, 40).astype(float)
    r[:4] = [1, 2, 7, 50]
    q = rng.uniform(0.5, 0.9999, r.size)
    top = np.floor(r * rng.uniform(0.3, 1.0, r.size))
    s_top = stats.binom.sf(top, r, q)
    want = np.empty(r.size)
    for i in range(r.size):
        k = np.arange(int(top[i]), -1, -1)
        pmf = stats.binom.pmf(k, r[i], q[i])
        want[i] = np.max(np.cumsum(pmf) / np.arange(1, k.size + 1))
    for hint in (None, np.clip(top - rng.integers(0, 5000, r.size), 0, None),
                 np.where(rng.random(r.size) < 0.5, -1.0, 0.0)):
        got, kstar = ST._alpha(r, top, q, s_top, hint)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-300)
        assert ((kstar >= 0) & (kstar <= top)).all()


def test_batch_equals_audit_one_run_grid():
    """What audit_one_run computes point by point is what the batch functions return for its
    grid in one call (so wiring them in changes no number)."""
    import warnings

    from dpaudit.estimators.one_run import audit_one_run, default_grid, guess_counts

    rng = np.random.default_rng(0)
    n = 3000
    member = rng.random(n) < 0.5
    score = rng.standard_normal(n) + 2.0 * member
    cnt = guess_counts(member, score, default_grid(n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = audit_one_run(member, score, methods=("steinke", "mahloujifar"), family="gdp")
    conf = rows[0].settings["per_test_confidence"]
    st = ST.steinke_many(n, cnt["guesses"], cnt["correct"], confidence=conf)
    ma = MA.mahloujifar_many(n, cnt["guesses"], cnt["correct"], confidence=conf, family="gdp")
    assert rows[0].details["grid_epsilons"] == [x.epsilon for x in st]
    assert rows[1].details["grid_epsilons"] == [x.epsilon for x in ma]


@pytest.mark.parametrize("call,match", [
    (lambda: ST.steinke_many(100, [10, 20], [5]), "same length"),
    (lambda: MA.mahloujifar_many(100, [10], [11], family="gdp"), r"correct must be <= guesses"),
    (lambda: ST.steinke_many(100, [101], [1]), r"guesses must be <= m"),
    (lambda: MA.mahloujifar_many(0, [0], [0], family="gdp"), "m must be"),
])
def test_batch_bad_counts_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()
