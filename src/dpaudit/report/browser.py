"""Open a report in headless Chromium (Playwright driving the SYSTEM browser) and inspect it.

Used by the browser tests, the report benchmark and to refresh ``docs/img/report_demo.png``.
Browser builds are never downloaded (no ``playwright install``): the Debian ``chromium``
package is driven through ``executable_path``.  Needs the ``browser`` extra (playwright).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["find_chromium", "BrowserCheck", "inspect_report", "CHROMIUM_ARGS"]

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    """Path of a system Chromium/Chrome executable, or None."""
    for name in _CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass(frozen=True)
class BrowserCheck:
    """What a person opening the report would see, measured."""

    plots_state: str
    plots_drawn: int
    plot_divs: int
    verdicts: tuple[str, ...]
    console_errors: tuple[str, ...]
    dialogs: tuple[str, ...]
    requests: tuple[str, ...]
    load_seconds: float
    body_text: str
    injected: Any = None
    screenshots: tuple[Path, ...] = field(default_factory=tuple)
    print_overflows: int | None = None
    print_overlaps: int | None = None
    overflows: int = 0
    overlaps: int = 0


def inspect_report(path: str | Path, *, screenshot: str | Path | None = None,
                   full_page: bool = True, clip_selector: str | None = None,
                   clip_height: int | None = None, viewport: tuple[int, int] = (1280, 900),
                   executable: str | None = None, timeout_ms: int = 60_000,
                   print_screenshot: str | Path | None = None) -> BrowserCheck:
    """Load ``path`` from disk, wait until every plot is drawn, and collect: plot SVG count,
    verdict texts, console errors and page errors, dialogs (alert/confirm: an injected script),
    every network request, ``window.__dpaudit_xss`` (set by test payloads if they ever ran),
    load time (navigation start to all plots drawn, from the page's own clock)."""
    from playwright.sync_api import sync_playwright

    exe = executable or find_chromium()
    if exe is None:
        raise OSError("no system Chromium found (install the 'chromium' package)")
    url = Path(path).resolve().as_uri()
    errors: list[str] = []
    dialogs: list[str] = []
    requests: list[str] = []
    shots: list[Path] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
            page.on("request", lambda r: requests.append(r.url))

            def _dialog(d: Any) -> None:
                dialogs.append(d.message)
                d.dismiss()

            page.on("dialog", _dialog)
            t0 = time.perf_counter()
            page.goto(url, wait_until="load", timeout=timeout_ms)
            page.wait_for_function(
                "document.body && document.body.getAttribute('data-plots') !== 'pending'",
                timeout=timeout_ms)
            wall = time.perf_counter() - t0
            load = page.evaluate("performance.now()") / 1000.0
            state = page.evaluate("document.body.getAttribute('data-plots')")
            svgs = page.evaluate("[...document.querySelectorAll('.plot')].filter("
                                 "d => d.querySelector('svg.main-svg') "
                                 "&& d.querySelector('svg.main-svg .trace')).length")
            divs = page.locator(".plot").count()
            verdicts = tuple(page.locator("[data-testid=verdict]").all_inner_texts())
            text = page.locator("body").inner_text()
            screen_overflows = page.evaluate(_OVERFLOWS_JS)
            screen_overlaps = page.evaluate(_OVERLAPS_JS)
            injected = page.evaluate("window.__dpaudit_xss === undefined ? null : "
                                     "String(window.__dpaudit_xss)")
            if screenshot is not None:
                out = Path(screenshot)
                out.parent.mkdir(parents=True, exist_ok=True)
                if clip_selector is not None:
                    box = page.locator(clip_selector).first.bounding_box()
                    if box is None:
                        raise ValueError(f"clip_selector {clip_selector!r} matched nothing")
                    h = box["height"] if clip_height is None else min(box["height"],
                                                                       clip_height)
                    page.screenshot(path=str(out), full_page=True,
                                    clip={"x": box["x"], "y": box["y"], "width": box["width"],
                                          "height": h})
                else:
                    page.screenshot(path=str(out), full_page=full_page)
                shots.append(out)
            overflows = overlaps = None
            if print_screenshot is not None:
                # print media on an A4-wide page: plots must fit their column and no two
                # blocks of the card may overlap (what a printed card would show)
                page.set_viewport_size({"width": 760, "height": 1075})
                page.emulate_media(media="print")
                page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
                page.wait_for_timeout(800)
                overflows = page.evaluate(_OVERFLOWS_JS)
                overlaps = page.evaluate(_OVERLAPS_JS)
                out = Path(print_screenshot)
                out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out), full_page=True)
                shots.append(out)
        finally:
            browser.close()
    return BrowserCheck(plots_state=str(state), plots_drawn=svgs, plot_divs=divs,
                        verdicts=verdicts, console_errors=tuple(errors),
                        dialogs=tuple(dialogs), requests=tuple(requests),
                        load_seconds=min(load, wall), body_text=text, injected=injected,
                        screenshots=tuple(shots), print_overflows=overflows,
                        print_overlaps=overlaps, overflows=screen_overflows,
                        overlaps=screen_overlaps)


#: plots whose drawing is wider than their container (clipped or spilling when printed).
_OVERFLOWS_JS = """[...document.querySelectorAll('.plot')].filter(function (d) {
  var s = d.querySelector('svg.main-svg'), a = s && s.getBoundingClientRect(),
      b = d.getBoundingClientRect();
  return s && (a.width > b.width + 1 || a.height > b.height + 1);
}).length"""

#: pairs of consecutive blocks (plots, tables, headings, paragraphs) of a card that overlap.
_OVERLAPS_JS = """(function () {
  var n = 0;
  document.querySelectorAll('.card').forEach(function (card) {
    var els = [...card.querySelectorAll('.plot svg.main-svg:first-of-type, table, h3, p, '
                                        + '.verdict, .headline')];
    var r = els.map(function (e) { return e.getBoundingClientRect(); });
    for (var i = 0; i < r.length; i++) {
      for (var j = i + 1; j < r.length; j++) {
        if (els[i].contains(els[j]) || els[j].contains(els[i])) { continue; }
        var ox = Math.min(r[i].right, r[j].right) - Math.max(r[i].left, r[j].left);
        var oy = Math.min(r[i].bottom, r[j].bottom) - Math.max(r[i].top, r[j].top);
        if (ox > 2 && oy > 2) { n += 1; }
      }
    }
  });
  return n;
})()"""
