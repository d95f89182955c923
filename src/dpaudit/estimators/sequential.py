"""Anytime-valid sequential multi-run audit: a test supermartingale for "epsilon exceeds the claim".

Framework.  González, Dulce-Rubio, Ramdas and Ribero, "Sequentially Auditing Differential
Privacy" (NeurIPS 2025, arXiv 2509.07055) audit DP by *testing by betting*: under the null
"the mechanism is (eps, delta)-DP" a bounded witness statistic has a mean that DP caps; a
bettor stakes a predictable fraction of its wealth on the witness exceeding the cap; the
wealth is a non-negative supermartingale under the null, so by Ville's inequality

    P_H0( exists t : K_t >= 1 / alpha ) <= alpha                                     (V)

and the audit may look after every trial and stop the moment K_t >= 1/alpha, at the stated
confidence 1 - alpha, whatever the stopping rule.  Kutta, Dunsche, Wei and Zikas, "Sequential
Auditing for f-Differential Privacy" (arXiv 2602.06518) make the same point for f-DP auditors:
the sample size is chosen by the data, not in advance.  What we could read of the two papers
(searched again for this revision: their abstracts and introductions, arXiv HTML v1, and
third-party summaries; not their method sections) places our construction as follows.  González
et al. bound the hockey-stick divergence of the two output laws through a kernel-MMD witness and
choose the betting fraction online (Online Newton Step); Kutta et al. test an f-DP trade-off curve
with likelihood-ratio classifiers and data-driven sample sizes.  Here the witness is the
indicator of a threshold set, so the null is the hockey-stick inequality (1) itself, one set at a
time -- the simplest member of the same family, with no kernel -- and the fraction is a plug-in
Kelly stake refitted on a fixed schedule.  We cannot cite equation numbers of either paper;
equation labels refer to this module, and the construction is derived here from the DP
definition (Hypothesis Interpretation, Definition 1) and Ville's inequality.

Validity, checked line by line (the null is *every* pair of output laws satisfying (1) and its
mirror, not a fitted model):
  * Eq. 3 uses only (1), the fairness of b_t and its independence from the past; it holds for
    any laws P0, P1 of the score (a post-processing of M's output), including a fresh pair of
    neighbouring datasets drawn per trial (the mixture of pairs satisfies (1) too).
  * (tau, lambda) of block [b_j, b_{j+1}) are computed from trials < b_j only (:func:`_plan`
    receives ``bit[:a], score[:a]``), so they are predictable; capping lambda per grid point uses
    eps and the plan only.
  * F_t > 0 because lambda <= max_bet / (p + delta') < 1 / (p + delta').
  * The two sides are combined by the average (4), not the maximum: the maximum of two test
    supermartingales is not one, and would need the threshold 2 / alpha.

The game.  Trial t draws a secret bit b_t ~ Bernoulli(1/2), runs M on D_{b_t}, and records a
score s_t (Bits Transmission Algorithm 1; :class:`dpaudit.games.blackbox.BlackBoxAudit`).  For a set
S = {s >= tau} (side "hi") Hypothesis Interpretation Definition 1 gives, for (eps, delta)-DP,

    P1(S) - e^eps P0(S) <= delta                                                     (1)

and the symmetric condition P0(S') - e^eps P1(S') <= delta for S' = {s <= tau} (side "lo",
bits swapped).  With p = e^eps / (1 + e^eps) and delta' = delta / (2 (1 + e^eps)), the
per-trial payoff of side "hi" with stake lambda >= 0 is

    F_t = 1 + lambda (1 - p - delta')   if s_t in S and b_t = 1
          1 - lambda (p + delta')       if s_t in S and b_t = 0                      (2)
          1 - lambda delta'             if s_t not in S

and, because b_t is a fair coin independent of the past,

    E[F_t | past] = 1 + lambda (P1(S) - e^eps P0(S) - delta) / (2 (1 + e^eps)) <= 1  (3)

under (1) for any predictable (tau, lambda).  F_t >= 0 when lambda <= 1 / (p + delta'), so
K_t^hi = prod_{i <= t} F_i is a test supermartingale (a test martingale when (1) is tight, e.g.
randomised response).  With delta = 0, (2) is the Bernoulli betting game on the bits of the
trials that land in S: under the null at most a fraction p of them are 1 (Waudby-Smith and
Ramdas, JRSS-B 2024, testing by betting on a bounded mean).  The reported e-process is the
mixture of the two sides

    K_t = (K_t^hi + K_t^lo) / 2                                                      (4)

(an average of test supermartingales on one filtration is one), and the audit rejects the
claim -- "epsilon exceeds the claim" -- at the first t with K_t >= 1 / alpha, alpha =
1 - confidence.  Trials are processed in index order, which is a legitimate filtration because
trials are independent and their randomness is a pure function of (seed, t): the verdict and the
stopping trial do not depend on the executor, the workers or when the engine looked.

Predictable plan.  The threshold tau and the stake lambda of each side are refitted on a fixed
schedule of trial indices (block starts b_0 = burn_in, b_{j+1} = max(b_j + 16,
ceil(growth * b_j))) from the trials before the block only: for candidate thresholds (quantiles
of the past scores) the fraction q of 1-bits among past trials in S is lower-bounded (one-sided
Clopper-Pearson at ``plan_confidence``), the Kelly stake lambda = (q - p) / (p (1 - p)) is capped
at ``max_bet / (p + delta')``, and the threshold with the largest estimated growth
P(S) (q log(1 + lambda (1 - p)) + (1 - q) log(1 - lambda p)) is kept (no bet when none grows).
The plan affects power only, never validity.

Anytime-valid lower bound.  Running the same plan (tau, lambda, capped per eps) on a grid of
eps' gives e-processes K_t(eps'); the reported bound is the largest grid eps' such that every
grid point <= eps' has crossed 1/alpha at some t (the rejected set, connected from below).  If
the true epsilon eps* were below it, the smallest grid point >= eps* -- a true null, fixed in
advance -- would have crossed, which (V) bounds by alpha; so the bound holds at confidence
1 - alpha for all t simultaneously.

Failures.  A trial whose mechanism failed (``failed``; the engine's failed trials) is not
skipped: the failure is one more output of M, "bottom", and bottom lies in neither S nor S', so
the trial pays the off-S factor 1 - lambda delta' on both sides (Eq. 2, third line).  The test is
then valid for the null "M, with failure as a possible output, is (eps, delta)-DP", with no
assumption on how failures depend on the secret.  Skipping failed trials instead would test M
conditioned on success, whose secret bit is no longer a fair coin when failures depend on it:
Eq. 3 then becomes E[F_t | past] - 1 <= lambda delta' (1 / P(success) - 1) > 0 for delta > 0,
an over-claim.  The plan (tau, lambda) is fitted on the past successful trials; P(S) in its
growth estimate counts all past trials.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpaudit.observations import MembershipObservations
from dpaudit.results import AuditResult
from dpaudit.stats.binomial import clopper_pearson
from dpaudit.stats.roc import counts_at_or_above, counts_at_or_below
from dpaudit.validation import (
    check_confidence,
    check_count,
    check_delta,
    check_nonnegative,
    check_probability,
)

__all__ = ["SequentialOptions", "SequentialState", "SequentialResult", "sequential_audit",
           "first_crossing",
           "block_starts", "SequentialMonitor"]

_ROWS = 1 << 15  # rows per vectorised slab (memory: rows x grid)


@dataclass(frozen=True)
class SequentialOptions:
    """Plan settings (power only; validity holds for any values)."""

    burn_in: int = 32
    growth: float = 1.25
    candidates: int = 64
    max_bet: float = 0.9
    plan_confidence: float = 0.7
    grid_points: int = 121

    def __post_init__(self) -> None:
        check_count("burn_in", self.burn_in, minimum=1)
        if not self.growth > 1:
            raise ValueError(f"growth must be > 1, got {self.growth!r}")
        check_count("candidates", self.candidates, minimum=1)
        check_probability("max_bet", self.max_bet, open_low=True, open_high=True)
        check_confidence(self.plan_confidence, "plan_confidence")
        check_count("grid_points", self.grid_points, minimum=2)


@dataclass(frozen=True)
class SequentialState:
    """The e-process's raw state after a sequential audit on trials 0..n-1 (in index order):
    a measurement, not an outcome -- its row is :meth:`to_audit_result`, and the verdict is
    the :class:`dpaudit.outcome.Audit`'s (an engine run's, :func:`dpaudit.engine.run_audit`).

    rejected: K crossed 1/alpha at the claimed epsilon (a violation, at ``confidence``).
    stopping_trial: number of trials at the first crossing (None if never).
    e_value: K at the stopping trial (or at n); max_e_value: sup_t K_t (1/p-value).
    epsilon_lower: anytime-valid lower bound on epsilon at ``delta`` (see module).
    """

    rejected: bool
    stopping_trial: int | None
    n: int
    e_value: float
    max_e_value: float
    claimed_epsilon: float
    delta: float
    confidence: float
    epsilon_lower: float
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def p_value(self) -> float:
        """Anytime-valid p-value 1 / sup_t K_t (Ville)."""
        return float(min(1.0, 1.0 / self.max_e_value)) if self.max_e_value > 0 else 1.0

    def to_audit_result(self) -> AuditResult:
        return AuditResult(
            epsilon=float(self.epsilon_lower), delta=self.delta, confidence=self.confidence,
            method="sequential", params={}, p_value=self.p_value,
            settings={"claimed_epsilon": self.claimed_epsilon, **self.settings},
            details={"rejected": self.rejected, "stopping_trial": self.stopping_trial,
                     "n": self.n, "e_value": self.e_value, "max_e_value": self.max_e_value,
                     "threshold_e_value": 1.0 / (1.0 - self.confidence)})


def block_starts(n: int, opts: SequentialOptions) -> np.ndarray:
    """Trial indices where the plan is refitted: b_0 = burn_in, then geometric (see module)."""
    out = [0, opts.burn_in]
    while out[-1] < n:
        out.append(_next_start(out[-1], opts))
    return np.asarray(out, dtype=np.int64)


def _plan(bit: np.ndarray, score: np.ndarray, p: float, dprime: float,
          opts: SequentialOptions) -> tuple[float, float, float, float]:
    """(tau_hi, lambda_hi, tau_lo, lambda_lo) fitted on past trials only."""
    n = score.size  # every past trial; failed ones (NaN score) are outside every S
    keep = ~np.isnan(score)
    bit, score = bit[keep], score[keep]
    if score.size == 0:
        return math.inf, 0.0, -math.inf, 0.0
    cand = np.unique(np.quantile(score, np.linspace(0, 1, opts.candidates), method="lower"))
    pos = np.sort(score[bit])
    neg = np.sort(score[~bit])
    cap = opts.max_bet / (p + dprime)
    out: list[float] = []
    for side in ("hi", "lo"):
        if side == "hi":  # S = {s >= tau}; "success" = bit 1
            k, f = counts_at_or_above(pos, neg, cand)
        else:  # S = {s <= tau}; "success" = bit 0
            f, k = counts_at_or_below(pos, neg, cand)
        m = k + f
        good = m > 0
        q = np.zeros(cand.size)
        if good.any():
            q[good] = clopper_pearson(k[good], m[good], opts.plan_confidence, "lower")[0]
        lam = np.clip((q - p) / (p * (1 - p)), 0.0, cap)
        with np.errstate(divide="ignore", invalid="ignore"):
            g = (m / n) * (q * np.log1p(lam * (1 - p - dprime)) +
                           (1 - q) * np.log1p(-lam * (p + dprime))) - lam * dprime
        g = np.where(good & (lam > 0), g, -np.inf)
        j = int(np.argmax(g))
        if np.isfinite(g[j]) and g[j] > 0:
            out += [float(cand[j]), float(lam[j])]
        else:
            out += [math.inf if side == "hi" else -math.inf, 0.0]
    return out[0], out[1], out[2], out[3]


def _log_factors(bit: np.ndarray, score: np.ndarray, tau: float, lam: float, side: str,
                 eps: np.ndarray, delta: float, max_bet: float) -> np.ndarray:
    """log F_t (Eq. 2) for rows (n,) and grid eps (G,) -> (n, G); lambda capped per eps.
    A NaN score (failed trial) is in neither S nor S': the off-S factor."""
    p = np.exp(eps - np.logaddexp(0.0, eps))  # e^eps / (1 + e^eps), stable
    dp = delta / (2.0 * (1.0 + np.exp(np.minimum(eps, 700.0))))
    lam_g = np.minimum(lam, max_bet / (p + dp))
    with np.errstate(invalid="ignore"):
        if side == "hi":
            inS = score >= tau
            win = bit
        else:
            inS = score <= tau
            win = ~bit
    up = np.log1p(lam_g * (1 - p - dp))
    down = np.log1p(-lam_g * (p + dp))
    off = np.log1p(-lam_g * dp)
    return np.where(inS[:, None], np.where(win[:, None], up[None, :], down[None, :]),
                    off[None, :])


