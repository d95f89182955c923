"""Thm 3.2 / 3.3 / 3.5, Cor 3.4, v_UB and derived quantities (Beyond Worst Case; BWC notes §1, §6).

Every DERIVED reference value of BWC notes §6 used here is also recomputed independently in the
test (scipy binomial tails, brute-force alpha, an LP solved by scipy.optimize.linprog, direct
closed forms), so a wrong spec value would not pass silently.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from dpaudit import risk
from dpaudit.risk.bounds import _alpha_all_brute, _alpha_all_tangent
from dpaudit.stats import poisson_binomial_tail

DELTA = 1e-5

# BWC notes §6.6: eps | p | beta | n beta | v_UB 5% | 50% | 95% | 99%  (Thm 3.5 [pure])
TABLE_66 = """
| 0.5 | 0.1 | 0.1548 | 15.48 | 10 [10] | 15 [15] | 22 [22] | 24 [24] |
| 0.5 | 0.2 | 0.2919 | 29.19 | 22 [22] | 29 [29] | 37 [37] | 40 [40] |
| 0.5 | 0.3 | 0.4140 | 41.40 | 33 [33] | 41 [41] | 50 [50] | 53 [53] |
| 0.5 | 0.5 | 0.6225 | 62.25 | 54 [54] | 62 [62] | 70 [70] | 73 [73] |
| 0.5 | 0.56 | 0.6772 | 67.72 | 60 [60] | 68 [68] | 75 [75] | 78 [78] |
| 0.5 | 0.7 | 0.7937 | 79.37 | 73 [73] | 79 [79] | 86 [86] | 88 [88] |
| 0.5 | 0.8 | 0.8683 | 86.83 | 81 [81] | 87 [87] | 92 [92] | 94 [94] |
| 0.5 | 0.9 | 0.9369 | 93.69 | 89 [89] | 94 [94] | 97 [97] | 99 [99] |
| 1 | 0.1 | 0.2320 | 23.20 | 16 [16] | 23 [23] | 30 [30] | 33 [33] |
| 1 | 0.2 | 0.4046 | 40.46 | 32 [32] | 40 [40] | 49 [49] | 52 [52] |
| 1 | 0.3 | 0.5381 | 53.81 | 46 [46] | 54 [54] | 62 [62] | 65 [65] |
| 1 | 0.5 | 0.7311 | 73.11 | 66 [66] | 73 [73] | 80 [80] | 83 [83] |
| 1 | 0.56 | 0.7758 | 77.58 | 71 [71] | 78 [78] | 84 [84] | 87 [87] |
| 1 | 0.7 | 0.8638 | 86.38 | 81 [81] | 87 [87] | 92 [92] | 94 [94] |
| 1 | 0.8 | 0.9158 | 91.58 | 87 [87] | 92 [92] | 96 [96] | 97 [97] |
| 1 | 0.9 | 0.9607 | 96.07 | 93 [93] | 96 [96] | 99 [99] | 100 [100] |
| 2 | 0.1 | 0.4509 | 45.09 | 37 [37] | 45 [45] | 53 [53] | 57 [57] |
| 2 | 0.2 | 0.6488 | 64.88 | 57 [57] | 65 [65] | 73 [73] | 76 [76] |
| 2 | 0.3 | 0.7600 | 76.00 | 69 [69] | 76 [76] | 83 [83] | 86 [85] |
| 2 | 0.5 | 0.8808 | 88.08 | 83 [83] | 88 [88] | 93 [93] | 95 [95] |
| 2 | 0.56 | 0.9039 | 90.39 | 85 [85] | 91 [91] | 95 [95] | 97 [97] |
| 2 | 0.7 | 0.9452 | 94.52 | 91 [91] | 95 [95] | 98 [98] | 99 [99] |
| 2 | 0.8 | 0.9673 | 96.73 | 94 [94] | 97 [97] | 99 [99] | 100 [100] |
| 2 | 0.9 | 0.9852 | 98.52 | 96 [96] | 99 [99] | 100 [100] | 100 [100] |
| 3 | 0.1 | 0.6906 | 69.06 | 61 [61] | 69 [69] | 77 [77] | 79 [79] |
| 3 | 0.2 | 0.8339 | 83.39 | 77 [77] | 84 [84] | 89 [89] | 91 [91] |
| 3 | 0.3 | 0.8959 | 89.59 | 84 [84] | 90 [90] | 94 [94] | 96 [96] |
| 3 | 0.5 | 0.9526 | 95.26 | 92 [92] | 95 [95] | 98 [98] | 99 [99] |
| 3 | 0.56 | 0.9624 | 96.24 | 93 [93] | 96 [96] | 99 [99] | 100 [100] |
| 3 | 0.7 | 0.9791 | 97.91 | 95 [95] | 98 [98] | 100 [100] | 100 [100] |
| 3 | 0.8 | 0.9877 | 98.77 | 97 [97] | 99 [99] | 100 [100] | 100 [100] |
| 3 | 0.9 | 0.9945 | 99.45 | 98 [98] | 100 [100] | 100 [100] | 100 [100] |
| 5 | 0.1 | 0.9428 | 94.28 | 90 [90] | 94 [94] | 98 [98] | 99 [99] |
| 5 | 0.2 | 0.9738 | 97.38 | 95 [95] | 98 [98] | 100 [100] | 100 [100] |
| 5 | 0.3 | 0.9845 | 98.45 | 96 [96] | 99 [99] | 100 [100] | 100 [100] |
| 5 | 0.5 | 0.9933 | 99.33 | 98 [98] | 100 [100] | 100 [100] | 100 [100] |
| 5 | 0.56 | 0.9947 | 99.47 | 98 [98] | 100 [100] | 100 [100] | 100 [100] |
| 5 | 0.7 | 0.9971 | 99.71 | 99 [99] | 100 [100] | 100 [100] | 100 [100] |
| 5 | 0.8 | 0.9983 | 99.83 | 99 [99] | 100 [100] | 100 [100] | 100 [100] |
| 5 | 0.9 | 0.9993 | 99.93 | 99 [99] | 100 [100] | 100 [100] | 100 [100] |
"""


def _rows66() -> list[tuple[float, float, float, list[int], list[int]]]:
    out = []
    for line in TABLE_66.strip().splitlines():
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        thm = [int(x.split("[")[0]) for x in c[4:8]]
        pure = [int(x.split("[")[1].rstrip("]")) for x in c[4:8]]
        out.append((float(c[0]), float(c[1]), float(c[2]), thm, pure))
    return out


@pytest.mark.parametrize(("eps", "p", "b", "thm", "pure"), _rows66())
def test_v_ub_table_6_6(eps: float, p: float, b: float, thm: list[int], pure: list[int]) -> None:
    conf = [0.05, 0.5, 0.95, 0.99]
    priors = np.full(100, p)
    assert risk.beta(p, eps) == pytest.approx(b, abs=5.1e-5)  # beta printed to 4 decimals
    # integers: exact
    assert list(risk.thm35_tail(priors, eps, DELTA).v_ub(conf)) == thm
    assert list(risk.pure_tail(priors, eps).v_ub(conf)) == pure
    # independent: pure v_UB(c) is the c-quantile of Binomial(100, beta) (v_UB = min v with
    # Pr[S >= v + 1] <= 1 - c  <=>  Pr[S <= v] >= c)
    q = [int(stats.binom.ppf(c, 100, risk.beta(p, eps))) for c in conf]
    assert q == pure


def _alpha_brute(t: np.ndarray, v: int, n: int) -> float:
    def tt(u: int) -> float:
        return 1.0 if u <= 0 else (0.0 if u > n else float(t[u]))
    return max((tt(v - j) - tt(v)) / j for j in range(1, n + 1))


# BWC notes §6.6 tail values, p = 0.56, eps = 1, n = 100: v, T(v), Thm 3.5 B(v), Cor 3.4 T + n delta
TAILS_056 = [
    (75, 0.772669, 0.772732, 0.773669), (78, 0.516162, 0.516255, 0.517162),
    (80, 0.328802, 0.328896, 0.329802), (82, 0.17399, 0.174078, 0.17499),
    (84, 0.0739227, 0.0740006, 0.0749227), (85, 0.043889, 0.0439619, 0.044889),
    (86, 0.0243303, 0.0243983, 0.0253303), (88, 0.00595755, 0.00601685, 0.00695755),
    (90, 0.00103302, 0.00108522, 0.00203302),
]


@pytest.mark.parametrize(("v", "t", "b35", "c34"), TAILS_056)
def test_tail_values_p056(v: int, t: float, b35: float, c34: float) -> None:
    n, p, eps = 100, 0.56, 1.0
    priors = np.full(n, p)
    # values printed to 6 significant digits
    assert risk.pure_tail(priors, eps).sf(v) == pytest.approx(t, rel=1e-5)
    assert risk.thm35_tail(priors, eps, DELTA).sf(v) == pytest.approx(b35, rel=1e-5)
    assert risk.thm35_bound(priors, eps, DELTA, v) == pytest.approx(b35, rel=1e-5)
    c = risk.cor34_tail(np.tile(priors, (3, 1)), eps, DELTA)  # one fixed attempt, 3 runs
    assert c.sf(v) == pytest.approx(c34, rel=1e-5)
    # independent recomputation: scipy binomial tail + brute-force alpha
    b = risk.beta(p, eps)
    t_ref = np.concatenate([[1.0], stats.binom.sf(np.arange(0, n + 1), n, b)])
    assert t_ref[v] == pytest.approx(t, rel=1e-5)
    assert t_ref[v] + _alpha_brute(t_ref, v, n) * n * DELTA == pytest.approx(b35, rel=1e-5)


def test_heterogeneous_example() -> None:
    # BWC notes §6.6: p_i = linspace(0.05, 0.95, 100), eps = 1
    priors = np.linspace(0.05, 0.95, 100)
    tb = risk.thm35_tail(priors, 1.0, DELTA)
    assert tb.expected == pytest.approx(67.493, abs=6e-4)
    assert list(tb.v_ub([0.05, 0.5, 0.95])) == [61, 68, 74]
    t = risk.pure_tail(priors, 1.0)
    for v, tv, bv in [(60, 0.975082, 0.975093), (65, 0.772267, 0.772334),
                      (70, 0.311687, 0.311783), (75, 0.0392803, 0.0393536)]:
        assert t.sf(v) == pytest.approx(tv, rel=1e-5)
        assert tb.sf(v) == pytest.approx(bv, rel=1e-5)
    # independent: Monte Carlo of the Poisson-binomial tail at v = 70 (1e5 draws, 5 sigma)
    rng = np.random.default_rng(0)
    s = (rng.random((100_000, 100)) < risk.beta(priors, 1.0)).sum(axis=1)
    emp = (s >= 70).mean()
    assert abs(emp - 0.311687) < 5 * math.sqrt(0.31 * 0.69 / 1e5)


def test_steinke_membership_vectors() -> None:
    # BWC notes §6.7 C (7 significant digits)
    assert risk.steinke_membership_bound(1000, 100, 80, 1.0, 1e-5) == pytest.approx(
        0.0722827, rel=2e-6)
    assert risk.steinke_membership_bound(1000, 100, 80, 1.0, 1e-5, delta_multiplier=2) == \
        pytest.approx(0.0730091, rel=2e-6)
    assert risk.steinke_membership_bound(1000, 200, 140, 1.0, 1e-4) == pytest.approx(
        0.8606535, rel=2e-6)
    assert risk.steinke_membership_bound(1000, 200, 140, 1.0, 1e-4, delta_multiplier=2) == \
        pytest.approx(0.8638662, rel=2e-6)


def _steinke_reference(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """Independent transcription of Steinke-Nasr-Jagielski's p-value (their Algorithm/code
    structure: binomial tail plus alpha * delta * 2m), used as an oracle."""
    q = 1 / (1 + math.exp(-eps))
    b = stats.binom.sf(v - 1, r, q)
    alpha, acc = 0.0, 0.0
    for i in range(1, v + 1):
        acc += stats.binom.pmf(v - i, r, q)
        alpha = max(alpha, acc / i)
    return min(b + alpha * delta * 2 * m, 1.0)


@pytest.mark.parametrize(("m", "r", "v", "eps", "delta"),
                         [(1000, 100, 80, 1.0, 1e-5), (1000, 200, 140, 1.0, 1e-4),
                          (500, 300, 200, 0.5, 1e-3), (50, 50, 40, 2.0, 1e-2)])
def test_steinke_equals_reference_code(m: int, r: int, v: int, eps: float, delta: float) -> None:
    got = risk.steinke_membership_bound(m, r, v, eps, delta, delta_multiplier=2)
    assert got == pytest.approx(_steinke_reference(m, r, v, eps, delta), rel=1e-9)


@pytest.mark.parametrize("v", [1, 3, 5, 8])
def test_thm35_is_the_lp_optimum(v: int) -> None:
    """App. B: the worst F maximises sum_j q_j T(v - j) s.t. sum q = 1, sum j q_j <= n delta.
    Solved independently with linprog; equals Thm 3.5's T(v) + alpha n delta when n delta <= 1."""
    priors = np.array([0.1, 0.3, 0.5, 0.2, 0.7, 0.4, 0.05, 0.9])
    n, eps, delta = priors.size, 0.7, 0.05  # n delta = 0.4: the alpha term matters
    t = poisson_binomial_tail(risk.beta(priors, eps))
    tv = np.array([1.0 if v - j <= 0 else t[v - j] for j in range(n + 1)])
    res = optimize.linprog(-tv, A_ub=[np.arange(n + 1)], b_ub=[n * delta],
                           A_eq=[np.ones(n + 1)], b_eq=[1.0], bounds=[(0, None)] * (n + 1))
    assert res.success
    assert risk.thm35_tail(priors, eps, delta).sf(v) == pytest.approx(-res.fun, rel=1e-9)
    # Thm 3.3 with that worst-case F reproduces the same number
    q = np.clip(res.x, 0, None)
    q /= q.sum()
    assert risk.thm33_tail(priors, eps, q)[v] == pytest.approx(-res.fun, rel=1e-7)


