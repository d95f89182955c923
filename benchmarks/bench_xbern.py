"""Benchmark: XBern intervals (Pillutla et al.) and the LiDP sample-complexity ratio.

1. All six XBern intervals (Bernstein and Wilson of order 1, 2, 4) for n = 1e5 trials of
   K = 256 canaries, from the raw 0/1 matrix (target: under 1 s in total, counts included).
2. Vectorised threshold sweep: eps_hat(tau) on a 500-point grid from raw scores.
3. Sample-complexity ratio on the Gaussian mechanism (claimed eps = 2, d = 1e6, K = sqrt(n),
   tuned thresholds, 4 repetitions): the number of trials the DP + Wilson baseline (K = 1)
   needs to reach the mean eps_hat of LiDP + 2nd-order Wilson at n trials, by log-n
   interpolation of the baseline curve (paper: 4x at n = 1024, 16x at n = 4096).

Run: .venv/bin/python benchmarks/bench_xbern.py
"""

from __future__ import annotations

import math
import time

import numpy as np

from dpaudit.estimators.lifted import lifted_epsilon_curve, threshold_grid, trials_to_reach
from dpaudit.papers.experiments.lidp import ESTIMATORS, _gaussian_rows, _summ
from dpaudit.stats.intervals_xbern import xbern_interval_from_moments
from dpaudit.stats.xbern import empirical_moments, xbern_counts


def bench_intervals() -> None:
    rng = np.random.default_rng(0)
    n, k = 100_000, 256
    p = rng.beta(2.0, 18.0, size=(n, 1))
    x = rng.random((n, k), dtype=np.float32) < p  # correlated XBern (Beta mixture)
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        s, kk = xbern_counts(x)
        t1 = time.perf_counter()
        mu = empirical_moments(s, kk, 4)
        t2 = time.perf_counter()
        out = {}
        for method in ("bernstein", "wilson"):
            for order in (1, 2, 4):
                out[f"{method[0].upper()}{order}"] = xbern_interval_from_moments(
                    mu, n, kk, 0.95, "two-sided", method, order)
        t3 = time.perf_counter()
        best = min(best, t3 - t0)
    print(f"[1] six XBern intervals, n = {n:,} trials x K = {k} canaries")
    print(f"    counts {1e3 * (t1 - t0):.1f} ms, moments {1e3 * (t2 - t1):.1f} ms, "
          f"6 intervals {1e3 * (t3 - t2):.2f} ms; best total {1e3 * best:.1f} ms "
          f"(target < 1000 ms): {'OK' if best < 1 else 'SLOW'}")
    for name, (lo, hi) in out.items():
        print(f"    {name}: [{lo:.6f}, {hi:.6f}]  width {hi - lo:.6f}")

    # many intervals at once: 10,000 independent datasets of n = 1,000 trials, K = 64
    s_many = rng.binomial(64, rng.beta(2.0, 18.0, size=(10_000, 1000)))
    t0 = time.perf_counter()
    mu_many = empirical_moments(s_many, 64, 4)
    for method in ("bernstein", "wilson"):
        for order in (1, 2, 4):
            xbern_interval_from_moments(mu_many, 1000, 64, 0.95, "two-sided", method, order)
    print(f"    10,000 datasets x 6 intervals (vectorised): {time.perf_counter() - t0:.3f} s")


def bench_threshold_sweep() -> None:
    rng = np.random.default_rng(1)
    n, k = 16_384, 128
    xs, ys = rng.normal(1, 2, (n, k)), rng.normal(0, 2, (n, k))
    grid = threshold_grid(xs, ys, 500)
    t0 = time.perf_counter()
    cur = lifted_epsilon_curve(xs, ys, grid, 1e-5, 0.95, "wilson", 2)
    dt = time.perf_counter() - t0
    print(f"[2] eps_hat(tau) on a 500-point grid, n = {n:,} x K = {k} scores: {dt:.3f} s "
          f"(max eps_hat {np.max(cur['epsilon_raw']):.4f})")


def bench_ratio() -> None:
    t0 = time.perf_counter()
    rows = []
    lidp_ns = (256, 1024, 4096)
    for n in (256, 1024, 4096, 16384, 65536):
        est = ESTIMATORS if n in lidp_ns else ESTIMATORS[:1]
        rows += _gaussian_rows(0, 2.0, n, int(round(math.sqrt(n))), 10**6, 4, {}, est)
    summ = _summ(rows, "estimator", "n")
    bn, bm, bse = summ["DP+W1"]
    print("[3] Gaussian mechanism, claimed eps = 2 (sigma^2 = 4.62), d = 1e6, K = sqrt(n), "
          "4 repetitions")
    print("    n       DP+W1 (K=1)     LiDP+W1         LiDP+W2         LiDP+W4")
    for i, n in enumerate(bn):
        cells = [f"{bm[i]:.3f}+-{bse[i]:.3f}"]
        for name in ("LiDP+W1", "LiDP+W2", "LiDP+W4"):
            xs, m, se = summ[name]
            j = np.flatnonzero(xs == n)
            cells.append(f"{m[j[0]]:.3f}+-{se[j[0]]:.3f}" if j.size else "-")
        print(f"    {int(n):<7d} " + "  ".join(f"{c:<14s}" for c in cells))
    print("    sample-complexity ratio (baseline trials needed / LiDP+W2 trials):")
    xs, m, _ = summ["LiDP+W2"]
    for n, v in zip(xs, m, strict=True):
        nstar = trials_to_reach(bn, bm, v, space="log")
        print(f"      n = {int(n):5d}: LiDP+W2 eps_hat {v:.3f}; baseline needs n* = "
              f"{nstar:,.0f} -> ratio {nstar / n:.1f}x")
    print(f"    ({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    bench_intervals()
    bench_threshold_sweep()
    bench_ratio()
