"""Runners reproducing Tight One-Run ("Tight Privacy Audit in One Run"), Figures 3-12.

Settings follow TOR notes §3-§4 (the paper's figures lost their data and most of their
parameters; where the text is silent the values below are documented choices):

* 95% confidence, epsilon stated at delta = 1e-5 (authors' code), white-box observations.
* "ours" = ``E.tight`` (exact mode unless stated), "xiang" = ``E.bits`` with the one-sided
  Clopper-Pearson bound (= ``E.tight`` at r = n, TOR notes §5.3), "steinke" = ``E.steinke`` on the
  *same* released guesses (n, r, correct = r - u), "mahloujifar" = ``E.mahloujifar`` on the same.
* Repetitions: the paper's count is lost; full size uses 20 seeds (as Bits Transmission), small 5.

Decisions where the paper is silent (all documented in docs/reproduction.md):

* Figs. 3/4/9: "ours" releases the r = n/2 most confident guesses (|LLR| order, random
  tie-break); Fig. 5: k = n/20 per side (Steinke's extremes rule); Fig. 6: k = n/4 per side
  (the paper's 2500 + 2500, n = 10^4 at full size).
* Fig. 6 (DP-SGD): simulator with q = 0.1, T = 100, sigma grid, optimal LLR score, GDP null
  family for ours and Mahloujifar (TOR notes §3.4 leaves the family open); the claimed epsilon
  comes from the PLD accountant, and the GDP-family ceiling is recorded as a reference.
* Fig. 7: eps = 2, delta in {1e-5, 1e-3, 1e-2}, r = n.  Figs. 8-9: (mu, q) in {(1, .5),
  (2, .2)} (the authors' recorded settings), ordered-pair SGM null.  Fig. 10: (1, delta) null
  with delta in {1e-5, 1e-2}.  Figs. 11-12: Gaussian mu = 1, delta = 1e-5.

Every runner writes ``<name>.csv`` (one row per setting x seed x method: every seed's number)
and ``<name>.png`` (mean +- std over seeds per method, theoretical epsilon dashed).  Pass
``size="tiny"`` for the test suite, default "small" (about a minute on 2 cores), ``full=True``
for the paper's sizes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.curves import EpsDeltaDP, GaussianDP, LaplaceDP, SubsampledGaussianDP
from dpaudit.papers.experiments.plotting import (
    plot_panels,
    resolve_size,
    save_figure,
    seed_sequence,
    write_csv,
)
from dpaudit.papers.experiments.registry import experiment

__all__ = [
    "DELTA", "CONFIDENCE", "COLUMNS", "DPSGDConfig", "gdp_ceiling", "observe", "top_r_errors",
    "extreme_correct", "steinke_k_sweep",
]

DELTA = 1e-5
CONFIDENCE = 0.95

COLUMNS = (
    "figure", "panel", "mu", "eps", "q", "null_delta", "sigma", "claimed_eps", "n", "r", "rep",
    "seed", "method", "epsilon", "theory_eps", "ratio", "u", "correct", "accuracy", "fitted",
    "mode", "delta", "confidence", "seconds", "gdp_ceiling",
)


# --------------------------------------------------------------------------- observations
def top_r_errors(truth: np.ndarray, guess: np.ndarray, score: np.ndarray, r: int,
                 rng: np.random.Generator) -> int:
    """Errors u among the r released guesses with the highest scores (Tight One-Run Eq. 7).

    Ties in score are broken by an independent uniform priority (TOR notes §2.6), so the
    selection never looks at the secret bits.
    """
    n = truth.size
    if r >= n:
        return int(np.count_nonzero(truth != guess))
    order = np.lexsort((rng.random(n), score))  # ascending by score, random among ties
    rel = order[n - r:]
    return int(np.count_nonzero(truth[rel] != guess[rel]))


def extreme_correct(truth: np.ndarray, score: np.ndarray, k_plus: int, k_minus: int,
                    rng: np.random.Generator) -> int:
    """Steinke et al.'s guessing rule: the k+ highest scores guess 1, the k- lowest guess 0.

    Returns the number of correct guesses among the r = k+ + k- released ones.
    """
    n = truth.size
    order = np.lexsort((rng.random(n), score))
    low, high = order[:k_minus], order[n - k_plus:] if k_plus > 0 else order[:0]
    return int(np.count_nonzero(truth[high] == 1) + np.count_nonzero(truth[low] == 0))


def steinke_k_sweep(truth: np.ndarray, score: np.ndarray, ks: Sequence[int],
                    rng: np.random.Generator) -> list[tuple[int, int]]:
    """(r, correct) for k+ = k- = k over ``ks`` (one sort, cumulative counts)."""
    n = truth.size
    order = np.lexsort((rng.random(n), score))
    t = truth[order]
    ones_from_top = np.concatenate(([0], np.cumsum(t[::-1] == 1)))
    zeros_from_bottom = np.concatenate(([0], np.cumsum(t == 0)))
    out = []
    for k in ks:
        k = int(min(k, n // 2))
        out.append((2 * k, int(ones_from_top[k] + zeros_from_bottom[k])))
    return out


def _mechanisms() -> Any:
    from dpaudit import mechanisms

    return mechanisms


def observe(mech: Any, n: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """One run of a :mod:`dpaudit.mechanisms` simulator on n uniform bits.

    Returns (truth, guess, confidence, signed score): the mechanism's decoder score is the
    log-likelihood ratio (or a monotone transform centred at the MAP threshold), so the MAP
    guess is ``score > 0`` and ``|score|`` orders guesses by confidence (TOR notes §2.5).
    """
    obs = mech.simulate(n, rng)
    x = np.asarray(obs.member, dtype=np.int64)
    signed = np.asarray(obs.score, dtype=float)
    return x, (signed > 0).astype(np.int64), np.abs(signed), signed


def _gaussian_bits(n: int, mu: float, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Tight One-Run Eq. 27: y = x + N(0, 1/mu^2); guess 1[y > 1/2]; score |y - 1/2| (prop. |L|)."""
    return observe(_mechanisms().GaussianMechanism(mu=mu), n, rng)


