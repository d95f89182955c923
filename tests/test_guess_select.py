"""The selection-based guess counts equal the sort-based reference on every input.

Reference: ``_guesses_from_sorted_reference`` (one stable argsort + a lexsort of the tied
entries by a random priority ``gen.random(m)``, then cumulative sums), the implementation
the fast path replaced.  Both must return the same (guesses, correct) and leave the generator
in the same state, on continuous scores, heavy ties, all-equal scores, -0.0 vs 0.0, integer
scores, k = 0, k = m, m = 1, 2 and large m; the small-size thresholds of the module are also
lowered so that every branch (bucket selection in large tie groups, several tie groups per
chunk, the sorting fallback for long sweeps) runs on small inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dpaudit.estimators.guess_select as gs
from dpaudit import estimators as E
from dpaudit.estimators.guess_select import lowest_member_counts
from dpaudit.estimators.guessing import (
    _guesses_from_sorted,
    _guesses_from_sorted_reference,
    tie_break_rng,
)
from dpaudit.estimators.one_run import _balance_p_value, audit_one_run, guess_counts
from dpaudit.observations import MembershipObservations

KINDS = ("normal", "coarse", "zeros", "signed_zeros", "integers", "two_levels", "sorted")


def _scores(rng: np.random.Generator, m: int, kind: str) -> np.ndarray:
    if kind == "normal":
        return rng.standard_normal(m)
    if kind == "coarse":
        return np.floor(rng.standard_normal(m) * rng.integers(1, 6))
    if kind == "zeros":
        return np.zeros(m)
    if kind == "signed_zeros":  # -0.0 and 0.0 are one value for the order
        return np.where(rng.random(m) < 0.5, -0.0, 0.0) + (rng.random(m) < 0.3)
    if kind == "integers":
        return rng.integers(-3, 4, m).astype(float)
    if kind == "two_levels":
        return np.where(rng.random(m) < 0.9, 1.5, -2.0)
    return np.sort(np.floor(rng.standard_normal(m) * 3))  # sorted input, ties in runs


def _grid(rng: np.random.Generator, m: int, g: int) -> tuple[np.ndarray, np.ndarray]:
    kp = rng.integers(0, m + 1, g)
    kn = np.array([rng.integers(0, m - a + 1) for a in kp])
    # always include the extremes k = 0 and k = m on both sides
    kp = np.r_[kp, 0, m, 0]
    kn = np.r_[kn, 0, 0, m]
    return kp, kn


def _same_state(a: object, b: object) -> bool:
    """Bit-generator states (nested dicts, MT19937 holds an array) are equal."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(
            _same_state(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return bool(np.array_equal(a, b))
    return a == b


def _assert_same(t, s, kp, kn, seed) -> None:
    g1, g2 = np.random.default_rng(seed), np.random.default_rng(seed)
    fast = _guesses_from_sorted(t, s, kp, kn, g1)
    ref = _guesses_from_sorted_reference(t, s, kp, kn, g2)
    np.testing.assert_array_equal(fast[0], ref[0])
    np.testing.assert_array_equal(fast[1], ref[1])
    assert g1.bit_generator.state == g2.bit_generator.state


@pytest.mark.parametrize("kind", KINDS)
def test_equals_reference_on_seeded_inputs(kind):
    rng = np.random.default_rng(KINDS.index(kind))
    for _ in range(150):
        m = int(rng.integers(1, 9)) if rng.random() < 0.3 else int(rng.integers(1, 500))
        s = _scores(rng, m, kind)
        t = rng.random(m) < rng.random()
        kp, kn = _grid(rng, m, int(rng.integers(1, 9)))
        _assert_same(t, s, kp, kn, int(rng.integers(0, 2**31)))


@pytest.mark.parametrize("kind", KINDS)
def test_every_branch_equals_reference(monkeypatch, kind):
    """Tiny thresholds: chunks of 16 entries, bucket selection above 4 tied entries (8
    buckets), sorting above 6 distinct ranks."""
    monkeypatch.setattr(gs, "CHUNK", 16)
    monkeypatch.setattr(gs, "SMALL_TIE_GROUP", 4)
    monkeypatch.setattr(gs, "PRIO_BUCKETS", 8)
    monkeypatch.setattr(gs, "MAX_SELECT_RANKS", 6)
    rng = np.random.default_rng(100 + KINDS.index(kind))
    for _ in range(120):
        m = int(rng.integers(1, 400))
        s = _scores(rng, m, kind)
        t = rng.random(m) < 0.5
        kp, kn = _grid(rng, m, int(rng.integers(1, 6)))
        _assert_same(t, s, kp, kn, int(rng.integers(0, 2**31)))


@pytest.mark.slow
@pytest.mark.parametrize("stride", [1, 2, 3, 7, 32])
def test_sampled_brackets_and_fallback_equal_reference(monkeypatch, stride):
    """The sampled brackets (taken from m = 1 on here, sample sizes m / stride), including
    brackets too narrow to hold their rank (z = 0 or 0.5) or keeping too many entries (the
    partition fallback) and periodic data, give the reference counts; both outcomes of the
    bracket check occur."""
    monkeypatch.setattr(gs, "SAMPLE_MIN_SIZE", 1)
    monkeypatch.setattr(gs, "SAMPLE_STRIDE", stride)
    seen = {"bracketed": 0, "fallback": 0}
    inner_fn = gs._rank_stats_sampled

    def counting(*args):
        out = inner_fn(*args)
        seen["fallback" if out is None else "bracketed"] += 1
        return out

    monkeypatch.setattr(gs, "_rank_stats_sampled", counting)
    rng = np.random.default_rng(stride)
    for it in range(150):
        monkeypatch.setattr(gs, "SAMPLE_Z", [0.0, 0.5, 2.0, 6.0][it % 4])
        monkeypatch.setattr(gs, "CHUNK", [16, 1 << 16][it % 2])
        monkeypatch.setattr(gs, "MAX_KEPT_FLOOR", [0, 1 << 16][it % 3 > 0])
        m = int(rng.integers(1, 600))
        kind = KINDS[it % len(KINDS)]
        s = (np.tile(rng.standard_normal(stride), m)[:m] if it % 9 == 0
             else _scores(rng, m, kind))
        t = rng.random(m) < 0.5
        kp, kn = _grid(rng, m, int(rng.integers(1, 8)))
        _assert_same(t, s, kp, kn, int(rng.integers(0, 2**31)))
    assert seen["bracketed"] > 20 and seen["fallback"] > 0


def test_exhaustive_tiny_inputs():
    """m = 1, 2, 3: every truth vector, tie pattern and (k+, k-) pair."""
    patterns = {1: [[0.0]], 2: [[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [-0.0, 0.0]],
                3: [[0.0, 0.0, 0.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]]}
    for m, pats in patterns.items():
        ks = [(a, b) for a in range(m + 1) for b in range(m + 1 - a)]
        kp, kn = np.array([k[0] for k in ks]), np.array([k[1] for k in ks])
        for bits in range(2**m):
            t = np.array([(bits >> i) & 1 for i in range(m)], dtype=bool)
            for p in pats:
                for seed in range(6):
                    _assert_same(t, np.array(p), kp, kn, seed)


def test_scalar_and_shaped_k():
    rng = np.random.default_rng(3)
    t = rng.random(300) < 0.5
    s = np.floor(rng.standard_normal(300) * 2)
    for kp, kn in [(0, 0), (300, 0), (0, 300), (7, 11), (150, 150)]:
        fast = _guesses_from_sorted(t, s, kp, kn, 5)
        assert fast == _guesses_from_sorted_reference(t, s, kp, kn, 5)
        assert isinstance(fast[0], int) and isinstance(fast[1], int)
    kp = np.array([[1, 2, 3], [40, 50, 60]])
    fast = _guesses_from_sorted(t, s, kp, 10, 5)
    ref = _guesses_from_sorted_reference(t, s, kp, 10, 5)
    assert fast[1].shape == (2, 3) and fast[1].dtype == ref[1].dtype
    np.testing.assert_array_equal(fast[1], ref[1])


def test_long_sweeps_equal_reference():
    """k sweeps: 143 distinct ranks (binary-search classification), 600 (one sort)."""
    rng = np.random.default_rng(12)
    for m, step in [(1000, 7), (1200, 2)]:
        t = rng.random(m) < 0.5
        s = np.floor(rng.standard_normal(m) * 4)
        ks = np.arange(0, m // 2, step)
        _assert_same(t, s, ks, ks, 3)
        _assert_same(t, rng.standard_normal(m), ks, ks[::-1], 4)


@pytest.mark.parametrize("bitgen", [np.random.PCG64, np.random.MT19937, np.random.Philox,
                                    np.random.SFC64, np.random.PCG64DXSM])
def test_generator_state_after_call(bitgen):
    """A user's Generator (any bit generator) is advanced by exactly m draws, in chunks or
    not, whether or not any tie needs the priorities."""
    rng = np.random.default_rng(11)
    m = 200_003  # several chunks, last one partial
    t = rng.random(m) < 0.5
    for s in (rng.standard_normal(m), np.floor(rng.standard_normal(m) * 2)):
        g1, g2 = np.random.Generator(bitgen(5)), np.random.Generator(bitgen(5))
        g1.integers(0, 2**16, dtype=np.uint16)  # a buffered half-word in the state
        g2.integers(0, 2**16, dtype=np.uint16)
        a = _guesses_from_sorted(t, s, [5_000, 100_000], [5_000, 100_000], g1)
        b = _guesses_from_sorted_reference(t, s, [5_000, 100_000], [5_000, 100_000], g2)
        np.testing.assert_array_equal(a[1], b[1])
        assert _same_state(g1.bit_generator.state, g2.bit_generator.state)
        assert g1.random() == g2.random()


def test_integer_seed_uses_the_tie_break_stream():
    rng = np.random.default_rng(2)
    t = rng.random(1000) < 0.5
    s = np.floor(rng.standard_normal(1000))
    fast = _guesses_from_sorted(t, s, [100, 400], [100, 400], 17)
    ref = _guesses_from_sorted_reference(t, s, [100, 400], [100, 400], tie_break_rng(17))
    np.testing.assert_array_equal(fast[1], ref[1])
    plain = _guesses_from_sorted_reference(t, s, [100, 400], [100, 400],
                                           np.random.default_rng(17))
    assert not np.array_equal(fast[1], plain[1])  # not default_rng(seed): issue 15


class _CoarsePriorities:
    """Duck-typed generator whose priorities repeat (multiples of 1/4), so that ties in
    priority occur: they must be broken by position, as the reference's stable lexsort."""

    def __init__(self, seed: int) -> None:
        self.g = np.random.default_rng(seed)

    def random(self, size: int) -> np.ndarray:
        return np.floor(self.g.random(size) * 4) / 4


@pytest.mark.parametrize("small", [True, False])
def test_equal_priorities_broken_by_position(monkeypatch, small):
    if not small:
        monkeypatch.setattr(gs, "SMALL_TIE_GROUP", 4)
        monkeypatch.setattr(gs, "PRIO_BUCKETS", 8)
        monkeypatch.setattr(gs, "CHUNK", 32)
    rng = np.random.default_rng(9)
    for _ in range(60):
        m = int(rng.integers(2, 300))
        s = np.floor(rng.standard_normal(m) * rng.integers(0, 3))
        t = rng.random(m) < 0.5
        ks = rng.integers(0, m + 1, 6)
        seed = int(rng.integers(0, 1000))
        got = lowest_member_counts(t, s, ks, _CoarsePriorities(seed))
        prio = _CoarsePriorities(seed).random(m)
        order = np.lexsort((prio, s))  # stable: equal (score, prio) keep input order
        c = np.r_[0, np.cumsum(t[order])]
        np.testing.assert_array_equal(got, c[ks])


def test_large_tie_groups_at_scale():
    """300,000 canaries on 3 score levels (every boundary inside a tie group of ~1e5, bucket
    selection), and all-equal scores."""
    rng = np.random.default_rng(4)
    m = 300_000
    t = rng.random(m) < 0.5
    kp = np.array([1, 1_500, 30_000, 150_000])
    for s in (rng.integers(0, 3, m).astype(float), np.zeros(m)):
        _assert_same(t, s, kp, kp, 8)


def test_public_guesses_from_scores_and_guess_counts():
    rng = np.random.default_rng(6)
    truth = rng.integers(0, 2, 5000)
    score = np.round(truth + rng.standard_normal(5000), 1)
    ks = np.array([0, 10, 100, 1000, 2500])
    g, c = E.guesses_from_scores(truth, score, ks, ks, rng=4)
    gr, cr = _guesses_from_sorted_reference(truth.astype(bool), score, ks, ks, 4)
    np.testing.assert_array_equal(g, gr)
    np.testing.assert_array_equal(c, cr)
    grid = [(25, 25), (250, 250), (2500, 2500), (3, 0), (0, 7)]
    counts = guess_counts(truth, score, grid, seed=0)
    kp, km = np.array(grid).T
    _, cr = _guesses_from_sorted_reference(truth.astype(bool), score, kp, km, 0)
    np.testing.assert_array_equal(counts["correct"], cr)
    np.testing.assert_array_equal(counts["wrong"], kp + km - cr)


def test_audit_one_run_uses_the_same_counts():
    rng = np.random.default_rng(8)
    b = rng.random(2000) < 0.5
    s = np.round(b + rng.standard_normal(2000), 1)  # ties
    res = audit_one_run(b, s, methods=("steinke",), grid=[(100, 100), (500, 500)], family="gdp")[0]
    kp, km = res.settings["k_plus"], res.settings["k_minus"]
    _, v = _guesses_from_sorted_reference(b, s, kp, km, 0)
    assert res.settings["wrong"] == kp + km - v


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([-1.0, -0.0, 0.0, 0.5, 2.0, 1e300, -1e-300]),
                          st.booleans()), min_size=1, max_size=60),
       st.integers(0, 2**32 - 1), st.data())
