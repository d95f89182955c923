"""The plan's per-tensor queues (``plan._tensor_queues``: the spread canaries' further
coordinates and the sentinels) from one capped selection per tensor
(``randomness.random_tie_heads``): plans identical to those made from the whole queues --
one full ``random_tie_order``, split by tensor, uncapped, the former definition, written out
here -- on layouts with tiny tensors (exhausted queues, the wrap and ``_with_room``), ties,
silent blocks, every shape and sentinel setting."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.canaries import Layout, dirac_plan, plan_gradient_canaries, with_sentinels
from dpaudit.canaries import plan as plan_module
from dpaudit.randomness import random_tie_order


def _whole_queues(layout, act, exclude, cap, rng, *, rank_excluded):  # type: ignore[no-untyped-def]
    """Every tensor's whole queue from one sort: the order of random_tie_order over every
    coordinate (or over the non-excluded ones), the excluded ones dropped, split by tensor,
    ``cap`` ignored."""
    ex = np.unique(exclude)
    if rank_excluded:
        order = random_tie_order(act, rng)
        order = order[~np.isin(order, ex)]
    else:
        free = np.setdiff1d(np.arange(layout.dimension), ex)
        order = free[random_tie_order(act[free], rng)]
    t = layout.tensor_of(order)
    return [order[t == j] for j in range(len(layout.sizes))]


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
                m.setattr(plan_module, "_tensor_queues", _whole_queues)
                with pytest.raises(ValueError, match=str(e)[:30]):
                    plan_gradient_canaries(lay, act, n, rng=np.random.default_rng(seed), **kw)
            continue
        with monkeypatch.context() as m:
            m.setattr(plan_module, "_tensor_queues", _whole_queues)
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
            m.setattr(plan_module, "_tensor_queues", _whole_queues)
            want = with_sentinels(base, lay, a, np.random.default_rng(seed))
        np.testing.assert_array_equal(got.plant_coords, want.plant_coords)
        np.testing.assert_array_equal(got.plant_values, want.plant_values)
