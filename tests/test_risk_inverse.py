"""The inverse questions of ``dpaudit risk`` (dpaudit.risk.inverse): the printed epsilon meets
the limit and one unit in its last digit above does not -- checked with the single-epsilon
command -- and the success inverse equals its closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.risk.inverse import largest_epsilon_for_attacked, largest_epsilon_for_success

BASE = ["--delta", "1e-5", "--prior", "0.56", "--targets", "100"]


def _single(cli_json, eps: float, *base: str) -> dict:  # type: ignore[no-untyped-def]
    return cli_json("risk", "--epsilon", f"{eps:.4f}", *base)


def test_max_attacked_is_exact_to_the_printed_digits(cli_json) -> None:  # type: ignore[no-untyped-def]
    d = cli_json("risk", "--max-attacked", "84", *BASE)
    a = d["inverse"][0]
    assert a["question"] == "max_attacked" and a["limit"] == 84
    assert _single(cli_json, a["epsilon"], *BASE)["v_ub"] <= 84
    assert _single(cli_json, a["epsilon"] + 1e-4, *BASE)["v_ub"] > 84
    # Beyond Worst Case §6: v_UB(95%) = 84 of 100 at epsilon = 1 (prior 0.56), so eps* >= 1
    assert a["epsilon"] >= 1.0 and a["epsilon"] == round(a["epsilon"], 4)
    assert a["baseline"] == 64                             # the prior alone (epsilon = 0)


@pytest.mark.slow
def test_max_attacked_with_a_prior_file(cli_json, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pri = tmp_path / "priors.csv"
    np.savetxt(pri, np.random.default_rng(1).uniform(0.001, 0.05, 300), fmt="%.6f")
    base = ["--delta", "1e-6", "--prior-file", str(pri), "--confidence", "0.9"]
    a = cli_json("risk", "--max-attacked", "40", *base)["inverse"][0]
    assert _single(cli_json, a["epsilon"], *base)["v_ub"] <= 40
    assert _single(cli_json, a["epsilon"] + 1e-4, *base)["v_ub"] > 40


@pytest.mark.parametrize(("prior", "s", "delta"), [(0.1, 0.5, 1e-5), (0.56, 0.9, 0.0),
                                                   (1e-3, 0.01, 1e-6)])
def test_max_success_equals_the_closed_form(cli_json, prior, s, delta) -> None:  # type: ignore[no-untyped-def]
    base = ["--delta", f"{delta:g}", "--prior", f"{prior:g}"]
    a = cli_json("risk", "--max-success", f"{s:g}", *base)["inverse"][0]
    t = (s - delta) / (1 - delta)                          # beta + (1 - beta) delta <= s
    closed = math.log(t / (1 - t)) - math.log(prior / (1 - prior))
    assert a["epsilon"] == math.floor(closed * 1e4) / 1e4
    assert _single(cli_json, a["epsilon"], *base)["success_bound"] <= s
    assert _single(cli_json, a["epsilon"] + 1e-4, *base)["success_bound"] > s


def test_no_epsilon_meets_it(cli) -> None:  # type: ignore[no-untyped-def]
    rc, out, err = cli("risk", "--max-attacked", "10", *BASE)
    assert rc == 2 and err.count("\n") == 1
    assert "no epsilon > 0" in err and "already gives 64" in err
    rc, _, err = cli("risk", "--max-success", "0.5", *BASE)
    assert rc == 2 and "no epsilon > 0" in err
    with pytest.raises(ValueError, match="max_attacked must be below"):
        largest_epsilon_for_attacked(np.full(10, 0.1), 1e-5, 10)


def test_library_answer_and_sentence() -> None:
    a = largest_epsilon_for_attacked(np.full(100, 0.1), 1e-5, 91)
    assert (a.epsilon, a.epsilon_above, a.value, a.value_above) == (4.0145, 4.0146, 91, 92)
    assert "at most 91 of the 100 people" in a.sentence() and "4.0145" in a.sentence()
    b = largest_epsilon_for_success(np.full(100, 0.1), 1e-5, 0.8585, digits=2)
    assert b.epsilon == 4.0 and b.epsilon_above == 4.01


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"max_attacked": -1}, "max_attacked"), ({"max_attacked": 2.5}, "max_attacked"),
    ({"max_attacked": 5, "confidence": 1.0}, "confidence"),
    ({"max_attacked": 5, "digits": 11}, "digits"),
])
def test_attacked_bad_input(kwargs, name) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=name):
        largest_epsilon_for_attacked(np.full(20, 0.1), 1e-5, **kwargs)


@pytest.mark.parametrize(("s", "priors", "name"), [
    (0.0, [0.1], "max_success"), (1.0, [0.1], "max_success"), (math.nan, [0.1], "max_success"),
    (0.5, [1.5], "priors"), (0.5, [], "priors")])
def test_success_bad_input(s, priors, name) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=name):
        largest_epsilon_for_success(priors, 1e-5, s)
