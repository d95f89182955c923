"""Audit a jax_privacy training run in one run: scores -> ``audit_one_run`` -> verdict.

* :func:`audit_scores` -- the part every entry point shares (a user's own ``jax.grad`` /
  ``vmap`` loop too): canaries' secret bits and scores from ONE run, the claim, every one-run
  method side by side (``dpaudit.audit_one_run``: tight, bits, Steinke et al., Mahloujifar et
  al.) and the verdict;
* :func:`train_audit_jax` -- train the digits MLP with jax_privacy (:mod:`.trainer`) and audit
  it; white box, the whitened and the naive score are both audited (the facts'
  ``compared``) and the claim is checked against what the run did (:func:`run_claim_checks`);
* :func:`jax_train_audit_dict` -- the ``train-audit --framework jax --json`` document: the keys
  of the Opacus audit's document (results, claimed_epsilon, violation, verdict,
  verdict_method, family, delta, confidence, training{...}) plus ``framework``,
  ``mechanism`` and ``scores_compared``.

The claim.  epsilon at delta of the DP event jax_privacy's plan gives for the run
(``plan.dp_event``), composed by dp_accounting's PLD accountant under the plan's zero-out
relation (:func:`.plan.event_epsilon`); dpaudit's ``dpsgd_curve(sigma, q, rounds)`` of the same
composition is reported beside it (``dpsgd_curve_epsilon``).

Null family of the verdict: the claim's own, as on the Opacus path, decided by
:class:`dpaudit.claim.Claim` (``Claim.dpsgd_claim``): DP-SGD curves over the noise multiplier
at (q, ceil(T / b)) (``dpaudit.curves.accounting.dpsgd_family``; for BandMF the claim *is* that
composition, and zero-out and add/remove adjacency give the same pair of distributions for a
Poisson-subsampled Gaussian).  ``family="eps_delta"`` is valid too (looser); anything else is
an assumption.  (The ``E.tight`` NaN that once kept ``eps_delta`` the default here no longer
reproduces: n = 1000, r = 10, u = 0 at sigma = 1, q = 0.5, 16 rounds gives 1.2316.)  Under
the DP-SGD family a row's number is the epsilon of the DP-SGD curve the run fails to meet; the
run's own epsilon (valid for any mechanism) is ``any_mechanism_epsilon``.  A configuration error
showing the run did less than the claim (less noise, more steps, a larger q) is a violation
(:func:`dpaudit.claim.falsified_by`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpaudit.canaries import Claim, ClaimCheck, check_claim
from dpaudit.canaries.plan import SENTINEL
from dpaudit.claim import Claim as AuditClaim
from dpaudit.estimators.one_run import ONE_RUN_METHODS, audit_one_run
from dpaudit.observations import MembershipObservations
from dpaudit.outcome import Audit
from dpaudit.training.adapter import RunAdapter, audit_canaries
from dpaudit.training.facts import TrainingFacts
from dpaudit.training.jax.plan import claim_rounds, event_epsilon
from dpaudit.training.jax.trainer import (
    JaxTrainingConfig,
    JaxTrainingRun,
    train_jax_with_canaries,
)
from dpaudit.training.result import FAMILY, TrainAudit, training_audit
from dpaudit.validation import (
    check_confidence,
    check_count,
    check_delta,
    check_positive,
    check_probability,
)

__all__ = ["JaxTrainAudit", "audit_scores", "train_audit_jax", "jax_train_audit_dict",
           "FAMILY", "dpsgd_curve_epsilon", "null_family", "run_claim_checks", "run_cli_audit",
           "summary_lines"]

#: the former outcome class of a JAX training audit: every training audit returns the one
#: result, :class:`~dpaudit.training.result.TrainAudit` (an :class:`~dpaudit.outcome.Audit`)
JaxTrainAudit = TrainAudit


def dpsgd_curve_epsilon(noise_multiplier: float, sampling_rate: float, rounds: int,
                        delta: float) -> float:
    """epsilon at delta of dpaudit's ``dpsgd_curve`` over ``rounds`` compositions."""
    from dpaudit.training.accounting import claimed_epsilon  # memoised; imports no torch

    return claimed_epsilon(noise_multiplier, sampling_rate, rounds, delta)


