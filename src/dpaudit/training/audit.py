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
configuration error, reported first (``TrainAudit.configuration_errors``, JSON
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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dpaudit.canaries.claims import Claim, ClaimCheck, RunFacts, check_claim
from dpaudit.claim import Claim as AuditClaim
from dpaudit.claim import falsified_by
from dpaudit.estimators.one_run import ONE_RUN_METHODS
from dpaudit.observations import MembershipObservations
from dpaudit.outcome import Audit
from dpaudit.results import AuditResult
from dpaudit.training.accounting import accountant_epsilon as _accountant
from dpaudit.training.accounting import claimed_epsilon as _claimed
from dpaudit.training.accounting import opacus_epsilon as _opacus
from dpaudit.training.common import TrainingAuditOutcome, claim_rows
from dpaudit.training.trainer import TrainingConfig, TrainingRun, train_with_canaries
from dpaudit.validation import check_choice, check_confidence, check_delta

__all__ = ["TrainAudit", "audit_training", "train_audit", "train_audit_dict",
           "simulator_reference", "FAMILY"]

FAMILY = "dpsgd"


@dataclass(frozen=True, eq=False)
class TrainAudit(TrainingAuditOutcome):
    """Results of a one-run training audit (the first result is the verdict's basis), with the
    canaries' (member, score) observations it rests on (for the audit card's score plots);
    ``verdict_result``, ``violation`` and ``configuration_errors`` are
    :class:`~dpaudit.training.common.TrainingAuditOutcome`'s."""

    results: list[AuditResult]
    claimed_epsilon: float
    opacus_epsilon: float
    delta: float
    confidence: float
    threat: str
    run: TrainingRun | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    observations: MembershipObservations | None = None
    checks: list[ClaimCheck] = field(default_factory=list)
    accountant_epsilon: float | None = None
    facts: RunFacts | None = None
    #: the run's own epsilon lower bound at ``delta`` for ANY mechanism (``tight`` under the
    #: (epsilon, delta) null, at ``confidence``): under the claim's DP-SGD family the rows'
    #: epsilon is that of the DP-SGD curve the run is shown not to meet, which bounds the
    #: run's own epsilon only if the run is a DP-SGD curve -- a flawed run need not be
    any_mechanism_epsilon: float | None = None
    #: the claim tested (:class:`dpaudit.claim.Claim`: the DP-SGD event and its null family)
    claim: AuditClaim | None = None
    #: why the user's accountant gave no epsilon (None when it answered or was not given)
    accountant_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``train-audit --json`` document (:func:`train_audit_dict`)."""
        return train_audit_dict(self)

    def write_report(self, path: Any, *, title: str | None = None, fmt: str | None = None
                     ) -> Any:
        """The audit card (HTML, or PNG by extension / ``fmt``) of this audit, with the ROC
        and privacy-region plots of its canaries' scores."""
        from dpaudit.report.write import write_report

        return write_report(path, self.to_dict(), fmt=fmt, observations=self.observations,
                            title=title or f"DP-SGD training audit ({self.threat})")

    def save_scores(self, path: Any) -> None:
        """Per-canary ``member,score`` CSV (``dpaudit one-run`` / ``dpaudit report --scores``
        read it)."""
        from dpaudit.io import write_scores

        assert self.observations is not None
        write_scores(path, self.observations.member, self.observations.score)

    def to_audit(self) -> Audit:
        """The typed outcome (:class:`dpaudit.outcome.Audit`); its ``to_dict()`` is the
        ``train-audit --json`` document."""
        claim = self.claim if self.claim is not None else self.claimed_epsilon
        return Audit.of(self.results, claim, observations=self.observations,
                        settings=self.settings, extra=_training_keys(self),
                        falsified_by=falsified_by(self.checks),
                        any_mechanism_epsilon=self.any_mechanism_epsilon)


def audit_training(member: Any, score: Any, *, noise_multiplier: float, sampling_rate: float,
                   steps: int, threat: str = "white_box", delta: float = 1e-5,
                   confidence: float = 0.95, methods: Sequence[str] = ONE_RUN_METHODS,
                   seed: int = 0, facts: RunFacts | None = None,
                   max_grad_norm: float | None = None, accountant: Any = None,
                   family: Any = None) -> TrainAudit:
    """One-run audit of a DP-SGD training run from its canaries' bits and scores.

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
    # the claim's family decides the verdict (valid); the run's own epsilon, valid for any
    # mechanism (a flawed run lies outside the family), comes from the (eps, delta) null
    results, any_eps = claim_rows(member, score, claim, confidence=confidence,
                                  methods=methods, seed=seed)
    settings = {"family": claim.family_name,
                "noise_multiplier": noise_multiplier, "sampling_rate": sampling_rate,
                "steps": steps, "threat": threat, "max_grad_norm": max_grad_norm,
                "bits_decoder": "median split"}
    return TrainAudit(results, claimed, opacus, delta, confidence, threat,
                      settings=settings,
                      observations=MembershipObservations.from_arrays(member, score),
                      checks=checks, accountant_epsilon=acc_eps, facts=facts,
                      any_mechanism_epsilon=any_eps, claim=claim, accountant_note=acc_note)


def train_audit(config: TrainingConfig, *, delta: float = 1e-5, confidence: float = 0.95,
                on_step: Callable[[int], None] | None = None, family: Any = None) -> TrainAudit:
    """Train on a built-in data set with canaries (one run, :func:`train_with_canaries`) and
    audit it against the claim (``config.claimed_steps`` if set, else the steps run).
    ``family``: the null family (default: the claim's own DP-SGD family; any other family is
    an assumption and labelled so, see :func:`audit_training`)."""
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    run = train_with_canaries(config, on_step=on_step)
    a = audit_training(run.member, run.score, noise_multiplier=config.noise_multiplier,
                       sampling_rate=config.sampling_rate,
                       steps=config.claim_steps(run.steps), threat=config.threat,
                       delta=delta, confidence=confidence, seed=config.seed, facts=run.facts,
                       max_grad_norm=config.max_grad_norm, accountant=run.accountant,
                       family=family)
    return TrainAudit(a.results, a.claimed_epsilon, a.opacus_epsilon, delta, confidence,
                      config.threat, run, {**a.settings, **config.to_dict()},
                      a.observations, a.checks, a.accountant_epsilon, a.facts,
                      a.any_mechanism_epsilon, a.claim, a.accountant_note)


def train_audit_dict(audit: TrainAudit) -> dict[str, Any]:
    """The ``train-audit --json`` document: the keys of ``dpaudit simulate --json``
    (results, claimed_epsilon, violation, verdict, verdict_method) plus ``training``."""
    return audit.to_audit().to_dict()


def _training_keys(audit: TrainAudit) -> dict[str, Any]:
    out: dict[str, Any] = {
        "family": audit.settings.get("family", FAMILY),
        "delta": audit.delta,
        "confidence": audit.confidence,
    }
    out["configuration_errors"] = audit.configuration_errors
    out["claim_checks"] = [c.to_dict() for c in audit.checks]
    out["accountant_epsilon"] = audit.accountant_epsilon
    if audit.accountant_note is not None:
        out["accountant_note"] = audit.accountant_note
    out["any_mechanism_epsilon"] = audit.any_mechanism_epsilon
    if audit.facts is not None:
        out["run_facts"] = audit.facts.to_dict()
    obs = audit.observations
    if obs is not None:
        out["scores"] = {"member": obs.member.astype(int).tolist(),
                         "score": obs.score.tolist()}
    run = audit.run
    settings = {k: v for k, v in audit.settings.items() if k != "family"}
    if run is not None:
        c = run.config
        out.update({"model": c.model, "canary": c.canary, "threat": c.threat,
                    "canaries": c.canaries, "flaw": c.flawed, "seed": c.seed})
        out["settings"] = {**_relevant(c.to_dict()), "delta": audit.delta,
                           "confidence": audit.confidence}
        out["training"] = {"steps": run.steps, "sampling_rate": c.sampling_rate,
                           "noise_multiplier": c.noise_multiplier,
                           "max_grad_norm": c.max_grad_norm,
                           "test_accuracy": run.test_accuracy,
                           "opacus_epsilon": audit.opacus_epsilon,
                           "accountant_epsilon": audit.accountant_epsilon,
                           "seconds": run.seconds,
                           "expected_batch_size": run.expected_batch_size,
                           "hidden": c.hidden if c.model == "mlp" else None,
                           "learning_rate": c.learning_rate,
                           "score": c.score if c.threat == "white_box" else None,
                           "data": c.data,
                           "shapes": c.shapes if c.canary == "gradient" else None}
    else:
        out["threat"] = audit.threat
        out["settings"] = {**settings, "delta": audit.delta, "confidence": audit.confidence}
        # the user's own loop: Opacus need not have run, so the claim's epsilon from
        # Opacus's PRV accountant code is named for what it is (not "opacus_epsilon")
        out["training"] = {"steps": audit.settings.get("steps"),
                           "sampling_rate": audit.settings.get("sampling_rate"),
                           "noise_multiplier": audit.settings.get("noise_multiplier"),
                           "max_grad_norm": audit.settings.get("max_grad_norm"),
                           "claim_prv_epsilon": audit.opacus_epsilon,
                           "accountant_epsilon": audit.accountant_epsilon}
    return out


def _relevant(settings: dict[str, Any]) -> dict[str, Any]:
    """The run's settings without those that did not act on it (``hidden`` of a CNN or a
    logistic regression, the white-box ``score`` of another threat, the input-canary kind
    of gradient canaries, the gradient canaries' shapes and scale of input canaries): the
    audit card and ``--json`` show what the run used; a rerun takes the defaults for the
    rest, which change nothing."""
    out = dict(settings)
    drop = set()
    if out.get("model") != "mlp":
        drop.add("hidden")
    if out.get("threat") != "white_box":
        drop.add("score")
    if out.get("canary") == "gradient":
        drop.add("input_kind")
    else:
        drop |= {"shapes", "canary_scale", "canary_branch"}
    return {k: v for k, v in out.items() if k not in drop}


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
    return one_run_audit(mech, config.canaries, seed, delta=delta,
                         confidence=confidence).results
