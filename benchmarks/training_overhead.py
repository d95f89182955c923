"""Cost of a training audit: the same Opacus training with and without canaries.

    PYTHONPATH=src python benchmarks/training_overhead.py [--steps 300] [--repeats 3]
        [--models digits_mlp cnn transformer] [--activity-examples N | --full-placement]
        [--default-allocator] [--baseline-rev REV] [--branch auto|never|always]
        [--device cuda]
    PYTHONPATH=src python benchmarks/training_overhead.py --branch-cost [WIDTH ...]
    (also: python studies/training.py --only overhead)

``--branch-cost``: the canary branch's own training cost, no canaries (the plain loop
against the loop on the model wrapped in a ``CanaryBranch`` of each width).

Each configuration runs in a fresh process (peak RSS from ``getrusage`` is per process):
``make_private``-style Opacus training (GradSampleModule + DPOptimizer, Poisson loader,
q = 0.05, SGD, sigma = 1, C = 1) for ``--steps`` steps, one torch thread; "canaries" adds
1,000 planted gradient canaries (``GradientCanaries.for_model``, default shapes and
placement) attached to the optimizer.  The headline is the whole audited run against the
same training without canaries: (placement + loop with canaries) / (loop without) - 1, in
CPU seconds of the process (``time.process_time``, robust to the other jobs of a shared
machine) and wall-clock seconds.  The canaries' process also times the audit statistics
after training (``white_box_scores``, ``facts`` with the released-noise record, the claim
checks with the released-noise check, ``audit_training`` end to end), and the CPU seconds of
the canaries' own work inside the loop (their Poisson draw, the planting, the read of each
released step; ``_time_hooks``): with the placement, the audit's cost measured directly,
"placement + hooks / loop", apart from the run-to-run spread of the whole loop on a shared
machine.

The canaries' model (``--branch``): by default what the documented recipe and ``train-audit``
do -- ``canary_branch_if_needed`` wraps a model with fewer silent coordinates than canaries in
a :class:`~dpaudit.training.CanaryBranch` (the CNN and the transformer here: no coordinate is
silent), so the decision's activity measurement counts in the placement and the branch's
parameters in the loop with canaries; ``never`` plants on the model itself (the earlier
tables), ``always`` wraps every model.  The plain training is always the model itself.

Models: the digits MLP (64-256-10, 19k parameters), and the digits CNN (Conv2d(1, 8, 3) ->
Linear(288, 10)) and the stock ``nn.TransformerEncoderLayer`` text model (dropout 0.1,
after ``ModuleValidator.fix``, 1,000 token sequences) of ``studies/training_own_models.py``
(imported from there); ``wide_mlp`` (64-1024-1024-10, 1.1M parameters) and ``wide_cnn``
(two 3 x 3 convolutions of 32 and 64 channels and a linear head on the same images, 59,786
parameters: the canary branch's share of the per-example work falls with the model's size)
on request.  The
configurations run interleaved ``--repeats`` times; medians are printed, and beside the
direct measure its minimum over the repeats (the other jobs of a shared machine only add CPU
time, so the minimum is the least disturbed figure).

The allocator.  Every child runs with the same fixed glibc malloc settings
(:data:`ALLOCATOR`: ``MALLOC_MMAP_THRESHOLD_`` 32 MiB, ``MALLOC_TRIM_THRESHOLD_`` 128 MiB),
unless ``--default-allocator`` (glibc's variables: another C library ignores them, and the
printed page faults show whether they took effect).  Under glibc's defaults the thresholds
adapt to the largest block freed so far: the plain digits-MLP loop hands its
per-sample-gradient buffers back to the kernel (mmap'd, then unmapped or trimmed) and faults
them in again at every step -- 175,000-190,000 minor page faults, ~0.3 s of system CPU in
300 steps -- while in the canaries' process the placement's large buffers raise the
thresholds first and its loop has about 15,000 faults: the loop with canaries then ran ~0.3
s *faster* than the one without, and the ratio flattered the canaries by that much.  With
the thresholds fixed both processes keep their buffers (about 5,000 faults in the plain
loop, 150 with canaries; printed: minor page faults and user / system CPU of the loop, from
``getrusage``), and the comparison is the canaries' cost, not the allocator's heuristics.
``--baseline-rev REV`` adds a third configuration, the canaries on that commit's ``src/``
(``git archive``), interleaved with the others: before and after in one sitting.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MODELS = ("digits_mlp", "cnn", "transformer", "wide_mlp", "wide_cnn")
_STUDIES = Path(__file__).resolve().parent.parent / "studies"
sys.path.insert(0, str(_STUDIES))
from opacus_loop import device_sync as _sync  # noqa: E402  (studies/opacus_loop.py)

#: the fixed glibc malloc settings of every child (module docstring): fixed thresholds, so
#: that neither process's loop returns its per-step buffers to the kernel at every step
ALLOCATOR = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(128 << 20)}
_RUSAGE = ("ru_minflt", "ru_majflt", "ru_utime", "ru_stime")


def _rusage() -> dict[str, float]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return {k: float(getattr(r, k)) for k in _RUSAGE}


def _since(before: dict[str, float], prefix: str) -> dict[str, float]:
    """The process's page faults and user / system CPU since ``before``, keys ``prefix_*``."""
    now = _rusage()
    return {f"{prefix}_{k[3:]}": now[k] - before[k] for k in _RUSAGE}


