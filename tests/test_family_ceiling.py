"""One rule at the top of a family's search range (issue 15), and large-mu conversions."""

from __future__ import annotations

import math

import pytest
from scipy import special

import dpaudit as da
from dpaudit.cli import main
from dpaudit.curves import Family, GaussianDP, LaplaceDP, SubsampledGaussianDP, resolve_family
from dpaudit.curves.gaussian import gdp_delta
from dpaudit.estimators.bits import bits
from dpaudit.estimators.mahloujifar import mahloujifar
from dpaudit.estimators.tight import tight


def _gdp_delta_mpmath_free(mu: float, eps: float) -> float:
    # independent evaluation: both terms through log-erfc, differenced in log space
    la = special.log_ndtr(-eps / mu + mu / 2)
    lb = eps + special.log_ndtr(-eps / mu - mu / 2)
    return math.exp(la) * -math.expm1(lb - la)


@pytest.mark.parametrize("mu", [1.0, 20.0, 28.0, 32.0, 100.0])
def test_gdp_epsilon_large_mu(mu):
    e = GaussianDP(mu).epsilon(1e-5)
    assert math.isfinite(e)
    # delta at the returned epsilon is the target, and slightly below it is above the target
    assert _gdp_delta_mpmath_free(mu, e) == pytest.approx(1e-5, rel=1e-8)
    assert _gdp_delta_mpmath_free(mu, e * (1 - 1e-6)) > 1e-5
    # mu^2/2 + mu z is the leading term of eps(delta) for large mu
    z = -special.ndtri(1e-5)
    assert e < mu * mu / 2 + mu * z


def test_gdp_epsilon_spec_value():
    assert GaussianDP(1.0).epsilon(1e-5) == pytest.approx(4.3772, abs=1e-4)
    assert gdp_delta(1.0, 4.377178) == pytest.approx(1e-5, rel=1e-5)


@pytest.mark.parametrize("mu,q", [(32.0, 0.5), (32.0, 0.01), (2.0, 0.2)])
def test_subsampled_epsilon_finite_at_family_top(mu, q):
    c = SubsampledGaussianDP(mu, q)
    e = c.epsilon(1e-5)
    assert math.isfinite(e) and c.delta(e) == pytest.approx(1e-5, rel=1e-6)
    assert e <= GaussianDP(mu).epsilon(1e-5)  # subsampling never hurts
    if mu == 2.0:
        assert e == pytest.approx(7.6204, abs=1e-4)  # TOR notes value used by the CLI test


FAMILIES = ["gdp", "laplace", "eps_delta", ("subsampled_gaussian", 0.5)]


@pytest.mark.parametrize("family", FAMILIES, ids=str)
def test_every_family_is_finite_at_its_ceiling(family):
    fam = resolve_family(family, 1e-5)
    e = fam.ceiling_epsilon(1e-5)
    assert math.isfinite(e) and e > 50


def _small(family):
    """The same family with a low ceiling, so that a strong audit hits it."""
    fam = resolve_family(family, 1e-5)
    hi = 1.5 if fam.param_name == "mu" else 4.0
    return Family(fam.name, fam.build, fam.lo, hi, fam.param_name)


@pytest.mark.parametrize("family", FAMILIES, ids=str)
@pytest.mark.parametrize("estimator", ["tight", "bits", "mahloujifar"])
def test_hitting_the_ceiling_reports_the_ceiling_epsilon(family, estimator):
    fam = _small(family)
    if estimator == "tight":
        r = tight(n=100_000, r=10_000, u=0, family=fam, delta=1e-5)
    elif estimator == "bits":
        r = bits(n=100_000, errors=0, family=fam, delta=1e-5, floor="information")
    else:
        r = mahloujifar(m=100_000, guesses=10_000, correct=10_000, family=fam, delta=1e-5)
    assert r.details["hit_ceiling"] is True
    assert r.epsilon == pytest.approx(fam.ceiling_epsilon(1e-5), rel=1e-9)
    assert math.isfinite(r.epsilon)


def test_subsampled_bits_at_real_ceiling_is_finite_not_inf():
    # used to return epsilon = inf (the numeric conversion capped eps at 500)
    r = bits(n=100_000, errors=0, family=("subsampled_gaussian", 0.5))
    assert r.details["hit_ceiling"] is True and r.params["mu"] == 32.0
    assert r.epsilon == pytest.approx(SubsampledGaussianDP(32.0, 0.5).epsilon(1e-5))
    assert r.epsilon == pytest.approx(641.8056, abs=1e-3)


def test_cli_says_at_the_ceiling(capsys):
    rc = main(["bound", "bits", "--canaries", "100000", "--wrong", "0",
               "--family", "subsampled_gaussian:0.5"])
    out = capsys.readouterr().out
    assert rc == 0 and "at the family's ceiling" in out and "641.8" in out


def test_laplace_ceiling_is_sixty():
    assert LaplaceDP(60.0).epsilon(0.0) == 60.0
    assert da.resolve_family("laplace").ceiling_epsilon(0.0) == 60.0


@pytest.mark.parametrize("estimator", ["tight", "bits", "mahloujifar"])
def test_gdp_family_at_delta_zero_is_an_error_not_infinity(estimator):
    # used to report epsilon >= inf: a false violation for a pure-DP mechanism
    with pytest.raises(ValueError, match="no finite epsilon at this delta"):
        if estimator == "tight":
            tight(n=1000, r=100, u=10, delta=0.0, family="gdp")
        elif estimator == "bits":
            bits(n=1000, errors=300, delta=0.0, family="gdp")
        else:
            mahloujifar(m=1000, guesses=100, correct=90, delta=0.0, family="gdp")
    # pure-DP families give a finite bound at delta = 0
    assert 0 < bits(n=1000, errors=300, delta=0.0, family="laplace").epsilon < 1
