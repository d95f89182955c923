"""Per-trial random streams: a pure function of (seed, trial index), cheap to set up.

Trial ``t`` of an audit with integer ``seed`` draws from a Philox4x64 generator (the
counter-based generator of Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as
1, 2, 3", SC 2011) whose

* key is the first two 64-bit words of ``SeedSequence(seed).generate_state(2, uint64)``
  (derived once per seed, not per trial), and
* 256-bit counter starts at ``(0, 0, t, 0)``: trial t owns the counter block whose third word is
  t, so trials never share random numbers (each trial may draw up to 2^128 blocks of four
  64-bit words before it could reach the next trial's block).

So the stream of a trial depends on nothing but (seed, t): not on the executor, the number of
workers, the chunking, the order in which chunks finish or the number of restarts.  Setting the
stream of a trial is a single state assignment on a reused generator (about a microsecond,
:class:`TrialStreams`), instead of hashing a fresh ``SeedSequence`` per trial (which dominated
a cheap trial before).

Change of stream (dpaudit 0.1): earlier versions used child t of ``SeedSequence(seed)``
(``SeedSequence(seed, spawn_key=(t,))``) per trial; the observations for a given seed therefore
differ from those versions (same distribution, different draws).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dpaudit.validation import check_count

__all__ = ["philox_key", "TrialStreams", "trial_rng"]


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
        self._state = {"bit_generator": "Philox",
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
