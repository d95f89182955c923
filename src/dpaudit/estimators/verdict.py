"""The verdict (re-exported from :mod:`dpaudit.verdict`, its one home) and
:func:`one_run_verdict`, the one-run audit run with the setting a verdict rule needs."""

from __future__ import annotations

from typing import Any

from dpaudit.results import AuditResult
from dpaudit.validation import check_choice
from dpaudit.verdict import (
    VERDICT_RULES,
    Verdict,
    check_not_estimate,
    verdict_from_results,
    verdict_sentence,
)

__all__ = ["Verdict", "VERDICT_RULES", "verdict_from_results", "one_run_verdict",
           "verdict_sentence", "check_not_estimate"]


def one_run_verdict(member: Any, score: Any, claimed_epsilon: float, *,
                    rule: str = "primary", **audit_kwargs: Any
                    ) -> tuple[Verdict, list[AuditResult]]:
    """Run ``audit_one_run`` with the setting the rule needs and return (verdict, results).

    ``rule="bonferroni"`` runs it with ``simultaneous=True``; ``audit_kwargs`` go to
    :func:`dpaudit.audit_one_run` (delta, confidence, methods, family, assume, ...), whose
    :class:`~dpaudit.outcome.Audit` computes the verdict."""
    from dpaudit.estimators.one_run import audit_one_run

    check_choice("rule", rule, VERDICT_RULES)
    if "simultaneous" in audit_kwargs:
        raise ValueError("one_run_verdict sets simultaneous from the rule; do not pass it")
    a = audit_one_run(member, score, simultaneous=(rule == "bonferroni"),
                      claimed_epsilon=claimed_epsilon, **audit_kwargs)
    assert a.verdict is not None
    return a.verdict, list(a.results)
