"""``dpaudit bound tight|bits|steinke|mahloujifar ...``: an epsilon lower bound from counts.

No raw data is needed: each command takes the counts of a one-run audit with the same names
everywhere -- ``--canaries`` (secret bits), ``--guesses`` (released guesses; bits: every canary
is guessed) and exactly one of ``--wrong`` / ``--correct`` -- and prints the bound as a table or,
with ``--json``, as the :class:`~dpaudit.results.AuditResult` dictionary.  The older spellings
(``--n --r --u``, ``--m``, ``--errors``) are hidden aliases for one release.

The commands are one table, :data:`BOUND_METHODS` (method -> estimator, its own options, the
table's title): :func:`run_bound` checks the counts and prints for every method, and each
command's typer signature is built from its row.

Families (``--family``): ``eps_delta`` (the default; null delta = ``--delta``), valid for every
mechanism meeting an (epsilon, ``--delta``) claim; ``gdp``, ``laplace`` or
``subsampled_gaussian:Q`` (alias ``sgm:Q``, sampling rate Q in (0, 1]) assume the mechanism's
trade-off curve has that shape, and the output says so ("assuming the mechanism is μ-GDP").
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import typer

from dpaudit.claim import Claim
from dpaudit.cli.common import (
    app,
    bound_app,
    check_claimed_epsilon,
    normalize_name,
    print_results,
    resolve_wrong_correct,
)
from dpaudit.estimators.dispatch import bound
from dpaudit.results import AuditResult
from dpaudit.validation import check_nested_counts

__all__ = ["parse_family", "BoundMethod", "BOUND_METHODS", "run_bound"]

app.add_typer(bound_app, name="bound")  # the sub-commands: this module and dpaudit.cli.lifted


def parse_family(text: str, delta: float = 0.0) -> Any:
    """CLI spelling of a family -> the ``family`` argument of the estimators (validated)."""
    t = normalize_name(text)
    if ":" in t:
        name, _, q = t.partition(":")
        if name not in ("subsampled_gaussian", "sgm"):
            raise ValueError(f"--family: only subsampled_gaussian takes a parameter "
                             f"(subsampled_gaussian:Q); got {text!r}")
        try:
            qv = float(q)
        except ValueError:
            raise ValueError(f"--family: sampling rate must be a number in (0, 1], got "
                             f"{q!r}") from None
        fam: Any = ("subsampled_gaussian", qv)
    else:
        fam = t
    try:  # validated as the null of an (epsilon, delta) claim (dpaudit.claim.Claim)
        Claim(0.0, delta, family=fam)
    except ValueError as e:
        raise ValueError(f"--family: {e} (CLI spelling: gdp, laplace, eps_delta, "
                         f"subsampled_gaussian:Q)") from None
    return fam


_DELTA = typer.Option(1e-5, "--delta", help="delta at which epsilon is stated.")
_CONF = typer.Option(0.95, "--confidence", help="Probability that the bound holds.")
_FAMILY = typer.Option("eps_delta", "--family",
                       help="Null family: eps_delta (default; valid for every (epsilon, "
                            "delta) claim), or an assumption about the mechanism: gdp, "
                            "laplace, subsampled_gaussian:Q.")
_CLAIM = typer.Option(None, "--claimed-epsilon", help="Claimed epsilon to test.")
_JSON = typer.Option(False, "--json", help="Machine-readable output (AuditResult keys).")
#: counts above 2^53 are not exact as floats (and overflow C longs further up)
MAX_COUNT = 2**53


def _counts_fit(**counts: int | None) -> None:
    for name, v in counts.items():
        if v is not None and isinstance(v, int) and not -MAX_COUNT <= v <= MAX_COUNT:
            raise ValueError(f"--{name} must be an integer in [0, 2^53 = {MAX_COUNT:,}], "
                             f"got {v:.3g}")
_WRONG = typer.Option(None, "--wrong", help="Number of wrong guesses (or give --correct).")
_CORRECT = typer.Option(None, "--correct", help="Number of correct guesses (or give --wrong).")


@dataclass(frozen=True)
class BoundMethod:
    """One ``dpaudit bound METHOD`` command: its options and the estimator it calls.

    Every command takes ``--canaries``, ``--guesses`` (unless every canary is guessed:
    ``guesses_help`` None), ``--wrong`` / ``--correct``, ``--family`` (if ``family``), its
    own ``options`` (parameter name, type, typer option), then ``--delta``,
    ``--confidence``, ``--claimed-epsilon`` and ``--json``.  ``estimate(canaries, guesses,
    wrong, family, delta, confidence, **options)`` gives the result; ``title(canaries,
    guesses, wrong, result)`` the table's title; ``extra(result)`` further table rows."""

    name: str
    doc: str
    canaries_help: str
    guesses_help: str | None
    family: bool
    estimate: Callable[..., AuditResult]
    title: Callable[[int, int, int, AuditResult], str]
    options: tuple[tuple[str, Any, Any], ...] = ()
    extra: Callable[[AuditResult], dict[str, Any]] | None = None


