"""Peers' defects and the multi-run threshold grid, measured (docs/performance.md, "Peers'
defects").  Needs jax_privacy (``pip install 'dpaudit[peers]'``, or a scratch venv).

  python benchmarks/peer_defects.py power   [--reps 20]   # multi-run C-P: grid size vs jax_privacy
  python benchmarks/peer_defects.py fdp     [--reps 300]  # jax one-run f-DP (Mahloujifar) under H0
  python benchmarks/peer_defects.py gdp     [--reps 200]  # jax epsilon_from_gdp on null scores

power: mu-GDP scores (members N(mu, 1), non-members N(0, 1), mu = 2 as in benchmarks/peers.py),
n in {1e3, 1e4, 1e5}; dpaudit's multi_run (Bonferroni over at most K label-free quantile
thresholds of the pooled scores, K = 1000 / 200 / 100 / 50; direction "both" and "positive")
against jax_privacy's epsilon_clopper_pearson (Bonferroni over the ROC convex-hull frontier,
which is chosen with the labels).  Prints the median epsilon over seeds and the ratio to jax.

fdp: ``--mu`` (default 0: the null, no leak, true epsilon 0; mu > 0: an exactly mu-GDP
mechanism, members N(mu, 1), non-members N(0, 1), true epsilon GaussianDP(mu).epsilon(delta));
the fraction of runs whose 95% lower bound exceeds the true epsilon (a valid bound: at most 5%).

gdp: null scores (members and non-members N(0, 1), true epsilon 0); the fraction of runs in which
epsilon_from_gdp reports epsilon > 0, and its median.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

import dpaudit as da
from dpaudit import estimators as E


def _scores(rng: np.random.Generator, n: int, mu: float) -> tuple[np.ndarray, np.ndarray]:
    m = rng.random(n) < 0.5
    s = rng.standard_normal(n) + mu * m
    return m, s


def power(reps: int, sizes: tuple[int, ...]) -> None:
    from jax_privacy import auditing

    delta, conf = 1e-5, 0.95
    grids = (1000, 200, 100, 50)
    print(f"{'n':>7} {'jax':>8} " + " ".join(f"{f'K={k} {d}':>16}" for k in grids
                                              for d in ("both", "pos")))
    for n in sizes:
        jax_eps, ours = [], {(k, d): [] for k in grids for d in ("both", "positive")}
        for seed in range(reps):
            m, s = _scores(np.random.default_rng(seed), n, 2.0)
            a = auditing.CanaryScoreAuditor(s[m], s[~m])
            jax_eps.append(float(a.epsilon_clopper_pearson(1 - conf, delta)))
            for k in grids:
                for d in ("both", "positive"):
                    ours[(k, d)].append(E.multi_run(m, s, delta=delta, confidence=conf,
                                                    max_thresholds=k, direction=d).epsilon)
        j = float(np.median(jax_eps))
        cells = []
        for k in grids:
            for d in ("both", "positive"):
                o = float(np.median(ours[(k, d)]))
                cells.append(f"{o:8.3f} ({o / j:5.3f})")
        print(f"{n:>7} {j:8.3f} " + " ".join(f"{c:>16}" for c in cells), flush=True)


def fdp(reps: int, n: int, mu: float) -> None:
    from jax_privacy import auditing

    delta, conf = 1e-5, 0.95
    true = da.GaussianDP(mu).epsilon(delta) if mu > 0 else 0.0
    over_jax = over_ours = 0
    t0 = time.process_time()
    for seed in range(reps):
        m, s = _scores(np.random.default_rng(10_000 + seed), n, mu)
        a = auditing.CanaryScoreAuditor(s[m], s[~m])
        over_jax += float(a.epsilon_one_run_fdp(1 - conf, delta)) > true
        over_ours += da.audit_one_run(m, s, delta=delta, confidence=conf,
                                      methods=("mahloujifar",), family="gdp"
                                      )[0].epsilon > true
        if (seed + 1) % 50 == 0:
            print(f"  {seed + 1} runs: jax {over_jax}, dpaudit {over_ours}", flush=True)
    se = math.sqrt(0.05 * 0.95 / reps)
    print(f"mu = {mu:g} GDP, n = {n}, true eps = {true:.4f}, {reps} runs: jax_privacy "
          f"epsilon_one_run_fdp over-claims in {over_jax}/{reps} = {over_jax / reps:.3f}; "
          f"dpaudit mahloujifar (gdp family) {over_ours}/{reps} = {over_ours / reps:.3f} "
          f"(valid: <= 0.05 + 2 se = {0.05 + 2 * se:.3f}); {time.process_time() - t0:.0f} s CPU")


def gdp(reps: int, n: int) -> None:
    from jax_privacy import auditing

    eps = []
    for seed in range(reps):
        m, s = _scores(np.random.default_rng(20_000 + seed), n, 0.0)
        eps.append(float(auditing.CanaryScoreAuditor(s[m], s[~m]).epsilon_from_gdp(0.05, 1e-5)))
    e = np.array(eps)
    print(f"null scores, n = {n}, {reps} runs: epsilon_from_gdp > 0 in {(e > 0).sum()}/{reps} "
          f"(median {np.median(e):.3f}, max {e.max():.3f}); the true epsilon is 0")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("power", "fdp", "gdp"))
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--mu", type=float, default=0.0, help="fdp: mu of the scores (0 = null)")
    ap.add_argument("--sizes", default="1000,10000,100000", help="power: comma-separated n")
    a = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}")
    if a.what == "power":
        power(a.reps or 20, tuple(int(x) for x in a.sizes.split(",")))
    elif a.what == "fdp":
        fdp(a.reps or 300, a.n, a.mu)
    else:
        gdp(a.reps or 200, a.n)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
