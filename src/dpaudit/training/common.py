"""What every audited training run shares, whatever the framework (Opacus or JAX).

Imports neither torch nor jax, so both :mod:`dpaudit.training` (PyTorch + Opacus) and
:mod:`dpaudit.training.jax` (jax_privacy) build on it:

* :class:`TrainingSettings` -- the settings of one audited DP-SGD run with canaries that both
  paths take (canary kind, threat, number of canaries, the claim's noise multiplier sigma,
  sampling rate q, steps T and clip norm C, learning rate, flaw, seed, hidden width, white-box
  score, input-canary kind, gradient-canary scale) and their checks.  The framework's config
  (``TrainingConfig``, ``JaxTrainingConfig``) adds its own fields and names its flaws
  (``FLAWS``).
* :func:`claim_rows` -- the rows of a training audit under the claim's null family, and the
  run's own any-mechanism epsilon (the outcome is the one :class:`dpaudit.outcome.Audit`, its
  facts :class:`dpaudit.training.facts.TrainingFacts`).
* :func:`load_digits_split` -- scikit-learn's digits, split train / test, as NumPy arrays.

The one-run game (Steinke, Nasr and Jagielski, *Privacy Auditing with One (1) Training Run*):
canary i is included iff its secret bit b_i = 1; gradient canaries are read white box (every
step's noisy sum) or last iterate (final parameters), input canaries black box (their loss).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from dpaudit.canaries.plan import SENTINEL
from dpaudit.validation import check_choice, check_count, check_positive, check_probability

__all__ = ["CANARY_TYPES", "THREATS", "SCORE_KINDS", "INPUT_KINDS", "EXAMPLE_RESERVED",
           "TrainingSettings", "claim_rows", "load_digits_split", "WRONG_CLIP_FACTOR",
           "BRANCH_WIDTH_PER_CANARY", "SKIP_EVERY", "ZERO_EVERY", "noise_added"]

#: the ``wrong_clip_noise`` flaw of every framework: clipped to this many C, noise for C
WRONG_CLIP_FACTOR = 10.0
#: a canary branch's width per planned canary (``training.branch``, ``training.jax.model``)
BRANCH_WIDTH_PER_CANARY = 3
#: the ``skipped_noise`` flaw drops the noise of every SKIP_EVERY-th step, ``zero_steps`` sets
#: sigma to 0 on every ZERO_EVERY-th step (:func:`noise_added`)
SKIP_EVERY = 2
ZERO_EVERY = 4


def noise_added(flaw: str | None, step: int) -> bool:
    """Whether the (0-based) ``step`` of a run with ``flaw`` adds its noise: the schedule of
    the ``skipped_noise`` and ``zero_steps`` flaws in every framework (the Opacus optimizer,
    the ``torch.func`` loop of the study, the jax_privacy step); steps 1, 3, ... and 3, 7, ...
    go without."""
    if flaw == "skipped_noise":
        return step % SKIP_EVERY != SKIP_EVERY - 1
    if flaw == "zero_steps":
        return step % ZERO_EVERY != ZERO_EVERY - 1
    return True

CANARY_TYPES = ("gradient", "input")
THREATS = ("white_box", "last_iterate", "black_box")
#: white-box scores: "lr" (log-likelihood ratio of the step readings) or "sum"
SCORE_KINDS = ("lr", "sum")
#: input canaries (black box): canary examples on reserved input features that only they move
#: (the default: the highest valid black-box bound), a training image with a wrong label, a
#: random label, or a noise image
INPUT_KINDS = ("reserved", "flip", "random_label", "ood")
#: reserved input features of ``input_kind="reserved"`` when none are set: one per canary up
#: to this many, random sign patterns over them beyond (docs/training.md, "The black box")
EXAMPLE_RESERVED = 2048


@dataclass(frozen=True)
class TrainingSettings:
    """Settings shared by every framework's audited training run (module docstring).

    ``threat`` "white_box" / "last_iterate" need ``canary="gradient"``; "black_box" needs
    ``canary="input"`` (``input_kind`` reserved -- canary examples on reserved input features,
    the default -- or flip / random_label / ood).  ``score`` is the white-box
    score ("lr" or "sum").  ``canary_scale``: gradient-canary norm in units of the clip norm.
    ``sentinel``: the share of each gradient canary's direction on a coordinate of another
    tensor (:func:`dpaudit.canaries.with_sentinels`: per-tensor clipping and unclipped
    biases become visible to Dirac canaries; 0: pure Dirac canaries).
    ``flawed``: one of the framework's ``FLAWS`` or None.
    """

    #: the framework's flaws (set by the subclass)
    FLAWS: ClassVar[tuple[str, ...]] = ()

    canary: str = "gradient"
    threat: str = "white_box"
    canaries: int = 1000
    noise_multiplier: float = 1.0
    sampling_rate: float = 0.05
    steps: int = 300
    max_grad_norm: float = 1.0
    learning_rate: float = 2.0
    flawed: str | None = None
    seed: int = 0
    hidden: int = 256
    score: str = "lr"
    input_kind: str = "reserved"
    canary_scale: float = 1000.0
    sentinel: float = SENTINEL

    def __post_init__(self) -> None:
        check_choice("canary", self.canary, CANARY_TYPES)
        check_choice("threat", self.threat, THREATS)
        check_count("canaries", self.canaries, minimum=2)
        check_positive("noise_multiplier", self.noise_multiplier)
        check_probability("sampling_rate", self.sampling_rate, open_low=True)
        check_count("steps", self.steps, minimum=1)
        check_positive("max_grad_norm", self.max_grad_norm)
        check_positive("learning_rate", self.learning_rate)
        if self.flawed is not None:
            check_choice("flawed", self.flawed, self.FLAWS)
        check_count("seed", self.seed)
        check_count("hidden", self.hidden, minimum=1)
        check_choice("score", self.score, SCORE_KINDS)
        check_choice("input_kind", self.input_kind, INPUT_KINDS)
        if not self.canary_scale >= 1.0:
            raise ValueError(f"canary_scale must be >= 1; got {self.canary_scale!r}")
        check_probability("sentinel", self.sentinel, open_high=True)
        if self.canary == "gradient" and self.threat == "black_box":
            raise ValueError("threat 'black_box' needs canary 'input' (gradient canaries are "
                             "audited white_box or last_iterate)")
        if self.canary == "input" and self.threat != "black_box":
            raise ValueError(f"canary 'input' is audited with threat 'black_box'; got "
                             f"{self.threat!r}")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def claim_rows(member: Any, score: Any, claim: Any, *, confidence: float,
               methods: Any, seed: int) -> tuple[list[Any], float | None]:
    """The rows of a training audit (Opacus or JAX) under the claim's null family
    (:meth:`dpaudit.claim.Claim.null_family`), and -- when that family is the claim's own
    DP-SGD curves, whose numbers bound only runs inside the family -- the run's own epsilon
    valid for ANY mechanism (``tight`` under the (epsilon, delta) null at the same confidence;
    a flawed run lies outside the family).  None when an explicit family was asked for."""
    from dpaudit.estimators.one_run import audit_one_run

    m, s = np.asarray(member), np.asarray(score)
    rows = list(audit_one_run(m, s, delta=claim.delta, confidence=confidence,
                              methods=tuple(methods), family=claim.null_family(),
                              seed=seed).results)
    any_eps = None
    if claim.family is None:
        any_eps = float(audit_one_run(m, s, delta=claim.delta, confidence=confidence,
                                      methods=("tight",), family="eps_delta",
                                      seed=seed)[0].epsilon)
    return rows, any_eps


def load_digits_split(seed: int = 0, *, test_fraction: float = 0.25
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """scikit-learn's digits, split train/test (stratified, seeded), pixels in [0, 1]:
    ``(x_train, y_train, x_test, y_test)`` with float32 pixels (N, 64) and integer labels."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    seed = check_count("seed", seed)
    check_probability("test_fraction", test_fraction, open_low=True)
    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=test_fraction, random_state=seed,
                                          stratify=y)
    return xtr, ytr, xte, yte
