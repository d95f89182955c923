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
dropped silently.  A trial that calls ``sys.exit`` fails like one that raises (``SystemExit: 3
(the trial called sys.exit)``); with ``timeout`` a trial running longer than that many seconds
is interrupted (``SIGALRM``, Unix, the worker's main thread) and fails with ``TrialTimeout``.
The interruption happens when the trial returns to Python bytecode: a call stuck inside native
code is interrupted when it returns, or when it is a system call that ``SIGALRM`` interrupts
(``time.sleep``, I/O waits).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy import ndarray

from dpaudit.randomness import TrialStreams

__all__ = ["TrialGame", "TrialFailure", "ChunkResult", "run_chunk", "describe_callable",
           "TrialTimeout", "check_timeout"]


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
    seconds: float = 0.0


class TrialTimeout(Exception):
    """A trial ran longer than the per-trial timeout."""


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"SystemExit: {exc.code} (the trial called sys.exit)"
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0]}" if msg else type(exc).__name__


#: the failures a trial may end with (``sys.exit`` in a mechanism is a failed trial, not the
#: end of the audit; KeyboardInterrupt still stops the run)
_TRIAL_ERRORS = (Exception, SystemExit)


def check_timeout(timeout: float | None) -> float | None:
    """None or a positive number of seconds below a day; needs ``signal.setitimer``."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or \
            not math.isfinite(timeout) or not 0.001 <= timeout <= 86_400:
        raise ValueError(f"trial_timeout (--trial-timeout) must be a number of seconds in "
                         f"[0.001, 86400]; got {timeout!r}")
    import signal

    if not hasattr(signal, "setitimer"):  # pragma: no cover - Windows
        raise ValueError("trial_timeout (--trial-timeout) needs signal.setitimer (Unix)")
    return float(timeout)


class _Timer:
    """SIGALRM after ``timeout`` seconds of one trial (installed for one chunk)."""

    def __init__(self, timeout: float) -> None:
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            raise ValueError("trial_timeout (--trial-timeout) needs the trials to run in the "
                             "main thread of their process")
        self.signal = signal
        self.timeout = timeout

    def _fire(self, signum: int, frame: Any) -> None:
        raise TrialTimeout(f"the trial ran longer than {self.timeout:g} s (--trial-timeout)")

    def __enter__(self) -> _Timer:
        self.old = self.signal.signal(self.signal.SIGALRM, self._fire)
        return self

    def __exit__(self, *exc: object) -> None:
        self.signal.setitimer(self.signal.ITIMER_REAL, 0)
        self.signal.signal(self.signal.SIGALRM, self.old)

    def wrap(self, run: Any) -> Any:
        setitimer, real, timeout = self.signal.setitimer, self.signal.ITIMER_REAL, self.timeout

        def timed(rng: Any, t: int) -> Any:
            setitimer(real, timeout)
            try:
                return run(rng, t)
            finally:
                setitimer(real, 0)
        return timed


def run_chunk(game: Any, seed: int, start: int, stop: int, retries: int = 2,
              timeout: float | None = None) -> ChunkResult:
    """Run trials start..stop-1 of ``game`` under ``seed`` (the executors' unit of work).

    The loop does the least per trial: reposition the chunk's one generator at trial t
    (:meth:`TrialStreams.at`), call ``run_trial`` and append its record to a list; the list
    becomes the (n, len(fields)) array once, at the end.  A trial that raises goes to the slow
    path (``retries`` more attempts on the same stream); a record of the wrong size is
    reported as that trial's failure (the conversion is deterministic, so it is not retried).
    ``timeout``: seconds per trial attempt (see module).
    """
    if timeout is None:
        return _run_chunk(game, seed, start, stop, retries, game.run_trial)
    with _Timer(timeout) as timer:
        return _run_chunk(game, seed, start, stop, retries, timer.wrap(game.run_trial))


def _run_chunk(game: Any, seed: int, start: int, stop: int, retries: int, run: Any
               ) -> ChunkResult:
    t0 = time.perf_counter()
    k = len(game.fields)
    n = stop - start
    at = TrialStreams(seed).at
    rows: list[Any] = []
    append = rows.append
    failed: dict[int, TrialFailure] = {}
    nan_row = (math.nan,) * k
    for t in range(start, stop):
        try:
            row = run(at(t), t)
            # an array may be a buffer the game reuses: keep a copy until the chunk ends
            append(row.copy() if type(row) is ndarray else row)
        except _TRIAL_ERRORS as exc:  # retried, then reported with the index
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
    return ChunkResult(start, stop, rec, ok, tuple(failed[t] for t in sorted(failed)),
                       time.perf_counter() - t0)


def _retry(run: Any, at: Any, t: int, retries: int, exc: BaseException
           ) -> tuple[Any, TrialFailure | None]:
    """Attempts 2..retries+1 of trial t (same stream): (record, None) or (None, failure)."""
    for _ in range(retries):
        try:
            return run(at(t), t), None
        except _TRIAL_ERRORS as again:  # the last error is reported
            exc = again
    return None, TrialFailure(t, retries + 1, _one_line(exc))


def describe_callable(obj: Any) -> str:
    """A stable description of a callable for an audit's configuration: the repr of a
    dataclass instance (its parameters), ``module.qualname`` of a function or class, else the
    class name (reprs with memory addresses would change from run to run).  What the callable
    *does* -- its code, a partial's arguments, an instance's attributes -- is fingerprinted
    separately (:func:`dpaudit.engine.identity.game_identity`)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return f"{type(obj).__module__}.{obj!r}"
    if isinstance(obj, functools.partial):
        return f"functools.partial({describe_callable(obj.func)})"
    name = getattr(obj, "__qualname__", None)
    if name is not None:
        return f"{getattr(obj, '__module__', '?')}.{name}"
    return f"{type(obj).__module__}.{type(obj).__qualname__}"
