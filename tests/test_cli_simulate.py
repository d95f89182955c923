"""``dpaudit simulate``: side-by-side table, verdict against the claim, JSON, bad input."""

from __future__ import annotations

import json

import pytest

from dpaudit.cli import main
from dpaudit.curves import GaussianDP


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    rc = main(["simulate", *args, "--json"])
    assert rc == 0
    return json.loads(capsys.readouterr().out)


def test_flawed_gaussian_violation_json(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, "gaussian", "--flawed", "wrong_sensitivity", "--canaries", "2000",
                   "--mu", "0.5", "--seed", "3")
    claimed = GaussianDP(0.5).epsilon(1e-5)
    assert out["claimed_epsilon"] == pytest.approx(claimed)
    assert out["violation"] is True
    assert out["verdict"].startswith("violation")
    methods = [r["method"] for r in out["results"]]
    assert methods[0] == out["verdict_method"] and len(methods) >= 2
    assert out["results"][0]["epsilon"] > claimed
    assert set(out["results"][0]) >= {"epsilon", "delta", "confidence", "method", "params",
                                      "p_value", "settings", "details"}


@pytest.mark.slow
def test_correct_laplace_no_violation_table(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["simulate", "laplace", "--epsilon", "2", "--canaries", "2000", "--seed", "1"])
    assert rc == 0
    text = capsys.readouterr().out
    assert "no violation detected" in text
    assert "epsilon >=" in text and "claimed_epsilon" in text


@pytest.mark.slow
def test_svt_flawed_and_correct(capsys: pytest.CaptureFixture[str]) -> None:
    bad = run_json(capsys, "svt", "--flawed", "alg6", "--canaries", "10000")
    assert bad["violation"] is True and bad["results"][0]["epsilon"] > 1.0
    good = run_json(capsys, "svt", "--canaries", "10000")
    assert good["violation"] is False


@pytest.mark.slow
def test_dpsgd_reused_noise_caught(capsys: pytest.CaptureFixture[str]) -> None:
    out = run_json(capsys, "dpsgd", "--flawed", "reused_noise", "--canaries", "2000",
                   "--sampling-rate", "0.05", "--steps", "100", "--score", "sum")
    assert out["violation"] is True
    assert out["flaw"] == "reused_noise"


@pytest.mark.parametrize("args,msg", [
    (["simulate", "bogus"], "MECHANISM"),
    (["simulate", "gaussian", "--flawed", "backprop_clipping"], "--flawed for gaussian"),
    (["simulate", "svt", "--flawed", "alg2"], "--flawed"),
    (["simulate", "gaussian", "--canaries", "1"], "--canaries"),
    (["simulate", "gaussian", "--mu", "-1"], "mu"),
    (["simulate", "dpsgd", "--threat", "grey"], "threat"),
])
def test_bad_input(capsys: pytest.CaptureFixture[str], args: list[str], msg: str) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and msg in err
