"""The typed audit outcome (dpaudit.outcome.Audit): the --json document, the one verdict
wording, the round trip through a saved document, and the audit card."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.estimators.multi_run import multi_run
from dpaudit.estimators.verdict import verdict_from_results
from dpaudit.observations import MembershipObservations
from dpaudit.outcome import Audit, audit_of
from dpaudit.results import AuditResult


def _results():
    rng = np.random.default_rng(0)
    member = rng.random(4000) < 0.5
    score = member * 1.0 + rng.normal(size=4000)   # 1-GDP: epsilon 4.38 at delta = 1e-5
    return member, score, [multi_run(member, score, delta=1e-5, estimate=e)
                           for e in ("eps_delta", "gdp")]


def test_document_keys_and_the_verdict_of_the_primary_row():
    member, score, rs = _results()
    a = Audit.of(rs, 0.5, observations=(member, score), extra={"trials": 4000})
    d = a.to_dict()
    assert list(d)[:3] == ["results", "claimed_epsilon", "violation"]
    assert d["results"] == [r.to_dict() for r in rs] and d["trials"] == 4000
    v = verdict_from_results(rs, 0.5)                   # the one wording
    assert d["verdict"] == v.message() and d["verdict_method"] == rs[0].method
    assert d["violation"] is (rs[0].epsilon > 0.5) and a.epsilon == rs[0].epsilon
    assert d["verdict_guarantee"] == v.guarantee


def test_a_lone_result_is_printed_bare():
    r = AuditResult(epsilon=1.25, delta=1e-5, confidence=0.95, method="tight")
    assert Audit.of(r).to_dict() == r.to_dict()
    assert Audit.of(r).verdict is None and Audit.of(r).message() is None


def test_saved_document_round_trips_including_an_infinite_bound():
    r = AuditResult(epsilon=math.inf, delta=0.0, confidence=0.95, method="multi_run")
    d = Audit.of([r], 1.0, extra={"canaries": 10}).to_dict()
    assert d["results"][0]["epsilon"] is None and d["results"][0]["epsilon_note"] == "inf"
    back = audit_of(d)
    assert back.results[0].epsilon == math.inf and back.violation is True
    assert back.to_dict() == d


def test_bad_results_are_rejected():
    with pytest.raises(ValueError, match="results"):
        Audit(())
    with pytest.raises(ValueError, match="results"):
        audit_of({"nothing": 1})


def test_write_report_takes_an_audit(tmp_path):
    from dpaudit.report import build_report, write_report

    member, score, rs = _results()
    a = Audit.of(rs, 1.0, observations=(member, score))
    p = write_report(tmp_path / "card.html", a)
    card = build_report(a.to_dict(), observations=(member, score))
    assert p.stat().st_size > 10_000 and card.verdict == a.message()
    assert card.scores is not None and 0.5 < card.scores.auroc[0] < 1.0


def test_facts_fall_through_and_survive_pickling():
    """The one outcome carries its kind's facts; attributes it lacks are read from them, and
    an Audit with facts pickles and copies (the fall-through never recurses)."""
    import copy
    import pickle

    from dpaudit.games.audit import GameFacts, OneRunReport

    _, _, rs = _results()
    a = Audit.of(rs, 1.0, facts=GameFacts("Gaussian(mu=1)", simultaneous=True))
    assert OneRunReport is Audit and a.mechanism == "Gaussian(mu=1)" and a.simultaneous
    assert a.to_audit() is a and a.to_audit(k=1).to_dict()["k"] == 1
    for b in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a)):
        assert b.mechanism == a.mechanism and b.violation == a.violation
    with pytest.raises(AttributeError, match="game facts"):
        _ = a.checks
    with pytest.raises(AttributeError, match="no attribute 'mechanism'"):
        _ = Audit.of(rs, 1.0).mechanism


def test_save_scores_writes_the_observations(tmp_path):
    from dpaudit.io import load_scores

    member, score, rs = _results()
    a = Audit.of(rs, 1.0, observations=MembershipObservations.from_arrays(member, score))
    a.save_scores(tmp_path / "s.csv")
    back = load_scores(tmp_path / "s.csv")
    assert np.array_equal(back.member, member.astype(bool)) and np.allclose(back.score, score)
    with pytest.raises(ValueError, match="membership observations"):
        Audit.of(rs, 1.0).save_scores(tmp_path / "t.csv")
