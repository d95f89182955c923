"""What a training audit knows beyond its rows and verdict: :class:`TrainingFacts`, the one
``facts`` of a training :class:`~dpaudit.outcome.Audit` for every framework.

One class for Opacus (``train-audit``, the language-model fine-tuning audit), JAX /
jax_privacy (``train-audit --framework jax``) and hand-written loops
(:func:`dpaudit.training.audit.audit_training`, :func:`dpaudit.training.jax.audit.audit_scores`,
any :class:`~dpaudit.training.adapter.TrainerAdapter`): the framework, the run (None for a
user's own loop), the deterministic claim checks (:func:`dpaudit.canaries.check_claim`), the
run's step facts (:class:`~dpaudit.canaries.RunFacts`), the accountants' epsilons beside the
claim, the threat, delta and confidence.  The verdict is not here: it is the Audit's, computed
once (:meth:`dpaudit.outcome.Audit.of`), a configuration error that shows the run did less than
the claim included (:func:`dpaudit.claim.falsified_by`).

Imports neither torch nor jax.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dpaudit.canaries.claims import ClaimCheck, RunFacts

__all__ = ["FRAMEWORKS", "Framework", "TrainingFacts"]

#: the training paths: Opacus (``train-audit``), jax_privacy, a user's own loop
Framework = Literal["opacus", "jax", "own"]
FRAMEWORKS: tuple[Framework, ...] = ("opacus", "jax", "own")


@dataclass(frozen=True, eq=False)
class TrainingFacts:
    """A training audit's facts (module docstring).

    Attributes:
      framework: "opacus", "jax" or "own" (a user's loop audited from its canaries' scores).
      threat: "white_box", "last_iterate" or "black_box".
      delta, confidence: the audit's.
      run: the framework's run (``TrainingRun``, ``JaxTrainingRun``, ``LMRun``), None for a
        user's own loop.
      checks: the deterministic claim checks, failed first.
      run_facts: what the run did (steps, sigma, C, batch sizes), when known.
      opacus_epsilon: the claim's epsilon by Opacus's PRV accountant code (Opacus and own
        PyTorch loops).
      dpsgd_curve_epsilon: dpaudit's ``dpsgd_curve`` epsilon of the same composition (JAX,
        whose claim is jax_privacy's DP event).
      accountant_epsilon, accountant_note: the user's accountant's epsilon, or why it gave none.
      compared: white-box score name -> the verdict method's bound with that score (JAX).
    """

    framework: Framework
    threat: str
    delta: float
    confidence: float
    run: Any = None
    checks: tuple[ClaimCheck, ...] = ()
    run_facts: RunFacts | None = None
    opacus_epsilon: float | None = None
    dpsgd_curve_epsilon: float | None = None
    accountant_epsilon: float | None = None
    accountant_note: str | None = None
    compared: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from dpaudit.validation import check_choice

        check_choice("framework", self.framework, FRAMEWORKS)
        object.__setattr__(self, "checks", tuple(self.checks))
        object.__setattr__(self, "compared", dict(self.compared))

    @property
    def kind(self) -> str:
        return "training"

    @property
    def claim_checks(self) -> tuple[ClaimCheck, ...]:
        """:attr:`checks` (the JAX audit's former name)."""
        return self.checks

    @property
    def configuration_errors(self) -> list[str]:
        """The claim checks that failed, in words (empty when the claim matches the run)."""
        return [c.message for c in self.checks if not c.ok]

    @property
    def weaker_run(self) -> list[str]:
        """The failed claim checks that show the run gave *less* privacy than the claim (less
        noise, more steps, a larger sampling rate, released noise below the claim's) -- each
        refutes the claim on its own (:func:`dpaudit.claim.falsified_by`, the one rule)."""
        from dpaudit.claim import falsified_by

        return list(falsified_by(self.checks))
