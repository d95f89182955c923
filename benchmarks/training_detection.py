"""Detection table: DP-SGD flaws on real Opacus 1.6 training, and false violations.

    PYTHONPATH=src python benchmarks/training_detection.py [--out benchmarks/out/detection.jsonl]
        [--seeds 10] [--correct-seeds 20] [--only flaws|correct]

Every run is the own-loop default of ``dpaudit.training`` -- planted gradient canaries of
the default shape (``shapes="mixed"``: 3 tensors x 2 coordinates each), white box, lr score --
on an MLP (80 hidden units) with a reserved branch (``reserved=32``: silent coordinates in
three tensors), 500 canaries, sigma = 1, q = 0.05, T = 300, C = 1, delta = 1e-5 (claimed
epsilon 5.80).  A flaw is *detected* when the one-run audit's epsilon lower bound (tight,
95%, the claim's own DP-SGD null family -- no assumption) exceeds the claim; every run's
per-canary scores are stored, so other families can be re-audited without training again;
configuration errors (the deterministic claim checks) are counted
separately.  Correct training: 20 seeds on each of digits, breast_cancer and wine
(``--reserved 256``
gives the dense tabular models enough silent coordinates for 500 six-coordinate canaries).
Each run is appended to the JSONL file when it finishes; a re-run skips finished runs.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from dpaudit.training import TrainingConfig, train_audit

FLAWS = ("per_tensor_clipping", "wrong_clip_noise", "lowered_sigma", "too_few_steps",
         "batch_sum_clipping")
DATA = ("digits", "breast_cancer", "wine")
BASE = dict(canaries=500, hidden=80, steps=300, reserved=32, shapes="mixed",
            noise_multiplier=1.0, sampling_rate=0.05)


def _run(out: Path, key: str, cfg: TrainingConfig) -> None:
    t0 = time.perf_counter()
    a = train_audit(cfg)
    row = {"id": key, "flaw": cfg.flawed, "data": cfg.data, "seed": cfg.seed,
           "epsilon": a.results[0].epsilon, "claimed": a.claimed_epsilon,
           "violation": a.violation, "configuration_errors": a.configuration_errors,
           "accountant_epsilon": a.accountant_epsilon, "test_accuracy": a.run.test_accuracy,
           "family": a.settings.get("family"), "seconds": time.perf_counter() - t0,
           "member": a.run.member.astype(int).tolist(), "score": a.run.score.tolist()}
    with out.open("a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps({k: v for k, v in row.items() if k not in ("member", "score")}),
          flush=True)


def summarise(out: Path) -> None:
    rows = []
    for path in (out, out.with_name(out.stem + "_correct" + out.suffix)):
        if path.stem.endswith("_correct_correct"):
            continue
        if path.exists():
            rows += [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["flaw"] or "none", r["data"]), []).append(r)
    print("| flaw | data | seeds | violations | configuration error | min / median eps "
          "| claim | s / run |")
    print("|---|---|---|---|---|---|---|---|")
    for (flaw, data), rs in sorted(groups.items()):
        eps = sorted(r["epsilon"] for r in rs)
        print(f"| {flaw} | {data} | {len(rs)} | {sum(r['violation'] for r in rs)}/{len(rs)} | "
              f"{sum(bool(r['configuration_errors']) for r in rs)}/{len(rs)} | "
              f"{eps[0]:.2f} / {eps[len(eps) // 2]:.2f} | {rs[0]['claimed']:.2f} | "
              f"{sum(r['seconds'] for r in rs) / len(rs):.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("benchmarks/out/detection.jsonl"))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--correct-seeds", type=int, default=20)
    ap.add_argument("--only", choices=("flaws", "correct", "summary"), default=None)
    ap.add_argument("--reserved", type=int, default=BASE["reserved"],
                    help="reserved features of the correct runs")
    args = ap.parse_args()
    torch.set_num_threads(1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if args.out.exists():
        done = {json.loads(x)["id"] for x in args.out.read_text().splitlines() if x.strip()}
    print(f"load average {os.getloadavg()[0]:.1f}")
    jobs = []
    if args.only in (None, "flaws"):
        jobs += [(f"{f}/digits/{s}", TrainingConfig(**BASE, flawed=f, seed=s))
                 for s in range(args.seeds) for f in FLAWS]
    if args.only in (None, "correct"):
        base = {**BASE, "reserved": args.reserved}
        jobs += [(f"none/{d}/{s}", TrainingConfig(**base, data=d, seed=s))
                 for s in range(args.correct_seeds) for d in DATA]
    for key, cfg in jobs:
        if key not in done:
            _run(args.out, key, cfg)
    summarise(args.out)


if __name__ == "__main__":
    main()
