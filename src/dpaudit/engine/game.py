"""What the engine runs: a *game* describes one trial; :func:`run_chunk` runs a range of them.

A game is any picklable object with

* ``fields``: the names of the numbers one trial records (e.g. ``("member", "score")``);
* ``run_trial(rng, t) -> sequence of len(fields) floats``: one trial, drawing every random
  number (its secret included) from ``rng``, the generator of trial t (a pure function of the
  audit seed and t, :mod:`dpaudit.engine.seeding`);
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

from dpaudit.engine.seeding import TrialStreams

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
    """Run trials start..stop-1 of ``game`` under ``seed`` (the executors' unit of work)."""
    k = len(game.fields)
    rec = np.empty((stop - start, k))
    ok = np.ones(stop - start, dtype=bool)
    failures: list[TrialFailure] = []
    streams = TrialStreams(seed)
    run = game.run_trial
    for i, t in enumerate(range(start, stop)):
        for attempt in range(retries + 1):
            try:
                rec[i] = run(streams.at(t), t)
                break
            except Exception as exc:  # noqa: BLE001 - reported with the trial index
                if attempt == retries:
                    ok[i] = False
                    rec[i] = math.nan
                    failures.append(TrialFailure(t, retries + 1, _one_line(exc)))
    return ChunkResult(start, stop, rec, ok, tuple(failures))


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
