"""``dpaudit bound tight|bits|steinke|mahloujifar ...``: an epsilon lower bound from counts.

No raw data is needed: each command takes the counts of a one-run audit with the same names
everywhere -- ``--canaries`` (secret bits), ``--guesses`` (released guesses; bits: every canary
is guessed) and exactly one of ``--wrong`` / ``--correct`` -- and prints the bound as a table or,
with ``--json``, as the :class:`~dpaudit.results.AuditResult` dictionary.  The older spellings
(``--n --r --u``, ``--m``, ``--errors``) are hidden aliases for one release.

Families (``--family``): ``eps_delta`` (the default; null delta = ``--delta``), valid for every
mechanism meeting an (epsilon, ``--delta``) claim; ``gdp``, ``laplace`` or
``subsampled_gaussian:Q`` (alias ``sgm:Q``, sampling rate Q in (0, 1]) assume the mechanism's
trade-off curve has that shape, and the output says so ("assuming the mechanism is μ-GDP").
"""

from __future__ import annotations

from typing import Any

import typer

from dpaudit.cli.common import (
    app,
    bound_app,
    check_claimed_epsilon,
    normalize_name,
    print_results,
    resolve_wrong_correct,
)
from dpaudit.curves import resolve_family
from dpaudit.estimators.bits import bits
from dpaudit.estimators.mahloujifar import mahloujifar
from dpaudit.estimators.steinke import steinke
from dpaudit.estimators.tight import tight
from dpaudit.validation import check_nested_counts

__all__ = ["parse_family"]

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
    try:
        resolve_family(fam, delta)
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
_CANARIES = typer.Option(..., "--canaries", help="Number of canaries (secret bits).")
_GUESSES = typer.Option(..., "--guesses", help="Number of released guesses.")
_WRONG = typer.Option(None, "--wrong", help="Number of wrong guesses (or give --correct).")
_CORRECT = typer.Option(None, "--correct", help="Number of correct guesses (or give --wrong).")


@bound_app.command("bits")
def bits_cmd(
    n: int = typer.Option(..., "--canaries", help="Number of bits (canaries), all guessed."),
    wrong: int | None = _WRONG,
    correct: int | None = _CORRECT,
    family: str = _FAMILY,
    ci: str = typer.Option("clopper_pearson", "--ci",
                           help="clopper_pearson (valid), hoeffding (valid) or aci "
                                "(the paper's literal Algorithm 3; may under-cover)."),
    floor: str = typer.Option("bayes", "--floor", help="Error floor: bayes or information."),
    delta: float = _DELTA,
    confidence: float = _CONF,
    claimed_epsilon: float | None = _CLAIM,
    as_json: bool = _JSON,
) -> None:
    """Bits-transmission audit (Bits Transmission): every bit guessed, `wrong` of them wrong."""
    claimed_epsilon = check_claimed_epsilon(claimed_epsilon)
    errors = resolve_wrong_correct(n, wrong, correct, total_name="--canaries")
    r = bits(n=n, errors=errors, family=parse_family(family, delta), delta=delta,
             confidence=confidence, ci=ci, floor=floor)
    print_results(r, as_json=as_json, claimed_epsilon=claimed_epsilon,
                  title=f"Bits-transmission audit: {errors}/{n} wrong ({r.settings['ci']})",
                  extra=None if as_json else {"p_up": r.details["p_up"]})


@bound_app.command("tight")
def tight_cmd(
    n: int = _CANARIES,
    r: int = typer.Option(..., "--guesses", help="Number of released guesses (top by score)."),
    wrong: int | None = _WRONG,
    correct: int | None = _CORRECT,
    family: str = _FAMILY,
    mode: str = typer.Option("exact", "--mode", help="Tail computation mode of E.tight."),
    delta: float = _DELTA,
    confidence: float = _CONF,
    claimed_epsilon: float | None = _CLAIM,
    as_json: bool = _JSON,
) -> None:
    """Tight one-run audit (Tight One-Run): f-DP null, exact order-statistics tail."""
    claimed_epsilon = check_claimed_epsilon(claimed_epsilon)
    check_nested_counts(**{"--canaries": n, "--guesses": r})
    u = resolve_wrong_correct(r, wrong, correct)
    res = tight(n=n, r=r, u=u, family=parse_family(family, delta), delta=delta,
                confidence=confidence, mode=mode)
    print_results(res, as_json=as_json, claimed_epsilon=claimed_epsilon,
                  title=f"Tight one-run audit: {n} canaries, {r} guesses, {u} wrong")


@bound_app.command("steinke")
def steinke_cmd(
    m: int = _CANARIES,
    guesses: int = typer.Option(..., "--guesses", help="Number of guesses (k+ + k-)."),
    wrong: int | None = _WRONG,
    correct: int | None = _CORRECT,
    delta: float = _DELTA,
    confidence: float = _CONF,
    claimed_epsilon: float | None = _CLAIM,
    as_json: bool = _JSON,
) -> None:
    """Steinke-Nasr-Jagielski one-run audit ((eps, delta)-DP null)."""
    claimed_epsilon = check_claimed_epsilon(claimed_epsilon)
    check_nested_counts(**{"--canaries": m, "--guesses": guesses})
    correct = guesses - resolve_wrong_correct(guesses, wrong, correct)
    res = steinke(m=m, guesses=guesses, correct=correct, delta=delta, confidence=confidence)
    print_results(res, as_json=as_json, claimed_epsilon=claimed_epsilon,
                  title=f"Steinke et al. one-run audit: {correct}/{guesses} correct, "
                        f"{m} canaries")


@bound_app.command("mahloujifar")
def mahloujifar_cmd(
    m: int = _CANARIES,
    guesses: int = _GUESSES,
    wrong: int | None = _WRONG,
    correct: int | None = _CORRECT,
    family: str = _FAMILY,
    delta: float = _DELTA,
    confidence: float = _CONF,
    claimed_epsilon: float | None = _CLAIM,
    as_json: bool = _JSON,
) -> None:
    """Mahloujifar-Melis-Chaudhuri f-DP one-run audit."""
    claimed_epsilon = check_claimed_epsilon(claimed_epsilon)
    check_nested_counts(**{"--canaries": m, "--guesses": guesses})
    correct = guesses - resolve_wrong_correct(guesses, wrong, correct)
    res = mahloujifar(m=m, guesses=guesses, correct=correct, delta=delta,
                      confidence=confidence, family=parse_family(family, delta))
    print_results(res, as_json=as_json, claimed_epsilon=claimed_epsilon,
                  title=f"Mahloujifar et al. one-run audit: {correct}/{guesses} correct, "
                        f"{m} canaries")
