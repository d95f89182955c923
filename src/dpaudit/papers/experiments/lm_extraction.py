"""Runner ``risk-figure3-dpsgd``: Beyond Worst Case Fig. 3 on DP-SGD-trained character n-gram
networks.

For each prior (uniform, numerical password, PII -- all scaled down to 10 digits) and each
epsilon (delta = 1e-5), ``models`` networks are trained with DP-SGD on one canary each
(:mod:`dpaudit.papers.casestudies.lm_extraction`), attacked with the most likely digit, and the
attack
accuracy with its Clopper-Pearson 95% interval is written beside the Thm 3.5 (n = 1) and
Cor 3.4 bounds, the MMC G_mu bound (uniform) and the prior baseline.

Priors are measured or literal, never back-solved: the password prior is the top 10 of
Zipf(s, N) (= Zipf(s, 10) for any N >= 10, so the literal and "implied" supports agree here);
the PII prior of each canary is its masked sequence's measured prior
(:func:`dpaudit.papers.casestudies.pii.measure_pii_prior`), top 10 renormalised.

Sizes: tiny (the tests: 150 models, 2 epsilons, small PII measurement), small (400 models,
5 epsilons, < 1 min), full (the paper: 2,000 models per point, 7 epsilons).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.papers.experiments.plotting import resolve_size, save_figure, write_csv
from dpaudit.papers.experiments.registry import experiment

__all__ = ["run_figure3_dpsgd", "SIZE_SETTINGS"]

DELTA = 1e-5

#: per size: models per point, tuning models, epsilons, PII measurement (sequences, public
#: emails, epochs)
SIZE_SETTINGS: dict[str, dict[str, Any]] = {
    "tiny": {"models": 150, "tune": 48, "eps": (1.0, 16.0), "pii": (60, 300, 1)},
    "small": {"models": 400, "tune": 96, "eps": (0.5, 1.0, 2.0, 4.0, 16.0),
              "pii": (200, 1000, 2)},
    "full": {"models": 2000, "tune": 256, "eps": (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0),
             "pii": (500, 3000, 3)},
}


def fig3_priors(size: str, seed: int, *, zipf_exponent: float = 1.1) -> dict[str, np.ndarray]:
    """The three 10-digit priors of Fig. 3: uniform, password (Zipf), PII rows (S, 10)."""
    from dpaudit.papers.casestudies.pii import measure_pii_prior
    from dpaudit.risk.priors import password_prior

    n_seq, n_pub, epochs = SIZE_SETTINGS[size]["pii"]
    pii = measure_pii_prior(n_sequences=n_seq, n_public=n_pub, epochs=epochs, seed=seed)
    return {"uniform": np.full(10, 0.1),
            "password": password_prior(exponent=zipf_exponent).scaled_down(10).probs,
            "pii": pii.scaled_down(10)}


@experiment("risk-figure3-dpsgd", "LM extraction from DP-SGD-trained char n-gram networks vs "
            "Thm 3.5 / MMC bounds (measured priors)", "Beyond Worst Case Fig. 3, §5.2")
def run_figure3_dpsgd(out_dir: Path, *, full: bool = False, seed: int = 0,
                      size: str | None = None) -> list[Path]:
    from dpaudit.papers.casestudies.lm_extraction import LMExtractionSetting, run_lm_extraction

    size = resolve_size(full, size)
    cfg = SIZE_SETTINGS[size]
    out_dir = Path(out_dir)
    priors = fig3_priors(size, seed)
    rows: list[dict[str, Any]] = []
    for j, (name, prior) in enumerate(priors.items()):
        for k, eps in enumerate(cfg["eps"]):
            st = LMExtractionSetting(epsilon=float(eps), delta=DELTA, models=cfg["models"],
                                     tune_models=cfg["tune"])
            res = run_lm_extraction(prior, st, name=name, seed=seed * 1000 + 10 * j + k)
            rows.append({"figure": "3", "seed": seed, "size": size, **res.row()})
    csv_path = write_csv(out_dir / "risk_figure3_dpsgd.csv", rows)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), sharey=True)
    for ax, name in zip(axes, priors, strict=True):
        rr = [r for r in rows if r["prior"] == name]
        e = [r["epsilon"] for r in rr]
        acc = np.array([r["accuracy"] for r in rr])
        err = [acc - [r["ci_low"] for r in rr], np.array([r["ci_high"] for r in rr]) - acc]
        ax.errorbar(e, acc, yerr=err, fmt="o-", ms=3, capsize=3,
                    label="attack (most likely digit), 95% CP")
        ax.plot(e, [r["thm35_bound"] for r in rr], "k-", label="ours (Thm 3.5, n = 1)")
        if name == "uniform":
            ax.plot(e, [r["mmc_gmu_bound"] for r in rr], "C3-.", label="MMC G_mu")
        ax.axhline(rr[0]["p_star"], color="gray", ls=":", label="prior baseline")
        ax.set(xscale="log", xlabel="epsilon (delta = 1e-5)", ylim=(0, 1.02),
               title=f"Fig. 3 (DP-SGD): {name}")
    axes[0].set_ylabel("attack accuracy")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    png = out_dir / "risk_figure3_dpsgd.png"
    save_figure(fig, png)
    plt.close(fig)
    return [csv_path, png]