def _next_start(b: int, opts: SequentialOptions) -> int:
    """The block start after ``b`` (see :func:`block_starts`)."""
    return opts.burn_in if b == 0 else max(b + 16, math.ceil(opts.growth * b))


def _accumulate(start: np.ndarray, lf: np.ndarray) -> np.ndarray:
    """Running sums start + lf[0], (start + lf[0]) + lf[1], ... (rows x grid), strictly left to
    right (``np.add.accumulate``), so the bits do not depend on where the rows are split --
    one pass or many increments give the same e-process, the same stopping trial."""
    return np.cumsum(np.concatenate((start[None, :], lf)), axis=0)[1:]


class _Walker:
    """The e-process of Eq. 4 on a grid of eps, advanced over a growing prefix of trials."""

    def __init__(self, eps_grid: np.ndarray, claim_col: int, delta: float, alpha: float,
                 opts: SequentialOptions) -> None:
        self.grid, self.col, self.delta, self.opts = eps_grid, claim_col, delta, opts
        G = eps_grid.size
        self.log_hi = np.zeros(G)
        self.log_lo = np.zeros(G)
        self.run_max = np.full(G, -np.inf)
        self.thr = math.log(1.0 / alpha)
        self.first: int | None = None
        self.at_first = math.nan
        claim = float(eps_grid[claim_col])
        self.p_c = math.exp(claim - np.logaddexp(0.0, claim))
        self.dp_c = delta / (2.0 * (1.0 + math.exp(min(claim, 700.0))))
        self.pos = 0  # trials processed
        self.block = (0, opts.burn_in)  # [a, b): burn-in, no bet
        self.plan: tuple[float, float, float, float] | None = (math.inf, 0.0, -math.inf, 0.0)

    def advance(self, bit: np.ndarray, score: np.ndarray) -> None:
        """Process trials pos..len(score)-1; ``bit``/``score`` extend the arrays of earlier
        calls (a growing prefix).  The plan of block [a, b) is fitted on trials < a only."""
        m = score.size
        opts = self.opts
        while self.pos < m:
            a, b = self.block
            if self.pos == b:
                self.block = a, b = b, _next_start(b, opts)
                self.plan = None
            if self.plan is None:
                self.plan = _plan(bit[:a], score[:a], self.p_c, self.dp_c, opts)
            th, lh, tl, ll = self.plan
            r = self.pos
            e = min(b, m, r + _ROWS)
            self.pos = e
            if lh == 0 and ll == 0:
                continue
            ch = _accumulate(self.log_hi, _log_factors(bit[r:e], score[r:e], th, lh, "hi",
                                                       self.grid, self.delta, opts.max_bet))
            cl = _accumulate(self.log_lo, _log_factors(bit[r:e], score[r:e], tl, ll, "lo",
                                                       self.grid, self.delta, opts.max_bet))
            lk = np.logaddexp(ch, cl) - math.log(2.0)  # Eq. 4
            self.run_max = np.maximum(self.run_max, lk.max(axis=0))
            if self.first is None:
                hit = np.flatnonzero(lk[:, self.col] >= self.thr)
                if hit.size:
                    self.first = r + int(hit[0]) + 1
                    self.at_first = float(lk[hit[0], self.col])
            self.log_hi, self.log_lo = ch[-1], cl[-1]

    @property
    def final(self) -> np.ndarray:
        return np.logaddexp(self.log_hi, self.log_lo) - math.log(2.0)


