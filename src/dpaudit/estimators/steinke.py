"""One-run audit of Steinke, Nasr and Jagielski, *Privacy Auditing with One (1) Training Run*
(NeurIPS 2023, arXiv:2305.08846) -- the baseline of seeds 000 and 001 (spec/001 §5.1,
spec/000 §7.1).

Game: m canaries, each included with probability 1/2; after one run the auditor guesses
"included" for the k+ highest scores and "excluded" for the k- lowest and abstains on the
rest; r = k+ + k- guesses, v of them correct.  Under (eps, delta)-DP (their Theorem 5.2 /
Corollary 5.4 and the p-value code of their Appendix D):

    q      = e^eps / (1 + e^eps)
    beta   = P[Binomial(r, q) >= v]
    alpha  = max_{i=1..v} (1/i) P[v - i <= Binomial(r, q) < v]
           = max_{i=1..v} (1/i) sum_{j=1..i} pmf(v - j; r, q)
    p(eps) = min(1, beta + 2 m delta alpha)

and the bound is the largest eps with p(eps) < 1 - confidence, found by growing an upper
bracket by +1 (capped at ``eps_cap``) and bisecting (shared helper
:func:`dpaudit.search.largest_rejected`).  The 2 m delta term makes the bound collapse to 0
for large m delta (seed 001 §6.2, Fig. 7).

``variant="port"`` reproduces the seed-001 authors' comparison port (their
``compare/RESULTS.txt``; spec/001 §4.3, §5.1), whose window is shifted by one:
alpha = max_i (1/i) (CDF(v) - CDF(v - i)) = max_i (1/i) sum_{j=0..i-1} pmf(v - j).  It is
offered only to reproduce their numbers; the original is the published statistic.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special, stats

from dpaudit.estimators.guess_select import lowest_member_counts
from dpaudit.results import AuditResult
from dpaudit.search import largest_rejected_root
from dpaudit.validation import (
    check_binary_array,
    check_choice,
    check_confidence,
    check_count_array,
    check_delta,
    check_finite_array,
    check_nested_counts,
    check_positive,
    check_same_length,
)

__all__ = ["steinke", "steinke_p_value", "guesses_from_scores", "STEINKE_VARIANTS"]

STEINKE_VARIANTS = ("original", "port")


def _check_counts(m: Any, guesses: Any, correct: Any) -> tuple[int, int, int]:
    return check_nested_counts(m=m, guesses=guesses, correct=correct)  # type: ignore[return-value]


def _logpmf(k: Any, r: int, q: float) -> Any:
    """log pmf of Binomial(r, q) at k: the formula of ``scipy.stats.binom.logpmf``
    (gammaln(r+1) - gammaln(k+1) - gammaln(r-k+1) + xlogy(k, q) + xlog1py(r-k, -q)) without
    its per-call argument handling (this is called in tight loops)."""
    k = np.asarray(k, dtype=float)
    combiln = special.gammaln(r + 1.0) - (special.gammaln(k + 1) + special.gammaln(r - k + 1))
    return combiln + special.xlogy(k, q) + special.xlog1py(r - k, -q)


def _binomial_support(r: int, q: float, log_drop: float = 800.0) -> tuple[int, int]:
    """[k_lo, k_hi]: the k where log pmf(k; r, q) >= log pmf(mode) - log_drop (the pmf is
    unimodal, so each end is found by integer bisection on scalar log pmfs)."""
    lg_r = math.lgamma(r + 1.0)
    lq = math.log(q) if q > 0 else -math.inf
    l1q = math.log1p(-q) if q < 1 else -math.inf

    def lpmf(k: int) -> float:
        a = k * lq if k else 0.0
        b = (r - k) * l1q if r - k else 0.0
        return lg_r - math.lgamma(k + 1.0) - math.lgamma(r - k + 1.0) + a + b

    mode = int(min(r, max(0, math.floor((r + 1) * q))))
    floor_ = lpmf(mode) - log_drop

    def edge(a: int, b: int, rising: bool) -> int:
        # on [a, b] logpmf is monotone; return the extreme index still above the floor
        while b - a > 1:
            mid = (a + b) // 2
            above = lpmf(mid) >= floor_
            if above == rising:
                b = mid
            else:
                a = mid
        return b if rising else a

    lo = 0 if lpmf(0) >= floor_ else edge(0, mode, rising=True)
    hi = r if lpmf(r) >= floor_ else edge(mode, r, rising=False)
    return lo, hi


def _p_value(m: int, r: int, v: int, eps: float, delta: float, variant: str) -> float:
    if v == 0:
        return 1.0
    q = float(special.expit(eps))
    beta = float(stats.binom.sf(v - 1, r, q))
    if delta == 0.0:
        return min(1.0, beta)
    # alpha = max_i (1/i) sum_j pmf(v - j; r, q) over the window of j (original: j = 1..i,
    # port: j = 0..i-1).  Only k = v - j inside the numerical support of Binomial(r, q)
    # contribute: pmf outside [k_lo, k_hi] is below e^-800 of the mode's (dropped terms sum to
    # < 1e-340 * v, far below double precision of alpha), and past k_lo the running sum is
    # flat while i grows, so the maximum is attained inside.  This makes the statistic
    # O(sqrt(r)) instead of O(v) per evaluation.
    top = v - 1 if variant == "original" else v
    k_lo, k_hi = _binomial_support(r, q)
    k_hi = min(k_hi, top)
    if k_hi < k_lo:
        return float(min(1.0, beta))
    k = np.arange(k_hi, k_lo - 1, -1, dtype=float)
    pmf = np.exp(_logpmf(k, r, q))
    window = np.cumsum(pmf)
    i = (v - k) if variant == "original" else (v - k + 1)
    alpha = float(np.max(window / i))
    return float(min(1.0, beta + 2.0 * m * delta * alpha))


def steinke_p_value(m: int, guesses: int, correct: int, eps: float, delta: float = 1e-5,
                    variant: str = "original") -> float:
    """p-value of "the mechanism is (eps, delta)-DP" given ``correct`` of ``guesses`` right
    among ``m`` canaries (Steinke et al. 2023, Cor. 5.4 / Appendix D; module docstring)."""
    m, r, v = _check_counts(m, guesses, correct)
    eps = float(eps)
    if not (eps >= 0 and math.isfinite(eps)):
        raise ValueError(f"eps must be finite and >= 0, got {eps!r}")
    delta = check_delta(delta)
    check_choice("variant", variant, STEINKE_VARIANTS)
    return _p_value(m, r, v, eps, delta, variant)


def steinke(m: int, guesses: int, correct: int, delta: float = 1e-5,
            confidence: float = 0.95, variant: str = "original", *, tol: float = 1e-6,
            eps_cap: float = 200.0) -> AuditResult:
    """Steinke-Nasr-Jagielski one-run epsilon lower bound at ``delta``.

    Args:
      m: number of canaries (each included with probability 1/2).
      guesses: number of non-abstained guesses r = k+ + k- (0 <= r <= m).
      correct: number of correct guesses v (0 <= v <= r).
      delta: delta of the (eps, delta)-DP null (enters through the 2 m delta term).
      confidence: probability that the bound holds; eps is rejected iff
        p(eps) < 1 - confidence (their convention).
      variant: "original" (published statistic) or "port" (seed-001 authors' port).
      tol: relative tolerance of the bisection on eps.
      eps_cap: largest eps searched; ``details["hit_ceiling"]`` is set when reached.
    """
    m, r, v = _check_counts(m, guesses, correct)
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    check_choice("variant", variant, STEINKE_VARIANTS)
    tol = check_positive("tol", tol, upper=0.1)
    eps_cap = check_positive("eps_cap", eps_cap)
    sig = 1.0 - confidence

    cache: dict[float, float] = {}

    def pval(eps: float) -> float:
        if eps not in cache:
            cache[eps] = _p_value(m, r, v, eps, delta, variant)
        return cache[eps]

    def margin(eps: float) -> float:
        # eps is rejected iff p(eps) < sig (strict, their convention): margin < 0
        p = pval(eps)
        if p <= 0:
            return -math.inf
        d = math.log(p) - log_sig
        return d if d != 0 else 1e-300

    # their bracket: eps_max = 1, grown by +1 while still rejected (capped); then root finding
    # on the continuous margin log p - log sig inside the last unit bracket (same tolerance
    # contract as bisection, dpaudit.search.largest_rejected_root).
    log_sig = math.log(sig)
    lo, hi = 0.0, min(1.0, eps_cap)
    while hi < eps_cap and margin(hi) < 0:
        lo, hi = hi, min(hi + 1.0, eps_cap)
    if lo > 0:  # reject(lo) is known; search the last bracket only
        res = largest_rejected_root(margin, lo, hi, tol=tol)
    else:
        res = largest_rejected_root(margin, 0.0, hi, tol=tol)
    eps = 0.0 if res.nothing_rejected else res.theta
    hit = res.hit_ceiling and hi >= eps_cap
    return AuditResult(
        epsilon=float(eps), delta=delta, confidence=confidence, method="steinke",
        params={"eps": float(eps)}, p_value=pval(eps),
        settings={"m": m, "guesses": r, "correct": v, "delta": delta,
                  "confidence": confidence, "variant": variant, "tol": tol,
                  "eps_cap": eps_cap},
        details={"hit_ceiling": bool(hit), "nothing_rejected": res.nothing_rejected,
                 "accuracy": v / r if r else math.nan})


def guesses_from_scores(truth: Any, score: Any, k_pos: Any, k_neg: Any, *,
                        rng: np.random.Generator | int = 0) -> tuple[Any, Any]:
    """Steinke et al.'s guessing rule: "included" (1) for the ``k_pos`` highest scores,
    "excluded" (0) for the ``k_neg`` lowest, abstain on the rest.

    Returns ``(guesses, correct)`` with guesses = k_pos + k_neg.  ``k_pos``/``k_neg`` may be
    arrays (a k-sweep): the counts at the few ranks needed come from selection (O(m) per
    sweep of up to 512 distinct ranks, :mod:`dpaudit.estimators.guess_select`), longer sweeps
    from one sort and cumulative sums (O(m log m)).  Ties in ``score`` are broken by a
    uniformly random priority drawn from ``rng`` (independent of ``truth``, so tie-breaking
    cannot leak the truth through the input order): ``gen.random(m)`` with ``gen`` =
    :func:`tie_break_rng` ``(rng)``, the lowest priority first among equal scores.
    """
    t = check_binary_array("truth", truth)
    s = check_finite_array("score", score)
    check_same_length(truth=t, score=s)
    return _guesses_from_sorted(t, s, k_pos, k_neg, rng)


#: spawn key of the tie-break stream derived from an integer seed (ASCII "tieb").
TIE_BREAK_KEY = 0x74696562


def tie_break_rng(rng: np.random.Generator | int) -> np.random.Generator:
    """The tie-break generator: a Generator as given; an integer seed -> the tagged child
    ``SeedSequence(seed, spawn_key=(TIE_BREAK_KEY,))``, independent of ``default_rng(seed)``
    and of the per-trial streams ``SeedSequence(seed, spawn_key=(t,))`` for t < TIE_BREAK_KEY."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(np.random.SeedSequence(int(rng),
                                                            spawn_key=(TIE_BREAK_KEY,)))
    return np.random.default_rng(rng)


