"""Detection on users' own models: flaws x model kinds x training loops, default canaries.

    PYTHONPATH=src python studies/training_own_models.py --loop opacus --seeds 10 \
        --correct-seeds 20 --out studies/out/own_models.jsonl
    PYTHONPATH=src python studies/training_own_models.py --loop func --models cnn ...
    PYTHONPATH=src python studies/training_own_models.py --summary \
        --out studies/out/own_models.jsonl
    PYTHONPATH=src python studies/training_own_models.py --branch --seeds 10 \
        --cases correct unclipped_biases --out studies/out/own_models_branch.jsonl
    PYTHONPATH=src python studies/training_own_models.py --branch --cases correct \
        --canaries 1000 --epochs 15 --epsilon 4 8 --seeds 3 \
        --out studies/out/own_models_tightness.jsonl
    PYTHONPATH=src python studies/training_own_models.py --tightness \
        --out studies/out/own_models_tightness.jsonl

Loops (``--loop``):

* ``opacus``: the user's model through ``PrivacyEngine.make_private`` (Poisson loader,
  sigma = 1, C = 1, SGD lr 0.5), ``GradientCanaries.for_model`` with its defaults (spread
  canaries with sentinels), the user's loop unchanged, ``audit_training`` with the run's
  facts and the user's ``PrivacyEngine`` as ``accountant=``; a clipping or noise flaw is a
  ``DPOptimizer`` subclass (``dpaudit.training.flaws``) or an attribute set in the loop;
* ``func``: a hand-written ``torch.func`` loop (per-example gradients by
  ``vmap(grad(...), randomness="different")``, Poisson sampling, the clipping and noise
  written out, the flaw in that code), the canaries of the core
  (``coordinate_activity`` + ``plan_gradient_canaries``, planted as per-example rows) read by
  ``ReleaseReader`` with the planted set of each step, facts ``RunFacts(...,
  **reader.noise_record())``;
* ``jax``: ``dpaudit.training.jax`` (jax_privacy DP-SGD on the digits MLP with reserved
  inputs, the only model of that path), its white-box audit with the run's facts; the flaws
  of the other loops written into its step (``dpaudit.training.jax.flaws``), plus its own
  ``mean_noise`` and ``unclipped_group``.

``--branch``: loop ``opacus``, the model is wrapped in a
:class:`dpaudit.training.CanaryBranch` (sized for the canaries) before ``make_private``; loop
``func``, the same wrapping before the loop (the activity measurement finds the branch silent,
the plan puts the canaries there, the functional call carries the branch's parameters); loop
``jax``, ``JaxTrainingConfig(canary_branch=True)`` (the MLP without reserved inputs plus the
JAX form of the branch, spread canaries with sentinels).  The canaries then sit on the
branch's silent coordinates.  ``--epsilon``: sigma is chosen for that claimed
epsilon at delta = 1e-5 (``dpsgd_noise_multiplier``) instead of sigma = 1; ``--tightness``
prints the median audit epsilon / claim per (model, branch, claimed epsilon) beside the DP-SGD
simulator's at the same settings and seeds.

A run is *flagged* when the audit's bound exceeds the claim (violation) or a claim check that
shows a weaker run fails (``ClaimCheck.weaker``: less noise, more steps, a larger clip norm,
contributions above C); *configuration errors* are all failed claim checks (weaker or not:
e.g. ``clipped_contribution`` below C, the run is not the claimed mechanism).  Models:

* ``cnn``: digits as 1 x 8 x 8 images, Conv2d(1, 8, 3) -> ReLU -> Linear(288, 10);
* ``text``: EmbeddingBag(200, 16) (mean, offsets) -> LayerNorm -> Linear(16, 2) on a
  synthetic token task (label = whether token 0-99 or 100-199 dominates);
* ``transformer``: Embedding(200, 16) -> stock ``nn.TransformerEncoderLayer`` (2 heads,
  dropout 0.1, after ``ModuleValidator.fix``) -> mean -> Linear(16, 2), same task;
* ``tabular``: breast_cancer, MLP 30-64-2 (dense: every coordinate moved by real data).

Cases (each flaw as a user would ship it; ``dpaudit.training.flaws`` defines them):
``correct``; ``per_tensor_clipping`` (each tensor clipped to C); ``lowered_sigma`` (sigma / 4
after ``make_private``); ``wrong_clip_noise`` (clipped to 10 C, noise for C);
``too_few_steps`` (5x the steps of the claim: the claim is for T / 5); ``skipped_noise``
(``add_noise`` skipped every second step, sigma intact); ``zero_steps``
(``optimizer.noise_multiplier = 0`` on every 4th step); ``unclipped_biases`` (weights
clipped, 1-d tensors summed unclipped); ``batch_sum_clipping`` (the batch's sum clipped to
C); ``averaged_clipping`` (the batch's mean clipped to C, noise for the mean).
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

from dpaudit.training.common import noise_added  # the flaws' schedule in every loop

sys.path.insert(0, str(Path(__file__).resolve().parent))
import journal  # noqa: E402

CASES = ("correct", "per_tensor_clipping", "lowered_sigma", "wrong_clip_noise", "too_few_steps",
         "skipped_noise", "zero_steps", "unclipped_biases", "batch_sum_clipping",
         "averaged_clipping")
#: the JAX path's cases: the claim-side ones, the other loops' flaws written into the
#: jax_privacy loop (``dpaudit.training.jax.flaws``), and its own (``mean_noise`` = noise for
#: the mean; ``unclipped_group`` = a parameter group left unclipped)
JAX_CASES = ("correct", "lowered_sigma", "too_few_steps", "skipped_noise", "zero_steps",
             "wrong_clip_noise", "per_tensor_clipping", "unclipped_biases", "mean_noise",
             "unclipped_group")
#: the JAX cases beyond the other loops' (rows of the tables)
JAX_ONLY = ("mean_noise", "unclipped_group")
MODELS = ("cnn", "text", "transformer", "tabular")
LOOPS = ("opacus", "func", "jax")
SIGMA, CLIP, LR = 1.0, 1.0, 0.5
DELTA = 1e-5
#: Opacus flaws set by an attribute in the loop or by the claim, not by a subclass
_LOOP_FLAWS = ("lowered_sigma", "zero_steps", "too_few_steps", "correct")


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
    # N = 1010: Opacus's divisor int(N q) is the same for N +- 1 (no normalisation finding)
    n = 1010
    g = torch.Generator().manual_seed(seed)
    lab = torch.randint(0, 2, (n,), generator=g)
    tok = torch.randint(0, 100, (n, 12), generator=g) + 100 * lab[:, None]
    noise = torch.rand((n, 12), generator=g) < 0.3
    tok = torch.where(noise, torch.randint(0, 200, (n, 12), generator=g), tok)
    return tok, lab


class Bag(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.EmbeddingBag(200, 16, mode="mean")
        self.ln = nn.LayerNorm(16)
        self.head = nn.Linear(16, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        off = torch.arange(0, x.numel(), x.shape[1], device=x.device)
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


def _sigma_at(case: str, step: int, sigma: float = SIGMA) -> float:
    """The noise multiplier the loop uses (and reports) at ``step`` (0-based)."""
    if case == "lowered_sigma":
        return sigma / 4
    if case == "zero_steps" and not noise_added(case, step):
        return 0.0
    return sigma


def run_id(loop: str, kind: str, case: str, seed: int, *, branch: bool = False,
           epsilon: float | None = None, device: str = "cpu") -> str:
    return (f"{loop}/{kind}/{case}/{seed}" + ("/branch" if branch else "")
            + ("" if epsilon is None else f"/eps{epsilon:g}")
            + ("" if device == "cpu" else f"/{device}"))


def _row(loop: str, kind: str, case: str, seed: int, a, steps: int, canaries: int,  # type: ignore[no-untyped-def]
         cpu: float) -> dict:
    weaker = [ch.name for ch in a.checks if not ch.ok and ch.weaker]
    contribution = {ch.name: ch for ch in a.checks}.get("clipped_contribution")
    return {"id": f"{loop}/{kind}/{case}/{seed}", "loop": loop, "model": kind, "case": case,
            "seed": seed, "epsilon": a.results[0].epsilon, "claim": a.claimed_epsilon,
            "violation": bool(a.violation), "weaker_errors": weaker,
            "errors": [ch.name for ch in a.checks if not ch.ok],
            "flagged": bool(a.violation or weaker),
            "detected": bool(a.violation or any(not ch.ok for ch in a.checks)),
            "contribution": None if contribution is None else contribution.observed,
            "steps": steps, "canaries": canaries, "cpu_s": cpu,
            "accountant_note": getattr(a, "accountant_note", None)}


def run_opacus(kind: str, case: str, seed: int, *, canaries: int, epochs: int,
               branch: bool = False, epsilon: float | None = None,
               device: str = "cpu") -> dict:
    import warnings

    import torch
    from opacus import PrivacyEngine
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    from dpaudit.curves.calibration import dpsgd_noise_multiplier
    from dpaudit.training import GradientCanaries, audit_training, with_canary_branch
    from dpaudit.training.flaws import STEP_UNDERCOUNT, optimizer_class

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    x, y = _data(kind, seed)
    model = _model(kind)
    if branch:
        model = with_canary_branch(model, canaries)
    model = model.to(device)    # the data stay on the CPU; each batch goes to the device
    engine = PrivacyEngine()
    batch = max(1, len(x) // 20)                      # q = 1/20
    start = time.process_time()
    train_loader = DataLoader(TensorDataset(x, y), batch_size=batch)
    sigma = (SIGMA if epsilon is None else
             dpsgd_noise_multiplier(epsilon, DELTA, 1 / len(train_loader),
                                    epochs * len(train_loader)))
    model, opt, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=LR),
        data_loader=train_loader, noise_multiplier=sigma, max_grad_norm=CLIP)
    if case not in _LOOP_FLAWS:
        opt.__class__ = optimizer_class(case)
    q = 1 / len(loader)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = GradientCanaries.for_model(model, x, y, canaries, sampling_rate=q,
                                       max_grad_norm=CLIP, seed=seed)
        c.attach(opt)
        step = 0
        for _ in range(epochs):
            for xb, yb in loader:
                opt.noise_multiplier = _sigma_at(case, step, sigma)
                opt.zero_grad()
                xb, yb = xb.to(device), yb.to(device)
                nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
                step += 1
    claimed = c.steps // STEP_UNDERCOUNT if case == "too_few_steps" else c.steps
    a = audit_training(c.bits, c.white_box_scores(), noise_multiplier=sigma, sampling_rate=q,
                       steps=claimed, facts=c.facts(len(x)), max_grad_norm=CLIP,
                       accountant=engine, seed=seed, delta=DELTA)
    row = _row("opacus", kind, case, seed, a, c.steps, canaries, time.process_time() - start)
    row.update(id=run_id("opacus", kind, case, seed, branch=branch, epsilon=epsilon,
                         device=device),
               branch=branch, sigma=sigma, sampling_rate=q, target_epsilon=epsilon,
               device=device)
    return row


def simulator_ratio(row: dict) -> float:
    """The DP-SGD simulator's audit epsilon / claim at the row's (sigma, q, steps, canaries)
    and seed (no background gradients: the best a one-run audit of this size can do)."""
    from dpaudit.training import TrainingConfig
    from dpaudit.training.audit import simulator_reference

    cfg = TrainingConfig(canaries=row["canaries"], noise_multiplier=row["sigma"],
                         sampling_rate=row["sampling_rate"], steps=row["steps"])
    return simulator_reference(cfg, delta=DELTA, seed=row["seed"])[0].epsilon / row["claim"]


def tightness(path: Path) -> None:
    """One row per (model, branch, claimed epsilon) of correct runs: the median audit epsilon
    against the claim, the median per-run ratio, and the simulator's median ratio at the same
    settings and seeds."""
    rows = [r for r in journal.load(path).values()
            if "crash" not in r and r["case"] == "correct"]
    print("| model | branch | target eps | seeds | flagged | median eps / claim "
          "| median ratio | simulator ratio |")
    print("|---|---|---|---|---|---|---|---|")
    cells = sorted({(r["model"], r.get("branch", False), r.get("target_epsilon"))
                    for r in rows},
                   key=lambda k: (MODELS.index(k[0]) if k[0] in MODELS else 9, k[1], k[2] or 0))
    for kind, branch, target in cells:
        rs = [r for r in rows if (r["model"], r.get("branch", False),
                                  r.get("target_epsilon")) == (kind, branch, target)]
        sim = (f"{np.median([simulator_ratio(r) for r in rs]):.0%}"
               if target is not None and "sampling_rate" in rs[0] else "-")
        print(f"| {kind} | {'yes' if branch else 'no'} | "
              f"{'-' if target is None else f'{target:g}'} | {len(rs)} | "
              f"{sum(r['flagged'] for r in rs)} | "
              f"{np.median([r['epsilon'] for r in rs]):.2f} / {rs[0]['claim']:.2f} | "
              f"{np.median([r['epsilon'] / r['claim'] for r in rs]):.0%} | {sim} |")


def _clip(flat, case: str, sizes: list[int], ndims: list[int], expected_b: float):  # type: ignore[no-untyped-def]
    """The loop's clipped SUM of per-example rows ``flat`` (B, d) as the case writes it."""
    import torch

    def per_row(g, c):  # type: ignore[no-untyped-def]
        return g * (c / (g.norm(dim=1, keepdim=True) + 1e-6)).clamp(max=1.0)

    if case == "batch_sum_clipping":
        return per_row(flat.sum(0, keepdim=True), CLIP)[0]
    if case == "averaged_clipping":
        return per_row(flat.mean(0, keepdim=True), CLIP)[0] * expected_b
    if case == "wrong_clip_noise":
        return per_row(flat, 10 * CLIP).sum(0)
    blocks = torch.split(flat, sizes, dim=1)                          # per tensor
    if case == "per_tensor_clipping":
        return torch.cat([per_row(b, CLIP) for b in blocks], dim=1).sum(0)
    if case == "unclipped_biases":
        w = torch.stack([b.norm(dim=1) for b, n in zip(blocks, ndims, strict=True)
                         if n >= 2], dim=1).norm(dim=1, keepdim=True)
        f = (CLIP / (w + 1e-6)).clamp(max=1.0)
        return torch.cat([b * f if n >= 2 else b for b, n in zip(blocks, ndims, strict=True)],
                         dim=1).sum(0)
    return per_row(flat, CLIP).sum(0)