def _run(bit: np.ndarray, score: np.ndarray, eps_grid: np.ndarray, claim_col: int,
         delta: float, alpha: float, opts: SequentialOptions
         ) -> tuple[np.ndarray, np.ndarray, int | None, float]:
    """Walk the e-process over all trials.  Returns (max log K per grid point, final log K per
    grid point, first crossing (number of trials) of the claim column, log K there)."""
    w = _Walker(eps_grid, claim_col, delta, alpha, opts)
    w.advance(bit, score)
    return w.run_max, w.final, w.first, w.at_first


class SequentialMonitor:
    """The engine's stopping rule, incremental: ``update(member, score)`` on a growing prefix
    of trials (in index order; NaN score = failed trial) processes only the trials added since
    the last call and returns the number of trials at the first crossing of 1/alpha at the
    claim, or None.  Any sequence of calls gives the same answer as :func:`first_crossing` on
    the final prefix (the running sums are split-invariant), so the stopping trial does not
    depend on when the engine looks -- and a look costs the new trials, not the whole prefix."""

    def __init__(self, claimed_epsilon: float, delta: float = 0.0, confidence: float = 0.95,
                 options: SequentialOptions | None = None) -> None:
        eps = np.array([check_nonnegative("claimed_epsilon", claimed_epsilon)])
        self._w = _Walker(eps, 0, check_delta(delta), 1 - check_confidence(confidence),
                          options or SequentialOptions())

    def update(self, member: Any, score: Any) -> int | None:
        w = self._w
        if w.first is None:
            s = np.asarray(score, dtype=float)
            if s.size < w.pos:
                raise ValueError(f"score must extend the {w.pos} trials already seen; got "
                                 f"{s.size}")
            w.advance(np.asarray(member, dtype=bool), s)
        return w.first


