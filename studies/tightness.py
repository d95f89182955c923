"""Benchmark: tightness and validity of the one-run methods, simulated and on REAL training.

    PYTHONPATH=src .venv/bin/python studies/tightness.py PART [options]

Parts (each appends every finished cell/run to a JSONL file under ``--out`` and skips what is
already there, so an interrupted run resumes):

* ``coverage``  -- finite-sample coverage of every one-run estimator under its model and under
  misspecification: Gaussian pairs (equal / unequal variances), DP-SGD simulator scores
  (Poisson-subsampled mixtures: the white-box "sum" and "lr" scores), heavy tails (Laplace,
  Student t with 3 degrees of freedom), few canaries (n = 100).  Over-claim rate = fraction
  of trials whose bound exceeds the true epsilon of the score pair (or of the mechanism).
* ``simulated`` -- the simulated counterpart of ``real``: the project's DP-SGD simulator at the
  same (sigma, q, T, canaries), ratio audit eps / theoretical eps per method.
* ``real``      -- real Opacus training on digits (``dpaudit.training``): white box (lr score),
  last iterate, black box (flipped-label input canaries; loss-drop score and the
  quantile-regression score of :mod:`dpaudit.attacks.quantile` on the final model), at
  eps = 1, 2, 4, 8, 16, ``--seeds`` seeds per cell.  Per-run (member, score) arrays are kept
  in ``.npz`` files next to the JSONL so the estimators can be re-run without training.
* ``canaries``  -- tightness against the number of white-box canaries (1,000 -> 10,000), on the
  simulator and (``--real``) on real training.
* ``dpsgd``     -- ``tight`` with the claim's DP-SGD family on the saved real runs and the
  simulator (``--sizes``, ``--threats``).
* ``extra``     -- ``tight`` / ``bits`` under ``eps_delta``, the claim's DP-SGD family and that
  family with three more nodes below the claim, on every saved run of a JSONL file.
* ``reserved``  -- black box with canary examples on reserved input features
  (``ExampleCanaries``; loss drop and final-model margin).
* ``undercount``-- the ``too_few_steps`` flaw (a 5x step under-count) with ``--canaries``
  white-box canaries: detections by the bound alone.
* ``family_mc`` -- Monte Carlo over-claim rate of ``tight`` / ``bits`` under the claim's
  DP-SGD family on the simulator.
* ``table``     -- print the Markdown tables of docs/performance.md from the JSONL files, and
  every method's over-claim rate on correct real training against its stated level.

Every row also carries ``best_possible``: the largest bound the finite-sample model-free
estimator (``hockey_stick``) can return with that many canaries (all in-scores above all
out-scores) -- the ceiling set by the canary count, which explains unmet targets.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import journal  # studies/journal.py (scripts run from studies/)
import numpy as np
from opacus_loop import opacus_steps  # studies/opacus_loop.py

from dpaudit.curves import GaussianDP, LaplaceDP, dpsgd_curve
from dpaudit.estimators.gaussian_pair import (
    gaussian_pair,
    gaussian_pair_epsilon,
    gaussian_pair_fit,
)
from dpaudit.estimators.hockey_stick import hockey_stick, hockey_stick_histogram
from dpaudit.estimators.one_run import audit_one_run
from dpaudit.mechanisms.dpsgd import DPSGDSimulator, last_iterate_curve

DELTA = 1e-5
CONF = 0.95
EPSILONS = (1.0, 2.0, 4.0, 8.0, 16.0)
Q, T, N = 0.05, 300, 1000
OUT = Path("studies/out/tightness")

# method name -> guarantee, in table order
METHODS = {"tight_dpsgd": "finite-sample (the claim's DP-SGD family)",
           "tight": "finite-sample (gdp family)", "steinke": "finite-sample",
           "mahloujifar": "finite-sample (gdp family)",
           "hockey_stick": "finite-sample (model-free)",
           "gaussian_pair": "estimate (Gaussian model, unequal variances; never a verdict)",
           "gaussian_pair_equal": "finite-sample (equal-variance Gaussian model)",
           "gaussian_pair_fit": "asymptotic estimate",
           "hockey_stick_histogram": "asymptotic estimate"}


def all_methods(member: np.ndarray, score: np.ndarray, *, delta: float = DELTA,
                confidence: float = CONF, seed: int = 0) -> dict[str, float]:
    """Every method's epsilon on one set of observations."""
    res = {r.method: r.epsilon for r in
           audit_one_run(member, score, delta=delta, confidence=confidence,
                         methods=("tight", "steinke", "mahloujifar"), family="gdp",
                         seed=seed)}
    hs = hockey_stick(member, score, delta, confidence)
    res["hockey_stick"] = hs.epsilon
    res["best_possible"] = hs.details["best_possible_epsilon"]
    res["gaussian_pair"] = gaussian_pair(member, score, delta, confidence).epsilon
    res["gaussian_pair_equal"] = gaussian_pair(member, score, delta, confidence,
                                               variances="equal").epsilon
    res["gaussian_pair_fit"] = gaussian_pair_fit(member, score, delta).epsilon
    res["hockey_stick_histogram"] = hockey_stick_histogram(member, score, delta).epsilon
    return res


