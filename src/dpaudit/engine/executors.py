"""Executors: run chunks of trials in-process, on a local process pool, or on Ray.

All three take the same inputs -- a picklable game, the audit seed, an iterator of
``(start, stop)`` trial ranges -- and yield :class:`~dpaudit.engine.game.ChunkResult` objects as
chunks complete (any order).  Chunks are pulled lazily from the iterator, with at most
``max_inflight`` chunks submitted at a time, so a sequential audit that stops early computes
little beyond its stopping point.  Every executor runs the same function,
:func:`dpaudit.engine.game.run_chunk`, so the records of a trial are bit-for-bit identical
whatever the executor (the trial's random stream depends only on (seed, t)).

Worker failures are per trial and reproducible.  When a worker process dies (killed, out of
memory, a crash in native code, ``os._exit``) the pool is rebuilt and the chunks that were in
flight become *suspects*: they are re-run one at a time, alone on the pool, so that a death is
attributed to the one chunk running; a chunk that dies alone is cut in halves, down to single
trials, and a single trial that dies alone ``retries`` + 1 times is reported as failed
("worker process died ...") -- the other trials of its chunk are computed.  Ray reports a
task's failure per task, so its chunks are cut the same way without the serial phase.

Workers die with their driver: each worker ignores SIGINT (the driver handles Ctrl-C and kills
them), asks Linux for SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``, when the pool
is created from the main thread) and polls its parent's pid (every 0.25 s, any Unix), so a
driver killed with SIGKILL leaves no worker behind.  An interrupted or failed run kills the
workers instead of waiting for their chunks.

Ray is imported only here, lazily, when the Ray executor is built (``pip install
'dpaudit[ray]'``).  It runs on ``ray.init()`` locally (``num_cpus=workers``) or joins an existing
cluster given by ``address`` or the ``RAY_ADDRESS`` environment variable (Ray's convention).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np

from dpaudit.engine.game import ChunkResult, TrialFailure, run_chunk

__all__ = ["Executor", "InlineExecutor", "ProcessExecutor", "RayExecutor", "make_executor",
           "EXECUTORS"]

EXECUTORS = ("inline", "process", "ray")


#: the error of a trial whose worker process died running it alone
WORKER_DIED = ("worker process died running this trial (a signal, os._exit, out of memory "
               "or a crash in native code)")


def _failed_chunk(start: int, stop: int, k: int, attempts: int, error: str) -> ChunkResult:
    n = stop - start
    return ChunkResult(start, stop, np.full((n, k), np.nan), np.zeros(n, bool),
                       tuple(TrialFailure(t, attempts, error) for t in range(start, stop)))


class Executor:
    """Common interface (see module)."""

    name = "base"
    workers = 1

    def run(self, game: Any, seed: int, chunks: Iterator[tuple[int, int]],
            retries: int, timeout: float | None = None) -> Iterator[ChunkResult]:
        raise NotImplementedError

    def close(self) -> None:
        """Stop the workers (pending chunks are cancelled)."""

    def terminate(self) -> None:
        """Stop now (after an error or Ctrl-C): kill the workers, do not wait for chunks."""
        self.close()

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InlineExecutor(Executor):
    """Chunks run one after the other in the calling process (any callables, no pickling)."""

    name = "inline"

    def run(self, game: Any, seed: int, chunks: Iterator[tuple[int, int]],
            retries: int, timeout: float | None = None) -> Iterator[ChunkResult]:
        for s, e in chunks:
            yield run_chunk(game, seed, s, e, retries, timeout)


def _mp_context() -> Any:
    """fork on Linux (fast start-up, no ``if __name__ == "__main__"`` guard needed, as the
    default ProcessPoolExecutor), the platform default (spawn) elsewhere."""
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _next_chunk(queue: list[tuple[int, int, int]], source: Iterator[tuple[int, int]]
                ) -> tuple[int, int, int] | None:
    """The next (start, stop, attempt) to submit: resubmissions first (``queue``), then a fresh
    chunk of ``source`` (attempt 0); None when both are empty."""
    if queue:
        return queue.pop(0)
    nxt = next(source, None)
    return None if nxt is None else (nxt[0], nxt[1], 0)


def _split_or_fail(s: int, e: int, att: int, retries: int, k: int, error: str
                   ) -> tuple[list[tuple[int, int, int]], ChunkResult | None]:
    """A chunk that failed on its own: halves to re-run (same attempt count), or -- a single
    trial -- one more attempt, or its failure after ``retries`` + 1 attempts."""
    if e - s > 1:
        mid = (s + e) // 2
        return [(s, mid, att), (mid, e, att)], None
    if att + 1 > retries:
        return [], _failed_chunk(s, e, k, att + 1, error)
    return [(s, e, att + 1)], None


def _parent_watch(parent: int) -> None:
    while True:
        time.sleep(0.25)
        if os.getppid() != parent:
            os._exit(1)


def _worker_init(parent: int, deathsig: bool) -> None:
    """Runs in each worker: ignore Ctrl-C (the driver stops the workers) and die with the
    driver (see module)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if deathsig and sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG = 1
        except (OSError, AttributeError):  # pragma: no cover - no libc prctl
            pass
    if os.getppid() != parent:  # the driver died before the line above
        os._exit(1)
    threading.Thread(target=_parent_watch, args=(parent,), daemon=True,
                     name="dpaudit-parent-watch").start()


