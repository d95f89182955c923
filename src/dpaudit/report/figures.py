"""Plotly figure specifications (plain dicts: ``{"data": [...], "layout": {...}}``) of a card.

Every string that can come from a user (method names, labels) is HTML-escaped here, because
plotly renders trace names and hover text as its own small HTML subset: escaped, ``<script>``
is displayed as the text "<script>" and never interpreted.  Numbers are rounded to 6
significant digits (no raw per-canary points ever reach a figure).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from dpaudit.curves import EpsDeltaDP, GaussianDP
from dpaudit.report.model import ReportModel

__all__ = ["figures", "escape_label", "COLORS"]

COLORS = {"claimed": "#1f77b4", "bound": "#d62728", "true": "#2ca02c", "gdp": "#9467bd",
          "points": "#ff7f0e", "neutral": "#7f7f7f"}
_FONT = {"family": "system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif",
         "size": 12}


def escape_label(text: Any, limit: int | None = None) -> str:
    """A user string as plotly text, shown literally: ``&``, ``<``, ``>`` escaped (plotly
    decodes these three entities but not ``&quot;``; quotes are harmless once no tag can
    form).  ``limit`` shortens long labels (axis ticks, legend) with an ellipsis."""
    s = str(text)
    if limit is not None and len(s) > limit:
        s = s[:limit - 1] + "\u2026"
    return html.escape(s, quote=False)


def _r(values: Iterable[Any]) -> list[float | None]:
    """Round to 6 significant digits; NaN and +-inf become null (a gap in the plot)."""
    out: list[float | None] = []
    for v in np.asarray(list(values) if not isinstance(values, np.ndarray) else values,
                        dtype=float).ravel():
        out.append(float(f"{v:.6g}") if math.isfinite(v) else None)
    return out


def _layout(title: str, xtitle: str, ytitle: str, **kw: Any) -> dict[str, Any]:
    lay: dict[str, Any] = {
        "title": {"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 14}},
        "font": _FONT, "height": 360, "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
        "xaxis": {"title": {"text": xtitle}, "zeroline": False},
        "yaxis": {"title": {"text": ytitle}, "zeroline": False},
        "legend": {"orientation": "h", "yref": "container", "y": 0.0, "yanchor": "bottom",
                   "x": 0.0, "font": {"size": 11}},
        "hovermode": "closest", "paper_bgcolor": "white", "plot_bgcolor": "#fafafa",
    }
    lay.update(kw)
    return lay


def _fmt(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.4g}"


def bounds_figure(m: ReportModel) -> dict[str, Any]:
    """Every method's bound side by side, the claimed epsilon as a dashed line."""
    finite = [r.epsilon for r in m.methods if math.isfinite(r.epsilon)]
    refs = [x for x in (m.claimed_epsilon, m.true_epsilon) if x is not None and math.isfinite(x)]
    top = max([*finite, *refs, 1e-3]) * 1.25
    names = [escape_label(r.method, 28) for r in m.methods]
    xs = [r.epsilon if math.isfinite(r.epsilon) else top for r in m.methods]
    # each bar says what its number is (MethodRow.cell): a bound, an estimate, a failed curve
    text = [f"{escape_label(r.method)}: epsilon {escape_label(r.cell())} at delta = "
            f"{r.delta:g}, confidence {r.confidence_cell()}; fit {escape_label(r.fit)}"
            + (" (verdict rests on this row)" if r.basis else "") for r in m.methods]
    data: list[dict[str, Any]] = [{
        "type": "bar", "orientation": "h", "x": _r(xs), "y": names, "name": "lower bound",
        "marker": {"color": [COLORS["bound"] if r.basis else "#f4a6a6" for r in m.methods]},
        "text": [("~ " if r.kind == "estimate" else "") + _fmt(r.epsilon) for r in m.methods],
        "textposition": "outside",
        "cliponaxis": False,
        "hovertext": text, "hoverinfo": "text", "showlegend": False}]
    shapes, ann = [], []
    for value, label, color, dash in ((m.claimed_epsilon, "claimed", COLORS["claimed"], "dash"),
                                      (m.true_epsilon, "true", COLORS["true"], "dot")):
        if value is None or not math.isfinite(value):
            continue
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": value, "x1": value,
                       "y0": 0, "y1": 1, "line": {"color": color, "dash": dash, "width": 2}})
        ann.append({"x": value, "y": 1.0, "xref": "x", "yref": "paper", "yanchor": "bottom",
                    "text": f"{label} {value:.4g}", "showarrow": False,
                    "font": {"color": color}})
    lay = _layout("Every method's epsilon (bounds, estimates marked ~)", "epsilon", "",
                  shapes=shapes, annotations=ann,
                  height=max(220, 70 + 42 * len(m.methods)))
    lay["xaxis"]["range"] = [0, top]
    lay["yaxis"]["autorange"] = "reversed"
    lay["yaxis"]["automargin"] = True
    lay["margin"] = {"l": 20, "r": 20, "t": 50, "b": 45}
    return {"data": data, "layout": lay}


