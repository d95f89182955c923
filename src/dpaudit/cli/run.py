"""``dpaudit run MODULE:OBJECT --trials N [--executor process|ray|inline] [--workers W]
[--store PATH [--resume]] [--sequential] --claimed-epsilon E [--delta D] [--seed S] [--json]``.

Black-box multi-run audit of a user's mechanism on the trial engine (:mod:`dpaudit.engine`).
``MODULE:OBJECT`` names a :class:`dpaudit.BlackBoxAudit` (or a zero-argument callable returning
one), e.g. ``dpaudit.games.examples:gaussian_count_audit``; the current directory is on the
import path.  The JSON mirrors ``dpaudit simulate --json`` (``results``, ``claimed_epsilon``,
``violation``, ``verdict``, ``verdict_method``) plus ``engine`` (trials, failures, executor,
store, timing) and, for sequential audits, ``sequential``.  :func:`run_result` assembles it.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from dpaudit.cli.common import app, console, print_json, print_results
from dpaudit.cli.report_options import format_option, maybe_write_report, report_option
from dpaudit.engine.audit import AuditRun
from dpaudit.validation import check_choice, check_count


def load_audit(spec: str) -> Any:
    """``module:object`` -> the audit object (a zero-argument factory is called)."""
    from dpaudit.games.blackbox import BlackBoxAudit

    if ":" not in spec:
        raise ValueError(f"AUDIT must be MODULE:OBJECT (e.g. mymodule:AUDIT), got {spec!r}")
    mod_name, _, attr = spec.partition(":")
    if not mod_name or mod_name.startswith(".") or not attr:
        raise ValueError(f"AUDIT must be MODULE:OBJECT with an absolute module name and an "
                         f"object (e.g. mymodule:AUDIT), got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as exc:
        raise ValueError(f"cannot import module {mod_name!r}: {exc}") from None
    except (TypeError, ValueError) as exc:  # e.g. "a..b" (an empty part of a dotted name)
        raise ValueError(f"AUDIT {spec!r}: {mod_name!r} is not a module name ({exc})") \
            from None
    obj: Any = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"module {mod_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not isinstance(obj, BlackBoxAudit) and callable(obj) and not hasattr(obj, "run_trial"):
        import inspect

        try:
            sig = inspect.signature(obj)
            required: list[object] = [
                p for p in sig.parameters.values() if p.default is p.empty and
                        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        except (TypeError, ValueError):  # builtins without a signature
            required = ["?"]
        if required:
            raise ValueError(f"{spec} is neither a dpaudit.BlackBoxAudit nor a zero-argument "
                             f"factory returning one (it needs arguments)")
        obj = obj()
    if tuple(getattr(obj, "fields", ())) != ("member", "score") or \
            not hasattr(obj, "run_trial"):
        raise ValueError(f"{spec} is not a dpaudit.BlackBoxAudit (mechanism, neighbours, score)")
    return obj


def run_result(run: AuditRun, *, spec: str | None = None) -> dict[str, Any]:
    """The ``dpaudit run --json`` document: :meth:`dpaudit.engine.audit.AuditRun.to_audit`
    ``.to_dict()``."""
    return run.to_audit(spec=spec).to_dict()


@app.command("run")
def run_cmd(
    audit: str = typer.Argument(..., help="MODULE:OBJECT naming a dpaudit.BlackBoxAudit."),
    trials: int = typer.Option(10_000, "--trials", help="Trials (the budget of --sequential)."),
    executor: str = typer.Option("process", "--executor", help="inline, process or ray."),
    workers: int | None = typer.Option(None, "--workers", help="Processes / Ray CPUs "
                                       "(default: all cores)."),
    store: str | None = typer.Option(None, "--store", help="SQLite trial store (durable)."),
    resume: bool = typer.Option(False, "--resume", help="Continue the audit in --store."),
    sequential: bool = typer.Option(False, "--sequential", help="Stop as soon as a violation "
                                    "of --claimed-epsilon is established (anytime-valid)."),
    claimed_epsilon: float | None = typer.Option(None, "--claimed-epsilon",
                                                 help="The claimed epsilon to test."),
    delta: float = typer.Option(0.0, "--delta", help="delta of the claim."),
    confidence: float = typer.Option(0.95, "--confidence", help="Probability the verdict "
                                     "holds."),
    seed: int = typer.Option(0, "--seed", help="Seed: trial t uses a stream of (seed, t)."),
    chunk_size: int | None = typer.Option(None, "--chunk-size", help="Trials per task."),
    retries: int = typer.Option(2, "--retries", help="Extra attempts for a failing trial "
                                "(0 to 100)."),
    trial_timeout: float | None = typer.Option(None, "--trial-timeout", help="Seconds one "
                                               "attempt of a trial may run before it fails "
                                               "(Unix; default: no limit)."),
    ray_address: str | None = typer.Option(None, "--ray-address", help="Ray cluster "
                                           "address (default: RAY_ADDRESS, else local)."),
    identity_env: list[str] | None = typer.Option(
        None, "--identity-env", help="An environment variable the mechanism reads (repeat "
        "for several): its value joins the store's identity, so --resume with another value "
        "is refused."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    report: Path | None = report_option(),
    report_format: str = format_option(),
) -> None:
    """Black-box multi-run audit of your mechanism on the trial engine."""
    from dpaudit.engine import run_audit

    check_choice("--executor", executor, ("inline", "process", "ray"))
    check_count("--trials", trials, minimum=2)
    if resume and store is None:
        raise ValueError("--resume continues the audit in a trial store: give --store PATH")
    if workers is not None and executor == "inline":
        raise ValueError("--workers applies to --executor process or ray (inline runs in this "
                         "process)")
    if not 0 <= retries <= 100:
        raise ValueError(f"--retries must be in [0, 100]; got {retries}")
    from dpaudit.engine.identity import check_env_names

    env = check_env_names(identity_env or ())
    if env and store is None:
        raise ValueError("--identity-env declares what a trial store's identity covers: give "
                         "--store PATH")
    obj = load_audit(audit)
    if not as_json:
        console.print(f"Auditing {audit}: up to {trials:,} trials on the {executor} executor"
                      f"{f' ({workers} workers)' if workers else ''}, seed {seed}"
                      f"{f', store {store}' if store else ''}", markup=False)
    run = run_audit(obj, trials=trials, seed=seed, executor=executor, workers=workers,
                    store=store, resume=resume, sequential=sequential,
                    claimed_epsilon=claimed_epsilon, delta=delta, confidence=confidence,
                    chunk_size=chunk_size, retries=retries, ray_address=ray_address,
                    trial_timeout=trial_timeout, identity_env=env,
                    progress=not as_json and sys.stderr.isatty())
    if resume:
        from dpaudit.engine.identity import coverage_note

        print(f"note: {coverage_note(run.run.config)}", file=sys.stderr)
    doc = run_result(run, spec=audit)
    maybe_write_report(report, report_format, doc, observations=run.observations,
                       title=f"Multi-run audit of {audit}")
    if as_json:
        print_json(doc)
        return
    eng = doc["engine"]
    extra = {"trials": eng["trials"], "computed now": eng["computed"],
             "reused from store": eng["reused"], "failed trials": len(eng["failed_trials"]),
             "trials/s": eng["trials_per_second"] if eng["computed"] else None,
             "seconds": eng["seconds"]}
    # the Audit's verdict (a sequential run's: the e-process's), printed by the one renderer
    print_results([run.result], title=f"Multi-run audit of {audit}", extra=extra,
                  claimed_epsilon=run.claimed_epsilon)
    for f in run.failures[:10]:
        console.print(f"[red]trial {f.trial} failed after {f.attempts} attempts:[/red] "
                      f"{escape(f.error)}")  # the mechanism's message, literally
    if len(run.failures) > 10:
        console.print(f"[red]... {len(run.failures) - 10} more failed trials[/red]")