_CACHE = OUT / "sigma_cache.json"


def _cached(key: str, compute: Any) -> float:
    """A float computed once per key and kept in ``sigma_cache.json`` (PLD solves take tens
    of seconds on a loaded machine)."""
    data = json.loads(_CACHE.read_text()) if _CACHE.exists() else {}
    if key not in data:
        data[key] = float(compute())
        _CACHE.parent.mkdir(parents=True, exist_ok=True)
        _CACHE.write_text(json.dumps(data, indent=1, sort_keys=True))
    return float(data[key])


def sigma_for(eps: float, q: float = Q, steps: int = T) -> float:
    """sigma with dpsgd_curve(sigma, q, T).epsilon(1e-5) = eps (dpaudit.training's solver)."""
    def solve() -> float:
        from dpaudit.training import sigma_for_epsilon

        return sigma_for_epsilon(eps, q, steps, DELTA)
    return _cached(f"sigma/{eps:g}/{q:g}/{steps}", solve)


def claimed_for(sigma: float, q: float = Q, steps: int = T) -> float:
    """Theoretical epsilon of dpsgd_curve(sigma, q, T) at delta = 1e-5 (cached)."""
    return _cached(f"claimed/{sigma:g}/{q:g}/{steps}",
                   lambda: dpsgd_curve(sigma, q, steps).epsilon(DELTA))


_jsonl = journal.load
_append = journal.append


# -- coverage ---------------------------------------------------------------------------------
def _numeric_epsilon(logpdf_p: Any, logpdf_q: Any, lo: float, hi: float, delta: float
                     ) -> float:
    """eps(delta) of a 1-D pair from densities on a fine grid (both orders)."""
    x = np.linspace(lo, hi, 400001)
    dx = x[1] - x[0]
    p, q = np.exp(logpdf_p(x)), np.exp(logpdf_q(x))
    best = 0.0
    for a, b in ((p, q), (q, p)):
        def h(e: float, a: np.ndarray = a, b: np.ndarray = b) -> float:
            return float(np.maximum(b - math.exp(e) * a, 0).sum() * dx)
        if h(0.0) <= delta:
            continue
        lo_e, hi_e = 0.0, 60.0
        for _ in range(60):
            mid = 0.5 * (lo_e + hi_e)
            lo_e, hi_e = (mid, hi_e) if h(mid) > delta else (lo_e, mid)
        best = max(best, hi_e)
    return best


def scenarios() -> dict[str, dict[str, Any]]:
    """name -> {draw(n, bits, rng) -> scores, true_eps, n}."""
    from scipy import stats

    out: dict[str, dict[str, Any]] = {}
    for mu in (1.0, 2.5):
        out[f"gauss_equal_mu{mu:g}"] = {
            "draw": lambda b, rng, mu=mu: rng.standard_normal(b.size) + mu * b,
            "true": GaussianDP(mu).epsilon(DELTA), "model": "Gaussian, equal variances"}
    out["gauss_unequal"] = {
        "draw": lambda b, rng: np.where(b, 2.0 + 1.3 * rng.standard_normal(b.size),
                                        rng.standard_normal(b.size)),
        "true": gaussian_pair_epsilon(DELTA, 0.0, 1.0, 2.0, 1.3),
        "model": "Gaussian, unequal variances"}
    # DP-SGD white box, q = 0.05, T = 1000, sigma giving eps = 8 (claim) -- Poisson mixtures
    sig8 = sigma_for(8.0)
    for kind in ("sum", "lr"):
        mech = DPSGDSimulator(noise_multiplier=sig8, sampling_rate=Q, steps=T,
                              score_kind=kind)
        true = (last_iterate_curve(sig8, Q, T).epsilon(DELTA) if kind == "sum"
                else dpsgd_curve(sig8, Q, T).epsilon(DELTA))
        out[f"dpsgd_{kind}_eps8"] = {
            "draw": lambda b, rng, m=mech: m.score(m.run(b, rng)), "true": true,
            "model": f"DP-SGD simulator ({kind} score): Binomial mixture"}
    lap = 2.0
    out["laplace"] = {"draw": lambda b, rng: rng.laplace(size=b.size) + lap * b,
                      "true": LaplaceDP(lap).epsilon(DELTA), "model": "Laplace shift (heavy tail)"}
    shift = 2.5
    out["student_t3"] = {
        "draw": lambda b, rng: rng.standard_t(3, size=b.size) + shift * b,
        "true": _numeric_epsilon(lambda x: stats.t.logpdf(x, 3),
                                 lambda x: stats.t.logpdf(x, 3, loc=shift), -300, 300, DELTA),
        "model": "Student t (3 df) shift (heavy tail)"}
    return out


