"""The audit card: summaries against brute force, model against the JSON, escaping, size, CLI."""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from html import unescape as html_unescape

import numpy as np
import pytest

from dpaudit.cli import main
from dpaudit.estimators.multi_run import multi_run
from dpaudit.report import build_report, write_report
from dpaudit.report.html import plotly_js, render_html, script_json
from dpaudit.report.risk import risk_translation
from dpaudit.report.summaries import card_auroc, card_tpr_at_fpr, region_points, roc_points
from dpaudit.stats.binomial import clopper_pearson
from needs import need

XSS = '<script>alert(1)</script>"\'&<img src=x onerror="window.__dpaudit_xss=1">'


def _data(n: int, seed: int = 0, shift: float = 1.0, ties: bool = False):
    rng = np.random.default_rng(seed)
    member = rng.random(n) < 0.5
    score = member * shift + rng.normal(size=n)
    if ties:
        score = np.round(score, 1)
    return member, score


def _brute_roc(member, score):
    """(FPR, TPR) of "score >= t" for every distinct t, by direct comparison."""
    t = np.unique(score)[::-1]
    tpr = np.array([(score[member] >= x).mean() for x in t])
    fpr = np.array([(score[~member] >= x).mean() for x in t])
    return np.r_[0, fpr], np.r_[0, tpr]


# ----------------------------------------------------------------------------- summaries

def test_roc_points_are_vertices_and_lower_envelope():
    member, score = _data(600, ties=True)
    fpr, tpr = _brute_roc(member, score)
    roc = roc_points(member, score, log_points=20, linear_points=10)
    pairs = set(zip(np.round(fpr, 12), np.round(tpr, 12), strict=True))
    for f, t in zip(roc.fpr[1:], roc.tpr[1:], strict=True):      # [0] is (0, 0): t = +inf
        assert (round(f, 12), round(t, 12)) in pairs
        # nothing better than the data at that FPR: it is the best vertex with FPR <= f
        assert t == pytest.approx(tpr[fpr <= f + 1e-15].max())
    assert roc.fpr[0] == 0 and roc.tpr[0] == 0 and roc.fpr[-1] == 1 and roc.tpr[-1] == 1
    assert np.all(np.diff(roc.fpr) >= 0) and np.all(np.diff(roc.tpr) >= 0)


def test_roc_points_bounded_whatever_n():
    member, score = _data(200_000)
    roc = roc_points(member, score)
    assert roc.fpr.size <= 240 + 60 + 2
    assert roc.n_thresholds == 200_000


def test_auroc_and_delong_against_pairwise_computation():
    member, score = _data(300, seed=3, shift=0.7, ties=True)
    pos, neg = score[member], score[~member]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    auc = psi.mean()
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    se = math.sqrt(v10.var(ddof=1) / pos.size + v01.var(ddof=1) / neg.size)
    a, lo, hi = card_auroc(member, score, 0.95)
    assert a == pytest.approx(auc, abs=1e-12)
    assert (hi - lo) / 2 == pytest.approx(1.959963984540054 * se, rel=1e-9)


def test_tpr_at_fpr_matches_brute_force_and_clopper_pearson():
    member, score = _data(2000, seed=5)
    fpr, tpr = _brute_roc(member, score)
    n1 = int(member.sum())
    for row in card_tpr_at_fpr(member, score, (0.01, 0.1), 0.9):
        best = tpr[fpr <= row["fpr_target"]].max()
        assert row["tpr"] == pytest.approx(best) and row["fpr"] <= row["fpr_target"]
        lo, hi = clopper_pearson(round(best * n1), n1, 0.9, "two-sided")
        assert (row["tpr_lo"], row["tpr_hi"]) == pytest.approx((lo, hi))


def test_region_points_counts_and_boxes():
    member, score = _data(1000, seed=7)
    rp = region_points(member, score, 0.95, points=8, extra_thresholds=[0.25])
    assert 0.25 in rp.threshold
    for t, f, b in zip(rp.threshold, rp.fpr, rp.fnr, strict=True):
        assert f == pytest.approx((score[~member] >= t).mean())
        assert b == pytest.approx((score[member] < t).mean())
    assert np.all((rp.fpr_lo <= rp.fpr) & (rp.fpr <= rp.fpr_hi))
    assert np.all((rp.fnr_lo <= rp.fnr) & (rp.fnr <= rp.fnr_hi))


