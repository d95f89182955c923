"""Benchmarks of the simulators and the end-to-end one-run audit (issue 4 targets).

    .venv/bin/python benchmarks/bench_mechanisms.py [--quick]

1. One-run Gaussian audit, 1e6 canaries: simulation + every one-run estimator
   (target < 10 s on 2 cores).
2. DP-SGD white-box simulator, 1e4 canaries x 1,000 steps (target < 60 s), sum and optimal
   likelihood-ratio scores, last iterate, and the flawed variants; peak traced memory.
3. SVT multi-run audits (vectorised), 2e4 runs.
"""

from __future__ import annotations

import sys
import time
import tracemalloc

from dpaudit.estimators.multi_run import multi_run
from dpaudit.games.audit import available_methods
from dpaudit.mechanisms import DPSGDSimulator, GaussianMechanism
from dpaudit.mechanisms.svt import svt_audit

CPU: dict[str, float] = {"last": 0.0}


def timed(fn, *args, **kw):
    """Wall time returned; process CPU time of the call kept in CPU["last"] (on a shared
    machine the wall time can be several times the CPU time)."""
    t, c = time.perf_counter(), time.process_time()
    out = fn(*args, **kw)
    CPU["last"] = time.process_time() - c
    return out, time.perf_counter() - t


def bench_gaussian(n: int) -> None:
    from dpaudit import audit_one_run

    mech = GaussianMechanism(mu=1.0)
    obs, t_sim = timed(mech.simulate, n, 0)
    print(f"[gaussian one-run] n = {n:,}: simulation {t_sim:.3f} s")
    total, cpu = t_sim, CPU["last"]
    for m in available_methods():
        res, dt = timed(audit_one_run, obs.member, obs.score, delta=1e-5, confidence=0.95,
                        methods=(m,), family="gdp", bits_threshold=0.0)
        total += dt
        cpu += CPU["last"]
        print(f"  {m:<12} eps >= {res[0].epsilon:7.4f}   wall {dt:7.3f} s   "
              f"cpu {CPU['last']:7.3f} s")
    true = mech.true_epsilon(1e-5)
    print(f"  total wall {total:.2f} s, cpu {cpu:.2f} s (target < 10 s, ratio "
          f"{total / 10:.2f}); true eps {true:.4f}")


def bench_dpsgd(n: int, steps: int) -> None:
    print(f"[dpsgd white box] {n:,} canaries x {steps:,} steps, q = 0.01, sigma = 1")
    cases = [("white_box/sum", {}), ("white_box/lr", {"score_kind": "lr"}),
             ("last_iterate", {"threat": "last_iterate"}),
             ("white_box/lr + background", {"score_kind": "lr", "background_std": 1.0}),
             ("backprop_clipping |B|=16", {"flaw": "backprop_clipping", "batch_size": 16}),
             ("reused_noise", {"flaw": "reused_noise"})]
    for label, kw in cases:
        mech = DPSGDSimulator(noise_multiplier=1.0, sampling_rate=0.01, steps=steps, **kw)
        tracemalloc.start()
        _, dt = timed(mech.simulate, n, 1)
        peak = tracemalloc.get_traced_memory()[1] / 2 ** 20
        tracemalloc.stop()
        print(f"  {label:<28} wall {dt:7.3f} s cpu {CPU['last']:7.3f} s (target < 60 s, "
              f"ratio {dt / 60:.3f}); peak {peak:6.1f} MiB")


def bench_svt(trials: int) -> None:
    print(f"[svt multi-run] {trials:,} runs each")
    for v in ("alg1", "alg3", "alg4", "alg5", "alg6"):
        n = trials * (10 if v == "alg3" else 1)
        obs, dt = timed(svt_audit, v, n, 0)
        r = multi_run(obs.member, obs.score, delta=0.0, confidence=0.95)
        print(f"  {v}: {n:>8,} runs  {dt:6.3f} s simulate   eps >= {r.epsilon:.3f} "
              f"(claimed 1)")


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    bench_gaussian(100_000 if quick else 1_000_000)
    bench_dpsgd(10_000, 100 if quick else 1000)
    bench_svt(20_000)
