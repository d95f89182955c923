"""Cost of a training audit: the same Opacus training with and without canaries.

    PYTHONPATH=src python benchmarks/training_overhead.py [--steps 100] [--repeats 3]
        [--models digits_mlp wide_mlp]
    (also: python studies/training.py --only overhead)

Each configuration runs in a fresh process (peak RSS from ``getrusage`` is per process):
``make_private``-style Opacus training (GradSampleModule + DPOptimizer, Poisson loader,
q = 0.05) on digits for ``--steps`` steps, one torch thread, timed around the training loop
only; "canaries" adds 1,000 planted gradient canaries (``GradientCanaries``, default
shapes) attached to the optimizer, and separately reports the one-off placement (the
activity measurement of ``GradientCanaries.for_model``), also in units of one training
step.  Models: the digits MLP (64-256-10, 19k parameters) and a wide MLP
(64-1024-1024-10, 1.1M parameters).  The machine is shared: the two configurations run
interleaved ``--repeats`` times and the medians are printed, in CPU seconds of the process
(``time.process_time``, robust to other jobs) and wall-clock seconds.
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
    place = place_cpu = 0.0
    can = None
    if canaries:
        t0, c0 = time.perf_counter(), time.process_time()
        can = GradientCanaries.for_model(net, data.x_train, data.y_train, canaries,
                                         sampling_rate=q, max_grad_norm=1.0, seed=0)
        place, place_cpu = time.perf_counter() - t0, time.process_time() - c0
    gsm = GradSampleModule(net)
    opt = DPOptimizer(torch.optim.SGD(net.parameters(), lr=0.5), noise_multiplier=1.0,
                      max_grad_norm=1.0, expected_batch_size=int(q * data.n_train))
    if can is not None:
        can.attach(opt)
    loader = DPDataLoader(torch.utils.data.TensorDataset(data.x_train, data.y_train),
                          sample_rate=q, generator=torch.Generator().manual_seed(0))
    t0, c0 = time.perf_counter(), time.process_time()
    done = 0
    while done < steps:
        for xb, yb in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(gsm(xb), yb).backward()
            opt.step()
            done += 1
            if done >= steps:
                break
    train, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"model": model, "parameters": d, "canaries": canaries, "steps": steps,
            "train_seconds": train, "train_cpu": cpu, "placement_seconds": place,
            "placement_cpu": place_cpu, "peak_rss_mb": rss}


def _median(rows: list[dict[str, float]], key: str) -> float:
    import statistics

    return float(statistics.median(r[key] for r in rows))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--canaries", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models", nargs="+", default=["digits_mlp", "wide_mlp"],
                    choices=["digits_mlp", "wide_mlp"])
    ap.add_argument("--child", nargs=2, default=None)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_one(args.child[0], int(args.child[1]), args.steps)))
        return
    print(f"load average {os.getloadavg()[0]:.1f}; {args.steps} steps, {args.canaries} "
          f"canaries, medians of {args.repeats} interleaved runs")
    print("| model | parameters | loop CPU s (no canaries) | with canaries | CPU overhead "
          "| loop wall s (no) | (with) | wall overhead | peak RSS MB (no) | (with) "
          "| memory overhead | placement CPU s | placement in steps |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model in args.models:
        rows: dict[int, list[dict[str, float]]] = {0: [], args.canaries: []}
        for _ in range(args.repeats):
            for n in rows:
                out = subprocess.run([sys.executable, __file__, "--steps", str(args.steps),
                                      "--child", model, str(n)], capture_output=True,
                                     text=True, check=True, env=os.environ).stdout
                rows[n].append(json.loads(out.strip().splitlines()[-1]))
        a, b = rows[0], rows[args.canaries]
        ca, cb = _median(a, "train_cpu"), _median(b, "train_cpu")
        wa, wb = _median(a, "train_seconds"), _median(b, "train_seconds")
        ra, rb = _median(a, "peak_rss_mb"), _median(b, "peak_rss_mb")
        pc = _median(b, "placement_cpu")
        print(f"| {model} | {int(a[0]['parameters']):,} | {ca:.2f} | {cb:.2f} | "
              f"{cb / ca - 1:+.1%} | {wa:.2f} | {wb:.2f} | {wb / wa - 1:+.1%} | {ra:.0f} | "
              f"{rb:.0f} | {rb / ra - 1:+.1%} | {pc:.1f} | {pc / (ca / args.steps):.0f} |",
              flush=True)


if __name__ == "__main__":
    main()