def run_coverage(args: argparse.Namespace) -> None:
    path = args.out / "coverage.jsonl"
    done = _jsonl(path)
    scen = scenarios()
    for name, sc in scen.items():
        for n in args.sizes:
            cid = f"{name}/n{n}/t{args.trials}"
            if cid in done:
                continue
            t0 = time.perf_counter()
            rows = []
            for trial in range(args.trials):
                rng = np.random.default_rng([trial, n, 25])
                b = rng.random(n) < 0.5
                if b.all() or not b.any() or b.sum() < 3 or (~b).sum() < 3:
                    continue
                s = sc["draw"](b, rng)
                rows.append(all_methods(b, s, seed=trial))
            eps = {m: np.array([r[m] for r in rows]) for m in METHODS if m in rows[0]}
            row = {"id": cid, "scenario": name, "model": sc["model"], "n": n,
                   "trials": len(rows), "true_epsilon": sc["true"],
                   "overclaim_rate": {m: float((v > sc["true"] + 1e-9).mean())
                                      for m, v in eps.items()},
                   "median_ratio": {m: float(np.median(v) / sc["true"])
                                    for m, v in eps.items()},
                   "best_possible": float(np.median([r["best_possible"] for r in rows])),
                   "seconds": time.perf_counter() - t0}
            _append(path, row)
            print(json.dumps(row), flush=True)


# -- real training ----------------------------------------------------------------------------
def _black_box_run(cfg: Any) -> dict[str, np.ndarray]:
    """Train with flipped-label input canaries and return the member bits plus two scores:
    the training package's loss drop (initial vs final model) and the quantile-regression
    margin of :mod:`dpaudit.attacks.quantile` on the FINAL model only.

    The final model is read by wrapping ``dpaudit.training.trainer.loss_drop_scores`` (the
    function the trainer calls with the initial model, the final model and the canaries) for
    the duration of the call; training itself is the package's, unchanged."""
    import torch

    from dpaudit.attacks.basic import logit_margin
    from dpaudit.attacks.quantile import QuantileOptions, quantile_membership_scores
    from dpaudit.training import load_digits_data, train_with_canaries
    from dpaudit.training import trainer as trainer_mod

    captured: dict[str, Any] = {}
    original = trainer_mod.loss_drop_scores

    def capture(before: Any, after: Any, canaries: Any) -> np.ndarray:
        captured["model"], captured["canaries"] = after, canaries
        return original(before, after, canaries)

    trainer_mod.loss_drop_scores = capture
    try:
        run = train_with_canaries(cfg)
    finally:
        trainer_mod.loss_drop_scores = original
    model, can = captured["model"], captured["canaries"]
    data = load_digits_data(cfg.seed)
    # public non-members: held-out test images, each with 3 random wrong labels (the canary
    # construction), drawn from a generator that does not depend on the canaries' bits
    rng = np.random.default_rng([cfg.seed, 0x9A])
    xt = data.x_test.repeat(3, 1)
    yt = (data.y_test.repeat(3) + torch.from_numpy(rng.integers(1, 10, xt.shape[0]))) % 10
    with torch.no_grad():
        z_pub = model(xt).double().numpy()
        z_can = model(can.x).double().numpy()
    s_pub = logit_margin(z_pub, yt.numpy())
    s_can = logit_margin(z_can, can.y.numpy())

    def feats(x: Any, y: Any) -> np.ndarray:
        return np.hstack([x.numpy().reshape(x.shape[0], -1), np.eye(10)[y.numpy()]])

    q = quantile_membership_scores(feats(xt, yt), s_pub, feats(can.x, can.y), s_can,
                                   QuantileOptions(quantile=0.9, seed=cfg.seed))
    return {"member": run.member, "loss_drop": run.score, "margin": s_can, "quantile": q,
            "seconds": run.seconds, "accuracy": run.test_accuracy}


def _real_cell(threat: str, eps: float, seed: int, n: int, steps: int,
               input_kind: str = "flip") -> dict[str, Any]:
    from dpaudit.training import TrainingConfig, train_with_canaries

    sig = sigma_for(eps, Q, steps)
    claimed = claimed_for(sig, Q, steps)
    if threat == "black_box":
        cfg = TrainingConfig(canary="input", threat="black_box", canaries=n,
                             noise_multiplier=sig, sampling_rate=Q, steps=steps, seed=seed,
                             input_kind=input_kind)
        r = _black_box_run(cfg)
        scores = {k: r[k] for k in ("loss_drop", "margin", "quantile")}
        member, secs, acc = r["member"], r["seconds"], r["accuracy"]
    else:
        cfg = TrainingConfig(threat=threat, canaries=n, noise_multiplier=sig, canary_branch=False,
                             sampling_rate=Q, steps=steps, seed=seed, score="lr")
        run = train_with_canaries(cfg)
        scores = {"lr" if threat == "white_box" else "last_iterate": run.score}
        member, secs, acc = run.member, run.seconds, run.test_accuracy
    return {"sigma": sig, "claimed_epsilon": claimed, "member": member, "scores": scores,
            "seconds": secs, "test_accuracy": acc}


