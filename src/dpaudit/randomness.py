"""Every random stream of dpaudit, derived from an explicit (seed, purpose).

Randomness is always explicit: a function takes a ``numpy.random.Generator`` or an integer seed,
never the global state.  When one integer seed feeds several uses (the secret bits of a game,
the tie-break of its scores, its trials, its threshold splits), each use draws from its own
stream, derived from (seed, purpose) as registered in :data:`PURPOSES`.  Streams of different
purposes are independent: a collision (the same uniforms deciding the secret bits and breaking
score ties) once made every tied guess of ``simulate rr --seed 0`` wrong.  A new purpose gets
a new row in :data:`PURPOSES` and a derivation distinct from every other row's.

Streams (the derivations are frozen: changing one changes every seeded result):

* ``"main"`` -- ``default_rng(seed)``: a caller's own stream (a game's secret bits and noise,
  the split of :func:`dpaudit.estimators.multi_run.multi_run`, the demo data);
* ``"trial"`` -- trial t of a multi-run audit: Philox4x64 (the counter-based generator of
  Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011) with

  - key = the first two 64-bit words of ``SeedSequence(seed).generate_state(2, uint64)``
    (derived once per seed, not per trial), and
  - 256-bit counter starting at ``(0, 0, t, 0)``: trial t owns the counter block whose third
    word is t, so trials never share random numbers (each trial may draw up to 2^128 blocks of
    four 64-bit words before it could reach the next trial's block).

  The stream of a trial depends on nothing but (seed, t): not on the executor, the number of
  workers, the chunking, the order in which chunks finish or the number of restarts.  Setting
  the stream of a trial is a single state assignment on a reused generator (about a
  microsecond, :class:`TrialStreams`), instead of hashing a fresh ``SeedSequence`` per trial.
  (Before dpaudit 0.1 trial t used child t of ``SeedSequence(seed)``: same law, other draws.)
* ``"tie_break"`` -- the random priorities that order equal scores in the one-run guessing rule
  (:mod:`dpaudit.estimators.guessing`): ``SeedSequence(seed, spawn_key=(TIE_BREAK_KEY,))``;
* ``"split"`` -- the seeds of the S threshold splits of
  :func:`dpaudit.estimators.multi_run.multi_run_splits`:
  ``SeedSequence(seed).generate_state(S)`` (32-bit words);
* ``"training"`` -- one Opacus training run (:func:`dpaudit.training.train_with_canaries`):
  ``SeedSequence([seed, 0x7A1])``, spawned into the run's streams (model init, placement,
  bits, sampling, noise); ``"jax_training"`` -- one JAX run
  (:mod:`dpaudit.training.jax`): ``SeedSequence([seed, 0x4A58])``, spawned likewise;
* ``"input_canaries"`` -- the own-loop gradient canaries' placement and bits
  (``GradientCanaries.for_model``): ``SeedSequence([seed, 0xB175])`` (the name is historical:
  it first drew input canaries; the derivation is kept so seeded runs reproduce);
* ``"canary_sampling"`` -- the planted gradient canaries' own Poisson coins
  (``GradientCanaries``): ``SeedSequence([seed, 0xCA7])``;
* ``"example_canaries"`` -- the reserved-feature canary examples' plan
  (``ExampleCanaries.for_model``): ``SeedSequence([seed, 0xE8A])``.
* ``"lm_training"`` -- a language-model fine-tuning run (:mod:`dpaudit.training.lm`: model
  init, Opacus noise and sampler, the flaws' schedules): ``SeedSequence([seed, 0x1A77])``;
* ``"lm_canaries"`` -- its canaries (reserved-token plan, bits, canary sequences):
  ``SeedSequence([seed, 0x1AC4])``.
* ``"activity_probes"`` -- which training examples each activity probe of the gradient
  canaries' placement measures, and its dropout (:func:`dpaudit.training.coordinate_activity`):
  ``SeedSequence([seed, 0xAC71])``.
* ``"zoo_search"`` -- the neighbour search of a zoo audit (:mod:`dpaudit.zoo.audit`): trial
  streams of the seed ``SeedSequence([seed, 0x2005]).generate_state(1, uint64) >> 1``, so the
  final audit's trials (the ``"trial"`` streams of ``seed``) never reuse them.

:func:`draw_bits` draws the secret bits of a game.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from dpaudit.validation import check_count

__all__ = ["PURPOSES", "TIE_BREAK_KEY", "as_rng", "seed_sequence", "stream", "draw_bits",
           "tie_break_rng", "random_tie_order", "random_tie_smallest", "random_tie_heads",
           "split_seeds",
           "philox_key", "TrialStreams", "trial_rng"]

#: purpose -> how its stream is derived from the seed (module docstring).
PURPOSES: dict[str, str] = {
    "main": "default_rng(seed)",
    "trial": "Philox(key=SeedSequence(seed).generate_state(2, uint64), counter=(0, 0, t, 0))",
    "tie_break": "SeedSequence(seed, spawn_key=(TIE_BREAK_KEY,))",
    "split": "SeedSequence(seed).generate_state(S, uint32)",
    "training": "SeedSequence([seed, 0x7A1])",
    "jax_training": "SeedSequence([seed, 0x4A58])",
    "input_canaries": "SeedSequence([seed, 0xB175])",
    "canary_sampling": "SeedSequence([seed, 0xCA7])",
    "example_canaries": "SeedSequence([seed, 0xE8A])",
    "lm_training": "SeedSequence([seed, 0x1A77])",
    "lm_canaries": "SeedSequence([seed, 0x1AC4])",
    "activity_probes": "SeedSequence([seed, 0xAC71])",
    "zoo_search": "trial streams of SeedSequence([seed, 0x2005]).generate_state(1, uint64) >> 1",
}

#: spawn key of the tie-break stream (ASCII "tieb").
TIE_BREAK_KEY = 0x74696562

#: entropy tags of the purposes derived as SeedSequence([seed, tag]).
_TAGS = {"training": 0x7A1, "jax_training": 0x4A58, "input_canaries": 0xB175,
         "canary_sampling": 0xCA7, "example_canaries": 0xE8A, "zoo_search": 0x2005,
         "lm_training": 0x1A77, "lm_canaries": 0x1AC4, "activity_probes": 0xAC71}


def as_rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    """An explicit NumPy Generator from a Generator (used as given) or an integer seed
    (``"main"`` stream); None is rejected."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        raise ValueError("rng must be a numpy Generator or an integer seed; got None "
                         "(randomness is always explicit)")
    return np.random.default_rng(check_count("seed", rng))


