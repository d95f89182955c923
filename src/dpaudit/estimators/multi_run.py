"""Classical multi-run audit from FPR/FNR (Hypothesis Interpretation; Jagielski et al. 2020, Nasr et
al. 2021).

A membership test "score >= t" has FPR alpha = P[M(D0) in S] and FNR beta = P[M(D1) not in S]
(Hypothesis Interpretation Eqs. 11-12).  (epsilon, delta)-DP confines (alpha, beta) to the privacy
region
(Hypothesis Interpretation Eqs. 3-6, 13-16); read as lower bounds on e^epsilon:

    (13)  (1 - FPR - delta) / FNR <= e^eps        (TNR - delta) / FNR
    (14)  (TPR - delta) / FPR     <= e^eps
    (15)  (FPR - delta) / TPR     <= e^eps        the flipped test (predict "non-member")
    (16') (FNR - delta) / TNR     <= e^eps        the complement set, Eq. (10) on S-bar

(13)-(14) need a lower bound on TPR and an upper bound on FPR; (15)-(16') the opposite sides.
Rates are bounded with exact Clopper-Pearson intervals.  With ``direction="both"`` all four sides
are used and each of the two rates gets a two-sided interval at failure probability
(1 - confidence) / 2 (union bound); with ``direction="positive"`` only (13)-(14) are used and the
two one-sided bounds get (1 - confidence) / 2 each.

Threshold strategies:
* ``"bonferroni"`` -- every candidate threshold, failure probability divided by their number.
  Candidates (label-blind) on ``grid="geometric"`` (the default): thresholds with k pooled
  scores at or above them (the k-th largest) or k below them (the (k+1)-th smallest), for
  geometric ranks k = 1, 2, 3, 5, 8, ... (ratio 1.5) up to n / 2, plus
  30 pooled-score quantiles (about 60 thresholds at n = 1e3, 90 at n = 1e6); on
  ``grid="quantiles"`` (the grid before): the distinct pooled scores, thinned to at most
  ``max_thresholds`` (1000) pooled-score quantiles.  Caveat: Bonferroni strictly needs
  thresholds fixed before seeing the data; the candidates here depend on the pooled scores
  (not on the labels).  The Monte Carlo coverage tests in tests/test_multi_run.py show the
  bound stays valid (both grids); use ``"split"`` when exact validity is required.
* ``"split"`` -- choose the threshold on a seeded random half (``split_fraction``), bound on the
  other half at the full confidence: exactly valid.
* ``"multi_split"`` -- ten seeded splits combined by the median-of-p-values rule
  (:mod:`dpaudit.estimators.split_rule`): exactly valid, less dependent on one split's luck;
* a number -- that threshold only.

The GDP-based estimate (``estimate="gdp"``): a test with (alpha, beta) is consistent with mu-GDP
iff Phi^{-1}(1 - alpha) - Phi^{-1}(beta) <= mu (Dong, Roth, Su 2022), so the same confidence
bounds give mu_lb = Phi^{-1}(1 - FPR_hi) - Phi^{-1}(FNR_hi), reported as GaussianDP(mu_lb)
.epsilon(delta).  This is a valid lower bound on the mu of any GDP guarantee; as an epsilon it is
an estimate that assumes the mechanism's trade-off curve has the Gaussian shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from dpaudit.curves.families import GDP_ASSUMPTION
from dpaudit.curves.gaussian import GaussianDP
from dpaudit.estimators.split_rule import SPLIT_COMBINE, combine_splits, per_split_confidence
from dpaudit.observations import MembershipObservations, SortedObservations
from dpaudit.randomness import split_seeds
from dpaudit.results import AuditResult
from dpaudit.stats.binomial import clopper_pearson
from dpaudit.stats.roc import (
    auroc_from_counts,
    counts_at_or_above,
    counts_from_sorted,
    tpr_at_fpr_from_counts,
)
from dpaudit.validation import (
    check_choice,
    check_confidence,
    check_count,
    check_delta,
    check_probability,
)

__all__ = ["multi_run", "multi_run_counts", "epsilon_from_rates", "gdp_mu_from_rates",
           "roc_summary", "multi_run_splits", "geometric_ranks", "GRIDS"]

DIRECTIONS = ("both", "positive")
ESTIMATES = ("eps_delta", "gdp")


def _safe_log_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where((num > 0) & (den > 0), np.log(np.maximum(num, 1e-300) /
                                                      np.maximum(den, 1e-300)), -np.inf)
    return out


def epsilon_from_rates(tpr_lo: Any, tpr_hi: Any, fpr_lo: Any, fpr_hi: Any, delta: float,
                       direction: str = "both") -> np.ndarray:
    """max over Hypothesis Interpretation Eqs. 13-16 of log(ratio), floored at 0 (vectorised)."""
    tpr_lo, tpr_hi = np.asarray(tpr_lo, float), np.asarray(tpr_hi, float)
    fpr_lo, fpr_hi = np.asarray(fpr_lo, float), np.asarray(fpr_hi, float)
    e13 = _safe_log_ratio(1 - fpr_hi - delta, 1 - tpr_lo)
    e14 = _safe_log_ratio(tpr_lo - delta, fpr_hi)
    eps = np.maximum(e13, e14)
    if direction == "both":
        e15 = _safe_log_ratio(fpr_lo - delta, tpr_hi)
        e16 = _safe_log_ratio(1 - tpr_hi - delta, 1 - fpr_lo)
        eps = np.maximum(eps, np.maximum(e15, e16))
    return np.maximum(eps, 0.0)


def gdp_mu_from_rates(tpr_lo: Any, tpr_hi: Any, fpr_lo: Any, fpr_hi: Any,
                      direction: str = "both") -> np.ndarray:
    """mu_lb = Phi^{-1}(1 - FPR_hi) - Phi^{-1}(FNR_hi) (and the flipped test), floored at 0."""
    norm = stats.norm
    mu = norm.isf(np.asarray(fpr_hi, float)) - norm.ppf(1 - np.asarray(tpr_lo, float))
    if direction == "both":
        flip = norm.isf(1 - np.asarray(fpr_lo, float)) - norm.ppf(np.asarray(tpr_hi, float))
        mu = np.maximum(mu, flip)
    mu = np.where(np.isfinite(mu), mu, np.where(mu > 0, 64.0, 0.0))
    return np.maximum(mu, 0.0)


def _rate_bounds(tp: np.ndarray, n_pos: int, fp: np.ndarray, n_neg: int, fail: float,
                 direction: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Clopper-Pearson bounds on TPR and FPR spending ``fail`` in total (union bound)."""
    if direction == "both":
        tpr_lo, tpr_hi = clopper_pearson(tp, n_pos, 1 - fail / 2, "two-sided")
        fpr_lo, fpr_hi = clopper_pearson(fp, n_neg, 1 - fail / 2, "two-sided")
    else:
        tpr_lo, tpr_hi = clopper_pearson(tp, n_pos, 1 - fail / 2, "lower")
        fpr_lo, fpr_hi = clopper_pearson(fp, n_neg, 1 - fail / 2, "upper")
    return (np.asarray(tpr_lo, float), np.asarray(tpr_hi, float), np.asarray(fpr_lo, float),
            np.asarray(fpr_hi, float))


