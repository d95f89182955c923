"""The framework-neutral canary core (NumPy only): plan, readings, scores, claim checks."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from dpaudit.canaries import (
    Claim,
    Layout,
    RunFacts,
    WhiteBoxAccumulator,
    check_claim,
    dirac_plan,
    last_iterate_scores,
    lr_step_scores,
    plan_gradient_canaries,
    plan_reserved_examples,
    planted_amplitude,
    unit_rows,
    with_sentinels,
)
from dpaudit.canaries.contribution import sentinel_directions
from dpaudit.canaries.scores import (
    SIGMA_FLOOR,
    log_bernoulli_mgf,
    running_sums,
    sum_log_bernoulli_mgf,
)


@pytest.mark.slow
def test_core_imports_no_framework() -> None:
    code = "import sys, dpaudit.canaries; print('torch' in sys.modules, 'jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


def test_layout_splits_flat_coordinates() -> None:
    lay = Layout.from_sizes([6, 2, 4])
    t, local = lay.split(np.array([0, 5, 6, 7, 8, 11]))
    assert t.tolist() == [0, 0, 1, 1, 2, 2] and local.tolist() == [0, 5, 0, 1, 0, 3]
    with pytest.raises(ValueError, match=r"coordinates must be in \[0, 12\)"):
        lay.tensor_of(np.array([12]))


def _plan(n: int = 60, seed: int = 0):  # type: ignore[no-untyped-def]
    lay = Layout.from_sizes([400, 30, 100, 250])
    act = np.r_[np.zeros(150), np.ones(630)]  # 150 silent coordinates in tensor 0
    return lay, plan_gradient_canaries(lay, act, n, sampling_rate=0.1, rng=np.random.default_rng(
        seed), shapes={"dirac": 0.5, "tensors": 0.25, "block": 0.25})


def test_plan_places_reads_on_silent_coordinates_and_shapes_as_documented() -> None:
    lay, p = _plan()
    assert (p.read_coords[:, 0] < 150).all()                       # least active first
    # every coordinate belongs to one canary only; spread canaries are read along their
    # planted direction, so every shape reads exactly C after correct clipping
    used = np.concatenate([np.unique(r) for r in p.read_coords])
    assert np.unique(used).size == used.size
    assert np.array_equal(p.read_coords, p.plant_coords)
    assert np.allclose(np.linalg.norm(p.plant_values, axis=1), 1000.0)
    assert np.allclose(p.amplitude, 1.0)
    assert {str(s) for s in p.shape} == {"dirac", "tensors", "block"}
    assert (p.shape == "dirac").sum() == 30 and (p.shape == "tensors").sum() == 15
    # only tensor 0 has silent coordinates here: "tensors" canaries stay in their tensor;
    # with silent coordinates in tensors 0 and 2, they take 2 coordinates in each of 2 tensors
    spread = p.shape != "dirac"
    t = lay.tensor_of(p.plant_coords)
    assert (t[:, :-2] == 0).all() and (t[~spread, :-1] == 0).all()
    # sentinels: each spread canary's second-last slot, over every OTHER tensor (biases and
    # norms included; the main parts are all in tensor 0 here), share 0.03 of the direction;
    # each Dirac canary's last slot, likewise (with_sentinels)
    assert np.array_equal(np.unique(t[spread, -2]), [1, 2, 3])
    assert np.allclose(p.plant_values[spread, -2], 1000.0 * 0.03)
    assert np.allclose(p.plant_values[spread, -1], 0.0)
    assert np.allclose(p.plant_values[~spread, -1], 1000.0 * 0.03)
    assert (t[~spread, -1] != 0).all()
    assert np.allclose(p.plant_values[~spread, 1:-1], 0.0)
    act2 = np.r_[np.zeros(150), np.ones(250), np.ones(30), np.zeros(100), np.ones(250)]
    p2 = plan_gradient_canaries(lay, act2, 20, sampling_rate=0.1, rng=np.random.default_rng(1),
                                shapes="tensors", spread=3, sentinel=0.0)
    t2 = lay.tensor_of(p2.plant_coords)
    assert np.array_equal(np.sort(t2, axis=1), np.repeat([[0, 0, 2, 2]], 20, axis=0)) or \
        np.array_equal(np.sort(t2, axis=1), np.repeat([[0, 0, 2, 2]], 20, axis=0)[:, ::-1])
    assert (act2[p2.plant_coords] == 0).all()


def test_with_sentinels_puts_each_dirac_canary_partly_on_another_tensor() -> None:
    lay = Layout.from_sizes([400, 30, 100, 5])              # w1, b1, w2, b2
    rng = np.random.default_rng(3)
    coords = rng.choice(400, 60, replace=False)
    bits = rng.random(60) < 0.5
    base = dirac_plan(coords, bits, sampling_rate=0.1)
    act = np.r_[np.zeros(400), np.arange(135.0)]           # busy tensors, rising activity
    p = with_sentinels(base, lay, act, np.random.default_rng(4))
    assert np.array_equal(p.bits, bits) and np.array_equal(p.plant_coords[:, 0], coords)
    t = lay.tensor_of(p.plant_coords)
    assert (t[:, 0] == 0).all() and (t[:, 1] != 0).all()   # never the canary's own tensor
    assert np.unique(p.plant_coords[:, 1]).size == 60      # never shared
    # the smallest tensors are served first, equal shares while there is room: b2's 5, then
    # b1 and w2 share the rest (27 + 28), each tensor's least active coordinates
    per_tensor = np.bincount(t[:, 1], minlength=4)
    assert per_tensor.tolist()[3] == 5 and per_tensor[1] + per_tensor[2] == 55
    assert abs(int(per_tensor[1]) - int(per_tensor[2])) <= 1
    assert set(p.plant_coords[t[:, 1] == 3, 1]) == set(range(530, 535))
    assert set(p.plant_coords[t[:, 1] == 1, 1]) == set(range(400, 400 + per_tensor[1]))
    s = 0.03
    assert np.allclose(p.plant_values, [[1000 * math.sqrt(1 - s * s), 1000 * s]])
    assert np.allclose(p.amplitude, 1.0)                    # correct clipping reads C
    # what the clipping flaws leave of canary 0 (independent arithmetic on its two parts, in
    # units of C), read along the contribution check's halfway direction
    v = p.plant_values[0]
    halfway = np.array([1.0, 1.0]) / math.sqrt(2)
    flat = v / np.linalg.norm(v)                             # correct: one L2 clip to C
    per_tensor_clip = v / np.abs(v)                          # each tensor's part to C alone
    weights_only = np.array([v[0] / abs(v[0]), v[1]])        # the sentinel's tensor unclipped
    assert halfway @ flat == pytest.approx((math.sqrt(1 - s * s) + s) / math.sqrt(2))
    assert halfway @ per_tensor_clip == pytest.approx(math.sqrt(2))
    assert halfway @ weights_only == pytest.approx((1 + 30) / math.sqrt(2))
    w, has, amp = sentinel_directions(p.read_coords, p.read_weights, t)
    assert has.all() and np.allclose(w, halfway) and np.allclose(amp, halfway @ flat)
    # a plan with sentinels already keeps them (no second one); sentinel 0: the plan itself;
    # bad input named
    assert with_sentinels(p, lay, act, rng) is p
    spread = plan_gradient_canaries(lay, act, 20, sampling_rate=0.1, rng=rng, shapes="tensors")
    assert with_sentinels(spread, lay, act, rng) is spread
    assert with_sentinels(base, lay, act, rng, 0.0) is base
    with pytest.raises(ValueError, match="sentinel"):
        with_sentinels(base, lay, act, rng, 1.0)
    with pytest.raises(ValueError, match="activity"):
        with_sentinels(base, lay, act[:10], rng)
    moved = type(base)(base.bits, base.read_coords + 1, base.read_weights, base.plant_coords,
                       base.plant_values, base.amplitude, base.shape, 0.1)
    with pytest.raises(ValueError, match="read_coords == plant_coords"):
        with_sentinels(moved, lay, act, rng)


def test_with_sentinels_leaves_a_canary_without_room_unchanged() -> None:
    # two tensors, the second with 3 coordinates: only 3 of 5 canaries on tensor 0 get one
    lay = Layout.from_sizes([10, 3])
    base = dirac_plan(np.arange(5), np.ones(5, dtype=bool), sampling_rate=0.1)
    p = with_sentinels(base, lay, None, np.random.default_rng(0))
    got = p.plant_values[:, 1] > 0
    assert got.sum() == 3 and (lay.tensor_of(p.plant_coords[got, 1]) == 1).all()
    assert np.allclose(p.plant_values[~got], [[1000.0, 0.0]])
    assert np.allclose(p.amplitude, 1.0)


def test_planted_amplitude_adds_repeated_coordinates() -> None:
    # (3 + 1) on coordinate 1 and 3 on coordinate 2: reading 4 / 5
    assert planted_amplitude(np.array([[1, 1, 2]]), np.array([[3.0, 1.0, 3.0]])) == \
        pytest.approx([0.8])


def test_readings_are_inner_products_with_unit_directions() -> None:
    rng = np.random.default_rng(1)
    u = rng.normal(size=50)
    coords = np.array([[3, 7], [10, 11], [0, 49]])
    w = unit_rows(rng.normal(size=(3, 2)))
    p = dirac_plan(np.array([1, 2, 3]), np.array([True, False, True]), sampling_rate=0.5)
    p = type(p)(p.bits, coords, w, p.plant_coords, p.plant_values, p.amplitude, p.shape, 0.5)
    assert np.allclose(p.read_flat(u), [u[c] @ wi for c, wi in zip(coords, w, strict=True)])
    assert np.allclose(last_iterate_scores(u[coords], np.zeros((3, 2)), w), p.read_flat(u))


@pytest.mark.parametrize("amp", [1.0, 1 / 3])
def test_lr_step_score_is_the_mixture_log_likelihood_ratio(amp: float) -> None:
    y, q, sigma = np.linspace(-3, 4, 15), 0.05, 0.8
    mix = (1 - q) * stats.norm.pdf(y, 0, sigma) + q * stats.norm.pdf(y, amp, sigma)
    assert np.allclose(lr_step_scores(y, q, sigma, amp), np.log(mix / stats.norm.pdf(y, 0, sigma)))


def test_log_bernoulli_mgf_is_log_one_minus_q_plus_q_exp() -> None:
    # the closed form where it does not overflow, NumPy's logaddexp beyond (to rounding)
    u = np.linspace(-30, 30, 601)
    for q in (1e-6, 0.05, 0.5, 0.999):
        np.testing.assert_allclose(log_bernoulli_mgf(u, q), np.log(1 - q + q * np.exp(u)),
                                   rtol=1e-13, atol=1e-15)
    far = np.array([-1e4, -800.0, 800.0, 1e4, -np.inf, np.inf])
    np.testing.assert_allclose(log_bernoulli_mgf(far, 0.05),
                               np.logaddexp(math.log1p(-0.05), math.log(0.05) + far),
                               rtol=1e-15)
    assert np.array_equal(log_bernoulli_mgf(u, 1.0), u)          # a sure coin: u itself
    assert np.isnan(log_bernoulli_mgf(np.array([np.nan]), 0.05)).all()


def test_least_active_is_the_lexsort_by_activity_then_a_random_priority() -> None:
    # many exact ties (silent coordinates, repeated values): one argsort plus a lexsort of
    # the tied entries gives the full lexsort's coordinates, and leaves the generator alike
    from dpaudit.canaries import least_active

    rng = np.random.default_rng(11)
    act = np.where(rng.random(5000) < 0.3, 0.0, rng.integers(0, 40, 5000) / 8)
    for n in (1, 700, 5000):
        got, ref = np.random.default_rng(n), np.random.default_rng(n)
        order = np.lexsort((ref.random(act.size), act))
        want = order[:n][ref.permutation(n)]
        np.testing.assert_array_equal(least_active(act, n, got), want)
        assert got.random() == ref.random()


def _decimal_mgf_sums(x: np.ndarray, lambdas: np.ndarray, q: float, centred: bool) -> np.ndarray:
    """sum_j log(1 - q + q e^(lambda x_j)) (- q lambda x_j) in 40-digit decimal arithmetic."""
    from decimal import Decimal, localcontext

    out = np.zeros((lambdas.size, x.shape[0]))
    with localcontext() as ctx:
        ctx.prec = 40
        dq = Decimal(q)
        for g, lam in enumerate(lambdas.tolist()):
            for r, row in enumerate(x.tolist()):
                total = Decimal(0)
                for v in row:
                    u = Decimal(lam) * Decimal(v)
                    total += (1 - dq + dq * u.exp()).ln() - (dq * u if centred else 0)
                out[g, r] = float(total)
    return out


def test_summed_log_bernoulli_mgf_on_a_grid_is_the_exact_sum() -> None:
    # the doubling grid (e^{2v} = (e^v)^2), an irregular grid (exp at every lambda) and |u|
    # beyond _DIRECT_MAX (the log-space form), against 40-digit decimal arithmetic; centred:
    # minus q u, the contribution check's psi.  The contract is a sum's: an absolute error
    # of at most 4 units in the last place of max(1, |u|) per term (the tiny row's terms,
    # about 1e-8, are not each accurate to 1e-12 relative; their sum is to 1e-15 absolute)
    rng = np.random.default_rng(7)
    x = np.vstack([rng.standard_normal(16), 0.01 * rng.standard_normal(16),
                   4 * rng.standard_normal(16)])
    grids = [np.concatenate([-2.0 ** np.arange(3, -6, -1), 2.0 ** np.arange(-5, 4)]),
             np.array([0.3, -0.7, 2.5, 0.31])]
    for lambdas in grids:
        for q in (0.05, 0.5):
            for centred in (False, True):
                want = _decimal_mgf_sums(x, lambdas, q, centred)
                got = sum_log_bernoulli_mgf(x, lambdas, q, centred=centred)
                ulps = 4 * 2.0 ** -52 * (1 + np.abs(lambdas[:, None, None] * x)).sum(axis=-1)
                assert got.shape == want.shape and np.all(np.abs(got - want) <= ulps)
    far = np.array([[100.0, -0.5, 2.0]])             # |u| = 800: the log-space form
    lam = np.array([-8.0, 8.0])
    np.testing.assert_allclose(sum_log_bernoulli_mgf(far, lam, 0.05),
                               _decimal_mgf_sums(far, lam, 0.05, False), rtol=1e-14)
    assert np.isnan(sum_log_bernoulli_mgf(np.array([[np.nan, 1.0]]), lam, 0.05)).all()
    assert sum_log_bernoulli_mgf(np.zeros((2, 0)), lam, 0.05).shape == (2, 2)


def test_running_sums_are_the_cumulative_sums_bit_for_bit() -> None:
    # wide rows are added row by row, narrow ones by np.cumsum: both the floats of the
    # cumulative sum (the same additions in the same order), for float and boolean rows,
    # NaN and infinity included
    rng = np.random.default_rng(5)
    for shape in [(32, 1000), (7, 64), (7, 63), (3, 2, 307), (32, 2, 9), (1, 500), (0, 500),
                  (9,)]:
        start = rng.standard_normal(shape[1:])
        rows = rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 8, size=shape)
        if rows.size > 4:
            rows.flat[[1, 3]] = [np.nan, np.inf]
        want = np.cumsum(np.concatenate([start[None], rows]), axis=0)
        got = running_sums(start, rows)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    coins = rng.random((32, 495)) < 0.9
    np.testing.assert_array_equal(running_sums(np.zeros(495), coins),
                                  np.cumsum(np.concatenate([np.zeros((1, 495)), coins]), axis=0))


def test_white_box_accumulator_sum_and_lr() -> None:
    rng = np.random.default_rng(2)
    ys = rng.normal(size=(7, 4))
    amp = np.array([1.0, 1.0, 0.5, 0.25])
    acc = WhiteBoxAccumulator(4, sampling_rate=0.1, amplitude=amp)
    for y in ys:
        acc.add(y, 1.5)
    assert np.allclose(acc.scores("sum"), amp * ys.sum(0) - 0.1 * 7 * amp ** 2 / 2)
    assert np.allclose(acc.scores("lr"), lr_step_scores(ys, 0.1, 1.5, amp).sum(0))
    # a step without noise (sigma = 0, as a user's loop may set it) is scored, never refused:
    # the training must go on; the claim checks report the step
    before = acc.scores("lr")
    acc.add(ys[0], 0.0)
    assert np.allclose(acc.scores("lr") - before, lr_step_scores(ys[0], 0.1, SIGMA_FLOOR, amp))
    assert np.all(np.isfinite(acc.scores("lr"))) and acc.steps == 8


def test_claim_checks_name_the_configuration_error() -> None:
    facts = RunFacts(steps=200, noise_multipliers=(0.5,), max_grad_norms=(1.0,))
    checks = check_claim(Claim(noise_multiplier=2.0, sampling_rate=0.05, steps=40,
                               max_grad_norm=1.0), facts)
    bad = {c.name: c for c in checks if not c.ok}
    assert set(bad) == {"steps", "noise_multiplier"}
    assert checks[0].ok is False and "took 200" in bad["steps"].message
    assert "used 0.5" in bad["noise_multiplier"].message
    good = check_claim(Claim(0.5, 0.05, 200, 1.0), facts)
    assert all(c.ok for c in good)


@pytest.mark.slow
def test_batch_checks_poisson_vs_fixed_size() -> None:
    n, q, t = 1347, 0.05, 200
    rng = np.random.default_rng(3)
    # false alarms on correct Poisson runs: none in 2,000 runs (each check is designed
    # for < 1e-6 per run)
    false = 0
    for b in rng.binomial(n, q, size=(2000, t)):
        false += not all(c.ok for c in check_claim(
            Claim(1.0, q, t), RunFacts(steps=t, batch_sizes=b, dataset_size=n,
                                       expected_batch_size=67.0)))
    assert false == 0
    fixed = np.full(t, 67)
    fixed[::20] = 60  # each epoch's short last batch does not hide fixed-size batches
    bad = [c.name for c in check_claim(Claim(1.0, q, t), RunFacts(
        steps=t, batch_sizes=fixed, dataset_size=n, expected_batch_size=67.0)) if not c.ok]
    assert bad == ["poisson_batches"]
    wrong_q = rng.binomial(n, 0.1, size=t)
    bad = [c.name for c in check_claim(Claim(1.0, q, t), RunFacts(
        steps=t, batch_sizes=wrong_q, dataset_size=n)) if not c.ok]
    assert bad == ["sampling_rate"]


def test_normalisation_check_flags_a_divisor_that_depends_on_n() -> None:
    # floor(N q): 3 * 0.5 -> 1 but 4 * 0.5 -> 2 (opacus #571 / #819); 1347 * 0.05 -> 67 for
    # N - 1, N and N + 1
    def norm_ok(n: int, q: float) -> bool:
        c = [c for c in check_claim(Claim(1.0, q, 1), RunFacts(
            steps=1, expected_batch_size=math.floor(n * q), dataset_size=n))
             if c.name == "normalisation"]
        return c[0].ok
    assert not norm_ok(3, 0.5) and norm_ok(1347, 0.05) and not norm_ok(1000, 0.05)


def test_reserved_examples_plan() -> None:
    p = plan_reserved_examples(40, reserved=64, num_classes=10, sampling_rate=0.1,
                               rng=np.random.default_rng(0))
    assert np.unique(p.reserved_index).size == 40 and p.reserved_index.max() < 64
    assert set(p.labels.tolist()) <= set(range(10))
    with pytest.raises(ValueError, match="reserved"):
        plan_reserved_examples(70, reserved=64, num_classes=10, sampling_rate=0.1,
                               rng=np.random.default_rng(0))