def ascending_order(score: np.ndarray, rng: np.random.Generator | int) -> np.ndarray:
    """Indices that sort ``score`` ascending, equal scores in a uniformly random order.

    Same permutation as ``np.lexsort((gen.random(m), score))`` (a random priority per canary
    breaks ties), and the generator is advanced identically, but computed as one argsort of
    the scores plus a lexsort of the tied entries only: without ties it is a plain argsort.

    An integer ``rng`` is NOT used as ``default_rng(rng)``: the priorities come from the
    tagged stream ``SeedSequence(rng, spawn_key=(TIE_BREAK_KEY,))``.  A game seeded with the
    same integer (``default_rng(seed)`` drawing the secret bits first) would otherwise produce
    priorities equal to the uniforms that decided the bits, so the tie-break would depend on
    the truth (issue 15, ``simulate rr --seed 0``: every tied guess below r = n was wrong).
    A Generator is used as given; it must be independent of the truth bits.
    """
    gen = tie_break_rng(rng)
    m = score.size
    order = np.argsort(score, kind="stable")
    ss = score[order]
    eq = ss[1:] == ss[:-1]
    if not eq.any():
        del ss, eq
        # no ties: the priorities are not needed, but the generator advances as if drawn
        # (in chunks, so no m-sized array is held)
        for start in range(0, m, _PRIO_CHUNK):
            gen.random(min(_PRIO_CHUNK, m - start))
        return order
    prio = gen.random(m)
    tied = np.zeros(m, dtype=bool)
    tied[1:] |= eq
    tied[:-1] |= eq
    pos = np.flatnonzero(tied)
    sub = order[pos]
    # within a run of equal scores, order by priority (score breaks the runs apart)
    order[pos] = sub[np.lexsort((prio[sub], ss[pos]))]
    return order


