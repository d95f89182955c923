"""What the engine runs: a *game* describes one trial; :func:`run_chunk` runs a range of them.

A game is any picklable object with

* ``fields``: the names of the numbers one trial records (e.g. ``("member", "score")``);
* ``run_trial(rng, t) -> sequence of len(fields) floats``: one trial, drawing every random
  number (its secret included) from ``rng``, the generator of trial t (a pure function of the
  audit seed and t, :mod:`dpaudit.randomness`); a tuple, list or NumPy array (arrays are
  copied, so a game may return a buffer it reuses; a reused list is not supported);
* ``config() -> dict``: a JSON-able description of everything that determines the trials (the
  mechanism, the neighbouring datasets, the score, ...); the trial store refuses to mix trials
  of different configurations.

:func:`run_chunk` is the unit of work every executor ships to a worker: it runs trials
``start..stop-1``, retries a failing trial up to ``retries`` more times (same stream, so a
deterministic failure fails again; transient ones -- a flaky file system, a busy GPU -- pass),
and returns the records plus the failures with their trial index and error, so that nothing is
dropped silently.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy import ndarray

from dpaudit.randomness import TrialStreams

__all__ = ["TrialGame", "TrialFailure", "ChunkResult", "run_chunk", "describe_callable"]


@runtime_checkable
class TrialGame(Protocol):
    fields: Sequence[str]

    def run_trial(self, rng: np.random.Generator, t: int) -> Sequence[float]: ...

    def config(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class TrialFailure:
    """A trial that failed ``attempts`` times; ``error`` is the last exception, one line."""

    trial: int
    attempts: int
    error: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, eq=False)
class ChunkResult:
    """Trials ``start..stop-1``: ``records`` (stop - start, len(fields)) with NaN rows where
    ``ok`` is False; ``failures`` lists those trials."""

    start: int
    stop: int
    records: np.ndarray
    ok: np.ndarray
    failures: tuple[TrialFailure, ...]


def _one_line(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0]}" if msg else type(exc).__name__


def run_chunk(game: Any, seed: int, start: int, stop: int, retries: int = 2) -> ChunkResult:
    """Run trials start..stop-1 of ``game`` under ``seed`` (the executors' unit of work).

    The loop does the least per trial: reposition the chunk's one generator at trial t
    (:meth:`TrialStreams.at`), call ``run_trial`` and append its record to a list; the list
    becomes the (n, len(fields)) array once, at the end.  A trial that raises goes to the slow
    path (``retries`` more attempts on the same stream); a record of the wrong size is
    reported as that trial's failure (the conversion is deterministic, so it is not retried).
    """
    k = len(game.fields)
    n = stop - start
    at = TrialStreams(seed).at
    run = game.run_trial
    rows: list[Any] = []
    append = rows.append
    failed: dict[int, TrialFailure] = {}
    nan_row = (math.nan,) * k
    for t in range(start, stop):
        try:
            row = run(at(t), t)
            # an array may be a buffer the game reuses: keep a copy until the chunk ends
            append(row.copy() if type(row) is ndarray else row)
        except Exception as exc:  # noqa: BLE001 - retried, then reported with the index
            row, failure = _retry(run, at, t, retries, exc)
            if failure is None:
                append(row.copy() if type(row) is ndarray else row)
            else:
                append(nan_row)
                failed[t] = failure
    try:
        rec = np.array(rows, dtype=np.float64)
        fast = rec.shape == (n, k)
    except (TypeError, ValueError):
        fast = False
    if not fast:
        rec = np.full((n, k), math.nan)
        for i, row in enumerate(rows):
            t = start + i
            if t in failed:
                continue
            try:
                r = np.asarray(row, dtype=np.float64).reshape(-1)
                if r.size != k:
                    raise ValueError(f"run_trial returned {r.size} numbers, expected "
                                     f"{k} (one per field {tuple(game.fields)})")
                rec[i] = r
            except (TypeError, ValueError) as exc:
                failed[t] = TrialFailure(t, 1, _one_line(exc))
    ok = np.ones(n, dtype=bool)
    if failed:
        idx = np.fromiter(failed, dtype=np.int64, count=len(failed)) - start
        ok[idx] = False
        rec[idx] = math.nan
    return ChunkResult(start, stop, rec, ok, tuple(failed[t] for t in sorted(failed)))


def _retry(run: Any, at: Any, t: int, retries: int, exc: Exception
           ) -> tuple[Any, TrialFailure | None]:
    """Attempts 2..retries+1 of trial t (same stream): (record, None) or (None, failure)."""
    for _ in range(retries):
        try:
            return run(at(t), t), None
        except Exception as again:  # noqa: BLE001 - the last error is reported
            exc = again
    return None, TrialFailure(t, retries + 1, _one_line(exc))


def describe_callable(obj: Any) -> str:
    """A stable description of a callable for an audit's configuration: the repr of a
    dataclass instance (its parameters), ``module.qualname`` of a function or class, else the
    class name (reprs with memory addresses would change from run to run)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return f"{type(obj).__module__}.{obj!r}"
    name = getattr(obj, "__qualname__", None)
    if name is not None:
        return f"{getattr(obj, '__module__', '?')}.{name}"
    return f"{type(obj).__module__}.{type(obj).__qualname__}"
