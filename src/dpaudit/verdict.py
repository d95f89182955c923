"""The verdict against a claimed epsilon, and what it guarantees.

An audit's results are lower bounds, each valid at ``confidence`` gamma: P[bound > true eps]
<= 1 - gamma.  The verdict "violation" (bound > claimed eps) is a test of the null hypothesis
H0 "the mechanism satisfies the claim"; its guarantee is the probability of a FALSE violation
on a mechanism that satisfies the claim.  Two rules:

* ``"primary"`` (the default, as the CLI and ``one_run_audit`` have always done): the verdict
  rests on ONE pre-declared method (the first row).  P[false violation] <= 1 - gamma, because
  a false violation needs that one bound to exceed the true epsilon.  The other rows are shown
  for comparison only: reporting "the best of k rows" at level 1 - gamma would not hold (with
  k methods each failing on different data, the maximum over-claims up to k times as often).
* ``"bonferroni"`` (the combined verdict): every method of the family of k is run at
  confidence 1 - (1 - gamma)/k (``audit_one_run(..., simultaneous=True)`` does this, on top of
  its Bonferroni over the guess-count grid), and the verdict is a violation if ANY row exceeds
  the claim.  By the union bound P[false violation] <= sum_k (1 - gamma)/k = 1 - gamma, with
  no assumption on the dependence between the methods (they share the same observations).

Why not Holm?  Holm's step-down (Holm 1979, Scand. J. Statist. 6) gains over Bonferroni only
when there are several DIFFERENT null hypotheses; here all k methods test the same H0, so the
first (and only relevant) Holm step compares the smallest p-value with alpha/k: exactly
Bonferroni.  The price of the combined verdict is power: each method runs at a stricter level.
It pays when the best method is not known in advance (it differs across mechanisms); when it
is, the primary rule is more powerful.

Both guarantees are Monte Carlo tested on correct mechanisms (tests/test_verdict.py,
tests/test_false_violations.py).

The guarantee is for the claim the null family stands for (:mod:`dpaudit.curves.families`):
with the default "eps_delta" family, every mechanism meeting the (eps, delta) claim.  A row
computed under another family on a user's scores carries ``AuditResult.assumption`` (e.g. "the
mechanism is μ-GDP"); the verdict then says "assuming ..." and its guarantee holds only for
mechanisms satisfying the assumption -- a pure-DP mechanism meeting eps = 1 is "violating" under
the GDP null with probability near 1.  With rule "bonferroni" the assumptions of all the rows
are named.  A row that is an estimate under an assumption (``AuditResult.is_estimate``, e.g.
``multi_run_gdp``) is never the basis of a verdict.

A row whose registry entry decides by an e-process (``sequential``; :mod:`dpaudit.registry`,
``Estimator.decides``) is a violation when its anytime-valid test rejected the claim (K_t
reached 1 / (1 - confidence) at the claimed epsilon, Ville's inequality), not only when its
bound exceeds the claim: the same verdict ``dpaudit run --sequential`` stopped on, so every
renderer and ``assert_dp`` read one answer (:func:`exceeds`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dpaudit.results import AuditResult
from dpaudit.validation import check_choice, check_confidence, check_nonnegative

__all__ = ["Verdict", "VERDICT_RULES", "verdict_from_results",
           "verdict_sentence", "check_not_estimate", "exceeds"]

VERDICT_RULES = ("primary", "bonferroni")


@dataclass(frozen=True)
class Verdict:
    """The verdict and its guarantee.

    Attributes:
      violation: True when the basis row's bound exceeds ``claimed_epsilon``.
      rule: "primary" or "bonferroni".
      basis: the row the verdict rests on (primary: the first; bonferroni: the largest bound).
      claimed_epsilon: the claim tested.
      confidence: gamma; P[violation | the claim holds] <= 1 - gamma.
      methods: the family of methods the rule covers.
      per_method_confidence: the level each method was run at for this rule.
    """

    violation: bool
    rule: str
    basis: AuditResult
    claimed_epsilon: float
    confidence: float
    methods: tuple[str, ...]
    per_method_confidence: float

    assumptions: tuple[str, ...] = ()
    #: "DP-SGD" when the basis row's null is the claimed DP-SGD curve's family: its number is
    #: the epsilon of the DP-SGD curve the run fails to meet, not a bound on the run's epsilon
    curve: str | None = None
    #: the noise multiplier of that failed member (a label), when known
    member_sigma: float | None = None
    #: when the basis row decided by its own e-process (``registry.e_process_decision``): the
    #: test's facts (e_value, threshold, trials, stopping_trial, epsilon_lower)
    test: dict[str, Any] | None = None

    @property
    def assumption(self) -> str | None:
        """What the verdict assumes about the mechanism (None: valid for the claim as
        stated); with rule "bonferroni", the assumptions of every row joined by "and"."""
        return " and ".join(self.assumptions) if self.assumptions else None

    @property
    def guarantee(self) -> str:
        a = 1 - self.confidence
        who = ("a mechanism meeting its claim" if self.assumption is None else
               f"a mechanism meeting its claim, if {self.assumption} (an assumption, not "
               f"part of the claim)")
        if self.rule == "primary":
            return (f"P[false violation] <= {a:g} for {who}: the verdict rests on "
                    f"{self.basis.method} alone (declared first); other rows are for "
                    f"comparison")
        return (f"P[false violation] <= {a:g} for {who}: Bonferroni over {len(self.methods)} "
                f"methods (each at confidence {self.per_method_confidence:.6g}), any row may "
                f"decide")

    def message(self) -> str:
        if self.test is not None:
            return e_process_sentence(self.violation, self.claimed_epsilon, self.test,
                                      self.assumption, confidence=self.confidence)
        return verdict_sentence(self.basis.epsilon, self.claimed_epsilon, self.assumption,
                                confidence=self.confidence, curve=self.curve,
                                sigma=self.member_sigma)

    def to_dict(self) -> dict[str, Any]:
        return {"violation": self.violation, "verdict": self.message(),
                "verdict_method": self.basis.method, "verdict_rule": self.rule,
                "verdict_guarantee": self.guarantee,
                "verdict_methods": list(self.methods),
                "per_method_confidence": self.per_method_confidence,
                "verdict_assumption": self.assumption}


def verdict_sentence(epsilon_lb: float, claimed: float, assumption: str | None = None, *,
                     confidence: float | None = None, curve: str | None = None,
                     sigma: float | None = None) -> str:
    """The one-line verdict of a lower bound against a claimed epsilon, naming the
    assumption the bound rests on (None: valid for every mechanism meeting the claim).

    With ``curve`` (e.g. "DP-SGD": the row's null is the claimed curve's family) the number is
    the epsilon of the family member the run fails to meet -- not a lower bound on the epsilon
    of a run outside the family -- and is worded so: "the run fails the claimed DP-SGD curve at
    sigma = ... (the member with epsilon x at delta)"; never "epsilon >= x"."""
    pre = "" if assumption is None else f"assuming {assumption}, "
    if curve is not None:
        at = f"sigma = {sigma:.4g}, " if sigma is not None else ""
        if epsilon_lb > claimed:
            out = (f"{pre}violation: the run fails the claimed {curve} curve at {at}the member "
                   f"with epsilon {epsilon_lb:.4f} > claimed {claimed:g}")
            if confidence is not None:
                out += (f" at confidence {confidence:g} (a run meeting its claim gives this "
                        f"verdict with probability <= {1 - confidence:g})")
            return out
        largest = (f"the largest member rejected has epsilon {epsilon_lb:.4f}"
                   if epsilon_lb > 0 else "no member rejected")
        return (f"{pre}no violation detected (the run is not shown to fail the claimed "
                f"{curve} curve above epsilon {claimed:g}; {largest})")
    if epsilon_lb > claimed:
        out = f"{pre}violation: epsilon >= {epsilon_lb:.4f} > claimed {claimed:g}"
        if confidence is not None:
            who = ("a mechanism meeting its claim" if assumption is None else
                   "a mechanism meeting its claim and the assumption")
            out += (f" at confidence {confidence:g} ({who} gives this verdict with "
                    f"probability <= {1 - confidence:g})")
        return out
    return f"{pre}no violation detected (epsilon >= {epsilon_lb:.4f} <= claimed {claimed:g})"


