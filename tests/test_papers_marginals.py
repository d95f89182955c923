"""Case study 2 (Beyond Worst Case §6, App. A): census generator, BayNet inference, PUMS loader,
noisy
marginals calibration, RAP attack and the Thm 3.5 bound on the attack."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpaudit.curves import GaussianDP
from dpaudit.papers.casestudies.census import (
    ACS_COLUMNS,
    BayesNet,
    acs_generator_network,
    fit_acs_network,
    load_pums_csv,
    shipped_pums_sample_path,
    write_pums_csv,
)
from dpaudit.papers.casestudies.marginals import MAISetting, run_mai, visit_order_split, window_mass
from dpaudit.papers.casestudies.rap import (
    RAPOptions,
    marginal_workload,
    marginals_sigma,
    noisy_marginals,
    rap_attack,
)
from dpaudit.risk.priors import within_distance_success


@pytest.fixture(scope="module")
def net() -> BayesNet:
    """BayNet fitted to 20k records of the census-like generator (the paper's pipeline)."""
    rng = np.random.default_rng(123)
    return fit_acs_network(acs_generator_network().sample(20_000, rng))


def _tiny_net(seed: int = 0) -> BayesNet:
    rng = np.random.default_rng(seed)
    sizes = (3, 2, 4, 3, 2)
    parents = ((), (0,), (0, 1), (2,), (1, 3))
    cpts = [rng.dirichlet(np.ones(sizes[j]), size=tuple(sizes[p] for p in parents[j]) or None)
            for j in range(5)]
    return BayesNet(tuple("abcde"), sizes, parents, tuple(np.asarray(c) for c in cpts),
                    (0, 1, 2, 3, 4))


def _joint(bn: BayesNet) -> np.ndarray:
    allx = np.array(list(itertools.product(*[range(s) for s in bn.sizes])))
    return allx, np.exp(bn.log_prob(allx))


# ----------------------------------------------------------------------------- calibration
@pytest.mark.parametrize(("eps", "t", "sigma"), [
    (1.0, 105, 38.228), (3.0, 105, 14.249), (1.0, 274, 61.753), (3.0, 559, 32.878),
    (1.0, 36, 22.384), (3.0, 119, 15.170)])
def test_sigma_matches_spec_table(eps: float, t: int, sigma: float) -> None:
    # BWC notes §6.8 (Interpretation A), 3-decimal table values
    assert marginals_sigma(eps, 1e-5, t) == pytest.approx(sigma, abs=6e-4)
    # and the calibrated release is exactly (eps, 1e-5)-DP: sqrt(T) compositions of 1/sigma-GDP
    assert GaussianDP(math.sqrt(t) / marginals_sigma(eps, 1e-5, t)).epsilon(1e-5) == \
        pytest.approx(eps, rel=1e-6)


def test_workload_sizes_follow_T_formula() -> None:
    for dprime, t in [(1, 105), (2, 196), (3, 274), (13, 559)]:
        assert len(marginal_workload(range(16), range(dprime))) == t
        assert t == math.comb(16, 3) - math.comb(16 - dprime, 3)
    assert marginals_sigma(math.inf, 1e-5, 105) == 0.0


def test_noisy_marginals_counts_and_noise_scale(net: BayesNet) -> None:
    rng = np.random.default_rng(1)
    x = net.sample(100, rng)
    wl = marginal_workload(range(16), [1])  # SCHL unknown, the 15 others known
    exact = noisy_marginals(x, net.sizes, wl, 0.0, rng)
    for m in (0, 17, 104):
        a, b, c = exact.workload[m]
        ref = np.zeros(tuple(net.sizes[i] for i in (a, b, c)))
        np.add.at(ref, (x[:, a], x[:, b], x[:, c]), 1)
        assert np.array_equal(exact.marginal(m), ref)
    sig = marginals_sigma(1.0, 1e-5, len(wl))
    noisy = noisy_marginals(x, net.sizes, wl, sig, rng)
    resid = noisy.values - exact.values
    # N(0, 2 sigma^2) per cell; > 1e4 cells so the sample std has relative SE < 0.7%: 4% is > 5 SE
    assert resid.size > 10_000
    assert resid.std() == pytest.approx(math.sqrt(2) * sig, rel=0.04)
    assert noisy.noise_std == pytest.approx(math.sqrt(2) * sig)
    assert GaussianDP(noisy.mu).epsilon(1e-5) == pytest.approx(1.0, rel=1e-6)


# ----------------------------------------------------------------------------- BayNet
def test_variable_elimination_matches_brute_force() -> None:
    bn = _tiny_net()
    allx, p = _joint(bn)
    assert p.sum() == pytest.approx(1.0)
    rng = np.random.default_rng(2)
    recs = bn.sample(6, rng)
    known, query = [0, 4], [1, 2]  # column 3 is a hidden nuisance variable
    z, pstar = bn.map_completion(recs[:, known], known, query)
    le = bn.log_evidence(recs[:, known], known)
    cm = bn.conditional_marginal(recs[:, known], known, 2)
    for i, r in enumerate(recs):
        sel = np.all(allx[:, known] == r[known], axis=1)
        pk = p[sel].sum()
        assert math.exp(le[i]) == pytest.approx(pk, rel=1e-10)
        # max over (x1, x2) of sum over x3
        joint = np.zeros((2, 4))
        np.add.at(joint, (allx[sel, 1], allx[sel, 2]), p[sel])
        assert pstar[i] == pytest.approx(joint.max() / pk, rel=1e-10)
        assert tuple(z[i]) == np.unravel_index(joint.argmax(), joint.shape)
        assert cm[i] == pytest.approx(joint.sum(0) / pk, rel=1e-10)


def test_fit_recovers_cpts() -> None:
    bn = _tiny_net(3)
    x = bn.sample(200_000, np.random.default_rng(4))
    fit = BayesNet.fit(x, bn.sizes, bn.parents, order=bn.order, pseudocount=0.0)
    # smallest parent configuration has >= ~2000 rows here; SE <= sqrt(.25/2000) = 0.011
    for a, b in zip(fit.cpts, bn.cpts, strict=True):
        assert np.abs(a - b).max() < 0.05


def test_prior_only_success_matches_best_guess(net: BayesNet) -> None:
    """Mode-guessing succeeds with probability p*_i (records are drawn from the prior), so the
    realised count over 4000 records is Poisson-binomial(p*): 4 sd tolerance."""
    rng = np.random.default_rng(5)
    x = net.sample(4000, rng)
    u = net.names.index("MAR")
    kc = [c for c in range(16) if c != u]
    cond = net.conditional_marginal(x[:, kc], kc, u)
    pstar = within_distance_success(cond, 0)
    hits = (cond.argmax(1) == x[:, u]).sum()
    sd = math.sqrt((pstar * (1 - pstar)).sum())
    assert abs(hits - pstar.sum()) < 4 * sd
    # multi-column MAP (3 known columns, 3 targets in visit order, others hidden)
    kn, tg = visit_order_split(net, 3, 3)
    z, ps = net.map_completion(x[:, kn], kn, tg)
    hits = np.all(z == x[:, tg], axis=1).sum()
    sd = math.sqrt((ps * (1 - ps)).sum())
    assert abs(hits - ps.sum()) < 4 * sd


def test_window_mass_agrees_with_priors_module(net: BayesNet) -> None:
    rng = np.random.default_rng(6)
    x = net.sample(50, rng)
    kc = list(range(1, 16))
    cond = net.conditional_marginal(x[:, kc], kc, 0)
    for e in (0, 1, 3):
        assert window_mass(cond, e).max(1) == pytest.approx(within_distance_success(cond, e))


# ----------------------------------------------------------------------------- PUMS loader
def test_pums_loader_reads_shipped_file_and_roundtrips(tmp_path) -> None:
    x = load_pums_csv(shipped_pums_sample_path())
    assert x.shape == (500, 16)
    assert np.all(x < np.array([c.size for c in ACS_COLUMNS]))
    assert "SYNTHETIC" in shipped_pums_sample_path().read_text()[:200]
    out = write_pums_csv(tmp_path / "r.csv", x, np.random.default_rng(0))
    assert np.array_equal(load_pums_csv(out), x)


def test_pums_loader_rejects_bad_files(tmp_path) -> None:
    lines = shipped_pums_sample_path().read_text().splitlines()
    body = [ln for ln in lines if not ln.startswith("#")]
    header = body[0].split(",")
    # missing column
    k = header.index("SEX")
    drop = [",".join(c for j, c in enumerate(r.split(",")) if j != k) for r in body]
    (tmp_path / "a.csv").write_text("\n".join(drop))
    with pytest.raises(ValueError, match="SEX"):
        load_pums_csv(tmp_path / "a.csv")
    # unexpected code in MAR
    m = header.index("MAR")
    rows = [r.split(",") for r in body]
    rows[3][m] = "9"
    (tmp_path / "b.csv").write_text("\n".join(",".join(r) for r in rows))
    with pytest.raises(ValueError, match="MAR"):
        load_pums_csv(tmp_path / "b.csv")
    # non-numeric age
    a = header.index("AGEP")
    rows = [r.split(",") for r in body]
    rows[5][a] = "old"
    (tmp_path / "c.csv").write_text("\n".join(",".join(r) for r in rows))
    with pytest.raises(ValueError, match="AGEP"):
        load_pums_csv(tmp_path / "c.csv")


# ----------------------------------------------------------------------------- end to end
def test_mai_end_to_end_bound_holds_and_success_grows(net: BayesNet) -> None:
    rng = np.random.default_rng(7)
    rap = RAPOptions(steps=150)
    outs = {e: run_mai(net, ["SEX"], MAISetting(epsilon=e, rap=rap), rng)
            for e in (1.0, 8.0, math.inf)}
    for e, o in outs.items():
        assert o.n_marginals == 105
        assert o.sigma == pytest.approx(marginals_sigma(e, 1e-5, 105))
        # Thm 3.5: success <= v_UB(95%) (fails with prob <= 5% per run; seeded)
        assert o.attack_success <= o.v_ub[0.95]
        assert o.v_ub[0.05] <= o.v_ub[0.5] <= o.v_ub[0.95]
        sd = math.sqrt((o.p_star * (1 - o.p_star)).sum())
        assert abs(o.prior_success - o.expected_prior_success) < 4 * sd
    # exact marginals with every other column known pin the column down; noise hides it
    assert outs[math.inf].attack_success == 100
    assert outs[1.0].attack_success < outs[8.0].attack_success < 100


def test_mai_multicolumn_and_approximate(net: BayesNet) -> None:
    rng = np.random.default_rng(8)
    kn, tg = visit_order_split(net, 3, 2)
    o = run_mai(net, tg, MAISetting(epsilon=3.0, others="dropped", rap=RAPOptions(steps=100)),
                rng, known=kn)
    assert o.n_marginals == math.comb(5, 3) - 1
    assert o.attack_success <= o.v_ub[0.95]
    o0 = run_mai(net, ["MIG"], MAISetting(epsilon=1.0, tolerance=0,
                                          rap=RAPOptions(steps=60)), np.random.default_rng(9))
    o1 = run_mai(net, ["MIG"], MAISetting(epsilon=1.0, tolerance=1,
                                          rap=RAPOptions(steps=60)), np.random.default_rng(9))
    assert o1.expected_prior_success >= o0.expected_prior_success
    assert o1.attack_success >= o0.attack_success
    assert o1.attack_success <= o1.v_ub[0.95]


@pytest.mark.slow
def test_mai_bound_coverage_over_runs(net: BayesNet) -> None:
    """Thm 3.5 at 95%: over 20 seeded datasets at most 4 exceedances (P(Bin(20,.05) >= 5) =
    0.26%); in practice the attack stays far below the bound."""
    rng = np.random.default_rng(10)
    over = 0
    for _ in range(20):
        o = run_mai(net, ["SEX"], MAISetting(epsilon=2.0, rap=RAPOptions(steps=80)), rng)
        over += o.attack_success > o.v_ub[0.95]
    assert over <= 4


def test_bad_inputs_name_the_argument(net: BayesNet) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        MAISetting(epsilon=0.0)
    with pytest.raises(ValueError, match="others"):
        MAISetting(epsilon=1.0, others="maybe")
    with pytest.raises(ValueError, match="tolerance"):
        run_mai(net, ["SEX", "MAR"], MAISetting(epsilon=1.0, tolerance=1),
                np.random.default_rng(0))
    with pytest.raises(ValueError, match="target"):
        run_mai(net, ["NOPE"], MAISetting(epsilon=1.0), np.random.default_rng(0))
    with pytest.raises(ValueError, match="steps"):
        RAPOptions(steps=0)
    x = net.sample(10, np.random.default_rng(0))
    wl = marginal_workload(range(16), [0])
    rel = noisy_marginals(x, net.sizes, wl, 1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="init_probs"):
        rap_attack(x[:, 1:], list(range(1, 16)), [0], rel)
    with pytest.raises(ValueError, match="sigma"):
        noisy_marginals(x, net.sizes, wl, -1.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="records"):
        BayesNet.fit(np.full((3, 16), 99), net.sizes, net.parents)
