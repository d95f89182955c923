"""A test-suite gate for mechanism authors: ``assert_dp`` fails a test when an audit proves the
mechanism leaks more than claimed.

    from dpaudit.testing import assert_dp

    def test_my_mechanism_is_private():
        assert_dp(my_mechanism, my_neighbours, my_score, epsilon=1.0, delta=1e-5)

It runs a black-box multi-run audit (Bits Transmission Algorithm 1 / Hypothesis Interpretation:
``trials`` independent
runs, each on D0 or D1 chosen by a fair coin; :func:`dpaudit.games.blackbox.run_trials`, i.e.
the trial engine) and the classical Clopper-Pearson audit (:func:`dpaudit.estimators.multi_run`,
Bonferroni over thresholds by default).  If the epsilon lower bound exceeds the claimed
``epsilon``, it raises :class:`DPViolation` (an ``AssertionError``) whose message carries the
evidence: the bound, the confidence, the threshold, the confusion counts and their confidence
bounds, the seed and the budget, enough to reproduce the failure.

:func:`audit_dp` runs the same audit and returns its :class:`dpaudit.outcome.Audit` (the one
outcome: claim, row, verdict and its guarantee) without raising; ``assert_dp`` is ``audit_dp``
plus the raise, and returns the verdict's row (its former return value), the Audit riding on
:class:`DPViolation` (``.audit``) when it fails.

Guarantee: a mechanism that satisfies its claim fails the gate with probability at most
``1 - confidence`` (default 0.05; the audit's lower bound is valid at ``confidence``).  The run
is seeded (default seed 0), so a test suite gives the same answer on every run and machine.

**Passing is not a proof of privacy.**  An audit finds violations that its neighbouring
datasets, its score function and its budget can reveal; a mechanism that passes may still
violate its claim on other datasets, with a better score, or by less than ``trials`` runs can
resolve (with 10,000 trials the bound rarely exceeds about 2-3 even for a mechanism with no
privacy at all at delta = 0, since Clopper-Pearson bounds on rates estimated from n trials are
limited by 1/n).  Use the gate to catch bugs (wrong sensitivity, noise added to the wrong
quantity, a missing clipping step), not to certify.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit.outcome import Audit
from dpaudit.results import AuditResult
from dpaudit.validation import check_confidence, check_count, check_delta, check_nonnegative

__all__ = ["assert_dp", "audit_dp", "DPViolation", "DEFAULT_TRIALS"]

#: default budget: seconds for a cheap mechanism, resolves eps ~ 1 gaps of 2x in noise scale.
DEFAULT_TRIALS = 10_000


class DPViolation(AssertionError):
    """An audit proved the claim false; ``.result`` is the :class:`AuditResult`, ``.audit``
    the typed outcome (:class:`dpaudit.outcome.Audit`: the verdict and its guarantee)."""

    def __init__(self, message: str, result: AuditResult, audit: Audit | None = None) -> None:
        super().__init__(message)
        self.result = result
        self.audit = audit


def _evidence(res: AuditResult, verdict: str, trials: int, seed: int) -> str:
    """The gate's message: the Audit's verdict sentence (the one wording), then the evidence."""
    d, s = res.details, res.settings
    lines = [
        f"DP {verdict} (at delta = {res.delta:g})",
        f"  trials = {trials}, seed = {seed}, threshold strategy = {s.get('threshold')!r}, "
        f"chosen threshold = {d.get('threshold')!r}",
        f"  members: {d.get('n_members')} (tp = {d.get('tp')}), non-members: "
        f"{d.get('n_nonmembers')} (fp = {d.get('fp')})",
        f"  TPR in {_pair(d.get('tpr_bounds'))}, FPR in {_pair(d.get('fpr_bounds'))}; "
        f"AUROC = {_num(d.get('auroc'))}",
    ]
    return "\n".join(lines)


def _pair(p: Any) -> str:
    if not p:
        return "-"
    return f"[{_num(p[0])}, {_num(p[1])}]"


def _num(x: Any) -> str:
    return "-" if x is None else f"{float(x):.4g}"


def audit_dp(mechanism: Callable[[Any, np.random.Generator], Any],
             neighbours: Callable[[np.random.Generator], tuple[Any, Any]],
             score: Callable[[Any], float], *, epsilon: float, delta: float = 0.0,
             trials: int = DEFAULT_TRIALS, confidence: float = 0.95, seed: int = 0,
             threshold: str | float = "bonferroni", adjacency: str = "add_remove",
             workers: int | None = 1) -> Audit:
    """The black-box audit of the claim (``epsilon``, ``delta``) that :func:`assert_dp` gates
    on, as its :class:`~dpaudit.outcome.Audit` (``.violation``, ``.message()``, the row, the
    guarantee); never raises for a violation.  Arguments as :func:`assert_dp`."""
    from dpaudit.engine.audit import run_audit
    from dpaudit.games.blackbox import BlackBoxAudit

    eps = check_nonnegative("epsilon", epsilon)
    delta = check_delta(delta)
    gamma = check_confidence(confidence)
    n = check_count("trials", trials, minimum=2)
    seed = check_count("seed", seed)
    if workers is not None:
        check_count("workers", workers, minimum=1)
    audit = BlackBoxAudit(mechanism, neighbours, score, adjacency)
    # the engine's black-box driver; a failing trial fails the gate (no retries)
    run = run_audit(audit, trials=n, seed=seed, executor="inline" if workers == 1 else "process",
                    workers=workers, claimed_epsilon=eps, delta=delta, confidence=gamma,
                    threshold=threshold, retries=0)
    if run.failures:
        f = run.failures[0]
        raise ValueError(f"trial {f.trial} failed ({len(run.failures)} of {n} trials failed): "
                         f"{f.error}")
    return run.with_extra(gate={"trials": n, "seed": seed})


def assert_dp(mechanism: Callable[[Any, np.random.Generator], Any],
              neighbours: Callable[[np.random.Generator], tuple[Any, Any]],
              score: Callable[[Any], float], *, epsilon: float, delta: float = 0.0,
              trials: int = DEFAULT_TRIALS, confidence: float = 0.95, seed: int = 0,
              threshold: str | float = "bonferroni", adjacency: str = "add_remove",
              workers: int | None = 1) -> AuditResult:
    """Fail (raise :class:`DPViolation`, carrying the :class:`~dpaudit.outcome.Audit`) if a
    black-box audit proves the claim (``epsilon``, ``delta``) false; otherwise return the
    audit's :class:`AuditResult` (the verdict's row; :func:`audit_dp` returns the Audit).

    Args:
      mechanism: ``mechanism(dataset, rng) -> output``.
      neighbours: ``neighbours(rng) -> (D0, D1)``; D1 holds the canary.
      score: ``score(output) -> float``, higher = "D1 was used".
      epsilon: the claimed epsilon under test.
      delta: the claimed delta.
      trials: independent runs (default 10,000; the power grows with it).
      confidence: probability the bound holds (false-failure rate <= 1 - confidence).
      seed: the audit's seed (the trials' random streams; deterministic).
      threshold: threshold strategy of :func:`dpaudit.estimators.multi_run`.
      adjacency: "add_remove" or "replace_one" (recorded with the audit).
      workers: 1 (default: in-process, any callables) or more processes (picklable
        callables), or None for all cores.

    Passing is not a proof of privacy (see the module docstring).
    """
    outcome = audit_dp(mechanism, neighbours, score, epsilon=epsilon, delta=delta,
                       trials=trials, confidence=confidence, seed=seed, threshold=threshold,
                       adjacency=adjacency, workers=workers)
    res = outcome.result
    if outcome.violation:
        gate = outcome.extra["gate"]
        raise DPViolation(_evidence(res, str(outcome.message()), gate["trials"], gate["seed"]),
                          res, outcome)
    return res