def seed_sequence(seed: int, purpose: str) -> np.random.SeedSequence:
    """The SeedSequence of (seed, purpose) for the purposes derived from one (``"main"``,
    ``"tie_break"`` and those derived as ``SeedSequence([seed, tag])``)."""
    seed = check_count("seed", seed)
    if purpose == "main":
        return np.random.SeedSequence(seed)
    if purpose == "tie_break":
        return np.random.SeedSequence(seed, spawn_key=(TIE_BREAK_KEY,))
    if purpose in _TAGS:
        return np.random.SeedSequence([seed, _TAGS[purpose]])
    raise ValueError(f"purpose must be one of main, tie_break, {', '.join(_TAGS)} (the "
                     f"streams derived from a SeedSequence); got {purpose!r}")


def stream(seed: int, purpose: str, index: int | None = None) -> np.random.Generator:
    """The generator of (seed, purpose): ``index`` is the trial of the ``"trial"`` purpose."""
    if purpose == "trial":
        if index is None:
            raise ValueError("index (the trial) is required for the 'trial' purpose")
        return trial_rng(seed, index)
    if index is not None:
        raise ValueError(f"index is only used by the 'trial' purpose, not {purpose!r}")
    if purpose == "main":
        return np.random.default_rng(check_count("seed", seed))
    return np.random.default_rng(seed_sequence(seed, purpose))


def draw_bits(n: int, rng: np.random.Generator, p: float = 0.5) -> np.ndarray:
    """n i.i.d. Bernoulli(p) secret bits (Xiang, "Privacy Audit as Bits Transmission",
    Def. 5 item 1), as a bool array: ``rng.random(n) < p``."""
    return rng.random(check_count("n", n, minimum=1)) < p


