"""Cost of a training audit's statistics: ``audit_training`` at 1,000 and 10,000 canaries.

    PYTHONPATH=src python benchmarks/audit_statistics.py [--canaries 1000 10000] [--repeats 3]
        [--baseline-rev REV]

What a white-box Opacus audit computes after training (``benchmarks/training_overhead.py``,
column "audit statistics CPU s", minus reading the canaries' scores and facts): the claim's
epsilon (``dpsgd_curve`` at dp_accounting's 1e-4 interval), Opacus's PRV epsilon, the
DP-SGD null family (``dpsgd_family``: 15 noise multipliers composed with the PLD
accountant) and every one-run method under it, for sigma = 1, q = 0.05, T = 300, on
white-box likelihood-ratio scores of the DP-SGD simulator (the same law as the canaries').
Each measurement runs in a fresh process (the family and the accountants are cached per
process, so the first audit of a run is what a user pays), CPU seconds of the process
(``time.process_time``) after the imports; torch and Opacus are imported first, as in a
training process, then dp_accounting, whose import (once per process, paid by the first audit
of a training run and included in training_overhead.py's column) is printed on its own.

"before" is, by default, the same code with the former paths put back in the process:
dp_accounting's own per-point Python loops (its ``from_gaussian_mechanism``, its
``self_compose``, ``get_delta_for_epsilon`` on the family's grid, ``get_epsilon_for_delta`` for
the nodes), the
sequential convex-hull stack for the members' envelope (below), no member cache, the
curve-by-curve B^{-1} of ``mahloujifar`` and the two-pass NaN check of ``as_alpha``; only the
early end of the node list (nodes beyond ``DPSGD_FAMILY_MAX_EPS`` are no longer composed) stays.
``--baseline-rev REV`` runs "before" on that commit's ``src/`` instead (``git archive``; e.g.
49d0925, the last commit before these changes).  Both print the audit's epsilons, so the table
shows that the results agree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _common import baseline_src

SIGMA, Q, STEPS, DELTA = 1.0, 0.05, 300, 1e-5
ROOT = Path(__file__).resolve().parent.parent


def _sequential_envelope(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The former ``_upper_envelope``: the convex-hull trick as a Python stack."""
    order = np.lexsort((-a, -b))
    a, b = a[order], b[order]
    keep = np.concatenate([[True], b[1:] != b[:-1]])
    a, b = a[keep], b[keep]
    hull: list[int] = []
    for j in range(a.size):
        while len(hull) >= 2:
            i, k = hull[-2], hull[-1]
            if (a[i] - a[j]) * (b[i] - b[k]) <= (a[i] - a[k]) * (b[i] - b[j]):
                hull.pop()
            else:
                break
        hull.append(j)
    h = np.asarray(hull)
    ha, hb = a[h], b[h]
    xs = (ha[:-1] - ha[1:]) / (hb[:-1] - hb[1:])
    xs = np.concatenate([[0.0], xs[(xs > 0) & (xs < 1)], [1.0]])
    ys = np.max(ha[None, :] - hb[None, :] * xs[:, None], axis=1)
    return xs, np.clip(ys, 0.0, 1.0)


def _as_alpha_two_pass(alpha: Any) -> np.ndarray:
    """The former ``as_alpha``: NaN check through a boolean array."""
    a = np.asarray(alpha, dtype=float)
    if np.isnan(a).any():
        raise ValueError("alpha must not contain NaN")
    return np.clip(a, 0.0, 1.0)


