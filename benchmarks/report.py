"""Audit card at 1e6 canaries: build time, file size, and time to open in headless Chromium.

Prints figures and ratios to baselines measured in the same run (no absolute thresholds):
* build: summaries of 1e6 scores vs one ``np.sort`` of the same scores;
* size: the card vs the embedded plotly.js alone (the rest is the summaries + page);
* open: navigation start to "all plots drawn" (the page's own clock, best of 3) vs a page that
  embeds the same plotly.js and draws ONE trivial plot (so the ratio isolates the card's cost
  from parsing plotly.js, which every offline plotly page pays).

Run: ``python benchmarks/report.py`` (needs the browser extra and a system Chromium for the
open times; without them the open rows are skipped).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from dpaudit.estimators.multi_run import multi_run
from dpaudit.outcome import Audit
from dpaudit.report import build_report, write_report
from dpaudit.report.browser import find_chromium, inspect_report
from dpaudit.report.html import _BOOT, _csp_hash, plotly_js, script_json


def _baseline_page(path: Path) -> None:
    js = plotly_js()
    figs = {"b": {"data": [{"type": "scatter", "x": [0, 1], "y": [0, 1]}], "layout": {}}}
    csp = f"default-src 'none'; script-src {_csp_hash(js)} {_csp_hash(_BOOT)}; " \
          "style-src 'unsafe-inline'; img-src data: blob:"
    path.write_text(f"""<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}"></head>
<body data-plots="pending"><div class="plot" id="b"></div><script>{js}</script>
<script type="application/json" id="dpaudit-figures">{script_json(figs)}</script>
<script>{_BOOT}</script></body></html>""", encoding="utf-8")


def main() -> None:
    n = 1_000_000
    rng = np.random.default_rng(0)
    member = rng.random(n) < 0.5
    score = member * 0.5 + rng.normal(size=n)
    results = [multi_run(member, score, delta=1e-5, estimate=e) for e in ("eps_delta", "gdp")]
    payload = Audit.of(results, claimed_epsilon=1.0).to_dict()

    t = time.perf_counter()
    np.sort(score)
    t_sort = time.perf_counter() - t
    t = time.perf_counter()
    model = build_report(payload, observations=(member, score))
    t_build = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as d:
        card = Path(d) / "card.html"
        t = time.perf_counter()
        write_report(card, model)
        t_html = time.perf_counter() - t
        size = card.stat().st_size
        js = len(plotly_js().encode())
        print(f"canaries                      {n:,}")
        print(f"build summaries               {t_build:.3f} s  ({t_build / t_sort:.1f} x one "
              f"np.sort of the scores, {t_sort:.3f} s)")
        print(f"render + write HTML           {t_html:.3f} s")
        print(f"card size                     {size / 1e6:.3f} MB  (plotly.js {js / 1e6:.3f} MB "
              f"+ {(size - js) / 1e3:.1f} kB of card; limit 5 MB)")
        exe = find_chromium()
        try:
            import playwright  # noqa: F401
        except ImportError:
            exe = None
        if exe is None:
            print("open time                     skipped (no Chromium / playwright)")
            return
        base = Path(d) / "baseline.html"
        _baseline_page(base)
        t_card = min(inspect_report(card, executable=exe).load_seconds for _ in range(3))
        t_base = min(inspect_report(base, executable=exe).load_seconds for _ in range(3))
        print(f"open card (all plots drawn)   {t_card:.3f} s  (best of 3)")
        print(f"open baseline (plotly + 1)    {t_base:.3f} s  -> card / baseline = "
              f"{t_card / t_base:.2f}")


if __name__ == "__main__":
    main()
