"""Black-box multi-run audit of a user's mechanism, run by the trial engine.

The user supplies three picklable callables (module-level functions or instances of
module-level classes, so that worker processes can receive them):

* ``mechanism(dataset, rng) -> output``  -- the mechanism under audit (any Python objects);
* ``neighbours(rng) -> (D0, D1)``        -- a pair of neighbouring datasets: D1 = D0 plus the
  canary (add/remove adjacency) or D0 with one record replaced by the canary (replace-one);
  it may draw a fresh pair per trial;
* ``score(output) -> float``             -- the membership score (higher = "D1 was used").

Trial t is one run of Bits Transmission Algorithm 1 (BT notes §2.2; Hypothesis Interpretation's
classical audit): a
uniform secret bit b_t chooses D_b, M runs once on it, and (b_t, score) is recorded, so each
canary bit is in exactly one run (regulation R1) and the score sees only the output (R2).

A :class:`BlackBoxAudit` is a game of :mod:`dpaudit.engine` (``fields``, ``run_trial``,
``config``): :func:`dpaudit.engine.run_audit` runs it on an executor (in-process, local process
pool, Ray) with a durable trial store, resume and sequential stopping; :func:`run_trials`
(below) is the in-memory shortcut kept from earlier versions.

Reproducibility.  Trial t draws all its randomness from its own generator,
:func:`trial_rng` (seed, t) -- Philox with counter block t (:mod:`dpaudit.randomness`); the
secret bit is its first draw.  Results are stored by trial index, so the same seed gives the
same observations whatever the executor, the number of workers, the chunking or restarts.
(Before dpaudit 0.1 the stream was child t of ``SeedSequence(seed)``: same law, other draws.)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.engine.game import describe_callable
from dpaudit.observations import MembershipObservations
from dpaudit.randomness import TrialStreams, trial_rng
from dpaudit.validation import check_choice, check_count

__all__ = ["BlackBoxAudit", "run_trials", "trial_rng"]


@dataclass(frozen=True)
class BlackBoxAudit:
    """A user's mechanism, its neighbouring-dataset generator and its score function.

    ``version``: an optional string the user changes whenever the mechanism's behaviour
    changes in a way its code cannot show (it reads a file, the environment or a clock at
    call time); a trial store records it, and resuming with another version is refused."""

    mechanism: Callable[[Any, np.random.Generator], Any]
    neighbours: Callable[[np.random.Generator], tuple[Any, Any]]
    score: Callable[[Any], float]
    adjacency: str = "add_remove"
    version: str | None = None

    fields = ("member", "score")

    def __post_init__(self) -> None:
        for name in ("mechanism", "neighbours", "score"):
            if not callable(getattr(self, name)):
                raise ValueError(f"{name} must be callable")
        check_choice("adjacency", self.adjacency, ("add_remove", "replace_one"))
        if self.version is not None and not isinstance(self.version, str):
            raise ValueError(f"version must be a string or None, got "
                             f"{type(self.version).__name__}")

    def config(self) -> dict[str, Any]:
        """What determines the trials (recorded in the trial store)."""
        return {"kind": "blackbox", "mechanism": describe_callable(self.mechanism),
                "neighbours": describe_callable(self.neighbours),
                "score": describe_callable(self.score), "adjacency": self.adjacency}

    def run_trial(self, g: np.random.Generator, t: int) -> tuple[float, float]:
        """One run: bit ~ Bernoulli(1/2), output = M(D_bit), score(output)."""
        bit = g.random() < 0.5
        pair = self.neighbours(g)
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError("neighbours(rng) must return a pair (D0, D1) of datasets")
        s = float(self.score(self.mechanism(pair[1] if bit else pair[0], g)))
        if not math.isfinite(s):
            raise ValueError(f"score returned a non-finite value ({s}) in trial {t}")
        return float(bit), s

    def secret(self, seed: int, t: int) -> bool:
        """The secret bit of trial t (its stream's first draw), also when the trial failed."""
        return bool(trial_rng(seed, t).random() < 0.5)

    def secrets(self, seed: int, trials: Any) -> np.ndarray:
        """:meth:`secret` of several trials (one reused generator: about 1 us each)."""
        at = TrialStreams(seed).at
        t = np.asarray(trials, dtype=np.int64)
        return np.fromiter((at(i).random() < 0.5 for i in t.tolist()), dtype=bool,
                           count=t.size)

    def trial(self, seed: int, t: int) -> tuple[bool, float]:
        """Trial t of an audit with ``seed``: (secret bit, score)."""
        bit, s = self.run_trial(trial_rng(seed, t), t)
        return bool(bit), s


def run_trials(audit: BlackBoxAudit, trials: int, seed: int, *, workers: int | None = None,
               chunk_size: int | None = None, progress: bool = True
               ) -> MembershipObservations:
    """Run ``trials`` independent audit trials (in parallel) and return (bit, score) pairs.

    A thin wrapper over :func:`dpaudit.engine.execute` without a store: ``workers=1`` runs
    in-process (any callables), otherwise on a local process pool.  A trial that still fails
    after its retries raises ValueError naming the trial and the error.

    Args:
      audit: the black-box mechanism, neighbour generator and score.
      trials: number of runs (>= 2).
      seed: integer seed; same seed -> same result regardless of ``workers``/``chunk_size``.
      workers: processes (default: all cores, ``os.cpu_count()``); 1 = in-process.
      chunk_size: trials per task (default: about 8 tasks per worker).
      progress: show a rich progress bar.
    """
    from dpaudit.engine.runner import execute

    n = check_count("trials", trials, minimum=2)
    seed = check_count("seed", seed)
    if workers is not None:
        check_count("workers", workers, minimum=1)
    run = execute(audit, trials=n, seed=seed,
                  executor="inline" if workers == 1 else "process", workers=workers,
                  chunk_size=chunk_size, progress=progress, retries=0)
    if run.failures:
        f = run.failures[0]
        raise ValueError(f"trial {f.trial} failed ({len(run.failures)} of {n} trials failed): "
                         f"{f.error}")
    return MembershipObservations.from_arrays(run.column("member") > 0.5, run.column("score"))
