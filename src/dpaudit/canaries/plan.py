"""The canary plan of a one-run DP-SGD audit: secret bits, shapes, where to plant and read.

One-run game (Steinke, Nasr and Jagielski 2023, "Privacy Auditing with One (1) Training
Run", Alg. 1; "Privacy Audit as Bits Transmission" §3, Alg. 2): canary i's secret bit b_i is
an independent fair coin and the canary takes part in training iff b_i = 1.

Gradient canaries (planted; "Privacy Audit as Bits Transmission" §6.4, after Nasr et al.
2023, "Tight Auditing of Differentially Private Machine Learning") are per-example gradients
written straight into the optimizer's per-example gradients.  Each canary has a *shape*:

* ``"dirac"`` -- ``scale C e_c``: all its mass on one read coordinate c (the classical Dirac
  canary).  Correct clipping leaves exactly ``C e_c``: amplitude 1.
* ``"tensors"`` -- the same norm split equally over the read coordinate and one coordinate in
  each of ``spread`` *other* parameter tensors that have silent coordinates (zero real-data
  activity; e.g. the branch of :class:`dpaudit.training.ReservedModel`), cycling through
  them; without such a tensor, the read tensor itself.  With ``per_tensor`` > 1 each tensor
  holds ``per_tensor`` of the parts.  Correct clipping (L2 norm of the *whole* per-example
  gradient) leaves C along the canary's direction: amplitude 1.  Clipping each tensor to C
  on its own (per-tensor clipping; a norm computed over one tensor) leaves C on every part:
  the reading is sqrt(number of tensors) C, more than any example may contribute; clipping each
  coordinate reads sqrt(spread + 1) C.
* ``"block"`` -- the same with the parts on ``spread + 1`` coordinates of one tensor: a norm
  that is not the L2 norm (coordinate-wise clipping, an L-infinity norm) reads
  sqrt(spread + 1) C.

Sentinels.  The spread shapes sit on silent coordinates, so they never touch a bias or a
normalisation's scale: a loop that clips the weights but leaves the biases unclipped (or
any flaw confined to some tensors) would be invisible to them.  Each spread canary
therefore also puts a small share s (``sentinel``, default 0.03) of its unit direction on
one coordinate of a tensor its main part does not use, spread over *every* trainable
tensor (the smallest first, then equal shares; the least active free coordinate of that
tensor; never shared between canaries).  Correct clipping
still reads exactly C (amplitude 1: the canary is read along its whole direction).  If the
sentinel's tensor is left unclipped, the sentinel part keeps its planted size scale s C
and adds scale s^2 C to the reading (0.9 C at scale 1000): a reading of about 1.9 C, far
above what any example may contribute.  The price: real data moving the sentinel
coordinate enters the reading with weight s (variance s^2 = 0.0009 of its own).

Dirac canaries get one too (:func:`with_sentinels`; ``plan_gradient_canaries`` with
``shapes="dirac"``, and the trainers' Dirac canaries, unless ``sentinel=0``): a Dirac canary
lives in one tensor, so per-tensor clipping clips it to exactly C and a flaw confined to
other tensors never reaches it.  With a share s on a coordinate of *another* tensor (as a
spread canary's: never a tensor of its main part), correct clipping still reads C
along its direction (amplitude 1), while per-tensor clipping leaves C on each of its two
parts: along the halfway direction (u_main + e_sentinel) / sqrt(2) it reads sqrt(2) C,
against (sqrt(1 - s^2) + s) / sqrt(2) ~ 0.73 C after correct clipping -- the contribution
check's second reading (:mod:`dpaudit.canaries.contribution`); an unclipped sentinel tensor
keeps s x scale C = 30 C there.

Every canary is read along its own planted direction (``read_coords`` = ``plant_coords``,
unit ``read_weights``), so a correct run reads 1 (in units of C) per sampled step for every
shape.  Canaries never share a coordinate; the coordinates are taken in order of increasing
real-data activity (real data moving a read coordinate adds noise the audit cannot remove).

The plan is framework-neutral (NumPy): PyTorch and JAX integrations write ``plant_values`` x
C into the per-example gradients at ``plant_coords`` and read released updates at
``read_coords``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from dpaudit.canaries.contribution import sentinel_slots
from dpaudit.canaries.layout import Layout
from dpaudit.randomness import (  # draw_bits: the one-run game's secret bits (re-exported)
    draw_bits,
    random_tie_heads,
    random_tie_smallest,
)
from dpaudit.validation import check_count, check_positive, check_probability

__all__ = ["SHAPES", "DEFAULT_SHAPES", "CanaryPlan", "draw_bits", "plan_gradient_canaries",
           "least_active", "sample_steps", "planted_amplitude", "dirac_plan", "SENTINEL",
           "with_sentinels"]

SHAPES = ("dirac", "tensors", "block")
#: share of a spread canary's direction on its sentinel coordinate (module docstring)
SENTINEL = 0.03
#: the default: every canary spread over 3 tensors x 2 coordinates (``spread=5``,
#: ``per_tensor=2``).  With silent coordinates in several tensors it is as tight as a Dirac
#: canary on correct training (amplitude 1) and reads sqrt(3) C under per-tensor clipping or
#: a norm over one tensor, sqrt(6) C under coordinate-wise clipping.
DEFAULT_SHAPES: Mapping[str, float] = {"tensors": 1.0}


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
    return random_tie_smallest(act, n, rng)[rng.permutation(n)].astype(np.int64)


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
                           scale: float = 1000.0, spread: int = 5,
                           per_tensor: int = 2, rho: float | None = None,
                           sentinel: float = SENTINEL) -> CanaryPlan:
    """Plan n planted gradient canaries (see module docstring).

    Args:
      layout: the trainable tensors (flat coordinate space of dimension d).
      activity: (d,) real-data activity of each coordinate (lower = better to read on).
      n: number of canaries.
      sampling_rate: Poisson rate q of an included canary per step.
      rng: source of the placement, the shapes' signs and the secret bits.
      shapes: a shape name, "mixed" (:data:`DEFAULT_SHAPES`, the name the CLI and the docs
        use) or a mapping shape -> proportion.
      scale: norm of the planted gradient in units of C (>= 1, so that clipping acts).
      spread: coordinates of a spread canary besides its first (the least active).
      per_tensor: coordinates per tensor of a "tensors" canary.
      rho: kept for compatibility with the first version of this function, where a spread
        canary was read on one coordinate holding a share rho of its norm; spread canaries
        are now read along their whole planted direction, so only ``None`` is accepted.
      sentinel: share s of every canary's (unit) direction on one coordinate of a tensor its
        main part does not use, spread over *every* trainable tensor -- biases and norms
        included -- so that each tensor carries canaries (:func:`with_sentinels`; 0: none;
        see the module docstring).
    """
    n = check_count("canaries", n, minimum=2)
    sampling_rate = check_probability("sampling_rate", sampling_rate, open_low=True)
    act = np.asarray(activity, dtype=float)
    if act.shape != (layout.dimension,):
        raise ValueError(f"activity must have one value per trainable coordinate "
                         f"({layout.dimension}); got shape {act.shape}")
    scale = check_positive("scale", scale)
    if not scale >= 1.0:
        raise ValueError(f"scale must be >= 1 (canary gradient at or above the clip norm); "
                         f"got {scale!r}")
    if rho is not None:
        raise ValueError("rho is no longer used: spread canaries are read along their whole "
                         "planted direction (amplitude 1); leave rho unset")
    spread = check_count("spread", spread, minimum=1)
    per_tensor = check_count("per_tensor", per_tensor, minimum=1)
    sentinel = check_probability("sentinel", sentinel, open_high=True)
    if isinstance(shapes, str):
        # "mixed" is the CLI's and the docs' name of the default mix
        shapes = dict(DEFAULT_SHAPES) if shapes == "mixed" else {shapes: 1.0}
    counts = _shape_counts(n, shapes)
    read = least_active(act, n, rng)
    kind = np.repeat(np.array(list(counts), dtype=object), list(counts.values()))
    kind = kind[rng.permutation(n)]
    bits = draw_bits(n, rng)

    spread_rows = np.flatnonzero(kind != "dirac")
    m = 1 + spread + int(sentinel > 0 and spread_rows.size > 0)
    plant_c = np.repeat(read[:, None], m, axis=1)
    plant_v = np.zeros((n, m))
    plant_v[:, 0] = scale
    if spread_rows.size:
        plant_c[spread_rows, 1:1 + spread] = _ballast(layout, act, read, spread_rows, kind,
                                                      spread, per_tensor, rng)
        plant_v[spread_rows, :1 + spread] = scale / np.sqrt(1 + spread)
        if m > 1 + spread:
            used = np.unique(plant_c[:, :1 + spread])
            own = np.zeros((spread_rows.size, len(layout.sizes)), dtype=bool)
            np.put_along_axis(own, layout.tensor_of(plant_c[spread_rows, :1 + spread]), True,
                              axis=1)
            got, coord = _sentinels_elsewhere(layout, act, used, own, rng)
            rows = spread_rows[got]
            plant_c[rows, -1] = coord
            plant_v[rows, :1 + spread] *= np.sqrt(1 - sentinel ** 2)
            plant_v[rows, -1] = scale * sentinel
    plan = _plan_from_planted(bits, plant_c, plant_v, kind.astype(str), sampling_rate)
    dirac_rows = np.flatnonzero(kind == "dirac")
    if sentinel > 0 and dirac_rows.size:
        plan = _add_sentinels(plan, dirac_rows, layout, act, rng, sentinel)
    return plan


def _plan_from_planted(bits: np.ndarray, plant_c: np.ndarray, plant_v: np.ndarray,
                       shape: np.ndarray, sampling_rate: float) -> CanaryPlan:
    """The plan of canaries read along their whole planted direction (amplitude 1)."""
    read_w = plant_v / np.linalg.norm(plant_v, axis=1, keepdims=True)
    amp = planted_amplitude(plant_c, plant_v, plant_c, read_w)
    return CanaryPlan(bits=bits, read_coords=plant_c, read_weights=read_w,
                      plant_coords=plant_c, plant_values=plant_v, amplitude=amp,
                      shape=shape, sampling_rate=float(sampling_rate))


def with_sentinels(plan: CanaryPlan, layout: Layout, activity: np.ndarray | None,
                   rng: np.random.Generator, sentinel: float = SENTINEL) -> CanaryPlan:
    """``plan`` with a sentinel on every canary (module docstring, "Sentinels"): a share s
    (``sentinel``) of its unit direction moved onto one coordinate of a tensor its planted
    part does not use -- spread over every trainable tensor, biases and norms included,
    the smallest tensors served first, in each the least active free coordinate (``activity``:
    (d,) real-data activity, None: all alike), never shared -- the rest scaled by
    sqrt(1 - s^2).  Correct clipping still reads C (amplitude 1); per-tensor clipping reads
    sqrt(2) C along the halfway direction.  A canary no tensor has room for, or one that
    has a sentinel already (:func:`dpaudit.canaries.contribution.sentinel_slots`: a spread
    canary of :func:`plan_gradient_canaries`), keeps its plan.  ``sentinel=0`` returns
    ``plan`` unchanged.

    For plans read along their planted direction (``read_coords == plant_coords``, as
    :func:`dirac_plan`'s and :func:`plan_gradient_canaries`'); the bits and the main
    coordinates are the plan's."""
    s = check_probability("sentinel", sentinel, open_high=True)
    if s == 0:
        return plan
    if (plan.read_coords.shape != plan.plant_coords.shape
            or not np.array_equal(plan.read_coords, plan.plant_coords)):
        raise ValueError("plan must be read along its planted direction (read_coords == "
                         "plant_coords) to add sentinels")
    act = (np.zeros(layout.dimension) if activity is None
           else np.asarray(activity, dtype=float))
    if act.shape != (layout.dimension,):
        raise ValueError(f"activity must have one value per coordinate ({layout.dimension}); "
                         f"got shape {act.shape}")
    rows = np.flatnonzero(~sentinel_slots(plan.read_coords, plan.read_weights).any(axis=1))
    return _add_sentinels(plan, rows, layout, act, rng, s) if rows.size else plan


