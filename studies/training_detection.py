"""Detection table: DP-SGD flaws on real Opacus 1.6 training, and false violations.

    PYTHONPATH=src python studies/training_detection.py [--out studies/out/detection.jsonl]
        [--seeds 10] [--correct-seeds 20] [--only flaws|correct|own_loop|summary]

Every run is the own-loop default of ``dpaudit.training`` -- planted gradient canaries of
the default shape (``shapes="mixed"``: 3 tensors x 2 coordinates each), white box, lr score --
on an MLP (80 hidden units) with a reserved branch (``reserved=32``: silent coordinates in
three tensors), 500 canaries, sigma = 1, q = 0.05, T = 300, C = 1, delta = 1e-5 (claimed
epsilon 5.80).  A flaw is *detected* when the one-run audit's epsilon lower bound (tight,
95%, the claim's own DP-SGD null family -- no assumption) exceeds the claim; every run's
per-canary scores are stored, so other families can be re-audited without training again;
configuration errors (the deterministic claim checks) are counted
separately.  Correct training: 20 seeds on each of digits, breast_cancer and wine
(``--reserved 256``
gives the dense tabular models enough silent coordinates for 500 six-coordinate canaries).
``--only own_loop``: the hand-written ``torch.func`` loop of docs/training.md with its
default canaries (:func:`own_loop_run`), correct and with per-tensor clipping, ``--seeds``
seeds each.  Each run is appended to the JSONL file when it finishes; a re-run skips
finished runs; ``--only summary`` prints the table from the JSONL files ``<out>``,
``<out>_correct`` and ``<out>_own_loop``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from dpaudit.training import TrainingConfig, train_audit

FLAWS = ("per_tensor_clipping", "wrong_clip_noise", "lowered_sigma", "too_few_steps",
         "batch_sum_clipping")
DATA = ("digits", "breast_cancer", "wine")
BASE = dict(canaries=500, hidden=80, steps=300, reserved=32, shapes="mixed",
            noise_multiplier=1.0, sampling_rate=0.05)


def _run(out: Path, key: str, cfg: TrainingConfig) -> None:
    t0 = time.perf_counter()
    a = train_audit(cfg)
    row = {"id": key, "flaw": cfg.flawed, "data": cfg.data, "seed": cfg.seed,
           "epsilon": a.results[0].epsilon, "claimed": a.claimed_epsilon,
           "violation": a.violation, "configuration_errors": a.configuration_errors,
           "accountant_epsilon": a.accountant_epsilon, "test_accuracy": a.run.test_accuracy,
           "family": a.settings.get("family"), "seconds": time.perf_counter() - t0,
           "member": a.run.member.astype(int).tolist(), "score": a.run.score.tolist()}
    _write(out, row)


def _run_own_loop(out: Path, key: str, flaw: str | None, data: str, seed: int) -> None:
    t0 = time.perf_counter()
    a = own_loop_run(seed, per_tensor=flaw == "per_tensor_clipping", data_name=data,
                     **OWN_LOOP)
    obs = a.observations
    row = {"id": key, "flaw": f"own_loop:{flaw or 'none'}", "data": data, "seed": seed,
           "epsilon": a.results[0].epsilon, "claimed": a.claimed_epsilon,
           "violation": a.violation, "configuration_errors": a.configuration_errors,
           "accountant_epsilon": None, "test_accuracy": None,
           "family": a.settings.get("family"), "seconds": time.perf_counter() - t0,
           "member": np.asarray(obs.member).astype(int).tolist(),
           "score": np.asarray(obs.score).tolist()}
    _write(out, row)


def _write(out: Path, row: dict) -> None:
    with out.open("a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps({k: v for k, v in row.items() if k not in ("member", "score")}),
          flush=True)


OWN_LOOP = dict(canaries=500, hidden=80, steps=300, reserved=32, noise_multiplier=1.0,
                sampling_rate=0.05, learning_rate=2.0)


def own_loop_run(seed: int, *, per_tensor: bool, data_name: str = "digits",
                 canaries: int = 500, hidden: int = 80, steps: int = 300, reserved: int = 32,
                 noise_multiplier: float = 1.0, sampling_rate: float = 0.05,
                 learning_rate: float = 2.0, max_grad_norm: float = 1.0):
    """The hand-written ``torch.func`` DP-SGD loop of docs/training.md ("A hand-written
    DP-SGD loop"), with the recipe's DEFAULT canaries (``plan_gradient_canaries`` with its
    default shapes), at the detection table's size.  ``per_tensor``: the mistake -- each
    parameter tensor's slice of a per-example gradient is clipped to C on its own (the
    released sum's sensitivity becomes C sqrt(L) with L tensors).  Returns the audit."""
    from torch import nn
    from torch.func import functional_call, grad, vmap

    from dpaudit.canaries import (
        Layout,
        WhiteBoxAccumulator,
        plan_gradient_canaries,
        sample_steps,
    )
    from dpaudit.training import audit_training, coordinate_activity, load_data, make_model

    C, sigma, q, T = max_grad_norm, noise_multiplier, sampling_rate, steps
    data = load_data(data_name, seed=seed, reserved=reserved)
    torch.manual_seed(seed)
    model = make_model("mlp", seed=seed, hidden=hidden,
                       in_features=data.x_train.shape[1] - reserved,
                       num_classes=data.num_classes, reserved=reserved)
    names = [k for k, _ in model.named_parameters()]
    params = {k: v.detach().clone() for k, v in model.named_parameters()}
    layout = Layout.from_sizes([v.numel() for v in params.values()], names)
    bounds = np.concatenate([[0], np.cumsum(layout.sizes)])

    rng = np.random.default_rng(seed)
    activity = coordinate_activity(model, data.x_train, data.y_train, C)
    plan = plan_gradient_canaries(layout, activity, canaries, sampling_rate=q, rng=rng)
    acc = WhiteBoxAccumulator(plan.n, sampling_rate=q, amplitude=plan.amplitude)

    def loss(p, x, y):
        return nn.functional.cross_entropy(functional_call(model, p, (x[None],)), y[None])

    per_example = vmap(grad(loss), in_dims=(None, 0, 0))
    gen = torch.Generator().manual_seed(seed)
    for _ in range(T):
        batch = torch.rand(data.n_train, generator=gen) < q
        g = per_example(params, data.x_train[batch], data.y_train[batch])
        flat = torch.cat([g[k].reshape(g[k].shape[0], -1) for k in names], dim=1)
        active = np.flatnonzero(sample_steps(plan.bits, q, rng)[0])
        rows = torch.zeros((active.size, layout.dimension), dtype=flat.dtype)
        rows.index_put_((torch.arange(active.size).repeat_interleave(plan.plant_coords.shape[1]),
                         torch.from_numpy(plan.plant_coords[active].ravel())),
                        torch.from_numpy(plan.plant_values[active].ravel() * C).to(flat.dtype),
                        accumulate=True)
        flat = torch.cat([flat, rows])
        if per_tensor:   # the mistake: each tensor's slice clipped to C on its own
            clipped = torch.cat([
                s * (C / (s.norm(dim=1, keepdim=True) + 1e-6)).clamp(max=1.0)
                for s in (flat[:, a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True))],
                dim=1)
        else:
            clipped = flat * (C / (flat.norm(dim=1, keepdim=True) + 1e-6)).clamp(max=1.0)
        noisy_sum = clipped.sum(0) + sigma * C * torch.randn(layout.dimension, generator=gen)
        acc.add(plan.read_flat(noisy_sum.double().numpy()) / C, sigma)
        update = noisy_sum / (q * data.n_train)
        for k, a, b in zip(names, bounds[:-1], bounds[1:], strict=True):
            params[k] -= learning_rate * update[a:b].view_as(params[k])
    return audit_training(plan.bits, acc.scores("lr"), noise_multiplier=sigma,
                          sampling_rate=q, steps=T, seed=seed)