#: priorities drawn (and discarded) per chunk when there are no ties.
_PRIO_CHUNK = 1 << 20


def _guesses_from_sorted(t: np.ndarray, s: np.ndarray, k_pos: Any, k_neg: Any,
                         rng: np.random.Generator | int) -> tuple[Any, Any]:
    """:func:`guesses_from_scores` on validated arrays (bool truth, float scores).

    The prefix counts c(k) (1-bits among the k lowest scores, ties by a random priority) come
    from selection at the few ranks needed (:mod:`dpaudit.estimators.guess_select`), not from
    a full sort; the result and the generator state equal those of
    :func:`_guesses_from_sorted_reference` (tested in ``tests/test_guess_selection.py``).
    """
    m = t.size
    kp, kn = _check_ks(k_pos, k_neg, m)
    gen = tie_break_rng(rng)
    # Correct "excluded" guesses among the k_neg lowest: k_neg - c(k_neg); correct "included"
    # among the k_pos highest: c(m) - c(m - k_pos).
    ks = np.concatenate([(m - kp).reshape(-1), kn.reshape(-1), [m]])
    c = lowest_member_counts(t, s, ks, gen)
    c_top, c_neg, total = c[:kp.size].reshape(kp.shape), c[kp.size:-1].reshape(kn.shape), c[-1]
    correct = (total - c_top) + (kn - c_neg)
    guesses = kp + kn
    if guesses.ndim == 0:
        return int(guesses), int(correct)
    return guesses, correct