# ----------------------------------------------------------------------------- risk

def test_risk_translation_closed_forms():
    rk = risk_translation(1.0, 2.0, 0.0, prior=0.01)
    claimed, measured = rk.rows
    e = math.e
    assert claimed.membership == pytest.approx(e / (1 + e))                    # 0.7310586
    assert claimed.reconstruction == pytest.approx(e * 0.01 / (e * 0.01 + 0.99))  # 0.0267
    assert measured.membership == pytest.approx(e**2 / (1 + e**2))
    d = risk_translation(1.0, 1.0, 1e-3, prior=0.5).rows[0]
    b = e / (1 + e)
    assert d.membership == pytest.approx(b + (1 - b) * 1e-3)    # Thm 3.5 at n = 1
    with pytest.raises(ValueError, match="risk prior"):
        risk_translation(1.0, 1.0, 0.0, prior=1.0)


# ----------------------------------------------------------------------------- model

def _payload(n: int = 4000, claimed: float = 1.0, seed: int = 0):
    member, score = _data(n, seed=seed)
    results = [multi_run(member, score, delta=1e-5, estimate=e) for e in ("eps_delta", "gdp")]
    from dpaudit.cli.common import json_payload

    return json_payload(results, claimed_epsilon=claimed), (member, score)


def test_model_follows_the_json_verdict():
    payload, obs = _payload()
    m = build_report(payload, observations=obs)
    assert m.verdict == payload["verdict"]
    assert m.claimed_epsilon == 1.0 and m.violation == payload["violation"]
    assert m.bound == payload["results"][0]["epsilon"] and m.verdict_method == "multi_run"
    assert [r.basis for r in m.methods] == [True, False]
    # an estimate under an assumption (multi_run_gdp) is never the verdict's basis (issue 21)
    with pytest.raises(ValueError, match="estimate"):
        build_report({**payload, "verdict_method": "multi_run_gdp"})
    # an explicit verdict_method moves the basis
    p2 = {**payload, "results": payload["results"][::-1], "verdict_method": "multi_run"}
    m2 = build_report({**p2, "verdict_guarantee": "P[false violation] <= 0.05"})
    assert m2.bound == payload["results"][0]["epsilon"]
    assert m2.notes[0] == "Verdict guarantee: P[false violation] <= 0.05"
    assert m2.notes[1].startswith("multi_run_gdp is an estimate assuming the mechanism is μ-GDP")
    assert m2.scores is None


def test_model_bare_result_and_bad_payloads():
    payload, _ = _payload()
    bare = payload["results"][0]
    m = build_report(bare)
    assert m.claimed_epsilon is None and m.violation is None
    assert m.verdict.startswith("no claimed epsilon given: the audit proves epsilon >= ")
    # strict JSON writes an infinite bound as null + epsilon_note "inf"
    inf = {**bare, "epsilon": None, "epsilon_note": "inf"}
    mi = build_report({"results": [inf], "claimed_epsilon": 1.0})
    assert math.isinf(mi.bound) and mi.violation is True
    # the one verdict wording (dpaudit.estimators.verdict.Verdict.message)
    assert mi.verdict == ("violation: epsilon >= inf > claimed 1 at confidence 0.95 (a "
                          "mechanism meeting its claim gives this verdict with probability "
                          "<= 0.05)")
    with pytest.raises(ValueError, match="results"):
        build_report({"foo": 1})
    with pytest.raises(ValueError, match="verdict_method"):
        build_report({**payload, "verdict_method": "nope"})
    with pytest.raises(ValueError, match=r"results\[0\] lacks"):
        build_report({"results": [{"method": "x"}]})


# ----------------------------------------------------------------------------- html

def test_script_json_is_inert_and_round_trips():
    obj = {"a": "</script><script>alert(1)</script>", "b": "\u2028\u2029&<!--", "c": [1.5]}
    text = script_json(obj)
    assert not re.search(r"[<>&\u2028\u2029]", text)
    assert json.loads(text) == obj


def _scripts(page: str) -> list[str]:
    return re.findall(r"<script[^>]*>(.*?)</script>", page, flags=re.S)


