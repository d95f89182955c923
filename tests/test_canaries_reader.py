"""ReleaseReader's block path (``add_steps``: B released steps in a few vectorised calls)
against a direct per-step, per-canary reference written from the definitions: the white-box
scores (Bits Transmission §6.4: sum_t log(1 - q + q exp((a y - a^2/2) / sigma^2))), the
released-noise sums of squares, and the contribution check's statistics (centring by the
mean of earlier unplanted readings, S = sum (c - q) e, sum psi(lambda e)) of both readings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.canaries import CanaryPlan, Layout, plan_gradient_canaries
from dpaudit.canaries.contribution import LAMBDAS, private_canaries, sentinel_directions
from dpaudit.canaries.reader import ReleaseReader
from dpaudit.canaries.scores import SIGMA_FLOOR


def _contribution_reference(y: np.ndarray, planted: np.ndarray, use: np.ndarray,
                            amp: np.ndarray, q: float, lambdas: np.ndarray) -> tuple:
    """S, sum psi per lambda, planted sum, amplitude sum, planted count -- one canary and
    one step at a time."""
    s, psi, psum, asum, count = 0.0, np.zeros(lambdas.size), 0.0, 0.0, 0
    for i in np.flatnonzero(use):
        earlier: list[float] = []
        for t in range(y.shape[0]):
            c = float(planted[t, i])
            if not math.isfinite(y[t, i]):
                continue
            m = float(np.mean(earlier)) if earlier else 0.0
            e = y[t, i] - amp[i] * c - m
            s += (c - q) * e
            psi += [math.log1p(q * math.expm1(lam * e)) - q * lam * e for lam in lambdas]
            if c:
                psum += y[t, i] - m
                asum += amp[i]
                count += 1
            else:
                earlier.append(y[t, i])
    return s, psi, psum, asum, count


Q = 0.3


def _planned(seed: int) -> tuple[np.random.Generator, Layout, CanaryPlan]:
    """(rng, layout, plan): 60 canaries at q = Q, their main parts in the silent tensors of
    300 and 200 coordinates, their sentinels on the busy ones of 12 and 6."""
    rng = np.random.default_rng(seed)
    layout = Layout.from_sizes([300, 12, 200, 6])
    act = np.r_[np.zeros(300), np.ones(12), np.zeros(200), np.ones(6)]
    return rng, layout, plan_gradient_canaries(layout, act, 60, sampling_rate=Q, rng=rng)


def test_blocks_of_steps_equal_a_per_step_reference() -> None:
    rng, layout, plan = _planned(3)
    q = Q
    steps = 23
    values = rng.standard_normal((steps, *plan.read_coords.shape)) * 1.3
    planted = (rng.random((steps, plan.n)) < q) & plan.bits
    values[planted] += plan.read_weights[np.nonzero(planted)[1]]
    values[5, 3, 0] = np.nan                       # a non-finite release is left out
    sigmas = np.full(steps, 1.2)
    sigmas[[4, 9]] = (0.0, np.nan)                 # scored at SIGMA_FLOOR, never refused

    reader = ReleaseReader(plan, max_grad_norm=1.0, layout=layout)
    reader.add(values[0], sigmas[0], np.flatnonzero(planted[0]))     # indices
    reader.add_steps(values[1:9], sigmas[1:9], planted[1:9])
    reader.add(values[9], sigmas[9], planted[9])                      # booleans
    reader.add_steps(values[10:], sigmas[10:], planted[10:])

    y = np.einsum("tij,ij->ti", values, plan.read_weights)
    a = plan.amplitude
    sig = np.where(sigmas >= SIGMA_FLOOR, sigmas, SIGMA_FLOOR)[:, None]
    with np.errstate(invalid="ignore"):                 # the NaN release
        lr = np.logaddexp(math.log1p(-q), math.log(q) + (a * y - a * a / 2) / sig ** 2)
    np.testing.assert_allclose(reader.scores("lr"), lr.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(reader.scores("sum"), a * y.sum(axis=0) - q * steps * a * a / 2,
                               rtol=1e-12)
    rec = reader.noise_record()
    # the noise check reads each distinct coordinate once, the sentinels (weight 0.03, on
    # busy tensors by design) left out
    distinct = np.unique(plan.read_coords.ravel(), return_index=True)[1]
    # (the main parts sit in the silent tensors 0 and 2: the 12 + 6 coordinates of tensors 1
    # and 3 hold the only sentinels)
    sentinel = np.isclose(np.abs(plan.read_weights), 0.03).ravel()
    assert sentinel.sum() == 12 + 6
    distinct = distinct[~sentinel[distinct]]
    flat = values.reshape(steps, -1)[:, distinct]
    np.testing.assert_allclose(rec["noise_sum_squares"], (flat ** 2).sum(axis=1), rtol=1e-12)
    np.testing.assert_array_equal(rec["step_noise_multipliers"], sigmas)

    private = private_canaries(plan.plant_coords, plan.plant_values, plan.read_coords)
    w, has, sent_amp = sentinel_directions(plan.read_coords, plan.read_weights,
                                           layout.tensor_of(plan.read_coords))
    ys = np.einsum("tij,ij->ti", values, w)
    both = np.concatenate([-LAMBDAS[::-1], LAMBDAS])
    want = {"direction": _contribution_reference(y, planted, plan.bits & private, a, q, both),
            "sentinel": _contribution_reference(ys, planted, plan.bits & private & has,
                                                 sent_amp, q, LAMBDAS),
            "sentinel_bound": _contribution_reference(ys, planted, plan.bits & private & has,
                                                      np.ones(plan.n), q, LAMBDAS)}
    records = rec["contribution"]
    assert [r.view for r in records] == list(want) and has[plan.bits & private].sum() >= 5
    for r in records:
        s, psi, psum, asum, count = want[r.view]
        assert r.steps == steps and r.planted == count > 20
        assert r.centred_sum == pytest.approx(s, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(r.psi_sums, psi, rtol=1e-12)
        assert r.planted_sum == pytest.approx(psum, rel=1e-12)
        assert r.amplitude_sum == pytest.approx(asum, rel=1e-12)


def test_add_steps_refuses_misshapen_blocks() -> None:
    rng = np.random.default_rng(0)
    plan = plan_gradient_canaries(Layout.from_sizes([50, 50]), np.zeros(100), 5,
                                  sampling_rate=0.1, rng=rng)
    reader = ReleaseReader(plan)
    v = np.zeros((2, *plan.read_coords.shape))
    with pytest.raises(ValueError, match="values"):
        reader.add_steps(v[0], [1.0])
    with pytest.raises(ValueError, match="noise_multipliers"):
        reader.add_steps(v, [1.0])
    with pytest.raises(ValueError, match="planted"):
        reader.add_steps(v, [1.0, 1.0], np.zeros((2, 4), dtype=bool))
    with pytest.raises(ValueError, match="planted"):                 # not booleans
        reader.add_steps(v, [1.0, 1.0], np.zeros((2, plan.n)))
    # a refused block records nothing: the reader is as it was
    assert reader.steps == 0 and reader.noise_record()["noise_sum_squares"].size == 0
    reader.add_steps(v, [1.0, 1.0], np.zeros((2, plan.n), dtype=bool))
    assert reader.steps == 2 and reader.noise_record()["contribution"]


def test_the_distinct_coordinates_path_records_what_the_plan_ordered_path_records() -> None:
    # a step hook's path: the values at the distinct read coordinates (ascending), each
    # step's row in units of C times its unit -- the same records as add_steps on the
    # plan-ordered values in units of C, to rounding: scores, noise sums of squares (sentinels
    # left out), the contribution records of both readings, with a non-finite release
    rng, layout, plan = _planned(5)
    q = Q
    steps = 19
    flat = rng.standard_normal((steps, layout.dimension)) * 1.3   # whole released vectors / C
    planted = (rng.random((steps, plan.n)) < q) & plan.bits
    for t, i in zip(*np.nonzero(planted), strict=True):
        np.add.at(flat[t], plan.read_coords[i], plan.read_weights[i])
    flat[6, plan.read_coords[2, 0]] = np.nan
    sigmas = np.full(steps, 1.1)
    unit = rng.uniform(20, 80, steps)

    direct = ReleaseReader(plan, max_grad_norm=1.0, layout=layout)
    direct.add_steps(flat[:, plan.read_coords], sigmas, planted)
    reader = ReleaseReader(plan, max_grad_norm=1.0, layout=layout)
    assert np.array_equal(reader.distinct, np.unique(plan.read_coords))
    assert np.array_equal(reader.distinct[reader.inverse].reshape(plan.read_coords.shape),
                          plan.read_coords)
    raw = flat[:, reader.distinct] / unit[:, None]             # what the hook gathers
    reader.add_distinct_steps(raw[:7], sigmas[:7], planted[:7], unit=unit[:7])
    reader.add_distinct_steps(raw[7:], sigmas[7:], planted[7:], unit=unit[7:])

    # rtol 1e-12: the paths sum in other orders (sparse products, the unit applied after
    # the sum); measured here at most 6e-14 relative (the "lr" scores), 1e-14 elsewhere
    for kind in ("lr", "sum"):
        np.testing.assert_allclose(reader.scores(kind), direct.scores(kind), rtol=1e-12)
    got, want = reader.noise_record(), direct.noise_record()
    np.testing.assert_allclose(got["noise_sum_squares"], want["noise_sum_squares"],
                               rtol=1e-12)
    assert np.isnan(got["noise_sum_squares"][6]) and got["noise_coordinates"] == \
        want["noise_coordinates"]
    assert [r.view for r in got["contribution"]] == ["direction", "sentinel",
                                                     "sentinel_bound"]
    for a, b in zip(got["contribution"], want["contribution"], strict=True):
        assert a.planted == b.planted > 20 and a.steps == b.steps == steps
        for field in ("centred_sum", "planted_sum", "amplitude_sum"):
            assert getattr(a, field) == pytest.approx(getattr(b, field), rel=1e-12,
                                                      abs=1e-12)
        np.testing.assert_allclose(a.psi_sums, b.psi_sums, rtol=1e-12)

    with pytest.raises(ValueError, match="values must be"):
        reader.add_distinct_steps(raw[:2, :-1], sigmas[:2])
    with pytest.raises(ValueError, match="unit must"):
        reader.add_distinct_steps(raw[:2], sigmas[:2], unit=unit[:3])
    with pytest.raises(ValueError, match="noise_multipliers"):
        reader.add_distinct_steps(raw[:2], sigmas[:3])
