"""The one result of every training audit: :class:`TrainAudit` (the
:class:`~dpaudit.outcome.Audit`, its facts a :class:`~dpaudit.training.facts.TrainingFacts`),
built by :func:`training_audit` for every framework -- Opacus, JAX / jax_privacy, a user's own
loop, a language model, any :class:`~dpaudit.training.adapter.TrainerAdapter` -- with its
``train-audit --json`` keys (the Opacus / own-loop keys, or the JAX keys with ``framework``,
``mechanism`` and ``scores_compared``: the documents each path has always printed).

The verdict is the Audit's, computed once (:meth:`dpaudit.outcome.Audit.of`): the rows under
the claim's null family (:meth:`dpaudit.claim.Claim.null_family`), and a configuration error
that shows the run did less than the claim is a violation (:func:`dpaudit.claim.falsified_by`).

Imports neither torch nor jax.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dpaudit.claim import Claim, falsified_by
from dpaudit.observations import MembershipObservations
from dpaudit.outcome import Audit
from dpaudit.results import AuditResult
from dpaudit.training.facts import TrainingFacts

__all__ = ["FAMILY", "TrainAudit", "training_audit", "training_keys"]

#: the family name a training audit's document reports by default (the claim's DP-SGD curves)
FAMILY = "dpsgd"


class TrainAudit(Audit):
    """The one :class:`~dpaudit.outcome.Audit` of an Opacus, own-loop or language-model
    training audit (its facts a :class:`~dpaudit.training.facts.TrainingFacts`), with the
    audit card at hand: ``write_report`` (the card is :mod:`dpaudit.report`, a layer above
    :mod:`dpaudit.outcome`, so the method lives here).  No field, no verdict of its own."""

    def write_report(self, path: str | Path, *, title: str | None = None,
                     fmt: str | None = None) -> Path:
        """The audit card (HTML, or PNG by extension / ``fmt``) of this audit, with the ROC
        and privacy-region plots of its canaries' scores."""
        from dpaudit.report.write import write_report

        return write_report(path, self.to_dict(), fmt=fmt, observations=self.observations,
                            title=title or f"DP-SGD training audit ({self.threat})")


def training_audit(results: Sequence[AuditResult], claim: Claim, facts: TrainingFacts, *,
                   observations: MembershipObservations | None, settings: Mapping[str, Any],
                   any_mechanism_epsilon: float | None) -> TrainAudit:
    """The :class:`~dpaudit.outcome.Audit` of a training audit, whatever the framework: the
    verdict computed once there (the claim's family; a configuration error that falsifies the
    claim is a violation), its ``to_dict()`` the ``train-audit --json`` document."""
    return TrainAudit.of(results, claim, observations=observations, settings=settings,
                         extra=training_keys(facts, claim, settings, observations,
                                             any_mechanism_epsilon),
                         falsified_by=falsified_by(facts.checks),
                         any_mechanism_epsilon=any_mechanism_epsilon, facts=facts)


def training_keys(facts: TrainingFacts, claim: Claim, settings: Mapping[str, Any],
                  obs: MembershipObservations | None,
                  any_mechanism_epsilon: float | None) -> dict[str, Any]:
    """The training audit's ``--json`` keys beyond the results and the verdict (the
    ``extra`` of its Audit): the JAX document's for framework "jax", else Opacus's (which a
    user's own loop shares, its claim's PRV epsilon named ``claim_prv_epsilon``)."""
    if facts.framework == "jax":
        return _jax_keys(facts, claim, settings, obs, any_mechanism_epsilon)
    return _opacus_keys(facts, settings, obs, any_mechanism_epsilon)


