"""The black-box default of ``train-audit``: bound vs canary count and reserved features.

    PYTHONPATH=src OMP_NUM_THREADS=1 python studies/black_box_default.py \
        --grid 1000:256 1000:1000 3000:256 10000:256 10000:1024 10000:2048 10000:4096 \
        10000:10000 30000:256 30000:1024 --seeds 0 1 \
        --out studies/out/black_box_default.jsonl
    PYTHONPATH=src python studies/black_box_default.py --summary \
        --out studies/out/black_box_default.jsonl

Each run is ``train_audit`` with ``canary="input", threat="black_box",
input_kind="reserved"`` (the ``train-audit --threat black_box`` default: the digits MLP with
256 hidden units in a ``ReservedModel``, canary examples on R reserved input features --
one-hot when n <= R, random sign patterns when n > R -- Opacus Poisson sampling, sigma,
q = 0.05, T steps, the final model's loss drop as the only score).  ``N:R`` = canaries :
reserved features.  Recorded: the verdict row's bound (``tight``, the claim's DP-SGD family),
the claim, bound / claim, whether the run was flagged (a correct run must not be), the
training's CPU seconds.  Resumable (one journal row per run).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import journal  # noqa: E402


def run(n: int, reserved: int, seed: int, *, sigma: float, steps: int,
        pattern_note: str) -> dict[str, object]:
    from dpaudit.training import TrainingConfig, train_audit

    t0 = time.process_time()
    cfg = TrainingConfig(canary="input", threat="black_box", input_kind="reserved",
                         canaries=n, reserved=reserved, noise_multiplier=sigma,
                         steps=steps, seed=seed)
    a = train_audit(cfg)
    return {"canaries": n, "reserved": reserved, "pattern": pattern_note, "seed": seed,
            "sigma": sigma, "steps": steps, "claimed_epsilon": a.claimed_epsilon,
            "bounds": {r.method: r.epsilon for r in a.results},
            "ratio": a.results[0].epsilon / a.claimed_epsilon,
            "flagged": bool(a.violation), "configuration_errors": a.configuration_errors,
            "test_accuracy": a.run.test_accuracy if a.run else None,
            "cpu_seconds": time.process_time() - t0}


def summary(path: Path) -> None:
    rows = list(journal.load(path).values())
    keys = sorted({(r["canaries"], r["reserved"], r["sigma"], r["steps"]) for r in rows})
    print("| canaries | reserved | pattern | sigma | T | claim | seeds | tight / claim "
          "(median, each) | flagged | CPU s / run |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for k in keys:
        sel = [r for r in rows if (r["canaries"], r["reserved"], r["sigma"], r["steps"]) == k]
        ratios = [r["ratio"] for r in sel]
        print(f"| {k[0]:,} | {k[1]:,} | {sel[0]['pattern']} | {k[2]:g} | {k[3]} | "
              f"{sel[0]['claimed_epsilon']:.2f} | {len(sel)} | {np.median(ratios):.0%} ("
              + ", ".join(f"{x:.0%}" for x in ratios) + f") | "
              f"{sum(r['flagged'] for r in sel)}/{len(sel)} | "
              f"{np.median([r['cpu_seconds'] for r in sel]):.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", nargs="*", default=["1000:256"], help="N:R pairs")
    ap.add_argument("--seeds", type=int, nargs="*", default=[0])
    ap.add_argument("--sigma", type=float, default=1.0)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--out", type=Path, default=Path("studies/out/black_box_default.jsonl"))
    ap.add_argument("--summary", action="store_true")
    args = ap.parse_args()
    if args.summary:
        summary(args.out)
        return
    import torch

    torch.set_num_threads(1)
    done = journal.load(args.out)
    for cell in args.grid:
        n, r = (int(v) for v in cell.split(":"))
        for seed in args.seeds:
            rid = f"n{n}_r{r}_s{args.sigma:g}_T{args.steps}_seed{seed}"
            if rid in done:
                continue
            row = run(n, r, seed, sigma=args.sigma, steps=args.steps,
                      pattern_note="one_hot" if n <= r else "signs")
            journal.append(args.out, {"id": rid, **row})
            print(rid, f"{row['ratio']:.2f}", f"{row['cpu_seconds']:.0f}s", flush=True)


if __name__ == "__main__":
    main()
