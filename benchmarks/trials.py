"""Trial-engine benchmark (issue 12 targets).  Prints figures and ratios measured in this run.

0. Baseline, measured first in the same run: a bare NumPy loop over the same trial count
   (``for t in range(n): g.random()``, one scalar draw per trial -- what a no-op trial draws).
   Every per-trial figure below is also printed as a multiple of it, which factors out most of
   the machine's load.
1. Per-trial stream set-up, in-process: one SeedSequence per trial (before the engine), the
   Philox counter block t set from the NumPy arrays of ``Philox.state`` (engine v1) and from a
   reused dict of Python lists (now, ``TrialStreams.at``).
2. No-op mechanism: wall-clock overhead per trial inline, on the process pool (2 workers)
   without a store and with the SQLite store (target <= 20 us, store writes included); and the
   store's insert cost per row, per-row ``executemany`` (engine v1) vs one blob per run of
   trials (now).
3. Gaussian count, 1e6 trials, 2 workers, with the store (target < 60 s).
4. Ray on a local ray.init(num_cpus=2): same trials as the pool bit for bit; its overhead per
   trial beside the pool's.
5. Sequential vs fixed n on a flawed Gaussian count (sigma = 0.5, i.e. 2-GDP, claimed
   (1, 1e-5)-DP): median number of trials to a violation verdict over 20 seeds, beside the
   number of trials the fixed-n Clopper-Pearson audit needs to find the violation in at least
   half of the seeds, at the same 95% confidence.
6. The sequential stopping rule on a long null run (1e6 trials of a 0.2-GDP score claimed
   (1, 1e-5)-DP, never stops): 100 looks with the incremental SequentialMonitor vs one pass of
   first_crossing, and 10 looks re-running first_crossing on each prefix (engine v1).

Usage: python benchmarks/trials.py [--quick] [--sections 0,1,2,...]
(--quick: 10x fewer trials, for a smoke run; --sections: run only these; uptime is printed at
the start and the end because the figures are wall-clock on whatever machine runs them).
"""

from __future__ import annotations

import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.engine import TrialStreams, execute
from dpaudit.estimators.multi_run import multi_run
from dpaudit.estimators.sequential import first_crossing
from dpaudit.games.blackbox import BlackBoxAudit
from dpaudit.games.examples import gaussian_count_audit

QUICK = "--quick" in sys.argv
SCALE = 10 if QUICK else 1
SECTIONS = ({int(x) for x in sys.argv[sys.argv.index("--sections") + 1].split(",")}
            if "--sections" in sys.argv else set(range(6)))
BASE: dict[int, float] = {}  # trial count -> bare NumPy loop seconds per trial


@dataclass(frozen=True)
class NoOp:
    def __call__(self, dataset: Any, rng: np.random.Generator) -> float:
        return 0.0


@dataclass(frozen=True)
class PairNeighbours:
    def __call__(self, rng: np.random.Generator) -> tuple[tuple[()], tuple[int]]:
        return (), (0,)


def noop_score(output: Any) -> float:
    return float(output)


NOOP = BlackBoxAudit(NoOp(), PairNeighbours(), noop_score)


def baseline(n: int) -> float:
    """Seconds per iteration of the bare NumPy loop over n trials (one scalar draw each)."""
    if n not in BASE:
        g = np.random.default_rng(0)
        t0 = time.perf_counter()
        for _ in range(n):
            g.random()
        BASE[n] = (time.perf_counter() - t0) / n
    return BASE[n]


def us(sec: float, n: int) -> str:
    return f"{sec * 1e6:.2f} us (x{sec / baseline(n):.1f})"


