"""Opacus #571 / #819 on unmodified Opacus 1.6: a valid epsilon lower bound above the claim.

    PYTHONPATH=src python studies/opacus_normalisation.py [--trials 2000] [--out DIR]

For each setting: the trial engine (``dpaudit.engine.run_audit``, SQLite store in --out,
resumable) runs ``--trials`` one-step trainings of ``make_private`` on the first N or N + 1
records (secret bit per trial) of a regression set with 1,000 outputs (4,000 weights; the
last setting 5,000) and scores minus the norm of the released weights; the classical
multi-run audit (Clopper-Pearson, 95%) gives the epsilon lower bound at delta = 1e-5.
The claim is the larger of Opacus's RDP-accountant epsilons for the two data sets
(q = 1 / len(loader)).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from dpaudit.engine import run_audit
from dpaudit.training.accounting import opacus_epsilon
from dpaudit.training.opacus_normalisation import (
    divisor_leaks,
    normalisation_audit,
    opacus_divisor,
)

#: (N, DataLoader batch size, sigma, outputs): the #819 floor (q = 1/2, divisor 1 vs 2), the
#: #571 small-sample full batch (q = 1, divisor 2 vs 3), a control whose divisor and q do not
#: change between neighbours (q = 1/3, divisor 8 for N = 24, 25, 26), and a realistic size
#: (N = 999 vs 1,000 records, batch 50: q = 1/20 for both, divisor 49 vs 50) with 5,000
#: outputs (20,000 weights).
SETTINGS = ((3, 2, 2.0, 1000), (2, 3, 2.0, 1000), (25, 10, 2.0, 1000), (999, 50, 2.0, 5000))
DELTA = 1e-5


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=Path("studies/out"))
    ap.add_argument("--only", type=int, default=None, help="index of one setting")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for i, (n, b, sigma, outputs) in enumerate(SETTINGS):
        if args.only is not None and i != args.only:
            continue
        (q0, d0), (q1, d1) = opacus_divisor(n, b), opacus_divisor(n + 1, b)
        claim = max(opacus_epsilon(sigma, q0, 1, DELTA, accountant="rdp"),
                    opacus_epsilon(sigma, q1, 1, DELTA, accountant="rdp"))
        t0 = time.perf_counter()
        r = run_audit(normalisation_audit(n, b, sigma, outputs=outputs), trials=args.trials,
                      seed=0,
                      executor="inline", store=args.out / f"opacus_norm_{n}_{b}.sqlite",
                      resume=True, claimed_epsilon=claim, delta=DELTA)
        print(json.dumps({"N": n, "batch_size": b, "sigma": sigma, "outputs": outputs,
                          "q": [q0, q1],
                          "divisor": [d0, d1], "leaks": divisor_leaks(n, b),
                          "claimed_epsilon_rdp": claim, "epsilon_lower_bound": r.result.epsilon,
                          "violation": r.violation, "trials": args.trials,
                          "seconds": time.perf_counter() - t0}), flush=True)


if __name__ == "__main__":
    main()
