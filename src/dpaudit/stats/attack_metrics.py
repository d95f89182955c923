"""Attack metrics with confidence intervals: AUROC and TPR at a fixed FPR.

The membership-inference literature reports an attack by its ROC curve: the AUROC and the TPR
at a low FPR (Carlini et al. 2022, "Membership inference attacks from first principles", §III).
These are estimates from finite samples; this module gives them intervals.

AUROC (members X_1..X_m, non-members Y_1..Y_n, A = P[X > Y] + P[X = Y]/2):

* point estimate: the Mann-Whitney statistic U / (m n) with ties counted 1/2, from the ROC core
  (:mod:`dpaudit.stats.roc`, counts per distinct score);
* ``"delong"`` -- DeLong, DeLong & Clarke-Pearson (1988), Biometrics 44(3): the structural
  components V10_i = (1/n) sum_j psi(X_i, Y_j), V01_j = (1/m) sum_i psi(X_i, Y_j) give
  Var(A) = s10^2 / m + s01^2 / n; computed from mid-ranks in O((m + n) log(m + n)) (Sun & Xu
  2014, IEEE SPL 21(11)); normal interval, clipped to [0, 1];
* ``"hanley_mcneil"`` -- Hanley & McNeil (1982), Radiology 143, Eq. 2 with their Q1 = A/(2 - A),
  Q2 = 2A^2/(1 + A) (exponential-score approximation): Var = [A(1-A) + (m-1)(Q1 - A^2) +
  (n-1)(Q2 - A^2)] / (m n);
* ``"bca"`` -- bias-corrected and accelerated bootstrap (Efron 1987) through
  ``scipy.stats.bootstrap``, members and non-members resampled separately (stratified, as the
  two samples are fixed in size by the audit design).

TPR at FPR:

* threshold fixed in advance (:func:`rates_at_threshold`): TP ~ Bin(m, TPR) and FP ~ Bin(n, FPR)
  exactly, so the exact Clopper-Pearson interval (:func:`dpaudit.stats.binomial.clopper_pearson`)
  applies to each rate;
* threshold chosen on the data to reach an FPR target (:func:`tpr_at_fpr`, the largest TPR
  whose empirical FPR <= target): no exact interval exists; the BCa bootstrap of the whole
  procedure (threshold re-chosen in every resample).  At very low FPR targets (fewer than a few
  non-members above the threshold) the bootstrap distribution is discrete and its intervals
  undercover: prefer a threshold fixed in advance (e.g. on held-out data) with the exact
  interval.

Intervals are two-sided at ``confidence``.  They describe the attack; they are not epsilon
bounds (use the estimators for those).

Conventions (users arrive with numbers from other tools; each number says which it uses):

* AUROC: ``convention="mann_whitney"`` (default) -- the empirical ROC with ties counted 1/2,
  U / (m n); ``"convex_hull"`` -- the area under the ROC convex hull (Provost & Fawcett 2001,
  "Robust classification for imprecise environments", Machine Learning 42(3)), i.e. allowing
  classifiers that randomise between two thresholds, the convention of
  ``jax_privacy.auditing.CanaryScoreAuditor.attack_auroc``; it is >= the Mann-Whitney value.
* TPR at FPR: ``convention="step"`` (default, :func:`tpr_at_fpr`) -- the largest TPR of a
  deterministic threshold whose empirical FPR <= target; ``"interpolated"`` -- the convex hull
  read at exactly the target FPR (a randomised mixture of two thresholds), jax_privacy's
  ``tpr_at_given_fpr``; it is >= the step value.
* :func:`max_accuracy` -- the best accuracy prevalence TPR + (1 - prevalence) TNR of one
  threshold (the prevalence defaults to the members' share), as jax_privacy's ``max_accuracy``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from dpaudit.observations import MembershipObservations
from dpaudit.stats.binomial import clopper_pearson
from dpaudit.stats.roc import (
    auroc_from_counts,
    counts_from_sorted,
    delong_from_counts,
    roc_counts,
)
from dpaudit.validation import (
    check_choice,
    check_confidence,
    check_count,
    check_probability,
)

__all__ = ["auroc", "auroc_interval", "delong_from_counts", "tpr_at_fpr", "tpr_at_fpr_interval",
           "rates_at_threshold", "attack_metrics", "MetricInterval", "AUROC_METHODS",
           "roc_points", "roc_convex_hull", "max_accuracy", "AUROC_CONVENTIONS",
           "TPR_CONVENTIONS"]

AUROC_CONVENTIONS = ("mann_whitney", "convex_hull")
TPR_CONVENTIONS = ("step", "interpolated")

AUROC_METHODS = ("delong", "hanley_mcneil", "bca")
#: resamples evaluated at once (bounds the memory of a vectorised statistic to batch x n).
BOOTSTRAP_BATCH = 200
#: suffix of the method when the bootstrap distribution is degenerate (bounds are NaN).
DEGENERATE = " (degenerate bootstrap distribution: no interval)"


@dataclass(frozen=True)
class MetricInterval:
    """A point estimate with a two-sided interval at ``confidence``."""

    estimate: float
    low: float
    high: float
    confidence: float
    method: str

    def to_dict(self) -> dict[str, Any]:
        def f(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {"estimate": self.estimate, "low": f(self.low), "high": f(self.high),
                "confidence": self.confidence, "method": self.method}


def _obs(member: ArrayLike, score: ArrayLike) -> MembershipObservations:
    obs = MembershipObservations.from_arrays(member, score)
    obs.require_both_classes()
    return obs


def _auc_xy(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Mann-Whitney AUROC of members x vs non-members y along ``axis`` (mid-ranks): the
    bootstrap's vectorised statistic (one AUROC per resample); point estimates come from the
    ROC core (:func:`dpaudit.stats.roc.auroc_from_counts`)."""
    x, y = np.moveaxis(x, axis, -1), np.moveaxis(y, axis, -1)
    m, n = x.shape[-1], y.shape[-1]
    ranks = stats.rankdata(np.concatenate([x, y], axis=-1), axis=-1)
    return (ranks[..., :m].sum(axis=-1) - m * (m + 1) / 2) / (m * n)


