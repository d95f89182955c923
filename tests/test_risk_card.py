"""The risk card (dpaudit.report.risk_card): ``dpaudit risk ... --report risk.html``.

Its numbers are the sweep's and the inverse answers' (tested against the single-epsilon
command in test_risk_sweep / test_risk_inverse); here: the figures carry those numbers, the
page is the audit card's self-contained shell, user text is escaped, and in a real browser
(headless system Chromium, as the audit card's browser test) both plots draw with no error
and no network request.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from dpaudit.report.risk_card import render_risk_card, risk_card, risk_figures
from dpaudit.risk.inverse import largest_epsilon_for_attacked, largest_epsilon_for_success
from dpaudit.risk.sweep import risk_sweep
from test_report_browser import XSS, chromium  # noqa: F401  (the browser fixture)

PRIORS = np.full(100, 0.1)


def _card():  # type: ignore[no-untyped-def]
    rows = risk_sweep((0.5, 1.0, 2.0), 1e-5, PRIORS)
    answers = (largest_epsilon_for_attacked(PRIORS, 1e-5, 50),
               largest_epsilon_for_success(PRIORS, 1e-5, 0.5))
    return risk_card(rows, PRIORS, delta=1e-5, confidence=0.95,
                     prior_label=f"priors from {XSS}", answers=answers), rows, answers


def test_figures_carry_the_bounds() -> None:
    card, rows, answers = _card()
    figs = risk_figures(card)
    vub = dict(zip(figs["people"]["data"][0]["x"], figs["people"]["data"][0]["y"],
                   strict=True))
    for r in rows:                                     # the sweep's epsilons are on the curve
        assert vub[r["epsilon"]] == r["v_ub"]
    assert vub[answers[0].epsilon] == 50               # the answer sits on the curve at K
    assert figs["people"]["data"][2]["y"] == [10.0, 10.0]        # prior alone: sum of priors
    assert figs["one"]["data"][1]["y"] == [0.1, 0.1]             # prior alone: best guess
    xs = [s["x0"] for s in figs["people"]["layout"]["shapes"] if s["xref"] == "x"]
    assert xs == [answers[0].epsilon]
    assert [s["x0"] for s in figs["one"]["layout"]["shapes"] if s["xref"] == "x"] == [
        answers[1].epsilon]


@pytest.mark.slow
def test_page_is_self_contained_and_escaped() -> None:
    card, rows, answers = _card()
    page = render_risk_card(card, plotlyjs="/* plotly */")
    assert XSS not in page and "&lt;script&gt;alert(" in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"(src|href)=\"https?:", page)
    figs = json.loads(re.search(r'id="dpaudit-figures">(.*?)</script>', page, re.S)
                      .group(1))
    assert set(figs) == {"risk-people", "risk-one"}
    assert "1.8883" in page and "at most 50 of the 100 people" in page
    assert "no attacker reconstructs the records of more than 22 of your 100 people" in page


@pytest.mark.slow
def test_cli_report_and_its_errors(cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "risk.html"
    rc, _, err = cli("risk", "--epsilon", "1,2", "--prior", "0.1", "--targets", "100",
                     "--delta", "1e-5", "--max-attacked", "50", "--report", str(out))
    assert rc == 0 and "report written" in err and out.read_text().startswith("<!DOCTYPE")
    for bad, word in ((tmp_path, "regular file"), (tmp_path / "card.png", "HTML")):
        rc, _, err = cli("risk", "--epsilon", "1", "--prior", "0.1", "--report", str(bad))
        assert rc == 2 and word in err and err.count("\n") == 1


@pytest.mark.slow
def test_risk_card_in_chromium(chromium, tmp_path, cli) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    from dpaudit.report.browser import inspect_report

    pri = tmp_path / f"{XSS.replace('/', '_')}.csv"
    np.savetxt(pri, np.random.default_rng(0).uniform(0.01, 0.2, 200), fmt="%.6f")
    out = tmp_path / "risk.html"
    rc, _, err = cli("risk", "--epsilon", "0.5,1,2,4", "--prior-file", str(pri), "--delta",
                     "1e-5", "--max-attacked", "60", "--max-success", "0.5", "--report",
                     str(out))
    assert rc == 0, err
    check = inspect_report(out, screenshot=tmp_path / "risk_card.png")
    assert check.plots_state == "ready" and check.plots_drawn == check.plot_divs == 2
    assert check.console_errors == () and check.dialogs == () and check.injected is None
    assert all(u.startswith("file:") for u in check.requests)
    assert check.overflows == 0 and check.overlaps == 0
    assert "at most 60 of the 200 people" in check.body_text
    assert "<script>alert(" in check.body_text          # shown as text, never run
