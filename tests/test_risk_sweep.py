"""``dpaudit risk`` sweeps: every row equals the single-epsilon command (dpaudit.risk.sweep)."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.risk.summary import risk_summary
from dpaudit.risk.sweep import MAX_GRID, epsilon_grid, plain_sentence, risk_sweep

BASE = ["--delta", "1e-5", "--prior", "0.1", "--targets", "100"]


def test_epsilon_grid() -> None:
    assert epsilon_grid("0.5,1,2,4,8") == (0.5, 1.0, 2.0, 4.0, 8.0)
    assert epsilon_grid(" 4 ") == (4.0,)
    assert epsilon_grid("0.1:0.3:0.1") == (0.1, 0.2, 0.3)      # not 0.30000000000000004
    assert epsilon_grid("0:8:2") == (0.0, 2.0, 4.0, 6.0, 8.0)
    assert epsilon_grid("0.5:8:0.5")[-1] == 8.0 and len(epsilon_grid("0.5:8:0.5")) == 16


@pytest.mark.parametrize("spec", ["", "a", "1,x", "-1", "nan", "inf", "1e400", "1,1", "2,1",
                                  "0:1:0", "1:0:1", "0:1", "0:1:2:3", f"0:{MAX_GRID}:0.5"])
def test_epsilon_grid_rejects(spec: str) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        epsilon_grid(spec)


@pytest.mark.slow
def test_sweep_rows_equal_the_single_epsilon_command(cli_json) -> None:  # type: ignore[no-untyped-def]
    sweep = cli_json("risk", "--epsilon", "0.5,1,2,4,8", *BASE)
    assert sweep["method"] == "risk_sweep" and sweep["epsilons"] == [0.5, 1, 2, 4, 8]
    for e, row in zip(sweep["epsilons"], sweep["rows"], strict=True):
        assert row == cli_json("risk", "--epsilon", str(e), *BASE)
    # the single-epsilon numbers (docs/risk.md): eps = 4, prior 0.1, 100 targets
    four = sweep["rows"][3]
    assert round(four["success_bound"], 4) == 0.8585 and four["v_ub"] == 91
    assert round(four["epsilon_protect"], 2) == 0.42


@pytest.mark.slow
def test_sweep_with_a_prior_file(cli_json, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pri = tmp_path / "priors.csv"
    np.savetxt(pri, np.random.default_rng(0).uniform(0.01, 0.3, 50), fmt="%.6f")
    sweep = cli_json("risk", "--epsilon", "0:2:1", "--delta", "1e-5", "--prior-file", str(pri))
    for e, row in zip((0.0, 1.0, 2.0), sweep["rows"], strict=True):
        assert row == cli_json("risk", "--epsilon", f"{e:g}", "--delta", "1e-5",
                               "--prior-file", str(pri))


def test_paper_value_in_a_sweep() -> None:
    # Beyond Worst Case §6 (ACS 'SEX', prior 0.56, 100 people, (1, 1e-5)): v_UB(95%) = 84
    rows = risk_sweep((0.5, 1.0), 1e-5, np.full(100, 0.56))
    assert rows[1]["v_ub"] == 84
    assert rows[1] == risk_summary(1.0, 1e-5, np.full(100, 0.56))


@pytest.mark.slow
def test_sweep_table(cli) -> None:  # type: ignore[no-untyped-def]
    rc, out, err = cli("risk", "--epsilon", "1,4", *BASE)
    assert rc == 0, err
    assert "91 / 100" in out and "30 / 100" in out and "0.8585" in out


def test_plain_sentence() -> None:
    s = plain_sentence(2.0, 53, 100, 0.95, 0.4509, 0.1)
    assert s.startswith("At privacy level epsilon = 2, with 95% confidence no attacker")
    assert "more than 53 of your 100 people" in s and "45.1%" in s and "10.0%" in s
