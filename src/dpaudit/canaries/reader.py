"""Read every released DP-SGD step at a canary plan's coordinates (framework-neutral).

One released step -> two records, both sufficient statistics (never the T x n transcript):

* the canaries' white-box readings y_{t,i} = <g~_t, w_i> / C
  (:class:`~dpaudit.canaries.scores.WhiteBoxAccumulator`, the white-box scores);
* the released-noise statistic S_t = sum of squares of the step's values / C at the plan's
  distinct read coordinates (:mod:`dpaudit.canaries.noise`: a step whose noise is below the
  claim's sigma C is reported by number);
* given which canaries the integration planted at the step, the contribution statistics
  (:mod:`dpaudit.canaries.contribution`: planted canaries contributing less or more than
  per-example clipping to C gives -- batch-sum or averaged-gradient clipping).

Every integration feeds it the same way -- the PyTorch ``GradientCanaries``, a hand-written
``torch.func`` loop (docs/training.md) and the JAX loop -- so the noise check is one
implementation for every framework.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import sparse

from dpaudit.canaries.contribution import (
    ContributionAccumulator,
    planted_mask,
    planted_steps,
    private_canaries,
    sentinel_directions,
    sentinel_slots,
)
from dpaudit.canaries.layout import Layout
from dpaudit.canaries.noise import distinct_mask, noise_sums_squares
from dpaudit.canaries.plan import CanaryPlan
from dpaudit.canaries.scores import WhiteBoxAccumulator
from dpaudit.validation import check_positive

__all__ = ["ReleaseReader"]


class ReleaseReader:
    """Readings of a plan's canaries and the released noise, one :meth:`add` per step.

    Args:
      plan: the canaries (read coordinates and weights, amplitude, sampling rate).
      max_grad_norm: C, the unit of the readings (recorded as ``noise_unit``).
      sampling_rate: q of the likelihood-ratio score (default: the plan's).
      layout: the coordinate space's tensors (optional): the contribution check's sentinel
        reading then uses only sentinels on a tensor apart from their canary's main part.
    """

    def __init__(self, plan: CanaryPlan, *, max_grad_norm: float = 1.0,
                 sampling_rate: float | None = None, layout: Layout | None = None) -> None:
        self.plan = plan
        self.unit = check_positive("max_grad_norm", max_grad_norm)
        q = plan.sampling_rate if sampling_rate is None else sampling_rate
        self.accumulator = WhiteBoxAccumulator(plan.n, sampling_rate=q,
                                               amplitude=plan.amplitude)
        # the released-noise check's coordinates: each distinct read coordinate but the
        # sentinels (on busy tensors by design: real gradients there only cost the check
        # power)
        self._mask = distinct_mask(plan.read_coords) & ~sentinel_slots(plan.read_coords,
                                                                       plan.read_weights)
        self._distinct = np.flatnonzero(self._mask)   # the same, as flat indices (per step)
        self._ss: list[float] = []
        self._sigmas: list[float] = []
        private = private_canaries(plan.plant_coords, plan.plant_values, plan.read_coords)
        self.contribution = ContributionAccumulator(plan.bits, plan.amplitude,
                                                    sampling_rate=q, use=private)
        # the second reading: halfway between a spread canary's main part and its sentinel
        # on another tensor, tested above the flat-clipped reading (not the claimed
        # mechanism) and above C (weaker) (dpaudit.canaries.contribution)
        tensors = None if layout is None else layout.tensor_of(plan.read_coords)
        self._sentinel_w, has, amp = sentinel_directions(plan.read_coords, plan.read_weights,
                                                         tensors)
        # the two sentinel readings share the readings ys and their centring: one
        # accumulator with two amplitudes (the flat-clipped reading, and C)
        self._sentinel = ContributionAccumulator(
            plan.bits, np.stack([amp, np.ones_like(amp)]), sampling_rate=q,
            use=private & has, view=("sentinel", "sentinel_bound"), upper_only=True)
        self._planted_steps = 0
        # the distinct read coordinates, ascending (a step hook reads each once:
        # :meth:`add_distinct_steps`), and the readings as sparse maps from their values
        self.distinct, inverse = np.unique(plan.read_coords.ravel(), return_inverse=True)
        #: plan.read_coords.ravel() == distinct[inverse]
        self.inverse = inverse.reshape(-1)
        self._wy = self._map(plan.read_weights)
        self._ws = self._map(self._sentinel_w) if self._sentinel.index.size else None
        self._noise_cols = self.inverse[self._distinct]

    def _map(self, weights: np.ndarray) -> sparse.csr_matrix:
        """(n, distinct) sparse matrix of the readings sum_j w_ij v(c_ij) as a map from the
        values at the distinct read coordinates."""
        n, k = self.plan.read_coords.shape
        m = sparse.csr_matrix((np.asarray(weights, dtype=float).ravel(),
                               (np.repeat(np.arange(n), k), self.inverse)),
                              shape=(n, self.distinct.size))
        m.eliminate_zeros()
        return m

    @property
    def steps(self) -> int:
        return self.accumulator.steps

    def add(self, values: np.ndarray, noise_multiplier: float,
            planted: np.ndarray | None = None) -> None:
        """Record one released step from its values at ``plan.read_coords`` ((n, k), in
        units of C of the noisy clipped SUM) and the sigma the step claims to use (a step
        with sigma = 0 is recorded, never refused).  ``planted``: the canaries planted at
        this step ((n,) booleans or indices; the integration's own Poisson coin), which
        turns on the contribution check when given at every step."""
        v = np.asarray(values, dtype=float)
        if v.shape != self.plan.read_coords.shape:
            raise ValueError(f"values must have the shape of plan.read_coords "
                             f"{self.plan.read_coords.shape}; got {v.shape}")
        mask = None if planted is None else planted_mask(planted, self.plan.n)[None]
        self.add_steps(v[None], (noise_multiplier,), mask)

    def add_steps(self, values: np.ndarray, noise_multipliers: np.ndarray | Sequence[float],
                  planted: np.ndarray | None = None) -> None:
        """Record B successive released steps at once: ``values`` (B, n, k), their sigmas
        (B,), ``planted`` (B, n) booleans or None -- what B calls of :meth:`add` record, in
        a few vectorised calls (the per-step sums over canaries and coordinates are formed
        as one step's, the totals added in step order)."""
        v = np.asarray(values, dtype=float)
        if v.ndim != 3 or v.shape[1:] != self.plan.read_coords.shape:
            raise ValueError(f"values must be (steps, *plan.read_coords.shape) = (B, "
                             f"{self.plan.read_coords.shape[0]}, "
                             f"{self.plan.read_coords.shape[1]}); got {v.shape}")
        y = np.einsum("bij,ij->bi", v, self.plan.read_weights)
        ys = (np.einsum("bij,ij->bi", v, self._sentinel_w) if self._ws is not None
              and planted is not None else None)
        self._add(y, ys, noise_sums_squares(v, self._distinct), noise_multipliers, planted)

    def add_distinct_steps(self, values: np.ndarray,
                           noise_multipliers: np.ndarray | Sequence[float],
                           planted: np.ndarray | None = None, *,
                           unit: np.ndarray | None = None) -> None:
        """The same from B steps' values at the distinct read coordinates
        (:attr:`distinct`, ascending): ``values`` (B, len(distinct)), each step's row in
        units of C times ``unit`` (B,) (default 1) -- what a step hook gathers, one value per
        coordinate however many canaries read it.  The readings are sparse products
        (scipy.sparse), the step's unit applied to them and not to every value; the same
        statistics as :meth:`add_steps` to rounding."""
        v = np.asarray(values, dtype=float)
        if v.ndim != 2 or v.shape[1] != self.distinct.size:
            raise ValueError(f"values must be (steps, len(distinct)) = (B, "
                             f"{self.distinct.size}); got {v.shape}")
        u = np.ones(v.shape[0]) if unit is None else np.asarray(unit, dtype=float)
        if u.shape != (v.shape[0],):
            raise ValueError(f"unit must have one value per step ({v.shape[0]}); got "
                             f"{u.shape}")
        vt = np.ascontiguousarray(v.T)       # (distinct, B): what the sparse products read
        y = (self._wy @ vt).T * u[:, None]
        ys = (None if self._ws is None or planted is None
              else (self._ws @ vt).T * u[:, None])
        w = vt[self._noise_cols]
        self._add(y, ys, np.einsum("jb,jb->b", w, w) * (u * u), noise_multipliers, planted)

    def _add(self, y: np.ndarray, ys: np.ndarray | None, ss: np.ndarray,
             noise_multipliers: np.ndarray | Sequence[float],
             planted: np.ndarray | None) -> None:
        """Record B steps from their readings ``y`` (B, n), sentinel readings ``ys`` (or
        None) and noise sums of squares ``ss`` (B,).  ``planted`` is checked before anything
        is recorded, so a refused block leaves the reader as it was."""
        sig = np.asarray(noise_multipliers, dtype=float).reshape(-1)
        p = None if planted is None else planted_steps(planted, y.shape)
        self.accumulator.add_steps(y, sig)          # (checks sig's length first)
        self._ss.extend(ss.tolist())
        self._sigmas.extend(sig.tolist())
        if p is not None:
            self.contribution.add_steps(y, p)
            if ys is not None:
                self._sentinel.add_steps(ys, p)
            self._planted_steps += y.shape[0]

    def add_flat(self, flat: np.ndarray, noise_multiplier: float,
                 planted: np.ndarray | None = None) -> None:
        """The same from the whole released vector (length d), in units of C."""
        self.add(np.asarray(flat, dtype=float)[self.plan.read_coords], noise_multiplier,
                 planted)

    def scores(self, kind: str = "lr") -> np.ndarray:
        """The white-box scores (:meth:`WhiteBoxAccumulator.scores`)."""
        return self.accumulator.scores(kind)

    def noise_record(self) -> dict[str, Any]:
        """The released-noise record as :class:`~dpaudit.canaries.RunFacts` fields:
        ``RunFacts(steps=T, **reader.noise_record())`` turns on the check (and the
        contribution check when every step was added with ``planted``)."""
        every = self._planted_steps == self.steps and self.steps > 0
        return {"noise_sum_squares": np.asarray(self._ss, dtype=float),
                "noise_coordinates": int(self._mask.sum()), "noise_unit": self.unit,
                "step_noise_multipliers": np.asarray(self._sigmas, dtype=float),
                "contribution": self._contribution_records() if every else ()}

    def _contribution_records(self) -> tuple[Any, ...]:
        recs = [self.contribution.record()]
        if self._sentinel.index.size:
            recs.extend(self._sentinel.records())
        return tuple(recs)
