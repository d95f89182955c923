"""Runners reproducing Bits Transmission ("Privacy Audit as Bits Transmission"), Figures 6-10.

Protocol (BT notes §6, §9 Table 2): bits are Bernoulli(1/2), one run, every bit decoded (no
abstention) by the MAP rule, gamma = 0.95, epsilon stated at delta = 1e-5, 20 seeds at full
size.  Methods on the SAME observations:

* ``bits_hoeffding`` / ``bits_aci`` / ``bits_cp`` -- ``E.bits`` with the Hoeffding radius
  (Eq. 24), the paper's literal Algorithm 3 ("ACI"), and its rigorous form (one-sided
  Clopper-Pearson, "ACI-exact"); the family matches the mechanism (GDP / (eps, delta) / Laplace).
* ``steinke_best_k`` -- Steinke et al. with k+ = k- = k guesses, best over the k-grid of
  BT notes §7.1 (the paper does not say which k it used; max over the grid is *optimistic*,
  it has no multiplicity correction), and ``steinke_no_abstain`` (r = n, the same guesses).

The paper's figures lost their data, so the x-axis (n, log scale) and the sub-panel values
(mu in {0.5, 1, 2}, RR eps in {0.25, 1, 4} from the text, Laplace mu_l in {1, 2, 4}) are
documented choices.  DP-SGD (Figs. 9-10) uses the white-box DP-SGD simulator of
:mod:`dpaudit.mechanisms` with the x-axis the claimed epsilon.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.curves import EpsDeltaDP, GaussianDP, LaplaceDP
from dpaudit.papers.experiments.plotting import plot_panels, resolve_size, seed_sequence
from dpaudit.papers.experiments.registry import experiment
from dpaudit.papers.experiments.tight_figures import (
    DELTA,
    DPSGDConfig,
    _bits,
    _finish,
    _gaussian_bits,
    _laplace_bits,
    _rr_bits,
    _steinke,
    gdp_ceiling,
    observe,
    steinke_k_sweep,
)

__all__ = ["STEINKE_K_FRACTIONS"]

#: k+ = k- = fraction * n, BT notes §7.1 (k = n/2 is no abstention).
STEINKE_K_FRACTIONS = (0.5, 0.25, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001)

CI_METHODS = (("hoeffding", "bits_hoeffding"), ("aci", "bits_aci"),
              ("clopper_pearson", "bits_cp"))

LABELS = {"bits_hoeffding": "ours (Hoeffding)", "bits_aci": "ours (ACI, literal Alg. 3)",
          "bits_cp": "ours (ACI-exact = Clopper-Pearson)",
          "steinke_best_k": "Steinke et al. (best k, optimistic)",
          "steinke_no_abstain": "Steinke et al. (no abstention)"}


def _sizes(size: str) -> tuple[tuple[int, ...], int]:
    ns = {"tiny": (100, 2000), "small": (100, 1000, 10_000),
          "full": (100, 1000, 10_000, 100_000, 1_000_000)}[size]
    reps = {"tiny": 2, "small": 5, "full": 20}[size]
    return ns, reps


def _steinke_rows(base: dict[str, Any], x: np.ndarray, guess: np.ndarray, signed: np.ndarray,
                  n: int, rng: np.random.Generator, *, best_k_max_n: int,
                  ) -> list[dict[str, Any]]:
    """steinke_no_abstain (r = n, our guesses) and, for n <= best_k_max_n, the best k.

    The best-k row keeps the (r, correct) of the winning k and the total time of the sweep.
    """
    c_all = int(np.count_nonzero(x == guess))
    rows = [_steinke({**base, "r": n, "correct": c_all, "u": n - c_all, "accuracy": c_all / n},
                     m=n, r=n, correct=c_all, method="steinke_no_abstain")]
    if n <= best_k_max_n:
        ks = sorted({max(1, int(round(f * n))) for f in STEINKE_K_FRACTIONS})
        cands = [_steinke({**base, "r": r, "correct": c, "u": r - c, "accuracy": c / r},
                          m=n, r=r, correct=c, method="steinke_best_k")
                 for r, c in steinke_k_sweep(x, signed, ks, rng)]
        best = max(cands, key=lambda row: row["epsilon"])
        best["seconds"] = sum(row["seconds"] for row in cands)
        rows.append(best)
    return rows


def _idealised(out_dir: Path, *, name: str, figure: str, mech: str, size: str,
               seed: int) -> list[Path]:
    ns, reps = _sizes(size)
    if mech == "gaussian":
        params = {"tiny": (1.0,), "small": (0.5, 1.0, 2.0), "full": (0.5, 1.0, 2.0)}[size]
        family, key = "gdp", "mu"
    elif mech == "rr":
        params = {"tiny": (1.0,), "small": (0.25, 1.0, 4.0), "full": (0.25, 1.0, 4.0)}[size]
        family, key = "eps_delta", "eps"
    else:
        params = {"tiny": (1.0,), "small": (1.0, 2.0, 4.0), "full": (1.0, 2.0, 4.0)}[size]
        family, key = "laplace", "mu"
    best_k_max_n = 100_000  # as BT notes Table 2: the k sweep is skipped at n = 1e6
    rows: list[dict[str, Any]] = []
    for pi, theta in enumerate(params):
        if mech == "gaussian":
            theory = GaussianDP(theta).epsilon(DELTA)
        elif mech == "rr":
            theory = EpsDeltaDP(theta, DELTA).epsilon(DELTA)
        else:
            theory = LaplaceDP(theta).epsilon(DELTA)
        for n in ns:
            for rep in range(reps):
                rng = seed_sequence(seed, {"gaussian": 6, "rr": 7, "laplace": 8}[mech], pi, n,
                                    rep)
                if mech == "gaussian":
                    x, guess, _, signed = _gaussian_bits(n, theta, rng)
                elif mech == "rr":
                    x, guess, _, signed = _rr_bits(n, theta, DELTA, rng)
                else:
                    x, guess, _, signed = _laplace_bits(n, theta, rng)
                errors = int(np.count_nonzero(x != guess))
                base = {"figure": figure, "panel": f"{key}={theta:g}", key: theta, "n": n,
                        "rep": rep, "seed": seed, "theory_eps": theory}
                ours = {**base, "r": n, "u": errors, "correct": n - errors,
                        "accuracy": 1 - errors / n}
                for ci, method in CI_METHODS:
                    rows.append(_bits(ours, n=n, errors=errors, family=family, ci=ci,
                                      method=method))
                rows.extend(_steinke_rows(base, x, guess, signed, n, rng,
                                           best_k_max_n=best_k_max_n))

    def plot(path: Path, rs: list[dict[str, Any]]) -> Path:
        return plot_panels(path, rs, panel_key="panel", x_key="n", title=str, labels=LABELS,
                           suptitle=f"Bits Transmission {figure}: one-run audit of the {mech} "
                                    f"mechanism (95% conf., delta={DELTA:g}, {reps} seeds)")

    return _finish(out_dir, name, rows, plot)


@experiment("bits-gaussian", "One-run audit of the Gaussian mechanism (mu-GDP): bits "
            "transmission vs Steinke over n", "Bits Transmission Fig. 6")
def run_bits_gaussian(out_dir: Path, *, full: bool = False, seed: int = 0,
                      size: str | None = None) -> list[Path]:
    return _idealised(out_dir, name="bits-gaussian", figure="Fig. 6", mech="gaussian",
                      size=resolve_size(full, size), seed=seed)


@experiment("bits-rr", "One-run audit of randomized response ((eps, 1e-5)-DP, eps in {0.25, 1, "
            "4}): bits transmission vs Steinke over n", "Bits Transmission Fig. 7")
def run_bits_rr(out_dir: Path, *, full: bool = False, seed: int = 0,
                size: str | None = None) -> list[Path]:
    return _idealised(out_dir, name="bits-rr", figure="Fig. 7", mech="rr",
                      size=resolve_size(full, size), seed=seed)


@experiment("bits-laplace", "One-run audit of the Laplace mechanism: bits transmission vs "
            "Steinke over n", "Bits Transmission Fig. 8")
def run_bits_laplace(out_dir: Path, *, full: bool = False, seed: int = 0,
                     size: str | None = None) -> list[Path]:
    return _idealised(out_dir, name="bits-laplace", figure="Fig. 8", mech="laplace",
                      size=resolve_size(full, size), seed=seed)



# --------------------------------------------------------------------------- Figs 9-10
#: backprop-clipping bug: expected batch size |B| (noise |B| times too small, BT notes §6.5).
FLAWED_BATCH_SIZE = 16


def _dpsgd(out_dir: Path, *, name: str, figure: str, size: str, seed: int,
           flaw: str | None) -> list[Path]:
    cfg = DPSGDConfig.preset(size, {"tiny": (1000,), "small": (1000, 10_000),
                                    "full": (1000, 10_000)})
    rows: list[dict[str, Any]] = []
    for si, sigma in enumerate(cfg.sigmas):
        mech = cfg.mechanism(sigma, flaw=flaw, batch_size=FLAWED_BATCH_SIZE)
        claimed = mech.claimed_epsilon(DELTA)
        ceiling = gdp_ceiling(mech.claimed_curve)
        for n in cfg.ns:
            for rep in range(cfg.reps):
                rng = seed_sequence(seed, 10 if flaw else 9, si, n, rep)
                x, guess, _, signed = observe(mech, n, rng)
                errors = int(np.count_nonzero(x != guess))
                base = {"figure": figure, "panel": f"n={n}", "n": n, "sigma": sigma,
                        "claimed_eps": claimed, "rep": rep, "seed": seed,
                        "theory_eps": claimed, "gdp_ceiling": ceiling}
                ours = {**base, "r": n, "u": errors, "correct": n - errors,
                        "accuracy": 1 - errors / n}
                for ci, method in CI_METHODS:
                    rows.append(_bits(ours, n=n, errors=errors, family="gdp", ci=ci,
                                      method=method))
                rows.extend(_steinke_rows(base, x, guess, signed, n, rng,
                                          best_k_max_n=100_000))
            if flaw is None:
                rows.append({**base, "rep": 0, "method": "gdp_ceiling", "epsilon": ceiling})

    def plot(path: Path, rs: list[dict[str, Any]]) -> Path:
        what = ("flawed DP-SGD (backprop clipping, |B| = "
                f"{FLAWED_BATCH_SIZE})\nbound above the dashed line = violation caught"
                if flaw else "white-box DP-SGD")
        return plot_panels(path, rs, panel_key="panel", x_key="claimed_eps", title=str,
                           xlog=False, ylog=bool(flaw), theory_label="claimed eps",
                           xlabel="claimed epsilon (PLD accountant, delta=1e-5)",
                           labels={**LABELS, "gdp_ceiling": "GDP-family ceiling"},
                           suptitle=f"Bits Transmission {figure}: {what}\n"
                                    f"(q={cfg.sampling_rate:g}, T={cfg.steps}, simulated; "
                                    "95% conf.)")

    return _finish(out_dir, name, rows, plot)


@experiment("bits-dpsgd", "White-box DP-SGD (simulated, Dirac canaries): bits transmission vs "
            "Steinke over the claimed epsilon, n in {1e3, 1e4}", "Bits Transmission Fig. 9")
def run_bits_dpsgd(out_dir: Path, *, full: bool = False, seed: int = 0,
                   size: str | None = None) -> list[Path]:
    return _dpsgd(out_dir, name="bits-dpsgd", figure="Fig. 9", size=resolve_size(full, size),
                  seed=seed, flaw=None)


@experiment("bits-dpsgd-flawed", "DP-SGD with the backprop-clipping bug: the one-run audit "
            "catches the violation, Steinke only for small claims", "Bits Transmission Fig. 10")
def run_bits_dpsgd_flawed(out_dir: Path, *, full: bool = False, seed: int = 0,
                          size: str | None = None) -> list[Path]:
    return _dpsgd(out_dir, name="bits-dpsgd-flawed", figure="Fig. 10",
                  size=resolve_size(full, size), seed=seed, flaw="backprop_clipping")
