"""Extraction of a canary's last digit from DP-SGD-trained character n-gram models (Beyond Worst
Case §5.2).

Setting (Beyond Worst Case §5.2, BWC notes §3.3): a fully connected character n-gram network
(:mod:`dpaudit.papers.charlm`) is trained *lazily* with DP-SGD on a single 9-digit canary:
the first 8 digits are fixed (the context) and the 9th digit, the secret, is drawn from a prior
scaled down to 10 digits.  ``models`` networks per (epsilon, prior) are trained at once
(torch.func vmap); the attack outputs the digit of highest model probability and its accuracy
is reported with a Clopper-Pearson interval beside the bounds of :mod:`dpaudit.risk`.

Privacy accounting (replace-one adjacency, Beyond Worst Case §2).  The dataset is the one canary, so
every step is full batch (sampling rate 1) and replacing the canary's secret moves the sum of
clipped gradients by at most 2C.  T steps with noise std sigma C are then exactly mu-GDP with
mu = 2 sqrt(T) / sigma, i.e. one Gaussian mechanism of noise multiplier s = sigma / (2 sqrt T)
at sensitivity 1.  :func:`calibrate` finds s with the project's accountant
(:func:`dpaudit.curves.dpsgd_curve` at sampling rate 1, one step) and the root finder
:func:`dpaudit.search.solve_monotone` so that the release is (epsilon, delta)-DP, then
sigma = 2 sqrt(T) s.

Hyper-parameters (the paper tunes clip norm, learning rate and epochs per privacy level for the
lowest canary loss): with one example per step, clipping normalises the gradient whenever it is
active, so only lr * C matters; C = 1 is fixed and (steps, learning rate) is chosen from a grid
per (epsilon, prior) by the mean canary loss of ``tune_models`` separately seeded models.

Bounds: Thm 3.5 at n = 1 with p* = the prior of the attack's best guess (the heaviest of the 10
digits), beta(p*, eps) + (1 - beta) delta (BWC notes §8 item 9 (a)); Cor 3.4 beta + delta; MMC
with f = G_mu for the uniform prior (K = 10).  For per-model priors (PII: each model's canary
comes from a different masked sequence) the bound of the average accuracy is the average of the
per-model bounds.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.curves import GaussianDP
from dpaudit.curves.calibration import dpsgd_noise_multiplier
from dpaudit.risk.bounds import single_target_bound
from dpaudit.risk.comparators import mmc_bound
from dpaudit.stats.binomial import clopper_pearson
from dpaudit.validation import check_choice, check_count, check_delta, check_positive

__all__ = ["PREFIX", "LMExtractionSetting", "LMExtractionResult", "calibrate",
           "run_lm_extraction"]

#: the fixed first 8 digits of the canary (the model's context)
PREFIX = (3, 1, 4, 1, 5, 9, 2, 6)


@functools.lru_cache(maxsize=256)
def calibrate(epsilon: float, delta: float) -> float:
    """Sensitivity-1 Gaussian noise multiplier s whose release is (epsilon, delta)-DP under the
    PLD accountant (:func:`dpaudit.curves.calibration.dpsgd_noise_multiplier`, sampling rate 1,
    one step); the PLD discretisation (1e-3) is pessimistic, so s is never too small."""
    return dpsgd_noise_multiplier(epsilon, delta, 1.0, 1)


@dataclass(frozen=True)
class LMExtractionSetting:
    """One point of Fig. 3: epsilon, delta, number of models, and the tuning grid."""

    epsilon: float
    delta: float = 1e-5
    models: int = 2000
    hidden: int = 32
    steps_grid: tuple[int, ...] = (1, 4, 16)
    lr_grid: tuple[float, ...] = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
    tune_models: int = 256
    init: str = "prior"
    confidence: float = 0.95

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)
        check_delta(self.delta)
        check_count("models", self.models, minimum=1)
        check_count("hidden", self.hidden, minimum=1)
        check_count("tune_models", self.tune_models, minimum=1)
        check_choice("init", self.init, ("prior", "random"))
        if not self.steps_grid or not self.lr_grid:
            raise ValueError("steps_grid and lr_grid must not be empty")


@dataclass(frozen=True)
class LMExtractionResult:
    prior: str
    epsilon: float
    delta: float
    models: int
    correct: int
    ci: tuple[float, float]
    p_star: float            # mean prior mass of the best guess (the no-mechanism baseline)
    thm35_bound: float
    cor34_bound: float
    mmc_gmu_bound: float     # nan unless the prior is uniform
    mu: float
    noise_multiplier: float
    steps: int
    learning_rate: float
    seconds: float

    @property
    def accuracy(self) -> float:
        return self.correct / self.models

    def row(self) -> dict[str, Any]:
        return {"prior": self.prior, "epsilon": self.epsilon, "delta": self.delta,
                "models": self.models, "correct": self.correct, "accuracy": self.accuracy,
                "ci_low": self.ci[0], "ci_high": self.ci[1], "p_star": self.p_star,
                "thm35_bound": self.thm35_bound, "cor34_bound": self.cor34_bound,
                "mmc_gmu_bound": self.mmc_gmu_bound, "mu": self.mu,
                "noise_multiplier": self.noise_multiplier, "steps": self.steps,
                "learning_rate": self.learning_rate, "seconds": self.seconds}


def _draw(priors: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Each model's prior row (uniformly among the given rows) and its secret digit."""
    rows = priors[rng.integers(priors.shape[0], size=n)] if priors.shape[0] > 1 else \
        np.broadcast_to(priors, (n, priors.shape[1]))
    u = rng.random(n)[:, None]
    secrets = np.minimum((u > np.cumsum(rows, axis=1)).sum(1), priors.shape[1] - 1)
    return np.ascontiguousarray(rows), secrets


