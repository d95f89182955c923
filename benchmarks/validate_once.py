"""Validate once at the public boundary: the multi-run audit's splits, before vs after.

``multi_split`` / ``multi_run(threshold="multi_split")`` run S = 10 seeded split audits.  Each
split used to go through the public ``multi_run``: it validated the member / score arrays
again, sorted all the trials again and recomputed the ROC summary of all the trials (the same
for every split).  Now the public entry point validates and sorts once into
:class:`dpaudit.observations.SortedObservations`, computes the summary once and passes them
inward.  Likewise ``attack_metrics`` validates once and hands the observations to the AUROC
and TPR-at-FPR metrics (each public metric used to validate them again).

This script times both in one run: the current source tree (``src/``) and a baseline
(``--baseline-rev REV``: that commit's ``src/`` extracted with ``git archive``; or
``--baseline-src DIR``), each in a fresh process on the same generated scores, checks that
both give identical results (every key of ``to_dict()``), and prints the best wall and CPU
times of interleaved runs and their ratios (baseline / now).

    python benchmarks/validate_once.py --baseline-rev 05b76d6 [--n 200000] [--rounds 3]

(05b76d6: the last revision before validate-once; measured 1.6x on multi_split at n = 2e5,
1.0x on the unchanged Bonferroni path, 1.3x on attack_metrics without the bootstrap.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import baseline_src

ROOT = Path(__file__).resolve().parent.parent


def _child(n: int, repeat: int) -> None:
    import numpy as np

    from dpaudit.estimators.multi_run import multi_run
    from dpaudit.estimators.multi_split import multi_split
    from dpaudit.stats.attack_metrics import attack_metrics

    rng = np.random.default_rng(7)
    member = rng.random(n) < 0.5
    score = rng.normal(size=n) + 0.5 * member
    cases = {
        "multi_split (S=10)": lambda: multi_split(member, score, 1e-5),
        "multi_run threshold=multi_split": lambda: multi_run(member, score, 1e-5,
                                                            threshold="multi_split"),
        "multi_run threshold=bonferroni": lambda: multi_run(member, score, 1e-5),
        "attack_metrics (3 FPRs, no bootstrap)": lambda: attack_metrics(
            member, score, fprs=(0.001, 0.01, 0.1), bootstrap=False),
        "attack_metrics (1 FPR, BCa, B=200)": lambda: attack_metrics(
            member[:5_000], score[:5_000], n_resamples=200),
    }
    out = {}
    for name, f in cases.items():
        f()  # warm-up (imports, caches)
        best, best_cpu = float("inf"), float("inf")
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            r = f()
            best = min(best, time.perf_counter() - t0)
            best_cpu = min(best_cpu, time.process_time() - c0)
        out[name] = {"seconds": best, "cpu": best_cpu,
                     "result": r.to_dict() if hasattr(r, "to_dict") else r}
    print(json.dumps(out))


def _run(src: Path, n: int, repeat: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, __file__, "--_child", "--n", str(n), "--repeat",
                           str(repeat)], env=env, capture_output=True, text=True, check=False)
    if proc.returncode:
        sys.exit(f"child failed ({src}):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])




def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000, help="trials (scores)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per process")
    ap.add_argument("--rounds", type=int, default=3,
                    help="processes per side, interleaved (the best run is kept)")
    ap.add_argument("--baseline-rev", help="git revision whose src/ is the baseline")
    ap.add_argument("--baseline-src", help="PYTHONPATH of the baseline code")
    ap.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._child:
        _child(args.n, args.repeat)
        return
    if not (args.baseline_rev or args.baseline_src):
        ap.error("give --baseline-rev REV or --baseline-src DIR")
    with tempfile.TemporaryDirectory() as tmp:
        base_src = (Path(args.baseline_src) if args.baseline_src
                    else baseline_src(args.baseline_rev, Path(tmp)))
        runs: dict[str, list[dict]] = {"now": [], "baseline": []}
        for _ in range(args.rounds):  # interleaved, so that a busy machine hits both alike
            runs["now"].append(_run(ROOT / "src", args.n, args.repeat))
            runs["baseline"].append(_run(base_src, args.n, args.repeat))
    print(f"n = {args.n:,} trials; best of {args.rounds} x {args.repeat} runs each, "
          f"interleaved; baseline {args.baseline_rev or args.baseline_src}; wall (CPU) s")
    for name in runs["now"][0]:
        best = {k: (min(r[name]["seconds"] for r in v), min(r[name]["cpu"] for r in v))
                for k, v in runs.items()}
        same = all(r[name]["result"] == runs["now"][0][name]["result"]
                   for v in runs.values() for r in v)
        (w1, c1), (w0, c0) = best["now"], best["baseline"]
        print(f"{name:38s} now {w1:7.3f} ({c1:7.3f})  baseline {w0:7.3f} ({c0:7.3f})  "
              f"ratio {w0 / w1:5.2f}x ({c0 / c1:5.2f}x)  identical results: {same}")
        if not same:
            sys.exit(f"{name}: results differ from the baseline")


if __name__ == "__main__":
    main()
