"""Input adapters (dpaudit.adapters): in/out arrays, the shadow layout and its audits,
per-user aggregation, tables (CSV, DataFrame, Parquet) and other tools' results."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from dpaudit.adapters import (
    ShadowLayout,
    aggregate_by_group,
    from_dataframe,
    from_in_out,
    from_privacy_meter,
    from_tf_privacy,
    per_example_audit,
    read_parquet,
    read_table,
)
from dpaudit.estimators.multi_run import multi_run
from dpaudit.stats.attack_metrics import auroc
from needs import need


def test_from_in_out_and_io_reexport():
    from dpaudit.io import from_in_out as reexported

    assert reexported is from_in_out
    obs = from_in_out([3.0, 2.0], np.array([[0.5], [1.0], [-1.0]]).ravel())
    assert obs.member.tolist() == [True, True, False, False, False]
    assert obs.score.tolist() == [3.0, 2.0, 0.5, 1.0, -1.0]
    for bad, msg in (([], "scores_in must have at least 1"), ([np.nan], "finite")):
        with pytest.raises(ValueError, match=msg):
            from_in_out(bad, [1.0])
    with pytest.raises(ValueError, match="scores_out"):
        from_in_out([1.0], ["a"])


def test_in_out_audit_equals_audit_of_the_interleaved_file():
    """Order does not matter: members first (from_in_out) or shuffled give the same bound."""
    rng = np.random.default_rng(0)
    s_in, s_out = rng.normal(1, 1, 500), rng.normal(0, 1, 500)
    a = from_in_out(s_in, s_out)
    perm = rng.permutation(1000)
    r1 = multi_run(a.member, a.score, delta=1e-5)
    r2 = multi_run(a.member[perm], a.score[perm], delta=1e-5)
    assert r1.epsilon == r2.epsilon > 0


def _layout(runs=40, examples=30, leak=None, seed=0):
    rng = np.random.default_rng(seed)
    m = rng.random((runs, examples)) < 0.5
    s = rng.normal(size=(runs, examples))
    if leak is not None:
        s[:, leak] += 6.0 * m[:, leak]   # example `leak` is memorised
    return ShadowLayout.from_arrays(m.astype(int), s)


def test_shadow_layout_views():
    lay = _layout()
    assert (lay.runs, lay.examples) == (40, 30)
    r3, e5 = lay.run(3), lay.example(5)
    np.testing.assert_array_equal(r3.score, lay.scores[3])
    np.testing.assert_array_equal(e5.member, lay.membership[:, 5])
    pooled = lay.pooled()
    assert pooled.n == 1200 and pooled.score[30 * 3 + 5] == lay.scores[3, 5]
    with pytest.raises(ValueError, match=r"r must be in \[0, 39\]"):
        lay.run(40)


@pytest.mark.parametrize("m, s, msg", [
    (np.zeros((2, 3)), np.zeros((3, 2)), "same \\(runs, examples\\) shape"),
    (np.full((2, 2), 2), np.zeros((2, 2)), "only 0/1"),
    (np.zeros((2, 2)), np.array([[0, np.inf], [0, 0]]), r"scores\[0, 1\]"),
    (np.zeros(3), np.zeros(3), "non-empty \\(runs, examples\\) matrix"),
])
def test_shadow_layout_bad_input(m, s, msg):
    with pytest.raises(ValueError, match=msg):
        ShadowLayout.from_arrays(m, s)


def test_per_example_audit_matches_multi_run_per_column():
    """Vectorised per-example bounds equal multi_run on each column with the same fixed
    thresholds (multi_run's explicit-threshold path, failure split over the thresholds)."""
    lay = _layout(leak=7)
    thr = [-0.5, 0.5, 2.0, 3.0]
    res = per_example_audit(lay, delta=0.0, confidence=0.95, thresholds=thr)
    for j in (0, 7, 12):
        obs = lay.example(j)
        want = max(multi_run(obs.member, obs.score, confidence=1 - 0.05 / 4, threshold=t)
                   .epsilon for t in thr)
        assert res.epsilons[j] == pytest.approx(want, rel=1e-12, abs=1e-12)
    # the memorised example is the one reported, and its bound is positive
    assert res.max_result.details["example"] == 7 and res.max_result.epsilon > 0.5
    # the maximum is corrected over examples: it is below the uncorrected max
    assert res.max_result.epsilon <= res.epsilons.max()


@pytest.mark.slow
def test_per_example_maximum_is_valid_on_a_private_layout():
    """No example leaks (scores independent of membership: 0-DP, so any bound > 0 is false).
    The maximum over 30 examples is corrected over examples x thresholds, so it is > 0 with
    probability <= 1 - confidence; at confidence 0.7 (a sensitive level) over 100 layouts of
    200 runs that is <= 0.3 (sd <= 0.046; we allow 0.35).  Measured: 0 of 100 (two-sided
    Clopper-Pearson audits are conservative); the uncorrected maximum was > 0 in 10."""
    over_c = over_u = 0
    for seed in range(100):
        res = per_example_audit(_layout(runs=200, seed=seed), confidence=0.7,
                                max_thresholds=8)
        over_c += res.max_result.epsilon > 0
        over_u += res.epsilons.max() > 0
    assert over_c / 100 <= 0.35
    assert over_u >= over_c


def test_group_aggregation_rules():
    g = np.array(["bob", "amy", "bob", "cat", "amy", "bob"])
    m = np.array([1, 0, 1, 1, 0, 1])
    s = np.array([0.5, -1.0, 2.0, 0.1, 3.0, -0.5])
    for how, want in (("max", [3.0, 2.0, 0.1]), ("mean", [1.0, 2.0 / 3, 0.1]),
                      ("sum", [2.0, 2.0, 0.1])):
        out = aggregate_by_group(g, m, s, aggregate=how)
        assert out.groups.tolist() == ["amy", "bob", "cat"]
        assert out.sizes.tolist() == [2, 3, 1]
        assert out.member.tolist() == [False, True, True]
        np.testing.assert_allclose(out.score, want)
    with pytest.raises(ValueError, match="aggregate must be one of"):
        aggregate_by_group(g, m, s, aggregate="median")
    with pytest.raises(ValueError, match="group 'bob' has records with member = 1 and member"):
        aggregate_by_group(g, [1, 0, 0, 1, 0, 1], s, aggregate="max")
    with pytest.raises(ValueError, match="same length"):
        aggregate_by_group(g[:3], m, s, aggregate="max")


def test_user_level_sum_is_the_user_likelihood_ratio():
    """Records of a member user are N(mu, 1) log-likelihood ratios shifted by +mu^2/2 ...:
    for Gaussian records, the per-record LLR is mu y - mu^2/2 and the user's LLR is its sum;
    "sum" orders users exactly as the user-level LLR does (AUROC identical)."""
    rng = np.random.default_rng(3)
    users, k, mu = 400, 5, 0.4
    bit = rng.random(users) < 0.5
    g = np.repeat(np.arange(users), k)
    y = rng.normal(size=users * k) + mu * np.repeat(bit, k)
    llr = mu * y - mu * mu / 2
    out = aggregate_by_group(g, np.repeat(bit, k), llr, aggregate="sum")
    user_llr = llr.reshape(users, k).sum(axis=1)
    assert auroc(out.member, out.score) == pytest.approx(auroc(bit, user_llr), abs=1e-15)


def _records():
    rng = np.random.default_rng(4)
    n = 60
    return {"user": np.repeat([f"u{i}" for i in range(20)], 3),
            "is_member": np.repeat(rng.random(20) < 0.5, 3).astype(int),
            "loss_score": rng.normal(size=n)}


def test_csv_with_named_columns_and_groups(tmp_path):
    d = _records()
    p = tmp_path / "mia.csv"
    rows = ["user,is_member,loss_score,unused"] + [
        f"{u},{m},{float(s)!r},x" for u, m, s in zip(d["user"], d["is_member"], d["loss_score"],
                                             strict=True)]
    p.write_text("\n".join(rows) + "\n")
    obs = read_table(p, member_col="is_member", score_col="loss_score")
    assert obs.n == 60
    np.testing.assert_allclose(obs.score, d["loss_score"])
    grouped = read_table(p, member_col="is_member", score_col="loss_score",
                         group_col="user", aggregate="max")
    want = aggregate_by_group(d["user"], d["is_member"], d["loss_score"], aggregate="max")
    np.testing.assert_allclose(grouped.score, want.score)
    with pytest.raises(ValueError, match="missing column\\(s\\) 'member'"):
        read_table(p)
    with pytest.raises(ValueError, match="explicit aggregate"):
        read_table(p, member_col="is_member", score_col="loss_score", group_col="user")
    with pytest.raises(ValueError, match="needs a group column"):
        read_table(p, member_col="is_member", score_col="loss_score", aggregate="max")
    with pytest.raises(ValueError, match="must be numeric"):
        read_table(p, member_col="is_member", score_col="unused")
    with pytest.raises(ValueError, match="must be 0/1"):
        read_table(p, member_col="user", score_col="loss_score")


def test_json_records_and_true_false_members(tmp_path):
    p = tmp_path / "mia.json"
    p.write_text(json.dumps([{"in": "true", "s": 1.5}, {"in": "false", "s": 0.2},
                             {"in": "True", "s": 0.7}]))
    obs = read_table(p, member_col="in", score_col="s")
    assert obs.member.tolist() == [True, False, True]


def test_dataframe_and_parquet(tmp_path):
    pd = need("pandas")
    need("pyarrow")
    d = _records()
    df = pd.DataFrame(d)
    obs = from_dataframe(df, member_col="is_member", score_col="loss_score",
                         group_col="user", aggregate="mean")
    want = aggregate_by_group(d["user"], d["is_member"], d["loss_score"], aggregate="mean")
    np.testing.assert_allclose(obs.score, want.score)
    p = tmp_path / "mia.parquet"
    df.to_parquet(p)
    obs2 = read_parquet(p, member_col="is_member", score_col="loss_score",
                        group_col="user", aggregate="mean")
    np.testing.assert_allclose(obs2.score, want.score)
    assert read_table(p, member_col="is_member", score_col="loss_score").n == 60
    with pytest.raises(ValueError, match="missing column"):
        read_parquet(p)
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    with pytest.raises(ValueError, match="not a readable Parquet file"):
        read_parquet(bad)


def test_parquet_without_pyarrow_names_the_extra(tmp_path, monkeypatch):
    import builtins

    real = builtins.__import__

    def fake(name, *a, **k):
        if name.startswith("pyarrow"):
            raise ImportError("no pyarrow")
        return real(name, *a, **k)

    p = tmp_path / "x.parquet"
    p.write_bytes(b"PAR1")
    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ValueError, match=r"pip install 'dpaudit\[parquet\]'"):
        read_parquet(p)


