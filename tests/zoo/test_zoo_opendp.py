"""OpenDP findings: sized float variance / sum of squared deviations (opendp issue #2923) at the
pinned 0.14.2, exact values of the transformation and the black-box bound."""

import pytest
from zoo_needs import need  # noqa: E402

dp = need("opendp.prelude")

from dpaudit.zoo.audit import audit_entry  # noqa: E402
from dpaudit.zoo.opendp_zoo import entries  # noqa: E402

E = {e.key: e for e in entries()}
M = 2.0**50
N = 4096


def _transformation(stat):
    dp.enable_features("contrib")
    sized = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=N)
    return (sized, dp.symmetric_distance()) >> dp.t.then_clamp((M, M + 1.0)) >> stat()


def test_variance_moves_beyond_its_stated_sensitivity():
    # 4096 x (2^50 + 1/4): the float mean is exact, every deviation 0.  Replacing one record by
    # 2^50 + 1/2 moves the float mean to another grid point (the sum is rounded), so every one
    # of the 4096 deviations moves: the sum of squared deviations changes by 255.94 and the
    # variance (its 1/4095) by 0.0625, while the stability maps at d_in = 2 state 54.38 and
    # 0.01328 (the relaxation covers the rounding of the sums, not that of the mean)
    x = [M + 0.25] * N
    y = [M + 0.5] + x[1:]
    ssd = _transformation(dp.t.then_sum_of_squared_deviations)
    var = _transformation(dp.t.then_variance)
    assert abs(ssd(x) - ssd(y)) == pytest.approx(255.9375)
    assert ssd.map(2) == pytest.approx(54.3773, rel=1e-4)
    assert abs(var(x) - var(y)) == pytest.approx(0.0625)
    assert var.map(2) == pytest.approx(0.013279, rel=1e-4)


def test_variance_blackbox_bound_with_located_cause():
    e = E["opendp/variance-float-sized"]
    r = audit_entry(e, trials=1600, seed=0, confidence=0.99)
    assert r.tested_epsilon == pytest.approx(0.99842, rel=1e-4)
    assert r.epsilon_lb > 2.0 and r.verdict == "violation"
    assert r.cause == ("rust/src/transformations/sum_of_squared_deviations/mod.rs "
                       "(v0.14.2 tag):112")



def test_zcdp_rows_claim_the_measurements_own_rho():
    # make_gaussian(scale 1): rho = d_in^2 / (2 scale^2) = 1/2; make_noisy_max(scale 1):
    # the exponential mechanism at eps = 2 d_in / scale = 2, rho = eps^2 / 8 = 1/2
    assert E["opendp/gaussian-zcdp"].rho == pytest.approx(0.5)
    assert E["opendp/noisy_max-zcdp"].rho == pytest.approx(0.5)
    assert E["opendp/noisy_max-zcdp"].currency == "rho"


@pytest.mark.slow
def test_noisy_max_selects_by_gumbel_at_the_pinned_version():
    # opendp issue #2911 (permute-and-flip claimed at eps^2/8, filed on 0.15.1): at 0.14.2
    # P(index 0 | (1, -1)) is the exponential mechanism's 0.881, not permute-and-flip's 0.932
    import importlib.metadata

    from dpaudit.zoo.fixed import _odp_noisy_max_zcdp

    # the zoo extra pins opendp 0.14.2; another version here is a set-up error, not a skip
    assert importlib.metadata.version("opendp") == "0.14.2"
    reproduces, evidence = _odp_noisy_max_zcdp()
    assert reproduces is False and "0.881" in evidence
