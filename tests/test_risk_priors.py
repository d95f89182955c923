"""Priors and best-guess prior success (BWC notes §3.1, §1.7, §6.4)."""

from __future__ import annotations

from pathlib import Path

import mpmath
import numpy as np
import pytest

from dpaudit import risk

DELTA = 1e-5


def test_zipf_literal_password_prior() -> None:
    # BWC notes §3.1: Zipf(1.1, 1e9): H = 9.325523, p_max 0.10723259, p_min 1.34998e-11,
    # p(rank N/2) 2.89374e-11; independent 30-digit mpmath zeta for the normaliser.
    z = risk.password_prior("literal")
    mpmath.mp.dps = 30
    h_ref = float(mpmath.zeta(1.1) - mpmath.zeta(1.1, 1e9 + 1))
    assert z.norm == pytest.approx(h_ref, rel=1e-12)
    assert z.norm == pytest.approx(9.325523, abs=6e-7)
    assert z.max() == pytest.approx(0.10723259, rel=1e-7)
    assert z.min() == pytest.approx(1.34998e-11, rel=1e-5)
    assert z.median() == pytest.approx(2.89374e-11, rel=1e-5)
    assert z.percentile(1.0) == z.max() and z.percentile(0.0) == z.min()
    # BWC notes §6.4: literal reading gives Adv(1) = 0.1556, eps_protect = 0.3992
    assert risk.advantage_bound(z.max(), 1.0, DELTA) == pytest.approx(0.1556, abs=6e-5)
    assert risk.epsilon_protect(z.max(), 0.05, DELTA) == pytest.approx(0.3992, abs=6e-5)


@pytest.mark.parametrize(("n", "pmax"), [(10, 0.37311), (100, 0.23375), (500, 0.19181),
                                         (1000, 0.17944), (1e4, 0.15144), (1e6, 0.12388),
                                         (1e9, 0.10723)])
def test_zipf_pmax_by_support(n: float, pmax: float) -> None:
    assert risk.ZipfPrior(1.1, n).max() == pytest.approx(pmax, abs=6e-6)


def test_implied_priors_reproduce_paper_numbers() -> None:
    # BWC notes §6.4: the implied password prior Zipf(1.1, 700) gives 0.2417 / 0.2497 (paper
    # 0.24 / 0.25); Zipf(1.2, 1e9) gives 0.2377 / 0.2547.
    pw = risk.password_prior("implied")
    assert pw.max() == pytest.approx(0.185496, abs=1e-6)
    assert risk.advantage_bound(pw.max(), 1.0, DELTA) == pytest.approx(0.2417, abs=6e-5)
    assert risk.epsilon_protect(pw.max(), 0.05, DELTA) == pytest.approx(0.2497, abs=6e-5)
    z12 = risk.ZipfPrior(1.2, 1e9)
    assert z12.max() == pytest.approx(0.181411, abs=1e-6)
    assert risk.advantage_bound(z12.max(), 1.0, DELTA) == pytest.approx(0.2377, abs=6e-5)
    assert risk.epsilon_protect(z12.max(), 0.05, DELTA) == pytest.approx(0.2547, abs=6e-5)
    # PII-like stand-in: p_max 0.0055 -> Adv(5) 0.4478, Adv(10) 0.9918, eps_protect 2.3578
    pii = risk.pii_like_prior()
    assert pii.max() == pytest.approx(0.0055, rel=1e-9)
    assert pii.probs.sum() == pytest.approx(1.0)
    assert risk.advantage_bound(pii.max(), 5.0, DELTA) == pytest.approx(0.4478, abs=6e-5)
    assert risk.advantage_bound(pii.max(), 10.0, DELTA) == pytest.approx(0.9918, abs=6e-5)
    assert risk.epsilon_protect(pii.max(), 0.05, DELTA) == pytest.approx(2.3578, abs=6e-5)
    # the 10th-percentile and median canaries have Adv(5) < 0.05 (Beyond Worst Case §5.3)
    for q in (0.1, 0.5):
        assert risk.advantage_bound(pii.percentile(q), 5.0, DELTA) < 0.05


def test_uniform_priors() -> None:
    u = risk.UniformPrior.digits(9)
    assert u.max() == pytest.approx(1e-9) and u.median() == pytest.approx(1e-9)
    assert u.top_k_mass(1000) == pytest.approx(1e-6)
    # BWC notes §6.4: eps_protect(1e-9) = 17.7786 (paper 17.8)
    assert risk.epsilon_protect(u.max(), 0.05, DELTA) == pytest.approx(17.7786, abs=6e-5)
    s = risk.UniformPrior.strings(26, 4)
    assert s.size == 26 ** 4 and s.top_k_mass(26 ** 4 + 5) == 1.0


def test_scaled_down_zipf() -> None:
    # BWC notes §3.3 [DERIVED]: Zipf(1.1) over 10 ranks
    ref = [0.37311, 0.17406, 0.11143, 0.08120, 0.06353, 0.05198, 0.04388, 0.03788, 0.03328,
           0.02964]
    got = risk.password_prior("literal").scaled_down(10).probs
    np.testing.assert_allclose(got, ref, atol=6e-6)
    np.testing.assert_allclose(got, risk.ZipfPrior(1.1, 10).prob_at_rank(np.arange(1, 11)),
                               rtol=1e-12)


