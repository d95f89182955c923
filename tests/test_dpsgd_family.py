"""The null family of DP-SGD claims (issue 21): ProfileCurve and dpsgd_family.

Checked against independent computations: a single (eps, delta) line is EpsDeltaDP exactly;
ProfileCurve's closed-form conversions equal the generic numeric ones of the Curve base class;
the family is pointwise monotone, its members at and above the claim are dominated by the
accountant's claimed curve (trade-off and privacy profile), each member's epsilon is <= its
theta, and the claim node's theta is the accountant's claimed epsilon.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.curves import EpsDeltaDP, ProfileCurve, dpsgd_curve, dpsgd_family
from dpaudit.curves.base import numeric_delta, numeric_epsilon

DELTA = 1e-5
SIG, Q, T = 1.0, 0.05, 100
ALPHA = np.concatenate([[0.0], np.geomspace(1e-12, 1.0, 3000)])


def test_profile_curve_one_line_is_eps_delta():
    for e, d in ((1.0, 1e-5), (0.3, 0.0), (4.0, 0.2)):
        pc, ed = ProfileCurve([e], [d]), EpsDeltaDP(e, d)
        assert np.max(np.abs(pc.tradeoff(ALPHA) - ed.tradeoff(ALPHA))) < 1e-15
        assert pc.bit_error() == pytest.approx(ed.bit_error(), rel=1e-14)
        for x in (0.0, 0.5, e, 2 * e):
            assert pc.delta(x) == pytest.approx(ed.delta(x), abs=1e-14)
        assert pc.epsilon(d) == pytest.approx(e, rel=1e-12)


def test_profile_curve_conversions_match_the_generic_numeric_ones():
    eps = np.linspace(0.0, 6.0, 40)
    deltas = np.exp(-eps) * 0.3  # a decreasing profile
    pc = ProfileCurve(eps, deltas)
    # the curve is the maximum of the lines
    lines = np.max([EpsDeltaDP(e, d).tradeoff(ALPHA) for e, d in zip(eps, deltas, strict=True)],
                   axis=0)
    assert np.max(np.abs(pc.tradeoff(ALPHA) - lines)) < 1e-14
    for x in (0.0, 0.7, 2.0, 5.5):
        assert pc.delta(x) == pytest.approx(numeric_delta(pc, x), abs=1e-12)
        # the curve is (eps_i, delta_i)-DP at each of its own points
    assert all(pc.delta(e) <= d + 1e-14 for e, d in zip(eps, deltas, strict=True))
    for d in (1e-3, 1e-2, 0.1):
        assert pc.epsilon(d) == pytest.approx(numeric_epsilon(pc, d), abs=1e-8)


@pytest.fixture(scope="module")
def family():
    claim = dpsgd_curve(SIG, Q, T)
    return claim, claim.epsilon(DELTA), dpsgd_family(SIG, Q, T, DELTA)


@pytest.mark.slow
def test_claim_node_is_the_accountants_epsilon(family):
    claim, ce, fam = family
    assert ce in fam.build.thetas.tolist() and fam.lo < ce < fam.hi
    assert fam.assumption is not None  # on a user's (eps, delta) claim it is an assumption
    assert fam.param_name == "eps"


@pytest.mark.slow
def test_family_is_monotone_and_each_member_epsilon_is_at_most_theta(family):
    _, _, fam = family
    prev = None
    for th in np.linspace(fam.lo, fam.hi, 60):
        c = fam.curve(th)
        f = c.tradeoff(ALPHA)
        if prev is not None:
            assert np.all(f <= prev + 1e-15)
        prev = f
        assert c.epsilon(DELTA) <= th * (1 + 1e-9) + 1e-12


@pytest.mark.slow
def test_members_at_and_above_the_claim_are_dominated_by_it(family):
    claim, ce, fam = family
    eps = np.linspace(0.0, 3 * ce + 2, 200)
    claim_profile = np.asarray(claim.pld.get_delta_for_epsilon(eps))
    for th in (ce, ce * 1.01, 1.5 * ce, fam.hi):
        c = fam.curve(th)
        # privacy profile: the member is never more private than the accountant's claim
        member = np.array([c.delta(e) for e in eps])
        assert np.all(member >= claim_profile - 1e-12)
        # and the claim's own (eps, delta) statement implies the member's line (theta, delta)
        assert c.delta(th) <= DELTA * (1 + 1e-9)
    # below the claim, members are more private than the claim at its epsilon
    assert fam.curve(0.9 * ce).epsilon(DELTA) < ce


def test_delta_zero_and_bad_claim_are_refused():
    with pytest.raises(ValueError, match="delta"):
        dpsgd_family(SIG, Q, T, 0.0)
    with pytest.raises(ValueError, match="claimed_epsilon"):
        dpsgd_family(SIG, Q, T, DELTA, claimed_epsilon=-1.0)
    assert ProfileCurve([1.0], [0.0]).epsilon(0.0) == pytest.approx(1.0, rel=1e-12)


@pytest.mark.slow
def test_cached_family_never_skips_validation() -> None:
    # True == 1 hashes alike: a cached valid call must not stand in for a refused argument
    import pytest

    from dpaudit.curves.accounting import dpsgd_family

    dpsgd_family(1.0, 0.5, 16, 1e-5)
    with pytest.raises(ValueError, match="noise_multiplier"):
        dpsgd_family(True, 0.5, 16, 1e-5)
    with pytest.raises(ValueError, match="steps"):
        dpsgd_family(1.0, 0.5, 16.0 + 0j, 1e-5)
