"""Hockey-stick divergence auditors on in/out canary scores (distribution-aware one-run audit).

Idea (Koskela & Mohammadi, "Auditing Differential Privacy Guarantees Using Density
Estimation", arXiv 2406.04827, §3-4; first version "Black Box Differential Privacy Auditing
Using Total Variation Distance"): if the canaries are independent and every canary's score has
law P when it is left out and Q when it is included, (eps, delta)-DP of the mechanism bounds
the hockey-stick divergence of the pair (post-processing):

    H_{e^eps}(Q || P) = sup_S Q(S) - e^eps P(S) <= delta   and   H_{e^eps}(P || Q) <= delta.

Any estimate of H from the two samples of scores (out = members' complement, in = members)
therefore reads as an epsilon.  The one-run setting supplies the two samples: out-scores are
draws from P, in-scores draws from Q.  Thresholding at a single point (what tight / Steinke /
Mahloujifar do) is the two-bin special case; the histogram uses every bin.

Two estimators:

* :func:`hockey_stick` -- **finite-sample** lower bound, no model.  Test sets are
  score thresholds placed AT order statistics of the samples; for i.i.d. draws the
  probability mass beyond an order statistic is exactly Beta-distributed whatever the law
  (X_(k) = F^{-1}(U_(k)), so P[X > x_(k)] <= 1 - U_(k) ~ Beta(n - k + 1, k), and
  Q[X >= y_(j)] >= 1 - U_(j)), i.e. a Clopper-Pearson bound with one fewer/more count.
  With a geometric grid of K order statistics per sample and failure probability
  (1 - confidence) / K_total for each (union bound), all bounds hold simultaneously, so
  every pair (out-statistic k, in-statistic j) may be combined after seeing the data:

      S = {X > x_(k)} contains {X >= y_(j)} when y_(j) > x_(k):
          eps >= log((Q_lo(j) - delta) / P_hi(k))               (in-heavy upper tail)
      S' = {X < y_(j)} contains {X <= x_(k)} when x_(k) < y_(j):
          eps >= log((1 - P_hi(k) - delta) / (1 - Q_lo(j)))     (out-heavy lower tail)

  The reported bound is the largest of these (floored at 0).  Guarantee: P[bound > eps] <=
  1 - confidence for ANY score distributions, provided the canaries' scores are independent
  and identically distributed given their bits (each canary is an independent draw of the
  same in/out pair; the thresholds may depend on the data).  Unlike a Bonferroni sweep
  over data-chosen thresholds (``multi_run(threshold="bonferroni")``'s caveat) this is exact.
* :func:`hockey_stick_histogram` -- the plug-in estimate of Koskela & Mohammadi: equal-width
  histograms of both samples on the pooled range, H_hat(eps) = sum_b (Q_b - e^eps P_b)_+,
  eps_hat = the eps at which H_hat = delta (both orders, the larger).  Consistent as the
  sample grows and bins shrink at the right rate (their Thm. on the O(k^{-1/3}) error), but
  with NO finite-sample guarantee (it over-claims on small samples: empty out-bins make
  the ratio explode; add-1/2 smoothing of the bin counts keeps it finite).  Labelled
  ``guarantee="asymptotic"``.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from dpaudit.observations import MembershipObservations
from dpaudit.registry import ASSUMPTIONS
from dpaudit.results import AuditResult
from dpaudit.search import invert_decreasing
from dpaudit.stats.binomial import clopper_pearson
from dpaudit.validation import check_confidence, check_count, check_delta

__all__ = ["hockey_stick", "hockey_stick_histogram", "order_statistic_grid",
           "histogram_hockey_stick_delta", "FINITE_SAMPLE", "ASYMPTOTIC", "INDEPENDENT"]

FINITE_SAMPLE = "finite-sample"
#: the named assumption "independent_scores" (:data:`dpaudit.registry.ASSUMPTIONS`)
INDEPENDENT = ASSUMPTIONS["independent_scores"]
ASYMPTOTIC = "asymptotic"
_EPS_MAX = 100.0


def order_statistic_grid(n: int, ratio: float = 1.25) -> np.ndarray:
    """1-based ascending indices k of the order statistics used: tail counts
    floor(ratio^i) (i = 0, 1, ...) counted from both ends, up to the median."""
    n = check_count("n", n, minimum=1)
    if not (isinstance(ratio, (int, float)) and not isinstance(ratio, bool)
            and 1.0 < float(ratio) <= 16.0):
        raise ValueError(f"grid_ratio must be a number in (1, 16]; got {ratio!r}")
    half = (n + 1) // 2
    count = int(math.ceil(math.log(max(half, 1)) / math.log(ratio))) + 2
    tails = np.unique(np.floor(float(ratio) ** np.arange(count)).astype(np.int64))
    tails = tails[(tails >= 1) & (tails <= half)]
    k = np.unique(np.concatenate([tails, n + 1 - tails]))
    return k[(k >= 1) & (k <= n)]


def _split(member: Any, score: Any) -> tuple[MembershipObservations, np.ndarray, np.ndarray]:
    obs = MembershipObservations.from_arrays(member, score)
    obs.require_both_classes()
    return obs, np.sort(obs.score[~obs.member]), np.sort(obs.score[obs.member])


def _log_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((num > 0) & (den > 0), np.log(np.maximum(num, 1e-300))
                        - np.log(np.maximum(den, 1e-300)), -np.inf)


def hockey_stick(member: Any, score: Any, delta: float = 1e-5, confidence: float = 0.95, *,
                 grid_ratio: float = 1.25) -> AuditResult:
    """Finite-sample, model-free lower bound on epsilon from the hockey-stick divergence of
    the in/out score samples (see the module docstring for the construction and guarantee).

    Args:
      member: truth bits (1 = canary included), i.i.d. uniform in the game.
      score: per-canary scores, higher = more likely included.
      delta: delta at which epsilon is stated.
      confidence: probability that the bound holds.
      grid_ratio: ratio of the geometric grid of order statistics (tail counts 1, 2, 3, 4, 5,
        6, 7, 9, 11, ... from each end at 1.25); a finer grid finds better thresholds but pays
        a larger union bound.

    Returns an AuditResult with method "hockey_stick", ``guarantee="finite-sample"``,
    settings (n_out, n_in, grid sizes, per-statistic failure probability) and details (the
    chosen threshold, its rate bounds and direction).
    """
    delta = check_delta(delta)
    gamma = check_confidence(confidence)
    obs, out, inn = _split(member, score)
    n0, n1 = out.size, inn.size
    k0 = order_statistic_grid(n0, grid_ratio)
    k1 = order_statistic_grid(n1, grid_ratio)
    fail = (1.0 - gamma) / (k0.size + k1.size)
    # P[X > x_(k)] <= Beta_{1-fail}(n0 - k + 1, k) = CP upper bound with n0 - k successes
    p_hi = np.asarray(clopper_pearson(n0 - k0, n0, 1.0 - fail, "upper")[1], float)
    # Q[X >= y_(j)] >= Beta_{fail}(n1 - j + 1, j) = CP lower bound with n1 - j + 1 successes
    q_lo = np.asarray(clopper_pearson(n1 - k1 + 1, n1, 1.0 - fail, "lower")[0], float)
    x_k, y_j = out[k0 - 1], inn[k1 - 1]

    # upper tail: for each out-statistic k, the smallest grid j with y_(j) > x_(k)
    first = np.searchsorted(inn, x_k, side="right") + 1          # 1-based index of first y > x
    jpos = np.searchsorted(k1, first, side="left")
    ok = jpos < k1.size
    e_up = np.full(k0.size, -np.inf)
    e_up[ok] = _log_ratio(q_lo[jpos[ok]] - delta, p_hi[ok])
    # lower tail: for each in-statistic j, the largest grid k with x_(k) < y_(j)
    last = np.searchsorted(out, y_j, side="left")                 # count of x < y = 1-based idx
    kpos = np.searchsorted(k0, last, side="right") - 1
    ok2 = kpos >= 0
    e_lo = np.full(k1.size, -np.inf)
    e_lo[ok2] = _log_ratio(1.0 - p_hi[kpos[ok2]] - delta, 1.0 - q_lo[ok2])

    best_up = int(np.argmax(e_up))
    best_lo = int(np.argmax(e_lo))
    if not (np.isfinite(e_up[best_up]) or np.isfinite(e_lo[best_lo])):
        # no grid threshold has any in-score beyond it (e.g. every score tied): no evidence
        eps_raw = -math.inf
        chosen: dict[str, str | float] = {
            "direction": "none (no grid threshold separates the scores)"}
    elif e_up[best_up] >= e_lo[best_lo]:
        eps_raw = float(e_up[best_up])
        jj = int(jpos[best_up])
        chosen = {"direction": "upper tail (score > threshold)",
                  "threshold": float(x_k[best_up]), "out_mass_upper": float(p_hi[best_up]),
                  "in_mass_lower": float(q_lo[jj])}
    else:
        eps_raw = float(e_lo[best_lo])
        kk = int(kpos[best_lo])
        chosen = {"direction": "lower tail (score < threshold)",
                  "threshold": float(y_j[best_lo]), "out_mass_lower": float(1 - p_hi[kk]),
                  "in_mass_upper": float(1 - q_lo[best_lo])}
    eps = max(0.0, eps_raw) if math.isfinite(eps_raw) else 0.0
    best_possible = _best_possible(n0, n1, k0, k1, fail, delta)
    return AuditResult(
        epsilon=eps, delta=delta, confidence=gamma, method="hockey_stick",
        params={}, p_value=None,
        settings={"n": obs.n, "n_out": n0, "n_in": n1, "grid_ratio": float(grid_ratio),
                  "grid_out": int(k0.size), "grid_in": int(k1.size),
                  "per_statistic_failure": fail},
        details={**chosen, "best_possible_epsilon": best_possible},
        guarantee=FINITE_SAMPLE, assumption=INDEPENDENT)


def _best_possible(n0: int, n1: int, k0: np.ndarray, k1: np.ndarray, fail: float,
                   delta: float) -> float:
    """The largest bound this estimator can return at these sample sizes: every in-score
    above every out-score (x_(n0) < y_(1)), i.e. the ceiling set by the canary count."""
    p_hi = float(clopper_pearson(0, n0, 1.0 - fail, "upper")[1])      # k = n0
    q_lo = float(clopper_pearson(n1, n1, 1.0 - fail, "lower")[0])     # j = 1
    e = _log_ratio(np.array([q_lo - delta, 1 - p_hi - delta]), np.array([p_hi, 1 - q_lo]))
    return float(max(0.0, e.max()))


def histogram_hockey_stick_delta(eps: Any, p_mass: np.ndarray, q_mass: np.ndarray
                                 ) -> np.ndarray:
    """sum_b (q_b - e^eps p_b)_+ for each eps (vectorised over eps)."""
    e = np.exp(np.asarray(eps, float))[..., None]
    return np.maximum(q_mass - e * p_mass, 0.0).sum(axis=-1)


def hockey_stick_histogram(member: Any, score: Any, delta: float = 1e-5, *,
                           bins: int | None = None) -> AuditResult:
    """Plug-in (asymptotic) hockey-stick estimate from histograms (Koskela & Mohammadi, §4).

    ``bins`` equal-width bins on the pooled score range (default: ceil(2 n^{1/3}), the
    cube-root rate of their error analysis); bin masses with add-1/2 smoothing
    (c_b + 1/2) / (n + B/2); eps_hat = inf{eps >= 0: H_hat(eps) <= delta} for both orders,
    the larger.  NO finite-sample guarantee (``guarantee="asymptotic"``): never use it for a
    verdict unless that is what is asked for explicitly.
    """
    delta = check_delta(delta)
    obs, out, inn = _split(member, score)
    if bins is None:
        bins = int(math.ceil(2.0 * obs.n ** (1.0 / 3.0)))
    bins = check_count("bins", bins, minimum=2)
    lo, hi = float(obs.score.min()), float(obs.score.max())
    if hi <= lo:
        hi = lo + 1.0
    # halved (exactly) when the range hi - lo overflows (finite scores near +-1.8e308): the
    # same bins, the same counts
    k = 1.0 if math.isfinite(hi - lo) else 0.5
    edges = np.linspace(k * lo, k * hi, bins + 1)
    c0 = np.histogram(k * out, edges)[0].astype(float)
    c1 = np.histogram(k * inn, edges)[0].astype(float)
    p = (c0 + 0.5) / (out.size + bins / 2)
    q = (c1 + 0.5) / (inn.size + bins / 2)
    eps = 0.0
    for a, b in ((p, q), (q, p)):
        if histogram_hockey_stick_delta(0.0, a, b) <= delta:
            continue
        fn = partial(histogram_hockey_stick_delta, p_mass=a, q_mass=b)
        e = float(invert_decreasing(fn, delta, 0.0, _EPS_MAX))
        eps = max(eps, e)
    return AuditResult(
        epsilon=eps, delta=delta, confidence=math.nan, method="hockey_stick_histogram",
        params={"tv_distance": float(0.5 * np.abs(p - q).sum())}, p_value=None,
        settings={"n": obs.n, "n_out": out.size, "n_in": inn.size, "bins": bins,
                  "smoothing": "add-1/2"},
        details={"edges": [lo, hi], "estimate": True}, guarantee=ASYMPTOTIC,
        assumption=f"{INDEPENDENT}; a plug-in histogram estimate (no finite-sample guarantee)")
