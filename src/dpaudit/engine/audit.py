"""``run_audit``: a black-box multi-run audit end to end (engine + estimator), the Python API
behind ``dpaudit run``.

Fixed n (default): all ``trials`` run, then the classical multi-run audit
:func:`dpaudit.estimators.multi_run` (Hypothesis Interpretation, Clopper-Pearson, Bonferroni over
thresholds)
exactly as before.  Sequential (``sequential=True``, needs ``claimed_epsilon``): the e-process of
:mod:`dpaudit.estimators.sequential` is watched as trials finish (in index order) and the audit
stops at the first trial where it reaches 1 / (1 - confidence) -- a violation of the claim at the
stated confidence, valid for that data-dependent stopping time -- or when ``trials`` (the budget)
are spent.

Failed trials (reported in ``failures``) are not dropped from the estimators: a failure is one
more output of the mechanism, so both audits test "M, with failure as a possible output, is
(eps, delta)-DP", which needs no assumption on how failures depend on the secret.  The
sequential e-process keeps them in the sequence, outside every betting set
(:mod:`dpaudit.estimators.sequential`, "Failures").  The fixed-n audit gives them a score below
every successful trial's score (failure at the bottom of the score order -- a fixed
post-processing, as the multi-run bound depends on the scores only through their order), so no
threshold set {score >= t} with t above the failures contains them.  Auditing only the
successful trials would test M conditioned on success, which leaks more when failures depend
on the secret: a mechanism exactly ln(2.5)-DP with failure as an output is ln(3)-DP conditioned
on success, and the fixed-n audit of its successes alone claims a violation of ln 2.5
(tests/test_engine.py, ``test_failures_as_output_prevent_a_false_violation``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.engine.executors import Executor
from dpaudit.engine.game import TrialFailure
from dpaudit.engine.runner import TrialRun, execute
from dpaudit.estimators.multi_run import multi_run
from dpaudit.estimators.sequential import (
    SequentialMonitor,
    SequentialOptions,
    SequentialState,
    sequential_audit,
)
from dpaudit.observations import MembershipObservations
from dpaudit.outcome import Audit
from dpaudit.results import AuditResult
from dpaudit.validation import check_confidence, check_delta, check_nonnegative

__all__ = ["AuditRun", "EngineFacts", "engine_audit", "with_spec", "run_audit"]


@dataclass(frozen=True, eq=False)
class EngineFacts:
    """What an engine run's :class:`~dpaudit.outcome.Audit` knows beyond its row and verdict:
    the trial run (store, failures, timing, configuration), the sequential e-process's state
    (a sequential run) and the audit's ``module:NAME`` (``spec``, when known).

    The row also counts the failed trials (``failures``) as an output of the mechanism (see
    module), so with failures it is not a function of the Audit's ``observations`` alone."""

    run: TrialRun
    sequential: SequentialState | None = None
    spec: str | None = None

    @property
    def kind(self) -> str:
        return "engine"

    @property
    def failures(self) -> tuple[TrialFailure, ...]:
        return self.run.failures

    def with_spec(self, audit: Audit, spec: str | None) -> Audit:
        """``audit`` (this run's) naming its audit ``module:NAME`` (``engine.audit`` of the
        ``--json`` document; ``audit.to_audit(spec=)``)."""
        return engine_audit(audit.observations, audit.result, self.run, audit.claimed_epsilon,
                            sequential=self.sequential, spec=spec)


#: the former outcome class of an engine run: :func:`run_audit` returns the one
#: :class:`~dpaudit.outcome.Audit` (its facts an :class:`EngineFacts`)
AuditRun = Audit


