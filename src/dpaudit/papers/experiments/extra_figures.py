"""Runners for figures that had none: Bits Transmission Fig. 3 and Pillutla et al. Fig. 6.

* ``bits-figure3`` -- Bits Transmission Fig. 3 (BT notes §3.4, Table D): the mutual-information
bound
  u_f(p) = max_x F_f(x, p) (Theorem 2, Eqs. 17-18, :func:`dpaudit.estimators.bits.mi_bound`)
  against the prior p for G_0.5, G_1, G_2, f_{1,1e-5}, f_{2,1e-5}, f_{4,1e-5} and T_Lap(1).
  Claims: a more private f gives a lower curve at every p; u_f is symmetric in p <-> 1 - p and
  maximal at p = 1/2.
* ``lidp-figure6`` -- Pillutla et al. Fig. 6 (LiDP notes §2.7): half-widths of 95% binomial
intervals
  at p = 0.1 as n grows: Clopper-Pearson, Jeffreys, Wilson (:mod:`dpaudit.stats.binomial`) and
  first-order Bernstein (:func:`dpaudit.stats.intervals_xbern.xbern_interval_from_moments`, K = 1).
  Claim (caption): the binomial intervals are nearly equivalent once n >~ 1/min(p, 1-p)^2 = 100;
  Bernstein stays ~ sqrt(2 log(1/b)) / z_b ~ 1.39x wider (LiDP notes §4.3.6: the caption's
  "equivalence" can only refer to the binomial-specific intervals).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.papers.experiments.plotting import resolve_size, save_figure, write_csv
from dpaudit.papers.experiments.registry import experiment

__all__ = ["run_bits_figure3", "run_lidp_figure6", "FIG3_CURVES"]


def _plt():  # noqa: ANN202
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def FIG3_CURVES() -> dict[str, Any]:  # noqa: N802 - a table of curves
    from dpaudit.curves import EpsDeltaDP, GaussianDP, LaplaceDP

    return {"G_0.5": GaussianDP(0.5), "G_1": GaussianDP(1.0), "G_2": GaussianDP(2.0),
            "f_{1,1e-5}": EpsDeltaDP(1.0, 1e-5), "f_{2,1e-5}": EpsDeltaDP(2.0, 1e-5),
            "f_{4,1e-5}": EpsDeltaDP(4.0, 1e-5), "T_Lap(1)": LaplaceDP(1.0)}


@experiment("bits-figure3", "mutual-information bound u_f(p) vs the prior p for several "
            "trade-off functions", "Bits Transmission Fig. 3")
def run_bits_figure3(out_dir: Path, *, full: bool = False, seed: int = 0,
                     size: str | None = None) -> list[Path]:
    from dpaudit.estimators.bits import mi_bound

    size = resolve_size(full, size)
    n_p = {"tiny": 11, "small": 41, "full": 99}[size]
    ps = np.unique(np.concatenate([np.linspace(0.01, 0.99, n_p),
                                   [0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]]))
    rows = [{"curve": name, "p": float(p), "u_f": float(mi_bound(c, prior=float(p))),
             "seed": seed}
            for name, c in FIG3_CURVES().items() for p in ps]
    out_dir = Path(out_dir)
    csv_path = write_csv(out_dir / "bits_figure3.csv", rows)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in FIG3_CURVES():
        rr = [r for r in rows if r["curve"] == name]
        ax.plot([r["p"] for r in rr], [r["u_f"] for r in rr], label=name)
    ax.set(xlabel="prior p = Pr[B = 1]", ylabel="u_f(p) (bits)",
           title="Bits Transmission Fig. 3: MI bound vs prior")
    ax.legend(fontsize=7)
    fig.tight_layout()
    png = out_dir / "bits_figure3.png"
    save_figure(fig, png)
    plt.close(fig)
    return [csv_path, png]


@experiment("lidp-figure6", "binomial confidence intervals (Clopper-Pearson, Jeffreys, Wilson, "
            "Bernstein) at p = 0.1 vs n", "Pillutla et al. Fig. 6")
def run_lidp_figure6(out_dir: Path, *, full: bool = False, seed: int = 0,
                     size: str | None = None, p: float = 0.1,
                     confidence: float = 0.95) -> list[Path]:
    from dpaudit.stats.binomial import clopper_pearson, jeffreys, wilson
    from dpaudit.stats.intervals_xbern import xbern_interval_from_moments

    size = resolve_size(full, size)
    top = {"tiny": 4, "small": 6, "full": 7}[size]
    ns = np.unique(np.round(np.logspace(1, top, 8 * (top - 1) + 1)).astype(int))
    k = np.round(p * ns).astype(int)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {
        "clopper_pearson": clopper_pearson(k, ns, confidence),
        "jeffreys": jeffreys(k, ns, confidence),
        "wilson": wilson(k, ns, confidence),
    }
    mu = (k / ns)[:, None]
    lo_b, hi_b = [], []
    for m, n in zip(mu, ns, strict=True):
        lo, hi = xbern_interval_from_moments(m, n, 1, confidence, method="bernstein", order=1)
        lo_b.append(float(np.squeeze(lo)))
        hi_b.append(float(np.squeeze(hi)))
    out["bernstein"] = (np.asarray(lo_b), np.asarray(hi_b))
    rows: list[dict[str, Any]] = []
    for name, (lo, hi) in out.items():
        for n, kk, a, b in zip(ns, k, np.asarray(lo), np.asarray(hi), strict=True):
            rows.append({"interval": name, "n": int(n), "k": int(kk), "p": p,
                         "confidence": confidence, "lower": float(a), "upper": float(b),
                         "half_width": float(b - a) / 2, "seed": seed})
    out_dir = Path(out_dir)
    csv_path = write_csv(out_dir / "lidp_figure6.csv", rows)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in out:
        rr = [r for r in rows if r["interval"] == name]
        ax.plot([r["n"] for r in rr], [r["half_width"] * np.sqrt(r["n"]) for r in rr],
                label=name)
    ax.axvline(1 / min(p, 1 - p) ** 2, color="gray", ls=":")
    ax.set(xscale="log", xlabel="n", ylabel="half-width x sqrt(n)",
           title=f"Pillutla et al. Fig. 6: 95% intervals at p = {p}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    png = out_dir / "lidp_figure6.png"
    save_figure(fig, png)
    plt.close(fig)
    return [csv_path, png]
