"""One home for the threshold sweep (dpaudit.stats.roc.counts_at_or_above / _below): the
multi-run audit, the zoo's search and the sequential plan count through it, and the counts
equal a brute-force count of "score >= t" / "score <= t" on inputs with ties."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from dpaudit.observations import SortedObservations
from dpaudit.stats.roc import counts_at_or_above, counts_at_or_below
from dpaudit.zoo.audit import _best_threshold
from dpaudit.zoo.power import box_bound


def _inputs() -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(11)
    out = []
    # continuous scores, thresholds between and at scores
    pos, neg = rng.normal(1, 1, 300), rng.normal(0, 1, 500)
    out.append((pos, neg, np.r_[np.quantile(np.r_[pos, neg], [0, .1, .5, .9, 1]), pos[:7]]))
    # heavy ties: integer scores, thresholds exactly on the tied values and beyond the range
    pos, neg = rng.integers(0, 4, 200).astype(float), rng.integers(0, 3, 250).astype(float)
    out.append((pos, neg, np.array([-1.0, 0.0, 1.0, 1.5, 2.0, 3.0, 4.0, np.inf, -np.inf])))
    # every score equal
    out.append((np.full(40, 0.5), np.full(60, 0.5), np.array([0.4, 0.5, 0.6])))
    # one member, many non-members
    out.append((np.array([2.0]), rng.normal(size=99), np.linspace(-3, 3, 13)))
    return out


@pytest.mark.parametrize("case", range(4))
def test_counts_equal_brute_force(case: int) -> None:
    pos, neg, t = _inputs()[case]
    ps, ns = np.sort(pos), np.sort(neg)
    tp, fp = counts_at_or_above(ps, ns, t)
    np.testing.assert_array_equal(tp, (pos[:, None] >= t[None, :]).sum(axis=0))
    np.testing.assert_array_equal(fp, (neg[:, None] >= t[None, :]).sum(axis=0))
    lp, ln = counts_at_or_below(ps, ns, t)
    np.testing.assert_array_equal(lp, (pos[:, None] <= t[None, :]).sum(axis=0))
    np.testing.assert_array_equal(ln, (neg[:, None] <= t[None, :]).sum(axis=0))


@pytest.mark.parametrize("case", range(4))
def test_multi_run_sweep_counts_through_the_roc(case: int) -> None:
    pos, neg, t = _inputs()[case]
    member = np.r_[np.ones(pos.size, bool), np.zeros(neg.size, bool)]
    srt = SortedObservations.from_arrays(member, np.r_[pos, neg])
    sw = importlib.import_module("dpaudit.estimators.multi_run")._sweep(srt, np.sort(t))
    tp, fp = counts_at_or_above(np.sort(pos), np.sort(neg), np.sort(t))
    np.testing.assert_array_equal(sw.tp, tp)
    np.testing.assert_array_equal(sw.fp, fp)
    assert (sw.n_pos, sw.n_neg) == (pos.size, neg.size)


@pytest.mark.parametrize("case", range(4))
def test_zoo_search_picks_the_best_brute_force_threshold(case: int) -> None:
    pos, neg, _ = _inputs()[case]
    thr, eps = _best_threshold(neg, pos, 1e-5, 0.99)
    cands = np.unique(np.quantile(np.r_[neg, pos], np.linspace(0, 1, 200), method="lower"))
    brute = box_bound((pos[:, None] >= cands).sum(axis=0), pos.size,
                      (neg[:, None] >= cands).sum(axis=0), neg.size, delta=1e-5,
                      confidence=0.99)
    i = int(np.argmax(brute))
    assert (thr, eps) == (float(cands[i]), float(brute[i]))


@pytest.mark.parametrize("case", range(4))
def test_attack_roc_points_equal_brute_force(case: int) -> None:
    from dpaudit.stats.attack_metrics import roc_points

    pos, neg, _ = _inputs()[case]
    member = np.r_[np.ones(pos.size, bool), np.zeros(neg.size, bool)]
    fpr, tpr = roc_points(member, np.r_[pos, neg])
    ts = np.r_[np.inf, np.unique(np.r_[pos, neg])[::-1]]  # +inf, then distinct scores down
    np.testing.assert_allclose(tpr, (pos[:, None] >= ts).sum(axis=0) / pos.size, rtol=0,
                               atol=1e-15)
    np.testing.assert_allclose(fpr, (neg[:, None] >= ts).sum(axis=0) / neg.size, rtol=0,
                               atol=1e-15)
