"""In/out score arrays and the shadow-model layout -> membership observations.

Two layouts that membership-inference tooling produces:

* **in/out arrays** (:func:`from_in_out`): scores of examples that were IN the training set
  (members, label 1) and of examples that were OUT (label 0).  The result is the
  ``(member, score)`` pair every dpaudit estimator takes; higher score = more likely member.
* **shadow-model layout** (:class:`ShadowLayout`): R training runs (target or shadow models)
  over the same E candidate examples, a ``(runs, examples)`` 0/1 membership matrix (run r
  trained on example j) and a ``(runs, examples)`` score matrix (the attack's score of example j
  against model r).  This is the layout of LiRA (Carlini et al. 2022, §IV: each example in half
  of the runs) and of privacy_meter's ``memberships.npy`` (there stored models x samples).

Audits of the shadow layout (what each is valid for):

* **per run** (:meth:`ShadowLayout.run`): the examples of one target run are the canaries of a
  one-run audit (Bits Transmission Algorithm 2; ``dpaudit.audit_one_run``).  Valid when each example
  was
  included in that run independently with probability 1/2 and the scores of run r were
  computed from model r plus side information independent of run r's membership (e.g.
  reference models trained separately, or the other runs: runs are independent);
* **per example** (:meth:`ShadowLayout.example`, :func:`per_example_audit`): the runs are the
  independent trials of the classical multi-run audit of one example (Hypothesis Interpretation,
  Jagielski et
  al. 2020): valid when the score of (r, j) is a function of model r only (or of reference
  models disjoint from the audited runs), so that the R trials are independent.  The
  per-example bounds are each valid at ``confidence``; their maximum over E examples is reported
  with a Bonferroni correction over the examples (and over the thresholds);
* **pooled** (:meth:`ShadowLayout.pooled`): every (run, example) pair as one observation, the
  attack-metric view of the MIA literature (AUROC, TPR at low FPR; see
  :mod:`dpaudit.stats.attack_metrics`).  Pairs of the same run share a model, so they are not
  independent trials: do not feed the pooled pairs to ``multi_run`` for a DP lower bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit.estimators.multi_run import epsilon_from_rates
from dpaudit.observations import MembershipObservations
from dpaudit.results import AuditResult
from dpaudit.stats.binomial import clopper_pearson
from dpaudit.validation import (
    check_confidence,
    check_count,
    check_delta,
    check_finite_array,
)

__all__ = ["from_in_out", "ShadowLayout", "PerExampleBounds", "PerExampleAudit",
           "per_example_audit"]


def from_in_out(scores_in: Any, scores_out: Any) -> MembershipObservations:
    """Membership observations from the scores of members (IN) and non-members (OUT).

    ``member`` is 1 for the ``len(scores_in)`` first entries and 0 for the rest; the order does
    not matter to any estimator (ties are broken by a random priority, thresholds are
    label-blind).  Both arrays must be non-empty, one-dimensional and finite.

    >>> obs = from_in_out([2.0, 1.5], [0.1, -0.3, 0.0])
    >>> obs.n, obs.n_members
    (5, 2)
    """
    s_in = check_finite_array("scores_in", scores_in)
    s_out = check_finite_array("scores_out", scores_out)
    member = np.concatenate([np.ones(s_in.size, bool), np.zeros(s_out.size, bool)])
    return MembershipObservations(member=member, score=np.concatenate([s_in, s_out]))


def _matrix(name: str, values: Any) -> np.ndarray:
    try:
        a = np.asarray(values)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a (runs, examples) matrix") from None
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"{name} must be a non-empty (runs, examples) matrix, got shape "
                         f"{a.shape}")
    return a


@dataclass(frozen=True, eq=False)
class ShadowLayout:
    """R runs x E examples: ``membership[r, j]`` (run r trained on example j) and
    ``scores[r, j]`` (attack score of example j on model r, higher = member)."""

    membership: np.ndarray
    scores: np.ndarray

    @classmethod
    def from_arrays(cls, membership: Any, scores: Any) -> ShadowLayout:
        m = _matrix("membership", membership)
        s = _matrix("scores", scores)
        if m.shape != s.shape:
            raise ValueError(f"membership and scores must have the same (runs, examples) "
                             f"shape, got {m.shape} and {s.shape}")
        if m.dtype != bool:
            mf = m.astype(float) if np.issubdtype(m.dtype, np.number) else None
            if mf is None or not np.isin(mf, (0.0, 1.0)).all():
                raise ValueError("membership must contain only 0/1 (or booleans)")
            m = mf.astype(bool)
        if not np.issubdtype(s.dtype, np.number) or np.iscomplexobj(s):
            raise ValueError("scores must be real numbers")
        s = s.astype(float)
        if not np.isfinite(s).all():
            r, j = np.argwhere(~np.isfinite(s))[0]
            raise ValueError(f"scores must be finite (no NaN/inf); scores[{r}, {j}] is "
                             f"{s[r, j]}")
        return cls(membership=m, scores=s)

    @property
    def runs(self) -> int:
        return int(self.membership.shape[0])

    @property
    def examples(self) -> int:
        return int(self.membership.shape[1])

    def run(self, r: int) -> MembershipObservations:
        """The examples of target run ``r`` as canaries (one-run audit input)."""
        r = check_count("r", r)
        if r >= self.runs:
            raise ValueError(f"r must be in [0, {self.runs - 1}], got {r}")
        return MembershipObservations(self.membership[r].copy(), self.scores[r].copy())

    def example(self, j: int) -> MembershipObservations:
        """Example ``j`` across the runs (multi-run audit input)."""
        j = check_count("j", j)
        if j >= self.examples:
            raise ValueError(f"j must be in [0, {self.examples - 1}], got {j}")
        return MembershipObservations(self.membership[:, j].copy(), self.scores[:, j].copy())

    def pooled(self) -> MembershipObservations:
        """Every (run, example) pair (attack metrics; not independent trials)."""
        return MembershipObservations(self.membership.reshape(-1).copy(),
                                      self.scores.reshape(-1).copy())


@dataclass(frozen=True)
class PerExampleBounds:
    """Per-example classical audits' bounds of a shadow layout: a measurement (arrays of
    bounds, no claim, no verdict), not an outcome -- an audit's outcome is the
    :class:`dpaudit.outcome.Audit` (``PerExampleAudit`` is this class's former name).

    ``epsilons[j]`` is example j's lower bound, valid at ``confidence`` on its own (Bonferroni
    over the ``thresholds``); ``max_result`` is the largest bound recomputed with the failure
    probability also split over the E examples, so that it is valid for the maximum.
    """

    epsilons: np.ndarray
    thresholds: np.ndarray
    best_threshold: np.ndarray
    max_result: AuditResult


def per_example_audit(layout: ShadowLayout, delta: float = 0.0, confidence: float = 0.95,
                      thresholds: Any = None, *, max_thresholds: int = 32) -> PerExampleBounds:
    """Classical multi-run audit of every example across the runs, vectorised over examples.

    For example j, run r is one trial (bit = membership[r, j], score = scores[r, j]); the test
    "score >= t" gives TPR/FPR bounds by Clopper-Pearson and an epsilon lower bound by DP Hypothesis
    Tutorial
    Eqs. 13-16 (:func:`dpaudit.estimators.multi_run.epsilon_from_rates`).  The thresholds are
    fixed before looking at the labels: ``thresholds`` given by the caller, or ``max_thresholds``
    quantiles of the pooled scores (label-blind, with the caveat of multi_run's "bonferroni"
    strategy: they depend on the scores, not on the labels).  Each score must come from its
    own run only (e.g. the raw statistic, not leave-one-out LiRA scores, which use the other
    runs' labels), so that the runs are independent trials.

    Failure probability: example j's bound spends (1 - confidence)/T per threshold (T
    thresholds); the reported maximum spends (1 - confidence)/(T E), so by the union bound it
    is valid at ``confidence`` although it is the best of E x T tests.
    """
    if not isinstance(layout, ShadowLayout):
        raise ValueError("layout must be a ShadowLayout (ShadowLayout.from_arrays(...))")
    delta, gamma = check_delta(delta), check_confidence(confidence)
    m, s = layout.membership, layout.scores
    n_pos = m.sum(axis=0)
    n_neg = layout.runs - n_pos
    if (n_pos == 0).any() or (n_neg == 0).any():
        bad = int(np.flatnonzero((n_pos == 0) | (n_neg == 0))[0])
        raise ValueError(f"every example needs at least one IN and one OUT run; example {bad} "
                         f"has {int(n_pos[bad])} IN and {int(n_neg[bad])} OUT")
    if thresholds is None:
        k = check_count("max_thresholds", max_thresholds, minimum=1)
        thr = np.unique(np.quantile(s, np.linspace(0, 1, k + 2)[1:-1], method="lower"))
    else:
        thr = np.unique(check_finite_array("thresholds", thresholds))
    t_count, e_count = thr.size, layout.examples
    # tp[t, j] = #IN runs of example j with score >= thr[t]; one (R, E) pass per threshold.
    tp = np.empty((t_count, e_count))
    fp = np.empty((t_count, e_count))
    for i, t in enumerate(thr):  # loop over thresholds only (vectorised over runs x examples)
        hit = s >= t
        tp[i] = (hit & m).sum(axis=0)
        fp[i] = (hit & ~m).sum(axis=0)

    def bounds(fail: float) -> np.ndarray:
        tlo, thi = clopper_pearson(tp, np.broadcast_to(n_pos, tp.shape), 1 - fail / 2,
                                   "two-sided")
        flo, fhi = clopper_pearson(fp, np.broadcast_to(n_neg, fp.shape), 1 - fail / 2,
                                   "two-sided")
        return epsilon_from_rates(tlo, thi, flo, fhi, delta=delta)

    alpha = 1.0 - gamma
    eps_each = bounds(alpha / t_count)                 # (T, E)
    best_t = np.argmax(eps_each, axis=0)
    eps_j = eps_each[best_t, np.arange(e_count)]
    eps_all = bounds(alpha / (t_count * e_count))
    flat = int(np.argmax(eps_all))
    ti, j = divmod(flat, e_count)
    res = AuditResult(
        epsilon=float(eps_all[ti, j]), delta=delta, confidence=gamma,
        method="multi_run_per_example",
        settings={"runs": layout.runs, "examples": e_count, "n_thresholds": t_count,
                  "correction": "bonferroni over thresholds x examples",
                  "interval": "clopper_pearson", "direction": "both"},
        details={"example": j, "threshold": float(thr[ti]), "tp": int(tp[ti, j]),
                 "fp": int(fp[ti, j]), "n_members": int(n_pos[j]),
                 "n_nonmembers": int(n_neg[j])})
    return PerExampleBounds(epsilons=eps_j, thresholds=thr, best_threshold=thr[best_t],
                           max_result=res)


#: the former name of :class:`PerExampleBounds` (kept for code that imports it)
PerExampleAudit = PerExampleBounds