def engine_audit(observations: MembershipObservations, result: AuditResult, run: TrialRun,
                 claimed_epsilon: float | None, *,
                 sequential: SequentialState | None = None, spec: str | None = None) -> Audit:
    """The :class:`~dpaudit.outcome.Audit` of an engine run; its ``to_dict()`` is the
    ``dpaudit run --json`` document (``spec``: the audit's ``module:NAME``).  A sequential
    run's verdict is the anytime-valid test's (the e-process): its row, ``sequential``,
    decides by its own test of the claim (:func:`dpaudit.verdict.exceeds`), in the Audit, so
    ``violation``, the sentence, the card and ``assert_dp`` read one answer."""
    r = run
    extra: dict[str, Any] = {}
    if sequential is not None:
        s = sequential
        extra["sequential"] = {"rejected": s.rejected, "stopping_trial": s.stopping_trial,
                               "trials_used": s.n, "e_value": s.e_value,
                               "max_e_value": s.max_e_value, "p_value": s.p_value,
                               "epsilon_lower": s.epsilon_lower}
    extra["engine"] = {
        "audit": spec, "audit_id": r.audit_id, "trials": r.n,
        "successful_trials": int(r.ok.sum()), "computed": r.computed, "reused": r.reused,
        "failed_trials": [f.to_dict() for f in r.failures], "stopped_at": r.stopped_at,
        "executor": r.executor, "workers": r.workers, "store": r.store,
        "seconds": round(r.seconds, 3),
        "trials_per_second": round(r.computed / r.seconds, 1) if r.seconds > 0 else None,
        "seed": r.config.get("seed"), "config": r.config}
    return Audit.of([result], claimed_epsilon, observations=observations, extra=extra,
                    facts=EngineFacts(run, sequential, spec))


def with_spec(audit: Audit, spec: str | None) -> Audit:
    """The engine run's Audit naming its audit ``module:NAME`` (``engine.audit`` of the
    ``--json`` document)."""
    facts = audit.facts
    if not isinstance(facts, EngineFacts):
        raise ValueError("audit must be an engine run's Audit (dpaudit.engine.run_audit)")
    return facts.with_spec(audit, spec)


def _observations(run: TrialRun) -> MembershipObservations:
    ok = run.ok
    if not ok.any():
        f = run.failures[0] if run.failures else None
        first = f" (first: trial {f.trial} after {f.attempts} attempts: {f.error})" if f else ""
        raise ValueError(f"every trial failed: {run.n} of {run.n}{first}; nothing to audit")
    member, score = run.column("member")[ok], run.column("score")[ok]
    bad = np.flatnonzero(((member != 0) & (member != 1)) | ~np.isfinite(score))
    if bad.size:
        t = int(np.flatnonzero(ok)[bad[0]])
        where = f"trial store {run.store}" if run.store else "the game"
        raise ValueError(f"{where}: trial {t} records member {member[bad[0]]:g}, score "
                         f"{score[bad[0]]:g}; a membership trial records member 0 or 1 and a "
                         f"finite score (a damaged store?)")
    return MembershipObservations.from_arrays(member > 0.5, score)


def _with_failures_at_bottom(run: TrialRun, secrets: Any
                             ) -> tuple[np.ndarray, np.ndarray]:
    """(member, score) of every trial, failed trials scored just below the lowest successful
    score (see module); a failed trial records NaN, so its secret bit is recomputed from its
    stream by the game's ``secrets(seed, trials)``."""
    ok = run.ok
    member = run.column("member") > 0.5
    score = run.column("score").copy()
    if ok.all():
        return member, score
    if not ok.any():
        raise ValueError("every trial failed; nothing to audit (see the failures)")
    bottom = float(np.nextafter(score[ok].min(), -np.inf))
    if not math.isfinite(bottom):
        raise ValueError("scores reach the float range; rescale the score function")
    score[~ok] = bottom
    member[~ok] = secrets(int(run.config["seed"]), np.flatnonzero(~ok))
    return member, score


