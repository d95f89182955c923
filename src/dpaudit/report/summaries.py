"""Plot summaries of membership scores: a report never carries raw per-canary points.

* :func:`roc_points` -- the empirical ROC curve (every distinct threshold, one sort, cumulative
  counts) down-sampled to a few hundred vertices: a log-spaced FPR grid (so the low-FPR corner of
  the log-scale ROC keeps its detail, Carlini et al. 2022 "first principles" view) merged with a
  linear grid (for the linear ROC).  At each grid FPR ``f`` the vertex kept is the one with the
  largest TPR among thresholds with FPR <= f, so the down-sampled curve is a lower envelope of
  the empirical one (it never shows a better attack than the data).

All of them read the counts per distinct score of the ROC core (:mod:`dpaudit.stats.roc`).
* :func:`card_auroc` -- AUROC (Mann-Whitney, mid-ranks for ties) with DeLong's normal
  interval (DeLong, DeLong & Clarke-Pearson 1988; structural components from ranks,
  Sun & Xu 2014), O(n log n).
* :func:`card_tpr_at_fpr` -- TPR at low FPR with Clopper-Pearson intervals on the TP count at the
  selected threshold.  The threshold is chosen on the same data, so the interval is for the TPR
  *of that threshold* (descriptive), not a bound on the best attack.
* :func:`region_points` -- observed (FPR, FNR) pairs of a few score thresholds with pointwise
  Clopper-Pearson boxes, the empirical privacy region of Hypothesis Interpretation
  (Eqs. 11-12) in the
  f-DP view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.stats.binomial import clopper_pearson
from dpaudit.stats.roc import (
    ScoreCounts,
    delong_from_counts,
    roc_counts,
    score_counts,
    tpr_at_fpr_from_counts,
)
from dpaudit.validation import check_confidence, check_count

__all__ = ["RocCurve", "roc_points", "card_auroc", "card_tpr_at_fpr", "RegionPoints",
           "region_points", "summarize_scores", "score_groups", "ScoreGroups", "LOW_FPRS"]

#: the FPRs at which the report states TPR (Carlini et al. 2022 report TPR at 0.1% and 1%).
LOW_FPRS = (1e-3, 1e-2, 1e-1)


@dataclass(frozen=True)
class RocCurve:
    """Down-sampled ROC vertices (FPR and TPR nondecreasing) and the class sizes."""

    fpr: np.ndarray
    tpr: np.ndarray
    n_members: int
    n_nonmembers: int
    n_thresholds: int


#: the distinct-score counts of the ROC core (one grouping feeds every summary below).
ScoreGroups = ScoreCounts
score_groups = score_counts


def _roc(g: ScoreGroups, log_points: int, linear_points: int) -> RocCurve:
    fp, tp = roc_counts(g)
    fpr, tpr = fp / g.n0, tp / g.n1
    grid = np.unique(np.r_[np.geomspace(1.0 / g.n0, 1.0, log_points),
                           np.linspace(0.0, 1.0, linear_points)])
    # last vertex with FPR <= f: the largest TPR reachable at that FPR (FPR, TPR nondecreasing)
    idx = np.searchsorted(fpr, grid * (1 + 1e-12), side="right") - 1
    keep = np.unique(np.r_[0, idx[idx >= 0], fpr.size - 1])
    return RocCurve(fpr=fpr[keep], tpr=tpr[keep], n_members=g.n1, n_nonmembers=g.n0,
                    n_thresholds=int(fpr.size - 1))


def roc_points(member: Any, score: Any, *, log_points: int = 240, linear_points: int = 60
               ) -> RocCurve:
    """ROC down-sampled on a log-spaced FPR grid [1/n0, 1] merged with a linear grid.

    At most ``log_points + linear_points + 2`` vertices whatever the number of canaries.
    """
    log_points = check_count("log_points", log_points, minimum=2)
    linear_points = check_count("linear_points", linear_points, minimum=2)
    return _roc(score_groups(member, score), log_points, linear_points)


def _auroc(g: ScoreGroups, confidence: float) -> tuple[float, float, float]:
    return delong_from_counts(g.c1, g.c0, confidence)


def _tpr_at(g: ScoreGroups, fprs: Any, confidence: float) -> list[dict[str, float]]:
    f = np.asarray(fprs, dtype=float)
    tpr, fpr, k = tpr_at_fpr_from_counts(g, f, rtol=1e-12)
    lo, hi = clopper_pearson(k, g.n1, confidence, "two-sided")
    return [{"fpr_target": float(a), "fpr": float(r), "tpr": float(t),
             "tpr_lo": float(x), "tpr_hi": float(y)}
            for a, r, t, x, y in zip(f, fpr, tpr, np.atleast_1d(lo), np.atleast_1d(hi),
                                     strict=True)]


def card_auroc(member: Any, score: Any, confidence: float = 0.95
               ) -> tuple[float, float, float]:
    """(AUROC, lower, upper): the card's AUROC with DeLong's two-sided interval
    (:func:`dpaudit.stats.roc.delong_from_counts`; :func:`dpaudit.stats.attack_metrics.
    auroc_interval` gives the same with a choice of method)."""
    confidence = check_confidence(confidence)
    return _auroc(score_groups(member, score), confidence)


def card_tpr_at_fpr(member: Any, score: Any, fprs: tuple[float, ...] = LOW_FPRS,
                    confidence: float = 0.95) -> list[dict[str, float]]:
    """For each f: the largest empirical TPR of a threshold with FPR <= f, that threshold's
    FPR, and a two-sided Clopper-Pearson interval on its TPR (TP out of n1 members): the
    card's rows (descriptive: the threshold is chosen on the same data)."""
    confidence = check_confidence(confidence)
    return _tpr_at(score_groups(member, score), fprs, confidence)


