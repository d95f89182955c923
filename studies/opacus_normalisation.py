"""Opacus #571 / #819 on unmodified Opacus 1.6: a valid epsilon lower bound above the claim.

    PYTHONPATH=src python studies/opacus_normalisation.py [--trials 2000] [--out DIR]

For each setting: the trial engine (``dpaudit.engine.run_audit``, SQLite store in --out,
resumable) runs ``--trials`` one-step trainings of ``make_private`` on the first N or N + 1
records (secret bit per trial) of a regression set with 1,000 outputs (4,000 weights; the
last setting 5,000) and scores minus the norm of the released weights; the classical
multi-run audit (Clopper-Pearson, 95%) gives the epsilon lower bound at delta = 1e-5.
The claim is the larger of the epsilons Opacus's accountant reports for the two data sets
(q = 1 / len(DPDataLoader)): ``PrivacyEngine()``'s default PRV accountant (the verdict's
claim) and, beside it, the RDP accountant.  ``analytic_epsilon`` is the exact epsilon of the
zero-gradient pair (``scale_pair_epsilon``: no trials, a lower bound on the true epsilon).
``--fixed`` audits the fix (a public sampling rate and divisor).  ``--sizes`` prints the
fraction of data set sizes that leak, by batch size and scale (no training).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from dpaudit.engine import run_audit
from dpaudit.training.accounting import opacus_epsilon
from dpaudit.training.opacus_normalisation import (
    affected_fraction,
    normalisation_audit,
    normalisation_finding,
    scale_pair_epsilon,
)

#: (N, DataLoader batch size, sigma, outputs): the #819 floor (q = 1/2, divisor 1 vs 2), the
#: #571 small-sample full batch (q = 1, divisor 2 vs 3), a control whose divisor and q do not
#: change between neighbours (q = 1/3, divisor 8 for N = 24, 25, 26), and a realistic size
#: (N = 999 vs 1,000 records, batch 50: q = 1/20 for both, divisor 49 vs 50) with 5,000
#: outputs (20,000 weights).
SETTINGS = ((3, 2, 2.0, 1000), (2, 3, 2.0, 1000), (25, 10, 2.0, 1000), (999, 50, 2.0, 5000))
DELTA = 1e-5
#: DataLoader batch sizes users pick, and data set size ranges, for ``--sizes``.
BATCH_SIZES = (16, 32, 50, 64, 100, 128, 256, 512, 1000, 1024)
SCALES = ((100, 5_000), (10_000, 100_000))


def sizes() -> None:
    for b in BATCH_SIZES:
        print(json.dumps({"batch_size": b, **{f"{lo}-{hi}": round(affected_fraction(b, lo, hi), 4)
                                               for lo, hi in SCALES},
                          "mnist_60000": normalisation_finding(60_000, b).leaks,
                          "cifar10_50000": normalisation_finding(50_000, b).leaks}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--out", type=Path, default=Path("studies/out"))
    ap.add_argument("--only", type=int, default=None, help="index of one setting")
    ap.add_argument("--fixed", action="store_true", help="audit the public rate + divisor")
    ap.add_argument("--sizes", action="store_true", help="affected fractions only")
    args = ap.parse_args()
    if args.sizes:
        sizes()
        return
    args.out.mkdir(parents=True, exist_ok=True)
    for i, (n, b, sigma, outputs) in enumerate(SETTINGS):
        if args.only is not None and i != args.only:
            continue
        f = normalisation_finding(n, b)
        nb = normalisation_finding(n + 1, b)
        rates = (f.here.accountant_rate, nb.here.accountant_rate)
        prv, rdp = (max(opacus_epsilon(sigma, q, 1, DELTA, accountant=a) for q in rates)
                    for a in ("prv", "rdp"))
        t0 = time.perf_counter()
        tag = "_fixed" if args.fixed else ""
        r = run_audit(normalisation_audit(n, b, sigma, outputs=outputs, fixed=args.fixed),
                      trials=args.trials, seed=0, executor="inline",
                      store=args.out / f"opacus_norm_{n}_{b}{tag}.sqlite",
                      resume=True, claimed_epsilon=prv, delta=DELTA)
        analytic = (None if args.fixed else
                    scale_pair_epsilon(4 * outputs, (f.here.divisor, nb.here.divisor), DELTA))
        print(json.dumps({"N": n, "batch_size": b, "sigma": sigma, "outputs": outputs,
                          "fixed": args.fixed,
                          "sample_rate": [f.here.sample_rate, nb.here.sample_rate],
                          "divisor": ([b, b] if args.fixed
                                      else [f.here.divisor, nb.here.divisor]),
                          "leaks_unfixed": f.leaks,
                          "claimed_epsilon_prv": prv, "claimed_epsilon_rdp": rdp,
                          "analytic_epsilon": analytic,
                          "epsilon_lower_bound": r.result.epsilon,
                          "violation": r.violation, "trials": args.trials,
                          "seconds": time.perf_counter() - t0}), flush=True)


if __name__ == "__main__":
    main()
