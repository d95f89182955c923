"""One audited DP-SGD training run with Opacus: plant canaries, train, collect scores.

The loop is plain Opacus: a ``GradSampleModule`` computes per-sample gradients, a
``DPOptimizer`` (or a flawed subclass, :mod:`.flaws`) clips, noises and scales them, and a
``DPDataLoader`` draws Poisson batches at exactly rate q.  (``PrivacyEngine.make_private``
wires the same three objects but rounds q to 1 / len(data_loader); here the pieces are built
directly so that q is the requested one.)  Canaries enter through
:class:`~dpaudit.training.canaries.GradientCanaries` (white box / last iterate) or as extra
training examples (:class:`~dpaudit.training.canaries.InputCanaries`, black box).
"""

from __future__ import annotations

import copy
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import torch
from torch.nn import functional as F

from dpaudit.canaries import (
    DEFAULT_SHAPES,
    Layout,
    RunFacts,
    dirac_plan,
    least_active,
    plan_gradient_canaries,
    with_sentinels,
)
from dpaudit.randomness import seed_sequence
from dpaudit.training.branch import CanaryBranch, needs_canary_branch
from dpaudit.training.canaries import (
    GradientCanaries,
    InputCanaries,
    coordinate_activity,
    draw_bits,
    make_input_canaries,
)
from dpaudit.training.choices import SHAPE_SETS  # the one list (torch-free)
from dpaudit.training.common import (
    CANARY_TYPES,
    EXAMPLE_RESERVED,
    SCORE_KINDS,
    THREATS,
    TrainingSettings,
)
from dpaudit.training.data import DATASETS, Dataset, load_data
from dpaudit.training.examples import ExampleCanaries
from dpaudit.training.flaws import (
    FLAWS,
    LOWERED_SIGMA_FACTOR,
    STEP_UNDERCOUNT,
    optimizer_class,
)
from dpaudit.training.models import (
    MODELS,
    accuracy,
    count_coordinates,
    make_model,
    trainable_parameters,
)
from dpaudit.training.scores import loss_drop_scores
from dpaudit.validation import check_choice, check_count

__all__ = ["TrainingConfig", "TrainingRun", "train_with_canaries", "dp_steps", "CANARY_TYPES",
           "THREATS", "SCORE_KINDS", "SHAPE_SETS"]

#: ``shapes`` of planted gradient canaries: one shape, or "mixed" (dpaudit.canaries'
#: DEFAULT_SHAPES, the own-loop default: 3 tensors x 2 coordinates each)

#: the value a reserved canary example carries on its reserved features (its input norm;
#: ``input_kind="reserved"``, docs/training.md "The black box")
EXAMPLE_VALUE = 30.0