def tie_break_rng(rng: np.random.Generator | int) -> np.random.Generator:
    """The tie-break generator: a Generator as given; an integer seed -> the ``"tie_break"``
    stream, independent of ``default_rng(seed)`` (which may have drawn the secret bits)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(seed_sequence(int(rng), "tie_break"))
    return np.random.default_rng(rng)


#: priorities drawn (and discarded) per chunk when there are no ties.
_PRIO_CHUNK = 1 << 20


def random_tie_order(score: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """Indices that sort ``score`` ascending, equal scores in the order of a random priority:
    the permutation of ``np.lexsort((gen.random(m), score))``, with ``gen`` advanced
    identically, from one argsort of the scores plus a lexsort of the tied entries only
    (without ties a plain argsort).  The one-run guesses' tie-break
    (:func:`dpaudit.estimators.guess_select.ascending_order`) and the canaries' placement
    by activity (:mod:`dpaudit.canaries.plan`)."""
    m = score.size
    order = np.argsort(score, kind="stable")
    ss = score[order]
    eq = ss[1:] == ss[:-1]
    if not eq.any():
        del ss, eq
        # no ties: the priorities are not needed, but the generator advances as if drawn
        # (in chunks, so no m-sized array is held)
        for start in range(0, m, _PRIO_CHUNK):
            gen.random(min(_PRIO_CHUNK, m - start))
        return order
    prio = gen.random(m)
    tied = np.zeros(m, dtype=bool)
    tied[1:] |= eq
    tied[:-1] |= eq
    pos = np.flatnonzero(tied)
    sub = order[pos]
    # within a run of equal scores, order by priority (score breaks the runs apart)
    order[pos] = sub[np.lexsort((prio[sub], ss[pos]))]
    return order


def random_tie_smallest(score: np.ndarray, n: int, gen: np.random.Generator) -> np.ndarray:
    """``random_tie_order(score, gen)[:n]`` -- the same indices in the same order, ``gen``
    advanced identically -- without sorting every score: the n-th smallest score v by one
    partition; the scores below v kept (fewer than n); the m priorities drawn in chunks, the
    stream ``random_tie_order`` draws, keeping per chunk the ties at v of smallest priority
    (at most as many as are still needed); the n kept sorted by (score, priority).  O(m)
    time and O(n + chunk) memory where the full order takes O(m log m) and O(m): the
    canaries' placement over every coordinate of a large model
    (:func:`dpaudit.canaries.plan.least_active`)."""
    s = np.asarray(score).reshape(-1)
    m = s.size
    if not 0 < n < m:
        return random_tie_order(s, gen)[:n]
    v = np.partition(s, n - 1)[n - 1]
    if v != v:                                          # NaN among the n smallest
        return random_tie_order(s, gen)[:n]
    below = np.flatnonzero(s < v)
    need = n - below.size                               # >= 1 ties at v to take
    below_prio = np.empty(below.size)
    tie_idx = np.zeros(0, dtype=np.int64)
    tie_prio = np.zeros(0)
    at = 0
    for start in range(0, m, _PRIO_CHUNK):
        p = gen.random(min(_PRIO_CHUNK, m - start))
        hi = int(np.searchsorted(below, start + p.size))
        below_prio[at:hi] = p[below[at:hi] - start]
        at = hi
        t = np.flatnonzero(s[start:start + p.size] == v)
        tie_idx = np.concatenate([tie_idx, t + start])
        tie_prio = np.concatenate([tie_prio, p[t]])
        if tie_idx.size > need:                         # keep the smallest priorities
            best = np.argpartition(tie_prio, need - 1)[:need]
            tie_idx, tie_prio = tie_idx[best], tie_prio[best]
    keep = np.concatenate([below, tie_idx])
    prio = np.concatenate([below_prio, tie_prio])
    return keep[np.lexsort((prio, s[keep]))]


def random_tie_heads(score: np.ndarray, bounds: np.ndarray, counts: Sequence[int],
                     gen: np.random.Generator) -> list[np.ndarray]:
    """For each segment j = [bounds[j], bounds[j + 1]) of ``score``, the first ``counts[j]``
    indices (into ``score``) of ``random_tie_order(score, gen)`` that fall in the segment, in
    that order, with ``gen`` advanced identically (``score.size`` draws).  The full order
    restricted to a segment is the order of the segment's (score, priority) pairs, whose
    priorities are the segment's consecutive draws of the same stream: one
    :func:`random_tie_smallest` per segment, O(size) each, instead of one O(m log m) sort --
    the canaries' ballast and sentinels per parameter tensor (:mod:`dpaudit.canaries.plan`).
    ``bounds`` must be non-decreasing from 0 to ``score.size``."""
    s = np.asarray(score).reshape(-1)
    b = np.asarray(bounds, dtype=np.int64).reshape(-1)
    if (b.size != len(counts) + 1 or b[0] != 0 or b[-1] != s.size
            or (b.size > 1 and bool((np.diff(b) < 0).any()))):
        raise ValueError(f"bounds must rise from 0 to score.size = {s.size}, one more than "
                         f"counts ({len(counts)}); got {b.tolist()[:8]}")
    out = []
    for j, want in enumerate(counts):
        lo, hi = int(b[j]), int(b[j + 1])
        n = max(0, min(int(want), hi - lo))
        out.append(random_tie_smallest(s[lo:hi], n, gen) + lo if hi > lo
                   else np.zeros(0, dtype=np.int64))
    return out


def split_seeds(seed: int, n_splits: int) -> list[int]:
    """S independent 32-bit seeds derived from ``seed`` (the ``"split"`` purpose)."""
    ss = np.random.SeedSequence(check_count("seed", seed))
    return [int(x) for x in ss.generate_state(check_count("n_splits", n_splits, minimum=1))]


def philox_key(seed: int) -> np.ndarray:
    """The Philox key (2 x uint64) of an audit seed."""
    seed = check_count("seed", seed)
    return np.random.SeedSequence(seed).generate_state(2, np.uint64)


class TrialStreams:
    """One reusable Philox generator, repositioned at the start of each trial's stream.

    ``streams.at(t)`` returns the (same) ``numpy.random.Generator`` set to the beginning of
    trial t's stream; the generator must not be kept across trials.

    Repositioning is one assignment of ``Philox.state`` from a dict of plain Python ints and
    lists, built once and updated in place (only the counter's third word changes).  NumPy's
    setter copies the counter, key and buffer word by word; from Python lists that costs about
    1 us, against about 5 us from the NumPy arrays that the ``state`` getter returns (each
    element read creates a NumPy scalar) -- measured in benchmarks/trials.py, line [1].  The
    stream is unchanged: ``buffer_pos = 4`` and ``has_uint32 = 0`` discard whatever the
    previous trial left buffered, so the state is exactly that of a fresh
    ``Philox(key, counter=(0, 0, t, 0))`` (:func:`trial_rng`).
    """

    __slots__ = ("_bg", "_gen", "_state", "_ctr")

    def __init__(self, seed: int) -> None:
        key = [int(k) for k in philox_key(seed)]
        self._bg = np.random.Philox(key=np.array(key, np.uint64))
        self._gen = np.random.Generator(self._bg)
        self._ctr = [0, 0, 0, 0]
        self._state: Any = {"bit_generator": "Philox",
                       "state": {"counter": self._ctr, "key": key},
                       "buffer": [0, 0, 0, 0], "buffer_pos": 4, "has_uint32": 0,
                       "uinteger": 0}

    def at(self, t: int) -> np.random.Generator:
        self._ctr[2] = t
        self._bg.state = self._state
        return self._gen

    def iterate(self, start: int, stop: int) -> Iterator[tuple[int, np.random.Generator]]:
        for t in range(start, stop):
            yield t, self.at(t)


def trial_rng(seed: int, trial: int) -> np.random.Generator:
    """A fresh generator positioned at the start of trial ``trial``'s stream (see module)."""
    trial = check_count("trial", trial)
    bg = np.random.Philox(key=philox_key(seed), counter=np.array([0, 0, trial, 0], np.uint64))
    return np.random.Generator(bg)
