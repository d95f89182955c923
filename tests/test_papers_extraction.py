"""Case study 1 (Beyond Worst Case §5): DP n-gram model, canary extraction, bounds, and the
runners."""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from dpaudit.curves import GaussianDP
from dpaudit.papers.casestudies.corpus import generate_corpus, load_corpus
from dpaudit.papers.casestudies.extraction import (
    ExtractionGame,
    ExtractionSetting,
    canary_text,
    digit_secret_prior,
    run_extraction,
)
from dpaudit.papers.casestudies.ngram import (
    NgramSpec,
    clip_scales,
    encode,
    ngram_noise_std,
    record_events,
    train_dp_ngram,
)
from dpaudit.papers.experiments.registry import get_experiment
from dpaudit.risk.priors import password_prior, pii_like_prior

pytestmark = pytest.mark.slow  # real training / paper reproductions

UNIFORM = digit_secret_prior(np.full(10, 0.1), name="uniform")
PASSWORD = digit_secret_prior(password_prior("implied").scaled_down(10).probs, name="password")


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return load_corpus()


# ----------------------------------------------------------------------------- mechanism
def test_noise_calibration_matches_gdp() -> None:
    # mu(1, 1e-5) = 0.26805 (BWC notes §6.8); Delta = sqrt(2) clip for non-negative counts
    s = ngram_noise_std(1.0, 1e-5, clip=2.0)
    assert s == pytest.approx(math.sqrt(2) * 2.0 / 0.26805, rel=2e-5)
    for eps in (0.5, 4.0, 16.0):
        s = ngram_noise_std(eps, 1e-5, clip=1.0)
        assert GaussianDP(math.sqrt(2) / s).epsilon(1e-5) == pytest.approx(eps, rel=1e-6)
    assert ngram_noise_std(math.inf, 1e-5) == 0.0
    st = ExtractionSetting(epsilon=2.0)
    assert st.noise_std == pytest.approx(math.sqrt(2) / st.mu)


def test_training_counts_and_clipping() -> None:
    spec = NgramSpec(order=2, buckets=64)
    docs = ["abab", "b"]
    model = train_dp_ngram(docs, spec, clip=100.0, noise_std=0.0, rng=np.random.default_rng(0))
    a, b = encode("a")[0], encode("b")[0]
    row_a = spec.context_rows(encode("ab"))[1]  # context "a"
    row_b = spec.context_rows(encode("ba"))[1]  # context "b"
    assert model.table[row_a, b] == 2  # "ab" twice
    assert model.table[row_b, a] == 1  # "ba" once
    # per-record clipping: "abab" has counts (1 BOS->a, 2 a->b, 1 b->a) -> norm sqrt(6)
    ev = record_events(docs, spec)
    scales = clip_scales(ev, 1.0)
    assert scales[0] == pytest.approx(1 / math.sqrt(6))
    assert scales[1] == 1.0
    clipped = train_dp_ngram(docs, spec, clip=1.0, noise_std=0.0, rng=np.random.default_rng(0))
    assert clipped.table[row_a, b] == pytest.approx(2 / math.sqrt(6))
    assert np.linalg.norm(clipped.table) <= 2.0 + 1e-12  # two records of norm <= 1


@pytest.mark.parametrize("lazy", [True, False])
def test_simulated_release_equals_full_training(corpus: list[str], lazy: bool) -> None:
    """The batched simulation releases exactly what training the full model releases in the
    rows the attack reads (noise-free comparison; the noise is i.i.d. per cell in both)."""
    st = ExtractionSetting(epsilon=math.inf, n_targets=5, runs=3, lazy=lazy,
                           buckets=(1 << 22) if lazy else 4096)
    game = ExtractionGame(corpus[:300], PASSWORD, st)
    rng = np.random.default_rng(0)
    secrets = rng.integers(0, 10, size=(2, 5))
    tables = game.release(secrets, rng)
    for r in range(2):
        docs = corpus[:300] + [canary_text(i, PASSWORD.candidates[s])
                               for i, s in enumerate(secrets[r])]
        full = train_dp_ngram(docs, game.spec, clip=st.clip, noise_std=0.0, rng=rng,
                              trained_rows=game.view_rows if lazy else None)
        ref = full.table[np.searchsorted(full.rows, game.view_rows)]
        assert np.allclose(tables[r], ref, atol=1e-12)
        # the "model" attack scores are the model's candidate log-likelihoods
        model = game.model(tables[r])
        sc = game.scores(tables[r][None])[0]
        for i in range(5):
            ll = model.candidate_logprob(canary_text(i, ""), PASSWORD.candidates)
            assert np.allclose(sc[i], ll)
    # without noise the secret is recovered exactly
    res = game.simulate(np.random.default_rng(1), runs=20)
    assert res.attack_rate == 1.0
    assert not res.uniform_prior and math.isnan(res.mmc_rate_bound())