def _opacus_keys(facts: TrainingFacts, audit_settings: Mapping[str, Any],
                   obs: MembershipObservations | None,
                   any_mechanism_epsilon: float | None) -> dict[str, Any]:
    delta, confidence = facts.delta, facts.confidence
    out: dict[str, Any] = {
        "family": audit_settings.get("family", FAMILY),
        "delta": delta,
        "confidence": confidence,
    }
    out["configuration_errors"] = facts.configuration_errors
    out["claim_checks"] = [c.to_dict() for c in facts.checks]
    out["accountant_epsilon"] = facts.accountant_epsilon
    if facts.accountant_note is not None:
        out["accountant_note"] = facts.accountant_note
    out["any_mechanism_epsilon"] = any_mechanism_epsilon
    if facts.run_facts is not None:
        out["run_facts"] = facts.run_facts.to_dict()
    if obs is not None:
        out["scores"] = {"member": obs.member.astype(int).tolist(),
                         "score": obs.score.tolist()}
    run = facts.run
    settings = {k: v for k, v in audit_settings.items() if k != "family"}
    if run is not None:
        c = run.config
        out.update({"model": c.model, "canary": c.canary, "threat": c.threat,
                    "canaries": c.canaries, "flaw": c.flawed, "seed": c.seed})
        out["settings"] = {**_relevant(c.to_dict()), "delta": delta,
                           "confidence": confidence}
        out["training"] = {"steps": run.steps, "sampling_rate": c.sampling_rate,
                           "noise_multiplier": c.noise_multiplier,
                           "max_grad_norm": c.max_grad_norm,
                           "test_accuracy": run.test_accuracy,
                           "opacus_epsilon": facts.opacus_epsilon,
                           "accountant_epsilon": facts.accountant_epsilon,
                           "seconds": run.seconds,
                           "expected_batch_size": run.expected_batch_size,
                           "hidden": c.hidden if c.model == "mlp" else None,
                           "learning_rate": c.learning_rate,
                           "score": c.score if c.threat == "white_box" else None,
                           "data": c.data,
                           "shapes": c.shapes if c.canary == "gradient" else None}
        if hasattr(c, "input_reserved"):  # reserved canary examples (not the LM's config)
            out["training"]["reserved"] = c.input_reserved
    else:
        out["threat"] = facts.threat
        out["settings"] = {**settings, "delta": delta, "confidence": confidence}
        # the user's own loop: Opacus need not have run, so the claim's epsilon from
        # Opacus's PRV accountant code is named for what it is (not "opacus_epsilon")
        out["training"] = {"steps": audit_settings.get("steps"),
                           "sampling_rate": audit_settings.get("sampling_rate"),
                           "noise_multiplier": audit_settings.get("noise_multiplier"),
                           "max_grad_norm": audit_settings.get("max_grad_norm"),
                           "claim_prv_epsilon": facts.opacus_epsilon,
                           "accountant_epsilon": facts.accountant_epsilon}
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


def _jax_keys(facts: TrainingFacts, claim: Claim, settings: Mapping[str, Any],
              obs: MembershipObservations | None,
              any_mechanism_epsilon: float | None) -> dict[str, Any]:
    """The JAX audit's keys beyond the results and the verdict (the ``extra`` of its
    :class:`~dpaudit.outcome.Audit`)."""
    out: dict[str, Any] = {
        "family": settings.get("family", FAMILY),
        "delta": facts.delta,
        "confidence": facts.confidence,
        "framework": "jax",
        "mechanism": settings.get("mechanism", "dpsgd" if settings.get(
            "bands", 1) == 1 else "bandmf"),
        "scores_compared": dict(facts.compared),
        "configuration_errors": facts.configuration_errors,
        "claim_checks": [c.to_dict() for c in facts.checks],
        "any_mechanism_epsilon": any_mechanism_epsilon,
    }
    if obs is not None:  # per-canary scores: `dpaudit report` draws the ROC from them
        out["scores"] = {"member": obs.member.astype(int).tolist(),
                         "score": obs.score.tolist()}
    training = {"steps": settings.get("steps"),
                "sampling_rate": settings.get("sampling_rate"),
                "noise_multiplier": settings.get("noise_multiplier"),
                "bands": settings.get("bands"), "rounds": settings.get("rounds"),
                "jax_privacy_epsilon": claim.epsilon,
                "dpsgd_curve_epsilon": facts.dpsgd_curve_epsilon,
                "dp_event": settings.get("dp_event")}
    run = facts.run
    if run is not None:
        c = run.config
        out.update({"model": "mlp", "canary": c.canary, "threat": c.threat,
                    "canaries": c.canaries, "flaw": c.flawed, "seed": c.seed,
                    "config": c.to_dict()})
        training.update({"steps": run.steps, "max_grad_norm": c.max_grad_norm,
                         "test_accuracy": run.test_accuracy, "seconds": run.seconds,
                         "expected_batch_size": run.expected_batch_size,
                         "strategy": [float(v) for v in run.strategy]})
    out["training"] = training
    return out
