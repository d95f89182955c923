"""LiDP audits of real DP-SGD training (Pillutla et al. §5-6, Table 1; LiDP notes §2.10, §2.12, §3).

Data sets shipped or generated locally (nothing is downloaded):

* ``"digits"``: scikit-learn's 8x8 digits (1,797 x 64, 10 classes), standardised per feature;
* ``"purchase"``: a Purchase-100-like data set (:func:`purchase_like`): 600 binary features,
  100 classes; each class has a random binary prototype with feature-dependent densities and
  every example flips each prototype bit with probability ``flip`` (Purchase-100 are binary
  shopping-basket vectors clustered into 100 classes, Shokri et al. 2017).

Models: linear (softmax regression) and a 2x256 ReLU MLP (Pillutla et al. Table 1).  DP-SGD with
Poisson sampling, accounted with :func:`dpaudit.curves.dpsgd_curve` (PLD, add/remove, the
paper's and Opacus' convention) and calibrated by :func:`dpaudit.search.solve_monotone`.

Canaries (:mod:`dpaudit.papers.lidp_dpsgd`): data poisoning on the p lowest-variance
principal directions with a flipped (fixed) label, and random gradients of norm C.

:func:`fewer_trials` runs the Table 1 protocol (LiDP notes §3): the threshold is tuned on a
hold-out run; the one-canary baseline eps_hat_DP uses K = 1 and n trials; LiDP uses K = 16 and
eps_hat(n') for n' in n/8, n/4, n/2, n; n* solves eps_hat_LiDP(n*) = eps_hat_DP(n) by linear
interpolation/extrapolation; the factor is n / n*.  Multi-run training is one batched call per
group of runs (the trial engine of issue 12 would take the same ``train_many`` call as its
per-trial mechanism).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.curves.calibration import dpsgd_noise_multiplier
from dpaudit.validation import check_choice, check_count, check_positive, check_probability

__all__ = ["DATASETS", "MODELS", "load_dataset", "purchase_like", "low_variance_directions",
           "calibrate_dpsgd", "LiDPRealSetting", "audit_scores", "fewer_trials", "accuracy_vs_k"]

DATASETS = ("digits", "purchase")
MODELS = ("linear", "mlp")


def purchase_like(n: int = 2000, *, features: int = 600, classes: int = 100,
                  flip: float = 0.05, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Generated Purchase-100-like binary data (module docstring): (X (n, 600) in {0,1}, y)."""
    n = check_count("n", n, minimum=1)
    check_probability("flip", flip)
    rng = np.random.default_rng(seed)
    density = rng.beta(0.5, 4.0, size=features)              # few popular items, many rare
    protos = rng.random((classes, features)) < density
    y = rng.integers(classes, size=n)
    x = protos[y] ^ (rng.random((n, features)) < flip)
    return x.astype(np.float64), y


def load_dataset(name: str, *, n: int | None = None, seed: int = 0
                 ) -> tuple[np.ndarray, np.ndarray, int]:
    """(features, labels, classes); ``n`` examples drawn without replacement (seeded)."""
    check_choice("dataset", name, DATASETS)
    if name == "digits":
        from sklearn.datasets import load_digits

        x, y = load_digits(return_X_y=True)
        x = (x - x.mean(0)) / np.where(x.std(0) > 0, x.std(0), 1.0)
        classes = 10
    else:
        x, y = purchase_like(n or 2000, seed=seed)
        classes = 100
    if n is not None and n < x.shape[0]:
        idx = np.random.default_rng(seed).choice(x.shape[0], n, replace=False)
        x, y = x[idx], y[idx]
    return x, y.astype(np.int64), classes


