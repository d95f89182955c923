"""A sequential engine run has ONE verdict: the e-process's, read by the Audit, ``--json``, the
CLI's sentence, a reloaded document and the row-level wording alike (dpaudit.verdict.exceeds)."""

from __future__ import annotations

import json

import pytest

import engine_audits as ea
from dpaudit.cli import main
from dpaudit.engine.audit import run_audit
from dpaudit.outcome import Audit
from dpaudit.registry import e_process_decision
from dpaudit.verdict import exceeds


def _run(audit, claim: float, trials: int = 4000):
    return run_audit(audit, trials=trials, seed=1, executor="inline", claimed_epsilon=claim,
                     sequential=True)


@pytest.mark.slow
@pytest.mark.parametrize("name,claim,rejects", [
    ("FLAWED", 1.0, True),   # Gaussian count, sigma 0.5: far above epsilon 1
    ("RR", 0.9, True),       # 1-DP randomized response claimed at 0.9: a (small) violation
    ("RR", 1.0, False),      # the same mechanism claimed as exactly what it is: correct
    ("FAST", 5.0, False),    # Gaussian count, sigma 1: meets epsilon 5 at delta 0
])
def test_sequential_verdict_is_the_e_process_everywhere(name: str, claim: float,
                                                        rejects: bool) -> None:
    run = _run(getattr(ea, name), claim)
    s = run.sequential
    assert s is not None and s.rejected is rejects
    audit = run.to_audit()
    doc = audit.to_dict()
    assert audit.violation is rejects and run.violation is rejects
    assert doc["violation"] is rejects and doc["statistical_violation"] is rejects
    assert audit.verdict is not None and audit.verdict.basis.method == "sequential"
    words = audit.message()
    assert words == doc["verdict"]
    assert words.startswith("violation: the e-process" if rejects else "no violation")
    # a saved document read back (dpaudit report) gives the same verdict and sentence
    back = Audit.from_dict(json.loads(json.dumps(doc)))
    assert back.violation is rejects and back.message() == words


@pytest.mark.slow
def test_rejection_with_the_bound_at_the_claim_is_a_violation() -> None:
    """The e-process crosses at the claim while the anytime-valid bound is the claim's grid
    point itself: the bound alone (1.0 > 1.0) would say "no violation"; the test decides."""
    run = _run(ea.FLAWED, 1.0)
    row = run.result
    assert row.epsilon == 1.0 and row.details["rejected"] is True
    assert e_process_decision(row, 1.0) is True and exceeds(row, 1.0)
    assert run.to_audit().violation is True
    # against another claim than the one it tested, the row decides by its bound
    assert e_process_decision(row, 0.5) is None
    assert Audit.of(row, 0.5).violation is True and Audit.of(row, 1.5).violation is False


@pytest.mark.slow
def test_cli_sequential_prints_the_audit_verdict(capsys) -> None:
    rc = main(["run", "engine_audits:FLAWED", "--trials", "4000", "--seed", "1", "--executor",
               "inline", "--sequential", "--claimed-epsilon", "1", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    run = _run(ea.FLAWED, 1.0)
    assert doc["violation"] is run.to_audit().violation is True
    assert doc["verdict"] == run.to_audit().message()
    # the table's renderer prints the same sentence (rich may wrap it)
    rc = main(["run", "engine_audits:FLAWED", "--trials", "4000", "--seed", "1", "--executor",
               "inline", "--sequential", "--claimed-epsilon", "1"])
    text = " ".join(capsys.readouterr().out.split())
    assert rc == 0 and " ".join(doc["verdict"].split()) in text
