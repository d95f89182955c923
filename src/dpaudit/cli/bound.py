"""``dpaudit bound tight|bits|steinke|mahloujifar ...``: an epsilon lower bound from counts.

No raw data is needed: each command takes the counts of a one-run audit (canaries, guesses,
wrong/correct guesses) and prints the bound as a table or, with ``--json``, as the
:class:`~dpaudit.results.AuditResult` dictionary.

Families (``--family``): ``gdp``, ``laplace``, ``eps_delta`` (null delta = ``--delta``) or
``subsampled_gaussian:Q`` (alias ``sgm:Q``) with sampling rate Q in (0, 1].
"""

from __future__ import annotations

from typing import Any

import typer

from dpaudit.cli.common import bound_app, print_results
from dpaudit.curves import resolve_family
from dpaudit.estimators.bits import bits
from dpaudit.estimators.mahloujifar import mahloujifar
from dpaudit.estimators.steinke import steinke
from dpaudit.estimators.tight import tight

__all__ = ["parse_family"]


def parse_family(text: str, delta: float = 0.0) -> Any:
    """CLI spelling of a family -> the ``family`` argument of the estimators (validated)."""
    t = text.strip().lower().replace("-", "_")
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
_FAMILY = typer.Option("gdp", "--family",
                       help="Null family: gdp, laplace, eps_delta, subsampled_gaussian:Q.")
_CLAIM = typer.Option(None, "--claimed-epsilon", help="Claimed epsilon to test.")
_JSON = typer.Option(False, "--json", help="Machine-readable output (AuditResult keys).")


@bound_app.command("bits")
def bits_cmd(
    n: int = typer.Option(..., "--n", help="Number of bits (canaries), all decoded."),
    errors: int = typer.Option(..., "--errors", help="Number of wrong guesses."),
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
    """Bits-transmission audit (seed 000): every bit guessed, `errors` of them wrong."""
    r = bits(n=n, errors=errors, family=parse_family(family, delta), delta=delta,
             confidence=confidence, ci=ci, floor=floor)
    print_results(r, as_json=as_json, claimed_epsilon=claimed_epsilon,
                  title=f"Bits-transmission audit: {errors}/{n} errors ({r.settings['ci']})",
                  extra=None if as_json else {"p_up": r.details["p_up"]})


@bound_app.command("tight")
def tight_cmd(
    n: int = typer.Option(..., "--n", help="Number of canaries (secret bits)."),
    r: int = typer.Option(..., "--r", help="Number of released guesses (top-r by score)."),
    u: int = typer.Option(..., "--u", help="Number of wrong released guesses."),
    family: str = _FAMILY,
    mode: str = typer.Option("exact", "--mode", help="Tail computation mode of E.tight."),
    delta: float = _DELTA,
    confidence: float = _CONF,
    claimed_epsilon: float | None = _CLAIM,
    as_json: bool = _JSON,
) -> None:
    """Tight one-run audit (seed 001): f-DP null, exact order-statistics tail."""
    res = tight(n=n, r=r, u=u, family=parse_family(family, delta), delta=delta,
                              confidence=confidence, mode=mode)
    print_results(res, as_json=as_json, claimed_epsilon=claimed_epsilon,
                  title=f"Tight one-run audit: n={n}, r={r}, u={u}")


@bound_app.command("steinke")
def steinke_cmd(
    m: int = typer.Option(..., "--m", help="Number of canaries."),
    guesses: int = typer.Option(..., "--guesses", help="Number of guesses (k+ + k-)."),
    correct: int = typer.Option(..., "--correct", help="Number of correct guesses."),
    delta: float = _DELTA,
    confidence: float = _CONF,
    claimed_epsilon: float | None = _CLAIM,
    as_json: bool = _JSON,
) -> None:
    """Steinke-Nasr-Jagielski one-run audit ((eps, delta)-DP null)."""
    res = steinke(m=m, guesses=guesses, correct=correct, delta=delta,
                                confidence=confidence)
    print_results(res, as_json=as_json, claimed_epsilon=claimed_epsilon,
                  title=f"Steinke et al. one-run audit: {correct}/{guesses} correct, m={m}")


@bound_app.command("mahloujifar")
def mahloujifar_cmd(
    m: int = typer.Option(..., "--m", help="Number of canaries."),
    guesses: int = typer.Option(..., "--guesses", help="Number of guesses."),
    correct: int = typer.Option(..., "--correct", help="Number of correct guesses."),
    family: str = _FAMILY,
    delta: float = _DELTA,
    confidence: float = _CONF,
    claimed_epsilon: float | None = _CLAIM,
    as_json: bool = _JSON,
) -> None:
    """Mahloujifar-Melis-Chaudhuri f-DP one-run audit."""
    res = mahloujifar(m=m, guesses=guesses, correct=correct, delta=delta,
                                    confidence=confidence, family=parse_family(family, delta))
    print_results(res, as_json=as_json, claimed_epsilon=claimed_epsilon,
                  title=f"Mahloujifar et al. one-run audit: {correct}/{guesses} correct, m={m}")
