"""Figure runners of Bits Transmission and Tight One-Run at tiny size: files, columns and the
papers' claims.

Each runner is run once (module-scoped fixture) with ``size="tiny"`` and seed 0; the checks
read the CSV it wrote.  Validity checks ("bound <= theoretical epsilon") are 95% statements per
bound: with fixed seeds they are deterministic, and each holds with probability >= 0.95 for any
seed, so a failure after a change is a real signal.  Checks of the *anti-conservative* variants
(the literal ACI of Bits Transmission Algorithm 3, and Steinke "best k" = max over a k-grid without
a
multiplicity correction) are deliberately left out of the validity checks.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from dpaudit.papers.experiments.registry import EXPERIMENTS, get_experiment, load_all
from dpaudit.papers.experiments.tight_figures import (
    extreme_correct,
    steinke_k_sweep,
    top_r_errors,
)

pytestmark = pytest.mark.slow  # figure runners: end-to-end reproductions

RUNNERS = ("bits-gaussian", "bits-rr", "bits-laplace", "bits-dpsgd", "bits-dpsgd-flawed",
           "tight-gaussian-special", "tight-laplace-special", "tight-gaussian", "tight-dpsgd",
           "tight-rr", "tight-sgm", "tight-ablation-pvalue", "tight-ablation-n",
           "tight-ablation-r")

BASE_COLUMNS = {"figure", "panel", "n", "r", "rep", "seed", "method", "u", "correct",
                "accuracy"}


def _read(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


def _f(row: dict[str, str], key: str) -> float:
    return float(row[key])


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[list[Path], list]]:
    cache: dict[str, tuple[list[Path], list]] = {}

    def get(name: str) -> tuple[list[Path], list]:
        if name not in cache:
            out = tmp_path_factory.mktemp(name)
            paths = get_experiment(name).run(out, full=False, seed=0, size="tiny")
            cache[name] = (paths, _read(paths[0]))
        return cache[name]

    return get  # type: ignore[return-value]


def _assert_valid(rows: list[dict[str, str]], methods: tuple[str, ...],
                  ref: str = "theory_eps") -> int:
    """Bounds of a correct mechanism stay below the theoretical epsilon.

    Each bound is a 95% statement, so with N bounds about 0.05 N may exceed the truth by
    chance (seed 0, tiny size: bits-laplace mu=1, n=2000 draws 572 errors where 606.5 are
    expected, a 1.7-sigma event, and the Clopper-Pearson bound lands at 1.001 > 0.99998).  We
    allow one chance exceedance per runner, by at most 10% of the reference (a wrong
    estimator overshoots systematically and by far more).  Returns how many were checked.
    """
    checked = [r for r in rows if r["method"] in methods]
    over = [r for r in checked if _f(r, "epsilon") > _f(r, ref) + 1e-9]
    assert len(over) <= 1, over
    for r in over:
        assert _f(r, "epsilon") <= 1.1 * _f(r, ref), r
    return len(checked)


def _by(rows: list[dict[str, str]], *keys: str) -> dict[tuple, dict[str, dict[str, str]]]:
    """(keys...) -> method -> row."""
    out: dict[tuple, dict[str, dict[str, str]]] = defaultdict(dict)
    for r in rows:
        out[tuple(r[k] for k in keys)][r["method"]] = r
    return out


# --------------------------------------------------------------------------- registry/files
def test_all_runners_registered() -> None:
    load_all()
    for name in RUNNERS:
        assert name in EXPERIMENTS
        assert EXPERIMENTS[name].source.startswith(("Bits Transmission", "Tight One-Run"))


@pytest.mark.parametrize("name", RUNNERS)
def test_runner_writes_csv_and_png(outputs, name: str) -> None:
    paths, rows = outputs(name)
    assert paths[0].suffix == ".csv" and paths[1].suffix == ".png"
    for p in paths:
        assert p.exists() and p.stat().st_size > 0
    assert paths[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert BASE_COLUMNS <= set(rows[0])
    # every seed's number is kept: at least two repetitions per setting (except deterministic)
    if name != "tight-ablation-pvalue":
        assert {r["rep"] for r in rows} >= {"0", "1"}
        assert {"epsilon", "theory_eps"} <= set(rows[0])


def test_bad_size_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="size"):
        get_experiment("tight-rr").run(tmp_path, full=False, seed=0, size="huge")


# --------------------------------------------------------------------------- helpers
def test_top_r_errors_and_extremes_match_brute_force() -> None:
    rng = np.random.default_rng(3)
    x = rng.integers(0, 2, 50)
    score = rng.normal(size=50)
    guess = (score > 0).astype(int)
    order = np.argsort(score)
    top = order[-20:]
    assert top_r_errors(x, guess, np.abs(score), 50, rng) == int((x != guess).sum())
    conf = np.abs(score)
    best = np.argsort(conf)[-20:]
    assert top_r_errors(x, guess, conf, 20, rng) == int((x[best] != guess[best]).sum())
    want = int((x[top[-10:]] == 1).sum() + (x[order[:10]] == 0).sum())
    assert extreme_correct(x, score, 10, 10, rng) == want
    assert steinke_k_sweep(x, score, [10], rng) == [(20, want)]


# --------------------------------------------------------------------------- Bits Transmission
# claims
VALID_000 = ("bits_hoeffding", "bits_cp", "steinke_no_abstain")


@pytest.mark.parametrize("name", ["bits-gaussian", "bits-rr", "bits-laplace", "bits-dpsgd"])
def test_bits_bounds_below_theory(outputs, name: str) -> None:
    _, rows = outputs(name)
    assert _assert_valid(rows, VALID_000) >= 6


def test_bits_ci_ordering_and_gaussian_claim(outputs) -> None:
    """Same errors: Hoeffding <= Clopper-Pearson (BT notes Table A); on the Gaussian the
    bits audit beats Steinke (Fig. 6 claim: (eps, delta) baselines are not tight)."""
    _, rows = outputs("bits-gaussian")
    for _, m in _by(rows, "panel", "n", "rep").items():
        assert _f(m["bits_hoeffding"], "epsilon") <= _f(m["bits_cp"], "epsilon") + 1e-9
        if int(m["bits_cp"]["n"]) >= 1000:
            assert _f(m["bits_cp"], "epsilon") > _f(m["steinke_best_k"], "epsilon")
            assert _f(m["bits_cp"], "epsilon") > 0.6 * _f(m["bits_cp"], "theory_eps")


def test_bits_rr_matches_steinke_without_abstention(outputs) -> None:
    """BT notes §7.3: with no abstention, Steinke's binomial test and ACI-exact with the
    (eps, delta) family nearly coincide on randomized response."""
    _, rows = outputs("bits-rr")
    for _, m in _by(rows, "panel", "n", "rep").items():
        a, b = _f(m["bits_cp"], "epsilon"), _f(m["steinke_no_abstain"], "epsilon")
        assert abs(a - b) <= 0.05 + 0.05 * max(a, b)


def test_flawed_dpsgd_detected(outputs) -> None:
    """Bits Transmission Fig. 10: the backprop-clipping bug is caught (bound > claimed epsilon)."""
    _, rows = outputs("bits-dpsgd-flawed")
    ours = [r for r in rows if r["method"] in ("bits_hoeffding", "bits_cp")]
    assert ours
    for r in ours:
        assert _f(r, "epsilon") > _f(r, "claimed_eps"), r


def test_dpsgd_gdp_ceiling_below_claim(outputs) -> None:
    _, rows = outputs("bits-dpsgd")
    for r in rows:
        if r["method"] == "gdp_ceiling":
            assert 0 < _f(r, "epsilon") < _f(r, "claimed_eps")
        elif r["method"] in VALID_000:
            assert _f(r, "epsilon") <= _f(r, "gdp_ceiling") + 1e-9


# --------------------------------------------------------------------------- Tight One-Run claims
@pytest.mark.parametrize("name", ["tight-gaussian-special", "tight-laplace-special",
                                  "tight-gaussian", "tight-dpsgd", "tight-rr", "tight-sgm",
                                  "tight-ablation-n", "tight-ablation-r"])
def test_tight_bounds_below_theory_and_above_steinke(outputs, name: str) -> None:
    _, rows = outputs(name)
    assert _assert_valid(rows, ("tight", "xiang", "steinke", "mahloujifar")) >= 4
    n_cmp = 0
    for _, m in _by(rows, "panel", "n", "r", "rep").items():
        if "tight" in m and "steinke" in m:
            # Tight One-Run claim 1: ours >= Steinke on the same (n, r, u) (60/60 in the authors'
            # recorded comparison); Laplace is pure DP where Steinke is also tight.
            slack = 0.1 if name == "tight-laplace-special" else 1e-9
            assert _f(m["tight"], "epsilon") >= _f(m["steinke"], "epsilon") - slack, m
            n_cmp += 1
        if "tight" in m and "mahloujifar" in m:
            assert _f(m["tight"], "epsilon") >= _f(m["mahloujifar"], "epsilon") - 1e-9, m
    assert n_cmp >= 2


def test_tight_special_close_to_xiang(outputs) -> None:
    """Tight One-Run claim 2: ours ~ Xiang et al. in the special case (same n, seed)."""
    _, rows = outputs("tight-gaussian-special")
    big = [m for k, m in _by(rows, "panel", "n", "rep").items() if int(k[1]) >= 2000]
    assert big
    for m in big:
        a, b = _f(m["tight"], "epsilon"), _f(m["xiang"], "epsilon")
        assert abs(a - b) <= 0.2 * _f(m["tight"], "theory_eps")


def test_tight_rr_steinke_collapses_for_large_delta(outputs) -> None:
    """Tight One-Run Fig. 7 / claim 5: with delta = 1e-2 Steinke's 2 n delta term kills the bound
    at large n while ours stays near eps = 2 (TOR notes §4.5: 0.087 vs 1.836 at n = 1000)."""
    _, rows = outputs("tight-rr")
    for (panel, n, _r, _rep), m in _by(rows, "panel", "n", "r", "rep").items():
        if panel == "delta=0.01" and int(n) >= 2000:
            assert _f(m["steinke"], "epsilon") < 0.2
            assert _f(m["tight"], "epsilon") > 1.6


def test_ablation_pvalue_modes_and_steinke(outputs) -> None:
    """Fig. 10: exact <= paper for u >= 1 (Chernoff on top of Theorem 3 is conservative,
    TOR notes §4.7; at u = 0 the paper mode is the product of (1 - p_i), which is not) and every
    p-value in [0, 1], non-decreasing in u; with delta = 1e-2 Steinke rejects at no error
    count (its 2 m delta term), while ours still rejects for few errors."""
    _, rows = outputs("tight-ablation-pvalue")
    by = _by(rows, "panel", "u")
    for (panel, u), m in by.items():
        for r in m.values():
            assert 0.0 <= _f(r, "p_value") <= 1.0
        if int(u) >= 1:
            assert _f(m["tight_exact"], "p_value") <= _f(m["tight_paper"], "p_value") + 1e-12
        if panel == "delta=0.01":
            assert _f(m["steinke"], "p_value") > 0.05
            if int(u) <= 5:
                assert _f(m["tight_exact"], "p_value") < 0.05
    for method in ("tight_exact", "tight_paper", "steinke"):
        for panel in ("delta=1e-05", "delta=0.01"):
            ps = [_f(m[method], "p_value") for (p, u), m in sorted(
                by.items(), key=lambda kv: int(kv[0][1])) if p == panel]
            assert np.all(np.diff(ps) >= -1e-12), (method, panel, ps)
    small = [m for (p, _u), m in by.items() if p == "delta=1e-05"]
    assert min(_f(m["tight_exact"], "p_value") for m in small) < 0.05


def test_ablation_n_steinke_degrades_ours_improves(outputs) -> None:
    """Fig. 11: fixed r, growing n -> accuracy rises, Steinke's bound falls (2 n delta term)
    while ours stays well above it.  (Ours is not monotone in n at fixed r: the small-size run
    gives 3.37, 3.70, 3.37, 3.32 for n = 1e3, 1e4, 1e5, 3e5 at r = 200; see
    docs/reproduction.md.)"""
    _, rows = outputs("tight-ablation-n")
    mean = defaultdict(list)
    for r in rows:
        mean[(r["method"], int(r["n"]))].append(_f(r, "epsilon"))
        mean[("acc", int(r["n"]))].append(_f(r, "accuracy"))
    ns = sorted({int(r["n"]) for r in rows})
    m = {k: float(np.mean(v)) for k, v in mean.items()}
    theory = _f(rows[0], "theory_eps")
    assert m[("acc", ns[-1])] > m[("acc", ns[0])]
    assert m[("steinke", ns[-1])] < m[("steinke", ns[0])]
    for n in ns:
        assert m[("tight", n)] > m[("steinke", n)]
        assert m[("tight", n)] > 0.6 * theory


def test_ablation_r_ours_increases(outputs) -> None:
    """Fig. 12: ours increases with r (up to near-flat at r ~ n); accuracy decreases."""
    _, rows = outputs("tight-ablation-r")
    mean = defaultdict(list)
    for r in rows:
        mean[(r["method"], int(r["r"]))].append(_f(r, "epsilon"))
        mean[("acc", int(r["r"]))].append(_f(r, "accuracy"))
    rs = sorted({int(r["r"]) for r in rows})
    m = {k: float(np.mean(v)) for k, v in mean.items()}
    assert m[("tight", rs[-1])] > m[("tight", rs[0])]
    assert m[("acc", rs[-1])] < m[("acc", rs[0])]
    assert m[("tight", rs[-1])] > m[("steinke", rs[-1])]