def test_generalized_harmonic_against_direct_sum() -> None:
    for s in (0.3, 0.7, 1.0, 1.1, 2.0):
        for n in (1, 7, 1000, 123_457):
            direct = float(np.sum(np.arange(1, n + 1, dtype=float) ** -s))
            assert risk.generalized_harmonic(n, s) == pytest.approx(direct, rel=1e-12)
    mpmath.mp.dps = 30
    # s <= 1 at N = 1e9 (Euler-Maclaurin) against mpmath's Hurwitz zeta continuation
    ref = float(mpmath.zeta(0.7) - mpmath.zeta(0.7, 1e9 + 1))
    assert risk.generalized_harmonic(1e9, 0.7) == pytest.approx(ref, rel=1e-10)
    z = risk.ZipfPrior(1.1, 1e9)
    assert z.top_k_mass(1) == pytest.approx(z.max())
    assert z.top_k_mass(1e9) == pytest.approx(1.0)
    assert z.top_k_mass(3) == pytest.approx(z.prob_at_rank([1, 2, 3]).sum())


def test_explicit_prior_from_perplexities() -> None:
    ppl = np.array([10.0, 20.0, 40.0])
    lik = risk.ExplicitPrior.from_perplexities(ppl, n_tokens=2)
    ref = ppl ** -2.0 / np.sum(ppl ** -2.0)
    np.testing.assert_allclose(lik.probs, ref, rtol=1e-12)
    inv = risk.ExplicitPrior.from_perplexities(ppl, normalization="inverse_perplexity")
    np.testing.assert_allclose(inv.probs, (1 / ppl) / np.sum(1 / ppl), rtol=1e-12)
    assert inv.top_k_mass(2) == pytest.approx(inv.probs[:2].sum())
    with pytest.raises(ValueError, match="n_tokens"):
        risk.ExplicitPrior.from_perplexities(ppl)
    with pytest.raises(ValueError, match="normalization"):
        risk.ExplicitPrior.from_perplexities(ppl, normalization="softmax")


def test_best_guess_success_metrics_vs_brute_force() -> None:
    rng = np.random.default_rng(0)
    pmf = rng.dirichlet(np.ones(12), size=30)  # 30 persons, ordinal attribute with 12 values
    for e in (0, 1, 3):
        got = risk.within_distance_success(pmf, e)
        brute = [max(row[max(0, c - e):c + e + 1].sum() for c in range(12)) for row in pmf]
        np.testing.assert_allclose(got, brute, rtol=1e-12)
        np.testing.assert_allclose(risk.best_guess_success(pmf, "within", e), brute)
    for k in (1, 3, 12):
        brute = np.sort(pmf, axis=1)[:, ::-1][:, :k].sum(axis=1)
        np.testing.assert_allclose(risk.exact_match_success(pmf, k), brute, rtol=1e-12)
    assert risk.exact_match_success(pmf, 1)[0] == pytest.approx(pmf[0].max())
    # within distance 0 == exact match with one guess
    np.testing.assert_allclose(risk.within_distance_success(pmf, 0),
                               risk.exact_match_success(pmf, 1))
    # success of specific guesses (for Thm 3.2 / Cor 3.4) never exceeds the best guess
    g = rng.integers(0, 12, size=30)
    pg = risk.guess_success(pmf, g, distance=1)
    assert np.all(pg <= risk.within_distance_success(pmf, 1) + 1e-15)
    np.testing.assert_allclose(pg[0], pmf[0][max(0, g[0] - 1):g[0] + 2].sum())
    # ranked priors: exact metric only
    assert risk.best_guess_success(risk.ZipfPrior(1.1, 10), "exact", 2) == pytest.approx(
        0.37311 + 0.17406, abs=2e-5)
    with pytest.raises(ValueError, match="within"):
        risk.best_guess_success(risk.ZipfPrior(1.1, 10), "within", 1)


def test_heterogeneous_and_load_priors(tmp_path: Path) -> None:
    np.testing.assert_array_equal(risk.heterogeneous_priors([0.1, 0.2]), [0.1, 0.2])
    f = tmp_path / "p.txt"
    f.write_text("# priors\n0.1\n0.25\n\n0.5\n")
    np.testing.assert_array_equal(risk.load_priors(f), [0.1, 0.25, 0.5])
    c = tmp_path / "p.csv"
    c.write_text("id,prior\n1,0.3\n2,0.4\n")
    np.testing.assert_array_equal(risk.load_priors(c, column="prior"), [0.3, 0.4])
    np.testing.assert_array_equal(risk.load_priors(c, column=1), [0.3, 0.4])
    bad = tmp_path / "bad.txt"
    bad.write_text("0.1\n1.7\n")
    with pytest.raises(ValueError, match="prior-file"):
        risk.load_priors(bad)


@pytest.mark.parametrize(("fn", "arg"), [
    (lambda: risk.heterogeneous_priors([0.1, -0.2]), "priors"),
    (lambda: risk.heterogeneous_priors([0.1, np.nan]), "priors"),
    (lambda: risk.ZipfPrior(0.0, 10), "s must"),
    (lambda: risk.ZipfPrior(1.1, 0), "size"),
    (lambda: risk.UniformPrior(0.5), "size"),
    (lambda: risk.ExplicitPrior(np.array([-1.0, 2.0])), "probs"),
    (lambda: risk.pii_like_prior(100, p_max=0.001), "p_max"),
    (lambda: risk.exact_match_success([[0.5, 0.5]], 0), "guesses"),
    (lambda: risk.within_distance_success([[0.5, 0.5]], -1), "distance"),
    (lambda: risk.guess_success([[0.5, 0.5]], [5]), "guesses"),
    (lambda: risk.ZipfPrior(1.1, 10).prob_at_rank(11), "rank"),
    (lambda: risk.password_prior("other"), "variant"),
])
def test_prior_bad_input(fn, arg: str) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match=arg):
        fn()
