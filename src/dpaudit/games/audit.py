"""End-to-end audits of simulated mechanisms: game -> observations -> estimators -> report.

* :func:`one_run_audit` -- Bits Transmission Algorithm 2 / Tight One-Run Def. 6 with a
  :class:`dpaudit.mechanisms.SimulatedMechanism`: n uniform canary bits, ONE run, every
  one-run method side by side (``dpaudit.audit_one_run``), and the verdict against the
  mechanism's claimed epsilon.
* :func:`multi_run_audit` -- Bits Transmission Algorithm 1 with a :class:`BlackBoxAudit` (parallel
  trials) and the classical Clopper-Pearson audit ``estimators.multi_run``.
* :func:`demo_dpsgd` -- the ``dpaudit demo`` scenario: one run of a correct and of a flawed
  ("backprop clipping", BT notes §6.5) white-box DP-SGD.

Null families (the ``family`` of the f-DP one-run methods) default per mechanism:
Gaussian -> "gdp", Laplace -> "laplace", randomized response -> "eps_delta",
subsampled Gaussian -> ("subsampled_gaussian", q), DP-SGD -> "dpsgd": DP-SGD curves over the
noise multiplier from the PLD accountant (``dpaudit.curves.accounting.dpsgd_family``), the
family of the claimed curve ``dpsgd_curve``.  Each is the family of the mechanism's claimed
curve, so the verdict is valid for the claim with no assumption (``claim_family``).  The
mu-GDP family (BT notes §6.4's suggestion, the CLT view of DP-SGD; Bits Transmission leaves the
DP-SGD
family unspecified, BT notes §10 item 10) is not valid for a DP-SGD claim -- the curves cross
-- and is available as ``family="gdp"``, labelled an assumption.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dpaudit.claim import Claim
from dpaudit.mechanisms.base import SimulatedMechanism, as_rng
from dpaudit.mechanisms.dpsgd import DPSGDSimulator
from dpaudit.mechanisms.flawed import WrongSensitivityMechanism
from dpaudit.mechanisms.simple import (
    LaplaceMechanism,
    RandomizedResponse,
    SubsampledGaussianMechanism,
)
from dpaudit.observations import MembershipObservations
from dpaudit.outcome import Audit
from dpaudit.results import AuditResult
from dpaudit.validation import check_confidence, check_count, check_delta

__all__ = ["OneRunReport", "GameFacts", "one_run_audit",
           "default_family", "claim_of", "multi_run_audit",
           "audit_multi_run",
           "demo_dpsgd",
           "available_methods"]


def default_family(mechanism: SimulatedMechanism) -> Any:
    """The null family matching the mechanism's claimed curve (see module docstring)."""
    if isinstance(mechanism, WrongSensitivityMechanism):
        return "gdp" if mechanism.noise == "gaussian" else "laplace"
    if isinstance(mechanism, LaplaceMechanism):
        return "laplace"
    if isinstance(mechanism, RandomizedResponse):
        return "eps_delta"
    if isinstance(mechanism, SubsampledGaussianMechanism):
        return ("subsampled_gaussian", mechanism.q)
    if isinstance(mechanism, DPSGDSimulator):
        return "dpsgd"
    return "gdp"


def claim_of(mechanism: SimulatedMechanism, delta: float, family: Any = None) -> Claim:
    """The :class:`dpaudit.claim.Claim` of a simulated mechanism: its claimed curve, whose own
    named family (:func:`default_family`) is the valid null (``Claim.null_family``: no
    assumption).  DP-SGD's claim is its accounting event, whose family is the PLD accountant's
    ``dpsgd_family`` (the mu-GDP family is not valid for it: the curves cross).  An explicit
    ``family`` is an assumption unless it is ``eps_delta``."""
    eps = mechanism.claimed_epsilon(delta)
    if isinstance(mechanism, DPSGDSimulator):
        return Claim.dpsgd_claim(mechanism.noise_multiplier, mechanism.sampling_rate,
                                 mechanism.steps, delta, epsilon=eps, family=family)
    if family is None:
        return Claim.from_curve(mechanism.claimed_curve, delta,
                                family=default_family(mechanism), epsilon=eps)
    return Claim(eps, delta, curve=mechanism.claimed_curve, family=family)


def _claim_null(mechanism: SimulatedMechanism, fam: Any, delta: float) -> Any:
    """The default null of a simulated mechanism (:func:`claim_of`'s ``null_family``)."""
    return claim_of(mechanism, delta).null_family()


def available_methods() -> tuple[str, ...]:
    """The one-run methods whose estimator module is installed (all four once they land)."""
    from dpaudit.estimators.one_run import ONE_RUN_METHODS

    return tuple(m for m in ONE_RUN_METHODS
                 if importlib.util.find_spec(f"dpaudit.estimators.{m}") is not None)


@dataclass(frozen=True)
class GameFacts:
    """What a simulated game's :class:`~dpaudit.outcome.Audit` knows beyond its rows and
    verdict: the mechanism (its description) and whether the verdict is Bonferroni over the
    methods (``simultaneous``); the observations, the claim and the true epsilon are the
    Audit's own fields."""

    mechanism: str
    simultaneous: bool = False

    @property
    def kind(self) -> str:
        return "game"


#: the former outcome class of a simulated one-run game: it returns the one
#: :class:`~dpaudit.outcome.Audit` (its facts a :class:`GameFacts`)
OneRunReport = Audit