def _setup(model: str):  # type: ignore[no-untyped-def]
    """(network, x, y) of one benchmark model."""
    import torch
    from torch import nn

    if model in ("cnn", "transformer", "wide_cnn"):
        import training_own_models as own  # the study's models and data, not a copy

        x, y = own._data("transformer" if model == "transformer" else "cnn", 0)
        torch.manual_seed(0)
        if model == "wide_cnn":      # the digits' 8 x 8 images, 59,786 parameters
            return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.Flatten(),
                                 nn.Linear(64 * 8 * 8, 10)), x, y
        return own._model(model), x, y
    from dpaudit.training import load_data

    data = load_data("digits", 0)
    torch.manual_seed(0)
    widths = [64, 256, 10] if model == "digits_mlp" else [64, 1024, 1024, 10]
    layers: list[nn.Module] = []
    for a, b in zip(widths[:-1], widths[1:], strict=True):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1]), data.x_train, data.y_train


def _warm(net, x, y, device: str) -> None:  # type: ignore[no-untyped-def]
    """A few forward and backward passes of a copy of ``net`` on ``device`` (and a
    per-example gradient pass through Opacus), outside every timed span."""
    import copy

    import torch
    from opacus import GradSampleModule

    twin = GradSampleModule(copy.deepcopy(net))
    for _ in range(3):
        out = twin(x[:64].to(device))
        torch.nn.functional.cross_entropy(out, y[:64].to(device)).backward()
    del twin
    _sync(device)