def summarise(out: Path) -> None:
    rows = []
    base = out.stem.removesuffix("_correct").removesuffix("_own_loop")
    for suffix in ("", "_correct", "_own_loop"):
        path = out.with_name(base + suffix + out.suffix)
        if path.exists():
            rows += [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["flaw"] or "none", r["data"]), []).append(r)
    print("| flaw | data | seeds | violations | configuration error | min / median eps "
          "| claim | s / run |")
    print("|---|---|---|---|---|---|---|---|")
    for (flaw, data), rs in sorted(groups.items()):
        eps = sorted(r["epsilon"] for r in rs)
        print(f"| {flaw} | {data} | {len(rs)} | {sum(r['violation'] for r in rs)}/{len(rs)} | "
              f"{sum(bool(r['configuration_errors']) for r in rs)}/{len(rs)} | "
              f"{eps[0]:.2f} / {eps[len(eps) // 2]:.2f} | {rs[0]['claimed']:.2f} | "
              f"{sum(r['seconds'] for r in rs) / len(rs):.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=Path("studies/out/detection.jsonl"))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--correct-seeds", type=int, default=20)
    ap.add_argument("--only", choices=("flaws", "correct", "own_loop", "summary"), default=None)
    ap.add_argument("--reserved", type=int, default=BASE["reserved"],
                    help="reserved features of the correct runs")
    args = ap.parse_args()
    torch.set_num_threads(1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if args.out.exists():
        done = {json.loads(x)["id"] for x in args.out.read_text().splitlines() if x.strip()}
    print(f"load average {os.getloadavg()[0]:.1f}")
    jobs = []
    if args.only in (None, "flaws"):
        jobs += [(f"{f}/digits/{s}", TrainingConfig(**BASE, flawed=f, seed=s))
                 for s in range(args.seeds) for f in FLAWS]
    if args.only in (None, "correct"):
        base = {**BASE, "reserved": args.reserved}
        jobs += [(f"none/{d}/{s}", TrainingConfig(**base, data=d, seed=s))
                 for s in range(args.correct_seeds) for d in DATA]
    for key, cfg in jobs:
        if key not in done:
            _run(args.out, key, cfg)
    if args.only in (None, "own_loop"):
        for s in range(args.seeds):
            for flaw in ("per_tensor_clipping", None):
                key = f"own_loop/{flaw or 'none'}/digits/{s}"
                if key not in done:
                    _run_own_loop(args.out, key, flaw, "digits", s)
    summarise(args.out)


if __name__ == "__main__":
    main()