def test_thm33_building_block() -> None:
    priors = np.array([0.2, 0.4, 0.6])
    # F = 0 surely: Thm 3.2's tail
    np.testing.assert_allclose(risk.thm33_tail(priors, 1.0, [1.0]),
                               risk.pure_tail(priors, 1.0).tail, atol=1e-15)
    # F = 1 w.p. d: Pr[F + S >= v] = (1 - d) T(v) + d T(v - 1)
    d = 0.1
    t = risk.pure_tail(priors, 1.0).tail
    got = risk.thm33_tail(priors, 1.0, [1 - d, d])
    np.testing.assert_allclose(got[1:4], (1 - d) * t[1:4] + d * t[0:3], atol=1e-15)
    with pytest.raises(ValueError, match="f_pmf"):
        risk.thm33_tail(priors, 1.0, [0.5, 0.2])


def test_single_target_closed_forms() -> None:
    # BWC notes §1.8(a): n = k = v = 1
    for p in (0.001, 0.1, 0.5, 0.9):
        for eps in (0.5, 2.0):
            b = risk.beta(p, eps)
            d = 1e-3
            assert risk.thm35_tail([p], eps, d).sf(1) == pytest.approx(b + (1 - b) * d, rel=1e-12)
            assert risk.single_target_bound(p, eps, d) == pytest.approx(b + (1 - b) * d)
            assert risk.single_target_bound(p, eps, d, theorem="cor3.4") == \
                pytest.approx(min(1.0, b + d))
            assert risk.single_target_bound(p, eps, d, theorem="thm3.2") == pytest.approx(b)
            assert risk.cor34_tail([p], eps, d).sf(1) == pytest.approx(b + d)