def run_real(args: argparse.Namespace) -> None:
    kind = "" if args.input_kind == "flip" else f"_{args.input_kind}"
    path = args.out / f"real_n{args.canaries}_T{args.steps}{kind}.jsonl"
    done = _jsonl(path)
    for seed in range(args.seeds):              # seed-major: every cell grows evenly
        for threat in args.threats:
            for eps in args.epsilons:
                rid = f"{threat}/eps{eps:g}/seed{seed}"
                if rid in done:
                    continue
                t0 = time.perf_counter()
                cell = _real_cell(threat, eps, seed, args.canaries, args.steps,
                                  args.input_kind)
                np.savez_compressed(args.out / f"{rid.replace('/', '_')}_n{args.canaries}"
                                               f"_T{args.steps}{kind}.npz",
                                    member=cell["member"], **cell["scores"])
                results = {k: all_methods(cell["member"], v, seed=seed)
                           for k, v in cell["scores"].items()}
                row = {"id": rid, "threat": threat, "epsilon": eps, "seed": seed,
                       "canaries": args.canaries, "steps": args.steps, "sigma": cell["sigma"],
                       "claimed_epsilon": cell["claimed_epsilon"], "results": results,
                       "train_seconds": cell["seconds"], "test_accuracy": cell["test_accuracy"],
                       "seconds": time.perf_counter() - t0}
                _append(path, row)
                print(json.dumps({k: row[k] for k in ("id", "claimed_epsilon", "seconds")}),
                      {k: {m: round(x, 2) for m, x in v.items()} for k, v in results.items()},
                      flush=True)


# -- simulated counterpart and canary counts -------------------------------------------------
def _sim_cell(threat: str, eps: float, seed: int, n: int, steps: int) -> dict[str, Any]:
    from dpaudit.mechanisms.base import as_rng

    sig = sigma_for(eps, Q, steps)
    mech = DPSGDSimulator(noise_multiplier=sig, sampling_rate=Q, steps=steps, threat=threat,
                          score_kind="lr" if threat == "white_box" else "sum")
    obs = mech.simulate(n, as_rng(seed))
    return {"sigma": sig, "claimed_epsilon": claimed_for(sig, Q, steps),
            "member": obs.member, "score": obs.score}


def run_simulated(args: argparse.Namespace, sizes: list[int] | None = None,
                  name: str = "simulated") -> None:
    path = args.out / f"{name}_T{args.steps}.jsonl"
    done = _jsonl(path)
    threats = [t for t in args.threats if t != "black_box"]
    for n in sizes or [args.canaries]:
        for seed in range(args.seeds):
            for threat in threats:
                for eps in args.epsilons:
                    rid = f"{threat}/eps{eps:g}/n{n}/seed{seed}"
                    if rid in done:
                        continue
                    t0 = time.perf_counter()
                    cell = _sim_cell(threat, eps, seed, n, args.steps)
                    res = all_methods(cell["member"], cell["score"], seed=seed)
                    row = {"id": rid, "threat": threat, "epsilon": eps, "seed": seed,
                           "canaries": n, "steps": args.steps, "sigma": cell["sigma"],
                           "claimed_epsilon": cell["claimed_epsilon"],
                           "results": {"simulator": res},
                           "seconds": time.perf_counter() - t0}
                    _append(path, row)
                    print(rid, {m: round(x, 2) for m, x in res.items()}, flush=True)


def run_canaries(args: argparse.Namespace) -> None:
    if args.real:
        for n in args.sizes:
            a = argparse.Namespace(**{**vars(args), "canaries": n, "threats": ["white_box"]})
            run_real(a)
    else:
        run_simulated(args, sizes=args.sizes, name="canaries")


# -- the claim's own DP-SGD null family ----------------------------------------------------
def run_dpsgd(args: argparse.Namespace) -> None:
    """``tight`` with the claim's DP-SGD family (``dpaudit.curves.accounting.dpsgd_family``,
    the train-audit default on main) on the saved real white-box / last-iterate runs and on
    the simulator at ``--sizes`` canaries (eps in ``--epsilons``, ``--seeds`` seeds).  Rows
    go to ``dpsgd.jsonl`` keyed by (file, run id); ``table`` adds them as ``tight_dpsgd``."""
    from dpaudit.curves.accounting import dpsgd_family

    path = args.out / "dpsgd.jsonl"
    done = _jsonl(path)
    jobs: list[tuple[str, float, Any]] = []
    real = _jsonl(args.out / f"real_n{N}_T{args.steps}.jsonl")
    for seed in range(args.seeds):
        for eps in args.epsilons:
            for threat in ("white_box", "last_iterate"):
                rid = f"{threat}/eps{eps:g}/seed{seed}"
                f = _npz(args.out, rid, N, args.steps)
                if rid in real and f is not None:
                    key = "lr" if threat == "white_box" else "last_iterate"
                    jobs.append((f"real_n{N}_T{args.steps}/{rid}/{key}", eps,
                                 lambda f=f, k=key: (np.load(f)["member"], np.load(f)[k])))
            for n in args.sizes:
                for threat in [t for t in args.threats if t != "black_box"]:
                    rid = f"{threat}/eps{eps:g}/n{n}/seed{seed}"
                    jobs.append((f"canaries_T{args.steps}/{rid}/simulator", eps,
                                 lambda e=eps, s=seed, n=n, t=threat: (
                                     lambda c: (c["member"], c["score"]))(
                                     _sim_cell(t, e, s, n, args.steps))))
    fams: dict[float, Any] = {}
    for key, eps, load in jobs:
        if key in done:
            continue
        t0 = time.perf_counter()
        sig = sigma_for(eps, Q, args.steps)
        if sig not in fams:
            fams[sig] = dpsgd_family(sig, Q, args.steps, DELTA)
        fam = fams[sig]
        member, score = load()
        r = audit_one_run(member, score, delta=DELTA, confidence=CONF, methods=("tight",),
                          family=fam, seed=0)[0]
        row = {"id": key, "epsilon": r.epsilon, "seconds": time.perf_counter() - t0}
        _append(path, row)
        print(json.dumps(row), flush=True)


