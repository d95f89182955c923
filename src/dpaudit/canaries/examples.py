"""Canary *examples* on reserved input coordinates: canaries that take the user's real path.

Planted gradient canaries (:mod:`.plan`) are written into the optimizer's per-example
gradients by the auditor, with the auditor's own Poisson coin: they never meet the user's
data loader, sampler, batch sizes or normalisation, so they are blind to every sampling and
batching bug.  Canary examples are ordinary training examples that the user adds to the
training set: the user's sampler samples them, the model computes their loss, and the DP
optimizer clips, sums, noises and normalises their gradients like any other's.

To keep each canary individually readable, each owns a *reserved* input coordinate that real
data leaves at exactly zero:

* MLP / tabular: ``reserved`` extra input features (one per canary; real rows carry 0).
  Canary i's input is ``value`` on feature r(i) and 0 elsewhere, so the first layer's weight
  column r(i) receives gradient from canary i only -- exactly zero from real data (their
  feature is 0) and from every other canary (their feature r(i) is 0);
* embedding models: ``reserved`` extra vocabulary rows; canary i is a sequence of its own
  token r(i), so embedding row r(i) receives gradient from canary i only;
* CNNs and other models: give the head a side input of ``reserved`` features (zero for real
  data) -- the first case again, on the head's weights.

The reading direction of canary i at step t is its own gradient on its reserved coordinates
at the current parameters theta_t, normalised (a function of the released past, so valid
post-processing in the white-box threat model); the released noisy update is read along it
(:func:`unit_rows`, :meth:`CanaryPlan.read` on the same arrays).  Under correct DP-SGD the
reading of a non-member is exactly N(0, sigma^2) in units of C.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpaudit.canaries.plan import draw_bits
from dpaudit.validation import check_count, check_positive, check_probability

__all__ = ["ReservedPlan", "plan_reserved_examples", "unit_rows"]


@dataclass(frozen=True, eq=False)
class ReservedPlan:
    """n canary examples: secret bits, each one's reserved index (0 .. reserved - 1, distinct),
    label and the value written on its reserved coordinate."""

    bits: np.ndarray
    reserved_index: np.ndarray
    labels: np.ndarray
    value: float
    reserved: int
    sampling_rate: float

    @property
    def n(self) -> int:
        return int(self.bits.shape[0])

    @property
    def included(self) -> np.ndarray:
        """Indices of the canaries that join the training set (bit 1)."""
        return np.flatnonzero(self.bits)

    def to_dict(self) -> dict[str, object]:
        return {"canaries": self.n, "included": int(self.bits.sum()),
                "reserved": self.reserved, "value": self.value,
                "sampling_rate": self.sampling_rate}


def plan_reserved_examples(n: int, *, reserved: int, num_classes: int, sampling_rate: float,
                           rng: np.random.Generator, value: float = 10.0) -> ReservedPlan:
    """n canary examples on ``reserved`` reserved coordinates (n <= reserved), uniformly random
    labels and i.i.d. fair secret bits."""
    n = check_count("canaries", n, minimum=2)
    reserved = check_count("reserved", reserved, minimum=1)
    if n > reserved:
        raise ValueError(f"canaries must be at most the {reserved} reserved coordinates (one "
                         f"each); got {n}")
    check_count("num_classes", num_classes, minimum=2)
    value = check_positive("value", value)
    sampling_rate = check_probability("sampling_rate", sampling_rate, open_low=True)
    idx = rng.permutation(reserved)[:n].astype(np.int64)
    labels = rng.integers(0, num_classes, size=n).astype(np.int64)
    bits = draw_bits(n, rng)
    return ReservedPlan(bits, idx, labels, float(value), reserved, float(sampling_rate))


def unit_rows(directions: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (a zero row stays zero: that canary reads 0)."""
    d = np.asarray(directions, dtype=float)
    norm = np.linalg.norm(d, axis=1, keepdims=True)
    return np.divide(d, norm, out=np.zeros_like(d), where=norm > 0)
