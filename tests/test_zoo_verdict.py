"""The zoo's "bound above the claim" is the one Audit's verdict, at the entry's Bonferroni
share of the zoo's confidence (dpaudit.zoo.audit._final_audit: the Audit a zoo row carries)."""

from __future__ import annotations

import pytest

from dpaudit.outcome import Audit
from dpaudit.results import AuditResult
from dpaudit.zoo.audit import SearchChoice, _final_audit
from dpaudit.zoo.entry import Pair


def _choice(eps: float, delta: float) -> SearchChoice:
    return SearchChoice(pair=Pair("p", [], [1]), score=abs, threshold=0.5, tested_epsilon=eps,
                        tested_delta=delta, search_epsilon=eps, search_trials=10, failures=0)


def _row(eps: float, confidence: float) -> AuditResult:
    return AuditResult(epsilon=eps, delta=1e-6, confidence=confidence, method="multi_run",
                       details={"tp": 10, "n_members": 20, "fp": 1, "n_nonmembers": 20})


@pytest.mark.parametrize("bound,claim,want", [(1.31, 1.3, True), (1.3, 1.3, False),
                                              (0.2, 1.0, False), (7.0, 2.0, True)])
def test_epsilon_entry_decided_by_the_audit(bound: float, claim: float, want: bool) -> None:
    conf = 1 - 0.01 / 12  # the zoo's 99%, Bonferroni over 12 entries
    audit = _final_audit(_row(bound, conf), bound, _choice(claim, 1e-6), "epsilon", conf)
    assert isinstance(audit, Audit) and audit.violation is want


def test_rho_entry_compares_its_own_currency() -> None:
    conf = 1 - 0.01 / 3
    # the row's epsilon (0.1) is below the claim; the rho bound (0.8) above the claimed rho
    assert _final_audit(_row(0.1, conf), 0.8, _choice(0.5, 0.0), "rho", conf).violation is True
    assert _final_audit(_row(5.0, conf), 0.4, _choice(0.5, 0.0), "rho", conf).violation is False


def test_a_row_below_the_entry_level_is_refused() -> None:
    """A bound valid only at 99% cannot decide an entry whose share is 1 - 0.01 / 12."""
    with pytest.raises(ValueError, match="confidence"):
        _final_audit(_row(3.0, 0.99), 3.0, _choice(1.0, 1e-6), "epsilon", 1 - 0.01 / 12)
