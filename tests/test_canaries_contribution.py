"""The contribution check (dpaudit.canaries.contribution): planted canaries' contributions
against per-example clipping -- false alarms on simulated correct runs, detection of
batch-sum and averaged-gradient clipping, the exact statistic, the claim check."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.canaries import Claim, RunFacts, check_claim, dirac_plan
from dpaudit.canaries.contribution import (
    LAMBDAS,
    ContributionAccumulator,
    check_contribution,
    private_canaries,
)
from dpaudit.canaries.reader import ReleaseReader
from dpaudit.claim import falsified_by


def _run(rng: np.random.Generator, mode: str = "correct", *, n: int = 200, steps: int = 100,
         q: float = 0.05, drift: float = 0.0, alpha: float = 1e-6):  # type: ignore[no-untyped-def]
    """One simulated run: y = contribution * coin + N(0, 1) + drift (a per-canary offset
    growing over the run plus a shared oscillation, as real data on busy coordinates)."""
    bits = rng.random(n) < 0.5
    acc = ContributionAccumulator(bits, np.ones(n), sampling_rate=q)
    offset = drift * rng.standard_normal(n)
    for t in range(steps):
        c = (rng.random(n) < q) & bits
        k = int(c.sum())
        per = 1.0
        if mode == "batch_sum" and k:
            per = 1 / math.sqrt(k)          # k Dirac canaries share C
        elif mode == "averaged" and k:
            per = 20 / math.sqrt(k)         # the mean clipped to C, times B = 20
        y = (per * c + rng.standard_normal(n) + offset * (1 + t / steps)
             + drift * math.sin(t / 5))
        acc.add(y, c)
    return check_contribution(acc.record(), alpha=alpha)


@pytest.mark.slow
@pytest.mark.parametrize("drift", [0.0, 2.0])
def test_false_alarm_rate_on_correct_runs_is_at_most_alpha(drift: float) -> None:
    # the statistic is exact (a martingale), so drift of the background cannot raise the
    # rate; the union bound over the grid and Ville's inequality make it conservative
    # (0.7% observed at alpha = 0.3)
    rng = np.random.default_rng(10)
    alarms = [not _run(rng, n=40, steps=40, drift=drift, alpha=0.3).ok for _ in range(300)]
    rate = float(np.mean(alarms))
    assert rate <= 0.3 + 3 * math.sqrt(0.3 * 0.7 / 300)


@pytest.mark.slow
@pytest.mark.parametrize("drift", [0.0, 2.0])
def test_each_exponential_statistic_has_mean_one_on_correct_runs(drift: float) -> None:
    # E[exp(lambda S - sum psi(lambda e))] = 1 exactly under the claim (module docstring):
    # the Monte Carlo mean at lambda = +-1/16 over 400 runs with drifting backgrounds
    rng = np.random.default_rng(12)
    logs = []
    for _ in range(400):
        bits = rng.random(40) < 0.5
        acc = ContributionAccumulator(bits, np.ones(40), sampling_rate=0.05)
        offset = drift * rng.standard_normal(40)
        for t in range(20):
            c = (rng.random(40) < 0.05) & bits
            acc.add(c + rng.standard_normal(40) + offset * (1 + t / 20), c)
        rec = acc.record()
        pick = np.isclose(np.abs(rec.lambdas), 1 / 16)
        logs.append(rec.lambdas[pick] * rec.centred_sum - rec.psi_sums[pick])
    mean = np.exp(np.array(logs)).mean(axis=0)
    assert mean == pytest.approx([1.0, 1.0], abs=0.08)


@pytest.mark.slow
def test_no_false_alarm_at_the_default_alpha_and_detection_of_both_clipping_flaws() -> None:
    rng = np.random.default_rng(11)
    correct = [_run(rng) for _ in range(10)]
    assert all(r.ok for r in correct)
    assert all(abs(r.estimate - 1) < 0.15 for r in correct)      # type: ignore[operator]
    batch = [_run(rng, "batch_sum") for _ in range(10)]
    assert all(r.below and not r.above and not r.ok for r in batch)
    # the estimate is E[1 / sqrt(k) | planted] with k - 1 ~ Binomial(99, 0.05) (about 100
    # included canaries): computed independently here
    k = np.arange(1, 101)
    from scipy import stats

    want = float((stats.binom.pmf(k - 1, 99, 0.05) / np.sqrt(k)).sum())
    assert np.median([r.estimate for r in batch]) == pytest.approx(want, abs=0.05)
    averaged = [_run(rng, "averaged") for _ in range(5)]
    assert all(r.above and not r.ok for r in averaged)


def test_the_statistic_is_the_exponential_martingale_on_a_hand_computed_run() -> None:
    q = 0.25
    acc = ContributionAccumulator(np.array([True, True, False]), np.array([1.0, 0.5, 1.0]),
                                  sampling_rate=q)
    ys = [np.array([1.2, -0.3, 9.0]), np.array([0.1, 0.9, 9.0]), np.array([-0.4, 0.2, 9.0])]
    cs = [np.array([True, False, False]), np.array([False, True, False]),
          np.array([False, False, False])]
    for y, c in zip(ys, cs, strict=True):
        acc.add(y, c)
    # by hand: centring m = mean of earlier unplanted readings (0 before any)
    e = [(1.2 - 1.0 - 0.0, -0.3 - 0.0 - 0.0),          # step 1: both centred at 0
         (0.1 - 0.0 - 0.0, 0.9 - 0.5 - (-0.3)),         # canary 1 unplanted before: none
         (-0.4 - 0.0 - 0.1, 0.2 - 0.0 - (-0.3))]        # canary 0: its step-2 reading
    c = [(1, 0), (0, 1), (0, 0)]
    s = sum((ci - q) * ei for cs_, es in zip(c, e, strict=True)
            for ci, ei in zip(cs_, es, strict=True))
    rec = acc.record()
    assert rec.centred_sum == pytest.approx(s)
    lam = rec.lambdas[-1]
    psi = sum(math.log(1 - q + q * math.exp(lam * ei)) - q * lam * ei
              for es in e for ei in es)
    assert rec.psi_sums[-1] == pytest.approx(psi)
    assert rec.canaries == 2 and rec.planted == 2 and rec.steps == 3
    assert rec.planted_sum / rec.amplitude_sum == pytest.approx((1.2 + 1.2) / 1.5)
    r = check_contribution(rec)
    assert r.threshold == pytest.approx(math.log(2 * LAMBDAS.size / 1e-6))


def test_only_canaries_whose_reads_carry_no_other_canarys_gradient_are_counted() -> None:
    plant = np.array([[0, 1], [1, 2], [3, 3], [4, 5]])
    values = np.array([[1.0, 1.0], [1.0, 0.0], [2.0, 2.0], [1.0, 1.0]])
    read = np.array([[0, 1], [2, 2], [3, 3], [5, 4]])
    # canary 0 reads coordinate 1 on which canary 1 plants; canary 1's value at 2 is 0
    assert private_canaries(plant, values, read).tolist() == [False, True, True, True]
    # no canary plants anything: no background holds another canary's coin (it raised
    # IndexError)
    assert private_canaries(plant, np.zeros_like(values), read).tolist() == [True] * 4


def test_claim_check_words_and_weaker_only_above() -> None:
    rng = np.random.default_rng(3)
    plan = dirac_plan(np.arange(100), rng.random(100) < 0.5, sampling_rate=0.1)
    out = {}
    for mode, factor in (("correct", 1.0), ("below", 0.3), ("above", 3.0)):
        reader = ReleaseReader(plan, max_grad_norm=1.0)
        for _ in range(80):
            c = (rng.random(100) < 0.1) & plan.bits
            reader.add((factor * c + rng.standard_normal(100))[:, None], 1.0, c)
        checks = check_claim(Claim(1.0, 0.1, 80, 1.0), RunFacts(steps=80,
                                                                **reader.noise_record()))
        out[mode] = {ch.name: ch for ch in checks}["clipped_contribution"]
    assert out["correct"].ok and not out["correct"].weaker
    assert not out["below"].ok and not out["below"].weaker
    assert "not the claimed mechanism" in out["below"].message
    assert not out["above"].ok and out["above"].weaker
    assert "moved the release by more than C" in out["above"].message
    assert falsified_by([out["below"]]) == ()
    assert falsified_by([out["above"]]) == (out["above"].message,)


def test_the_check_is_off_unless_every_step_says_which_canaries_were_planted() -> None:
    plan = dirac_plan(np.arange(10), np.ones(10, dtype=bool), sampling_rate=0.5)
    reader = ReleaseReader(plan, max_grad_norm=1.0)
    reader.add(np.zeros((10, 1)), 1.0, np.arange(3))
    reader.add(np.zeros((10, 1)), 1.0)
    assert reader.noise_record()["contribution"] == ()


def test_a_sure_coin_turns_the_check_off_and_never_raises() -> None:
    # q = 1: every included canary is planted at every step, nothing to compare with
    acc = ContributionAccumulator(np.ones(4, dtype=bool), np.ones(4), sampling_rate=1.0)
    acc.add(np.ones(4), np.ones(4, dtype=bool))
    rec = acc.record()
    assert rec.planted == 0 and rec.canaries == 0 and rec.steps == 1
    facts = RunFacts(steps=1, contribution=(rec,))
    assert "clipped_contribution" not in {c.name for c in check_claim(
        Claim(1.0, 1.0, 1, 1.0), facts)}


def test_several_amplitudes_on_the_same_readings_are_the_one_amplitude_records() -> None:
    # the ReleaseReader's two sentinel readings share one accumulator (their readings and
    # centring); each record is the one-amplitude accumulator's, the same floats, with a
    # non-finite release and blocks of several sizes
    rng = np.random.default_rng(11)
    n, steps, q = 40, 37, 0.1
    bits, use = rng.random(n) < 0.6, rng.random(n) < 0.8
    amps = np.stack([0.5 + rng.random(n), np.ones(n)])
    y = rng.standard_normal((steps, n)) + 3.0 * rng.standard_normal(n)
    planted = (rng.random((steps, n)) < q) & bits
    y[planted] += 1.0
    y[5, 3] = np.nan
    shared = ContributionAccumulator(bits, amps, sampling_rate=q, use=use,
                                     view=("sentinel", "sentinel_bound"), upper_only=True)
    single = [ContributionAccumulator(bits, a, sampling_rate=q, use=use, view=v,
                                      upper_only=True)
              for a, v in zip(amps, ("sentinel", "sentinel_bound"), strict=True)]
    for a, b in ((0, 1), (1, 9), (9, 32), (32, steps)):
        shared.add_steps(y[a:b], planted[a:b])
        for acc in single:
            acc.add_steps(y[a:b], planted[a:b])
    got = shared.records()
    assert [r.view for r in got] == ["sentinel", "sentinel_bound"] and got[0].planted > 10
    for r, acc in zip(got, single, strict=True):
        want = acc.record()
        assert r.to_dict() == want.to_dict()
        assert (r.centred_sum, r.planted_sum, r.amplitude_sum) == (
            want.centred_sum, want.planted_sum, want.amplitude_sum)
        np.testing.assert_array_equal(r.psi_sums, want.psi_sums)
        np.testing.assert_array_equal(r.lambdas, want.lambdas)
    assert shared.record().view == "sentinel"
    with pytest.raises(ValueError, match="amplitude must be"):
        ContributionAccumulator(bits, amps, sampling_rate=q, view="sentinel")


def test_bad_input_names_the_argument() -> None:
    acc = ContributionAccumulator(np.ones(3, dtype=bool), np.ones(3), sampling_rate=0.1)
    with pytest.raises(ValueError, match="y must have one reading per canary"):
        acc.add(np.zeros(4), np.zeros(3, dtype=bool))
    with pytest.raises(ValueError, match="planted must be"):
        acc.add(np.zeros(3), np.zeros(4, dtype=bool))
    # indices outside [0, n), negative ones (which used to wrap around) and non-integers are
    # refused by the accumulator and by a loop's ReleaseReader alike (they raised IndexError
    # or counted another canary)
    plan = dirac_plan(np.arange(3), np.ones(3, dtype=bool), sampling_rate=0.5)
    reader = ReleaseReader(plan, max_grad_norm=1.0)
    for bad in (np.array([3]), np.array([-1]), np.array([0.5]), np.array([[0, 1]])):
        with pytest.raises(ValueError, match=r"planted must be \(n,\) = \(3,\)"):
            acc.add(np.zeros(3), bad)
        with pytest.raises(ValueError, match=r"planted must be \(n,\) = \(3,\)"):
            reader.add(np.zeros((3, 1)), 1.0, bad)
    acc.add(np.zeros(3), np.array([0, 2]))          # indices in range: accepted
    reader.add(np.zeros((3, 1)), 1.0, np.array([], dtype=np.int64))
    assert acc.steps == 1 and reader.steps == 1
    with pytest.raises(ValueError, match="sampling_rate"):
        ContributionAccumulator(np.ones(3, dtype=bool), np.ones(3), sampling_rate=0.0)
    with pytest.raises(ValueError, match="alpha"):
        check_contribution(acc.record(), alpha=2.0)


@pytest.mark.slow
def test_a_tensor_clipped_on_its_own_is_seen_through_the_sentinel_reading() -> None:
    from dpaudit.canaries import Layout, plan_gradient_canaries

    layout = Layout.from_sizes([600, 600, 40])
    rng = np.random.default_rng(5)
    plan = plan_gradient_canaries(layout, np.zeros(layout.dimension), 200, sampling_rate=0.1,
                                  rng=rng, shapes="block")
    tensors = layout.tensor_of(plan.read_coords)
    unit = plan.plant_values / np.linalg.norm(plan.plant_values, axis=1, keepdims=True)
    # per-tensor clipping: each tensor's part of the planted gradient clipped to C alone
    per_tensor = np.zeros_like(unit)
    for t in range(3):
        part = np.where(tensors == t, plan.plant_values, 0.0)
        norm = np.linalg.norm(part, axis=1, keepdims=True)
        per_tensor += np.divide(part, norm, out=np.zeros_like(part), where=norm > 0)
    found = {}
    for name, contrib in (("correct", unit), ("per_tensor", per_tensor)):
        reader = ReleaseReader(plan, max_grad_norm=1.0, layout=layout)
        for _ in range(100):
            c = (rng.random(plan.n) < 0.1) & plan.bits
            reader.add(contrib * c[:, None] + rng.standard_normal(unit.shape), 1.0, c)
        recs = reader.noise_record()["contribution"]
        assert [r.view for r in recs] == ["direction", "sentinel", "sentinel_bound"]
        found[name] = check_contribution(recs)
    assert found["correct"].ok
    # "block" canaries sit in one tensor, their sentinel (mostly) in another: the direction
    # reads ~1 C either way; halfway between main part and sentinel, flat clipping reads
    # 0.73 C and per-tensor clipping sqrt(2) C: seen as "not the claimed mechanism" (the
    # weaker-run test at the null C has half the margin: log-evidence 8.5 < 17.4 here)
    assert found["per_tensor"].parts and not found["per_tensor"].ok
    assert "a canary's part on another tensor" in found["per_tensor"].message()
    assert found["per_tensor"].estimate == pytest.approx(1.0, abs=0.1)


def _dirac_with_sentinels(n: int, seed: int):  # type: ignore[no-untyped-def]
    from dpaudit.canaries import Layout, with_sentinels

    layout = Layout.from_sizes([400, 30, 100, 5])     # Dirac canaries in tensor 0
    rng = np.random.default_rng(seed)
    base = dirac_plan(rng.choice(400, n, replace=False), rng.random(n) < 0.5,
                      sampling_rate=0.1)
    return layout, with_sentinels(base, layout, None, rng), rng


def _sentinel_run(plan, layout, rng, contrib, steps, drift=0.0, alpha=1e-6):  # type: ignore[no-untyped-def]
    """One run through ReleaseReader.add_steps: each sampled canary adds ``contrib`` (its
    clipped planted vector, units of C) to N(0, 1) noise; ``drift`` moves the sentinel
    coordinates (busy by design) by a per-coordinate offset growing over the run."""
    c = (rng.random((steps, plan.n)) < 0.1) & plan.bits
    values = c[:, :, None] * contrib + rng.standard_normal((steps, *contrib.shape))
    offset = drift * rng.standard_normal(plan.n)
    values[:, :, 1] += offset * (1 + np.arange(steps) / steps)[:, None]
    reader = ReleaseReader(plan, max_grad_norm=1.0, layout=layout)
    reader.add_steps(values, np.ones(steps), c)
    return check_contribution(reader.noise_record()["contribution"], alpha=alpha)


@pytest.mark.slow
@pytest.mark.parametrize("drift", [0.0, 2.0])
def test_dirac_canaries_with_sentinels_false_alarm_rate_is_at_most_alpha(drift: float) -> None:
    # Dirac canaries with a sentinel on another tensor (with_sentinels, the trainers'
    # default): on correct runs -- background drifting on the busy sentinel coordinates --
    # the three readings' union-bound test raises at most alpha (here 0.3, to be measurable)
    layout, plan, rng = _dirac_with_sentinels(40, 20)
    unit = plan.plant_values / np.linalg.norm(plan.plant_values, axis=1, keepdims=True)
    alarms = [not _sentinel_run(plan, layout, rng, unit, 40, drift, alpha=0.3).ok
              for _ in range(300)]
    assert float(np.mean(alarms)) <= 0.3 + 3 * math.sqrt(0.3 * 0.7 / 300)


def test_dirac_canaries_with_sentinels_see_per_tensor_clipping_and_unclipped_biases() -> None:
    layout, plan, rng = _dirac_with_sentinels(120, 21)
    v = plan.plant_values                                 # (n, 2): main part, sentinel
    unit = v / np.linalg.norm(v, axis=1, keepdims=True)
    per_tensor = v / np.abs(v)                            # each part clipped to C alone
    weights_only = np.stack([v[:, 0] / np.abs(v[:, 0]), v[:, 1]], axis=1)  # sentinel as is
    correct = _sentinel_run(plan, layout, rng, unit, 100, drift=2.0)
    assert correct.ok
    pt = _sentinel_run(plan, layout, rng, per_tensor, 100, drift=2.0)
    ub = _sentinel_run(plan, layout, rng, weights_only, 100, drift=2.0)
    # halfway between the parts: sqrt(2) C and (1 + 30) / sqrt(2) C, against 0.73 C
    assert pt.above and not pt.ok and ub.above and not ub.ok
