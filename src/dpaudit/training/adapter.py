"""One training audit for every framework: what the audit needs from a training run
(:class:`TrainerAdapter`) and the one function that audits it (:func:`audit_adapter`).

The one-run game (Steinke, Nasr and Jagielski, *Privacy Auditing with One (1) Training Run*,
§3): canary i is included iff its secret bit b_i = 1, and the audit needs three things from
the run, whatever trains it:

* the canaries' secret bits (:attr:`TrainerAdapter.bits`; the plan's,
  :class:`dpaudit.canaries.CanaryPlan`, whose coordinates live in the run's flat parameter
  layout, :class:`dpaudit.canaries.Layout`);
* one score per canary for the threat audited (:meth:`TrainerAdapter.scores`: white box --
  every released step read at the canaries' coordinates, :class:`dpaudit.canaries.ReleaseReader`;
  last iterate; black box);
* the run's step facts (:meth:`TrainerAdapter.facts`, :class:`dpaudit.canaries.RunFacts`: steps,
  noise multipliers, clip norms, batch sizes, the released noise), which the one claim check
  (:func:`dpaudit.canaries.check_claim`) compares with the claim.

Two hook points give them, where a framework clips and noises per-example gradients: *plant*
(after per-example clipping, before the noise: each sampled included canary's clipped
gradient joins the clipped sum) and *read* (the released noisy sum of each step).  The
implementations:

* Opacus -- :class:`~dpaudit.training.canaries.GradientCanaries` plants in
  ``DPOptimizer.clip_and_accumulate`` and reads in the optimizer's step hook
  (``attach`` / ``hook_dp_optimizer``); :class:`OpacusAdapter` wraps it;
* JAX / jax_privacy -- the JAX loop plants inside its jitted step and reads with the same
  ``ReleaseReader`` (:mod:`dpaudit.training.jax.trainer`); a finished run (as any framework's
  run with ``member``, ``score`` and ``facts``) is :class:`RunAdapter`;
* a hand-written loop -- :class:`LoopCanaries` holds both hook points as two calls on flat
  NumPy vectors (:meth:`LoopCanaries.plant`, :meth:`LoopCanaries.release`), for any loop that
  can hand over its clipped sum and its released step.

:func:`audit_adapter` is the one audit: the claim (:meth:`dpaudit.claim.Claim.dpsgd_claim`, its
null family the claim's DP-SGD curves, decided there), the claim check, every one-run method
(:func:`dpaudit.training.common.claim_rows`) and the one result
(:func:`dpaudit.training.result.training_audit`: the :class:`~dpaudit.outcome.Audit` with
:class:`~dpaudit.training.facts.TrainingFacts`).  ``audit_training`` (Opacus, own loops) and
``audit_scores`` (JAX) are this audit on their bits and scores.

Imports neither torch nor jax.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpaudit.canaries.claims import Claim as RunClaim
from dpaudit.canaries.claims import ClaimCheck, RunFacts, check_claim
from dpaudit.canaries.plan import CanaryPlan
from dpaudit.canaries.reader import ReleaseReader
from dpaudit.claim import Claim
from dpaudit.estimators.one_run import ONE_RUN_METHODS
from dpaudit.observations import MembershipObservations
from dpaudit.randomness import stream
from dpaudit.training.common import SCORE_KINDS, THREATS, claim_rows
from dpaudit.training.facts import Framework, TrainingFacts
from dpaudit.training.result import TrainAudit, training_audit
from dpaudit.validation import (
    check_choice,
    check_confidence,
    check_count,
    check_delta,
    check_positive,
    check_probability,
)

__all__ = ["TrainerAdapter", "OpacusAdapter", "RunAdapter", "LoopCanaries", "audit_adapter",
           "audit_canaries"]


@runtime_checkable
class TrainerAdapter(Protocol):
    """What the one training audit needs from a training run (module docstring)."""

    @property
    def framework(self) -> Framework:
        """"opacus", "jax" or "own"."""
        ...

    @property
    def bits(self) -> np.ndarray:
        """The canaries' secret bits (canary i included iff True)."""
        ...

    def scores(self, threat: str, kind: str = "lr") -> np.ndarray:
        """One score per canary for ``threat`` (higher = bit 1); ``kind``: the white-box
        score ("lr" or "sum").  A threat the run cannot score is a ValueError."""
        ...

    def facts(self, dataset_size: int | None = None) -> RunFacts | None:
        """What the run did (None when unknown: no claim check)."""
        ...