def region_figure(m: ReportModel) -> dict[str, Any]:
    """f-DP view: claimed and certified trade-off curves, observed (FPR, FNR) with boxes."""
    alpha = np.r_[0.0, np.geomspace(1e-6, 1.0, 300)]
    data: list[dict[str, Any]] = []
    if m.claimed_epsilon is not None and math.isfinite(m.claimed_epsilon):
        f = EpsDeltaDP(m.claimed_epsilon, m.delta).tradeoff(alpha)
        data.append({"type": "scatter", "mode": "lines", "x": _r(alpha), "y": _r(f),
                     "name": f"claimed ({m.claimed_epsilon:.4g}, {m.delta:g})-DP",
                     "line": {"color": COLORS["claimed"], "width": 2}})
    if math.isfinite(m.bound):
        f = EpsDeltaDP(m.bound, m.delta).tradeoff(alpha)
        data.append({"type": "scatter", "mode": "lines", "x": _r(alpha), "y": _r(f),
                     "name": f"at the lower bound: ({m.bound:.4g}, {m.delta:g})-DP",
                     "line": {"color": COLORS["bound"], "width": 2, "dash": "dash"}})
    if m.certified_mu is not None and m.certified_mu > 0:
        f = GaussianDP(m.certified_mu).tradeoff(alpha)
        data.append({"type": "scatter", "mode": "lines", "x": _r(alpha), "y": _r(f),
                     "name": f"fitted {m.certified_mu:.4g}-GDP",
                     "line": {"color": COLORS["gdp"], "width": 1.5, "dash": "dot"}})
    if m.scores is not None:
        rp = m.scores.region
        bx: list[float | None] = []
        by: list[float | None] = []
        for a0, a1, b0, b1 in zip(rp.fpr_lo, rp.fpr_hi, rp.fnr_lo, rp.fnr_hi, strict=True):
            bx += [*_r([a0, a1, a1, a0, a0]), None]
            by += [*_r([b0, b0, b1, b1, b0]), None]
        data.append({"type": "scatter", "mode": "lines", "x": bx, "y": by, "fill": "toself",
                     "fillcolor": "rgba(255,127,14,0.15)",
                     "line": {"color": "rgba(255,127,14,0.6)", "width": 1},
                     "name": f"{100 * rp.confidence:g}% Clopper-Pearson boxes",
                     "hoverinfo": "skip"})
        hover = [f"threshold {t:.4g}<br>FPR {a:.4g} [{a0:.3g}, {a1:.3g}]<br>"
                 f"FNR {b:.4g} [{b0:.3g}, {b1:.3g}]"
                 for t, a, a0, a1, b, b0, b1 in zip(rp.threshold, rp.fpr, rp.fpr_lo, rp.fpr_hi,
                                                    rp.fnr, rp.fnr_lo, rp.fnr_hi, strict=True)]
        data.append({"type": "scatter", "mode": "markers", "x": _r(rp.fpr), "y": _r(rp.fnr),
                     "name": "observed (FPR, FNR) of score thresholds",
                     "marker": {"color": COLORS["points"], "size": 7},
                     "hovertext": hover, "hoverinfo": "text"})
    for b in m.test_boxes:
        data.append({"type": "scatter", "mode": "lines", "fill": "toself",
                     "x": _r([b.fpr_lo, b.fpr_hi, b.fpr_hi, b.fpr_lo, b.fpr_lo]),
                     "y": _r([b.fnr_lo, b.fnr_lo, b.fnr_hi, b.fnr_hi, b.fnr_lo]),
                     "fillcolor": "rgba(214,39,40,0.12)", "line": {"color": COLORS["bound"]},
                     "name": escape_label(b.label, 40) + " (box)",
                     "hovertext": f"{escape_label(b.label)}: FPR in [{b.fpr_lo:.3g}, "
                                  f"{b.fpr_hi:.3g}], FNR in [{b.fnr_lo:.3g}, {b.fnr_hi:.3g}]",
                     "hoverinfo": "text"})
        if b.fpr is not None and b.fnr is not None:
            data.append({"type": "scatter", "mode": "markers", "x": _r([b.fpr]),
                         "y": _r([b.fnr]), "name": escape_label(b.label, 40),
                         "marker": {"color": COLORS["bound"], "symbol": "x", "size": 10}})
    lay = _layout("Type II vs type I error of membership tests",
                  "FPR (type I error, alpha)", "FNR (type II error, beta)", height=470)
    lay["xaxis"]["range"] = [0, 1]
    lay["yaxis"]["range"] = [0, 1]
    return {"data": data, "layout": lay}


