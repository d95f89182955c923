"""Grey-box vs black-box on the same library bugs, and the zoo's false-violation rate.

1. For each diffprivlib finding, the grey-box pass (:mod:`dpaudit.zoo.greybox_check`: two runs
   per candidate pair, identical randomness) against the black-box audit
   (:mod:`dpaudit.zoo.audit`: search + final trials), whose budget doubles from 20 final trials
   until it reports the violation.  Figures: runs of the mechanism and wall seconds for each,
   and their ratio.  (The doubling schedule measures the cost of the first budget that
   suffices; a real audit fixes its budget in advance.)
2. False-violation rate: the zoo's two-phase audit on known-correct mechanisms (dpaudit's
   simulators, diffprivlib's Laplace and Geometric, PipelineDP's VARIANCE on [0, 10] with the
   joint-tail score, OpenDP's and PyDP's Laplace and OpenDP's Gaussian under the precision
   score, the rho-zCDP controls audited in rho) over many seeds, each at confidence 0.99; a
   correct procedure flags at most 1% of the seeds.

Needs the zoo extra (``.venv-zoo``, ``make zoo-test`` builds it); without diffprivlib only
part 2 on the simulators runs.

    .venv-zoo/bin/python studies/zoo.py [--seeds 300]
"""

from __future__ import annotations

import argparse
import time

from dpaudit.stats.binomial import clopper_pearson
from dpaudit.zoo.audit import audit_entry
from dpaudit.zoo.controls import correct_entries


def greybox_vs_blackbox() -> None:
    try:
        from dpaudit.zoo.diffprivlib_zoo import entries
        from dpaudit.zoo.greybox_check import greybox_entry
    except ImportError as exc:
        print(f"skipped grey-box vs black-box: {exc}")
        return
    greybox_entry(next(e for e in entries() if e.cause is None))  # imports, warm caches
    print("entry                         grey-box runs  s        black-box runs  s       "
          "ratio runs  ratio time   (black-box runs: all budgets tried, search included)")
    for e in entries():
        if e.cause is None:
            continue
        t = time.perf_counter()
        g = greybox_entry(e)
        g_s = time.perf_counter() - t
        assert g is not None, e.key
        if not g.findings:
            # e.g. the precision-based attack: the inputs to the noise are correct, the
            # float arithmetic after it is not; only the black-box audit sees it
            print(f"{e.key:30s}   grey-box: no finding (the bug is after the primitive)")
            continue
        n = 20
        runs = 0
        t = time.perf_counter()
        while True:
            search = max(10, n // 4)
            r = audit_entry(e, trials=n, seed=0, search_trials=search)
            runs += r.trials + 2 * search * len(e.pairs)
            if r.verdict == "violation" or n > 10**5:
                break
            n *= 2
        b_s = time.perf_counter() - t
        print(f"{e.key:30s}{g.runs:8d} {g_s:9.3f}   {runs:10d} {b_s:9.3f}   "
              f"{runs / g.runs:9.1f}  {b_s / g_s:9.1f}   (black-box eps >= {r.epsilon_lb:.2f} "
              f"at {r.trials} final trials; verdict {r.verdict})")


def false_violation_rate(seeds: int) -> None:
    """Randomized response (each output's likelihood ratio is exactly e^eps, so one threshold
    attains eps and the bound approaches the claim: the most demanding case) at 4000 trials;
    the others at 300."""
    ents = correct_entries()
    total = flagged = 0
    for e in ents:
        n = 4000 if "Randomized" in e.key else 300
        lbs = [audit_entry(e, trials=n, seed=s, confidence=0.99).epsilon_lb
               for s in range(seeds)]
        k = sum(lb > e.epsilon for lb in lbs)
        total += seeds
        flagged += k
        print(f"{e.key:30s} {n:5d} trials: bound above the true epsilon in {k} of {seeds} "
              f"seeds (median bound {sorted(lbs)[len(lbs) // 2]:.3f}, max {max(lbs):.3f}, "
              f"true {e.epsilon:g})")
    lo, hi = clopper_pearson(flagged, total, 0.95, "two-sided")
    print(f"false-violation rate: {flagged}/{total} = {flagged / total:.4f} "
          f"(95% CI [{float(lo):.4f}, {float(hi):.4f}]; nominal <= 0.01)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=200)
    a = ap.parse_args()
    greybox_vs_blackbox()
    false_violation_rate(a.seeds)


if __name__ == "__main__":
    main()
