"""The canaries' placement on a sample against the full measurement: what it finds, what it
costs, what it does to the audit.

    PYTHONPATH=src python studies/placement_subsample.py --seeds 3 \
        --out studies/out/placement.jsonl
    PYTHONPATH=src python studies/placement_subsample.py --summary \
        --out studies/out/placement.jsonl

Two parts, each row once per (model, seed) and placement ("sampled": ``for_model``'s
default, ``activity_examples=512`` with the silence check; "full": ``activity_examples=None``,
the four probes on every example):

* ``silent``: ``coordinate_activity`` both ways on the digits MLP (64-256-10) and the four
  model kinds of ``studies/training_own_models.py`` (CNN, EmbeddingBag text, stock
  transformer, dense breast_cancer MLP): silent coordinates of each, coordinates the sample
  takes for silent that the full measurement sees moved ("false silent"), how many of the
  1,000 least active coordinates agree, CPU seconds of each;
* ``power``: the audit's epsilon / claim at 1,000 white-box canaries, correct training, for
  ``train-audit``'s defaults on the digits MLP (Dirac canaries, sigma 1, q 0.05, 300 steps;
  the placement switched by replacing ``coordinate_activity`` in the trainer) and for the CNN
  and the transformer of ``studies/training_own_models.py`` (its ``run``, 100 steps).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import journal  # noqa: E402

SILENT_MODELS = ("digits_mlp", "cnn", "text", "transformer", "tabular")
POWER_MODELS = ("digits_mlp", "cnn", "transformer")
PLACEMENTS = {"sampled": "default", "full": None}


def _setup(kind: str, seed: int):  # type: ignore[no-untyped-def]
    import torch
    import training_own_models as own

    if kind == "digits_mlp":
        from dpaudit.training import load_data, make_model

        d = load_data("digits", seed)
        return make_model("mlp", seed=seed), d.x_train, d.y_train
    x, y = own._data(kind, seed)
    torch.manual_seed(seed)
    return own._model(kind), x, y


def silent(kind: str, seed: int) -> dict:
    from dpaudit.training import coordinate_activity

    model, x, y = _setup(kind, seed)
    coordinate_activity(model, x[:8], y[:8], 1.0)   # first use of Opacus's hooks, untimed
    acts, cpu = {}, {}
    for name, ex in PLACEMENTS.items():
        kw = {} if ex == "default" else {"examples": ex}
        c0 = time.process_time()
        acts[name] = coordinate_activity(model, x, y, 1.0, seed=seed, **kw)
        cpu[name] = time.process_time() - c0
    s, f = acts["sampled"], acts["full"]
    n = min(1000, s.size // 2)
    low = np.intersect1d(np.argsort(s, kind="stable")[:n], np.argsort(f, kind="stable")[:n])
    return {"id": f"silent/{kind}/{seed}", "part": "silent", "model": kind, "seed": seed,
            "examples": int(x.shape[0]), "coordinates": int(s.size),
            "silent_full": int((f == 0).sum()), "silent_sampled": int((s == 0).sum()),
            "false_silent": int(((s == 0) & (f > 0)).sum()),
            "lost_silent": int(((f == 0) & (s > 0)).sum()),
            "least_active_agree": float(low.size / n), "least_active_n": n,
            "cpu_sampled": cpu["sampled"], "cpu_full": cpu["full"]}


def power(kind: str, seed: int, placement: str) -> dict:
    import warnings

    import training_own_models as own

    import dpaudit.training.canaries as canaries_module
    import dpaudit.training.trainer as trainer
    from dpaudit.training import GradientCanaries, TrainingConfig, train_audit

    ex = PLACEMENTS[placement]
    c0 = time.process_time()
    if kind == "digits_mlp":
        original = canaries_module.coordinate_activity
        if ex is None:
            full = functools.partial(original, examples=None)
            canaries_module.coordinate_activity = full  # choose_coordinates' (Dirac)
            trainer.coordinate_activity = full          # the mixed shapes'
        try:
            a = train_audit(TrainingConfig(canaries=1000, noise_multiplier=1.0,
                                           sampling_rate=0.05, steps=300, learning_rate=2.0,
                                           hidden=256, seed=seed))
        finally:
            canaries_module.coordinate_activity = original
            trainer.coordinate_activity = original
        eps, claim = a.results[0].epsilon, a.claimed_epsilon
        flagged = bool(a.violation)
    else:
        original_for_model = GradientCanaries.for_model
        if ex is None:
            def full_for_model(*args, **kw):  # type: ignore[no-untyped-def]
                return original_for_model(*args, **kw, activity_examples=None)
            GradientCanaries.for_model = full_for_model  # type: ignore[method-assign]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                row = own.run_opacus(kind, "correct", seed, canaries=1000, epochs=5)
        finally:
            GradientCanaries.for_model = original_for_model  # type: ignore[method-assign]
        eps, claim, flagged = row["epsilon"], row["claim"], row["flagged"]
    return {"id": f"power/{kind}/{placement}/{seed}", "part": "power", "model": kind,
            "placement": placement, "seed": seed, "epsilon": eps, "claim": claim,
            "flagged": flagged, "cpu_s": time.process_time() - c0}


def summary(path: Path) -> None:
    rows = list(journal.load(path).values())
    print("| model | seeds | silent coordinates (full) | (sampled) | false silent | lost "
          "| 1,000 least active shared | CPU s sampled | CPU s full |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind in SILENT_MODELS:
        rs = [r for r in rows if r["part"] == "silent" and r["model"] == kind]
        if rs:
            med = {k: float(np.median([r[k] for r in rs])) for k in
                   ("silent_full", "silent_sampled", "least_active_agree", "cpu_sampled",
                    "cpu_full")}
            print(f"| {kind} | {len(rs)} | {med['silent_full']:.0f} | "
                  f"{med['silent_sampled']:.0f} | {sum(r['false_silent'] for r in rs)} | "
                  f"{sum(r['lost_silent'] for r in rs)} | {med['least_active_agree']:.0%} | "
                  f"{med['cpu_sampled']:.2f} | {med['cpu_full']:.2f} |")
    print("\n| model | placement | seeds | median eps / claim | min - max | flagged |")
    print("|---|---|---|---|---|---|")
    for kind in POWER_MODELS:
        for placement in PLACEMENTS:
            rs = [r for r in rows if r["part"] == "power" and r["model"] == kind
                  and r["placement"] == placement]
            if rs:
                e = np.array([r["epsilon"] for r in rs])
                print(f"| {kind} | {placement} | {len(rs)} | {np.median(e):.2f} / "
                      f"{rs[0]['claim']:.2f} ({np.median(e) / rs[0]['claim']:.0%}) | "
                      f"{e.min():.2f} - {e.max():.2f} | {sum(r['flagged'] for r in rs)} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--parts", nargs="*", default=["silent", "power"])
    ap.add_argument("--models", nargs="*", default=None)
    ap.add_argument("--out", type=Path, default=Path("studies/out/placement.jsonl"))
    ap.add_argument("--summary", action="store_true")
    args = ap.parse_args()
    if args.summary:
        summary(args.out)
        return
    import torch

    torch.set_num_threads(1)
    done = journal.load(args.out)
    for seed in range(args.seeds):
        if "silent" in args.parts:
            for kind in args.models or SILENT_MODELS:
                if kind in SILENT_MODELS and f"silent/{kind}/{seed}" not in done:
                    row = silent(kind, seed)
                    journal.append(args.out, row)
                    print(json.dumps(row), flush=True)
        if "power" in args.parts:
            for kind in args.models or POWER_MODELS:
                for placement in PLACEMENTS:
                    key = f"power/{kind}/{placement}/{seed}"
                    if kind in POWER_MODELS and key not in done:
                        row = power(kind, seed, placement)
                        journal.append(args.out, row)
                        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
