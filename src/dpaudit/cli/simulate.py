"""``dpaudit simulate MECHANISM [--flawed NAME] [--canaries N] [--seed S] [--json]``.

Audits a simulated mechanism of :mod:`dpaudit.mechanisms` end to end and prints every method
side by side with the verdict against the mechanism's claimed epsilon:

* gaussian, laplace, rr, subsampled_gaussian, dpsgd -- ONE run with N canaries (Bits Transmission
  Algorithm 2), all one-run methods (``dpaudit.audit_one_run``); the verdict rests on the
  primary (first) method, or on the best row with ``--simultaneous``;
* svt -- the Sparse Vector Technique (Lyu, Su, Li 2017), audited with N independent runs
  (Bits Transmission Algorithm 1) and the classical Clopper-Pearson audit
  (``estimators.multi_run``).

Flaws (``--flawed``): wrong_sensitivity (gaussian, laplace), backprop_clipping and
reused_noise (dpsgd), alg3 / alg4 / alg5 / alg6 (svt; alg1 is the correct SVT).

Each mechanism uses only some of the options (:data:`MECHANISM_OPTIONS`); giving one it does not
use is an error.  ``--sampling-rate`` is the sampling rate of both subsampled_gaussian (default
0.5) and dpsgd (default 0.01); the older ``--q``, ``--eps`` and ``--true-epsilon`` are hidden
aliases of ``--sampling-rate``, ``--epsilon`` and ``--compute-true-epsilon``.
"""

from __future__ import annotations

from contextlib import nullcontext as _nullcontext
from pathlib import Path
from typing import Any

import typer

from dpaudit.cli.common import (
    app,
    console,
    json_payload,
    normalize_name,
    print_results,
    reject_unused,
)
from dpaudit.cli.report_options import (
    REPORT_PARAMS,
    format_option,
    maybe_write_report,
    report_option,
)
from dpaudit.mechanisms.factory import MECHANISM_NAMES, build_mechanism
from dpaudit.mechanisms.svt import SVT_VARIANTS, SparseVector, default_construction, svt_audit
from dpaudit.outcome import Audit
from dpaudit.validation import check_choice, check_count

_COMMON = ("mechanism", "flawed", "canaries", "seed", "delta", "confidence", "as_json",
           *REPORT_PARAMS)
_ONE_RUN = (*_COMMON, "simultaneous", "true_eps")
#: Options (Python parameter names) each mechanism uses.
MECHANISM_OPTIONS = {
    "gaussian": (*_ONE_RUN, "mu", "sensitivity"),
    "laplace": (*_ONE_RUN, "eps", "sensitivity"),
    "rr": (*_ONE_RUN, "eps", "rr_delta"),
    "subsampled_gaussian": (*_ONE_RUN, "mu", "sampling_rate"),
    "dpsgd": (*_ONE_RUN, "noise_multiplier", "sampling_rate", "steps", "batch_size", "threat",
              "score"),
    "svt": (*_COMMON, "eps"),
}
#: Largest --canaries simulated (memory grows linearly: ~100 bytes per canary and method).
MAX_CANARIES = 10_000_000
#: Default sampling rate per mechanism.
DEFAULT_SAMPLING_RATE = {"subsampled_gaussian": 0.5, "dpsgd": 0.01}


#: the DP-SGD simulator's work grows with canaries x steps (1e9: minutes on one core)
MAX_DPSGD_WORK = 10**9


def _check_dpsgd_size(steps: int, canaries: int) -> None:
    t = check_count("--steps", steps, minimum=1)
    if isinstance(canaries, int) and canaries > 0 and t * canaries > MAX_DPSGD_WORK:
        raise ValueError(f"--steps x --canaries must be at most {MAX_DPSGD_WORK:.0e} for the "
                         f"DP-SGD simulator (one noisy step per canary and step); got {t:,} x "
                         f"{canaries:,} -- at most {MAX_DPSGD_WORK // canaries:,} steps with "
                         f"{canaries:,} canaries")


