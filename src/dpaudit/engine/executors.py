"""Executors: run chunks of trials in-process, on a local process pool, or on Ray.

All three take the same inputs -- a picklable game, the audit seed, an iterator of
``(start, stop)`` trial ranges -- and yield :class:`~dpaudit.engine.game.ChunkResult` objects as
chunks complete (any order).  Chunks are pulled lazily from the iterator, with at most
``max_inflight`` chunks submitted at a time, so a sequential audit that stops early computes
little beyond its stopping point.  Every executor runs the same function,
:func:`dpaudit.engine.game.run_chunk`, so the records of a trial are bit-for-bit identical
whatever the executor (the trial's random stream depends only on (seed, t)).

Worker failures: a chunk whose worker process dies (killed, out of memory, segfault) is
resubmitted, up to ``retries`` more times; after that its trials are reported as failed with
the error -- never dropped.  The process pool is rebuilt after a worker death.

Ray is imported only here, lazily, when the Ray executor is built (``pip install
'dpaudit[ray]'``).  It runs on ``ray.init()`` locally (``num_cpus=workers``) or joins an existing
cluster given by ``address`` or the ``RAY_ADDRESS`` environment variable (Ray's convention).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import numpy as np

from dpaudit.engine.game import ChunkResult, TrialFailure, run_chunk

__all__ = ["Executor", "InlineExecutor", "ProcessExecutor", "RayExecutor", "make_executor",
           "EXECUTORS"]

EXECUTORS = ("inline", "process", "ray")


def _failed_chunk(start: int, stop: int, k: int, attempts: int, error: str) -> ChunkResult:
    n = stop - start
    return ChunkResult(start, stop, np.full((n, k), np.nan), np.zeros(n, bool),
                       tuple(TrialFailure(t, attempts, error) for t in range(start, stop)))


class Executor:
    """Common interface (see module)."""

    name = "base"
    workers = 1

    def run(self, game: Any, seed: int, chunks: Iterator[tuple[int, int]],
            retries: int) -> Iterator[ChunkResult]:
        raise NotImplementedError

    def close(self) -> None:
        """Stop the workers (pending chunks are cancelled)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InlineExecutor(Executor):
    """Chunks run one after the other in the calling process (any callables, no pickling)."""

    name = "inline"

    def run(self, game: Any, seed: int, chunks: Iterator[tuple[int, int]],
            retries: int) -> Iterator[ChunkResult]:
        for s, e in chunks:
            yield run_chunk(game, seed, s, e, retries)


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


class ProcessExecutor(Executor):
    """A local process pool (``concurrent.futures.ProcessPoolExecutor``), default all cores."""

    name = "process"

    def __init__(self, workers: int | None = None, max_inflight: int | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        self.max_inflight = max_inflight or 2 * self.workers
        self._ctx = _mp_context()
        self._pool: ProcessPoolExecutor | None = None
        self.pool_restarts = 0
        self.max_restarts = 3
        # start the workers now, before a progress-bar thread exists in the driver
        self._new_pool().submit(int).result()

    def _new_pool(self) -> ProcessPoolExecutor:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=self._ctx)
        return self._pool

    def run(self, game: Any, seed: int, chunks: Iterator[tuple[int, int]],
            retries: int) -> Iterator[ChunkResult]:
        pool = self._pool or self._new_pool()
        k = len(game.fields)
        inflight: dict[Future[ChunkResult], tuple[int, int, int]] = {}
        queue: list[tuple[int, int, int]] = []  # resubmissions first
        source = iter(chunks)
        while True:
            while len(inflight) < self.max_inflight:
                item = _next_chunk(queue, source)
                if item is None:
                    break
                s, e, att = item
                try:
                    fut = pool.submit(run_chunk, game, seed, s, e, retries)
                except BrokenProcessPool:
                    queue.insert(0, (s, e, att))
                    pool = self._restart(inflight, queue, retries, k)
                    continue
                inflight[fut] = (s, e, att)
            if not inflight:
                return
            done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
            broken = False
            for f in done:
                s, e, att = inflight.pop(f)
                try:
                    yield f.result()
                except BrokenProcessPool:
                    broken = True
                    queue.append((s, e, att + 1))
            if broken:
                pool = self._restart(inflight, queue, retries, k)
                # chunks retried too often become failures
                keep = []
                for s, e, att in queue:
                    if att > retries:
                        yield _failed_chunk(s, e, k, att, "worker process died "
                                            "(BrokenProcessPool)")
                    else:
                        keep.append((s, e, att))
                queue[:] = keep

    def _restart(self, inflight: dict[Future[ChunkResult], tuple[int, int, int]],
                 queue: list[tuple[int, int, int]], retries: int,
                 k: int) -> ProcessPoolExecutor:
        for f, (s, e, att) in list(inflight.items()):
            queue.append((s, e, att + 1))
            del inflight[f]
        queue.sort()
        self.pool_restarts += 1
        if self.pool_restarts > self.max_restarts:
            raise RuntimeError(f"worker processes died {self.pool_restarts} times; giving up "
                               f"(is the mechanism crashing the interpreter or running out of "
                               f"memory?)")
        return self._new_pool()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
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
            retries: int) -> Iterator[ChunkResult]:
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
                inflight[self._task.remote(game_ref, seed, s, e, retries)] = (s, e, att)
            self._pending = list(inflight)
            if not inflight:
                return
            done, _ = ray.wait(list(inflight), num_returns=1)
            for ref in done:
                s, e, att = inflight.pop(ref)
                try:
                    res = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - worker crash, lost node, ...
                    if att + 1 > retries:
                        msg = str(exc).strip().splitlines()
                        yield _failed_chunk(s, e, k, att + 1, f"{type(exc).__name__}: "
                                            f"{msg[0] if msg else ''}")
                    else:
                        queue.append((s, e, att + 1))
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