@pytest.mark.slow
def test_html_escapes_every_user_string(tmp_path):
    payload, obs = _payload()
    payload = {**payload, "mechanism": XSS, "note": XSS}
    payload["results"][1]["method"] = XSS
    inp = tmp_path / "scores.csv"
    inp.write_text("member,score\n1,0.5\n")
    m = build_report(payload, observations=obs, title=XSS, settings={"label": XSS, XSS: 1},
                     notes=[XSS], inputs=[inp])
    page = render_html(m)
    # exactly the three scripts of the page: plotly.js, the figure data block, the bootstrap
    assert page.count("<script") == 3 and len(_scripts(page)) == 3
    ours = page.replace(_scripts(page)[0], "")            # the page minus plotly.js
    assert "alert(1)" in ours                              # the text is there ...
    assert "<script>alert" not in ours and "<img" not in ours   # ... but never as markup
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in ours
    # the figure data parse back to the escaped (shown-as-text) labels
    figs = json.loads(_scripts(page)[1])
    names = [t["y"] for t in figs["c0-bounds"]["data"]][0]
    assert names[1] == "&lt;script&gt;alert(1)&lt;/script&gt;\"'\u2026"      # 28 chars
    hover = figs["c0-bounds"]["data"][0]["hovertext"][1]
    assert "&lt;img src=x onerror=\"window.__dpaudit_xss=1\"&gt;" in hover
    # the CSP allows exactly the page's two executable scripts, by hash, and no network
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    for body in (_scripts(page)[0], _scripts(page)[2]):
        h = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{h}'" in csp
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp.split("style-src")[0]


def test_html_embeds_plotly_once_and_no_remote_resource():
    payload, obs = _payload()
    page = render_html(build_report(payload, observations=obs))
    js = plotly_js()
    assert page.count(js[:400]) == 1
    ours = page.replace(js, "")
    assert not re.search(r"(src|href)\s*=", ours)   # nothing to fetch (the browser test
    assert "https://" not in ours and "http://" not in ours   # watches the requests too)


@pytest.mark.slow
def test_report_size_at_a_million_canaries(tmp_path):
    rng = np.random.default_rng(1)
    n = 1_000_000
    member = rng.random(n) < 0.5
    score = member * 0.5 + rng.normal(size=n)
    res = multi_run(member, score, delta=1e-5)
    from dpaudit.cli.common import json_payload

    path = write_report(tmp_path / "big.html", json_payload(res, claimed_epsilon=1.0),
                        observations=(member, score))
    size = path.stat().st_size
    assert size < 5_000_000, size
    # all but the embedded plotly.js is small: the summaries do not grow with n
    assert size - len(plotly_js().encode()) < 150_000


@pytest.mark.slow  # > 5 s: end-to-end or exhaustive; CI runs it
def test_png_fallback(tmp_path):
    from dpaudit.report.png import CARD_HEIGHT_IN

    payload, obs = _payload()
    m = build_report(payload, observations=obs, title="dollars $x$ stay text")
    two = write_report(tmp_path / "two.png", [m, m], dpi=50)
    import matplotlib.image as mimg

    h, w = mimg.imread(two).shape[:2]
    assert two.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (w, h) == (15 * 50, round(2 * CARD_HEIGHT_IN * 50))       # one block per card


# ----------------------------------------------------------------------------- CLI

def _run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture()
def scores_file(tmp_path):
    member, score = _data(1500, seed=11)
    p = tmp_path / "scores.csv"
    np.savetxt(p, np.c_[member.astype(int), score], delimiter=",", header="member,score",
               comments="", fmt=["%d", "%.6f"])
    return p


def _kv(key: str, value: str) -> str:
    """A row of a settings / facts table."""
    return f'<td class="u">{key}</td><td class="u">{value}</td>'


def _verdict_in(page: str) -> str:
    import html

    m = re.search(r'data-testid="verdict">(.*?)</div>', page, flags=re.S)
    return html.unescape(m.group(1))


