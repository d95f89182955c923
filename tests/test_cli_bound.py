"""CLI: ``dpaudit bound tight|bits|steinke|mahloujifar`` and ``dpaudit one-run SCORES``."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit import estimators as E
from dpaudit.cli import main
from dpaudit.cli.bound import parse_family


def test_bound_bits_json_matches_table_a(cli_json, capsys):
    # BT notes Table A: n=1000, k=300, Hoeffding -> eps 3.542 (GDP), 0.669 ((eps,d) family)
    d = cli_json(*["bound", "bits", "--canaries", "1000", "--wrong", "300",
                          "--ci", "hoeffding", "--family", "gdp"])
    assert d["method"] == "bits" and d["epsilon"] == pytest.approx(3.542, abs=6e-4)
    assert d["assumption"] == "the mechanism is μ-GDP" and d["family_is_assumption"]
    assert d["settings"]["ci"] == "hoeffding" and d["details"]["p_up"] == pytest.approx(0.3387,
                                                                                       abs=1e-4)
    d = cli_json(*["bound", "bits", "--canaries", "1000", "--wrong", "300",
                          "--ci", "hoeffding", "--family", "eps_delta"])
    assert d["epsilon"] == pytest.approx(0.669, abs=6e-4)
    assert d["assumption"] is None and d["family_is_assumption"] is False
    # eps_delta is the default family
    d = cli_json(*["bound", "bits", "--canaries", "1000", "--wrong", "300",
                          "--ci", "hoeffding"])
    assert d["epsilon"] == pytest.approx(0.669, abs=6e-4) and d["assumption"] is None
    d = cli_json(*["bound", "bits", "--canaries", "1000", "--wrong", "300",
                          "--family", "subsampled_gaussian:0.5"])
    ref = E.bits(n=1000, errors=300, family=("subsampled_gaussian", 0.5))
    assert d["epsilon"] == pytest.approx(ref.epsilon, rel=1e-12)
    assert d["settings"]["family"] == "subsampled_gaussian(q=0.5)"


def test_bound_tight_matches_spec(cli_json, capsys):
    # TOR notes §4.6: exact mode, (n, r, u) = (1000, 100, 10) -> 3.16445
    d = cli_json(*["bound", "tight", "--canaries", "1000", "--guesses", "100",
                          "--wrong", "10", "--family", "gdp"])
    assert d["method"] == "tight" and d["epsilon"] == pytest.approx(3.1645, abs=2e-4)


def test_bound_steinke_matches_table_e(cli_json, capsys):
    d = cli_json(*["bound", "steinke", "--canaries", "1000", "--guesses", "200",
                          "--correct", "180"])
    assert d["method"] == "steinke" and d["epsilon"] == pytest.approx(1.7963, abs=2e-3)


def test_bound_mahloujifar_matches_estimator(cli_json, capsys):
    d = cli_json(*["bound", "mahloujifar", "--canaries", "10000", "--guesses", "500",
                          "--correct", "463", "--family", "gdp"])
    ref = E.mahloujifar(m=10000, guesses=500, correct=463, delta=1e-5, confidence=0.95,
                        family="gdp")
    assert d["method"] == "mahloujifar" and d["epsilon"] == pytest.approx(ref.epsilon, rel=1e-9)
    assert 2.0 < d["epsilon"] < 4.3772  # TOR notes §4.5 r-sweep: 2.9966 at (10000, 500, 37)


def test_bound_table_output_and_verdict(capsys):
    rc = main(["bound", "bits", "--canaries", "1000", "--wrong", "300", "--claimed-epsilon", "2",
               "--family", "gdp"])
    out = capsys.readouterr().out
    assert rc == 0 and "bits" in out and "3.9203" in out and "violation" in out
    # the GDP null is an assumption: the verdict and the table say so
    assert "assuming the mechanism is μ-GDP, violation" in out


@pytest.mark.parametrize("argv,needle", [
    (["bound", "bits", "--canaries", "100", "--wrong", "101"], "--wrong"),
    (["bound", "bits", "--canaries", "100", "--wrong", "10", "--ci", "wald"], "ci"),
    (["bound", "bits", "--canaries", "100", "--wrong", "10", "--family", "sgm:2"], "q"),
    (["bound", "bits", "--canaries", "100", "--wrong", "10", "--family", "laplace:2"], "family"),
    (["bound", "bits", "--canaries", "100", "--wrong", "10", "--confidence", "1"], "confidence"),
    (["bound", "tight", "--canaries", "100", "--guesses", "200", "--wrong", "1"], "--guesses"),
    (["bound", "steinke", "--canaries", "100", "--guesses", "10", "--correct", "11"], "correct"),
])
def test_bound_bad_input(capsys, argv, needle):
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error:") and needle in err


def test_parse_family():
    assert parse_family("gdp") == "gdp"
    assert parse_family("SGM:0.25") == ("subsampled_gaussian", 0.25)
    with pytest.raises(ValueError, match="--family"):
        parse_family("subsampled_gaussian:x")


# ---------------------------------------------------------------------------------------------
# dpaudit one-run SCORES
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def scores_csv(tmp_path_factory):
    rng = np.random.default_rng(42)
    b = rng.integers(0, 2, 4000)
    y = b + rng.standard_normal(4000)  # Gaussian mechanism, mu = 1 (true eps 4.3772)
    p = tmp_path_factory.mktemp("scores") / "scores.csv"
    np.savetxt(p, np.c_[b, y], delimiter=",", header="member,score", comments="",
               fmt=["%d", "%.9f"])
    return p, b, y


def test_one_run_json_matches_api(cli_json, capsys, scores_csv):
    p, b, y = scores_csv
    # default null eps_delta: the all-guessed bits row of a mu = 1 Gaussian proves ~0.75
    d = cli_json(*["one-run", str(p), "--methods", "bits,steinke",
                          "--claimed-epsilon", "0.5"])
    ref = E.audit_one_run(b, np.round(y, 9), methods=("bits", "steinke"))
    assert [r["method"] for r in d["results"]] == ["bits", "steinke"]
    for got, want in zip(d["results"], ref, strict=True):
        assert got["epsilon"] == pytest.approx(want.epsilon, rel=1e-12)
        assert got["settings"]["correction"] == "bonferroni"
    assert d["canaries"] == 4000 and d["verdict_method"] == "bits"
    assert d["violation"] is True and d["results"][0]["epsilon"] > 0.5
    assert d["verdict_assumption"] is None and d["results"][0]["family_is_assumption"] is False


def test_one_run_table_output(capsys, scores_csv):
    p, _, _ = scores_csv
    rc = main(["one-run", str(p), "--methods", "bits,steinke", "--claimed-epsilon", "10",
               "--true-epsilon", "4.3772"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "bits" in out and "steinke" in out and "no violation detected" in out
    assert "0.99286" in out  # per-test confidence 1 - 0.05/7 of the 7-point grid
    assert "%" in out  # ratio to the true epsilon


def test_one_run_bad_input(capsys, tmp_path, scores_csv):
    p, _, _ = scores_csv
    rc = main(["one-run", str(p), "--methods", "bits,magic"])
    assert rc == 2 and "--methods" in capsys.readouterr().err
    rc = main(["one-run", str(tmp_path / "missing.csv")])
    assert rc == 2 and "not found" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("member,score\n1,0.5\n2,0.1\n")
    rc = main(["one-run", str(bad), "--methods", "bits"])
    assert rc == 2 and "member" in capsys.readouterr().err
    rc = main(["one-run", str(p), "--fractions", "0.1,x"])
    assert rc == 2 and "--fractions" in capsys.readouterr().err