# BWC notes §6.2 Figure 1 (delta = 1e-5): prior, Ours pure, Ours Thm3.5, Cor3.4 (5 decimals)
FIG1 = {
    1.0: [(0.001, 0.00271, 0.00272, 0.00272), (0.05, 0.12516, 0.12517, 0.12517),
          (1 / 3, 0.57612, 0.57612, 0.57613), (0.9, 0.96073, 0.96073, 0.96074)],
    2.0: [(0.01, 0.06945, 0.06946, 0.06946), (0.25, 0.71123, 0.71124, 0.71124),
          (0.7, 0.94518, 0.94518, 0.94519), (0.99, 0.99863, 0.99863, 0.99864)],
    4.0: [(0.001, 0.05182, 0.05183, 0.05183), (0.1, 0.85849, 0.85849, 0.85850),
          (0.5, 0.98201, 0.98201, 0.98202), (0.95, 0.99904, 0.99904, 0.99905)],
}


@pytest.mark.parametrize("eps", sorted(FIG1))
def test_figure1_curves(eps: float) -> None:
    for p, pure, t35, c34 in FIG1[eps]:
        # 5 decimals printed: absolute tolerance 5e-6 (+ rounding slack)
        assert risk.single_target_bound(p, eps, theorem="thm3.2") == pytest.approx(pure, abs=6e-6)
        assert risk.single_target_bound(p, eps, DELTA) == pytest.approx(t35, abs=6e-6)
        assert risk.single_target_bound(p, eps, DELTA, theorem="cor3.4") == \
            pytest.approx(c34, abs=6e-6)


