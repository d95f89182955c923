"""Attack scorers on synthetic logits with known separation (dpaudit.attacks).

Reference values are computed independently: closed-form Gaussian log-densities, explicit
leave-one-out slicing, a pairwise (n_x x n_z) likelihood-ratio matrix, and the AUROC closed
form Phi(d / sqrt(2)) of two unit-variance Gaussians d apart.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import log_softmax, ndtr

from dpaudit.attacks import (
    cross_entropy,
    lira_offline,
    lira_online,
    lira_scores,
    logit_margin,
    loss_score,
    rmia_scores,
    scaled_logit,
    true_class_probability,
)
from dpaudit.stats.attack_metrics import auroc


def _lognormal_pdf(t, mu, sd):
    return -((t - mu) ** 2) / (2 * sd * sd) - np.log(sd) - 0.5 * math.log(2 * math.pi)


def test_basic_scores_match_softmax_definitions():
    z = np.array([[2.0, 0.5, -1.0], [0.0, 0.0, 3.0], [1000.0, -1000.0, 0.0]])
    y = np.array([0, 1, 0])
    ls = log_softmax(z, axis=1)[np.arange(3), y]
    np.testing.assert_allclose(cross_entropy(z, y), -ls, rtol=1e-12)
    np.testing.assert_allclose(loss_score(logits=z, labels=y), ls, rtol=1e-12)
    np.testing.assert_allclose(loss_score([0.3, 1.2]), [-0.3, -1.2])
    np.testing.assert_allclose(true_class_probability(z, y), np.exp(ls), rtol=1e-12)
    np.testing.assert_allclose(logit_margin(z, y), [1.5, -3.0, 1000.0])
    p = np.exp(ls[:2])
    np.testing.assert_allclose(scaled_logit(z, y)[:2], np.log(p / (1 - p)), rtol=1e-10)
    # phi stays finite where p rounds to 1 in float: z_y - logsumexp(rest) = 1000 - log(1 + e^-1000)
    assert scaled_logit(z, y)[2] == pytest.approx(1000.0)


@pytest.mark.parametrize("bad, msg", [
    (dict(logits=[[1.0, np.nan]], labels=[0]), "finite"),
    (dict(logits=[[1.0, 2.0]], labels=[2]), r"labels must be in \[0, 1\]"),
    (dict(logits=[[1.0, 2.0]], labels=[0, 1]), "labels must have shape"),
    (dict(logits=[1.0], labels=[]), "at least 2 classes"),
    (dict(logits=[[1.0, 2.0]], labels=[0.5]), "integer class"),
])
def test_bad_logits_are_rejected(bad, msg):
    with pytest.raises(ValueError, match=msg):
        scaled_logit(**bad)


def test_lira_online_equals_exact_gaussian_likelihood_ratio():
    """Shadows built so that the fitted mean/std equal (mu, sd) exactly: the score must be the
    exact log N(t; mu_in, sd_in) - log N(t; mu_out, sd_out)."""
    mu_in, sd_in = np.array([2.0, 0.5, -1.0]), np.array([0.7, 1.3, 0.2])
    mu_out, sd_out = np.array([0.0, 0.4, -3.0]), np.array([1.1, 0.9, 0.5])
    # two IN and two OUT values per example: mean mu, sample std (ddof=1) = sd
    k_in, k_out = sd_in / math.sqrt(2), sd_out / math.sqrt(2)
    stat = np.stack([mu_in - k_in, mu_in + k_in, mu_out - k_out, mu_out + k_out])
    member = np.array([[1] * 3, [1] * 3, [0] * 3, [0] * 3])
    t = np.array([1.5, 0.0, -2.0])
    want = _lognormal_pdf(t, mu_in, sd_in) - _lognormal_pdf(t, mu_out, sd_out)
    np.testing.assert_allclose(lira_online(t, stat, member), want, rtol=1e-12)
    want_off = np.log(ndtr((t - mu_out) / sd_out))
    np.testing.assert_allclose(lira_offline(t, stat, member), want_off, rtol=1e-12)
    # offline without IN runs at all (reference models never trained on the candidates)
    np.testing.assert_allclose(lira_offline(t, stat[2:]), want_off, rtol=1e-12)


def test_lira_fixed_variance_pools_one_variance():
    rng = np.random.default_rng(0)
    stat = rng.normal(size=(6, 4))
    member = np.array([[1, 0, 1, 0], [0, 1, 0, 1]] * 3)
    t = rng.normal(size=4)
    got = lira_online(t, stat, member, fix_variance=True)
    m = member.astype(bool)
    mu_in = np.array([stat[m[:, j], j].mean() for j in range(4)])
    mu_out = np.array([stat[~m[:, j], j].mean() for j in range(4)])
    v_in = sum(((stat[m[:, j], j] - mu_in[j]) ** 2).sum() for j in range(4)) / (12 - 4)
    v_out = sum(((stat[~m[:, j], j] - mu_out[j]) ** 2).sum() for j in range(4)) / (12 - 4)
    want = (_lognormal_pdf(t, mu_in, math.sqrt(v_in)) -
            _lognormal_pdf(t, mu_out, math.sqrt(v_out)))
    np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("online", [True, False])
@pytest.mark.parametrize("fix", [True, False])
def test_lira_leave_one_out_equals_explicit_slicing(online, fix):
    rng = np.random.default_rng(1)
    runs, ex = 9, 7
    member = np.zeros((runs, ex), bool)
    for j in range(ex):  # 4 or 5 IN runs per example, so >= 2 IN/OUT after leaving one out
        member[rng.permutation(runs)[: 4 + j % 2], j] = True
    stat = rng.normal(size=(runs, ex)) + member
    got = lira_scores(stat, member, online=online, fix_variance=fix)
    for r in range(runs):
        keep = np.arange(runs) != r
        f = lira_online if online else lira_offline
        want = f(stat[r], stat[keep], member[keep], fix_variance=fix)
        np.testing.assert_allclose(got[r], want, rtol=1e-8, atol=1e-10)


def _shadow_population(runs, examples, delta, spread, seed):
    """phi of example j: N(mu_j + delta * member, 1), mu_j ~ N(0, spread^2) (hard and easy
    examples); each example IN in a uniformly random half of the runs."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(0, spread, size=examples)
    member = rng.random((runs, examples)) < 0.5
    stat = mu + delta * member + rng.standard_normal((runs, examples))
    return member, stat