def null_family(noise_multiplier: float, sampling_rate: float, rounds: int, delta: float,
                claimed_epsilon: float) -> Any:
    """The claim's own null family: DP-SGD curves over the noise multiplier at
    (q, rounds), anchored at the claimed epsilon (no assumption); :meth:`Claim.null_family`."""
    return AuditClaim.dpsgd_claim(noise_multiplier, sampling_rate, rounds, delta,
                                  epsilon=claimed_epsilon).null_family()


def audit_scores(member: Any, score: Any, *, noise_multiplier: float, sampling_rate: float,
                 steps: int, bands: int = 1, dp_event: Any = None, threat: str = "white_box",
                 delta: float = 1e-5, confidence: float = 0.95,
                 methods: Sequence[str] = ONE_RUN_METHODS, seed: int = 0,
                 family: Any = None) -> Audit:
    """One-run audit of a DP-SGD (``bands=1``) or amplified BandMF run from its canaries' bits
    and scores.  The claim is the epsilon of ``dp_event`` (jax_privacy's plan's event) when
    given, else of ceil(steps / bands) Poisson-subsampled Gaussians at
    (noise_multiplier, sampling_rate) -- the event jax_privacy builds for these settings.
    ``family``: null family of the f-DP methods: ``"dpsgd"`` / None (default, the claim's
    DP-SGD family) or ``"eps_delta"``, both valid for the claim (module docstring); anything
    else is an assumption."""
    sigma = check_positive("noise_multiplier", noise_multiplier)
    q = check_probability("sampling_rate", sampling_rate, open_low=True)
    rounds = claim_rounds(steps, bands)
    check_count("steps", steps, minimum=1)
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    if dp_event is None:
        from jax_privacy.experimental import accounting

        dp_event = accounting.amplified_bandmf_event(sigma, steps, num_bands=bands,
                                                     sampling_prob=q)
    claimed = event_epsilon(dp_event, delta)
    reference = dpsgd_curve_epsilon(sigma, q, rounds, delta)
    claim = AuditClaim.dpsgd_claim(sigma, q, rounds, delta, epsilon=claimed, family=family)
    # the one training audit, as on the Opacus path: the rows under the claim's family and
    # the run's own any-mechanism epsilon
    facts = TrainingFacts("jax", threat, delta, confidence, dpsgd_curve_epsilon=reference)
    return audit_canaries(member, score, claim, facts, confidence=confidence,
                          methods=methods, seed=seed,
                          settings={"family": claim.family_name, "noise_multiplier": sigma,
                                    "sampling_rate": q, "steps": steps, "bands": bands,
                                    "rounds": rounds, "dp_event": repr(dp_event)})


def train_audit_jax(config: JaxTrainingConfig, *, delta: float = 1e-5,
                    confidence: float = 0.95,
                    on_step: Callable[[int], None] | None = None,
                    family: Any = None) -> Audit:
    """Train with jax_privacy and canaries (one run) and audit it; white box also audits
    the other white-box scores of the same run (whitened vs naive) for comparison."""
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    run = train_jax_with_canaries(config, on_step=on_step)
    # the run through the trainer-adapter interface (bits, the threat's scores; its facts
    # feed the claim check below, run_claim_checks)
    ad = RunAdapter(run, "jax")
    a = audit_scores(ad.bits, ad.scores(config.threat), noise_multiplier=config.noise_multiplier,
                     sampling_rate=config.sampling_rate, steps=run.steps,
                     bands=config.num_bands, dp_event=run.dp_event, threat=config.threat,
                     delta=delta, confidence=confidence, seed=config.seed, family=family)
    assert isinstance(a.facts, TrainingFacts) and a.claim is not None
    compared: dict[str, float] = {}
    for name, s in run.scores.items():
        if s is run.score:
            compared[name] = float(a.verdict_result.epsilon)
        elif config.threat == "white_box":
            r = audit_one_run(run.member, s, delta=delta, confidence=confidence,
                              methods=(a.verdict_result.method,),
                              family=a.claim.null_family(), seed=config.seed)
            compared[name] = float(r[0].epsilon)
    facts = dataclasses.replace(a.facts, run=run, compared=compared,
                                checks=tuple(run_claim_checks(run)))
    return training_audit(a.results, a.claim, facts, observations=a.observations,
                          settings={**config.to_dict(), **a.settings},
                          any_mechanism_epsilon=a.any_mechanism_epsilon)


