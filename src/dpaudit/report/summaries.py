"""Plot summaries of membership scores: a report never carries raw per-canary points.

* :func:`roc_points` -- the empirical ROC curve (every distinct threshold, one sort, cumulative
  counts) down-sampled to a few hundred vertices: a log-spaced FPR grid (so the low-FPR corner of
  the log-scale ROC keeps its detail, Carlini et al. 2022 "first principles" view) merged with a
  linear grid (for the linear ROC).  At each grid FPR ``f`` the vertex kept is the one with the
  largest TPR among thresholds with FPR <= f, so the down-sampled curve is a lower envelope of
  the empirical one (it never shows a better attack than the data).
* :func:`auroc_interval` -- AUROC (Mann-Whitney, mid-ranks for ties) with DeLong's normal
  interval (DeLong, DeLong & Clarke-Pearson 1988; structural components from ranks,
  Sun & Xu 2014), O(n log n).
* :func:`tpr_at_fpr` -- TPR at low FPR with Clopper-Pearson intervals on the TP count at the
  selected threshold.  The threshold is chosen on the same data, so the interval is for the TPR
  *of that threshold* (descriptive), not a bound on the best attack.
* :func:`region_points` -- observed (FPR, FNR) pairs of a few score thresholds with pointwise
  Clopper-Pearson boxes, the empirical privacy region of seed 004 (Eqs. 11-12) in the f-DP view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from dpaudit.observations import MembershipObservations
from dpaudit.stats.binomial import clopper_pearson
from dpaudit.validation import check_confidence, check_count

__all__ = ["RocCurve", "roc_points", "auroc_interval", "tpr_at_fpr", "RegionPoints",
           "region_points", "LOW_FPRS"]

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


def _full_roc(obs: MembershipObservations) -> tuple[np.ndarray, np.ndarray]:
    """(FP, TP) counts of the tests "score >= t" for every distinct t, from the highest t down,
    preceded by (0, 0): one sort, cumulative sums over tie groups."""
    order = np.argsort(-obs.score, kind="stable")
    s = obs.score[order]
    m = obs.member[order]
    tp = np.cumsum(m, dtype=np.int64)
    fp = np.cumsum(~m, dtype=np.int64)
    last_of_group = np.r_[s[1:] != s[:-1], True]
    return np.r_[0, fp[last_of_group]], np.r_[0, tp[last_of_group]]


def roc_points(member: Any, score: Any, *, log_points: int = 240, linear_points: int = 60
               ) -> RocCurve:
    """ROC down-sampled on a log-spaced FPR grid [1/n0, 1] merged with a linear grid.

    At most ``log_points + linear_points + 2`` vertices whatever the number of canaries.
    """
    obs = MembershipObservations.from_arrays(member, score)
    obs.require_both_classes()
    log_points = check_count("log_points", log_points, minimum=2)
    linear_points = check_count("linear_points", linear_points, minimum=2)
    fp, tp = _full_roc(obs)
    n1, n0 = obs.n_members, obs.n_nonmembers
    fpr, tpr = fp / n0, tp / n1
    grid = np.unique(np.r_[np.geomspace(1.0 / n0, 1.0, log_points),
                           np.linspace(0.0, 1.0, linear_points)])
    # last vertex with FPR <= f: the largest TPR reachable at that FPR (FPR, TPR nondecreasing)
    idx = np.searchsorted(fpr, grid * (1 + 1e-12), side="right") - 1
    keep = np.unique(np.r_[0, idx[idx >= 0], fpr.size - 1])
    return RocCurve(fpr=fpr[keep], tpr=tpr[keep], n_members=n1, n_nonmembers=n0,
                    n_thresholds=int(fpr.size - 1))


def auroc_interval(member: Any, score: Any, confidence: float = 0.95
                   ) -> tuple[float, float, float]:
    """(AUROC, lower, upper): Mann-Whitney AUROC with DeLong's two-sided normal interval.

    With mid-ranks R over all n scores, R+ among members and R- among non-members,
    V10_i = (R_i - R+_i) / n0 (members), V01_j = 1 - (R_j - R-_j) / n1 (non-members),
    AUROC = mean V10 and Var = s2(V10) / n1 + s2(V01) / n0 (DeLong et al. 1988, Eq. 4).
    """
    obs = MembershipObservations.from_arrays(member, score)
    obs.require_both_classes()
    confidence = check_confidence(confidence)
    n1, n0 = obs.n_members, obs.n_nonmembers
    ranks = stats.rankdata(obs.score)
    pos, neg = obs.score[obs.member], obs.score[~obs.member]
    v10 = (ranks[obs.member] - stats.rankdata(pos)) / n0
    v01 = 1.0 - (ranks[~obs.member] - stats.rankdata(neg)) / n1
    auc = float(v10.mean())
    var = (v10.var(ddof=1) if n1 > 1 else 0.0) / n1 + (v01.var(ddof=1) if n0 > 1 else 0.0) / n0
    half = float(stats.norm.isf((1 - confidence) / 2) * np.sqrt(max(var, 0.0)))
    return auc, max(0.0, auc - half), min(1.0, auc + half)


def tpr_at_fpr(member: Any, score: Any, fprs: tuple[float, ...] = LOW_FPRS,
               confidence: float = 0.95) -> list[dict[str, float]]:
    """For each f: the largest empirical TPR of a threshold with FPR <= f, that threshold's
    FPR, and a two-sided Clopper-Pearson interval on its TPR (TP out of n1 members)."""
    obs = MembershipObservations.from_arrays(member, score)
    obs.require_both_classes()
    confidence = check_confidence(confidence)
    fp, tp = _full_roc(obs)
    n1, n0 = obs.n_members, obs.n_nonmembers
    f = np.asarray(fprs, dtype=float)
    idx = np.searchsorted(fp / n0, f * (1 + 1e-12), side="right") - 1
    k = tp[idx]
    lo, hi = clopper_pearson(k, n1, confidence, "two-sided")
    return [{"fpr_target": float(a), "fpr": float(fp[i] / n0), "tpr": float(kk / n1),
             "tpr_lo": float(x), "tpr_hi": float(y)}
            for a, i, kk, x, y in zip(f, idx, k, np.atleast_1d(lo), np.atleast_1d(hi),
                                      strict=True)]


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


def region_points(member: Any, score: Any, confidence: float = 0.95, *, points: int = 15,
                  extra_thresholds: Any = ()) -> RegionPoints:
    """Tests "score >= t" at ``points`` thresholds chosen label-blind (pooled-score quantiles
    whose upper tails are log-spaced from 1/n to 1/2) plus ``extra_thresholds``; FPR and FNR
    with two-sided Clopper-Pearson intervals at ``confidence`` each (pointwise boxes)."""
    obs = MembershipObservations.from_arrays(member, score)
    obs.require_both_classes()
    confidence = check_confidence(confidence)
    points = check_count("points", points, minimum=1)
    tails = np.geomspace(min(0.5, 1.0 / obs.n * 10), 0.5, points)
    t = np.quantile(obs.score, 1.0 - tails, method="higher")
    t = np.unique(np.r_[t, np.asarray(extra_thresholds, dtype=float).ravel()])
    t = t[np.isfinite(t)]
    pos = np.sort(obs.score[obs.member])
    neg = np.sort(obs.score[~obs.member])
    tp = pos.size - np.searchsorted(pos, t, side="left")
    fp = neg.size - np.searchsorted(neg, t, side="left")
    fn = pos.size - tp
    fpr_lo, fpr_hi = clopper_pearson(fp, neg.size, confidence, "two-sided")
    fnr_lo, fnr_hi = clopper_pearson(fn, pos.size, confidence, "two-sided")
    return RegionPoints(threshold=t, fpr=fp / neg.size, fnr=fn / pos.size,
                        fpr_lo=np.atleast_1d(fpr_lo), fpr_hi=np.atleast_1d(fpr_hi),
                        fnr_lo=np.atleast_1d(fnr_lo), fnr_hi=np.atleast_1d(fnr_hi),
                        confidence=confidence)