# -- the default families: eps_delta (one-run default) and the claim's DP-SGD family --------
EXTRA = {"tight_dpsgd": "finite-sample (the claim's DP-SGD family; train-audit default)",
         "bits_dpsgd": "finite-sample (the claim's DP-SGD family)",
         "tight_eps_delta": "finite-sample (eps_delta family; one-run default, no assumption)",
         "bits_eps_delta": "finite-sample (eps_delta family, no assumption)",
         "tight_dpsgd_wide": "finite-sample (the claim's DP-SGD family, 3 more nodes below "
                             "the claim)",
         "bits_dpsgd_wide": "finite-sample (the claim's DP-SGD family, 3 more nodes below "
                            "the claim)"}
#: the DP-SGD family's sigma factors before the three nodes below sigma / 0.5 were added
#: (the ``dpsgd`` columns); ``dpsgd_wide`` is the library default ``DPSGD_FAMILY_FACTORS``
NARROW_FACTORS = (0.5, 0.7, 0.85, 1.0, 1.15, 1.35, 1.6, 2.0, 2.6, 3.5, 5.0, 8.0)
WIDE_FACTORS = (0.15, 0.25, 0.35) + NARROW_FACTORS


def _npz(out: Path, rid: str, n: int, steps: int) -> Path | None:
    """The saved arrays of a real run (two naming generations)."""
    stem = rid.replace("/", "_")
    for name in (f"{stem}_n{n}_T{steps}.npz", f"{stem}_n{n}.npz"):
        if (out / name).exists():
            return out / name
    return None


def run_extra(args: argparse.Namespace) -> None:
    """``tight`` and ``bits`` under the null families that need no assumption for a DP-SGD
    claim -- ``eps_delta`` (the one-run default), the claim's own DP-SGD family
    (``dpaudit.curves.accounting.dpsgd_family``, the train-audit default) and the same family
    with three more nodes below the claim (``WIDE_FACTORS``: sigma / 0.15, / 0.25, / 0.35;
    validity unchanged, members below the claim never make a violation) -- on every saved
    real run (every threat and score).  Rows go to ``extra.jsonl`` keyed by (file, run id,
    score), one method set at a time (a re-run adds what is missing); ``table`` merges
    them."""
    from dpaudit.curves.accounting import dpsgd_family

    path = args.out / "extra.jsonl"
    done = _jsonl(path)
    fams: dict[tuple[float, float, bool], Any] = {}
    src = (args.out / args.source if args.source
           else args.out / f"real_n{args.canaries}_T{args.steps}.jsonl")
    for rid, row in sorted(_jsonl(src).items(), key=lambda kv: (kv[1]["seed"], kv[0])):
        if src.stem.startswith("reserved_"):
            f: Path | None = args.out / (f"reserved_{rid.replace('/', '_')}_"
                                         f"{src.stem[len('reserved_'):]}.npz")
        else:
            f = _npz(args.out, rid, row["canaries"], row["steps"])
        if f is None or not f.exists():
            continue
        data = np.load(f)
        for score in row["results"]:
            key = f"{src.stem}/{rid}/{score}"
            res: dict[str, Any] = dict(done.get(key, {"id": key}))
            if score not in data or all(m in res for m in EXTRA):
                continue
            t0 = time.perf_counter()
            sig, q = row["sigma"], row.get("sampling_rate", Q)
            for fam_name in ("eps_delta", "dpsgd", "dpsgd_wide"):
                if f"tight_{fam_name}" in res:
                    continue
                fam: Any = "eps_delta"
                if fam_name != "eps_delta":
                    wide = fam_name == "dpsgd_wide"
                    if (sig, q, wide) not in fams:
                        fams[sig, q, wide] = dpsgd_family(
                            sig, q, row["steps"], DELTA,
                            factors=WIDE_FACTORS if wide else NARROW_FACTORS)
                    fam = fams[sig, q, wide]
                for r in audit_one_run(data["member"], data[score], delta=DELTA,
                                       confidence=CONF, methods=("tight", "bits"),
                                       family=fam, seed=0):
                    res[f"{r.method}_{fam_name}"] = r.epsilon
            res["seconds"] = time.perf_counter() - t0
            _append(path, res)
            print(json.dumps(res), flush=True)


