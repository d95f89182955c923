"""The canary plan of a one-run DP-SGD audit: secret bits, shapes, where to plant and read.

One-run game (Steinke, Nasr and Jagielski 2023, "Privacy Auditing with One (1) Training
Run", Alg. 1; "Privacy Audit as Bits Transmission" §3, Alg. 2): canary i's secret bit b_i is
an independent fair coin and the canary takes part in training iff b_i = 1.

Gradient canaries (planted; seed 000 §6.4 after Nasr et al. 2023, "Tight Auditing of
Differentially Private Machine Learning") are per-example gradients written straight into the
optimizer's per-example gradients.  Each canary has a *shape*:

* ``"dirac"`` -- ``scale C e_c``: all its mass on one read coordinate c (the classical Dirac
  canary).  Correct clipping leaves exactly ``C e_c``: amplitude 1.
* ``"tensors"`` -- mass ``rho`` on the read coordinate c and the rest spread, with random
  signs, over one coordinate in each of up to ``spread`` *other* parameter tensors ("ballast";
  never read).  Correct (whole-vector L2) clipping leaves ``rho C`` on c; clipping each tensor
  to C on its own (per-tensor clipping, or a norm computed over one tensor) leaves C, a
  1/rho-fold larger step.
* ``"block"`` -- the same, with the ballast on other coordinates of c's own tensor: a norm
  that is not the L2 norm of the whole per-example gradient (coordinate-wise clipping, an
  L-infinity norm) shows up as a step larger than ``rho C``.

Canaries are read only on their read coordinate(s) (``read_coords`` with unit
``read_weights``), which are the least active coordinates of the model (real data moves them
least) and never another canary's ballast.  ``amplitude`` is the reading of one sampled
canary under correct DP-SGD, in units of C: the signal the white-box score expects.

The plan is framework-neutral (NumPy): PyTorch and JAX integrations write ``plant_values`` x
C into the per-example gradients at ``plant_coords`` and read released updates at
``read_coords``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dpaudit.canaries.layout import Layout
from dpaudit.validation import check_count, check_positive, check_probability

__all__ = ["SHAPES", "DEFAULT_SHAPES", "CanaryPlan", "draw_bits", "plan_gradient_canaries",
           "least_active", "sample_steps", "planted_amplitude", "dirac_plan"]

SHAPES = ("dirac", "tensors", "block")
#: the default mix: half Dirac (tightest on correct training), a quarter each of the spread
#: shapes (which see per-tensor clipping and wrong norms).
DEFAULT_SHAPES: Mapping[str, float] = {"dirac": 0.5, "tensors": 0.25, "block": 0.25}


def draw_bits(n: int, rng: np.random.Generator) -> np.ndarray:
    """The one-run game's secret bits: n i.i.d. uniform bits (seed 000 Alg. 2)."""
    return rng.integers(0, 2, size=check_count("canaries", n, minimum=2)).astype(bool)


@dataclass(frozen=True, eq=False)
class CanaryPlan:
    """Everything about n canaries that the run does not decide.

    Attributes:
      bits: (n,) secret bits (included iff True).
      read_coords: (n, k) flat coordinates each canary is read on.
      read_weights: (n, k) unit-norm rows: canary i's reading of a released vector u is
        sum_j read_weights[i, j] u[read_coords[i, j]].
      plant_coords: (n, m) flat coordinates of the planted per-example gradient (m >= k;
        unused slots repeat a coordinate with value 0).
      plant_values: (n, m) the planted gradient's values in units of the clip norm C
        (values at a repeated coordinate add up).
      amplitude: (n,) the reading of a sampled canary after correct clipping, in units of C.
      shape: (n,) shape name of each canary (see module docstring).
      sampling_rate: the rate q at which an included canary is sampled each step.
    """

    bits: np.ndarray
    read_coords: np.ndarray
    read_weights: np.ndarray
    plant_coords: np.ndarray
    plant_values: np.ndarray
    amplitude: np.ndarray
    shape: np.ndarray
    sampling_rate: float

    def __post_init__(self) -> None:
        n = self.bits.shape[0]
        if self.read_coords.shape != self.read_weights.shape or self.read_coords.shape[0] != n:
            raise ValueError("read_coords and read_weights must be (n, k) arrays, one row per "
                             "canary")
        if self.plant_coords.shape != self.plant_values.shape or self.plant_coords.shape[0] != n:
            raise ValueError("plant_coords and plant_values must be (n, m) arrays, one row "
                             "per canary")
        check_probability("sampling_rate", self.sampling_rate, open_low=True)

    @property
    def n(self) -> int:
        return int(self.bits.shape[0])

    def read(self, values: np.ndarray) -> np.ndarray:
        """Canary readings of a released vector, given its values at ``read_coords``
        ((n, k) array): sum_j w_ij u[c_ij] (vectorised, no loop over canaries)."""
        return np.einsum("ij,ij->i", np.asarray(values, dtype=float), self.read_weights)

    def read_flat(self, flat: np.ndarray) -> np.ndarray:
        """Canary readings of a flat released vector (length d)."""
        return self.read(np.asarray(flat)[self.read_coords])

    def to_dict(self) -> dict[str, object]:
        """Summary of the plan (shapes and counts; the arrays are kept out)."""
        names, counts = np.unique(self.shape, return_counts=True)
        return {"canaries": self.n, "included": int(self.bits.sum()),
                "shapes": {str(a): int(b) for a, b in zip(names, counts, strict=True)},
                "sampling_rate": self.sampling_rate}