def _add_sentinels(plan: CanaryPlan, rows: np.ndarray, layout: Layout, act: np.ndarray,
                   rng: np.random.Generator, s: float) -> CanaryPlan:
    """A sentinel slot for the canaries ``rows`` of ``plan`` (:func:`with_sentinels`)."""
    c, v = plan.plant_coords, plan.plant_values
    t = layout.tensor_of(c)
    own = np.zeros((rows.size, len(layout.sizes)), dtype=bool)   # tensors of each main part
    np.put_along_axis(own, t[rows], True, axis=1)
    got, coord = _sentinels_elsewhere(layout, act, np.unique(c), own, rng)
    if got.size == 0:
        return plan
    plant_c = np.concatenate([c, c[:, :1]], axis=1)             # unused slot: value 0
    plant_v = np.concatenate([v, np.zeros((plan.n, 1))], axis=1)
    r = rows[got]
    norm = np.linalg.norm(v[r], axis=1)
    plant_v[r, :-1] *= np.sqrt(1 - s ** 2)
    plant_c[r, -1] = coord
    plant_v[r, -1] = s * norm
    return _plan_from_planted(plan.bits, plant_c, plant_v, plan.shape, plan.sampling_rate)


def _sentinels_elsewhere(layout: Layout, act: np.ndarray, used: np.ndarray, own: np.ndarray,
                         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Sentinel coordinates for k canaries, each on a tensor its main part does not use
    (``own``: (k, tensors) booleans): the tensors, smallest first, each take an equal share
    (among the tensors still open to them) of the canaries still without one that may use
    it, in random order, at its least active coordinates, never shared; a second pass gives
    the rest to any tensor with room.  Returns
    (indices among the k canaries that got one, coordinates).  Loops run over tensors."""
    k, n_t = own.shape
    # each canary takes at most one coordinate: a queue longer than k is never reached
    queues = _tensor_queues(layout, act, used, k, rng, rank_excluded=False)
    taken = [0] * n_t
    coord = np.full(k, -1, dtype=np.int64)
    order = rng.permutation(k)
    by_size = sorted(range(n_t), key=lambda j: layout.sizes[j])
    for final in (False, True):
        for i, j in enumerate(by_size):
            want = order[(coord[order] < 0) & ~own[order, j]]
            room = queues[j].size - taken[j]
            # the tensors from this one on that still have room for some canary without one
            left = (coord < 0)[:, None] & ~own[:, by_size[i:]]
            ways = sum(1 for u, jj in enumerate(by_size[i:])
                       if queues[jj].size > taken[jj] and left[:, u].any())
            share = want.size if final else -(-want.size // max(ways, 1))
            take = min(share, room)
            if take <= 0:
                continue
            coord[want[:take]] = queues[j][taken[j]:taken[j] + take]
            taken[j] += take
    got = np.flatnonzero(coord >= 0)
    return got, coord[got]


def _tensor_queues(layout: Layout, act: np.ndarray, exclude: np.ndarray, cap: int,
                   rng: np.random.Generator, *, rank_excluded: bool) -> list[np.ndarray]:
    """Per tensor, its coordinates outside ``exclude`` in order of increasing activity, ties
    by a random priority -- the order of ``random_tie_order`` over every coordinate
    (``rank_excluded``: the excluded ones drawn a priority too) or over the others only, then
    split by tensor, with ``rng`` advanced as that call advances it -- the first ``cap`` of
    each: one selection per tensor (:func:`dpaudit.randomness.random_tie_heads`), O(d), where
    the full order costs a sort of every coordinate."""
    ex = np.unique(np.asarray(exclude, dtype=np.int64))
    ends = np.append(layout.offsets, layout.dimension)
    if rank_excluded:
        in_t = np.bincount(layout.tensor_of(ex), minlength=len(layout.sizes))
        heads = random_tie_heads(act, ends, (in_t + cap).tolist(), rng)
        return [h[~np.isin(h, ex)][:cap] for h in heads]
    keep = np.ones(layout.dimension, dtype=bool)
    keep[ex] = False
    free = np.flatnonzero(keep)                  # the tensors are contiguous runs of it
    bounds = np.searchsorted(free, ends)
    return [free[h] for h in random_tie_heads(act[free], bounds, [cap] * len(layout.sizes),
                                              rng)]


def _ballast(layout: Layout, act: np.ndarray, read: np.ndarray, rows: np.ndarray,
             kind: np.ndarray, spread: int, per_tensor: int,
             rng: np.random.Generator) -> np.ndarray:
    """(rows, spread) further coordinates of the spread canaries, never a read coordinate
    and never shared: per tensor, the unused coordinates in order of increasing activity
    ("block": the read coordinate's tensor; "tensors": slot j in tensor (j // per_tensor) of
    the read tensor followed by the silent other tensors).  Loops run over tensors and
    slots, not canaries."""
    # the rows take rows x spread coordinates in all: a longer queue is never exhausted, so
    # neither the wrap below nor _with_room can tell it from the whole tensor's
    queues = dict(enumerate(_tensor_queues(layout, act, read, rows.size * spread, rng,
                                           rank_excluded=True)))
    taken = dict.fromkeys(queues, 0)
    by_min = sorted(queues, key=lambda t: (act[queues[t]].min() if queues[t].size else np.inf))
    t_read = layout.tensor_of(read[rows])
    out = np.empty((rows.size, spread), dtype=np.int64)
    for j in range(spread):
        want = t_read.copy()
        tensors_shape = kind[rows] == "tensors"
        for r in np.unique(t_read[tensors_shape]):
            # only tensors with silent coordinates: real gradients on a read coordinate add
            # noise the audit cannot remove (no silent tensor: the read tensor itself)
            others = [int(r)] + [t for t in by_min if t != r and queues[t].size
                                 and act[queues[t][0]] == 0]
            want[tensors_shape & (t_read == r)] = others[((j + 1) // per_tensor)
                                                         % len(others)]
        for t in np.unique(want):
            sel = np.flatnonzero(want == t)
            t = _with_room(int(t), sel.size, queues, taken, by_min)
            q = queues[t]
            if q.size == 0:
                raise ValueError("spread canaries need coordinates that no canary reads "
                                 "(too many canaries for this model)")
            idx = (taken[t] + np.arange(sel.size)) % q.size  # wraps only if exhausted
            out[sel, j] = q[idx]
            taken[t] += sel.size
    return out


def _with_room(t: int, k: int, queues: dict[int, np.ndarray], taken: dict[int, int],
               by_min: list[int]) -> int:
    """Tensor ``t`` if it still has k unused coordinates, else the least active tensor that
    has (a small tensor -- a bias, a norm's scale -- whose coordinates are all read already
    must not stop the plan); ``t`` itself when none has."""
    if queues[t].size - taken[t] >= k:
        return t
    for u in by_min:
        if queues[u].size - taken[u] >= k:
            return u
    return t


def planted_amplitude(plant_coords: np.ndarray, plant_values: np.ndarray,
                      read_coords: np.ndarray | None = None,
                      read_weights: np.ndarray | None = None) -> np.ndarray:
    """Reading of each planted canary after correct L2 clipping to C, in units of C:
    <v / |v|, w> with v the planted vector (values at repeated coordinates add up, as the
    integrations write them) and w the unit read direction (default: slot 0 alone)."""
    c = np.asarray(plant_coords)
    v = np.asarray(plant_values, dtype=float)
    same = c[:, :, None] == c[:, None, :]                       # (n, m, m)
    acc = np.einsum("ijk,ik->ij", same, v)                      # value of each slot's coordinate
    first = ~np.tril(same, k=-1).any(axis=2)                    # first slot of each coordinate
    norm = np.sqrt(np.where(first, acc * acc, 0.0).sum(axis=1))
    if read_coords is None:
        dot = acc[:, 0]
    else:
        rc = np.asarray(read_coords)
        w = np.asarray(read_weights, dtype=float)
        hit = rc[:, :, None] == c[:, None, :]                   # read slot k sees plant slot l
        first_b = np.broadcast_to(first[:, None, :], hit.shape)
        dot = np.einsum("ik,ikl,il->i", w, hit & first_b, acc)
    return np.divide(dot, norm, out=np.zeros(c.shape[0]), where=norm > 0)


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