def run_family_mc(args: argparse.Namespace) -> None:
    """Monte Carlo over-claim rate of ``tight`` and ``bits`` with the claim's DP-SGD family on
    the simulator's white-box lr scores (``--canaries``, q, ``--steps``) at each
    ``--epsilons`` claim, ``--trials`` trials: the rows that come closest to the claim on real
    training, checked where the truth is known.  Rows to ``family_mc.jsonl``."""
    from dpaudit.curves.accounting import dpsgd_family
    from dpaudit.mechanisms.base import as_rng

    path = args.out / "family_mc.jsonl"
    done = _jsonl(path)
    for eps in args.epsilons:
        rid = f"eps{eps:g}/n{args.canaries}/T{args.steps}/t{args.trials}"
        if rid in done:
            continue
        t0 = time.perf_counter()
        sig = sigma_for(eps, Q, args.steps)
        claim = claimed_for(sig, Q, args.steps)
        fam = dpsgd_family(sig, Q, args.steps, DELTA)
        mech = DPSGDSimulator(noise_multiplier=sig, sampling_rate=Q, steps=args.steps,
                              score_kind="lr")
        vals: dict[str, list[float]] = {"tight": [], "bits": []}
        for t in range(args.trials):
            obs = mech.simulate(args.canaries, as_rng(1000 + t))
            for r in audit_one_run(obs.member, obs.score, delta=DELTA, confidence=CONF,
                                   methods=("tight", "bits"), family=fam, seed=0):
                vals[r.method].append(r.epsilon)
        row = {"id": rid, "claimed_epsilon": claim,
               "overclaims": {m: int((np.array(v) > claim).sum()) for m, v in vals.items()},
               "median_ratio": {m: float(np.median(v) / claim) for m, v in vals.items()},
               "trials": args.trials, "seconds": time.perf_counter() - t0}
        _append(path, row)
        print(json.dumps(row), flush=True)


# -- black box with canary examples on reserved input features --------------------------------
def _reserved_black_box(eps: float, seed: int, n: int, steps: int, hidden: int,
                        value: float) -> dict[str, Any]:
    """Real Opacus training (Poisson sampling, q = 1 / len(loader)) of the digits MLP with
    ``n`` canary examples on reserved input features (:class:`dpaudit.training.ExampleCanaries`:
    canary i is ``value`` on its own reserved feature, so only it moves its column of the
    reserved branch), the documented user loop of docs/training.md.  Black-box scores: the
    canary's loss before minus after training, and its logit margin on the final model
    alone."""
    import copy

    import torch
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    from dpaudit.attacks.basic import logit_margin
    from dpaudit.training import ExampleCanaries, load_data, make_model

    torch.set_num_threads(1)
    sig = sigma_for(eps, Q, steps)
    data = load_data("digits", seed=seed, reserved=n)
    model = make_model("mlp", seed=seed, hidden=hidden, in_features=64, reserved=n)
    before = copy.deepcopy(model)
    can = ExampleCanaries.for_model(model, n, sampling_rate=Q, max_grad_norm=1.0,
                                    num_classes=10, seed=seed, value=value)
    xc, yc = can.included()
    train = TensorDataset(torch.cat([data.x_train, xc]), torch.cat([data.y_train, yc]))
    batch = max(1, round(Q * len(train)))
    torch.manual_seed(seed)
    engine = PrivacyEngine()
    model, opt, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=2.0),
        data_loader=DataLoader(train, batch_size=batch), noise_multiplier=sig,
        max_grad_norm=1.0)
    q = 1.0 / len(loader)
    t0 = time.perf_counter()
    opacus_steps(model, opt, loader, steps)
    with torch.no_grad():
        margin = logit_margin(model(can.x).double().numpy(), can.y.numpy())
    return {"member": np.asarray(can.bits, dtype=bool), "sigma": sig, "q": q,
            "scores": {"loss_drop": can.black_box_scores(before, model), "margin": margin},
            "seconds": time.perf_counter() - t0}