class ProcessExecutor(Executor):
    """A local process pool (``concurrent.futures.ProcessPoolExecutor``), default all cores."""

    name = "process"

    def __init__(self, workers: int | None = None, max_inflight: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        self.max_inflight = max_inflight or 2 * self.workers
        self._ctx = _mp_context()
        self._pool: ProcessPoolExecutor | None = None
        self.pool_restarts = 0
        # start the workers now, before a progress-bar thread exists in the driver
        self._new_pool().submit(int).result()

    def _new_pool(self) -> ProcessPoolExecutor:
        if self._pool is not None:
            self._kill(self._pool)
        # PR_SET_PDEATHSIG fires when the *thread* that forked the worker ends: only ask for
        # it when that thread is the main thread (the process's lifetime)
        main = threading.current_thread() is threading.main_thread()
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=self._ctx,
                                         initializer=_worker_init,
                                         initargs=(os.getpid(), main))
        return self._pool

    @staticmethod
    def _kill(pool: ProcessPoolExecutor) -> None:
        # ProcessPoolExecutor has no public way to stop running work: kill its processes
        procs = list((getattr(pool, "_processes", None) or {}).values())
        for p in procs:
            try:
                p.kill()
            except (OSError, ValueError, AttributeError):  # already gone
                pass
        pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            try:
                p.join(5)
            except (OSError, ValueError, AssertionError, AttributeError):
                pass

    def run(self, game: Any, seed: int, chunks: Iterator[tuple[int, int]],
            retries: int, timeout: float | None = None) -> Iterator[ChunkResult]:
        pool = self._pool or self._new_pool()
        k = len(game.fields)
        inflight: dict[Future[ChunkResult], tuple[int, int, int]] = {}
        suspects: list[tuple[int, int, int]] = []  # run alone after a worker death
        source = iter(chunks)
        isolating = False  # the one chunk in flight runs alone
        while True:
            if suspects and not inflight:
                isolating = True
                s, e, att = suspects.pop(0)
                try:
                    inflight[pool.submit(run_chunk, game, seed, s, e, retries,
                                         timeout)] = (s, e, att)
                except BrokenProcessPool:  # pragma: no cover - broken between two calls
                    suspects.insert(0, (s, e, att))
                    pool = self._restart()
                    continue
            elif not suspects:
                isolating = False
                while len(inflight) < self.max_inflight:
                    item = next(source, None)
                    if item is None:
                        break
                    s, e = item
                    try:
                        fut = pool.submit(run_chunk, game, seed, s, e, retries, timeout)
                    except BrokenProcessPool:
                        suspects.append((s, e, 0))
                        break
                    inflight[fut] = (s, e, 0)
            if not inflight:
                if suspects:
                    pool = self._restart()
                    continue
                return
            done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
            broken: list[tuple[int, int, int]] = []
            for f in done:
                s, e, att = inflight.pop(f)
                try:
                    res = f.result()
                except BrokenProcessPool:
                    broken.append((s, e, att))
                    continue
                yield res
            if not broken:
                continue
            if isolating:  # the chunk died alone: it is the cause
                (s, e, att), = broken
                again, failed = _split_or_fail(s, e, att, retries, k, WORKER_DIED)
                suspects[:0] = again
                if failed is not None:
                    yield failed
            else:  # some chunk in flight killed the pool: every one is a suspect
                suspects += broken + list(inflight.values())
                suspects.sort()
                inflight.clear()
            pool = self._restart()

    def _restart(self) -> ProcessPoolExecutor:
        self.pool_restarts += 1
        return self._new_pool()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def terminate(self) -> None:
        if self._pool is not None:
            self._kill(self._pool)
            self._pool = None


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ImportError("the Ray executor needs Ray: pip install 'dpaudit[ray]'") from None
    return ray


