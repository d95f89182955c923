"""CLI consistency (issue 15): one naming scheme, hidden aliases, --version, help, JSON."""

from __future__ import annotations

import json

import pytest

from dpaudit.cli.common import OPTION_ALIASES, rewrite_aliases


def test_version(cli, capsys):
    from dpaudit import __version__

    rc, out, _ = cli("--version")
    assert rc == 0 and out.strip() == f"dpaudit {__version__}"


@pytest.mark.parametrize("new,old", [
    (["bound", "tight", "--canaries", "1000", "--guesses", "100", "--wrong", "10"],
     ["bound", "tight", "--n", "1000", "--r", "100", "--u", "10"]),
    (["bound", "bits", "--canaries", "1000", "--wrong", "300"],
     ["bound", "bits", "--n", "1000", "--errors", "300"]),
    (["bound", "steinke", "--canaries", "1000", "--guesses", "200", "--correct", "180"],
     ["bound", "steinke", "--m", "1000", "--guesses", "200", "--correct", "180"]),
    (["bound", "mahloujifar", "--canaries", "10000", "--guesses", "500", "--correct", "463"],
     ["bound", "mahloujifar", "--m=10000", "--guesses", "500", "--correct", "463"]),
    (["curve", "subsampled_gaussian", "--mu", "2", "--sampling-rate", "0.2"],
     ["curve", "sgm", "--mu", "2", "--q", "0.2"]),
    (["curve", "eps_delta", "--epsilon", "1", "--curve-delta", "1e-6"],
     ["curve", "eps-delta", "--eps", "1", "--curve-delta", "1e-6"]),
])
def test_new_names_and_hidden_aliases_agree(cli, capsys, new, old):
    rc1, out1, err1 = cli(*new, "--json")
    rc2, out2, err2 = cli(*old, "--json")
    assert rc1 == rc2 == 0 and err1 == ""
    assert json.loads(out1) == json.loads(out2)
    # the old spelling works but says what replaces it (stderr, after the run)
    assert err2.startswith("note: ") and "deprecated" in err2


def test_wrong_and_correct_are_the_same_count(cli, capsys):
    a = cli("bound", "tight", "--canaries", "1000", "--guesses", "100", "--wrong", "10",
            "--family", "gdp", "--json")
    b = cli("bound", "tight", "--canaries", "1000", "--guesses", "100", "--correct", "90",
            "--family", "gdp", "--json")
    assert json.loads(a[1])["epsilon"] == json.loads(b[1])["epsilon"] == pytest.approx(3.1645,
                                                                                       abs=1e-4)
    rc, out, err = cli("bound", "tight", "--canaries", "1000", "--guesses", "100",
                       "--correct", "90", "--wrong", "10")
    assert rc == 2 and err.startswith("error: give exactly one of --wrong and --correct")


@pytest.mark.slow
def test_aliases_are_hidden_from_help(cli, capsys):
    for path, table in OPTION_ALIASES.items():
        rc, out, _ = cli(*path.split(), "--help")
        assert rc == 0
        for old, new in table.items():
            assert new in out
            assert f"{old} " not in out.replace(new, "")


def test_alias_rewrite_is_scoped_to_its_command():
    # --n of 'bound tight' is rewritten; a same-named word elsewhere is not
    assert rewrite_aliases(["bound", "tight", "--n=5"]) == ["bound", "tight", "--canaries=5"]
    assert rewrite_aliases(["risk", "--n", "5"]) == ["risk", "--n", "5"]


def test_help_has_no_bool_noise(cli, capsys):
    for argv in (["--help"], ["simulate", "--help"], ["one-run", "--help"]):
        rc, out, _ = cli(*argv)
        assert rc == 0 and "<bool>" not in out


def test_reproduce_list_json(cli, capsys):
    rc, out, _ = cli("reproduce", "list", "--json")
    d = json.loads(out)
    names = [e["name"] for e in d["experiments"]]
    assert rc == 0 and names == sorted(names) and "bits-dpsgd" in names
    papers = ("Bits Transmission", "Tight One-Run", "Pillutla et al.", "Beyond Worst Case",
              "Hypothesis Interpretation")
    assert all(e["source"].startswith(papers) for e in d["experiments"])


def test_reproduce_size_option(cli, capsys):
    rc, out, err = cli("reproduce", "bits-dpsgd", "--size", "huge")
    assert rc == 2 and "--size" in err
    rc, out, err = cli("reproduce", "bits-dpsgd", "--size", "tiny", "--full")
    assert rc == 2 and "--full" in err


@pytest.mark.slow
def test_tables_have_no_constant_columns(cli, capsys):
    rc, out, _ = cli("simulate", "laplace", "--canaries", "2000")
    header = next(line for line in out.splitlines() if "method" in line)
    assert rc == 0 and "delta" not in header and "confidence" not in header
    assert "delta = 1.000e-05, confidence = 0.9500" in out


@pytest.mark.parametrize("argv,needle", [
    (["simulate", "gaussian", "--epsilon", "3"], "--epsilon"),
    (["simulate", "laplace", "--mu", "3"], "--mu"),
    (["simulate", "gaussian", "--sampling-rate", "0.1"], "--sampling-rate"),
    (["simulate", "gaussian", "--sensitivity", "3"], "--sensitivity"),
    (["simulate", "dpsgd", "--threat", "last_iterate", "--score", "lr"], "--score"),
    (["simulate", "svt", "--compute-true-epsilon"], "--compute-true-epsilon"),
    (["curve", "gdp", "--mu", "1", "--epsilon", "2"], "--epsilon"),
    (["curve", "laplace", "--epsilon", "1", "--symmetrized"], "--symmetrized"),
    (["audit", "missing.csv", "--seed", "3"], "--seed"),
    (["reproduce", "bits-dpsgd", "--size", "tiny", "--full"], "--full"),
])
def test_options_that_would_be_ignored_are_errors(cli, capsys, argv, needle, tmp_path):
    if argv[0] == "audit":
        p = tmp_path / "s.csv"
        p.write_text("member,score\n1,0.5\n0,0.1\n")
        argv = ["audit", str(p), *argv[2:]]
    rc, out, err = cli(*argv)
    assert rc == 2 and err.startswith("error:") and needle in err and err.count("\n") == 1


@pytest.mark.parametrize("value", ["nan", "-1", "inf"])
def test_claimed_epsilon_must_be_finite_nonnegative(cli, capsys, value):
    rc, out, err = cli("bound", "tight", "--canaries", "1000", "--guesses", "100",
                       "--wrong", "10", "--claimed-epsilon", value)
    assert rc == 2 and err.startswith("error: --claimed-epsilon must be a finite number >= 0")


def test_simulate_refuses_huge_runs(cli, capsys):
    rc, out, err = cli("simulate", "gaussian", "--canaries", "1000000000")
    assert rc == 2 and err.startswith("error: --canaries must be an integer in [2, 10,000,000]")


def test_symmetrised_sgm_vectorised_over_candidates():
    # the Mahloujifar recursion evaluates all candidate curves in one call; same numbers as the
    # per-curve evaluation
    import numpy as np

    from dpaudit.curves import SubsampledGaussianDP
    from dpaudit.curves.subsampled import sgm_tradeoff

    mus = np.array([0.5, 1.0, 2.0, 4.0])
    a = np.array([1e-6, 0.1, 0.4, 0.9])
    ref = [float(SubsampledGaussianDP(m, 0.3, symmetrized=True).tradeoff(x))
           for m, x in zip(mus, a, strict=True)]
    assert np.allclose(sgm_tradeoff(mus, 0.3, a, symmetrized=True), ref, rtol=0, atol=1e-15)
