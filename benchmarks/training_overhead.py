"""Cost of a training audit: the same Opacus training with and without canaries.

    PYTHONPATH=src python benchmarks/training_overhead.py [--steps 100]
    (also: python benchmarks/training.py --only overhead)

Each configuration runs in a fresh process (peak RSS from ``getrusage`` is per process):
``make_private``-style Opacus training (GradSampleModule + DPOptimizer, Poisson loader,
q = 0.05) on digits for ``--steps`` steps, one torch thread, timed around the training loop
only; "canaries" adds planted gradient canaries (``GradientCanaries``, default shapes)
attached to the optimizer, and separately reports the one-off placement (the activity
measurement of ``GradientCanaries.for_model``).  Models: the digits MLP (64-256-10, 19k
parameters) and a wide MLP (64-1024-1024-10, 1.1M parameters).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time


def _one(model: str, canaries: int, steps: int) -> dict[str, float]:
    import warnings

    import torch
    from opacus import GradSampleModule
    from opacus.data_loader import DPDataLoader
    from opacus.optimizers import DPOptimizer
    from torch import nn

    from dpaudit.training import GradientCanaries, load_data

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    data = load_data("digits", 0)
    torch.manual_seed(0)
    widths = [64, 256, 10] if model == "digits_mlp" else [64, 1024, 1024, 10]
    layers: list[nn.Module] = []
    for a, b in zip(widths[:-1], widths[1:], strict=True):
        layers += [nn.Linear(a, b), nn.ReLU()]
    net = nn.Sequential(*layers[:-1])
    d = sum(p.numel() for p in net.parameters())
    q = 0.05
    place = 0.0
    can = None
    if canaries:
        t0 = time.perf_counter()
        can = GradientCanaries.for_model(net, data.x_train, data.y_train, canaries,
                                         sampling_rate=q, max_grad_norm=1.0, seed=0)
        place = time.perf_counter() - t0
    gsm = GradSampleModule(net)
    opt = DPOptimizer(torch.optim.SGD(net.parameters(), lr=0.5), noise_multiplier=1.0,
                      max_grad_norm=1.0, expected_batch_size=int(q * data.n_train))
    if can is not None:
        can.attach(opt)
    loader = DPDataLoader(torch.utils.data.TensorDataset(data.x_train, data.y_train),
                          sample_rate=q, generator=torch.Generator().manual_seed(0))
    t0 = time.perf_counter()
    done = 0
    while done < steps:
        for xb, yb in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(gsm(xb), yb).backward()
            opt.step()
            done += 1
            if done >= steps:
                break
    train = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"model": model, "parameters": d, "canaries": canaries, "steps": steps,
            "train_seconds": train, "placement_seconds": place, "peak_rss_mb": rss}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--canaries", type=int, default=1000)
    ap.add_argument("--child", nargs=2, default=None)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_one(args.child[0], int(args.child[1]), args.steps)))
        return
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| model | parameters | training s (no canaries) | with canaries | time overhead "
          "| peak RSS MB (no) | (with) | memory overhead | placement s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for model in ("digits_mlp", "wide_mlp"):
        rows = []
        for n in (0, args.canaries):
            out = subprocess.run([sys.executable, __file__, "--steps", str(args.steps),
                                  "--child", model, str(n)], capture_output=True, text=True,
                                 check=True, env=os.environ).stdout
            rows.append(json.loads(out.strip().splitlines()[-1]))
        a, b = rows
        print(f"| {model} | {a['parameters']:,} | {a['train_seconds']:.2f} | "
              f"{b['train_seconds']:.2f} | {b['train_seconds'] / a['train_seconds'] - 1:+.1%} | "
              f"{a['peak_rss_mb']:.0f} | {b['peak_rss_mb']:.0f} | "
              f"{b['peak_rss_mb'] / a['peak_rss_mb'] - 1:+.1%} | {b['placement_seconds']:.1f} |",
              flush=True)


if __name__ == "__main__":
    main()