def run_reserved(args: argparse.Namespace) -> None:
    """Black box with reserved-feature canary examples at ``--epsilons``, ``--seeds`` seeds.
    The claim is that of the run (sigma, q = 1 / len(loader), T); rows to
    ``reserved_n{N}_T{T}_h{H}_v{V}.jsonl`` (same layout as ``real``, so ``table`` shows them)."""
    tag = f"n{args.canaries}_T{args.steps}_h{args.hidden}_v{args.value:g}"
    path = args.out / f"reserved_{tag}.jsonl"
    done = _jsonl(path)
    for seed in range(args.seeds):
        for eps in args.epsilons:
            rid = f"black_box/eps{eps:g}/seed{seed}"
            if rid in done:
                continue
            t0 = time.perf_counter()
            cell = _reserved_black_box(eps, seed, args.canaries, args.steps, args.hidden,
                                       args.value)
            claimed = claimed_for(cell["sigma"], cell["q"], args.steps)
            np.savez_compressed(args.out / f"reserved_{rid.replace('/', '_')}_{tag}.npz",
                                member=cell["member"], **cell["scores"])
            results = {k: all_methods(cell["member"], v, seed=seed)
                       for k, v in cell["scores"].items()}
            row = {"id": rid, "threat": "black_box", "epsilon": eps, "seed": seed,
                   "canaries": args.canaries, "steps": args.steps, "sigma": cell["sigma"],
                   "sampling_rate": cell["q"], "claimed_epsilon": claimed, "results": results,
                   "train_seconds": cell["seconds"], "seconds": time.perf_counter() - t0}
            _append(path, row)
            print(json.dumps({k: row[k] for k in ("id", "claimed_epsilon", "seconds")}),
                  {k: {m: round(x, 2) for m, x in v.items()} for k, v in results.items()},
                  flush=True)


# -- a 5x step under-count, caught by the statistical audit alone ---------------------------
def run_undercount(args: argparse.Namespace) -> None:
    """Real training under the ``too_few_steps`` flaw (T steps run, the claim is for T / 5):
    sigma solved so that the CLAIM (T / 5 steps) has epsilon ``--claim`` (2.0); the true
    epsilon is that of T steps.  White box, ``--canaries`` gradient canaries, the default
    ``train_audit`` (tight, the claim's own DP-SGD family, 95%).  *Detected* = the bound
    exceeds the claim (the statistical audit alone; the deterministic claim checks, which
    also flag the flaw, are recorded separately).  Rows to ``undercount_n{N}_T{T}.jsonl``."""
    from dpaudit.training import TrainingConfig, train_audit

    claim_steps = args.steps // 5
    sig = sigma_for(args.claim, Q, claim_steps)
    true = claimed_for(sig, Q, args.steps)
    path = args.out / f"undercount_n{args.canaries}_T{args.steps}_h{args.hidden}.jsonl"
    done = _jsonl(path)
    for seed in range(args.seeds):
        rid = f"seed{seed}"
        if rid in done:
            continue
        t0 = time.perf_counter()
        cfg = TrainingConfig(threat="white_box", canaries=args.canaries, noise_multiplier=sig,
                             canary_branch=False,
                             sampling_rate=Q, steps=args.steps, seed=seed, score="lr",
                             flawed="too_few_steps", hidden=args.hidden)
        a = train_audit(cfg)
        np.savez_compressed(args.out / f"undercount_{rid}_n{args.canaries}_T{args.steps}"
                                       f"_h{args.hidden}.npz",
                            member=a.run.member, lr=a.run.score)
        row = {"id": rid, "seed": seed, "sigma": sig, "canaries": args.canaries,
               "steps": args.steps, "claimed_steps": claim_steps,
               "claimed_epsilon": a.claimed_epsilon, "true_epsilon": true,
               "results": {r.method: r.epsilon for r in a.results},
               "detected": bool(a.violation),
               "configuration_errors": a.configuration_errors,
               "test_accuracy": a.run.test_accuracy, "seconds": time.perf_counter() - t0}
        _append(path, row)
        print(json.dumps(row), flush=True)
    rows = list(_jsonl(path).values())
    if rows:
        eps = sorted(r["results"]["tight"] for r in rows)
        print(f"detected by the bound alone: {sum(r['detected'] for r in rows)}/{len(rows)}; "
              f"tight min / median {eps[0]:.2f} / {eps[len(eps) // 2]:.2f}; claim "
              f"{rows[0]['claimed_epsilon']:.2f}, true {rows[0]['true_epsilon']:.2f}")


# -- tables -----------------------------------------------------------------------------------
def _level(m: str) -> str:
    """The over-claim rate a method states: 1 - confidence for a finite-sample bound."""
    g = {**METHODS, **EXTRA}[m]
    return f"<= {1 - CONF:.0%}" if g.startswith("finite-sample") else "none stated"