def run_func(kind: str, case: str, seed: int, *, canaries: int, epochs: int,
             branch: bool = False) -> dict:
    import warnings

    import torch
    from torch import nn
    from torch.func import functional_call, grad, vmap

    from dpaudit.canaries import Layout, ReleaseReader, RunFacts, plan_gradient_canaries
    from dpaudit.training import audit_training, coordinate_activity, with_canary_branch
    from dpaudit.training.flaws import STEP_UNDERCOUNT

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    x, y = _data(kind, seed)
    model = _model(kind)
    if branch:  # the documented recipe: wrap first; the loop then trains what it returns
        model = with_canary_branch(model, canaries)
    start = time.process_time()
    names = [k for k, p in model.named_parameters() if p.requires_grad]
    params = {k: p.detach().clone() for k, p in model.named_parameters() if p.requires_grad}
    sizes = [p.numel() for p in params.values()]
    ndims = [p.ndim for p in params.values()]
    layout = Layout.from_sizes(sizes, names)
    q, n_data = 1 / 20, len(x)
    expected_b = q * n_data
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        activity = coordinate_activity(model, x, y, CLIP)
    plan = plan_gradient_canaries(layout, activity, canaries, sampling_rate=q, rng=rng)
    reader = ReleaseReader(plan, max_grad_norm=CLIP, layout=layout)

    def loss(p, xi, yi):  # type: ignore[no-untyped-def]
        return nn.functional.cross_entropy(functional_call(model, p, (xi[None],)), yi[None])

    per_example = vmap(grad(loss), in_dims=(None, 0, 0), randomness="different")
    gen = torch.Generator().manual_seed(seed)
    steps = epochs * 20
    batch_sizes = []
    model.train()
    for t in range(steps):
        batch = torch.rand(n_data, generator=gen) < q                  # Poisson sampling
        batch_sizes.append(int(batch.sum()))
        g = per_example(params, x[batch], y[batch])
        flat = torch.cat([g[k].reshape(g[k].shape[0], -1) for k in names], dim=1)
        planted = (rng.random(plan.n) < q) & plan.bits                  # the canaries' coin
        active = np.flatnonzero(planted)
        rows = torch.zeros((active.size, layout.dimension), dtype=flat.dtype)
        rows.index_put_((torch.arange(active.size).repeat_interleave(
                             plan.plant_coords.shape[1]),
                         torch.from_numpy(plan.plant_coords[active].ravel())),
                        torch.from_numpy(plan.plant_values[active].ravel() * CLIP).to(
                            flat.dtype), accumulate=True)
        summed = _clip(torch.cat([flat, rows]), case, sizes, ndims, expected_b)
        sigma = _sigma_at(case, t)
        added = sigma if noise_added(case, t) else 0.0
        noisy = summed + added * CLIP * torch.randn(layout.dimension, generator=gen)
        reader.add_flat(noisy.double().numpy() / CLIP, sigma, planted)
        upd = torch.split(noisy / expected_b, sizes)
        params = {k: (params[k] - LR * u.view_as(params[k])).detach()
                  for k, u in zip(names, upd, strict=True)}
    facts = RunFacts(steps=steps, noise_multipliers=tuple(dict.fromkeys(
                         _sigma_at(case, t) for t in range(steps))),
                     max_grad_norms=(CLIP,), batch_sizes=np.asarray(batch_sizes),
                     dataset_size=n_data, loss_reduction="sum", **reader.noise_record())
    claimed = steps // STEP_UNDERCOUNT if case == "too_few_steps" else steps
    a = audit_training(plan.bits, reader.scores(), noise_multiplier=SIGMA, sampling_rate=q,
                       steps=claimed, facts=facts, max_grad_norm=CLIP, seed=seed)
    row = _row("func", kind, case, seed, a, steps, canaries, time.process_time() - start)
    # the canaries' planted squared norm on the branch's tensors (share, all canaries)
    on = np.array([n.startswith("canary_branch.") for n in layout.names])[
        layout.tensor_of(plan.plant_coords)]
    row.update(id=run_id("func", kind, case, seed, branch=branch), branch=branch,
               on_branch=float((plan.plant_values ** 2 * on).sum()
                               / (plan.plant_values ** 2).sum()))
    return row