@pytest.mark.slow
def test_tangent_alpha_equals_brute_force() -> None:
    rng = np.random.default_rng(5)
    for n, a, b in [(50, 1, 1), (400, 0.3, 3), (3500, 2, 2)]:
        t = poisson_binomial_tail(risk.beta(rng.beta(a, b, n), 1.3))
        np.testing.assert_allclose(_alpha_all_tangent(t), _alpha_all_brute(t), rtol=1e-12,
                                   atol=1e-15)
    # abstentions (p = 0) and certain successes (p = 1) create flat runs of T at 0 and 1
    for p in (np.r_[np.full(300, 0.5), np.zeros(3000)], np.r_[np.ones(50), np.full(3000, 0.3)]):
        t = poisson_binomial_tail(risk.beta(p, 1.0))
        np.testing.assert_allclose(_alpha_all_tangent(t), _alpha_all_brute(t), rtol=1e-12,
                                   atol=1e-15)
    # chunked evaluation over v gives the same values
    t = poisson_binomial_tail(risk.beta(rng.beta(2, 5, 2500), 1.0))
    np.testing.assert_allclose(_alpha_all_tangent(t, chunk=97), _alpha_all_brute(t), rtol=1e-12,
                               atol=1e-15)
    # where T(v) = 0 the sampled search (every stride-th v solved on the full range, the others
    # between their neighbours' answers) gives exactly the full search's values (stride = 1)
    # (the windowed FFT above 65,536 targets returns exact zeros; here the upper tail is cut)
    for p in (np.r_[np.full(300, 0.5), np.zeros(3000)], rng.uniform(0.01, 0.3, 20_000)):
        t = poisson_binomial_tail(risk.beta(p, 1.0))
        t[t < 1e-15] = 0.0
        assert (t == 0).sum() > 1000  # the sampled path is exercised
        full = _alpha_all_tangent(t, stride=1)
        for stride in (2, 7, 256):
            np.testing.assert_array_equal(_alpha_all_tangent(t, chunk=997, stride=stride), full)
        if p.size < 5000:
            np.testing.assert_allclose(full, _alpha_all_brute(t), rtol=1e-12, atol=1e-15)
    t = poisson_binomial_tail(risk.beta(np.full(60, 0.3), 1.0))
    for v in (1, 10, 25, 59, 60):
        assert risk.alpha_term(t, v) == pytest.approx(_alpha_brute(t, v, 60), rel=1e-12)


