"""The shared monotone search helpers."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.search import invert_decreasing, largest_rejected, solve_monotone


def test_largest_rejected_threshold():
    r = largest_rejected(lambda t: t < 1.2345, 0.0, 10.0, tol=1e-9)
    assert not r.nothing_rejected and not r.hit_ceiling
    assert r.theta == pytest.approx(1.2345, abs=1e-8)
    assert r.theta < 1.2345  # the returned end is always a rejected one


def test_largest_rejected_edges():
    assert largest_rejected(lambda t: False, 0.0, 1.0).nothing_rejected
    top = largest_rejected(lambda t: True, 0.0, 1.0)
    assert top.hit_ceiling and top.theta == 1.0


def test_solve_monotone_expands_bracket():
    x = solve_monotone(lambda v: v ** 2, 400.0, 0.0, 1.0)
    assert x == pytest.approx(20.0, rel=1e-10)
    with pytest.raises(ValueError, match="not reached"):
        solve_monotone(lambda v: -1.0, 0.0, 0.0, 1.0, expand=False)


def test_invert_decreasing_vectorised():
    y = np.array([0.1, 0.5, 0.9])
    x = invert_decreasing(lambda a: 1 - a ** 2, y)
    np.testing.assert_allclose(x, np.sqrt(1 - y), atol=1e-12)


def test_largest_rejected_batched_agrees_with_bisection():
    from dpaudit.search import largest_rejected_batched

    res, evals = largest_rejected_batched(lambda t: t < 2.71828, 0.0, 10.0, 1e-9, 9)
    assert res.theta == pytest.approx(2.71828, abs=1e-8) and res.theta < 2.71828
    assert evals < 120  # 7 new candidates per pass, ~11 passes for 1e-9 on [0, 10]
    assert largest_rejected_batched(lambda t: t < -1, 0.0, 1.0, 1e-6, 5)[0].nothing_rejected
