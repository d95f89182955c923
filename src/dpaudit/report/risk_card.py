"""The risk card: what a range of epsilons means for a curator's people, as one HTML file.

``dpaudit risk ... --report risk.html`` writes it.  Risk against epsilon for the curator's
priors (Swanberg et al., "Beyond the Worst Case": the per-target success bound, Thm 3.5 at
n = 1; the expected number of successes, sum of beta_i; v_UB over n targets at the chosen
confidence, Thm 3.5), the prior's own baseline (what an attacker achieves without the
release), the answers to the inverse questions marked on the plots, the table of the sweep
(each row = ``dpaudit risk --epsilon e``'s numbers) and a sentence per epsilon for a
non-specialist.  Every number is a valid bound (none is an estimate).

The page is the audit card's shell (:func:`dpaudit.report.html.page_html`: plotly.js embedded,
a Content-Security-Policy allowing only the page's own two scripts, no network); every user
string (the prior file's name) is HTML-escaped, in the page and in the figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.output import write_bytes
from dpaudit.report.figures import COLORS, _layout, _r, _reserve_legend
from dpaudit.report.html import _E, _f, page_html
from dpaudit.report.provenance import make_provenance
from dpaudit.risk.inverse import InverseAnswer
from dpaudit.risk.summary import risk_summary
from dpaudit.risk.sweep import plain_sentence

__all__ = ["RiskCard", "risk_card", "render_risk_card", "write_risk_card", "CURVE_POINTS"]

#: epsilons at which the card's curves are drawn (plus the sweep's and the answers').
CURVE_POINTS = 41

_CSS = """
.sentence { font-size: 19px; margin: 6px 0 10px; padding: 12px 16px;
            border-left: 8px solid var(--none); background: #f1f3f4; }
ul.plain { margin: 4px 0 8px 18px; padding: 0; }
ul.plain li { margin: 3px 0; }
"""


@dataclass(frozen=True)
class RiskCard:
    """Everything the risk card shows (plain data; ``rows`` and ``curve`` are
    :func:`risk_summary` documents)."""

    prior_label: str
    delta: float
    confidence: float
    targets: int
    prior_max: float
    prior_sum: float
    rows: tuple[dict[str, Any], ...]
    curve: tuple[dict[str, Any], ...]
    answers: tuple[InverseAnswer, ...] = ()
    version: str = ""
    date: str = ""
    settings: dict[str, Any] = field(default_factory=dict)


def risk_card(rows: Sequence[dict[str, Any]], priors: np.ndarray, *, delta: float,
              confidence: float, prior_label: str, answers: Sequence[InverseAnswer] = (),
              tau: float = 0.05, delta_multiplier: float = 1.0,
              command: str | None = None) -> RiskCard:
    """The card of a sweep (``rows``, possibly empty) and inverse answers: the curves are
    :func:`risk_summary` at :data:`CURVE_POINTS` epsilons from 0 to past the largest epsilon
    shown, plus every epsilon of the sweep and the answers (so the markers sit on the
    curves)."""
    shown = [r["epsilon"] for r in rows] + [a.epsilon for a in answers]
    top = max([1.0] + [1.25 * e for e in shown])
    grid = np.union1d(np.linspace(0.0, top, CURVE_POINTS), np.asarray(shown, dtype=float))
    curve = tuple(risk_summary(float(e), delta, priors, confidence=confidence, tau=tau,
                               delta_multiplier=delta_multiplier) for e in grid)
    prov = make_provenance(command=command)
    return RiskCard(prior_label=prior_label, delta=delta, confidence=confidence,
                    targets=int(priors.size), prior_max=float(priors.max()),
                    prior_sum=float(priors.sum()), rows=tuple(rows), curve=curve,
                    answers=tuple(answers), version=prov.version, date=prov.date,
                    settings={"tau": tau, "delta_multiplier": delta_multiplier})


def _marker(fig: dict[str, Any], a: InverseAnswer, label: str) -> None:
    lay = fig["layout"]
    line = {"color": COLORS["bound"], "dash": "dash", "width": 1.5}
    lay.setdefault("shapes", []).extend([
        {"type": "line", "xref": "x", "yref": "paper", "x0": a.epsilon, "x1": a.epsilon,
         "y0": 0, "y1": 1, "line": line},
        {"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": a.limit,
         "y1": a.limit, "line": {**line, "dash": "dot"}}])
    lay.setdefault("annotations", []).append(
        {"x": a.epsilon, "y": a.limit, "xref": "x", "yref": "y", "text": label,
         "showarrow": True, "arrowhead": 2, "ax": -20, "ay": -40, "xanchor": "right",
         "font": {"size": 11, "color": COLORS["bound"]}, "bgcolor": "rgba(255,255,255,.85)"})


def risk_figures(card: RiskCard) -> dict[str, dict[str, Any]]:
    """People attacked (v_UB, expected successes, prior baseline) and one person's success
    bound (with the prior's best guess), against epsilon; inverse answers marked."""
    eps = [r["epsilon"] for r in card.curve]
    c = f"{100 * card.confidence:g}%"
    people: dict[str, Any] = {"data": [
        {"type": "scatter", "mode": "lines", "x": _r(eps), "y": _r(r["v_ub"] for r in card.curve),
         "name": f"v_UB: at most this many, with {c} confidence",
         "line": {"color": COLORS["bound"], "width": 2, "shape": "hv"}},
        {"type": "scatter", "mode": "lines", "x": _r(eps),
         "y": _r(r["details"]["expected_successes_bound"] for r in card.curve),
         "name": "expected successes (bound)", "line": {"color": COLORS["claimed"], "width": 2}},
        {"type": "scatter", "mode": "lines", "x": _r([eps[0], eps[-1]]),
         "y": _r([card.prior_sum, card.prior_sum]), "name": "prior alone (expected)",
         "line": {"color": COLORS["neutral"], "dash": "dot"}}],
        "layout": _layout(f"People attacked successfully, of {card.targets:,}", "epsilon",
                          "people")}
    people["layout"]["yaxis"]["range"] = [0, card.targets * 1.04]
    one: dict[str, Any] = {"data": [
        {"type": "scatter", "mode": "lines", "x": _r(eps), "y": _r(r["success_bound"]
                                                                  for r in card.curve),
         "name": "success bound (any attack, one person)",
         "line": {"color": COLORS["bound"], "width": 2}},
        {"type": "scatter", "mode": "lines", "x": _r([eps[0], eps[-1]]),
         "y": _r([card.prior_max, card.prior_max]), "name": "prior alone (best guess)",
         "line": {"color": COLORS["neutral"], "dash": "dot"}}],
        "layout": _layout("One person's record guessed right", "epsilon", "probability")}
    one["layout"]["yaxis"]["range"] = [0, 1.02]
    for fig in (people, one):       # annotations would widen an autoranged axis
        fig["layout"]["xaxis"]["range"] = _r([0.0, eps[-1]])
    for a in card.answers:
        if a.question == "max_attacked":
            _marker(people, a, f"largest epsilon with v_UB <= {int(a.limit):,}: {a.epsilon:g}")
        else:
            _marker(one, a, f"largest epsilon with success <= {a.limit:g}: {a.epsilon:g}")
    return {"people": _reserve_legend(people), "one": _reserve_legend(one)}


def _sentences(card: RiskCard) -> list[str]:
    eps = [a.epsilon for a in card.answers if a.question == "max_attacked"]
    rows = [r for r in card.curve if r["epsilon"] in eps] + list(card.rows)
    out = []
    for r in rows:
        out.append(plain_sentence(r["epsilon"], r["v_ub"], card.targets, card.confidence,
                                  r["success_bound"], card.prior_max))
    return out


def render_risk_card(card: RiskCard, *, plotlyjs: str | None = None) -> str:
    """The complete HTML document of the risk card."""
    figs = {f"risk-{k}": v for k, v in risk_figures(card).items()}
    c = f"{100 * card.confidence:g}%"
    answers = "".join(
        f'<p class="sentence" data-testid="answer">{_E(a.sentence())}</p>'
        for a in card.answers)
    sentences = _sentences(card)
    plain = ("<h3>In plain words</h3><ul class=\"plain\">" + "".join(
        f"<li data-testid=\"plain\">{_E(s)}</li>" for s in sentences) + "</ul>"
             if sentences else "")
    body_rows = "".join(
        f"<tr><td class=\"num\">{r['epsilon']:g}</td>"
        f"<td class=\"num\">{_f(r['success_bound'])}</td>"
        f"<td class=\"num\">{_f(r['details']['expected_successes_bound'], 2)}</td>"
        f"<td class=\"num\">{r['v_ub']:,} / {r['targets']:,}</td>"
        f"<td class=\"num\">{_f(r['leaked_bits'], 2)}</td>"
        f"<td class=\"num\">{_f(r['advantage'])}</td></tr>" for r in card.rows)
    table = (f"<h3>Sweep</h3><table><thead><tr><th class=\"num\">&epsilon;</th>"
             f"<th class=\"num\">success bound</th><th class=\"num\">expected successes</th>"
             f"<th class=\"num\">v_UB ({c})</th><th class=\"num\">leaked bits</th>"
             f"<th class=\"num\">advantage</th></tr></thead><tbody>{body_rows}</tbody>"
             f"</table>" if card.rows else "")
    head = (f"<div class=\"headline\"><span>{_E(card.prior_label)}</span>"
            f"<span>{card.targets:,} people</span><span>&delta; = {card.delta:g}</span>"
            f"<span>confidence {c}</span><span>without the release: best guess right "
            f"{100 * card.prior_max:.2f}% of the time, {_f(card.prior_sum, 2)} people "
            f"expected</span></div>")
    note = ("<p class=\"note\">Bounds of Swanberg et al., &ldquo;Beyond the Worst Case&rdquo;: "
            "success bound = Thm 3.5 at n = 1 (any attack on one person); v_UB = Thm 3.5 "
            "over all n people (at most v_UB succeed, with the stated confidence); expected "
            "successes = the sum of the per-person bounds. They hold for every attacker whose "
            "a-priori best guess succeeds with the prior shown; all are valid upper bounds, "
            "none is an estimate. Curves: "
            f"{len(card.curve)} epsilons; table rows equal <code>dpaudit risk --epsilon "
            "e</code>.</p>")
    body = (f"<section class=\"card\"><h2>Attack risk against &epsilon;</h2>{head}{answers}"
            f"<div class=\"grid2\"><div class=\"plot\" id=\"risk-people\"></div>"
            f"<div class=\"plot\" id=\"risk-one\"></div></div>{plain}{table}{note}</section>")
    return page_html("dpaudit risk card", "dpaudit risk card", "dpaudit risk card",
                     card.date, card.version, body, figs, plotlyjs=plotlyjs, css=_CSS)


def write_risk_card(path: str | Path, card: RiskCard) -> Path:
    """Write the risk card (HTML) to ``path`` atomically; returns the path."""
    return write_bytes(path, render_risk_card(card).encode("utf-8"), what="report")
