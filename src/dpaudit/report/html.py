"""Self-contained HTML rendering of audit cards (plotly.js embedded once, no network).

Safety:
* every user string in the HTML is escaped with :func:`html.escape` (quotes too);
* the figures travel as JSON in a ``<script type="application/json">`` data block made inert
  by :func:`script_json` (``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\\uXXXX``, so no
  ``</script>`` or comment opener can appear), parsed with ``JSON.parse``;
* a Content-Security-Policy allows only the two scripts of the page, by their SHA-256 hashes
  (an injected script would not run even if escaping failed), and no network at all
  (``default-src 'none'``: the file never fetches anything when opened).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from collections.abc import Sequence
from typing import Any

from dpaudit.report.figures import figures
from dpaudit.report.model import ReportModel

__all__ = ["render_html", "page_html", "script_json", "plotly_js"]

_E = html.escape


def script_json(obj: Any) -> str:
    """JSON safe to place inside a ``<script>`` element (no ``</script>``, ``<!--``,
    line separators): ``<``, ``>``, ``&``, U+2028, U+2029 become ``\\uXXXX`` escapes."""
    text = json.dumps(obj, allow_nan=False, separators=(",", ":"), ensure_ascii=False)
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def plotly_js() -> str:
    """plotly.js as shipped with the installed plotly (minified), embedded once per page."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs()


def _csp_hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()
                                         ).decode("ascii") + "'"


_BOOT = """(function () {
  var data = JSON.parse(document.getElementById('dpaudit-figures').textContent);
  var config = {displaylogo: false, responsive: true,
                modeBarButtonsToRemove: ['sendDataToCloud', 'select2d', 'lasso2d']};
  if (typeof Plotly === 'undefined') {
    document.body.setAttribute('data-plots', 'missing');
    return;
  }
  var ids = Object.keys(data), done = 0;
  ids.forEach(function (id) {
    var fig = data[id], div = document.getElementById(id);
    div.style.height = (fig.layout.height || 360) + 'px';
    Plotly.newPlot(id, fig.data, fig.layout, config).then(function () {
      done += 1;
      if (done === ids.length) { document.body.setAttribute('data-plots', 'ready'); }
    });
  });
  if (ids.length === 0) { document.body.setAttribute('data-plots', 'ready'); }
  function fit() { ids.forEach(function (id) { Plotly.Plots.resize(id); }); }
  window.addEventListener('beforeprint', fit);
  window.addEventListener('afterprint', fit);
  if (window.matchMedia) {
    var mq = window.matchMedia('print');
    if (mq.addEventListener) { mq.addEventListener('change', fit); }
  }
})();"""

_CSS = """
:root { --ok: #1b7f3b; --bad: #b3261e; --none: #44546a; --ink: #1d1d1f; --muted: #5f6368; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       color: var(--ink); margin: 0; background: #f3f4f6; line-height: 1.45; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 20px 48px; }
header.page h1 { font-size: 22px; margin: 0 0 4px; }
header.page p { margin: 0 0 16px; color: var(--muted); }
.card { background: white; border-radius: 10px; padding: 22px 26px; margin: 0 0 28px;
        box-shadow: 0 1px 3px rgba(0,0,0,.12); }
.card h2 { font-size: 18px; margin: 0 0 10px; color: var(--muted); font-weight: 600;
           overflow-wrap: anywhere; }
.verdict { font-size: 27px; font-weight: 700; margin: 4px 0 10px; overflow-wrap: anywhere;
           padding: 12px 16px; border-left: 8px solid var(--none); background: #f1f3f4; }
.verdict.violation { border-color: var(--bad); color: var(--bad); background: #fdecea; }
.verdict.ok { border-color: var(--ok); color: var(--ok); background: #e8f5ec; }
.headline { display: flex; flex-wrap: wrap; gap: 10px 28px; margin: 0 0 14px; font-size: 15px; }
.headline b { font-size: 19px; }
h3 { font-size: 16px; margin: 22px 0 6px; border-bottom: 1px solid #e0e0e0; padding-bottom: 4px; }
p.note { color: var(--muted); font-size: 13px; margin: 4px 0 8px; }
.grid2 { display: grid; grid-template-columns: 1fr 1fr; gap: 14px; }
.plot { min-height: 220px; width: 100%; break-inside: avoid; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 10px; }
th, td { border-bottom: 1px solid #e6e6e6; padding: 4px 10px; text-align: left;
         vertical-align: top; }
td.u { overflow-wrap: anywhere; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num, th { white-space: nowrap; overflow-wrap: normal; }
tr.basis td { font-weight: 700; }
table.kv td:first-child { color: var(--muted); max-width: 40%; }
code { font-size: 12px; overflow-wrap: anywhere; }
.summary td.v-violation { color: var(--bad); font-weight: 700; }
.summary td.v-ok { color: var(--ok); font-weight: 700; }
@media (max-width: 860px) { .grid2 { grid-template-columns: 1fr; } }
@page { size: A4; margin: 12mm; }
@media print {
  body { background: white; }
  main { max-width: none; padding: 0; }
  .card { box-shadow: none; border: 1px solid #ccc; break-before: page; }
  .card:first-of-type { break-before: auto; }
  .modebar-container { display: none !important; }
  .grid2 { display: block; }
  h3, .plot, table { break-inside: avoid; }
  h3 { break-after: avoid; }
  .verdict { font-size: 22px; }
}
"""


