"""The audit card in a real browser: headless system Chromium driven by Playwright.

Rule for a missing browser (Chromium or the playwright package):
* FAIL when ``CI=true``, or when ``DPAUDIT_REQUIRE_BROWSER=1``, or when running as root on a
  machine with apt-get (``make test`` installs Chromium there, through ``make browser``);
* otherwise SKIP with the reason shown (``pytest -rs``).
``DPAUDIT_SKIP_BROWSER=1`` skips (an explicit opt-out), except under ``CI=true``.

Screenshots are kept under pytest's tmp dir (test artefacts); ``DPAUDIT_DOCS_IMG=PATH`` also
writes the demo screenshot to PATH (how ``docs/img/report_demo.png`` is refreshed).
"""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from dpaudit.cli import main
from dpaudit.report.browser import find_chromium
from needs import in_ci, skip_outside_ci

XSS = ('<script>alert("xss")</script>\'"&amp;<img src=x onerror="window.__dpaudit_xss=1">'
       '</script><script>window.__dpaudit_xss=2</script>')

pytestmark = pytest.mark.browser


def _browser_required() -> bool:
    if in_ci():
        return True
    if os.environ.get("DPAUDIT_REQUIRE_BROWSER") == "1":
        return True
    return hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get") is not None


@pytest.fixture(scope="module")
def chromium() -> str:
    if os.environ.get("DPAUDIT_SKIP_BROWSER") == "1" and not in_ci():
        skip_outside_ci("browser tests skipped: DPAUDIT_SKIP_BROWSER=1")
    exe = find_chromium()
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        exe, why = None, "the playwright package is missing (pip install -e '.[browser]')"
    else:
        why = "no system Chromium found (apt-get install chromium, or `make browser` as root)"
    if exe is None:
        if _browser_required():
            pytest.fail(f"browser test required here (CI=true or root with apt-get) but {why}")
        skip_outside_ci(f"browser tests skipped: {why}")
    return exe


def _scores(path, n=4000, seed=0, shift=1.0):
    rng = np.random.default_rng(seed)
    member = rng.random(n) < 0.5
    score = member * shift + rng.normal(size=n)
    np.savetxt(path, np.c_[member.astype(int), score], delimiter=",", header="member,score",
               comments="", fmt=["%d", "%.6f"])
    return path


def _cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


@pytest.mark.slow
def test_report_renders_and_matches_json(chromium, tmp_path, capsys):
    from dpaudit.report.browser import inspect_report

    scores = _scores(tmp_path / "scores.csv", n=2000)
    card = tmp_path / "audit.html"
    d = json.loads(_cli(capsys, "one-run", str(scores), "--claimed-epsilon", "2", "--json",
                        "--methods", "bits,steinke", "--report", str(card)))
    shot = tmp_path / "one_run_card.png"
    c = inspect_report(card, screenshot=shot, executable=chromium,
                       print_screenshot=tmp_path / "one_run_card_print.png")
    assert c.plots_state == "ready"
    # every plot container holds a drawn plotly SVG with traces: bounds, region, ROC, log ROC,
    # guesses, risk
    assert c.plot_divs == 6 and c.plots_drawn == 6
    assert c.console_errors == ()
    assert c.verdicts == (d["verdict"],)
    assert f"{d['claimed_epsilon']:.4f}" in c.body_text
    assert f"{d['results'][0]['epsilon']:.4f}" in c.body_text     # the best valid bound
    # the file is the only thing the page ever loads: no network
    assert c.requests == (card.resolve().as_uri(),)
    assert shot.stat().st_size > 50_000
    # every plot fits its box and no two blocks of a card overlap, on screen and printed
    # (print media, A4 width)
    assert c.overflows == c.overlaps == 0                 # on screen ...
    assert c.print_overflows == 0 and c.print_overlaps == 0   # ... and printed


@pytest.mark.slow
def test_hostile_strings_run_no_script_and_show_as_text(chromium, tmp_path):
    from dpaudit.cli.common import json_payload
    from dpaudit.estimators.multi_run import multi_run
    from dpaudit.report import write_report
    from dpaudit.report.browser import inspect_report

    rng = np.random.default_rng(3)
    member = rng.random(3000) < 0.5
    score = member * 0.8 + rng.normal(size=3000)
    res = multi_run(member, score, delta=1e-5)
    payload = json_payload(res, claimed_epsilon=1.0, extra={"mechanism": XSS, "label": XSS})
    payload["verdict"] = XSS + " verdict"
    payload["results"][0]["method"] = XSS
    payload["verdict_method"] = XSS
    inp = tmp_path / 'in"put<script>.csv'
    inp.write_text("member,score\n")
    card = write_report(tmp_path / "xss.html", payload, observations=(member, score),
                        title=XSS, settings={"note": XSS, XSS: XSS}, notes=[XSS],
                        inputs=[inp])
    c = inspect_report(card, screenshot=tmp_path / "xss.png", executable=chromium)
    assert c.plots_state == "ready" and c.plots_drawn == c.plot_divs >= 4
    assert c.dialogs == ()            # alert() never ran
    assert c.injected is None         # neither did the onerror / injected script
    assert c.console_errors == ()
    assert c.verdicts == (XSS + " verdict",)              # shown literally, as text
    assert '<script>alert("xss")</script>' in c.body_text
    assert 'in"put<script>.csv' in c.body_text
    assert c.requests == (card.resolve().as_uri(),)


@pytest.mark.slow
def test_demo_card_screenshot(chromium, tmp_path, demo_run):
    from dpaudit.report.browser import inspect_report

    rc, out, err, card = demo_run  # the run test_cli_core's demo test reads
    assert rc == 0, err
    d = json.loads(out)
    shot = tmp_path / "demo_card.png"
    c = inspect_report(card, screenshot=shot, clip_selector="#c1", clip_height=1620,
                       executable=chromium, print_screenshot=tmp_path / "demo_print.png")
    # four cards (six with the real training audit); the verdicts are the JSON's, in order
    tr = d["training"]
    assert not (in_ci() and "skipped" in tr), "the training demo must run under CI=true"
    trained = () if "skipped" in tr else (tr["correct"]["verdict"], tr["flawed"]["verdict"])
    assert c.verdicts == (d["dpsgd_correct"]["verdict"], d["dpsgd_flawed"]["verdict"],
                          d["multi_run"]["correct"], d["multi_run"]["flawed"], *trained)
    # 6 plots per one-run card (bounds, guesses, ROC, ROC log, region, risk), 5 per multi-run
    # card (no guesses)
    assert c.plots_drawn == c.plot_divs == 22 + 6 * len(trained) and c.console_errors == ()
    assert c.overflows == c.overlaps == 0                 # on screen ...
    assert c.print_overflows == 0 and c.print_overlaps == 0   # ... and printed
    assert c.requests == (card.resolve().as_uri(),)
    docs = os.environ.get("DPAUDIT_DOCS_IMG")
    if docs:
        shutil.copyfile(shot, docs)