def one_run_audit(mechanism: SimulatedMechanism, n: int, seed: int, *, delta: float = 1e-5,
                  confidence: float = 0.95, family: Any = None,
                  methods: Sequence[str] | None = None, true_epsilon: bool = False,
                  simultaneous: bool = False) -> Audit:
    """Audit a simulated mechanism in one run with n canaries (seeded, reproducible), as the
    one :class:`~dpaudit.outcome.Audit`: the verdict by the primary rule, or Bonferroni over
    the methods for a ``simultaneous`` run; its facts :class:`GameFacts`.

    ``true_epsilon=True`` also evaluates the true curve's epsilon (can be slow for the
    backprop-clipping DP-SGD, whose true PLD has a tiny noise multiplier).
    """
    from dpaudit.estimators.one_run import audit_one_run

    n = check_count("n", n, minimum=2)
    delta = check_delta(delta)
    check_confidence(confidence)
    seed = check_count("seed", seed)
    obs = mechanism.simulate(n, as_rng(seed))
    # the null family is the claim's decision (dpaudit.claim.Claim.null_family): the claimed
    # curve's own (valid: no assumption); an explicit family is an assumption unless eps_delta
    claim = claim_of(mechanism, delta, family)
    results = audit_one_run(obs.member, obs.score, delta=delta, confidence=confidence,
                            methods=tuple(methods) if methods else available_methods(),
                            family=claim.null_family(), bits_threshold=0.0,
                            simultaneous=simultaneous, seed=seed)
    described = mechanism.describe()
    return Audit.of(results.results, claim,
                    rule="bonferroni" if simultaneous else "primary", observations=obs,
                    true_epsilon=mechanism.true_epsilon(delta) if true_epsilon else None,
                    settings={"mechanism": described, "n": n, "seed": seed, "delta": delta,
                              "confidence": confidence, "family": claim.family_name,
                              "flaw": mechanism.flaw},
                    facts=GameFacts(described, simultaneous))


def audit_multi_run(member: Any, score: Any, *, claimed_epsilon: Claim | float | None = None,
                    delta: float = 0.0, confidence: float = 0.95,
                    threshold: str | float = "bonferroni", direction: str = "both",
                    seed: int = 0, grid: str = "geometric") -> Audit:
    """The multi-run audit of per-trial (member, score) observations as an
    :class:`~dpaudit.outcome.Audit` (what ``dpaudit audit`` prints): the Clopper-Pearson lower
    bound (``estimators.multi_run``, Hypothesis Interpretation §3: the verdict's row) and the
    GDP-based estimate beside it (``multi_run_gdp``: an estimate, never the verdict), with the
    verdict against ``claimed_epsilon`` (a number: an (epsilon, ``delta``) claim)."""
    from dpaudit.estimators.multi_run import multi_run

    obs = MembershipObservations.from_arrays(member, score)
    rows = [multi_run(obs.member, obs.score, delta=delta, confidence=confidence,
                      threshold=threshold, direction=direction, estimate=e, seed=seed,
                      grid=grid) for e in ("eps_delta", "gdp")]
    return Audit.of(rows, Claim.of(claimed_epsilon, delta), observations=obs)


def multi_run_audit(audit: Any, trials: int, seed: int, *, delta: float = 0.0,
                    confidence: float = 0.95, workers: int | None = None,
                    progress: bool = True) -> tuple[MembershipObservations, AuditResult]:
    """Black-box multi-run audit on the engine (:func:`dpaudit.engine.audit.run_audit`):
    parallel trials, then ``estimators.multi_run``; a failing trial raises ValueError."""
    from dpaudit.engine.audit import run_audit

    run = run_audit(audit, trials=trials, seed=seed,
                    executor="inline" if workers == 1 else "process", workers=workers,
                    delta=delta, confidence=confidence, retries=0, progress=progress)
    if run.failures:
        f = run.failures[0]
        raise ValueError(f"trial {f.trial} failed ({len(run.failures)} of {trials} trials "
                         f"failed): {f.error}")
    return run.observations, run.result


#: settings of the demo: claimed epsilon about 1.8 at delta = 1e-5.
DEMO_SETTINGS: dict[str, Any] = {"noise_multiplier": 1.0, "sampling_rate": 0.01,
                                 "steps": 1000, "batch_size": 16, "canaries": 5000,
                                 "delta": 1e-5, "confidence": 0.95}


def demo_dpsgd(flawed: bool, seed: int) -> tuple[float, list[AuditResult]]:
    """(claimed epsilon, results) of :func:`demo_dpsgd_run`."""
    rep = demo_dpsgd_run(flawed, seed)
    assert rep.claim is not None
    return rep.claim.epsilon, list(rep.results)


def demo_dpsgd_run(flawed: bool, seed: int) -> Audit:
    """One-run white-box audit of DP-SGD (sigma = 1, q = 0.01, T = 1000, 5,000 Dirac canaries,
    optimal likelihood-ratio score), correct or with the backprop-clipping bug (|B| = 16).

    Returns the Audit (observations, results, claimed epsilon at delta = 1e-5; the
    report card plots the observations).  The correct run stays
    below the claim; the flawed run's lower bound exceeds it in one run.
    """
    s = DEMO_SETTINGS
    mech = DPSGDSimulator(noise_multiplier=s["noise_multiplier"],
                          sampling_rate=s["sampling_rate"], steps=s["steps"], score_kind="lr",
                          flaw="backprop_clipping" if flawed else None,
                          batch_size=s["batch_size"] if flawed else 1)
    return one_run_audit(mech, s["canaries"], seed, delta=s["delta"],
                         confidence=s["confidence"])
