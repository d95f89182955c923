"""The guessing rule shared by every one-run method (Steinke, Nasr and Jagielski, "Privacy
Auditing with One (1) Training Run", NeurIPS 2023, §5).

After one run the auditor guesses "included" (1) for the k+ highest scores, "excluded" (0) for
the k- lowest and abstains on the rest: r = k+ + k- guesses, v of them correct.  Every one-run
estimator (Steinke et al., Mahloujifar et al., the tight audit, bits transmission) takes the
counts (r, v) this rule produces; :func:`dpaudit.estimators.one_run.audit_one_run` sweeps a grid
of (k+, k-).  Ties in the scores are broken by a uniformly random priority from the
``"tie_break"`` stream (:mod:`dpaudit.randomness`), so the tie-break is independent of the
truth bits.  The counts come from selection at the few ranks needed
(:mod:`dpaudit.estimators.guess_select`), not from a full sort.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpaudit.estimators.guess_select import ascending_order, lowest_member_counts
from dpaudit.randomness import tie_break_rng
from dpaudit.validation import (
    check_binary_array,
    check_count_array,
    check_finite_array,
    check_same_length,
)

__all__ = ["guesses_from_scores", "ascending_order", "tie_break_rng"]


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


def _guesses_from_sorted(t: np.ndarray, s: np.ndarray, k_pos: Any, k_neg: Any,
                         rng: np.random.Generator | int) -> tuple[Any, Any]:
    """:func:`guesses_from_scores` on validated arrays (bool truth, float scores).

    The prefix counts c(k) (1-bits among the k lowest scores, ties by a random priority) come
    from selection at the few ranks needed (:mod:`dpaudit.estimators.guess_select`), not from
    a full sort; the result and the generator state equal those of
    :func:`_guesses_from_sorted_reference` (tested in ``tests/test_guess_select.py``).
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
