"""diffprivlib 0.6.6 findings: grey-box falsifications (exact values) and black-box bounds on
fresh trials, each with its cause located at the pinned version."""

import warnings

import numpy as np
import pytest
from zoo_needs import need  # noqa: E402

need("diffprivlib")

from dpaudit.greybox import replay  # noqa: E402
from dpaudit.greybox.diffprivlib_hooks import primitives  # noqa: E402
from dpaudit.zoo.audit import audit_entry  # noqa: E402
from dpaudit.zoo.diffprivlib_zoo import entries  # noqa: E402

E = {e.key: e for e in entries()}


def _seeded(entry):
    def run(data, seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return entry.mechanism(data, np.random.default_rng(seed))
    return run


@pytest.mark.parametrize("key,site,measured,declared", [
    # np.sum of 4096 x (2^50 + 1/4) vs one record 2^50: float sums differ by 1024 = 1024 (U-L)
    ("diffprivlib/sum-float", "diffprivlib/tools/utils.py:741", 1024.0, 1.0),
    # the mean: 1024 / 4096 against (U - L) / n = 1 / 4096
    ("diffprivlib/mean-float", "diffprivlib/tools/utils.py:295", 0.25, 1 / 4096),
    # the variance: 0.0624847... against (U-L)^2 (n-1)/n^2 = 4095/4096^2
    ("diffprivlib/var-float", "diffprivlib/tools/utils.py:453", 0.0624847412109375,
     4095 / 4096**2),
    # LinearRegression: sum x^2 = 2 vs 10001, declared sensitivity max(|0|, |0|)^2 = 0
    ("diffprivlib/LinearRegression", "diffprivlib/models/linear_regression.py:147", 9999.0,
     0.0),
])
def test_greybox_falsifies_the_declared_sensitivity(key, site, measured, declared):
    e = E[key]
    findings, t0, t1 = replay(_seeded(e), e.pairs[0].d0, e.pairs[0].d1, primitives(), seed=3)
    sens = [f for f in findings if f.kind == "sensitivity"]
    assert len(sens) == 1
    f = sens[0]
    assert f.site == site
    assert f.measured == pytest.approx(measured, rel=1e-12)
    assert f.declared == pytest.approx(declared, rel=1e-12)


@pytest.mark.parametrize("key", ["diffprivlib/Laplace", "diffprivlib/sum", "diffprivlib/mean",
                                 "diffprivlib/var", "diffprivlib/histogram",
                                 "diffprivlib/median", "diffprivlib/count_nonzero"])
def test_greybox_finds_nothing_on_correct_calls(key):
    e = E[key]
    for p in e.pairs:
        findings, _, _ = replay(_seeded(e), p.d0, p.d1, primitives(), seed=3)
        assert findings == []


@pytest.mark.parametrize("key,line", [
    ("diffprivlib/sum-float", "diffprivlib/tools/utils.py:736"),
    ("diffprivlib/LinearRegression", "diffprivlib/models/linear_regression.py:144"),
])
def test_blackbox_bound_above_the_claim_with_located_cause(key, line):
    r = audit_entry(E[key], trials=1200, seed=0, confidence=0.99)
    # tested claim = 2 x 0.5 (a replaced record; diffprivlib does not state its adjacency)
    assert r.tested_epsilon == 1.0
    assert r.epsilon_lb > 3.0 and r.verdict == "violation" and r.cause == line


def test_laplace_precision_outputs_near_zero_are_coarse_for_value_one():
    # value 1: 1 - scale * noise is exact in (-1/2, 1/2) and a multiple of 2^-53; value 0: the
    # noise alone, finer than 2^-53 in most draws near 0 (Haney et al. 2022, Section 3)
    e = E["diffprivlib/Laplace-precision"]
    score = e.scores[0]
    one = np.array([score(e.mechanism(1.0, np.random.default_rng(s))) for s in range(3000)])
    zero = np.array([score(e.mechanism(0.0, np.random.default_rng(s))) for s in range(3000)])
    assert one.sum() == 0
    # P(|noise| < 1/2) = 1 - e^-1/2 = 0.393 for Laplace(1); more than half of those are off-grid
    assert 0.15 < zero.mean() < 0.393


def test_laplace_precision_blackbox_bound_with_located_cause():
    r = audit_entry(E["diffprivlib/Laplace-precision"], trials=1200, seed=0, confidence=0.99)
    assert r.tested_epsilon == 1.0
    assert r.epsilon_lb > 2.0 and r.verdict == "violation"
    assert r.cause == "diffprivlib/mechanisms/laplace.py:149"