#: the ``dpaudit bound`` family (``lifted``, on a file, is :mod:`dpaudit.cli.lifted`)
BOUND_METHODS: tuple[BoundMethod, ...] = (
    BoundMethod(
        "bits", "Bits-transmission audit (Bits Transmission): every bit guessed, `wrong` of "
                "them wrong.",
        "Number of bits (canaries), all guessed.", None, True,
        lambda n, g, u, fam, delta, conf, ci, floor: bound(
            "bits", canaries=n, guesses=n, wrong=u, family=fam, delta=delta,
            confidence=conf, ci=ci, floor=floor),
        lambda n, g, u, r: f"Bits-transmission audit: {u}/{n} wrong ({r.settings['ci']})",
        options=(("ci", str, typer.Option(
                     "clopper_pearson", "--ci",
                     help="clopper_pearson (valid), hoeffding (valid) or aci (the paper's "
                          "literal Algorithm 3; may under-cover).")),
                 ("floor", str, typer.Option("bayes", "--floor",
                                             help="Error floor: bayes or information."))),
        extra=lambda r: {"p_up": r.details["p_up"]}),
    BoundMethod(
        "tight", "Tight one-run audit (Tight One-Run): f-DP null, exact order-statistics "
                 "tail.",
        "Number of canaries (secret bits).", "Number of released guesses (top by score).",
        True,
        lambda n, g, u, fam, delta, conf, mode: bound(
            "tight", canaries=n, guesses=g, wrong=u, family=fam, delta=delta,
            confidence=conf, mode=mode),
        lambda n, g, u, r: f"Tight one-run audit: {n} canaries, {g} guesses, {u} wrong",
        options=(("mode", str, typer.Option("exact", "--mode",
                                            help="Tail computation mode of E.tight.")),)),
    BoundMethod(
        "steinke", "Steinke-Nasr-Jagielski one-run audit ((eps, delta)-DP null).",
        "Number of canaries (secret bits).", "Number of guesses (k+ + k-).", False,
        lambda n, g, u, fam, delta, conf: bound(
            "steinke", canaries=n, guesses=g, wrong=u, delta=delta, confidence=conf),
        lambda n, g, u, r: f"Steinke et al. one-run audit: {g - u}/{g} correct, {n} canaries"),
    BoundMethod(
        "mahloujifar", "Mahloujifar-Melis-Chaudhuri f-DP one-run audit.",
        "Number of canaries (secret bits).", "Number of released guesses.", True,
        lambda n, g, u, fam, delta, conf: bound(
            "mahloujifar", canaries=n, guesses=g, wrong=u, delta=delta, confidence=conf,
            family=fam),
        lambda n, g, u, r: f"Mahloujifar et al. one-run audit: {g - u}/{g} correct, {n} "
                           f"canaries"),
)


def run_bound(method: BoundMethod, *, canaries: int, guesses: int | None = None,
              wrong: int | None = None, correct: int | None = None,
              family: str = "eps_delta", delta: float = 1e-5, confidence: float = 0.95,
              claimed_epsilon: float | None = None, as_json: bool = False,
              **options: Any) -> None:
    """One ``dpaudit bound METHOD`` invocation: check the counts (each error names its
    option), compute the bound and print it (table, or ``--json``: the AuditResult keys)."""
    counts = {"canaries": canaries, "guesses": guesses} if method.guesses_help else \
        {"canaries": canaries}
    _counts_fit(**counts, wrong=wrong, correct=correct)
    claimed_epsilon = check_claimed_epsilon(claimed_epsilon)
    if method.guesses_help is None:  # every canary is guessed
        guesses = canaries
        u = resolve_wrong_correct(canaries, wrong, correct, total_name="--canaries")
    else:
        assert guesses is not None
        check_nested_counts(**{"--canaries": canaries, "--guesses": guesses})
        u = resolve_wrong_correct(guesses, wrong, correct)
    fam = parse_family(family, delta) if method.family else None
    r = method.estimate(canaries, guesses, u, fam, delta, confidence, **options)
    print_results(r, as_json=as_json, claimed_epsilon=claimed_epsilon,
                  title=method.title(canaries, guesses, u, r),
                  extra=None if as_json or method.extra is None else method.extra(r))


def _parameters(method: BoundMethod) -> list[tuple[str, Any, Any]]:
    """(name, type, typer option) of ``method``'s command, in ``--help`` order."""
    ps: list[tuple[str, Any, Any]] = [
        ("canaries", int, typer.Option(..., "--canaries", help=method.canaries_help))]
    if method.guesses_help is not None:
        ps.append(("guesses", int, typer.Option(..., "--guesses", help=method.guesses_help)))
    ps += [("wrong", int | None, _WRONG), ("correct", int | None, _CORRECT)]
    if method.family:
        ps.append(("family", str, _FAMILY))
    ps += [*method.options, ("delta", float, _DELTA), ("confidence", float, _CONF),
           ("claimed_epsilon", float | None, _CLAIM), ("as_json", bool, _JSON)]
    return ps


def _register(method: BoundMethod) -> Callable[..., None]:
    """Add ``method``'s command to ``dpaudit bound``: typer reads its options from the
    signature, built here from the table."""
    params = _parameters(method)

    def command(**kwargs: Any) -> None:
        run_bound(method, **kwargs)

    command.__name__ = f"{method.name}_cmd"
    command.__doc__ = method.doc
    command.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=opt, annotation=tp)
         for name, tp, opt in params], return_annotation=None)
    command.__annotations__ = {name: tp for name, tp, _ in params} | {"return": None}
    bound_app.command(method.name)(command)
    return command


for _method in BOUND_METHODS:
    _register(_method)