@pytest.mark.slow
def test_lira_reaches_the_per_example_oracle_auroc():
    """Known separation: IN/OUT differ by delta = 1 per example (unit variance), examples
    differ by N(0, 3^2).  The per-example oracle (LiRA with exact fits) has AUROC
    Phi(1/sqrt(2)) = 0.7602; a global threshold on phi has Phi(1/sqrt(2 (1 + 9))) = 0.5890.
    64 runs x 1000 examples; the AUROC of 64,000 pooled pairs has sd ~ 0.003 (plus the
    fitting error of 31 shadows): tolerance 0.02."""
    member, stat = _shadow_population(64, 1000, 1.0, 3.0, seed=2)
    oracle, glob = float(ndtr(1 / math.sqrt(2))), float(ndtr(1 / math.sqrt(20)))
    assert auroc(member.ravel(), stat.ravel()) == pytest.approx(glob, abs=0.02)
    on = lira_scores(stat, member, online=True)
    assert auroc(member.ravel(), on.ravel()) == pytest.approx(oracle, abs=0.02)
    off = lira_scores(stat, member, online=False)
    assert auroc(member.ravel(), off.ravel()) == pytest.approx(oracle, abs=0.02)


def _rmia_bruteforce(tx, rx, tz, rz, gamma, a=None):
    def marg(r):
        m = r.mean(axis=0)
        return m if a is None else ((1 + a) * m + (1 - a)) / 2
    ratio_x = tx / marg(rx)
    ratio_z = tz / marg(rz)
    lr = ratio_x[:, None] / ratio_z[None, :]
    return (lr >= gamma).mean(axis=1)