def test_cli_audit_report_matches_json(capsys, tmp_path, scores_file):
    card = tmp_path / "card.html"
    rc, out, err = _run(capsys, "audit", str(scores_file), "--claimed-epsilon", "0.5",
                        "--threshold", "split", "--seed", "3", "--json", "--report", str(card))
    assert rc == 0 and f"report written: {card}" in err
    d = json.loads(out)                                   # stdout stays pure JSON
    page = card.read_text()
    assert _verdict_in(page) == d["verdict"]
    assert f"<b>{d['claimed_epsilon']:.4f}</b>" in page
    assert f"<b class=\"bound\">{d['results'][0]['epsilon']:.4f}</b>" in page
    sha = hashlib.sha256(scores_file.read_bytes()).hexdigest()
    assert sha in page and "dpaudit audit" in page
    assert _kv("threshold", "split") in page and _kv("seed", "3") in page

    # the same card from the saved JSON (+ scores) via `dpaudit report`
    saved = tmp_path / "result.json"
    saved.write_text(out)
    rc, out2, _ = _run(capsys, "report", str(saved), "--scores", str(scores_file))
    assert rc == 0 and "report written" in out2
    page2 = saved.with_suffix(".html").read_text()
    assert _verdict_in(page2) == d["verdict"] and 'id="c0-roc_log"' in page2


@pytest.mark.slow  # > 5 s: end-to-end or exhaustive; CI runs it
def test_cli_one_run_and_simulate_reports(capsys, tmp_path, scores_file):
    card = tmp_path / "one.html"
    rc, out, _ = _run(capsys, "one-run", str(scores_file), "--claimed-epsilon", "3",
                      "--json", "--report", str(card))
    assert rc == 0
    d = json.loads(out)
    page = card.read_text()
    assert _verdict_in(page) == d["verdict"] and 'id="c0-guesses"' in page
    card2 = tmp_path / "sim.png"
    rc, out, _ = _run(capsys, "simulate", "laplace", "--canaries", "500", "--json",
                      "--report", str(card2), "--format", "png")
    assert rc == 0 and card2.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_cli_report_bad_input_one_line(capsys, tmp_path, scores_file):
    rc, _, err = _run(capsys, "audit", str(scores_file), "--report", "x.html", "--format", "pdf")
    assert rc == 2 and "--format must be one of" in err and err.count("\n") == 1
    rc, _, err = _run(capsys, "audit", str(scores_file), "--format", "png")
    assert rc == 2 and "--format applies to the --report file" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    rc, _, err = _run(capsys, "report", str(bad))
    assert rc == 2 and "not valid JSON" in err and err.count("\n") == 1
    bad.write_text('{"hello": 1}')
    rc, _, err = _run(capsys, "report", str(bad))
    assert rc == 2 and "RESULT must be the --json output" in err
    rc, _, err = _run(capsys, "report", str(tmp_path / "missing.json"))
    assert rc == 2 and "RESULT" in err and "not found" in err and err.count("\n") == 1
    payload, _ = _payload()
    good = tmp_path / "good.json"
    good.write_text(json.dumps(payload))
    for prior in ("0", "1.5", "nan"):
        rc, _, err = _run(capsys, "report", str(good), "--risk-prior", prior)
        assert rc == 2 and "risk prior" in err and err.count("\n") == 1, (prior, err)


def test_cli_run_engine_report(capsys, tmp_path):
    card = tmp_path / "run.html"
    rc, out, _ = _run(capsys, "run", "dpaudit.games.examples:gaussian_count_audit",
                      "--trials", "600", "--executor", "inline", "--claimed-epsilon", "1",
                      "--json", "--report", str(card))
    assert rc == 0
    d = json.loads(out)
    page = card.read_text()
    assert _verdict_in(page) == d["verdict"] and 'id="c0-roc"' in page
    assert _kv("trials", "600") in page and "dpaudit run" in page


def test_cli_report_several_audits_one_card_each(capsys, tmp_path):
    p1, _ = _payload(seed=1)
    p2, _ = _payload(seed=2, claimed=5.0)
    saved = tmp_path / "two.json"
    saved.write_text(json.dumps({"first <audit>": p1, "second": p2}))
    rc, out, _ = _run(capsys, "report", str(saved), "--out", str(tmp_path / "two.html"))
    assert rc == 0
    page = (tmp_path / "two.html").read_text()
    verdicts = [html_unescape(v) for v in re.findall(r'data-testid="verdict">(.*?)</div>', page)]
    assert verdicts == [p1["verdict"], p2["verdict"]]
    assert "first &lt;audit&gt;" in page and "dpaudit report: 2 audits" in page
    # provenance names the saved file by hash, and the card's settings are the audit's
    assert hashlib.sha256(saved.read_bytes()).hexdigest() in page
    rc, _, err = _run(capsys, "report", str(saved), "--scores", str(saved))
    assert rc == 2 and "--scores applies to a single audit" in err


