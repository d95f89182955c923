"""Runners for Beyond Worst Case's figures: ``risk-figure1``, ``risk-figure2``, ``risk-marginals``.

* ``risk-figure1`` -- Fig. 1: posterior-success bounds for one target and one guess vs the prior,
  epsilon in {1, 2, 4}; (a) pure eps-DP: ours (Thm 3.2), MMC f_{eps,0} at p = 1/K, ReRo;
  (b) (eps, delta)-DP, delta = 1e-5 (unstated in the paper, BWC notes §8 item 5): ours (Thm 3.5),
  MMC f_{eps,delta}, ReRo + delta, Narcissus.
* ``risk-figure2`` -- Fig. 2 (advantage bounds of Cor 3.4 vs epsilon for the uniform 9-digit,
  password and PII priors; eps_protect vs prior) and Fig. 3 (case study 1: extraction attack
  success on the DP-trained n-gram model vs the Thm 3.5 / Cor 3.4 / MMC-G_mu bounds and the
  prior baseline, 10-candidate scaled priors).
* ``risk-marginals`` -- Figs. 4-7 (case study 2: M-AI from noisy 3-way marginals on census-like
  data): one column at eps = 1, an epsilon sweep including inf, multi-column at eps = 3 in
  BayNet visit order with 3 known columns, and L1-approximate reconstruction of AGEP.

Every bound is computed by :mod:`dpaudit.risk`; these runners only orchestrate and plot.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.papers.experiments.plotting import resolve_size, save_figure, write_csv
from dpaudit.papers.experiments.registry import experiment

__all__ = ["run_figure1", "run_figure2", "run_marginals"]

DELTA = 1e-5


def _plt():  # noqa: ANN202 - matplotlib.pyplot module
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


# --------------------------------------------------------------------------------------------
# Figure 1
# --------------------------------------------------------------------------------------------

@experiment("risk-figure1", "posterior-success bounds vs prior: ours, MMC, ReRo, Narcissus",
            "Beyond Worst Case Fig. 1")
def run_figure1(out_dir: Path, *, full: bool = False, seed: int = 0,
                size: str | None = None) -> list[Path]:
    """Fig. 1 curves (deterministic; size "full" only refines the prior grid)."""
    from dpaudit.risk import mmc_bound, narcissus_bound, rero_bound, single_target_bound

    del seed
    out_dir = Path(out_dir)
    size = resolve_size(full, size)
    grid = np.linspace(0.001, 0.999, {"tiny": 49, "small": 199, "full": 999}[size])
    ks = np.array([2, 3, 4, 5, 10, 20, 100])
    rows: list[dict[str, Any]] = []
    for eps in (1.0, 2.0, 4.0):
        pure_b = np.asarray(single_target_bound(grid, eps, 0.0, theorem="thm3.2"))
        ours35 = np.asarray(single_target_bound(grid, eps, DELTA, theorem="thm3.5"))
        rero_p = np.asarray(rero_bound(grid, eps))
        rero_a = np.asarray(rero_bound(grid, eps, DELTA))
        narc = np.asarray(narcissus_bound(grid, eps, DELTA))
        for i, p in enumerate(grid):
            rows.append({"panel": "curve", "epsilon": eps, "prior": p, "ours_pure": pure_b[i],
                         "ours_thm35": ours35[i], "rero_pure": rero_p[i],
                         "rero_approx": rero_a[i], "narcissus": narc[i]})
        mmc0 = np.atleast_1d(mmc_bound(ks, epsilon=eps, delta=0.0))
        mmcd = np.atleast_1d(mmc_bound(ks, epsilon=eps, delta=DELTA))
        for j, k in enumerate(ks):
            rows.append({"panel": "mmc", "epsilon": eps, "prior": 1.0 / k, "K": int(k),
                         "mmc_pure": mmc0[j], "mmc_approx": mmcd[j]})
    csv_path = write_csv(out_dir / "risk_figure1.csv", rows)
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    colors = {1.0: "C0", 2.0: "C1", 4.0: "C2"}
    for ax, pure in zip(axes, (True, False), strict=True):
        for eps, col in colors.items():
            cur = [r for r in rows if r["panel"] == "curve" and r["epsilon"] == eps]
            pr = np.array([r["prior"] for r in cur])
            ours = [r["ours_pure" if pure else "ours_thm35"] for r in cur]
            rero = [r["rero_pure" if pure else "rero_approx"] for r in cur]
            ax.plot(pr, ours, color=col, label=f"ours eps={eps:g}")
            ax.plot(pr, rero, color=col, ls="--", label=f"ReRo eps={eps:g}")
            if not pure:
                ax.plot(pr, [r["narcissus"] for r in cur], color=col, ls=":", lw=1,
                        label=f"Narcissus eps={eps:g}")
            mm = [r for r in rows if r["panel"] == "mmc" and r["epsilon"] == eps]
            ax.scatter([r["prior"] for r in mm], [r["mmc_pure" if pure else "mmc_approx"]
                                                  for r in mm], color=col, marker="o", s=18)
        ax.plot([0, 1], [0, 1], color="gray", ls=":", label="prior (no mechanism)")
        ax.set_xlabel("prior success probability p")
        ax.set_title("(a) eps-DP" if pure else f"(b) (eps, delta={DELTA:g})-DP")
    axes[0].set_ylabel("posterior success bound (dots: MMC at p = 1/K)")
    axes[1].legend(fontsize=6, ncol=2)
    fig.tight_layout()
    png = out_dir / "risk_figure1.png"
    save_figure(fig, png)
    plt.close(fig)
    return [csv_path, png]


# --------------------------------------------------------------------------------------------
# Figures 2 and 3 (case study 1)
# --------------------------------------------------------------------------------------------

def _measured_pii(size: str, seed: int) -> Any:
    """The measured PII prior (Faker emails + public character LM; papers.casestudies.pii)."""
    from dpaudit.papers.casestudies.pii import measure_pii_prior
    from dpaudit.papers.experiments.lm_extraction import SIZE_SETTINGS

    n_seq, n_pub, epochs = SIZE_SETTINGS[size]["pii"]
    return measure_pii_prior(n_sequences=n_seq, n_public=n_pub, epochs=epochs, seed=seed)


def _extraction_priors(pii: Any) -> dict[str, Any]:
    from dpaudit.papers.casestudies.extraction import digit_secret_prior
    from dpaudit.risk.priors import password_prior

    # scaled down to 10 candidates (paper §5.2); the password top-10 is Zipf(1.1, 10) for any
    # support N >= 10.  PII: the measured per-sequence priors, top 10 renormalised and
    # averaged rank by rank (the count model takes one prior for all its targets).
    top = pii.scaled_down(10).mean(axis=0)
    return {
        "uniform": digit_secret_prior(np.full(10, 0.1), name="uniform"),
        "password": digit_secret_prior(password_prior().scaled_down(10).probs,
                                       name="password"),
        "pii": digit_secret_prior(top / top.sum(), name="pii"),
    }


@experiment("risk-figure2", "advantage / eps_protect vs prior and n-gram extraction attack",
            "Beyond Worst Case Figs. 2-3")
def run_figure2(out_dir: Path, *, full: bool = False, seed: int = 0,
                size: str | None = None) -> list[Path]:
    """Fig. 2 bounds and the Fig. 3 extraction case study (runs: 300 small / 2000 full)."""
    from dpaudit.papers.casestudies.corpus import load_corpus
    from dpaudit.papers.casestudies.extraction import ExtractionSetting, run_extraction
    from dpaudit.risk import advantage_bound, epsilon_protect
    from dpaudit.risk.priors import UniformPrior, password_prior, pii_like_prior

    size = resolve_size(full, size)
    full = size == "full"
    out_dir = Path(out_dir)
    rng = np.random.default_rng(seed)
    # ---- Fig. 2(a): advantage bounds (Cor 3.4, delta = 1e-5)
    pw_lit, pw_imp = password_prior("literal"), password_prior("implied")
    pii = _measured_pii(size, seed)
    cp = pii.canary_priors
    uni = UniformPrior.digits(9)
    canaries = {
        "uniform (any)": uni.max(),
        "password min": pw_lit.min(), "password median": pw_lit.median(),
        "password max (literal Zipf 1.1, 1e9)": pw_lit.max(),
        "password max (implied Zipf 1.1, 700; reproduces the paper)": pw_imp.max(),
        "PII p10 (measured)": float(np.quantile(cp, 0.1)),
        "PII median (measured)": float(np.median(cp)), "PII max (measured)": float(cp.max()),
        "PII max (paper-implied, back-solved)": pii_like_prior().max(),
    }
    eps_grid = np.array([0.1, 0.25, 0.5, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 17.8, 20, 25])
    rows2: list[dict[str, Any]] = []
    for name, p in canaries.items():
        adv = np.atleast_1d(advantage_bound(p, eps_grid, DELTA, theorem="cor3.4"))
        for e, a in zip(eps_grid, adv, strict=True):
            rows2.append({"figure": "2a", "canary": name, "prior": p, "epsilon": e,
                          "adv_bound": a})
    p_grid = np.logspace(-12, math.log10(0.99), 120 if full else 60)
    for p in p_grid:
        rows2.append({"figure": "2b", "canary": "grid", "prior": p,
                      "eps_protect": float(epsilon_protect(p, 0.05, DELTA))})
    for name, p in canaries.items():
        rows2.append({"figure": "2b", "canary": name, "prior": p,
                      "eps_protect": float(epsilon_protect(p, 0.05, DELTA))})
    # ---- Fig. 3: extraction attack on the DP n-gram model
    corpus = load_corpus()
    priors = _extraction_priors(pii)
    runs = 2000 if full else (100 if size == "tiny" else 300)
    n_targets = 1 if full else 10
    eps3 = [0.25, 0.5, 1, 2, 4, 8, 10, 16] if full else [0.5, 1, 2, 4, 8, 16]
    if size == "tiny":
        eps3 = [1, 16]
    rows3: list[dict[str, Any]] = []
    for prior in priors.values():
        for attack in ("model", "model+prior", "posterior"):
            for e in eps3:
                st = ExtractionSetting(epsilon=float(e), delta=DELTA, n_targets=n_targets,
                                       runs=runs, attack=attack)
                res = run_extraction(corpus, prior, st, rng)
                rows3.append({"figure": "3", "seed": seed, **res.row()})
    csv2 = write_csv(out_dir / "risk_figure2.csv", rows2)
    csv3 = write_csv(out_dir / "risk_figure3_extraction.csv", rows3)
    plt = _plt()
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    for name in canaries:
        r = [x for x in rows2 if x["figure"] == "2a" and x["canary"] == name]
        ax[0].plot([x["epsilon"] for x in r], [max(x["adv_bound"], 1e-6) for x in r],
                   label=name)
    ax[0].axhline(0.05, color="gray", ls=":")
    ax[0].set(xlabel="epsilon", ylabel="advantage bound (Cor 3.4)", yscale="log",
              title="Fig. 2(a)")
    ax[0].legend(fontsize=6)
    g = [x for x in rows2 if x["figure"] == "2b" and x["canary"] == "grid"]
    ax[1].plot([x["prior"] for x in g], [x["eps_protect"] for x in g], color="k")
    for x in rows2:
        if x["figure"] == "2b" and ("max" in x["canary"] or x["canary"] == "uniform (any)"):
            ax[1].scatter([x["prior"]], [x["eps_protect"]], s=20, label=x["canary"])
    ax[1].set(xscale="log", xlabel="prior probability", ylabel="eps_protect (Adv <= 0.05)",
              title="Fig. 2(b)")
    ax[1].legend(fontsize=6)
    fig.tight_layout()
    png2 = out_dir / "risk_figure2.png"
    save_figure(fig, png2)
    plt.close(fig)
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), sharey=True)
    for ax_, pname in zip(axes, priors, strict=True):
        rr = [x for x in rows3 if x["prior"] == pname]
        e = sorted({x["epsilon"] for x in rr})
        first = [next(x for x in rr if x["epsilon"] == v) for v in e]
        ax_.plot(e, [x["thm35_bound"] for x in first], "k-", label="ours (Thm 3.5, n=1)")
        post = [next(x for x in rr if x["epsilon"] == v and x["attack"] == "posterior")
                for v in e]
        ax_.plot(e, [x["cor34_bound"] for x in post], "k--",
                 label="ours (Cor 3.4, posterior attack)")
        if pname == "uniform":
            ax_.plot(e, [x["mmc_gmu_bound"] for x in first], "C3-.", label="MMC G_mu")
        for j, attack in enumerate(("model", "model+prior", "posterior")):
            a = [next(x for x in rr if x["epsilon"] == v and x["attack"] == attack) for v in e]
            ax_.errorbar(e, [x["attack_rate"] for x in a],
                         yerr=[np.nan_to_num(1.96 * x["attack_rate_se"]) for x in a],
                         fmt="o-", ms=3, color=f"C{j}", label=f"attack: {attack}")
        ax_.axhline(first[0]["p_star"], color="gray", ls=":", label="prior baseline")
        ax_.set(xscale="log", xlabel="epsilon (delta = 1e-5)", title=f"Fig. 3: {pname}")
    axes[0].set_ylabel("posterior success (attack accuracy)")
    axes[0].legend(fontsize=6)
    fig.tight_layout()
    png3 = out_dir / "risk_figure3_extraction.png"
    save_figure(fig, png3)
    plt.close(fig)
    return [csv2, png2, csv3, png3]


# --------------------------------------------------------------------------------------------
# Figures 4-7 (case study 2)
# --------------------------------------------------------------------------------------------

@experiment("risk-marginals", "M-AI attack on noisy 3-way marginals vs Thm 3.5 bounds and prior",
            "Beyond Worst Case Figs. 4-7")
def run_marginals(out_dir: Path, *, full: bool = False, seed: int = 0,
                  public_records: np.ndarray | None = None,
                  size: str | None = None, prior_weight: float = 0.0) -> list[Path]:
    """Case study 2 on census-like data.

    ``prior_weight`` is the KL penalty of :class:`~dpaudit.papers.casestudies.rap.RAPOptions`
    (0 = plain RAP, as in the paper).

    The "raw" data are ``public_records`` (e.g. ``load_pums_csv(path)`` on a real ACS PUMS file)
    or, by default, 20,000 records of
    :func:`~dpaudit.papers.casestudies.census.acs_generator_network`; the
    BayNet prior is fitted to them and every 100-record original dataset is sampled from it.
    """
    from dpaudit.papers.casestudies.census import acs_generator_network, fit_acs_network
    from dpaudit.papers.casestudies.marginals import MAISetting, run_mai, visit_order_split
    from dpaudit.papers.casestudies.rap import RAPOptions

    size = resolve_size(full, size)
    full = size == "full"
    tiny = size == "tiny"  # the test suite
    out_dir = Path(out_dir)
    rng = np.random.default_rng(seed)
    if public_records is None:
        n_pub = 100_000 if full else (5_000 if tiny else 20_000)
        public_records = acs_generator_network().sample(n_pub, rng)
    net = fit_acs_network(public_records)
    rap = RAPOptions(steps=500 if full else (60 if tiny else 200), prior_weight=prior_weight)
    reps = 5 if full else 1
    rows: list[dict[str, Any]] = []

    def add(fig: str, outcome: Any, rep: int, **extra: Any) -> None:
        rows.append({"figure": fig, "seed": seed, "rep": rep, **extra, **outcome.row()})

    cols4 = list(net.names) if full else ["SEX", "SCHL", "AGEP", "MAR", "DIS", "NATIVITY"]
    eps5 = [0.5, 1, 2, 4, 8, 16, math.inf] if full else [1, 4, 16, math.inf]
    max_unknown, max_tol = (13, 9) if full else (4, 4)
    if tiny:
        cols4, eps5, max_unknown, max_tol = ["SEX", "SCHL"], [1, math.inf], 2, 1
    for rep in range(reps):
        for c in cols4:
            add("4", run_mai(net, [c], MAISetting(epsilon=1.0, delta=DELTA, rap=rap), rng), rep)
        for e in eps5:
            add("5", run_mai(net, ["SCHL"], MAISetting(epsilon=float(e), delta=DELTA, rap=rap),
                             rng), rep)
        for dprime in range(1, max_unknown + 1):
            kn, tg = visit_order_split(net, 3, dprime)
            add("6", run_mai(net, tg, MAISetting(epsilon=3.0, delta=DELTA, others="dropped",
                                                 rap=rap), rng, known=kn), rep)
        for tol in range(0, max_tol + 1):
            add("7", run_mai(net, ["AGEP"], MAISetting(epsilon=1.0, delta=DELTA, tolerance=tol,
                                                       rap=rap), rng), rep)
    csv_path = write_csv(out_dir / "risk_marginals.csv", rows)
    plt = _plt()
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))

    def panel(ax: Any, fig_id: str, xkey: str, xlabel: str, title: str) -> None:
        rr = [r for r in rows if r["figure"] == fig_id]
        xs = list(dict.fromkeys(r[xkey] for r in rr))
        pos = np.arange(len(xs))

        def mean(key: str, x: Any) -> float:
            return float(np.mean([r[key] for r in rr if r[xkey] == x]))

        lo = [mean("v_ub_5", x) for x in xs]
        mid = [mean("v_ub_50", x) for x in xs]
        hi = [mean("v_ub_95", x) for x in xs]
        ax.bar(pos - 0.2, [mean("attack_success", x) for x in xs], 0.4, label="M-AI attack")
        ax.bar(pos + 0.2, [mean("prior_success", x) for x in xs], 0.4, label="prior only")
        ax.errorbar(pos, mid, yerr=[np.subtract(mid, lo), np.subtract(hi, mid)], fmt="k_",
                    ms=14, capsize=4, label="Thm 3.5 bound (5/50/95%)")
        ax.set_xticks(pos, [str(x) for x in xs], rotation=45 if fig_id == "4" else 0,
                        fontsize=7)
        ax.set(xlabel=xlabel, ylabel="records reconstructed (of 100)", title=title,
               ylim=(0, 105))

    panel(axes[0, 0], "4", "target", "column", "Fig. 4: one column, eps = 1")
    panel(axes[0, 1], "5", "epsilon", "epsilon", "Fig. 5: SCHL vs epsilon")
    panel(axes[1, 0], "6", "n_target_cols", "# unknown columns (3 known)",
          "Fig. 6: multi-column, eps = 3")
    panel(axes[1, 1], "7", "tolerance", "L1 error E", "Fig. 7: AGEP within E, eps = 1")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    png = out_dir / "risk_marginals.png"
    save_figure(fig, png)
    plt.close(fig)
    return [csv_path, png]