@pytest.mark.slow  # > 5 s: end-to-end or exhaustive; CI runs it
def test_property_equals_reference(rows, seed, data):
    s = np.array([r[0] for r in rows])
    t = np.array([r[1] for r in rows], dtype=bool)
    m = s.size
    kp = data.draw(st.lists(st.integers(0, m), min_size=1, max_size=5))
    kn = [data.draw(st.integers(0, m - a)) for a in kp]
    _assert_same(t, s, np.array(kp), np.array(kn), seed)


# -- the balance check and validation without copies ------------------------------------------

@pytest.mark.slow  # > 5 s: end-to-end or exhaustive; CI runs it
def test_balance_p_value_equals_binomtest():
    for n in [1, 2, 3, 10, 51, 1000, 12_345, 10**6, 10**7]:
        ks = range(n + 1) if n <= 1000 else np.unique(
            np.r_[np.arange(0, n + 1, max(1, n // 300)), n // 2 + np.arange(-200, 200)])
        for k in ks:
            k = int(k)
            want = stats.binomtest(k, n, 0.5).pvalue
            assert _balance_p_value(k, n) == pytest.approx(want, rel=1e-12, abs=1e-300)


def test_balance_warning_message():
    b = np.r_[np.ones(700, bool), np.zeros(300, bool)]
    s = np.random.default_rng(0).standard_normal(1000)
    p = stats.binomtest(700, 1000, 0.5).pvalue
    with pytest.warns(UserWarning, match=rf"700 of 1000 are 1, binomial p = {p:.2g}"):
        audit_one_run(b, s, methods=("steinke",), family="gdp")


@pytest.mark.parametrize("dtype", [bool, np.int8, np.uint8, np.int32, np.int64, np.uint16,
                                   float])
def test_member_dtypes_agree(dtype):
    rng = np.random.default_rng(1)
    b = rng.random(500) < 0.5
    s = rng.standard_normal(500)
    obs = MembershipObservations.from_arrays(b.astype(dtype), s)
    assert obs.member.dtype == bool
    np.testing.assert_array_equal(obs.member, b)
    np.testing.assert_array_equal(obs.member, MembershipObservations.from_arrays(
        b.astype(dtype)[::-1], s).member[::-1])
    if dtype is not bool:
        bad = b.astype(dtype)
        bad[3] = 2
        with pytest.raises(ValueError, match="member must contain only 0/1 values; entry 3 "
                                             "is 2"):
            MembershipObservations.from_arrays(bad, s)
        if np.issubdtype(dtype, np.signedinteger) or dtype is float:
            bad[3] = -1
            with pytest.raises(ValueError, match="entry 3 is -1"):
                MembershipObservations.from_arrays(bad, s)


def test_byte_swapped_member_bits():
    """Non-native byte order is not viewed as native integers: 16777216 stays non-binary."""
    s = np.zeros(3)
    ok = MembershipObservations.from_arrays(np.array([0, 1, 1], dtype=">i4"), s)
    np.testing.assert_array_equal(ok.member, [False, True, True])
    with pytest.raises(ValueError, match="entry 1 is 1.67772e\\+07"):
        MembershipObservations.from_arrays(np.array([0, 16777216, 0], dtype=">i4"), s)


def test_scores_not_copied_and_read_only():
    rng = np.random.default_rng(1)
    b = rng.random(100) < 0.5
    s = rng.standard_normal(100)
    obs = MembershipObservations.from_arrays(b, s)
    assert np.shares_memory(obs.score, s) and np.shares_memory(obs.member, b)
    assert not obs.score.flags.writeable and not obs.member.flags.writeable
    assert s.flags.writeable and b.flags.writeable  # the caller's arrays are untouched
    i = MembershipObservations.from_arrays(b, np.arange(100))  # integer scores -> float64
    assert i.score.dtype == np.float64 and i.score[7] == 7.0
    for bad, msg in [(np.nan, "entry 5 is nan"), (np.inf, "entry 5 is inf")]:
        s2 = s.copy()
        s2[5] = bad
        with pytest.raises(ValueError, match=f"score must be finite \\(no NaN/inf\\); {msg}"):
            MembershipObservations.from_arrays(b, s2)
    with pytest.raises(ValueError, match="entry 2 is -inf"):
        MembershipObservations.from_arrays(b[:3], np.array([1, 2, -np.inf], np.float32))