def low_variance_directions(features: np.ndarray, p: int) -> np.ndarray:
    """The p principal directions of smallest variance (centred SVD; LiDP notes §2.10 (b))."""
    x = np.asarray(features, dtype=float)
    p = check_count("p", p, minimum=1)
    _, _, vt = np.linalg.svd(x - x.mean(0), full_matrices=True)
    if p > vt.shape[0]:
        raise ValueError(f"p must be <= {vt.shape[0]}, got {p}")
    return vt[vt.shape[0] - p:]


@functools.lru_cache(maxsize=128)
def calibrate_dpsgd(epsilon: float, delta: float, sampling_rate: float, steps: int) -> float:
    """Noise multiplier sigma with dpsgd_curve(sigma, q, T).epsilon(delta) = epsilon (PLD,
    add/remove; :func:`dpaudit.curves.calibration.dpsgd_noise_multiplier`)."""
    return dpsgd_noise_multiplier(epsilon, delta, sampling_rate, steps, xtol=1e-4)


@dataclass(frozen=True)
class LiDPRealSetting:
    """One audit configuration; sizes are scaled to CPU (the paper: batch 100, n = 1000)."""

    dataset: str = "digits"
    model: str = "linear"
    canary: str = "poison"
    epsilon: float = 4.0
    delta: float = 1e-5
    n_examples: int = 300
    sampling_rate: float = 0.2
    steps: int = 20
    clip: float = 1.0
    learning_rate: float = 0.5
    hidden: int = 256
    poison_components: int = 32
    poison_alpha: float = 6.0
    poison_label: int = 5

    def __post_init__(self) -> None:
        check_choice("dataset", self.dataset, DATASETS)
        check_choice("model", self.model, MODELS)
        check_choice("canary", self.canary, ("poison", "gradient"))
        check_positive("epsilon", self.epsilon)


