"""The driver: game -> executor -> store, with resume, retries, progress and early stopping.

:func:`execute` runs trials ``0..trials-1`` of a game.  With a store it first registers the
audit (refusing a store of another configuration), reads which trials are already there and
schedules only the missing ones (contiguous ranges cut into chunks), then writes results in
batches, one transaction each.  The records of every trial are kept in memory too (one row of
``len(fields)`` floats per trial) and returned in trial order.

``stop_rule(prefix_records) -> int | None`` (sequential audits) is evaluated on the contiguous
prefix of finished trials as it grows; when it returns a number n, the driver cancels the
remaining work and the result covers trials 0..n-1.  Because the rule looks at the prefix in
index order, the stopping point is the same whatever the executor, the chunking or the timing.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit.engine.executors import EXECUTORS, Executor, make_executor
from dpaudit.engine.game import ChunkResult, TrialFailure, check_timeout
from dpaudit.engine.store import TrialStore, audit_id_of
from dpaudit.validation import check_choice, check_count

__all__ = ["TrialRun", "execute", "STREAM"]

#: identifies the per-trial random stream (dpaudit.randomness) in stored configurations
STREAM = "philox4x64-counter(0,0,t,0)-v1"


@dataclass(frozen=True, eq=False)
class TrialRun:
    """Trials 0..n-1 in index order: ``records`` (n, len(fields)); ``ok`` False for failed
    trials (NaN rows), listed in ``failures``."""

    fields: tuple[str, ...]
    records: np.ndarray
    ok: np.ndarray
    failures: tuple[TrialFailure, ...]
    audit_id: str
    config: dict[str, Any]
    computed: int
    reused: int
    stopped_at: int | None
    seconds: float
    executor: str
    workers: int
    store: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return int(self.records.shape[0])

    def column(self, name: str) -> np.ndarray:
        return self.records[:, self.fields.index(name)]


class _ChunkSizer:
    """Chunk sizes that keep every chunk to about ``target`` seconds of work, at most
    ``largest`` trials: the first chunks have ``first`` trials, then each finished chunk's
    seconds per trial sets the size (growing at most 8-fold a step), so trials reach the store
    every few seconds whatever the trial's cost (a chunk is written when it finishes)."""

    def __init__(self, largest: int, target: float, first: int = 16) -> None:
        self.largest = largest
        self.target = target
        self.size = min(largest, first)

    def observe(self, trials: int, seconds: float) -> None:
        if trials <= 0 or seconds <= 0:
            self.size = min(self.largest, self.size * 8)
            return
        want = int(self.target * trials / seconds)
        self.size = max(1, min(self.largest, want, self.size * 8))


def _ranges(missing: np.ndarray, chunk: int | _ChunkSizer) -> Iterator[tuple[int, int]]:
    """Contiguous runs of the sorted ``missing`` indices, cut into pieces of <= chunk (the
    sizer's current size, read as each piece is cut)."""
    if missing.size == 0:
        return
    size = (lambda: chunk) if isinstance(chunk, int) else (lambda: chunk.size)
    breaks = np.flatnonzero(np.diff(missing) != 1) + 1
    for run in np.split(missing, breaks):
        a, b = int(run[0]), int(run[-1]) + 1
        s = a
        while s < b:
            e = min(s + size(), b)
            yield s, e
            s = e


#: at most this many retries of a failing trial
MAX_RETRIES = 100