def least_active(activity: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """The n coordinates of smallest real-data activity (ties broken by a seeded random
    priority), in random order."""
    act = np.asarray(activity, dtype=float)
    n = check_count("canaries", n, minimum=1)
    if n > act.size:
        raise ValueError(f"canaries must be at most the model's {act.size} trainable "
                         f"coordinates (one read coordinate each); got {n}")
    order = np.lexsort((rng.random(act.size), act))
    return order[:n][rng.permutation(n)].astype(np.int64)


def _shape_counts(n: int, shapes: Mapping[str, float]) -> dict[str, int]:
    for k, v in shapes.items():
        if k not in SHAPES:
            raise ValueError(f"shapes must be among {', '.join(map(repr, SHAPES))}; got {k!r}")
        check_positive(f"shapes[{k!r}]", v)
    total = sum(shapes.values())
    names = list(shapes)
    counts = [int(np.floor(n * shapes[k] / total)) for k in names]
    counts[0] += n - sum(counts)
    return dict(zip(names, counts, strict=True))


def plan_gradient_canaries(layout: Layout, activity: np.ndarray, n: int, *,
                           sampling_rate: float, rng: np.random.Generator,
                           shapes: Mapping[str, float] | str = DEFAULT_SHAPES,
                           scale: float = 1000.0, rho: float = 1 / 3,
                           spread: int = 3) -> CanaryPlan:
    """Plan n planted gradient canaries (see module docstring).

    Args:
      layout: the trainable tensors (flat coordinate space of dimension d).
      activity: (d,) real-data activity of each coordinate (lower = better to read on).
      n: number of canaries.
      sampling_rate: Poisson rate q of an included canary per step.
      rng: source of the placement, the shapes' signs and the secret bits.
      shapes: a shape name or a mapping shape -> proportion.
      scale: norm of the planted gradient in units of C (>= 1, so that clipping acts).
      rho: the read coordinate's share of a spread canary's norm (0 < rho < 1).
      spread: ballast coordinates of a spread canary.
    """
    n = check_count("canaries", n, minimum=2)
    act = np.asarray(activity, dtype=float)
    if act.shape != (layout.dimension,):
        raise ValueError(f"activity must have one value per trainable coordinate "
                         f"({layout.dimension}); got shape {act.shape}")
    scale = float(scale)
    if not scale >= 1.0:
        raise ValueError(f"scale must be >= 1 (canary gradient at or above the clip norm); "
                         f"got {scale!r}")
    if not 0.0 < rho < 1.0:
        raise ValueError(f"rho must be in (0, 1); got {rho!r}")
    spread = check_count("spread", spread, minimum=1)
    if isinstance(shapes, str):
        shapes = {shapes: 1.0}
    counts = _shape_counts(n, shapes)
    read = least_active(act, n, rng)
    kind = np.repeat(np.array(list(counts), dtype=object), list(counts.values()))
    kind = kind[rng.permutation(n)]
    bits = draw_bits(n, rng)

    m = 1 + spread
    plant_c = np.repeat(read[:, None], m, axis=1)
    plant_v = np.zeros((n, m))
    plant_v[:, 0] = scale
    spread_rows = np.flatnonzero(kind != "dirac")
    if spread_rows.size:
        free = np.setdiff1d(np.arange(layout.dimension), read)  # never another canary's read
        if free.size == 0:
            raise ValueError("spread canaries need coordinates that no canary reads "
                             "(too many canaries for this model)")
        t_free = layout.tensor_of(free)
        t_read = layout.tensor_of(read)
        for name in ("tensors", "block"):
            rows = spread_rows[kind[spread_rows] == name]
            if rows.size == 0:
                continue
            plant_c[rows, 1:] = _ballast(name, t_read[rows], free, t_free, spread, rng)
        signs = rng.choice([-1.0, 1.0], size=(spread_rows.size, spread))
        plant_v[spread_rows, 0] = scale * rho
        plant_v[spread_rows, 1:] = signs * scale * np.sqrt(1 - rho ** 2) / np.sqrt(spread)
    amp = planted_amplitude(plant_c, plant_v)
    return CanaryPlan(bits=bits, read_coords=read[:, None], read_weights=np.ones((n, 1)),
                      plant_coords=plant_c, plant_values=plant_v, amplitude=amp,
                      shape=kind.astype(str), sampling_rate=float(sampling_rate))


def _ballast(name: str, t_read: np.ndarray, free: np.ndarray, t_free: np.ndarray,
             spread: int, rng: np.random.Generator) -> np.ndarray:
    """(rows, spread) ballast coordinates: in other tensors ("tensors"; cycling through the
    tensors other than the read coordinate's) or in the same tensor ("block").  Falls back
    to any free coordinate when a tensor has none to offer."""
    tensors = np.unique(t_free)
    out = np.empty((t_read.size, spread), dtype=np.int64)
    # vectorised over canaries: one random free coordinate of the wanted tensor per slot
    # (loops run over the few ballast slots and tensors only)
    by_tensor = {int(t): free[t_free == t] for t in tensors}
    for j in range(spread):
        want = t_read.copy()
        if name == "tensors":
            for r in np.unique(t_read):  # a handful of tensors, not canaries
                others = tensors[tensors != r]
                if others.size:
                    want[t_read == r] = others[j % others.size]
        for t in np.unique(want):
            sel = want == t
            pool = by_tensor.get(int(t), free)
            out[sel, j] = pool[rng.integers(0, pool.size, size=int(sel.sum()))]
    return out


def planted_amplitude(plant_coords: np.ndarray, plant_values: np.ndarray) -> np.ndarray:
    """Reading of each planted canary on its read coordinate (slot 0) after correct L2
    clipping to C, in units of C: (accumulated value at slot 0) / (L2 norm of the planted
    vector), where values at repeated coordinates add up (as the integrations write them)."""
    c = np.asarray(plant_coords)
    v = np.asarray(plant_values, dtype=float)
    same = c[:, :, None] == c[:, None, :]                       # (n, m, m)
    acc = np.einsum("ijk,ik->ij", same, v)                      # value of each slot's coordinate
    first = ~np.tril(same, k=-1).any(axis=2)                    # first slot of each coordinate
    norm = np.sqrt(np.where(first, acc * acc, 0.0).sum(axis=1))
    return np.divide(acc[:, 0], norm, out=np.zeros(c.shape[0]), where=norm > 0)


def sample_steps(bits: np.ndarray, sampling_rate: float, rng: np.random.Generator,
                 steps: int = 1) -> np.ndarray:
    """(steps, n) Poisson participation of planted canaries: an included canary (bit 1) is
    sampled at each step independently with probability q, an excluded one never."""
    q = check_probability("sampling_rate", sampling_rate, open_low=True)
    b = np.asarray(bits, dtype=bool)
    return (rng.random((check_count("steps", steps, minimum=1), b.size)) < q) & b


def dirac_plan(coordinates: np.ndarray, bits: np.ndarray, *, sampling_rate: float,
               scale: float = 1000.0) -> CanaryPlan:
    """Dirac canaries on given distinct coordinates with given bits (amplitude 1)."""
    c = np.asarray(coordinates, dtype=np.int64)
    b = np.asarray(bits, dtype=bool)
    if c.ndim != 1 or c.shape != b.shape:
        raise ValueError("coordinates and bits must be 1-d arrays of the same length")
    if np.unique(c).size != c.size:
        raise ValueError("coordinates must be distinct (one coordinate per canary)")
    scale = float(scale)
    if not scale >= 1.0:
        raise ValueError(f"scale must be >= 1 (canary gradient at or above the clip norm); "
                         f"got {scale!r}")
    n = c.size
    return CanaryPlan(bits=b, read_coords=c[:, None], read_weights=np.ones((n, 1)),
                      plant_coords=c[:, None], plant_values=np.full((n, 1), scale),
                      amplitude=np.ones(n), shape=np.full(n, "dirac"),
                      sampling_rate=float(sampling_rate))
