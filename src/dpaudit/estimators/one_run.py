"""One-run audits side by side: every method on the same canaries, scores and guesses.

Input: per-canary truth bits ``member`` (1 = canary included / secret bit 1; must be i.i.d.
uniform) and ``score`` (higher = more likely bit 1) from ONE run of the mechanism.  The guesses
follow Steinke, Nasr & Jagielski's rule, which every method accepts (TOR notes §2.2): sort by
score, guess 1 for the ``k_plus`` highest scores, 0 for the ``k_minus`` lowest, abstain on the
rest; ``r = k_plus + k_minus`` guesses, ``u`` of them wrong.

Methods (estimators with the contracts of DESIGN.md):

Null family of the f-DP methods: "eps_delta" at ``delta`` by default, the one null valid for
every mechanism meeting an (eps, delta) claim (:mod:`dpaudit.curves.families`); "gdp" and the
other shapes are assumptions, labelled in every row (``AuditResult.assumption``).

* ``"tight"``        Tight One-Run, exact order-statistics tail: ``E.tight(n, r, u, family)``;
* ``"bits"``         Bits Transmission, every bit decoded (r = n): ``E.bits(n, errors, family,
ci)``;
* ``"steinke"``      Steinke et al. 2023, (eps, delta) null: ``E.steinke(m, guesses, correct)``;
* ``"mahloujifar"``  Mahloujifar et al. 2024, f-DP null: ``E.mahloujifar(m, guesses, correct)``.

Distribution-aware rows (``DISTRIBUTION_METHODS``, docs/one_run_distribution.md) use the
scores themselves rather than guesses: ``"hockey_stick"`` (finite-sample, model-free),
``"gaussian_pair_equal"`` (finite-sample under an equal-variance Gaussian model, printed as an
assumption), ``"gaussian_pair"`` (unequal variances: an estimate, ``ESTIMATE_METHODS``, never
the primary row nor a verdict: it over-claims on DP-SGD scores) and the plug-in estimates
``"gaussian_pair_fit"`` / ``"hockey_stick_histogram"`` (``guarantee="asymptotic"``: never the
primary row unless ``allow_asymptotic=True``).  Neither kind is counted in the
``simultaneous`` split.

Choosing (k_plus, k_minus) after seeing the data is a multiple-testing problem: reporting the
best of G bounds each computed at confidence gamma over-claims.  Here each method evaluates a
fixed grid of G guess counts (default r/n in {0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1}, k_plus =
ceil(r/2), k_minus = floor(r/2)), each at confidence ``1 - (1 - gamma)/G`` (**Bonferroni over
the grid**), and reports the largest bound.  By the union bound, P[reported bound > true eps]
<= sum_g (1 - gamma)/G = 1 - gamma, so every reported row is valid at ``confidence``.
"bits" uses a single point (r = n: all guessed, split at the median or at ``bits_threshold``),
so it needs no correction.  The rows are each valid on their own; the best of several methods
is valid only with ``simultaneous=True``, which further splits 1 - gamma across the methods.

Ties in the scores are broken by a random priority drawn from ``seed``: breaking ties by input
order would let the order of the file (e.g. members first) leak the truth into the guesses.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing as mp
import pickle
import warnings
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np
from scipy import stats

from dpaudit import registry
from dpaudit.claim import Claim
from dpaudit.curves import DEFAULT_FAMILY, resolve_family
from dpaudit.estimators.bits import CI_METHODS, bits
from dpaudit.estimators.guessing import _guesses_from_sorted
from dpaudit.estimators.mahloujifar import mahloujifar_many
from dpaudit.estimators.steinke import steinke_many
from dpaudit.estimators.tight import tight_many
from dpaudit.observations import MembershipObservations
from dpaudit.outcome import Audit
from dpaudit.registry import check_assumptions
from dpaudit.results import AuditResult
from dpaudit.validation import (
    check_choice,
    check_confidence,
    check_count,
    check_delta,
    check_finite_array,
)

__all__ = ["audit_one_run", "guess_counts", "default_grid", "ONE_RUN_METHODS",
           "DEFAULT_FRACTIONS", "DISTRIBUTION_METHODS", "ASYMPTOTIC_METHODS",
           "ESTIMATE_METHODS"]

#: the one-run methods, as the estimator registry lists them (dpaudit.registry)
ONE_RUN_METHODS = registry.names(reads="guess counts", one_run=True)
DISTRIBUTION_METHODS = registry.names(reads="scores", one_run=True)
ASYMPTOTIC_METHODS = tuple(m for m in DISTRIBUTION_METHODS
                           if registry.get(m).assumption == "asymptotic")
#: rows that are estimates under a model the audited mechanism need not meet: never a verdict
ESTIMATE_METHODS = tuple(m for m in DISTRIBUTION_METHODS
                         if registry.get(m).guarantee == registry.ESTIMATE
                         and m not in ASYMPTOTIC_METHODS)
DEFAULT_FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0)


def default_grid(n: int, fractions: Sequence[float] = DEFAULT_FRACTIONS) -> list[tuple[int, int]]:
    """(k_plus, k_minus) pairs with r = floor(f n + 1/2), k_plus = ceil(r/2), k_minus = floor(r/2);
    points with r < 2 are dropped and duplicates removed (order kept)."""
    n = check_count("n", n, minimum=1)
    fr = check_finite_array("fractions", fractions)
    if ((fr <= 0) | (fr > 1)).any():
        raise ValueError(f"fractions must be in (0, 1], got {fr.tolist()}")
    out: list[tuple[int, int]] = []
    for f in fr:
        r = min(n, int(math.floor(float(f) * n + 0.5)))  # half-up rounding
        if r < 2:
            continue
        pair = ((r + 1) // 2, r // 2)
        if pair not in out:
            out.append(pair)
    if not out:
        raise ValueError(f"no grid point has at least 2 guesses for n = {n}; pass a grid or "
                         f"larger fractions")
    return out


def guess_counts(member: Any, score: Any, grid: Sequence[tuple[int, int]], *,
                 seed: int | np.random.Generator | None = 0) -> dict[str, np.ndarray]:
    """Counts of the top-k_plus / bottom-k_minus guessing rule at every grid point.

    A thin wrapper of :func:`dpaudit.estimators.steinke.guesses_from_scores` (the needed order
    statistics by selection, :mod:`dpaudit.estimators.guess_select`, then one counting pass;
    ties broken by a random priority drawn from ``seed``, exactly as a full sort would).
    Returns arrays ``k_plus, k_minus, guesses (r), wrong (u), correct (v = r - u)``.
    """
    return _guess_counts(MembershipObservations.from_arrays(member, score), grid, seed)


def _guess_counts(obs: MembershipObservations, grid: Sequence[tuple[int, int]],
                  seed: int | np.random.Generator | None) -> dict[str, np.ndarray]:
    """:func:`guess_counts` on validated observations (validated once, by the caller)."""
    kp, km = _check_grid(grid, obs.n)
    r, v = _guesses_from_sorted(obs.member, obs.score, kp, km,
                                np.random.default_rng() if seed is None else seed)
    r, v = np.asarray(r, dtype=np.int64), np.asarray(v, dtype=np.int64)
    return {"k_plus": kp, "k_minus": km, "guesses": r, "wrong": r - v, "correct": v}


def _check_grid(grid: Sequence[tuple[int, int]], n: int) -> tuple[np.ndarray, np.ndarray]:
    try:
        g = np.asarray(grid, dtype=float).reshape(-1, 2)
    except (TypeError, ValueError):
        raise ValueError("grid must be a sequence of (k_plus, k_minus) pairs") from None
    if g.shape[0] == 0:
        raise ValueError("grid must contain at least one (k_plus, k_minus) pair")
    if (g != np.round(g)).any() or (g < 0).any():
        raise ValueError(f"grid entries must be whole numbers >= 0, got {g.tolist()}")
    kp, km = g[:, 0].astype(np.int64), g[:, 1].astype(np.int64)
    r = kp + km
    if (r < 1).any() or (r > n).any():
        raise ValueError(f"grid: k_plus + k_minus must be in [1, n = {n}], got {r.tolist()}")
    return kp, km


def _run_points(method: str, n: int, r: list[int], u: list[int], *, family: Any,
                delta: float, confidence: float, bits_ci: str, tight_mode: str
                ) -> list[AuditResult]:
    """One method's bounds at every (r_i, u_i) of the grid (the estimator contracts of
    DESIGN.md on the counts; tight, Steinke and Mahloujifar search the points together)."""
    if method == "tight":
        return tight_many(n, r, u, family=family, delta=delta, confidence=confidence,
                          mode=tight_mode)
    if method == "bits":
        return [bits(n=n, errors=b, family=family, delta=delta, confidence=confidence,
                     ci=bits_ci) for b in u]
    correct = [a - b for a, b in zip(r, u, strict=True)]
    if method == "steinke":
        return steinke_many(n, r, correct, delta=delta, confidence=confidence)
    if method == "mahloujifar":
        return mahloujifar_many(n, r, correct, delta=delta, confidence=confidence,
                                family=family)
    raise ValueError(f"method must be one of {', '.join(ONE_RUN_METHODS)}; got {method!r}")


def _balance_p_value(k: int, n: int) -> float:
    """Two-sided exact binomial test of k ones among n against probability 1/2.

    The pmf of Binomial(n, 1/2) is symmetric, so the two-sided p-value (the mass of outcomes
    no more likely than k) is ``min(1, 2 P[X <= min(k, n - k)])``, and 1 at k = n/2: one
    regularised incomplete beta call instead of ``scipy.stats.binomtest``'s search over the
    other tail (same value to rounding: ``tests/test_guess_select.py``)."""
    lo = min(k, n - k)
    if 2 * lo == n:
        return 1.0
    return float(min(1.0, 2.0 * stats.binom.cdf(lo, n, 0.5)))


def _balance_warning(obs: MembershipObservations) -> None:
    """Every one-run method assumes i.i.d. uniform bits; flag a grossly unbalanced input."""
    n1 = obs.n_members
    p = _balance_p_value(n1, obs.n)
    if p < 1e-3:
        warnings.warn(f"member bits look unbalanced ({n1} of {obs.n} are 1, "
                      f"binomial p = {p:.2g}); one-run audits assume each canary is included "
                      f"independently with probability 1/2", UserWarning, stacklevel=3)


def audit_one_run(member: Any, score: Any, delta: float = 1e-5, confidence: float = 0.95,
                  methods: Sequence[str] = ONE_RUN_METHODS, family: Any = DEFAULT_FAMILY, *,
                  fractions: Sequence[float] = DEFAULT_FRACTIONS,
                  grid: Sequence[tuple[int, int]] | None = None,
                  bits_ci: str = "clopper_pearson", bits_threshold: float | None = None,
                  tight_mode: str = "exact", simultaneous: bool = False,
                  seed: int | np.random.Generator | None = 0,
                  n_jobs: int = 1, allow_asymptotic: bool = False,
                  claimed_epsilon: Claim | float | None = None,
                  assume: Sequence[str] | str | None = None) -> Audit:
    """Run several one-run audit methods on the same observations (one row per method) and
    return the :class:`dpaudit.outcome.Audit` (a sequence of the rows, as the list it used to
    be), with the verdict against ``claimed_epsilon`` when given (rule "bonferroni" with
    ``simultaneous=True``, else "primary").

    Args:
      member: truth bits (0/1), one per canary, drawn i.i.d. uniform by the audit game.
      score: per-canary scores from one run, higher = more likely bit 1.
      delta: delta at which every epsilon is stated (and the null delta of "eps_delta").
      confidence: probability that each reported bound holds (after the grid correction).
      methods: any of "tight", "bits", "steinke", "mahloujifar" and the distribution-aware
        ``DISTRIBUTION_METHODS``; the output keeps this order (the first one is the "primary"
        method used by the CLI verdict).
      family: null family of the f-DP methods (tight, bits, mahloujifar); Steinke's null is
        always (eps, delta)-DP.  Default "eps_delta" (null delta = ``delta``): valid for every
        mechanism that meets an (eps, delta) claim, whatever its shape.  Any other family
        ("gdp", "laplace", ...) assumes the mechanism's trade-off curve is in that family: the
        rows carry ``assumption`` (e.g. "the mechanism is μ-GDP") and a verdict drawn from
        them says so (:mod:`dpaudit.curves.families`).  Use the family of a claimed curve
        only when the claim is that curve (:func:`dpaudit.curves.claim_family`).
      fractions: r/n values of the default grid (ignored when ``grid`` is given).
      grid: explicit (k_plus, k_minus) pairs, shared by tight, steinke and mahloujifar.
      bits_ci: CI of the bits method ("clopper_pearson", "hoeffding" or "aci").
      bits_threshold: guess 1 iff score > threshold for "bits" (the paper's fixed-threshold
        decoder); default: the ceil(n/2) highest scores are guessed 1.
      tight_mode: ``mode`` of E.tight ("exact" by default).
      simultaneous: split 1 - confidence across the methods as well, so that the maximum over
        all rows is valid at ``confidence`` (Bonferroni over methods x grid).
      seed: random tie-breaking of equal scores.
      n_jobs: worker processes (forked) for the bound computations (one task per method);
        1 (default) = in-process.  Results do not depend on it.
      allow_asymptotic: allow an asymptotic row (``ASYMPTOTIC_METHODS``, no finite-sample
        guarantee) to be the first, verdict-carrying method; refused otherwise.
      claimed_epsilon: the claim to test (a :class:`dpaudit.claim.Claim` or a number: an
        (epsilon, ``delta``) claim); None: no verdict.
      assume: named assumptions (``registry.ASSUMPTIONS``: "independent_scores",
        "gaussian_scores") that let the rows resting on them decide the verdict; without them
        those rows are shown but never decide (a correct Laplace mechanism's scores are not
        Gaussian: the equal-variance row reads epsilon >= 2 to 4 at a true 1).

    Each result keeps its estimator's fields and gains ``settings`` k_plus, k_minus, guesses,
    wrong, correction ("bonferroni"), grid, grid_size, per_test_confidence, and ``details``
    grid_epsilons (the bound at every grid point, each at per_test_confidence).  ``p_value`` is
    the Bonferroni-adjusted p-value min(1, G p) of the chosen point (None if undefined).
    """
    obs = MembershipObservations.from_arrays(member, score)
    obs.require_both_classes()
    n = obs.n
    delta = check_delta(delta)
    gamma = check_confidence(confidence)
    check_choice("bits_ci", bits_ci, CI_METHODS)  # checked even when bits is not run
    if isinstance(methods, str):
        methods = (methods,)
    methods = tuple(methods)
    if not methods:
        raise ValueError(f"methods must name at least one of {', '.join(ONE_RUN_METHODS)}")
    for m in methods:
        if m not in ONE_RUN_METHODS + DISTRIBUTION_METHODS:
            raise ValueError(f"methods must be among "
                             f"{', '.join(map(repr, ONE_RUN_METHODS + DISTRIBUTION_METHODS))}; "
                             f"got {m!r}")
    if not isinstance(allow_asymptotic, bool):
        raise ValueError(f"allow_asymptotic must be True or False; got {allow_asymptotic!r}")
    if methods[0] in ASYMPTOTIC_METHODS and not allow_asymptotic:
        raise ValueError(f"methods: the first (primary, verdict) method {methods[0]!r} has no "
                         f"finite-sample guarantee; put a finite-sample method first or pass "
                         f"allow_asymptotic=True")
    if methods[0] in ESTIMATE_METHODS:
        raise ValueError(f"methods: the first (primary, verdict) method {methods[0]!r} is an "
                         f"estimate under a Gaussian model that DP-SGD scores do not meet, "
                         f"never the basis of a verdict; put another method first")
    if len(set(methods)) != len(methods):
        raise ValueError(f"methods must not repeat a method; got {list(methods)}")
    dist = [m for m in methods if m in DISTRIBUTION_METHODS]
    methods_all, methods = methods, tuple(m for m in methods if m not in DISTRIBUTION_METHODS)
    n_split = len([m for m in methods_all
                   if m not in ASYMPTOTIC_METHODS + ESTIMATE_METHODS]) or 1
    if any(m != "steinke" for m in methods):
        resolve_family(family, delta)  # validate early, with the family's own message
    if bits_threshold is not None:
        bits_threshold = float(check_finite_array("bits_threshold", [bits_threshold])[0])
    _balance_warning(obs)

    pairs = default_grid(n, fractions) if grid is None else [tuple(p) for p in grid]
    # one selection pass for the whole grid plus the bits median split (last entry)
    counts = _guess_counts(obs, [*pairs, ((n + 1) // 2, n // 2)], seed)
    if bits_threshold is None:
        bits_kp = (n + 1) // 2
        bits_u = int(counts["wrong"][-1])
    else:
        guess = obs.score > bits_threshold
        bits_u = int(np.count_nonzero(guess != obs.member))
        bits_kp = int(np.count_nonzero(guess))
    alpha_total = 1.0 - gamma
    alpha_method = alpha_total / n_split if simultaneous else alpha_total

    plan: list[tuple[str, list[tuple[int, int, int, int]], float]] = []
    for m in methods:
        if m == "bits":
            pts = [(bits_kp, n - bits_kp, n, bits_u)]
        else:
            pts = [(int(a), int(b), int(r), int(u)) for a, b, r, u in
                   zip(counts["k_plus"][:-1], counts["k_minus"][:-1], counts["guesses"][:-1],
                       counts["wrong"][:-1], strict=True)]
        plan.append((m, pts, 1.0 - alpha_method / len(pts)))
    tasks = [(m, n, [r for _, _, r, _ in pts], [u for _, _, _, u in pts], family, delta,
              conf, bits_ci, tight_mode) for m, pts, conf in plan]
    done = _map(tasks, check_count("n_jobs", n_jobs, minimum=1))

    results: list[AuditResult] = []
    for (m, pts, conf_each), rows in zip(plan, done, strict=True):
        g = len(pts)
        eps = [float(x.epsilon) for x in rows]
        best = int(np.argmax(eps))
        chosen = rows[best]
        kp, km, r, u = pts[best]
        p_adj = None if chosen.p_value is None else float(min(1.0, g * chosen.p_value))
        settings = {**dict(chosen.settings), "n": n, "k_plus": kp, "k_minus": km,
                    "guesses": r, "wrong": u, "correction": "bonferroni", "grid_size": g,
                    "grid": [[a, b] for a, b, _, _ in pts], "per_test_confidence": conf_each,
                    "simultaneous": bool(simultaneous), "tie_break_seed": _seed_repr(seed)}
        if m == "bits":
            settings["decoder"] = ("median split" if bits_threshold is None
                                   else f"score > {bits_threshold:g}")
        details = {**dict(chosen.details), "grid_epsilons": eps,
                   "unadjusted_p_value": chosen.p_value}
        results.append(dataclasses.replace(chosen, confidence=gamma, p_value=p_adj,
                                           settings=settings, details=details))
    by_method = {r.method: r for r in results}
    for m in dist:
        by_method[m] = _distribution_row(m, obs, delta, gamma, 1.0 - alpha_method,
                                         bool(simultaneous))
    out = [by_method[m] for m in methods_all]
    claim = None
    if claimed_epsilon is not None:
        claim = Claim.of(claimed_epsilon, delta, assume=assume,
                         allow_asymptotic=allow_asymptotic)
    elif assume is not None:
        check_assumptions(assume)
    return Audit.of(out, claim, rule="bonferroni" if simultaneous else "primary",
                    observations=obs, allow_asymptotic=allow_asymptotic)


def _distribution_row(method: str, obs: MembershipObservations, delta: float, gamma: float,
                      conf: float, simultaneous: bool) -> AuditResult:
    """One distribution-aware row (:mod:`.hockey_stick`, :mod:`.gaussian_pair`) at the
    method's share ``conf`` of the confidence (``gamma`` when not simultaneous)."""
    from dpaudit.estimators.gaussian_pair import gaussian_pair, gaussian_pair_fit
    from dpaudit.estimators.hockey_stick import hockey_stick, hockey_stick_histogram

    m, s = obs.member, obs.score
    if method == "hockey_stick":
        r = hockey_stick(m, s, delta, conf)
    elif method == "gaussian_pair":
        r = gaussian_pair(m, s, delta, conf)
    elif method == "gaussian_pair_equal":
        r = gaussian_pair(m, s, delta, conf, variances="equal")
    elif method == "gaussian_pair_fit":
        return gaussian_pair_fit(m, s, delta)
    else:
        return hockey_stick_histogram(m, s, delta)
    return dataclasses.replace(r, confidence=gamma, settings={
        **dict(r.settings), "per_test_confidence": conf, "simultaneous": simultaneous})


