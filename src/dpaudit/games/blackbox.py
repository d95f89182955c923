"""Black-box multi-run audit of a user's mechanism, run in parallel on local processes.

The user supplies three picklable callables (module-level functions or instances of
module-level classes, so that worker processes can receive them):

* ``mechanism(dataset, rng) -> output``  -- the mechanism under audit (any Python objects);
* ``neighbours(rng) -> (D0, D1)``        -- a pair of neighbouring datasets: D1 = D0 plus the
  canary (add/remove adjacency) or D0 with one record replaced by the canary (replace-one);
  it may draw a fresh pair per trial;
* ``score(output) -> float``             -- the membership score (higher = "D1 was used").

Trial t is one run of seed 000 Algorithm 1 (spec/000 §2.2; seed 004's classical audit): a
uniform secret bit b_t chooses D_b, M runs once on it, and (b_t, score) is recorded, so each
canary bit is in exactly one run (regulation R1) and the score sees only the output (R2).

Reproducibility.  Trial t draws all its randomness from its own generator seeded with
``SeedSequence(seed, spawn_key=(t,))`` (the t-th child of ``SeedSequence(seed)``), and results
are stored by trial index; hence the same seed gives the same observations whatever the number
of workers or the chunking.  Parallelism uses ``concurrent.futures.ProcessPoolExecutor``
(default: all cores); ``workers=1`` runs in-process (and accepts unpicklable callables).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.observations import MembershipObservations
from dpaudit.validation import check_choice, check_count

__all__ = ["BlackBoxAudit", "run_trials", "trial_rng"]


def trial_rng(seed: int, trial: int) -> np.random.Generator:
    """The generator of trial ``trial``: child ``trial`` of SeedSequence(seed)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(trial,)))


@dataclass(frozen=True)
class BlackBoxAudit:
    """A user's mechanism, its neighbouring-dataset generator and its score function."""

    mechanism: Callable[[Any, np.random.Generator], Any]
    neighbours: Callable[[np.random.Generator], tuple[Any, Any]]
    score: Callable[[Any], float]
    adjacency: str = "add_remove"

    def __post_init__(self) -> None:
        for name in ("mechanism", "neighbours", "score"):
            if not callable(getattr(self, name)):
                raise ValueError(f"{name} must be callable")
        check_choice("adjacency", self.adjacency, ("add_remove", "replace_one"))

    def trial(self, seed: int, t: int) -> tuple[bool, float]:
        """One run: bit ~ Bernoulli(1/2), output = M(D_bit), score(output)."""
        g = trial_rng(seed, t)
        bit = bool(g.random() < 0.5)
        pair = self.neighbours(g)
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError("neighbours(rng) must return a pair (D0, D1) of datasets")
        out = self.mechanism(pair[1] if bit else pair[0], g)
        s = float(self.score(out))
        if not np.isfinite(s):
            raise ValueError(f"score returned a non-finite value ({s}) in trial {t}")
        return bit, s


def _run_chunk(audit: BlackBoxAudit, seed: int, start: int, stop: int
               ) -> tuple[int, np.ndarray, np.ndarray]:
    bits = np.empty(stop - start, dtype=bool)
    scores = np.empty(stop - start)
    for k, t in enumerate(range(start, stop)):
        bits[k], scores[k] = audit.trial(seed, t)
    return start, bits, scores


def run_trials(audit: BlackBoxAudit, trials: int, seed: int, *, workers: int | None = None,
               chunk_size: int | None = None, progress: bool = True
               ) -> MembershipObservations:
    """Run ``trials`` independent audit trials (in parallel) and return (bit, score) pairs.

    Args:
      audit: the black-box mechanism, neighbour generator and score.
      trials: number of runs (>= 2).
      seed: integer seed; same seed -> same result regardless of ``workers``/``chunk_size``.
      workers: processes (default: all cores, ``os.cpu_count()``); 1 = in-process.
      chunk_size: trials per task (default: about 4 tasks per worker, at most 10,000).
      progress: show a rich progress bar.
    """
    n = check_count("trials", trials, minimum=2)
    seed = check_count("seed", seed)
    w = check_count("workers", workers, minimum=1) if workers is not None else \
        (os.cpu_count() or 1)
    w = min(w, n)
    cs = check_count("chunk_size", chunk_size, minimum=1) if chunk_size is not None else \
        max(1, min(10_000, -(-n // (4 * w))))
    bounds = [(s, min(s + cs, n)) for s in range(0, n, cs)]
    bits = np.empty(n, dtype=bool)
    scores = np.empty(n)

    from rich.progress import Progress

    with Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("audit trials", total=n)
        if w == 1:
            for s, e in bounds:
                _, b, sc = _run_chunk(audit, seed, s, e)
                bits[s:e], scores[s:e] = b, sc
                bar.advance(task, e - s)
        else:
            try:
                pickle.dumps(audit)
            except Exception as exc:  # noqa: BLE001 - any pickling failure
                raise ValueError(f"audit callables must be picklable to run on {w} worker "
                                 f"processes (define them at module level) or use workers=1: "
                                 f"{exc}") from None
            with ProcessPoolExecutor(max_workers=w) as ex:
                futs = [ex.submit(_run_chunk, audit, seed, s, e) for s, e in bounds]
                for f in as_completed(futs):
                    s, b, sc = f.result()
                    bits[s:s + b.size], scores[s:s + b.size] = b, sc
                    bar.advance(task, b.size)
    return MembershipObservations.from_arrays(bits, scores)
