"""``dpaudit one-run SCORES``: every one-run audit method side by side on one score file.

SCORES is a CSV with columns ``member,score`` (or Parquet / ``.npz`` / JSON; other column names
with ``--member-col`` / ``--score-col``, per-user rows with ``--group-col``): the
secret bit of each canary (1 = included) and its score from ONE run (higher = more likely 1).
Each bound row is valid at the confidence on its own (Bonferroni over the guess-count grid,
see :func:`dpaudit.audit_one_run`); estimates are printed "~ x (estimate)".  The verdict is the
:class:`dpaudit.outcome.Audit`'s: the first method of ``--methods`` (the primary method); with
``--simultaneous`` the failure probability is also split across methods and the verdict uses
the best row among those valid for the claim as stated.  Rows that are bounds only under an
assumption about the scores (hockey_stick: independent scores; gaussian_pair_equal: Gaussian
scores of a common variance) decide only with ``--assume NAME`` (and the verdict then says
"assuming ..."); asymptotic rows only with ``--allow-asymptotic``; estimates never.

Null family of the f-DP methods (``--family``): ``eps_delta`` at ``--delta`` by default, valid
for every mechanism meeting the (``--claimed-epsilon``, ``--delta``) claim.  ``gdp`` (or any
other family) assumes the mechanism's shape: the table, the JSON (``assumption``,
``family_is_assumption``), the verdict and the report card say "assuming the mechanism is
μ-GDP".
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer

from dpaudit.cli.bound import parse_family
from dpaudit.cli.common import (
    app,
    check_claimed_epsilon,
    console,
    json_payload,
    print_json,
    print_results,
)
from dpaudit.cli.report_options import format_option, maybe_write_report, report_option
from dpaudit.cli.table_options import (
    aggregate_option,
    allow_duplicates_option,
    group_col_option,
    load_table,
    member_col_option,
    score_col_option,
)
from dpaudit.estimators.one_run import (
    DEFAULT_FRACTIONS,
    DISTRIBUTION_METHODS,
    ONE_RUN_METHODS,
    audit_one_run,
)
from dpaudit.registry import check_assumptions, guarantee_kind, required_assumption
from dpaudit.validation import check_nonnegative


def _methods(text: str) -> tuple[str, ...]:
    ms = tuple(t.strip() for t in text.split(",") if t.strip())
    bad = [m for m in ms if m not in ONE_RUN_METHODS + DISTRIBUTION_METHODS]
    if not ms or bad:
        raise ValueError(f"--methods must be a comma-separated subset of "
                         f"{','.join(ONE_RUN_METHODS + DISTRIBUTION_METHODS)}; got {text!r}")
    return ms


def _assume(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    try:
        return tuple(sorted(check_assumptions(names)))
    except ValueError as e:
        raise ValueError(f"--assume: {e}") from None


def _fractions(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise ValueError(f"--fractions must be comma-separated numbers in (0, 1]; got "
                         f"{text!r}") from None


@app.command("one-run")
def one_run_cmd(
    scores: Path = typer.Argument(..., help="CSV (columns member,score), .npz or .json."),
    delta: float = typer.Option(1e-5, "--delta", help="delta at which epsilon is stated."),
    confidence: float = typer.Option(0.95, "--confidence",
                                     help="Probability that each bound holds."),
    claimed_epsilon: float | None = typer.Option(None, "--claimed-epsilon",
                                                 help="Claimed epsilon to test."),
    methods: str = typer.Option(",".join(ONE_RUN_METHODS), "--methods",
                                help="Comma-separated methods; the first is the primary."),
    family: str = typer.Option("eps_delta", "--family",
                               help="Null family: eps_delta (default; valid for every "
                                    "(epsilon, delta) claim), or an assumption about the "
                                    "mechanism: gdp, laplace, subsampled_gaussian:Q."),
    fractions: str = typer.Option(",".join(f"{f:g}" for f in DEFAULT_FRACTIONS), "--fractions",
                                  help="Grid of r/n values (Bonferroni-corrected)."),
    bits_ci: str = typer.Option("clopper_pearson", "--bits-ci",
                                help="CI of the bits method: clopper_pearson, hoeffding, aci."),
    simultaneous: bool = typer.Option(
        False, "--simultaneous",
        help="Bonferroni across methods too: the best row valid for the claim as stated (or "
             "under an --assume'd assumption) decides."),
    assume: str | None = typer.Option(
        None, "--assume",
        help="Comma-separated named assumptions that let rows resting on them decide the "
             "verdict: independent_scores (hockey_stick), gaussian_scores "
             "(gaussian_pair_equal), asymptotic (gaussian_pair_fit, hockey_stick_histogram; "
             "as --allow-asymptotic). Printed with the verdict (docs/cli.md)."),
    true_epsilon: float | None = typer.Option(None, "--true-epsilon",
                                              help="Reference epsilon for a ratio column."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random tie-breaking of scores."),
    distribution: bool = typer.Option(
        False, "--distribution",
        help="Add the distribution-aware rows (hockey_stick, gaussian_pair, "
             "gaussian_pair_equal; asymptotic gaussian_pair_fit, hockey_stick_histogram)."),
    allow_asymptotic: bool = typer.Option(
        False, "--allow-asymptotic",
        help="Let rows without a finite-sample guarantee (plug-in estimates) decide the "
             "verdict: an assumption, named in the verdict."),
    member_col: str = member_col_option(),
    score_col: str = score_col_option(),
    group_col: str | None = group_col_option(),
    aggregate: str | None = aggregate_option(),
    allow_duplicates: bool = allow_duplicates_option(),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    report: Path | None = report_option(),
    report_format: str = format_option(),
) -> None:
    """One-run audits (tight, bits, Steinke, Mahloujifar) side by side on the same guesses."""
    obs = load_table(scores, member_col, score_col, group_col, aggregate, allow_duplicates)
    ms = _methods(methods)
    if distribution:
        ms = ms + tuple(m for m in DISTRIBUTION_METHODS if m not in ms)
    claimed_epsilon = check_claimed_epsilon(claimed_epsilon)
    if true_epsilon is not None:
        true_epsilon = check_nonnegative("--true-epsilon", true_epsilon)
    audit = audit_one_run(obs.member, obs.score, delta=delta, confidence=confidence,
                          methods=ms, family=parse_family(family, delta),
                          fractions=_fractions(fractions), bits_ci=bits_ci,
                          simultaneous=simultaneous, seed=seed,
                          allow_asymptotic=allow_asymptotic, claimed_epsilon=claimed_epsilon,
                          assume=_assume(assume))
    results = list(audit.results)
    # the verdict and its guarantee were computed once, by the Audit (dpaudit.outcome)
    v = audit.message()
    basis = audit.result
    extra: dict[str, object] = {"canaries": obs.n, "members": obs.n_members}
    audit = dataclasses.replace(audit, true_epsilon=true_epsilon, extra=extra)
    maybe_write_report(report, report_format, json_payload(audit), observations=obs,
                       inputs=[scores], title=f"One-run audits of {scores.name}")
    if as_json:
        print_json(json_payload(audit))
        return
    print_results(results, true_epsilon=true_epsilon,
                  title=f"One-run audits of {scores.name} (each bound valid at "
                        f"{confidence:g} on its own; grid Bonferroni-corrected)",
                  extra={"canaries": obs.n, "members": obs.n_members})
    for r in results:
        s = r.settings
        if "k_plus" not in s:  # distribution-aware row: its guarantee and assumption
            need = required_assumption(r)
            when = ("never decides the verdict (an estimate)" if need == "never" else
                    "decides only with --allow-asymptotic" if need == "asymptotic" else
                    f"decides only with --assume {need}" if need is not None else
                    "valid for the claim as stated")
            console.print(f"{r.method}: {guarantee_kind(r)}, assuming {r.assumption}; {when}",
                          markup=False)
            continue
        console.print(f"{r.method}: k+={s['k_plus']} k-={s['k_minus']} wrong={s['wrong']}"
                      f"/{s['guesses']}; grid {s['grid_size']}, per-test conf "
                      f"{s['per_test_confidence']:.5f}")
    if v:
        console.print(f"[bold]{v}[/bold] (based on {basis.method})")