def e_process_sentence(violation: bool, claimed: float, test: dict[str, Any],
                       assumption: str | None = None, *, confidence: float) -> str:
    """The one-line verdict of an anytime-valid e-process test of the claim (the sequential
    audit): a violation when K_t reached 1 / (1 - confidence) at the claimed epsilon."""
    pre = "" if assumption is None else f"assuming {assumption}, "
    e, thr = float(test["e_value"]), float(test["threshold"])
    if violation:
        return (f"{pre}violation: the e-process reached {e:.4g} >= {thr:.4g} after "
                f"{test['stopping_trial']} trials (epsilon > claimed {claimed:g} at confidence "
                f"{confidence:g}, anytime-valid: a mechanism meeting its claim gives this "
                f"verdict with probability <= {1 - confidence:g})")
    return (f"{pre}no violation established after {test['n']} trials (e-value {e:.4g} < "
            f"{thr:.4g}; anytime-valid epsilon >= {float(test['epsilon_lower']):.4f})")


def exceeds(r: AuditResult, claimed: float) -> bool:
    """Does row ``r`` refute ``claimed``?  Its own e-process test when its method decides by
    one and tested this claim (:func:`dpaudit.registry.e_process_decision`), else its bound >
    the claim."""
    from dpaudit.registry import e_process_decision

    t = e_process_decision(r, claimed)
    return bool(r.epsilon > claimed) if t is None else t