def _use_reference() -> None:
    """Put the former paths back (the default "before" column; module docstring)."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    import dpaudit.curves.accounting as acc
    import dpaudit.curves.base as base
    import dpaudit.curves.pld_gaussian as pg

    patches: list[tuple[Any, str, Any]] = [
        (pg, "gaussian_pld", lambda s, q, v: pld_lib.from_gaussian_mechanism(
            standard_deviation=s, sampling_prob=q, value_discretization_interval=v)),
        (pg, "self_compose", lambda pld, t: pld.self_compose(t)),
        (acc, "_profile_deltas",
         lambda pld, eps: np.asarray(pld.get_delta_for_epsilon(eps), dtype=float)),
        (acc, "_pld_epsilon", lambda pld, d: float(pld.get_epsilon_for_delta(d))),
        (acc, "_upper_envelope", _sequential_envelope),
        (acc.DPSGDFamily, "__call__", acc.DPSGDFamily._member),   # no member cache
        (acc.ProfileCurve, "vertices", None),                     # generic B^{-1}
        (acc, "as_alpha", _as_alpha_two_pass),
        (base, "as_alpha", _as_alpha_two_pass),
    ]
    for obj, name, value in patches:
        setattr(obj, name, value)


def _child(canaries: int, reference: bool) -> dict[str, Any]:
    import opacus  # noqa: F401
    import torch  # noqa: F401

    c0 = time.process_time()
    import dp_accounting.pld.privacy_loss_distribution  # noqa: F401  (timed on its own)
    import_cpu = time.process_time() - c0

    from dpaudit.mechanisms.dpsgd import DPSGDSimulator
    from dpaudit.randomness import stream
    from dpaudit.training import audit_training

    if reference:
        _use_reference()
    rng = stream(0, "main")
    bits = rng.integers(0, 2, canaries)
    scores = DPSGDSimulator(noise_multiplier=SIGMA, sampling_rate=Q, steps=STEPS,
                            score_kind="lr").run(bits, rng)["lr"]
    c0 = time.process_time()
    a = audit_training(bits, scores, noise_multiplier=SIGMA, sampling_rate=Q, steps=STEPS,
                       delta=DELTA, seed=0)
    cpu = time.process_time() - c0
    return {"cpu": cpu, "import_cpu": import_cpu,
            "epsilons": {r.method: r.epsilon for r in a.results}}




def _run(n: int, kind: str, baseline: Path | None) -> dict[str, Any]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    mode = kind
    if kind == "before" and baseline is not None:
        env["PYTHONPATH"], mode = str(baseline), "after"  # that commit's code, as it was
    proc = subprocess.run([sys.executable, __file__, "--child", str(n), mode],
                          capture_output=True, text=True, check=False, env=env)
    if proc.returncode:
        sys.exit(f"child failed ({kind}, {n}):\n{proc.stderr[-2000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--canaries", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--baseline-rev", default=None,
                    help="git revision whose src/ runs the 'before' column")
    ap.add_argument("--child", nargs=2, default=None)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(int(args.child[0]), args.child[1] == "before")))
        return
    with tempfile.TemporaryDirectory() as tmp:
        baseline = (baseline_src(args.baseline_rev, Path(tmp)) if args.baseline_rev
                    else None)
        _table(args.canaries, args.repeats, baseline, args.baseline_rev)


def _table(sizes: list[int], repeats: int, baseline: Path | None, rev: str | None) -> None:
    before = f"src/ of {rev}" if rev else "former paths in-process"
    print(f"load average {os.getloadavg()[0]:.1f}; audit_training at sigma={SIGMA:g}, "
          f"q={Q:g}, T={STEPS}, delta={DELTA:g}; fresh process each, medians of "
          f"{repeats} interleaved runs, CPU s; before = {before}")
    print("| canaries | before CPU s | after CPU s | ratio before / after | epsilons (after) "
          "| same results | + dp_accounting import CPU s |")
    print("|---|---|---|---|---|---|---|")
    for n in sizes:
        rows: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for _ in range(repeats):
            for kind in rows:
                rows[kind].append(_run(n, kind, baseline))
        b = statistics.median(r["cpu"] for r in rows["before"])
        a = statistics.median(r["cpu"] for r in rows["after"])
        ea, eb = rows["after"][0]["epsilons"], rows["before"][0]["epsilons"]
        diff = max(abs(ea[m] - eb[m]) / max(1.0, abs(eb[m])) for m in eb)
        same = "identical" if diff == 0 else (f"yes ({diff:.0e})" if diff <= 1e-9 else "NO")
        eps = ", ".join(f"{m} {v:.4f}" for m, v in ea.items())
        print(f"| {n:,} | {b:.2f} | {a:.2f} | {b / a:.1f}x | {eps} | "
              f"{same} | {statistics.median(r['import_cpu'] for r in rows['after']):.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
