"""CPU seconds of the Steinke and Mahloujifar bounds over the guess-count grid that
``audit_one_run`` evaluates (7 points, per-point confidence 1 - 0.05/7), issue 14.

"after" = ``steinke_many`` / ``mahloujifar_many`` of this tree; "before" = the scalar functions
called once per grid point, run in a fresh process on another source tree (``--base``, e.g.
``git archive main src | tar -x -C /tmp/base``), in the same run.  Scores: member ~
Bernoulli(1/2), score = N(0, 1) + mu * member, seed 0.

    PYTHONPATH=src python benchmarks/batch_estimators.py --base /tmp/base/src
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time

import numpy as np

SIZES = (10**4, 10**5, 10**6, 10**7)
MUS = (1.0, 2.0, 4.0)


def grid_counts(n: int, mu: float) -> tuple[list[int], list[int]]:
    from dpaudit.estimators.one_run import default_grid, guess_counts

    rng = np.random.default_rng(0)
    member = rng.random(n) < 0.5
    score = rng.standard_normal(n) + mu * member
    c = guess_counts(member, score, default_grid(n))
    return c["guesses"].tolist(), c["correct"].tolist()


def measure(mode: str, counts: dict[str, list[list[int]]], reps: int) -> dict[str, list]:
    st = importlib.import_module("dpaudit.estimators.steinke")
    ma = importlib.import_module("dpaudit.estimators.mahloujifar")
    conf = 1 - 0.05 / 7
    st.steinke(m=1000, guesses=100, correct=90)      # warm-up (imports, caches)
    ma.mahloujifar(m=1000, guesses=100, correct=90)
    out: dict[str, list] = {}
    for key, (r, v) in counts.items():
        n = int(key.split("-")[0])
        for meth in ("steinke", "mahloujifar"):
            best = float("inf")
            eps: list[float] = []
            for _ in range(reps):
                t0 = time.process_time()
                if mode == "batch":
                    fn = st.steinke_many if meth == "steinke" else ma.mahloujifar_many
                    res = fn(n, r, v, delta=1e-5, confidence=conf)
                else:
                    fn = st.steinke if meth == "steinke" else ma.mahloujifar
                    res = [fn(m=n, guesses=a, correct=b, delta=1e-5, confidence=conf)
                           for a, b in zip(r, v, strict=True)]
                best = min(best, time.process_time() - t0)
                eps = [x.epsilon for x in res]
            out[f"{key}-{meth}"] = [best, eps]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="src directory of the 'before' tree")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    ap.add_argument("--_child", choices=["scalar", "batch"], help=argparse.SUPPRESS)
    ap.add_argument("--_counts", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a._child:
        counts = json.loads(a._counts)
        print(json.dumps(measure(a._child, counts, a.reps)))
        return
    sizes = [int(float(s)) for s in a.sizes.split(",")]
    counts = {f"{n}-{mu:g}": list(grid_counts(n, mu)) for n in sizes for mu in MUS}
    arg = json.dumps(counts)
    after = measure("batch", counts, a.reps)
    before = None
    if a.base:
        env = {**os.environ, "PYTHONPATH": a.base}
        p = subprocess.run([sys.executable, __file__, "--_child", "scalar", "--_counts", arg,
                            "--reps", str(a.reps)], env=env, capture_output=True, text=True,
                           check=True)
        before = json.loads(p.stdout.strip().splitlines()[-1])
    print("| n | mu | method | before CPU ms | after CPU ms | speed-up | max |d eps|/max(1,eps) |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for key, (t_after, e_after) in after.items():
        n, mu, meth = key.split("-")
        if before is None:
            print(f"| {int(n):.0e} | {mu} | {meth} | - | {t_after * 1e3:.1f} | - | - |")
            continue
        t_before, e_before = before[key]
        d = max(abs(x - y) / max(1.0, abs(x)) for x, y in zip(e_before, e_after, strict=True))
        print(f"| {int(n):.0e} | {mu} | {meth} | {t_before * 1e3:.1f} | {t_after * 1e3:.1f} | "
              f"{t_before / t_after:.1f}x | {d:.1e} |")


if __name__ == "__main__":
    main()