@dataclass(frozen=True)
class TrainingConfig(TrainingSettings):
    """Settings of one audited training run (digits; see :func:`train_with_canaries`): the
    settings every framework shares (:class:`~dpaudit.training.common.TrainingSettings`:
    canary, threat, canaries, sigma, q, T, C, ...) plus the model, threads, data set,
    reserved features, canary shapes, the claimed steps and ``canary_branch`` (the model
    wrapped in a :class:`~dpaudit.training.branch.CanaryBranch` sized for the canaries:
    silent coordinates for gradient canaries on any model).  ``canary_branch=None`` (the
    default) decides per run (:func:`config_needs_canary_branch`): gradient canaries on a model with
    fewer silent coordinates than canaries -- a dense model such as the CNN -- are planted on
    the branch; the run's config records the decision.
    """

    FLAWS: ClassVar[tuple[str, ...]] = FLAWS

    model: str = "mlp"
    threads: int = 1
    data: str = "digits"
    reserved: int = 0
    shapes: str = "dirac"
    claimed_steps: int | None = None
    canary_branch: bool | None = None

    def __post_init__(self) -> None:
        check_choice("model", self.model, MODELS)
        super().__post_init__()
        check_count("threads", self.threads, minimum=1)
        check_choice("data", self.data, DATASETS)
        check_count("reserved", self.reserved)
        check_choice("shapes", self.shapes, SHAPE_SETS)
        if self.claimed_steps is not None:
            check_count("claimed_steps", self.claimed_steps, minimum=1)
        if self.model == "cnn" and (self.data != "digits" or self.input_reserved):
            raise ValueError("model 'cnn' needs data 'digits' (8x8 images) and no reserved "
                             "features (black box: input_kind flip, random_label or ood)")
        if self.flawed == "non_private_group" and self.model != "mlp":
            raise ValueError("flawed 'non_private_group' is defined for model 'mlp' (its "
                             "hidden layer bypasses the DP optimizer)")
        if self.canary_branch and (self.canary != "gradient"
                                   or self.flawed == "non_private_group"):
            raise ValueError("canary_branch applies to gradient canaries (not input "
                             "canaries) and not to flawed 'non_private_group'")

    @property
    def input_reserved(self) -> int:
        """The reserved input features of the run's model: ``reserved``, or -- for reserved
        canary examples (``input_kind="reserved"``) left at 0 -- min(canaries,
        EXAMPLE_RESERVED) (one-hot canaries up to that many, random sign patterns above,
        :mod:`dpaudit.canaries.examples`)."""
        if self.reserved or not (self.canary == "input" and self.input_kind == "reserved"):
            return self.reserved
        return min(self.canaries, EXAMPLE_RESERVED)

    def claim_steps(self, steps_run: int) -> int:
        """The steps the claim is for: ``claimed_steps``, or the steps run (divided by
        STEP_UNDERCOUNT under the ``too_few_steps`` flaw)."""
        if self.claimed_steps is not None:
            return self.claimed_steps
        if self.flawed == "too_few_steps":
            return max(1, steps_run // STEP_UNDERCOUNT)
        return steps_run


@dataclass(frozen=True, eq=False)
class TrainingRun:
    """What one run produced: the canaries' truth bits and scores, and the training facts."""

    member: np.ndarray
    score: np.ndarray
    steps: int
    expected_batch_size: int
    test_accuracy: float
    seconds: float
    config: TrainingConfig
    facts: RunFacts | None = None
    accountant: object | None = None


def _seeds(seed: int) -> np.random.SeedSequence:
    return seed_sequence(seed, "training")


def config_needs_canary_branch(cfg: TrainingConfig, model: torch.nn.Module, x: torch.Tensor,
                               y: torch.Tensor) -> bool:
    """``canary_branch=None``'s decision for a run: gradient canaries (not under the
    ``non_private_group`` flaw, whose group bypasses the DP optimizer) on a model that
    :func:`~dpaudit.training.branch.needs_canary_branch` finds short of silent coordinates."""
    if cfg.canary != "gradient" or cfg.flawed == "non_private_group":
        return False
    if count_coordinates(model) == 0:
        return False  # refused with its own message by the caller
    return needs_canary_branch(model, x, y, cfg.canaries, max_grad_norm=cfg.max_grad_norm,
                               seed=cfg.seed)


def train_with_canaries(config: TrainingConfig, data: Dataset | None = None, *,
                        on_step: Callable[[int], None] | None = None) -> TrainingRun:
    """Train ``config.model`` on digits with DP-SGD (Opacus) and canaries; return the scores.

    Randomness: the model init, canary placement / bits / sampling, Opacus's noise generator
    and Poisson sampler are all derived from ``config.seed``.
    """
    from opacus import GradSampleModule
    from opacus.accountants import PRVAccountant
    from opacus.data_loader import DPDataLoader

    cfg = config
    start = time.perf_counter()
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    try:
        ss = _seeds(cfg.seed).spawn(4)
        rng_place, rng_bits, rng_input = (np.random.default_rng(s) for s in ss[:3])
        torch_seeds = ss[3].generate_state(3)
        reserved = cfg.input_reserved
        data = data if data is not None else load_data(cfg.data, cfg.seed,
                                                       image=cfg.model == "cnn",
                                                       reserved=reserved)
        model = make_model(cfg.model, seed=int(torch_seeds[0]), hidden=cfg.hidden,
                           num_classes=data.num_classes,
                           in_features=int(np.prod(data.input_shape)) - reserved,
                           reserved=reserved)
        x, y = data.x_train, data.y_train
        if cfg.canary_branch is None:
            cfg = replace(cfg, canary_branch=config_needs_canary_branch(cfg, model, x, y))
        if cfg.canary_branch:
            model = CanaryBranch(model, cfg.canaries)
        if count_coordinates(model) == 0:
            raise ValueError("model has no trainable parameters")
        planter: GradientCanaries | None = None
        inputs: InputCanaries | ExampleCanaries | None = None
        plan = None
        if cfg.canary == "gradient":
            act = coordinate_activity(model, x, y, cfg.max_grad_norm)
            layout = Layout.from_sizes([p.numel() for p in trainable_parameters(model)])
            if cfg.shapes == "dirac":  # choose_coordinates's coordinates, its bits, a sentinel
                coords = least_active(act, cfg.canaries, rng_place)
                bits = draw_bits(cfg.canaries, rng_bits)
                plan = with_sentinels(dirac_plan(coords, bits, sampling_rate=cfg.sampling_rate,
                                                 scale=cfg.canary_scale),
                                      layout, act, rng_place, cfg.sentinel)
            else:
                plan = plan_gradient_canaries(
                    layout, act, cfg.canaries, sampling_rate=cfg.sampling_rate, rng=rng_place,
                    shapes=DEFAULT_SHAPES if cfg.shapes == "mixed" else cfg.shapes,
                    scale=cfg.canary_scale, sentinel=cfg.sentinel)
                bits = plan.bits
        else:
            if cfg.input_kind == "reserved":  # canary examples on the reserved branch
                inputs = ExampleCanaries.for_model(
                    model, cfg.canaries, sampling_rate=cfg.sampling_rate,
                    max_grad_norm=cfg.max_grad_norm, num_classes=data.num_classes,
                    seed=cfg.seed, value=EXAMPLE_VALUE)
            else:
                inputs = make_input_canaries(x, y, cfg.canaries, kind=cfg.input_kind,
                                             rng=rng_input, num_classes=data.num_classes)
            xin, yin = inputs.included()
            x, y = torch.cat([x, xin]), torch.cat([y, yin])
            bits = inputs.bits
        initial = copy.deepcopy(model)
        gsm = GradSampleModule(model, loss_reduction="mean")
        params = trainable_parameters(model)
        if cfg.flawed == "non_private_group":
            seq: Any = model  # an nn.Sequential, or a ReservedModel with .main
            last = seq.main[-1] if reserved else seq[-1]
            head = set(map(id, last.parameters()))
            dp_params = [p for p in params if id(p) in head]
            plain = torch.optim.SGD([p for p in params if id(p) not in head],
                                    lr=cfg.learning_rate)
        else:
            dp_params, plain = params, None
        expected_b = max(1, int(x.shape[0] * cfg.sampling_rate))
        noise_gen = torch.Generator().manual_seed(int(torch_seeds[1]))
        opt = optimizer_class(cfg.flawed)(
            torch.optim.SGD(dp_params, lr=cfg.learning_rate),
            noise_multiplier=cfg.noise_multiplier, max_grad_norm=cfg.max_grad_norm,
            expected_batch_size=expected_b, loss_reduction="mean", generator=noise_gen)
        if cfg.flawed == "lowered_sigma":  # set after the optimizer is built
            opt.noise_multiplier = cfg.noise_multiplier / LOWERED_SIGMA_FACTOR
        accountant = PRVAccountant()
        opt.attach_step_hook(accountant.get_optimizer_hook_fn(sample_rate=cfg.sampling_rate))
        if plan is not None:
            planter = GradientCanaries(params, sampling_rate=cfg.sampling_rate,
                                       max_grad_norm=cfg.max_grad_norm,
                                       scale=cfg.canary_scale, seed=int(torch_seeds[2]),
                                       plan=plan)
            planter.attach(opt)
        loader = DPDataLoader(torch.utils.data.TensorDataset(x, y),
                              sample_rate=cfg.sampling_rate,
                              generator=torch.Generator().manual_seed(int(torch_seeds[2])))
        gsm.train()

        def backward(batch: Any) -> None:
            xb, yb = batch
            F.cross_entropy(gsm(xb), yb).backward()

        batch_sizes, sigmas = dp_steps(loader, cfg.steps, backward, opt, gsm, dp_params,
                                       plain=plain, on_step=on_step)
        step = len(batch_sizes)
        model.eval()
        acc = accuracy(model, data.x_test, data.y_test)
        if planter is not None:
            score = (planter.white_box_scores(cfg.score) if cfg.threat == "white_box"
                     else planter.last_iterate_scores())
        else:
            initial.eval()
            assert inputs is not None  # black box: the final model's losses on the canaries
            score = (inputs.black_box_scores(initial, model)
                     if isinstance(inputs, ExampleCanaries)
                     else loss_drop_scores(initial, model, inputs))
    finally:
        torch.set_num_threads(prev_threads)
    noise = {} if planter is None else planter.noise_record()
    facts = RunFacts(steps=step, noise_multipliers=tuple(dict.fromkeys(sigmas)),
                     max_grad_norms=(float(opt.max_grad_norm),),
                     batch_sizes=np.asarray(batch_sizes, dtype=np.int64),
                     expected_batch_size=float(expected_b), dataset_size=int(x.shape[0]),
                     loss_reduction="mean",
                     **{**noise, "step_noise_multipliers": np.asarray(sigmas, dtype=float)})
    return TrainingRun(member=np.asarray(bits, dtype=bool), score=np.asarray(score, float),
                       steps=step, expected_batch_size=expected_b, test_accuracy=acc,
                       seconds=time.perf_counter() - start, config=cfg, facts=facts,
                       accountant=accountant)


def dp_steps(loader: Any, steps: int, backward: Callable[[Any], None], opt: Any, gsm: Any,
             dp_params: Sequence[Any], *, plain: Any = None,
             on_step: Callable[[int], None] | None = None) -> tuple[list[int], list[float]]:
    """The Opacus DP-SGD step loop every trainer of this package runs: ``steps`` steps over
    the Poisson ``loader`` (restarted as needed), ``backward(batch)`` on a non-empty batch,
    zero per-sample gradients on an empty one (Opacus still adds the noise: a normal loop
    releases it), the DP optimizer's step (and ``plain``'s, the optimizer of parameters
    outside it, if any).  Returns the batch sizes and each step's noise multiplier as read
    from the optimizer (the run's facts)."""
    batch_sizes: list[int] = []
    sigmas: list[float] = []
    step = 0
    # Opacus's per-sample-gradient hooks fire on the first layer, whose inputs need no
    # gradient; torch warns about that once per run (harmless).
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Full backward hook is firing",
                                category=UserWarning)
        while step < steps:
            for batch in loader:
                n = int(batch[0].shape[0])
                if n:
                    backward(batch)
                else:
                    for p in dp_params:
                        p.grad_sample = torch.zeros((0, *p.shape), dtype=p.dtype,
                                                    device=p.device)
                batch_sizes.append(n)
                sigmas.append(float(opt.noise_multiplier))
                opt.step()
                if plain is not None:
                    plain.step()
                gsm.zero_grad(set_to_none=True)
                opt.zero_grad(set_to_none=True)
                step += 1
                if on_step is not None:
                    on_step(step)
                if step >= steps:
                    break
    return batch_sizes, sigmas
