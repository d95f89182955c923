"""``dpaudit train-audit``: audit a real DP-SGD training run (PyTorch + Opacus) in one run.

Trains a small model on scikit-learn's digits with Opacus, with gradient canaries (white box
or last iterate) or input canaries (black box), optionally with a flaw, and prints every
one-run method side by side with the verdict against the claimed epsilon.  ``--json`` gives
the document of :func:`dpaudit.training.train_audit_dict` (the keys of
``dpaudit simulate --json`` plus ``training``).  Needs ``pip install 'dpaudit[torch]'``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from dpaudit.cli.common import app, console, fmt_number, print_json
from dpaudit.cli.report_options import format_option, maybe_write_report, report_option
from dpaudit.io import write_scores  # re-exported from its old home

__all__ = ["train_audit_cmd", "run_train_audit", "run_train_audit_observed", "write_scores"]


def _training_module() -> Any:
    """``dpaudit.training``, or one ``error:`` line naming the extra (exit 2)."""
    try:
        import dpaudit.training as training

        training.require_torch()
    except ImportError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    return training


#: defaults of the digits models and of ``--model lm`` (a CPU-tiny language model, see
#: :class:`dpaudit.training.lm.LMConfig`): options left unset take the model's default
_DEFAULTS = {"canaries": 1000, "noise_multiplier": 1.0, "sampling_rate": 0.05, "steps": 300,
             "learning_rate": 2.0, "hidden": 256, "data": "digits", "shapes": "dirac"}
_LM_DEFAULTS = {"canaries": 500, "noise_multiplier": 1.0, "sampling_rate": 0.01,
                "steps": 100, "learning_rate": 0.5, "hidden": 64, "data": "pydoc",
                "shapes": "dirac"}
#: canaries of ``--threat black_box`` with reserved canary examples (the default input kind):
#: the count that reaches the best black-box bound at CPU size (docs/training.md, "The black
#: box": bound / claim against canaries, studies/black_box_default.py)
BLACK_BOX_CANARIES = 10_000
#: options of ``--model lm`` only (name -> the value that means "not given")
_LM_ONLY = {"finetune": None, "sequence_kind": None, "pretrain_steps": None, "device": None}


def run_train_audit_observed(
        *, model: str = "mlp", canary: str | None = None, threat: str | None = None,
        canaries: int | None = None, noise_multiplier: float | None = None,
        sampling_rate: float | None = None, steps: int | None = None,
        max_grad_norm: float = 1.0, flawed: str | None = None, seed: int = 0,
        delta: float = 1e-5, confidence: float = 0.95, learning_rate: float | None = None,
        hidden: int | None = None, score: str = "lr", input_kind: str | None = None,
        progress: bool = False, data: str | None = None, reserved: int = 0,
        shapes: str | None = None, claimed_steps: int | None = None,
        framework: str = "opacus", mechanism: str = "dpsgd", bands: int = 4,
        finetune: str | None = None, sequence_kind: str | None = None,
        pretrain_steps: int | None = None,
        device: str | None = None,
        canary_branch: bool | None = None,
        sentinel: float | None = None) -> tuple[dict[str, Any], Any]:
    """Train, audit and return ``(document, observations)``: the ``--json`` document (the
    single place the command's result is assembled, so that a report can be built from the
    same dict) and the canaries' :class:`~dpaudit.observations.MembershipObservations`
    (member, score) the audit rests on, for the audit card's ROC and privacy-region plots.
    ``model="lm"``: DP fine-tuning of a small language model (:mod:`dpaudit.training.lm`;
    ``finetune``, ``sequence_kind``, ``pretrain_steps``, ``device`` apply to it only;
    ``canary_branch``: the Opacus models and, off by default, framework jax).
    ``canary`` defaults from ``threat`` (black_box: input canaries, else gradient);
    ``input_kind`` to "reserved" (canary examples on reserved input features: the highest
    valid black-box bound), "flip" for the cnn and framework jax, which have no reserved
    inputs for them."""
    from dpaudit.validation import check_choice

    if canary is None:
        canary = "input" if threat == "black_box" else "gradient"
    if input_kind is None:
        input_kind = "flip" if framework == "jax" or model == "cnn" else "reserved"
    if canaries is None and model != "lm" and canary == "input" and input_kind == "reserved":
        canaries = BLACK_BOX_CANARIES

    check_choice("framework", framework, ("opacus", "jax"))
    check_choice("mechanism", mechanism, ("dpsgd", "bandmf"))
    given = {"canaries": canaries, "noise_multiplier": noise_multiplier,
             "sampling_rate": sampling_rate, "steps": steps, "learning_rate": learning_rate,
             "hidden": hidden, "data": data, "shapes": shapes}
    defaults = _LM_DEFAULTS if model == "lm" else _DEFAULTS
    v: dict[str, Any] = {k: defaults[k] if x is None else x for k, x in given.items()}
    canaries, noise_multiplier, sampling_rate = (v["canaries"], v["noise_multiplier"],
                                                 v["sampling_rate"])
    steps, learning_rate, hidden = v["steps"], v["learning_rate"], v["hidden"]
    data, shapes = str(v["data"]), str(v["shapes"])
    # --sentinel: given only when set (each config's default otherwise)
    sent_kw: dict[str, float] = {} if sentinel is None else {"sentinel": sentinel}
    if sentinel is not None and canary != "gradient":
        raise ValueError("--sentinel applies to gradient canaries (white_box or last_iterate), "
                         "not to input canaries")
    if canary_branch and model == "lm":
        raise ValueError("--canary-branch applies to models mlp, cnn and logreg (framework "
                         "'opacus') and to framework 'jax'")
    if model == "lm":
        if threat is None:
            threat = "black_box" if canary == "input" else "white_box"
        if framework != "opacus" or mechanism != "dpsgd":
            raise ValueError("model 'lm' is fine-tuned with Opacus DP-SGD (framework "
                             "'opacus', mechanism 'dpsgd')")
        from dpaudit.training.choices import check_lm_choices

        check_lm_choices(finetune=finetune, sequence_kind=sequence_kind, device=device,
                         flawed=flawed)
        lm_kw = {k: x for k, x in (("finetune", finetune), ("sequence_kind", sequence_kind),
                                   ("pretrain_steps", pretrain_steps), ("device", device))
                 if x is not None}
        return _lm_module().run_cli_audit(
            canary="input" if threat == "black_box" else "gradient", threat=threat,
            canaries=canaries, noise_multiplier=noise_multiplier,
            sampling_rate=sampling_rate, steps=steps, max_grad_norm=max_grad_norm,
            learning_rate=learning_rate, flawed=flawed, seed=seed, hidden=hidden,
            score=score, data=data, reserved=reserved, shapes=shapes,
            claimed_steps=claimed_steps, delta=delta, confidence=confidence,
            progress=progress, **lm_kw, **sent_kw)
    if any(x is not None for x in (finetune, sequence_kind, pretrain_steps, device)):
        raise ValueError("--finetune, --sequence-kind, --pretrain-steps and --device apply to "
                         "--model lm only")
    from dpaudit.training.choices import check_train_audit

    # every named choice first, before torch / JAX is imported (an invalid one is an
    # immediate error line, not one after the framework's import)
    check_train_audit(framework=framework, mechanism=mechanism, model=model, canary=canary,
                      threat=threat, flawed=flawed, score=score, input_kind=input_kind,
                      data=data, shapes=shapes)
    if threat is None:
        threat = "black_box" if canary == "input" else "white_box"
    if framework == "jax":  # jax_privacy DP-SGD / BandMF: dpaudit.training.jax
        if data != "digits" or reserved or shapes != "dirac" or claimed_steps is not None:
            raise ValueError("--data, --reserved, --shapes and --claimed-steps apply to "
                             "framework 'opacus'; framework 'jax' trains the digits MLP with "
                             "reserved inputs and Dirac canaries")
        return _jax_module().run_cli_audit(
            model=model, canary=canary, threat=threat, canaries=canaries,
            noise_multiplier=noise_multiplier, sampling_rate=sampling_rate, steps=steps,
            max_grad_norm=max_grad_norm, learning_rate=learning_rate, flawed=flawed, seed=seed,
            hidden=hidden, score=score, input_kind=input_kind, mechanism=mechanism,
            bands=bands, delta=delta, confidence=confidence, progress=progress,
            canary_branch=bool(canary_branch), **sent_kw)
    if mechanism != "dpsgd":
        raise ValueError(f"mechanism {mechanism!r} needs framework 'jax' (Opacus trains "
                         f"DP-SGD only)")
    training = _training_module()
    cfg = training.TrainingConfig(
        model=model, canary=canary, threat=threat, canaries=canaries,
        noise_multiplier=noise_multiplier, sampling_rate=sampling_rate, steps=steps,
        max_grad_norm=max_grad_norm, learning_rate=learning_rate, flawed=flawed, seed=seed,
        hidden=hidden, score=score, input_kind=input_kind, data=data, reserved=reserved,
        shapes=shapes, claimed_steps=claimed_steps, canary_branch=canary_branch, **sent_kw)
    if not progress:
        audit = training.train_audit(cfg, delta=delta, confidence=confidence)
        return training.train_audit_dict(audit), audit.observations
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("training"), BarColumn(), TextColumn("{task.completed}/"
                                                                  "{task.total} steps"),
                  TimeRemainingColumn(), console=console, transient=True) as bar:
        task = bar.add_task("steps", total=cfg.steps)
        audit = training.train_audit(cfg, delta=delta, confidence=confidence,
                                     on_step=lambda i: bar.update(task, completed=i))
    return training.train_audit_dict(audit), audit.observations


def _lm_module() -> Any:
    """``dpaudit.training.lm.audit``, or one ``error:`` line naming the extra (exit 2)."""
    try:
        import dpaudit.training.lm  # noqa: F401  (checks the extras)
        import dpaudit.training.lm.audit as lm_audit
    except ImportError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    return lm_audit


def _jax_module() -> Any:
    """``dpaudit.training.jax``, or one ``error:`` line naming the extra (exit 2)."""
    try:
        import dpaudit.training.jax as training_jax
    except ImportError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    return training_jax


def run_train_audit(**kwargs: Any) -> dict[str, Any]:
    """The ``--json`` document of :func:`run_train_audit_observed` (same keyword arguments)."""
    return run_train_audit_observed(**kwargs)[0]


@app.command("train-audit")
def train_audit_cmd(
    model: str = typer.Option("mlp", "--model", help="mlp, cnn, logreg or lm (DP fine-tuning "
                              "of a small language model; docs/llm.md)."),
    canary: str | None = typer.Option(None, "--canary", help="gradient (Dirac, white box) "
                                      "or input (black box) [default: from --threat, else "
                                      "gradient]."),
    threat: str | None = typer.Option(None, "--threat", help="white_box, last_iterate "
                                      "(gradient canaries) or black_box (input canaries: "
                                      "the final model's losses on them, nothing else); "
                                      "default from --canary."),
    canaries: int | None = typer.Option(None, "--canaries", help="Number of canaries "
                                        "[default: 1000; black box with reserved canary "
                                        "examples 10,000; lm 500]."),
    noise_multiplier: float | None = typer.Option(None, "--noise-multiplier",
                                                  help="DP-SGD sigma [default: 1.0]."),
    sampling_rate: float | None = typer.Option(None, "--sampling-rate", help="Poisson rate "
                                               "q [default: 0.05; lm 0.01]."),
    steps: int | None = typer.Option(None, "--steps", help="Training steps T [default: "
                                     "300; lm 100]."),
    max_grad_norm: float = typer.Option(1.0, "--max-grad-norm", help="Clip norm C."),
    flawed: str | None = typer.Option(None, "--flawed", help="backprop_clipping, mean_noise, "
                                      "non_private_group, per_tensor_clipping, "
                                      "batch_sum_clipping, averaged_clipping, wrong_clip_noise, "
                                      "lowered_sigma, "
                                      "too_few_steps, unclipped_biases or skipped_noise "
                                      "(Opacus); see docs/training.md."),
    seed: int = typer.Option(0, "--seed", help="Seed of everything random in the run."),
    delta: float = typer.Option(1e-5, "--delta", help="delta at which epsilon is stated."),
    confidence: float = typer.Option(0.95, "--confidence", help="Probability the bound holds."),
    learning_rate: float | None = typer.Option(None, "--learning-rate", help="SGD learning "
                                               "rate [default: 2.0; lm 0.5]."),
    hidden: int | None = typer.Option(None, "--hidden", help="Hidden units of the mlp "
                                      "[default: 256]; width of the lm [64]."),
    score: str = typer.Option("lr", "--score", help="White-box score: lr or sum."),
    input_kind: str | None = typer.Option(
        None, "--input-kind", help="Input canaries (black box): reserved (canary examples on "
        "reserved input features only they move, one each up to 2,048 then random sign "
        "patterns; the highest valid black-box bound, see docs/training.md 'The black "
        "box'), flip, random_label or ood [default: reserved; flip for the cnn and "
        "--framework jax]."),
    data: str | None = typer.Option(None, "--data", help="digits, breast_cancer or wine "
                                    "[default: digits]; lm: pydoc or synthetic [pydoc]."),
    reserved: int = typer.Option(0, "--reserved", help="Reserved input features (a silent "
                                 "branch for canaries; mlp/logreg) [default: 0; black box "
                                 "with reserved canary examples min(canaries, 2048)]."),
    shapes: str | None = typer.Option(None, "--shapes", help="Gradient canary shapes: "
                                      "dirac, mixed (the own-loop default), tensors or block "
                                      "(lm: dirac or tensors) [default: dirac]."),
    claimed_steps: int | None = typer.Option(None, "--claimed-steps", help="Steps the claim "
                                             "is for (default: the steps run)."),
    sentinel: float | None = typer.Option(
        None, "--sentinel", help="Share of each gradient canary's direction on a coordinate "
        "of another parameter tensor, biases and norms included: per-tensor clipping and "
        "unclipped biases become visible to Dirac canaries (docs/training.md); in [0, 1), "
        "0 for pure Dirac canaries [default: 0.03; lm 0]."),
    canary_branch: bool | None = typer.Option(
        None, "--canary-branch/--no-canary-branch", help="Wrap the model in a CanaryBranch: "
        "silent coordinates for gradient canaries, outputs unchanged (docs/training.md) "
        "[default: on when the model has fewer silent coordinates than canaries, e.g. the "
        "cnn; framework jax: off]."),
    save_scores: Path | None = typer.Option(None, "--save-scores", help="Write the "
                                            "per-canary member,score CSV here."),
    framework: str = typer.Option("opacus", "--framework", help="opacus or jax (jax_privacy)."),
    mechanism: str = typer.Option("dpsgd", "--mechanism",
                                  help="dpsgd or bandmf (correlated noise; --framework jax)."),
    bands: int = typer.Option(4, "--bands", help="BandMF bands (--mechanism bandmf)."),
    finetune: str | None = typer.Option(None, "--finetune", help="--model lm: full or lora "
                                        "(peft adapters on c_attn) [default: full]."),
    sequence_kind: str | None = typer.Option(None, "--sequence-kind", help="--model lm, "
                                             "black box: new_token, rare_token or random "
                                             "canary sequences [default: new_token]."),
    pretrain_steps: int | None = typer.Option(None, "--pretrain-steps", help="--model lm: "
                                              "public pre-training steps [default: 200]."),
    device: str | None = typer.Option(None, "--device", help="--model lm: cpu, cuda (cuda:N) "
                                      "or mps: where the model trains [default: cpu]."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    report: Path | None = report_option(),
    report_format: str = format_option(),
) -> None:
    """Audit one real DP-SGD training run (Opacus) with canaries: every method and the verdict."""
    if save_scores is not None:
        from dpaudit.output import check_output_target

        check_output_target(save_scores, what="--save-scores")  # before training
    out, obs = run_train_audit_observed(
        model=model, canary=canary, threat=threat, canaries=canaries,
        noise_multiplier=noise_multiplier, sampling_rate=sampling_rate, steps=steps,
        max_grad_norm=max_grad_norm, flawed=flawed, seed=seed, delta=delta,
        confidence=confidence, learning_rate=learning_rate, hidden=hidden, score=score,
        input_kind=input_kind, progress=not as_json and console.is_terminal, data=data,
        reserved=reserved, shapes=shapes, claimed_steps=claimed_steps, framework=framework,
        mechanism=mechanism, bands=bands, finetune=finetune, sequence_kind=sequence_kind,
        pretrain_steps=pretrain_steps, device=device, canary_branch=canary_branch,
        sentinel=sentinel)
    if save_scores is not None:
        write_scores(save_scores, obs.member, obs.score)
    canary = str(out.get("canary") or canary or ("input" if threat == "black_box"
                                                   else "gradient"))
    maybe_write_report(report, report_format, out, observations=obs,
                       title=f"DP-SGD training audit ({model}, "
                             f"{out.get('lm', {}).get('canary_design', canary + ' canaries')}"
                             f"{', flawed: ' + flawed if flawed else ''})")
    if as_json:
        print_json(out)
        return
    for msg in out["configuration_errors"]:
        console.print(f"[bold red]configuration error[/bold red]: {msg}")
    if model == "lm":
        _print_rows(out, *_lm_module().summary_lines(out))
        console.print(f"[bold]{out['verdict']}[/bold] (based on {out['verdict_method']})")
        return
    if framework == "jax":
        _print_rows(out, *_jax_module().summary_lines(out))
        console.print(f"[bold]{out['verdict']}[/bold] (based on {out['verdict_method']})")
        return
    tr = out["training"]
    title = (f"One-run {out['threat']} audit of {'FLAWED (' + flawed + ') ' if flawed else ''}"
             f"DP-SGD training ({model}, Opacus): sigma={tr['noise_multiplier']:g}, "
             f"q={tr['sampling_rate']:g}, T={tr['steps']}, {out['canaries']:,} {canary} "
             f"canaries")
    extra = {"claimed_epsilon (dp_accounting PLD)": out["claimed_epsilon"],
             "opacus_epsilon (PRV accountant)": tr["opacus_epsilon"],
             "accountant_epsilon (the run's own accountant)": tr.get("accountant_epsilon"),
             "any_mechanism_epsilon (tight, (eps, delta) null: the run's own epsilon >=)":
                 out.get("any_mechanism_epsilon"),
             "test_accuracy": tr["test_accuracy"], "seconds": tr["seconds"]}
    _print_rows(out, title, extra)
    console.print(f"[bold]{out['verdict']}[/bold] (based on {out['verdict_method']})")


def _print_rows(out: dict[str, Any], title: str, extra: dict[str, Any]) -> None:
    """The side-by-side table of ``print_results``, rendered from the JSON document."""
    from rich.table import Table

    from dpaudit.outcome import audit_of
    from dpaudit.registry import epsilon_cell

    table = Table(title=title)
    for col in ("method", "epsilon", "delta", "confidence", "fit", "p-value"):
        table.add_column(col, justify="left" if col in ("method", "fit") else "right")
    rows = audit_of({"results": out["results"]}).results
    for r, row in zip(out["results"], rows, strict=True):
        fit = ", ".join(f"{k}={fmt_number(v)}" for k, v in (r.get("params") or {}).items())
        # each cell says what its number is: a bound, or the DP-SGD curve the run fails
        table.add_row(r["method"], epsilon_cell(row, fmt_number(row.epsilon)),
                      fmt_number(r["delta"]),
                      fmt_number(r["confidence"]), fit or "-", fmt_number(r.get("p_value")))
    console.print(table)
    for k, v in extra.items():
        console.print(f"{k}: {fmt_number(v)}")
