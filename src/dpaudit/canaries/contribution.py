"""Each planted canary's contribution to the released sum: per-example clipping, checked.

Why.  The claim of a DP-SGD run bounds every example's contribution to the released noisy
sum by the clip norm C, *example by example* (Abadi et al. 2016, Algorithm 1: each
per-example gradient is clipped to C before the sum).  Two clipping mistakes leave the
noise, the steps and the sampling right, so the released-noise check (:mod:`.noise`) and
the deterministic checks (:mod:`.claims`) cannot see them, and the one-run score sees no
more than under correct clipping (docs/training.md, "Batch-sum clipping"):

* clipping the batch *sum* to C: k canaries planted in one step share C (each reads about
  C / sqrt(k) instead of C);
* clipping the *averaged* gradient to C and scaling back to the sum: an example's
  contribution is bounded by |B| C, not C.

What is read.  The integration knows which canaries it planted at each step (its own
Poisson coin c_{t,i} ~ Bernoulli(q), drawn independently of everything before the step and
of the step's real batch and noise).  Canary i's white-box reading at step t, in units of C,
is y_{t,i} = a_i c_{t,i} + b_{t,i} under the claimed mechanism, where a_i is its reading
after correct per-example clipping (:attr:`CanaryPlan.amplitude`: 1 for a Dirac canary) and
the background b_{t,i} (noise, real data's gradient, which drifts on busy coordinates) is
independent of c_{t,i} given the past.  With m_{t,i} the mean of canary i's *unplanted*
readings before step t (a predictable centring: it removes most of the drift and keeps
exactness), the residuals e_{t,i} = y_{t,i} - a_i c_{t,i} - m_{t,i} do not depend on
c_{t,i} under the claim, and

    S = sum_{t,i} (c_{t,i} - q) e_{t,i}

sums increments that are, given the past and e_{t,i}, a centred Bernoulli coin times a known
number.  Hence for every fixed lambda

    M(lambda) = exp(lambda S - sum_{t,i} psi(lambda e_{t,i})),
    psi(u) = log(1 - q + q exp(u)) - q u      (the coin's cumulant generating function),

is a nonnegative martingale of mean 1 (the exponential supermartingale of a sum of bounded
conditionally centred increments; Ville's inequality, e.g. Howard et al. 2021,
"Time-uniform, nonparametric, nonasymptotic confidence sequences", §2), so
P(M(lambda) >= 1 / a) <= a whatever the data, the model and the noise do -- no normal
approximation, and the drift of real data costs power, never validity.  The check takes a
fixed grid of G lambdas of both signs (:data:`LAMBDAS`, in 1 / C) and reports when some
M(lambda) reaches G / alpha (union bound: false alarm at most alpha, default 1e-6,
:data:`CONTRIBUTION_ALPHA`):

* lambda < 0: the canaries contribute *less* than per-example clipping gives (batch-sum
  clipping; also a clip norm smaller than claimed, which is more private) -- a
  configuration error, not counted as a violation (see below);
* lambda > 0: they contribute *more* than their clipped reading: one example moved the
  release by more than C along a unit direction -- averaged-gradient clipping, per-tensor
  clipping, a larger clip norm, parameters outside the clipping -- the claim's sensitivity
  is exceeded, a weaker run.

Only canaries that are included (bit 1: their coin is Bernoulli(q)) and whose read
coordinates carry no other canary's planted gradient (so that another canary's coin is not
part of their background) enter the sums.

Is a contribution *below* C a privacy loss?  Not by itself: in the average case batch-sum
clipping adds the claimed noise to a sum no larger than C, and a clip norm below the claim
gives *more* privacy.  Its worst case is: clip(S + g) - clip(S) has norm up to 2 C (a batch
S = -C u with an added example g = 2 C u), the sensitivity of a mechanism with half the
noise multiplier.  The check cannot tell batch-level clipping from a smaller per-example
clip norm, so it reports "the run is not the claimed mechanism" (a configuration error, with
``weaker=False``) and leaves the verdict to what is shown; a contribution above the clipped
reading shows the claim's sensitivity exceeded (``weaker=True``).

The estimate printed beside it, sum c (y - m) / sum c a, is the mean planted contribution
relative to per-example clipping (an estimate: 1 under the claim, about E[1 / sqrt(k)] for
k canaries planted together under batch-sum clipping).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpaudit.validation import check_probability

__all__ = ["CONTRIBUTION_ALPHA", "LAMBDAS", "ContributionRecord", "ContributionReading",
           "ContributionAccumulator", "check_contribution", "private_canaries"]

#: false-alarm probability of the contribution check on a run that clips as claimed
CONTRIBUTION_ALPHA = 1e-6
#: the fixed grid of |lambda| (units 1 / C); each is used with both signs
LAMBDAS = 2.0 ** np.arange(-6, 5)


def _psi(u: np.ndarray, q: float) -> np.ndarray:
    """log(1 - q + q e^u) - q u, the cumulant generating function of c - q, c ~ Bern(q)."""
    return np.logaddexp(math.log1p(-q), math.log(q) + u) - q * u


def private_canaries(plant_coords: np.ndarray, plant_values: np.ndarray,
                     read_coords: np.ndarray) -> np.ndarray:
    """(n,) True where no *other* canary plants a nonzero value on one of canary i's read
    coordinates (its background then holds no other canary's coin)."""
    pc = np.asarray(plant_coords)
    n = pc.shape[0]
    owner = np.broadcast_to(np.arange(n)[:, None], pc.shape)
    nz = np.asarray(plant_values) != 0
    pairs = np.unique(np.stack([pc[nz], owner[nz]], axis=1), axis=0)   # (coord, owner)
    coords, first, counts = np.unique(pairs[:, 0], return_index=True, return_counts=True)
    rc = np.asarray(read_coords)
    pos = np.clip(np.searchsorted(coords, rc), 0, max(coords.size - 1, 0))
    planted_here = (coords.size > 0) & (coords[pos] == rc) if coords.size else np.zeros(
        rc.shape, dtype=bool)
    only = pairs[first, 1][pos] if coords.size else np.zeros(rc.shape, dtype=np.int64)
    own = np.arange(n)[:, None]
    clash = planted_here & ((counts[pos] > 1) | (only != own))
    return ~clash.any(axis=1)


@dataclass(frozen=True, eq=False)
class ContributionRecord:
    """The sufficient statistics of the contribution check (module docstring).

    Attributes:
      sampling_rate: q of the canaries' coin.
      lambdas: (G,) the grid (both signs), units 1 / C.
      centred_sum: S = sum (c - q) e.
      psi_sums: (G,) sum psi(lambda_g e) for each lambda.
      planted_sum: sum c (y - m) over the planted readings.
      amplitude_sum: sum c a over the planted readings.
      planted: number of planted readings counted.
      canaries: included canaries counted.
      steps: steps counted.
    """

    sampling_rate: float
    lambdas: np.ndarray
    centred_sum: float
    psi_sums: np.ndarray
    planted_sum: float
    amplitude_sum: float
    planted: int
    canaries: int
    steps: int

    def to_dict(self) -> dict[str, object]:
        return {"planted": self.planted, "canaries": self.canaries, "steps": self.steps,
                "centred_sum": self.centred_sum,
                "contribution_estimate": _ratio(self.planted_sum, self.amplitude_sum)}


def _ratio(a: float, b: float) -> float | None:
    return float(a / b) if b > 0 else None


class ContributionAccumulator:
    """Running statistics of the contribution check, one :meth:`add` per released step
    (vectorised over canaries; O(G n) per step).

    Args:
      bits: (n,) the canaries' secret bits (only included canaries are counted).
      amplitude: (n,) each canary's reading after correct clipping, in units of C.
      sampling_rate: q of the canaries' coin.
      use: (n,) optional further mask (e.g. :func:`private_canaries`).
    """

    def __init__(self, bits: np.ndarray, amplitude: np.ndarray, *, sampling_rate: float,
                 use: np.ndarray | None = None) -> None:
        b = np.asarray(bits, dtype=bool)
        self.q = check_probability("sampling_rate", sampling_rate, open_low=True)
        mask = b if use is None else b & np.asarray(use, dtype=bool)
        self.index = np.flatnonzero(mask)
        self.n = b.size
        self.amplitude = np.broadcast_to(np.asarray(amplitude, dtype=float),
                                         (self.n,))[self.index].copy()
        self.lambdas = np.concatenate([-LAMBDAS[::-1], LAMBDAS])
        k = self.index.size
        self._off_sum = np.zeros(k)
        self._off_count = np.zeros(k)
        self._s = 0.0
        self._psi = np.zeros(self.lambdas.size)
        self._planted_sum = 0.0
        self._amp_sum = 0.0
        self._planted = 0
        self.steps = 0

    def add(self, y: np.ndarray, planted: np.ndarray) -> None:
        """One step: ``y`` (n,) the canaries' readings in units of C, ``planted`` (n,) bool
        (or indices) of the canaries planted at this step."""
        y = np.asarray(y, dtype=float)
        if y.shape != (self.n,):
            raise ValueError(f"y must have one reading per canary ({self.n}); got {y.shape}")
        p = np.asarray(planted)
        if p.dtype != bool:
            mask = np.zeros(self.n, dtype=bool)
            mask[p.astype(np.int64)] = True
            p = mask
        elif p.shape != (self.n,):
            raise ValueError(f"planted must be (n,) booleans or indices; got {p.shape}")
        c = p[self.index].astype(float)
        yy = y[self.index]
        ok = np.isfinite(yy)               # a non-finite release is left out of the sums
        m = np.divide(self._off_sum, self._off_count, out=np.zeros_like(self._off_sum),
                      where=self._off_count > 0)
        r = np.where(ok, yy - m, 0.0)
        e = np.where(ok, r - self.amplitude * c, 0.0)
        cq = np.where(ok, c - self.q, 0.0)
        self._s += float(cq @ e)
        self._psi += _psi(np.outer(self.lambdas, e), self.q).sum(axis=1)
        self._planted_sum += float(c @ r)
        self._amp_sum += float(c @ np.where(ok, self.amplitude, 0.0))
        self._planted += int((c * ok).sum())
        off = ok & (c == 0)
        self._off_sum += np.where(off, yy, 0.0)
        self._off_count += off
        self.steps += 1

    def record(self) -> ContributionRecord:
        return ContributionRecord(
            sampling_rate=self.q, lambdas=self.lambdas.copy(), centred_sum=self._s,
            psi_sums=self._psi.copy(), planted_sum=self._planted_sum,
            amplitude_sum=self._amp_sum, planted=self._planted,
            canaries=int(self.index.size), steps=self.steps)


@dataclass(frozen=True)
class ContributionReading:
    """Outcome of :func:`check_contribution`.

    Attributes:
      ok: False when the contributions differ from per-example clipping's.
      below: the canaries contribute less than per-example clipping gives.
      above: they contribute more (the claim's sensitivity is exceeded).
      estimate: sum c (y - m) / sum c a (1 under the claim; an estimate), or None.
      log_evidence: max over the grid of lambda S - sum psi (lower side, upper side).
      threshold: log(G / alpha).
      planted: planted readings counted.
      alpha: the false-alarm probability on a run that clips as claimed.
    """

    ok: bool
    below: bool
    above: bool
    estimate: float | None
    log_evidence: tuple[float, float]
    threshold: float
    planted: int
    alpha: float

    def message(self) -> str:
        est = ("-" if self.estimate is None
               else f"~ {self.estimate:.3g} (estimate) times")
        head = (f"clipped contribution: {self.planted} planted canary readings contribute "
                f"{est} what per-example clipping to C gives")
        if self.above:
            return (head + "; more than one example's clipped gradient can: an example moved "
                    "the release by more than C (averaged-gradient or per-tensor clipping, a "
                    "larger clip norm, parameters outside the clipping) -- false-alarm "
                    f"probability below {self.alpha:g} on a run that clips as claimed")
        if self.below:
            return (head + "; less than per-example clipping gives: the run is not the "
                    "claimed mechanism (the batch's sum or mean clipped instead of each "
                    "example's, whose worst case -- a crafted batch -- has sensitivity 2 C; "
                    "or a smaller clip norm than claimed) -- false-alarm probability below "
                    f"{self.alpha:g} on a run that clips as claimed")
        return head


def check_contribution(record: ContributionRecord, *,
                       alpha: float = CONTRIBUTION_ALPHA) -> ContributionReading:
    """The planted canaries' contributions against per-example clipping (module docstring):
    a one-sided test each way, union bound over the grid, false alarm at most ``alpha``."""
    alpha = check_probability("alpha", alpha, open_low=True)
    lam = np.asarray(record.lambdas, dtype=float)
    log_m = lam * record.centred_sum - np.asarray(record.psi_sums, dtype=float)
    thr = math.log(lam.size / alpha)
    neg, pos = log_m[lam < 0], log_m[lam > 0]
    low = float(neg.max()) if neg.size else -math.inf
    high = float(pos.max()) if pos.size else -math.inf
    below, above = low >= thr, high >= thr
    return ContributionReading(ok=not (below or above), below=bool(below and not above),
                               above=bool(above), estimate=_ratio(record.planted_sum,
                                                                  record.amplitude_sum),
                               log_evidence=(low, high), threshold=thr,
                               planted=record.planted, alpha=float(alpha))
