"""CLI column options (--member-col, --score-col, --group-col, --aggregate) on audit and
one-run, --threshold multi_split, attack-metric intervals and the verdict's guarantee."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpaudit.adapters import aggregate_by_group, read_table
from dpaudit.estimators.multi_run import multi_run
from dpaudit.stats.attack_metrics import auroc_interval
from needs import need


@pytest.fixture
def records(tmp_path):
    """600 users x 3 records, a leaky attack: member records score +1.5 higher."""
    rng = np.random.default_rng(0)
    users = 600
    bit = rng.random(users) < 0.5
    user = np.repeat([f"user{i:04d}" for i in range(users)], 3)
    member = np.repeat(bit, 3).astype(int)
    score = 1.5 * member + rng.normal(size=users * 3)
    p = tmp_path / "mia.csv"
    lines = ["uid,in_train,attack_score"] + [
        f"{u},{m},{s:.9f}" for u, m, s in zip(user, member, score, strict=True)]
    p.write_text("\n".join(lines) + "\n")
    return p, user, member, np.round(score, 9)


def test_audit_with_named_columns_and_metric_intervals(cli, capsys, records):
    p, _, member, score = records
    rc, out, err = cli("audit", str(p), "--member-col", "in_train", "--score-col",
                       "attack_score", "--claimed-epsilon", "0.5", "--json")
    assert rc == 0, err
    d = json.loads(out)
    want = multi_run(member, score, delta=1e-5)
    assert d["results"][0]["epsilon"] == pytest.approx(want.epsilon, rel=1e-12)
    ci = auroc_interval(member, score, 0.95, "delong")
    assert d["auroc_ci"] == pytest.approx([ci.low, ci.high])
    lo, hi = d["tpr_at_fpr_0.01_ci"]
    assert lo <= d["tpr_at_fpr_0.01"] <= hi
    assert d["violation"] is True


def test_audit_group_level(cli, capsys, records):
    p, user, member, score = records
    rc, out, err = cli("audit", str(p), "--member-col", "in_train", "--score-col",
                       "attack_score", "--group-col", "uid", "--aggregate", "mean", "--json")
    assert rc == 0, err
    d = json.loads(out)
    g = aggregate_by_group(user, member, score, aggregate="mean")
    assert d["trials"] == 600 and d["members"] == int(g.member.sum())
    want = multi_run(g.member, g.score, delta=1e-5)
    assert d["results"][0]["epsilon"] == pytest.approx(want.epsilon, rel=1e-12)


@pytest.mark.slow
def test_audit_parquet_and_multi_split(cli, capsys, records, tmp_path):
    pd = need("pandas")
    need("pyarrow")
    p, user, member, score = records
    pq = tmp_path / "mia.parquet"
    pd.DataFrame({"uid": user, "in_train": member, "attack_score": score}).to_parquet(pq)
    rc, out, err = cli("audit", str(pq), "--member-col", "in_train", "--score-col",
                       "attack_score", "--threshold", "multi_split", "--seed", "4", "--json")
    assert rc == 0, err
    d = json.loads(out)
    want = multi_run(member, score, delta=1e-5, threshold="multi_split", seed=4)
    assert d["results"][0]["epsilon"] == pytest.approx(want.epsilon, rel=1e-12)
    assert d["results"][0]["settings"]["combine"] == "median"


def test_one_run_with_columns_and_verdict_guarantee(cli, capsys, records):
    """One-run audits need one i.i.d. bit per canary: here the canaries are the users."""
    p, _, member, score = records
    obs = read_table(p, member_col="in_train", score_col="attack_score", group_col="uid",
                     aggregate="sum")
    rc, out, err = cli("one-run", str(p), "--member-col", "in_train", "--score-col",
                       "attack_score", "--group-col", "uid", "--aggregate", "sum",
                       "--methods", "bits,steinke", "--claimed-epsilon", "0.2",
                       "--simultaneous", "--json")
    assert rc == 0, err
    d = json.loads(out)
    assert d["canaries"] == obs.n == 600
    assert d["verdict_rule"] == "bonferroni" and "Bonferroni over 2 methods" in \
        d["verdict_guarantee"]
    assert d["verdict"].startswith("violation: epsilon >= ")
    assert d["verdict_method"] == max(d["results"], key=lambda r: r["epsilon"])["method"]


@pytest.mark.parametrize("args, msg", [
    (["--member-col", "nope"], "missing column(s) 'nope'"),
    (["--member-col", "in_train", "--score-col", "uid"], "must be numeric"),
    (["--member-col", "in_train", "--score-col", "attack_score", "--group-col", "uid"],
     "explicit aggregate"),
    (["--member-col", "in_train", "--score-col", "attack_score", "--group-col", "uid",
      "--aggregate", "median"], "aggregate must be one of"),
])
@pytest.mark.parametrize("command", ["audit", "one-run"])
def test_bad_column_options_give_one_error_line(cli, capsys, records, command, args, msg):
    p = records[0]
    rc, out, err = cli(command, str(p), *args)
    assert rc == 2
    assert err.startswith("error:") and msg in err and "Traceback" not in err


def test_default_columns_keep_the_plain_reader(cli, capsys, tmp_path):
    p = tmp_path / "s.csv"
    p.write_text("member,score\n1,2.0\n0,0.5\n1,1.5\n0,-1.0\n")
    rc, out, _ = cli("audit", str(p), "--json")
    assert rc == 0 and json.loads(out)["trials"] == 4