def _with_failures(member: Any, score: Any, failed: Any
                   ) -> tuple[MembershipObservations, np.ndarray]:
    """Validated (bit, score) of the successful trials and the score column with NaN for
    the failed trials (whose member/score entries are ignored)."""
    if failed is None:
        obs = MembershipObservations.from_arrays(member, score)
        return obs, obs.score
    f = np.asarray(failed)
    if f.dtype != bool or f.ndim != 1:
        raise ValueError("failed must be a 1-D boolean array (True = the trial failed)")
    m = np.array(member, dtype=float, copy=True)
    s = np.array(score, dtype=float, copy=True)
    if m.shape != f.shape or s.shape != f.shape:
        raise ValueError(f"failed, member and score must have the same length; got "
                         f"{f.size}, {m.size}, {s.size}")
    m[f] = 0.0
    s[f] = 0.0
    obs = MembershipObservations.from_arrays(m, s)
    s[f] = math.nan
    return obs, s


def first_crossing(member: Any, score: Any, claimed_epsilon: float, delta: float = 0.0,
                   confidence: float = 0.95, options: SequentialOptions | None = None,
                   failed: Any = None) -> int | None:
    """Number of trials at which the e-process at the claim first reaches 1/alpha (or None):
    the engine's stopping rule, evaluated on the trials done so far (in index order).
    ``failed`` marks trials whose mechanism failed (see module: outside every S)."""
    opts = options or SequentialOptions()
    if failed is None:
        bit = np.asarray(member, dtype=bool)
        s = np.asarray(score, dtype=float)
    else:
        obs, s = _with_failures(member, score, failed)
        bit = obs.member
    mon = SequentialMonitor(claimed_epsilon, delta, confidence, opts)
    return mon.update(bit, s)


