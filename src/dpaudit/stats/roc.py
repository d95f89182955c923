"""The empirical ROC of membership scores: counts per distinct score, the one core.

Every threshold test "member iff score >= t" of a set of scores is summarised by the number of
members ``c1[k]`` and non-members ``c0[k]`` at each distinct score ``value[k]`` (ascending):
one sort, then cumulative sums.  The multi-run audit's ROC summary
(:func:`dpaudit.estimators.multi_run.roc_summary`), the attack metrics
(:mod:`dpaudit.stats.attack_metrics`) and the audit card (:mod:`dpaudit.report.summaries`) read
the ROC, the AUROC and the TPR at low FPR from these counts.

* :func:`roc_counts` -- (FP, TP) of every threshold, from the highest down;
* :func:`auroc_from_counts` -- Mann-Whitney AUROC = P[member > non-member] + P[tie] / 2;
* :func:`delong_from_counts` -- the AUROC with DeLong, DeLong and Clarke-Pearson's (1988)
  normal interval;
* :func:`tpr_at_fpr_from_counts` -- the largest TPR among thresholds with FPR <= f;
* :func:`counts_at_or_above` / :func:`counts_at_or_below` -- (TP, FP) of the tests
  "score >= t" / "score <= t" at GIVEN thresholds (the threshold sweeps of the multi-run
  audit, the zoo's search and the sequential audit's plan), by binary search on the sorted
  class scores: a member with score s counts at t iff s >= t (ties count), so
  TP(t) = n1 - #{members < t}.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from dpaudit.observations import MembershipObservations

__all__ = ["ScoreCounts", "score_counts", "counts_from_sorted", "roc_counts",
           "auroc_from_counts", "delong_from_counts", "tpr_at_fpr_from_counts",
           "counts_at_or_above", "counts_at_or_below"]


@dataclass(frozen=True)
class ScoreCounts:
    """Distinct scores (ascending) with the number of members ``c1`` and non-members ``c0``
    at each, and the class sizes."""

    value: np.ndarray
    c1: np.ndarray
    c0: np.ndarray
    n1: int
    n0: int


def score_counts(member: Any, score: Any) -> ScoreCounts:
    """Group the scores by distinct value (validates the input; both classes required)."""
    obs = MembershipObservations.from_arrays(member, score)
    obs.require_both_classes()
    order = np.argsort(obs.score)
    return counts_from_sorted(obs.score[order], obs.member[order])


def counts_from_sorted(sorted_score: np.ndarray, sorted_member: np.ndarray) -> ScoreCounts:
    """:class:`ScoreCounts` of scores already sorted ascending (with their member flags in the
    same order; any order within a run of equal scores)."""
    s = sorted_score
    first = np.empty(s.size, dtype=bool)
    first[:1] = True
    np.not_equal(s[1:], s[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    below = np.concatenate([[0], np.cumsum(sorted_member, dtype=np.int64)])[starts]
    n1 = int(np.count_nonzero(sorted_member))
    c1 = np.diff(np.concatenate([below, [n1]]))
    total = np.diff(np.concatenate([starts, [s.size]]))
    return ScoreCounts(s[starts], c1.astype(np.int64), (total - c1).astype(np.int64), n1,
                       int(s.size) - n1)


def roc_counts(c: ScoreCounts) -> tuple[np.ndarray, np.ndarray]:
    """(FP, TP) counts of the tests "score >= t" for every distinct t, from the highest t down,
    preceded by (0, 0) (t = +inf)."""
    return np.r_[0, np.cumsum(c.c0[::-1])], np.r_[0, np.cumsum(c.c1[::-1])]


def auroc_from_counts(c: ScoreCounts) -> float:
    """AUROC = P[member score > non-member score] + P[tie] / 2 = (sum over members of the
    non-members below + half the tied) / (n1 n0)."""
    below0 = np.cumsum(c.c0) - c.c0
    return float(np.dot(c.c1, below0 + 0.5 * c.c0) / (c.n1 * c.n0))


def delong_from_counts(c1: np.ndarray, c0: np.ndarray, confidence: float
                       ) -> tuple[float, float, float]:
    """(AUROC, lower, upper) from per-distinct-score counts, ascending score order.

    ``c1[k]``/``c0[k]``: members/non-members with the k-th smallest distinct score.  The
    structural components of DeLong et al. (1988, Eq. 4) are constant on a tie group:
    a member's V10 = (#non-members below + #tied / 2) / n0, a non-member's
    V01 = (#members above + #tied / 2) / n1; AUROC = mean V10 and
    Var = s2(V10) / n1 + s2(V01) / n0, so one sort and cumulative counts suffice (no ranks).
    The interval is the two-sided normal one, clipped to [0, 1].
    """
    c1 = np.asarray(c1, dtype=float)
    c0 = np.asarray(c0, dtype=float)
    n1, n0 = float(c1.sum()), float(c0.sum())
    v10 = (np.cumsum(c0) - 0.5 * c0) / n0
    v01 = (n1 - np.cumsum(c1) + 0.5 * c1) / n1
    auc = float(np.dot(c1, v10) / n1)
    s10 = float(np.dot(c1, (v10 - auc) ** 2) / (n1 - 1)) if n1 > 1 else 0.0
    s01 = float(np.dot(c0, (v01 - auc) ** 2) / (n0 - 1)) if n0 > 1 else 0.0
    half = float(stats.norm.isf((1 - confidence) / 2) * math.sqrt(max(s10 / n1 + s01 / n0,
                                                                      0.0)))
    return auc, max(0.0, auc - half), min(1.0, auc + half)


def tpr_at_fpr_from_counts(c: ScoreCounts, fprs: Any, *, rtol: float = 0.0
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each f of ``fprs``: (TPR, FPR, TP) of the threshold with the largest TPR among
    those whose FPR <= f (1 + ``rtol``); the test at t = +inf (TPR 0) always qualifies."""
    fp, tp = roc_counts(c)
    f = np.asarray(fprs, dtype=float)
    idx = np.searchsorted(fp / c.n0, f * (1 + rtol), side="right") - 1
    return tp[idx] / c.n1, fp[idx] / c.n0, tp[idx]


def counts_at_or_above(pos_sorted: np.ndarray, neg_sorted: np.ndarray, thresholds: Any
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(TP, FP) integer counts of the tests "score >= t" for each t of ``thresholds``:
    members (``pos_sorted``) and non-members (``neg_sorted``), each sorted ascending, with a
    score >= t (a score equal to t counts)."""
    t = np.asarray(thresholds, dtype=float)
    return (pos_sorted.size - np.searchsorted(pos_sorted, t, side="left"),
            neg_sorted.size - np.searchsorted(neg_sorted, t, side="left"))


def counts_at_or_below(pos_sorted: np.ndarray, neg_sorted: np.ndarray, thresholds: Any
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(members, non-members) with a score <= t for each t of ``thresholds`` (the mirrored
    tests "score <= t"; sorted ascending inputs; a score equal to t counts)."""
    t = np.asarray(thresholds, dtype=float)
    return (np.searchsorted(pos_sorted, t, side="right"),
            np.searchsorted(neg_sorted, t, side="right"))
