"""Runner ``lidp-real``: Pillutla et al. Table 1 on real DP-SGD training (digits / Purchase-like).

For each (data set / model, canary kind, epsilon) the "fewer trials" factor n / n* of LiDP
(K = 16, XBern Wilson intervals of order 2 and 4) against the one-canary baseline (K = 1,
first-order Wilson) is computed by :func:`dpaudit.papers.casestudies.lidp_real.fewer_trials` and
written beside the paper's Table 1 value for the analogous setting (FMNIST -> digits).

Sizes: tiny (the tests: linear model on digits, poison canaries, eps 16, n = 48), small
(digits linear + 2x256 MLP, both canary kinds, eps 4, 8, 16, n = 100 runs; CPU minutes),
full (+ Purchase-like MLP, eps 2..16, n = 400).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from dpaudit.papers.experiments.plotting import resolve_size, save_figure, write_csv
from dpaudit.papers.experiments.registry import experiment

__all__ = ["PAPER_TABLE1", "run_lidp_real", "run_lidp_figure12"]

#: Pillutla et al. Table 1 (LiDP notes §4.2): (data/model, canary, order) -> {eps: factor}
PAPER_TABLE1: dict[tuple[str, str, int], dict[float, float]] = {
    ("fmnist/linear", "poison", 2): {2: 0.68, 4: 3.31, 8: 2.55, 16: 4.38},
    ("fmnist/linear", "poison", 4): {2: 0.42, 4: 2.68, 8: 2.29, 16: 3.76},
    ("fmnist/linear", "gradient", 2): {2: 2.69, 4: 3.34, 8: 5.98, 16: 5.06},
    ("fmnist/linear", "gradient", 4): {2: 2.66, 4: 2.70, 8: 7.75, 16: 4.19},
    ("fmnist/mlp", "poison", 2): {2: 4.80, 4: 1.46, 8: 2.95, 16: 1.60},
    ("fmnist/mlp", "poison", 4): {2: 4.42, 4: 2.49, 8: 2.37, 16: 1.30},
    ("fmnist/mlp", "gradient", 2): {2: 4.62, 4: 2.88, 8: 2.33, 16: 5.46},
    ("fmnist/mlp", "gradient", 4): {2: 3.95, 4: 2.81, 8: 2.02, 16: 4.60},
    ("purchase/mlp", "poison", 2): {2: 3.14, 4: 1.06, 8: 1.41, 16: 9.28},
    ("purchase/mlp", "poison", 4): {2: 2.84, 4: 1.09, 8: 1.36, 16: 6.99},
    ("purchase/mlp", "gradient", 2): {2: 1.41, 4: 0.71, 8: 4.30, 16: 2.84},
    ("purchase/mlp", "gradient", 4): {2: 1.29, 4: 0.42, 8: 4.35, 16: 2.38},
}
_ANALOGUE = {"digits": "fmnist", "purchase": "purchase"}

SIZES: dict[str, dict[str, Any]] = {
    "tiny": {"configs": [("digits", "linear")], "canaries": ("poison",), "eps": (16.0,),
             "n": 48},
    "small": {"configs": [("digits", "linear"), ("digits", "mlp")],
              "canaries": ("poison", "gradient"), "eps": (4.0, 8.0, 16.0), "n": 100},
    "full": {"configs": [("digits", "linear"), ("digits", "mlp"), ("purchase", "mlp")],
             "canaries": ("poison", "gradient"), "eps": (2.0, 4.0, 8.0, 16.0), "n": 400},
}


@experiment("lidp-real", "LiDP (K = 16) vs one-canary DP audit of real DP-SGD (linear and 2x256 "
            "MLP on digits / Purchase-like): fewer-trials factor beside the paper's Table 1",
            "Pillutla et al. Table 1, §5-6")
def run_lidp_real(out_dir: Path, *, full: bool = False, seed: int = 0,
                  size: str | None = None) -> list[Path]:
    from dpaudit.papers.casestudies.lidp_real import LiDPRealSetting, fewer_trials

    size = resolve_size(full, size)
    cfg = SIZES[size]
    out_dir = Path(out_dir)
    rows: list[dict[str, Any]] = []
    for data, model in cfg["configs"]:
        for can in cfg["canaries"]:
            for eps in cfg["eps"]:
                st = LiDPRealSetting(dataset=data, model=model, canary=can, epsilon=eps)
                r = fewer_trials(st, n=cfg["n"], seed=seed)
                for order in (2, 4):
                    paper = PAPER_TABLE1.get((f"{_ANALOGUE[data]}/{model}", can, order), {})
                    rows.append({
                        "dataset": data, "model": model, "canary": can, "epsilon": eps,
                        "order": order, "n": cfg["n"], "k": r["k"], "seed": seed,
                        "baseline_epsilon": r["baseline_epsilon"],
                        "lidp_epsilon_at_n": r[f"eps_W{order}"][-1],
                        "n_star": r[f"n_star_W{order}"], "factor": r[f"factor_W{order}"],
                        "paper_factor": paper.get(eps, math.nan),
                        "x_mean": r["x_mean"], "y_mean": r["y_mean"],
                        "x_mean_k1": r["x_mean_k1"], "y_mean_k1": r["y_mean_k1"],
                        "score_sd": r["score_sd"],
                        "eps_curve": json.dumps(r[f"eps_W{order}"]),
                        "correlation": json.dumps(r[f"corr_W{order}"]),
                    })
                # durable progress: the CSV is rewritten after every configuration
                write_csv(out_dir / "lidp_real.csv", rows)
    csv_path = write_csv(out_dir / "lidp_real.csv", rows)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = sorted({(r["dataset"], r["model"], r["canary"]) for r in rows})
    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.6), squeeze=False)
    for ax, (d, m, c) in zip(axes[0], groups, strict=True):
        for order, color in ((2, "tab:red"), (4, "tab:green")):
            rr = [r for r in rows if (r["dataset"], r["model"], r["canary"], r["order"])
                  == (d, m, c, order)]
            e = [r["epsilon"] for r in rr]
            ax.plot(e, [r["factor"] for r in rr], "o-", color=color, label=f"ours W{order}")
            ax.plot(e, [r["paper_factor"] for r in rr], "x--", color=color,
                    label=f"paper W{order}")
        ax.axhline(1.0, color="gray", ls=":")
        ax.set(xscale="log", xlabel="epsilon", ylabel="fewer-trials factor n / n*",
               title=f"{d}/{m}, {c}")
        ax.legend(fontsize=6)
    fig.tight_layout()
    png = out_dir / "lidp_real.png"
    save_figure(fig, png)
    plt.close(fig)
    return [csv_path, png]


@experiment("lidp-figure12", "test accuracy of DP-SGD models vs the number of canaries K "
            "(digits, linear, poisoning and random-gradient canaries)", "Pillutla et al. Fig. 12")
def run_lidp_figure12(out_dir: Path, *, full: bool = False, seed: int = 0,
                      size: str | None = None) -> list[Path]:
    """Claim (Pillutla et al. Fig. 12): adding K canaries has no impact on the final test
    accuracy."""
    import numpy as np

    from dpaudit.papers.casestudies.lidp_real import LiDPRealSetting, accuracy_vs_k

    size = resolve_size(full, size)
    models = {"tiny": 48, "small": 200, "full": 1000}[size]
    ks = (1, 4, 16) if size == "tiny" else (1, 4, 16, 64)
    rows: list[dict[str, Any]] = []
    for can in ("poison", "gradient"):
        st = LiDPRealSetting(model="linear", canary=can, epsilon=8.0)
        acc = accuracy_vs_k(st, ks, models=models, seed=seed)
        for k, a in acc.items():
            rows.append({"canary": can, "k": k, "models": a.size, "accuracy": float(a.mean()),
                         "se": float(a.std(ddof=1) / np.sqrt(a.size)), "seed": seed,
                         "epsilon": 8.0})
    out_dir = Path(out_dir)
    csv_path = write_csv(out_dir / "lidp_figure12.csv", rows)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.6))
    for can in ("poison", "gradient"):
        rr = [r for r in rows if r["canary"] == can]
        ax.errorbar([r["k"] for r in rr], [r["accuracy"] for r in rr],
                    yerr=[2 * r["se"] for r in rr], fmt="o-", capsize=3, label=can)
    ax.set(xscale="log", xlabel="canaries K", ylabel="test accuracy",
           title="Pillutla et al. Fig. 12 (digits, linear, eps = 8)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    png = out_dir / "lidp_figure12.png"
    save_figure(fig, png)
    plt.close(fig)
    return [csv_path, png]
