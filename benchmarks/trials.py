"""Trial-engine benchmark (issue 12 targets).  Prints figures and ratios measured in this run.

1. Per-trial seeding: today's stream set-up (one SeedSequence per trial) vs the engine's
   (Philox counter block t on a reused generator), in-process.
2. No-op mechanism on the process pool (2 workers) with the SQLite store: wall-clock overhead
   per trial (target <= 20 us), beside the in-memory pool without a store.
3. Gaussian count, 1e6 trials, 2 workers, with the store (target < 60 s).
4. Ray on a local ray.init(num_cpus=2): same trials as the pool bit for bit; its overhead per
   trial beside the pool's.
5. Sequential vs fixed n on a flawed Gaussian count (sigma = 0.5, i.e. 2-GDP, claimed
   (1, 1e-5)-DP): median number of trials to a violation verdict over 20 seeds, beside the
   number of trials the fixed-n Clopper-Pearson audit needs to find the violation in at least
   half of the seeds, at the same 95% confidence.

Usage: python benchmarks/trials.py [--quick]   (--quick: 10x fewer trials, for a smoke run)
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


def seeding() -> None:
    n = 200_000 // SCALE
    t0 = time.perf_counter()
    for t in range(n):
        np.random.default_rng(np.random.SeedSequence(0, spawn_key=(t,))).random()
    old = (time.perf_counter() - t0) / n
    s = TrialStreams(0)
    t0 = time.perf_counter()
    for t in range(n):
        s.at(t).random()
    new = (time.perf_counter() - t0) / n
    print(f"[1] per-trial stream set-up: SeedSequence {old * 1e6:.2f} us, Philox counter "
          f"{new * 1e6:.2f} us  (x{old / new:.1f} faster)")


def overhead(executor: str, n: int, store: Path | None, workers: int = 2) -> tuple[float, Any]:
    t0 = time.perf_counter()
    run = execute(NOOP, trials=n, seed=1, executor=executor, workers=workers, store=store)
    return (time.perf_counter() - t0) / n, run


def main() -> None:
    seeding()
    tmp = Path(tempfile.mkdtemp(prefix="dpaudit-bench-"))
    n = 400_000 // SCALE
    inline, _ = overhead("inline", n, None, 1)
    pool, _ = overhead("process", n, None)
    pool_store, _ = overhead("process", n, tmp / "noop.sqlite")
    print(f"[2] no-op trial, {n:,} trials: inline {inline * 1e6:.2f} us/trial; process pool "
          f"(2 workers) {pool * 1e6:.2f} us/trial without store, {pool_store * 1e6:.2f} "
          f"us/trial with store (target <= 20; store adds x{pool_store / pool:.2f})")

    m = 1_000_000 // SCALE
    t0 = time.perf_counter()
    run = execute(gaussian_count_audit(1.0), trials=m, seed=2, executor="process", workers=2,
                  store=tmp / "gauss.sqlite")
    sec = time.perf_counter() - t0
    print(f"[3] Gaussian count, {m:,} trials, 2 workers, with store: {sec:.1f} s "
          f"({m / sec:,.0f} trials/s; target < 60 s for 1e6)  stored {run.n:,}")

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


if __name__ == "__main__":
    main()
