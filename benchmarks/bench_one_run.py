"""Benchmark: one-run audit methods side by side, and the cost of ``audit_one_run`` at 1e6.

    .venv/bin/python benchmarks/bench_one_run.py [--quick] [--skip-table] [--skip-timing]

Part 1 (tightness, TOR notes §4.3 protocol): for the Gaussian mechanism mu in {0.5, 1, 2} and the
subsampled Gaussian (mu, q) in {(1, 0.5), (2, 0.2)}, n in {1e3, 1e4, 1e5} and r/n in
{0.1, 0.25, 0.5, 1}, the number of wrong guesses is set to its expected value under the true
mechanism with the optimal decoder, u = round(E[T]) (E[T] = r E_V[gamma_bar(V)], n e* at r = n;
``dpaudit.stats.order_statistics.expected_errors``).  Every method gets the same (n, r, u):

* tight        E.tight(n, r, u, family)            (f-DP null of the mechanism's family)
* steinke      E.steinke(m=n, guesses=r, correct=r-u)  ((eps, delta) null)
* mahloujifar  E.mahloujifar(m=n, guesses=r, correct=r-u, family)
* bits         E.bits(n, errors=u)                  (only defined at r = n: no abstention)

at 95% confidence, delta = 1e-5 (single tests: no grid, as in the recorded comparison).  The
table prints each bound and its fraction of the true epsilon; for Gaussian mu = 0.5 it also
prints the authors' recorded "ours" value (TOR notes §4.3) as a check.

Part 2 (speed): ``audit_one_run`` on 1e6 canaries of the Gaussian mechanism (mu = 1), all four
methods with the default 7-point grid, with n_jobs = 1 and 2 (wall and CPU time, incl. workers).
The target is < 10 s on 2 cores.  The load average is printed because the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import warnings
from typing import Any

import numpy as np

from dpaudit import estimators as E
from dpaudit.curves import GaussianDP, SubsampledGaussianDP
from dpaudit.estimators.one_run import audit_one_run
from dpaudit.stats.order_statistics import expected_errors

DELTA, CONF = 1e-5, 0.95
MECHANISMS: list[tuple[str, Any, Any]] = [
    ("G(0.5)", GaussianDP(0.5), "gdp"),
    ("G(1)", GaussianDP(1.0), "gdp"),
    ("G(2)", GaussianDP(2.0), "gdp"),
    ("SGM(1,.5)", SubsampledGaussianDP(1.0, 0.5), ("subsampled_gaussian", 0.5)),
    ("SGM(2,.2)", SubsampledGaussianDP(2.0, 0.2), ("subsampled_gaussian", 0.2)),
]
# TOR notes §4.3 [REPO] "ours" for Gaussian mu = 0.5, keyed by (n, r)
SPEC_OURS_G05 = {(1000, 100): 1.1926, (1000, 250): 1.4203, (1000, 500): 1.4689,
                 (1000, 1000): 1.4140, (10000, 1000): 1.7437, (10000, 2500): 1.8052,
                 (10000, 5000): 1.8279, (10000, 10000): 1.8074, (100000, 10000): 1.9166,
                 (100000, 25000): 1.9348, (100000, 50000): 1.9406, (100000, 100000): 1.9345}
METHODS = ("tight", "bits", "steinke", "mahloujifar")


def table(ns: list[int], fracs: list[float]) -> None:
    rows = []
    hdr = (f"{'mechanism':<10} {'true eps':>8} {'n':>7} {'r':>7} {'u':>6}  "
           + "  ".join(f"{m:>17}" for m in METHODS) + f"  {'spec ours':>9}")
    print(hdr)
    print("-" * len(hdr))
    for name, curve, fam in MECHANISMS:
        true_eps = curve.epsilon(DELTA)
        for n in ns:
            for f in fracs:
                r = int(round(f * n))
                u = int(round(expected_errors(curve, n, r)))
                res = {
                    "tight": E.tight(n=n, r=r, u=u, family=fam, delta=DELTA, confidence=CONF),
                    "steinke": E.steinke(m=n, guesses=r, correct=r - u, delta=DELTA,
                                         confidence=CONF),
                    "mahloujifar": E.mahloujifar(m=n, guesses=r, correct=r - u, delta=DELTA,
                                                 confidence=CONF, family=fam),
                }
                if r == n:
                    res["bits"] = E.bits(n=n, errors=u, family=fam, delta=DELTA,
                                         confidence=CONF)
                cells = []
                for m in METHODS:
                    if m in res:
                        e = res[m].epsilon
                        cells.append(f"{e:8.4f} ({100 * e / true_eps:5.1f}%)")
                    else:
                        cells.append(f"{'-':>17}")
                spec = SPEC_OURS_G05.get((n, r)) if name == "G(0.5)" else None
                print(f"{name:<10} {true_eps:8.4f} {n:7d} {r:7d} {u:6d}  " + "  ".join(cells)
                      + f"  {spec if spec is not None else '-':>9}", flush=True)
                rows.append((name, n, f, {m: res[m].epsilon / true_eps for m in res}))
    print()
    print("mean fraction of the true epsilon")
    for key, label in ((lambda row: row[1], "n"), (lambda row: row[2], "r/n"),
                       (lambda row: row[0], "mechanism")):
        groups: dict[Any, list[dict[str, float]]] = {}
        for row in rows:
            groups.setdefault(key(row), []).append(row[3])
        for g, items in groups.items():
            parts = []
            for m in METHODS:
                vals = [it[m] for it in items if m in it]
                parts.append(f"{m} {100 * np.mean(vals):5.1f}%" if vals else f"{m}   -  ")
            print(f"  {label}={g!s:<10} " + "  ".join(parts))
    allv = {m: [row[3][m] for row in rows if m in row[3]] for m in METHODS}
    print("  overall      " + "  ".join(f"{m} {100 * np.mean(v):5.1f}%" for m, v in allv.items()))
    worst = {m: max(v) for m, v in allv.items()}
    print("  max fraction (validity: must be <= 100%): "
          + "  ".join(f"{m} {100 * v:5.1f}%" for m, v in worst.items()))


def timing(n: int) -> None:
    rng = np.random.default_rng(0)
    b = rng.integers(0, 2, n)
    y = b + rng.standard_normal(n)  # Gaussian mechanism, mu = 1, one-hot canaries
    print(f"audit_one_run on n = {n:,} canaries, methods {', '.join(METHODS)}, 7-point grid; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for jobs in (1, 2):
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        p0, t0 = time.process_time(), time.perf_counter()
        res = audit_one_run(b, y, methods=METHODS, n_jobs=jobs)
        wall = time.perf_counter() - t0
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (time.process_time() - p0) + (c1.ru_utime - c0.ru_utime) + (c1.ru_stime
                                                                          - c0.ru_stime)
        eps = ", ".join(f"{r.method} {r.epsilon:.4f}" for r in res)
        print(f"  n_jobs={jobs}: wall {wall:6.2f} s  cpu {cpu:6.2f} s  "
              f"(target 10 s: {wall / 10:.2f}x)  [{eps}]  true eps 4.3772")
    for m in METHODS:  # per-method cost, in-process
        t0 = time.perf_counter()
        audit_one_run(b, y, methods=(m,), n_jobs=1)
        print(f"  {m:<12} alone: {time.perf_counter() - t0:6.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n in {1e3, 1e4}, r/n in {0.1, 1}")
    ap.add_argument("--skip-table", action="store_true")
    ap.add_argument("--skip-timing", action="store_true")
    ap.add_argument("--timing-n", type=int, default=1_000_000)
    args = ap.parse_args()
    warnings.simplefilter("ignore", DeprecationWarning)
    if not args.skip_table:
        ns = [1000, 10000] if args.quick else [1000, 10000, 100000]
        fr = [0.1, 1.0] if args.quick else [0.1, 0.25, 0.5, 1.0]
        table(ns, fr)
        print()
    if not args.skip_timing:
        timing(args.timing_n)


if __name__ == "__main__":
    main()
