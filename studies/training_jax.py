"""Benchmark: one-run audits of REAL JAX training (jax_privacy DP-SGD and BandMF) on digits.

    PYTHONPATH=src .venv/bin/python studies/training_jax.py [--out FILE] [--only PART]
        [--seeds N] [--correct-seeds M]

Every audited run is appended to a JSONL file as soon as it finishes; a re-run skips the
runs already there (resume after an interruption).  Parts:

1. **tightness**: audit epsilon / claimed epsilon (claim = jax_privacy's DP event, PLD) for
   DP-SGD (white box, last iterate, black box) and BandMF (4 bands; white box with the
   whitened, naive and sum scores side by side on the same runs, and last iterate).
2. **flaws**: each flaw (:mod:`dpaudit.training.jax.flaws`) over ``--seeds`` seeds: the
   detection rate (violations / seeds) with the threat and score that see it.
3. **validity**: correct DP-SGD (white box and last iterate) and BandMF (white box) over
   ``--correct-seeds`` seeds each: false violations counted (must be 0).

Settings (digits MLP, 64 hidden units, reserved inputs for the canaries, C = 1, delta = 1e-5,
confidence 0.95, null family eps_delta or ``--family dpsgd``, the claim's DP-SGD family):
DP-SGD sigma = 4, q = 0.2, T = 100 (claim 2.10);
BandMF 4 bands, sigma = 3, q = 0.3, T = 100 (25 rounds; claim 2.23).  3,000 canaries.
The machine is shared; seconds are wall-clock.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import journal  # studies/journal.py (scripts run from studies/)
import numpy as np

from dpaudit.training.jax import JaxTrainingConfig, train_audit_jax

BASE = {"hidden": 64, "canaries": 3000, "steps": 100}
DPSGD = {"mechanism": "dpsgd", "noise_multiplier": 4.0, "sampling_rate": 0.2, **BASE}
BANDMF = {"mechanism": "bandmf", "bands": 4, "noise_multiplier": 3.0, "sampling_rate": 0.3,
          **BASE}

TIGHTNESS = [
    ("dpsgd white_box", {**DPSGD, "threat": "white_box"}),
    ("dpsgd last_iterate", {**DPSGD, "threat": "last_iterate"}),
    ("dpsgd black_box (flip)", {**DPSGD, "threat": "black_box", "canary": "input",
                                "canaries": 1000}),
    ("bandmf white_box", {**BANDMF, "threat": "white_box"}),
    ("bandmf last_iterate", {**BANDMF, "threat": "last_iterate"}),
]
FLAW_ROWS = [
    ("mean_noise (DP-SGD), white box", {**DPSGD, "flawed": "mean_noise"}),
    ("unclipped_group (DP-SGD), white box", {**DPSGD, "flawed": "unclipped_group"}),
    ("strategy_mismatch (DP-SGD claim, 16-band noise), last iterate",
     {**DPSGD, "flawed": "strategy_mismatch", "threat": "last_iterate"}),
    ("mean_noise (BandMF), white box", {**BANDMF, "flawed": "mean_noise"}),
    ("strategy_mismatch (BandMF claim, 1-band noise), white box",
     {**BANDMF, "flawed": "strategy_mismatch"}),
]
CORRECT = [
    ("correct DP-SGD, white box", {**DPSGD, "threat": "white_box"}),
    ("correct DP-SGD, last iterate", {**DPSGD, "threat": "last_iterate"}),
    ("correct BandMF, white box", {**BANDMF, "threat": "white_box"}),
]


def _key(part: str, label: str, seed: int, family: str, sentinel: float | None = None) -> str:
    base = f"{part}|{label}|{seed}|{family}"
    return base if sentinel is None else f"{base}|sentinel={sentinel:g}"


def _load(path: Path) -> dict[str, dict[str, Any]]:
    return journal.load(path, key="key")


def _run(part: str, label: str, cfg: dict[str, Any], seed: int, path: Path,
         done: dict[str, dict[str, Any]], family: str,
         sentinel: float | None = None) -> dict[str, Any]:
    key = _key(part, label, seed, family, sentinel)
    if key in done:
        return done[key]
    t0 = time.perf_counter()
    settings: dict[str, Any] = {**cfg} if sentinel is None else {**cfg, "sentinel": sentinel}
    a = train_audit_jax(JaxTrainingConfig(seed=seed, **settings), family=family)
    run = a.run
    row = {"key": key, "part": part, "label": label, "seed": seed, "family": family,
           # bits and scores kept, so that the runs can be re-audited under another null
           "member": run.member.astype(int).tolist() if run else None,
           "scores": {k: np.round(v, 6).tolist() for k, v in run.scores.items()} if run else None,
           "epsilon": float(a.verdict_result.epsilon), "claimed": a.claimed_epsilon,
           "dpsgd_curve_epsilon": a.dpsgd_curve_epsilon, "violation": a.violation,
           "compared": a.compared, "accuracy": a.run.test_accuracy if a.run else None,
           "seconds": time.perf_counter() - t0}
    journal.append(path, row)  # durable progress: one line per finished run
    done[key] = row
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("studies/out/training_jax.jsonl"))
    ap.add_argument("--only", choices=("tightness", "flaws", "validity"), default=None)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--correct-seeds", type=int, default=20)
    ap.add_argument("--tightness-seeds", type=int, default=3)
    ap.add_argument("--family", choices=("eps_delta", "dpsgd"), default="eps_delta",
                    help="null family: eps_delta (the JAX audit's default) or dpsgd (the "
                         "claim's DP-SGD family)")
    ap.add_argument("--sentinel", type=float, default=None,
                    help="the gradient canaries' sentinel share (JaxTrainingConfig.sentinel; "
                         "0: pure Dirac canaries, as the documented figures were measured)")
    ap.add_argument("--labels", nargs="*", default=None,
                    help="run only the rows whose label starts with one of these")
    args = ap.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = _load(args.out)
    fam = args.family

    def wanted(rows: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
        if not args.labels:
            return rows
        return [(lab, c) for lab, c in rows if any(lab.startswith(w) for w in args.labels)]

    print(f"load average: {os.getloadavg()[0]:.1f} (2 cores shared); null family: {fam}")
    if args.only in (None, "tightness"):
        print("\n== tightness: audit epsilon / claimed epsilon (mean over seeds)")
        for label, cfg in wanted(TIGHTNESS):
            rows = [_run("tightness", label, cfg, s, args.out, done, fam, args.sentinel)
                    for s in range(args.tightness_seeds)]
            claim = rows[0]["claimed"]
            per_score: dict[str, list[float]] = {}
            for r in rows:
                for k, v in r["compared"].items():
                    per_score.setdefault(k, []).append(v)
            scores = ", ".join(f"{k} {np.mean(v):.3f} ({np.mean(v) / claim:.0%})"
                               for k, v in per_score.items())
            ref = rows[0]["dpsgd_curve_epsilon"]
            print(f"{label:28s} claim {claim:.3f} (dpsgd_curve {ref:.3f})"
                  f" | {scores} | acc {np.mean([r['accuracy'] for r in rows]):.3f}"
                  f" | {np.mean([r['seconds'] for r in rows]):.1f} s/run")
    if args.only in (None, "flaws"):
        print(f"\n== flaws: detection over {args.seeds} seeds")
        for label, cfg in wanted(FLAW_ROWS):
            rows = [_run("flaws", label, cfg, s, args.out, done, fam, args.sentinel)
                    for s in range(args.seeds)]
            hits = sum(r["violation"] for r in rows)
            eps = [r["epsilon"] for r in rows]
            print(f"{label:64s} {hits}/{len(rows)} detected | audit eps median "
                  f"{np.median(eps):.3f} (min {min(eps):.3f}) vs claim {rows[0]['claimed']:.3f}")
    if args.only in (None, "validity"):
        print(f"\n== validity: correct training over {args.correct_seeds} seeds")
        for label, cfg in wanted(CORRECT):
            rows = [_run("validity", label, cfg, s, args.out, done, fam, args.sentinel)
                    for s in range(args.correct_seeds)]
            bad = sum(r["violation"] for r in rows)
            eps = [r["epsilon"] for r in rows]
            print(f"{label:40s} {bad}/{len(rows)} false violations | audit eps max "
                  f"{max(eps):.3f} vs claim {rows[0]['claimed']:.3f}")


if __name__ == "__main__":
    main()