def audit_scores(setting: LiDPRealSetting, *, runs: int, k: int, seed: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """x_scores, y_scores (runs, K) of ``runs`` DP-SGD trainings with K canaries each."""
    from dpaudit.papers.lidp_dpsgd import MLPSpec, TrainSpec, train_many

    x, y, classes = load_dataset(setting.dataset, n=setting.n_examples, seed=0)
    widths = (x.shape[1], classes) if setting.model == "linear" else \
        (x.shape[1], setting.hidden, setting.hidden, classes)
    spec = MLPSpec(widths)
    q, t = setting.sampling_rate, setting.steps
    sigma = calibrate_dpsgd(float(setting.epsilon), float(setting.delta), q, t)
    train = TrainSpec(q, t, sigma, setting.clip, setting.learning_rate)
    dirs = low_variance_directions(x, setting.poison_components)
    # gradient canaries hold (models, 2K, P) floats: chunk the runs to bound memory
    per = runs if setting.canary == "poison" else max(1, int(3e7 // (2 * k * spec.n_params)))
    xs, ys = [], []
    for j, start in enumerate(range(0, runs, per)):
        m = min(per, runs - start)
        a, b = train_many(spec, train, x, y, canary=setting.canary, k=k,
                          poison_directions=dirs, poison_alpha=setting.poison_alpha,
                          poison_label=setting.poison_label, models=m,
                          seed=seed * 7919 + j)
        xs.append(a)
        ys.append(b)
    return np.concatenate(xs), np.concatenate(ys)


def _tuned_epsilons(tune: Any, evals: list[Any], order: int
                    ) -> tuple[list[float], list[dict[str, float]]]:
    """Raw eps_hat and the x-correlation diagnostics of each of ``evals`` with the threshold
    tuned on ``tune`` (:func:`dpaudit.estimators.lifted.lifted_tuned`: the reference code's
    500-point quantile grid, Wilson intervals of the given order, delta = 1e-5, 95%)."""
    from dpaudit.estimators.lifted import lifted_tuned

    eps, diags = [], []
    for ev in evals:
        r = lifted_tuned(tune.x_scores, tune.y_scores, ev.x_scores, ev.y_scores, 1e-5, 0.95,
                         "wilson", order)
        eps.append(float(r.details["epsilon_raw"]))
        diags.append({key[2:]: float(v) for key, v in r.details.items()
                      if key.startswith("x_") and ev.x_scores.shape[1] >= 4})
    return eps, diags


def fewer_trials(setting: LiDPRealSetting, *, n: int, k: int = 16, seed: int = 0
                 ) -> dict[str, Any]:
    """The Table 1 factor n / n* for XBern orders 2 and 4 (module docstring)."""
    from dpaudit.estimators.lifted import trials_to_reach
    from dpaudit.games.lidp import LiDPScores

    n = check_count("n", n, minimum=8)
    t1 = LiDPScores(*audit_scores(setting, runs=n, k=1, seed=seed * 4 + 1))
    e1 = LiDPScores(*audit_scores(setting, runs=n, k=1, seed=seed * 4 + 2))
    tk = LiDPScores(*audit_scores(setting, runs=n, k=k, seed=seed * 4 + 3))
    ek = LiDPScores(*audit_scores(setting, runs=n, k=k, seed=seed * 4 + 4))
    (base,), _ = _tuned_epsilons(t1, [e1], 1)
    grid = [n // 8, n // 4, n // 2, n]
    out: dict[str, Any] = {"baseline_epsilon": base, "n": n, "k": k}
    for name, order in (("W2", 2), ("W4", 4)):
        subs = [LiDPScores(ek.x_scores[:m], ek.y_scores[:m]) for m in grid]
        eps_n, diags = _tuned_epsilons(tk, subs, order)
        nstar = trials_to_reach(grid, eps_n, base, space="linear") if base > 0 else math.nan
        out[f"eps_{name}"] = eps_n
        out[f"n_star_{name}"] = nstar
        out[f"factor_{name}"] = n / nstar if nstar > 0 else math.nan
        out[f"corr_{name}"] = diags[-1]
    # separability of the scores (diagnostic): mean x vs mean y score and their spread
    out["x_mean"], out["y_mean"] = float(ek.x_scores.mean()), float(ek.y_scores.mean())
    out["score_sd"] = float(ek.y_scores.std())
    out["x_mean_k1"], out["y_mean_k1"] = float(e1.x_scores.mean()), float(e1.y_scores.mean())
    return out


def accuracy_vs_k(setting: LiDPRealSetting, ks: tuple[int, ...], *, models: int, seed: int = 0
                  ) -> dict[int, np.ndarray]:
    """Held-out accuracy of ``models`` DP-SGD runs per number of canaries K (Pillutla et al. Fig.
    12:
    "adding K canaries has no impact on final test accuracy").  The models train on
    ``setting.n_examples`` examples; every other example of the data set is the test set."""
    from dpaudit.papers.lidp_dpsgd import MLPSpec, TrainSpec, train_many

    x_all, y_all, classes = load_dataset(setting.dataset, seed=0)
    idx = np.random.default_rng(0).permutation(x_all.shape[0])
    tr, te = idx[:setting.n_examples], idx[setting.n_examples:]
    x, y = x_all[tr], y_all[tr]
    widths = (x.shape[1], classes) if setting.model == "linear" else \
        (x.shape[1], setting.hidden, setting.hidden, classes)
    q, t = setting.sampling_rate, setting.steps
    sigma = calibrate_dpsgd(float(setting.epsilon), float(setting.delta), q, t)
    train = TrainSpec(q, t, sigma, setting.clip, setting.learning_rate)
    dirs = low_variance_directions(x, setting.poison_components)
    out = {}
    for j, k in enumerate(ks):
        *_, acc = train_many(MLPSpec(widths), train, x, y, canary=setting.canary, k=k,
                             poison_directions=dirs, poison_alpha=setting.poison_alpha,
                             poison_label=setting.poison_label, models=models,
                             seed=seed * 101 + j, eval_set=(x_all[te], y_all[te]))
        out[int(k)] = acc
    return out