def roc_figures(m: ReportModel) -> tuple[dict[str, Any], dict[str, Any]]:
    """ROC on linear and log-log axes (down-sampled vertices), chance line."""
    assert m.scores is not None
    roc = m.scores.roc
    auc = m.scores.auroc
    name = f"attack (AUROC {auc[0]:.3f})"
    lin: dict[str, Any] = {"data": [
        {"type": "scatter", "mode": "lines", "x": [0, 1], "y": [0, 1], "name": "chance",
         "line": {"color": COLORS["neutral"], "dash": "dot", "width": 1}, "hoverinfo": "skip"},
        {"type": "scatter", "mode": "lines", "x": _r(roc.fpr), "y": _r(roc.tpr), "name": name,
         "line": {"color": COLORS["bound"], "width": 2, "shape": "hv"}}],
        "layout": _layout("ROC", "false positive rate", "true positive rate")}
    lin["layout"]["xaxis"]["range"] = [0, 1]
    lin["layout"]["yaxis"]["range"] = [0, 1.02]
    # FPR = 0 cannot be drawn on a log axis: those vertices sit at half the smallest
    # non-zero FPR, 1 / (2 n0), at the left edge of the plot (hover says FPR = 0).
    lo = 0.5 / roc.n_nonmembers
    x = np.maximum(roc.fpr, lo)
    pos = roc.tpr > 0
    hover = [f"FPR {'0' if f == 0 else f'{f:.3g}'}, TPR {t:.4g}"
             for f, t in zip(roc.fpr[pos], roc.tpr[pos], strict=True)]
    chance = np.geomspace(lo, 1.0, 50)
    log: dict[str, Any] = {"data": [
        {"type": "scatter", "mode": "lines", "x": _r(chance), "y": _r(chance), "name": "chance",
         "line": {"color": COLORS["neutral"], "dash": "dot", "width": 1}, "hoverinfo": "skip"},
        {"type": "scatter", "mode": "lines", "x": _r(x[pos]), "y": _r(roc.tpr[pos]),
         "name": name, "line": {"color": COLORS["bound"], "width": 2, "shape": "hv"},
         "hovertext": hover, "hoverinfo": "text"}],
        "layout": _layout("ROC, log scale (low-FPR regime)", "false positive rate",
                          "true positive rate")}
    log["layout"]["xaxis"].update(type="log", range=[math.log10(lo), 0])
    ymin = max(lo, float(np.min(roc.tpr[pos][roc.tpr[pos] > 0], initial=1.0)))
    log["layout"]["yaxis"].update(type="log", range=[math.log10(min(ymin, lo)) - 0.1, 0.02])
    return lin, log