def auroc(member: ArrayLike, score: ArrayLike, *, convention: str = "mann_whitney") -> float:
    """AUROC = P[member score > non-member score] + P[tie] / 2 (Mann-Whitney U / (m n)); with
    ``convention="convex_hull"`` the area under the ROC convex hull (see module)."""
    check_choice("convention", convention, AUROC_CONVENTIONS)
    obs = _obs(member, score)
    if convention == "convex_hull":
        f, t = _roc_convex_hull(obs)
        return float(np.sum((f[1:] - f[:-1]) * (t[1:] + t[:-1])) / 2)
    order = np.argsort(obs.score)
    return auroc_from_counts(counts_from_sorted(obs.score[order], obs.member[order]))


def roc_points(member: ArrayLike, score: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(FPR, TPR) of every threshold rule "score >= t", t over the distinct scores and +inf,
    from (0, 0) to (1, 1), FPR non-decreasing (one sort, cumulative counts)."""
    return _roc_points(_obs(member, score))


def _roc_points(obs: MembershipObservations) -> tuple[np.ndarray, np.ndarray]:
    """:func:`roc_points` of validated observations (the ROC core,
    :func:`dpaudit.stats.roc.roc_counts`)."""
    order = np.argsort(obs.score)
    c = counts_from_sorted(obs.score[order], obs.member[order])
    fp, tp = roc_counts(c)
    return fp / c.n0, tp / c.n1


def roc_convex_hull(member: ArrayLike, score: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (FPR, TPR) of the upper convex hull of the ROC points, from (0, 0) to (1, 1):
    every point of the hull is reached by a classifier that randomises between two thresholds
    (Provost & Fawcett 2001).  Qhull (``scipy.spatial.ConvexHull``) on the ROC points plus the
    corner (1, 0): the hull's other vertices are exactly the upper chain, since every ROC point
    has TPR >= 0 and FPR <= 1."""
    return _roc_convex_hull(_obs(member, score))


def _roc_convex_hull(obs: MembershipObservations) -> tuple[np.ndarray, np.ndarray]:
    """:func:`roc_convex_hull` of validated observations."""
    from scipy.spatial import ConvexHull, QhullError

    fpr, tpr = _roc_points(obs)
    pts = np.unique(np.column_stack([fpr, tpr]), axis=0)
    pts = np.vstack([pts, [[1.0, 0.0]]])
    try:
        idx = ConvexHull(pts).vertices
    except QhullError:  # collinear: the ROC is the diagonal (or a segment of it)
        return np.array([0.0, 1.0]), np.array([0.0, 1.0])
    v = pts[idx]
    v = v[~((v[:, 0] == 1.0) & (v[:, 1] == 0.0))]
    v = v[np.lexsort((v[:, 1], v[:, 0]))]
    # the chain runs from (0, 0) to (1, 1); (0, 0) or (1, 1) may be dropped by qhull only when
    # collinear with a neighbour, and both are ROC points
    f = np.concatenate(([0.0], v[:, 0], [1.0]))
    t = np.concatenate(([0.0], v[:, 1], [1.0]))
    keep = np.concatenate(([True], np.diff(f) > 0)) | np.concatenate(([True], np.diff(t) > 0))
    return f[keep], t[keep]


def max_accuracy(member: ArrayLike, score: ArrayLike, prevalence: float | None = None) -> float:
    """max over thresholds of prevalence TPR + (1 - prevalence)(1 - FPR); ``prevalence``
    defaults to the members' share (then it is the best empirical accuracy of one threshold).
    A linear objective: the hull vertices give the same maximum as all the ROC points."""
    obs = _obs(member, score)
    fpr, tpr = _roc_points(obs)
    p = obs.n_members / obs.n if prevalence is None else check_probability("prevalence",
                                                                           prevalence)
    return float(np.max(p * tpr + (1 - p) * (1 - fpr)))


def _hanley_mcneil_se(a: float, m: int, n: int) -> float:
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    var = (a * (1 - a) + (m - 1) * (q1 - a * a) + (n - 1) * (q2 - a * a)) / (m * n)
    return math.sqrt(max(var, 0.0))


def _bootstrap(stat: Any, x: np.ndarray, y: np.ndarray, confidence: float, n_resamples: int,
               seed: Any, vectorized: bool, method: str = "BCa") -> tuple[float, float]:
    """BCa interval (NaN when the bootstrap distribution is degenerate; callers fall back).
    Each class needs two or more observations (SciPy's resampling requirement)."""
    if min(x.size, y.size) < 2:
        raise ValueError(f"member: a bootstrap interval needs at least 2 members and 2 "
                         f"non-members; got {x.size} and {y.size}")
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", getattr(stats, "DegenerateDataWarning", RuntimeWarning))
        warnings.simplefilter("ignore", RuntimeWarning)  # 0/0 in the acceleration when degenerate
        res = stats.bootstrap((x, y), stat, n_resamples=n_resamples, confidence_level=confidence,
                              method=method, vectorized=vectorized, paired=False,
                              batch=BOOTSTRAP_BATCH, random_state=np.random.default_rng(seed))
    lo, hi = res.confidence_interval
    return float(lo), float(hi)


def auroc_interval(member: ArrayLike, score: ArrayLike, confidence: float = 0.95,
                   method: str = "delong",
                   *, n_resamples: int = 2000, seed: Any = 0) -> MetricInterval:
    """AUROC with a two-sided interval: "delong" (default), "hanley_mcneil" or "bca"."""
    obs = _obs(member, score)
    gamma = check_confidence(confidence)
    check_choice("method", method, AUROC_METHODS)
    return _auroc_interval(obs, gamma, method, n_resamples, seed)


def _auroc_interval(obs: MembershipObservations, gamma: float, method: str,
                    n_resamples: int, seed: Any) -> MetricInterval:
    """:func:`auroc_interval` of validated observations (``gamma``, ``method`` checked)."""
    x, y = obs.score[obs.member], obs.score[~obs.member]
    order = np.argsort(obs.score)
    counts = counts_from_sorted(obs.score[order], obs.member[order])
    a = auroc_from_counts(counts)
    if method == "bca":
        lo, hi = _bootstrap(_auc_xy, x, y, gamma,
                            check_count("n_resamples", n_resamples, minimum=100), seed, True)
    elif method == "delong":
        _, lo, hi = delong_from_counts(counts.c1, counts.c0, gamma)
    else:
        se = _hanley_mcneil_se(a, x.size, y.size)
        z = float(stats.norm.isf((1 - gamma) / 2))
        lo, hi = a - z * se, a + z * se
    if not (math.isfinite(lo) and math.isfinite(hi)):  # degenerate bootstrap (e.g. A = 1)
        return MetricInterval(a, math.nan, math.nan, gamma, method + DEGENERATE)
    return MetricInterval(a, max(0.0, lo), min(1.0, hi), gamma, method)


def _tpr_xy(x: np.ndarray, y: np.ndarray, fpr: float, axis: int = -1) -> np.ndarray:
    """Largest TPR over thresholds "score >= t" with empirical FPR <= fpr, along ``axis``."""
    x, y = np.moveaxis(x, axis, -1), np.moveaxis(y, axis, -1)
    n = y.shape[-1]
    k = int(math.floor(fpr * n + 1e-9))  # at most k non-members may reach the threshold
    ys = -np.sort(-y, axis=-1)           # descending
    if k >= n:
        return np.ones(x.shape[:-1])
    # threshold just above the (k+1)-th largest non-member: t* = ys[k]; members > ys[k]
    # (when ys[k-1] == ys[k] ties push the FPR over: strict inequality handles it)
    t = ys[..., k][..., None]
    return (x > t).mean(axis=-1)


def tpr_at_fpr(member: ArrayLike, score: ArrayLike, fpr: float, *,
               convention: str = "step") -> float:
    """Largest empirical TPR among thresholds whose empirical FPR is <= ``fpr``; with
    ``convention="interpolated"`` the ROC convex hull read at exactly ``fpr`` (see module)."""
    check_choice("convention", convention, TPR_CONVENTIONS)
    obs = _obs(member, score)
    f = check_probability("fpr", fpr)
    if convention == "interpolated":
        hf, ht = _roc_convex_hull(obs)
        return float(np.interp(f, hf, ht))
    return float(_tpr_xy(obs.score[obs.member], obs.score[~obs.member], f))


def tpr_at_fpr_interval(member: ArrayLike, score: ArrayLike, fpr: float,
                        confidence: float = 0.95, *,
                        n_resamples: int = 2000, seed: Any = 0,
                        method: str = "bca") -> MetricInterval:
    """TPR at an FPR target with the threshold chosen on the data: bootstrap interval.

    ``method="bca"`` (default) or ``"percentile"``.  BCa's acceleration needs a jackknife of
    n leave-one-out statistics, O(n^2 log n) here (about 1 s at n = 5,000, 20 s at 20,000);
    the percentile interval costs O(B n log n) and is first-order accurate only.
    """
    obs = _obs(member, score)
    f = check_probability("fpr", fpr)
    gamma = check_confidence(confidence)
    how = check_choice("method", method, ("bca", "percentile"))
    return _tpr_at_fpr_interval(obs, f, gamma, how, n_resamples, seed)


def _tpr_at_fpr_interval(obs: MembershipObservations, f: float, gamma: float, how: str,
                         n_resamples: int, seed: Any) -> MetricInterval:
    """:func:`tpr_at_fpr_interval` of validated observations (``f``, ``gamma``, ``how``
    checked)."""
    x, y = obs.score[obs.member], obs.score[~obs.member]
    est = float(_tpr_xy(x, y, f))

    def stat(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return _tpr_xy(a, b, f, axis=axis)

    lo, hi = _bootstrap(stat, x, y, gamma, check_count("n_resamples", n_resamples, minimum=100),
                        seed, True, "BCa" if how == "bca" else "percentile")
    if not (math.isfinite(lo) and math.isfinite(hi)):  # degenerate (constant) statistic
        return MetricInterval(est, math.nan, math.nan, gamma, how + DEGENERATE)
    return MetricInterval(est, max(0.0, lo), min(1.0, hi), gamma, how)


def rates_at_threshold(member: ArrayLike, score: ArrayLike, threshold: float,
                       confidence: float = 0.95) -> dict[str, MetricInterval]:
    """TPR and FPR of "score >= threshold" for a threshold fixed before seeing the data, each
    with its exact two-sided Clopper-Pearson interval."""
    obs = _obs(member, score)
    gamma = check_confidence(confidence)
    t = float(threshold)
    if not math.isfinite(t):
        raise ValueError(f"threshold must be finite, got {threshold!r}")
    tp = int(np.count_nonzero(obs.score[obs.member] >= t))
    fp = int(np.count_nonzero(obs.score[~obs.member] >= t))
    out = {}
    for name, k, n in (("tpr", tp, obs.n_members), ("fpr", fp, obs.n_nonmembers)):
        lo, hi = clopper_pearson(k, n, gamma, "two-sided")
        out[name] = MetricInterval(k / n, float(lo), float(hi), gamma, "clopper_pearson")
    return out


def attack_metrics(member: ArrayLike, score: ArrayLike, confidence: float = 0.95, *,
                   fprs: tuple[float, ...] = (0.01,), auroc_method: str = "delong",
                   bootstrap: bool = True, n_resamples: int = 2000, seed: Any = 0
                   ) -> dict[str, Any]:
    """AUROC and TPR at each FPR of ``fprs``, with intervals, as a JSON-ready dict (for
    results' ``details`` and reports).  ``bootstrap=False`` skips the TPR bootstrap.
    The observations are validated once, here, and passed to every metric."""
    obs = _obs(member, score)
    gamma = check_confidence(confidence)
    check_choice("method", auroc_method, AUROC_METHODS)
    out: dict[str, Any] = {"auroc": _auroc_interval(obs, gamma, auroc_method, n_resamples,
                                                    seed).to_dict()}
    x, y = obs.score[obs.member], obs.score[~obs.member]
    for f in fprs:
        key = f"tpr_at_fpr_{f:g}"
        fv = check_probability("fpr", f)
        if bootstrap:
            out[key] = _tpr_at_fpr_interval(obs, fv, gamma, "bca", n_resamples,
                                            seed).to_dict()
        else:
            out[key] = {"estimate": float(_tpr_xy(x, y, fv)), "low": None, "high": None,
                        "confidence": confidence, "method": None}
    return out
