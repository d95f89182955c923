"""One audited DP fine-tuning run of a small causal language model (Opacus, optional LoRA).

The run: a GPT-2-style model (:mod:`.model`) pre-trained non-privately on the public part of an
offline corpus (:mod:`.corpus`), then fine-tuned with DP-SGD on the private part -- Opacus's
``GradSampleModule``, a ``DPOptimizer`` (or a flawed one, :mod:`.flaws`) and a ``DPDataLoader``
that samples sequences by Poisson sampling at exactly rate q (the pieces ``make_private``
wires, built directly so q is the requested one, as :mod:`dpaudit.training.trainer`).
Canaries (:mod:`.canaries`): white box / last iterate -- gradient canaries on the reserved
tokens' rows, planted by :class:`dpaudit.training.canaries.GradientCanaries`; black box --
canary sequences in the data, scored on the final model against the pre-trained one.
Device-agnostic: ``device="cuda"`` runs the same code on a GPU.
"""

from __future__ import annotations

import copy
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch

from dpaudit.canaries import RunFacts
from dpaudit.canaries.claims import ClaimCheck
from dpaudit.randomness import seed_sequence
from dpaudit.training.choices import LM_FINETUNES as FINETUNES
from dpaudit.training.common import TrainingSettings
from dpaudit.training.lm.canaries import (
    LM_SHAPES,
    SEQUENCE_KINDS,
    SequenceCanaries,
    exposure,
    make_sequence_canaries,
    reserved_token_plan,
    sequence_scores,
)
from dpaudit.training.lm.corpus import BASE_VOCAB, CORPORA, corpus_split
from dpaudit.training.lm.flaws import (
    LM_FLAWS,
    RATE_OVERCOUNT,
    STEP_UNDERCOUNT,
    NoiseProbe,
    lm_optimizer_class,
)
from dpaudit.training.lm.model import (
    LMShape,
    add_lora,
    init_new_tokens,
    input_embedding,
    lm_loss,
    next_token_accuracy,
    output_embedding,
    pretrain,
    sequence_losses,
)
from dpaudit.training.models import trainable_parameters
from dpaudit.training.trainer import dp_steps
from dpaudit.validation import check_choice, check_count

__all__ = ["LMConfig", "LMRun", "train_lm_with_canaries", "FINETUNES"]



