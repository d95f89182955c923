"""Two-phase black-box audit of a zoo entry: search on some trials, bound on others.

Phase 1 (search).  For every candidate pair (D0, D1) of the entry, ``search_trials`` runs on
each data set (trial streams of ``search_seed``) give outputs; for every candidate score
function s and threshold t (pooled-score quantiles) the classical multi-run bound
(seed 004, Eqs. 13-16, Clopper-Pearson rates) is evaluated, and the (pair, s, t) with the
largest bound is kept.

Phase 2 (final audit).  A :class:`dpaudit.BlackBoxAudit` with the chosen pair and score runs
``trials`` fresh trials on the trial engine (streams of ``seed``, disjoint from the search
streams: :func:`search_seed_of`) and :func:`dpaudit.estimators.multi_run` is applied with the
single threshold t fixed before these trials were drawn.  With one threshold fixed in advance,
the final bound is exactly the Clopper-Pearson bound of the privacy region of an
(epsilon, delta) claim, valid for every mechanism that meets the claim (no family, no shape
assumption): the search cannot bias it, whatever it looked at.

Across a zoo of K entries, each final audit runs at confidence 1 - (1 - confidence) / K
(Bonferroni), so the probability that the zoo reports any false violation is at most
1 - confidence.

A rho-zCDP claim (``entry.rho``) is audited in its own currency: the same two phases, with
the bound on rho of the same Clopper-Pearson box (:func:`dpaudit.curves.zcdp.zcdp_rho_bound`:
the smallest rho whose trade-off curve the box lies entirely above), never a converted
(epsilon, delta).

Verdicts: "violation" needs the bound above the claim (decided by the one
:class:`dpaudit.outcome.Audit` at the entry's confidence, :mod:`dpaudit.verdict`) AND a
located cause (the library's file and line at the installed version); a bound above the claim
without a located cause is "unexplained" and is never counted as a finding; otherwise "no
violation found".
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.claim import Claim
from dpaudit.engine.audit import run_audit
from dpaudit.engine.seeding import trial_rng
from dpaudit.games.blackbox import BlackBoxAudit
from dpaudit.outcome import Audit
from dpaudit.results import AuditResult
from dpaudit.stats.roc import counts_at_or_above
from dpaudit.validation import check_confidence, check_count
from dpaudit.zoo.entry import Pair, ZooEntry, library_version, locate, tested_claim
from dpaudit.zoo.power import box_bound, power

__all__ = ["SearchChoice", "ZooResult", "search", "audit_entry", "search_seed_of",
           "VERDICTS"]

VERDICTS = ("violation", "unexplained", "no violation found")
_MAX_THRESHOLDS = 200


def search_seed_of(seed: int) -> int:
    """The search phase's seed, the ``"zoo_search"`` purpose of :mod:`dpaudit.randomness`
    (a stream independent of the final audit's trial streams of ``seed``)."""
    from dpaudit.randomness import seed_sequence

    return int(seed_sequence(int(seed), "zoo_search").generate_state(1, np.uint64)[0]) >> 1


def _search_trial(k: int, side: int, t: int) -> int:
    """Trial index of search run t on side ``side`` of candidate pair k (disjoint blocks)."""
    return ((2 * k + side) << 40) + t


@dataclass(frozen=True)
class SearchChoice:
    """What the search phase fixed for the final audit."""

    pair: Pair
    score: Any
    threshold: float
    tested_epsilon: float
    tested_delta: float
    search_epsilon: float
    search_trials: int
    failures: int


@dataclass(frozen=True)
class ZooResult:
    """One row of the zoo table: the entry's facts beside its final audit's
    :class:`~dpaudit.outcome.Audit` (``audit``: the claim as tested, the row and THE verdict at
    the entry's Bonferroni share of the zoo's confidence), which the row carries rather than
    re-deciding; ``verdict`` combines that verdict with a located cause ("violation" /
    "unexplained" / "no violation found").  ``to_dict()`` is the table's keys (without the
    Audit)."""

    key: str
    library: str
    version: str
    description: str
    neighbours: str
    adjacency: str
    score: str
    threshold: float
    claimed_epsilon: float
    delta: float
    tested_epsilon: float
    tested_delta: float
    epsilon_lb: float
    confidence: float
    trials: int
    search_trials: int
    seconds: float
    verdict: str
    cause: str | None
    cause_explanation: str | None
    cause_reference: str | None
    cause_known: bool | None
    randomness: str
    notes: str
    tpr: float
    fpr: float
    currency: str = "epsilon"
    detectable_mass: float = math.nan
    detectable_epsilon: float = math.nan
    pairs_tried: tuple[str, ...] = ()
    scores_tried: tuple[str, ...] = ()
    audit: Audit | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The table row's keys (every field but the Audit; all plain values)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "audit"}


def _outputs(entry: ZooEntry, data: Any, seed: int, block: tuple[int, int], n: int
             ) -> tuple[list[Any], int]:
    out, failed = [], 0
    for t in range(n):
        g = trial_rng(seed, _search_trial(block[0], block[1], t))
        try:
            out.append(entry.mechanism(data, g))
        except Exception:  # noqa: BLE001 -- a failed call is an output of the mechanism
            out.append(float("nan"))
            failed += 1
    return out, failed


def _best_threshold(s0: np.ndarray, s1: np.ndarray, delta: float, confidence: float,
                    currency: str = "epsilon") -> tuple[float, float]:
    """(threshold, bound) maximising the multi-run bound on search scores (member = s1)."""
    pooled = np.concatenate([s0, s1])
    cands = np.unique(np.quantile(pooled, np.linspace(0, 1, _MAX_THRESHOLDS),
                                  method="lower"))
    s0, s1 = np.sort(s0), np.sort(s1)
    tp, fp = counts_at_or_above(s1, s0, cands)
    eps = box_bound(tp, s1.size, fp, s0.size, delta=delta, confidence=confidence,
                    currency=currency)
    i = int(np.argmax(eps))
    return float(cands[i]), float(eps[i])


def search(entry: ZooEntry, *, trials: int, seed: int, confidence: float) -> SearchChoice:
    """Phase 1: choose (pair, score, threshold) on ``trials`` runs per data set."""
    n = check_count("search_trials", trials, minimum=10)
    s_seed = search_seed_of(seed)
    best: tuple[float, float, Pair, Any, float, tuple[float, float]] | None = None
    failures = 0
    for k, pair in enumerate(entry.pairs):
        claim = tested_claim(entry, pair)
        if claim is None:
            continue
        o0, f0 = _outputs(entry, pair.d0, s_seed, (k, 0), n)
        o1, f1 = _outputs(entry, pair.d1, s_seed, (k, 1), n)
        failures += f0 + f1
        if f0 == n and f1 == n:
            raise ValueError(f"{entry.key}: every search call failed on pair {pair.label!r}")
        for sc in entry.scores:
            s0 = np.array([sc(o) for o in o0], dtype=float)
            s1 = np.array([sc(o) for o in o1], dtype=float)
            t, eps = _best_threshold(s0, s1, claim[1], confidence, entry.currency)
            margin = eps - claim[0]
            if best is None or margin > best[0]:
                best = (margin, eps, pair, sc, t, claim)
    if best is None:
        raise ValueError(f"{entry.key}: no candidate pair is a pair of neighbours under the "
                         f"claim's adjacency ({entry.adjacency})")
    _, eps, pair, sc, t, claim = best
    return SearchChoice(pair=pair, score=sc, threshold=t, tested_epsilon=claim[0],
                        tested_delta=claim[1], search_epsilon=eps, search_trials=n,
                        failures=failures)


def audit_entry(entry: ZooEntry, *, trials: int, seed: int = 0, confidence: float = 0.99,
                search_trials: int | None = None, store: str | Path | None = None,
                resume: bool = False) -> ZooResult:
    """Search, then the final multi-run audit of ``entry`` at ``confidence``.

    ``trials`` is the final audit's budget (before ``entry.trials_scale``); the search uses
    ``search_trials`` runs per data set of each candidate pair (default trials // 4)."""
    confidence = check_confidence(confidence)
    trials = check_count("trials", trials, minimum=20)
    n_final = max(20, int(trials * entry.trials_scale))
    n_search = search_trials if search_trials is not None else max(10, n_final // 4)
    start = time.perf_counter()
    choice = search(entry, trials=n_search, seed=seed, confidence=confidence)
    adjacency = "add_remove" if choice.pair.adjacency == "add_remove" else "replace_one"
    audit = BlackBoxAudit(entry.mechanism, choice.pair, choice.score, adjacency=adjacency)
    run = run_audit(audit, trials=n_final, seed=seed, executor="inline", store=store,
                    resume=resume, claimed_epsilon=choice.tested_epsilon,
                    delta=choice.tested_delta,
                    confidence=confidence, threshold=choice.threshold, retries=0)
    res = run.result
    d = res.details
    bound = float(res.epsilon)
    if entry.currency == "rho":
        bound = float(box_bound(int(d["tp"]), int(d["n_members"]), int(d["fp"]),
                                int(d["n_nonmembers"]), delta=0.0, confidence=confidence,
                                currency="rho"))
    # the game draws a secret bit per trial: about half of the final trials run on each
    # data set, so the power is that of n_final // 2 runs per data set
    pw = power(max(1, n_final // 2), confidence, choice.tested_epsilon, choice.tested_delta,
               currency=entry.currency)
    seconds = time.perf_counter() - start
    final = _final_audit(res, bound, choice, entry.currency, confidence)
    above = bool(final.violation)
    where = locate(entry.cause) if entry.cause is not None else None
    if above and where is not None:
        verdict = "violation"
    elif above:
        verdict = "unexplained"
    else:
        verdict = "no violation found"
    cause = f"{where[0]}:{where[1]}" if where is not None else None
    return ZooResult(
        key=entry.key, library=entry.library, version=library_version(entry.library),
        description=entry.description, neighbours=choice.pair.label,
        adjacency=choice.pair.adjacency, score=str(choice.score),
        threshold=choice.threshold, claimed_epsilon=entry.epsilon, delta=entry.delta,
        tested_epsilon=choice.tested_epsilon, tested_delta=choice.tested_delta,
        epsilon_lb=bound, confidence=confidence, trials=n_final,
        search_trials=n_search * 2 * len(entry.pairs), seconds=seconds, verdict=verdict,
        cause=cause,
        cause_explanation=entry.cause.explanation if entry.cause is not None else None,
        cause_reference=entry.cause.reference if entry.cause is not None else None,
        cause_known=entry.cause.known if entry.cause is not None else None,
        randomness=entry.randomness, notes=entry.notes,
        tpr=_rate(d, "tp", "n_members"), fpr=_rate(d, "fp", "n_nonmembers"),
        currency=entry.currency, detectable_mass=pw.mass, detectable_epsilon=pw.epsilon,
        pairs_tried=tuple(p.label for p in entry.pairs if tested_claim(entry, p) is not None),
        scores_tried=tuple(str(sc) for sc in entry.scores), audit=final)


def _final_audit(res: AuditResult, bound: float, choice: SearchChoice, currency: str,
                 confidence: float) -> Audit:
    """The entry's final :class:`Audit`, whose verdict is the statistical half of the entry's
    (the claim as tested, at the entry's Bonferroni share ``confidence`` of the zoo's level: a
    row valid only at less is refused).  A rho-zCDP entry's row carries the bound on rho
    against the claimed rho (its own currency)."""
    row = res if currency == "epsilon" else dataclasses.replace(
        res, epsilon=bound, settings={**res.settings, "currency": currency})
    claim = Claim(choice.tested_epsilon, choice.tested_delta)
    return Audit.of(row, claim, confidence=confidence)


def _rate(details: Mapping[str, Any], k: str, n: str) -> float:
    try:
        return float(details[k]) / float(details[n])
    except (KeyError, ZeroDivisionError, TypeError):
        return math.nan