def seeding() -> None:
    n = 200_000 // SCALE
    baseline(n)
    t0 = time.perf_counter()
    for t in range(n):
        np.random.default_rng(np.random.SeedSequence(0, spawn_key=(t,))).random()
    old = (time.perf_counter() - t0) / n
    bg = np.random.Philox(key=np.random.SeedSequence(0).generate_state(2, np.uint64))
    g = np.random.Generator(bg)
    state = bg.state
    ctr = state["state"]["counter"]
    t0 = time.perf_counter()
    for t in range(n):  # engine v1: the state dict of NumPy arrays
        ctr[:] = 0
        ctr[2] = t
        state["buffer_pos"] = 4
        state["has_uint32"] = 0
        bg.state = state
        g.random()
    v1 = (time.perf_counter() - t0) / n
    s = TrialStreams(0)
    t0 = time.perf_counter()
    for t in range(n):
        s.at(t).random()
    new = (time.perf_counter() - t0) / n
    print(f"[1] per-trial stream set-up + one draw, {n:,} trials: SeedSequence {us(old, n)}, "
          f"Philox from NumPy arrays (v1) {us(v1, n)}, Philox from lists (now) {us(new, n)}  "
          f"(x{old / new:.1f} and x{v1 / new:.1f} faster)")


def insert_rows(n: int, tmp: Path) -> tuple[float, float]:
    """Seconds per row: engine v1's per-row executemany vs TrialStore.write_many (now)."""
    import sqlite3

    from dpaudit.engine import TrialStore

    rec = np.random.default_rng(0).random((n, 2))
    chunk = 20_000
    db = sqlite3.connect(tmp / "v1.sqlite", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE trials (audit_id TEXT NOT NULL, t INTEGER NOT NULL, data BLOB "
               "NOT NULL, PRIMARY KEY (audit_id, t)) WITHOUT ROWID")
    t0 = time.perf_counter()
    for s in range(0, n, chunk):
        raw = rec[s:s + chunk].tobytes()
        rows = [("0123456789abcdef", s + i, raw[i * 16:(i + 1) * 16])
                for i in range(min(chunk, n - s))]
        db.execute("BEGIN IMMEDIATE")
        db.executemany("INSERT OR IGNORE INTO trials VALUES (?, ?, ?)", rows)
        db.execute("COMMIT")
    v1 = (time.perf_counter() - t0) / n
    db.close()
    ok = np.ones(n, bool)
    with TrialStore(tmp / "now.sqlite") as st:
        aid = st.register({"bench": 1}, ("a", "b"), "bench")
        t0 = time.perf_counter()
        for s in range(0, n, chunk):
            st.write(aid, s, rec[s:s + chunk], ok[s:s + chunk])
        now = (time.perf_counter() - t0) / n
    return v1, now


def overhead(executor: str, n: int, store: Path | None, workers: int = 2) -> tuple[float, Any]:
    t0 = time.perf_counter()
    run = execute(NOOP, trials=n, seed=1, executor=executor, workers=workers, store=store)
    return (time.perf_counter() - t0) / n, run


def main() -> None:
    print(f"load: {uptime()}")
    n = 400_000 // SCALE
    print(f"[0] baseline: bare NumPy loop, one g.random() per trial, {n:,} trials: "
          f"{baseline(n) * 1e6:.2f} us per trial")
    if 1 in SECTIONS:
        seeding()
    tmp = Path(tempfile.mkdtemp(prefix="dpaudit-bench-"))
    if 2 in SECTIONS:
        inline, _ = overhead("inline", n, None, 1)
        pool, _ = overhead("process", n, None)
        pool_store, _ = overhead("process", n, tmp / "noop.sqlite")
        print(f"[2] no-op trial, {n:,} trials, per trial: inline {us(inline, n)}; process pool "
              f"(2 workers) {us(pool, n)} without store, {us(pool_store, n)} with store "
              f"(target <= 20 us; the store adds x{pool_store / pool:.2f})")
        v1, now = insert_rows(n, tmp)
        print(f"    store insert per row: per-row executemany (v1) {us(v1, n)}, one blob per "
              f"run (now) {us(now, n)}  (x{v1 / now:.1f} faster)")
    if 3 in SECTIONS:
        gaussian_million(tmp)
    if 4 in SECTIONS:
        ray_vs_pool()
    if 5 in SECTIONS:
        sequential_vs_fixed()
    if 6 in SECTIONS:
        stopping_rule()
    print(f"load: {uptime()}")


def gaussian_million(tmp: Path) -> None:
    m = 1_000_000 // SCALE
    t0 = time.perf_counter()
    run = execute(gaussian_count_audit(1.0), trials=m, seed=2, executor="process", workers=2,
                  store=tmp / "gauss.sqlite")
    sec = time.perf_counter() - t0
    print(f"[3] Gaussian count, {m:,} trials, 2 workers, with store: {sec:.1f} s "
          f"({m / sec:,.0f} trials/s; target < 60 s for 1e6)  stored {run.n:,}")


def ray_vs_pool() -> None:
    try:
        import ray

        r = 100_000 // SCALE
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
        try:
            execute(NOOP, trials=1000, seed=1, executor="ray", workers=2)  # warm-up
            ray_t, ray_run = overhead("ray", r, None)
            pool_t, pool_run = overhead("process", r, None)
            same = np.array_equal(ray_run.records, pool_run.records)
            g_ray = execute(gaussian_count_audit(1.0), trials=r, seed=3, executor="ray",
                            workers=2)
            g_pool = execute(gaussian_count_audit(1.0), trials=r, seed=3, executor="process",
                             workers=2)
            same_g = np.array_equal(g_ray.records, g_pool.records)
        finally:
            ray.shutdown()
        print(f"[4] Ray local (2 CPUs), {r:,} no-op trials: {ray_t * 1e6:.2f} us/trial vs pool "
              f"{pool_t * 1e6:.2f} us/trial (x{ray_t / pool_t:.2f}); bit-for-bit equal to the "
              f"pool: no-op {same}, Gaussian count {same_g}")
    except ImportError:
        print("[4] Ray not installed: skipped (pip install 'dpaudit[ray]')")


def sequential_vs_fixed() -> None:
    rng = np.random.default_rng(12)
    R = 20
    stops = []
    for _ in range(R):
        b = rng.random(20_000) < 0.5
        s = rng.standard_normal(20_000) + 2.0 * b
        stops.append(first_crossing(b, s, 1.0, 1e-5, 0.95) or np.inf)
    med = float(np.median(stops))
    fixed = None
    for nf in (100, 200, 300, 400, 600, 800, 1200, 1600, 2400, 3200, 4800, 6400, 9600):
        hits = 0
        for _ in range(R):
            b = rng.random(nf) < 0.5
            s = rng.standard_normal(nf) + 2.0 * b
            if b.all() or not b.any():
                continue
            hits += multi_run(b, s, delta=1e-5, confidence=0.95).epsilon > 1.0
        if hits >= R / 2:
            fixed = nf
            break
    print(f"[5] flawed Gaussian count (2-GDP claimed (1, 1e-5)-DP), 95%: sequential median "
          f"{med:.0f} trials to a violation verdict (min {min(stops):.0f}, max "
          f"{max(stops):.0f}); fixed-n Clopper-Pearson needs n = {fixed} for a violation in "
          f">= half of {R} seeds (ratio x{(fixed or np.nan) / med:.1f})")


def stopping_rule() -> None:
    from dpaudit.estimators.sequential import SequentialMonitor

    n = 1_000_000 // SCALE
    rng = np.random.default_rng(6)
    b = rng.random(n) < 0.5
    s = rng.standard_normal(n) + 0.2 * b
    t0 = time.perf_counter()
    assert first_crossing(b, s, 1.0, 1e-5, 0.95) is None
    one = time.perf_counter() - t0
    mon = SequentialMonitor(1.0, 1e-5, 0.95)
    t0 = time.perf_counter()
    for c in np.linspace(0, n, 101)[1:].astype(int):
        mon.update(b[:c], s[:c])
    inc = time.perf_counter() - t0
    t0 = time.perf_counter()
    for c in np.linspace(0, n, 11)[1:].astype(int):
        first_crossing(b[:c], s[:c], 1.0, 1e-5, 0.95)
    rerun = time.perf_counter() - t0
    print(f"[6] stopping rule, {n:,} null trials: one pass {one:.2f} s; 100 incremental looks "
          f"{inc:.2f} s (x{inc / one:.2f} of a pass); 10 looks re-running each prefix (v1) "
          f"{rerun:.2f} s (x{rerun / one:.1f})")


def uptime() -> str:
    try:
        with open("/proc/loadavg") as f:
            one, five, fifteen = f.read().split()[:3]
        import os

        return f"load average {one}, {five}, {fifteen} on {os.cpu_count()} cores"
    except OSError:
        return "unknown"


if __name__ == "__main__":
    main()