def sequential_audit(member: Any, score: Any, claimed_epsilon: float, delta: float = 0.0,
                     confidence: float = 0.95, *, stop: bool = True,
                     options: SequentialOptions | None = None,
                     epsilon_max: float | None = None, failed: Any = None
                     ) -> SequentialState:
    """Anytime-valid audit of "(claimed_epsilon, delta)-DP" from trials in index order.

    Args:
      member: secret bit per trial (fair coin), in trial order.
      score: score per trial (higher = bit 1 more likely).
      claimed_epsilon: the claim under test (>= 0).
      delta: the claim's delta, in [0, 1).
      confidence: 1 - alpha; a violation is declared when K_t >= 1 / alpha (Eq. V).
      stop: evaluate the result at the first crossing (the engine stops there); False uses
        every trial (the lower bound then uses all of them, still anytime-valid).
      epsilon_max: top of the lower-bound grid (default max(10, 4 claim + 4)).
      failed: optional boolean mask of trials whose mechanism failed (their member and score
        entries are ignored): they stay in the sequence, outside every S (see module).
    """
    obs, scores = _with_failures(member, score, failed)
    claim = check_nonnegative("claimed_epsilon", claimed_epsilon)
    delta, confidence = check_delta(delta), check_confidence(confidence)
    opts = options or SequentialOptions()
    alpha = 1 - confidence
    top = float(epsilon_max) if epsilon_max is not None else max(10.0, 4 * claim + 4)
    grid = np.unique(np.append(np.linspace(0.0, top, opts.grid_points), claim))
    col = int(np.searchsorted(grid, claim))
    first = first_crossing(obs.member, scores, claim, delta, confidence, opts) if stop \
        else None
    n = first if first is not None else obs.n
    run_max, final, first2, at_first = _run(obs.member[:n], scores[:n], grid, col, delta,
                                            alpha, opts)
    thr = math.log(1 / alpha)
    crossed = run_max >= thr
    below = np.flatnonzero(~crossed)
    lb = float(grid[below[0] - 1]) if below.size and below[0] > 0 else \
        (float(grid[-1]) if not below.size else 0.0)
    rejected = first2 is not None
    log_e = at_first if rejected and stop else float(final[col])
    settings = {"burn_in": opts.burn_in, "growth": opts.growth, "candidates": opts.candidates,
                "max_bet": opts.max_bet, "plan_confidence": opts.plan_confidence,
                "grid": [0.0, top, int(grid.size)], "stop": stop,
                "e_process": ("mixture of hi/lo threshold betting "
                              "(Hypothesis Interpretation Def. 1)")}
    return SequentialState(
        rejected=rejected, stopping_trial=first2, n=int(n), e_value=float(math.exp(min(log_e,
                                                                                     700))),
        max_e_value=float(math.exp(min(float(run_max[col]), 700.0))), claimed_epsilon=claim,
        delta=delta, confidence=confidence, epsilon_lower=lb, settings=settings)


#: the former name of :class:`SequentialState` (kept for code that imports it)
SequentialResult = SequentialState
