"""The plan's per-tensor queues (``_ballast``, ``_sentinels_elsewhere``) from one selection
per tensor (``randomness.random_tie_heads``): plans identical to the former definition --
one full ``random_tie_order`` of every coordinate, then a split by tensor -- kept here as the
reference, on layouts with tiny tensors (exhausted queues, the wrap and ``_with_room``),
ties, silent blocks, every shape and sentinel setting."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.canaries import Layout, dirac_plan, plan_gradient_canaries, with_sentinels
from dpaudit.canaries import plan as plan_module
from dpaudit.randomness import random_tie_order


# -- the former definitions (O(d log d) and O(tensors x d)), the reference -------------------
def _former_sentinels_elsewhere(layout: Layout, act: np.ndarray, used: np.ndarray, own: np.ndarray,
                         rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Sentinel coordinates for k canaries, each on a tensor its main part does not use
    (``own``: (k, tensors) booleans): the tensors, smallest first, each take an equal share
    (among the tensors still open to them) of the canaries still without one that may use
    it, in random order, at its least active coordinates, never shared; a second pass gives
    the rest to any tensor with room.  Returns
    (indices among the k canaries that got one, coordinates).  Loops run over tensors."""
    k, n_t = own.shape
    keep = np.ones(layout.dimension, dtype=bool)
    keep[used] = False
    free = np.flatnonzero(keep)
    free = free[random_tie_order(act[free], rng)]                  # by activity
    tf = layout.tensor_of(free)
    by_t = np.argsort(tf, kind="stable")                           # by tensor, stably
    free = free[by_t]
    bounds = np.searchsorted(tf[by_t], np.arange(n_t + 1))
    queues = [free[bounds[j]:bounds[j + 1]] for j in range(n_t)]
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


def _former_ballast(layout: Layout, act: np.ndarray, read: np.ndarray, rows: np.ndarray,
             kind: np.ndarray, spread: int, per_tensor: int,
             rng: np.random.Generator) -> np.ndarray:
    """(rows, spread) further coordinates of the spread canaries, never a read coordinate
    and never shared: per tensor, the unused coordinates in order of increasing activity
    ("block": the read coordinate's tensor; "tensors": slot j in tensor (j // per_tensor) of
    the read tensor followed by the silent other tensors).  Loops run over tensors and
    slots, not canaries."""
    order = random_tie_order(act, rng)
    order = order[~np.isin(order, read)]
    t_order = layout.tensor_of(order)
    queues = {int(t): order[t_order == t] for t in range(len(layout.sizes))}
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
            t = plan_module._with_room(int(t), sel.size, queues, taken, by_min)
            q = queues[t]
            if q.size == 0:
                raise ValueError("spread canaries need coordinates that no canary reads "
                                 "(too many canaries for this model)")
            idx = (taken[t] + np.arange(sel.size)) % q.size  # wraps only if exhausted
            out[sel, j] = q[idx]
            taken[t] += sel.size
    return out


# -- the comparison --------------------------------------------------------------------------
def _case(src: np.random.Generator):  # type: ignore[no-untyped-def]
    sizes = [int(x) for x in src.integers(1, 40, size=int(src.integers(2, 8)))]
    d = sum(sizes)
    kind = int(src.integers(4))
    if kind == 0:
        act = src.random(d)
    elif kind == 1:
        act = src.integers(0, 3, size=d).astype(float)          # many ties
    elif kind == 2:
        act = np.where(src.random(d) < 0.5, 0.0, src.random(d))   # silent coordinates
    else:
        act = np.zeros(d)
    n = int(src.integers(1, max(2, d // 3)))
    return Layout.from_sizes(sizes), act, n


@pytest.mark.parametrize("shapes", ["mixed", "tensors", "block", "dirac",
                                    {"dirac": 0.5, "tensors": 0.3, "block": 0.2}])
def test_plans_are_the_former_definitions(shapes, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    src = np.random.default_rng(abs(hash(str(shapes))) % (1 << 30))
    done = 0
    for _ in range(120):
        lay, act, n = _case(src)
        spread = int(src.integers(1, 6))
        per_tensor = int(src.integers(1, 3))
        sentinel = float(src.choice([0.0, 0.03, 0.2]))
        seed = int(src.integers(1 << 30))
        kw = dict(sampling_rate=0.1, shapes=shapes, spread=spread, per_tensor=per_tensor,
                  sentinel=sentinel)
        try:
            got = plan_gradient_canaries(lay, act, n, rng=np.random.default_rng(seed), **kw)
        except ValueError as e:
            with monkeypatch.context() as m:
                m.setattr(plan_module, "_ballast", _former_ballast)
                m.setattr(plan_module, "_sentinels_elsewhere", _former_sentinels_elsewhere)
                with pytest.raises(ValueError, match=str(e)[:30]):
                    plan_gradient_canaries(lay, act, n, rng=np.random.default_rng(seed), **kw)
            continue
        with monkeypatch.context() as m:
            m.setattr(plan_module, "_ballast", _former_ballast)
            m.setattr(plan_module, "_sentinels_elsewhere", _former_sentinels_elsewhere)
            want = plan_gradient_canaries(lay, act, n, rng=np.random.default_rng(seed), **kw)
        np.testing.assert_array_equal(got.plant_coords, want.plant_coords)
        np.testing.assert_array_equal(got.plant_values, want.plant_values)
        np.testing.assert_array_equal(got.read_coords, want.read_coords)
        np.testing.assert_array_equal(got.bits, want.bits)
        done += 1
    assert done >= 60


def test_dirac_sentinels_are_the_former_definition(monkeypatch: pytest.MonkeyPatch) -> None:
    src = np.random.default_rng(3)
    for _ in range(150):
        lay, act, n = _case(src)
        coords = src.choice(lay.dimension, size=n, replace=False)
        base = dirac_plan(coords, src.random(n) < 0.5, sampling_rate=0.1)
        seed = int(src.integers(1 << 30))
        a = None if src.random() < 0.2 else act
        got = with_sentinels(base, lay, a, np.random.default_rng(seed))
        with monkeypatch.context() as m:
            m.setattr(plan_module, "_sentinels_elsewhere", _former_sentinels_elsewhere)
            want = with_sentinels(base, lay, a, np.random.default_rng(seed))
        np.testing.assert_array_equal(got.plant_coords, want.plant_coords)
        np.testing.assert_array_equal(got.plant_values, want.plant_values)