@dataclass(frozen=True)
class _Sweep:
    thresholds: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    n_pos: int
    n_neg: int


def _sweep(srt: SortedObservations, thresholds: np.ndarray) -> _Sweep:
    pos, neg = srt.pos, srt.neg
    tp, fp = counts_at_or_above(pos, neg, thresholds)
    return _Sweep(thresholds, tp.astype(float), fp.astype(float), int(pos.size), int(neg.size))


def _candidates(srt: SortedObservations, max_thresholds: int) -> np.ndarray:
    """The ``"quantiles"`` grid: the distinct pooled scores, thinned to ``max_thresholds``
    evenly spaced pooled-score quantiles."""
    u = srt.unique()
    if u.size > max_thresholds:
        u = np.unique(np.quantile(srt.scores, np.linspace(0, 1, max_thresholds),
                                  method="lower"))
    return u


GRIDS = ("geometric", "quantiles")
GEOMETRIC_RATIO = 1.5
GEOMETRIC_QUANTILES = 30


def geometric_ranks(n: int, ratio: float = GEOMETRIC_RATIO) -> np.ndarray:
    """The ranks k = round(ratio^j), j = 0, 1, ..., distinct, 1 <= k <= n // 2."""
    if n < 2:
        return np.zeros(0, dtype=np.int64)
    top = int(math.ceil(math.log(n / 2) / math.log(ratio))) + 1
    ranks = np.unique(np.round(ratio ** np.arange(top + 1)).astype(np.int64))
    return ranks[(ranks >= 1) & (ranks <= n // 2)]


def _geometric_candidates(srt: SortedObservations) -> np.ndarray:
    """The ``"geometric"`` grid (the default): the thresholds with k pooled scores at or above
    them (the k-th largest score) and with k below them (the (k+1)-th smallest), ties aside,
    for k on the geometric ranks 1, 2, 3, 5, 8, ... (ratio 1.5) up to n / 2, plus 30 evenly
    spaced pooled-score quantiles.

    Why: the Hypothesis Interpretation bounds (Eqs. 13-16) divide a rate by a rate, so what a
    threshold's position costs is *relative*: a grid whose count from either end grows
    geometrically loses at most a factor 1.5 in a tail count wherever the best threshold
    sits, with about 2 log(n / 2) / log 1.5 + 30 thresholds (64 + 30 at n = 1e6) instead of
    1000 -- a smaller Bonferroni correction.  The 30 quantiles keep the middle (where a
    nearly separable attack's best threshold is) within n / 30 ranks.  The grid is a function
    of the pooled scores and n only, never of the labels (measured against 1000 quantiles and
    against jax_privacy's label-chosen frontier: docs/performance.md, "Multi-run threshold
    grid")."""
    ss = srt.scores
    n = ss.size
    k = geometric_ranks(n)
    parts = [ss[n - k], ss[k], np.quantile(ss, np.linspace(0, 1, GEOMETRIC_QUANTILES),
                                           method="lower")]
    return np.unique(np.concatenate(parts))


def _evaluate(sw: _Sweep, fail: float, delta: float, direction: str,
              estimate: str) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
    bounds = _rate_bounds(sw.tp, sw.n_pos, sw.fp, sw.n_neg, fail, direction)
    if estimate == "gdp":
        mu = gdp_mu_from_rates(*bounds, direction=direction)
        return mu, mu, bounds
    eps = epsilon_from_rates(*bounds, delta=delta, direction=direction)
    return eps, eps, bounds


def roc_summary(member: Any, score: Any, fprs: tuple[float, ...] = (1e-3, 1e-2, 1e-1)
                ) -> dict[str, Any]:
    """Empirical AUROC (Mann-Whitney) and TPR at the given FPRs (largest TPR with FPR <= f)."""
    return _roc_summary(SortedObservations.from_arrays(member, score), fprs)


def _roc_summary(srt: SortedObservations, fprs: tuple[float, ...] = (1e-3, 1e-2, 1e-1)
                 ) -> dict[str, Any]:
    """:func:`roc_summary` from the sorted scores (the ROC core,
    :mod:`dpaudit.stats.roc`: counts per distinct score)."""
    c = counts_from_sorted(srt.scores, srt.member)
    tpr, _, _ = tpr_at_fpr_from_counts(c, fprs)
    out: dict[str, Any] = {"auroc": auroc_from_counts(c)}
    for f, t in zip(fprs, tpr.tolist(), strict=True):
        out[f"tpr_at_fpr_{f:g}"] = float(t)
    return out


def _result(value: float, obs_pos: int, obs_neg: int, delta: float, confidence: float,
            estimate: str, settings: dict[str, Any], details: dict[str, Any]) -> AuditResult:
    if estimate == "gdp":
        mu = float(value)
        eps = GaussianDP(mu).epsilon(delta) if mu > 0 else 0.0
        # an estimate under the GDP assumption, not a lower bound for an (eps, delta) claim:
        # printed as an estimate and never the basis of a verdict (AuditResult.is_estimate)
        return AuditResult(epsilon=float(eps), delta=delta, confidence=confidence,
                           method="multi_run_gdp", params={"mu": mu}, settings=settings,
                           details={**details, "estimate": True},
                           assumption=GDP_ASSUMPTION)
    return AuditResult(epsilon=float(value), delta=delta, confidence=confidence,
                       method="multi_run", params={}, settings=settings, details=details)


def multi_run_counts(tp: int, fn: int, fp: int, tn: int, delta: float = 0.0,
                     confidence: float = 0.95, direction: str = "both",
                     estimate: str = "eps_delta") -> AuditResult:
    """Epsilon lower bound from one confusion matrix (a threshold fixed in advance)."""
    tp, fn = check_count("tp", tp), check_count("fn", fn)
    fp, tn = check_count("fp", fp), check_count("tn", tn)
    delta, confidence = check_delta(delta), check_confidence(confidence)
    check_choice("direction", direction, DIRECTIONS)
    check_choice("estimate", estimate, ESTIMATES)
    n_pos, n_neg = tp + fn, fp + tn
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"need at least one member (tp + fn >= 1) and one non-member "
                         f"(fp + tn >= 1); got {n_pos} and {n_neg}")
    sw = _Sweep(np.array([math.nan]), np.array([float(tp)]), np.array([float(fp)]), n_pos, n_neg)
    val, _, b = _evaluate(sw, 1 - confidence, delta, direction, estimate)
    details = {"tpr_bounds": [float(b[0][0]), float(b[1][0])],
               "fpr_bounds": [float(b[2][0]), float(b[3][0])],
               "tpr": tp / n_pos, "fpr": fp / n_neg}
    settings = {"tp": tp, "fn": fn, "fp": fp, "tn": tn, "direction": direction,
                "estimate": estimate, "interval": "clopper_pearson"}
    return _result(float(val[0]), n_pos, n_neg, delta, confidence, estimate, settings, details)


def multi_run(member: Any, score: Any, delta: float = 0.0, confidence: float = 0.95,
              threshold: str | float = "bonferroni", *, direction: str = "both",
              estimate: str = "eps_delta", split_fraction: float = 0.5, seed: int = 0,
              max_thresholds: int = 1000, grid: str = "geometric") -> AuditResult:
    """Epsilon lower bound from per-trial membership labels and attack scores.

    Args:
      member: 0/1 per trial (1 = the canary was in the training set / D1 was used).
      score: attack score per trial (higher = more likely member).
      delta: the delta of the claimed guarantee, in [0, 1).
      confidence: probability that the bound holds, in (0, 1).
      threshold: "bonferroni", "split", "multi_split" (10 seeded splits, median rule: see
        :mod:`dpaudit.estimators.split_rule`) or a number (member when score >= threshold).
      direction: "both" (Eqs. 13-16) or "positive" (Eqs. 13-14 only).
      estimate: "eps_delta" (the privacy-region bound) or "gdp" (the GDP-based estimate).
      grid: the Bonferroni thresholds (``threshold="bonferroni"``): "geometric" (default;
        geometric pooled-score ranks from both ends plus 30 quantiles, about 90 thresholds
        at n = 1e6) or "quantiles" (at most ``max_thresholds`` evenly spaced pooled-score
        quantiles: the grid before; ``grid="quantiles"`` with the default 1000 reproduces it).
      max_thresholds: size of the "quantiles" grid, and of the selection grid of the split
        strategies.
    """
    srt = SortedObservations.from_arrays(member, score)  # validated and sorted once
    delta, confidence = check_delta(delta), check_confidence(confidence)
    check_choice("direction", direction, DIRECTIONS)
    check_choice("estimate", estimate, ESTIMATES)
    check_choice("grid", grid, GRIDS)
    if threshold == "multi_split":  # S seeded splits combined validly (estimators.split_rule)
        return _multi_run_splits(srt, delta, confidence, n_splits=10, combine="median",
                                 split_fraction=split_fraction, seed=seed,
                                 direction=direction, estimate=estimate,
                                 max_thresholds=max_thresholds)
    return _multi_run(srt, _roc_summary(srt), delta, confidence, threshold,
                      direction=direction, estimate=estimate, split_fraction=split_fraction,
                      seed=seed, max_thresholds=max_thresholds, grid=grid)


def _multi_run(srt: SortedObservations, summary: dict[str, Any], delta: float,
               confidence: float, threshold: str | float, *, direction: str, estimate: str,
               split_fraction: float, seed: int, max_thresholds: int,
               grid: str = "geometric") -> AuditResult:
    """:func:`multi_run` on observations validated and sorted by the caller (the public
    boundary), with ``delta``, ``confidence``, ``direction``, ``estimate`` and ``grid`` checked
    there
    and ``summary`` = ``_roc_summary(srt)`` (computed once for every split)."""
    obs = srt.obs
    fail = 1 - confidence
    settings: dict[str, Any] = {"n": obs.n, "n_members": obs.n_members, "direction": direction,
                                "estimate": estimate, "interval": "clopper_pearson"}
    if isinstance(threshold, str):
        check_choice("threshold", threshold, ("bonferroni", "split", "multi_split"))
        settings["threshold"] = threshold
        if threshold == "bonferroni":
            max_thresholds = check_count("max_thresholds", max_thresholds, minimum=1)
            cands = (_geometric_candidates(srt) if grid == "geometric"
                     else _candidates(srt, max_thresholds))
            sw = _sweep(srt, cands)
            vals, _, b = _evaluate(sw, fail / cands.size, delta, direction, estimate)
            i = int(np.argmax(vals))
            settings.update(n_thresholds=int(cands.size), grid=grid)
            if grid == "quantiles":
                settings["max_thresholds"] = max_thresholds
            chosen, value = float(cands[i]), float(vals[i])
            tp, fp, n_pos, n_neg = sw.tp[i], sw.fp[i], sw.n_pos, sw.n_neg
            b_i = [float(x[i]) for x in b]
        else:
            frac = check_probability("split_fraction", split_fraction, open_low=True,
                                     open_high=True)
            rng = np.random.default_rng(seed)
            pick = rng.random(obs.n) < frac
            a = MembershipObservations(obs.member[pick], obs.score[pick])
            c = MembershipObservations(obs.member[~pick], obs.score[~pick])
            if min(a.n_members, a.n_nonmembers, c.n_members, c.n_nonmembers) == 0:
                raise ValueError("split leaves a part without members or non-members; "
                                 "use more trials or threshold='bonferroni'")
            srt_a = SortedObservations.of(a)
            cands = _candidates(srt_a, max_thresholds)
            vals_a, _, _ = _evaluate(_sweep(srt_a, cands), fail, delta, direction, estimate)
            chosen = float(cands[int(np.argmax(vals_a))])
            sw = _sweep(SortedObservations.of(c), np.array([chosen]))
            vals, _, b = _evaluate(sw, fail, delta, direction, estimate)
            value = float(vals[0])
            tp, fp, n_pos, n_neg = sw.tp[0], sw.fp[0], sw.n_pos, sw.n_neg
            b_i = [float(x[0]) for x in b]
            settings.update(split_fraction=frac, seed=seed, n_select=a.n, n_bound=c.n)
    else:
        try:
            chosen = float(threshold)
        except (TypeError, ValueError):
            raise ValueError(f"threshold must be 'bonferroni', 'split', 'multi_split' or a number; "
                             f"got {threshold!r}") from None
        if not math.isfinite(chosen):
            raise ValueError(f"threshold must be finite, got {threshold!r}")
        settings["threshold"] = chosen
        sw = _sweep(srt, np.array([chosen]))
        vals, _, b = _evaluate(sw, fail, delta, direction, estimate)
        value = float(vals[0])
        tp, fp, n_pos, n_neg = sw.tp[0], sw.fp[0], sw.n_pos, sw.n_neg
        b_i = [float(x[0]) for x in b]
    details = {"threshold": chosen, "tp": int(tp), "fp": int(fp), "n_members": n_pos,
               "n_nonmembers": n_neg, "tpr_bounds": b_i[:2], "fpr_bounds": b_i[2:],
               **summary}
    return _result(value, n_pos, n_neg, delta, confidence, estimate, settings, details)


def multi_run_splits(member: Any, score: Any, delta: float = 0.0, confidence: float = 0.95, *,
                     n_splits: int = 10, combine: str = "median", split_fraction: float = 0.5,
                     seed: int = 0, direction: str = "both", estimate: str = "eps_delta",
                     max_thresholds: int = 1000) -> AuditResult:
    """S seeded ``threshold="split"`` audits combined by :mod:`dpaudit.estimators.split_rule`
    (``multi_run(threshold="multi_split")`` and :func:`dpaudit.estimators.multi_split.
    multi_split`)."""
    srt = SortedObservations.from_arrays(member, score)  # validated and sorted once
    delta, confidence = check_delta(delta), check_confidence(confidence)
    check_choice("direction", direction, DIRECTIONS)
    check_choice("estimate", estimate, ESTIMATES)
    return _multi_run_splits(srt, delta, confidence, n_splits=n_splits, combine=combine,
                             split_fraction=split_fraction, seed=seed, direction=direction,
                             estimate=estimate, max_thresholds=max_thresholds)


def _multi_run_splits(srt: SortedObservations, delta: float, gamma: float, *, n_splits: int,
                      combine: str, split_fraction: float, seed: int, direction: str,
                      estimate: str, max_thresholds: int) -> AuditResult:
    """:func:`multi_run_splits` on observations validated and sorted once by the caller:
    every split's row is :func:`_multi_run` with ``threshold="split"`` on the same sorted
    observations and the same ROC summary of all the trials."""
    how = check_choice("combine", combine, SPLIT_COMBINE)
    s_count = check_count("n_splits", n_splits, minimum=1)
    per = per_split_confidence(gamma, how, s_count)
    seeds = split_seeds(seed, s_count)
    summary = _roc_summary(srt)
    rows = [_multi_run(srt, summary, delta, per, "split", direction=direction,
                       estimate=estimate, split_fraction=split_fraction, seed=sd,
                       max_thresholds=max_thresholds) for sd in seeds]
    return combine_splits(rows, delta=delta, confidence=gamma, combine=how, per=per, seed=seed,
                          seeds=seeds)
