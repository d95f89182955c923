"""Audit a DP-SGD training run in one run: scores -> ``audit_one_run`` -> verdict.

* :func:`audit_training` -- the part shared by every entry point: per-canary truth bits and
  scores from ONE training run, the claimed privacy from (sigma, q, T), every one-run method
  side by side (``dpaudit.audit_one_run``: tight (Tight One-Run), bits (Bits Transmission), Steinke
  et al.,
  Mahloujifar et al.) and the verdict.  Use it with a user's own loop and
  :class:`~dpaudit.training.canaries.GradientCanaries`.
* :func:`train_audit` -- train on digits with canaries (:mod:`.trainer`) and audit.
* :func:`train_audit_dict` -- the ``dpaudit train-audit --json`` document (one function, so
  that a report can be built from the same dict).
* :func:`simulator_reference` -- the project's DP-SGD simulator at the same
  (sigma, q, T, canaries, threat, score), the yardstick of the white-box tightness target.

Claim checks (deterministic, before statistics): given the run's facts
(:meth:`GradientCanaries.facts`), :func:`dpaudit.canaries.check_claim` compares the claim
with the steps taken, the noise multiplier and clip norm the optimizer used, the sampling
rate implied by the observed batch sizes and the normalisation; a mismatch is a
configuration error, reported first (the Audit's ``configuration_errors``, JSON
``configuration_errors``), and the statistical audit still runs.  The epsilon of the user's
own accountant (``accountant=``: a ``PrivacyEngine`` or an Opacus accountant) is reported
beside the claim and the audit.

Null family: the claim's own, DP-SGD curves over the noise multiplier at (q, T) from the PLD
accountant (``dpaudit.curves.accounting.dpsgd_family``, as ``dpaudit simulate dpsgd``), so the
verdict is valid for the claim with no assumption; the mu-GDP family would not be (a DP-SGD
curve and the mu-GDP curve of the same epsilon cross).  The claimed epsilon, against which the
verdict is taken, is that of ``dpsgd_curve(sigma, q, T)`` (dp_accounting PLD); Opacus's
accountant's epsilon is reported next to it.
Decoder of the "bits" method: the median split, for every threat -- the rule of
``dpaudit one-run`` (``audit_one_run``'s default), so the library and the CLI give the same
bound on the same scores.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from dpaudit.canaries.claims import Claim, ClaimCheck, RunFacts, check_claim
from dpaudit.claim import Claim as AuditClaim
from dpaudit.estimators.one_run import ONE_RUN_METHODS
from dpaudit.outcome import Audit
from dpaudit.results import AuditResult
from dpaudit.training.accounting import accountant_epsilon as _accountant
from dpaudit.training.accounting import claimed_epsilon as _claimed
from dpaudit.training.accounting import opacus_epsilon as _opacus
from dpaudit.training.adapter import RunAdapter, audit_canaries
from dpaudit.training.facts import TrainingFacts
from dpaudit.training.result import FAMILY, TrainAudit, training_audit
from dpaudit.training.trainer import TrainingConfig, train_with_canaries
from dpaudit.validation import check_choice, check_confidence, check_delta

__all__ = ["TrainAudit", "audit_training", "train_audit", "train_audit_dict",
           "simulator_reference", "FAMILY"]



def audit_training(member: Any, score: Any, *, noise_multiplier: float, sampling_rate: float,
                   steps: int, threat: str = "white_box", delta: float = 1e-5,
                   confidence: float = 0.95, methods: Sequence[str] = ONE_RUN_METHODS,
                   seed: int = 0, facts: RunFacts | None = None,
                   max_grad_norm: float | None = None, accountant: Any = None,
                   family: Any = None) -> TrainAudit:
    """One-run audit of a DP-SGD training run from its canaries' bits and scores (a user's
    own loop: ``facts.framework == "own"``), as the one :class:`~dpaudit.outcome.Audit`.

    The claim is (``noise_multiplier``, ``sampling_rate``, ``steps``[, ``max_grad_norm``]);
    its epsilon is ``dpsgd_curve(noise_multiplier, sampling_rate, steps).epsilon(delta)``.
    ``facts`` (e.g. ``canaries.facts(len(train_set))``) turns on the claim checks;
    ``accountant`` (a ``PrivacyEngine`` or an Opacus accountant) adds its epsilon.
    ``threat`` ("white_box", "last_iterate", "black_box") is recorded; every threat uses the
    same decoders.  ``family``: null family of the f-DP methods (default: the claim's own
    DP-SGD family, ``dpsgd_family``; anything else is an assumption).
    """
    check_choice("threat", threat, ("white_box", "last_iterate", "black_box"))
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    claimed = _claimed(noise_multiplier, sampling_rate, steps, delta)
    opacus = _opacus(noise_multiplier, sampling_rate, steps, delta)
    claim = AuditClaim.dpsgd_claim(noise_multiplier, sampling_rate, steps, delta,
                                   epsilon=claimed, family=family)
    checks = [] if facts is None else check_claim(
        Claim(noise_multiplier, sampling_rate, steps, max_grad_norm), facts)
    acc_eps, acc_note = (None, None) if accountant is None else _accountant(accountant,
                                                                             delta)
    settings = {"family": claim.family_name,
                "noise_multiplier": noise_multiplier, "sampling_rate": sampling_rate,
                "steps": steps, "threat": threat, "max_grad_norm": max_grad_norm,
                "bits_decoder": "median split"}
    tf = TrainingFacts("own", threat, delta, confidence, checks=tuple(checks),
                       run_facts=facts, opacus_epsilon=opacus, accountant_epsilon=acc_eps,
                       accountant_note=acc_note)
    # the one training audit (the adapters' too): the claim's family decides the verdict
    # (valid); the run's own epsilon, valid for any mechanism (a flawed run lies outside the
    # family), comes from the (eps, delta) null
    return audit_canaries(member, score, claim, tf, confidence=confidence, methods=methods,
                          seed=seed, settings=settings)


def train_audit(config: TrainingConfig, *, delta: float = 1e-5, confidence: float = 0.95,
                on_step: Callable[[int], None] | None = None, family: Any = None
                ) -> TrainAudit:
    """Train on a built-in data set with canaries (one run, :func:`train_with_canaries`) and
    audit it against the claim (``config.claimed_steps`` if set, else the steps run).
    ``family``: the null family (default: the claim's own DP-SGD family; any other family is
    an assumption and labelled so, see :func:`audit_training`)."""
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    run = train_with_canaries(config, on_step=on_step)
    return audit_run(run, config, sampling_rate=config.sampling_rate, delta=delta,
                     confidence=confidence, family=family)


def audit_run(run: Any, config: Any, *, sampling_rate: float, delta: float,
              confidence: float, family: Any = None, extra_checks: Sequence[ClaimCheck] = ()
              ) -> TrainAudit:
    """The audit of a finished Opacus run (a ``TrainingRun`` or the LM's ``LMRun``) against
    its config's claim (sigma, ``sampling_rate``, ``config.claim_steps(run.steps)``, C), read
    through the trainer-adapter interface (bits, the threat's scores, the facts);
    ``extra_checks``: further claim checks of the run (the LM's noise probe), failed first."""
    ad = RunAdapter(run, "opacus")
    a = audit_training(ad.bits, ad.scores(config.threat),
                       noise_multiplier=config.noise_multiplier, sampling_rate=sampling_rate,
                       steps=config.claim_steps(run.steps), threat=config.threat,
                       delta=delta, confidence=confidence, seed=config.seed, facts=ad.facts(),
                       max_grad_norm=config.max_grad_norm, accountant=run.accountant,
                       family=family)
    assert isinstance(a.facts, TrainingFacts) and a.claim is not None
    checks = tuple(a.facts.checks) if not extra_checks else tuple(
        sorted([*a.facts.checks, *extra_checks], key=lambda c: c.ok))
    tf = dataclasses.replace(a.facts, framework="opacus", run=run, checks=checks)
    return training_audit(a.results, a.claim, tf, observations=a.observations,
                          settings={**a.settings, **config.to_dict()},
                          any_mechanism_epsilon=a.any_mechanism_epsilon)


def train_audit_dict(audit: Audit) -> dict[str, Any]:
    """The ``train-audit --json`` document: the keys of ``dpaudit simulate --json``
    (results, claimed_epsilon, violation, verdict, verdict_method) plus ``training``."""
    return audit.to_dict()


def simulator_reference(config: TrainingConfig, *, delta: float = 1e-5,
                        confidence: float = 0.95, seed: int = 0) -> list[AuditResult]:
    """The DP-SGD simulator's one-run audit at the same (sigma, q, T, canaries, threat,
    score) as ``config`` (white box or last iterate; no background gradients)."""
    from dpaudit.games.audit import one_run_audit
    from dpaudit.mechanisms.dpsgd import DPSGDSimulator

    if config.threat == "black_box":
        raise ValueError("the DP-SGD simulator models gradient canaries (white_box or "
                         "last_iterate), not black_box input canaries")
    mech = DPSGDSimulator(noise_multiplier=config.noise_multiplier,
                          sampling_rate=config.sampling_rate, steps=config.steps,
                          threat=config.threat,
                          score_kind=config.score if config.threat == "white_box" else "sum")
    return list(one_run_audit(mech, config.canaries, seed, delta=delta,
                              confidence=confidence).results)
