"""One audited JAX training run through jax_privacy's own components.

The loop is jax_privacy's ``DPExecutionPlan`` pattern (``jax_privacy.experimental
.execution_plan``): the plan's batch selection strategy draws the batches, ``plan.clipped_grad``
(``jax_privacy.clipping.clipped_grad``) computes the sum of per-example clipped gradients, and
the plan's ``noise_addition_transform`` (a jax_privacy privatiser: i.i.d. Gaussian for DP-SGD,
correlated ``C^{-1} z`` for BandMF) adds the noise; SGD then steps on the noisy sum divided by
the expected batch size.  Batches are padded to a multiple of 32 with jax_privacy's
``pad_to_multiple_of`` and the padding is zeroed by ``is_padding_example``, so the step
compiles once per padded size.

Canaries are examples of the data set, so they go through the same batch selection, clipping
and noise as real data:

* gradient canaries (white box, last iterate): canary i's loss is ``b_i * K * w1[c(i)]`` with
  c(i) a reserved coordinate (:func:`.model.reserved_coordinates`) and K = 1000 C, so its
  gradient is a Dirac of norm K, which ``clipped_grad`` brings to the unit vector e_c(i);
  with ``sentinel`` s > 0 (the default) a share s of that direction sits on a coordinate of
  ``b1``, ``w2`` or ``b2`` (:func:`dpaudit.canaries.with_sentinels`: per-tensor clipping and
  unclipped biases then move its reading), the loss ``b_i * C * <plant_values,
  theta[plant_coords]>`` over the flat parameter vector as below;
* input canaries (black box): mislabeled digits (or noise images), loss ``b_i * CE``.

With ``canary_branch=True`` the gradient canaries are the canary core's spread canaries with
sentinels (:func:`dpaudit.canaries.plan_gradient_canaries`) on a gated-off canary branch
(:mod:`.model`), their loss ``b_i * C * <plant_values, theta[plant_coords]>`` over the flat
parameter vector theta (:data:`.model.ORDER`), read along their planted directions.  The
flaws (:mod:`.flaws`) change the compiled step: ``clipped_grad`` per tensor, at 10 C, or
for some parameters only; the privatiser's noise dropped on some steps.

A canary whose bit is 0 stays in the data set with a zero loss: zero-out adjacency, the
relation of the plan's DP event (:mod:`.plan`), and the sampler sees the same data set size
whatever the bits.  Released on every canary coordinate is the noisy sum of the step in
canary units (x_t = S_t + noise, :mod:`dpaudit.canaries.correlated`); the (T, n) transcript
is scored white box (whitened and naive), the final parameters last iterate, and the canaries'
loss drop black box.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.canaries import (
    CanaryPlan,
    Layout,
    ReleaseReader,
    RunFacts,
    black_box_scores,
    correlated,
    dirac_plan,
    draw_bits,
    last_iterate_scores,
    plan_gradient_canaries,
    with_sentinels,
)
from dpaudit.randomness import seed_sequence
from dpaudit.training.common import (
    BRANCH_WIDTH_PER_CANARY,
    CANARY_TYPES,
    INPUT_KINDS,
    SCORE_KINDS,
    THREATS,
    TrainingSettings,
)
from dpaudit.training.jax.flaws import (
    FLAWS,
    MISMATCH_BANDS,
    NOISE_FLAWS,
    UNCLIPPED_FLAWS,
    WRONG_CLIP_FACTOR,
    noise_added,
    unclipped_names,
)
from dpaudit.training.jax.model import (
    ORDER,
    PIXELS,
    DigitsArrays,
    accuracy,
    example_losses,
    init_mlp,
    load_digits_arrays,
    losses_jit,
    reserved_coordinates,
    silent_coordinates,
)
from dpaudit.training.jax.plan import MECHANISMS, make_plan, strategy_for
from dpaudit.validation import check_choice, check_count

__all__ = ["JaxTrainingConfig", "JaxTrainingRun", "train_jax_with_canaries", "CANARY_TYPES",
           "THREATS", "SCORE_KINDS", "INPUT_KINDS", "partition_groups"]

_PAD = 32


@dataclass(frozen=True)
class JaxTrainingConfig(TrainingSettings):
    """Settings of one audited JAX run (digits MLP; see :func:`train_jax_with_canaries`): the
    settings every framework shares (:class:`~dpaudit.training.common.TrainingSettings`)
    plus the mechanism.

    ``mechanism`` "dpsgd" or "bandmf" (``bands`` >= 2 bands, cyclic Poisson sampling);
    ``sampling_rate`` is jax_privacy's ``sampling_prob`` (per eligible step);
    ``score`` the white-box score: "lr" (whitened log-likelihood ratio) or "sum".
    ``canary_branch`` (gradient canaries): the MLP, without reserved inputs, gets a gated-off
    canary branch of width 3 x canaries (:mod:`.model`; the recipe for a user's dense model)
    and the canaries are the canary core's default spread canaries with sentinels
    (:func:`dpaudit.canaries.plan_gradient_canaries`) on the branch's silent coordinates,
    instead of Dirac canaries on w1's reserved rows.
    """

    FLAWS: ClassVar[tuple[str, ...]] = FLAWS

    mechanism: str = "dpsgd"
    bands: int = 4
    #: the JAX path's input canaries are flip / random_label / ood (reserved canary
    #: examples are the Opacus path's)
    input_kind: str = "flip"
    canary_branch: bool = False

    def __post_init__(self) -> None:
        if self.input_kind == "reserved":
            raise ValueError("input_kind must be flip, random_label or ood with framework "
                             "'jax' (reserved canary examples: framework 'opacus'); got "
                             "'reserved'")
        check_choice("mechanism", self.mechanism, MECHANISMS)
        if not isinstance(self.canary_branch, bool):
            raise ValueError(f"canary_branch must be True or False; got "
                             f"{self.canary_branch!r}")
        if self.canary_branch and self.canary != "gradient":
            raise ValueError("canary_branch applies to gradient canaries (canary "
                             f"'gradient'); got canary {self.canary!r}")
        check_count("bands", self.bands, minimum=2 if self.mechanism == "bandmf" else 1)
        super().__post_init__()
        if self.mechanism == "bandmf" and self.bands > self.steps:
            raise ValueError(f"bands must be in [2, steps={self.steps}] for bandmf; got "
                             f"{self.bands}")

    @property
    def num_bands(self) -> int:
        """Bands of the claimed strategy (1 for DP-SGD)."""
        return self.bands if self.mechanism == "bandmf" else 1


@dataclass(frozen=True, eq=False)
class JaxTrainingRun:
    """One run's canary truth bits and scores (``score`` = the config's threat and score;
    ``scores`` = every score computed, e.g. "whitened" and "naive" for white box), the
    strategy and groups the scores used, the training facts and the (T, n) transcript of
    released readings (canary units)."""

    member: np.ndarray
    score: np.ndarray
    scores: dict[str, np.ndarray]
    steps: int
    expected_batch_size: float
    test_accuracy: float
    seconds: float
    strategy: np.ndarray
    groups: np.ndarray
    dp_event: Any
    config: JaxTrainingConfig
    transcript: np.ndarray | None = None
    facts: RunFacts | None = None
    noise_strategy: np.ndarray | None = None
    #: the canaries (coordinates over ``layout``: the parameters in :data:`.model.ORDER`)
    canary_plan: CanaryPlan | None = None
    layout: Layout | None = None


def _input_canaries(data: DigitsArrays, n: int, kind: str, rng: np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray]:
    """n input canaries (x, y): a training image with label y + k mod 10 (k in 1..9), a
    training image with a uniform label, or a uniform-noise image with a uniform label."""
    idx = rng.integers(0, data.x_train.shape[0], size=n)
    if kind == "ood":
        x = rng.random((n, PIXELS)).astype(np.float32)
    else:
        x = data.x_train[idx].copy()
    if kind == "flip":
        y = (data.y_train[idx] + rng.integers(1, data.num_classes, size=n)) % data.num_classes
    else:
        y = rng.integers(0, data.num_classes, size=n)
    return x, y.astype(np.int32)


def partition_groups(plan: Any, num_examples: int, seed: int) -> np.ndarray:
    """Group (cycle position) of every example under the partition of ``plan``'s cyclic
    Poisson sampler run with generator seed ``seed``: the partition is drawn by
    ``CyclicPoissonSampling.batch_iterator`` from its generator before any batch, so with
    sampling probability 1 its first b batches are the groups themselves.  The partition is
    independent of the data (the amplified BandMF guarantee holds for every partition), so
    an auditor may use it; the training loop checks every batch against it."""
    from jax_privacy import batch_selection

    b = plan.batch_selection_strategy
    full = batch_selection.CyclicPoissonSampling(
        sampling_prob=1.0, iterations=b.cycle_length, cycle_length=b.cycle_length,
        partition_type=b.partition_type)
    groups = np.full(num_examples, -1, dtype=np.int64)
    for k, members in enumerate(full.batch_iterator(num_examples, rng=seed)):
        groups[np.asarray(members, dtype=np.int64)] = k
    return groups


@dataclass(frozen=True)
class _StepKey:
    """Everything the compiled step depends on besides its array arguments."""

    strategy: tuple[float, ...]
    noise_multiplier: float
    sampling_rate: float
    steps: int
    clip_norm: float
    #: a flaw that changes the compiled step (:mod:`.flaws`), else None
    flaw: str | None = None
    #: the parameters the canaries' flat coordinates run over, in order (:data:`.model.ORDER`)
    order: tuple[str, ...] = ("w1",)


@lru_cache(maxsize=16)
def _compiled_step(key: _StepKey) -> Callable[..., Any]:
    """The jitted training step for ``key``, shared by runs of different seeds.

    Sharing is exact: the privatiser is jax_privacy's streaming-matrix privatiser, whose
    generator key lives in its *state* (``init`` returns ``(key, matrix state)``), so its
    ``update`` depends only on the strategy and the noise std; each run passes the state of
    its own plan's ``noise_addition_transform.init`` (tested: same released sums).
    """
    plan = make_plan(np.asarray(key.strategy), noise_multiplier=key.noise_multiplier,
                     sampling_rate=key.sampling_rate, steps=key.steps, noise_seed=0,
                     clip_norm=key.clip_norm)
    privatizer = plan.noise_addition_transform
    clip = key.clip_norm
    flaw = key.flaw

    def flat(p: dict[str, jax.Array]) -> jax.Array:
        return jnp.concatenate([p[k].reshape(-1) for k in key.order])

    def loss_fn(p: dict[str, jax.Array], batch: dict[str, jax.Array]) -> jax.Array:
        # a gradient canary's loss is linear in the parameters (w1; with a canary branch,
        # all of them in the flat order key.order): its gradient is C * plant_values placed
        # at plant_coords (the canary plan's planted gradient)
        real = example_losses(p, batch["x"], batch["y"])
        planted = clip * jnp.sum(batch["pv"] * flat(p)[batch["pc"]], axis=-1)
        return jnp.sum(batch["w"] * jnp.where(batch["dirac"], planted, real))

    if flaw in UNCLIPPED_FLAWS:
        # the flaw's parameters summed unclipped (in units of C), the rest through
        # clipped_grad
        def rest_loss(rest: dict[str, jax.Array], free: dict[str, jax.Array],
                      batch: dict[str, jax.Array]) -> jax.Array:
            return loss_fn({**rest, **free}, batch)

        clipped_rest = plan.clipped_grad(rest_loss, batch_argnums=2)

        def grad_sum(p: dict[str, jax.Array], batch: dict[str, jax.Array],
                     pad: jax.Array) -> dict[str, jax.Array]:
            free_keys = unclipped_names(flaw, {k: v.ndim for k, v in p.items()})
            rest = {k: v for k, v in p.items() if k not in free_keys}
            free = {k: p[k] for k in free_keys}
            g = clipped_rest(rest, free, batch, is_padding_example=pad)
            masked = {**batch, "w": batch["w"] * (~pad)}
            g_free = jax.grad(lambda f: loss_fn({**rest, **f}, masked))(free)
            return {**g, **{k: v / key.clip_norm for k, v in g_free.items()}}
    elif flaw == "per_tensor_clipping":
        # clipped_grad once per tensor: each tensor's per-example gradient clipped to C
        def grad_sum(p: dict[str, jax.Array], batch: dict[str, jax.Array],
                     pad: jax.Array) -> dict[str, jax.Array]:
            out = {}
            for name in p:
                def one(pk: jax.Array, rest: dict[str, jax.Array],
                        batch: dict[str, jax.Array], name: str = name) -> jax.Array:
                    return loss_fn({**rest, name: pk}, batch)

                rest = {k: v for k, v in p.items() if k != name}
                out[name] = plan.clipped_grad(one, batch_argnums=2)(
                    p[name], rest, batch, is_padding_example=pad)
            return out
    elif flaw == "wrong_clip_noise":
        # clipped to 10 C (rescaled by 1 / (10 C)), brought back to units of C: the noise
        # the plan adds is for C
        wide = make_plan(np.asarray(key.strategy), noise_multiplier=key.noise_multiplier,
                         sampling_rate=key.sampling_rate, steps=key.steps, noise_seed=0,
                         clip_norm=WRONG_CLIP_FACTOR * clip).clipped_grad(loss_fn)

        def grad_sum(p: dict[str, jax.Array], batch: dict[str, jax.Array],
                     pad: jax.Array) -> dict[str, jax.Array]:
            g = wide(p, batch, is_padding_example=pad)
            return jax.tree.map(lambda v: WRONG_CLIP_FACTOR * v, g)
    else:
        clipped = plan.clipped_grad(loss_fn)

        def grad_sum(p: dict[str, jax.Array], batch: dict[str, jax.Array],
                     pad: jax.Array) -> dict[str, jax.Array]:
            return clipped(p, batch, is_padding_example=pad)

    @jax.jit
    def step(p: dict[str, jax.Array], noise_state: Any, batch: dict[str, jax.Array],
             pad: jax.Array, lr: jax.Array, read_coords: jax.Array, add_noise: jax.Array
             ) -> tuple[dict[str, jax.Array], Any, jax.Array]:
        clean = grad_sum(p, batch, pad)
        noisy, noise_state = privatizer.update(clean, noise_state)
        if flaw == "noise":  # the clipped sum released without the noise on some steps
            noisy = jax.tree.map(lambda a, b: jnp.where(add_noise, a, b), noisy, clean)
        p = jax.tree.map(lambda a, g: a - lr * g, p, noisy)
        return p, noise_state, flat(noisy)[read_coords]

    return step


def train_jax_with_canaries(config: JaxTrainingConfig, data: DigitsArrays | None = None, *,
                            on_step: Callable[[int], None] | None = None) -> JaxTrainingRun:
    """Train the digits MLP with jax_privacy (DP-SGD or BandMF) and canaries; score them.

    Randomness (model init, canary coordinates and bits, input canaries, batch selection,
    noise) all derives from ``config.seed``.
    """
    from jax_privacy.batch_selection import pad_to_multiple_of

    cfg = config
    start = time.perf_counter()
    ss = seed_sequence(cfg.seed, "jax_training").spawn(5)
    rng_place, rng_bits, rng_input = (np.random.default_rng(s) for s in ss[:3])
    noise_seed, batch_seed = (int(v) for v in ss[3].generate_state(2))
    data = data if data is not None else load_digits_arrays(cfg.seed)
    n = cfg.canaries
    bits = draw_bits(n, rng_bits)
    coords, reserved = reserved_coordinates(n, hidden=cfg.hidden, rng=rng_place)
    if cfg.canary_branch:  # the branch alone, as on a user's dense model (no reserved rows)
        reserved = 0
    params0 = init_mlp(np.random.default_rng(ss[4]), hidden=cfg.hidden, reserved=reserved,
                       num_classes=data.num_classes,
                       branch=BRANCH_WIDTH_PER_CANARY * n if cfg.canary_branch else 0)
    # the canaries' flat coordinates: every parameter (w1 first) where a canary may sit
    # outside w1 (the branch; a sentinel), else w1 alone
    every = cfg.canary_branch or (cfg.sentinel > 0 and cfg.canary == "gradient")
    order = tuple(k for k in ORDER if k in params0) if every else ("w1",)
    layout = Layout.from_sizes([params0[k].size for k in order], order)
    busy = np.where(silent_coordinates({k: params0[k] for k in order}, reserved), 0.0, 1.0)
    if cfg.canary_branch:
        # spread canaries with sentinels on the coordinates real data never moves (the
        # branch's); their own bits, drawn by the plan
        canaries = plan_gradient_canaries(layout, busy, n, sampling_rate=cfg.sampling_rate,
                                          rng=rng_place, scale=cfg.canary_scale,
                                          sentinel=cfg.sentinel)
        bits = canaries.bits
    else:
        # Dirac canaries on w1's reserved rows, each with a sentinel on another tensor
        canaries = dirac_plan(coords, bits, sampling_rate=cfg.sampling_rate,
                              scale=cfg.canary_scale)
        if cfg.canary == "gradient":
            canaries = with_sentinels(canaries, layout, busy, rng_place, cfg.sentinel)
    gradient = cfg.canary == "gradient"
    if gradient:
        xc = np.zeros((n, PIXELS), np.float32)
        yc = np.zeros(n, np.int32)
    else:
        xc, yc = _input_canaries(data, n, cfg.input_kind, rng_input)

    b_claim = cfg.num_bands
    n_real = data.x_train.shape[0]
    n_real -= (n_real + n) % b_claim          # equal groups: no example is dropped
    total = n_real + n
    x_all = np.concatenate([data.x_train[:n_real], xc])
    y_all = np.concatenate([data.y_train[:n_real], yc])
    slot = np.concatenate([np.full(n_real, -1), np.arange(n)]).astype(np.int32)
    weight = np.concatenate([np.ones(n_real), bits.astype(float)]).astype(np.float32)
    is_grad_canary = (slot >= 0) & gradient

    strategy = strategy_for(cfg.steps, b_claim)
    plan = make_plan(strategy, noise_multiplier=cfg.noise_multiplier,
                     sampling_rate=cfg.sampling_rate, steps=cfg.steps, noise_seed=noise_seed,
                     clip_norm=cfg.max_grad_norm)
    expected_b = max(1.0, total / b_claim * cfg.sampling_rate)
    noise_strategy, noise_sigma = strategy, cfg.noise_multiplier
    if cfg.flawed == "mean_noise":
        noise_sigma = cfg.noise_multiplier / expected_b
    elif cfg.flawed == "strategy_mismatch":
        noise_strategy = strategy_for(cfg.steps, MISMATCH_BANDS if b_claim == 1 else 1)
    privatizer = make_plan(noise_strategy, noise_multiplier=noise_sigma,
                           sampling_rate=cfg.sampling_rate, steps=cfg.steps,
                           noise_seed=noise_seed,
                           clip_norm=cfg.max_grad_norm).noise_addition_transform
    # the two noise flaws compile one program (the noise dropped where add_noise is False)
    step_flaw = ("noise" if cfg.flawed in NOISE_FLAWS else cfg.flawed
                 if cfg.flawed not in ("mean_noise", "strategy_mismatch") else None)
    step = _compiled_step(_StepKey(tuple(noise_strategy.tolist()), noise_sigma,
                                   cfg.sampling_rate, cfg.steps, cfg.max_grad_norm,
                                   step_flaw, order))

    params = {k: jnp.asarray(v) for k, v in params0.items()}
    lr = jnp.float32(cfg.learning_rate / expected_b)
    read_j = jnp.asarray(canaries.read_coords)
    m = canaries.plant_coords.shape[1]
    is_c = slot >= 0
    plant_c = np.zeros((total, m), np.int32)
    plant_v = np.zeros((total, m), np.float32)
    plant_c[is_c] = canaries.plant_coords[slot[is_c]]
    plant_v[is_c] = canaries.plant_values[slot[is_c]]

    groups_all = (partition_groups(plan, total, batch_seed) if b_claim > 1
                  else np.zeros(total, dtype=np.int64))
    arrays = {"x": x_all, "y": y_all, "pc": plant_c, "pv": plant_v, "w": weight,
              "dirac": is_grad_canary}
    noise_state = privatizer.init(params)
    transcript = np.zeros((cfg.steps, n))
    batch_sizes = np.zeros(cfg.steps, dtype=np.int64)
    reader = ReleaseReader(canaries, max_grad_norm=cfg.max_grad_norm,
                           sampling_rate=cfg.sampling_rate, layout=layout)
    running = reader.accumulator
    # One padded batch size for (almost) every step: mean + 6 sd of the Binomial batch size,
    # rounded up to a multiple of 32, so that the step compiles once.
    group = total / b_claim
    sd = math.sqrt(group * cfg.sampling_rate * (1 - cfg.sampling_rate))
    fixed = int(_PAD * math.ceil((group * cfg.sampling_rate + 6 * sd + 1) / _PAD))
    t = 0
    for t, idx in enumerate(plan.batch_selection_strategy.batch_iterator(total,
                                                                        rng=batch_seed)):
        idx = np.asarray(idx, dtype=np.int64)
        batch_sizes[t] = idx.size
        if b_claim > 1 and idx.size and (groups_all[idx] != t % b_claim).any():
            raise RuntimeError("jax_privacy's cyclic sampler drew an example outside its "
                               "group: the partition read before training does not match")
        padded = np.full(fixed, -1, dtype=np.int64)
        if idx.size <= fixed:
            padded[:idx.size] = idx
        else:  # a rare large batch: one more compilation
            padded = pad_to_multiple_of(idx, _PAD)
        pad = padded < 0
        sel = np.where(pad, 0, padded)
        batch = {k: jnp.asarray(v[sel]) for k, v in arrays.items()}
        noisy_step = noise_added(cfg.flawed, t)
        params, noise_state, rec = step(params, noise_state, batch, jnp.asarray(pad), lr,
                                        read_j, jnp.asarray(noisy_step))
        values = np.asarray(rec, dtype=np.float64).reshape(canaries.read_coords.shape)
        transcript[t] = canaries.read(values)
        planted = None
        if gradient and b_claim == 1:  # Poisson coins: the contribution check applies
            hit = slot[idx]
            hit = hit[hit >= 0]
            planted = hit[bits[hit]]
        # the sigma the loop reports for the step: 0 where it set it to 0 (zero_steps); a
        # skipped step still says sigma (skipped_noise)
        zeroed = cfg.flawed == "zero_steps" and not noisy_step
        reader.add(values, 0.0 if zeroed else cfg.noise_multiplier, planted)
        if on_step is not None:
            on_step(t + 1)
    steps_done = t + 1
    # what the run did, for the deterministic claim checks (dpaudit.canaries.claims): the
    # noise multiplier the privatiser was built with, the clip norm of every parameter group
    # (inf for the group unclipped_group sums unclipped; the other clipping flaws report C,
    # what such a loop believes it clipped to), the batch sizes, and the size of the data
    # set each eligible step samples from (a group: total / b)
    clips = (cfg.max_grad_norm, math.inf) if cfg.flawed == "unclipped_group" else (
        cfg.max_grad_norm,)
    # and, for plain DP-SGD (one band: noise independent across steps), the released noise
    # read on the canaries' coordinates (dpaudit.canaries.noise; a correlated-noise step's
    # fresh noise is not sigma C per step, so the check is not applied to it)
    noise = reader.noise_record() if noise_strategy.size == 1 else {}
    if cfg.flawed != "zero_steps":  # zero_steps: the per-step sigma names the steps
        noise.pop("step_noise_multipliers", None)
    sigmas = (float(noise_sigma),) + ((0.0,) if cfg.flawed == "zero_steps" else ())
    facts = RunFacts(steps=steps_done, noise_multipliers=sigmas,
                     max_grad_norms=clips, batch_sizes=batch_sizes[:steps_done],
                     dataset_size=total // b_claim, loss_reduction="sum", **noise)
    groups = groups_all[n_real:]

    scores: dict[str, np.ndarray] = {}
    if cfg.threat == "white_box":
        kw: dict[str, Any] = {"sampling_rate": cfg.sampling_rate,
                              "noise_multiplier": cfg.noise_multiplier,
                              "amplitude": canaries.amplitude}
        scores["whitened"] = correlated.whitened_scores(transcript, strategy, groups, **kw)
        scores["naive"] = correlated.naive_step_scores(transcript, strategy, groups, **kw)
        scores["sum"] = running.scores("sum")
        score = scores["whitened"] if cfg.score == "lr" else scores["sum"]
    elif cfg.threat == "last_iterate":
        rc = canaries.read_coords

        def flat(p: dict[str, Any]) -> np.ndarray:
            return np.concatenate([np.asarray(p[k]).reshape(-1) for k in order])

        score = scores["last_iterate"] = last_iterate_scores(
            flat(params0)[rc], flat(params)[rc], canaries.read_weights)
    else:
        score = scores["loss_drop"] = black_box_scores(losses_jit(params0, xc, yc),
                                                       losses_jit(params, xc, yc))
    acc = accuracy(params, data.x_test, data.y_test)
    return JaxTrainingRun(member=bits, score=np.asarray(score, float), scores=scores,
                          steps=steps_done, expected_batch_size=expected_b,
                          test_accuracy=acc, seconds=time.perf_counter() - start,
                          strategy=np.asarray(strategy), groups=groups,
                          dp_event=plan.dp_event, config=cfg, transcript=transcript,
                          facts=facts, noise_strategy=np.asarray(noise_strategy),
                          canary_plan=canaries, layout=layout)