def _train(rows: np.ndarray, secrets: np.ndarray, s: float, steps: int, lr: float,
           setting: LMExtractionSetting, seed: int) -> np.ndarray:
    from dpaudit.papers.charlm import DPSGDOptions, train_canary_models

    opts = DPSGDOptions(clip=1.0, noise_multiplier=2.0 * math.sqrt(steps) * s,
                        learning_rate=lr, steps=steps)
    return train_canary_models(np.asarray(PREFIX), secrets, np.log(rows), opts,
                               vocab=rows.shape[1], hidden=setting.hidden,
                               init=setting.init, seed=seed)


def run_lm_extraction(priors: Any, setting: LMExtractionSetting, *, name: str = "prior",
                      seed: int = 0) -> LMExtractionResult:
    """Train and attack ``setting.models`` models (module docstring).

    Args:
      priors: (10,) prior over the digits sorted or not, or (S, 10) one prior per canary
        sequence (each model draws one row uniformly).
    """
    import time

    t0 = time.perf_counter()
    p = np.atleast_2d(np.asarray(priors, dtype=float))
    if p.ndim != 2 or p.shape[1] < 2 or np.any(p < 0) or \
            np.any(np.abs(p.sum(1) - 1) > 1e-6):
        raise ValueError("priors must be a probability vector (or rows of them) over >= 2 "
                         "digits")
    s = calibrate(setting.epsilon, setting.delta)
    rng = np.random.default_rng(seed)
    # ---- tuning (separate models): lowest mean canary loss
    t_rows, t_sec = _draw(p, setting.tune_models, rng)
    best = (math.inf, setting.steps_grid[0], setting.lr_grid[0])
    for j, steps in enumerate(setting.steps_grid):
        for k, lr in enumerate(setting.lr_grid):
            logits = _train(t_rows, t_sec, s, steps, lr, setting, seed=10_000 + 100 * j + k)
            z = logits - logits.max(1, keepdims=True)
            lp = z - np.log(np.exp(z).sum(1, keepdims=True))
            loss = float(-lp[np.arange(t_sec.size), t_sec].mean())
            if loss < best[0]:
                best = (loss, steps, lr)
    _, steps, lr = best
    # ---- the experiment
    rows, secrets = _draw(p, setting.models, rng)
    logits = _train(rows, secrets, s, steps, lr, setting, seed=seed)
    correct = int((logits.argmax(1) == secrets).sum())
    lo, hi = clopper_pearson(correct, setting.models, setting.confidence)
    p_star = rows.max(axis=1)
    thm35 = float(np.mean(single_target_bound(p_star, setting.epsilon, setting.delta,
                                              theorem="thm3.5")))
    cor34 = float(np.mean(single_target_bound(p_star, setting.epsilon, setting.delta,
                                              theorem="cor3.4")))
    mu = 1.0 / s
    uniform = bool(np.allclose(p, 1.0 / p.shape[1]))
    mmc = float(mmc_bound(p.shape[1], GaussianDP(mu))) if uniform else math.nan
    return LMExtractionResult(name, float(setting.epsilon), float(setting.delta),
                              setting.models, correct, (float(lo), float(hi)),
                              float(p_star.mean()), thm35, cor34, mmc, mu,
                              2.0 * math.sqrt(steps) * s, int(steps), float(lr),
                              time.perf_counter() - t0)
