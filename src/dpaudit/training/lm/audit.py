"""Audit a DP fine-tuning run of a language model: train (:mod:`.trainer`) -> the one training
audit (:func:`dpaudit.training.audit.audit_training`) -> the ``train-audit --json`` document.

Every score (white-box readings of reserved-token canaries, last iterate, black-box canary
sequences) goes through the same estimators and the claim's null family (DP-SGD curves of
(sigma, q, T), ``dpsgd_family``) as every other training audit.  Added to the document:

* ``lm`` -- the model, corpus, fine-tuning mode, canary design, held-out losses, and the
  measured canary exposure (:func:`.canaries.exposure`, Carlini et al. 2019 §4);
* ``extraction_risk`` -- what the *claim* promises against extraction of one secret (Beyond
  Worst Case, Swanberg et al., Thm 3.5 at n = 1: success <= beta(p, eps) + (1 - beta) delta,
  beta(p, eps) = e^eps p / (e^eps p + 1 - p), Thm 3.2), with p the prior of guessing the canary
  secret (1 / the size of the design's secret space), and the bits the claim lets leak about
  one person except with probability 0.05 (§3.2), beside the measured exposure;
* the noise probe's check (:class:`.flaws.NoiseProbe`) among the claim checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from dpaudit.outcome import Audit
from dpaudit.risk.bounds import leaked_bits, single_target_bound
from dpaudit.training.audit import audit_run, train_audit_dict
from dpaudit.training.lm.trainer import LMConfig, LMRun, train_lm_with_canaries
from dpaudit.validation import check_confidence, check_delta

__all__ = ["train_audit_lm", "lm_audit_dict", "extraction_risk", "run_cli_audit",
           "summary_lines"]

#: the probability beside the leaked-bits figure (Beyond Worst Case §3.2)
LEAK_ALPHA = 0.05


def train_audit_lm(config: LMConfig, *, delta: float = 1e-5, confidence: float = 0.95,
                   on_step: Callable[[int], None] | None = None) -> Audit:
    """Fine-tune with canaries (one run) and audit against the claim (sigma, q, T) -- the
    claim's steps / sampling rate differ from the run's only under the claim flaws."""
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    run = train_lm_with_canaries(config, on_step=on_step)
    return audit_run(run, config, sampling_rate=config.claim_sampling_rate, delta=delta,
                     confidence=confidence,
                     extra_checks=[run.probe] if run.probe is not None else [])


def secret_space_bits(config: LMConfig) -> float:
    """log2 of the number of possible canary secrets of the design (white box: the random
    design's, a stand-in for a secret of ``secret_length`` printable characters)."""
    k = config.secret_length
    if config.canary == "input" and config.sequence_kind == "new_token":
        return math.log2(config.reserved_tokens - 1)
    if config.canary == "input" and config.sequence_kind == "rare_token":
        return 4.0 * k  # 16 rare tokens
    return k * math.log2(95)


def extraction_risk(claimed_epsilon: float, delta: float, space_bits: float) -> dict[str, Any]:
    """The claim's bound on extracting one secret of 2^space_bits equally likely values, and
    the bits it lets leak (module docstring)."""
    prior = 2.0 ** -space_bits
    eps = claimed_epsilon if math.isfinite(claimed_epsilon) else math.inf
    return {"prior": prior, "secret_space_bits": space_bits, "epsilon": claimed_epsilon,
            "delta": delta,
            "success_bound": float(single_target_bound(prior, eps, delta, theorem="thm3.5")),
            "leaked_bits": float(leaked_bits(eps, LEAK_ALPHA)), "leak_alpha": LEAK_ALPHA,
            "theorem": "Beyond Worst Case Thm 3.5 (n = 1), leaked bits §3.2"}


def lm_audit_dict(audit: Audit) -> dict[str, Any]:
    """The ``train-audit --model lm --json`` document: the training audit's keys plus ``lm``
    and ``extraction_risk``, and two scalars for the audit card's facts."""
    out = train_audit_dict(audit)
    run = audit.run
    assert isinstance(run, LMRun)
    out["lm"] = run.lm
    claimed = audit.claimed_epsilon
    assert claimed is not None
    risk = extraction_risk(claimed, audit.delta, secret_space_bits(run.config))
    out["extraction_risk"] = risk
    exp = run.lm["exposure"]
    out["extraction_risk_bound"] = risk["success_bound"]
    out["leaked_bits_bound"] = risk["leaked_bits"]
    out["canary_exposure_max_bits"] = exp["max_bits"]
    out["canary_exposure_median_bits"] = exp["median_bits"]
    out["training"]["finetune"] = run.config.finetune
    out["training"]["claim_sampling_rate"] = run.config.claim_sampling_rate
    return out


def run_cli_audit(*, progress: bool = False, delta: float = 1e-5, confidence: float = 0.95,
                  **settings: Any) -> tuple[dict[str, Any], Any]:
    """``dpaudit train-audit --model lm``: train, audit, return ``(document, observations)``;
    a device that is not on this machine is a ValueError before any work."""
    cfg = LMConfig(**settings)
    _check_device_available(cfg.device)
    if not progress:
        audit = train_audit_lm(cfg, delta=delta, confidence=confidence)
        return lm_audit_dict(audit), audit.observations
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("DP fine-tuning (lm)"), BarColumn(),
                  TextColumn("{task.completed}/{task.total} steps"), TimeRemainingColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("steps", total=cfg.steps)
        audit = train_audit_lm(cfg, delta=delta, confidence=confidence,
                               on_step=lambda i: bar.update(task, completed=i))
    return lm_audit_dict(audit), audit.observations


def _check_device_available(device: str) -> None:
    """ValueError naming ``device`` when this machine has no such device (CUDA / MPS)."""
    import torch

    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device must be available on this machine; got {device!r} "
                         f"(no CUDA device here)")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ValueError(f"device must be available on this machine; got {device!r} "
                         f"({torch.cuda.device_count()} CUDA devices here)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device must be available on this machine; got {device!r} "
                         f"(no MPS here)")


