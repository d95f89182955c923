"""The gradient canaries' placement and step hooks on an accelerator: correctness and cost.

    PYTHONPATH=src python benchmarks/placement_device.py --device cuda [--out FILE]
        [--width 2048] [--examples 4096] [--repeats 3]

Three parts, each printed as one JSON line (and written to ``--out``):

* ``factorised``: ``linear_activity.clipped_square_sums`` on the device against per-example
  gradients computed independently there (``torch.func``, float64), for the digits MLP at
  C = 0.05, 1, 100: the largest relative difference, and the silent coordinates;
* ``activity``: ``coordinate_activity`` of the digits MLP on the device against the same on
  the CPU (relative difference, same silent set), and the CPU seconds and wall seconds
  (device synchronised) of the full measurement (``examples=None``) on a wide MLP
  (64-width-width-10, ``--examples`` examples), factorised and by per-example gradients
  (the factorisation forced off), medians of ``--repeats``;
* ``training``: 1,000 gradient canaries (``GradientCanaries.for_model``) on the digits MLP on
  the device, attached to an Opacus ``DPOptimizer`` for 300 steps (q = 0.05, sigma = 1,
  C = 1), against the same run without canaries (interleaved ``--repeats`` times, medians):
  the wall-clock overhead, placement included, and what the canaries read -- the
  released-noise record's per-step noise against sigma C, the contribution estimate (1
  under correct clipping), the white-box scores of included against excluded canaries --
  the CPU path's checks, run where the tensors live on the device (index_add_ planting,
  gathers by index_select).

Needs torch, Opacus and scikit-learn (the digits); nothing is downloaded.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "studies"))
from opacus_loop import device_sync as _sync  # noqa: E402  (studies/opacus_loop.py)


def _mlp(widths: list[int], device: str):  # type: ignore[no-untyped-def]
    from torch import nn

    layers: list[nn.Module] = []
    for a, b in zip(widths[:-1], widths[1:], strict=True):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1]).to(device)


def _reference(model, x, y, clip: float):  # type: ignore[no-untyped-def]
    """sum_i (f_i g_i)^2 from per-example gradients (vmap of grad, float64)."""
    import torch
    from torch.func import functional_call, grad, vmap

    names = [k for k, v in model.named_parameters() if v.requires_grad]
    params = {k: v.detach().double() for k, v in model.named_parameters()}

    def loss(p, xi, yi):  # type: ignore[no-untyped-def]
        out = functional_call(model, p, (xi.unsqueeze(0),))
        return torch.nn.functional.cross_entropy(out, yi.unsqueeze(0))

    g = vmap(grad(loss), in_dims=(None, 0, 0))(params, x.double(), y)
    rows = torch.cat([g[k].reshape(x.shape[0], -1) for k in names], dim=1)
    f = (clip / (rows.norm(dim=1, keepdim=True) + 1e-6)).clamp(max=1.0)
    return ((rows * f) ** 2).sum(dim=0).cpu().numpy()


def factorised(device: str) -> dict[str, Any]:
    import numpy as np
    import torch

    from dpaudit.training import load_data
    from dpaudit.training.linear_activity import clipped_square_sums

    d = load_data("digits", 0)
    torch.manual_seed(0)
    model = _mlp([64, 256, 10], device)
    x, y = d.x_train[:512].to(device), d.y_train[:512].to(device)
    out: dict[str, Any] = {"part": "factorised", "device": device}
    for clip in (0.05, 1.0, 100.0):
        got = clipped_square_sums(model, x, y, clip)
        want = _reference(model, x, y, clip)
        assert got is not None
        out[f"rel_diff_C{clip:g}"] = float(np.max(np.abs(got - want)) / want.max())
        out[f"same_silent_C{clip:g}"] = bool(np.array_equal(got == 0, want == 0))
    out["silent"] = int((got == 0).sum())
    return out


def activity(device: str, width: int, examples: int, repeats: int) -> dict[str, Any]:
    import numpy as np
    import torch

    from dpaudit.training import canaries as module
    from dpaudit.training import coordinate_activity, load_data

    d = load_data("digits", 0)
    torch.manual_seed(0)
    small = _mlp([64, 256, 10], "cpu")
    on_cpu = coordinate_activity(small, d.x_train, d.y_train, 1.0)
    on_dev = coordinate_activity(small.to(device), d.x_train, d.y_train, 1.0)
    out: dict[str, Any] = {
        "part": "activity", "device": device,
        "digits_rel_diff_vs_cpu": float(np.max(np.abs(on_dev - on_cpu)) / on_cpu.max()),
        "digits_same_silent_as_cpu": bool(np.array_equal(on_dev == 0, on_cpu == 0)),
        "wide": f"64-{width}-{width}-10", "examples": examples}
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(examples, 64, generator=gen)
    y = torch.randint(0, 10, (examples,), generator=gen)
    wide = _mlp([64, width, width, 10], device)
    original = module.clipped_square_sums
    for label, fn in (("factorised", original), ("per_example", lambda *a, **k: None)):
        module.clipped_square_sums = fn  # type: ignore[assignment]
        cpu, wall = [], []
        try:
            for _ in range(repeats):
                _sync(device)
                c0, t0 = time.process_time(), time.perf_counter()
                coordinate_activity(wide, x, y, 1.0, examples=None)
                _sync(device)
                cpu.append(time.process_time() - c0)
                wall.append(time.perf_counter() - t0)
        finally:
            module.clipped_square_sums = original
        out[f"{label}_cpu_s"] = statistics.median(cpu)
        out[f"{label}_wall_s"] = statistics.median(wall)
    return out


def _loop(device: str, canaries: bool, steps: int = 300,
          hidden: tuple[int, ...] = (256,)) -> dict[str, Any]:
    """One audited (or plain) Opacus run of the digits MLP on ``device``: its placement and
    loop times, and with canaries what they read."""
    import numpy as np
    import torch
    from opacus import GradSampleModule
    from opacus.data_loader import DPDataLoader
    from opacus.optimizers import DPOptimizer
    from opacus_loop import opacus_steps  # studies/opacus_loop.py, the studies' loop

    from dpaudit.training import GradientCanaries, load_data

    d = load_data("digits", 0)
    torch.manual_seed(0)
    net = _mlp([64, *hidden, 10], device)
    x, y = d.x_train.to(device), d.y_train.to(device)
    q = 0.05
    out: dict[str, Any] = {}
    can = None
    if canaries:
        _sync(device)
        c0, t0 = time.process_time(), time.perf_counter()
        can = GradientCanaries.for_model(net, x, y, 1000, sampling_rate=q, max_grad_norm=1.0,
                                         seed=0)
        _sync(device)
        out.update(placement_cpu_s=time.process_time() - c0,
                   placement_wall_s=time.perf_counter() - t0)
    gsm = GradSampleModule(net)
    opt = DPOptimizer(torch.optim.SGD(net.parameters(), lr=0.5), noise_multiplier=1.0,
                      max_grad_norm=1.0, expected_batch_size=int(q * len(x)))
    if can is not None:
        can.attach(opt)
    loader = DPDataLoader(torch.utils.data.TensorDataset(x, y), sample_rate=q,
                          generator=torch.Generator().manual_seed(0))  # the sampler's, on the CPU
    _sync(device)
    c0, t0 = time.process_time(), time.perf_counter()
    opacus_steps(gsm, opt, loader, steps)
    if can is not None:
        can.white_box_scores()                  # the readings the hook still holds
    _sync(device)
    out.update(loop_cpu_s=time.process_time() - c0, loop_wall_s=time.perf_counter() - t0)
    if can is not None:
        scores = can.white_box_scores()
        rec = can.noise_record()
        contribution = rec["contribution"][0] if rec["contribution"] else None
        noise_var = rec["noise_sum_squares"] / max(1, rec["noise_coordinates"])
        out.update(
            steps=can.steps, scores_finite=bool(np.isfinite(scores).all()),
            score_included_minus_excluded=float(scores[can.bits].mean()
                                                - scores[~can.bits].mean()),
            noise_sd_over_sigma_C_median=float(np.median(np.sqrt(noise_var))),
            contribution_estimate=(None if contribution is None else
                                   contribution.planted_sum / contribution.amplitude_sum))
    return out


def training(device: str, repeats: int, hidden: tuple[int, ...] = (256,)) -> dict[str, Any]:
    """The audited run against the same run without canaries (interleaved, medians): the
    cost on ``device``, placement included, and what the canaries read there."""
    plain, audited = [], []
    _loop(device, False, steps=20, hidden=hidden)  # warm-up: kernels, allocator
    for _ in range(repeats):
        plain.append(_loop(device, False, hidden=hidden))
        audited.append(_loop(device, True, hidden=hidden))
    med = {k: statistics.median(r[k] for r in audited) for k in
           ("placement_cpu_s", "placement_wall_s", "loop_cpu_s", "loop_wall_s")}
    base = {k: statistics.median(r[k] for r in plain) for k in ("loop_cpu_s", "loop_wall_s")}
    last = audited[-1]
    return {"part": "training", "device": device, "repeats": repeats,
            "model": "-".join(str(w) for w in (64, *hidden, 10)),
            "plain_loop_wall_s": base["loop_wall_s"], "plain_loop_cpu_s": base["loop_cpu_s"],
            **{f"audited_{k}": v for k, v in med.items()},
            "wall_overhead_placement_included": (med["placement_wall_s"] + med["loop_wall_s"])
            / base["loop_wall_s"] - 1,
            **{k: last[k] for k in ("steps", "scores_finite", "score_included_minus_excluded",
                                    "noise_sd_over_sigma_C_median", "contribution_estimate")}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--examples", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--parts", nargs="*", default=["factorised", "activity", "training"])
    ap.add_argument("--hidden", type=int, nargs="*", default=[256],
                    help="hidden widths of the training part's MLP (digits)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    info = {"part": "device", "device": args.device, "torch": torch.__version__,
            "name": (torch.cuda.get_device_name(0) if args.device.startswith("cuda")
                     else "cpu")}
    rows = [info]
    print(json.dumps(info), flush=True)
    for part in args.parts:
        if part == "factorised":
            row = factorised(args.device)
        elif part == "activity":
            row = activity(args.device, args.width, args.examples, args.repeats)
        else:
            row = training(args.device, args.repeats, tuple(args.hidden))
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out is not None:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
