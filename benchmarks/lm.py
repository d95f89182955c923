"""Auditing DP fine-tuning of a language model: tightness, flaw detection, canary overhead.

Run from benchmarks/ (``cd benchmarks; python lm.py ...``) with ``PYTHONPATH=../src``; every
unit of work (one seed of one setting) is appended to a resumable journal (``--out``,
studies/journal.py), so a re-run skips what is done and prints the tables.

* ``tightness`` -- audit epsilon / theoretical epsilon of the verdict's method (``tight``, the
  claim's DP-SGD family, finite-sample), median over seeds, and false violations (correct
  runs only):
  ``python lm.py tightness --threat white_box --epsilon 8 --canaries 10000 --seeds 5``;
  ``python lm.py tightness --threat black_box --epsilon 4 --canaries 1000``;
* ``flaws`` -- detection counts over seeds: a violation (epsilon lower bound > claim) and a
  failed claim check / noise probe, counted separately;
* ``overhead`` -- seconds per training step with the white-box canaries and the noise probe
  vs the same run without them (same seed, same batches), median over steps after warm-up.

CPU-sized by default (the CPU-tiny GPT-2: width 64, 2 layers, sequences of 32 tokens);
``--size small|medium`` scales the model (width 256 / 512, 4 / 8 layers, sequences of 64 /
128) and ``--device cuda`` runs the same code on a GPU: the model (pre-training included),
each batch, the canaries' planting and reading and Opacus's noise generator live on the
device; the Poisson sampler and the canaries' own draws stay on the CPU (NumPy).  The
device is printed first (a device that is not there is an error, before any work).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "studies"))
import journal  # noqa: E402  (studies/journal.py, the resumable results journal)

from dpaudit.training.accounting import sigma_for_epsilon  # noqa: E402
from dpaudit.training.lm import LM_FLAWS, LMConfig, lm_audit_dict, train_audit_lm  # noqa: E402
from dpaudit.training.lm.trainer import train_lm_with_canaries  # noqa: E402

SIZES = {"tiny": {"hidden": 64, "layers": 2, "heads": 2, "length": 32},
         "small": {"hidden": 256, "layers": 4, "heads": 4, "length": 64},
         "medium": {"hidden": 512, "layers": 8, "heads": 8, "length": 128}}


def device_line(device: str) -> str:
    """``device: cuda:0 (its name)``, or SystemExit when ``device`` is not available here."""
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit(f"--device {device}: no CUDA device is available on this machine")
        idx = dev.index if dev.index is not None else torch.cuda.current_device()
        return f"device: cuda:{idx} ({torch.cuda.get_device_name(idx)})"
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise SystemExit(f"--device {device}: MPS is not available on this machine")
    return f"device: {dev}"


def _settings(args: argparse.Namespace, **over: Any) -> dict[str, Any]:
    s = {"data": args.data, "sampling_rate": args.sampling_rate, "steps": args.steps,
         "pretrain_steps": args.pretrain_steps, "learning_rate": args.learning_rate,
         "device": args.device, "finetune": args.finetune, **SIZES[args.size]}
    s.update(over)
    return s


def _audit(key: str, path: Path, done: dict, settings: dict[str, Any]) -> dict[str, Any]:
    if key in done:
        return done[key]
    doc = lm_audit_dict(train_audit_lm(LMConfig(**settings)))
    row = {"id": key, "settings": settings, "claimed_epsilon": doc["claimed_epsilon"],
           "epsilon": doc["results"][0]["epsilon"], "method": doc["results"][0]["method"],
           "results": {r["method"]: r["epsilon"] for r in doc["results"]},
           "violation": doc["violation"], "configuration_errors": doc["configuration_errors"],
           "exposure": doc["lm"]["exposure"], "seconds": doc["training"]["seconds"],
           "heldout_loss": [doc["lm"]["heldout_loss_pretrained"],
                            doc["lm"]["heldout_loss_finetuned"]],
           "parameters": doc["lm"]["parameters"], "device": settings["device"]}
    journal.append(path, row)
    done[key] = row
    print(f"  {key}: eps >= {row['epsilon']:.3f} of {row['claimed_epsilon']:.3f} "
          f"({row['epsilon'] / row['claimed_epsilon']:.1%}), violation {row['violation']}, "
          f"{row['seconds']:.0f} s", flush=True)
    return row


def tightness(args: argparse.Namespace) -> None:
    path, done = args.out, journal.load(args.out)
    sigma = sigma_for_epsilon(args.epsilon, args.sampling_rate, args.steps)
    designs = args.designs if args.threat == "black_box" else ["reserved_rows"]
    print("| threat | fine-tuning | canaries | design | theoretical eps | median audit eps "
          "(tight) | ratio | per seed | false violations |")
    rows_out = []
    for design in designs:
        rows = []
        for seed in range(args.seeds):
            over = {"canaries": args.canaries, "noise_multiplier": sigma, "seed": seed,
                    "threat": args.threat,
                    "canary": "input" if args.threat == "black_box" else "gradient"}
            if args.threat == "black_box":
                over.update(sequence_kind=design, secret_length=args.secret_length)
            s = _settings(args, **over)
            key = (f"tight/{args.size}/{args.device}/{args.finetune}/{args.threat}/{design}/"
                   f"eps{args.epsilon}/n{args.canaries}/q{args.sampling_rate}/T{args.steps}/"
                   f"lr{args.learning_rate}/k{args.secret_length}/seed{seed}")
            rows.append(_audit(key, path, done, s))
        eps = [r["epsilon"] for r in rows]
        claimed = rows[0]["claimed_epsilon"]
        med = statistics.median(eps)
        fv = sum(r["violation"] for r in rows)
        rows_out.append(f"| {args.threat} | {args.finetune} | {args.canaries:,} | {design} | "
                        f"{claimed:.2f} | {med:.2f} | {med / claimed:.1%} | "
                        f"{', '.join(f'{e:.2f}' for e in eps)} | {fv}/{len(rows)} |")
    print("\n".join(rows_out))


def flaws(args: argparse.Namespace) -> None:
    path, done = args.out, journal.load(args.out)
    sigma = sigma_for_epsilon(args.epsilon, args.sampling_rate, args.steps)
    print("| flaw | fine-tuning | shapes | violation (eps > claim) | claim check / noise probe"
          " | either | median eps / claim |")
    for flaw in args.flaws:
        rows = []
        shapes = "tensors" if flaw == "per_layer_clipping" and args.finetune == "full" \
            else "dirac"
        for seed in range(args.seeds):
            s = _settings(args, canaries=args.canaries, noise_multiplier=sigma, seed=seed,
                          flawed=None if flaw == "none" else flaw, shapes=shapes)
            on = "" if args.device == "cpu" else f"{args.device}/"  # CPU keys as before
            key = (f"flaw/{args.size}/{on}{args.finetune}/{flaw}/eps{args.epsilon}/"
                   f"n{args.canaries}/q{args.sampling_rate}/T{args.steps}/seed{seed}")
            rows.append(_audit(key, path, done, s))
        v = sum(r["violation"] for r in rows)
        c = sum(bool(r["configuration_errors"]) for r in rows)
        e = sum(r["violation"] or bool(r["configuration_errors"]) for r in rows)
        ratio = statistics.median(r["epsilon"] / r["claimed_epsilon"] for r in rows)
        print(f"| {flaw} | {args.finetune} | {shapes} | {v}/{len(rows)} | {c}/{len(rows)} | "
              f"{e}/{len(rows)} | {ratio:.2f} |", flush=True)


def overhead(args: argparse.Namespace) -> None:
    sigma = sigma_for_epsilon(args.epsilon, args.sampling_rate, args.steps)
    cfg = LMConfig(**_settings(args, canaries=args.canaries, noise_multiplier=sigma,
                               seed=0))
    per: dict[bool, list[float]] = {}
    for _rep in range(args.repeats):
        for plant in (False, True):   # alternate, so load drifts hit both alike
            stamps: list[float] = []
            train_lm_with_canaries(cfg, plant=plant,
                                   on_step=lambda i, st=stamps: st.append(time.perf_counter()))
            per.setdefault(plant, []).extend(b - a for a, b in
                                             zip(stamps[2:], stamps[3:], strict=False))
    base, with_c = statistics.median(per[False]), statistics.median(per[True])
    print(f"| model | canaries | batch | seconds/step without | with canaries + probe | "
          f"overhead |\n| {args.size} ({args.device}) | {args.canaries:,} | "
          f"{cfg.sampling_rate:g} x data | {base:.4f} | {with_c:.4f} | "
          f"{with_c / base - 1:+.1%} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("tightness", "flaws", "overhead"))
    p.add_argument("--threat", default="white_box", choices=("white_box", "last_iterate",
                                                              "black_box"))
    p.add_argument("--finetune", default="full", choices=("full", "lora"))
    p.add_argument("--epsilon", type=float, default=8.0)
    p.add_argument("--canaries", type=int, default=1000)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--sampling-rate", type=float, default=0.1)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--pretrain-steps", type=int, default=200)
    p.add_argument("--learning-rate", type=float, default=0.3)
    p.add_argument("--secret-length", type=int, default=8)
    p.add_argument("--designs", nargs="+", default=["new_token", "random"])
    p.add_argument("--flaws", nargs="+", default=["none", *LM_FLAWS])
    p.add_argument("--data", default="synthetic", choices=("synthetic", "pydoc"))
    p.add_argument("--size", default="tiny", choices=tuple(SIZES))
    p.add_argument("--device", default="cpu")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out" / "lm.jsonl")
    args = p.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    print(device_line(args.device), flush=True)
    {"tightness": tightness, "flaws": flaws, "overhead": overhead}[args.what](args)


if __name__ == "__main__":
    main()