def test_cli_report_records_run_time_and_every_setting(capsys, tmp_path, scores_file):
    card = tmp_path / "c.html"
    rc, _, _ = _run(capsys, "audit", str(scores_file), "--claimed-epsilon", "0.5",
                    "--confidence", "0.9", "--report", str(card))
    assert rc == 0
    page = card.read_text()
    m = re.search(r"<td class=\"u\">run time</td><td class=\"u\">([0-9.]+) s</td>", page)
    assert m and 0 < float(m.group(1)) < 600
    for key, value in (("confidence", "0.9000"), ("claimed_epsilon", "0.5000"),
                       ("threshold", "bonferroni"), ("direction", "both")):
        assert _kv(key, value) in page, key


def test_cli_lifted_report_shows_the_test_box(capsys, tmp_path):
    rng = np.random.default_rng(4)
    x = (rng.random((400, 8)) < 0.7).astype(int)
    y = (rng.random((400, 8)) < 0.3).astype(int)
    xy = tmp_path / "xy.npz"
    np.savez(xy, x=x, y=y)
    card = tmp_path / "lifted.html"
    rc, out, _ = _run(capsys, "bound", "lifted", str(xy), "--claimed-epsilon", "0.5", "--json",
                      "--report", str(card))
    assert rc == 0
    d = json.loads(out)
    page = card.read_text()
    assert _verdict_in(page) == d["verdict"]
    figs = json.loads(_scripts(page)[1])
    box = next(t for t in figs["c0-region"]["data"] if t["name"].endswith("(box)"))
    det = d["results"][0]["details"]
    # the lifted bound's test: FPR <= fpr_upper, FNR <= 1 - tpr_lower
    assert max(box["x"]) == pytest.approx(det["fpr_upper"], rel=1e-5)
    assert max(box["y"]) == pytest.approx(1 - det["tpr_lower"], rel=1e-5)
    assert "c0-roc" not in figs and "Per-canary scores were not provided" in page


@pytest.mark.slow  # > 5 s: end-to-end or exhaustive; CI runs it
@pytest.mark.torch
def test_cli_train_audit_report(capsys, tmp_path):
    need("opacus")
    import torch

    torch.set_num_threads(1)
    card = tmp_path / "train.html"
    rc, out, _ = _run(capsys, "train-audit", "--canaries", "100", "--steps", "20", "--hidden",
                      "32", "--json", "--report", str(card))
    assert rc == 0
    d = json.loads(out)
    page = card.read_text()
    assert _verdict_in(page) == d["verdict"]
    assert f"<b class=\"bound\">{d['results'][0]['epsilon']:.4f}</b>" in page
    # the card has the score plots: ROC and the observed privacy-region points
    figs = json.loads(_scripts(page)[1])
    assert {"c0-roc", "c0-roc_log", "c0-region"} <= set(figs)
    pts = next(t for t in figs["c0-region"]["data"]
               if t["name"] == "observed (FPR, FNR) of score thresholds")
    assert len(pts["x"]) >= 5
    n = re.search(r"([\d,]+) members, ([\d,]+) non-members", page)
    assert int(n.group(1).replace(",", "")) + int(n.group(2).replace(",", "")) == 100