@app.command("simulate")
def simulate_cmd(
    ctx: typer.Context,
    mechanism: str = typer.Argument(..., help="gaussian, laplace, rr, subsampled_gaussian, "
                                              "dpsgd or svt."),
    flawed: str | None = typer.Option(None, "--flawed", help="Flaw to inject: "
                                      "wrong_sensitivity, backprop_clipping, reused_noise, "
                                      "alg3..alg6 (svt)."),
    canaries: int | None = typer.Option(None, "--canaries", help="Canaries (one run); for svt "
                                        "the number of runs.  Default 10,000 (svt: 20,000, "
                                        "alg3: 200,000)."),
    seed: int = typer.Option(0, "--seed", help="Random seed (simulation and tie-breaking)."),
    delta: float = typer.Option(1e-5, "--delta", help="delta at which epsilon is stated."),
    confidence: float = typer.Option(0.95, "--confidence", help="Probability the bound holds."),
    mu: float = typer.Option(1.0, "--mu", help="mu of gaussian / subsampled_gaussian."),
    eps: float = typer.Option(1.0, "--epsilon", help="epsilon of laplace / rr / svt."),
    rr_delta: float = typer.Option(1e-5, "--rr-delta", help="delta of the rr leak symbol."),
    sensitivity: float = typer.Option(2.0, "--sensitivity",
                                      help="True sensitivity for wrong_sensitivity."),
    noise_multiplier: float = typer.Option(1.0, "--noise-multiplier", help="DP-SGD sigma."),
    sampling_rate: float | None = typer.Option(
        None, "--sampling-rate", help="Sampling rate: subsampled_gaussian (default 0.5), dpsgd "
                                      "Poisson rate (default 0.01)."),
    steps: int = typer.Option(1000, "--steps", help="DP-SGD steps."),
    batch_size: int = typer.Option(16, "--batch-size", help="|B| of backprop_clipping."),
    threat: str = typer.Option("white_box", "--threat", help="white_box or last_iterate."),
    score: str = typer.Option("lr", "--score", help="DP-SGD white-box score: lr or sum."),
    simultaneous: bool = typer.Option(False, "--simultaneous",
                                      help="Bonferroni across methods (verdict on best row)."),
    true_eps: bool = typer.Option(False, "--compute-true-epsilon",
                                  help="Also compute the true epsilon (may be slow)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    report: Path | None = report_option(),
    report_format: str = format_option(),
) -> None:
    """One-run audit of a simulated mechanism with every method, and the verdict."""
    from dpaudit.games.audit import one_run_audit

    mechanism = normalize_name(mechanism)
    check_choice("MECHANISM", mechanism, MECHANISM_NAMES)
    used = set(MECHANISM_OPTIONS[mechanism])
    if flawed != "wrong_sensitivity":
        used.discard("sensitivity")
    if flawed != "backprop_clipping":
        used.discard("batch_size")
    if threat == "last_iterate":
        used.discard("score")  # the last-iterate threat model scores by the sum
    reject_unused(ctx, used, f"simulate {mechanism}" + (f" --flawed {flawed}" if flawed else ""))
    seed = check_count("--seed", seed)
    q = sampling_rate if sampling_rate is not None else DEFAULT_SAMPLING_RATE.get(mechanism, 0.5)
    if mechanism == "svt":
        _simulate_svt(flawed, canaries, seed, eps, confidence, as_json, report, report_format)
        return
    if mechanism in ("laplace", "rr"):
        from dpaudit.cli.curve import check_cli_epsilon

        check_cli_epsilon("--epsilon", eps)
    if mechanism == "dpsgd":
        _check_dpsgd_size(steps, canaries if canaries is not None else 10_000)
    mech = build_mechanism(mechanism, flawed, mu=mu, eps=eps, rr_delta=rr_delta, q=q,
                           sensitivity=sensitivity, noise_multiplier=noise_multiplier,
                           sampling_rate=q, steps=steps, batch_size=batch_size,
                           threat=threat, score=score)
    n = _check_canaries(canaries if canaries is not None else 10_000)
    if not as_json:
        console.print(f"Simulating {mech.describe()}: one run, {n} canaries, seed {seed}")
    with console.status(f"auditing {n:,} canaries with every one-run method ...") \
            if not as_json and console.is_terminal else _nullcontext():
        rep = one_run_audit(mech, n, seed, delta=delta, confidence=confidence,
                            true_epsilon=true_eps, simultaneous=simultaneous)
    audit = rep.to_audit()  # the verdict, computed once (dpaudit.outcome.Audit)
    basis = audit.result
    v = audit.message()
    extra: dict[str, Any] = {"mechanism": rep.mechanism, "flaw": mech.flaw, "canaries": n,
                             "seed": seed, "family": rep.settings["family"],
                             "claimed_epsilon": rep.claimed_epsilon}
    if rep.true_epsilon is not None:
        extra["true_epsilon"] = rep.true_epsilon
    maybe_write_report(report, report_format, json_payload(rep.results, extra={
        **extra, "violation": audit.violation, "verdict": v, "verdict_method": basis.method}),
        observations=rep.observations, title=f"One-run audits of {rep.mechanism}")
    if as_json:
        extra.update({"violation": audit.violation, "verdict": v,
                      "verdict_method": basis.method})
        print_results(rep.results, as_json=True, extra=extra)
        return
    print_results(rep.results, true_epsilon=rep.true_epsilon,
                  title=f"One-run audits of {rep.mechanism} (each row valid at "
                        f"{confidence:g})", extra=extra)
    console.print(f"[bold]{v}[/bold] (based on {basis.method})")


def _check_canaries(n: int) -> int:
    n = check_count("--canaries", n, minimum=2)
    if n > MAX_CANARIES:
        raise ValueError(f"--canaries must be an integer in [2, {MAX_CANARIES:,}] (simulation "
                         f"size), got {n:,}")
    return n


def _simulate_svt(flawed: str | None, trials: int | None, seed: int, eps: float,
                  confidence: float, as_json: bool, report: Path | None = None,
                  report_format: str = "html") -> None:
    from dpaudit.estimators.multi_run import multi_run

    variant = flawed or "alg1"
    check_choice("--flawed", variant, SVT_VARIANTS)
    default = 200_000 if variant == "alg3" else 20_000
    n = _check_canaries(trials if trials is not None else default)
    svt = SparseVector(variant, epsilon=eps, cutoff=1 if variant == "alg3" else 10)
    cons = default_construction(variant)
    if not as_json:
        console.print(f"Simulating SVT {variant} (Lyu, Su, Li 2017), eps = {eps:g}, "
                      f"cutoff {svt.cutoff}, '{cons}' construction: {n} independent runs")
    obs = svt_audit(variant, n, seed, epsilon=eps)
    res = multi_run(obs.member, obs.score, delta=0.0, confidence=confidence)
    svt_audit_ = Audit.of(res, svt.claimed_epsilon)  # the verdict, computed once
    v = svt_audit_.message()
    extra: dict[str, Any] = {"mechanism": f"svt[{variant}]", "runs": n, "seed": seed,
                             "construction": cons, "claimed_epsilon": svt.claimed_epsilon,
                             "true_epsilon (Lyu et al.)": svt.true_epsilon}
    maybe_write_report(report, report_format, json_payload([res], extra={
        **extra, "violation": svt_audit_.violation, "verdict": v}),
        observations=obs, title=f"Multi-run audit of SVT {variant}")
    if as_json:
        extra.update({"violation": svt_audit_.violation, "verdict": v})
        print_results([res], as_json=True, extra=extra)
        return
    print_results([res], title=f"Multi-run audit of SVT {variant}", extra=extra)
    console.print(f"[bold]{v}[/bold]")
