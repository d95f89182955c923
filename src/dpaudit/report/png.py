"""Static fallback of the audit card: one PNG (matplotlib, Agg) with the same content.

Every text that can hold a user string (title, verdict, headline, method names on the axis and
in legends, provenance) is drawn with ``parse_math=False``, so ``$`` is shown literally
(matplotlib would otherwise parse it as mathtext); tick labels keep mathtext (10^k).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.curves import EpsDeltaDP, GaussianDP
from dpaudit.report.model import ReportModel

__all__ = ["render_png", "CARD_HEIGHT_IN"]

#: height of one card in inches (15 in wide); the PNG is cards x this tall.
CARD_HEIGHT_IN = 10.0


def _t(text: Any) -> str:
    """User text for matplotlib (drawn with parse_math=False: shown literally)."""
    return str(text)


def _f(x: float | None) -> str:
    if x is None or math.isnan(x):
        return "-"
    return "inf" if math.isinf(x) else f"{x:.4g}"


def _card(sf: Any, m: ReportModel) -> None:
    gs = sf.add_gridspec(4, 3, height_ratios=[0.5, 1.0, 1.0, 0.45], hspace=0.5, wspace=0.3,
                         left=0.09, right=0.98, top=0.97, bottom=0.02)
    lit = {"parse_math": False}
    top = sf.add_subplot(gs[0, :])
    top.axis("off")
    color = "#b3261e" if m.violation else "#1b7f3b" if m.violation is False else "#44546a"
    top.text(0.0, 0.95, _t(m.title), fontsize=12, color="#5f6368", va="top", wrap=True, **lit)
    top.text(0.0, 0.62, _t(m.verdict), fontsize=16, fontweight="bold", color=color, va="top",
             wrap=True, **lit)
    head = []
    if m.claimed_epsilon is not None:
        head.append(f"claimed eps {_f(m.claimed_epsilon)}")
    head.append(f"the run's eps >= {_f(m.bound)} ({_t(m.bound_source)}, any mechanism)"
                if m.bound_source is not None else
                f"no lower bound valid for any mechanism (verdict row {_t(m.verdict_method)})")
    head.append(f"delta = {m.delta:g}, confidence {100 * m.confidence:g}%")
    if m.true_epsilon is not None:
        head.append(f"true eps {_f(m.true_epsilon)}")
    top.text(0.0, 0.12, "   |   ".join(head), fontsize=11, va="bottom", **lit)

    ax = sf.add_subplot(gs[1, 0])
    names = [_t(r.method) for r in m.methods]
    finite = [r.epsilon for r in m.methods if math.isfinite(r.epsilon)]
    cap = max([*finite, m.claimed_epsilon or 0.0, 1e-3]) * 1.15
    xs = [r.epsilon if math.isfinite(r.epsilon) else cap for r in m.methods]
    ax.barh(range(len(xs)), xs, color=["#d62728" if r.basis else "#f4a6a6" for r in m.methods])
    ax.set_yticks(range(len(xs)), names, fontsize=8)
    for t in ax.get_yticklabels():
        t.set_parse_math(False)
    ax.invert_yaxis()
    if m.claimed_epsilon is not None and math.isfinite(m.claimed_epsilon):
        ax.axvline(m.claimed_epsilon, color="#1f77b4", ls="--", label="claimed")
        ax.legend(fontsize=7, loc="lower right")
    for i, r in enumerate(m.methods):  # what each bar's number is (MethodRow.cell)
        ax.text(xs[i], i, " " + r.cell(), va="center", fontsize=7)
    ax.set_xlabel("epsilon (bounds; estimates marked ~)", fontsize=9)
    ax.set_title("Bounds side by side", fontsize=10)

    ax = sf.add_subplot(gs[1, 1])
    alpha = np.r_[0.0, np.geomspace(1e-6, 1.0, 300)]
    if m.claimed_epsilon is not None and math.isfinite(m.claimed_epsilon):
        ax.plot(alpha, EpsDeltaDP(m.claimed_epsilon, m.delta).tradeoff(alpha), color="#1f77b4",
                label="claimed")
    if math.isfinite(m.bound):
        ax.plot(alpha, EpsDeltaDP(m.bound, m.delta).tradeoff(alpha), "--", color="#d62728",
                label="at the run's lower bound")
    if m.certified_mu:
        ax.plot(alpha, GaussianDP(m.certified_mu).tradeoff(alpha), ":", color="#9467bd",
                label=f"{m.certified_mu:.3g}-GDP fit")
    if m.scores is not None:
        rp = m.scores.region
        for a0, a1, b0, b1 in zip(rp.fpr_lo, rp.fpr_hi, rp.fnr_lo, rp.fnr_hi, strict=True):
            ax.add_patch(_rect(a0, a1, b0, b1, "#ff7f0e"))
        ax.plot(rp.fpr, rp.fnr, "o", color="#ff7f0e", ms=3, label="observed")
    for b in m.test_boxes:
        ax.add_patch(_rect(b.fpr_lo, b.fpr_hi, b.fnr_lo, b.fnr_hi, "#d62728"))
    ax.set(xlim=(0, 1), ylim=(0, 1))
    ax.set_xlabel("FPR (type I)", fontsize=9)
    ax.set_ylabel("FNR (type II)", fontsize=9)
    ax.set_title("Privacy region (f-DP view)", fontsize=10)
    ax.legend(fontsize=7)

    ax = sf.add_subplot(gs[1, 2])
    rk = m.risk
    ax.plot(rk.priors, rk.priors, ":", color="gray", label="prior")
    for label, curve in rk.curves:
        ax.plot(rk.priors, curve, label=_t(label))
    ax.axvline(rk.prior, color="#444", ls="--", lw=0.8)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("prior success", fontsize=9)
    ax.set_ylabel("success bound", fontsize=9)
    ax.set_title("Attack success bound (Beyond Worst Case)", fontsize=10)
    ax.legend(fontsize=7)

    if m.scores is not None:
        roc = m.scores.roc
        ax = sf.add_subplot(gs[2, 0])
        ax.step(roc.fpr, roc.tpr, where="post", color="#d62728")
        ax.plot([0, 1], [0, 1], ":", color="gray")
        a = m.scores.auroc
        ax.set_title(f"ROC (AUROC {a[0]:.3f} [{a[1]:.3f}, {a[2]:.3f}])", fontsize=10)
        ax.set_xlabel("FPR", fontsize=9)
        ax.set_ylabel("TPR", fontsize=9)
        ax = sf.add_subplot(gs[2, 1])
        lo = 0.5 / roc.n_nonmembers
        pos = roc.tpr > 0
        ax.step(np.maximum(roc.fpr[pos], lo), roc.tpr[pos], where="post", color="#d62728")
        ax.plot([lo, 1], [lo, 1], ":", color="gray")
        ax.set(xscale="log", yscale="log")
        t = ", ".join(f"TPR@{d['fpr_target']:g}={d['tpr']:.3g}" for d in m.scores.tpr_at[:2])
        ax.set_title(f"ROC, log scale ({t})", fontsize=10)
        ax.set_xlabel("FPR", fontsize=9)
    else:
        ax = sf.add_subplot(gs[2, 0:2])
        ax.axis("off")
        ax.text(0, 0.5, "Per-canary scores not provided: no ROC.", fontsize=10)
    ax = sf.add_subplot(gs[2, 2])
    if m.guesses:
        for g in m.guesses:
            ax.plot(g.guesses, g.epsilons, "o-", ms=3, label=_t(g.method))
        if m.claimed_epsilon is not None and math.isfinite(m.claimed_epsilon):
            ax.axhline(m.claimed_epsilon, color="#1f77b4", ls="--")
        ax.set_xscale("log")
        ax.set_xlabel("number of guesses r", fontsize=9)
        ax.set_title("Bound vs number of guesses", fontsize=10)
        for t in ax.legend(fontsize=7).get_texts():
            t.set_parse_math(False)
    else:
        ax.axis("off")
        lines = [f"Attacker risk (Beyond Worst Case, one target, delta = {rk.delta:g}):", ""]
        lines += [f"{r.label} eps {_f(r.epsilon)}:  reconstruction <= {100 * r.reconstruction:.2f}%"
                  f" (prior {100 * rk.prior:g}%),  membership <= {100 * r.membership:.2f}%"
                  for r in rk.rows]
        ax.text(0, 0.9, "\n".join(lines), fontsize=8.5, va="top", wrap=True, **lit)

    bot = sf.add_subplot(gs[3, :])
    bot.axis("off")
    pv = m.provenance
    ins = "; ".join(f"{i.name} sha256 {i.sha256[:16]}..." for i in pv.inputs) or "none"
    st = ", ".join(f"{k}={v}" for k, v in pv.settings.items())
    lines = [f"dpaudit {pv.version} | {pv.date} | run time "
             f"{'-' if pv.run_seconds is None else f'{pv.run_seconds:.2f} s'} | seed {pv.seed}",
             f"command: {pv.command}", f"inputs: {ins}", f"settings: {st}"]
    bot.text(0, 1, _t("\n".join(lines)), fontsize=7.5, va="top", family="monospace",
             wrap=True, **lit)


def _rect(a0: float, a1: float, b0: float, b1: float, color: str) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((a0, b0), a1 - a0, b1 - b0, facecolor=color, alpha=0.15, edgecolor=color,
                     lw=0.6)


def render_png(models: Sequence[ReportModel] | ReportModel, path: str | Path, *,
               dpi: int = 110) -> Path:
    """Write the cards as one PNG (cards stacked vertically)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ms = [models] if isinstance(models, ReportModel) else list(models)
    if not ms:
        raise ValueError("render_png needs at least one report model")
    with plt.rc_context({"text.usetex": False}):
        fig = plt.figure(figsize=(15, CARD_HEIGHT_IN * len(ms)), layout=None)
        subs: Any = fig.subfigures(len(ms), 1) if len(ms) > 1 else [fig]
        for sf, m in zip(np.atleast_1d(subs), ms, strict=True):
            _card(sf, m)
        from dpaudit.output import atomic_output

        with atomic_output(path, what="report", suffix=".png") as tmp:  # regular files only
            fig.savefig(tmp, dpi=dpi, format="png")
        plt.close(fig)
    return Path(path)
