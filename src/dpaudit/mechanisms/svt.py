"""The Sparse Vector Technique (SVT): the correct algorithm and the non-private variants
catalogued by Lyu, Su and Li, "Understanding the Sparse Vector Technique for Differential
Privacy", PVLDB 10(6), 2017 (Figure 1 and Table 1 of that paper).  Not one of the seeds: the
algorithms below are transcribed from that paper (queries q_i with sensitivity Delta,
thresholds T_i, cutoff c, privacy budget eps; Lap(b) is Laplace noise of scale b).

=======  =====================  ===================  ==============  ======  ============  ======
variant  source (in Lyu et al.)  rho (threshold)     nu_i (query)    cutoff  output on T   true
=======  =====================  ===================  ==============  ======  ============  ======
alg1     Lyu et al. (ours)      Lap(Delta/eps1)      Lap(2cDelta/    c       "T"           eps
                                eps1 = eps/2         eps2)
alg3     Roth 2011 notes        Lap(Delta/eps1),     Lap(cDelta/     c       q_i + nu_i    inf
                                eps1 = eps/2         eps2)                   (the value!)
alg4     Lee & Clifton 2014     Lap(Delta/eps1),     Lap(Delta/      c       "T"           (1+6c)
                                eps1 = eps/4         eps2)                                 eps/4
alg5     Stoddard et al. 2014   Lap(Delta/eps1),     0 (no noise)    none    "T"           inf
                                eps1 = eps/2
alg6     Chen et al. 2015       Lap(Delta/eps1),     Lap(Delta/      none    "T"           inf
                                eps1 = eps/2         eps2)
=======  =====================  ===================  ==============  ======  ============  ======

(eps2 = eps - eps1.)  All claim eps-DP.  Lyu et al.'s Alg. 2 (Dwork and Roth's version, which
resamples rho after every positive answer) is also correct and is omitted.  A query i is
answered "T" (top) iff q_i(D) + nu_i >= T_i + rho; with a cutoff the algorithm aborts after the
c-th top answer (later queries are unanswered).

Canary / score constructions (multi-run audits: bit b selects one of two neighbouring
datasets, given directly by their query-answer vectors, which differ by at most Delta in every
query -- the general, non-monotone queries Lyu et al.'s counterexamples use):

* ``"alternating"`` (detects alg4, alg5, alg6): m queries with threshold T; bit 1 -> answers
  (1, 0, 1, 0, ...), bit 0 -> (0, 1, 0, 1, ...).  Score = (#top on even queries) - (#top on odd
  queries).  Given rho every query votes independently; without a cutoff the votes accumulate
  without bound (alg5/alg6 are not eps'-DP for any eps'); with alg4's small query noise each of
  the c top answers carries up to 2 eps2 of privacy loss.  Against alg1 (query noise 2c Delta /
  eps2) each vote is almost a coin flip.
* ``"probe"`` (detects alg3): a stream of m identical probes, bit 1 -> answers 0, bit 0 ->
  answers 1, threshold T = 0, cutoff c = 1.  The output is the position j of the first top and
  its released value a = q_j + nu_j.  If a <= T then T + rho <= a <= 0 lies in the lower
  Laplace tail where P[nu < x] = e^{x/b}/2, so every one of the j - 1 negative answers has
  likelihood ratio exactly e^{1/b} and (with the released value) LR(j, a) = e^{j/b}, b = c
  Delta / eps2: unbounded in j.  Score = j 1[a <= T] (outputs with a > T, or no top answer,
  have log-LR below 1/b and score 0).  Against alg1 the
  same probes give an eps-DP output, and the released value does not exist.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.mechanisms.base import as_rng
from dpaudit.observations import MembershipObservations
from dpaudit.validation import check_choice, check_count, check_positive

__all__ = ["SparseVector", "SVTOutput", "SVT_VARIANTS", "CONSTRUCTIONS", "svt_audit",
           "svt_pair", "svt_score", "default_construction"]

SVT_VARIANTS = ("alg1", "alg3", "alg4", "alg5", "alg6")
CONSTRUCTIONS = ("alternating", "probe")


@dataclass(frozen=True)
class SVTOutput:
    """top: (trials, m) bool, top answer released; answered: (trials, m) bool, query processed
    (False after an abort); value: (trials, m) released numeric answers (NaN where none)."""

    top: np.ndarray
    answered: np.ndarray
    value: np.ndarray


@dataclass(frozen=True)
class SparseVector:
    """One SVT variant of Lyu, Su and Li (2017), vectorised over independent runs."""

    variant: str = "alg1"
    epsilon: float = 1.0
    cutoff: int = 1
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        check_choice("variant", self.variant, SVT_VARIANTS)
        check_positive("epsilon", self.epsilon)
        check_count("cutoff", self.cutoff, minimum=1)
        check_positive("sensitivity", self.sensitivity)

    @property
    def eps1(self) -> float:
        return self.epsilon / 4 if self.variant == "alg4" else self.epsilon / 2

    @property
    def eps2(self) -> float:
        return self.epsilon - self.eps1

    @property
    def threshold_scale(self) -> float:
        return self.sensitivity / self.eps1

    @property
    def query_scale(self) -> float:
        """Laplace scale of nu_i (0 for alg5)."""
        c, d = self.cutoff, self.sensitivity
        return {"alg1": 2 * c * d / self.eps2, "alg3": c * d / self.eps2, "alg4": d / self.eps2,
                "alg5": 0.0, "alg6": d / self.eps2}[self.variant]

    @property
    def has_cutoff(self) -> bool:
        return self.variant in ("alg1", "alg3", "alg4")

    @property
    def claimed_epsilon(self) -> float:
        return self.epsilon

    @property
    def true_epsilon(self) -> float:
        """Lyu et al. Table 1: eps (alg1), (1 + 6c) eps / 4 (alg4), inf (alg3, alg5, alg6)."""
        if self.variant == "alg1":
            return self.epsilon
        if self.variant == "alg4":
            return (1 + 6 * self.cutoff) * self.epsilon / 4
        return math.inf

    @property
    def params(self) -> Mapping[str, Any]:
        return {"variant": self.variant, "epsilon": self.epsilon, "cutoff": self.cutoff,
                "sensitivity": self.sensitivity}

    def run(self, answers: Any, thresholds: Any, rng: np.random.Generator | int) -> SVTOutput:
        """Run SVT independently on each row of ``answers`` (trials, m) (the true query answers
        q_i(D) of that run's dataset) against ``thresholds`` (scalar or (m,))."""
        g = as_rng(rng)
        a = np.atleast_2d(np.asarray(answers, dtype=float))
        t = np.broadcast_to(np.asarray(thresholds, dtype=float), a.shape[1:])
        n, m = a.shape
        rho = g.laplace(0.0, self.threshold_scale, (n, 1))
        noisy = a + (g.laplace(0.0, self.query_scale, (n, m)) if self.query_scale > 0 else 0.0)
        above = noisy >= t + rho
        answered: np.ndarray
        if self.has_cutoff:
            before: np.ndarray = np.cumsum(above, axis=1) - above
            answered = before < self.cutoff
        else:
            answered = np.ones_like(above)
        top = above & answered
        value = np.where(top, noisy, np.nan) if self.variant == "alg3" else \
            np.full(a.shape, np.nan)
        return SVTOutput(top=top, answered=answered, value=value)


def default_construction(variant: str) -> str:
    return "probe" if variant == "alg3" else "alternating"


def svt_pair(construction: str, m: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(answers if bit 0, answers if bit 1, threshold) of a construction (see module)."""
    check_choice("construction", construction, CONSTRUCTIONS)
    m = check_count("m", m, minimum=2)
    if construction == "alternating":
        one = (np.arange(m) % 2 == 0).astype(float)
        return 1.0 - one, one, 0.5
    return np.ones(m), np.zeros(m), 0.0


def svt_score(construction: str, out: SVTOutput, threshold: float) -> np.ndarray:
    """Decoder score per run (higher = bit 1) from the SVT output only."""
    check_choice("construction", construction, CONSTRUCTIONS)
    top = out.top
    m = top.shape[1]
    if construction == "alternating":
        sign = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
        return (top * sign).sum(axis=1)
    has = top.any(axis=1)
    first = top.argmax(axis=1)
    val = np.where(has, np.nan_to_num(out.value[np.arange(top.shape[0]), first], nan=np.inf),
                   np.inf)
    return np.where(val <= threshold, first + 1.0, 0.0)


def svt_audit(variant: str, trials: int, rng: np.random.Generator | int, *,
              epsilon: float = 1.0, cutoff: int | None = None, queries: int | None = None,
              construction: str | None = None) -> MembershipObservations:
    """Multi-run audit game (Bits Transmission Algorithm 1): ``trials`` independent runs, each with
    a
    uniform secret bit choosing between the construction's two neighbouring datasets.

    Defaults: alternating construction with cutoff c = 10 and m = 400 queries (alg1, alg4,
    alg5, alg6); probe construction with c = 1, m = 16 (alg3).  Returns (bit, score) pairs for
    :func:`dpaudit.estimators.multi_run`.
    """
    check_choice("variant", variant, SVT_VARIANTS)
    cons = construction or default_construction(variant)
    c = cutoff if cutoff is not None else (1 if cons == "probe" else 10)
    m = queries if queries is not None else (16 if cons == "probe" else 400)
    mech = SparseVector(variant, epsilon=epsilon, cutoff=c)
    g = as_rng(rng)
    n = check_count("trials", trials, minimum=2)
    bits = g.random(n) < 0.5
    a0, a1, thr = svt_pair(cons, m)
    answers = np.where(bits[:, None], a1, a0)
    out = mech.run(answers, thr, g)
    return MembershipObservations.from_arrays(bits, svt_score(cons, out, thr))
