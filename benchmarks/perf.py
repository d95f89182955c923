"""Issue 14 performance targets, each as a ratio to a baseline measured in the same run.

    PYTHONPATH=src .venv/bin/python benchmarks/perf.py [--quick] [--only NAME ...]
        [--baseline-src DIR] [--tracemalloc]

Every item runs in a fresh process and reports CPU seconds (user + sys of that process: robust
on a shared machine), wall seconds and three memory figures:

* ``peak``: peak RSS of the process (``ru_maxrss``): interpreter + imports (numpy, scipy:
  ~100 MB) + the inputs (at n = 1e7: 80 MB of float64 scores and 10 MB of bits) + the call;
* ``work``: the call's own working memory, peak RSS during the call minus RSS once the inputs
  are built (the kernel's high-water mark is reset just before the call through
  ``/proc/self/clear_refs``; "-" where that is not available);
* ``traced`` (with ``--tracemalloc``, in a second fresh process): the peak of the memory
  allocated during the call as seen by ``tracemalloc`` (NumPy reports its array buffers to it).

Memory targets of issue 14 (``audit_one_run`` <= 200 MB at 1e7) are read against ``work``
(and ``traced``): the inputs and imports alone are ~190 MB of RSS at 1e7, so no implementation
could bring ``peak`` under 200 MB; what the audit controls is what it allocates on top.

Baselines: ``np.argsort`` of the same scores (``argsort`` rows), timed in the same run; with
``--baseline-src DIR`` every item is also run with ``PYTHONPATH=DIR`` (e.g. the previous
tree: ``git archive main src | tar -x -C /tmp/base``) and the CPU ratio after / before is
printed.  ``--quick`` stops at 1e6.  Results go to docs/performance.md (by hand).
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


def _guess_counts(n: int, ties: bool = False) -> Callable[[], object]:
    """The data path of audit_one_run alone: validation, tie-broken counts at the default
    grid plus the median split (what audit_one_run asks for), the balance check."""
    def setup() -> Callable[[], object]:
        from dpaudit.estimators import one_run as O
        from dpaudit.observations import MembershipObservations
        m, s = _scores(n)
        if ties:
            s = np.round(s, 1)  # ~80 distinct values: every boundary inside a tie group

        def go() -> object:
            obs = MembershipObservations.from_arrays(m, s)
            O._balance_warning(obs)
            grid = [*O.default_grid(n), ((n + 1) // 2, n // 2)]
            return O._guess_counts(obs, grid, 0)["wrong"].tolist()
        return go
    return setup


for _n in (10**3, 10**4, 10**5, 10**6, 10**7):
    item(f"audit_one_run n={_n:.0e}")(_one_run(_n))
    item(f"argsort n={_n:.0e}")(_argsort(_n))
for _n in (10**5, 10**6, 10**7):
    item(f"guess_counts n={_n:.0e}")(_guess_counts(_n))
    item(f"guess_counts ties n={_n:.0e}")(_guess_counts(_n, ties=True))


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


def _status_mb(field: str) -> float | None:
    """VmRSS / VmHWM of this process in MB (Linux), None elsewhere."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _run_one(name: str, traced: bool = False) -> None:
    warnings.simplefilter("ignore")
    run = ITEMS[name]()
    if traced:
        import tracemalloc
        tracemalloc.start()
        run()
        out = {"name": name, "traced_mb": tracemalloc.get_traced_memory()[1] / 2**20}
        tracemalloc.stop()
        print(json.dumps(out))
        return
    before = _status_mb("VmRSS")
    reset = _reset_peak()
    t0, c0 = time.perf_counter(), time.process_time()
    val = run()
    out = {"name": name, "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
           "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "value": val}
    hwm = _status_mb("VmHWM")
    out["work_mb"] = hwm - before if reset and hwm is not None and before is not None else None
    print(json.dumps(out))


def _item(name: str, pythonpath: str | None = None, traced: bool = False) -> dict | None:
    env = os.environ.copy()
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    cmd = [sys.executable, __file__, "--item", name] + (["--traced"] if traced else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode:
        print(f"{name}: failed{' (baseline)' if pythonpath else ''}\n{proc.stderr[-2000:]}")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _mb(x: float | None) -> str:
    return "      -" if x is None else f"{x:7.0f}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--baseline-src", help="PYTHONPATH of the code to compare against")
    ap.add_argument("--tracemalloc", action="store_true",
                    help="also measure the call's tracemalloc peak (second process per item)")
    ap.add_argument("--item", help=argparse.SUPPRESS)
    ap.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.item:
        _run_one(args.item, traced=args.traced)
        return
    names = args.only or list(ITEMS)
    if args.quick:
        names = [x for x in names if "1e+07" not in x and "1e7" not in x]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; CPU seconds are "
          f"the figure to compare, wall seconds depend on the load; peak = RSS of the process "
          f"(imports + inputs + call), work = the call's own memory (peak during the call "
          f"minus RSS before it)")
    res: dict[str, dict] = {}
    for name in names:
        r = _item(name)
        if r is None:
            continue
        res[name] = r
        extra = ""
        if args.tracemalloc:
            t = _item(name, traced=True)
            extra += f"  traced {_mb(t and t['traced_mb'])} MB"
        if name.startswith(("audit_one_run", "guess_counts")):
            bname = "argsort " + name.split()[-1]
            base = res.get(bname) or _item(bname)
            if base:
                res[bname] = base
                extra += f"  cpu / argsort {r['cpu'] / max(base['cpu'], 1e-9):.2f}"
        if args.baseline_src:
            b = _item(name, pythonpath=args.baseline_src)
            if b:
                extra += (f"  | baseline cpu {b['cpu']:.3f} s peak {_mb(b['rss_mb'])} MB work "
                          f"{_mb(b.get('work_mb'))} MB value {b['value']}  after / before "
                          f"{r['cpu'] / max(b['cpu'], 1e-9):.2f}")
        print(f"{name:<34} cpu {r['cpu']:8.3f} s  wall {r['wall']:8.3f} s  "
              f"peak {_mb(r['rss_mb'])} MB  work {_mb(r.get('work_mb'))} MB  "
              f"value {r['value']}{extra}", flush=True)


if __name__ == "__main__":
    main()