def test_privacy_meter_result(tmp_path):
    rng = np.random.default_rng(5)
    mem = rng.random(300) < 0.5
    scores = rng.normal(size=300) + mem
    p = tmp_path / "attack_result_0.npz"
    np.savez(p, fpr=np.zeros(3), tpr=np.zeros(3), auc=auroc(mem, scores),
             one_tenth_fpr=0.0, zero_fpr=0.0, scores=scores, memberships=mem)
    obs = from_privacy_meter(p)
    np.testing.assert_array_equal(obs.member, mem)
    np.testing.assert_array_equal(obs.score, scores)
    np.savez(p, auc=0.5, scores=scores, memberships=mem)
    with pytest.raises(ValueError, match="does not match the AUROC"):
        from_privacy_meter(p)
    with pytest.raises(ValueError, match="missing memberships"):
        from_privacy_meter({"scores": scores})


def test_tf_privacy_result():
    single = SimpleNamespace(membership_scores_train=np.array([0.9, 0.8, 0.7]),
                             membership_scores_test=np.array([0.1, 0.75, 0.2]))
    obs = from_tf_privacy(single)
    assert obs.member.tolist() == [True] * 3 + [False] * 3
    assert obs.score.tolist() == [0.9, 0.8, 0.7, 0.1, 0.75, 0.2]
    many = SimpleNamespace(single_attack_results=[single, single])
    with pytest.raises(ValueError, match="choose one with index"):
        from_tf_privacy(many)
    assert from_tf_privacy(many, index=1).n == 6
    with pytest.raises(ValueError, match="summary table"):
        from_tf_privacy(SimpleNamespace(columns=["slice feature"]))
    with pytest.raises(ValueError, match="no membership_scores_train"):
        from_tf_privacy(SimpleNamespace(membership_scores_train=None,
                                        membership_scores_test=None))


