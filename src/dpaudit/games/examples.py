"""Ready-made black-box audits (picklable, so they run on worker processes).

* :func:`gaussian_count_audit` -- a noisy count: M(D) = |D| + N(0, sigma^2), D1 = D0 + canary.
  True guarantee: GaussianDP(1/sigma).
* :func:`svt_blackbox_audit` -- one SVT variant of :mod:`dpaudit.mechanisms.svt` with one of its
  canary constructions, run trial by trial through the black-box driver (the vectorised
  :func:`dpaudit.mechanisms.svt.svt_audit` gives the same game faster).

They double as templates: a user's audit is three such callables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.games.blackbox import BlackBoxAudit
from dpaudit.mechanisms.svt import SparseVector, default_construction, svt_pair, svt_score
from dpaudit.validation import check_count, check_positive

__all__ = ["GaussianCount", "CountNeighbours", "identity_score", "gaussian_count_audit",
           "SVTMechanism", "SVTNeighbours", "SVTScore", "svt_blackbox_audit"]


@dataclass(frozen=True)
class GaussianCount:
    """M(D) = len(D) + N(0, sigma^2): unit sensitivity under add/remove."""

    sigma: float = 1.0

    def __call__(self, dataset: Any, rng: np.random.Generator) -> float:
        return float(len(dataset) + self.sigma * rng.standard_normal())


@dataclass(frozen=True)
class CountNeighbours:
    """D0 = ``base`` records, D1 = D0 plus one canary record (add/remove adjacency)."""

    base: int = 100

    def __call__(self, rng: np.random.Generator) -> tuple[list[Any], list[Any]]:
        d0 = list(range(self.base))
        return d0, d0 + ["canary"]


@dataclass(frozen=True)
class _Shift:
    offset: float

    def __call__(self, output: Any) -> float:
        return float(output) - self.offset


def identity_score(output: Any) -> float:
    return float(output)


def gaussian_count_audit(sigma: float = 1.0, base: int = 100) -> BlackBoxAudit:
    """Black-box audit of a Gaussian count (true curve GaussianDP(1/sigma)); score = output
    minus base + 1/2, so that ``score > 0`` is the MAP guess."""
    check_positive("sigma", sigma)
    check_count("base", base)
    return BlackBoxAudit(GaussianCount(sigma), CountNeighbours(base), _Shift(base + 0.5))


@dataclass(frozen=True)
class SVTMechanism:
    """The dataset is the vector of true query answers; one SVT run on it."""

    svt: SparseVector
    threshold: float

    def __call__(self, answers: Any, rng: np.random.Generator) -> Any:
        return self.svt.run(np.asarray(answers, dtype=float)[None, :], self.threshold, rng)


@dataclass(frozen=True)
class SVTNeighbours:
    construction: str
    queries: int

    def __call__(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        a0, a1, _ = svt_pair(self.construction, self.queries)
        return a0, a1


@dataclass(frozen=True)
class SVTScore:
    construction: str
    threshold: float

    def __call__(self, output: Any) -> float:
        return float(svt_score(self.construction, output, self.threshold)[0])


def svt_blackbox_audit(variant: str, *, epsilon: float = 1.0, cutoff: int | None = None,
                       queries: int | None = None, construction: str | None = None
                       ) -> BlackBoxAudit:
    """Black-box audit of an SVT variant with the defaults of :func:`svt_audit`."""
    cons = construction or default_construction(variant)
    c = cutoff if cutoff is not None else (1 if cons == "probe" else 10)
    m = queries if queries is not None else (16 if cons == "probe" else 400)
    _, _, thr = svt_pair(cons, m)
    return BlackBoxAudit(SVTMechanism(SparseVector(variant, epsilon=epsilon, cutoff=c), thr),
                         SVTNeighbours(cons, m), SVTScore(cons, thr), adjacency="replace_one")
