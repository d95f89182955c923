"""Privacy audit as bits transmission: the universal framework of Bits Transmission §3.1 (BT notes
§2).

Definition 5 (BT notes §2.1): an audit is a tuple (n, p, H, C_M, D):

1. **bits** b in {0,1}^n, b_i ~ Bernoulli(p) i.i.d.          -> :func:`transmit` draws them
                                                               (or takes them) from an explicit rng;
2. **dataset generator** H: X_i = H_i(b_i) depends only on   -> :class:`CanaryGenerator`
   its own bit.  Add/remove adjacency: X_i = canary c_i if       (``alternatives=None``: add/remove;
   b_i = 1, else the null object (nothing is added).             otherwise replace-one)
   Replace-one adjacency: X_i = c_i^1 or c_i^0;
3. **noisy channel** C_M: runs the audited M on the audit      -> ``mechanism(dataset, rng)``
   dataset (plus an original dataset X_T independent of b);      with ``runs="one"`` (Algorithm 2)
                                                                 or ``runs="multi"`` (Algorithm 1)
                                                                 or any explicit partition;
4. **decoder** D: a decision for every bit, from the message   -> ``decoder(output, canaries)``
   only.                                                         returns one score per canary of
                                                                 that run (higher = bit 1); the
                                                                 guess is ``score > 0``.

Regulations enforced here (BT notes §2.1; ValueError otherwise):

* (R1) each canary (each bit) is associated with exactly one run of M: ``runs`` must be a
  partition of range(n);
* (R2) the message is formed only from M's outputs: the decoder is called with the output of a
  run and the (public) indices of the canaries in that run, never with the bits, and must return
  exactly one finite score per canary (Definition 5 requires a decision for every bit).

The transcript converts to :class:`dpaudit.observations.MembershipObservations` (truth bit,
score) for the estimators (``dpaudit.audit_one_run`` for one run, ``estimators.multi_run`` for
many runs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.mechanisms.base import as_rng
from dpaudit.observations import MembershipObservations
from dpaudit.validation import check_binary_array, check_probability

__all__ = ["CanaryGenerator", "BitsTranscript", "transmit", "partition_runs", "ADJACENCIES",
           "NULL"]

ADJACENCIES = ("add_remove", "replace_one")


class _Null:
    """The null object of add/remove adjacency: contributes nothing to M's execution."""

    _instance: _Null | None = None

    def __new__(cls) -> _Null:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NULL"

    def __reduce__(self) -> str:
        return "NULL"


NULL = _Null()


@dataclass(frozen=True)
class CanaryGenerator:
    """The dataset generator H of Definition 5: X_i = H_i(b_i).

    ``canaries[i]`` is the record used when b_i = 1.  With ``alternatives=None`` the adjacency
    is add/remove (b_i = 0 -> the null object, dropped from the dataset); otherwise
    ``alternatives[i]`` is the record used when b_i = 0 (replace-one adjacency).
    """

    canaries: Sequence[Any]
    alternatives: Sequence[Any] | None = None

    def __post_init__(self) -> None:
        if len(self.canaries) == 0:
            raise ValueError("canaries must contain at least one canary")
        if self.alternatives is not None and len(self.alternatives) != len(self.canaries):
            raise ValueError(f"alternatives must have one record per canary "
                             f"({len(self.canaries)}), got {len(self.alternatives)}")

    @property
    def n(self) -> int:
        return len(self.canaries)

    @property
    def adjacency(self) -> str:
        return "add_remove" if self.alternatives is None else "replace_one"

    def record(self, i: int, bit: bool) -> Any:
        """H_i(b_i): depends on canary i's own bit only."""
        if bit:
            return self.canaries[i]
        return NULL if self.alternatives is None else self.alternatives[i]

    def dataset(self, bits: np.ndarray, indices: Sequence[int] | np.ndarray) -> list[Any]:
        """The audit records of the canaries ``indices`` (null objects dropped)."""
        recs = [self.record(int(i), bool(bits[int(i)])) for i in indices]
        return [r for r in recs if r is not NULL]


