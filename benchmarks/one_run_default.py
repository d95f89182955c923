"""The valid default's cost (issue 32): ``audit_one_run`` at its default null ("eps_delta")
against an argsort of the same scores, measured in the same process, before and after the
analytic settling of Mahloujifar et al.'s recursion (``estimators/mahloujifar.py``,
``_settle_linear``).

    PYTHONPATH=src python benchmarks/one_run_default.py [--sizes 1e4 1e5 1e6] [--repeats 5]
        [--baseline-src DIR]

For each n (Gaussian mechanism, mu = 1, bits i.i.d. uniform, seed 0), the median over
``--repeats`` of the CPU seconds (``time.process_time``) of

* ``argsort``: ``np.argsort`` of the scores (the baseline every figure is a ratio to);
* ``after``:   ``audit_one_run(member, score)`` with its defaults (all four methods, the default
               grid, delta = 1e-5, 95%);
* ``before``:  the same call with every recursion step run (``_SETTLE = False``: the previous
               algorithm, same process);
* ``mahloujifar``: the Mahloujifar row alone, after and before,

the ratios after / argsort (target: <= 4 at n = 1e6) and before / after, and a check that
``after`` and ``before`` return identical results (every field of every row).  With
``--baseline-src DIR`` (e.g. ``/work/main/src``, the tree before the change) the ``after`` figure
and its argsort are also measured in a fresh process on that tree, and its results compared.
The load average is printed: on a shared machine only the ratios are comparable.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np


def _data(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    member = rng.random(n) < 0.5
    return member, member + rng.standard_normal(n)


def _cpu(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        t = time.process_time()
        out = fn()
        times.append(time.process_time() - t)
    return statistics.median(times), out


def _rows(results: list[Any]) -> list[dict[str, Any]]:
    return [r.to_dict() for r in results]


def measure(n: int, repeats: int, before: bool) -> dict[str, Any]:
    """CPU seconds of argsort and audit_one_run (after; before too with ``before``)."""
    from dpaudit.estimators.one_run import audit_one_run
    member, score = _data(n)
    audit_one_run(member[:1000], score[:1000])          # imports and first-call costs
    out: dict[str, Any] = {"n": n}
    out["argsort"], _ = _cpu(lambda: np.argsort(score), repeats)
    out["after"], res = _cpu(lambda: _rows(audit_one_run(member, score)), repeats)
    out["results"] = res
    out["mahloujifar_after"], _ = _cpu(
        lambda: audit_one_run(member, score, methods=("mahloujifar",)), repeats)
    if before:
        mod = importlib.import_module("dpaudit.estimators.mahloujifar")
        mod._SETTLE = False
        try:
            reps = max(1, repeats // 2)
            out["before"], res_b = _cpu(lambda: _rows(audit_one_run(member, score)), reps)
            out["mahloujifar_before"], _ = _cpu(
                lambda: audit_one_run(member, score, methods=("mahloujifar",)), reps)
        finally:
            mod._SETTLE = True
        out["identical"] = res_b == res
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="*", type=float, default=[1e4, 1e5, 1e6])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--baseline-src", help="PYTHONPATH of the tree to compare against")
    ap.add_argument("--json-item", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    if args.json_item:
        res = measure(int(args.json_item), args.repeats, before=False)
        print(json.dumps(res, default=str))
        return
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; CPU seconds, "
          f"median of {args.repeats}; ratios are the figures to compare")
    for size in args.sizes:
        n = int(size)
        r = measure(n, args.repeats, before=True)
        line = (f"n = {n:>9,}  argsort {r['argsort']:.4f} s  after {r['after']:.4f} s "
                f"({r['after'] / r['argsort']:5.2f}x argsort)  before {r['before']:.4f} s "
                f"({r['before'] / r['argsort']:5.2f}x)  before/after "
                f"{r['before'] / r['after']:5.2f}  | mahloujifar after "
                f"{r['mahloujifar_after']:.4f} s before {r['mahloujifar_before']:.4f} s  "
                f"identical {r['identical']}")
        if args.baseline_src:
            env = dict(os.environ, PYTHONPATH=args.baseline_src)
            proc = subprocess.run([sys.executable, __file__, "--json-item", str(n),
                                   "--repeats", str(args.repeats)], env=env, check=False,
                                  capture_output=True, text=True)
            if proc.returncode == 0:
                b = json.loads(proc.stdout.strip().splitlines()[-1])
                same = json.dumps(b["results"], default=str) == json.dumps(r["results"],
                                                                           default=str)
                line += (f"  | baseline tree {b['after']:.4f} s "
                         f"({b['after'] / b['argsort']:5.2f}x its argsort)  same results "
                         f"{same}")
            else:
                line += f"  | baseline failed: {proc.stderr.strip()[-300:]}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
