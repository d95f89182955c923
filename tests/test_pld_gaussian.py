"""The DP-SGD accounting's fast paths equal dp_accounting's own computation.

``gaussian_pld`` is dp_accounting's ``from_gaussian_mechanism`` with its grid of deltas
computed at once, and ``_profile_deltas`` its ``get_delta_for_epsilon`` on a sorted grid
without the per-point loop.  Both evaluate the same formulas in the same order, so the check
is equality to the last bit (measured: 0.0 difference on every PMF point and grid delta of
these settings); ``dpsgd_family`` built on them therefore equals the family built on
dp_accounting's own calls, which the reference below recomputes independently.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.curves.accounting import (
    DPSGD_FAMILY_FACTORS,
    DPSGD_FAMILY_VDI,
    _dpsgd_family,
    _pld_epsilon,
    _profile_deltas,
    _upper_envelope,
    dpsgd_curve,
)
from dpaudit.curves.pld_gaussian import gaussian_pld

SETTINGS = [(1.0, 0.05, 1e-4), (0.4, 0.05, 2e-3), (2.0, 0.01, 1e-3), (0.8, 1.0, 1e-3)]


def _reference_pld(sigma: float, q: float, vdi: float):  # type: ignore[no-untyped-def]
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    return pld_lib.from_gaussian_mechanism(standard_deviation=sigma, sampling_prob=q,
                                           value_discretization_interval=vdi)


@pytest.mark.slow
@pytest.mark.parametrize(("sigma", "q", "vdi"), SETTINGS)
def test_gaussian_pld_is_dp_accountings_pmf_bit_for_bit(sigma: float, q: float,
                                                         vdi: float) -> None:
    ref, fast = _reference_pld(sigma, q, vdi), gaussian_pld(sigma, q, vdi)
    pairs = [(ref._pmf_remove, fast._pmf_remove)]
    if q < 1:
        pairs.append((ref._pmf_add, fast._pmf_add))
    for sa, sb in pairs:
        a, b = sa.to_dense_pmf(), sb.to_dense_pmf()  # small PMFs are sparse
        assert a._lower_loss == b._lower_loss
        assert a._infinity_mass == b._infinity_mass
        assert np.array_equal(a._probs, b._probs)


@pytest.mark.slow
@pytest.mark.parametrize(("sigma", "q", "steps"), [(1.0, 0.05, 300), (0.4, 0.05, 100),
                                                    (0.8, 1.0, 10)])
def test_profile_deltas_are_dp_accountings_deltas(sigma: float, q: float, steps: int) -> None:
    pld = dpsgd_curve(sigma, q, steps, value_discretization_interval=2e-3).pld
    grid = np.concatenate([np.linspace(0.0, 60.0, 240), [np.inf]])
    with np.errstate(all="ignore"):
        ref = np.asarray(pld.get_delta_for_epsilon(grid), dtype=float)
    assert np.array_equal(_profile_deltas(pld, grid), ref, equal_nan=True)


@pytest.mark.slow
def test_family_profiles_equal_dp_accountings_and_stay_above_the_fine_claim() -> None:
    """The family's node profiles are dp_accounting's coarse PLD deltas (recomputed here
    through its own public calls), and at and above the claim node they are >= the claim's
    fine (1e-4) profile: the family stays a not-less-private description of the claim."""
    sigma, q, t, delta = 1.0, 0.05, 60, 1e-5
    fine = dpsgd_curve(sigma, q, t)
    fam = _dpsgd_family(sigma, q, t, delta, fine.epsilon(delta), DPSGD_FAMILY_FACTORS,
                        DPSGD_FAMILY_VDI, 240).build
    grid = fam.eps_grid
    claim_row = int(np.flatnonzero(fam.thetas == fine.epsilon(delta))[0])
    coarse = _reference_pld(sigma, q, DPSGD_FAMILY_VDI).self_compose(t)
    with np.errstate(all="ignore"):
        ref = np.clip(np.nan_to_num(np.asarray(coarse.get_delta_for_epsilon(grid)), nan=1.0),
                      0.0, 1.0)
    # the claim's row is the coarse profile plus the documented 1e-12 of slack
    assert np.array_equal(fam.profiles[claim_row], np.minimum(ref + 1e-12, 1.0))
    fine_prof = np.asarray(fine.pld.get_delta_for_epsilon(grid), dtype=float)
    assert (fam.profiles[claim_row:] >= fine_prof[None, :]).all()


@pytest.mark.slow
@pytest.mark.parametrize(("sigma", "q", "steps"), [(1.0, 0.05, 300), (0.35, 0.05, 300),
                                                    (0.8, 1.0, 10)])
def test_node_epsilon_is_dp_accountings_to_rounding(sigma: float, q: float,
                                                    steps: int) -> None:
    """The family's node labels: dp_accounting's epsilon up to the rounding of NumPy's
    exponentials against ``math.exp`` summed over the PMF (measured <= 2e-14 relative on
    75 settings; 1e-12 leaves room, and any theta >= the claim keeps the family valid)."""
    pld = dpsgd_curve(sigma, q, steps, value_discretization_interval=2e-3).pld
    for delta in (1e-5, 1e-3, 0.1):
        assert _pld_epsilon(pld, delta) == pytest.approx(pld.get_epsilon_for_delta(delta),
                                                         rel=1e-12, abs=1e-15)


def test_upper_envelope_equals_the_sequential_hull() -> None:
    """The vectorised envelope against the sequential convex-hull stack (written out here)
    on lines of a privacy profile with nearly concurrent lines (deltas ~1e-12)."""
    rng = np.random.default_rng(0)
    eps = np.sort(rng.uniform(0.0, 30.0, 300))
    d = np.clip(np.exp(-eps) * 0.3 + 1e-12 * rng.random(300), 0.0, 1.0)
    ee = np.exp(eps)
    a = np.concatenate([1.0 - d, (1.0 - d) / ee, [0.0]])
    b = np.concatenate([ee, 1.0 / ee, [0.0]])
    order = np.lexsort((-a, -b))
    sa, sb = a[order], b[order]
    keep = np.concatenate([[True], sb[1:] != sb[:-1]])
    sa, sb = sa[keep], sb[keep]
    hull: list[int] = []
    for j in range(sa.size):
        while len(hull) >= 2:
            i, k = hull[-2], hull[-1]
            if (sa[i] - sa[j]) * (sb[i] - sb[k]) <= (sa[i] - sa[k]) * (sb[i] - sb[j]):
                hull.pop()
            else:
                break
        hull.append(j)
    ha, hb = sa[hull], sb[hull]
    alpha = np.concatenate([[0.0], np.geomspace(1e-14, 1.0, 2000)])
    ref = np.clip(np.max(ha[None, :] - hb[None, :] * alpha[:, None], axis=1), 0.0, 1.0)
    xs, ys = _upper_envelope(a, b)
    assert np.max(np.abs(np.interp(alpha, xs, ys) - ref)) < 1e-15


@pytest.mark.slow
def test_family_members_are_built_once_and_not_pickled() -> None:
    """A member revisited by a search is the same curve (built once); a pickled family
    (process pools) travels without its built members and rebuilds equal ones."""
    import pickle

    from dpaudit.curves import dpsgd_family

    fam = dpsgd_family(1.0, 0.05, 50, 1e-5).build
    m = fam(2.0)
    assert fam(2.0) is m
    copy = pickle.loads(pickle.dumps(fam))
    assert copy._members == {}
    alpha = np.linspace(0.0, 1.0, 101)
    assert np.array_equal(copy(2.0).tradeoff(alpha), m.tradeoff(alpha))


@pytest.mark.slow
@pytest.mark.parametrize(("sigma", "q", "vdi", "steps"), [(1.0, 0.05, 1e-4, 300),
                                                          (0.4, 0.05, 2e-3, 300),
                                                          (2.0, 0.01, 1e-3, 1000)])
def test_self_compose_is_dp_accountings_bit_for_bit(sigma: float, q: float, vdi: float,
                                                    steps: int) -> None:
    """Composition with the log-MGFs of all Chernoff orders in a few array passes: the same
    truncation bounds and the same PMFs as dp_accounting's ``self_compose``."""
    from dp_accounting.pld import common

    from dpaudit.curves.pld_gaussian import _convolve_bounds, self_compose

    base = _reference_pld(sigma, q, vdi)
    ref, fast = base.self_compose(steps), self_compose(base, steps)
    for one, a, b in [(base._pmf_remove, ref._pmf_remove, fast._pmf_remove),
                      (base._pmf_add, ref._pmf_add, fast._pmf_add)]:
        probs = one.to_dense_pmf()._probs
        assert _convolve_bounds(probs, steps, 1e-15) == common.compute_self_convolve_bounds(
            probs, steps, 1e-15)
        a, b = a.to_dense_pmf(), b.to_dense_pmf()
        assert a._lower_loss == b._lower_loss
        assert a._infinity_mass == b._infinity_mass
        assert np.array_equal(a._probs, b._probs)


@pytest.mark.slow
def test_convolve_bounds_equal_dp_accountings_on_random_pmfs() -> None:
    """The integer Chernoff bounds on 30 random PMFs (sizes 50-2,000, zeros included,
    T = 2-5,000): dp_accounting's exactly, near-integer bounds included."""
    from dp_accounting.pld import common

    from dpaudit.curves.pld_gaussian import _convolve_bounds

    rng = np.random.default_rng(1)
    for _ in range(30):
        n = int(rng.integers(50, 2000))
        p = rng.exponential(size=n) * (rng.random(n) > 0.2)
        p /= p.sum()
        t = int(rng.integers(2, 5000))
        assert _convolve_bounds(p, t, 1e-15) == common.compute_self_convolve_bounds(p, t, 1e-15)