@pytest.mark.slow  # > 5 s: end-to-end or exhaustive; CI runs it
@pytest.mark.torch
def test_train_audit_hands_back_the_observations_it_audited():
    """The training audit's observations are exactly the ones its bounds rest on (re-auditing
    them reproduces every epsilon), the JSON document is unchanged by them, and the card's
    AUROC is the pairwise (Mann-Whitney) AUROC of those observations."""
    need("opacus")
    need("sklearn")
    import torch

    from dpaudit.cli.train_audit import run_train_audit_observed
    from dpaudit.training import audit_training

    torch.set_num_threads(1)
    kw = dict(canaries=120, steps=30, hidden=32, seed=4)
    doc, obs = run_train_audit_observed(**kw)
    assert obs.n == 120 and obs.n_members + obs.n_nonmembers == 120
    assert "observations" not in doc and set(doc) >= {"results", "verdict", "training"}
    json.dumps(doc)                                      # still plain JSON
    t = doc["training"]
    again = audit_training(obs.member, obs.score, noise_multiplier=t["noise_multiplier"],
                           sampling_rate=t["sampling_rate"], steps=t["steps"],
                           threat=doc["threat"], seed=kw["seed"])
    assert [r.epsilon for r in again.results] == pytest.approx(
        [r["epsilon"] for r in doc["results"]], rel=1e-12)
    card = build_report(doc, observations=obs)
    pos, neg = obs.score[obs.member], obs.score[~obs.member]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    assert card.scores is not None
    assert card.scores.auroc[0] == pytest.approx(psi.mean(), abs=1e-12)
    assert card.scores.roc.n_members == pos.size and card.scores.region.fpr.size >= 5


def _card_text(tmp_path, payload) -> str:
    """The rendered card as text (tags stripped, entities decoded)."""
    path = write_report(tmp_path / "card.html", payload)
    return html_unescape(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8")))


@pytest.mark.slow
def test_card_shows_estimates_as_estimates_never_as_bounds(tmp_path):
    """Issue 31: the distribution rows' estimates were listed under "ε ≥" with "nan%"."""
    from dpaudit import audit_one_run

    rng = np.random.default_rng(3)
    b = rng.random(400) < 0.5
    s = b + rng.laplace(size=400)
    a = audit_one_run(b, s, methods=("tight", "hockey_stick", "gaussian_pair",
                                     "gaussian_pair_equal", "gaussian_pair_fit",
                                     "hockey_stick_histogram"), claimed_epsilon=1.0)
    m = build_report(a.to_dict())
    cells = {r.method: r.cell() for r in m.methods}
    for est in ("gaussian_pair", "gaussian_pair_fit", "hockey_stick_histogram"):
        assert cells[est].startswith("~ ") and cells[est].endswith("(estimate)")
    assert cells["tight"] == f"≥ {a.results[0].epsilon:.4f}"
    assert cells["hockey_stick"].endswith("(assuming)")
    assert m.bound == a.results[0].epsilon and m.bound_source == "tight"
    text = _card_text(tmp_path, a.to_dict())
    assert "nan%" not in text
    for r in a.results[2:]:
        if r.method in ("gaussian_pair", "gaussian_pair_fit", "hockey_stick_histogram"):
            assert f"≥ {r.epsilon:.4f}" not in text


@pytest.mark.slow
def test_card_quotes_only_a_bound_valid_for_the_run(tmp_path):
    """A DP-SGD-family row on a flawed run is the epsilon of the curve the run fails, not a
    bound on the run: the headline and the attacker section quote the any-mechanism bound."""
    row = {"epsilon": 49.48, "delta": 1e-5, "confidence": 0.95, "method": "tight",
           "settings": {"family": "dpsgd(sigma=1, q=0.05, T=300)"}}
    steinke = {"epsilon": 0.5, "delta": 1e-5, "confidence": 0.95, "method": "steinke"}
    payload = {"results": [row, steinke], "claimed_epsilon": 3.5, "violation": True,
               "verdict": "violation: the run fails the claimed DP-SGD curve",
               "verdict_method": "tight", "any_mechanism_epsilon": 0.78}
    m = build_report(payload)
    assert m.bound == 0.78 and m.bound_source == "any_mechanism_epsilon"
    assert m.methods[0].cell() == "fails the claimed DP-SGD curve at ε = 49.4800"
    assert [r.epsilon for r in m.risk.rows if r.label == "measured lower bound"] == [0.78]
    text = _card_text(tmp_path, payload)
    assert "proves ε ≥ 0.7800" in text and "≥ 49.48" not in text
    # without the any-mechanism bound the card proves nothing about the run
    m = build_report({**payload, "any_mechanism_epsilon": None})
    assert m.bound_source is None and math.isnan(m.bound)
    assert not [r for r in m.risk.rows if r.label == "measured lower bound"]
    assert "proves no attack risk" in _card_text(tmp_path, {**payload,
                                                            "any_mechanism_epsilon": None})