def test_thm35_bound_pointwise_matches_full_curve_large_n() -> None:
    priors = np.random.default_rng(7).uniform(0.01, 0.99, 20_000)
    tb = risk.thm35_tail(priors, 0.8, 1e-6)
    v = tb.v_ub([0.05, 0.5, 0.95])
    np.testing.assert_allclose(risk.thm35_bound(priors, 0.8, 1e-6, v), tb.sf(v), rtol=1e-12)
    np.testing.assert_allclose(risk.thm35_bound(priors, 0.8, 1e-6, v + 1), tb.sf(v + 1),
                               rtol=1e-12)
    assert np.all(tb.sf(v + 1) <= 1 - np.array([0.05, 0.5, 0.95]))
    assert np.all(np.diff(tb.tail) <= 0)


@pytest.mark.parametrize(("n", "delta"), [(100, 1e-5), (1000, 1e-4), (20_000, 1e-6),
                                          (50, 0.05), (50, 0.5)])
def test_thm35_v_ub_binary_search_matches_full_curve(n: int, delta: float) -> None:
    # includes n delta > 1 (falls back to the monotone envelope of the full curve)
    p = np.random.default_rng(n).beta(0.7, 2.0, n)
    conf = [0.05, 0.5, 0.95, 0.99]
    np.testing.assert_array_equal(risk.thm35_v_ub(p, 1.0, delta, conf),
                                  risk.thm35_tail(p, 1.0, delta).v_ub(conf))
    assert risk.thm35_v_ub(np.full(100, 0.56), 1.0, DELTA, 0.95) == 84


