"""Idealised one-run mechanisms of Bits Transmission §5 and Tight One-Run §6 (BT notes §6.1-6.3,
TOR notes §3.1-3.6), vectorised over canaries.

All use the memoryless one-hot arrangement: canary i owns coordinate i (d = n), the dataset
generator H puts the one-hot vector e_i in the dataset iff b_i = 1 (add/remove adjacency, the
null object otherwise), and the summation query q(X) = sum of rows therefore has coordinate i
equal to b_i (times the canary's magnitude).  The adversary sees the whole noisy vector.

=========================  ===========================================  =====================
mechanism                  output coordinate i                          true curve
=========================  ===========================================  =====================
GaussianMechanism(mu)      y_i = b_i + Z_i / mu,  Z ~ N(0,1)            GaussianDP(mu)
LaplaceMechanism(eps)      y_i = b_i + L_i / eps, L ~ Lap(0,1)          LaplaceDP(eps)
RandomizedResponse(e, d)   4 symbols {0,1,2,3}, see the class            EpsDeltaDP(e, d)
SubsampledGaussian(mu, q)  y_i = b_i * S_i + Z_i / mu, S ~ Bern(q)      SubsampledGaussianDP
=========================  ===========================================  =====================

Decoders return the log-likelihood ratio L(y) = log p(y | b=1) / p(y | b=0) (or a monotone
transform of it, centred so that ``score > 0`` is the MAP guess): for the Gaussian and Laplace
mechanisms that is y - 1/2 (Bits Transmission uses the fixed threshold 0.5), for randomized response
the
observed bit with the leak symbols scored +-infinity (a large finite number), and for the
subsampled Gaussian the exact L(y) = log(1 - q + q exp(mu^2 (y - 1/2))), which is what TOR notes
§3.6 prescribes (|L| is asymmetric there, so y - 1/2 is not the optimal score).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.canaries.scores import log_bernoulli_mgf
from dpaudit.curves import EpsDeltaDP, GaussianDP, LaplaceDP, SubsampledGaussianDP
from dpaudit.curves.base import Curve
from dpaudit.mechanisms.base import INFINITE_SCORE, SimulatedMechanism
from dpaudit.validation import check_delta, check_positive, check_probability

__all__ = ["GaussianMechanism", "LaplaceMechanism", "RandomizedResponse",
           "SubsampledGaussianMechanism"]


@dataclass(frozen=True, repr=False)
class GaussianMechanism(SimulatedMechanism):
    """Gaussian summation of one-hot canaries, sigma = 1/mu (Bits Transmission Eq. 27, BT notes
    §6.1).

    M(X) = sum_rows X + N(0, sigma^2 I_d), d = n.  Unit l2 sensitivity, so M is mu-GDP per
    canary with mu = 1/sigma.  Optimal decoder: b_i = 1[y_i > 1/2], bit error Phi(-mu/2).
    """

    mu: float = 1.0
    name = "gaussian"

    def __post_init__(self) -> None:
        check_positive("mu", self.mu)

    @property
    def sigma(self) -> float:
        return 1.0 / self.mu

    @property
    def curve(self) -> Curve:
        return GaussianDP(self.mu)

    @property
    def params(self) -> Mapping[str, Any]:
        return {"mu": self.mu}

    def run(self, bits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return bits.astype(float) + rng.standard_normal(bits.size) * self.sigma

    def score(self, output: np.ndarray) -> np.ndarray:
        return np.asarray(output, dtype=float) - 0.5


@dataclass(frozen=True, repr=False)
class LaplaceMechanism(SimulatedMechanism):
    """Laplace summation of one-hot canaries, scale c = 1/eps (Bits Transmission §5, BT notes §6.3).

    l1 sensitivity 1, so M is (eps, 0)-DP with the Laplace trade-off T(Lap(0,1), Lap(eps,1)).
    Decoder threshold 1/2; bit error e^{-eps/2} / 2.
    """

    eps: float = 1.0
    name = "laplace"

    def __post_init__(self) -> None:
        check_positive("eps", self.eps)

    @property
    def curve(self) -> Curve:
        return LaplaceDP(self.eps)

    @property
    def params(self) -> Mapping[str, Any]:
        return {"eps": self.eps}

    def run(self, bits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return bits.astype(float) + rng.laplace(0.0, 1.0 / self.eps, bits.size)

    def score(self, output: np.ndarray) -> np.ndarray:
        return np.asarray(output, dtype=float) - 0.5


@dataclass(frozen=True, repr=False)
class RandomizedResponse(SimulatedMechanism):
    """Randomized response with a delta "leak" symbol (Bits Transmission §5, BT notes §6.2;
    Tight One-Run §6.2 Fig. 7, TOR notes §3.5); exactly (eps, delta)-DP, trade-off f_{eps,delta}.

    Per bit, output in {0, 1, 2, 3}:
      b = 0: 2 w.p. delta; 0 w.p. (1-delta) e^eps/(1+e^eps); 1 w.p. (1-delta)/(1+e^eps);
      b = 1: 3 w.p. delta; 1 w.p. (1-delta) e^eps/(1+e^eps); 0 w.p. (1-delta)/(1+e^eps).
    Symbols 2 and 3 (TOR notes's 0-dagger, 1-dagger) reveal the bit.  MAP decoder: the observed
    bit (2 -> 0, 3 -> 1); its error is (1 - delta)/(1 + e^eps) = e*(f_{eps,delta}).
    Scores: +-eps (the log-likelihood ratio) and +-INFINITE_SCORE for the leak symbols.
    """

    eps: float = 1.0
    delta: float = 1e-5
    name = "rr"

    def __post_init__(self) -> None:
        check_positive("eps", self.eps)
        check_delta(self.delta)

    @property
    def curve(self) -> Curve:
        return EpsDeltaDP(self.eps, self.delta)

    @property
    def params(self) -> Mapping[str, Any]:
        return {"eps": self.eps, "delta": self.delta}

    def run(self, bits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        b = bits.astype(np.int8)
        u = rng.random(b.size)
        p_flip = (1.0 - self.delta) / (1.0 + math.exp(self.eps))
        out = np.where(u < p_flip + self.delta, 1 - b, b).astype(np.int8)
        return np.where(u < self.delta, b + 2, out).astype(np.int8)

    def score(self, output: np.ndarray) -> np.ndarray:
        table = np.array([-self.eps, self.eps, -INFINITE_SCORE, INFINITE_SCORE])
        return table[np.asarray(output, dtype=np.int64)]


@dataclass(frozen=True, repr=False)
class SubsampledGaussianMechanism(SimulatedMechanism):
    """Sub-sampled Gaussian (Tight One-Run Eq. 29, §6.3; TOR notes §3.6).

    y_i = b_i S_i + Z_i / mu with S_i ~ Bernoulli(q) (each included canary kept w.p. q).  The
    ordered pair (bit 0, bit 1) = (N(0, 1/mu^2), (1-q) N(0, 1/mu^2) + q N(1, 1/mu^2)) is, after
    scaling by mu, exactly SubsampledGaussianDP(mu, q).  Score: the exact log-likelihood ratio
    L(y) = log(1 - q + q exp(mu^2 (y - 1/2))) (positive iff y > 1/2).
    """

    mu: float = 1.0
    q: float = 0.5
    name = "subsampled_gaussian"

    def __post_init__(self) -> None:
        check_positive("mu", self.mu)
        check_probability("q", self.q, open_low=True)

    @property
    def curve(self) -> Curve:
        return SubsampledGaussianDP(self.mu, self.q)

    @property
    def params(self) -> Mapping[str, Any]:
        return {"mu": self.mu, "q": self.q}

    def run(self, bits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        kept = bits & (rng.random(bits.size) < self.q)
        return kept.astype(float) + rng.standard_normal(bits.size) / self.mu

    def score(self, output: np.ndarray) -> np.ndarray:
        y = np.asarray(output, dtype=float)
        return log_bernoulli_mgf(self.mu ** 2 * (y - 0.5), self.q)