def run_claim_checks(run: JaxTrainingRun) -> list[ClaimCheck]:
    """Deterministic checks of the claim against what the run did, before any statistics:
    the core's :func:`~dpaudit.canaries.check_claim` (steps, noise multiplier, clip norm of
    every parameter group, Poisson batch sizes of each eligible group) plus the noise
    strategy: the privatiser's strategy must be the one the plan's DP event accounts for.
    Failed checks first."""
    c = run.config
    out = list(check_claim(Claim(c.noise_multiplier, c.sampling_rate, c.steps,
                                 c.max_grad_norm), run.facts)) if run.facts else []
    if run.noise_strategy is not None:
        same = (run.noise_strategy.shape == run.strategy.shape
                and np.allclose(run.noise_strategy, run.strategy))
        out.append(ClaimCheck(
            "noise_strategy", bool(same), run.strategy.size, int(run.noise_strategy.size),
            f"noise strategy: the claim accounts for a {run.strategy.size}-band strategy"
            + ("" if same else f" but the noise was generated with a "
               f"{run.noise_strategy.size}-band one")))
    return sorted(out, key=lambda x: x.ok)


def jax_train_audit_dict(audit: Audit) -> dict[str, Any]:
    """The ``train-audit --framework jax --json`` document (see module docstring): the
    Audit's ``to_dict()``."""
    return audit.to_dict()


def run_cli_audit(*, model: str, canary: str, threat: str, canaries: int,
                  noise_multiplier: float, sampling_rate: float, steps: int,
                  max_grad_norm: float, learning_rate: float, flawed: str | None, seed: int,
                  hidden: int, score: str, input_kind: str, mechanism: str, bands: int,
                  delta: float, confidence: float, progress: bool = False,
                  canary_branch: bool = False, sentinel: float = SENTINEL
                  ) -> tuple[dict[str, Any], MembershipObservations | None]:
    """``dpaudit train-audit --framework jax``: train, audit, return ``(document,
    observations)`` (the observations feed the audit card); ``canary_branch``:
    ``--canary-branch`` (:class:`~dpaudit.training.jax.JaxTrainingConfig`)."""
    if model != "mlp":
        raise ValueError(f"model must be 'mlp' with framework 'jax' (the digits MLP with "
                         f"reserved inputs); got {model!r}")
    cfg = JaxTrainingConfig(
        mechanism=mechanism, bands=bands, canary=canary, threat=threat, canaries=canaries,
        noise_multiplier=noise_multiplier, sampling_rate=sampling_rate, steps=steps,
        max_grad_norm=max_grad_norm, learning_rate=learning_rate, flawed=flawed, seed=seed,
        hidden=hidden, score=score, input_kind=input_kind, canary_branch=canary_branch,
        sentinel=sentinel)
    if not progress:
        audit = train_audit_jax(cfg, delta=delta, confidence=confidence)
        return jax_train_audit_dict(audit), audit.observations
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    console = Console(stderr=True)

    with Progress(TextColumn("training (jax_privacy)"), BarColumn(),
                  TextColumn("{task.completed}/{task.total} steps"), TimeRemainingColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("steps", total=cfg.steps)
        audit = train_audit_jax(cfg, delta=delta, confidence=confidence,
                                on_step=lambda i: bar.update(task, completed=i))
    return jax_train_audit_dict(audit), audit.observations


def summary_lines(out: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Title and extra lines of the CLI table for a :func:`jax_train_audit_dict` document."""
    tr, c = out["training"], out.get("config", {})
    flaw = out.get("flaw")
    mech = ("DP-SGD" if out["mechanism"] == "dpsgd"
            else f"BandMF ({tr['bands']} bands)")
    title = (f"One-run {out['threat']} audit of {'FLAWED (' + flaw + ') ' if flaw else ''}"
             f"{mech} training (mlp, jax_privacy): sigma={tr['noise_multiplier']:g}, "
             f"q={tr['sampling_rate']:g}, T={tr['steps']}, {c.get('canaries', 0):,} "
             f"{c.get('canary', '')} canaries")
    extra: dict[str, Any] = {
        "claimed_epsilon (jax_privacy DP event, dp_accounting PLD)": out["claimed_epsilon"],
        "dpsgd_curve epsilon (dpaudit, same composition)": tr["dpsgd_curve_epsilon"],
        "null family": out["family"]}
    for name, eps in out.get("scores_compared", {}).items():
        extra[f"{out['verdict_method']} epsilon with the {name} score"] = eps
    extra.update({"test_accuracy": tr.get("test_accuracy"), "seconds": tr.get("seconds")})
    return title, extra