def test_released_noise_matches_calibration(corpus: list[str]) -> None:
    noisy = ExtractionGame(corpus[:200], UNIFORM, ExtractionSetting(epsilon=1.0, n_targets=50))
    exact = ExtractionGame(corpus[:200], UNIFORM, ExtractionSetting(epsilon=math.inf,
                                                                    n_targets=50))
    secrets = np.random.default_rng(2).integers(0, 10, size=(40, 50))
    resid = noisy.release(secrets, np.random.default_rng(3)) - exact.release(secrets, None)
    # 40 runs x 50 rows x V cells > 9e4 draws: sample std within 2% (> 8 SE) of s
    assert resid.size > 90_000
    assert resid.std() == pytest.approx(math.sqrt(2) / 0.26805, rel=0.02)


# ----------------------------------------------------------------------------- bounds
@pytest.mark.parametrize("eps", [0.5, 2.0, 8.0])
def test_attack_below_bounds(corpus: list[str], eps: float) -> None:
    """Thm 3.5 (high probability, n = 40 targets) and the per-target Thm 3.5 / Cor 3.4 / MMC
    bounds hold for the strongest (Bayes posterior) attacker."""
    rng = np.random.default_rng(11)
    for prior, uniform in ((PASSWORD, False), (UNIFORM, True)):
        st = ExtractionSetting(epsilon=eps, n_targets=40, runs=300, attack="posterior")
        res = run_extraction(corpus, prior, st, rng)
        row = res.row()
        # the seeded first run, and the exceedance rate of v_UB(95%) (<= 5%; 300 runs:
        # P(Bin(300, .05) > 27) < 0.5%)
        assert res.success[0] <= row["v_ub_95"]
        assert (res.success > row["v_ub_95"]).sum() <= 27
        se = row["attack_rate_se"]
        assert res.attack_rate <= res.thm35_rate_bound() + 4 * se
        assert res.attack_rate <= res.cor34_rate_bound() + 4 * se
        if uniform:
            assert res.attack_rate <= res.mmc_rate_bound() + 4 * se
        # the Bayes attacker never does worse than the prior (4 SE slack)
        assert res.attack_rate >= res.p_star - 4 * se


def test_success_increases_with_epsilon(corpus: list[str]) -> None:
    rng = np.random.default_rng(12)
    rates, ses = [], []
    for eps in (0.5, 4.0, 16.0, math.inf):
        res = run_extraction(corpus, UNIFORM, ExtractionSetting(
            epsilon=eps, n_targets=50, runs=200, attack="model"), rng)
        rates.append(res.attack_rate)
        ses.append(res.row()["attack_rate_se"] if res.success.std() > 0 else 0.0)
    for a, b, sa, sb in zip(rates, rates[1:], ses, ses[1:], strict=False):
        assert b - a > 4 * math.hypot(sa, sb)
    assert rates[-1] == 1.0


def test_prior_only_success_equals_best_guess(corpus: list[str]) -> None:
    rng = np.random.default_rng(13)
    pii = digit_secret_prior(pii_like_prior().scaled_down(10).probs, name="pii")
    for prior in (PASSWORD, pii):
        for g in (1, 3):
            res = run_extraction(corpus, prior, ExtractionSetting(
                epsilon=1.0, n_targets=50, runs=200, guesses=g), rng)
            p = prior.top_k_mass(g)
            trials = res.success.size * res.n
            # prior_success ~ Binomial(trials, p*): 4 sd
            assert abs(res.prior_rate - p) < 4 * math.sqrt(p * (1 - p) / trials)
    assert PASSWORD.top_k_mass(1) == pytest.approx(0.37311, abs=1e-5)  # BWC notes §3.3