def test_v_ub_definition_and_p_value() -> None:
    tb = risk.thm35_tail(np.full(100, 0.56), 1.0, DELTA)
    v = tb.v_ub(0.95)
    assert v == 84
    assert tb.sf(v + 1) <= 0.05 < tb.sf(v)
    assert tb.p_value(85) == pytest.approx(0.0439619, rel=1e-5)
    assert risk.v_ub(tb.tail, 0.95) == 84
    d = tb.to_dict()
    assert d["theorem"] == "thm3.5" and d["n"] == 100 and len(d["tail"]) == 102


def test_cor34_monte_carlo_seeded() -> None:
    # 4 targets; in each run the attack's attempt has prior 0.1 or 0.3 (coin flip)
    def simulate(rng: np.random.Generator) -> np.ndarray:
        return np.full(4, 0.1 if rng.random() < 0.5 else 0.3)

    a = risk.cor34_monte_carlo(simulate, 1.0, DELTA, runs=200, seed=3)
    b = risk.cor34_monte_carlo(simulate, 1.0, DELTA, runs=200, seed=3)
    np.testing.assert_array_equal(a.tail, b.tail)
    # independent: replay the coin flips, average scipy binomial tails, add n delta
    rng = np.random.default_rng(3)
    low = np.array([rng.random() < 0.5 for _ in range(200)])
    t1 = stats.binom.sf(np.arange(4), 4, risk.beta(0.1, 1.0))
    t3 = stats.binom.sf(np.arange(4), 4, risk.beta(0.3, 1.0))
    rows = np.where(low[:, None], t1[None, :], t3[None, :])
    np.testing.assert_allclose(a.tail[1:5], rows.mean(axis=0) + 4 * DELTA, rtol=1e-12)
    np.testing.assert_allclose(a.stderr[1:5], rows.std(axis=0, ddof=1) / math.sqrt(200),
                               rtol=1e-10)
    assert a.expected == pytest.approx(4 * np.mean(np.where(low, risk.beta(0.1, 1.0),
                                                           risk.beta(0.3, 1.0))))


# BWC notes §6.3 bit leakage log2(e^eps (1/alpha - 1) + 1) (3 decimals)
BITS = [(0, [6.644, 4.322, 3.322, 1.000]), (1, [8.077, 5.718, 4.670, 1.895]),
        (4, [12.400, 10.020, 8.944, 5.797]), (17, [31.155, 28.774, 27.696, 24.526]),
        (20, [35.483, 33.102, 32.024, 28.854])]


@pytest.mark.parametrize(("eps", "vals"), BITS)
def test_leaked_bits(eps: float, vals: list[float]) -> None:
    a = np.array([0.01, 0.05, 0.1, 0.5])
    got = risk.leaked_bits(eps, a)
    np.testing.assert_allclose(got, vals, atol=6e-4)
    np.testing.assert_allclose(got, np.log2(np.exp(eps) * (1 / a - 1) + 1), rtol=1e-12)
    # leaking exactly that many bits happens with probability alpha (inverse relation)
    np.testing.assert_allclose(risk.leak_probability(got, eps), a, rtol=1e-10)


def test_leak_probability_and_epsilon_for_leak() -> None:
    # BWC notes §6.3 second table (4 significant digits)
    assert risk.leak_probability(8, 4) == pytest.approx(0.1764, rel=5e-4)
    assert risk.leak_probability(16, 16) == pytest.approx(0.9927, rel=5e-4)
    assert risk.leak_probability(29.897, 16) == pytest.approx(0.00881, rel=2e-3)
    assert risk.leak_probability(32, 1) == pytest.approx(6.329e-10, rel=5e-4)
    # 9 uniform digits: eps at which leaking them reaches alpha = 16.128 / 17.779 / 18.526
    d = math.log2(1e9)
    np.testing.assert_allclose(risk.epsilon_for_leak(d, [0.01, 0.05, 0.1]),
                               [16.128, 17.779, 18.526], atol=6e-4)
    assert risk.epsilon_for_leak(d, 0.05) == pytest.approx(
        math.log((1e9 - 1) * 0.05 / 0.95), rel=1e-12)


# BWC notes §6.4 eps_protect (Cor 3.4, delta = 1e-5, tau = 0.05) and its pure column.
# Row p = 0.10723: the spec prints pure 0.3994, but logit(p + tau (1 - p)) - logit(p) = 0.39933
# (checked by hand and in test_epsilon_protect's definition check), so 0.3993 is used here.
EPS_PROTECT = [(1e-12, 24.6864, 24.6866), (1e-9, 17.7786, 17.7788), (1e-6, 10.8709, 10.8711),
               (1e-3, 3.9819, 3.9821), (0.01, 1.8345, 1.8347), (0.10723, 0.3993, 0.3993),
               (0.5, 0.1000, 0.1001), (0.9, 0.0567, 0.0568), (0.99, 0.0507, 0.0518)]