@dataclass(frozen=True)
class LMConfig(TrainingSettings):
    """Settings of one audited LM fine-tuning run: the shared training settings (canary
    "gradient" = white box / last iterate on reserved-token rows, "input" = black-box canary
    sequences; sigma, q, T, C, ...; ``hidden`` is the model width) plus the model and
    corpus.  ``reserved``: reserved tokens (0 = as many as the canaries need, at least 64);
    ``shapes``: white-box canary shapes ("tensors" needs full fine-tuning); ``claimed_steps``
    / ``claimed_sampling_rate``: a claim other than the run's.  ``sentinel`` defaults to 0
    here (pure Dirac canaries, each reading the canary plus noise alone): every tensor
    but the reserved rows carries every example's gradient, so a sentinel would read a busy
    coordinate, while ``shapes="tensors"`` puts both parts on silent rows and reads
    per-layer clipping at sqrt(2) C with full power (docs/llm.md)."""

    FLAWS: ClassVar[tuple[str, ...]] = LM_FLAWS

    model: str = "lm"
    finetune: str = "full"
    data: str = "pydoc"
    sequence_kind: str = "new_token"
    shapes: str = "dirac"
    sentinel: float = 0.0
    hidden: int = 64
    layers: int = 2
    heads: int = 2
    length: int = 32
    reserved: int = 0
    lora_rank: int = 4
    secret_length: int = 4
    pretrain_steps: int = 200
    learning_rate: float = 0.5
    noise_multiplier: float = 1.0
    sampling_rate: float = 0.01
    steps: int = 100
    canaries: int = 500
    device: str = "cpu"
    threads: int = 1
    claimed_steps: int | None = None

    def __post_init__(self) -> None:
        check_choice("model", self.model, ("lm",))
        super().__post_init__()
        check_choice("finetune", self.finetune, FINETUNES)
        check_choice("data", self.data, CORPORA)
        check_choice("sequence_kind", self.sequence_kind, SEQUENCE_KINDS)
        check_choice("shapes", self.shapes, LM_SHAPES)
        check_count("reserved", self.reserved)
        check_count("lora_rank", self.lora_rank, minimum=1)
        check_count("pretrain_steps", self.pretrain_steps)
        check_count("threads", self.threads, minimum=1)
        LMShape(vocab=BASE_VOCAB + 1, positions=2 * check_count("length", self.length,
                                                                   minimum=8),
                width=self.hidden, layers=self.layers, heads=self.heads)
        check_count("secret_length", self.secret_length, minimum=1)
        if self.secret_length >= self.length:
            raise ValueError(f"secret_length must be below length ({self.length}); got "
                             f"{self.secret_length}")
        if self.shapes == "tensors" and self.finetune != "full":
            raise ValueError("shapes 'tensors' needs finetune 'full' (the unused position "
                             "rows are frozen under LoRA)")
        if self.claimed_steps is not None:
            check_count("claimed_steps", self.claimed_steps, minimum=1)
        check_choice("device", self.device.split(":")[0], ("cpu", "cuda", "mps"))

    @property
    def reserved_tokens(self) -> int:
        """Reserved tokens: the canaries' rows (white box: one coordinate per canary, two
        for "tensors" spread over rows and positions; black box "new_token": one token per
        canary) plus one probe row, at least 64."""
        if self.reserved:
            return self.reserved
        if self.canary == "gradient":
            need = math.ceil(self.canaries / self.hidden) + 1
        else:
            need = self.canaries + 1
        return max(64, need)

    @property
    def shape(self) -> LMShape:
        return LMShape(vocab=BASE_VOCAB + self.reserved_tokens, positions=2 * self.length,
                       width=self.hidden, layers=self.layers, heads=self.heads)

    def claim_steps(self, steps_run: int) -> int:
        if self.claimed_steps is not None:
            return self.claimed_steps
        if self.flawed == "wrong_epochs":
            return max(1, steps_run // STEP_UNDERCOUNT)
        return steps_run

    @property
    def claim_sampling_rate(self) -> float:
        if self.flawed == "wrong_sampling_rate":
            return self.sampling_rate / RATE_OVERCOUNT
        return self.sampling_rate


@dataclass(frozen=True, eq=False)
class LMRun:
    """What one LM run produced (the fields of :class:`dpaudit.training.TrainingRun` the
    audit reads, plus the LM facts)."""

    member: np.ndarray
    score: np.ndarray
    steps: int
    expected_batch_size: int
    test_accuracy: float
    seconds: float
    config: LMConfig
    facts: RunFacts | None = None
    accountant: object | None = None
    probe: ClaimCheck | None = None
    lm: dict[str, Any] = field(default_factory=dict)


def _split_params(model: torch.nn.Module, params: list, flaw: str | None
                  ) -> tuple[list, list, float]:
    """(parameters of the DP optimizer, parameters a plain optimizer trains) under ``flaw``."""
    outside: set[int] = set()
    if flaw == "embedding_outside_dp":
        outside = {id(input_embedding(model))}
    elif flaw == "head_outside_dp":
        outside = {id(output_embedding(model))}
    dp = [p for p in params if id(p) not in outside]
    plain = [p for p in params if id(p) in outside]
    return dp, plain, 0.0


def train_lm_with_canaries(config: LMConfig, *, on_step: Callable[[int], None] | None = None,
                           plant: bool = True) -> LMRun:
    """Pre-train (cached), fine-tune with DP-SGD and canaries, score; see module docstring.
    Randomness: model init of the fine-tuning run's adapters, canary plan and bits, Opacus's
    noise and Poisson sampler, all from ``config.seed`` (purposes "lm_training",
    "lm_canaries"); the public pre-trained model is the same for every seed.
    ``plant=False`` trains the same run without the white-box canaries and the noise probe
    (the baseline of ``benchmarks/lm.py overhead``; the scores are then empty)."""
    from opacus import GradSampleModule
    from opacus.accountants import PRVAccountant
    from opacus.data_loader import DPDataLoader

    from dpaudit.training.canaries import GradientCanaries

    cfg = config
    start = time.perf_counter()
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    dev = torch.device(cfg.device)
    try:
        torch_seeds = seed_sequence(cfg.seed, "lm_training").generate_state(4)
        rng = np.random.default_rng(seed_sequence(cfg.seed, "lm_canaries"))
        split = corpus_split(cfg.data, cfg.length)
        shape = cfg.shape
        reserved = np.arange(BASE_VOCAB, shape.vocab, dtype=np.int64)
        probe_token = int(reserved[-1])
        canary_tokens = reserved[:-1]
        base = pretrain(shape, cfg.data, cfg.length, steps=cfg.pretrain_steps,
                        device=cfg.device)
        init_new_tokens(base, reserved)
        reference = copy.deepcopy(base).eval()
        if cfg.flawed == "head_outside_dp" and cfg.finetune == "lora":
            output_embedding(base).requires_grad_(True)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch_seeds[0]))
            model = add_lora(base, cfg.lora_rank) if cfg.finetune == "lora" else base
        if cfg.flawed == "head_outside_dp" and cfg.finetune == "lora":
            output_embedding(model).requires_grad_(True)
        data = torch.from_numpy(np.array(split.finetune))
        seq: SequenceCanaries | None = None
        if cfg.canary == "input":
            seq = make_sequence_canaries(cfg.sequence_kind, cfg.canaries, split.heldout,
                                         rng=rng, secret_length=cfg.secret_length,
                                         reserved_tokens=canary_tokens,
                                         byte_counts=split.byte_counts)
            data = torch.cat([data, seq.included()])
        params = trainable_parameters(model)
        dp_params, plain_params, _ = _split_params(model, params, cfg.flawed)
        plain = (torch.optim.SGD(plain_params, lr=cfg.learning_rate) if plain_params
                 else None)
        with warnings.catch_warnings():  # transformers' deprecation notes on Opacus's probes
            warnings.simplefilter("ignore", FutureWarning)
            gsm = GradSampleModule(model, loss_reduction="mean")
        expected_b = max(1, int(data.shape[0] * cfg.sampling_rate))
        noise_gen = torch.Generator(device=dev).manual_seed(int(torch_seeds[1]))
        opt = lm_optimizer_class(cfg.flawed)(
            torch.optim.SGD(dp_params, lr=cfg.learning_rate),
            noise_multiplier=cfg.noise_multiplier, max_grad_norm=cfg.max_grad_norm,
            expected_batch_size=expected_b, loss_reduction="mean", generator=noise_gen)
        accountant = PRVAccountant()
        opt.attach_step_hook(accountant.get_optimizer_hook_fn(sample_rate=cfg.sampling_rate))
        probe = (NoiseProbe([input_embedding(model), output_embedding(model)], probe_token,
                            steps=cfg.steps).attach(opt) if plant else None)
        planter = None
        if cfg.canary == "gradient" and plant:
            unused = np.arange(cfg.length, 2 * cfg.length) if cfg.finetune == "full" else None
            plan = reserved_token_plan(params, model, canary_tokens, cfg.canaries,
                                       sampling_rate=cfg.sampling_rate, rng=rng,
                                       shapes=cfg.shapes, unused_positions=unused,
                                       scale=cfg.canary_scale, sentinel=cfg.sentinel)
            planter = GradientCanaries(params, sampling_rate=cfg.sampling_rate,
                                       max_grad_norm=cfg.max_grad_norm,
                                       scale=cfg.canary_scale, seed=int(torch_seeds[2]),
                                       plan=plan).attach(opt)
        loader = DPDataLoader(torch.utils.data.TensorDataset(data),
                              sample_rate=cfg.sampling_rate,
                              generator=torch.Generator().manual_seed(int(torch_seeds[3])))
        gsm.train()

        def backward(batch: Any) -> None:
            lm_loss(gsm, batch[0].to(dev)).backward()

        batch_sizes, sigmas = dp_steps(loader, cfg.steps, backward, opt, gsm, dp_params,
                                       plain=plain, on_step=on_step)
        step = len(batch_sizes)
        model.eval()
        held = torch.from_numpy(np.array(split.heldout[:512])).to(dev)
        acc = next_token_accuracy(model, held)
        lm_info: dict[str, Any] = {
            "finetune": cfg.finetune, "corpus": cfg.data, "shape": {
                "vocab": shape.vocab, "positions": shape.positions, "width": shape.width,
                "layers": shape.layers, "heads": shape.heads},
            "parameters": int(sum(p.numel() for p in model.parameters())),
            "trainable_parameters": int(sum(p.numel() for p in params)),
            "reserved_tokens": int(reserved.size), "sequence_length": cfg.length,
            "pretrain_steps": cfg.pretrain_steps,
            "heldout_loss_pretrained": float(sequence_losses(reference, held).mean()),
            "heldout_loss_finetuned": float(sequence_losses(model, held).mean()),
            "finetune_sequences": int(split.finetune.shape[0]),
        }
        if not plant:
            score, bits = np.zeros(0), np.zeros(0, dtype=bool)
        elif planter is not None:
            score = (planter.white_box_scores(cfg.score) if cfg.threat == "white_box"
                     else planter.last_iterate_scores())
            bits = planter.bits
            lm_info["canary_design"] = f"reserved-token rows ({cfg.shapes})"
        else:
            assert seq is not None
            score = sequence_scores(reference, model, seq)
            bits = seq.bits
            lm_info["canary_design"] = f"{cfg.sequence_kind} sequences"
            lm_info["secret_length"] = cfg.secret_length
        lm_info["exposure"] = exposure(bits, score) if plant else {}
    finally:
        torch.set_num_threads(prev_threads)
    facts = RunFacts(steps=step, noise_multipliers=tuple(dict.fromkeys(sigmas)),
                     max_grad_norms=(float(opt.max_grad_norm),),
                     batch_sizes=np.asarray(batch_sizes, dtype=np.int64),
                     expected_batch_size=float(expected_b), dataset_size=int(data.shape[0]),
                     loss_reduction="mean")
    return LMRun(member=np.asarray(bits, dtype=bool), score=np.asarray(score, float),
                 steps=step, expected_batch_size=expected_b, test_accuracy=acc,
                 seconds=time.perf_counter() - start, config=cfg, facts=facts,
                 accountant=accountant, probe=None if probe is None else probe.check(),
                 lm=lm_info)
