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

More canaries than reserved coordinates (``pattern="signs"``).  Canary i's reserved input is
``value * u_i`` with u_i = s_i / sqrt(R), s_i a uniformly random sign vector over the R reserved
features (one-hot u_i = e_r(i) is ``pattern="one_hot"``, n <= R).  Real data still carries 0
there, so the first layer's weight W (width x R) on the reserved features gets no real-data
gradient at all, only canaries' (canary i's is value * delta_i u_i^T, delta_i its loss gradient
on the layer's output): n can exceed R.  Canary i is read along u_i; another canary j enters
that reading with weight u_i . u_j, which has mean 0 and variance 1 / R -- with n canaries,
q of each included half sampled per step, the readings of a non-member gain a variance of about
n q / (2 R) (in C^2) beside the noise's sigma^2, the price in power per canary.  Validity does
not depend on it: the one-run audit holds for any score of the output (Steinke, Nasr and
Jagielski 2023, Thm 3.1), and every canary is a record whose inclusion the DP guarantee
covers.

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
from dpaudit.validation import check_choice, check_count, check_positive, check_probability

__all__ = ["ReservedPlan", "plan_reserved_examples", "unit_rows", "RESERVED_PATTERNS"]

#: canary i's reserved input: "one_hot" (value on its own reserved feature, n <= R) or
#: "signs" (value * s_i / sqrt(R), a random sign vector over all R features; any n)
RESERVED_PATTERNS = ("one_hot", "signs")


@dataclass(frozen=True, eq=False)
class ReservedPlan:
    """n canary examples: secret bits, labels and each one's reserved input.  ``one_hot``:
    ``value`` on reserved feature ``reserved_index[i]`` (distinct indices); ``signs``:
    ``value * signs[i] / sqrt(reserved)`` (``signs`` an (n, reserved) array of +-1;
    ``reserved_index`` is then -1)."""

    bits: np.ndarray
    reserved_index: np.ndarray
    labels: np.ndarray
    value: float
    reserved: int
    sampling_rate: float
    pattern: str = "one_hot"
    signs: np.ndarray | None = None

    def units(self) -> np.ndarray:
        """(n, reserved) float64: canary i's unit pattern u_i over the reserved features (its
        reserved input is ``value * u_i``)."""
        if self.signs is not None:
            return self.signs.astype(float) / np.sqrt(self.reserved)
        u = np.zeros((self.n, self.reserved))
        u[np.arange(self.n), self.reserved_index] = 1.0
        return u

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
                "sampling_rate": self.sampling_rate, "pattern": self.pattern}


def plan_reserved_examples(n: int, *, reserved: int, num_classes: int, sampling_rate: float,
                           rng: np.random.Generator, value: float = 10.0,
                           pattern: str = "one_hot") -> ReservedPlan:
    """n canary examples on ``reserved`` reserved coordinates, uniformly random labels and
    i.i.d. fair secret bits.  ``pattern`` "one_hot" (n <= reserved: each canary its own
    feature) or "signs" (any n: a random sign vector over every reserved feature; module
    docstring)."""
    n = check_count("canaries", n, minimum=2)
    reserved = check_count("reserved", reserved, minimum=1)
    check_choice("pattern", pattern, RESERVED_PATTERNS)
    if pattern == "one_hot" and n > reserved:
        raise ValueError(f"canaries must be at most the {reserved} reserved coordinates (one "
                         f"each) with pattern 'one_hot'; got {n} (pattern 'signs' takes any "
                         f"number)")
    check_count("num_classes", num_classes, minimum=2)
    value = check_positive("value", value)
    sampling_rate = check_probability("sampling_rate", sampling_rate, open_low=True)
    if pattern == "one_hot":
        idx = rng.permutation(reserved)[:n].astype(np.int64)
        signs = None
    else:
        idx = np.full(n, -1, dtype=np.int64)
        signs = (2 * rng.integers(0, 2, size=(n, reserved)) - 1).astype(np.int8)
    labels = rng.integers(0, num_classes, size=n).astype(np.int64)
    bits = draw_bits(n, rng)
    return ReservedPlan(bits, idx, labels, float(value), reserved, float(sampling_rate),
                        pattern, signs)


def unit_rows(directions: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (a zero row stays zero: that canary reads 0)."""
    d = np.asarray(directions, dtype=float)
    norm = np.linalg.norm(d, axis=1, keepdims=True)
    return np.divide(d, norm, out=np.zeros_like(d), where=norm > 0)