def _laplace_bits(n: int, eps: float, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Tight One-Run Eq. 28: y = x + Lap(0, 1/eps); guess 1[y > 1/2]; score |y - 1/2|."""
    return observe(_mechanisms().LaplaceMechanism(eps=eps), n, rng)


def _rr_bits(n: int, eps: float, delta: float,
             rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """4-output randomized response with a delta leak (TOR notes §3.5, BT notes §6.2).

    Scores +-eps, +-"infinity" for the leak symbols, so the signed score orders outputs
    1-dagger > 1 > 0 > 0-dagger (BT notes §7.1); ties are broken at random downstream.
    """
    return observe(_mechanisms().RandomizedResponse(eps=eps, delta=delta), n, rng)


def _sgm_bits(n: int, mu: float, q: float, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Tight One-Run Eq. 29: y = Sub_q(x) + N(0, 1/mu^2); MAP guess; score |L(y)| (TOR notes
    §3.6)."""
    return observe(_mechanisms().SubsampledGaussianMechanism(mu=mu, q=q), n, rng)


# --------------------------------------------------------------------------- estimator calls
def _E() -> Any:
    from dpaudit import estimators as E

    return E


def _fitted(res: Any) -> float:
    params = dict(getattr(res, "params", {}) or {})
    for key in ("mu", "eps", "theta", "sigma"):
        if key in params:
            return float(params[key])
    return math.nan


def _row(base: dict[str, Any], method: str, res: Any, t0: float, **extra: Any) -> dict[str, Any]:
    eps = float(res.epsilon)
    th = base.get("theory_eps", math.nan)
    return {**base, "method": method, "epsilon": eps,
            "ratio": eps / th if th and th > 0 else math.nan, "fitted": _fitted(res),
            "delta": float(res.delta), "confidence": float(res.confidence),
            "seconds": time.perf_counter() - t0, **extra}


def _tight(base: dict[str, Any], *, n: int, r: int, u: int, family: Any, delta: float = DELTA,
           mode: str = "exact", method: str = "tight") -> dict[str, Any]:
    t0 = time.perf_counter()
    res = _E().tight(n=n, r=r, u=u, family=family, delta=delta, confidence=CONFIDENCE, mode=mode)
    return _row(base, method, res, t0, mode=mode)


def _steinke(base: dict[str, Any], *, m: int, r: int, correct: int, delta: float = DELTA,
             method: str = "steinke") -> dict[str, Any]:
    t0 = time.perf_counter()
    res = _E().steinke(m=m, guesses=r, correct=correct, delta=delta, confidence=CONFIDENCE)
    return _row(base, method, res, t0)


def _mahloujifar(base: dict[str, Any], *, m: int, r: int, correct: int, family: Any = "gdp",
                 delta: float = DELTA) -> dict[str, Any]:
    t0 = time.perf_counter()
    res = _E().mahloujifar(m=m, guesses=r, correct=correct, delta=delta, confidence=CONFIDENCE,
                           family=family)
    return _row(base, "mahloujifar", res, t0)


def _bits(base: dict[str, Any], *, n: int, errors: int, family: Any, delta: float = DELTA,
          ci: str = "clopper_pearson", method: str = "xiang") -> dict[str, Any]:
    t0 = time.perf_counter()
    res = _E().bits(n=n, errors=errors, family=family, delta=delta, confidence=CONFIDENCE, ci=ci)
    return _row(base, method, res, t0, mode=ci)


def _finish(out_dir: Path, name: str, rows: list[dict[str, Any]],
            plot: Callable[[Path, list[dict[str, Any]]], Path]) -> list[Path]:
    csv_path = write_csv(Path(out_dir) / f"{name}.csv", rows, COLUMNS)
    png = plot(Path(out_dir) / f"{name}.png", rows)
    return [csv_path, png]


# --------------------------------------------------------------------------- Figs 3-4
@dataclass(frozen=True)
class SweepConfig:
    """A sweep over n for several mechanism parameters, ``reps`` seeds each."""

    params: tuple[float, ...]
    ns: tuple[int, ...]
    reps: int
    release: float = 0.5  # r / n for "ours"

    @classmethod
    def preset(cls, size: str, params: dict[str, tuple[float, ...]], release: float = 0.5,
               ) -> SweepConfig:
        ns = {"tiny": (200, 2000), "small": (100, 1000, 10_000),
              "full": (100, 1000, 10_000, 100_000)}[size]
        reps = {"tiny": 2, "small": 5, "full": 20}[size]
        return cls(params[size], ns, reps, release)


def _special(out_dir: Path, *, name: str, figure: str, size: str, seed: int, mech: str,
             ) -> list[Path]:
    if mech == "gaussian":
        params = {"tiny": (1.0,), "small": (0.5, 1.0, 2.0), "full": (0.5, 1.0, 2.0)}
        cfg = SweepConfig.preset(size, params)
        family, key = "gdp", "mu"
    else:
        params = {"tiny": (1.0,), "small": (1.0, 2.0, 4.0), "full": (1.0, 2.0, 4.0)}
        cfg = SweepConfig.preset(size, params)
        family, key = "laplace", "eps"
    rows: list[dict[str, Any]] = []
    for pi, theta in enumerate(cfg.params):
        curve = GaussianDP(theta) if mech == "gaussian" else LaplaceDP(theta)
        theory = curve.epsilon(DELTA)
        for n in cfg.ns:
            r = max(1, int(round(cfg.release * n)))
            for rep in range(cfg.reps):
                rng = seed_sequence(seed, 3 if mech == "gaussian" else 4, pi, n, rep)
                sim = _gaussian_bits if mech == "gaussian" else _laplace_bits
                x, guess, score, _ = sim(n, theta, rng)
                u = top_r_errors(x, guess, score, r, rng)
                errors = int(np.count_nonzero(x != guess))
                base = {"figure": figure, "panel": f"{key}={theta:g}", key: theta, "n": n,
                        "rep": rep, "seed": seed, "theory_eps": theory}
                rows.append(_tight({**base, "r": r, "u": u, "correct": r - u,
                                    "accuracy": 1 - u / r}, n=n, r=r, u=u, family=family))
                rows.append(_bits({**base, "r": n, "u": errors, "correct": n - errors,
                                   "accuracy": 1 - errors / n}, n=n, errors=errors,
                                  family=family))
                rows.append(_steinke({**base, "r": r, "u": u, "correct": r - u,
                                      "accuracy": 1 - u / r}, m=n, r=r, correct=r - u))

    def plot(path: Path, rs: list[dict[str, Any]]) -> Path:
        return plot_panels(path, rs, panel_key="panel", x_key="n", title=str,
                           suptitle=f"Tight One-Run {figure}: {mech} mechanism, special case "
                                    f"(95% conf., delta={DELTA:g}, ours r = {cfg.release:g} n)",
                           labels={"tight": f"ours (tight, r={cfg.release:g}n)",
                                   "xiang": "Xiang et al. (all n guesses)",
                                   "steinke": "Steinke et al. (same r guesses)"})

    return _finish(out_dir, name, rows, plot)


@experiment("tight-gaussian-special", "Gaussian mechanism, independent guesses: ours vs "
            "Xiang vs Steinke over n", "Tight One-Run Fig. 3")
def run_gaussian_special(out_dir: Path, *, full: bool = False, seed: int = 0,
                         size: str | None = None) -> list[Path]:
    return _special(out_dir, name="tight-gaussian-special", figure="Fig. 3",
                    size=resolve_size(full, size), seed=seed, mech="gaussian")


@experiment("tight-laplace-special", "Laplace mechanism, independent guesses: ours vs Xiang "
            "vs Steinke over n", "Tight One-Run Fig. 4")
def run_laplace_special(out_dir: Path, *, full: bool = False, seed: int = 0,
                        size: str | None = None) -> list[Path]:
    return _special(out_dir, name="tight-laplace-special", figure="Fig. 4",
                    size=resolve_size(full, size), seed=seed, mech="laplace")


# --------------------------------------------------------------------------- Fig 5
@experiment("tight-gaussian", "Gaussian mechanism, general case (k smallest -> 0, k largest "
            "-> 1): ours vs Steinke vs Mahloujifar over n", "Tight One-Run Fig. 5")
def run_gaussian_general(out_dir: Path, *, full: bool = False, seed: int = 0,
                         size: str | None = None) -> list[Path]:
    size = resolve_size(full, size)
    params = {"tiny": (1.0,), "small": (0.5, 1.0, 2.0), "full": (0.5, 1.0, 2.0)}
    cfg = SweepConfig.preset(size, params, release=0.1)
    rows: list[dict[str, Any]] = []
    for pi, mu in enumerate(cfg.params):
        theory = GaussianDP(mu).epsilon(DELTA)
        for n in cfg.ns:
            k = max(1, int(round(cfg.release * n / 2)))
            r = 2 * k
            for rep in range(cfg.reps):
                rng = seed_sequence(seed, 5, pi, n, rep)
                x, _, _, signed = _gaussian_bits(n, mu, rng)
                correct = extreme_correct(x, signed, k, k, rng)
                base = {"figure": "Fig. 5", "panel": f"mu={mu:g}", "mu": mu, "n": n, "r": r,
                        "rep": rep, "seed": seed, "theory_eps": theory, "u": r - correct,
                        "correct": correct, "accuracy": correct / r}
                rows.append(_tight(base, n=n, r=r, u=r - correct, family="gdp"))
                rows.append(_steinke(base, m=n, r=r, correct=correct))
                rows.append(_mahloujifar(base, m=n, r=r, correct=correct))

    def plot(path: Path, rs: list[dict[str, Any]]) -> Path:
        return plot_panels(path, rs, panel_key="panel", x_key="n", title=str,
                           suptitle=f"Tight One-Run Fig. 5: Gaussian, general case, k = "
                                    f"{cfg.release / 2:g} n per side (95% conf., "
                                    f"delta={DELTA:g})")

    return _finish(out_dir, "tight-gaussian", rows, plot)


# --------------------------------------------------------------------------- DP-SGD (Fig 6)
@dataclass(frozen=True)
class DPSGDConfig:
    """White-box DP-SGD with Dirac canaries (BT notes §6.4, TOR notes §3.4).

    The papers train real models (CIFAR-10) and do not give q, T or sigma; we use the
    simulator of :class:`dpaudit.mechanisms.DPSGDSimulator` with Poisson rate q = 0.1, T = 100
    steps, no background gradients, and the optimal per-canary log-likelihood-ratio score
    (``score_kind="lr"``).  The x-axis is the claimed epsilon at delta = 1e-5 of
    ``dpsgd_curve(sigma, q, T)`` (dp_accounting PLD) for a grid of noise multipliers sigma.
    """

    sigmas: tuple[float, ...]
    ns: tuple[int, ...]
    reps: int
    sampling_rate: float = 0.1
    steps: int = 100
    score_kind: str = "lr"

    @classmethod
    def preset(cls, size: str, ns: dict[str, tuple[int, ...]]) -> DPSGDConfig:
        sigmas = {"tiny": (1.5,), "small": (0.8, 1.0, 1.5, 2.0, 3.0),
                  "full": (0.7, 0.8, 1.0, 1.5, 2.0, 3.0)}[size]
        reps = {"tiny": 2, "small": 3, "full": 20}[size]
        return cls(sigmas, ns[size], reps)

    def mechanism(self, sigma: float, *, flaw: str | None = None, batch_size: int = 1) -> Any:
        M = _mechanisms()
        if flaw == "backprop_clipping":
            return M.backprop_clipping_dpsgd(noise_multiplier=sigma,
                                             sampling_rate=self.sampling_rate, steps=self.steps,
                                             batch_size=batch_size, score_kind=self.score_kind)
        return M.DPSGDSimulator(noise_multiplier=sigma, sampling_rate=self.sampling_rate,
                                steps=self.steps, score_kind=self.score_kind)


def gdp_ceiling(curve: Any, delta: float = DELTA) -> float:
    """Largest epsilon a GDP-family audit can reach on a mechanism with this curve.

    A GDP-family bound is driven by the error rate, which is at least e*(curve); the GDP curve
    with the same optimal error, mu = -2 Phi^{-1}(e*), has epsilon(delta) below the DP-SGD
    PLD epsilon (the composed subsampled Gaussian has heavier privacy-loss tails), so this is
    the asymptote of every GDP-family audit of DP-SGD (BT notes §6.4's suggested family).
    """
    from scipy.special import ndtri

    return float(GaussianDP(float(-2.0 * ndtri(curve.bit_error()))).epsilon(delta))


@experiment("tight-dpsgd", "White-box DP-SGD (simulated, Dirac canaries, k+ = k- guesses): "
            "ours vs Steinke vs Mahloujifar over the claimed epsilon", "Tight One-Run Fig. 6")
def run_dpsgd(out_dir: Path, *, full: bool = False, seed: int = 0,
              size: str | None = None) -> list[Path]:
    size = resolve_size(full, size)
    cfg = DPSGDConfig.preset(size, {"tiny": (1000,), "small": (2000,), "full": (10_000,)})
    # paper: 2500 smallest -> 0 and 2500 largest -> 1 (r = 5000); same fraction r = n/2 here.
    rows: list[dict[str, Any]] = []
    for si, sigma in enumerate(cfg.sigmas):
        mech = cfg.mechanism(sigma)
        claimed = mech.claimed_epsilon(DELTA)
        ceiling = gdp_ceiling(mech.claimed_curve)
        for n in cfg.ns:
            k = n // 4
            r = 2 * k
            for rep in range(cfg.reps):
                rng = seed_sequence(seed, 6, si, n, rep)
                x, _, _, signed = observe(mech, n, rng)
                correct = extreme_correct(x, signed, k, k, rng)
                base = {"figure": "Fig. 6", "panel": f"n={n}, r={r}", "n": n, "r": r,
                        "sigma": sigma, "claimed_eps": claimed, "rep": rep, "seed": seed,
                        "theory_eps": claimed, "u": r - correct, "correct": correct,
                        "accuracy": correct / r, "gdp_ceiling": ceiling}
                rows.append(_tight(base, n=n, r=r, u=r - correct, family="gdp"))
                rows.append(_steinke(base, m=n, r=r, correct=correct))
                rows.append(_mahloujifar(base, m=n, r=r, correct=correct))
            rows.append({"figure": "Fig. 6", "panel": f"n={n}, r={r}", "n": n, "r": r,
                         "sigma": sigma, "claimed_eps": claimed, "rep": 0, "seed": seed,
                         "method": "gdp_ceiling", "epsilon": ceiling, "theory_eps": claimed})

    def plot(path: Path, rs: list[dict[str, Any]]) -> Path:
        return plot_panels(path, rs, panel_key="panel", x_key="claimed_eps", title=str,
                           xlog=False, xlabel="claimed epsilon (PLD accountant, delta=1e-5)",
                           labels={"gdp_ceiling": "GDP-family ceiling (e*-matched GDP)"},
                           theory_label="claimed eps",
                           suptitle=f"Tight One-Run Fig. 6: white-box DP-SGD\n"
                                    f"(q={cfg.sampling_rate:g}, T={cfg.steps}, simulated; "
                                    "95% conf.)")

    return _finish(out_dir, "tight-dpsgd", rows, plot)


# --------------------------------------------------------------------------- Fig 7
@experiment("tight-rr", "Randomized response (eps=2) with large delta: ours vs Steinke over n",
            "Tight One-Run Fig. 7")
def run_rr(out_dir: Path, *, full: bool = False, seed: int = 0,
           size: str | None = None) -> list[Path]:
    size = resolve_size(full, size)
    eps = 2.0
    deltas = {"tiny": (1e-5, 1e-2), "small": (1e-5, 1e-3, 1e-2),
              "full": (1e-5, 1e-3, 1e-2)}[size]
    ns = {"tiny": (100, 2000), "small": (100, 1000, 10_000),
          "full": (100, 1000, 10_000, 100_000)}[size]
    reps = {"tiny": 2, "small": 5, "full": 20}[size]
    rows: list[dict[str, Any]] = []
    for di, d in enumerate(deltas):
        for n in ns:
            for rep in range(reps):
                rng = seed_sequence(seed, 7, di, n, rep)
                x, guess, _, _ = _rr_bits(n, eps, d, rng)
                u = int(np.count_nonzero(x != guess))
                base = {"figure": "Fig. 7", "panel": f"delta={d:g}", "eps": eps,
                        "null_delta": d, "n": n, "r": n, "rep": rep, "seed": seed,
                        "theory_eps": eps, "u": u, "correct": n - u, "accuracy": 1 - u / n}
                rows.append(_tight(base, n=n, r=n, u=u, family="eps_delta", delta=d))
                rows.append(_steinke(base, m=n, r=n, correct=n - u, delta=d))

    def plot(path: Path, rs: list[dict[str, Any]]) -> Path:
        return plot_panels(path, rs, panel_key="panel", x_key="n", title=str,
                           suptitle=f"Tight One-Run Fig. 7: randomized response "
                                    f"({eps:g}, delta)-DP, all n guesses released (95% conf.)")

    return _finish(out_dir, "tight-rr", rows, plot)


# --------------------------------------------------------------------------- Figs 8-9
@experiment("tight-sgm", "Sub-sampled Gaussian: base pair (Fig. 8) and ours vs Steinke over n "
            "(Fig. 9)", "Tight One-Run Figs. 8-9")
def run_sgm(out_dir: Path, *, full: bool = False, seed: int = 0,
            size: str | None = None) -> list[Path]:
    size = resolve_size(full, size)
    settings = {"tiny": ((1.0, 0.5),), "small": ((1.0, 0.5), (2.0, 0.2)),
                "full": ((1.0, 0.5), (2.0, 0.2))}[size]
    ns = {"tiny": (200, 2000), "small": (100, 1000, 10_000),
          "full": (100, 1000, 10_000, 100_000)}[size]
    reps = {"tiny": 2, "small": 5, "full": 20}[size]
    release = 0.5
    rows: list[dict[str, Any]] = []
    for si, (mu, q) in enumerate(settings):
        theory = SubsampledGaussianDP(mu, q).epsilon(DELTA)
        for n in ns:
            r = max(1, int(round(release * n)))
            for rep in range(reps):
                rng = seed_sequence(seed, 9, si, n, rep)
                x, guess, score, _ = _sgm_bits(n, mu, q, rng)
                u = top_r_errors(x, guess, score, r, rng)
                base = {"figure": "Fig. 9", "panel": f"mu={mu:g}, q={q:g}", "mu": mu, "q": q,
                        "n": n, "r": r, "rep": rep, "seed": seed, "theory_eps": theory,
                        "u": u, "correct": r - u, "accuracy": 1 - u / r}
                rows.append(_tight(base, n=n, r=r, u=u, family=("subsampled_gaussian", q)))
                rows.append(_steinke(base, m=n, r=r, correct=r - u))

    def plot(path: Path, rs: list[dict[str, Any]]) -> Path:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        plot_panels(path, rs, panel_key="panel", x_key="n", title=str,
                    suptitle=f"Tight One-Run Fig. 9: sub-sampled Gaussian, ours r = {release:g} n "
                             f"(95% conf., delta={DELTA:g})")
        # Fig. 8: the SGM pair's trade-off (ordered) and its symmetrised envelope, added as a
        # companion figure next to the audit figure.
        fig, ax = plt.subplots(figsize=(4.2, 3.8))
        a = np.linspace(0, 1, 401)
        for mu, q in settings:
            ax.plot(a, SubsampledGaussianDP(mu, q).tradeoff(a), label=f"f_q, mu={mu:g}, q={q:g}")
            ax.plot(a, SubsampledGaussianDP(mu, q, symmetrized=True).tradeoff(a), ls=":",
                    label=f"C_q (symmetrised), mu={mu:g}, q={q:g}")
        ax.plot(a, 1 - a, color="gray", lw=0.8)
        ax.set_xlabel("type I error alpha")
        ax.set_ylabel("type II error f(alpha)")
        ax.set_title("Tight One-Run Fig. 8: SGM trade-off functions", fontsize=10)
        ax.legend(fontsize=7)
        fig.tight_layout()
        save_figure(fig, path.with_name(path.stem + "-tradeoff.png"))
        plt.close(fig)
        return path

    paths = _finish(out_dir, "tight-sgm", rows, plot)
    return [*paths, Path(out_dir) / "tight-sgm-tradeoff.png"]


# --------------------------------------------------------------------------- Fig 10
@experiment("tight-ablation-pvalue", "p-value vs number of wrong guesses under an (eps, delta) "
            "null: ours (exact / paper / Hoeffding mode) vs Steinke, small and large delta",
            "Tight One-Run Fig. 10")
def run_ablation_pvalue(out_dir: Path, *, full: bool = False, seed: int = 0,
                        size: str | None = None) -> list[Path]:
    from dpaudit.estimators.steinke import steinke_p_value

    size = resolve_size(full, size)
    E = _E()
    eps = 1.0
    n, r = {"tiny": (1000, 100), "small": (1000, 100), "full": (10_000, 1000)}[size]
    deltas = (1e-5, 1e-2)
    n_u = {"tiny": 6, "small": 21, "full": 41}[size]
    e_star = EpsDeltaDP(eps, 1e-5).bit_error()
    # u from 0 to 1.2 E[u]: the interesting region is where the p-values cross 0.05.
    us = np.unique(np.linspace(0, int(1.2 * e_star * r), n_u).round().astype(int))
    modes = ("exact", "paper", "hoeffding")
    rows: list[dict[str, Any]] = []
    for d in deltas:
        curve = EpsDeltaDP(eps, d)
        for u in us:
            base = {"figure": "Fig. 10", "panel": f"delta={d:g}", "eps": eps, "null_delta": d,
                    "n": n, "r": r, "rep": 0, "seed": seed, "u": int(u),
                    "correct": int(r - u), "accuracy": 1 - u / r, "delta": d,
                    "confidence": CONFIDENCE}
            for mode in modes:
                t0 = time.perf_counter()
                p = float(E.tight_p_value(curve, n=n, r=r, u=int(u), mode=mode))
                rows.append({**base, "method": f"tight_{mode}", "mode": mode, "p_value": p,
                             "seconds": time.perf_counter() - t0})
            t0 = time.perf_counter()
            p = float(steinke_p_value(m=n, guesses=r, correct=int(r - u), eps=eps, delta=d))
            rows.append({**base, "method": "steinke", "p_value": p,
                         "seconds": time.perf_counter() - t0})

    def plot(path: Path, rs: list[dict[str, Any]]) -> Path:
        return plot_panels(path, rs, panel_key="panel", x_key="u", y_key="p_value",
                           theory_key=None, xlog=False, ylog=True, title=str,
                           xlabel=f"number of wrong guesses u (n={n}, r={r})",
                           ylabel="p-value of the null", ylim=(1e-12, 2.0),
                           suptitle=f"Tight One-Run Fig. 10: null "
                           f"({eps:g}, delta)-DP; dotted = 0.05 significance",
                           hlines={f"delta={d:g}": ((1 - CONFIDENCE, "0.05"),) for d in deltas})

    csv_path = write_csv(Path(out_dir) / "tight-ablation-pvalue.csv", rows,
                         ("figure", "panel", "eps", "null_delta", "n", "r", "rep", "u", "correct",
                          "accuracy", "method", "mode", "p_value", "delta", "confidence",
                          "seconds", "seed"))
    return [csv_path, plot(Path(out_dir) / "tight-ablation-pvalue.png", rows)]


# --------------------------------------------------------------------------- Figs 11-12
def _accuracy_rows(rows: list[dict[str, Any]], x_key: str) -> list[dict[str, Any]]:
    """Plot rows: epsilon panel (all methods) + an accuracy panel (one series: v / r)."""
    out = [{**r, "quantity": "a) epsilon lower bound", "value": r["epsilon"]} for r in rows]
    seen = set()
    for r in rows:
        key = (r[x_key], r["rep"])
        if key in seen or r["method"] != "tight":
            continue
        seen.add(key)
        out.append({x_key: r[x_key], "rep": r["rep"], "method": "accuracy v/r",
                    "quantity": "b) guessing accuracy", "value": r["accuracy"], "theory_eps": ""})
    return out


def _ablation(out_dir: Path, *, name: str, figure: str, size: str, seed: int, vary: str,
              ) -> list[Path]:
    mu = 1.0
    theory = GaussianDP(mu).epsilon(DELTA)
    if vary == "n":
        r = {"tiny": 100, "small": 200, "full": 1000}[size]
        grid = {"tiny": (1000, 100_000), "small": (1000, 10_000, 100_000, 300_000),
                "full": (2000, 10_000, 100_000, 1_000_000)}[size]
        grid = tuple(g for g in grid if g >= r)
    else:
        n_fixed = {"tiny": 2000, "small": 10_000, "full": 10_000}[size]
        grid = {"tiny": (20, 200, 2000),
                "small": (20, 100, 500, 1000, 2500, 5000, 10_000),
                "full": (20, 50, 100, 200, 500, 1000, 2500, 5000, 7500, 10_000)}[size]
    reps = {"tiny": 2, "small": 5, "full": 20}[size]
    rows: list[dict[str, Any]] = []
    for gi, g in enumerate(grid):
        n, rr = (g, r) if vary == "n" else (n_fixed, g)
        for rep in range(reps):
            rng = seed_sequence(seed, 11 if vary == "n" else 12, gi, rep)
            x, guess, score, _ = _gaussian_bits(n, mu, rng)
            u = top_r_errors(x, guess, score, rr, rng)
            base = {"figure": figure, "panel": f"mu={mu:g}", "mu": mu, "n": n, "r": rr,
                    "rep": rep, "seed": seed, "theory_eps": theory, "u": u,
                    "correct": rr - u, "accuracy": 1 - u / rr}
            rows.append(_tight(base, n=n, r=rr, u=u, family="gdp"))
            rows.append(_steinke(base, m=n, r=rr, correct=rr - u))
            if vary == "r":
                rows.append(_mahloujifar(base, m=n, r=rr, correct=rr - u))

    def plot(path: Path, rs: list[dict[str, Any]]) -> Path:
        fixed = f"r = {r}" if vary == "n" else f"n = {n_fixed}"
        what = "number of canaries" if vary == "n" else "released guesses"
        return plot_panels(path, _accuracy_rows(rs, vary), panel_key="quantity", x_key=vary,
                           y_key="value", title=str, ylabel="value",
                           xlabel=f"{vary} ({what})",
                           suptitle=f"Tight One-Run {figure}: Gaussian mu={mu:g}, {fixed} "
                                    f"(95% conf., delta={DELTA:g})")

    return _finish(out_dir, name, rows, plot)


@experiment("tight-ablation-n", "Fixed r, varying n (Gaussian mu=1): ours vs Steinke, and the "
            "guessing accuracy", "Tight One-Run Fig. 11")
def run_ablation_n(out_dir: Path, *, full: bool = False, seed: int = 0,
                   size: str | None = None) -> list[Path]:
    return _ablation(out_dir, name="tight-ablation-n", figure="Fig. 11",
                     size=resolve_size(full, size), seed=seed, vary="n")


@experiment("tight-ablation-r", "Fixed n, varying r (Gaussian mu=1): ours vs Steinke vs "
            "Mahloujifar, and the guessing accuracy", "Tight One-Run Fig. 12")
def run_ablation_r(out_dir: Path, *, full: bool = False, seed: int = 0,
                   size: str | None = None) -> list[Path]:
    return _ablation(out_dir, name="tight-ablation-r", figure="Fig. 12",
                     size=resolve_size(full, size), seed=seed, vary="r")
