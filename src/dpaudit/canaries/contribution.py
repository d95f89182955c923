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
* lambda > 0: they contribute *more* than C along a unit direction: one example moved the
  release by more than C -- averaged-gradient clipping, per-tensor clipping, a larger clip
  norm, parameters outside the clipping -- the claim's sensitivity is exceeded, a weaker
  run.

Composite nulls.  The increment's exponential moment, as a function of a contribution
smaller than the null's, only falls for lambda > 0 (with c = 1 the term e^u / (1 - q + q e^u)
is increasing in u), so the upper test is valid for every run whose contribution is *at
most* the null's, and the lower test for every run whose contribution is at least it.

Two readings of each canary (union bound over both and over the grid):

* its read direction (amplitude a_i = 1 for every shape of :mod:`.plan`): both tails;
* for a spread canary with a sentinel (a small share s of its direction on a coordinate of
  another tensor, :mod:`.plan`), the unit direction halfway between its main part and the
  sentinel coordinate, (u_main + e_sentinel) / sqrt(2).  Correct clipping reads
  (sqrt(1 - s^2) + s) / sqrt(2) ~ 0.73 C there; no clipping to C can read more than C along
  any unit direction, so the upper test is made at the null C (valid by the composite-null
  argument).  Per-tensor clipping (the sentinel's tensor clipped to C on its own) reads
  about sqrt(2) C, an unclipped sentinel tensor ~ 22 C: one example moved the release by
  more than C.  A valid per-layer budget (C_l with sum C_l^2 = C^2) never reads above C.

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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpaudit.canaries.scores import log_bernoulli_mgf, running_sums, sum_log_bernoulli_mgf
from dpaudit.validation import check_probability

__all__ = ["CONTRIBUTION_ALPHA", "LAMBDAS", "ContributionRecord", "ContributionReading",
           "ContributionAccumulator", "check_contribution", "private_canaries", "planted_mask",
           "planted_steps", "sentinel_directions"]

#: false-alarm probability of the contribution check on a run that clips as claimed
CONTRIBUTION_ALPHA = 1e-6
#: the fixed grid of |lambda| (units 1 / C); each is used with both signs
LAMBDAS = 2.0 ** np.arange(-5, 4)


def planted_mask(planted: np.ndarray, n: int) -> np.ndarray:
    """(n,) booleans of the canaries planted at a step, from (n,) booleans or integer indices
    in [0, n); anything else is a ValueError naming ``planted``."""
    p = np.asarray(planted)
    if p.dtype == bool:
        if p.shape != (n,):
            raise ValueError(f"planted must be (n,) = ({n},) booleans or indices in [0, {n}); "
                             f"got booleans of shape {p.shape}")
        return p
    if p.size and (p.ndim != 1 or not np.issubdtype(p.dtype, np.integer)
                   or int(p.min()) < 0 or int(p.max()) >= n):
        raise ValueError(f"planted must be (n,) = ({n},) booleans or indices in [0, {n}); got "
                         f"{p.dtype} of shape {p.shape}"
                         + (f" in [{p.min()}, {p.max()}]" if p.ndim == 1
                            and np.issubdtype(p.dtype, np.number) else ""))
    mask = np.zeros(n, dtype=bool)
    mask[p.astype(np.int64)] = True
    return mask


def planted_steps(planted: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``planted`` as (steps, n) booleans of the readings' ``shape``; anything else is a
    ValueError naming ``planted``."""
    p = np.asarray(planted)
    if p.dtype != bool or p.shape != tuple(shape):
        raise ValueError(f"planted must be (steps, n) booleans of y's shape {tuple(shape)}; "
                         f"got {p.dtype} {p.shape}")
    return p


def _add_in_order(start: float, values: np.ndarray) -> float:
    """start + values[0] + values[1] + ..., as Python floats in that order."""
    for v in values.tolist():
        start += v
    return start


def private_canaries(plant_coords: np.ndarray, plant_values: np.ndarray,
                     read_coords: np.ndarray) -> np.ndarray:
    """(n,) True where no *other* canary plants a nonzero value on one of canary i's read
    coordinates (its background then holds no other canary's coin)."""
    pc = np.asarray(plant_coords)
    n = pc.shape[0]
    owner = np.broadcast_to(np.arange(n)[:, None], pc.shape)
    nz = np.asarray(plant_values) != 0
    key = np.unique(pc[nz].astype(np.int64) * max(n, 1) + owner[nz])  # (coord, owner), sorted
    pairs = np.stack([key // max(n, 1), key % max(n, 1)], axis=1)
    coords, first, counts = np.unique(pairs[:, 0], return_index=True, return_counts=True)
    rc = np.asarray(read_coords)
    if coords.size == 0:  # no canary plants a nonzero value: no background holds a coin
        return np.ones(n, dtype=bool)
    pos = np.clip(np.searchsorted(coords, rc), 0, coords.size - 1)
    planted_here = coords[pos] == rc
    only = pairs[first, 1][pos]
    own = np.arange(n)[:, None]
    clash = planted_here & ((counts[pos] > 1) | (only != own))
    return ~clash.any(axis=1)


def sentinel_directions(read_coords: np.ndarray, read_weights: np.ndarray,
                        tensors: np.ndarray | None = None
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The second reading of each canary (module docstring): weights (n, k) of the unit
    direction (u_main + e_sentinel) / sqrt(2) over the read slots; (n,) True where the
    canary has a sentinel -- its smallest nonzero read weight, below half its largest, on a
    coordinate of its own and, given ``tensors`` ((n, k) tensor of each read slot), on a
    tensor none of its main part uses; and (n,) the correct (flat-clipped) reading along
    that direction, in units of C."""
    w = np.asarray(read_weights, dtype=float)
    slot, has = _sentinel_slot(read_coords, w, tensors)
    rows = np.arange(w.shape[0])
    main = w.copy()
    main[rows, slot] = 0.0
    norm = np.linalg.norm(main, axis=1, keepdims=True)
    main = np.divide(main, norm, out=np.zeros_like(main), where=norm > 0)
    out = main.copy()
    out[rows, slot] = np.sign(w[rows, slot])
    out /= math.sqrt(2.0)
    out = np.where(has[:, None], out, 0.0)
    return out, has, np.einsum("ij,ij->i", out, w)


def sentinel_slots(read_coords: np.ndarray, read_weights: np.ndarray,
                   tensors: np.ndarray | None = None) -> np.ndarray:
    """(n, k) booleans: the read slot of each canary's sentinel (:func:`sentinel_directions`'
    rule), False everywhere for a canary without one."""
    slot, has = _sentinel_slot(read_coords, np.asarray(read_weights, dtype=float), tensors)
    out = np.zeros(np.shape(read_weights), dtype=bool)
    out[np.flatnonzero(has), slot[has]] = True
    return out


def _sentinel_slot(read_coords: np.ndarray, w: np.ndarray, tensors: np.ndarray | None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(n,) each canary's smallest nonzero read slot and (n,) whether it is a sentinel: below
    half the largest weight, a coordinate of its own, and (given ``tensors``) on a tensor none
    of the canary's other slots uses."""
    rc = np.asarray(read_coords)
    aw = np.abs(w)
    masked = np.where(aw > 0, aw, np.inf)
    slot = masked.argmin(axis=1)
    rows = np.arange(w.shape[0])
    small = masked[rows, slot]
    alone = (rc == rc[rows, slot][:, None]).sum(axis=1) == 1
    has = np.isfinite(small) & (small < 0.5 * aw.max(axis=1)) & alone
    if tensors is not None:
        t = np.asarray(tensors)
        t_sent = t[rows, slot][:, None]
        other = (t == t_sent) & (aw > 0)
        other[rows, slot] = False
        has &= ~other.any(axis=1)
    return slot, has


@dataclass(frozen=True, eq=False)
class ContributionRecord:
    """The sufficient statistics of the contribution check (module docstring).

    Attributes:
      view: which reading ("direction", "sentinel").
      sampling_rate: q of the canaries' coin.
      lambdas: (G,) the grid (both signs, or the positive side only), units 1 / C.
      centred_sum: S = sum (c - q) e.
      psi_sums: (G,) sum psi(lambda_g e) for each lambda.
      planted_sum: sum c (y - m) over the planted readings.
      amplitude_sum: sum c a over the planted readings.
      planted: number of planted readings counted.
      canaries: included canaries counted.
      steps: steps counted.
    """

    view: str
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
        return {"view": self.view, "planted": self.planted, "canaries": self.canaries,
                "steps": self.steps,
                "centred_sum": self.centred_sum,
                "contribution_estimate": _ratio(self.planted_sum, self.amplitude_sum)}


def _ratio(a: float, b: float) -> float | None:
    return float(a / b) if b > 0 else None


class ContributionAccumulator:
    """Running statistics of the contribution check, one :meth:`add` per released step
    (vectorised over canaries; O(G n) per step).

    Args:
      bits: (n,) the canaries' secret bits (only included canaries are counted).
      amplitude: (n,) each canary's reading after correct clipping, in units of C; or
        (R, n), R readings of the same values y tested with R amplitudes (``view`` then
        names them, R names): the ReleaseReader's "sentinel" and "sentinel_bound".  They
        share the centring m, the residuals y - m and the NumPy calls of each block
        (:meth:`records`, one record per amplitude, each equal to a one-amplitude
        accumulator's, the same floats).
      sampling_rate: q of the canaries' coin.
      use: (n,) optional further mask (e.g. :func:`private_canaries`).
      view: the reading's name (a sequence of R names for (R, n) amplitudes);
        ``upper_only``: test only the upper tail (lambda > 0).
    """

    def __init__(self, bits: np.ndarray, amplitude: np.ndarray | float, *,
                 sampling_rate: float, use: np.ndarray | None = None,
                 view: str | Sequence[str] = "direction", upper_only: bool = False) -> None:
        b = np.asarray(bits, dtype=bool)
        self.q = check_probability("sampling_rate", sampling_rate, open_low=True)
        mask = b if use is None else b & np.asarray(use, dtype=bool)
        if self.q >= 1:          # a sure coin: planted and unplanted steps cannot be compared
            mask = np.zeros_like(mask)
        self.index = np.flatnonzero(mask)
        self.n = b.size
        views = (view,) if isinstance(view, str) else tuple(view)
        amp = np.asarray(amplitude, dtype=float)
        if amp.ndim == 2 and amp.shape[0] != len(views):
            raise ValueError(f"amplitude must be (n,) or (R, n) with one view name per row; "
                             f"got {amp.shape} for {len(views)} view(s)")
        self.views = views
        self.view = views[0]
        self._amps = np.broadcast_to(amp, (len(views), self.n))[:, self.index].copy()
        self.amplitude = self._amps[0]
        self.lambdas = LAMBDAS.copy() if upper_only else np.concatenate([-LAMBDAS[::-1],
                                                                          LAMBDAS])
        k, r = self.index.size, len(views)
        self._off_sum = np.zeros(k)
        self._off_count = np.zeros(k)
        self._s = [0.0] * r
        self._psi = np.zeros((r, self.lambdas.size))
        self._planted_sum = 0.0
        self._amp_sum = [0.0] * r
        self._planted = 0
        self.steps = 0

    def add(self, y: np.ndarray, planted: np.ndarray) -> None:
        """One step: ``y`` (n,) the canaries' readings in units of C, ``planted`` (n,) bool
        (or indices) of the canaries planted at this step."""
        y = np.asarray(y, dtype=float)
        if y.shape != (self.n,):
            raise ValueError(f"y must have one reading per canary ({self.n}); got {y.shape}")
        self.add_steps(y[None], planted_mask(planted, self.n)[None])

    def add_steps(self, y: np.ndarray, planted: np.ndarray) -> None:
        """B successive steps at once: ``y`` (B, n) readings, ``planted`` (B, n) bool -- the
        sums of B calls of :meth:`add`, in one vectorised pass (O(G B n)).  Step t's centring
        m_t (the mean of each canary's unplanted readings before step t) is the running sum
        of the earlier rows, added in step order; each step's sums over canaries are formed
        as one step's, and added to the totals in step order."""
        y = np.asarray(y, dtype=float)
        if y.ndim != 2 or y.shape[1] != self.n:
            raise ValueError(f"y must have one row of n = {self.n} readings per step; got "
                             f"{y.shape}")
        p = planted_steps(planted, y.shape)
        self.steps += y.shape[0]
        if self.index.size == 0:
            return
        c = p[:, self.index].astype(float)
        yy = y[:, self.index]
        ok = np.isfinite(yy)               # a non-finite release is left out of the sums
        off = ok & (c == 0)
        off_sum = running_sums(self._off_sum, np.where(off, yy, 0.0))   # (B + 1, k)
        off_count = running_sums(self._off_count, off)
        m = np.divide(off_sum[:-1], off_count[:-1], out=np.zeros_like(yy),
                      where=off_count[:-1] > 0)
        amps = self._amps[:, None, :]                                   # (R, 1, k)
        if ok.all():                       # the usual steps: the same sums, fewer passes
            r = yy - m
            e = r - amps * c                                            # (R, B, k)
            cq = c - self.q
            amp = np.broadcast_to(amps, (amps.shape[0], *yy.shape))
        else:
            r = np.where(ok, yy - m, 0.0)
            e = np.where(ok, r - amps * c, 0.0)
            cq = np.where(ok, c - self.q, 0.0)
            amp = np.where(ok, amps, 0.0)
        self._psi = running_sums(self._psi, self._step_psi(r, c, ok))[-1]
        for j in range(e.shape[0]):
            self._s[j] = _add_in_order(self._s[j], np.einsum("bi,bi->b", cq, e[j]))
            self._amp_sum[j] = _add_in_order(self._amp_sum[j],
                                             np.einsum("bi,bi->b", c, amp[j]))
        self._planted_sum = _add_in_order(self._planted_sum, np.einsum("bi,bi->b", c, r))
        self._planted += int(np.count_nonzero((c != 0) & ok))
        self._off_sum = off_sum[-1]
        self._off_count = off_count[-1]

    def _step_psi(self, r: np.ndarray, c: np.ndarray, ok: np.ndarray) -> np.ndarray:
        """(B, R, G): per step, sum_i psi(lambda_g e_ti) over the canaries, e = r - a_j c
        (0 where not ``ok``).  An unplanted reading (c = 0) has e = r whatever the
        amplitude, so psi is evaluated once on r for every reading, and only the planted
        ones (about q of them) get, per amplitude, psi(lambda (r - a_j)) - psi(lambda r)
        added: R + 1 evaluations on the planted readings instead of R on all of them.  Each
        step's sum is formed as one step's (the readings of the canaries in order, then the
        planted corrections in order), so blocks of any size give the same floats."""
        base = sum_log_bernoulli_mgf(r, self.lambdas, self.q, centred=True)      # (G, B)
        out = np.repeat(base.T[:, None, :], self._amps.shape[0], axis=1)        # (B, R, G)
        rows, cols = np.nonzero((c != 0) & ok)          # row-major: by step, then canary
        if rows.size:
            rp = r[rows, cols]
            x = np.concatenate([rp[None], rp[None] - self._amps[:, cols]])       # (R+1, P)
            u = self.lambdas[:, None, None] * x
            v = log_bernoulli_mgf(u, self.q) - self.q * u                       # (G, R+1, P)
            corr = (v[:, 1:] - v[:, :1]).transpose(2, 1, 0)                    # (P, R, G)
            steps, first = np.unique(rows, return_index=True)
            out[steps] += np.add.reduceat(corr, first, axis=0)
        return out

    def records(self) -> tuple[ContributionRecord, ...]:
        """One record per amplitude (per view), in the order given."""
        return tuple(ContributionRecord(
            view=v, sampling_rate=self.q, lambdas=self.lambdas.copy(),
            centred_sum=self._s[j], psi_sums=self._psi[j].copy(),
            planted_sum=self._planted_sum, amplitude_sum=self._amp_sum[j],
            planted=self._planted, canaries=int(self.index.size), steps=self.steps)
            for j, v in enumerate(self.views))

    def record(self) -> ContributionRecord:
        """The record of a one-amplitude accumulator (the first view's otherwise)."""
        return self.records()[0]


@dataclass(frozen=True)
class ContributionReading:
    """Outcome of :func:`check_contribution`.

    Attributes:
      ok: False when the contributions differ from per-example clipping's.
      below: the canaries contribute less than per-example clipping gives (not the claimed
        mechanism).
      parts: a sentinel's tensor part reads more than flat per-example clipping gives (a
        tensor clipped on its own; not the claimed mechanism).
      above: more than C along a unit direction (the claim's sensitivity is exceeded).
      estimate: sum c (y - m) / sum c a along the read directions (1 under the claim; an
        estimate), or None.
      log_evidence: per reading ("direction", "sentinel", "sentinel_bound"), the largest
        lambda S - sum psi over its grid (lower side first for "direction").
      threshold: log(number of tests / alpha).
      planted: planted readings counted (read directions).
      alpha: the false-alarm probability on a run that clips as claimed.
    """

    ok: bool
    below: bool
    parts: bool
    above: bool
    estimate: float | None
    log_evidence: dict[str, tuple[float, ...]]
    threshold: float
    planted: int
    alpha: float

    def message(self) -> str:
        est = ("-" if self.estimate is None
               else f"~ {self.estimate:.3g} (estimate) times")
        head = (f"clipped contribution: {self.planted} planted canary readings contribute "
                f"{est} what per-example clipping to C gives")
        tail = (f" -- false-alarm probability below {self.alpha:g} on a run that clips as "
                "claimed")
        if self.above:
            return (head + "; an example moved the release by more than C along one "
                    "direction, more than any example's clipped gradient can (averaged-"
                    "gradient or per-tensor clipping, a larger clip norm, parameters outside "
                    "the clipping)" + tail)
        if self.parts:
            return (head + "; a canary's part on another tensor reads more than clipping "
                    "the whole gradient to C gives: the run is not the claimed mechanism "
                    "(a tensor clipped on its own: per-tensor clipping to C each exceeds C, "
                    "a per-layer budget C_l with sum C_l^2 = C^2 would not)" + tail)
        if self.below:
            return (head + "; less than per-example clipping gives: the run is not the "
                    "claimed mechanism (the batch's sum or mean clipped instead of each "
                    "example's, whose worst case -- a crafted batch -- has sensitivity 2 C; "
                    "or a smaller clip norm than claimed)" + tail)
        return head


def check_contribution(records: ContributionRecord | Sequence[ContributionRecord], *,
                       alpha: float = CONTRIBUTION_ALPHA) -> ContributionReading:
    """The planted canaries' contributions against per-example clipping (module docstring):
    one-sided tests on every reading ("direction": both sides; "sentinel": above the
    flat-clipped reading; "sentinel_bound": above C), union bound over the readings and the
    grid, false alarm at most ``alpha``.  The estimate is the "direction" record's."""
    alpha = check_probability("alpha", alpha, open_low=True)
    recs = [records] if isinstance(records, ContributionRecord) else list(records)
    if not recs:
        raise ValueError("records must hold at least one ContributionRecord")
    tests = sum(np.size(r.lambdas) for r in recs)
    thr = math.log(tests / alpha)
    evidence: dict[str, tuple[float, ...]] = {}
    for r in recs:
        lam = np.asarray(r.lambdas, dtype=float)
        log_m = lam * r.centred_sum - np.asarray(r.psi_sums, dtype=float)
        sides = [log_m[lam < 0], log_m[lam > 0]]
        evidence[r.view] = tuple(float(v.max()) if v.size else -math.inf for v in sides
                                 if v.size)
    direction = evidence.get("direction", (-math.inf, -math.inf))
    below = direction[0] >= thr
    above = direction[-1] >= thr or evidence.get("sentinel_bound", (-math.inf,))[0] >= thr
    parts = evidence.get("sentinel", (-math.inf,))[0] >= thr
    first = next((r for r in recs if r.view == "direction"), recs[0])
    return ContributionReading(ok=not (below or above or parts),
                               below=bool(below and not above), parts=bool(parts),
                               above=bool(above),
                               estimate=_ratio(first.planted_sum, first.amplitude_sum),
                               log_evidence=evidence, threshold=thr,
                               planted=first.planted, alpha=float(alpha))
