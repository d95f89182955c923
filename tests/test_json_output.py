"""Every --json output is strict JSON with one convention for non-finite numbers (issue 15):
``null`` plus a sibling ``<key>_note`` ("inf", "-inf" or "nan"); never bare Infinity/NaN and
never the string "inf" as a number."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpaudit.cli import main
from dpaudit.results import AuditResult, json_safe


def _strict(text: str) -> object:
    def bad(token: str) -> None:
        raise AssertionError(f"non-standard JSON constant {token}")

    return json.loads(text, parse_constant=bad)


def _walk(obj: object):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k, v, obj
            yield from _walk(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _walk(v)


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    m = (rng.random(2000) < 0.5).astype(int)
    s = m * 1.5 + rng.normal(size=m.size)
    np.savetxt(tmp_path / "s.csv", np.column_stack([m, s]), delimiter=",",
               header="member,score", comments="", fmt="%g")
    x = np.zeros((50, 4), int)  # no hits: eps_raw = -inf
    np.savez(tmp_path / "xy.npz", x=x, y=np.ones((50, 4), int))
    return tmp_path


COMMANDS = [
    ["curve", "eps_delta", "--epsilon", "1", "--curve-delta", "0.01", "--delta", "1e-5"],
    ["curve", "gdp", "--mu", "1"],
    ["audit", "FILE:s.csv", "--claimed-epsilon", "1"],
    ["one-run", "FILE:s.csv", "--methods", "bits,steinke", "--claimed-epsilon", "1"],
    ["bound", "tight", "--canaries", "1000", "--guesses", "100", "--wrong", "10"],
    ["bound", "bits", "--canaries", "1000", "--wrong", "300"],
    ["bound", "steinke", "--canaries", "1000", "--guesses", "200", "--correct", "180"],
    ["bound", "mahloujifar", "--canaries", "1000", "--guesses", "200", "--correct", "180"],
    ["bound", "lifted", "FILE:xy.npz", "--interval", "clopper_pearson"],
    ["simulate", "laplace", "--canaries", "500"],
    ["risk", "--epsilon", "1", "--delta", "0.2", "--prior", "0.9"],
    ["reproduce", "list"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c[:2]) for c in COMMANDS])
def test_json_is_strict_everywhere(argv, files, capsys):
    args = [str(files / a[5:]) if a.startswith("FILE:") else a for a in argv]
    rc = main([*args, "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    obj = _strict(out)
    for k, v, parent in _walk(obj):
        assert not (isinstance(v, str) and v in ("inf", "-inf", "nan", "Infinity", "NaN")) \
            or k.endswith("_note"), (k, v)
        if isinstance(k, str) and k.endswith("_note") and k[:-5] in parent:
            assert parent[k[:-5]] is None


def test_infinite_values_become_null_with_a_note(files, capsys):
    rc = main(["curve", "eps_delta", "--epsilon", "1", "--curve-delta", "0.01", "--json"])
    d = _strict(capsys.readouterr().out)
    assert rc == 0 and d["epsilon"] is None and d["epsilon_note"] == "inf"
    rc = main(["bound", "lifted", str(files / "xy.npz"), "--interval", "clopper_pearson",
               "--json"])
    d = _strict(capsys.readouterr().out)
    assert d["epsilon"] == 0.0 and d["details"]["epsilon_raw"] is None
    assert d["details"]["epsilon_raw_note"] == "-inf"


def test_audit_result_to_dict_convention():
    r = AuditResult(epsilon=math.inf, delta=0.0, confidence=0.95, method="x",
                    params={"mu": np.float64(np.nan)}, details={"v": [1.0, -math.inf]})
    d = r.to_dict()
    assert d["epsilon"] is None and d["epsilon_note"] == "inf"
    assert d["params"] == {"mu": None, "mu_note": "nan"}
    assert d["details"]["v"] == [1.0, None]
    json.dumps(d, allow_nan=False)
    assert json_safe({"a": (1, np.int64(2))}) == {"a": [1, 2]}