def summary_lines(out: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Title and extra lines of the CLI table for an :func:`lm_audit_dict` document."""
    tr, lm, risk = out["training"], out["lm"], out["extraction_risk"]
    flaw = out.get("flaw")
    title = (f"One-run {out['threat']} audit of {'FLAWED (' + flaw + ') ' if flaw else ''}"
             f"DP fine-tuning ({lm['finetune']}, GPT-2-style LM, {lm['parameters']:,} "
             f"parameters, Opacus): sigma={tr['noise_multiplier']:g}, "
             f"q={tr['sampling_rate']:g}, T={tr['steps']}, {out['canaries']:,} "
             f"{lm['canary_design']}")
    extra: dict[str, Any] = {
        "claimed_epsilon (dp_accounting PLD)": out["claimed_epsilon"],
        "opacus_epsilon (PRV accountant)": tr["opacus_epsilon"],
        "any_mechanism_epsilon (tight, (eps, delta) null)": out.get("any_mechanism_epsilon"),
        "held-out loss pre-trained -> fine-tuned": f"{lm['heldout_loss_pretrained']:.3f} -> "
                                                    f"{lm['heldout_loss_finetuned']:.3f}",
        "canary exposure, median / max (bits, measured)":
            f"{lm['exposure']['median_bits']:.2f} / {lm['exposure']['max_bits']:.2f}",
        f"extraction of a {risk['secret_space_bits']:.1f}-bit secret, bound at the claim "
        f"(Beyond Worst Case Thm 3.5)": risk["success_bound"],
        f"bits the claim lets leak (except w.p. {risk['leak_alpha']:g})": risk["leaked_bits"],
        "seconds": tr["seconds"]}
    return title, extra
