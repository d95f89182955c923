"""Peers' defects and the multi-run threshold grid, measured (docs/performance.md, "Peers'
defects").  Needs jax_privacy (``pip install 'dpaudit[peers]'``, or a scratch venv).

  python studies/peer_defects.py power   [--reps 20]   # multi-run C-P: grids vs jax_privacy
  python studies/peer_defects.py fdp     [--reps 300]  # jax one-run f-DP (Mahloujifar) under H0
  python studies/peer_defects.py gdp     [--reps 200]  # jax epsilon_from_gdp on null scores
  python studies/peer_defects.py tfp     [--reps 200]  # TF Privacy's epsilon lower bound, H0

power: mu-GDP scores (members N(mu, 1), non-members N(0, 1)), mu in ``--mus`` (default 0.5, 1,
2, 4, 8), n in ``--sizes`` (default 1e2 .. 1e6); dpaudit's multi_run on its default grid
("geometric": pooled-score ranks 1, 2, 3, 5, 8, ... from both ends plus 30 quantiles; direction
"both" and "positive") and on the 1000- and 100-quantile grids (``grid="quantiles"``; 1000 was
the default before) against jax_privacy's epsilon_clopper_pearson (Bonferroni over the ROC
convex-hull frontier, which is chosen with the labels).  Prints the median epsilon over seeds
and the ratio to jax.

fdp: ``--mu`` (default 0: the null, no leak, true epsilon 0; mu > 0: an exactly mu-GDP
mechanism, members N(mu, 1), non-members N(0, 1), true epsilon GaussianDP(mu).epsilon(delta));
the fraction of runs whose 95% lower bound exceeds the true epsilon (a valid bound: at most 5%).

gdp: null scores (members and non-members N(0, 1), true epsilon 0); the fraction of runs in which
epsilon_from_gdp reports epsilon > 0, and its median.

tfp: TensorFlow Privacy's epsilon lower bound (``privacy_tests/epsilon_lower_bound.py``:
``EpsilonLowerBound``) called exactly as its membership-inference ``SingleAttackResult`` calls it
(Bailey's ratio bound, alpha = 0.05, two-sided thresholds, every threshold, top 5) on null scores
(members and non-members N(0, 1), true epsilon 0); counts the runs whose reported bound is > 0,
also with its Clopper-Pearson ratio bound, and dpaudit's multi_run on the same scores.  The
module needs only NumPy, SciPy, scikit-learn, statsmodels and immutabledict (no TensorFlow):
with TF Privacy installed it is imported from there, otherwise load the file in isolation:

  git -C <tensorflow/privacy clone> show HEAD:tensorflow_privacy/privacy/privacy_tests/\
epsilon_lower_bound.py > /tmp/elb.py
  pip install --target /tmp/elb-deps --no-deps immutabledict statsmodels patsy
  PYTHONPATH=src:/tmp/elb-deps python studies/peer_defects.py tfp --tfp-module /tmp/elb.py
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import time
import warnings
from typing import Any

import numpy as np

import dpaudit as da
from dpaudit import estimators as E


def _scores(rng: np.random.Generator, n: int, mu: float) -> tuple[np.ndarray, np.ndarray]:
    m = rng.random(n) < 0.5
    s = rng.standard_normal(n) + mu * m
    return m, s


GRID_COLUMNS = (("geometric", "both"), ("geometric", "positive"), ("quantiles:1000", "both"),
                ("quantiles:100", "both"))


def _grid_kwargs(grid: str) -> dict[str, Any]:
    if grid.startswith("quantiles:"):
        return {"grid": "quantiles", "max_thresholds": int(grid.split(":")[1])}
    return {"grid": grid}


def power(reps: int, sizes: tuple[int, ...], mus: tuple[float, ...]) -> None:
    """Median epsilon over ``reps`` seeds (a third of them, at least 2, at n >= 1e6) of
    jax_privacy's epsilon_clopper_pearson and dpaudit's multi_run on the grids of
    GRID_COLUMNS, and each one's ratio to jax_privacy's."""
    from jax_privacy import auditing

    delta, conf = 1e-5, 0.95
    print(f"{'mu':>4} {'n':>8} {'jax':>7} " + " ".join(
        f"{g + ' ' + d[:4]:>24}" for g, d in GRID_COLUMNS))
    for mu in mus:
        for n in sizes:
            r = reps if n < 10**6 else max(2, reps // 3)
            jax_eps: list[float] = []
            ours: dict[tuple[str, str], list[float]] = {c: [] for c in GRID_COLUMNS}
            for seed in range(r):
                m, s = _scores(np.random.default_rng(seed), n, mu)
                a = auditing.CanaryScoreAuditor(s[m], s[~m])
                jax_eps.append(float(a.epsilon_clopper_pearson(1 - conf, delta)))
                for g, d in GRID_COLUMNS:
                    ours[(g, d)].append(E.multi_run(m, s, delta=delta, confidence=conf,
                                                    direction=d, **_grid_kwargs(g)).epsilon)
            j = float(np.median(jax_eps))
            cells = []
            for c in GRID_COLUMNS:
                o = float(np.median(ours[c]))
                cells.append(f"{o:7.3f} ({o / j:5.3f})" if j > 0 else f"{o:7.3f} (  -  )")
            print(f"{mu:>4g} {n:>8} {j:7.3f} " + " ".join(f"{c:>24}" for c in cells),
                  flush=True)


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


def _tfp_module(path: str | None) -> Any:
    """TF Privacy's ``epsilon_lower_bound`` module: from the installed package, or the file at
    ``path`` loaded on its own (it imports no TensorFlow)."""
    if path is None:
        from tensorflow_privacy.privacy.privacy_tests import epsilon_lower_bound
        return epsilon_lower_bound
    spec = importlib.util.spec_from_file_location("tfp_epsilon_lower_bound", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def tfp(reps: int, n: int, path: str | None) -> None:
    warnings.simplefilter("ignore")  # its Bailey bound divides by zero counts (NaN, dropped)
    elb = _tfp_module(path)
    fired = {"bailey": 0, "clopper-pearson": 0, "dpaudit": 0}
    top = []
    t0 = time.process_time()
    for seed in range(reps):
        m, s = _scores(np.random.default_rng(30_000 + seed), n, 0.0)
        # as SingleAttackResult: pos = training (member) scores, alpha 0.05, two-sided, top 5
        lb = elb.EpsilonLowerBound(pos_scores=s[m], neg_scores=s[~m], alpha=0.05,
                                   two_sided_threshold=True)
        for name, method in (("bailey", elb.BoundMethod.BAILEY),
                             ("clopper-pearson", elb.BoundMethod.CLOPPER_PEARSON)):
            b = lb.compute_epsilon_lower_bound(method, k=5)
            best = float(b[0]) if b.size else 0.0
            fired[name] += best > 0
            if name == "bailey":
                top.append(max(best, 0.0))
        fired["dpaudit"] += E.multi_run(m, s, delta=0.0, confidence=0.95).epsilon > 0
    t = np.array(top)
    print(f"null scores, n = {n}, {reps} runs (true epsilon 0): TF Privacy epsilon lower bound "
          f"(Bailey, as SingleAttackResult) > 0 in {fired['bailey']}/{reps} (median "
          f"{np.median(t):.3f}, max {t.max():.3f}); its Clopper-Pearson bound > 0 in "
          f"{fired['clopper-pearson']}/{reps}; dpaudit multi_run (95%) > 0 in "
          f"{fired['dpaudit']}/{reps}; {time.process_time() - t0:.0f} s CPU")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("power", "fdp", "gdp", "tfp"))
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--mu", type=float, default=0.0, help="fdp: mu of the scores (0 = null)")
    ap.add_argument("--sizes", default="100,1000,10000,100000,1000000",
                    help="power: comma-separated n")
    ap.add_argument("--mus", default="0.5,1,2,4,8", help="power: comma-separated mu")
    ap.add_argument("--tfp-module", default=None,
                    help="tfp: path of TF Privacy's epsilon_lower_bound.py (default: import it)")
    a = ap.parse_args()
    print(f"load {os.getloadavg()[0]:.1f}")
    if a.what == "power":
        power(a.reps or 20, tuple(int(float(x)) for x in a.sizes.split(",")),
              tuple(float(x) for x in a.mus.split(",")))
    elif a.what == "fdp":
        fdp(a.reps or 300, a.n, a.mu)
    elif a.what == "gdp":
        gdp(a.reps or 200, a.n)
    else:
        tfp(a.reps or 200, a.n, a.tfp_module)
    print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