def run_jax(kind: str, case: str, seed: int, *, canaries: int, epochs: int,
            branch: bool = False) -> dict:
    import dataclasses

    from dpaudit.canaries import Claim, check_claim
    from dpaudit.training.flaws import STEP_UNDERCOUNT
    from dpaudit.training.jax import JaxTrainingConfig
    from dpaudit.training.jax.audit import audit_scores, run_claim_checks
    from dpaudit.training.jax.flaws import FLAWS as JAX_FLAWS
    from dpaudit.training.jax.trainer import train_jax_with_canaries
    from dpaudit.training.result import training_audit

    if kind != "mlp":
        raise ValueError("the JAX loop trains the digits MLP only (model 'mlp')")
    start = time.process_time()
    steps = epochs * 20
    sigma = SIGMA / 4 if case == "lowered_sigma" else SIGMA
    flawed = case if case in JAX_FLAWS else None
    cfg = JaxTrainingConfig(steps=steps, canaries=canaries, noise_multiplier=sigma,
                            sampling_rate=1 / 20, seed=seed, flawed=flawed,
                            canary_branch=branch)
    run = train_jax_with_canaries(cfg)
    claimed = steps // STEP_UNDERCOUNT if case == "too_few_steps" else steps
    a = audit_scores(run.member, run.score, noise_multiplier=SIGMA, sampling_rate=1 / 20,
                     steps=claimed, seed=seed)
    # the run's checks against the claim as stated (sigma, T / 5), plus the noise strategy
    checks = sorted(check_claim(Claim(SIGMA, 1 / 20, claimed, CLIP), run.facts)
                    + [c for c in run_claim_checks(run) if c.name == "noise_strategy"],
                    key=lambda c: c.ok)
    facts = dataclasses.replace(a.facts, run=run, checks=tuple(checks))
    a = training_audit(a.results, a.claim, facts, observations=a.observations,
                       settings=a.settings, any_mechanism_epsilon=a.any_mechanism_epsilon)
    row = _row("jax", kind, case, seed, a, steps, canaries, time.process_time() - start)
    row.update(id=run_id("jax", kind, case, seed, branch=branch), branch=branch)
    return row


