"""The outcome of an audit, typed: results, the claim, the verdict and what it guarantees.

Every audit kind returns (or converts to) an :class:`Audit`: the one-run audit of a simulated
mechanism (``games.audit.OneRunReport.to_audit()``), a multi-run audit (:meth:`Audit.of` on
``multi_run``'s result), a real training audit (``training.audit.TrainAudit.to_audit()``), an
engine run (``engine.audit.AuditRun.to_audit()``) and the test gate
(``testing.assert_dp``, whose :class:`~dpaudit.testing.DPViolation` carries the audit).

``Audit.to_dict()`` is the document ``--json`` prints and ``dpaudit report`` reads: the keys
of ``AuditResult.to_dict()`` under ``results``, ``claimed_epsilon``, ``violation``, ``verdict``,
``verdict_method`` and the guarantee (``verdict_rule``, ``verdict_guarantee``,
``verdict_methods``, ``per_method_confidence``), ``true_epsilon`` and the audit kind's own
keys (``extra``); a lone result without a claim or extras is printed bare, as before.
:func:`dpaudit.report.write_report` takes an Audit.

The verdict and its sentence are :class:`dpaudit.estimators.verdict.Verdict` (one wording for
every command, report and gate).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dpaudit.estimators.verdict import Verdict, verdict_from_results
from dpaudit.results import AuditResult

__all__ = ["Audit", "Verdict", "audit_of"]


@dataclass(frozen=True, eq=False)
class Audit:
    """An audit's outcome.

    Attributes:
      results: the methods' results, the verdict's primary row first.
      verdict: the verdict against the claim (None without a claim).
      observations: what the results were computed from (membership observations, or None).
      true_epsilon: the mechanism's true epsilon when known (simulations).
      settings: every setting of the audit kind (mechanism, canaries, seed, ...).
      extra: further keys of the ``--json`` document (the audit kind's own: ``training``,
        ``engine``, ``canaries``, ...), written after the verdict.
    """

    results: tuple[AuditResult, ...]
    verdict: Verdict | None = None
    observations: Any = None
    true_epsilon: float | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        rs = tuple(self.results)
        if not rs or not all(isinstance(r, AuditResult) for r in rs):
            raise ValueError("results must be a non-empty sequence of AuditResult")
        object.__setattr__(self, "results", rs)

    @classmethod
    def of(cls, results: Sequence[AuditResult] | AuditResult,
           claimed_epsilon: float | None = None, *, rule: str = "primary",
           observations: Any = None, true_epsilon: float | None = None,
           settings: Mapping[str, Any] | None = None,
           extra: Mapping[str, Any] | None = None) -> Audit:
        """The audit of ``results`` with the verdict against ``claimed_epsilon`` (if given)
        by ``rule`` (:func:`dpaudit.estimators.verdict.verdict_from_results`)."""
        rs = (results,) if isinstance(results, AuditResult) else tuple(results)
        ver = (verdict_from_results(rs, claimed_epsilon, rule=rule)
               if claimed_epsilon is not None else None)
        return cls(rs, ver, observations, true_epsilon, dict(settings or {}), dict(extra or {}))

    @property
    def claimed_epsilon(self) -> float | None:
        return None if self.verdict is None else self.verdict.claimed_epsilon

    @property
    def violation(self) -> bool | None:
        """True when the claim is refuted at the stated confidence (None without a claim)."""
        return None if self.verdict is None else self.verdict.violation

    @property
    def result(self) -> AuditResult:
        """The row the verdict rests on (the first row without a claim)."""
        return self.results[0] if self.verdict is None else self.verdict.basis

    @property
    def epsilon(self) -> float:
        """The epsilon lower bound of :attr:`result`."""
        return self.result.epsilon

    def message(self) -> str | None:
        """The verdict's sentence (None without a claim)."""
        return None if self.verdict is None else self.verdict.message()

    def with_extra(self, **keys: Any) -> Audit:
        """The same audit with more ``--json`` keys."""
        return dataclasses.replace(self, extra={**self.extra, **keys})

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` document (module docstring)."""
        if self.verdict is None and self.true_epsilon is None and not self.extra \
                and len(self.results) == 1:
            return self.results[0].to_dict()
        out: dict[str, Any] = {"results": [r.to_dict() for r in self.results]}
        if self.verdict is not None:
            out["claimed_epsilon"] = self.verdict.claimed_epsilon
            out.update(self.verdict.to_dict())
        if self.true_epsilon is not None:
            out["true_epsilon"] = self.true_epsilon
        out.update(self.extra)
        return out


def audit_of(payload: Mapping[str, Any]) -> Audit:
    """An :class:`Audit` from a saved ``--json`` document (``dpaudit report``): the results,
    the claim and the verdict rule it states; other keys stay in ``extra``."""
    if "results" in payload:
        rows = payload["results"]
    elif "epsilon" in payload and "method" in payload:
        rows = [payload]
    else:
        raise ValueError("payload must be a --json document with 'results' (or one "
                         "AuditResult dictionary)")
    if not isinstance(rows, list) or not rows:
        raise ValueError("payload 'results' must be a non-empty list")
    rs = tuple(_result_from_dict(r) for r in rows)
    claimed = payload.get("claimed_epsilon") if "results" in payload else None
    rule = payload.get("verdict_rule", "primary")
    extra = {k: v for k, v in payload.items()
             if k not in ("results", "claimed_epsilon", "violation", "verdict", "verdict_method",
                          "verdict_rule", "verdict_guarantee", "verdict_methods",
                          "per_method_confidence", "true_epsilon")} if "results" in payload \
        else {}
    return Audit.of(rs, float(claimed) if claimed is not None else None,
                    rule=rule if rule in ("primary", "bonferroni") else "primary",
                    true_epsilon=payload.get("true_epsilon") if "results" in payload else None,
                    extra=extra)


def _number(d: Mapping[str, Any], key: str) -> float:
    v = d.get(key)
    if v is None:  # strict JSON writes a non-finite number as null + "<key>_note"
        note = d.get(f"{key}_note")
        return {"inf": math.inf, "-inf": -math.inf}.get(str(note), math.nan)
    return float(v)


def _result_from_dict(d: Any) -> AuditResult:
    if not isinstance(d, Mapping) or "method" not in d:
        raise ValueError("each result must be an AuditResult dictionary with 'method'")
    p = d.get("p_value")
    return AuditResult(epsilon=_number(d, "epsilon"), delta=_number(d, "delta"),
                       confidence=_number(d, "confidence"), method=str(d["method"]),
                       params=dict(d.get("params") or {}),
                       p_value=None if p is None and "p_value_note" not in d
                       else _number(d, "p_value"),
                       settings=dict(d.get("settings") or {}),
                       details=dict(d.get("details") or {}),
                       assumption=d.get("assumption") if isinstance(d.get("assumption"), str)
                       else None)
