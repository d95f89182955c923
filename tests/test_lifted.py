"""Lifted-DP estimator, game, CLI and experiments (Pillutla et al.; LiDP notes §2, §5)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from dpaudit import estimators as E
from dpaudit.cli import main
from dpaudit.curves import GaussianDP
from dpaudit.estimators.lifted import (
    complement_moments,
    epsilon_from_bounds,
    group_privacy_target,
    lifted,
    lifted_epsilon_curve,
    lifted_from_scores,
    lifted_tuned,
    threshold_grid,
    trials_to_reach,
)
from dpaudit.games.lidp import (
    ClipBKDCanaries,
    RandomGradientCanaries,
    UnitSphereCanaries,
    lidp_game,
)
from dpaudit.papers.lidp_simulators import (
    LogisticDPSGD,
    dpsgd_lidp_scores,
    dpsgd_noise_for_epsilon,
    dpsgd_rdp_epsilon,
    gaussian_lidp_scores,
    gaussian_rdp_epsilon,
    gaussian_sigma_for_epsilon,
)
from dpaudit.stats import binomial
from dpaudit.stats.intervals_xbern import xbern_bounds
from dpaudit.stats.xbern import empirical_moments

BETA = 0.05


def _xy(seed: int = 0, n: int = 600, k: int = 16, tau: float = 1.5, sd: float = 1.0):
    rng = np.random.default_rng(seed)
    return rng.normal(1, sd, (n, k)) >= tau, rng.normal(0, sd, (n, k)) >= tau


# ------------------------------------------------------------------ estimator values

@pytest.mark.parametrize("interval,order", [("wilson", 1), ("wilson", 2), ("wilson", 4),
                                            ("bernstein", 2), ("bernstein", 4)])
def test_lifted_equals_algorithm1_from_independent_bounds(interval: str, order: int) -> None:
    x, y = _xy()
    r = lifted(x, y, delta=1e-5, confidence=0.95, interval=interval, order=order)
    mx = empirical_moments(x.sum(1), 16, order)
    my = empirical_moments(y.sum(1), 16, order)
    p1, _ = xbern_bounds(mx, 600, 16, BETA / 2, method=interval, order=order)
    _, p0 = xbern_bounds(my, 600, 16, BETA / 2, method=interval, order=order)
    expected = math.log((p1 - 1e-5) / p0)
    assert r.epsilon == pytest.approx(expected, rel=1e-12)
    assert r.details["tpr_lower"] == pytest.approx(p1)
    assert r.details["fpr_upper"] == pytest.approx(p0)
    assert r.method == "lifted" and r.settings["order"] == order
    assert r.delta == 1e-5 and r.confidence == 0.95


@pytest.mark.parametrize("interval", ["clopper_pearson", "jeffreys"])
def test_lifted_bernoulli_baselines_use_first_canary(interval: str) -> None:
    x, y = _xy(1)
    r = lifted(x, y, delta=0.0, confidence=0.9, interval=interval)
    fn = binomial.clopper_pearson if interval == "clopper_pearson" else binomial.jeffreys
    lo, _ = fn(int(x[:, 0].sum()), 600, 0.95, "lower")
    _, hi = fn(int(y[:, 0].sum()), 600, 0.95, "upper")
    assert r.epsilon == pytest.approx(math.log(lo / hi), rel=1e-12)
    assert r.settings["order"] == 1


def test_no_evidence_gives_zero_and_raw_minus_inf() -> None:
    x = np.zeros((50, 4), int)
    y = np.ones((50, 4), int)
    r = lifted(x, y, delta=1e-5)
    assert r.epsilon == 0.0 and r.details["epsilon_raw"] == -math.inf
    assert epsilon_from_bounds(0.5, 0.0, 0.1) == math.inf
    assert epsilon_from_bounds([0.5, 0.05], [0.25, 0.1], 0.0) == pytest.approx(
        [math.log(2), math.log(0.5)])
    d = r.to_dict()
    assert d["details"]["epsilon_raw"] is None and d["details"]["epsilon_raw_note"] == "-inf"


def test_complement_moments_exact() -> None:
    rng = np.random.default_rng(2)
    x = rng.random((300, 9)) < rng.random((300, 1))
    mu = empirical_moments(x.sum(1), 9, 4)
    muc = empirical_moments((~x).sum(1), 9, 4)
    np.testing.assert_allclose(complement_moments(mu), muc, atol=1e-12)


def test_symmetric_direction_splits_beta_in_four() -> None:
    rng = np.random.default_rng(3)
    # a low threshold: the swapped condition log(TNR/FNR) is the strong one
    x = rng.normal(1, 1, (800, 8)) >= -1.0
    y = rng.normal(0, 1, (800, 8)) >= -1.0
    fwd = lifted(x, y, delta=0.0)
    sym = lifted(x, y, delta=0.0, symmetric=True)
    assert fwd.epsilon < 0.3 < 1.0 < sym.epsilon
    mx = empirical_moments((~y).sum(1), 8, 2)  # TNR side: complement of y
    my = empirical_moments((~x).sum(1), 8, 2)  # FNR side: complement of x
    tnr, _ = xbern_bounds(mx, 800, 8, BETA / 4, method="wilson", order=2)
    _, fnr = xbern_bounds(my, 800, 8, BETA / 4, method="wilson", order=2)
    assert sym.epsilon == pytest.approx(math.log(tnr / fnr), rel=1e-10)
    assert sym.details["tnr_lower"] == pytest.approx(tnr)


def test_replace_one_recorded_same_formula() -> None:
    x, y = _xy(4)
    a = lifted(x, y)
    b = lifted(x, y, neighbourhood="replace_one")
    assert a.epsilon == b.epsilon and b.settings["neighbourhood"] == "replace_one"


def test_epsilon_curve_matches_pointwise_and_tuning_protocol() -> None:
    rng = np.random.default_rng(5)
    tx, ty = rng.normal(1, 1, (400, 8)), rng.normal(0, 1, (400, 8))
    ex, ey = rng.normal(1, 1, (400, 8)), rng.normal(0, 1, (400, 8))
    taus = threshold_grid(tx, ty, 50)
    lo = min(np.quantile(tx, 0.1), np.quantile(ty, 0.1))
    hi = max(np.quantile(tx, 0.9), np.quantile(ty, 0.9))
    assert taus[0] == pytest.approx(lo) and taus[-1] == pytest.approx(hi)
    curve = lifted_epsilon_curve(tx, ty, taus, 1e-5, 0.95, "wilson", 2)
    for j in (0, 17, 49):
        r = lifted_from_scores(tx, ty, taus[j], 1e-5, 0.95, "wilson", 2)
        assert curve["epsilon_raw"][j] == pytest.approx(r.details["epsilon_raw"], abs=1e-12)
    t = lifted_tuned(tx, ty, ex, ey, 1e-5, 0.95, "wilson", 2, grid=50)
    best = taus[int(np.argmax(curve["epsilon_raw"]))]
    assert t.details["threshold"] == pytest.approx(best)
    assert t.details["tuning_epsilon"] == pytest.approx(curve["epsilon_raw"].max())
    direct = lifted_from_scores(ex, ey, best, 1e-5, 0.95, "wilson", 2)
    assert t.epsilon == pytest.approx(direct.epsilon, abs=1e-14)
    # "less" direction: member iff score <= tau
    lo_r = lifted_from_scores(-ex, -ey, -best, direction="less")
    assert lo_r.epsilon == pytest.approx(direct.epsilon, abs=1e-12)


def test_trials_to_reach_and_group_privacy() -> None:
    assert trials_to_reach([100, 200, 400], [0.1, 0.3, 0.5], 0.4) == pytest.approx(300.0)
    assert trials_to_reach([100, 200, 400], [0.1, 0.3, 0.5], 0.4, space="log") == \
        pytest.approx(200 * math.sqrt(2))
    assert trials_to_reach([100, 200], [0.1, 0.3], 0.5) == pytest.approx(300.0)  # extrapolate
    assert math.isnan(trials_to_reach([1, 2], [0.3, 0.3], 0.5))
    e, d = group_privacy_target(1.0, 1e-5, 2)
    assert e == 2.0 and d == pytest.approx((math.e + 1) * 1e-5)


@pytest.mark.parametrize("kwargs,match", [
    ({"delta": 1.0}, "delta"), ({"confidence": 0.0}, "confidence"),
    ({"interval": "hoeffding"}, "interval"), ({"order": 3}, "order"),
    ({"neighbourhood": "swap"}, "neighbourhood"), ({"foo": True}, "foo"),
])
def test_lifted_bad_arguments(kwargs: dict, match: str) -> None:
    x, y = _xy(6, n=20, k=4)
    with pytest.raises(ValueError, match=match):
        lifted(x, y, **kwargs)


def test_lifted_bad_observations() -> None:
    with pytest.raises(ValueError, match="order"):
        lifted(np.ones((5, 1)), np.zeros((5, 1)), order=2)
    with pytest.raises(ValueError, match="x"):
        lifted([[0, 2]], [[0, 1]], order=1)
    with pytest.raises(ValueError, match="K"):
        lifted(np.ones((5, 2)), np.zeros((5, 3)), order=1)
    with pytest.raises(ValueError, match="x_scores"):
        lifted_epsilon_curve([[np.nan, 1.0]], [[0.0, 1.0]], [0.5], order=1)
    with pytest.raises(ValueError, match="grid_range"):
        threshold_grid([1.0], [0.0], 5, "everything")


def test_estimators_package_exports_lifted() -> None:
    x, y = _xy(7)
    assert E.lifted(x, y, delta=1e-5, confidence=0.95, interval="wilson", order=2).epsilon \
        == lifted(x, y).epsilon


# ------------------------------------------------------------------ CLI

def test_cli_bound_lifted_json_and_table(tmp_path, capsys) -> None:
    x, y = _xy(8)
    path = tmp_path / "xy.npz"
    np.savez(path, x=x, y=y)
    rc = main(["bound", "lifted", str(path), "--json", "--order", "4", "--delta", "0"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["epsilon"] == pytest.approx(lifted(x, y, delta=0.0, order=4).epsilon)
    assert out["settings"]["order"] == 4 and out["method"] == "lifted"
    rc = main(["bound", "lifted", str(path), "--interval", "bernstein",
               "--claimed-epsilon", "0.1"])
    text = capsys.readouterr().out
    assert rc == 0 and "lifted" in text and "violation" in text


def test_cli_bound_lifted_bad_input(tmp_path, capsys) -> None:
    path = tmp_path / "bad.npz"
    np.savez(path, x=np.ones((3, 2)))
    assert main(["bound", "lifted", str(path)]) == 2
    assert "must contain arrays 'x' and 'y'" in capsys.readouterr().err
    good = tmp_path / "g.npz"
    np.savez(good, x=np.ones((3, 2)), y=np.zeros((3, 2)))
    assert main(["bound", "lifted", str(good), "--order", "3"]) == 2
    assert "order" in capsys.readouterr().err
    assert main(["bound", "lifted", str(tmp_path / "none.npz")]) == 2


# ------------------------------------------------------------------ game

def test_gaussian_calibration_table_spec_2_11() -> None:
    # sigma^2 from the reference code -> the Thm-21 epsilon row (DERIVED) and true epsilon
    table = {0.5: (58.8, 0.4999, 0.4549), 1: (16.36, 1.0001, 0.9151),
             2: (4.62, 1.9997, 1.8392), 8: (0.4066, 8.0000, 7.4378)}
    for eps, (s2, e_rdp, e_true) in table.items():
        s = math.sqrt(s2)
        assert gaussian_rdp_epsilon(s, 1e-5) == pytest.approx(e_rdp, abs=1e-4)
        simple = math.sqrt(2 * math.log(1e5)) / s + 1 / (2 * s2)
        assert gaussian_rdp_epsilon(s, 1e-5) <= simple
        assert GaussianDP(1 / s).epsilon(1e-5) == pytest.approx(e_true, abs=1e-4)
        assert gaussian_sigma_for_epsilon(eps, 1e-5) ** 2 == pytest.approx(s2, rel=2e-3)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["direct", "wishart"])
def test_gaussian_scores_variance_and_exchangeability(method: str) -> None:
    # LiDP notes §5.13: marginal variance sigma^2 + (K-1)/d; §5.2: exchangeable tests
    k, d, sigma, n = 6, 40, 0.5, 20000
    r = gaussian_lidp_scores(n, k, sigma, d, rng=9, method=method)
    v = sigma**2 + (k - 1) / d
    assert r.x_scores.mean() == pytest.approx(1.0, abs=0.01)
    assert r.x_scores.var() == pytest.approx(v, rel=0.03)
    assert r.y_scores.mean() == pytest.approx(0.0, abs=0.01)
    assert r.y_scores.var() == pytest.approx(v, rel=0.03)
    x, _ = r.tests(1.2)
    p = x.mean(axis=0)
    se = math.sqrt(p.mean() * (1 - p.mean()) / n)
    assert np.ptp(p) < 5 * se
    co = (x[:, :, None] & x[:, None, :]).mean(axis=0)[np.triu_indices(k, 1)]
    se2 = math.sqrt(co.mean() * (1 - co.mean()) / n)
    assert np.ptp(co) < 6 * se2
    # canaries in d = 40 are correlated: mu2 > mu1^2
    mu = empirical_moments(x.sum(1), k, 2)
    assert mu[1] > mu[0] ** 2


@pytest.mark.slow
def test_black_box_game_matches_vectorised_simulator() -> None:
    k, d, sigma, n = 4, 30, 0.7, 3000
    sphere = UnitSphereCanaries(d)

    def mech(canaries, rng):  # Gaussian sum query on D = {0_d} + canaries
        return canaries.sum(axis=0) + sigma * rng.standard_normal(d)

    def score(out, canaries):
        return canaries @ out

    bb = lidp_game(mech, sphere.sample, score, n, k, rng=10)
    vec = gaussian_lidp_scores(n, k, sigma, d, rng=11, method="direct")
    for a, b in ((bb.x_scores, vec.x_scores), (bb.y_scores, vec.y_scores)):
        assert a.mean() == pytest.approx(b.mean(), abs=0.05)
        assert a.var() == pytest.approx(b.var(), rel=0.06)
    # replace-one: fresh canaries on the D_1 output see K (not K - 1) other canaries
    ro = lidp_game(mech, sphere.sample, score, n, k, rng=12, mode="replace_one")
    assert ro.y_scores.var() == pytest.approx(sigma**2 + k / d, rel=0.06)
    obs = bb.observations(0.5)
    assert obs.x.shape == (n, k)


def test_canary_distributions() -> None:
    rng = np.random.default_rng(13)
    g = RandomGradientCanaries(50, radius=2.0).sample(rng, 100)
    assert np.linalg.norm(g, axis=1) == pytest.approx(np.full(100, 2.0))
    b = RandomGradientCanaries(50, radius=2.0, law="ball").sample(rng, 100)
    assert np.all(np.linalg.norm(b, axis=1) <= 2.0 + 1e-12)
    X = rng.normal(size=(30, 60))  # N < d: tail singular vectors are orthogonal to the data
    cb = ClipBKDCanaries.from_data(X, p=20, alpha=3.0, label=2)
    f, lab = cb.sample(rng, 500)
    assert np.abs(X @ f.T).max() < 1e-9
    assert np.linalg.norm(f, axis=1) == pytest.approx(np.full(500, 3.0))
    assert set(lab) == {2} and len(np.unique(f.round(8), axis=0)) <= 20
    with pytest.raises(ValueError, match="p"):
        ClipBKDCanaries.from_data(X, p=61)
    with pytest.raises(ValueError, match="law"):
        RandomGradientCanaries(5, law="cube")


def test_game_bad_input() -> None:
    with pytest.raises(ValueError, match="method"):
        gaussian_lidp_scores(10, 2, 1.0, 10, rng=0, method="exact")
    with pytest.raises(ValueError, match="wishart"):
        gaussian_lidp_scores(10, 8, 1.0, 10, rng=0, method="wishart")
    with pytest.raises(ValueError, match="rng"):
        gaussian_lidp_scores(10, 2, 1.0, 10, rng=None)
    with pytest.raises(ValueError, match="mode"):
        lidp_game(lambda c, r: 0, lambda r, s: np.zeros((s, 2)), lambda o, c: np.zeros(len(c)),
                  2, 2, rng=0, mode="swap")
    with pytest.raises(ValueError, match="sigma"):
        gaussian_lidp_scores(10, 2, -1.0, 10, rng=0)


@pytest.mark.slow  # > 5 s: end-to-end or exhaustive; CI runs it
def test_dpsgd_simulator_calibration_and_training() -> None:
    s = dpsgd_noise_for_epsilon(4.0, 1e-5, 0.2, 20)
    assert dpsgd_rdp_epsilon(s, 0.2, 20, 1e-5) == pytest.approx(4.0, abs=1e-4)
    sim = LogisticDPSGD.synthetic(n_examples=60, dim=10, classes=3, epsilon=50.0, steps=30,
                                  sampling_rate=0.3, rng=14)
    theta = sim.train(15, 40)
    assert theta.shape == (40, 33)
    assert sim.accuracy(theta).mean() > 0.6  # well above chance (1/3)
    r = dpsgd_lidp_scores(sim, "gradient", 60, 4, rng=16)
    # members (inserted gradient canaries) score higher than fresh canaries on average
    assert r.x_scores.mean() > r.y_scores.mean() + 3 * r.y_scores.std() / math.sqrt(240)
    with pytest.raises(ValueError, match="canary"):
        dpsgd_lidp_scores(sim, "dirac", 5, 2, rng=0)
    with pytest.raises(ValueError, match="labels"):
        LogisticDPSGD(np.zeros((3, 2)), np.array([0, 1, 5]), 2, 5, 0.5, 1.0, 1.0, 0.1)


def test_experiments_registered() -> None:
    from dpaudit.papers.experiments.registry import get_experiment

    for name in ("lidp-gaussian", "lidp-k-sweep", "lidp-d-sweep", "lidp-dpsgd"):
        assert "Pillutla et al." in get_experiment(name).source


# ------------------------------------------------------------------ statistical properties

def test_epsilon_increases_with_n_and_lidp_beats_dp() -> None:
    # LiDP notes §5.12, fixed threshold (no tuning), d = 1e6 (i.i.d. scores), eps = 2
    sigma = gaussian_sigma_for_epsilon(2.0, 1e-5)
    tau = 1.5 * sigma
    means = {}
    for n in (256, 1024, 4096):
        e1, e2 = [], []
        for rep in range(6):
            r1 = gaussian_lidp_scores(n, 1, sigma, 10**6, rng=100 * n + rep, method="iid")
            rk = gaussian_lidp_scores(n, 32, sigma, 10**6, rng=100 * n + rep + 50,
                                      method="iid")
            e1.append(lifted(*r1.tests(tau), order=1).details["epsilon_raw"])
            e2.append(lifted(*rk.tests(tau), order=2).details["epsilon_raw"])
        means[n] = (np.mean(e1), np.mean(e2))
    assert means[256][1] < means[1024][1] < means[4096][1]
    assert means[256][0] < means[1024][0] < means[4096][0]
    for n in means:
        assert means[n][1] > means[n][0]


# ------------------------------------------------------------------ coverage on a correct mechanism

def _population_epsilon(p1: float, p0: float, delta: float) -> float:
    return math.log((p1 - delta) / p0)


@pytest.mark.slow
def test_lifted_coverage_gaussian_mechanism_iid_scores() -> None:
    """P(eps_hat > eps_pop(tau)) <= beta, where eps_pop(tau) = log((P1 - delta)/P0) is the
    population value of the fixed-threshold test (<= the true epsilon, so this is sharper than
    Theorem 3's statement).  R = 400: 3 s.e. of a beta = 0.05 rate is 0.033."""
    R, n, k, d = 400, 400, 16, 10**6
    sigma = gaussian_sigma_for_epsilon(2.0, 1e-5)
    s = math.sqrt(sigma**2 + (k - 1) / d)
    tau = 1.2 * sigma
    eps_pop = _population_epsilon(stats.norm.sf((tau - 1) / s), stats.norm.sf(tau / s), 1e-5)
    assert eps_pop < GaussianDP(1 / sigma).epsilon(1e-5)  # and below the true epsilon
    tol = 3 * math.sqrt(BETA * (1 - BETA) / R)
    configs = [("wilson", 1), ("wilson", 2), ("wilson", 4), ("bernstein", 1),
               ("bernstein", 2), ("bernstein", 4), ("clopper_pearson", 1), ("jeffreys", 1)]
    over = dict.fromkeys(configs, 0)
    for rep in range(R):
        x, y = gaussian_lidp_scores(n, k, sigma, d, rng=rep, method="iid").tests(tau)
        for it, o in configs:
            over[(it, o)] += lifted(x, y, 1e-5, 1 - BETA, it, o).details["epsilon_raw"] > eps_pop
    rates = {c: v / R for c, v in over.items()}
    for c, rate in rates.items():
        assert rate <= BETA + tol, (c, rate)


@pytest.mark.slow
def test_lifted_coverage_correlated_canaries_exact_sampler() -> None:
    """Same on the exact sampler with strongly correlated canaries (d = 30, K = 8); P1 and P0
    are estimated from 1.2e6 independent scores each (their MC error, about 5e-4, moves
    eps_pop by under 0.01, well inside the margin of the test)."""
    k, d, sigma, tau = 8, 30, 0.6, 1.0
    big = gaussian_lidp_scores(150_000, k, sigma, d, rng=999, method="direct")
    p1, p0 = float((big.x_scores >= tau).mean()), float((big.y_scores >= tau).mean())
    eps_pop = _population_epsilon(p1, p0, 1e-5)
    R, n = 300, 300
    tol = 3 * math.sqrt(BETA * (1 - BETA) / R)
    configs = [("wilson", 2), ("wilson", 4), ("bernstein", 2), ("bernstein", 4)]
    over = dict.fromkeys(configs, 0)
    for rep in range(R):
        x, y = gaussian_lidp_scores(n, k, sigma, d, rng=rep, method="direct").tests(tau)
        for it, o in configs:
            over[(it, o)] += lifted(x, y, 1e-5, 1 - BETA, it, o).details["epsilon_raw"] > eps_pop
    for c, v in over.items():
        assert v / R <= BETA + tol, (c, v / R)
