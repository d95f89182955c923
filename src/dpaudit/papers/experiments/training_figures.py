"""Runner reproducing Bits Transmission Figs. 9-10 and Tight One-Run Fig. 6 on REAL DP-SGD training.

The papers audit DP-SGD white box with Dirac gradient canaries (Bits Transmission §6.4-6.5, Tight
One-Run
§6.2 / App. A; BT notes §6.4-6.5, TOR notes §3.4).  Here the training is real and scaled to a
CPU: Opacus DP-SGD on scikit-learn's digits (MLP), canaries planted into Opacus's per-sample
gradients before clipping and noise (:mod:`dpaudit.training`).  For each number of canaries n
and each theoretical epsilon (sigma solved from ``dpsgd_curve(sigma, q, T)`` at delta = 1e-5),
ONE training run gives the canary scores (optimal likelihood-ratio score), and every method
bounds epsilon from the *same* scores: ours (Tight One-Run "tight", Bits Transmission "bits") vs
Steinke et
al. vs Mahloujifar et al. (``audit_training`` / ``audit_one_run``, GDP null family).  Panel
"backprop" repeats the correct-training panel with the backpropagation-clipping bug of
Bits Transmission §6.5 (Fig. 10): every claimed epsilon is violated.

Sizes: tiny (seconds; the test suite) n = 200, T = 100, eps in {4}; small n = 1,000,
T = 300, eps in {1, 2, 4, 8, 16}; full n in {1,000, 10,000}, T = 1,000, three seeds (an MLP
with 2,048 hidden units for n = 10^4, so that every canary has a nearly silent coordinate).
q = 0.05, C = 1.  Writes ``training-dpsgd.csv`` (every seed x method) and ``.png``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpaudit.papers.experiments.plotting import plot_panels, resolve_size, write_csv
from dpaudit.papers.experiments.registry import experiment

__all__ = ["TrainingFigureSize", "SIZES_TRAINING", "run_training_dpsgd"]

DELTA = 1e-5
Q = 0.05


@dataclass(frozen=True)
class TrainingFigureSize:
    canaries: tuple[int, ...]
    epsilons: tuple[float, ...]
    flawed_epsilons: tuple[float, ...]
    steps: int
    reps: int

    def hidden(self, n: int) -> int:
        """Hidden units so that 3 x hidden (always-zero pixels) covers most canaries."""
        return 80 if n <= 240 else 256 if n <= 1000 else 2048


SIZES_TRAINING = {
    "tiny": TrainingFigureSize((200,), (4.0,), (4.0,), 100, 1),
    "small": TrainingFigureSize((1000,), (1.0, 2.0, 4.0, 8.0, 16.0), (1.0, 4.0, 16.0), 300, 1),
    "full": TrainingFigureSize((1000, 10000), (1.0, 2.0, 4.0, 8.0, 16.0),
                               (1.0, 2.0, 4.0, 8.0, 16.0), 1000, 3),
}

COLUMNS = ("figure", "panel", "n", "theory_eps", "sigma", "q", "steps", "rep", "seed", "flaw",
           "method", "epsilon", "ratio", "violation", "opacus_epsilon", "test_accuracy",
           "seconds")


@experiment("training-dpsgd", "REAL DP-SGD (Opacus, digits MLP) white box with Dirac canaries: "
            "ours vs Steinke vs Mahloujifar; backprop-clipping panel",
            "Bits Transmission Figs. 9-10, Tight One-Run Fig. 6 (real training, CPU scale)")
def run_training_dpsgd(out_dir: Path, *, full: bool = False, seed: int = 0,
                       size: str | None = None) -> list[Path]:
    from dpaudit.training import TrainingConfig, sigma_for_epsilon, train_audit

    sz = SIZES_TRAINING[resolve_size(full, size)]
    rows: list[dict[str, Any]] = []
    plan: list[tuple[int, float, str | None]] = [(n, eps, None) for n in sz.canaries
                                                 for eps in sz.epsilons]
    plan += [(n, eps, "backprop_clipping") for n in sz.canaries[:1] for eps in sz.flawed_epsilons]
    for n, eps, flaw in plan:
        sigma = sigma_for_epsilon(eps, Q, sz.steps, DELTA)
        for rep in range(sz.reps):
            run_seed = seed * 1000 + rep
            t0 = time.perf_counter()
            audit = train_audit(TrainingConfig(canaries=n, hidden=sz.hidden(n), canary_branch=False,
                                               noise_multiplier=sigma, sampling_rate=Q,
                                               steps=sz.steps, flawed=flaw, seed=run_seed),
                                delta=DELTA, family="gdp")  # the papers' null (an assumption)
            secs = time.perf_counter() - t0
            assert audit.run is not None
            theory = audit.claimed_epsilon
            for r in audit.results:
                rows.append({"figure": "seed000-fig10" if flaw else "seed000-fig9/seed001-fig6",
                             "panel": f"backprop n={n}" if flaw else f"n={n}", "n": n,
                             "theory_eps": theory, "sigma": sigma, "q": Q, "steps": sz.steps,
                             "rep": rep, "seed": run_seed, "flaw": flaw or "",
                             "method": r.method, "epsilon": r.epsilon,
                             "ratio": r.epsilon / theory, "violation": r.epsilon > theory,
                             "opacus_epsilon": audit.opacus_epsilon,
                             "test_accuracy": audit.run.test_accuracy, "seconds": secs})
    out_dir.mkdir(parents=True, exist_ok=True)
    csv = write_csv(out_dir / "training-dpsgd.csv", rows, COLUMNS)
    png = plot_panels(out_dir / "training-dpsgd.png", rows, panel_key="panel",
                      x_key="theory_eps", xlabel="theoretical epsilon (dpsgd_curve)",
                      xlog=False, diagonal=True, theory_key=None,
                      suptitle="Real DP-SGD (Opacus, digits MLP), white box, Dirac canaries")
    return [csv, png]