class OpacusAdapter:
    """Opacus: the :class:`~dpaudit.training.canaries.GradientCanaries` attached to a
    ``DPOptimizer`` (its hook points plant and read; module docstring)."""

    framework: Framework = "opacus"

    def __init__(self, canaries: Any) -> None:
        self.canaries = canaries

    @property
    def bits(self) -> np.ndarray:
        return np.asarray(self.canaries.bits, dtype=bool)

    def scores(self, threat: str, kind: str = "lr") -> np.ndarray:
        check_choice("threat", threat, ("white_box", "last_iterate"))
        if threat == "white_box":
            return np.asarray(self.canaries.white_box_scores(kind), dtype=float)
        return np.asarray(self.canaries.last_iterate_scores(), dtype=float)

    def facts(self, dataset_size: int | None = None) -> RunFacts | None:
        return self.canaries.facts(dataset_size)


class RunAdapter:
    """A finished framework run that carries its canaries' ``member`` bits, its ``score``
    (for the threat it was trained for, ``config.threat``) and its ``facts`` -- the Opacus
    ``TrainingRun``, the language model's ``LMRun``, the JAX ``JaxTrainingRun``."""

    def __init__(self, run: Any, framework: Framework) -> None:
        self.run = run
        self.framework: Framework = framework

    @property
    def bits(self) -> np.ndarray:
        return np.asarray(self.run.member, dtype=bool)

    def scores(self, threat: str, kind: str = "lr") -> np.ndarray:
        trained = self.run.config.threat
        if threat != trained:
            raise ValueError(f"threat must be the run's ({trained!r}); got {threat!r}")
        return np.asarray(self.run.score, dtype=float)

    def facts(self, dataset_size: int | None = None) -> RunFacts | None:
        return self.run.facts


class LoopCanaries:
    """Gradient canaries in a hand-written DP-SGD loop on flat NumPy vectors (the hook points
    as two calls; module docstring).

    Each step: ``summed = clipped per-example gradients summed`` (the loop's own clipping),
    ``summed = canaries.plant(summed)`` (each sampled included canary's gradient, clipped to
    C by the same L2 rule, joins the sum), ``released = summed + noise``, then
    ``canaries.release(released, noise_multiplier=sigma, batch_size=|B|)`` reads the
    released step.  Every vector is the flat parameter vector (length ``dimension``), in the
    units of the gradients (the readings are divided by C).

    Args:
      plan: the canaries (:class:`~dpaudit.canaries.CanaryPlan`, e.g.
        :func:`~dpaudit.canaries.dirac_plan`); its coordinates index the flat vector.
      dimension: the length of the flat parameter vector.
      max_grad_norm: C, the clip norm of the loop.
      seed: the canaries' own Poisson sampling (the ``canary_sampling`` stream).
    """

    framework: Framework = "own"

    def __init__(self, plan: CanaryPlan, *, dimension: int, max_grad_norm: float,
                 seed: int = 0) -> None:
        self.plan = plan
        self.dimension = check_count("dimension", dimension, minimum=1)
        self.clip = check_positive("max_grad_norm", max_grad_norm)
        if int(np.max(plan.plant_coords)) >= self.dimension or \
                int(np.max(plan.read_coords)) >= self.dimension:
            raise ValueError(f"plan coordinates must be < dimension ({self.dimension})")
        self._rng = stream(seed, "canary_sampling")
        self._reader = ReleaseReader(plan, max_grad_norm=self.clip)
        v = np.asarray(plan.plant_values, dtype=float)
        norm = np.sqrt((v * v).sum(axis=1, keepdims=True))
        # each canary's gradient clipped to C (the plan's values are in units of C)
        self._clipped = v * np.minimum(1.0, 1.0 / np.where(norm > 0, norm, 1.0)) * self.clip
        self._batch_sizes: list[int] = []
        self._sigmas: list[float] = []

    @property
    def bits(self) -> np.ndarray:
        return np.asarray(self.plan.bits, dtype=bool)

    def _flat(self, name: str, x: np.ndarray) -> np.ndarray:
        a = np.asarray(x, dtype=float)
        if a.shape != (self.dimension,):
            raise ValueError(f"{name} must be a flat vector of length {self.dimension}; got "
                             f"shape {a.shape}")
        return a

    def plant(self, clipped_sum: np.ndarray) -> np.ndarray:
        """Hook point 1: the clipped sum with this step's sampled included canaries' clipped
        gradients added (each included canary sampled with probability q, the plan's)."""
        out = self._flat("clipped_sum", clipped_sum).copy()
        sampled = (self._rng.random(self.plan.n) < self.plan.sampling_rate) & self.bits
        np.add.at(out, self.plan.plant_coords[sampled].ravel(),
                  self._clipped[sampled].ravel())
        return out

    def release(self, released: np.ndarray, *, noise_multiplier: float,
                batch_size: int) -> None:
        """Hook point 2: read one released noisy sum (the step's update before the learning
        rate), its noise multiplier and its batch size (real examples)."""
        flat = self._flat("released", released)
        self._reader.add_flat(flat / self.clip, float(noise_multiplier))
        self._batch_sizes.append(check_count("batch_size", batch_size))
        self._sigmas.append(float(noise_multiplier))

    @property
    def steps(self) -> int:
        return self._reader.steps

    def scores(self, threat: str, kind: str = "lr") -> np.ndarray:
        check_choice("threat", threat, ("white_box",))
        return self._reader.scores(kind)

    def facts(self, dataset_size: int | None = None) -> RunFacts:
        return RunFacts(steps=self.steps, noise_multipliers=tuple(dict.fromkeys(self._sigmas)),
                        max_grad_norms=(self.clip,),
                        batch_sizes=np.asarray(self._batch_sizes, dtype=np.int64),
                        dataset_size=dataset_size, loss_reduction="sum",
                        **self._reader.noise_record())