@pytest.mark.parametrize("gamma", [1.0, 2.0])
@pytest.mark.parametrize("a", [None, 0.0, 0.3, 1.0])
def test_rmia_equals_pairwise_likelihood_ratio_definition(gamma, a):
    rng = np.random.default_rng(3)
    tx, rx = rng.uniform(0.05, 1, 40), rng.uniform(0.05, 1, (5, 40))
    tz, rz = rng.uniform(0.05, 1, 300), rng.uniform(0.05, 1, (5, 300))
    got = rmia_scores(tx, rx, tz, rz, gamma=gamma, offline_a=a)
    np.testing.assert_allclose(got, _rmia_bruteforce(tx, rx, tz, rz, gamma, a))


def test_rmia_offline_leaves_in_reference_models_out():
    tx, tz = np.array([0.9, 0.2]), np.array([0.5, 0.6, 0.1])
    rx = np.array([[0.99, 0.3], [0.5, 0.99], [0.4, 0.2]])
    inx = np.array([[1, 0], [0, 1], [0, 0]])
    rz = np.array([[0.5, 0.5, 0.2], [0.4, 0.6, 0.1], [0.6, 0.5, 0.3]])
    got = rmia_scores(tx, rx, tz, rz, offline_a=0.5, ref_member_x=inx)
    mx = np.array([(0.5 + 0.4) / 2, (0.3 + 0.2) / 2])
    px = (1.5 * mx + 0.5) / 2
    pz = (1.5 * rz.mean(axis=0) + 0.5) / 2
    lr = (tx / px)[:, None] / (tz / pz)[None, :]
    np.testing.assert_allclose(got, (lr >= 1).mean(axis=1))


@pytest.mark.slow
def test_rmia_beats_the_loss_attack_with_heterogeneous_examples():
    """Pr(x|theta) = sigmoid(phi), phi as in the LiRA population (delta = 1, spread 3).
    Reference models: the 63 other runs (online).  RMIA calibrates per example, so its AUROC
    must exceed that of the raw probability (the LOSS attack, 0.589 in closed form) by a wide
    margin; with 64,000 pairs the AUROC sd is ~0.003."""
    member, stat = _shadow_population(64, 1000, 1.0, 3.0, seed=4)
    prob = 1 / (1 + np.exp(-stat))
    rng = np.random.default_rng(5)
    # population z: non-members of every model
    mu_z = rng.normal(0, 3.0, size=500)
    pz = 1 / (1 + np.exp(-(mu_z + rng.standard_normal((64, 500)))))
    target = 0
    refs = np.arange(64) != target
    s = rmia_scores(prob[target], prob[refs], pz[target], pz[refs])
    loss_auc = auroc(member[target], prob[target])
    rmia_auc = auroc(member[target], s)
    assert loss_auc == pytest.approx(float(ndtr(1 / math.sqrt(20))), abs=0.05)
    assert rmia_auc > loss_auc + 0.1


@pytest.mark.parametrize("kw, msg", [
    (dict(target_prob_x=[0.5, 1.5]), "probabilities"),
    (dict(ref_prob_x=[[0.5]]), "columns"),
    (dict(gamma=0.0), "gamma"),
    (dict(offline_a=1.5), "offline_a"),
])
def test_rmia_bad_input(kw, msg):
    base = dict(target_prob_x=[0.5, 0.6], ref_prob_x=[[0.5, 0.5]], target_prob_z=[0.4],
                ref_prob_z=[[0.4]])
    base.update(kw)
    with pytest.raises(ValueError, match=msg):
        rmia_scores(**base)


def test_lira_bad_input():
    with pytest.raises(ValueError, match="fewer than 2 IN"):
        lira_online([0.0], [[1.0], [2.0]], [[1], [0]])
    with pytest.raises(ValueError, match="no OUT"):
        lira_offline([0.0], [[1.0]], [[1]])
    with pytest.raises(ValueError, match="shape"):
        lira_online([0.0, 1.0], [[1.0], [2.0]], [[1], [0]], fix_variance=True)
