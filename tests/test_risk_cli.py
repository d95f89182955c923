"""``dpaudit risk`` command (values checked against BWC notes §6 and the library)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dpaudit import risk
from dpaudit.cli import main


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    rc = main(argv + ["--json"])
    out = capsys.readouterr().out
    assert rc == 0, out
    return json.loads(out)


def test_risk_json_sex_column(capsys: pytest.CaptureFixture[str]) -> None:
    # BWC notes §6.6 / §4.5: p = 0.56, eps = 1, n = 100 -> v_UB(95%) = 84 (paper's ACS 'SEX')
    d = _json(capsys, ["risk", "--epsilon", "1", "--delta", "1e-5", "--prior", "0.56",
                       "--targets", "100", "--confidence", "0.95"])
    assert d["v_ub"] == 84 and d["targets"] == 100
    b = risk.beta(0.56, 1.0)
    assert d["success_bound"] == pytest.approx(b + (1 - b) * 1e-5, rel=1e-12)
    assert d["leaked_bits"] == pytest.approx(math.log2(math.e * (1 / 0.05 - 1) + 1), rel=1e-12)
    assert d["advantage"] == pytest.approx((b + 1e-5 - 0.56) / 0.44, rel=1e-12)
    assert d["details"]["expected_successes_bound"] == pytest.approx(77.5766, abs=1e-4)
    for key in ("epsilon", "delta", "confidence", "method", "params", "settings", "details"):
        assert key in d


def test_risk_brief_example(capsys: pytest.CaptureFixture[str]) -> None:
    d = _json(capsys, ["risk", "--epsilon", "4", "--delta", "1e-5", "--prior", "0.1",
                       "--targets", "100"])
    # beta(0.1, 4) = 0.858486 (BWC notes §6.1); eps_protect(0.1) = 0.4228 (§6.4)
    assert d["success_bound"] == pytest.approx(0.858486 + (1 - 0.858486) * 1e-5, abs=2e-6)
    assert d["epsilon_protect"] == pytest.approx(0.4228, abs=6e-5)
    assert d["v_ub"] == int(risk.thm35_tail(np.full(100, 0.1), 4.0, 1e-5).v_ub(0.95))


def test_risk_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["risk", "--epsilon", "1", "--delta", "1e-5", "--prior", "0.56",
               "--targets", "100"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "84 / 100" in out and "leaked bits" in out and "advantage" in out


def test_risk_prior_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "priors.txt"
    priors = np.linspace(0.05, 0.95, 100)
    f.write_text("\n".join(repr(float(p)) for p in priors))
    d = _json(capsys, ["risk", "--epsilon", "1", "--delta", "1e-5", "--prior-file", str(f)])
    # BWC notes §6.6 heterogeneous example: v_UB(95%) = 74
    assert d["v_ub"] == 74 and d["targets"] == 100
    assert d["details"]["expected_successes_bound"] == pytest.approx(67.493, abs=6e-4)
    assert d["params"]["prior"] is None


@pytest.mark.parametrize(("argv", "arg"), [
    (["--epsilon", "-1", "--prior", "0.1"], "epsilon"),
    (["--epsilon", "1", "--prior", "0"], "prior"),
    (["--epsilon", "1", "--prior", "1.5"], "prior"),
    (["--epsilon", "1", "--prior", "0.1", "--delta", "1"], "delta"),
    (["--epsilon", "1", "--prior", "0.1", "--delta", "-0.1"], "delta"),
    (["--epsilon", "1", "--prior", "0.1", "--confidence", "1"], "confidence"),
    (["--epsilon", "1", "--prior", "0.1", "--confidence", "0"], "confidence"),
    (["--epsilon", "1", "--prior", "0.1", "--targets", "0"], "targets"),
    (["--epsilon", "1"], "prior"),
])
def test_risk_bad_input(argv: list[str], arg: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["risk", *argv])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("error:") and arg in err


def test_risk_prior_file_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "p.txt"
    f.write_text("0.1\n0.2\n")
    rc = main(["risk", "--epsilon", "1", "--prior-file", str(f), "--targets", "3"])
    assert rc == 2 and "targets" in capsys.readouterr().err