def partition_runs(runs: str | Sequence[Sequence[int]], n: int) -> list[np.ndarray]:
    """Resolve ``runs`` to a list of index arrays and enforce regulation R1.

    "one" -> [range(n)] (Algorithm 2); "multi" -> [[0], [1], ..., [n-1]] (Algorithm 1); an
    explicit sequence must be a partition of range(n): every canary in exactly one run.
    """
    if isinstance(runs, str):
        if runs == "one":
            return [np.arange(n)]
        if runs == "multi":
            return [np.array([i]) for i in range(n)]
        raise ValueError(f"runs must be 'one', 'multi' or a partition of range(n); got {runs!r}")
    parts = [np.asarray(r, dtype=np.int64).reshape(-1) for r in runs]
    if not parts or any(p.size == 0 for p in parts):
        raise ValueError("runs must be a list of non-empty lists of canary indices")
    allidx = np.concatenate(parts)
    if (allidx < 0).any() or (allidx >= n).any():
        raise ValueError(f"runs must contain canary indices in [0, {n - 1}]")
    counts = np.bincount(allidx, minlength=n)
    if (counts > 1).any():
        i = int(np.flatnonzero(counts > 1)[0])
        raise ValueError(f"runs violates regulation R1: canary {i} appears in {counts[i]} runs "
                         f"(each canary bit must be in exactly one run)")
    if (counts == 0).any():
        i = int(np.flatnonzero(counts == 0)[0])
        raise ValueError(f"runs violates regulation R1: canary {i} is in no run "
                         f"(each canary bit must be in exactly one run)")
    return parts


@dataclass(frozen=True, eq=False)
class BitsTranscript:
    """bits b, decoder scores, guesses b_hat = 1[score > 0], and the runs used."""

    bits: np.ndarray
    scores: np.ndarray
    runs: tuple[np.ndarray, ...]

    @property
    def guesses(self) -> np.ndarray:
        return self.scores > 0

    @property
    def errors(self) -> int:
        return int((self.guesses != self.bits).sum())

    @property
    def observations(self) -> MembershipObservations:
        return MembershipObservations.from_arrays(self.bits, self.scores)


def transmit(generator: CanaryGenerator, mechanism: Callable[[list[Any], np.random.Generator],
                                                              Any],
             decoder: Callable[[Any, np.ndarray], Any], rng: np.random.Generator | int, *,
             bits: Any = None, p: float = 0.5, runs: str | Sequence[Sequence[int]] = "one",
             base_dataset: Sequence[Any] | Callable[[np.random.Generator], Sequence[Any]]
             | None = None) -> BitsTranscript:
    """Run the bits-transmission game (Bits Transmission Def. 5 with Algorithm 1 or 2).

    Args:
      generator: H (canaries and, for replace-one, their alternatives).
      mechanism: M, called as ``mechanism(dataset, rng)`` once per run.
      decoder: D, called as ``decoder(output, canary_indices)`` with the output of one run;
        returns one score per canary of that run (higher = bit 1).
      rng: Generator or integer seed (all randomness: bits and M's noise).
      bits: optional fixed secret bits (else drawn Bernoulli(p)).
      runs: "one" (Algorithm 2: all canaries in a single run), "multi" (Algorithm 1: one run per
        canary) or an explicit partition of range(n) (R1 enforced).
      base_dataset: the original dataset X_T added to every run (independent of the bits), or a
        callable ``rng -> X_T`` drawing a fresh one per run (Algorithm 1 allows it to differ).
    """
    g = as_rng(rng)
    n = generator.n
    if bits is None:
        b = g.random(n) < check_probability("p", p)
    else:
        b = check_binary_array("bits", bits)
        if b.size != n:
            raise ValueError(f"bits must have one entry per canary ({n}), got {b.size}")
    parts = partition_runs(runs, n)
    scores = np.empty(n)
    for idx in parts:
        xt = base_dataset(g) if callable(base_dataset) else (base_dataset or [])
        data = list(xt) + generator.dataset(b, idx)
        out = mechanism(data, g)
        s = np.asarray(decoder(out, idx.copy()), dtype=float).reshape(-1)
        if s.size != idx.size:
            raise ValueError(f"decoder must return one score per canary of the run "
                             f"({idx.size}), got {s.size} (regulation R2 / Definition 5: a "
                             f"decision for every bit)")
        if not np.isfinite(s).all():
            raise ValueError("decoder scores must be finite")
        scores[idx] = s
    return BitsTranscript(bits=b, scores=scores, runs=tuple(parts))
