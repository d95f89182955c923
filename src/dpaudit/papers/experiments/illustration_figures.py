"""Runners for three illustration figures of issue 11 item 4.

* ``bits-figure4`` -- Bits Transmission Fig. 4 (BT notes §3.8, Table G): how the "Advanced CI"
  (Algorithm 3) settles.  For each hypothesised error floor p_min^e the radius
  v(p) = p - F^{-1}(1 - gamma; n, p)/n (:func:`dpaudit.estimators.bits.aci_radius`) gives the
  upper limit e_bar + v(p); the lower bounds eps_L(p) and eps_L(e_bar + v(p)) come from the GDP
  family (:func:`dpaudit.estimators.bits.epsilon_from_error_rate`, delta = 1e-5).  There is a
  contradiction where eps_L(e_bar + v) < eps_L(p), i.e. left of the fixed point p = e_bar + v(p);
  the Hoeffding bound (Eq. 24) is drawn for comparison.  Panel (a) is Table G's setting
  (n = 1000, e_bar = 0.3); panel (b) uses n = 100 ("advantage mainly for small n").
* ``tight-figure2`` -- Tight One-Run Fig. 2 (Def. 9, TOR notes §2.4): the base distribution pair of
a
  trade-off function f on [0, 1]: P = U[0, 1]; Q has CDF f(1 - x) on [0, 1), density
  q(x) = -f'(1 - x) and an atom 1 - f(0) at x = 1; T(P, Q) = f.  Drawn for G_1, f_{1, 0.1}
  and T_Lap(1) (the paper does not state its parameters).  The CDF is ``curve.tradeoff``; the
  density is its numerical derivative (no second implementation of any curve).
* ``lidp-figure4`` -- Pillutla et al. Fig. 4 middle/right: the correlation diagnostics
  |mu2 - mu1^2| and |mu4 - mu2^2| of the LiDP test statistics
  (:func:`dpaudit.stats.xbern.correlation_diagnostics`) against the number of canaries K and the
  dimension d, with log-log slopes fitted by least squares with their standard errors.  Paper:
  slopes vs K = -0.93 and -1.05; vs d = -1.06 and -1.00 (ignoring the outlier at d = 10^6).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.papers.experiments.plotting import resolve_size, save_figure, seed_sequence, write_csv
from dpaudit.papers.experiments.registry import experiment

__all__ = ["run_bits_figure4", "run_tight_figure2", "run_lidp_figure4", "FIG2_CURVES",
           "base_pair_table", "loglog_slope", "PAPER_K_SLOPES"]


def _plt():  # noqa: ANN202
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# ---------------------------------------------------------------------------------------------
# Bits Transmission Fig. 4
# ---------------------------------------------------------------------------------------------

#: (panel, n, e_bar): (a) = BT notes Table G; (b) small n
FIG4_PANELS = (("a", 1000, 0.3), ("b", 100, 0.3))


@experiment("bits-figure4", "Advanced-CI illustration: eps_L(p) vs eps_L(e_bar + v(p)) over the "
            "hypothesised error floor p, fixed point and Hoeffding", "Bits Transmission Fig. 4")
def run_bits_figure4(out_dir: Path, *, full: bool = False, seed: int = 0,
                     size: str | None = None, confidence: float = 0.95,
                     delta: float = 1e-5) -> list[Path]:
    from dpaudit.estimators.bits import (
        aci_literal,
        aci_radius,
        epsilon_from_error_rate,
        error_rate_upper,
    )

    size = resolve_size(full, size)
    n_p = {"tiny": 15, "small": 61, "full": 241}[size]
    rows: list[dict[str, Any]] = []
    summary: list[dict[str, Any]] = []
    for panel, n, ebar in FIG4_PANELS:
        k = int(round(ebar * n))
        # Table G's points plus a grid around the fixed point
        ps = np.unique(np.round(np.concatenate([np.linspace(ebar - 0.05, ebar + 0.12, n_p),
                                                [0.28, 0.30, 0.32, 0.324, 0.3245, 0.33, 0.36]]),
                                10))
        v = np.asarray(aci_radius(ps, n, confidence))
        for p, vv in zip(ps, v, strict=True):
            e_p = epsilon_from_error_rate(float(p), "gdp", delta)[0]
            e_ev = epsilon_from_error_rate(float(min(ebar + vv, 1.0)), "gdp", delta)[0]
            rows.append({"panel": panel, "n": n, "errors": k, "e_bar": ebar, "p_min": float(p),
                         "v": float(vv), "e_bar_plus_v": float(ebar + vv),
                         "eps_L_p": e_p, "eps_L_e_bar_plus_v": e_ev,
                         "contradiction": bool(e_ev < e_p), "seed": seed})
        for ci in ("aci", "clopper_pearson", "hoeffding"):
            p_up = (aci_literal(k, n, confidence) if ci == "aci"
                    else error_rate_upper(n, k, confidence, ci))
            summary.append({"panel": panel, "n": n, "errors": k, "ci": ci, "p_up": p_up,
                            "epsilon": epsilon_from_error_rate(p_up, "gdp", delta)[0],
                            "confidence": confidence, "delta": delta})
    out_dir = Path(out_dir)
    paths = [write_csv(out_dir / "bits_figure4.csv", rows),
             write_csv(out_dir / "bits_figure4_bounds.csv", summary)]
    plt = _plt()
    fig, axes = plt.subplots(1, len(FIG4_PANELS), figsize=(5.2 * len(FIG4_PANELS), 3.8))
    for ax, (panel, n, ebar) in zip(axes, FIG4_PANELS, strict=True):
        rr = [r for r in rows if r["panel"] == panel]
        x = [r["p_min"] for r in rr]
        ax.plot(x, [r["eps_L_p"] for r in rr], label="eps_L(p_min^e)")
        ax.plot(x, [r["eps_L_e_bar_plus_v"] for r in rr], label="eps_L(e_bar + v(p_min^e))")
        sm = {s["ci"]: s for s in summary if s["panel"] == panel}
        ax.axhline(sm["hoeffding"]["epsilon"], color="gray", ls="--", label="Hoeffding")
        ax.axvline(sm["aci"]["p_up"], color="black", label="fixed point (Alg. 3)")
        ax.set(xlabel="hypothesised p_min^e", ylabel="epsilon lower bound (GDP, delta=1e-5)",
               title=f"Bits Transmission Fig. 4({panel}): n={n}, e_bar={ebar}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    png = out_dir / "bits_figure4.png"
    save_figure(fig, png)
    plt.close(fig)
    return [*paths, png]


# ---------------------------------------------------------------------------------------------
# Tight One-Run Fig. 2
# ---------------------------------------------------------------------------------------------

def FIG2_CURVES() -> dict[str, Any]:  # noqa: N802 - a table of curves
    """The pairs drawn (the paper's parameters are not stated; TOR notes §4 "values lost")."""
    from dpaudit.curves import EpsDeltaDP, GaussianDP, LaplaceDP

    return {"G_1": GaussianDP(1.0), "f_{1,0.1}": EpsDeltaDP(1.0, 0.1),
            "T_Lap(1)": LaplaceDP(1.0)}


def base_pair_table(curve: Any, x: np.ndarray, h: float = 1e-7) -> dict[str, np.ndarray]:
    """Base pair of ``curve`` on [0, 1] (Tight One-Run Def. 9).

    Q's CDF F_Q(x) = f(1 - x); its density q(x) = -f'(1 - x) by a central difference of
    ``curve.tradeoff`` (step min(h, 1e-3 min(x, 1 - x)), accurate where q grows near x = 1);
    the privacy loss L(x) = log q(x) (P = U[0, 1] has density 1); Q's atom 1 - f(0) at x = 1.
    """
    x = np.asarray(x, dtype=float)
    step = np.maximum(np.minimum(h, 1e-3 * np.minimum(x, 1.0 - x)), 1e-12)
    lo = np.clip(1.0 - x - step, 0.0, 1.0)
    hi = np.clip(1.0 - x + step, 0.0, 1.0)
    q = (curve.tradeoff(lo) - curve.tradeoff(hi)) / (hi - lo)
    with np.errstate(divide="ignore"):
        loss = np.log(q)
    atom = 1.0 - float(curve.tradeoff(0.0))
    return {"q_cdf": curve.tradeoff(1.0 - x), "q_density": q, "privacy_loss": loss,
            "q_atom_at_1": np.full(x.shape, atom)}


@experiment("tight-figure2", "base distribution pairs (P = U[0,1], Q with CDF f(1-x) and an atom "
            "1 - f(0) at 1) of GDP, (eps, delta) and Laplace trade-off functions",
            "Tight One-Run Fig. 2")
def run_tight_figure2(out_dir: Path, *, full: bool = False, seed: int = 0,
                      size: str | None = None) -> list[Path]:
    size = resolve_size(full, size)
    n_x = {"tiny": 201, "small": 1001, "full": 4001}[size]
    x = np.unique(np.concatenate([np.linspace(0.0, 1.0, n_x)[1:-1],
                                  1.0 - np.logspace(-6, -1, n_x // 10)]))
    rows: list[dict[str, Any]] = []
    tables = {}
    for name, curve in FIG2_CURVES().items():
        t = base_pair_table(curve, x)
        tables[name] = t
        for i, xi in enumerate(x):
            rows.append({"curve": name, "x": float(xi), "one_minus_x": float(1.0 - xi),
                         "p_density": 1.0,
                         **{k: float(v[i]) for k, v in t.items()}, "seed": seed})
    out_dir = Path(out_dir)
    csv_path = write_csv(out_dir / "tight_figure2.csv", rows)
    plt = _plt()
    fig, axes = plt.subplots(1, len(tables), figsize=(4.4 * len(tables), 3.6))
    for ax, (name, t) in zip(axes, tables.items(), strict=True):
        ax.plot(x, np.ones_like(x), label="P = U[0,1]", color="tab:blue")
        ax.plot(x, t["q_density"], label="Q density -f'(1-x)", color="tab:red")
        atom = float(t["q_atom_at_1"][0])
        if atom > 0:
            ax.vlines(1.0, 0, atom * 10, color="tab:red", lw=3, label=f"Q atom {atom:g} (x10)")
        ax.set(yscale="log", xlabel="x", ylabel="density", title=f"Tight One-Run Fig. 2: {name}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    png = out_dir / "tight_figure2.png"
    save_figure(fig, png)
    plt.close(fig)
    return [csv_path, png]


# ---------------------------------------------------------------------------------------------
# Pillutla et al. Fig. 4 (middle): correlation diagnostics vs K
# ---------------------------------------------------------------------------------------------

#: Pillutla et al. §4 text (LiDP notes §4.1): log-log slopes vs K
PAPER_K_SLOPES = {"mu2_minus_mu1sq": -0.93, "mu4_minus_mu2sq": -1.05}
DIAGNOSTICS = tuple(PAPER_K_SLOPES)
THRESHOLD_MODES = ("tuned", "fixed")


def _matrix(rows: list[dict[str, Any]], mode: str, key: str, ks: list[int]) -> np.ndarray:
    """repetitions x K matrix of one diagnostic."""
    return np.array([[r[key] for r in rows if r["K"] == k and r["threshold_mode"] == mode]
                     for k in ks]).T


def loglog_slope(x: Any, y: Any, *, n_boot: int = 0,
                 rng: np.random.Generator | None = None) -> tuple[float, float]:
    """Least-squares slope b of log y = a + b log x, with its standard error.

    ``y`` is 1-D (one value per x: the OLS standard error from the residuals,
    se = sqrt(s^2 / sum (log x - mean)^2)) or 2-D (repetitions x len(x): the fit is to the mean
    over repetitions, and the standard error is the bootstrap over repetitions, ``n_boot``
    resamples, which accounts for the noise of each mean).
    """
    lx = np.log(np.asarray(x, dtype=float))
    yy = np.asarray(y, dtype=float)
    cx = lx - lx.mean()
    sxx = float(cx @ cx)
    if yy.ndim == 1:
        ly = np.log(yy)
        b = float(cx @ (ly - ly.mean()) / sxx)
        res = ly - ly.mean() - b * cx
        dof = max(lx.size - 2, 1)
        return b, math.sqrt(float(res @ res) / dof / sxx)
    b = float(cx @ np.log(yy.mean(axis=0)) / sxx)
    if n_boot <= 0:
        return b, math.nan
    g = rng if rng is not None else np.random.default_rng(0)
    idx = g.integers(0, yy.shape[0], size=(n_boot, yy.shape[0]))
    boot = np.log(yy[idx].mean(axis=1)) @ cx / sxx  # (n_boot,) slopes, vectorised
    return b, float(np.std(boot, ddof=1))


@experiment("lidp-figure4", "LiDP correlation diagnostics |mu2 - mu1^2|, |mu4 - mu2^2| vs the "
            "number of canaries K, with log-log slopes and bootstrap standard errors",
            "Pillutla et al. Fig. 4 middle")
def run_lidp_figure4(out_dir: Path, *, full: bool = False, seed: int = 0,
                     size: str | None = None, fixed_rate: float = 0.1) -> list[Path]:
    """Gaussian mechanism, claimed eps = 2 (sigma^2 = 4.62), d = 10^6, n = 1024 trials; per K
    the W2 threshold is tuned once on a hold-out run (:func:`dpaudit.papers.experiments.lidp.
    tuned_epsilons`, the paper's protocol), then the diagnostics are measured on ``reps`` fresh
    runs.  The paper plots one run per K ("noisy single-threshold estimates", LiDP notes §4.3.3);
    here the mean over repetitions is fitted, with a bootstrap standard error of the slope.
    Two thresholds: "tuned" (per K, as in the paper; it moves into the tail as K grows, which
    steepens the slopes) and "fixed" (one tau for every K with Pr[x >= tau] = ``fixed_rate``),
    which isolates the K-dependence.

    Sampler: "tiny" uses the i.i.d.-score approximation at d = 10^6 (LiDP notes §2.11: the
    cross-canary score correlation is 1/(sigma^2 d) ~ 2e-7, far below the sampling noise);
    "small"/"full" use the exact sampler up to K = 32 and the approximation above, as
    :mod:`dpaudit.papers.experiments.lidp` does.
    """
    from scipy import special

    from dpaudit.papers.experiments.lidp import CONFIDENCE, DELTA, IID_ABOVE_K, tuned_epsilons
    from dpaudit.papers.lidp_simulators import gaussian_lidp_scores, gaussian_sigma_for_epsilon
    from dpaudit.stats.xbern import correlation_diagnostics, moments_at_thresholds
    from dpaudit.validation import check_probability

    fixed_rate = check_probability("fixed_rate", fixed_rate)

    size = resolve_size(full, size)
    ks = [4, 8, 16, 32, 64, 128]
    reps, n_boot = {"tiny": (30, 400), "small": (200, 1000), "full": (1000, 2000)}[size]
    n, d, eps_claim = 1024, 10**6, 2.0
    sigma = gaussian_sigma_for_epsilon(eps_claim, DELTA)
    rows: list[dict[str, Any]] = []
    for ki, k in enumerate(ks):
        method = "iid" if (size == "tiny" or k > IID_ABOVE_K) else "auto"

        def draw(*key: int, k: int = k, method: str = method) -> Any:
            return gaussian_lidp_scores(n, k, sigma, d, rng=seed_sequence(seed, *key),
                                        method=method)

        tune = draw(ki, 10**6)
        evals = [draw(ki, r) for r in range(reps)]
        tau, _, diags = tuned_epsilons(tune, evals, 2, False)
        # fixed threshold: the same tau for every K, where Pr[x >= tau] = fixed_rate
        tau_fixed = 1.0 + math.sqrt(sigma**2 + (k - 1) / d) * float(special.ndtri(1 - fixed_rate))
        fixed = [correlation_diagnostics(moments_at_thresholds(ev.x_scores, [tau_fixed], 4)[0])
                 for ev in evals]
        modes: list[tuple[str, float, Any]] = [("tuned", tau, diags), ("fixed", tau_fixed, fixed)]
        for mode, t, dgs in modes:
            for r, dg in enumerate(dgs):
                rows.append({"threshold_mode": mode, "K": k, "rep": r, "n": n, "d": d,
                             "claimed_epsilon": eps_claim, "sigma": sigma, "threshold": t,
                             "sampler": method, "confidence": CONFIDENCE,
                             **{key: float(dg[key]) for key in DIAGNOSTICS}, "seed": seed})
    fits = []
    g = seed_sequence(seed, 99)
    for mode in THRESHOLD_MODES:
        for key in DIAGNOSTICS:
            mat = _matrix(rows, mode, key, ks)
            b, se = loglog_slope(ks, mat, n_boot=n_boot, rng=g)
            fits.append({"threshold_mode": mode, "diagnostic": key, "slope": b,
                         "slope_se": se, "paper_slope": PAPER_K_SLOPES[key], "reps": reps,
                         "n": n, "d": d, "K_min": ks[0], "K_max": ks[-1],
                         "z_vs_paper": (b - PAPER_K_SLOPES[key]) / se})
    out_dir = Path(out_dir)
    paths = [write_csv(out_dir / "lidp_figure4.csv", rows),
             write_csv(out_dir / "lidp_figure4_slopes.csv", fits)]
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, mode in zip(axes, THRESHOLD_MODES, strict=True):
        for key, col in zip(DIAGNOSTICS, ("tab:blue", "tab:red"), strict=True):
            mat = _matrix(rows, mode, key, ks)
            m = mat.mean(axis=0)
            se = mat.std(axis=0, ddof=1) / math.sqrt(reps)
            f = next(x for x in fits if x["diagnostic"] == key and x["threshold_mode"] == mode)
            ax.errorbar(ks, m, yerr=se, marker="o", color=col, capsize=2,
                        label=f"{key}: slope {f['slope']:.2f} +- {f['slope_se']:.2f} "
                              f"(paper {f['paper_slope']})")
            lk = np.log(ks)
            ax.plot(ks, np.exp(np.log(m).mean() + f["slope"] * (lk - lk.mean())), ls=":",
                    color=col)
        ax.set(xscale="log", yscale="log", xlabel="canaries K", ylabel="mean |diagnostic|",
               title=f"Pillutla et al. Fig. 4 middle, {mode} threshold\n"
                     f"eps=2, d=1e6, n={n}, {reps} runs per K")
        ax.legend(fontsize=6)
    fig.tight_layout()
    png = out_dir / "lidp_figure4.png"
    save_figure(fig, png)
    plt.close(fig)
    return [*paths, png]