def check_trials_fit(n: int, k: int) -> None:
    """The driver keeps (n, k) float64 records and three boolean arrays of n trials in memory:
    refuse a budget that cannot fit in this machine's memory, saying how many trials fit."""
    per_trial = 8 * k + 3
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        phys = 1 << 34
    fit = int(phys // 2 // per_trial)
    if n > fit:
        raise ValueError(f"trials (--trials) must be at most {fit:,} on this machine (the "
                         f"driver keeps {per_trial} bytes per trial in memory, half of "
                         f"{phys / 2**30:.1f} GiB); got {n:,}")


def _progress(enabled: bool, total: int, done: int) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(TextColumn("[bold]trials"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[rate]} trials/s"), TimeElapsedColumn(),
                   TextColumn("ETA"), TimeRemainingColumn(), disable=not enabled,
                   transient=True)
    task = bar.add_task("trials", total=total, completed=done, rate="-")
    return bar, task


def default_config(game: Any, seed: int, identity_env: Any = ()) -> dict[str, Any]:
    """What identifies an audit in a store: the game's own description, its fields, the seed
    and stream, plus the fingerprints of the game's code and parameters and the library
    versions (:mod:`dpaudit.engine.identity`), so that a store never mixes trials of two
    versions of a mechanism; and what the user declares about inputs the code cannot show
    (the game's ``version``, digests of the ``identity_env`` variables), when anything is."""
    from dpaudit.engine.identity import declared_identity, game_identity, versions

    cfg = {"game": game.config(), "fields": list(game.fields), "seed": int(seed),
           "stream": STREAM, "identity": game_identity(game), "versions": versions(game)}
    declared = declared_identity(game, identity_env)
    if declared:
        cfg["declared"] = declared
    return cfg


def execute(game: Any, *, trials: int, seed: int, executor: str | Executor = "process",
            workers: int | None = None, store: str | os.PathLike[str] | None = None,
            resume: bool = False, chunk_size: int | None = None, retries: int = 2,
            progress: bool = False, ray_address: str | None = None,
            stop_rule: Callable[[np.ndarray, np.ndarray], int | None] | None = None,
            commit_seconds: float = 1.0, look_seconds: float = 0.25,
            trial_timeout: float | None = None, identity_env: Any = ()) -> TrialRun:
    """Run trials 0..trials-1 of ``game`` (see module).

    Args:
      game: a picklable game (``fields``, ``run_trial(rng, t)``, ``config()``);
        e.g. :class:`dpaudit.games.blackbox.BlackBoxAudit`.
      trials: number of trials (the budget of a sequential audit).
      seed: integer seed; trial t's randomness is a pure function of (seed, t).
      executor: "inline", "process" (default, all cores) or "ray", or an Executor.
      workers: processes / Ray CPUs (default: all cores).
      store: SQLite trial store path (created if absent).
      resume: continue an audit already in ``store`` (otherwise such a store is refused).
      chunk_size: the largest number of trials per task (default: about 8 tasks per worker,
        16 to 20,000); within it, chunks are sized to about ``commit_seconds`` of work each,
        from the measured time per trial, so trials reach the store every few seconds.
      retries: extra attempts for a failing trial (and for a trial whose worker died), at most
        100.
      progress: rich progress bar (trials/s, ETA) on stderr's terminal.
      ray_address: Ray cluster address (default: RAY_ADDRESS, else a local ray.init()).
      stop_rule: sequential stopping rule on the finished prefix (see module).
      trial_timeout: seconds one attempt of a trial may run before it fails with
        ``TrialTimeout`` (None: no limit; see :mod:`dpaudit.engine.game`).
      identity_env: names of environment variables the mechanism reads at call time; their
        values (digests) join the store's identity, so a resume with another value is
        refused (the code fingerprints cannot see them).
    """
    n = check_count("trials", trials, minimum=1)
    seed = check_count("seed", seed)
    retries = check_count("retries", retries)
    if retries > MAX_RETRIES:
        raise ValueError(f"retries (--retries) must be in [0, {MAX_RETRIES}]; got {retries}")
    trial_timeout = check_timeout(trial_timeout)
    if isinstance(executor, str):
        check_choice("executor", executor, EXECUTORS)
    if workers is not None:
        workers = check_count("workers", workers, minimum=1)
    if chunk_size is not None:
        chunk_size = check_count("chunk_size", chunk_size, minimum=1)
    fields = tuple(game.fields)
    k = len(fields)
    if k == 0:
        raise ValueError("game.fields must name at least one recorded number")
    check_trials_fit(n, k)
    config = default_config(game, seed, identity_env)
    aid = audit_id_of(config)
    records = np.full((n, k), np.nan)
    done = np.zeros(n, dtype=bool)
    ok = np.zeros(n, dtype=bool)
    failures: dict[int, TrialFailure] = {}
    st: TrialStore | None = None
    run_id = 0
    reused = 0
    t0 = time.perf_counter()
    from dpaudit import __version__

    if store is not None:
        st = TrialStore(store)
        try:
            st.acquire()
            aid = st.register(config, fields, __version__)
            have = st.count(aid)
            if have and not resume:
                raise ValueError(f"trial store {store} already holds {have} trials of this "
                                 f"audit; pass --resume (resume=True) to continue it")
            ti, data = st.records(aid, stop=n)
            records[ti] = data
            done[ti] = True
            ok[ti] = True
            reused = int(ti.size)
        except BaseException:
            st.close()
            raise
    missing = np.flatnonzero(~done)
    ex: Executor | None = None
    prefix = _prefix(done, 0)
    stopped: int | None = None
    if stop_rule is not None and prefix > 0:
        stopped = stop_rule(records[:prefix], ok[:prefix])
    computed = 0
    pending: list[ChunkResult] = []
    try:
        if missing.size and stopped is None:
            if isinstance(executor, Executor):
                ex = executor
            else:
                if executor == "process" and (workers or os.cpu_count() or 1) > 1:
                    _check_picklable(game, workers)
                ex = make_executor(executor, workers, ray_address=ray_address)
            w = max(1, ex.workers)
            cs = chunk_size or max(16, min(20_000, -(-missing.size // (8 * w))))
            if stop_rule is not None and chunk_size is None:
                cs = max(16, min(cs, 64))
            sizer = _ChunkSizer(cs, commit_seconds)
            if st is not None:
                run_id = st.start_run(aid, ex.name, w)
            last_commit = last_look = time.perf_counter()
            looked = prefix
            ndone = int(done.sum())
            bar, task = _progress(progress, n, ndone)
            with bar:
                for res in ex.run(game, seed, _ranges(missing, sizer), retries,
                                  trial_timeout):
                    s, e = res.start, res.stop
                    sizer.observe(e - s, res.seconds)
                    records[s:e] = res.records
                    ok[s:e] = res.ok
                    done[s:e] = True
                    for f in res.failures:
                        failures[f.trial] = f
                    computed += e - s
                    ndone += e - s
                    pending.append(res)
                    now = time.perf_counter()
                    if st is not None and now - last_commit >= commit_seconds:
                        _flush(st, aid, pending)
                        last_commit = now
                    elapsed = now - t0
                    bar.update(task, completed=ndone,
                               rate=f"{computed / elapsed:,.0f}" if elapsed > 0 else "-")
                    prefix = _prefix(done, prefix)
                    if stop_rule is not None and prefix > looked and (
                            now - last_look >= look_seconds or prefix >= 1.1 * looked + 16
                            or prefix == n):
                        last_look, looked = now, prefix
                        stopped = stop_rule(records[:prefix], ok[:prefix])
                        if stopped is not None:
                            break
                if stop_rule is not None and stopped is None:
                    stopped = stop_rule(records[:prefix], ok[:prefix])
            if st is not None:
                _flush(st, aid, pending)
    except BaseException:
        # an error or Ctrl-C: kill the workers now (their chunks are lost, the store keeps
        # every committed trial)
        if ex is not None:
            ex.terminate()
        if st is not None and pending:
            try:
                _flush(st, aid, pending)  # the finished chunks not yet written
            except Exception:  # noqa: BLE001 - the original error matters more
                pass
        raise
    finally:
        if ex is not None and not isinstance(executor, Executor):
            ex.close()
        if st is not None:
            if run_id:
                st.finish_run(run_id, computed)
            stored_failures = st.failures(aid)
            st.close()
            for f in stored_failures:
                if f.trial < n and not ok[f.trial]:
                    failures.setdefault(f.trial, f)
    end = stopped if stopped is not None else n
    if stopped is None and not done.all():  # pragma: no cover - defensive
        raise RuntimeError("trial engine finished with trials missing")
    fl = tuple(sorted((f for f in failures.values() if f.trial < end), key=lambda f: f.trial))
    return TrialRun(fields=fields, records=records[:end], ok=ok[:end], failures=fl,
                    audit_id=aid, config=config, computed=computed, reused=reused,
                    stopped_at=stopped, seconds=time.perf_counter() - t0,
                    executor=executor if isinstance(executor, str) else executor.name,
                    workers=ex.workers if ex is not None else (workers or 0),
                    store=str(store) if store is not None else None)


def _prefix(done: np.ndarray, start: int) -> int:
    """Length of the finished prefix, given that trials < start are done (window scans, no
    per-trial Python loop)."""
    n = done.size
    p = start
    while p < n:
        w = done[p:p + 65_536]
        if w.all():
            p += w.size
            continue
        return p + int(np.argmin(w))
    return p


def _flush(st: TrialStore, aid: str, pending: list[ChunkResult]) -> None:
    if not pending:
        return
    if len(pending) == 1:
        r = pending[0]
        st.write(aid, r.start, r.records, r.ok, r.failures)
    else:
        st.write_many(aid, pending)
    pending.clear()


def _check_picklable(game: Any, workers: int | None) -> None:
    import pickle

    try:
        pickle.dumps(game)
    except Exception as exc:  # noqa: BLE001 - any pickling failure
        raise ValueError(f"the audit must be picklable to run on {workers or 'several'} worker "
                         f"processes (define its callables at module level) or use "
                         f"executor='inline' / workers=1: {exc}") from None


def rate(run: TrialRun) -> float:
    return run.computed / run.seconds if run.seconds > 0 else math.nan
