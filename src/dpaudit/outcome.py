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

The verdict is computed once, here (:meth:`Audit.of`), from the :class:`dpaudit.claim.Claim`
and the estimator registry's guarantees (:mod:`dpaudit.registry`): only rows valid
for the claim as stated decide, plus rows under an assumption the claim explicitly carries.  A
deterministic falsification -- a configuration error showing the run did less than the claim
(less noise, more steps, a larger sampling rate) -- is a violation too, worded as such beside
the statistical result (``falsified_by``).  A row whose method decides by its own
anytime-valid test (the sequential engine run's ``sequential`` row: the e-process at the
claimed epsilon; :func:`dpaudit.verdict.exceeds`) decides by that test here too, so the
engine's stopping verdict and the Audit's are one.  Its sentence is
:class:`dpaudit.estimators.verdict.Verdict`'s (one wording for every command, report and gate).

An Audit is also the sequence of its rows (``len``, iteration, indexing), so code that read
``audit_one_run``'s former list keeps working.

What an audit KIND knows beyond its rows and verdict is one typed field, ``facts`` (a small
frozen dataclass per kind, beside its producer: :class:`dpaudit.training.facts.TrainingFacts`
for every training framework, :class:`dpaudit.engine.audit.EngineFacts` for an engine run,
:class:`dpaudit.games.audit.GameFacts` for a simulated game).  Attribute access falls through
to ``facts`` (``audit.run``, ``audit.checks``, ``audit.configuration_errors``,
``audit.failures``, ...), so the former outcome classes' attributes keep working on the
one outcome; their names (``JaxTrainAudit``, ``OneRunReport``, ``AuditRun``) are aliases of
:class:`Audit`; ``TrainAudit`` (:mod:`dpaudit.training.audit`) is the Audit plus the audit
card's ``write_report`` (the card is :mod:`dpaudit.report`, above this module).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from dpaudit.claim import Claim
from dpaudit.results import AuditResult
from dpaudit.verdict import Verdict, verdict_from_results

__all__ = ["Audit", "AuditFacts", "Verdict", "audit_of"]


_A = TypeVar("_A", bound="Audit")


