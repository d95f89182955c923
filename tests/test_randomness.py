"""The one home of random streams (dpaudit.randomness): every purpose registered, each derived
as documented, no two purposes sharing a stream."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.randomness import PURPOSES, draw_bits, seed_sequence, stream

#: the documented derivations, written out independently of the module
_TAGGED = {"training": 0x7A1, "jax_training": 0x4A58, "input_canaries": 0xB175,
           "canary_sampling": 0xCA7, "example_canaries": 0xE8A, "zoo_search": 0x2005,
           "lm_training": 0x1A77, "lm_canaries": 0x1AC4, "activity_probes": 0xAC71}


@pytest.mark.parametrize("purpose", sorted(_TAGGED))
def test_tagged_purposes_are_seedsequence_of_seed_and_tag(purpose: str) -> None:
    assert purpose in PURPOSES and hex(_TAGGED[purpose])[2:].lower() in PURPOSES[purpose].lower()
    want = np.random.default_rng(np.random.SeedSequence([7, _TAGGED[purpose]])).random(4)
    np.testing.assert_array_equal(stream(7, purpose).random(4), want)
    np.testing.assert_array_equal(seed_sequence(7, purpose).generate_state(3),
                                  np.random.SeedSequence([7, _TAGGED[purpose]]).generate_state(3))


def test_main_stream_is_default_rng_of_the_seed() -> None:
    np.testing.assert_array_equal(stream(11, "main").random(5),
                                  np.random.default_rng(11).random(5))


def test_no_two_purposes_share_a_stream() -> None:
    firsts = {p: tuple(stream(3, p, 0 if p == "trial" else None).integers(0, 2**62, 4))
              for p in PURPOSES if p != "split"}
    assert len(set(firsts.values())) == len(firsts)


def test_unknown_purpose_and_misused_index_are_refused() -> None:
    with pytest.raises(ValueError, match="purpose must be one of"):
        seed_sequence(0, "nonsense")
    with pytest.raises(ValueError, match="index"):
        stream(0, "trial")
    with pytest.raises(ValueError, match="index"):
        stream(0, "training", 3)


def test_draw_bits_is_bernoulli_half() -> None:
    bits = draw_bits(200_000, stream(5, "main"))
    # mean of 2e5 fair bits: sd 0.0011, so 5 sd is 0.0056
    assert bits.dtype == bool and abs(bits.mean() - 0.5) < 0.0056
    np.testing.assert_array_equal(draw_bits(10, np.random.default_rng(1)),
                                  np.random.default_rng(1).random(10) < 0.5)


def _tie_scores(kind: str, m: int, src: np.random.Generator) -> np.ndarray:
    if kind == "distinct":
        return src.normal(size=m)
    if kind == "few values":
        return src.integers(0, 3, size=m).astype(float)
    if kind == "all tied":
        return np.zeros(m)
    if kind == "silent block":
        return np.r_[np.zeros(m // 2), src.integers(0, 2, m - m // 2)].astype(float)
    return np.where(src.random(m) < 0.2, np.nan, src.integers(0, 4, size=m).astype(float))


@pytest.mark.parametrize("kind", ["distinct", "few values", "all tied", "silent block", "nan"])
def test_random_tie_smallest_is_the_head_of_random_tie_order(
        kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the same indices in the same order and the generator left in the same state, whatever
    # the ties, the count and the chunking of the priorities (chunks of 7 here)
    import dpaudit.randomness as randomness

    monkeypatch.setattr(randomness, "_PRIO_CHUNK", 7)
    src = np.random.default_rng(5)
    for _ in range(300):
        m = int(src.integers(1, 60))
        s = _tie_scores(kind, m, src)
        n = int(src.integers(0, m + 1))
        seed = int(src.integers(1 << 30))
        g1, g2 = np.random.default_rng(seed), np.random.default_rng(seed)
        want = randomness.random_tie_order(s, g1)[:n]
        got = randomness.random_tie_smallest(s, n, g2)
        np.testing.assert_array_equal(got, want)
        assert g1.random() == g2.random()


@pytest.mark.parametrize("kind", ["distinct", "few values", "all tied", "silent block", "nan"])
def test_random_tie_heads_are_the_segments_of_random_tie_order(
        kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # per segment, the full order's entries in that segment, first counts[j] of them, and
    # the generator left as the full order leaves it (empty segments, counts beyond a
    # segment's size, chunks of 7 priorities)
    import dpaudit.randomness as randomness

    monkeypatch.setattr(randomness, "_PRIO_CHUNK", 7)
    src = np.random.default_rng(11)
    for _ in range(300):
        m = int(src.integers(1, 80))
        s = _tie_scores(kind, m, src)
        cuts = np.sort(src.integers(0, m + 1, size=int(src.integers(0, 6))))
        bounds = np.r_[0, cuts, m]
        counts = src.integers(0, m + 2, size=bounds.size - 1).tolist()
        seed = int(src.integers(1 << 30))
        g1, g2 = np.random.default_rng(seed), np.random.default_rng(seed)
        order = randomness.random_tie_order(s, g1)
        seg = np.searchsorted(bounds, order, side="right") - 1
        got = randomness.random_tie_heads(s, bounds, counts, g2)
        assert len(got) == len(counts)
        for j, c in enumerate(counts):
            want = order[(seg == j) & (order >= bounds[j]) & (order < bounds[j + 1])][:c]
            np.testing.assert_array_equal(got[j], want)
        assert g1.random() == g2.random()


def test_random_tie_heads_refuses_bad_bounds() -> None:
    from dpaudit.randomness import random_tie_heads

    g = np.random.default_rng(0)
    for bounds, counts in [([0, 3], [1]), ([1, 4], [1]), ([0, 3, 2, 4], [1, 1, 1]),
                           ([0, 4], [1, 1])]:
        with pytest.raises(ValueError, match="bounds must rise from 0"):
            random_tie_heads(np.zeros(4), np.array(bounds), counts, g)