def _test_facts(r: AuditResult, claimed: float) -> dict[str, Any] | None:
    from dpaudit.registry import e_process_decision

    if e_process_decision(r, claimed) is None:
        return None
    d = r.details
    return {"e_value": float(d.get("e_value", math.nan)),
            "threshold": float(d.get("threshold_e_value", 1 / (1 - r.confidence))),
            "stopping_trial": d.get("stopping_trial"), "n": d.get("n"),
            "epsilon_lower": r.epsilon}


def check_not_estimate(r: AuditResult) -> None:
    """A verdict needs a lower bound: an estimate under an assumption is refused."""
    if r.is_estimate:
        raise ValueError(f"{r.method} is an estimate (assuming {r.assumption}), not a lower "
                         f"bound: it cannot be the basis of a verdict")


def _simultaneous(r: AuditResult) -> bool:
    return bool(r.settings.get("simultaneous", False)) if r.settings else False


def verdict_from_results(results: Sequence[AuditResult], claimed_epsilon: float, *,
                         rule: str = "primary", confidence: float | None = None,
                         allow_asymptotic: bool = False,
                         assume: Iterable[str] | str | None = None) -> Verdict:
    """The verdict of ``results`` (first row = primary method) against ``claimed_epsilon``.

    Which rows may decide is the registry's answer (:mod:`dpaudit.registry`), for
    the named assumptions the claim carries: ``assume`` (e.g. ``("gaussian_scores",)``) plus
    "asymptotic" when ``allow_asymptotic=True``.  A row valid for every mechanism meeting the
    claim always may; a row that is finite-sample only under a named assumption about the
    scores (hockey_stick: independent scores; gaussian_pair_equal: equal-variance Gaussian
    scores) only when that assumption was asked for; an asymptotic plug-in only with
    ``allow_asymptotic``; a model estimate (gaussian_pair, multi_run_gdp) never.  Under
    ``"primary"`` a first row that may not decide is refused (ValueError naming what to ask
    for); under ``"bonferroni"`` such rows are left out (the split over more rows is only
    conservative).  The verdict names every assumption of the rows it covers ("assuming ...").

    ``rule="bonferroni"`` requires results that are simultaneously valid at the family level
    ``confidence`` (default: the rows' stated confidence): computed by
    ``audit_one_run(..., simultaneous=True)``, or each at confidence >= 1 - (1 - gamma)/k;
    otherwise ValueError -- taking the best of rows that are each valid only on their own is
    the over-claim this module exists to stop.
    """
    from dpaudit.registry import admitted, check_assumptions, required_assumption

    rs = list(results)
    if not rs or not all(isinstance(r, AuditResult) for r in rs):
        raise ValueError("results must be a non-empty sequence of AuditResult")
    if not isinstance(allow_asymptotic, bool):
        raise ValueError(f"allow_asymptotic must be True or False; got {allow_asymptotic!r}")
    asked = check_assumptions(assume) | ({"asymptotic"} if allow_asymptotic else set())
    claimed = check_nonnegative("claimed_epsilon", claimed_epsilon)
    check_choice("rule", rule, VERDICT_RULES)
    if rule == "primary":
        basis = rs[0]
        need = required_assumption(basis)
        if need == "asymptotic" and need not in asked:
            raise ValueError(f"results: the primary row {basis.method!r} has no finite-sample "
                             f"guarantee; put a finite-sample row first or pass "
                             f"allow_asymptotic=True")
        if need == "never":
            check_not_estimate(basis)
            raise ValueError(f"{basis.method} is an estimate, not a lower bound: it cannot be "
                             f"the basis of a verdict")
        if need is not None and need not in asked:
            raise ValueError(f"results: the primary row {basis.method!r} is a bound only "
                             f"assuming {_named(need)}; ask for it (assume=({need!r},), CLI "
                             f"--assume {need}) or put another method first")
        gamma = check_confidence(basis.confidence if confidence is None else confidence)
        if basis.confidence < gamma - 1e-12:
            raise ValueError(f"the primary row is valid at {basis.confidence:g} < confidence "
                             f"{gamma:g}")
        shown = tuple(r.method for r in rs if r.guarantee != "asymptotic"
                      or "asymptotic" in asked)
        return Verdict(exceeds(basis, claimed), rule, basis, claimed, gamma, shown,
                       basis.confidence, _assumptions([basis]), test=_test_facts(basis, claimed))
    dec = [r for r in rs if admitted(r, asked)]
    if not dec:
        if all(required_assumption(r) == "asymptotic" for r in rs):
            raise ValueError("results: every row is asymptotic (no finite-sample guarantee); "
                             "pass allow_asymptotic=True to take a verdict from them")
        raise ValueError("results: no row may decide a verdict for the claim as stated (every "
                         "row is an estimate or rests on an assumption not asked for)")
    # the level checks concern the rows that state one and share the split (asymptotic rows,
    # admitted only with allow_asymptotic=True, have none; rows left out for an assumption not
    # asked for still took their share of 1 - confidence)
    stated = [r for r in rs if r.guarantee != "asymptotic"
              and required_assumption(r) != "never"] or dec
    k = len(stated)
    confs = [check_confidence(r.confidence) for r in stated]
    gamma = check_confidence(min(confs) if confidence is None else confidence)
    per = 1 - (1 - gamma) / k
    simultaneous = all(_simultaneous(r) for r in stated) and min(confs) >= gamma - 1e-12
    if not simultaneous and min(confs) < per - 1e-12:
        raise ValueError(f"rule='bonferroni' at confidence {gamma:g} needs the {k} rows each "
                         f"at >= {per:.6g}; they are at {min(confs):g}, valid only on their "
                         f"own: recompute with simultaneous=True (audit_one_run / "
                         f"--simultaneous), at confidence {per:.6g}, or use rule='primary'")
    refuting = [r for r in dec if exceeds(r, claimed)]
    basis = max(refuting or dec, key=lambda r: r.epsilon)
    return Verdict(bool(refuting), rule, basis, claimed, gamma,
                   tuple(r.method for r in dec), per, _assumptions(dec),
                   test=_test_facts(basis, claimed))


def _named(name: str) -> str:
    from dpaudit.registry import ASSUMPTIONS

    return ASSUMPTIONS.get(name, name)


def _assumptions(rs: Sequence[AuditResult]) -> tuple[str, ...]:
    """The distinct assumptions of the rows a verdict covers (in order)."""
    out: list[str] = []
    for r in rs:
        if r.assumption is not None and r.assumption not in out:
            out.append(r.assumption)
    return tuple(out)
