"""Runners bits-figure4 (seed 000 Fig. 4), tight-figure2 (seed 001 Fig. 2) and lidp-figure4
(seed 002 Fig. 4), tiny size."""

from __future__ import annotations

import csv

import pytest

from dpaudit.experiments.illustration_figures import run_bits_figure4

#: spec/000 Table G (GDP, n = 1000, e_bar = 0.3, gamma = 0.95, delta = 1e-5):
#: (p_min^e, v, eps_L(p), eps_L(e_bar + v), contradiction)
TABLE_G = [(0.28, 0.0230, 5.232, 3.969, True), (0.30, 0.0240, 4.626, 3.941, True),
           (0.32, 0.0240, 4.052, 3.941, True), (0.324, 0.0240, 3.941, 3.941, False),
           (0.3245, 0.0245, 3.927, 3.927, False), (0.33, 0.0240, 3.777, 3.941, False),
           (0.36, 0.0250, 2.990, 3.913, False)]


def _rows(path):
    return list(csv.DictReader(open(path)))


def test_bits_figure4_reproduces_table_g_and_beats_hoeffding(tmp_path) -> None:
    paths = run_bits_figure4(tmp_path, size="tiny")
    assert paths[-1].stat().st_size > 0
    rows = _rows(paths[0])
    a = {round(float(r["p_min"]), 6): r for r in rows if r["panel"] == "a"}
    for p, v, e_p, e_ev, contra in TABLE_G:
        r = a[p]
        assert float(r["v"]) == pytest.approx(v, abs=1e-9)
        assert float(r["eps_L_p"]) == pytest.approx(e_p, abs=6e-4)
        assert float(r["eps_L_e_bar_plus_v"]) == pytest.approx(e_ev, abs=6e-4)
        assert (r["contradiction"] == "True") is contra
    bounds = {(r["panel"], r["ci"]): r for r in _rows(paths[1])}
    for panel in ("a", "b"):
        pr = [r for r in rows if r["panel"] == panel]
        # contradictions lie left of the fixed point (caption of Fig. 4); the exact end of the
        # fixed-point level set is the one-sided Clopper-Pearson limit (spec/000 §3.8)
        cp = float(bounds[panel, "clopper_pearson"]["p_up"])
        left = [float(r["p_min"]) for r in pr if r["contradiction"] == "True"]
        right = [float(r["p_min"]) for r in pr if r["contradiction"] == "False"]
        assert left and right and max(left) < min(right)
        assert max(left) < cp and all(p >= max(left) for p in right)
        assert all(r["contradiction"] == "False" for r in pr if float(r["p_min"]) > cp)
        # the fixed point beats Hoeffding, by more at small n (§3.8, "mainly for small n")
        assert float(bounds[panel, "aci"]["epsilon"]) > float(bounds[panel, "hoeffding"]["epsilon"])
    # spec/000: Hoeffding p_up = 0.3387, eps = 3.542 (n = 1000); Table A: literal ACI 0.37525 vs
    # Clopper-Pearson 0.38422 at n = 100, k = 30
    assert float(bounds["a", "hoeffding"]["p_up"]) == pytest.approx(0.3387, abs=1e-4)
    assert float(bounds["a", "hoeffding"]["epsilon"]) == pytest.approx(3.542, abs=6e-4)
    assert float(bounds["b", "aci"]["p_up"]) == pytest.approx(0.37525, abs=1e-5)
    assert float(bounds["b", "clopper_pearson"]["p_up"]) == pytest.approx(0.38422, abs=1e-5)
    gain = {p: float(bounds[p, "aci"]["epsilon"]) / float(bounds[p, "hoeffding"]["epsilon"])
            for p in ("a", "b")}
    assert gain["b"] > gain["a"]