def _f(x: float | None, digits: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if isinstance(x, float):
        return f"{x:.{digits}f}" if abs(x) >= 1e-3 or x == 0 else f"{x:.3e}"
    return _E(str(x))


def _pct(x: float) -> str:
    return f"{100 * x:.2f}%" if x >= 1e-4 else f"{100 * x:.2e}%"


def _kv(rows: Sequence[tuple[str, str]]) -> str:
    body = "".join(f"<tr><td class=\"u\">{_E(k)}</td><td class=\"u\">{v}</td></tr>"
                   for k, v in rows)
    return f'<table class="kv">{body}</table>'


def _value(v: Any) -> str:
    if isinstance(v, float):
        return _f(v)
    if isinstance(v, (dict, list, tuple)):
        return f"<code>{_E(json.dumps(v, default=str))}</code>"
    return _E(str(v))


def _verdict_class(m: ReportModel) -> str:
    return "" if m.violation is None else ("violation" if m.violation else "ok")


def _card(m: ReportModel, idx: int, figs: dict[str, Any]) -> str:
    pid = f"c{idx}"
    fk = figures(m)
    for k, fig in fk.items():
        figs[f"{pid}-{k}"] = fig

    def plot(key: str) -> str:
        return f'<div class="plot" id="{pid}-{key}"></div>' if key in fk else ""

    head = []
    if m.claimed_epsilon is not None:
        head.append(f"<span>claimed &epsilon; <b>{_f(m.claimed_epsilon)}</b></span>")
    if m.bound_source is None:
        head.append(f"<span>no lower bound valid for any mechanism (verdict row "
                    f"{_E(m.verdict_method)})</span>")
    else:
        head.append(f"<span>the run's &epsilon; &ge; <b class=\"bound\">{_f(m.bound)}</b> "
                    f"({_E(m.bound_source)}, valid for any mechanism)</span>")
    head.append(f"<span>&delta; = {m.delta:g} &middot; confidence "
                f"{100 * m.confidence:g}%</span>")
    if m.true_epsilon is not None:
        head.append(f"<span>true &epsilon; {_f(m.true_epsilon)}</span>")

    rows = "".join(
        f'<tr class="{"basis" if r.basis else ""}"><td class="u">{_E(r.method)}'
        f'{" (verdict)" if r.basis else ""}</td><td class="num">{_E(r.cell())}</td>'
        f'<td class="num">{r.delta:g}</td><td class="num">{r.confidence_cell()}</td>'
        f"<td class=\"u\">{_E(r.fit)}</td><td class=\"num\">{_f(r.p_value)}</td>"
        + (f'<td class="num">{_pct(r.epsilon / m.true_epsilon)}</td>'
           if m.true_epsilon else "") + "</tr>" for r in m.methods)
    ratio_h = '<th class="num">of true &epsilon;</th>' if m.true_epsilon else ""
    methods = (f"<table><thead><tr><th>method</th><th class=\"num\">&epsilon;</th>"
               f"<th class=\"num\">&delta;</th><th class=\"num\">confidence</th><th>fit</th>"
               f"<th class=\"num\">p-value</th>{ratio_h}</tr></thead><tbody>{rows}</tbody>"
               f"</table>")

    if m.scores is not None:
        s = m.scores
        c = f"{100 * s.confidence:g}%"
        tpr_rows = "".join(
            f"<tr><td>TPR at FPR &le; {t['fpr_target']:g}</td><td class=\"num\">"
            f"{_f(t['tpr'])}</td><td class=\"num\">[{_f(t['tpr_lo'])}, {_f(t['tpr_hi'])}]"
            f"</td></tr>" for t in s.tpr_at)
        stats = (f"<table><thead><tr><th>statistic</th><th class=\"num\">value</th>"
                 f"<th class=\"num\">{c} interval</th></tr></thead><tbody>"
                 f"<tr><td>AUROC</td><td class=\"num\">{_f(s.auroc[0])}</td>"
                 f"<td class=\"num\">[{_f(s.auroc[1])}, {_f(s.auroc[2])}]</td></tr>"
                 f"{tpr_rows}</tbody></table>"
                 f"<p class=\"note\">{s.roc.n_members:,} members, {s.roc.n_nonmembers:,} "
                 f"non-members, {s.roc.n_thresholds:,} distinct thresholds; the curves show "
                 f"{s.roc.fpr.size} vertices (log-spaced FPR grid, lower envelope). AUROC: "
                 f"DeLong interval. TPR: Clopper&ndash;Pearson interval for the threshold "
                 f"chosen on these data (descriptive, not an audit bound).</p>")
        scores = (f"<h3>Attack scores</h3>{stats}<div class=\"grid2\">{plot('roc')}"
                  f"{plot('roc_log')}</div>")
    else:
        scores = ("<h3>Attack scores</h3><p class=\"note\">Per-canary scores were not "
                  "provided, so the ROC and the observed privacy-region points are not shown "
                  "(pass the scores file: <code>dpaudit report RESULT.json --scores "
                  "SCORES</code>).</p>")

    guesses = ""
    if m.guesses:
        guesses = (f"<h3>One-run audit: bound vs number of guesses</h3>{plot('guesses')}"
                   "<p class=\"note\">Each point is a bound at the per-test confidence of the "
                   "Bonferroni-corrected grid; the circled point is the reported one (the "
                   "largest), valid at the stated confidence.</p>")

    rk = m.risk
    risk_rows = "".join(
        f"<tr><td>{_E(r.label)}</td><td class=\"num\">{_f(r.epsilon)}</td>"
        f"<td class=\"num\">{_pct(r.reconstruction)}</td><td class=\"num\">"
        f"{_pct(r.membership)}</td></tr>" for r in rk.rows)
    claimed_row = next((r for r in rk.rows if r.label == "claimed"), None)
    meas = next((r for r in rk.rows if r.label == "measured lower bound"), None)
    risk_text = ""
    if claimed_row is not None:
        risk_text += (f"If the claim holds, no attack reconstructs a target's secret with "
                      f"probability above {_pct(claimed_row.reconstruction)} (prior success "
                      f"{_pct(rk.prior)}), nor infers membership (prior 50%) with probability "
                      f"above {_pct(claimed_row.membership)}. ")
    if meas is not None:  # only a lower bound valid for any mechanism (ReportModel.bound)
        risk_text += (f"The audit proves &epsilon; &ge; {_f(meas.epsilon)}, so no (&epsilon;, "
                      f"&delta; = {rk.delta:g}) guarantee of this mechanism can promise less "
                      f"than {_pct(meas.reconstruction)} reconstruction or "
                      f"{_pct(meas.membership)} membership success.")
    else:
        risk_text += ("No row of this audit is a lower bound valid for any mechanism, so it "
                      "proves no attack risk.")
    risk = (f"<h3>What it means for an attacker (Beyond Worst Case)</h3><p>{risk_text}</p>"
            f"<table><thead><tr><th>epsilon</th><th class=\"num\">value</th>"
            f"<th class=\"num\">reconstruction (prior {_pct(rk.prior)})</th>"
            f"<th class=\"num\">membership (prior 50%)</th></tr></thead><tbody>{risk_rows}"
            f"</tbody></table>{plot('risk')}<p class=\"note\">One target, one guess: bound "
            f"&beta;(p, &epsilon;) + (1 &minus; &beta;) &delta; with &beta; = e<sup>&epsilon;"
            f"</sup>p / (e<sup>&epsilon;</sup>p + 1 &minus; p) (Thm 3.5 at n = 1).</p>")

    pv = m.provenance
    inputs = "".join(f"<tr><td class=\"u\">{_E(i.name)}</td><td class=\"num\">{i.size:,} B</td>"
                     f"<td><code>{_E(i.sha256)}</code></td></tr>" for i in pv.inputs)
    inputs_t = (f"<table><thead><tr><th>input</th><th class=\"num\">size</th><th>sha256</th>"
                f"</tr></thead><tbody>{inputs}</tbody></table>" if pv.inputs
                else "<p class=\"note\">No input file (simulated or in-memory data).</p>")
    prov_rows = [("dpaudit version", _E(pv.version)), ("command", f"<code>{_E(pv.command)}"
                                                       "</code>"),
                 ("seed", _value(pv.seed)), ("date", _E(pv.date)),
                 ("run time", "-" if pv.run_seconds is None else f"{pv.run_seconds:.2f} s")]
    prov_rows += [(k, _E(v)) for k, v in pv.environment.items()]
    settings = _kv([(k, _value(v)) for k, v in pv.settings.items()]) if pv.settings else \
        "<p class=\"note\">No settings recorded.</p>"
    facts = ("<h3>Audit facts</h3>" + _kv([(k, _value(v)) for k, v in m.facts.items()])
             if m.facts else "")
    notes = "".join(f"<p class=\"note\">{_E(n)}</p>" for n in m.notes)

    return f"""<section class="card" id="{pid}">
<h2>{_E(m.title)}</h2>
<div class="verdict {_verdict_class(m)}" data-testid="verdict">{_E(m.verdict)}</div>
<div class="headline">{''.join(head)}</div>
{notes}
<div class="grid2">
<div><h3>Bounds side by side</h3>
{methods}
{plot('bounds')}
<p class="note">A row marked &ge; is a lower bound at its confidence on its own (valid for
every mechanism meeting the claim as stated, unless marked "assuming": then only under the
assumption named above); "~ x (estimate)" is an estimate, never a bound; "fails the claimed
DP-SGD curve at &epsilon; = x" names the DP-SGD curve the run is shown not to meet, not a bound
on the run's own &epsilon;. The verdict rests on the row marked (verdict): taking the best of
several rows would not hold at the stated confidence.</p></div>
<div><h3>Privacy region (f-DP view)</h3>
{plot('region')}
<p class="note">A mechanism that is (&epsilon;, &delta;)-DP keeps every test's (FPR, FNR) above
its trade-off curve. The orange points are the tests "score &ge; t" at 15 thresholds chosen
without the labels, with pointwise confidence boxes: descriptive (15 boxes are not a
simultaneous test); the verdict rests on the bound above. The dashed red curve is the
(&epsilon;, &delta;) trade-off at the measured lower bound.</p></div>
</div>
{scores}
<div class="{'grid2' if guesses else ''}">
{f'<div>{guesses}</div>' if guesses else ''}
<div>{risk}</div>
</div>
<div class="grid2">
<div><h3>Provenance</h3>
{_kv(prov_rows)}
{inputs_t}</div>
<div><h3>Settings</h3>
{settings}
{facts}</div>
</div>
</section>"""


def _summary(models: Sequence[ReportModel]) -> str:
    rows = "".join(
        f"<tr><td><a href=\"#c{i}\">{_E(m.title)}</a></td>"
        f"<td class=\"v-{_verdict_class(m) or 'none'}\">{_E(m.verdict)}</td></tr>"
        for i, m in enumerate(models))
    return (f"<table class=\"summary\"><thead><tr><th>audit</th><th>verdict</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def render_html(models: Sequence[ReportModel] | ReportModel, *, title: str | None = None,
                plotlyjs: str | None = None) -> str:
    """The complete HTML document for one or several cards."""
    ms = [models] if isinstance(models, ReportModel) else list(models)
    if not ms:
        raise ValueError("render_html needs at least one report model")
    figs: dict[str, Any] = {}
    cards = "\n".join(_card(m, i, figs) for i, m in enumerate(ms))
    page_title = title or (ms[0].title if len(ms) == 1 else f"dpaudit report: {len(ms)} audits")
    summary = _summary(ms) if len(ms) > 1 else ""
    heading = title or ("dpaudit audit card" if len(ms) == 1
                        else f"dpaudit report: {len(ms)} audits")
    return page_html(page_title, heading, "dpaudit audit card", ms[0].provenance.date,
                     ms[0].provenance.version, f"{summary}\n{cards}", figs, plotlyjs=plotlyjs)


def page_html(page_title: str, heading: str, kind: str, date: str, version: str, body: str,
              figs: dict[str, Any], *, plotlyjs: str | None = None, css: str = "") -> str:
    """The page shell every card shares: CSP (the two scripts by hash, no network), the style
    sheet (+ ``css``), the escaped title and header, ``body`` (HTML the caller escaped), the
    figures as an inert JSON block and plotly.js embedded once."""
    js = plotly_js() if plotlyjs is None else plotlyjs
    csp = (f"default-src 'none'; script-src {_csp_hash(js)} {_csp_hash(_BOOT)}; "
           f"style-src 'unsafe-inline'; img-src data: blob:; font-src data:; "
           f"base-uri 'none'; form-action 'none'")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="dpaudit {_E(version)}">
<title>{_E(page_title)}</title>
<style>{_CSS}{css}</style>
</head>
<body data-plots="pending">
<main>
<header class="page"><h1>{_E(heading)}</h1>
<p>{_E(kind)} &middot; {_E(date)} &middot; dpaudit
{_E(version)}</p></header>
{body}
</main>
<script>{js}</script>
<script type="application/json" id="dpaudit-figures">{script_json(figs)}</script>
<script>{_BOOT}</script>
</body>
</html>
"""