def _table(rows: list[dict[str, Any]], score: str, methods: list[str]) -> list[str]:
    eps_vals = sorted({r["epsilon"] for r in rows})
    seeds = {e: sum(1 for r in rows if r["epsilon"] == e) for e in eps_vals}
    head = "| method | guarantee | " + " | ".join(
        f"eps={e:g} ({seeds[e]} seeds)" for e in eps_vals) + " | over-claims | stated |"
    out = [head, "|" + "---|" * (len(eps_vals) + 4)]
    for m in [*methods, "best_possible"]:
        cells, over, total = [], 0, 0
        if not any(m in r["results"][score] for r in rows):
            continue
        for e in eps_vals:
            sel = [r for r in rows if r["epsilon"] == e and m in r["results"][score]]
            if not sel:
                cells.append("–")
                continue
            vals = np.array([r["results"][score][m] for r in sel])
            claimed = np.array([r["claimed_epsilon"] for r in sel])
            cells.append(f"{np.median(vals / claimed) * 100:.0f}%"
                         + (f" ({len(sel)})" if len(sel) < seeds[e] else ""))
            over += int((vals > claimed).sum())
            total += len(sel)
        if m == "best_possible":
            out.append("| best_possible | ceiling (all guesses right) | " + " | ".join(cells)
                       + " | | |")
            continue
        out.append(f"| {m} | {({**METHODS, **EXTRA})[m]} | " + " | ".join(cells)
                   + f" | {over}/{total} ({over / total:.0%}) | {_level(m)} |")
    return out


def run_table(args: argparse.Namespace) -> None:
    methods = [*EXTRA, *(m for m in METHODS if m not in EXTRA)]
    dp = {k: v["epsilon"] for k, v in _jsonl(args.out / "dpsgd.jsonl").items()}
    extra = _jsonl(args.out / "extra.jsonl")
    pooled: dict[str, list[int]] = {}
    for path in sorted(args.out.glob("*.jsonl")):
        if path.name in ("coverage.jsonl", "dpsgd.jsonl", "extra.jsonl",
                         "family_mc.jsonl") or path.name.startswith("undercount"):
            continue
        rows = list(_jsonl(path).values())
        real = path.name.startswith(("real_", "reserved_"))
        for r in rows:
            for score, res in r["results"].items():
                key = f"{path.stem}/{r['id']}/{score}"
                if key in dp:
                    res["tight_dpsgd"] = dp[key]
                for m in EXTRA:
                    if m in extra.get(key, {}):
                        res[m] = extra[key][m]
                for m, v in res.items():
                    if real and m != "best_possible":
                        c = pooled.setdefault(m, [0, 0])
                        c[0] += int(v > r["claimed_epsilon"])
                        c[1] += 1
        groups: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
        for r in rows:
            for score in r["results"]:
                groups.setdefault((r["threat"], r["canaries"], score), []).append(r)
        for (threat, n, score), sel in sorted(groups.items()):
            print(f"\n#### {path.stem}: {threat}, {n} canaries, score {score} "
                  f"(median audit eps / theoretical eps; over-claims = runs with bound > "
                  f"theoretical eps)\n")
            print("\n".join(_table(sel, score, methods)))
    if pooled:
        print("\n#### over-claims on correct real training, pooled over every threat, score, "
              "epsilon and seed (value > theoretical eps)\n")
        print("| method | guarantee | over-claims | rate | stated level |")
        print("|---|---|---|---|---|")
        for m in methods:
            if m in pooled:
                o, t = pooled[m]
                print(f"| {m} | {({**METHODS, **EXTRA})[m]} | {o}/{t} | {o / t:.1%} | "
                      f"{_level(m)} |")
    cov = args.out / "coverage.jsonl"
    if cov.exists():
        print("\n#### coverage: over-claim rate (bound > true eps) / median ratio\n")
        cm = [m for m in METHODS if m != "tight_dpsgd"]
        print("| scenario | n | true eps | " + " | ".join(cm) + " |")
        print("|" + "---|" * (len(cm) + 3))
        for r in _jsonl(cov).values():
            cells = [f"{r['overclaim_rate'][m] * 100:.1f}% / {r['median_ratio'][m]:.2f}"
                     for m in cm]
            print(f"| {r['scenario']} | {r['n']} | {r['true_epsilon']:.2f} | "
                  + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=["coverage", "simulated", "real", "canaries", "table",
                                     "dpsgd", "undercount", "extra", "reserved",
                                     "family_mc"])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--canaries", type=int, default=N)
    ap.add_argument("--steps", type=int, default=T)
    ap.add_argument("--threats", nargs="+", default=["white_box", "last_iterate", "black_box"])
    ap.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    ap.add_argument("--real", action="store_true", help="canaries: on real training")
    ap.add_argument("--input-kind", default="flip", choices=["flip", "random_label", "ood"],
                    help="black box: input canary kind (the training package's)")
    ap.add_argument("--claim", type=float, default=2.0,
                    help="undercount: claimed epsilon (of T / 5 steps)")
    ap.add_argument("--hidden", type=int, default=256,
                    help="undercount: hidden units of the MLP")
    ap.add_argument("--source", default=None,
                    help="extra: the JSONL file of runs (default real_n{canaries}_T{steps})")
    ap.add_argument("--value", type=float, default=10.0,
                    help="reserved: the canary example's value on its reserved feature")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    {"coverage": run_coverage, "real": run_real, "simulated": run_simulated,
     "canaries": run_canaries, "table": run_table, "dpsgd": run_dpsgd,
     "undercount": run_undercount, "extra": run_extra,
     "reserved": run_reserved, "family_mc": run_family_mc}[args.part](args)


if __name__ == "__main__":
    main()