def audit_canaries(member: Any, score: Any, claim: Claim, facts: TrainingFacts, *,
                   confidence: float, methods: Sequence[str], seed: int,
                   settings: dict[str, Any]) -> TrainAudit:
    """The one training audit of canaries' bits and scores: every one-run method under the
    claim's null family and the run's own any-mechanism epsilon
    (:func:`~dpaudit.training.common.claim_rows`), as the one result (``facts`` already
    holds the claim checks)."""
    rows, any_eps = claim_rows(member, score, claim, confidence=confidence, methods=methods,
                               seed=seed)
    return training_audit(rows, claim, facts,
                          observations=MembershipObservations.from_arrays(member, score),
                          settings=settings, any_mechanism_epsilon=any_eps)


def audit_adapter(adapter: TrainerAdapter, *, noise_multiplier: float, sampling_rate: float,
                  steps: int, max_grad_norm: float | None = None, threat: str = "white_box",
                  kind: str = "lr", delta: float = 1e-5, confidence: float = 0.95,
                  methods: Sequence[str] = ONE_RUN_METHODS, seed: int = 0,
                  dataset_size: int | None = None, family: Any = None,
                  extra_checks: Sequence[ClaimCheck] = ()) -> TrainAudit:
    """Audit any training run through its :class:`TrainerAdapter` against the DP-SGD claim
    (``noise_multiplier``, ``sampling_rate``, ``steps``[, ``max_grad_norm``]): the claim
    check on the run's facts (plus ``extra_checks``, e.g. a framework's own), the scores for
    ``threat``, every one-run method under the claim's family, one verdict.  ``family``: an
    explicit null family (default: the claim's DP-SGD curves; anything but "eps_delta" is an
    assumption)."""
    if not isinstance(adapter, TrainerAdapter):
        raise ValueError("adapter must be a TrainerAdapter (framework, bits, scores(threat), "
                         "facts())")
    check_positive("noise_multiplier", noise_multiplier)
    check_probability("sampling_rate", sampling_rate, open_low=True)
    check_count("steps", steps, minimum=1)
    if max_grad_norm is not None:
        check_positive("max_grad_norm", max_grad_norm)
    check_choice("threat", threat, THREATS)
    check_choice("kind", kind, SCORE_KINDS)
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    claim = Claim.dpsgd_claim(noise_multiplier, sampling_rate, steps, delta, family=family)
    run_facts = adapter.facts(dataset_size)
    checks = [] if run_facts is None else list(check_claim(
        RunClaim(noise_multiplier, sampling_rate, steps, max_grad_norm), run_facts))
    checks = sorted([*checks, *extra_checks], key=lambda c: c.ok)
    tf = TrainingFacts(adapter.framework, threat, claim.delta, confidence,
                       checks=tuple(checks), run_facts=run_facts)
    settings = {"family": claim.family_name, "noise_multiplier": noise_multiplier,
                "sampling_rate": sampling_rate, "steps": steps, "threat": threat,
                "max_grad_norm": max_grad_norm, "bits_decoder": "median split"}
    return audit_canaries(adapter.bits, adapter.scores(threat, kind), claim, tf,
                          confidence=confidence, methods=methods, seed=seed,
                          settings=settings)