class RayExecutor(Executor):
    """Ray tasks, one per chunk; ``address`` (or ``RAY_ADDRESS``) joins an existing cluster,
    otherwise a local ``ray.init(num_cpus=workers)`` is started (and shut down on close)."""

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None,
                 max_inflight: int | None = None) -> None:
        ray = import_ray()
        self._ray = ray
        self._owns = False
        if not ray.is_initialized():
            addr = address or os.environ.get("RAY_ADDRESS") or None
            kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                  "configure_logging": False}
            if addr is None:
                kw["num_cpus"] = workers or os.cpu_count() or 1
            ray.init(address=addr, **kw)
            self._owns = True
        self.workers = workers or int(ray.cluster_resources().get("CPU", 1))
        self.max_inflight = max_inflight or 2 * self.workers
        self._task = ray.remote(num_cpus=1, max_retries=0)(run_chunk)
        self._pending: list[Any] = []

    def run(self, game: Any, seed: int, chunks: Iterator[tuple[int, int]],
            retries: int, timeout: float | None = None) -> Iterator[ChunkResult]:
        ray = self._ray
        k = len(game.fields)
        game_ref = ray.put(game)
        inflight: dict[Any, tuple[int, int, int]] = {}
        queue: list[tuple[int, int, int]] = []
        source = iter(chunks)
        while True:
            while len(inflight) < self.max_inflight:
                item = _next_chunk(queue, source)
                if item is None:
                    break
                s, e, att = item
                inflight[self._task.remote(game_ref, seed, s, e, retries,
                                           timeout)] = (s, e, att)
            self._pending = list(inflight)
            if not inflight:
                return
            done, _ = ray.wait(list(inflight), num_returns=1)
            for ref in done:
                s, e, att = inflight.pop(ref)
                try:
                    res = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - worker crash, lost node, ...
                    # Ray attributes the failure to this task: cut it down to the trial
                    msg = str(exc).strip().splitlines()
                    again, failed = _split_or_fail(s, e, att, retries, k,
                                                   f"{type(exc).__name__}: "
                                                   f"{msg[0] if msg else ''}")
                    queue[:0] = again
                    if failed is not None:
                        yield failed
                    continue
                yield res

    def close(self) -> None:
        for ref in self._pending:
            try:
                self._ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - already finished
                pass
        self._pending = []
        if self._owns and self._ray.is_initialized():
            self._ray.shutdown()
            self._owns = False


def make_executor(name: str, workers: int | None = None, *,
                  ray_address: str | None = None) -> Executor:
    if name == "inline":
        return InlineExecutor()
    if name == "process":
        return ProcessExecutor(workers)
    if name == "ray":
        return RayExecutor(workers, ray_address)
    raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}; got {name!r}")