# ------------------------------------------------- conventions users arrive with (issue 26)
def _chain(points):
    """Upper hull by Andrew's monotone chain (independent of the library's Qhull route)."""
    pts = sorted(set(points))
    hull = []
    for p in pts:
        while len(hull) >= 2 and ((hull[-1][0] - hull[-2][0]) * (p[1] - hull[-2][1])
                                  - (hull[-1][1] - hull[-2][1]) * (p[0] - hull[-2][0])) >= 0:
            hull.pop()
        hull.append(p)
    return hull


def test_auroc_tpr_conventions_and_max_accuracy_brute_force() -> None:
    from dpaudit.stats.attack_metrics import auroc, max_accuracy, tpr_at_fpr

    rng = np.random.default_rng(3)
    for n in (7, 40, 300):
        m = np.arange(n) % 3 == 0
        s = np.round(rng.normal(size=n) + 0.8 * m, 1)  # ties on purpose
        thr = np.concatenate([np.unique(s), [np.inf]])
        fpr = [float(np.mean(s[~m] >= t)) for t in thr]
        tpr = [float(np.mean(s[m] >= t)) for t in thr]
        hull = _chain(list(zip(fpr, tpr, strict=True)))
        hx, hy = np.array([h[0] for h in hull]), np.array([h[1] for h in hull])
        area = float(np.trapezoid(hy, hx))
        assert auroc(m, s, convention="convex_hull") == pytest.approx(area, abs=1e-12)
        assert auroc(m, s, convention="convex_hull") >= auroc(m, s) - 1e-12
        for target in (0.0, 0.05, 0.3):
            assert tpr_at_fpr(m, s, target, convention="interpolated") == pytest.approx(
                float(np.interp(target, hx, hy)), abs=1e-12)
            assert tpr_at_fpr(m, s, target, convention="interpolated") >= \
                tpr_at_fpr(m, s, target) - 1e-12
        p = m.mean()
        best = max(p * np.mean(s[m] >= t) + (1 - p) * np.mean(s[~m] < t) for t in thr)
        assert max_accuracy(m, s) == pytest.approx(best, abs=1e-12)
    with pytest.raises(ValueError, match="convention"):
        auroc(m, s, convention="trapezoid")


@pytest.mark.slow  # imports JAX (seconds)
@pytest.mark.jax
def test_conventions_match_jax_privacy_when_installed() -> None:
    auditing = need("jax_privacy.auditing")
    from dpaudit.stats.attack_metrics import auroc, max_accuracy, tpr_at_fpr

    rng = np.random.default_rng(0)
    m = np.arange(20_000) % 2 == 1
    s = np.round(rng.normal(size=m.size) + m, 2)
    a = auditing.CanaryScoreAuditor(s[m], s[~m])
    assert auroc(m, s, convention="convex_hull") == pytest.approx(float(a.attack_auroc()),
                                                                  rel=1e-12)
    assert tpr_at_fpr(m, s, 0.01, convention="interpolated") == pytest.approx(
        float(a.tpr_at_given_fpr(0.01)), rel=1e-12)
    assert max_accuracy(m, s) == pytest.approx(float(a.max_accuracy()), rel=1e-12)