def run_audit(audit: Any, *, trials: int, seed: int, executor: str | Executor = "process",
              workers: int | None = None, store: str | os.PathLike[str] | None = None,
              resume: bool = False, sequential: bool = False,
              claimed_epsilon: float | None = None, delta: float = 0.0,
              confidence: float = 0.95, threshold: str | float = "bonferroni",
              chunk_size: int | None = None, retries: int = 2, progress: bool = False,
              ray_address: str | None = None,
              sequential_options: SequentialOptions | None = None,
              trial_timeout: float | None = None, identity_env: Any = (),
              spec: str | None = None) -> Audit:
    """Run a :class:`~dpaudit.games.blackbox.BlackBoxAudit` on the engine and audit it.

    Args:
      audit: the black-box audit (mechanism, neighbours, score) -- any game whose fields are
        ("member", "score").
      trials: number of trials (the budget when ``sequential``).
      seed: integer seed (trial t's randomness is a pure function of (seed, t)).
      executor: "inline", "process" (default) or "ray"; workers: processes / Ray CPUs.
      store: SQLite trial store (durable, resumable); resume: continue the audit in it.
      sequential: stop as soon as a violation of ``claimed_epsilon`` is established.
      claimed_epsilon: the claim under test (required when ``sequential``).
      delta: the claim's delta.
      confidence: the probability the verdict/bound holds.
      threshold: threshold strategy of the fixed-n audit (see ``estimators.multi_run``).
      retries: extra attempts for a failing trial; failed trials are reported, not dropped.
      trial_timeout: seconds one attempt of a trial may run (None: no limit); a trial that
        runs longer fails (reported like any failed trial).
      identity_env: environment variables the mechanism reads (their digests join the
        store's identity; see :func:`dpaudit.engine.runner.execute`).
      spec: the audit's ``module:NAME``, recorded in the ``--json`` document.

    Returns the one :class:`~dpaudit.outcome.Audit` (its facts :class:`EngineFacts`).
    """
    delta, confidence = check_delta(delta), check_confidence(confidence)
    if claimed_epsilon is not None:
        claimed_epsilon = check_nonnegative("claimed_epsilon", claimed_epsilon)
    if tuple(getattr(audit, "fields", ())) != ("member", "score"):
        raise ValueError("run_audit needs a membership game with fields ('member', 'score'), "
                         "e.g. dpaudit.BlackBoxAudit")
    opts = sequential_options or SequentialOptions()
    stop_rule = None
    if sequential:
        if claimed_epsilon is None:
            raise ValueError("sequential audits need claimed_epsilon (--claimed-epsilon)")
        claim = claimed_epsilon

        monitor = SequentialMonitor(claim, delta, confidence, opts)

        def stop_rule(rec: np.ndarray, ok: np.ndarray) -> int | None:
            # incremental (each look costs the new trials); failed trials stay in the
            # sequence (NaN score: outside every betting set)
            return monitor.update(rec[:, 0] > 0.5, rec[:, 1])

    run = execute(audit, trials=trials, seed=seed, executor=executor, workers=workers,
                  store=store, resume=resume, chunk_size=chunk_size, retries=retries,
                  progress=progress, ray_address=ray_address, stop_rule=stop_rule,
                  trial_timeout=trial_timeout, identity_env=identity_env)
    obs = _observations(run)
    seq: SequentialState | None = None
    if sequential:
        assert claimed_epsilon is not None
        seq = sequential_audit(run.column("member") > 0.5, run.column("score"),
                               claimed_epsilon, delta, confidence, options=opts,
                               failed=~run.ok)
        base = seq.to_audit_result()
        settings = dict(base.settings)
        settings.update(trials_budget=trials, seed=seed)
        result = AuditResult(epsilon=base.epsilon, delta=base.delta,
                             confidence=base.confidence, method=base.method,
                             params=base.params, p_value=base.p_value, settings=settings,
                             details=base.details)
    else:
        secrets = getattr(audit, "secrets", None)
        if secrets is not None:
            member, score = _with_failures_at_bottom(run, secrets)
            failures = "scored below every success"
        else:  # a membership game that cannot give a failed trial's secret
            member, score = obs.member, obs.score
            failures = "skipped (the game has no secrets(seed, trials))"
        MembershipObservations.from_arrays(member, score).require_both_classes()
        r = multi_run(member, score, delta=delta, confidence=confidence,
                      threshold=threshold, seed=seed)
        result = AuditResult(epsilon=r.epsilon, delta=r.delta, confidence=r.confidence,
                             method=r.method, params=r.params, p_value=r.p_value,
                             settings={**r.settings, "seed": seed,
                                       "failed_trials": failures if run.failures else "none"},
                             details=r.details)
    return engine_audit(obs, result, run, claimed_epsilon, sequential=seq, spec=spec)