def _task(task: tuple[Any, ...]) -> list[AuditResult]:
    m, n, r, u, family, delta, conf, bits_ci, tight_mode = task
    return _run_points(m, n, r, u, family=family, delta=delta, confidence=conf,
                       bits_ci=bits_ci, tight_mode=tight_mode)


def _map(tasks: list[tuple[Any, ...]], workers: int) -> list[list[AuditResult]]:
    """Evaluate the bound computations, in worker processes when it pays off.

    The estimators are dominated by SciPy calls that hold the GIL, so threads do not help;
    forked processes do.  Falls back to sequential evaluation when there is one task, one
    worker, no ``fork`` start method, or an unpicklable family (e.g. a lambda).
    """
    if workers > 1 and len(tasks) > 1 and "fork" in mp.get_all_start_methods():
        try:
            pickle.dumps(tasks[0])
        except Exception:  # noqa: BLE001 - any pickling failure means "run in-process"
            pass
        else:
            ctx = mp.get_context("fork")
            with ProcessPoolExecutor(max_workers=min(workers, len(tasks)),
                                     mp_context=ctx) as pool:
                return list(pool.map(_task, tasks))
    return [_task(t) for t in tasks]


def _seed_repr(seed: Any) -> Any:
    return seed if seed is None or isinstance(seed, int) else "generator"