@dataclass(frozen=True)
class RegionPoints:
    """Observed (FPR, FNR) of score thresholds with pointwise two-sided CP boxes."""

    threshold: np.ndarray
    fpr: np.ndarray
    fnr: np.ndarray
    fpr_lo: np.ndarray
    fpr_hi: np.ndarray
    fnr_lo: np.ndarray
    fnr_hi: np.ndarray
    confidence: float


def _region(g: ScoreGroups, confidence: float, points: int, extra: Any) -> RegionPoints:
    n = g.n1 + g.n0
    cum = np.cumsum(g.c1 + g.c0)
    tails = np.geomspace(min(0.5, 10.0 / n), 0.5, points)
    # pooled-score quantile 1 - tail ("higher" rule): the value of sorted index ceil(q (n-1))
    k = np.ceil((1.0 - tails) * (n - 1)).astype(np.int64)
    t = g.value[np.searchsorted(cum, k + 1, side="left")]
    t = np.unique(np.r_[t, np.asarray(extra, dtype=float).ravel()])
    t = t[np.isfinite(t)]
    j = np.searchsorted(g.value, t, side="left")          # groups with value >= t: j..end
    tp = g.n1 - np.r_[0, np.cumsum(g.c1)][j]
    fp = g.n0 - np.r_[0, np.cumsum(g.c0)][j]
    fn = g.n1 - tp
    fpr_lo, fpr_hi = clopper_pearson(fp, g.n0, confidence, "two-sided")
    fnr_lo, fnr_hi = clopper_pearson(fn, g.n1, confidence, "two-sided")
    return RegionPoints(threshold=t, fpr=fp / g.n0, fnr=fn / g.n1,
                        fpr_lo=np.atleast_1d(fpr_lo), fpr_hi=np.atleast_1d(fpr_hi),
                        fnr_lo=np.atleast_1d(fnr_lo), fnr_hi=np.atleast_1d(fnr_hi),
                        confidence=confidence)


def region_points(member: Any, score: Any, confidence: float = 0.95, *, points: int = 15,
                  extra_thresholds: Any = ()) -> RegionPoints:
    """Tests "score >= t" at ``points`` thresholds chosen label-blind (pooled-score quantiles
    whose upper tails are log-spaced from 10/n to 1/2) plus ``extra_thresholds``; FPR and FNR
    with two-sided Clopper-Pearson intervals at ``confidence`` each (pointwise boxes)."""
    confidence = check_confidence(confidence)
    points = check_count("points", points, minimum=1)
    return _region(score_groups(member, score), confidence, points, extra_thresholds)


def summarize_scores(member: Any, score: Any, confidence: float = 0.95, *,
                     extra_thresholds: Any = ()) -> tuple[RocCurve, tuple[float, float, float],
                                                          list[dict[str, float]], RegionPoints]:
    """ROC, AUROC interval, TPR at :data:`LOW_FPRS` and region points from ONE grouping."""
    confidence = check_confidence(confidence)
    g = score_groups(member, score)
    return (_roc(g, 240, 60), _auroc(g, confidence), _tpr_at(g, LOW_FPRS, confidence),
            _region(g, confidence, 15, extra_thresholds))