def _least_branch(model, coordinates: int):  # type: ignore[no-untyped-def]
    """The least a canary branch can be under Opacus, for ``--branch-cost``: one module
    (``Linear(1, w)``, its weight and bias: ``coordinates`` in all, one per Dirac canary) whose
    outputs are summed and gated off like :class:`~dpaudit.training.CanaryBranch`'s.  Not a
    design the library ships: it bounds what any branch holding that many coordinates costs."""
    import torch
    from torch import nn

    class Least(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.canary_branch = nn.Linear(1, max(1, coordinates // 2))
            self.model = model
            self.register_buffer("gate", torch.zeros(()), persistent=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = self.model(x)
            ones = torch.ones((out.shape[0], 1), dtype=out.dtype, device=out.device)
            return out + self.gate * self.canary_branch(ones).sum(1, keepdim=True)

    return Least().to(next(model.parameters()).device)


def _one(model: str, canaries: int, steps: int, examples: int | None,
         branch: str = "auto", device: str = "cpu",
         branch_width: int | None = None) -> dict[str, Any]:
    import warnings

    import torch
    from opacus import GradSampleModule
    from opacus.data_loader import DPDataLoader
    from opacus.optimizers import DPOptimizer
    from opacus_loop import opacus_steps  # studies/opacus_loop.py, the studies' loop

    from dpaudit.canaries import Claim, check_claim
    from dpaudit.training import (
        CanaryBranch,
        GradientCanaries,
        audit_training,
        canary_branch_if_needed,
        with_canary_branch,
    )

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    net, x, y = _setup(model)
    net = net.to(device)     # the data stay on the CPU; each batch goes to the device
    if device != "cpu":      # the device's start-up (context, kernels' first loads) belongs
        _warm(net, x, y, device)  # to neither measurement
    d = sum(p.numel() for p in net.parameters() if p.requires_grad)
    if branch_width is not None:     # --branch-cost: the branch alone, no canaries
        net = (with_canary_branch(net, 1, width=branch_width) if branch_width > 0
               else _least_branch(net, -branch_width))
    q = 0.05
    place = place_cpu = 0.0
    can = None
    usage: dict[str, float] = {}
    if canaries:
        t0, c0, r0 = time.perf_counter(), time.process_time(), _rusage()
        # the recipe's branch decision (and the branch) belong to the audit's cost
        if branch == "auto":
            net = canary_branch_if_needed(net, x, y, canaries, max_grad_norm=1.0, seed=0)
        elif branch == "always":
            net = with_canary_branch(net, canaries)
        can = GradientCanaries.for_model(net, x, y, canaries, sampling_rate=q,
                                         max_grad_norm=1.0, seed=0,
                                         activity_examples=examples)
        _sync(device)
        place, place_cpu = time.perf_counter() - t0, time.process_time() - c0
        usage.update(_since(r0, "placement"))
    gsm = GradSampleModule(net)
    opt = DPOptimizer(torch.optim.SGD(net.parameters(), lr=0.5), noise_multiplier=1.0,
                      max_grad_norm=1.0, expected_batch_size=int(q * len(x)))
    hooks = [0.0]
    if can is not None:
        can.attach(opt)
        _time_hooks(can, hooks)
    loader = DPDataLoader(torch.utils.data.TensorDataset(x, y), sample_rate=q,
                          generator=torch.Generator().manual_seed(0))
    _sync(device)
    t0, c0, r0 = time.perf_counter(), time.process_time(), _rusage()
    opacus_steps(gsm, opt, loader, steps, device=None if device == "cpu" else device)
    if can is not None and hasattr(can, "_flush"):  # the readings the hook still holds
        c1 = time.process_time()
        can._flush()
        hooks[0] += time.process_time() - c1
    _sync(device)
    train, cpu = time.perf_counter() - t0, time.process_time() - c0
    usage.update(_since(r0, "loop"))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out: dict[str, Any] = {
        "model": model, "parameters": d, "canaries": canaries, "steps": steps,
        "train_seconds": train, "train_cpu": cpu, "placement_seconds": place,
        "placement_cpu": place_cpu, "peak_rss_mb": rss, "hooks_cpu": hooks[0], **usage,
        "branch": isinstance(net, CanaryBranch), "device": device,
        "allocator": {k: os.environ.get(k) for k in ALLOCATOR}}
    if can is not None:
        c0 = time.process_time()
        scores = can.white_box_scores()
        c1 = time.process_time()
        facts = can.facts(len(x))
        c2 = time.process_time()
        check_claim(Claim(1.0, q, can.steps, 1.0), facts)
        c3 = time.process_time()
        audit_training(can.bits, scores, noise_multiplier=1.0, sampling_rate=q,
                       steps=can.steps, facts=facts, max_grad_norm=1.0, seed=0)
        c4 = time.process_time()
        out.update(scores_cpu=c1 - c0, facts_cpu=c2 - c1, checks_cpu=c3 - c2,
                   audit_cpu=c4 - c3, statistics_cpu=c4 - c0)
    return out


def _time_hooks(can: object, total: list[float]) -> None:
    """Add the CPU seconds of the canaries' own work inside the loop (their Poisson draw,
    the planting, the read of the released step) to ``total[0]``: the step hook's cost
    measured directly, apart from the run-to-run spread of the whole loop."""
    def timed(f: Callable[..., Any]) -> Callable[..., Any]:
        def run(*a: Any, **k: Any) -> Any:
            c0 = time.process_time()
            try:
                return f(*a, **k)
            finally:
                total[0] += time.process_time() - c0
        return run

    for name in ("_draw", "_add_clipped", "_plant", "_record"):
        setattr(can, name, timed(getattr(can, name)))


def _median(rows: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in rows))


def _direct(rows: list[dict[str, Any]]) -> list[float]:
    """Per run, the canaries' CPU seconds measured directly: placement + hooks."""
    return [r["placement_cpu"] + r["hooks_cpu"] for r in rows]


def _run_child(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--canaries", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--models", nargs="+", default=["digits_mlp", "cnn", "transformer"],
                    choices=MODELS)
    ap.add_argument("--activity-examples", type=int, default=None,
                    help="per-example gradients of the placement (default: for_model's)")
    ap.add_argument("--full-placement", action="store_true",
                    help="the placement on every example (activity_examples=None)")
    ap.add_argument("--default-allocator", action="store_true",
                    help="run the children with glibc's default (adaptive) malloc thresholds "
                         "instead of the fixed ALLOCATOR settings")
    ap.add_argument("--baseline-rev", default=None,
                    help="also run the canaries on this commit's src/ (before / after)")
    ap.add_argument("--branch", choices=("auto", "never", "always"), default="auto",
                    help="the canaries' model: auto (the documented recipe and train-audit's "
                         "default: canary_branch_if_needed, a CanaryBranch on a model short of "
                         "silent coordinates), never, or always; the plain training is the "
                         "model itself")
    ap.add_argument("--device", default="cpu",
                    help="where the model trains (e.g. cuda); on an accelerator compare the "
                         "wall-clock columns (its CPU time includes waiting for the device)")
    ap.add_argument("--branch-cost", type=int, nargs="*", default=None, metavar="WIDTH",
                    help="instead of the canaries: the plain loop against the same loop on the "
                         "model wrapped in a CanaryBranch of each WIDTH (no canaries; default "
                         "widths 1, canaries / 3, 2 canaries, 3 canaries): the branch's own "
                         "training cost")
    ap.add_argument("--branch-width", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child", nargs=2, default=None)
    args = ap.parse_args()
    if args.full_placement:
        examples: int | None = None
    elif args.activity_examples is not None:
        examples = args.activity_examples
    else:
        from dpaudit.training.canaries import ACTIVITY_EXAMPLES

        examples = ACTIVITY_EXAMPLES
    if args.child:
        print(json.dumps(_one(args.child[0], int(args.child[1]), args.steps, examples,
                              args.branch, args.device, args.branch_width)))
        return
    if args.branch_cost is not None:
        if any(w < 1 for w in args.branch_cost):
            ap.error(f"--branch-cost: each WIDTH must be an integer >= 1; got "
                     f"{' '.join(map(str, args.branch_cost))}")
        _branch_cost(args)
        return
    env = {k: v for k, v in os.environ.items() if k not in ALLOCATOR}
    if not args.default_allocator:
        env.update(ALLOCATOR)
    alloc = ("glibc's default malloc thresholds" if args.default_allocator else
             "fixed malloc thresholds " + ", ".join(f"{k}={v}" for k, v in ALLOCATOR.items()))
    with tempfile.TemporaryDirectory() as tmp:
        base_env = None
        if args.baseline_rev:
            # imported here: studies/training.py runs this file with runpy (no benchmarks/
            # on the path)
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            from _common import baseline_src

            base_env = dict(env, PYTHONPATH=str(baseline_src(args.baseline_rev, Path(tmp))))
        _table(args, examples, env, base_env, alloc)


def _branch_cost(args: argparse.Namespace) -> None:
    """The canary branch's own training cost: the plain loop against the loop on the model
    wrapped in a ``CanaryBranch`` of each width (3 width coordinates in three tensors of two
    modules; no canaries, no placement), in interleaved fresh processes; medians.  Width 1
    is the cost of any branch of two modules and three tensors; ``canaries / 3`` the fewest
    coordinates that can hold one coordinate per canary; ``3 canaries`` the default; the last
    column the least branch of all (:func:`_least_branch`: one module, one coordinate per
    canary)."""
    n = args.canaries
    widths = args.branch_cost or [1, -(-n // 3), 2 * n, 3 * n]
    env = dict(os.environ, **ALLOCATOR)
    child = [sys.executable, __file__, "--steps", str(args.steps), "--device", args.device]
    print(f"device {args.device}; load average {os.getloadavg()[0]:.1f}; {args.steps} steps, "
          f"no canaries, medians of {args.repeats} interleaved runs")
    least = -n                       # one module, n coordinates (_least_branch)
    print("| model | parameters | plain loop CPU s | " + " | ".join(
        f"branch width {w:,} ({3 * w:,} coordinates)" for w in widths)
        + f" | one module, {n:,} coordinates |")
    print("|---|---|---|" + "---|" * (len(widths) + 1))
    widths = [*widths, least]
    for model in args.models:
        rows: dict[int, list[dict[str, Any]]] = {w: [] for w in [0, *widths]}
        for _ in range(args.repeats):
            for w in rows:
                extra = ["--branch-width", str(w)] if w else []   # < 0: the least branch
                rows[w].append(_run_child([*child, *extra, "--child", model, "0"], env))
        plain = _median(rows[0], "train_cpu")
        low = min(r["train_cpu"] for r in rows[0])
        # the median's ratio, and the ratio of the minima (the least disturbed runs: the
        # other jobs of a shared machine only add CPU time)
        cells = [f"{_median(rows[w], 'train_cpu'):.2f} "
                 f"({_median(rows[w], 'train_cpu') / plain - 1:+.0%}; min "
                 f"{min(r['train_cpu'] for r in rows[w]) / low - 1:+.0%})" for w in widths]
        print(f"| {model} | {int(rows[0][0]['parameters']):,} | {plain:.2f} | "
              + " | ".join(cells) + " |", flush=True)


def _table(args: argparse.Namespace, examples: int | None, env: dict[str, str],
           base_env: dict[str, str] | None, alloc: str) -> None:
    print(f"device {args.device}; load average {os.getloadavg()[0]:.1f}; {args.steps} steps, "
          f"{args.canaries} "
          f"canaries, placement on {examples or 'all'} examples, medians of "
          f"{args.repeats} interleaved runs; {alloc}; canaries' model: branch {args.branch}")
    print("| model | canary branch | parameters | loop CPU s (no canaries) | placement CPU s "
          "| loop with canaries | **CPU overhead, placement included** | (loop only) | wall s (no) "
          "| wall s (with, placement included) | wall overhead | peak RSS MB (no) | (with) "
          "| audit statistics CPU s | canary hooks CPU s (per step) | placement + hooks / loop "
          "| (min of repeats) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    child = [sys.executable, __file__, "--steps", str(args.steps), "--branch", args.branch,
             "--device", args.device]
    if examples is None:
        child.append("--full-placement")
    else:
        child += ["--activity-examples", str(examples)]
    configs: list[tuple[str, int, dict[str, str]]] = [("no canaries", 0, env),
                                                      ("canaries", args.canaries, env)]
    if base_env is not None:
        configs.append((f"canaries at {args.baseline_rev}", args.canaries, base_env))
    details, usage = [], []
    for model in args.models:
        rows: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in configs}
        for _ in range(args.repeats):
            for name, n, e in configs:
                rows[name].append(_run_child([*child, "--child", model, str(n)], e))
        a, b = rows["no canaries"], rows["canaries"]
        ca, cb = _median(a, "train_cpu"), _median(b, "train_cpu")
        pc = _median(b, "placement_cpu")
        tot = statistics.median(r["train_cpu"] + r["placement_cpu"] for r in b)
        wa = _median(a, "train_seconds")
        wb = statistics.median(r["train_seconds"] + r["placement_seconds"] for r in b)
        ra, rb = _median(a, "peak_rss_mb"), _median(b, "peak_rss_mb")
        st = _median(b, "statistics_cpu")
        hk = _median(b, "hooks_cpu")
        low = min(_direct(b)) / min(r["train_cpu"] for r in a)
        wrapped = "yes" if b[0].get("branch") else "no"
        print(f"| {model} | {wrapped} | {int(a[0]['parameters']):,} | {ca:.2f} | {pc:.2f} "
              f"({pc / (ca / args.steps):.0f} steps) | {cb:.2f} | **{tot / ca - 1:+.1%}** | "
              f"{cb / ca - 1:+.1%} | {wa:.2f} | {wb:.2f} | {wb / wa - 1:+.1%} | {ra:.0f} | "
              f"{rb:.0f} | {st:.2f} | {hk:.3f} ({hk / args.steps * 1e3:.2f} ms) | "
              f"{(pc + hk) / ca:.1%} | {low:.1%} |", flush=True)
        details.append((model, {k: _median(b, k) for k in
                                ("scores_cpu", "facts_cpu", "checks_cpu", "audit_cpu")}))
        for name, _, _ in configs:
            r = rows[name]
            usage.append((model, name, r))
    print("\nThe loop's and the placement's page faults and CPU (medians; getrusage):")
    print("| model | configuration | loop minor faults | loop user CPU s | loop system CPU s "
          "| placement minor faults | placement CPU s | canary hooks CPU s | placement + hooks "
          "/ loop (no canaries) | (min of repeats) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model, name, r in usage:
        plain = next(x for m, c, x in usage if m == model and c == "no canaries")
        ca = _median(plain, "train_cpu")
        has = r[0]["canaries"] > 0
        direct = (f"{statistics.median(_direct(r)) / ca:.1%} | "
                  f"{min(_direct(r)) / min(x['train_cpu'] for x in plain):.1%}"
                  if has else "- | -")
        print(f"| {model} | {name} | {_median(r, 'loop_minflt'):,.0f} | "
              f"{_median(r, 'loop_utime'):.2f} | {_median(r, 'loop_stime'):.2f} | "
              + (f"{_median(r, 'placement_minflt'):,.0f} | {_median(r, 'placement_cpu'):.3f} | "
                 f"{_median(r, 'hooks_cpu'):.3f} | " if has else "- | - | - | ")
              + direct + " |")
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}; audit statistics, CPU s "
          f"(medians): " + "; ".join(
              f"{m}: white_box_scores {s['scores_cpu']:.3f}, facts {s['facts_cpu']:.3f}, "
              f"claim checks with the released-noise check {s['checks_cpu']:.3f}, "
              f"audit_training {s['audit_cpu']:.3f}" for m, s in details))


if __name__ == "__main__":
    main()
