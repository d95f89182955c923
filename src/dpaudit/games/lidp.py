"""Lifted-DP audit game (Pillutla et al., Algorithm 1): K + m random canaries per trial.

Per trial i: draw K + m canaries i.i.d. from a canary distribution, run the mechanism on
D_1 = D + {c_1..c_K} and on D_0 = D + {c_1..c_{K-1}} (two independent runs), score the K
inserted canaries on the D_1 output (x) and the m fresh canaries on the D_0 output (y).
``mode="replace_one"`` (Pillutla et al. App. B.2, Eq. 12) scores the fresh canaries on the same D_1
output and runs the mechanism once per trial.  Scores follow the dpaudit convention "higher =
more likely a member"; thresholding ``score >= tau`` gives the 0/1 matrices the estimator
:func:`dpaudit.estimators.lifted.lifted` takes.

Contents:

* :class:`LiDPScores` -- the (n, K) and (n, m) score matrices, thresholding to observations;
* canary distributions: :class:`UnitSphereCanaries` (Gaussian mechanism, Pillutla et al. §4),
  :class:`RandomGradientCanaries` (Pillutla et al. §5, App. D.2), :class:`ClipBKDCanaries` (lifted
  ClipBKD data poisoning, Pillutla et al. §5, App. D.1, Eq. 23);
* :func:`lidp_game` -- the black-box driver for a user's callable (loops over trials only);
  :class:`LiDPTrialGame` -- the same game as a trial engine game.

The paper's simulators (the exact Gaussian sum mechanism, its RDP noise calibration and a small
vectorised DP-SGD trainer) live with the paper reproductions in
:mod:`dpaudit.papers.lidp_simulators`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit.mechanisms.base import as_rng
from dpaudit.observations import LiftedObservations
from dpaudit.validation import (
    check_choice,
    check_count,
    check_finite_array,
    check_positive,
)

__all__ = [
    "LiDPScores",
    "UnitSphereCanaries",
    "RandomGradientCanaries",
    "ClipBKDCanaries",
    "lidp_game",
    "LiDPTrialGame",
    "MODES",
]

MODES = ("add_remove", "replace_one")


# ----------------------------------------------------------------------------- observations

@dataclass(frozen=True, eq=False)
class LiDPScores:
    """Scores of one LiDP game: ``x_scores`` (n, K) inserted canaries on the D_1 outputs,
    ``y_scores`` (n, m) fresh canaries on the null outputs.  Higher = more likely member."""

    x_scores: np.ndarray
    y_scores: np.ndarray
    mode: str = "add_remove"
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.x_scores.shape[0])

    @property
    def k(self) -> int:
        return int(self.x_scores.shape[1])

    def tests(self, threshold: float) -> tuple[np.ndarray, np.ndarray]:
        """0/1 matrices x = 1[x_scores >= tau], y = 1[y_scores >= tau]."""
        t = float(threshold)
        if math.isnan(t):
            raise ValueError("threshold must be a real number, got NaN")
        return self.x_scores >= t, self.y_scores >= t

    def observations(self, threshold: float) -> LiftedObservations:
        x, y = self.tests(threshold)
        return LiftedObservations.from_arrays(x, y)


# ----------------------------------------------------------------------------- canaries

@dataclass(frozen=True)
class UnitSphereCanaries:
    """c ~ Uniform(S^{d-1}): c = g/||g||, g ~ N(0, I_d) (Pillutla et al. §4)."""

    d: int

    def __post_init__(self) -> None:
        check_count("d", self.d, minimum=1)

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        g = rng.standard_normal((size, self.d))
        return g / np.linalg.norm(g, axis=1, keepdims=True)


@dataclass(frozen=True)
class RandomGradientCanaries:
    """Random gradient canaries in a dim-dimensional parameter space (Pillutla et al. §5, App. D.2).

    ``law="sphere"`` (reference code; default): uniform on the sphere of radius ``radius`` (the
    clip norm).  ``law="ball"`` (the paper's text): uniform in the ball B(0, radius).  The
    canary loss is <c, theta>, so gradient descent moves theta along -c; the dpaudit score is
    -cos(c, theta) (higher = member).  LiDP notes §7.10.
    """

    dim: int
    radius: float = 1.0
    law: str = "sphere"

    def __post_init__(self) -> None:
        check_count("dim", self.dim, minimum=1)
        check_positive("radius", self.radius)
        check_choice("law", self.law, ("sphere", "ball"))

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        g = rng.standard_normal((size, self.dim))
        g /= np.linalg.norm(g, axis=1, keepdims=True)
        if self.law == "ball":
            g *= rng.random((size, 1)) ** (1.0 / self.dim)
        return self.radius * g


@dataclass(frozen=True, eq=False)
class ClipBKDCanaries:
    """Lifted ClipBKD data-poisoning canaries (Pillutla et al. §5, App. D.1, Eq. 23).

    P_canary = Uniform{(alpha v_j, label) : j among the p right singular vectors of the data
    matrix with the *smallest* singular values}; indices are drawn with replacement (i.i.d.).
    ``label`` is the class y* given to every canary (the paper picks the class with the largest
    average loss over many reference models; the reference code uses a fixed class,
    LiDP notes §7.9 -- both reduce to passing the chosen class here).
    """

    directions: np.ndarray  # (p, d) unit vectors
    alpha: float = 1.0
    label: int = 0

    @classmethod
    def from_data(cls, features: Any, p: int, alpha: float = 1.0, label: int = 0,
                  center: bool = False) -> ClipBKDCanaries:
        """Tail right singular vectors of ``features`` (N, d).  ``center=True`` centres the
        columns first (the reference code's PCA; LiDP notes §2.10 b)."""
        X = np.asarray(features, dtype=float)
        if X.ndim != 2 or X.size == 0 or not np.isfinite(X).all():
            raise ValueError("features must be a finite, non-empty (N, d) matrix")
        p = check_count("p", p, minimum=1)
        if center:
            X = X - X.mean(axis=0)
        _, _, vt = np.linalg.svd(X, full_matrices=True)
        r = vt.shape[0]
        if p > r:
            raise ValueError(f"p must be <= {r} (number of right singular vectors), got {p}")
        return cls(directions=vt[r - p:], alpha=check_positive("alpha", alpha),
                   label=check_count("label", label))

    def sample(self, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        idx = rng.integers(0, self.directions.shape[0], size=size)
        return self.alpha * self.directions[idx], np.full(size, self.label, dtype=int)


# ----------------------------------------------------------------------------- black-box game

def _take(canaries: Any, idx: slice) -> Any:
    if isinstance(canaries, tuple):
        return tuple(c[idx] for c in canaries)
    return canaries[idx]


@dataclass(frozen=True)
class LiDPTrialGame:
    """One trial of Pillutla et al. Algorithm 1 as a game of :mod:`dpaudit.engine`: records the K
    inserted-canary scores (x_0..x_{K-1}) and the m fresh-canary scores (y_0..y_{m-1})."""

    mechanism: Callable[[Any, np.random.Generator], Any]
    sampler: Callable[[np.random.Generator, int], Any]
    score: Callable[[Any, Any], Any]
    k: int
    m: int
    mode: str = "add_remove"

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple([f"x_{i}" for i in range(self.k)] + [f"y_{j}" for j in range(self.m)])

    def config(self) -> dict[str, Any]:
        from dpaudit.engine.game import describe_callable

        return {"kind": "lidp", "mechanism": describe_callable(self.mechanism),
                "sampler": describe_callable(self.sampler),
                "score": describe_callable(self.score), "k": self.k, "m": self.m,
                "mode": self.mode}

    def run_trial(self, g: np.random.Generator, t: int) -> np.ndarray:
        k, m = self.k, self.m
        can = self.sampler(g, k + m)
        ins = _take(can, slice(0, k))
        out1 = self.mechanism(ins, g)
        x = np.asarray(self.score(out1, ins), dtype=float)
        out0 = (self.mechanism(_take(can, slice(0, k - 1)), g) if self.mode == "add_remove"
                else out1)
        y = np.asarray(self.score(out0, _take(can, slice(k, k + m))), dtype=float)
        return np.concatenate([x, y])


def lidp_game(mechanism: Callable[[Any, np.random.Generator], Any],
              sampler: Callable[[np.random.Generator, int], Any],
              score: Callable[[Any, Any], Any], n: int, k: int, m: int | None = None, *,
              rng: np.random.Generator | int, mode: str = "add_remove",
              executor: str | None = None, workers: int | None = None,
              store: Any = None, resume: bool = False) -> LiDPScores:
    """Pillutla et al. Algorithm 1 for a black-box mechanism.

    Args:
      mechanism: ``mechanism(canaries, rng) -> output``: runs (trains) on D + canaries; the base
        dataset D is the callable's business.
      sampler: ``sampler(rng, size) -> canaries`` (an array, or a tuple of arrays sliced
        together, e.g. (features, labels)); e.g. ``UnitSphereCanaries(d).sample``.
      score: ``score(output, canaries) -> (size,)`` scores, higher = more likely member.
      n: trials; k: canaries inserted per trial (K); m: fresh null canaries (default K).
      rng: Generator or integer seed.
      mode: "add_remove" (null run on K - 1 canaries) or "replace_one" (fresh canaries scored
        on the D_1 output; one run per trial).
      executor: None (default) runs the trials here from the one generator ``rng``;
        "inline" / "process" / "ray" run them on :mod:`dpaudit.engine` (``rng`` must then be
        an integer seed; trial t draws from its own stream of (seed, t), so the draws differ
        from the default path), with ``workers``, a trial ``store`` and ``resume``.
    """
    n = check_count("n", n, minimum=1)
    k = check_count("k", k, minimum=1)
    m = k if m is None else check_count("m", m, minimum=1)
    check_choice("mode", mode, MODES)
    if executor is not None:
        from dpaudit.engine.runner import execute

        if not isinstance(rng, (int, np.integer)):
            raise ValueError("rng must be an integer seed when executor is given")
        run = execute(LiDPTrialGame(mechanism, sampler, score, k, m, mode), trials=n,
                      seed=int(rng), executor=executor, workers=workers, store=store,
                      resume=resume)
        if run.failures:
            f = run.failures[0]
            raise ValueError(f"trial {f.trial} failed ({len(run.failures)} failed): {f.error}")
        check_finite_array("x scores", run.records[:, :k].reshape(-1))
        check_finite_array("y scores", run.records[:, k:].reshape(-1))
        return LiDPScores(run.records[:, :k].copy(), run.records[:, k:].copy(), mode,
                          {"n": n, "k": k, "m": m, "engine": run.audit_id})
    g = as_rng(rng)
    xs = np.empty((n, k))
    ys = np.empty((n, m))
    for i in range(n):  # one (or two) mechanism runs per trial; canaries are vectorised
        can = sampler(g, k + m)
        ins = _take(can, slice(0, k))
        fresh = _take(can, slice(k, k + m))
        out1 = mechanism(ins, g)
        xs[i] = np.asarray(score(out1, ins), dtype=float)
        if mode == "add_remove":
            out0 = mechanism(_take(can, slice(0, k - 1)), g)
            ys[i] = np.asarray(score(out0, fresh), dtype=float)
        else:
            ys[i] = np.asarray(score(out1, fresh), dtype=float)
    check_finite_array("x scores", xs.reshape(-1))
    check_finite_array("y scores", ys.reshape(-1))
    return LiDPScores(xs, ys, mode, {"n": n, "k": k, "m": m})
