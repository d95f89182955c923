"""Detection on users' own models: flaws x model kinds, Opacus, default canaries.

    PYTHONPATH=src python studies/training_own_models.py --seeds 3 \
        --out studies/out/own_models.jsonl
    PYTHONPATH=src python studies/training_own_models.py --summary \
        --out studies/out/own_models.jsonl
    PYTHONPATH=src python studies/training_own_models.py --branch --seeds 10 \
        --cases correct unclipped_biases --out studies/out/own_models_branch.jsonl
    PYTHONPATH=src python studies/training_own_models.py --branch --cases correct \
        --canaries 1000 --epochs 15 --epsilon 4 8 --seeds 3 \
        --out studies/out/own_models_tightness.jsonl

Each run: the user's model through ``PrivacyEngine.make_private`` (Poisson loader, sigma = 1,
C = 1, SGD), ``GradientCanaries.for_model`` with its defaults (spread canaries with
sentinels), the user's loop unchanged, ``audit_training`` with the run's facts and the
user's ``PrivacyEngine`` as ``accountant=``.  ``--branch``: the model is wrapped in a
:class:`dpaudit.training.CanaryBranch` (sized for the canaries) before ``make_private``, so
the canaries sit on its silent coordinates.  ``--epsilon``: sigma is chosen for that claimed
epsilon at delta = 1e-5 (``dpsgd_noise_multiplier``) instead of sigma = 1.  A run is
*flagged* when the audit's bound exceeds the claim (violation) or a claim check that shows a
weaker run fails (``ClaimCheck.weaker``: less noise, more steps, a larger clip norm).  Models:

* ``cnn``: digits as 1 x 8 x 8 images, Conv2d(1, 8, 3) -> ReLU -> Linear(288, 10);
* ``text``: EmbeddingBag(200, 16) (mean, offsets) -> LayerNorm -> Linear(16, 2) on a
  synthetic token task (label = whether token 0-99 or 100-199 dominates);
* ``transformer``: Embedding(200, 16) -> stock ``nn.TransformerEncoderLayer`` (2 heads,
  dropout 0.1, after ``ModuleValidator.fix``) -> mean -> Linear(16, 2), same task;
* ``tabular``: breast_cancer, MLP 30-64-2 (dense: every coordinate moved by real data).

Flaws (each as a user would ship it): ``skipped_noise`` (a ``DPOptimizer`` subclass skipping
``add_noise`` every second step, sigma intact), ``zero_steps`` (``optimizer.noise_multiplier
= 0`` on every 4th step), ``lowered_sigma`` (sigma / 4 after ``make_private``),
``unclipped_biases`` (weights clipped, biases summed unclipped), ``per_tensor_clipping``
(each tensor clipped to C on its own), ``correct``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import journal  # noqa: E402

CASES = ("correct", "skipped_noise", "zero_steps", "lowered_sigma", "unclipped_biases",
         "per_tensor_clipping")
OPTIMIZER_FLAWS = ("skipped_noise", "unclipped_biases", "per_tensor_clipping")
DELTA = 1e-5
MODELS = ("cnn", "text", "transformer", "tabular")


def _data(kind: str, seed: int):  # type: ignore[no-untyped-def]
    import torch

    if kind == "cnn":
        from dpaudit.training import load_digits_data

        d = load_digits_data(seed=seed)
        return d.x_train.reshape(-1, 1, 8, 8), d.y_train
    if kind == "tabular":
        from sklearn.datasets import load_breast_cancer

        x, y = load_breast_cancer(return_X_y=True)
        x = (x - x.mean(0)) / x.std(0)
        return torch.tensor(x, dtype=torch.float32), torch.tensor(y)
    g = torch.Generator().manual_seed(seed)
    lab = torch.randint(0, 2, (1000,), generator=g)
    tok = torch.randint(0, 100, (1000, 12), generator=g) + 100 * lab[:, None]
    noise = torch.rand((1000, 12), generator=g) < 0.3
    tok = torch.where(noise, torch.randint(0, 200, (1000, 12), generator=g), tok)
    return tok, lab


class Bag(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.EmbeddingBag(200, 16, mode="mean")
        self.ln = nn.LayerNorm(16)
        self.head = nn.Linear(16, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        off = torch.arange(0, x.numel(), x.shape[1])
        return self.head(self.ln(self.emb(x.reshape(-1), off)))

class Enc(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(200, 16)
        self.enc = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.1, batch_first=True)
        self.head = nn.Linear(16, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.enc(self.emb(x)).mean(1))


def _model(kind: str):  # type: ignore[no-untyped-def]
    from opacus.validators import ModuleValidator

    if kind == "cnn":
        m = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(288, 10))
    elif kind == "tabular":
        m = nn.Sequential(nn.Linear(30, 64), nn.ReLU(), nn.Linear(64, 2))
    elif kind == "text":
        m = Bag()
    else:
        m = Enc()
    return ModuleValidator.fix(m)


def run_id(kind: str, case: str, seed: int, *, branch: bool = False,
           epsilon: float | None = None) -> str:
    return (f"{kind}/{case}/{seed}" + ("/branch" if branch else "")
            + ("" if epsilon is None else f"/eps{epsilon:g}"))


def run(kind: str, case: str, seed: int, *, canaries: int, epochs: int,
        branch: bool = False, epsilon: float | None = None) -> dict:
    import warnings

    import torch
    from opacus import PrivacyEngine
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    from dpaudit.curves.calibration import dpsgd_noise_multiplier
    from dpaudit.training import GradientCanaries, audit_training, with_canary_branch
    from dpaudit.training.flaws import optimizer_class

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    x, y = _data(kind, seed)
    model = _model(kind)
    if branch:
        model = with_canary_branch(model, canaries)
    engine = PrivacyEngine()
    batch = max(1, len(x) // 20)                      # q = 1/20
    loader = DataLoader(TensorDataset(x, y), batch_size=batch)
    sigma = (1.0 if epsilon is None else
             dpsgd_noise_multiplier(epsilon, DELTA, 1 / len(loader), epochs * len(loader)))
    model, opt, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
        data_loader=loader, noise_multiplier=sigma, max_grad_norm=1.0)
    if case in OPTIMIZER_FLAWS:
        opt.__class__ = optimizer_class(case)
    q = 1 / len(loader)
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = GradientCanaries.for_model(model, x, y, canaries, sampling_rate=q,
                                       max_grad_norm=1.0, seed=seed)
        c.attach(opt)
        step = 0
        for _ in range(epochs):
            for xb, yb in loader:
                if case == "lowered_sigma":
                    opt.noise_multiplier = sigma / 4
                elif case == "zero_steps":
                    opt.noise_multiplier = 0.0 if step % 4 == 3 else sigma
                opt.zero_grad()
                nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
                step += 1
    a = audit_training(c.bits, c.white_box_scores(), noise_multiplier=sigma, sampling_rate=q,
                       steps=c.steps, facts=c.facts(len(x)), max_grad_norm=1.0,
                       accountant=engine, seed=seed, delta=DELTA)
    weaker = [ch.name for ch in a.checks if not ch.ok and ch.weaker]
    return {"id": run_id(kind, case, seed, branch=branch, epsilon=epsilon), "model": kind,
            "case": case, "seed": seed, "branch": branch, "sigma": sigma,
            "epsilon": a.results[0].epsilon, "claim": a.claimed_epsilon,
            "violation": bool(a.violation), "weaker_errors": weaker,
            "errors": [ch.name for ch in a.checks if not ch.ok],
            "flagged": bool(a.violation or weaker), "steps": c.steps,
            "canaries": canaries, "cpu_s": time.process_time() - start,
            "sampling_rate": q,
            "accountant_note": a.accountant_note, "target_epsilon": epsilon}


def simulator_ratio(row: dict) -> float:
    """The DP-SGD simulator's audit epsilon / claim at the row's (sigma, q, steps, canaries)
    and seed (no background gradients: the best a one-run audit of this size can do)."""
    from dpaudit.training import TrainingConfig
    from dpaudit.training.audit import simulator_reference

    cfg = TrainingConfig(canaries=row["canaries"], noise_multiplier=row["sigma"],
                         sampling_rate=row["sampling_rate"], steps=row["steps"])
    return simulator_reference(cfg, delta=DELTA, seed=row["seed"])[0].epsilon / row["claim"]


def summary(path: Path) -> None:
    """One row per (model, case, branch, claimed epsilon): flagged / seeds, violations,
    the weaker configuration errors, the median audit epsilon against the claim, the
    median of the per-run ratio and, for a claimed epsilon (``--epsilon``), the simulator's
    median ratio at the same settings and seeds."""
    rows = list(journal.load(path).values())
    print("| model | branch | case | target eps | flagged / seeds | violations "
          "| weaker configuration errors | median eps / claim | median ratio "
          "| simulator ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    cells = sorted({(r["model"], r.get("branch", False), r["case"],
                     r.get("target_epsilon")) for r in rows},
                   key=lambda k: (MODELS.index(k[0]), k[1], CASES.index(k[2]), k[3] or 0))
    for kind, branch, case, target in cells:
        rs = [r for r in rows if (r["model"], r.get("branch", False), r["case"],
                                  r.get("target_epsilon")) == (kind, branch, case, target)]
        errs = sorted({e for r in rs for e in r["weaker_errors"]})
        ratio = np.median([r["epsilon"] / r["claim"] for r in rs])
        print(f"| {kind} | {'yes' if branch else 'no'} | {case} | "
              f"{'-' if target is None else f'{target:g}'} | "
              f"{sum(r['flagged'] for r in rs)}/{len(rs)} | "
              f"{sum(r['violation'] for r in rs)} | {', '.join(errs) or '-'} | "
              f"{np.median([r['epsilon'] for r in rs]):.2f} / {rs[0]['claim']:.2f} | "
              f"{ratio:.0%} | "
              + (f"{np.median([simulator_ratio(r) for r in rs]):.0%} |"
                 if target is not None and "sampling_rate" in rs[0] else "- |"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--models", nargs="*", default=list(MODELS), choices=MODELS)
    ap.add_argument("--cases", nargs="*", default=list(CASES), choices=CASES)
    ap.add_argument("--canaries", type=int, default=200)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--branch", action="store_true",
                    help="wrap each model in a CanaryBranch before make_private")
    ap.add_argument("--epsilon", type=float, nargs="*", default=None,
                    help="claimed epsilons (sigma chosen for each; default sigma = 1)")
    ap.add_argument("--out", type=Path, default=Path("studies/out/own_models.jsonl"))
    ap.add_argument("--summary", action="store_true")
    args = ap.parse_args()
    if args.summary:
        summary(args.out)
        return
    done = journal.load(args.out)
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for eps in args.epsilon or [None]:
            for kind in args.models:
                for case in args.cases:
                    if run_id(kind, case, seed, branch=args.branch, epsilon=eps) in done:
                        continue
                    row = run(kind, case, seed, canaries=args.canaries, epochs=args.epochs,
                              branch=args.branch, epsilon=eps)
                    journal.append(args.out, row)
                    print(json.dumps({k: row[k] for k in ("id", "flagged", "epsilon",
                                                          "claim", "weaker_errors",
                                                          "cpu_s")}), flush=True)


if __name__ == "__main__":
    main()
