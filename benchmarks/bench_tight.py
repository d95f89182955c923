"""Benchmark of the tight one-run audit (Tight One-Run), exact mode.

Prints wall/CPU times of a full epsilon lower bound (GDP family, delta = 1e-5, 95%):
  * n = r = 1e6         (target < 1 s; r = n reduces to a binomial tail),
  * n = 1e6, r = 1e5    (target < 2 s; cut-mixture integral, one profile per tested mu),
and the fraction of the true epsilon recovered for GDP mu = 1, n = 1e5, r = n, u = E[T]
(target >= 97%), with the Steinke and Mahloujifar baselines on the same observation.

Run: .venv/bin/python benchmarks/bench_tight.py
"""

from __future__ import annotations

import time

from dpaudit import estimators as E
from dpaudit.curves import GaussianDP
from dpaudit.stats.order_statistics import expected_errors


def _timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    curve = GaussianDP(1.0)
    true_eps = curve.epsilon(1e-5)
    print(f"GDP mu=1: true eps(1e-5) = {true_eps:.4f}")
    for n, r, target in [(10**6, 10**6, 1.0), (10**6, 10**5, 2.0)]:
        u = round(expected_errors(curve, n, r))
        res, wall, cpu = _timed(lambda n=n, r=r, u=u: E.tight(n=n, r=r, u=u))
        print(f"tight exact n={n:.0e} r={r:.0e} u={u}: eps={res.epsilon:.4f} "
              f"({res.details['p_value_evaluations']} p-values)  wall {wall:.3f} s, "
              f"cpu {cpu:.3f} s  (target < {target:g} s, ratio {wall / target:.2f})")
    n = r = 10**5
    u = round(expected_errors(curve, n, r))
    res, wall, _ = _timed(lambda: E.tight(n=n, r=r, u=u))
    frac = res.epsilon / true_eps
    print(f"recovered fraction GDP mu=1, n=r=1e5, u=E[T]={u}: eps={res.epsilon:.4f} -> "
          f"{100 * frac:.2f}% of true (target >= 97%)  [{wall:.3f} s]")
    st, wall_s, _ = _timed(lambda: E.steinke(m=n, guesses=r, correct=r - u))
    mm, wall_m, _ = _timed(lambda: E.mahloujifar(m=n, guesses=r, correct=r - u))
    print(f"  same observation: steinke eps={st.epsilon:.4f} ({100 * st.epsilon / true_eps:.1f}%,"
          f" {wall_s:.3f} s), mahloujifar eps={mm.epsilon:.4f} "
          f"({100 * mm.epsilon / true_eps:.1f}%, {wall_m:.3f} s)")
    for mode in ("paper", "hoeffding"):
        res, wall, _ = _timed(lambda mode=mode: E.tight(n=1000, r=100, u=10, mode=mode))
        print(f"tight {mode} n=1000 r=100 u=10: eps={res.epsilon:.4f} [{wall:.3f} s]")


if __name__ == "__main__":
    main()