def guesses_figure(m: ReportModel) -> dict[str, Any]:
    """One-run audits: the bound at every number of guesses r (each at the per-test
    confidence of the Bonferroni grid); the reported point is the largest."""
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]
    data: list[dict[str, Any]] = []
    for i, g in enumerate(m.guesses):
        c = palette[i % len(palette)]
        data.append({"type": "scatter", "mode": "lines+markers", "x": list(g.guesses),
                     "y": _r(g.epsilons), "name": escape_label(g.method, 28),
                     "line": {"color": c}, "marker": {"color": c, "size": 6},
                     "hovertemplate": "r = %{x}<br>epsilon &gt;= %{y:.4g}<extra>"
                                      + escape_label(g.method) + "</extra>"})
        j = g.guesses.index(g.chosen) if g.chosen in g.guesses else None
        if j is not None:
            data.append({"type": "scatter", "mode": "markers", "x": [g.chosen],
                         "y": _r([g.epsilons[j]]), "showlegend": False,
                         "marker": {"color": c, "size": 13, "symbol": "circle-open",
                                    "line": {"width": 2}}, "hoverinfo": "skip"})
    shapes = []
    if m.claimed_epsilon is not None and math.isfinite(m.claimed_epsilon):
        shapes.append({"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1,
                       "y0": m.claimed_epsilon, "y1": m.claimed_epsilon,
                       "line": {"color": COLORS["claimed"], "dash": "dash", "width": 2}})
    lay = _layout("Epsilon lower bound vs number of guesses (one run)",
                  "number of guesses r (log scale)", "epsilon lower bound", shapes=shapes)
    lay["xaxis"]["type"] = "log"
    return {"data": data, "layout": lay}


def risk_figure(m: ReportModel) -> dict[str, Any]:
    """Beyond Worst Case single-target bound vs prior at the claimed / measured / true epsilon."""
    rk = m.risk
    colors = {"claimed": COLORS["claimed"], "measured lower bound": COLORS["bound"],
              "true": COLORS["true"]}
    data: list[dict[str, Any]] = [
        {"type": "scatter", "mode": "lines", "x": _r(rk.priors), "y": _r(rk.priors),
         "name": "no release (prior)", "line": {"color": COLORS["neutral"], "dash": "dot"}}]
    for (label, curve), row in zip(rk.curves, rk.rows, strict=True):
        data.append({"type": "scatter", "mode": "lines", "x": _r(rk.priors), "y": _r(curve),
                     "name": f"{label} epsilon = {_fmt(row.epsilon)}",
                     "line": {"color": colors.get(label, COLORS["neutral"]), "width": 2}})
    shapes = [{"type": "line", "xref": "x", "yref": "paper", "x0": rk.prior, "x1": rk.prior,
               "y0": 0, "y1": 1, "line": {"color": "#444", "dash": "dash", "width": 1}}]
    lay = _layout("Attack success bound vs prior success (one target)",
                  "prior success of the attack (log scale)", "success bound", shapes=shapes)
    lay["xaxis"]["type"] = "log"
    lay["yaxis"]["range"] = [0, 1.02]
    return {"data": data, "layout": lay}


def _reserve_legend(fig: dict[str, Any]) -> dict[str, Any]:
    """Room under the x-axis title for the legend (anchored to the bottom of the figure):
    entries packed greedily into rows of the narrowest column a card has (360 px: half of a
    1180 px page on screen), about 6.3 px per character at 11 px plus 45 px for the symbol,
    19 px per row, so the legend never overlaps the axis title or the plot."""
    names = [str(t["name"]) for t in fig["data"] if t.get("showlegend", True) and t.get("name")]
    lay = fig["layout"]
    if not names or not lay.get("showlegend", True):
        return fig
    rows, used = 1, 0.0
    for name in names:
        w = 45 + 6.3 * len(html.unescape(name))
        if used and used + w > 360:
            rows, used = rows + 1, 0.0
        used += w
    lay["margin"]["b"] = 62 + 19 * rows
    lay["height"] = lay["height"] + 19 * rows
    return fig


def figures(m: ReportModel) -> dict[str, dict[str, Any]]:
    """All figures of a card by key (keys are fixed identifiers, never user text)."""
    out = {"bounds": bounds_figure(m), "region": region_figure(m), "risk": risk_figure(m)}
    if m.scores is not None:
        out["roc"], out["roc_log"] = roc_figures(m)
    if m.guesses:
        out["guesses"] = guesses_figure(m)
    return {k: _reserve_legend(f) for k, f in out.items()}
