"""Issue 14 performance targets, each as a ratio to a baseline measured in the same run.

    PYTHONPATH=src .venv/bin/python benchmarks/perf.py [--quick] [--only NAME ...]

Every item runs in a fresh process (so its peak memory, ru_maxrss, is its own) and reports CPU
seconds (user + sys of that process: robust on a shared machine), wall seconds and peak RSS.
Baselines: ``np.argsort`` of the same scores (``argsort`` rows), timed in the same run.
``--quick`` stops at 1e6.  Results go to docs/performance.md (by hand).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np

#: name -> setup(); setup() prepares the inputs (untimed) and returns the timed callable.
ITEMS: dict[str, Callable[[], Callable[[], object]]] = {}


def item(name: str) -> Callable[[Callable[[], Callable[[], object]]],
                                Callable[[], Callable[[], object]]]:
    def deco(fn: Callable[[], Callable[[], object]]) -> Callable[[], Callable[[], object]]:
        ITEMS[name] = fn
        return fn
    return deco


def _scores(n: int, mu: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    member = rng.random(n) < 0.5
    return member, rng.standard_normal(n) + mu * member


def _one_run(n: int) -> Callable[[], object]:
    def setup() -> Callable[[], object]:
        from dpaudit.estimators.one_run import audit_one_run
        m, s = _scores(n)
        return lambda: [round(r.epsilon, 6) for r in audit_one_run(m, s)]
    return setup


def _argsort(n: int) -> Callable[[], object]:
    def setup() -> Callable[[], object]:
        _, s = _scores(n)
        return lambda: (np.argsort(s), None)[1]
    return setup


for _n in (10**3, 10**4, 10**5, 10**6, 10**7):
    item(f"audit_one_run n={_n:.0e}")(_one_run(_n))
    item(f"argsort n={_n:.0e}")(_argsort(_n))


@item("tight n=r=1e6")
def _tight_full() -> Callable[[], object]:
    from dpaudit import estimators as E
    return lambda: E.tight(n=10**6, r=10**6, u=300_000).epsilon


@item("tight n=1e6 r=1e5")
def _tight_part() -> Callable[[], object]:
    from dpaudit import estimators as E
    return lambda: E.tight(n=10**6, r=10**5, u=2_000).epsilon


@item("multi_run n=1e6")
def _multi() -> Callable[[], object]:
    from dpaudit import estimators as E
    m, s = _scores(10**6)
    return lambda: E.multi_run(m, s, 1e-5).epsilon


def _lifted(dtype: type) -> Callable[[], Callable[[], object]]:
    def setup() -> Callable[[], object]:
        from dpaudit import estimators as E
        rng = np.random.default_rng(0)
        x = (rng.random((200_000, 64)) < 0.6).astype(dtype)
        y = (rng.random((200_000, 64)) < 0.4).astype(dtype)
        return lambda: E.lifted(x, y).epsilon
    return setup


item("lifted int8 2e5x64")(_lifted(np.int8))
item("lifted float64 2e5x64")(_lifted(np.float64))


def _risk(n: int, single: bool) -> Callable[[], Callable[[], object]]:
    def setup() -> Callable[[], object]:
        from dpaudit.risk.bounds import thm35_tail
        p = (np.full(n, 0.1) if single
             else np.random.default_rng(0).uniform(0.01, 0.3, n))
        return lambda: int(thm35_tail(p, 1.0, 1e-9).v_ub(0.95))
    return setup


item("risk thm3.5 1e6 heterogeneous")(_risk(10**6, False))
item("risk thm3.5 1e7 heterogeneous")(_risk(10**7, False))
item("risk thm3.5 1e7 single prior")(_risk(10**7, True))


@item("dpsgd simulator sum n=1e5 T=1000")
def _sim() -> Callable[[], object]:
    from dpaudit.mechanisms.dpsgd import DPSGDSimulator
    sim = DPSGDSimulator(noise_multiplier=1.0, sampling_rate=0.01, steps=1000)
    bits = np.random.default_rng(0).random(10**5) < 0.5
    return lambda: float(sim.run(bits, np.random.default_rng(1))["sum"].mean())


@item("dpsgd_curve(0.05, 1, 1)")
def _curve_tiny_noise() -> Callable[[], object]:
    from dpaudit.curves import dpsgd_curve
    return lambda: dpsgd_curve(0.05, 1.0, 1).epsilon(1e-5)


def _run_one(name: str) -> None:
    warnings.simplefilter("ignore")
    run = ITEMS[name]()
    t0, c0 = time.perf_counter(), time.process_time()
    val = run()
    out = {"name": name, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
           "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "value": val}
    print(json.dumps(out))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--item", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.item:
        _run_one(args.item)
        return
    names = args.only or list(ITEMS)
    if args.quick:
        names = [x for x in names if "1e+07" not in x and "1e7" not in x]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; CPU seconds are "
          f"the figure to compare, wall seconds depend on the load")
    res = {}
    for name in names:
        proc = subprocess.run([sys.executable, __file__, "--item", name], capture_output=True,
                              text=True, env=os.environ.copy(), check=False)
        if proc.returncode:
            print(f"{name}: failed\n{proc.stderr[-2000:]}")
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        res[name] = r
        base = res.get(name.replace("audit_one_run", "argsort"))
        ratio = ""
        if name.startswith("audit_one_run") and base is None:
            b = subprocess.run([sys.executable, __file__, "--item",
                                name.replace("audit_one_run", "argsort")],
                               capture_output=True, text=True, check=False)
            base = json.loads(b.stdout.strip().splitlines()[-1])
            res[base["name"]] = base
        if name.startswith("audit_one_run") and base:
            ratio = f"  cpu ratio to argsort item: {r['cpu'] / max(base['cpu'], 1e-9):.1f}"
        print(f"{name:<34} cpu {r['cpu']:8.3f} s  wall {r['wall']:8.3f} s  "
              f"peak {r['rss_mb']:7.0f} MB  value {r['value']}{ratio}", flush=True)


if __name__ == "__main__":
    main()