@pytest.mark.parametrize(("p", "cor", "pure"), EPS_PROTECT)
def test_epsilon_protect(p: float, cor: float, pure: float) -> None:
    got = risk.epsilon_protect(p, 0.05, DELTA)
    assert got == pytest.approx(cor, abs=6e-5)  # 4 decimals printed
    assert risk.epsilon_protect(p, 0.05, 0.0, theorem="thm3.2") == pytest.approx(pure, abs=6e-5)
    # definition: the advantage bound at eps_protect equals tau (independent of the closed form)
    assert risk.advantage_bound(p, got, DELTA) == pytest.approx(0.05, abs=1e-9)


def test_epsilon_protect_thm35_form_and_infeasible() -> None:
    assert risk.epsilon_protect(1e-9, 0.05, DELTA, theorem="thm3.5") == pytest.approx(
        17.77863, abs=1e-5)
    # delta >= tau (1 - p): no epsilon keeps the advantage below tau
    assert math.isnan(risk.epsilon_protect(0.5, 0.05, 0.03))


def test_advantage_values() -> None:
    # BWC notes §6.4: implied password p = 0.184 -> Adv(1) = 0.2402; PII 0.0055 -> Adv(5) = 0.4478
    assert risk.advantage_bound(0.184, 1.0, DELTA) == pytest.approx(0.2402, abs=6e-5)
    assert risk.advantage_bound(0.0055, 5.0, DELTA) == pytest.approx(0.4478, abs=6e-5)
    assert risk.advantage_bound(0.0055, 10.0, DELTA) == pytest.approx(0.9918, abs=6e-5)
    assert risk.advantage_bound(1e-9, 20.0, DELTA) == pytest.approx(0.3267, abs=6e-5)
    assert risk.advantage(0.5, 0.5) == 0.0
    assert risk.advantage(0.75, 0.5) == pytest.approx(0.5)
    assert risk.epsilon_for_posterior(0.1, risk.beta(0.1, 2.5)) == pytest.approx(2.5)


@pytest.mark.parametrize(("fn", "arg"), [
    (lambda: risk.thm35_tail([0.5, 1.5], 1, 1e-5), "priors"),
    (lambda: risk.thm35_tail([0.5, -0.5], 1, 1e-5), "priors"),
    (lambda: risk.thm35_tail([0.5], -1, 1e-5), "epsilon"),
    (lambda: risk.thm35_tail([0.5], 1, 1.0), "delta"),
    (lambda: risk.thm35_tail([0.5], 1, -1e-5), "delta"),
    (lambda: risk.thm35_tail([0.5], 1, 1e-5, delta_multiplier=-1), "delta_multiplier"),
    (lambda: risk.pure_tail([], 1), "priors"),
    (lambda: risk.pure_tail([0.5], float("nan")), "epsilon"),
    (lambda: risk.v_ub([1.0, 0.5, 0.0], 1.0), "confidence"),
    (lambda: risk.v_ub([1.0, 0.5, 0.0], 0.0), "confidence"),
    (lambda: risk.thm35_tail([0.5], 1, 1e-5).v_ub(1.5), "confidence"),
    (lambda: risk.advantage_bound(0.0, 1.0), "prior"),
    (lambda: risk.advantage_bound(1.0, 1.0), "prior"),
    (lambda: risk.epsilon_protect(1.2, 0.05), "prior"),
    (lambda: risk.epsilon_protect(0.1, 1.5), "tau"),
    (lambda: risk.single_target_bound(0.1, 1.0, 2.0), "delta"),
    (lambda: risk.single_target_bound(0.1, 1.0, theorem="thm9"), "theorem"),
    (lambda: risk.leaked_bits(1.0, 1.0), "alpha"),
    (lambda: risk.cor34_tail(np.ones((2, 2, 2)) / 2, 1.0, 0.0), "prior_samples"),
    (lambda: risk.cor34_monte_carlo(lambda r: [0.5], 1.0, 0.0, runs=0), "runs"),
])
def test_bad_input(fn, arg: str) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match=arg):
        fn()