RUNNERS = {"opacus": run_opacus, "func": run_func, "jax": run_jax}


def summary(path: Path) -> None:
    rows = list(journal.load(path).values())
    print("| loop | model | case | flagged / seeds | detected / seeds | violations "
          "| weaker configuration errors "
          "| other configuration errors | median eps / claim | contribution (median) "
          "| CPU s / run |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for loop in LOOPS:
        for kind in MODELS + ("mlp",):
            for case in CASES + JAX_ONLY:
                rs = [r for r in rows if r.get("loop", "opacus") == loop
                      and r["model"] == kind and r["case"] == case]
                crashes = sum("crash" in r for r in rs)
                rs = [r for r in rs if "crash" not in r]
                if not rs:
                    if crashes:
                        print(f"| {loop} | {kind} | {case} | {crashes} crashed |")
                    continue
                weak = sorted({e for r in rs for e in r["weaker_errors"]})
                other = sorted({e for r in rs for e in r["errors"]} - set(weak))
                cont = [r["contribution"] for r in rs if r.get("contribution") is not None]
                crashed = f" ({crashes} crashed)" if crashes else ""
                print(f"| {loop} | {kind} | {case} | {sum(r['flagged'] for r in rs)}/{len(rs)}"
                      f"{crashed} | {sum(r['detected'] for r in rs)}/{len(rs)} "
                      f"| {sum(r['violation'] for r in rs)} | {', '.join(weak) or '-'} "
                      f"| {', '.join(other) or '-'} "
                      f"| {np.median([r['epsilon'] for r in rs]):.2f} / {rs[0]['claim']:.2f} "
                      f"| {f'{np.median(cont):.2f}' if cont else '-'} "
                      f"| {np.median([r['cpu_s'] for r in rs]):.1f} |")


def matrix(path: Path) -> None:
    """The detection table of docs/training.md: one row per case, one column per loop and
    model; a cell is "detected / seeds" with how: V = the audit's bound above the claim or a
    weaker-run claim check (a violation), C = a configuration error only (weaker or not: the
    run is not the claimed mechanism); crashes counted."""
    rows = [r for r in journal.load(path).values()]

    def col(r: dict) -> tuple[str, str, bool]:
        return (r.get("loop", "opacus"), r["model"],
                r.get("branch", "branch" in r["id"].split("/")[4:]))

    cols = [(loop, kind, b) for loop in LOOPS for kind in MODELS + ("mlp",)
            for b in (False, True) if any(col(r) == (loop, kind, b) for r in rows)]
    print("| case | " + " | ".join(f"{loop} {kind}" + (" +branch" if b else "")
                                   for loop, kind, b in cols) + " |")
    print("|---|" + "---|" * len(cols))
    for case in CASES + JAX_ONLY:
        cells = []
        for key in cols:
            rs = [r for r in rows if col(r) == key and r["case"] == case]
            if not rs:
                cells.append("")
                continue
            crash = sum("crash" in r for r in rs)
            rs = [r for r in rs if "crash" not in r]
            v = sum(r["flagged"] for r in rs)
            c = sum(r["detected"] and not r["flagged"] for r in rs)
            how = " ".join(x for x, k in (("V", v), ("C", c)) if k)
            cells.append(f"{v + c}/{len(rs)}" + (f" {how}" if how and case != "correct"
                                                 else "")
                         + (f" ({crash} crashed)" if crash else ""))
        if any(cells):
            print(f"| {case} | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loop", choices=LOOPS, default="opacus")
    ap.add_argument("--seeds", type=int, default=3, help="seeds per flawed case")
    ap.add_argument("--correct-seeds", type=int, default=None,
                    help="seeds of the correct case (default: --seeds)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--models", nargs="*", default=None)
    ap.add_argument("--cases", nargs="*", default=None)
    ap.add_argument("--canaries", type=int, default=200)
    ap.add_argument("--epochs", type=int, default=5, help="epochs of 20 steps (q = 1/20)")
    ap.add_argument("--out", type=Path, default=Path("studies/out/own_models.jsonl"))
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--matrix", action="store_true", help="the docs' detection table")
    ap.add_argument("--tightness", action="store_true",
                    help="median audit epsilon / claim of correct runs, beside the simulator's")
    ap.add_argument("--branch", action="store_true",
                    help="wrap each model in a CanaryBranch before make_private (opacus) "
                         "or before the loop (func); jax: JaxTrainingConfig(canary_branch="
                         "True)")
    ap.add_argument("--epsilon", type=float, nargs="*", default=None,
                    help="claimed epsilons (sigma chosen for each; default sigma = 1; opacus)")
    ap.add_argument("--device", default="cpu",
                    help="where the model trains (opacus loop; e.g. cuda): the canaries' "
                         "placement and hooks run where its tensors live")
    args = ap.parse_args()
    if args.summary or args.matrix or args.tightness:
        (matrix if args.matrix else tightness if args.tightness else summary)(args.out)
        return
    if args.epsilon and args.loop != "opacus":
        ap.error("--epsilon applies to --loop opacus")
    if args.device != "cpu" and args.loop != "opacus":
        ap.error("--device applies to --loop opacus")

    jax = args.loop == "jax"
    models = args.models or (["mlp"] if jax else list(MODELS))
    cases = args.cases or list(JAX_CASES if jax else CASES)
    correct = args.seeds if args.correct_seeds is None else args.correct_seeds
    runner = RUNNERS[args.loop]
    done = journal.load(args.out)
    extra: dict[str, object] = {"branch": True} if args.branch else {}
    if args.device != "cpu":
        extra["device"] = args.device
    for seed, eps, kind, case in ((s, e, k, c)
                                  for s in range(args.first_seed,
                                                 args.first_seed + max(args.seeds, correct))
                                  for e in args.epsilon or [None]
                                  for k in models for c in cases):
        if seed >= args.first_seed + (correct if case == "correct" else args.seeds):
            continue
        rid = run_id(args.loop, kind, case, seed, branch=args.branch, epsilon=eps,
                     device=args.device)
        if rid in done:
            continue
        opts = dict(extra, **({"epsilon": eps} if eps is not None else {}))
        try:
            row = runner(kind, case, seed, canaries=args.canaries, epochs=args.epochs,
                         **opts)
        except Exception as exc:  # a crash is a result of the table, never hidden
            row = {"id": rid, "loop": args.loop,
                   "model": kind, "case": case, "seed": seed,
                   "crash": f"{type(exc).__name__}: {exc}"[:500]}
        journal.append(args.out, row)
        print(json.dumps({k: row.get(k) for k in ("id", "flagged", "epsilon", "claim",
                                                  "weaker_errors", "contribution",
                                                  "cpu_s", "crash")}), flush=True)


if __name__ == "__main__":
    main()
