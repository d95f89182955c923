"""Shuffled fixed-size batches accounted as Poisson (opacus #80; Chua et al. 2024,
"Scalable DP-SGD: Shuffling vs. Poisson Subsampling", arXiv 2411.10614): can an audit see it?

    PYTHONPATH=src python studies/shuffle_vs_poisson.py [--part real|theory|all]
        [--seeds 10] [--out studies/out/shuffle.jsonl] [--samples 200000]

**real** -- the audit's power at CPU size.  Unmodified Opacus 1.6 ``make_private`` with
``poisson_sampling=False`` (a shuffled ``DataLoader`` of fixed-size batches), accounted by
Opacus's RDP accountant as Poisson sampling at q = 1 / len(loader); canaries are canary
*examples* (:class:`dpaudit.training.ExampleCanaries`: they travel through the shuffled
loader) on a digits MLP with a reserved branch; white box, lr score; the one-run audit
against the Poisson claim (its own DP-SGD family, no assumption).  A seed *detects* the flaw
statistically when the bound exceeds the claim; the claim check (batch sizes without
Binomial spread) is counted separately.  Resumable JSONL, one row per seed.

**theory** -- how big a gap there is to find, and how big an audit finds it.  The
canary of these audits (its gradient is C on a coordinate no other example moves; lower
bounds for shuffling in Chua et al., "How Private are DP-SGD Implementations?", ICML 2024,
are built on such one-coordinate instances) is released once per epoch in one of b = 1/q
batches at a uniformly random position: per epoch the auditor sees
P = N(0, sigma^2 I_b) without it and Q = (1/b) sum_j N(e_j, sigma^2 I_b) with it (in units
of C), epochs independent.  Its
privacy loss L = sum_epochs [logsumexp_j((x_j - 1/2) / sigma^2) - log b] is sampled under Q
(Monte Carlo, ``--samples``); delta(eps) = E_Q[(1 - e^(eps - L))_+] gives the shuffled
run's epsilon (an estimate of a lower bound on the true epsilon of shuffling, with a
+-2 standard-error band), against the Poisson accountant's epsilon
(``dpsgd_curve(sigma, q, T)``).  Then the size of a valid audit that would exceed the Poisson
claim with that canary, from expected counts: the classical multi-run audit (Clopper-Pearson,
95%; ``estimators.multi_run_counts``) needs m training runs per world with the optimal test
(threshold on L; TPR = P_Q(L > tau), FPR = E_Q[e^-L 1{L > tau}], the change of measure
dP/dQ = e^-L); the tight one-run audit (``estimators.tight``, null = the claim's DP-SGD
family) needs n canaries, each a worst-case canary in its own silent coordinate.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
import warnings
from pathlib import Path

import numpy as np

SIGMA, Q_INV, EPOCHS, DELTA = 1.0, 20, 15, 1e-5


# -- real runs ------------------------------------------------------------------------------
def real_run(seed: int, *, canaries: int = 256, batch_size: int = 70, steps: int = 300,
             sigma: float = SIGMA) -> dict:
    import torch
    from opacus import PrivacyEngine
    from opacus_loop import opacus_steps  # studies/opacus_loop.py
    from torch.utils.data import DataLoader, TensorDataset

    from dpaudit.training import ExampleCanaries, audit_training, load_data, make_model

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    data = load_data("digits", seed=seed, reserved=canaries)
    model = make_model("mlp", hidden=64, in_features=64, reserved=canaries, seed=seed)
    q_nominal = 1.0 / math.ceil((data.n_train + canaries / 2) / batch_size)
    can = ExampleCanaries.for_model(model, canaries, sampling_rate=q_nominal,
                                    max_grad_norm=1.0, num_classes=10, seed=seed)
    xc, yc = can.included()
    train = TensorDataset(torch.cat([data.x_train, xc]), torch.cat([data.y_train, yc]))
    engine = PrivacyEngine()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = engine.make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=1.0),
            data_loader=DataLoader(train, batch_size=batch_size, shuffle=True,
                                   generator=torch.Generator().manual_seed(seed)),
            noise_multiplier=sigma, max_grad_norm=1.0, poisson_sampling=False,
            noise_generator=torch.Generator().manual_seed(seed))
        can.attach(opt)
        opacus_steps(model, opt, loader, steps)
    q = 1.0 / len(loader)
    a = audit_training(can.bits, can.white_box_scores(), noise_multiplier=sigma,
                       sampling_rate=q, steps=can.steps, facts=can.facts(len(train)),
                       accountant=engine, seed=seed)
    return {"seed": seed, "epsilon": a.results[0].epsilon, "claimed": a.claimed_epsilon,
            "accountant_epsilon": a.accountant_epsilon, "violation": a.violation,
            "configuration_errors": a.configuration_errors, "steps": can.steps, "q": q,
            "canaries": canaries}


def run_real(out: Path, seeds: int) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    done = {}
    if out.exists():
        done = {r["seed"]: r for r in map(json.loads, out.read_text().splitlines())}
    for s in range(seeds):
        if s in done:
            continue
        t0 = time.perf_counter()
        row = {**real_run(s), "seconds": time.perf_counter() - t0}
        with out.open("a") as f:
            f.write(json.dumps(row) + "\n")
        done[s] = row
        print(json.dumps(row), flush=True)
    rows = [done[s] for s in sorted(done)]
    eps = sorted(r["epsilon"] for r in rows)
    print(f"\nshuffled fixed-size batches, {len(rows)} seeds: statistical detections "
          f"{sum(r['violation'] for r in rows)}/{len(rows)}, configuration error "
          f"{sum(bool(r['configuration_errors']) for r in rows)}/{len(rows)}; bound min / "
          f"median / max {eps[0]:.2f} / {eps[len(eps) // 2]:.2f} / {eps[-1]:.2f} vs claim "
          f"{rows[0]['claimed']:.2f} (Opacus accountant {rows[0]['accountant_epsilon']:.2f})")


# -- theory ---------------------------------------------------------------------------------
def shuffle_privacy_loss(samples: int, *, sigma: float, batches: int, epochs: int,
                         rng: np.random.Generator, shift: float = 1.0,
                         chunk: int = 20_000) -> np.ndarray:
    """Samples of the canary's privacy loss under Q (see module docstring); ``shift`` is the
    canary's effect on its batch's sum in units of C: 1 on a coordinate no other example
    moves, 2 when the slot it leaves in a fixed-size batch is filled by an example whose
    gradient is -C on that coordinate."""
    from scipy.special import logsumexp

    out = np.empty(samples)
    for s in range(0, samples, chunk):
        m = min(chunk, samples - s)
        x = sigma * rng.standard_normal((m, epochs, batches))
        x[np.arange(m)[:, None], np.arange(epochs)[None, :],
          rng.integers(0, batches, size=(m, epochs))] += shift
        out[s:s + m] = (logsumexp((shift * x - shift ** 2 / 2) / sigma ** 2, axis=2)
                        - math.log(batches)).sum(1)
    return out


def epsilon_at(loss: np.ndarray, delta: float) -> tuple[float, float, float]:
    """eps with E_Q[(1 - e^(eps - L))_+] = delta, and the eps of delta -+ 2 standard errors
    (bisection; the Monte Carlo estimate and its band)."""
    def solve(target_shift: float) -> float:
        lo, hi = 0.0, float(loss.max())
        for _ in range(80):
            mid = (lo + hi) / 2
            v = np.clip(1.0 - np.exp(mid - loss), 0.0, None)
            est = v.mean() + target_shift * v.std(ddof=1) / math.sqrt(v.size)
            lo, hi = (mid, hi) if est > delta else (lo, mid)
        return lo
    return solve(0.0), solve(-2.0), solve(2.0)


def multi_run_trials(loss: np.ndarray, claim: float, delta: float) -> dict:
    """Smallest m (trials per world, log grid) whose expected confusion matrix at the best
    threshold gives a multi-run bound above ``claim``."""
    from dpaudit import estimators as E

    taus = np.quantile(loss, 1 - np.logspace(-4.5, -0.3, 60))
    tpr = np.array([(loss > t).mean() for t in taus])
    fpr = np.array([(np.exp(-loss) * (loss > t)).mean() for t in taus])
    best = {"trials_per_world": None}
    for m in np.unique(np.logspace(2, 9, 57).astype(np.int64)):
        for t, a, b in zip(taus, tpr, fpr, strict=True):
            tp, fp = int(round(m * a)), int(round(m * b))
            if tp == 0 or math.log(max(a - delta, 1e-300) / max(b, 1e-300)) <= claim:
                continue
            r = E.multi_run_counts(tp=tp, fn=int(m) - tp, fp=fp, tn=int(m) - fp,
                                   delta=delta, confidence=0.95)
            if r.epsilon > claim:
                return {"trials_per_world": int(m), "threshold": float(t), "tpr": float(a),
                        "fpr": float(b), "epsilon": float(r.epsilon)}
    return best


def run_theory(samples: int, seed: int = 0) -> None:
    from dpaudit.curves import dpsgd_curve

    q = 1.0 / Q_INV
    steps = EPOCHS * Q_INV
    poisson = dpsgd_curve(noise_multiplier=SIGMA, sampling_rate=q, steps=steps).epsilon(DELTA)
    print(f"sigma {SIGMA}, q = 1/{Q_INV}, {EPOCHS} epochs = {steps} steps, delta {DELTA}")
    print(f"Poisson accounting (the claim): eps {poisson:.2f}")
    for shift, what in ((1.0, "silent coordinate (the audits' canaries)"),
                        (2.0, "slot refilled by a cancelling example")):
        t0 = time.perf_counter()
        loss = shuffle_privacy_loss(samples, sigma=SIGMA, batches=Q_INV, epochs=EPOCHS,
                                    rng=np.random.default_rng(seed), shift=shift)
        eps, lo, hi = epsilon_at(loss, DELTA)
        print(f"shuffled, {what}, shift {shift:g} C ({samples:,} Monte Carlo samples, "
              f"{time.perf_counter() - t0:.0f} s): eps {eps:.2f} (band {lo:.2f} - {hi:.2f}); "
              f"vs the claim {eps - poisson:+.2f} ({eps / poisson - 1:+.0%})")
        if eps > poisson:
            m = multi_run_trials(loss, poisson, DELTA)
            print(f"  multi-run audit (95% Clopper-Pearson, optimal test) above the claim: "
                  f"{m}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("real", "theory", "all"), default="all")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--samples", type=int, default=200_000)
    ap.add_argument("--out", type=Path, default=Path("studies/out/shuffle.jsonl"))
    a = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    if a.part in ("theory", "all"):
        run_theory(a.samples)
    if a.part in ("real", "all"):
        run_real(a.out, a.seeds)


if __name__ == "__main__":
    main()
