"""CLI: curve, audit, demo; one-line errors with a non-zero exit."""

from __future__ import annotations

import html
import json

import numpy as np
import pytest

from needs import in_ci


def test_curve_gdp_json(cli, capsys):
    rc, out, _ = cli("curve", "gdp", "--mu", "1", "--delta", "1e-5", "--json")
    assert rc == 0
    d = json.loads(out)
    assert round(d["epsilon"], 4) == 4.3772
    assert d["bit_error"] == pytest.approx(0.308538, abs=1e-6)


def test_curve_table(cli, capsys):
    rc, out, _ = cli("curve", "sgm", "--mu", "2", "--sampling-rate", "0.2")
    assert rc == 0 and "7.6204" in out and "0.431731" in out


@pytest.fixture
def scores_csv(tmp_path):
    rng = np.random.default_rng(0)
    n = 20_000
    member = (rng.random(n) < 0.5).astype(int)
    score = member * 3.0 + rng.normal(size=n)
    p = tmp_path / "scores.csv"
    np.savetxt(p, np.column_stack([member, score]), delimiter=",", header="member,score",
               comments="", fmt=["%d", "%.6f"])
    return p


@pytest.mark.slow
def test_audit_verdicts(cli, capsys, scores_csv):
    rc, out, _ = cli("audit", str(scores_csv), "--claimed-epsilon", "1", "--json")
    assert rc == 0
    d = json.loads(out)
    assert d["violation"] is True and d["verdict"].startswith("violation: epsilon >= ")
    assert [r["method"] for r in d["results"]] == ["multi_run", "multi_run_gdp"]
    assert set(d["results"][0]) >= {"epsilon", "delta", "confidence", "method", "params",
                                    "p_value", "settings", "details"}
    rc, out, _ = cli("audit", str(scores_csv), "--claimed-epsilon", "50")
    assert rc == 0 and "no violation detected" in out


@pytest.mark.slow
def test_audit_grid_option(cli, capsys, scores_csv):
    """`--grid quantiles` is the library's grid="quantiles" (the 1000-quantile grid before the
    geometric default); the default is the library default."""
    from dpaudit.estimators.multi_run import multi_run
    from dpaudit.io import load_scores

    obs = load_scores(scores_csv)
    for argv, grid in (((), "geometric"), (("--grid", "quantiles"), "quantiles")):
        rc, out, _ = cli("audit", str(scores_csv), "--json", *argv)
        assert rc == 0
        row = json.loads(out)["results"][0]
        lib = multi_run(obs.member, obs.score, delta=1e-5, grid=grid)
        assert row["settings"]["grid"] == grid
        assert row["epsilon"] == pytest.approx(lib.epsilon, rel=1e-12)
    rc, _, err = cli("audit", str(scores_csv), "--threshold", "split", "--grid", "quantiles")
    assert rc == 2 and err.startswith("error: --grid is only used by --threshold bonferroni")


def test_audit_npz_and_json_inputs(cli, capsys, tmp_path):
    m = np.array([1, 0] * 200)
    s = m * 2.0 + np.linspace(-1, 1, 400)
    np.savez(tmp_path / "a.npz", member=m, score=s)
    (tmp_path / "a.json").write_text(json.dumps({"member": m.tolist(), "score": s.tolist()}))
    eps = []
    for name in ("a.npz", "a.json"):
        rc, out, _ = cli("audit", str(tmp_path / name), "--json")
        assert rc == 0
        eps.append(json.loads(out)["results"][0]["epsilon"])
    assert eps[0] == eps[1] > 0


@pytest.mark.parametrize("content,match", [
    ("member,value\n1,0.3\n", "missing column(s) score"),
    ("member,score\n1,abc\n", "must be numeric"),
    ("member,score\n1,nan\n0,0.1\n", "score must be finite"),
    ("", "empty file"),
])
def test_audit_bad_files(cli, capsys, tmp_path, content, match):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    rc, out, err = cli("audit", str(p))
    assert rc == 2 and out == ""
    assert err.startswith("error: ") and match in err and err.count("\n") == 1


@pytest.mark.parametrize("argv,match", [
    (["audit", "/no/such/file.csv"], "not found"),
    (["curve", "gdp", "--mu", "1", "--bogus"], "No such option"),
    (["curve", "nope", "--mu", "1"], "kind must be one of"),
    (["curve", "gdp", "--mu", "1", "--delta", "2"], "delta must be in"),
    (["frobnicate"], "No such command"),
])
def test_cli_errors_one_line(cli, capsys, argv, match):
    rc, _, err = cli(*argv)
    assert rc == 2 and match in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.slow  # the whole demo, real training included
def test_demo_catches_the_flaw(demo_run):
    rc, out, err, card = demo_run  # shared with test_report_browser's demo card
    assert rc == 0, err
    d = json.loads(out)
    assert d["report"] == str(card) and card.stat().st_size > 0
    assert d["dpsgd_correct"]["verdict"].startswith("no violation")
    assert d["dpsgd_flawed"]["verdict"].startswith("violation")
    mr = d["multi_run"]
    assert mr["correct"].startswith("no violation") and mr["flawed"].startswith("violation")
    tr = d["training"]  # the real (Opacus) training audit, when the torch extra is installed
    assert not (in_ci() and "skipped" in tr), "the training demo must run under CI=true"
    if "skipped" not in tr:
        assert tr["correct"]["violation"] is False and tr["flawed"]["violation"] is True
        # the card holds the training audit's verdicts too (it is written after the training)
        page = html.unescape(card.read_text())
        assert tr["correct"]["verdict"] in page and tr["flawed"]["verdict"] in page
