"""One calling convention for the estimators that read guess counts: the CLI's names.

``bound(method, canaries=, guesses=, wrong=, family=, delta=1e-5, confidence=0.95)`` runs the
registered method (:data:`dpaudit.registry.ESTIMATORS`) on the counts of a one-run audit --
``canaries`` secret bits, ``guesses`` released guesses, ``wrong`` of them wrong -- with the
same defaults for every method.  The estimators' own spellings stay accepted here (``n`` /
``m`` for canaries, ``r`` for guesses, ``u`` / ``errors`` for wrong, ``correct`` for guesses -
wrong), as do the functions themselves (``E.tight(n, r, u)``, ``E.bits(n, errors)``,
``E.steinke(m, guesses, correct)``, ``E.mahloujifar(m, guesses, correct)``).  An unknown
method is an error naming the known ones, never another method.
"""

from __future__ import annotations

from typing import Any

from dpaudit.curves.families import DEFAULT_FAMILY
from dpaudit.registry import get
from dpaudit.results import AuditResult
from dpaudit.validation import check_count, check_nested_counts

__all__ = ["bound", "COUNT_METHODS", "ALIASES"]

#: the registered methods that read (canaries, guesses, wrong)
COUNT_METHODS = ("tight", "bits", "steinke", "mahloujifar")
#: old keyword spellings -> the convention's names
ALIASES = {"n": "canaries", "m": "canaries", "r": "guesses", "u": "wrong", "errors": "wrong"}


def _counts(kwargs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in list(kwargs):
        if key in ALIASES:
            new = ALIASES[key]
            if new in kwargs or new in out:
                raise ValueError(f"give {new} once (got both {new} and its old spelling "
                                 f"{key})")
            out[new] = kwargs.pop(key)
    return out


def bound(method: str, *, canaries: int | None = None, guesses: int | None = None,
          wrong: int | None = None, correct: int | None = None, family: Any = DEFAULT_FAMILY,
          delta: float = 1e-5, confidence: float = 0.95, **options: Any) -> AuditResult:
    """The lower bound of ``method`` on one-run counts (module docstring).

    ``bits`` guesses every canary: ``guesses`` defaults to ``canaries`` and must equal it.
    ``steinke`` has the (eps, delta) null only: a ``family`` other than the default is an
    error.  ``options`` go to the estimator (``mode`` of tight; ``ci``, ``floor`` of bits).
    """
    e = get(method)
    if method not in COUNT_METHODS:
        raise ValueError(f"method {method!r} reads {e.reads}, not guess counts; the count "
                         f"methods are {', '.join(COUNT_METHODS)}")
    given = _counts(options)
    explicit = {"canaries": canaries, "guesses": guesses, "wrong": wrong}
    for name in given:
        if explicit[name] is not None:
            raise ValueError(f"give {name} once (got both {name} and an old spelling)")
    canaries = given.get("canaries", canaries)
    guesses = given.get("guesses", guesses)
    wrong = given.get("wrong", wrong)
    if canaries is None:
        raise ValueError("canaries must be given (an integer >= 1)")
    n = check_count("canaries", canaries, minimum=1)
    if guesses is None and method == "bits":
        guesses = n
    if guesses is None:
        raise ValueError("guesses must be given (an integer in [1, canaries])")
    if (wrong is None) == (correct is None):
        raise ValueError("give exactly one of wrong and correct (integers in [0, guesses])")
    if wrong is not None:
        n, g, u = check_nested_counts(canaries=n, guesses=guesses, wrong=wrong)
    else:
        n, g, c = check_nested_counts(canaries=n, guesses=guesses, correct=correct)
        u = g - c
    if method == "tight":
        from dpaudit.estimators.tight import tight

        return tight(n=n, r=g, u=u, family=family, delta=delta, confidence=confidence,
                     **options)
    if method == "bits":
        if g != n:
            raise ValueError(f"bits guesses every canary: guesses must equal canaries = {n}; "
                             f"got {g}")
        from dpaudit.estimators.bits import bits

        return bits(n=n, errors=u, family=family, delta=delta, confidence=confidence,
                    **options)
    if method == "steinke":
        if family is not DEFAULT_FAMILY and family != DEFAULT_FAMILY:
            raise ValueError("family: steinke's null is always (eps, delta)-DP; do not pass "
                             "family")
        from dpaudit.estimators.steinke import steinke

        return steinke(m=n, guesses=g, correct=g - u, delta=delta, confidence=confidence,
                       **options)
    from dpaudit.estimators.mahloujifar import mahloujifar

    return mahloujifar(m=n, guesses=g, correct=g - u, delta=delta, confidence=confidence,
                       family=family, **options)