def _check_ks(k_pos: Any, k_neg: Any, m: int) -> tuple[np.ndarray, np.ndarray]:
    kp = check_count_array("k_pos", k_pos)
    kn = check_count_array("k_neg", k_neg)
    kp, kn = np.broadcast_arrays(kp, kn)
    if np.any(kp + kn > m):
        raise ValueError(f"k_pos + k_neg must be <= the number of canaries ({m})")
    return kp, kn


def _guesses_from_sorted_reference(t: np.ndarray, s: np.ndarray, k_pos: Any, k_neg: Any,
                                   rng: np.random.Generator | int) -> tuple[Any, Any]:
    """Reference implementation of :func:`_guesses_from_sorted`: one tie-broken sort
    (:func:`ascending_order`), then cumulative sums.  O(m log m) time and an m-sized int64
    permutation; kept as the oracle of the equivalence tests."""
    m = t.size
    kp, kn = _check_ks(k_pos, k_neg, m)
    order = ascending_order(s, rng)  # ascending score, random among ties
    # c[k] = number of 1-bits among the k lowest scores (k = 1..m).  Correct "excluded"
    # guesses among the k_neg lowest: k_neg - c[k_neg]; correct "included" among the k_pos
    # highest: c[m] - c[m - k_pos].
    c = np.cumsum(t[order], dtype=np.int64)
    del order

    def c_at(k: np.ndarray) -> np.ndarray:
        return np.where(k > 0, c[np.maximum(k, 1) - 1], 0)

    total = int(c[-1]) if m else 0
    correct = (total - c_at(m - kp)) + (kn - c_at(kn))
    guesses = kp + kn
    if guesses.ndim == 0:
        return int(guesses), int(correct)
    return guesses, correct