# ----------------------------------------------------------------------------- data & inputs
def test_shipped_corpus_is_the_generator_output() -> None:
    assert load_corpus() == generate_corpus(2000, 0)


def test_bad_inputs_name_the_argument(corpus: list[str]) -> None:
    with pytest.raises(ValueError, match="attack"):
        ExtractionSetting(epsilon=1.0, attack="magic")
    with pytest.raises(ValueError, match="epsilon"):
        ExtractionSetting(epsilon=-1.0)
    with pytest.raises(ValueError, match="delta"):
        ExtractionSetting(epsilon=1.0, delta=0.0)
    with pytest.raises(ValueError, match="probs"):
        digit_secret_prior(np.full(7, 1 / 7))
    with pytest.raises(ValueError, match="guesses"):
        ExtractionGame(corpus[:10], UNIFORM, ExtractionSetting(epsilon=1.0, guesses=10))
    with pytest.raises(ValueError, match="clip"):
        ngram_noise_std(1.0, 1e-5, clip=0.0)


# ----------------------------------------------------------------------------- runners
def test_figure1_runner_values(tmp_path) -> None:
    exp = get_experiment("risk-figure1")
    paths = exp.run(tmp_path, full=False, seed=0)
    assert {p.suffix for p in paths} == {".csv", ".png"}
    rows = list(csv.DictReader(open(paths[0])))
    mmc = {(float(r["epsilon"]), int(r["K"])): float(r["mmc_pure"]) for r in rows
           if r["panel"] == "mmc"}
    # BWC notes §6.2: MMC f_{eps,0} at K = 10 equals beta(0.1, eps)
    assert mmc[(1.0, 10)] == pytest.approx(0.231969, abs=1e-6)
    assert mmc[(4.0, 2)] == pytest.approx(0.982014, abs=1e-6)
    cur = [r for r in rows if r["panel"] == "curve" and float(r["epsilon"]) == 2.0]
    for r in cur:
        p = float(r["prior"])
        assert float(r["ours_pure"]) <= float(r["rero_pure"]) + 1e-12
        assert float(r["ours_pure"]) >= p - 1e-12


def test_runners_registered() -> None:
    for name in ("risk-figure2", "risk-marginals"):
        assert get_experiment(name).source.startswith("Beyond Worst Case")


@pytest.mark.parametrize("eps", [1.0, 4.0])
def test_posterior_attack_matches_closed_form_optimum(corpus: list[str], eps: float) -> None:
    """Uniform prior over 10 digits, one-hot canary signal of size 1 (clip 1) in noise s: the
    Bayes-optimal success is P(N(1/s,1) beats 9 N(0,1)) = int phi(x - 1/s) Phi(x)^9 dx; the
    simulated posterior attack must hit it (25,000 games: 4 SE < 0.009), and it must respect
    the MMC G_mu bound for this exactly mu-GDP mechanism."""
    from scipy import integrate, stats

    st = ExtractionSetting(epsilon=eps, n_targets=50, runs=500, attack="posterior")
    d = 1.0 / st.noise_std
    opt = integrate.quad(lambda x: stats.norm.pdf(x - d) * stats.norm.cdf(x) ** 9, -12, 12)[0]
    res = run_extraction(corpus, UNIFORM, st, np.random.default_rng(14))
    se = res.row()["attack_rate_se"]
    assert abs(res.attack_rate - opt) < 4 * se
    assert opt <= res.mmc_rate_bound() <= res.thm35_rate_bound()


def test_digit_secret_prior_with_explicit_length():
    """``length`` given explicitly (it used to raise TypeError: check_count's minimum is
    keyword-only; found by mypy); it must agree with the length inferred from the size."""
    probs = np.full(100, 0.01)
    a = digit_secret_prior(probs, length=2)
    b = digit_secret_prior(probs)
    assert np.array_equal(a.probs, b.probs)
    with pytest.raises(ValueError, match="10\\^length"):
        digit_secret_prior(probs, length=3)