class AuditFacts(Protocol):
    """What an audit kind knows beyond its rows and verdict (module docstring): a frozen
    dataclass naming its kind ("training", "engine", "game")."""

    @property
    def kind(self) -> str: ...


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
      claim: the claim tested (None without one).
      falsified_by: configuration errors that show the run did less than the claim (each a
        deterministic violation, whatever the statistics say).
      any_mechanism_epsilon: the run's own epsilon lower bound valid for ANY mechanism (the
        (epsilon, delta) null), quoted as the run's epsilon when the verdict's row is under
        the claimed curve's family (whose number bounds only runs inside the family).
      facts: what the audit kind knows beyond rows and verdict (:class:`AuditFacts`; None
        for a bare audit of observations); attribute access falls through to it.
    """

    results: tuple[AuditResult, ...]
    verdict: Verdict | None = None
    observations: Any = None
    true_epsilon: float | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    claim: Claim | None = None
    falsified_by: tuple[str, ...] = ()
    any_mechanism_epsilon: float | None = None
    facts: AuditFacts | None = None

    def __post_init__(self) -> None:
        rs = tuple(self.results)
        if not rs or not all(isinstance(r, AuditResult) for r in rs):
            raise ValueError("results must be a non-empty sequence of AuditResult")
        object.__setattr__(self, "results", rs)
        object.__setattr__(self, "falsified_by", tuple(str(x) for x in self.falsified_by))

    @classmethod
    def of(cls: type[_A], results: Sequence[AuditResult] | AuditResult,
           claim: Claim | float | None = None, *, rule: str = "primary",
           observations: Any = None, true_epsilon: float | None = None,
           settings: Mapping[str, Any] | None = None,
           extra: Mapping[str, Any] | None = None, allow_asymptotic: bool = False,
           falsified_by: Sequence[str] = (),
           any_mechanism_epsilon: float | None = None,
           claimed_epsilon: float | None = None,
           confidence: float | None = None, facts: AuditFacts | None = None) -> _A:
        """The audit of ``results`` with THE verdict against ``claim`` (a :class:`Claim`, or a
        claimed epsilon) by ``rule`` (:func:`dpaudit.estimators.verdict.verdict_from_results`,
        admitting the rows the registry allows for the claim's named assumptions;
        ``allow_asymptotic`` adds the assumption "asymptotic"; ``claimed_epsilon=`` is the
        former spelling of a numeric ``claim``; ``confidence``: the level the verdict must
        hold at, e.g. a zoo entry's Bonferroni share -- a row valid only at less is refused;
        default the rows' own; ``facts``: the audit kind's own facts)."""
        rs = (results,) if isinstance(results, AuditResult) else tuple(results)
        if claimed_epsilon is not None:  # the former keyword
            if claim is not None:
                raise ValueError("give claim or claimed_epsilon, not both")
            claim = claimed_epsilon
        c = Claim.of(claim, rs[0].delta if rs else 1e-5, allow_asymptotic=allow_asymptotic) \
            if claim is not None and not isinstance(claim, Claim) else claim
        if c is not None and allow_asymptotic and "asymptotic" not in c.assume:
            c = dataclasses.replace(c, assume=c.assume | {"asymptotic"})
        ver = (verdict_from_results(rs, c.epsilon, rule=rule, assume=c.assume,
                                    confidence=confidence)
               if c is not None else None)
        if ver is not None and c is not None and c.dpsgd is not None \
                and _in_claim_family(ver.basis):
            sigma = c.member_noise_multiplier(ver.basis.epsilon) if ver.violation else None
            ver = dataclasses.replace(ver, curve="DP-SGD", member_sigma=sigma)
        return cls(rs, ver, observations, true_epsilon, dict(settings or {}), dict(extra or {}),
                   c, tuple(falsified_by), any_mechanism_epsilon, facts)

    @staticmethod
    def from_dict(payload: Mapping[str, Any]) -> Audit:
        """The Audit of a saved ``--json`` document (:func:`audit_of`; ``dpaudit report``)."""
        return audit_of(payload)

    def __getattr__(self, name: str) -> Any:
        """The audit kind's facts (``audit.run``, ``audit.checks``, ...): attributes the
        :class:`Audit` does not have are read from ``facts`` (module docstring)."""
        facts = self.__dict__.get("facts") if not name.startswith("__") else None
        if facts is not None and hasattr(facts, name):
            return getattr(facts, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}"
                             + (f" (nor have its {facts.kind} facts)" if facts else ""))

    # the rows, as the list ``audit_one_run`` used to return
    def __iter__(self) -> Iterator[AuditResult]:
        return iter(self.results)

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i: Any) -> Any:
        return self.results[i]

    @property
    def claimed_epsilon(self) -> float | None:
        return None if self.verdict is None else self.verdict.claimed_epsilon

    @property
    def statistical_violation(self) -> bool | None:
        """The statistical verdict alone (None without a claim)."""
        return None if self.verdict is None else self.verdict.violation

    @property
    def violation(self) -> bool | None:
        """True when the claim is refuted: at the stated confidence by the statistics, or
        deterministically by a configuration error (None without a claim)."""
        if self.verdict is None:
            return True if self.falsified_by else None
        return bool(self.verdict.violation or self.falsified_by)

    @property
    def result(self) -> AuditResult:
        """The row the verdict rests on (the first row without a claim)."""
        return self.results[0] if self.verdict is None else self.verdict.basis

    @property
    def verdict_result(self) -> AuditResult:
        """:attr:`result` (the former outcome classes' name)."""
        return self.result

    @property
    def epsilon(self) -> float:
        """The epsilon lower bound of :attr:`result`."""
        return self.result.epsilon

    def to_audit(self: _A, **extra: Any) -> _A:
        """This audit (with ``extra`` more ``--json`` keys): the former outcome classes
        converted with ``to_audit()``; every entry point now returns the Audit itself.  An
        engine run's ``spec=`` (its audit's ``module:NAME``) is its facts' (``with_spec``),
        as the former ``AuditRun.to_audit(spec=)``."""
        out = self
        respec = getattr(self.facts, "with_spec", None)
        if "spec" in extra and respec is not None:
            out = respec(self, extra.pop("spec"))
        return out.with_extra(**extra) if extra else out

    def save_scores(self, path: str | Path) -> None:
        """Per-canary ``member,score`` CSV of the observations (``dpaudit one-run`` /
        ``dpaudit report --scores`` read it)."""
        from dpaudit.io import write_scores

        obs = self.observations
        if obs is None or not hasattr(obs, "member"):
            raise ValueError("save_scores needs an audit of membership observations; this "
                             "one has none")
        write_scores(path, obs.member, obs.score)

    def message(self) -> str | None:
        """The verdict's sentence (None without a claim): the statistical verdict, and beside
        it each configuration error that falsifies the claim."""
        stat = None if self.verdict is None else self.verdict.message()
        if stat is not None and self.verdict is not None and self.verdict.curve is not None \
                and self.any_mechanism_epsilon is not None:
            stat += (f"; the run's own epsilon >= {self.any_mechanism_epsilon:.4f} (valid for "
                     f"any mechanism)")
        if not self.falsified_by:
            return stat
        det = ("violation: the configuration falsifies the claim ("
               + "; ".join(self.falsified_by) + ")")
        return det if stat is None else f"{det}; statistical audit: {stat}"

    def with_extra(self: _A, **keys: Any) -> _A:
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
        if self.verdict is not None or self.falsified_by:
            out["violation"] = self.violation
            out["verdict"] = self.message()
            out["statistical_violation"] = self.statistical_violation
            out["falsified_by"] = list(self.falsified_by)
        if self.claim is not None:
            out["claim"] = self.claim.to_dict()
        if self.any_mechanism_epsilon is not None:
            out["any_mechanism_epsilon"] = self.any_mechanism_epsilon
        if self.true_epsilon is not None:
            out["true_epsilon"] = self.true_epsilon
        out.update(self.extra)
        return out


def _in_claim_family(r: AuditResult) -> bool:
    """Was ``r`` computed under the claimed DP-SGD curve's own family (no assumption)?"""
    fam = str(r.settings.get("family", "")) if r.settings else ""
    return r.assumption is None and fam.startswith("dpsgd")


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
                          "per_method_confidence", "true_epsilon", "verdict_assumption",
                          "statistical_violation", "falsified_by", "claim")} \
        if "results" in payload else {}
    c = payload.get("claim") if "results" in payload else None
    assume = [a for a in (c.get("assume") or []) if isinstance(a, str)] \
        if isinstance(c, Mapping) else []
    fals = payload.get("falsified_by") if "results" in payload else None
    claim = None if claimed is None else Claim(float(claimed), rs[0].delta if math.isfinite(
        rs[0].delta) else 1e-5, assume=frozenset(assume))
    return Audit.of(rs, claim,
                    rule=rule if rule in ("primary", "bonferroni") else "primary",
                    true_epsilon=payload.get("true_epsilon") if "results" in payload else None,
                    extra=extra, falsified_by=[str(x) for x in fals]
                    if isinstance(fals, list) else ())


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
